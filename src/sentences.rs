//! The sentences the page writes about its numbers, computed from those numbers.
//!
//! A teaching page must never state something its own readouts contradict, so every sentence
//! that makes a claim about the data (is the network over- or underconfident, is the coverage
//! within the guarantee, do the experiment's bars sit where the theory says) is built here from
//! the values it talks about, and unit-tested on the cases that flip it. The statistics the
//! verdicts use (the spread of one split's coverage, the binned-ECE noise floor) are defined in
//! `docs/definitions.md`.

use crate::bootstrap::{EceNllIntervals, MetricInterval};
use crate::calibration::CalibrationReport;
use crate::calibration_estimators::CumulativeDifferences;
use crate::calibration_null::{
    CalibrationTest, ConfidenceVerdict, GAP_STANDARD_ERRORS, NULL_DRAWS, VERDICT_RATES,
};
use crate::corp::{Corp, ScoreDecomposition};
use crate::ood_difference::PairedDifference;
use crate::recalibration::dirichlet::MAX_DIRICHLET_CLASSES;
use crate::recalibration::VectorScaling;
use crate::selective::SelectiveReport;
use crate::temperature_anatomy::{BrierDecomposition, CurveMinimum, FitMistake, MistakenFit};
use crate::text::{fixed, grouped};

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

/// The familywise false-alarm rate of [`reliability_summary`]'s direction: the largest bin gap
/// is called over- or underconfident only when an exact binomial test rejects calibration at
/// `GAP_DIRECTION_LEVEL / filled bins` (Bonferroni over the bins it picked the largest from).
pub const GAP_DIRECTION_LEVEL: f64 = 0.05;

/// The two-sided exact binomial p-value of `correct` successes in `count` trials of probability
/// `confidence`: how surprising a bin's accuracy is for a calibrated network whose images in
/// the bin have mean confidence `confidence`. The binomial's variance `n·c̄(1−c̄)` is at least
/// the Poisson-binomial's of the bin's own confidences, so the test errs on the side of
/// calling a gap chance.
fn bin_gap_p_value(count: usize, correct: u64, confidence: f64) -> f64 {
    use statrs::distribution::{Binomial, DiscreteCDF};
    let Ok(law) = Binomial::new(confidence.clamp(0.0, 1.0), count as u64) else {
        return 1.0;
    };
    let below = law.cdf(correct);
    let above = if correct == 0 {
        1.0
    } else {
        law.sf(correct - 1)
    };
    (2.0 * below.min(above)).min(1.0)
}

/// The reliability diagram's numbers in words, for its text alternative: at `temperature`, the
/// accuracy, mean confidence and ECE, how many bins hold images, and the bin with the largest
/// gap between confidence and accuracy (its range, size and image count). The gap gets a
/// direction only when it is larger than chance leaves to that many images (see
/// [`GAP_DIRECTION_LEVEL`]); otherwise the sentence says chance explains it, so that a perfectly
/// calibrated network's noisiest bin is not called over- or underconfident.
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
    let Some(bin) = largest else {
        return format!("{figures}.");
    };
    let gap = 100.0 * (bin.confidence - bin.accuracy).abs();
    let correct = (bin.accuracy * bin.count as f64).round() as u64;
    let beyond_chance = bin_gap_p_value(bin.count, correct, bin.confidence)
        < GAP_DIRECTION_LEVEL / filled.len() as f64;
    let gap_words = if !beyond_chance {
        format!("a gap of {gap:.1} points, which chance alone can make with this many images")
    } else if bin.confidence > bin.accuracy {
        format!("overconfident by {gap:.1} points, more than chance explains")
    } else {
        format!("underconfident by {gap:.1} points, more than chance explains")
    };
    format!(
        "{figures}; the largest gap is in the bin {:.2}–{:.2} ({} images): confidence {} \
         against accuracy {}, {gap_words}.",
        bin.lower,
        bin.upper,
        grouped(bin.count),
        percent(bin.confidence, 1),
        percent(bin.accuracy, 1),
    )
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

/// One candidate of the detectors' ranking as the sentence names it: the detector, the network
/// and its AUROC with its interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RankedFigures<'a> {
    pub detector: &'a str,
    pub network: &'a str,
    pub auroc: MetricInterval,
}

/// Which detector on which network separates the Fashion-MNIST images from `set` best here
/// (`ranked`: by decreasing AUROC, as `ood_ranking` ranks them), and whether its lead over the
/// next, `lead` (the paired bootstrap interval of their AUROC difference), is larger than the
/// noise: it is when the interval lies above 0. `None` for `ranked` while a worker computes it.
pub fn ranking_lesson(
    set: &str,
    ranked: Option<&[RankedFigures]>,
    lead: Option<&MetricInterval>,
) -> String {
    let Some(ranked) = ranked else {
        return "Ranking every score on both networks, with 95% bootstrap intervals…".to_string();
    };
    let Some(best) = ranked.first() else {
        return String::new();
    };
    let auroc = |f: &RankedFigures| {
        format!(
            "AUROC {:.3} ({:.3} to {:.3})",
            f.auroc.estimate, f.auroc.lower, f.auroc.upper
        )
    };
    let first = format!(
        "Here {} on {} separates {set} best, {}",
        best.detector,
        best.network,
        auroc(best)
    );
    let (Some(second), Some(lead)) = (ranked.get(1), lead) else {
        return format!("{first}; it is the only score computed yet.");
    };
    let difference = format!(
        "{:+.3} ({:+.3} to {:+.3})",
        lead.estimate, lead.lower, lead.upper
    );
    if lead.lower > 0.0 {
        format!(
            "{first}. Its lead over {} on {} ({}), {difference} in AUROC, is larger than the \
             noise of these images.",
            second.detector,
            second.network,
            auroc(second)
        )
    } else {
        format!(
            "{first}, but its lead over {} on {} ({}), {difference} in AUROC, is within the \
             noise of these images: on them the two cannot be told apart.",
            second.detector,
            second.network,
            auroc(second)
        )
    }
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
        "Fitting normalised temperature scaling, vector scaling, histogram binning, isotonic \
         regression and Venn–Abers on the calibration half…"
            .to_string()
    } else {
        "The rivals are fitted once the logits of every row are in.".to_string()
    }
}

/// What the rivals table says about accuracy: temperature scaling and the three top-label
/// methods keep every prediction, vector scaling and Dirichlet calibration may not. `accuracy`
/// is theirs, `vector` vector scaling's accuracy with the number of predictions it changed, out
/// of `images`, and `dirichlet` the same of Dirichlet calibration (`None`: not fitted, for more
/// than [`MAX_DIRICHLET_CLASSES`] classes).
pub fn rivals_accuracy_sentence(
    accuracy: f64,
    vector: (f64, usize),
    dirichlet: Option<(f64, usize)>,
    images: usize,
) -> String {
    let kept = format!(
        "Temperature scaling, histogram binning, isotonic regression and Venn–Abers keep every \
         prediction, so the accuracy stays at {}",
        percent(accuracy, 2)
    );
    let vector_clause = moved_predictions(
        "vector scaling's per-class scales and biases",
        accuracy,
        vector,
        images,
    );
    let dirichlet_sentence = match dirichlet {
        Some(moved) => moved_predictions(
            "Dirichlet calibration's weights on the log-probabilities",
            accuracy,
            moved,
            images,
        ),
        None => format!(
            "Dirichlet calibration is not fitted for more than {MAX_DIRICHLET_CLASSES} classes \
             (its matrix has K(K + 1) entries)"
        ),
    };
    format!("{kept}; {vector_clause}. {dirichlet_sentence}.")
}

/// What a method that may move predictions (`subject`, plural) did: its accuracy and the
/// predictions it changed (`moved`), against the kept `accuracy`, out of `images`.
fn moved_predictions(subject: &str, accuracy: f64, moved: (f64, usize), images: usize) -> String {
    let (moved_accuracy, changed) = moved;
    if changed == 0 {
        return format!("{subject} could move predictions, but here they move none");
    }
    let changes = format!(
        "{subject} change {} of the {} predictions",
        grouped(changed),
        grouped(images)
    );
    if moved_accuracy == accuracy {
        format!("{changes}, as many to right as to wrong, and the accuracy stays the same")
    } else {
        format!(
            "{changes}, and the accuracy to {} ({:+.2} points)",
            percent(moved_accuracy, 2),
            100.0 * (moved_accuracy - accuracy)
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

/// One recalibration's figure against another's as the rivals' sentences say it: "0.4070,
/// above temperature scaling's 0.2621 (difference +0.1449, 95% interval +0.1209 to +0.1702)".
/// `difference` is the first minus the second with its paired bootstrap interval: "below" or
/// "above" only when the interval, as printed (four decimals), lies on that side of 0, "within
/// the noise of" when it holds 0, and "the same to four decimals as" when the printed figures
/// are equal. On two
/// recalibrations equally good in truth a direction was named in 5.5% of 1,000 trials for NLL
/// and none for ECE, and the better of two missed in 0% and 1.1% (`lab/rivals_tests.rs`).
fn against(ours: f64, theirs_name: &str, theirs: f64, difference: &MetricInterval) -> String {
    let (ours_text, theirs_text) = (format!("{ours:.4}"), format!("{theirs:.4}"));
    let printed = |x: f64| (x * 1e4).round();
    let relation = if ours_text == theirs_text {
        "the same to four decimals as"
    } else if printed(difference.upper) < 0.0 {
        "below"
    } else if printed(difference.lower) > 0.0 {
        "above"
    } else {
        "within the noise of"
    };
    format!(
        "{ours_text}, {relation} {theirs_name} {theirs_text} (difference {:+.4}, 95% interval \
         {:+.4} to {:+.4})",
        difference.estimate, difference.lower, difference.upper
    )
}

/// What the rivals table says about histogram binning and isotonic regression against
/// temperature scaling: how few distinct confidences they give, why their ECE on the half they
/// were fitted on shows nothing (it is near zero by construction: each bin, or each isotonic
/// step, says its own accuracy there), and what the evaluation half shows, where overfitting
/// would: their NLL (a confidence of 1 that misses costs 36 nats, NLL's clip at 2⁻⁵²) and ECE
/// against temperature scaling's, each with `against_temperature` (histogram binning's and
/// isotonic regression's minus temperature scaling's, paired bootstrap intervals), a direction
/// named only beyond the noise ([`against`]).
pub fn rivals_binning_sentence(
    histogram: BinningFigures,
    isotonic: BinningFigures,
    temperature: BinningFigures,
    images: usize,
    against_temperature: [&EceNllIntervals; 2],
) -> String {
    let [histogram_difference, isotonic_difference] = against_temperature;
    let theirs = "temperature scaling's";
    format!(
        "Histogram binning and isotonic regression give the {} evaluation images only {} and \
         {} distinct confidences (temperature scaling: {}). On the calibration half they were \
         fitted on, their ECE ({:.4} and {:.4}) is near zero by construction, since each bin or \
         isotonic step says its own accuracy there, so it cannot show overfitting. The \
         evaluation half can, where a bin that says 1 costs 36 nats on each miss: histogram \
         binning's NLL is {}, and isotonic regression's {}; histogram binning's ECE is {}, and \
         isotonic regression's {}. The intervals resample the same evaluation images for each \
         pair.",
        grouped(images),
        grouped(histogram.distinct),
        grouped(isotonic.distinct),
        grouped(temperature.distinct),
        histogram.calibration_ece,
        isotonic.calibration_ece,
        against(
            histogram.nll,
            theirs,
            temperature.nll,
            &histogram_difference.nll
        ),
        against(
            isotonic.nll,
            theirs,
            temperature.nll,
            &isotonic_difference.nll
        ),
        against(
            histogram.ece,
            theirs,
            temperature.ece,
            &histogram_difference.ece
        ),
        against(
            isotonic.ece,
            theirs,
            temperature.ece,
            &isotonic_difference.ece
        ),
    )
}

/// What the rivals table says about Venn–Abers against isotonic regression, which it fits
/// twice for each image: what the table measures (the merge of `p0` and `p1`, never 0 or 1,
/// so that no miss costs NLL's 36 nats), and its NLL and ECE on the evaluation half against
/// isotonic regression's, with `difference` (Venn–Abers minus isotonic regression, a paired
/// bootstrap over the evaluation images), a direction named only beyond the noise
/// ([`against`]).
pub fn rivals_venn_abers_sentence(
    venn_abers: BinningFigures,
    isotonic: BinningFigures,
    difference: &EceNllIntervals,
) -> String {
    let theirs = "isotonic regression's";
    format!(
        "Venn–Abers fits isotonic regression twice for each image, with the image counted wrong \
         (p0) and counted right (p1), and the table measures the merge p1 / (1 − p0 + p1): a \
         single probability between the two that is never 0 or 1, so a miss never costs the 36 \
         nats of a step that says 1. On the evaluation half its NLL is {}, and its ECE {}. The \
         intervals resample the same evaluation images for both.",
        against(venn_abers.nll, theirs, isotonic.nll, &difference.nll),
        against(venn_abers.ece, theirs, isotonic.ece, &difference.ece),
    )
}

/// A Venn–Abers interval `[p0, p1]` as a gallery card shows it ("Venn–Abers: 0.91–0.97") and
/// as a screen reader says it ("Venn–Abers interval 0.91 to 0.97"): two decimals, or as many
/// more (up to four) as the two ends need to differ.
pub fn venn_abers_interval_text(p0: f64, p1: f64) -> (String, String) {
    let (low, high) = (2..=4)
        .map(|decimals| (format!("{p0:.decimals$}"), format!("{p1:.decimals$}")))
        .find(|(low, high)| low != high)
        .unwrap_or_else(|| (format!("{p0:.4}"), format!("{p1:.4}")));
    (
        format!("Venn–Abers: {low}–{high}"),
        format!("Venn–Abers interval {low} to {high}"),
    )
}

/// The training-conditional (PAC) threshold's outcome on the shown split.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PacOutcome {
    pub k: usize,
    /// Coverage and average set size on the evaluation half.
    pub coverage: f64,
    pub average_set_size: f64,
}

/// The numbers the PAC threshold's sentence talks about.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PacFigures {
    pub n_calibration: usize,
    pub epsilon: f64,
    pub delta: f64,
    /// The marginal rank `⌈(n + 1)(1 − ε)⌉` (above `n`: `q̂ = +∞`).
    pub marginal_k: usize,
    /// `P(coverage of the marginal q̂ < 1 − ε)` over calibration sets.
    pub marginal_shortfall: f64,
    /// The marginal threshold's average set size on the evaluation half.
    pub marginal_size: f64,
    /// The PAC threshold's outcome, or the smallest calibration size that has one.
    pub pac: Result<PacOutcome, usize>,
}

/// The PAC threshold's sentence: what the marginal threshold risks for one calibration set,
/// and what the PAC rank at δ holds instead, above, at or below the marginal rank, or why no
/// rank can hold it with this few calibration scores.
pub fn pac_sentence(f: &PacFigures) -> String {
    let target = percent(1.0 - f.epsilon, 0);
    let n = grouped(f.n_calibration);
    let marginal = if f.marginal_k <= f.n_calibration {
        format!(
            "The marginal q̂ (rank k = {} of {n} calibration scores) promises coverage ≥ {target} \
             on average over calibration sets; for one calibration set, its coverage falls below \
             {target} with probability {}.",
            grouped(f.marginal_k),
            percent(f.marginal_shortfall, 1)
        )
    } else {
        format!(
            "The marginal q̂ is infinite here (rank k = {} is above the {n} calibration scores): \
             every set holds every label.",
            grouped(f.marginal_k)
        )
    };
    let delta = percent(f.delta, 0);
    let confidence = percent(1.0 - f.delta, 0);
    let outcome = |p: &PacOutcome| {
        format!(
            "on the evaluation half it covers {}, with sets of {:.3} labels on average against \
             the marginal threshold's {:.3}.",
            percent(p.coverage, 2),
            p.average_set_size,
            f.marginal_size
        )
    };
    let pac = match &f.pac {
        Ok(p) if p.k > f.marginal_k => format!(
            "The PAC threshold (rank k = {}, above the marginal rank) holds coverage ≥ {target} \
             for this calibration set with probability ≥ {confidence} (δ = {delta}); {}",
            grouped(p.k),
            outcome(p)
        ),
        Ok(p) if p.k == f.marginal_k => format!(
            "At δ = {delta} the PAC threshold is the marginal one (rank k = {}): its risk is \
             already at most δ.",
            grouped(p.k)
        ),
        Ok(p) => format!(
            "At δ = {delta}, more than the marginal threshold risks, the PAC threshold (rank \
             k = {}) sits below it: coverage ≥ {target} with probability only ≥ {confidence}; {}",
            grouped(p.k),
            outcome(p)
        ),
        Err(needed) => format!(
            "No threshold holds coverage ≥ {target} with probability ≥ {confidence} (δ = {delta}) \
             from {n} calibration scores: even the largest falls short with probability \
             (1 − ε)ⁿ = {}, more than δ. That takes at least {} scores.",
            percent((1.0 - f.epsilon).powf(f.n_calibration as f64), 1),
            grouped(*needed)
        ),
    };
    format!("{marginal} {pac}")
}

/// The numbers the coverage experiment's PAC caption talks about.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PacExperimentFigures {
    pub repetitions: usize,
    /// Evaluation images of each split.
    pub n_evaluation: usize,
    pub epsilon: f64,
    pub delta: f64,
    /// The PAC and the marginal rank.
    pub k: usize,
    pub marginal_k: usize,
    /// Splits whose measured coverage fell below `1 − ε`, at each rank.
    pub pac_below: usize,
    pub marginal_below: usize,
    /// The probability of that for a measured coverage (Beta-Binomial), at each rank.
    pub predicted_pac_below: f64,
    pub predicted_marginal_below: f64,
}

/// The coverage experiment's PAC caption: how often each rank's measured coverage fell below
/// `1 − ε`, against δ (the bound for unlimited evaluation data) and against the exact law of a
/// coverage measured on the splits' evaluation images, whose binomial noise adds to it; the PAC
/// share is called off its prediction beyond [`CHANCE_DEVIATIONS`] binomial standard errors.
pub fn pac_experiment_caption(f: &PacExperimentFigures) -> String {
    let r = f.repetitions.max(1) as f64;
    let target = percent(1.0 - f.epsilon, 0);
    let share = |count: usize| percent(count as f64 / r, 1);
    let p = f.predicted_pac_below;
    // At least one split's worth of error, so a prediction of 0 is not a zero-width test.
    let error = (p * (1.0 - p) / r).sqrt().max(1.0 / r);
    let observed = f.pac_below as f64 / r;
    let verdict = if (observed - p).abs() <= CHANCE_DEVIATIONS * error {
        format!("The PAC share sits where that law puts it (within {CHANCE_DEVIATIONS:.0} standard errors).")
    } else {
        format!(
            "The PAC share is {} than that law puts it, by more than {CHANCE_DEVIATIONS:.0} \
             standard errors (ties among the scores make coverage larger).",
            if observed > p { "higher" } else { "lower" }
        )
    };
    format!(
        "PAC at δ = {}: over {} splits, the PAC threshold (rank k = {}, purple curve) covered \
         less than {target} in {} of them ({}), the marginal one (rank k = {}) in {} ({}). δ \
         bounds that share for the coverage of unlimited data, the area of the purple curve's \
         shaded tail; each split measures coverage on {} images, whose binomial noise adds to \
         it, and the exact law of a measured coverage (Beta-Binomial) predicts {} for the PAC \
         rank and {} for the marginal one. {verdict}",
        percent(f.delta, 0),
        grouped(f.repetitions),
        grouped(f.k),
        grouped(f.pac_below),
        share(f.pac_below),
        grouped(f.marginal_k),
        grouped(f.marginal_below),
        share(f.marginal_below),
        grouped(f.n_evaluation),
        percent(p, 1),
        percent(f.predicted_marginal_below, 1),
    )
}

/// What conformal risk control's threshold is at T = 1 and at the fitted T.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SelectiveLesson {
    pub threshold_at_one: f64,
    pub threshold_fitted: f64,
    /// Share of the evaluation images each answers.
    pub coverage_at_one: f64,
    pub coverage_fitted: f64,
    /// Share of the evaluation images one threshold answers and the other does not.
    pub answered_differently: f64,
}

/// The numbers the selective classification sentence talks about.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectiveFigures {
    pub temperature: f64,
    /// The evaluation half's AURC at `temperature`, at T = 1 and at the fitted T.
    pub aurc: f64,
    pub fitted_temperature: f64,
    pub aurc_at_one: f64,
    pub aurc_fitted: f64,
    pub risk_level: f64,
    pub n_calibration: usize,
    /// Conformal risk control at `temperature` with the lesson at T = 1 and the fitted T, or
    /// the smallest calibration size whose threshold answers anything.
    pub operating: Result<(SelectiveReport, SelectiveLesson), usize>,
}

/// AURCs this close (relative to the larger) are called the same ranking.
const SAME_RANKING: f64 = 0.05;

/// "a confidence above 0.9876", or "any confidence" for a threshold of `−∞`.
fn confidence_above(threshold: f64) -> String {
    if threshold == f64::NEG_INFINITY {
        "any confidence".to_string()
    } else {
        format!("a confidence above {threshold:.4}")
    }
}

/// The selective classification sentence: the AURC at T against T = 1 and the fitted T
/// (temperature scaling moves the ranking little, or, past [`SAME_RANKING`], more), what
/// conformal risk control answers at the risk level, and what its threshold reads as at
/// T = 1 and at the fitted T against the images they answer.
pub fn selective_sentence(f: &SelectiveFigures) -> String {
    let ranking = {
        let difference = (f.aurc_at_one - f.aurc_fitted).abs();
        let moves = if difference <= SAME_RANKING * f.aurc_at_one.max(f.aurc_fitted) {
            "the ranking by confidence, and so the curve, barely moves"
        } else {
            "it reorders enough images to move the curve (with many classes, two images' \
             confidences can swap places)"
        };
        format!(
            "Ranked by their confidence at T = {:.3}, the evaluation images' AURC (the error \
             among the images kept, averaged over every share kept) is {:.4}. At T = 1 it is \
             {:.4}, at the fitted T = {:.3} {:.4}: temperature scaling changes no prediction, \
             and {moves}.",
            f.temperature, f.aurc, f.aurc_at_one, f.fitted_temperature, f.aurc_fitted
        )
    };
    let risk = percent(f.risk_level, 0);
    let operating = match &f.operating {
        Ok((report, lesson)) => {
            let answered = match report.selective_risk {
                Some(selective_risk) => format!(
                    "on the evaluation half it answers {} of the images, {} of all of them \
                     wrongly ({} of those answered).",
                    percent(report.coverage, 1),
                    percent(report.answered_error_rate, 2),
                    percent(selective_risk, 2)
                ),
                None => "on the evaluation half it answers none of the images.".to_string(),
            };
            format!(
                " To answer wrongly on at most {risk} of the images on average over \
                 calibration sets, conformal risk control answers an image with {} at T = {:.3}: {answered} The same risk level asks for \
                 {} at T = 1 and {} at the fitted T: what a threshold reads as a probability \
                 changes with T, while the images answered ({} and {}) differ for {} of them.",
                confidence_above(report.threshold),
                f.temperature,
                confidence_above(lesson.threshold_at_one),
                confidence_above(lesson.threshold_fitted),
                percent(lesson.coverage_at_one, 1),
                percent(lesson.coverage_fitted, 1),
                percent(lesson.answered_differently, 2)
            )
        }
        Err(needed) => format!(
            " Conformal risk control at a risk level of {risk} needs at least {} calibration \
             examples to answer anything; there are {}.",
            grouped(*needed),
            grouped(f.n_calibration)
        ),
    };
    format!("{ranking}{operating}")
}

/// The numbers the coverage experiment's risk control caption talks about.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RiskControlExperimentFigures {
    pub repetitions: usize,
    pub risk_level: f64,
    /// Mean and standard deviation over the splits of the share of each evaluation part
    /// answered wrongly.
    pub mean: f64,
    pub standard_deviation: f64,
    /// Splits whose share answered wrongly exceeded the risk level.
    pub above: usize,
}

/// The coverage experiment's risk control caption: how often the threshold of one
/// calibration set answered more than the risk level wrongly, and its mean over the splits
/// against the level, which conformal risk control bounds (on average over calibration sets,
/// not for each); a mean above the level is called more than chance beyond
/// [`CHANCE_DEVIATIONS`] standard errors of the mean.
pub fn risk_control_experiment_caption(f: &RiskControlExperimentFigures) -> String {
    let r = f.repetitions.max(1) as f64;
    let level = percent(f.risk_level, 0);
    let standard_error = f.standard_deviation / r.sqrt();
    let verdict = if f.mean <= f.risk_level {
        "The mean is at most the level, as guaranteed.".to_string()
    } else if f.mean - f.risk_level <= CHANCE_DEVIATIONS * standard_error {
        format!(
            "The mean is above the level by less than {CHANCE_DEVIATIONS:.0} standard errors of \
             the experiment ({}), which chance explains.",
            percent(standard_error, 2)
        )
    } else {
        format!(
            "The mean is above the level by more than {CHANCE_DEVIATIONS:.0} standard errors of \
             the experiment ({}): more than chance explains.",
            percent(standard_error, 2)
        )
    };
    format!(
        "Conformal risk control at a risk level of {level}: over {} splits, the threshold \
         fitted on each calibration part answered {} of its evaluation part wrongly on average \
         (spread (sd) {}), and more than {level} in {} of them ({}). It guarantees the average \
         over calibration sets, not each one. {verdict}",
        grouped(f.repetitions),
        percent(f.mean, 2),
        percent(f.standard_deviation, 2),
        grouped(f.above),
        percent(f.above as f64 / r, 1),
    )
}

/// The numbers the worst-slab sentence talks about.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorstSlabFigures {
    /// `1 − α`.
    pub target: f64,
    /// Slabs hold at least this share of the images; this many directions are searched.
    pub delta: f64,
    pub directions: usize,
    /// Evaluation images, and those in the worst slab.
    pub n: usize,
    pub rows: usize,
    pub coverage: f64,
    /// The noise floor (the mean worst-slab coverage of exact conditional coverage) and the
    /// standard deviation of its draws.
    pub floor: f64,
    pub floor_spread: f64,
}

/// The worst-slab sentence: the worst slab's coverage against `1 − α` and against its noise
/// floor, called a real gap when below the floor by more than [`CHANCE_DEVIATIONS`] standard
/// deviations of the floor's draws (how far chance alone moves the measured value).
pub fn worst_slab_sentence(f: &WorstSlabFigures) -> String {
    let shortfall = f.floor - f.coverage;
    let verdict = if shortfall <= 0.0 {
        "These sets are at or above it: no region is covered worse than chance explains."
            .to_string()
    } else if shortfall <= CHANCE_DEVIATIONS * f.floor_spread {
        format!(
            "These sets are below it by less than {CHANCE_DEVIATIONS:.0} standard deviations, \
             which chance explains: no sign of a region covered less than {}.",
            percent(f.target, 0)
        )
    } else {
        format!(
            "These sets are below it by more than {CHANCE_DEVIATIONS:.0} standard deviations: \
             a region of the logits is covered less than {}, a real gap in conditional \
             coverage.",
            percent(f.target, 0)
        )
    };
    format!(
        "Of the slabs of the logit space holding at least {} of the {} evaluation images \
         (along {} random directions), the worst covers {} of its {} images, against 1 − α = \
         {}. Even sets with exact conditional coverage show a worst slab below 1 − α, as the \
         search picks the worst of many: {} on average here (the noise floor; standard \
         deviation {} over draws). {verdict}",
        percent(f.delta, 0),
        grouped(f.n),
        grouped(f.directions),
        percent(f.coverage, 1),
        grouped(f.rows),
        percent(f.target, 0),
        percent(f.floor, 1),
        percent(f.floor_spread, 1),
    )
}

/// The numbers the threshold methods' sentence talks about.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThresholdMethodsFigures {
    /// CovGap of marginal, Mondrian and clustered thresholds on the evaluation half.
    pub covgaps: [f64; 3],
    /// Clusters asked for, and whether the clustering formed any (otherwise every class is in
    /// the null cluster and clustered is the marginal threshold of the images left).
    pub clusters: usize,
    pub clustered_any: bool,
    /// Calibration images the clustering set aside.
    pub clustering_rows: usize,
    /// The noise floor of CovGap (an exact class-conditional method's mean at these sizes)
    /// and its standard deviation.
    pub floor: f64,
    pub floor_spread: f64,
}

/// The threshold methods' sentence: each method's CovGap against the noise floor, called a
/// real gap when above the floor by more than [`CHANCE_DEVIATIONS`] standard deviations of an
/// exact method's CovGap.
pub fn threshold_methods_sentence(f: &ThresholdMethodsFigures) -> String {
    const NAMES: [&str; 3] = ["marginal", "Mondrian", "clustered"];
    let bound = f.floor + CHANCE_DEVIATIONS * f.floor_spread;
    let (noise, real): (Vec<usize>, Vec<usize>) = (0..3).partition(|&i| f.covgaps[i] <= bound);
    let list = |methods: &[usize]| -> String {
        let names: Vec<&str> = methods.iter().map(|&i| NAMES[i]).collect();
        match names.as_slice() {
            [one] => one.to_string(),
            [first, second] => format!("{first} and {second}"),
            _ => format!("{}, {} and {}", names[0], names[1], names[2]),
        }
    };
    let verdict = match (noise.is_empty(), real.is_empty()) {
        (true, _) => format!(
            "All three are above it by more than {CHANCE_DEVIATIONS:.0} standard deviations: \
             real gaps between the classes."
        ),
        (_, true) => format!(
            "All three are within {CHANCE_DEVIATIONS:.0} standard deviations of it: what chance \
             gives an exact method."
        ),
        _ => {
            let verb = |methods: &[usize]| if methods.len() == 1 { "is" } else { "are" };
            let mut within = list(&noise);
            within[..1].make_ascii_uppercase();
            format!(
                "{within} {} within {CHANCE_DEVIATIONS:.0} standard deviations of it, what \
                 chance gives an exact method; {} {} above, a real gap between the classes.",
                verb(&noise),
                list(&real),
                verb(&real)
            )
        }
    };
    let clustering = if f.clustered_any {
        format!(
            "{} clusters of classes found on {} calibration images set aside",
            f.clusters,
            grouped(f.clustering_rows)
        )
    } else {
        format!(
            "no cluster formed from {} calibration images set aside, so every class shares the \
             marginal threshold of the rest",
            grouped(f.clustering_rows)
        )
    };
    format!(
        "CovGap, the mean gap between a class's coverage and 1 − α: marginal {}, Mondrian {}, \
         clustered {} ({clustering}). An exact class-conditional method shows {} on average at \
         these class sizes (the noise floor; standard deviation {}). {verdict}",
        percent(f.covgaps[0], 2),
        percent(f.covgaps[1], 2),
        percent(f.covgaps[2], 2),
        percent(f.floor, 2),
        percent(f.floor_spread, 2),
    )
}

// The charts' text alternatives: each chart's main numbers in a sentence at the end of its
// caption, formatted as the page's readouts format them, and empty while the chart has none.

/// The smooth reliability diagram's numbers in words: smooth ECE and the bandwidth σ (four
/// decimals, as their readouts), the number of images behind the curve, and the point where
/// the drawn curve is furthest from the diagonal (`furthest`: confidence and accuracy there),
/// `None` when the curve is drawn nowhere. Empty without images.
pub fn smooth_reliability_summary(
    smece: f64,
    bandwidth: f64,
    images: usize,
    furthest: Option<(f64, f64)>,
) -> String {
    if images == 0 {
        return String::new();
    }
    let figures = format!(
        "Here: smooth ECE {smece:.4}, σ = {bandwidth:.4}, on {} images",
        grouped(images)
    );
    match furthest {
        Some((confidence, accuracy)) => format!(
            "{figures}; where the line is drawn, it is furthest from the diagonal at confidence \
             {}, where accuracy is {}.",
            percent(confidence, 1),
            percent(accuracy, 1)
        ),
        None => format!("{figures}; too few images lie near any confidence to draw the line."),
    }
}

/// The cumulative-differences chart's numbers in words: where the curve ends (accuracy minus
/// mean confidence over all images, by construction of `D_n`), the KS error and the confidence
/// where the curve reaches it, and Kuiper's range in units of a calibrated network's spread
/// with its p-value (none when every confidence is 0 or 1). Errors to 4 decimals as the
/// estimators table prints them.
pub fn cumulative_differences_summary(cumulative: &CumulativeDifferences) -> String {
    let (Some(&end), landmarks) = (cumulative.curve.last(), cumulative.landmarks()) else {
        return String::new();
    };
    let direction = if end < 0.0 {
        "overconfident on average"
    } else if end > 0.0 {
        "underconfident on average"
    } else {
        "as confident as accurate on average"
    };
    let gap = landmarks.largest_gap;
    let spread = match cumulative.kuiper() {
        Some(test) => format!(
            "{:.1} times a calibrated network's spread (p {})",
            test.statistic,
            if test.p_value < 0.001 {
                "< 0.001".to_string()
            } else {
                format!("= {:.3}", test.p_value)
            }
        ),
        None => "with no spread to compare it with (every confidence is 0 or 1)".to_string(),
    };
    format!(
        "Here, on {} images: the curve ends at {end:.4}, accuracy minus mean confidence \
         ({direction}); the KS error, its largest distance from 0, is {:.4}, reached at \
         confidence {}; Kuiper's range is {:.4}, {spread}.",
        grouped(cumulative.curve.len()),
        cumulative.curve[gap].abs(),
        percent(cumulative.sorted_confidence[gap], 1),
        cumulative.range(),
    )
}

/// The class-wise reliability diagrams' numbers in words: the class-wise ECE (the mean of the
/// classes' ECEs) and the classes with the largest and the smallest ECE (`classes`: each
/// class's name and ECE, four decimals as the ECE readouts). Classes whose ECEs print the same
/// are named together. Empty without classes.
pub fn classwise_summary(classwise_ece: f64, classes: &[(&str, f64)]) -> String {
    let ece = |value: f64| format!("{value:.4}");
    let (Some(largest), Some(smallest)) = (
        printed_extreme(classes, ece, std::cmp::Ordering::Greater),
        printed_extreme(classes, ece, std::cmp::Ordering::Less),
    ) else {
        return String::new();
    };
    format!(
        "Here: class-wise ECE {classwise_ece:.4}, the mean of the {} classes' ECEs; furthest \
         off: {} (ECE {}); closest: {} (ECE {}).",
        classes.len(),
        largest.0,
        largest.1,
        smallest.0,
        smallest.1
    )
}

/// The names of the largest (`side` `Greater`) or smallest (`Less`) of `values`, and that
/// value as `format` writes it; every name whose value prints the same is named ("Shirt and
/// Coat"), so that a tie in the shown digits is not broken by digits not shown. `None` without
/// values.
fn printed_extreme(
    values: &[(&str, f64)],
    format: impl Fn(f64) -> String,
    side: std::cmp::Ordering,
) -> Option<(String, String)> {
    let extreme = values
        .iter()
        .map(|v| v.1)
        .reduce(|a, b| if b.total_cmp(&a) == side { b } else { a })?;
    let text = format(extreme);
    let names: Vec<&str> = values
        .iter()
        .filter(|v| format(v.1) == text)
        .map(|v| v.0)
        .collect();
    Some((joined(&names), text))
}

/// `names` as a list in words: "a", "a and b", "a, b and c".
fn joined(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The rivals' reliability diagrams in words: each method's ECE on the evaluation half (four
/// decimals, as the rivals table) and which is lowest (all of those whose ECEs print the same).
/// Empty while the rivals are being fitted (no methods).
pub fn rivals_reliability_summary(methods: &[(&str, f64)]) -> String {
    let ece = |value: f64| format!("{value:.4}");
    let Some((lowest, value)) = printed_extreme(methods, ece, std::cmp::Ordering::Less) else {
        return String::new();
    };
    let each: Vec<String> = methods
        .iter()
        .map(|(name, value)| format!("{name} {}", ece(*value)))
        .collect();
    format!(
        "ECE on the evaluation half: {}; lowest: {lowest} ({value}).",
        each.join(", ")
    )
}

/// How a set-size stratum is named: "empty sets", "1 label", "2–3 labels".
fn stratum_name(min_size: u32, max_size: u32) -> String {
    match (min_size, max_size) {
        (0, 0) => "empty sets".to_string(),
        (1, 1) => "1 label".to_string(),
        (low, high) if low == high => format!("{low} labels"),
        (low, high) => format!("{low}–{high} labels"),
    }
}

/// The coverage-by-set-size chart in words: each stratum's coverage (two decimals, as the
/// coverage readout) and how many sets it holds; "no sets" for an empty stratum. Empty when no
/// stratum holds a set.
pub fn stratified_summary(strata: &[crate::conformal::Stratum]) -> String {
    if strata.iter().all(|s| s.count == 0) {
        return String::new();
    }
    let each: Vec<String> = strata
        .iter()
        .map(|s| {
            let name = stratum_name(s.min_size, s.max_size);
            match s.coverage {
                Some(coverage) if s.count > 0 => format!(
                    "{name} {} ({} sets)",
                    percent(coverage, 2),
                    grouped(s.count)
                ),
                _ => format!("{name}: no sets"),
            }
        })
        .collect();
    format!("Coverage by set size here: {}.", each.join("; "))
}

/// The α sweep in words: coverage (two decimals) and average set size (three decimals), as the
/// conformal readouts write them, at both ends of the α range and at the current `alpha` when
/// it is a point of the sweep other than an end (the slider's steps are the sweep's). Empty
/// without points.
pub fn sweep_summary(points: &[crate::conformal::SweepPoint], alpha: f64) -> String {
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return String::new();
    };
    let is_current = |point: &crate::conformal::SweepPoint| (point.alpha - alpha).abs() < 1e-9;
    let mut shown = vec![first];
    shown.extend(
        points
            .get(1..points.len() - 1)
            .unwrap_or_default()
            .iter()
            .filter(|p| is_current(p))
            .take(1),
    );
    if points.len() > 1 {
        shown.push(last);
    }
    let clauses: Vec<String> = shown
        .into_iter()
        .map(|point| {
            format!(
                "α = {:.2}{}: coverage {}, {:.3} labels on average",
                point.alpha,
                if is_current(point) { " (current)" } else { "" },
                percent(point.coverage, 2),
                point.average_set_size
            )
        })
        .collect();
    format!("Here, at {}.", clauses.join("; at "))
}

/// The shift lab's reliability diagram in words: the images (`corruption`: the corruption's
/// label, the severity and its parameter, or `None` for the clean images), whether T is
/// refitted on the corrupted images or kept from the clean ones, and T, accuracy and ECE as the
/// shift table writes them. `figures` is `None` while the shown severity is being classified:
/// empty.
pub fn shift_reliability_summary(
    corruption: Option<(&str, u8, &str)>,
    refitted: bool,
    figures: Option<ShiftFigures>,
) -> String {
    let Some(figures) = figures else {
        return String::new();
    };
    let images = match corruption {
        Some((label, severity, parameter)) => {
            format!("severity {severity} of {label} ({parameter})")
        }
        None => "the clean images (severity 0)".to_string(),
    };
    let temperature = if refitted {
        "refitted on these images"
    } else {
        "kept from the clean images"
    };
    format!(
        "Here, on {images}, T = {:.3} {temperature}: accuracy {}, ECE {:.4}.",
        figures.temperature,
        percent(figures.accuracy, 2),
        figures.ece
    )
}

/// One severity's figures in the shift lab's sentences.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShiftFigures {
    pub temperature: f64,
    pub accuracy: f64,
    pub ece: f64,
}

/// One severity's figures on the severity chart: accuracy and ECE with T kept, coverage with T
/// and q̂ kept and refitted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeverityFigures {
    pub severity: u8,
    pub accuracy: f64,
    pub ece: f64,
    pub coverage_kept: f64,
    pub coverage_refit: f64,
}

/// The severity chart in words: accuracy, ECE and coverage (kept and refitted) at severity 0
/// and at the highest severity evaluated so far (`points` in order of severity, the first
/// severity 0), as the severity table writes them. Empty without points.
pub fn shift_severity_summary(points: &[SeverityFigures]) -> String {
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return String::new();
    };
    if points.len() == 1 {
        return format!(
            "Only severity {} is evaluated so far: accuracy {}, ECE {:.4}, coverage {}.",
            first.severity,
            percent(first.accuracy, 2),
            first.ece,
            percent(first.coverage_kept, 2)
        );
    }
    format!(
        "From severity {} to {} (the highest evaluated so far): accuracy {} → {}, ECE {:.4} → \
         {:.4}; coverage with T and q̂ kept {} → {}, refitted {} → {}.",
        first.severity,
        last.severity,
        percent(first.accuracy, 2),
        percent(last.accuracy, 2),
        first.ece,
        last.ece,
        percent(first.coverage_kept, 2),
        percent(last.coverage_kept, 2),
        percent(first.coverage_refit, 2),
        percent(last.coverage_refit, 2)
    )
}

/// The ROC chart in words: each drawn network's AUROC (three decimals) and FPR95 (a percentage
/// with one decimal), as the detection table writes them, for `score` on `set`. Empty without
/// networks (the score is not computed yet).
pub fn roc_summary(score: &str, set: &str, networks: &[(String, f64, f64)]) -> String {
    if networks.is_empty() {
        return String::new();
    }
    let each: Vec<String> = networks
        .iter()
        .map(|(network, auroc, fpr95)| {
            format!("{network} AUROC {auroc:.3}, FPR95 {}", percent(*fpr95, 1))
        })
        .collect();
    format!("Here, by {score} on {set}: {}.", each.join("; "))
}

/// The ‖z‖ histograms in words: the chosen network's mean logit norm on the test images and on
/// the OOD set, two decimals as the table above writes them.
pub fn logit_norm_summary(network: &str, set: &str, in_distribution: f64, ood: f64) -> String {
    format!(
        "Here, for {network}: mean ‖z‖ {in_distribution:.2} on Fashion-MNIST and {ood:.2} on \
         {set}."
    )
}

/// The τ chart's lowest FPR95 so far by `score`: the network whose FPR95, averaged over the
/// seeds evaluated, is lowest, three decimals as the seed sentence writes it (every network
/// whose mean prints the same). A rank of the points shown, not a test: no claim that it is
/// lower than chance allows. Empty without networks.
pub fn tau_chart_summary(score: &str, networks: &[SeedFigures]) -> String {
    let means: Vec<(&str, f64)> = networks
        .iter()
        .filter(|n| !n.fpr95.is_empty())
        .map(|n| {
            let mean = n.fpr95.iter().sum::<f64>() / n.fpr95.len() as f64;
            (n.network.as_str(), mean)
        })
        .collect();
    let fpr95 = |value: f64| format!("{value:.3}");
    let Some((lowest, value)) = printed_extreme(&means, fpr95, std::cmp::Ordering::Less) else {
        return String::new();
    };
    let averaged = match networks.iter().find(|n| n.network == lowest) {
        Some(network) if network.fpr95.len() > 1 => {
            format!(", the mean over {} seeds", network.fpr95.len())
        }
        _ => String::new(),
    };
    format!("Lowest FPR95 so far by {score}: {lowest}, {value}{averaged}.")
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

/// A CORP decomposition's terms as the table rounds them: MCB at T = 1 below this reads 0.0000.
const SHOWN_ZERO: f64 = 5e-5;

/// A CORP term as the table writes it: 4 decimals, no minus sign on a rounding below 0.
fn four(value: f64) -> String {
    fixed(value, 4)
}

/// The CORP decompositions at the slider's T, and what temperature scaling does to them from
/// T = 1 to the fitted T, read off the numbers in one of four ways: MCB up for either score
/// (the fit, made on the other half, adds miscalibration on this one); MCB already 0.0000 at
/// T = 1 for both scores (nothing to remove); MCB down for both with DSC moving by less than half
/// as much as MCB for both ("nearly untouched"); otherwise both moves are stated as comparable.
/// UNC depends only on the share right, which no T changes.
pub fn corp_decomposition_sentence(
    temperature: f64,
    at_slider: &Corp,
    at_one: &Corp,
    at_fitted: &Corp,
    fitted_temperature: f64,
) -> String {
    let terms = |d: &ScoreDecomposition| {
        format!(
            "{} = MCB {} − DSC {} + UNC {}",
            four(d.score),
            four(d.miscalibration),
            four(d.discrimination),
            four(d.uncertainty)
        )
    };
    let here = format!(
        "At T = {temperature:.3}, without bins, the Brier score of the top label {} and its log \
         score {}.",
        terms(&at_slider.brier),
        terms(&at_slider.log)
    );
    let pairs = [(at_one.brier, at_fitted.brier), (at_one.log, at_fitted.log)];
    let moves = format!(
        "From T = 1 to the fitted T = {fitted_temperature:.3}, MCB goes from {} to {} (Brier) \
         and from {} to {} (log), DSC from {} to {} and from {} to {}; UNC, the spread of right \
         and wrong alone, stays {} and {}",
        four(pairs[0].0.miscalibration),
        four(pairs[0].1.miscalibration),
        four(pairs[1].0.miscalibration),
        four(pairs[1].1.miscalibration),
        four(pairs[0].0.discrimination),
        four(pairs[0].1.discrimination),
        four(pairs[1].0.discrimination),
        four(pairs[1].1.discrimination),
        four(at_fitted.brier.uncertainty),
        four(at_fitted.log.uncertainty),
    );
    let nothing_to_remove = pairs.iter().all(|(one, _)| one.miscalibration < SHOWN_ZERO);
    let raised: Vec<&str> = pairs
        .iter()
        .zip(["Brier", "log"])
        .filter(|((one, fitted), _)| fitted.miscalibration > one.miscalibration)
        .map(|(_, name)| name)
        .collect();
    let discrimination_stays = pairs.iter().all(|(one, fitted)| {
        (fitted.discrimination - one.discrimination).abs()
            < 0.5 * (one.miscalibration - fitted.miscalibration).abs()
    });
    if !raised.is_empty() {
        format!(
            "{here} {moves}: here the fitted T adds miscalibration ({}) on this half: it was \
             fitted on the other half, and these images disagree with it.",
            raised.join(" and ")
        )
    } else if nothing_to_remove {
        format!(
            "{here} {moves}: at T = 1 the confidences are already their own PAV recalibration \
             (MCB 0.0000 to the decimals shown), so the fit has nothing to remove."
        )
    } else if discrimination_stays {
        format!(
            "{here} {moves}: temperature scaling removes miscalibration and leaves \
             discrimination nearly untouched: PAV depends only on the order of the images by \
             confidence, so DSC moves only as far as the new T reorders them."
        )
    } else {
        format!(
            "{here} {moves}: here DSC moves, for its size, as much as MCB: PAV depends only on \
             the order of the images by confidence, and the new T reorders them enough to move \
             its pools."
        )
    }
}

/// The CORP reliability diagram's numbers in words: the images and PAV's blocks, the block
/// whose gap weighs most in the Brier MCB (its rows times its squared gap between mean
/// confidence and share right), and the Brier decomposition.
pub fn corp_reliability_summary(corp: &Corp) -> String {
    let heaviest = corp.blocks.iter().max_by(|a, b| {
        let weight = |block: &&crate::corp::CorpBlock| {
            block.rows as f64 * (block.mean_confidence - block.value).powi(2)
        };
        weight(a).total_cmp(&weight(b))
    });
    let Some(heaviest) = heaviest else {
        return String::new();
    };
    let blocks = corp.blocks.len();
    let range = if heaviest.lowest == heaviest.highest {
        format!("at confidence {}", percent(heaviest.lowest, 1))
    } else {
        format!(
            "between confidence {} and {}",
            percent(heaviest.lowest, 1),
            percent(heaviest.highest, 1)
        )
    };
    let gap = if heaviest.value < heaviest.mean_confidence {
        "overconfident there"
    } else if heaviest.value > heaviest.mean_confidence {
        "underconfident there"
    } else {
        "calibrated there"
    };
    format!(
        "Here PAV pools {} images into {} block{}. The gap that weighs most: {} images {range}, \
         {} confident on average, were right {} of the time ({gap}). Brier score of the top \
         label {} = MCB {} − DSC {} + UNC {}.",
        grouped(corp.rows()),
        grouped(blocks),
        if blocks == 1 { "" } else { "s" },
        grouped(heaviest.rows),
        percent(heaviest.mean_confidence, 1),
        percent(heaviest.value, 1),
        four(corp.brier.score),
        four(corp.brier.miscalibration),
        four(corp.brier.discrimination),
        four(corp.brier.uncertainty),
    )
}

/// One LogitNorm network's ECE and NLL after one temperature and after normalised temperature
/// scaling, each with its interval (the LogitNorm lab's table).
#[derive(Debug, Clone, Copy)]
pub struct NormalizedFigures<'a> {
    /// "LogitNorm τ = 0.3".
    pub network: &'a str,
    pub plain: EceNllIntervals,
    pub normalized: EceNllIntervals,
}

/// A metric with its interval, as the LogitNorm lab's table writes it.
pub fn interval_text(value: &MetricInterval) -> String {
    format!(
        "{:.4} ({:.4} to {:.4})",
        value.estimate, value.lower, value.upper
    )
}

/// Whether normalised temperature scaling repairs the LogitNorm networks of large τ
/// (`networks`) where one temperature does not, against cross-entropy's ECE after one
/// temperature (`cross_entropy`). One temperature "leaves" a network miscalibrated when its
/// ECE interval lies wholly above cross-entropy's; normalised temperature scaling lowers a
/// metric "beyond the noise" when its interval lies wholly below one temperature's (both
/// drawn from the same resamples of the same images); it "repairs" the network when it also
/// brings the ECE within cross-entropy's interval or below. `None` or no networks: which to
/// evaluate first.
pub fn normalized_lesson(
    cross_entropy: Option<&MetricInterval>,
    networks: &[NormalizedFigures],
    evaluate: &str,
) -> String {
    let (Some(cross_entropy), false) = (cross_entropy, networks.is_empty()) else {
        return format!(
            "Evaluate {evaluate} (\"Evaluate every network\") to see whether normalised \
             temperature scaling calibrates the LogitNorm networks of large τ where one T does \
             not."
        );
    };
    let below = |a: &MetricInterval, b: &MetricInterval| a.upper < b.lower;
    let clauses: Vec<String> = networks
        .iter()
        .map(|f| {
            let numbers = format!(
                "{} has ECE {} after one T and {} after normalised T, NLL {} and {}",
                f.network,
                interval_text(&f.plain.ece),
                interval_text(&f.normalized.ece),
                interval_text(&f.plain.nll),
                interval_text(&f.normalized.nll),
            );
            let lowers_ece = below(&f.normalized.ece, &f.plain.ece);
            let nll = if below(&f.normalized.nll, &f.plain.nll) {
                "its NLL too is lower beyond the noise"
            } else {
                "its NLL is not lower beyond the noise"
            };
            let verdict = match (below(cross_entropy, &f.plain.ece), lowers_ece) {
                (true, true) if f.normalized.ece.lower <= cross_entropy.upper => format!(
                    "normalised T repairs what one T leaves: its ECE is lower beyond the noise \
                     and as low as cross-entropy's within it; {nll}"
                ),
                (true, true) => format!(
                    "normalised T lowers the ECE beyond the noise but not to cross-entropy's: \
                     it repairs part of what one T leaves; {nll}"
                ),
                (true, false) => format!(
                    "normalised T does not repair what one T leaves: its ECE is not lower \
                     beyond the noise; {nll}"
                ),
                (false, true) => format!(
                    "one T already calibrates it as well as cross-entropy within the noise, \
                     and normalised T lowers the ECE further, beyond the noise; {nll}"
                ),
                (false, false) => format!(
                    "one T already calibrates it as well as cross-entropy within the noise, \
                     and normalised T does no better beyond it; {nll}"
                ),
            };
            format!("{numbers}: {verdict}.")
        })
        .collect();
    format!(
        "Against cross-entropy's ECE after one T, {}: {}",
        interval_text(cross_entropy),
        clauses.join(" ")
    )
}

/// The numbers the shift lab's adaptive conformal inference sentence talks about.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptiveFigures {
    /// The corruption, as the page calls it.
    pub corruption: &'static str,
    pub alpha: f64,
    pub gamma: f64,
    /// Images in the stream.
    pub images: usize,
    /// The severities of the stream's blocks, in order (0 first), and the corruption's highest.
    pub severities: Vec<u8>,
    pub max_severity: u8,
    /// Long-run coverage and mean set size of ACI's sets, and Gibbs & Candès's bound on
    /// `|miscoverage − α|` at this length.
    pub coverage: f64,
    pub average_set_size: f64,
    pub miscoverage_bound: f64,
    /// The same of the fixed split conformal sets.
    pub fixed_coverage: f64,
    pub fixed_average_set_size: f64,
    /// The last block's coverage and mean set size, ACI's then the fixed sets'.
    pub last_block: Option<(f64, f64, f64, f64)>,
}

/// Where a stream's coverage lies against `1 − α`: within [`CHANCE_DEVIATIONS`] standard
/// deviations of a stream of independent hits at rate `1 − α` (`None`), or by how many
/// standard deviations below (negative) or above.
fn stream_deviations(coverage: f64, alpha: f64, images: usize) -> Option<f64> {
    let standard_deviation = (alpha * (1.0 - alpha) / images.max(1) as f64).sqrt();
    let deviations = (coverage - (1.0 - alpha)) / standard_deviation;
    (deviations.abs() > CHANCE_DEVIATIONS).then_some(deviations)
}

/// The shift lab's lesson of adaptive conformal inference (Gibbs & Candès 2021): what the
/// stream holds; where fixed split conformal's coverage lies against `1 − α` (within chance of
/// it, or how many standard deviations off, with its last block's); where ACI's long run lies,
/// with its deterministic bound; and the price in set size, overall and in the last block.
pub fn adaptive_sentence(f: &AdaptiveFigures) -> String {
    let target = percent(1.0 - f.alpha, 0);
    let images = grouped(f.images);
    let last = *f.severities.last().unwrap_or(&0);
    let shifted = f.severities.len() > 1;
    let stream = if !shifted {
        format!(
            "The stream holds the {images} evaluation images, all clean so far: the corrupted \
             copies are still being classified."
        )
    } else {
        let levels: Vec<String> = f.severities.iter().map(u8::to_string).collect();
        let so_far = if usize::from(f.max_severity) + 1 == f.severities.len() {
            String::new()
        } else {
            format!(" (those classified so far: {})", levels.join(", "))
        };
        format!(
            "The stream: the {images} evaluation images, the {} rising from severity 0 to \
             {last}{so_far} in blocks of about {} images.",
            f.corruption,
            grouped(f.images / f.severities.len())
        )
    };
    let last_coverage = |coverage: f64| {
        if shifted {
            format!(", {} at severity {last}", percent(coverage, 1))
        } else {
            String::new()
        }
    };
    let fixed = {
        let at_last = last_coverage(f.last_block.map_or(f.fixed_coverage, |b| b.2));
        let judged = match stream_deviations(f.fixed_coverage, f.alpha, f.images) {
            None => format!("within chance of 1 − α = {target}"),
            Some(d) if d < 0.0 => format!(
                "{:.1} standard deviations below 1 − α = {target}: the shifted images are not \
                 exchangeable with the clean calibration images",
                -d
            ),
            Some(d) => format!("{d:.1} standard deviations above 1 − α = {target}"),
        };
        format!(
            " Split conformal with q̂ fixed on the clean calibration half covers {}{at_last}, \
             {judged}.",
            percent(f.fixed_coverage, 1)
        )
    };
    let adaptive = {
        let judged = match stream_deviations(f.coverage, f.alpha, f.images) {
            None => format!("back within chance of {target} without a refit"),
            Some(d) if d < 0.0 => format!(
                "still {:.1} standard deviations below {target}: at γ = {} its level moves too \
                 slowly for {images} images",
                -d, f.gamma
            ),
            Some(d) => format!("{d:.1} standard deviations above {target}"),
        };
        format!(
            " Adaptive conformal inference at γ = {}, correcting α_t after each image, covers \
             {} in the long run, {judged} (whatever the order, its miscoverage ends within ±{} \
             of α).",
            f.gamma,
            percent(f.coverage, 1),
            percent(f.miscoverage_bound, 1)
        )
    };
    let at_last = match (shifted, f.last_block) {
        (true, Some((_, size, _, fixed_size))) => {
            format!("; at severity {last}, {size:.2} against {fixed_size:.2}")
        }
        _ => String::new(),
    };
    let price = if f.average_set_size > f.fixed_average_set_size {
        format!(
            " The price is larger sets: {:.2} labels on average against {:.2}{at_last}.",
            f.average_set_size, f.fixed_average_set_size
        )
    } else {
        format!(
            " Its sets are no larger: {:.2} labels on average against {:.2}{at_last}.",
            f.average_set_size, f.fixed_average_set_size
        )
    };
    format!("{stream}{fixed}{adaptive}{price}")
}

/// The ACI stream chart in words: where the long-run and windowed coverages of both methods
/// end, and the range of `α_t`, as the readouts write them.
pub fn adaptive_chart_summary(
    running: (f64, f64),
    window: (f64, f64),
    window_size: usize,
    alpha_range: (f64, f64),
) -> String {
    format!(
        "After the last image, coverage since the start is {} with ACI and {} with q̂ fixed; \
         over the last {} images {} and {}. α_t ranged from {:.4} to {:.4}.",
        percent(running.0, 1),
        percent(running.1, 1),
        grouped(window_size),
        percent(window.0, 1),
        percent(window.1, 1),
        alpha_range.0,
        alpha_range.1
    )
}

/// The numbers behind the LogitNorm lab's conformal p-values sentence: one batch of test
/// images with OOD images mixed in, Benjamini–Hochberg at `fdr_level`.
#[derive(Debug, Clone, PartialEq)]
pub struct PvalueFigures<'a> {
    /// The OOD score's name ("energy").
    pub score: &'a str,
    /// The OOD set's title ("MNIST digits").
    pub set: &'a str,
    pub fdr_level: f64,
    /// Test images in the batch, and how many calibrate their p-values.
    pub n_in_distribution: usize,
    pub n_calibration: usize,
    /// OOD images in the batch.
    pub n_out_of_distribution: usize,
    pub discoveries: usize,
    pub false_discoveries: usize,
    pub power: f64,
}

/// What BH declares in one batch and how it did, beside the bound it keeps on average:
/// the false discovery rate is at most `q·π₀`, `π₀` the test images' share of the batch
/// (Bates et al. 2023, `ood_pvalues.rs`). One batch's proportion may exceed the bound; the
/// sentence says so when it does.
pub fn pvalue_sentence(f: &PvalueFigures) -> String {
    let batch = f.n_in_distribution + f.n_out_of_distribution;
    let null_share = f.n_in_distribution as f64 / batch as f64;
    let bound = f.fdr_level * null_share;
    let proportion = f.false_discoveries as f64 / f.discoveries.max(1) as f64;
    let intro = format!(
        "Each of the {} test images and {} {} gets a conformal p-value by {}: one plus the \
         number of the {} held-out test images that score as low or lower, over {}.",
        grouped(f.n_in_distribution),
        grouped(f.n_out_of_distribution),
        f.set,
        f.score,
        grouped(f.n_calibration),
        grouped(f.n_calibration + 1)
    );
    let q = percent(f.fdr_level, 0);
    let declared = if f.discoveries == 0 {
        format!(
            " At q = {q}, Benjamini–Hochberg declares none of the {} images out of \
             distribution: no p-value is small enough for its rank, so this batch's false discovery \
             proportion is 0.",
            grouped(batch)
        )
    } else {
        let wrong = match f.false_discoveries {
            0 => "none of them a test image".to_string(),
            1 => "1 of them a test image".to_string(),
            n => format!("{} of them test images", grouped(n)),
        };
        format!(
            " At q = {q}, Benjamini–Hochberg declares {} of the {} images out of distribution, \
             {wrong}: a false discovery proportion of {}, and {} of the {} {} found (power \
             {}).",
            grouped(f.discoveries),
            grouped(batch),
            percent(proportion, 1),
            grouped(f.discoveries - f.false_discoveries),
            grouped(f.n_out_of_distribution),
            f.set,
            percent(f.power, 1)
        )
    };
    let guarantee = format!(
        " Over batches drawn like this one, the average of that proportion, the false \
         discovery rate, is at most q × {} (the test images' share of the batch) = {}.",
        percent(null_share, 1),
        percent(bound, 1)
    );
    let this_batch = if proportion > bound {
        " This batch's proportion is above it: one batch may be, their average may not."
    } else {
        ""
    };
    format!("{intro}{declared}{guarantee}{this_batch}")
}

/// What a reader's picture's conformal p-value `pvalue` says, against `calibration` held-out
/// test images: how few of them score as low, and whether a Benjamini–Hochberg test of the
/// picture alone at q = 5% would declare it OOD (with one p-value, BH rejects when `p ≤ q`).
pub fn own_image_pvalue(pvalue: f64, calibration: usize) -> String {
    let rank = (pvalue * (calibration + 1) as f64).round() as usize - 1;
    let among = match rank {
        0 => format!(
            "none of the {} calibration test images scores as low",
            grouped(calibration)
        ),
        1 => format!(
            "1 of the {} calibration test images scores as low or lower",
            grouped(calibration)
        ),
        n => format!(
            "{} of the {} calibration test images score as low or lower",
            grouped(n),
            grouped(calibration)
        ),
    };
    let decision = if pvalue <= 0.05 {
        "small enough to call it OOD at a 5% level, which a test image would be in at most 5% of cases"
    } else {
        "not small enough to call it OOD at a 5% level"
    };
    format!("Its conformal p-value is {pvalue:.4}: {among}, {decision}.")
}

#[path = "sentences_estimators.rs"]
mod estimators;
pub use estimators::{estimator_case_lesson, estimators_agreement, CaseFacts, EstimatorsTable};

/// The numbers the shift lab's weighted conformal sentence talks about, at one severity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WeightedFigures {
    pub alpha: f64,
    /// One split's coverage's standard deviation (Beta-Binomial law), when `q̂` is finite.
    pub split_standard_deviation: Option<f64>,
    /// Coverage and mean set size with `q̂` kept from the clean calibration half, weighted by
    /// the domain classifier, and refitted on the labelled corrupted calibration half.
    pub kept: (f64, f64),
    pub weighted: (f64, f64),
    pub refit: (f64, f64),
    /// Kish's effective sample size of the calibration weights, of `n_calibration` rows.
    pub effective_sample_size: f64,
    pub n_calibration: usize,
    /// The share of the evaluation images whose weighted `q̂(x)` is `+∞`.
    pub infinite_share: f64,
}

/// Below this share of the calibration rows, the weights' effective sample size makes them
/// too extreme to trust.
pub const EXTREME_EFFECTIVE_SHARE: f64 = 0.1;

/// At this share of `α` or more of the evaluation images with `q̂(x) = +∞`, the weights are
/// too extreme to trust: that much of the coverage comes from sets holding every label.
pub const EXTREME_INFINITE_SHARE_OF_ALPHA: f64 = 0.5;

/// Whether weights with effective sample size `ess` of `n` rows and a share `infinite` of
/// `+∞` thresholds at level `alpha` are too extreme to trust (the two constants above).
pub fn weights_too_extreme(ess: f64, n: usize, infinite: f64, alpha: f64) -> bool {
    ess < EXTREME_EFFECTIVE_SHARE * n as f64 || infinite >= EXTREME_INFINITE_SHARE_OF_ALPHA * alpha
}

/// The shift lab's lesson of weighted conformal prediction (Tibshirani et al. 2019): whether
/// the kept sets fall short of `1 − α` by more than chance ([`CHANCE_DEVIATIONS`] standard
/// deviations of one split's coverage), and if so whether the weighted sets repair it, repair
/// it only with weights too extreme to trust, repair part of it, or do not help; then the
/// weights' effective sample size and share of `+∞` thresholds, called too extreme by
/// [`weights_too_extreme`].
pub fn weighted_sentence(f: &WeightedFigures) -> String {
    let target = 1.0 - f.alpha;
    let allowance = f
        .split_standard_deviation
        .map_or(0.0, |sd| CHANCE_DEVIATIONS * sd);
    let short = |coverage: f64| coverage < target - allowance;
    let extreme = weights_too_extreme(
        f.effective_sample_size,
        f.n_calibration,
        f.infinite_share,
        f.alpha,
    );
    let sizes = format!(
        "sets of {:.3} labels on average (kept: {:.3}; refitted: {:.3})",
        f.weighted.1, f.kept.1, f.refit.1
    );
    let (kept, weighted, refit) = (
        percent(f.kept.0, 2),
        percent(f.weighted.0, 2),
        percent(f.refit.0, 2),
    );
    let goal = percent(target, 0);
    let head = if !short(f.kept.0) {
        format!(
            "With q̂ kept, coverage is {kept}, not short of {goal} by more than chance: there is \
             nothing for the weights to repair, and weighted it is {weighted}, with {sizes}."
        )
    } else if !short(f.weighted.0) && !extreme {
        format!(
            "Weighted by the domain classifier, without a label of the corrupted images, \
             coverage is back to {weighted} (kept: {kept}; refitted with labels: {refit}), with \
             {sizes}: here the weights repair what the shift broke."
        )
    } else if !short(f.weighted.0) {
        format!(
            "Weighted, coverage reaches {weighted} (kept: {kept}; refitted with labels: {refit}), \
             with {sizes}, but not by a trustworthy correction:"
        )
    } else if f.weighted.0 > f.kept.0 {
        format!(
            "Weighted, coverage rises from {kept} to {weighted}, still short of {goal} by more \
             than chance (refitted with labels: {refit}), with {sizes}: the classifier's \
             weights correct part of the shift."
        )
    } else {
        format!(
            "Weighted, coverage is {weighted} against {kept} kept (refitted with labels: \
             {refit}), with {sizes}: the weights do not help here, as the corruption changes \
             what the labels are given the logits, which no reweighting of the clean images \
             can repair."
        )
    };
    let ess = grouped(f.effective_sample_size.round() as usize);
    let n = grouped(f.n_calibration);
    let infinite = percent(f.infinite_share, 2);
    let weights = if extreme {
        format!(
            "the estimated weights are too extreme to trust: their effective sample size is \
             {ess} of {n} calibration images, and {infinite} of the evaluation images get \
             q̂ = +∞ (every label)."
        )
    } else {
        format!(
            "the weights' effective sample size is {ess} of {n} calibration images, and \
             {infinite} of the evaluation images get q̂ = +∞ (every label)."
        )
    };
    if head.ends_with(':') {
        format!("{head} {weights}")
    } else {
        let mut chars = weights.chars();
        let first = chars.next().map(|c| c.to_uppercase().collect::<String>());
        format!("{head} {}{}", first.unwrap_or_default(), chars.as_str())
    }
}

#[cfg(test)]
#[path = "sentences_tests.rs"]
mod tests;
