//! The sentences the page writes about its numbers, computed from those numbers.
//!
//! A teaching page must never state something its own readouts contradict, so every sentence
//! that makes a claim about the data (is the network over- or underconfident, is the coverage
//! within the guarantee, do the experiment's bars sit where the theory says) is built here from
//! the values it talks about, and unit-tested on the cases that flip it. The statistics the
//! verdicts use (the spread of one split's coverage, the binned-ECE noise floor) are defined in
//! `docs/definitions.md`.

use crate::bootstrap::MetricInterval;
use crate::calibration::CalibrationReport;
use crate::calibration_null::{
    CalibrationTest, ConfidenceVerdict, GAP_STANDARD_ERRORS, NULL_DRAWS, VERDICT_RATES,
};
use crate::ood_difference::PairedDifference;
use crate::recalibration::VectorScaling;
use crate::temperature_anatomy::{BrierDecomposition, CurveMinimum, FitMistake, MistakenFit};
use crate::text::grouped;

/// Formats a fraction as a percentage with `decimals` decimals.
pub fn percent(value: f64, decimals: usize) -> String {
    format!("{:.*}%", decimals, 100.0 * value)
}

/// How far a verdict's statistic may stray, in standard deviations, before it is called more
/// than chance (about 3 in 1,000 for a normal law).
pub const CHANCE_DEVIATIONS: f64 = 3.0;

/// The line under the verdict that says how often it errs.
pub fn verdict_rates_line() -> String {
    let r = VERDICT_RATES;
    format!(
        "How far to trust this verdict: it names a direction only when the ECE is beyond what \
         95% of {} simulated perfectly calibrated networks with these confidences reach and the \
         mean gap is beyond {GAP_STANDARD_ERRORS:.0} standard errors. In seeded simulations it \
         called {} of {} calibrated synthetic networks over- or underconfident ({} more \
         miscalibrated with no direction), and found {} of {} networks whose true temperature \
         is 1.3 (5,000 images) overconfident.",
        NULL_DRAWS,
        r.false_alarms,
        r.calibrated_sets,
        r.no_direction,
        r.detections,
        r.overconfident_sets,
    )
}

/// What the network's confidence says at the slider's temperature: mean confidence against
/// accuracy, and the test of calibration's verdict (`calibration_null`), with the numbers it
/// rests on.
pub fn confidence_verdict(temperature: f64, accuracy: f64, test: &CalibrationTest) -> String {
    let mean_confidence = accuracy + test.mean_gap;
    let state = format!(
        "At T = {temperature:.3} the network is right on {} of the evaluation images and its \
         mean confidence is {}",
        percent(accuracy, 1),
        percent(mean_confidence, 1)
    );
    let margin = 100.0 * GAP_STANDARD_ERRORS * test.gap_standard_error;
    let beyond = format!(
        "its ECE, {:.4}, is beyond {:.4}, which 95% of perfectly calibrated networks with these \
         confidences stay under on this many images",
        test.ece, test.null_ece_limit
    );
    match test.verdict() {
        ConfidenceVerdict::CannotTell => format!(
            "{state}. Its ECE, {:.4}, is within what chance gives a perfectly calibrated network \
             with these confidences on this many images (95% of them stay under {:.4}): these \
             images cannot tell it from a calibrated network.",
            test.ece, test.null_ece_limit
        ),
        ConfidenceVerdict::Overconfident => format!(
            "{state}: overconfident, surer than it is right by {:.1} points (± {margin:.1}); \
             {beyond}.",
            100.0 * test.mean_gap
        ),
        ConfidenceVerdict::Underconfident => format!(
            "{state}: underconfident, less sure than it is right by {:.1} points (± \
             {margin:.1}); {beyond}.",
            -100.0 * test.mean_gap
        ),
        ConfidenceVerdict::NoDirection => format!(
            "{state}: miscalibrated, since {beyond}, but in no one direction: the mean gap, \
             {:.1} points, is within ± {margin:.1} of zero, so the bins' gaps point both ways.",
            100.0 * test.mean_gap
        ),
    }
}

/// How often the coverage verdict calls a valid method's coverage more than chance, as measured
/// by the seeded Monte Carlo test in `sentences_tests.rs`: split conformal on exchangeable,
/// tie-free scores (5,000 calibration and 5,000 evaluation rows, α = 0.1) over random splits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoverageFalseAlarms {
    pub alarms: usize,
    pub splits: usize,
}

/// The rate the page states; the test fails if a change moves it.
pub const COVERAGE_FALSE_ALARMS: CoverageFalseAlarms = CoverageFalseAlarms {
    alarms: 3,
    splits: 1000,
};

/// The measured false-alarm rate, as a clause.
fn coverage_false_alarms_clause() -> String {
    format!(
        "a valid method went past it in {} of {} random splits in a seeded simulation",
        COVERAGE_FALSE_ALARMS.alarms,
        grouped(COVERAGE_FALSE_ALARMS.splits)
    )
}

/// Whether a coverage lies inside the guarantee band, and the sentence that says so.
#[derive(Debug, Clone, PartialEq)]
pub struct CoverageVerdict {
    /// Distance from the band in units of one split's standard deviation (0 inside it;
    /// negative below the band, positive above).
    pub deviations: f64,
    /// `|deviations| ≤ CHANCE_DEVIATIONS`.
    pub explained_by_chance: bool,
    pub text: String,
}

/// Judges one split's coverage against the band `[lower, upper]`, with `split_sd` the standard
/// deviation of one split's coverage (Beta-Binomial law). `calibration_ties_at_threshold` is
/// how many calibration scores equal q̂ (the upper bound needs scores without ties).
pub fn coverage_verdict(
    coverage: f64,
    lower: f64,
    upper: f64,
    split_sd: f64,
    calibration_ties_at_threshold: usize,
) -> CoverageVerdict {
    let deviations = if coverage < lower {
        (coverage - lower) / split_sd
    } else if coverage > upper {
        (coverage - upper) / split_sd
    } else {
        0.0
    };
    let explained_by_chance = deviations.abs() <= CHANCE_DEVIATIONS;
    let spread = format!(
        "one split's coverage varies by ±{} (one standard deviation of the Beta-Binomial law)",
        percent(split_sd, 2)
    );
    let covered = percent(coverage, 2);
    let text = if deviations == 0.0 {
        format!("Coverage {covered} lies inside the guarantee band.")
    } else {
        let side = if deviations < 0.0 { "below" } else { "above" };
        let distance = format!(
            "{:.1} standard deviations {side} the band",
            deviations.abs()
        );
        if explained_by_chance {
            format!(
                "Coverage {covered} is {distance}: {spread}, and the guarantee holds on average \
                 over splits, so a distance of up to {CHANCE_DEVIATIONS:.0} is what chance gives \
                 ({}).",
                coverage_false_alarms_clause()
            )
        } else if deviations > 0.0 && calibration_ties_at_threshold > 1 {
            format!(
                "Coverage {covered} is {distance}, more than chance usually gives ({spread}): \
                 {calibration_ties_at_threshold} calibration scores tie with q̂, and the upper \
                 bound holds only for scores without ties."
            )
        } else {
            format!(
                "Coverage {covered} is {distance}, more than chance usually gives ({spread}; {}) \
                 — a sign that a condition fails (ties, T fitted on the calibration half, data \
                 that are not exchangeable).",
                coverage_false_alarms_clause()
            )
        }
    };
    CoverageVerdict {
        deviations,
        explained_by_chance,
        text,
    }
}

/// The shift lab's judgement of a coverage against the band `[lower, upper]` (`split_sd` as in
/// [`coverage_verdict`]), when the calibration rows are `exchangeable` with the evaluated ones
/// (T and q̂ refitted on the corrupted copy) or not (kept from the clean images, where the
/// guarantee does not apply whatever the number).
pub fn shift_coverage_verdict(
    coverage: f64,
    lower: f64,
    upper: f64,
    split_sd: f64,
    exchangeable: bool,
) -> String {
    let verdict = coverage_verdict(coverage, lower, upper, split_sd, 0);
    let covered = percent(coverage, 2);
    let position = if verdict.deviations == 0.0 {
        format!("Coverage {covered} lies inside the guarantee band")
    } else {
        let side = if verdict.deviations < 0.0 {
            "below"
        } else {
            "above"
        };
        let chance = if verdict.explained_by_chance {
            "within what chance gives for one split"
        } else {
            "more than chance gives for one split"
        };
        format!(
            "Coverage {covered} is {:.1} standard deviations {side} the band, {chance}",
            verdict.deviations.abs()
        )
    };
    if exchangeable {
        let rest = if verdict.explained_by_chance {
            "."
        } else {
            " (the guarantee holds on average over splits: try another split)."
        };
        format!("{position}{rest}")
    } else {
        format!(
            "{position}; the corrupted images are not exchangeable with the clean calibration \
             images, so the guarantee does not cover them."
        )
    }
}

/// The numbers the coverage experiment's caption talks about.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExperimentSummary {
    pub repetitions: usize,
    pub n_calibration: usize,
    pub n_evaluation: usize,
    /// `k = ⌈(n + 1)(1 − α)⌉`.
    pub k: usize,
    pub mean: f64,
    pub standard_deviation: f64,
    /// Mean and standard deviation of `Beta(k, n + 1 − k)` (an infinite evaluation set).
    pub beta_mean: f64,
    pub beta_standard_deviation: f64,
    /// The Beta-Binomial standard deviation of a finite evaluation set.
    pub finite_standard_deviation: f64,
    /// Scores of the pool that equal another score of the pool.
    pub tied_scores: usize,
    /// The page's Mondrian switch is on (the experiment uses marginal thresholds).
    pub mondrian_ignored: bool,
}

/// The coverage experiment's caption: the theory, then whether the observed bars are centred
/// where it says (mean within [`CHANCE_DEVIATIONS`] standard errors of the mean) and as wide
/// (standard deviation within that many standard errors of a standard deviation).
pub fn experiment_caption(s: &ExperimentSummary) -> String {
    let r = s.repetitions as f64;
    let theory = format!(
        "With n = {} calibration images, k = ⌈(n + 1)(1 − α)⌉ = {}, and the coverage of an \
         infinitely large evaluation set follows Beta(k, n + 1 − k): mean {}, standard deviation \
         {} (orange curve). Each split here is measured on {} evaluation images, which adds \
         binomial noise: the predicted standard deviation becomes {} (Beta-Binomial).",
        s.n_calibration,
        s.k,
        percent(s.beta_mean, 2),
        percent(s.beta_standard_deviation, 2),
        s.n_evaluation,
        percent(s.finite_standard_deviation, 2)
    );
    let mean_error = s.standard_deviation / r.sqrt();
    let mean_off = (s.mean - s.beta_mean).abs() > CHANCE_DEVIATIONS * mean_error.max(f64::EPSILON);
    let centre = if mean_off {
        let ties = if s.tied_scores > 0 {
            format!(
                " {} of the pooled scores tie with another, and the law assumes scores without ties.",
                s.tied_scores
            )
        } else {
            String::new()
        };
        format!(
            "The observed mean, {}, is not where the theory puts it ({}): more than \
             {CHANCE_DEVIATIONS:.0} standard errors of the mean away.{ties}",
            percent(s.mean, 2),
            percent(s.beta_mean, 2)
        )
    } else {
        format!(
            "The observed mean, {}, sits where the theory puts it (within {CHANCE_DEVIATIONS:.0} \
             standard errors of the mean).",
            percent(s.mean, 2)
        )
    };
    // The standard deviation of R draws has a relative standard error of about 1/√(2(R − 1)).
    let relative_error = 1.0 / (2.0 * (r - 1.0).max(1.0)).sqrt();
    let ratio = s.standard_deviation / s.finite_standard_deviation;
    let width = if (ratio - 1.0).abs() <= CHANCE_DEVIATIONS * relative_error {
        format!(
            " The observed spread, {}, matches the Beta-Binomial prediction.",
            percent(s.standard_deviation, 2)
        )
    } else {
        format!(
            " The observed spread, {}, is {} than the Beta-Binomial prediction.",
            percent(s.standard_deviation, 2),
            if ratio > 1.0 { "wider" } else { "narrower" }
        )
    };
    let mondrian = if s.mondrian_ignored {
        " The experiment uses marginal thresholds: the Mondrian switch does not apply to it."
    } else {
        ""
    };
    format!("{theory} {centre}{width}{mondrian}")
}

/// The per-class coverage chart's sentence: which classes fall short and which overshoot, and
/// what Mondrian thresholds promise (1 − α per class in expectation; one split scatters each
/// class by about `class_sd`).
pub fn per_class_sentence(
    class_names: &[&str],
    per_class_coverage: &[Option<f64>],
    target: f64,
    mondrian: bool,
    class_sd: f64,
) -> String {
    let present: Vec<(usize, f64)> = per_class_coverage
        .iter()
        .enumerate()
        .filter_map(|(k, c)| c.map(|c| (k, c)))
        .collect();
    let name = |k: usize| class_names.get(k).copied().unwrap_or("?");
    let Some(&(lowest, low)) = present.iter().min_by(|a, b| a.1.total_cmp(&b.1)) else {
        return String::new();
    };
    let Some(&(highest, high)) = present.iter().max_by(|a, b| a.1.total_cmp(&b.1)) else {
        return String::new();
    };
    let range = format!(
        "Here the lowest coverage is {}'s {} and the highest {}'s {}, against {} for 1 − α.",
        name(lowest),
        percent(low, 1),
        name(highest),
        percent(high, 1),
        percent(target, 0)
    );
    let promise = if mondrian {
        format!(
            " Mondrian thresholds bring each class to 1 − α in expectation over calibration \
             draws; one split still scatters each class by about ±{} (one standard deviation).",
            percent(class_sd, 1)
        )
    } else {
        " Marginal thresholds promise 1 − α only on average over all images; Mondrian \
         thresholds calibrate each class on its own."
            .to_string()
    };
    format!("{range}{promise}")
}

/// When too few calibration images give a finite q̂: every set holds every label.
///
/// `infinite_classes` names the classes whose Mondrian q̂ is infinite (too few calibration images
/// of that class): only their labels join every set. Empty, the one marginal q̂ is infinite and
/// every set holds every label.
pub fn coverage_verdict_without_threshold(
    coverage: f64,
    infinite_classes: &[&str],
) -> CoverageVerdict {
    let covered = percent(coverage, 2);
    let text = if infinite_classes.is_empty() {
        format!(
            "Coverage {covered}: too few calibration images for a finite q̂ at this α, so every \
             set holds every label and the guarantee is met trivially."
        )
    } else {
        let (classes, their) = match infinite_classes {
            [one] => (format!("class {one}"), "its label joins"),
            many => (format!("classes {}", many.join(", ")), "their labels join"),
        };
        format!(
            "Coverage {covered}: too few calibration images of {classes} for a finite q̂ at this \
             α, so {their} every set (and each of them is covered trivially); only those labels \
             do. The other classes' thresholds are finite, and each of those classes keeps its \
             coverage of at least 1 − α on average over calibration sets."
        )
    };
    CoverageVerdict {
        deviations: 0.0,
        explained_by_chance: true,
        text,
    }
}

/// A threshold q̂ as the readout shows it: four decimals, "∞" when infinite, and "1 − 3.7e-10"
/// when it is below 1 but would round to 1.0000, so that a q̂ a hair below 1 is not mistaken for
/// 1 (the difference decides which sets are empty).
pub fn threshold_text(threshold: f64) -> String {
    if threshold.is_infinite() {
        "∞".to_string()
    } else if threshold < 1.0 && format!("{threshold:.4}") == "1.0000" {
        format!("1 − {:.1e}", 1.0 - threshold)
    } else {
        format!("{threshold:.4}")
    }
}

/// A score and the threshold it is compared with, each with the fewest decimals (at least 4)
/// that show which is larger: "0.9999997 > 0.9999995" rather than "1.0000 > 1.0000".
pub fn score_against_threshold(score: f64, threshold: f64) -> (String, String) {
    let format = |value: f64, decimals: usize| {
        if value.is_infinite() {
            "∞".to_string()
        } else {
            format!("{value:.decimals$}")
        }
    };
    let decimals = (4..=17)
        .find(|&d| score == threshold || format(score, d) != format(threshold, d))
        .unwrap_or(17);
    (format(score, decimals), format(threshold, decimals))
}

/// One network's figures in the τ lab's sentences.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NetworkFigures<'a> {
    /// "LogitNorm τ = 0.04", "cross-entropy".
    pub title: &'a str,
    pub accuracy: f64,
    pub ece_raw: f64,
    pub fitted_temperature: f64,
    /// The fit stopped at a bound of the slider's range.
    pub fitted_bound_hit: bool,
    pub ece_fitted: f64,
}

/// What one score's detection metrics say about a LogitNorm network against cross-entropy on
/// one OOD set, on this run: each network's FPR95 and AUROC, and the paired bootstrap interval
/// of their difference (`ood_difference`) once a worker has computed it. A difference is named
/// only when its 95% interval leaves out 0; never a verdict on the paper, whose protocol differs
/// (the lab states how, once).
pub fn ood_lesson(
    network: &str,
    set: &str,
    score: &str,
    chosen: (f64, f64),
    cross_entropy: (f64, f64),
    difference: Option<&PairedDifference>,
) -> String {
    let ((fpr, auroc), (ce_fpr, ce_auroc)) = (chosen, cross_entropy);
    let figures = format!(
        "On {set}, by {score}, {network} lets through {} of them at a 95% true-positive rate \
         against cross-entropy's {} (AUROC {auroc:.3} against {ce_auroc:.3})",
        percent(fpr, 1),
        percent(ce_fpr, 1)
    );
    let Some(difference) = difference else {
        return format!(
            "{figures}. Computing how much of the difference is noise (a paired bootstrap over \
             the test and OOD images)…"
        );
    };
    let points = |value: f64| format!("{:.1}", 100.0 * value.abs());
    let interval = |i: &MetricInterval, scale: f64, decimals: usize| {
        format!(
            "95% interval {:+.*} to {:+.*}",
            decimals,
            scale * i.lower,
            decimals,
            scale * i.upper
        )
    };
    let (f, a) = (&difference.fpr95, &difference.auroc);
    let fpr_clause = if f.upper < 0.0 {
        format!(
            "on this run, {network} lowers FPR95 by {} points ({})",
            points(f.estimate),
            interval(f, 100.0, 1)
        )
    } else if f.lower > 0.0 {
        format!(
            "on this run, {network} raises FPR95 by {} points ({})",
            points(f.estimate),
            interval(f, 100.0, 1)
        )
    } else {
        format!(
            "the FPR95 difference, {:+.1} points, is within noise ({})",
            100.0 * f.estimate,
            interval(f, 100.0, 1)
        )
    };
    let auroc_clause = if a.lower > 0.0 || a.upper < 0.0 {
        format!(
            "AUROC {} by {:.3} ({})",
            if a.estimate > 0.0 { "rises" } else { "falls" },
            a.estimate.abs(),
            interval(a, 1.0, 3)
        )
    } else {
        format!(
            "the AUROC difference, {:+.3}, is within noise ({})",
            a.estimate,
            interval(a, 1.0, 3)
        )
    };
    format!(
        "{figures}: {fpr_clause}; {auroc_clause}. The intervals resample the same test and OOD \
         images for both networks, and speak of this one training run each."
    )
}

/// The reliability diagram's numbers in words, for its text alternative: at `temperature`, the
/// accuracy, mean confidence and ECE, how many bins hold images, and the bin with the largest
/// gap between confidence and accuracy (its range, direction, size and image count).
pub fn reliability_summary(
    temperature: f64,
    mean_confidence: f64,
    report: &crate::calibration::CalibrationReport,
) -> String {
    let filled: Vec<&crate::calibration::Bin> =
        report.bins.iter().filter(|bin| bin.count > 0).collect();
    let figures = format!(
        "At T = {temperature:.3}: accuracy {}, mean confidence {}, ECE {:.4}; {} of {} bins \
         hold images",
        percent(report.accuracy, 1),
        percent(mean_confidence, 1),
        report.ece,
        filled.len(),
        report.bins.len()
    );
    let largest = filled.iter().max_by(|a, b| {
        (a.confidence - a.accuracy)
            .abs()
            .total_cmp(&(b.confidence - b.accuracy).abs())
    });
    match largest {
        Some(bin) => format!(
            "{figures}; the largest gap is in the bin {:.2}–{:.2} ({} images): confidence {} \
             against accuracy {}, {} by {:.1} points.",
            bin.lower,
            bin.upper,
            grouped(bin.count),
            percent(bin.confidence, 1),
            percent(bin.accuracy, 1),
            if bin.confidence > bin.accuracy {
                "overconfident"
            } else {
                "underconfident"
            },
            100.0 * (bin.confidence - bin.accuracy).abs()
        ),
        None => format!("{figures}."),
    }
}

/// The set-size histogram's numbers in words, for its text alternative: the share of sets of
/// each size that occurs (`counts[s]`: sets holding `s` labels) and the average size.
pub fn set_size_summary(counts: &[usize]) -> String {
    let total: usize = counts.iter().sum();
    if total == 0 {
        return String::new();
    }
    let shares: Vec<String> = counts
        .iter()
        .enumerate()
        .filter(|(_, &count)| count > 0)
        .map(|(size, &count)| {
            let label = match size {
                0 => "empty".to_string(),
                1 => "1 label".to_string(),
                _ => format!("{size} labels"),
            };
            format!("{label} {}", percent(count as f64 / total as f64, 1))
        })
        .collect();
    let average = counts
        .iter()
        .enumerate()
        .map(|(size, &count)| (size * count) as f64)
        .sum::<f64>()
        / total as f64;
    format!(
        "Here: {}; {average:.2} labels on average.",
        shares.join(", ")
    )
}

/// Each shown network's FPR95 and AUROC with its 95% bootstrap interval over the test and OOD
/// images (`networks`: the chosen network's title, then the reference's unless it is the same
/// network; `difference` holds both networks' intervals once a worker has computed them).
pub fn detection_intervals(
    networks: &[String],
    score: &str,
    resamples: usize,
    difference: Option<&PairedDifference>,
) -> String {
    let Some(difference) = difference else {
        return format!(
            "Computing each network's 95% interval by {score} (a bootstrap over the test and \
             OOD images)…"
        );
    };
    let clauses: Vec<String> = networks
        .iter()
        .zip([&difference.chosen, &difference.reference])
        .map(|(network, own)| {
            format!(
                "{network}, FPR95 {:.3} ({:.3} to {:.3}) and AUROC {:.3} ({:.3} to {:.3})",
                own.fpr95.estimate,
                own.fpr95.lower,
                own.fpr95.upper,
                own.auroc.estimate,
                own.auroc.lower,
                own.auroc.upper
            )
        })
        .collect();
    format!(
        "By {score}, with 95% bootstrap intervals over the test and OOD images ({} resamples): \
         {}. They measure the images' noise for this training run only.",
        grouped(resamples),
        clauses.join("; ")
    )
}

/// Which τ the paper's tuning picks here: the trained τ with the lowest FPR95 of MSP at
/// `T = 1` on Gaussian noise, with every candidate's figure (`gaussian_fpr95`: (τ, FPR95)).
pub fn paper_selection(chosen: f64, gaussian_fpr95: &[(f64, f64)]) -> String {
    let mut sorted = gaussian_fpr95.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let list: Vec<String> = sorted
        .iter()
        .map(|(tau, fpr95)| format!("τ = {tau}: {}", percent(*fpr95, 1)))
        .collect();
    format!(
        "Tuned as the paper tunes it, on Gaussian noise (the lowest FPR95 of MSP at T = 1), τ = \
         {chosen} is picked here ({}).",
        list.join(", ")
    )
}

/// One row of the paper protocol's comparison: the picked LogitNorm network's and
/// cross-entropy's FPR95 on one set by one score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PaperFigures {
    pub set: &'static str,
    pub score: &'static str,
    pub chosen_fpr95: f64,
    pub cross_entropy_fpr95: f64,
}

/// What the paper's protocol shows on these networks: for each set and score, which network
/// lets fewer OOD images through (or that they let through as many), on this one run of each.
pub fn paper_lesson(network: &str, rows: &[PaperFigures]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let clauses: Vec<String> = rows
        .iter()
        .map(|row| {
            let (a, b) = (row.chosen_fpr95, row.cross_entropy_fpr95);
            let comparison = if a < b {
                "fewer of them through than"
            } else if a > b {
                "more of them through than"
            } else {
                "as many of them through as"
            };
            format!(
                "on {} by {}, {network} lets {comparison} cross-entropy ({} against {})",
                row.set,
                row.score,
                percent(a, 1),
                percent(b, 1)
            )
        })
        .collect();
    format!(
        "Under the paper's protocol, {}. These are single training runs on the images here, \
         without intervals: the lab's paired intervals and seed spread above show how large a \
         difference noise alone can make.",
        clauses.join("; ")
    )
}

/// One network's detection metrics on each training seed evaluated, in seed order.
#[derive(Debug, Clone, PartialEq)]
pub struct SeedFigures {
    /// "cross-entropy", "LogitNorm τ = 0.04".
    pub network: String,
    pub fpr95: Vec<f64>,
    pub auroc: Vec<f64>,
}

/// What training again with another seed does to the detection metrics: for each network with
/// several seeds evaluated, the mean FPR95 and AUROC over its seeds, each seed's value and the
/// FPR95's range, so that a reader weighs a difference between networks against the spread of
/// one network retrained (which the image-bootstrap intervals leave out).
pub fn seed_spread(score: &str, networks: &[SeedFigures]) -> String {
    let several: Vec<&SeedFigures> = networks.iter().filter(|n| n.fpr95.len() > 1).collect();
    if several.is_empty() {
        return "Cross-entropy, LogitNorm τ = 0.04 and τ = 1 were each trained with other seeds \
                too, same recipe: evaluate every network to see how far a retraining moves \
                them."
            .to_string();
    }
    let mean = |values: &[f64]| values.iter().sum::<f64>() / values.len() as f64;
    let list = |values: &[f64]| {
        values
            .iter()
            .map(|v| format!("{v:.3}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let clauses: Vec<String> = several
        .iter()
        .map(|n| {
            let (low, high) = n
                .fpr95
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                    (lo.min(v), hi.max(v))
                });
            format!(
                "{}: FPR95 {:.3} on average over {} seeds ({}; {:.1} points apart), AUROC {:.3} \
                 ({})",
                n.network,
                mean(&n.fpr95),
                n.fpr95.len(),
                list(&n.fpr95),
                100.0 * (high - low),
                mean(&n.auroc),
                list(&n.auroc)
            )
        })
        .collect();
    format!(
        "Trained again with other seeds, same recipe, by {score}: {}. The chart's filled dots \
         are these means, its rings the seeds; the bootstrap intervals above cover the images' \
         noise, not this training noise.",
        clauses.join("; ")
    )
}

/// A confidence as a percentage with one decimal, or with as many as it takes (up to six) not to
/// round up to 100%: "97.3%", "99.9994%", "> 99.99995%".
pub fn confidence_text(p: f64) -> String {
    (1..=6)
        .map(|decimals| percent(p, decimals))
        .find(|text| !text.starts_with("100."))
        .unwrap_or_else(|| "> 99.99995%".to_string())
}

/// What temperature scaling does to a LogitNorm network's calibration, against cross-entropy's:
/// raw ECE, the fitted T (flagged at its bound) and its direction, ECE after scaling, and why one
/// T cannot do all of it: LogitNorm's loss does not change when the logits grow, so training
/// fits softmax(z/(τ‖z‖)), a temperature that varies with each image's ‖z‖.
pub fn calibration_lesson(chosen: &NetworkFigures, cross_entropy: &NetworkFigures) -> String {
    let direction = |t: f64| if t < 1.0 { "sharpens" } else { "softens" };
    let raw = if chosen.ece_raw > cross_entropy.ece_raw {
        "worse calibrated than"
    } else {
        "no worse calibrated than"
    };
    let bound = |figures: &NetworkFigures| {
        if figures.fitted_bound_hit {
            " (the fit stopped at the slider's bound: a T beyond it would fit better)"
        } else {
            ""
        }
    };
    format!(
        "Raw, the probabilities of {} are {raw} those of cross-entropy (ECE {:.4} against \
         {:.4}, accuracy {} against {}); temperature scaling with T = {:.3}{} {} them and brings \
         ECE to {:.4} (cross-entropy: T = {:.3}{}, ECE {:.4}). Why one T cannot do all of it: \
         LogitNorm's loss does not change when the logits grow, so training fits \
         softmax(z/(τ‖z‖)), a temperature that varies with each image's logit length ‖z‖, \
         which one global T matches only where ‖z‖ varies little.",
        chosen.title,
        chosen.ece_raw,
        cross_entropy.ece_raw,
        percent(chosen.accuracy, 2),
        percent(cross_entropy.accuracy, 2),
        chosen.fitted_temperature,
        bound(chosen),
        direction(chosen.fitted_temperature),
        chosen.ece_fitted,
        cross_entropy.fitted_temperature,
        bound(cross_entropy),
        cross_entropy.ece_fitted,
    )
}

/// What the rivals table says while it has no numbers: they are being fitted (`fitting`), or
/// they will be once every row's logits are in.
pub fn rivals_pending(fitting: bool) -> String {
    if fitting {
        "Fitting normalised temperature scaling, vector scaling, histogram binning and isotonic \
         regression on the calibration half…"
            .to_string()
    } else {
        "The rivals are fitted once the logits of every row are in.".to_string()
    }
}

/// What the rivals table says about accuracy: temperature scaling and the two top-label
/// methods keep every prediction, vector scaling may not. `accuracy` is theirs, `vector` vector
/// scaling's accuracy with the number of predictions it changed, out of `images`.
pub fn rivals_accuracy_sentence(accuracy: f64, vector: (f64, usize), images: usize) -> String {
    let (vector_accuracy, changed) = vector;
    let kept = format!(
        "Temperature scaling, histogram binning and isotonic regression keep every \
         prediction, so the accuracy stays at {}",
        percent(accuracy, 2)
    );
    if changed == 0 {
        return format!(
            "{kept}; vector scaling's per-class scales and biases could move predictions, but \
             here they move none."
        );
    }
    let changes = format!(
        "vector scaling's per-class scales and biases change {} of the {} predictions",
        grouped(changed),
        grouped(images)
    );
    if vector_accuracy == accuracy {
        format!("{kept}; {changes}, as many to right as to wrong, and the accuracy stays the same.")
    } else {
        format!(
            "{kept}; {changes}, and the accuracy to {} ({:+.2} points).",
            percent(vector_accuracy, 2),
            100.0 * (vector_accuracy - accuracy)
        )
    }
}

/// What to say when the vector-scaling fit stopped without converging (nothing when it
/// converged): its steps and its largest scale, so the reader knows the row is where Newton's
/// method stopped, not a minimum.
pub fn vector_scaling_stop_sentence(fit: &VectorScaling) -> Option<String> {
    if fit.converged {
        return None;
    }
    let largest =
        fit.scales.iter().copied().fold(
            0.0,
            |largest: f64, w| if w.abs() > largest.abs() { w } else { largest },
        );
    Some(format!(
        "Vector scaling did not converge: its fit stopped after {} Newton steps with its \
         largest per-class scale at {largest:.1}, and its row shows the fit where it stopped.",
        grouped(fit.steps)
    ))
}
/// One recalibration's figures in the rivals' binning sentence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BinningFigures {
    /// Distinct confidences among the evaluation images.
    pub distinct: usize,
    /// ECE on the evaluation half.
    pub ece: f64,
    /// ECE on the calibration half it was fitted on.
    pub calibration_ece: f64,
    /// NLL on the evaluation half.
    pub nll: f64,
}

/// What the rivals table says about histogram binning and isotonic regression against
/// temperature scaling: how few distinct confidences they give, why their ECE on the half they
/// were fitted on shows nothing (it is near zero by construction: each bin, or each isotonic
/// step, says its own accuracy there), and where overfitting does show: ECE and NLL on the
/// evaluation half, where a confidence of 1 that misses costs 36 nats (NLL's clip at 2⁻⁵²).
pub fn rivals_binning_sentence(
    histogram: BinningFigures,
    isotonic: BinningFigures,
    temperature: BinningFigures,
    images: usize,
) -> String {
    format!(
        "Histogram binning and isotonic regression give the {} evaluation images only {} and \
         {} distinct confidences (temperature scaling: {}). On the calibration half they were \
         fitted on, their ECE ({:.4} and {:.4}) is near zero by construction, since each bin or \
         isotonic step says its own accuracy there, so it cannot show overfitting. It shows on \
         the evaluation half: ECE {:.4} and {:.4} against temperature scaling's {:.4}, and NLL \
         {:.4} and {:.4} against {:.4}, where a bin that says 1 costs 36 nats on each miss.",
        grouped(images),
        grouped(histogram.distinct),
        grouped(isotonic.distinct),
        grouped(temperature.distinct),
        histogram.calibration_ece,
        isotonic.calibration_ece,
        histogram.ece,
        isotonic.ece,
        temperature.ece,
        histogram.nll,
        isotonic.nll,
        temperature.nll,
    )
}

/// The anatomy chart's text alternative: where each curve of each half is least
/// (`minima[metric] = [calibration, evaluation]`, metrics in the order NLL, ECE, smECE, Brier),
/// against the exact NLL fit.
pub fn anatomy_summary(minima: &[[CurveMinimum; 2]; 4], fitted_temperature: f64) -> String {
    let [nll, ece, smece, brier] = minima.map(|[calibration, evaluation]| {
        format!(
            "T = {:.3} on the calibration half ({:.4}) and {:.3} on the evaluation half ({:.4})",
            calibration.temperature, calibration.value, evaluation.temperature, evaluation.value
        )
    });
    format!(
        "On the chart's grid, NLL is least at {nll}, beside the exact fit T = \
         {fitted_temperature:.3}; ECE at {ece}; smooth ECE at {smece}; the Brier score at {brier}."
    )
}

/// What the anatomy chart says before its curves are in: they are being computed in the
/// background (`computing`), or they will be once every row's logits are in.
pub fn anatomy_pending(computing: bool) -> String {
    if computing {
        "Computing NLL, ECE, smooth ECE and Brier over 121 temperatures on both halves…".to_string()
    } else {
        "The curves are computed once the logits of every row are in.".to_string()
    }
}

/// "lower", "higher" or "the same as": how `value` compares with `reference` at the 4 decimals
/// the page prints them to.
fn compared(value: f64, reference: f64) -> &'static str {
    let (value, reference) = ((value * 1e4).round(), (reference * 1e4).round());
    if value < reference {
        "lower than"
    } else if value > reference {
        "higher than"
    } else {
        "the same as"
    }
}

/// What a mistaken fit of the temperature does to the evaluation half's numbers, against the
/// honest fit (`fitted_temperature` by NLL on the calibration half, whose evaluation-half
/// metrics are `honest`); `bins` is the lab's bin count, which the least-ECE fit depends on.
pub fn fit_mistake_sentence(
    fit: &MistakenFit,
    fitted_temperature: f64,
    honest: &CalibrationReport,
    bins: usize,
) -> String {
    let (t, mistaken) = (fit.temperature, &fit.evaluation);
    let nll = format!(
        "its NLL on the evaluation half is {:.4}, {} the honest fit's {:.4}",
        mistaken.nll,
        compared(mistaken.nll, honest.nll),
        honest.nll
    );
    let ece = format!(
        "its ECE {:.4}, {} the honest fit's {:.4}",
        mistaken.ece,
        compared(mistaken.ece, honest.ece),
        honest.ece
    );
    match fit.mistake {
        FitMistake::EvaluationHalf => {
            let judged = format!(
                "Fitted on the evaluation half, the half that then judges it, T lands at {t:.3} \
                 (the calibration half's fit: {fitted_temperature:.3}), and {nll}"
            );
            if (honest.nll - mistaken.nll) * 1e4 >= 0.5 {
                format!(
                    "{judged}: a flattering number, since this T was chosen to be best on these \
                     very images; new images would see the honest fit's."
                )
            } else {
                format!(
                    "{judged}: the two agree to 4 decimals here, since one parameter learns \
                     little of a half, but the number can only flatter: this T was chosen to be \
                     best on these very images."
                )
            }
        }
        FitMistake::Probabilities => {
            let verdict = if mistaken.nll > honest.nll {
                "dividing probabilities cannot undo what it broke"
            } else {
                "these numbers happen not to show it, but the T still says nothing about the \
                 logits"
            };
            // "far" only when the two fits differ by a factor of 2 or more.
            let apart = if (t / fitted_temperature).ln().abs() >= 2f64.ln() {
                "far from"
            } else {
                "against"
            };
            format!(
                "Dividing the probabilities instead of the logits squeezes every value into [0, \
                 1] before the softmax, so that the softmax can spread them by at most 1/T: the \
                 fit runs to T = {t:.3}, {apart} the logits' {fitted_temperature:.3}, a number \
                 that means nothing for the network. The predictions stay (accuracy {}), but {nll} \
                 and {ece}: {verdict}.",
                percent(mistaken.accuracy, 2)
            )
        }
        FitMistake::MinimiseEce => format!(
            "The least ECE on the calibration half, with {bins} bins, lies at T = {t:.3} (the NLL \
             fit: {fitted_temperature:.3}); on the evaluation half {ece}, and {nll}. ECE is a \
             noisy target whose minimum moves with the bins: change their number or kind and \
             watch this line jump while the NLL fit stays."
        ),
    }
}

/// Murphy's decomposition of the Brier score at the slider's T, and what temperature scaling
/// does to it: from T = 1 to the fitted T, reliability against resolution, each as a share of
/// itself. It says that resolution is "nearly untouched" only when its share moves by less
/// than half as much as reliability's; otherwise it states both moves.
pub fn brier_decomposition_sentence(
    temperature: f64,
    at_slider: &BrierDecomposition,
    at_one: &BrierDecomposition,
    at_fitted: &BrierDecomposition,
    fitted_temperature: f64,
) -> String {
    let brier =
        at_slider.reliability - at_slider.resolution + at_slider.uncertainty + at_slider.within_bin;
    let here = format!(
        "At T = {temperature:.3} the Brier score {brier:.4} is reliability {:.4} − resolution \
         {:.4} + uncertainty {:.4}, with {:+.4} from forecasts binned together.",
        at_slider.reliability, at_slider.resolution, at_slider.uncertainty, at_slider.within_bin
    );
    // Each term's move as a share of its value at T = 1 (none for a term that is 0 there).
    let share = |from: f64, to: f64| (from > 0.0).then(|| (to - from) / from);
    let reliability_move = share(at_one.reliability, at_fitted.reliability);
    let resolution_move = share(at_one.resolution, at_fitted.resolution);
    let signed =
        |share: Option<f64>| share.map_or_else(String::new, |s| format!(" ({:+.1}%)", 100.0 * s));
    let moves = format!(
        "From T = 1 to the fitted T = {fitted_temperature:.3}, reliability goes from {:.4} to \
         {:.4}{} and resolution from {:.4} to {:.4}{}; uncertainty, the labels' own spread, \
         stays {:.4}",
        at_one.reliability,
        at_fitted.reliability,
        signed(reliability_move),
        at_one.resolution,
        at_fitted.resolution,
        signed(resolution_move),
        at_fitted.uncertainty
    );
    match (reliability_move, resolution_move) {
        (Some(reliability), Some(resolution)) if resolution.abs() < 0.5 * reliability.abs() => {
            format!(
                "{here} {moves}: temperature scaling changes how far the confidences are from \
                 what happens after them, and leaves nearly untouched how well they tell the \
                 images apart, since it changes no prediction."
            )
        }
        (None, _) => format!(
            "{here} {moves}: at T = 1 the reliability term is already 0, so the fit has \
             nothing to remove."
        ),
        _ => format!(
            "{here} {moves}: here the fit moves resolution, for its size, as much as \
             reliability, since resolution too is measured on bins, and a new T moves images \
             between them."
        ),
    }
}

#[cfg(test)]
#[path = "sentences_tests.rs"]
mod tests;
