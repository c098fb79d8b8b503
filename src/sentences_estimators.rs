//! The estimators table's sentences: which errors agree within their 95% intervals and why the
//! others differ on these images, and what each edge case teaches, each computed from the
//! numbers the table shows.

use crate::bootstrap::{MetricInterval, MetricIntervals};
use crate::calibration::{Binning, CalibrationReport};
use crate::calibration_estimators::Estimators;
use crate::estimator_cases::{EstimatorCase, ExtraBin, FEW_LEADS};
use crate::text::grouped;

use super::percent;

/// Below this many images, the debiased error's reason says the bins' noise is most of what
/// the binned errors measure.
const FEW_IMAGES: usize = 1000;

/// The numbers of the estimators table on one set of rows.
#[derive(Clone, Debug, PartialEq)]
pub struct EstimatorsTable<'a> {
    /// Rows the estimators are computed on.
    pub images: usize,
    pub classes: usize,
    pub bins: usize,
    pub binning: Binning,
    /// ECE, RMSCE, MCE and class-wise ECE on the lab's bins.
    pub binned: &'a CalibrationReport,
    pub smece: f64,
    pub estimators: &'a Estimators,
    /// The bootstrap intervals, once the worker has them.
    pub intervals: Option<&'a MetricIntervals>,
    /// The rows at a confidence of exactly 1 and the errors with them in an extra bin.
    pub extra_bin: Option<ExtraBin>,
}

/// One error of the comparison: its name on the page, value and interval.
struct Reading {
    name: &'static str,
    value: f64,
    interval: MetricInterval,
    /// Why it differs when its interval lies above the others' (`true`) or below.
    reason: fn(&EstimatorsTable, bool) -> String,
}

/// Which of the five errors with intervals (ECE, smooth ECE, the debiased L2 error, the
/// top-label ECE and the KS error) agree, as the largest group whose 95% intervals share a
/// point (the first such group in that order on a tie), and for each of the others whether
/// its interval lies above or below that shared range and why it differs here; then the rows
/// at a confidence of exactly 1 with the errors an extra bin gives, and the class-wise ECE left
/// out as another target. Before the intervals are in, it says it waits for them.
pub fn estimators_agreement(table: &EstimatorsTable) -> String {
    let Some(intervals) = table.intervals else {
        return "Which of these errors agree is said once their 95% intervals are in.".to_string();
    };
    let e = table.estimators;
    let readings = [
        Reading {
            name: "ECE",
            value: table.binned.ece,
            interval: intervals.ece,
            reason: ece_reason,
        },
        Reading {
            name: "smooth ECE",
            value: table.smece,
            interval: intervals.smece,
            reason: smooth_reason,
        },
        Reading {
            name: "the debiased L2 error",
            value: e.ece_debiased,
            interval: intervals.ece_debiased,
            reason: debiased_reason,
        },
        Reading {
            name: "the top-label ECE",
            value: e.top_label_ece,
            interval: intervals.top_label_ece,
            reason: top_label_reason,
        },
        Reading {
            name: "the KS error",
            value: e.ks_error,
            interval: intervals.ks_error,
            reason: ks_reason,
        },
    ];
    let (members, shared) = largest_agreeing_group(&readings);
    let mut parts = Vec::new();
    if members.len() >= 2 {
        let names: Vec<&str> = members.iter().map(|&m| readings[m].name).collect();
        parts.push(format!(
            "{} agree here: their 95% intervals share {:.4}–{:.4}.",
            capitalised(&list(&names)),
            shared.0,
            shared.1
        ));
    } else {
        let alone = &readings[members[0]];
        parts.push(format!(
            "No two of the five errors agree here: no two of their 95% intervals overlap. \
             Against {} ({:.4}, 95% interval {:.4}–{:.4}):",
            alone.name, alone.value, shared.0, shared.1
        ));
    }
    for (index, reading) in readings.iter().enumerate() {
        if members.contains(&index) {
            continue;
        }
        let above = reading.interval.lower > shared.1;
        parts.push(format!(
            "{} ({:.4}) is {}: {}.",
            capitalised(reading.name),
            reading.value,
            if above { "higher" } else { "lower" },
            (reading.reason)(table, above)
        ));
    }
    if let Some(extra) = table.extra_bin {
        parts.push(format!(
            "{} of these images have a confidence of exactly 1.0 ({} of them wrong): in the last \
             bin, as calibra, netcal and MAPIE bin them, ECE is {:.4} and RMSCE {:.4}; in a bin \
             of their own, as torchmetrics bins them, {:.4} and {:.4}; and a wrong answer at \
             confidence 1 has no variance for a calibrated network, so the three tests take it \
             for impossible.",
            grouped(extra.certain),
            grouped(extra.certain_wrong),
            table.binned.ece,
            table.binned.rmsce,
            extra.errors.ece,
            extra.errors.rmsce
        ));
    }
    parts.push(format!(
        "The class-wise ECE ({:.4}) is not compared: it measures every class's probability, not \
         the top label's confidence, another target rather than another estimate of the same one.",
        table.binned.classwise_ece
    ));
    parts.join(" ")
}

/// The largest group of readings whose intervals share a point (the first in order on a tie),
/// and the range they share; a single reading's own interval when no two overlap.
fn largest_agreeing_group(readings: &[Reading]) -> (Vec<usize>, (f64, f64)) {
    let mut best: (Vec<usize>, (f64, f64)) = (Vec::new(), (0.0, 0.0));
    for candidate in readings {
        let point = candidate.interval.lower;
        let members: Vec<usize> = (0..readings.len())
            .filter(|&m| readings[m].interval.lower <= point && point <= readings[m].interval.upper)
            .collect();
        if members.len() > best.0.len() {
            let lower = members
                .iter()
                .map(|&m| readings[m].interval.lower)
                .fold(f64::NEG_INFINITY, f64::max);
            let upper = members
                .iter()
                .map(|&m| readings[m].interval.upper)
                .fold(f64::INFINITY, f64::min);
            best = (members, (lower, upper));
        }
    }
    best
}

/// Images per bin, on average.
fn per_bin(table: &EstimatorsTable) -> String {
    grouped(table.images / table.bins.max(1))
}

fn ece_reason(table: &EstimatorsTable, above: bool) -> String {
    if above {
        format!(
            "binning: each bin's accuracy is noisy (about {} images a bin here), and that noise \
             only adds to a bin's gap",
            per_bin(table)
        )
    } else {
        "binning: gaps of opposite sign inside one bin cancel".to_string()
    }
}

fn smooth_reason(_: &EstimatorsTable, above: bool) -> String {
    if above {
        "noise adds to its gaps through the kernel as it does to the bins'".to_string()
    } else {
        "its kernel lets gaps of opposite sign at nearby confidences cancel".to_string()
    }
}

fn debiased_reason(table: &EstimatorsTable, above: bool) -> String {
    if above {
        format!(
            "an L2 mean weighs the largest gaps more (RMSCE, the same without the debiasing, is \
             {:.4})",
            table.binned.rmsce
        )
    } else if table.images < FEW_IMAGES {
        format!(
            "debiasing: it subtracts each bin's sampling noise, which the others count as \
             miscalibration, and on {} images that noise is most of what they measure",
            grouped(table.images)
        )
    } else {
        "debiasing: it subtracts each bin's sampling noise, which the others count as \
         miscalibration"
            .to_string()
    }
}

fn top_label_reason(table: &EstimatorsTable, above: bool) -> String {
    if above {
        format!(
            "it bins each predicted class on its own, so a class too confident and one not \
             confident enough no longer cancel, and each class's bins hold about a {} of the \
             images, whose noise adds more",
            ordinal_share(table.classes)
        )
    } else {
        "it bins each predicted class on its own, and its classes' bins fall where the pooled \
         bins' gaps were largest"
            .to_string()
    }
}

fn ks_reason(_: &EstimatorsTable, above: bool) -> String {
    if above {
        "it is the largest running gap over a stretch of confidences, not an average over all \
         of them"
            .to_string()
    } else {
        "no bins: it reads the largest running gap between correctness and confidence, which \
         noise inflates less than it inflates each bin"
            .to_string()
    }
}

/// "tenth" for 10 classes, "1/K" otherwise.
fn ordinal_share(classes: usize) -> String {
    match classes {
        2 => "half".to_string(),
        3 => "third".to_string(),
        4 => "quarter".to_string(),
        10 => "tenth".to_string(),
        k => format!("1/{k}th"),
    }
}

/// "a", "a and b", "a, b and c".
fn list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().collect::<String>() + chars.as_str()
    })
}

/// "1, 2, 4 and 8": the leads of the empty-bins case.
fn leads() -> String {
    let texts: Vec<String> = FEW_LEADS.iter().map(|lead| lead.to_string()).collect();
    list(&texts.iter().map(String::as_str).collect::<Vec<_>>())
}

/// What the case shows beside the numbers, for [`estimator_case_lesson`].
#[derive(Clone, Debug, PartialEq)]
pub struct CaseFacts<'a> {
    pub case: EstimatorCase,
    /// Rows of the case, and of the whole evaluation half.
    pub images: usize,
    pub evaluation_images: usize,
    pub bins: usize,
    pub binning: Binning,
    /// The case's binned errors (ECE, RMSCE, MCE, accuracy).
    pub binned: &'a CalibrationReport,
    /// Distinct confidences, empty bins and non-empty bins of the case.
    pub distinct_confidences: usize,
    pub empty_bins: usize,
    /// The rows at a confidence of exactly 1 and the extra bin's errors.
    pub extra_bin: Option<ExtraBin>,
    /// The constant answer's class name and confidence (the base-rate case).
    pub constant_answer: Option<(&'a str, f64)>,
    /// The ECE interval on the case and on the whole evaluation half at the same T, once in.
    pub ece_interval: Option<MetricInterval>,
    pub network_ece_interval: Option<MetricInterval>,
    /// The temperature the slider says.
    pub temperature: f64,
}

/// What the chosen case teaches, computed from its numbers; empty for the network's own
/// logits.
pub fn estimator_case_lesson(facts: &CaseFacts) -> String {
    let b = facts.binned;
    match facts.case {
        EstimatorCase::Network => String::new(),
        EstimatorCase::ConfidenceOne => match facts.extra_bin {
            Some(extra) => format!(
                "{} of these {} images, the fifth the network is surest of, now have a \
                 confidence of exactly 1.0 at every T; {} of them are wrong. calibra puts them in \
                 its last bin: ECE {:.4}, RMSCE {:.4}, MCE {:.4}. A library with a bin of its own \
                 for 1.0 (torchmetrics) reads {:.4}, {:.4} and {:.4} on the same confidences: \
                 one data set, two numbers, and ECE moves least, since a right answer at 1 adds \
                 no gap wherever it is binned.",
                grouped(extra.certain),
                grouped(facts.images),
                grouped(extra.certain_wrong),
                b.ece,
                b.rmsce,
                b.mce,
                extra.errors.ece,
                extra.errors.rmsce,
                extra.errors.mce
            ),
            None => "No image has a confidence of exactly 1.0 at this T.".to_string(),
        },
        EstimatorCase::EmptyBins => {
            let filled = facts.bins - facts.empty_bins;
            let own = if facts.binning == Binning::Width && filled == facts.distinct_confidences {
                "each confidence has a bin of its own, so more bins would change none of the \
                 binned errors"
                    .to_string()
            } else if facts.binning == Binning::Width {
                format!(
                    "{} bins hold the {} confidences, so some share a bin: more bins would still \
                     move the binned errors",
                    filled, facts.distinct_confidences
                )
            } else {
                "equal-mass bins split the images of one confidence between neighbouring bins"
                    .to_string()
            };
            // A value no image's lead is nearest to is not a confidence of these images.
            let taken = if facts.distinct_confidences < FEW_LEADS.len() {
                format!(
                    ", of which these images take {}",
                    facts.distinct_confidences
                )
            } else {
                String::new()
            };
            format!(
                "Every image keeps its prediction, and its confidence moves to the nearest of {} \
                 values (leads of {} over the other logits){taken}: {} distinct confidences in \
                 {} bins leave {} bins empty. The binned errors average over the bins that hold images, \
                 so they stay defined (ECE {:.4}, MCE {:.4}, the largest gap of a bin that holds \
                 images), and {own}.",
                FEW_LEADS.len(),
                leads(),
                facts.distinct_confidences,
                facts.bins,
                facts.empty_bins,
                b.ece,
                b.mce
            )
        }
        EstimatorCase::BaseRate => {
            let (class, confidence) = facts.constant_answer.unwrap_or(("", 0.0));
            format!(
                "Every image gets the same answer, {class} at {}, that class's share of the \
                 calibration half: right on {} of these images, so ECE is {:.4}, near 0 — yet \
                 the answer tells no image from another. Calibration is not usefulness. The \
                 slider's T (now {}) does not apply here: these are base rates, not a network's \
                 logits, taken at T = 1.",
                percent(confidence, 1),
                percent(b.accuracy, 1),
                b.ece,
                facts.temperature
            )
        }
        EstimatorCase::HundredImages => {
            let widths = match (facts.ece_interval, facts.network_ece_interval) {
                (Some(small), Some(all)) => format!(
                    ": ECE's 95% interval is {:.4} wide here against {:.4} on all {} images",
                    small.upper - small.lower,
                    all.upper - all.lower,
                    grouped(facts.evaluation_images)
                ),
                _ => String::new(),
            };
            format!(
                "The first {} images of the evaluation half instead of {}: the noise floor. \
                 Every interval widens{widths}, and the estimators part more, since each \
                 handles noise its own way.",
                grouped(facts.images),
                grouped(facts.evaluation_images)
            )
        }
    }
}

#[cfg(test)]
#[path = "sentences_estimators_tests.rs"]
mod tests;
