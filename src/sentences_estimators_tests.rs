//! Tests of the estimators table's sentences on data whose truth is known by construction: a
//! calibrated set, a planted overconfidence and a small set, each through the real estimators
//! and bootstrap intervals; and constructed intervals whose overlaps are known.

use super::*;
use crate::bootstrap::{bootstrap_intervals, BootstrapSettings};
use crate::calibration::{evaluate_in_full, Logits};
use crate::calibration_estimators::estimators;
use crate::estimator_cases::extra_bin_errors;
use crate::smooth_calibration::smooth_ece;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const CLASSES: usize = 10;
const BINS: usize = 15;
const SETTINGS: BootstrapSettings = BootstrapSettings {
    resamples: 100,
    level: 0.95,
    seed: 0,
};

/// `n` rows of 10 logits right with probability their confidence minus `gap`: every
/// estimator of the top label estimates `gap` (0: calibrated).
fn planted(n: usize, gap: f64, seed: u64) -> (Vec<f32>, Vec<u32>) {
    crate::test_support::planted_gap_rows(n, CLASSES, gap, &mut ChaCha8Rng::seed_from_u64(seed))
}

/// The agreement sentence of the rows at T = 1 on 15 equal-width bins, with their intervals.
fn agreement(values: &[f32], labels: &[u32]) -> String {
    let logits = Logits::new(values, CLASSES).unwrap();
    let full = evaluate_in_full(&logits, labels, 1.0, BINS, Binning::Width).unwrap();
    let smooth = smooth_ece(&full.confidence, &full.correct).unwrap();
    let all = estimators(&logits, labels, 1.0, BINS, Binning::Width).unwrap();
    let intervals =
        bootstrap_intervals(&logits, labels, 1.0, BINS, Binning::Width, &SETTINGS).unwrap();
    estimators_agreement(&EstimatorsTable {
        images: labels.len(),
        classes: CLASSES,
        bins: BINS,
        binning: Binning::Width,
        binned: &full.report,
        smece: smooth.smece,
        estimators: &all,
        intervals: Some(&intervals),
        extra_bin: extra_bin_errors(&full.confidence, &full.correct, BINS, Binning::Width).unwrap(),
    })
}

/// The names the sentence's first clause says agree.
fn agreeing(sentence: &str) -> &str {
    sentence.split(" agree here").next().unwrap()
}

#[test]
fn a_planted_overconfidence_is_agreed_on_by_the_unbiased_errors() {
    // Every top-label error of the population is 0.05; the debiased L2 error and the KS error
    // estimate it without the bins' upward bias, so their intervals meet there.
    let (values, labels) = planted(2000, 0.05, 11);
    let sentence = agreement(&values, &labels);
    let group = agreeing(&sentence);
    assert!(group.contains("debiased L2 error"), "{sentence}");
    assert!(group.contains("KS error"), "{sentence}");
    assert!(sentence.contains("The class-wise ECE ("), "{sentence}");
}

#[test]
fn on_a_calibrated_set_the_per_class_bins_read_higher_than_the_unbiased_errors() {
    // Calibrated: every error's truth is 0. The top-label ECE bins each predicted class on its
    // own, a tenth of the images a class, and its bias keeps it above the unbiased errors.
    let (values, labels) = planted(2000, 0.0, 12);
    let sentence = agreement(&values, &labels);
    let group = agreeing(&sentence);
    assert!(group.contains("debiased L2 error"), "{sentence}");
    assert!(group.contains("KS error"), "{sentence}");
    assert!(!group.contains("top-label"), "{sentence}");
    assert!(
        sentence.contains("is higher: it bins each predicted class on its own"),
        "{sentence}"
    );
    assert!(sentence.contains("a tenth of the images"), "{sentence}");
}

#[test]
fn on_a_hundred_images_the_intervals_are_wide_enough_for_most_to_agree() {
    // On 100 calibrated images each bin holds about 7: the intervals widen until at least
    // three of the five errors share a point.
    let (values, labels) = planted(100, 0.0, 13);
    let sentence = agreement(&values, &labels);
    let group = agreeing(&sentence);
    let members = ["ECE", "smooth ECE", "debiased", "top-label", "KS"]
        .iter()
        .filter(|name| group.contains(**name))
        .count();
    assert!(members >= 3, "{sentence}");
    if !group.contains("debiased") {
        assert!(sentence.contains("on 100 images"), "{sentence}");
    }
    assert!(!sentence.contains("exactly 1.0"), "{sentence}");
}

/// An interval around `estimate`.
fn interval(lower: f64, estimate: f64, upper: f64) -> MetricInterval {
    MetricInterval {
        estimate,
        lower,
        upper,
    }
}

#[test]
fn the_group_is_the_largest_set_of_overlapping_intervals() {
    let (values, labels) = planted(200, 0.0, 14);
    let logits = Logits::new(&values, CLASSES).unwrap();
    let full = evaluate_in_full(&logits, &labels, 1.0, BINS, Binning::Width).unwrap();
    let all = estimators(&logits, &labels, 1.0, BINS, Binning::Width).unwrap();
    // ECE [0.10, 0.14], smooth ECE [0.12, 0.16] and the KS error [0.13, 0.20] share
    // 0.13–0.14; the debiased error lies below, the top-label ECE above.
    let intervals = MetricIntervals {
        ece: interval(0.10, 0.12, 0.14),
        smece: interval(0.12, 0.14, 0.16),
        nll: interval(0.0, 0.0, 0.0),
        brier: interval(0.0, 0.0, 0.0),
        ece_debiased: interval(0.0, 0.02, 0.05),
        top_label_ece: interval(0.25, 0.3, 0.35),
        ks_error: interval(0.13, 0.15, 0.20),
    };
    let table = EstimatorsTable {
        images: 200,
        classes: CLASSES,
        bins: BINS,
        binning: Binning::Width,
        binned: &full.report,
        smece: 0.14,
        estimators: &all,
        intervals: Some(&intervals),
        extra_bin: None,
    };
    let sentence = estimators_agreement(&table);
    assert!(
        sentence.starts_with(
            "ECE, smooth ECE and the KS error agree here: their 95% intervals share 0.1300–0.1400."
        ),
        "{sentence}"
    );
    assert!(sentence.contains(&format!(
        "The debiased L2 error ({:.4}) is lower: debiasing",
        all.ece_debiased
    )));
    assert!(sentence.contains("on 200 images that noise is most of what they measure"));
    assert!(sentence.contains(&format!(
        "The top-label ECE ({:.4}) is higher",
        all.top_label_ece
    )));
    // Before the intervals: no claim.
    let waiting = estimators_agreement(&EstimatorsTable {
        intervals: None,
        ..table.clone()
    });
    assert_eq!(
        waiting,
        "Which of these errors agree is said once their 95% intervals are in."
    );
    // No two overlapping.
    let apart = MetricIntervals {
        ece: interval(0.10, 0.11, 0.12),
        smece: interval(0.13, 0.14, 0.15),
        ece_debiased: interval(0.0, 0.01, 0.02),
        top_label_ece: interval(0.3, 0.31, 0.32),
        ks_error: interval(0.05, 0.06, 0.07),
        ..intervals
    };
    let sentence = estimators_agreement(&EstimatorsTable {
        intervals: Some(&apart),
        ..table
    });
    assert!(
        sentence.starts_with(
            "No two of the five errors agree here: no two of their 95% intervals overlap. \
             Against ECE ("
        ) && sentence.contains("95% interval 0.1000–0.1200): Smooth ECE ("),
        "{sentence}"
    );
    for name in ["The debiased L2 error", "The top-label ECE", "The KS error"] {
        assert!(sentence.contains(name), "{sentence} names {name}");
    }
}

#[test]
fn certain_rows_are_named_with_both_binnings() {
    let confidence = [0.5, 1.0, 1.0, 0.95];
    let correct = [true, true, false, true];
    let extra = extra_bin_errors(&confidence, &correct, 2, Binning::Width)
        .unwrap()
        .unwrap();
    let (values, labels) = planted(50, 0.0, 15);
    let logits = Logits::new(&values, CLASSES).unwrap();
    let full = evaluate_in_full(&logits, &labels, 1.0, 2, Binning::Width).unwrap();
    let all = estimators(&logits, &labels, 1.0, 2, Binning::Width).unwrap();
    let intervals =
        bootstrap_intervals(&logits, &labels, 1.0, 2, Binning::Width, &SETTINGS).unwrap();
    let sentence = estimators_agreement(&EstimatorsTable {
        images: 50,
        classes: CLASSES,
        bins: 2,
        binning: Binning::Width,
        binned: &full.report,
        smece: 0.1,
        estimators: &all,
        intervals: Some(&intervals),
        extra_bin: Some(extra),
    });
    assert!(
        sentence.contains(&format!(
            "2 of these images have a confidence of exactly 1.0 (1 of them wrong): in the last \
             bin, as calibra, netcal and MAPIE bin them, ECE is {:.4} and RMSCE {:.4}; in a bin \
             of their own, as torchmetrics bins them, 0.3875 and {:.4}",
            full.report.ece, full.report.rmsce, extra.errors.rmsce
        )),
        "{sentence}"
    );
}

#[test]
fn each_case_teaches_from_its_numbers() {
    let (values, labels) = planted(300, 0.0, 16);
    let logits = Logits::new(&values, CLASSES).unwrap();
    let report = evaluate_in_full(&logits, &labels, 1.0, BINS, Binning::Width)
        .unwrap()
        .report;
    let facts = CaseFacts {
        case: EstimatorCase::Network,
        images: 300,
        evaluation_images: 300,
        bins: BINS,
        binning: Binning::Width,
        binned: &report,
        distinct_confidences: 4,
        empty_bins: 11,
        extra_bin: None,
        constant_answer: Some(("Bag", 0.1036)),
        ece_interval: Some(interval(0.05, 0.1, 0.2)),
        network_ece_interval: Some(interval(0.01, 0.02, 0.03)),
        temperature: 2.5,
    };
    assert_eq!(estimator_case_lesson(&facts), "");
    let empty = estimator_case_lesson(&CaseFacts {
        case: EstimatorCase::EmptyBins,
        ..facts.clone()
    });
    assert!(
        empty.contains("4 distinct confidences in 15 bins leave 11 bins empty"),
        "{empty}"
    );
    assert!(
        empty.contains("each confidence has a bin of its own"),
        "{empty}"
    );
    assert!(empty.contains("leads of 1, 2, 4 and 8"), "{empty}");
    let shared = estimator_case_lesson(&CaseFacts {
        case: EstimatorCase::EmptyBins,
        empty_bins: 12,
        ..facts.clone()
    });
    assert!(shared.contains("3 bins hold the 4 confidences"), "{shared}");
    // Three of the four values taken: the lesson says which count is which.
    let three = estimator_case_lesson(&CaseFacts {
        case: EstimatorCase::EmptyBins,
        distinct_confidences: 3,
        empty_bins: 12,
        ..facts.clone()
    });
    assert!(
        three.contains("over the other logits), of which these images take 3: 3 distinct"),
        "{three}"
    );
    assert!(!empty.contains("of which these images take"), "{empty}");
    let constant = estimator_case_lesson(&CaseFacts {
        case: EstimatorCase::BaseRate,
        ..facts.clone()
    });
    assert!(constant.contains("Bag at 10.4%"), "{constant}");
    assert!(
        constant.contains(&format!("ECE is {:.4}", report.ece)),
        "{constant}"
    );
    assert!(
        constant.contains("The slider's T (now 2.5) does not apply"),
        "{constant}"
    );
    let small = estimator_case_lesson(&CaseFacts {
        case: EstimatorCase::HundredImages,
        images: 100,
        evaluation_images: 5000,
        ..facts.clone()
    });
    assert!(
        small.contains("ECE's 95% interval is 0.1500 wide here against 0.0200 on all 5,000 images"),
        "{small}"
    );
    let none = estimator_case_lesson(&CaseFacts {
        case: EstimatorCase::ConfidenceOne,
        ..facts
    });
    assert_eq!(none, "No image has a confidence of exactly 1.0 at this T.");
}
