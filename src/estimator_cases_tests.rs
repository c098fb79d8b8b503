//! Tests of `estimator_cases.rs`: each case's rows against the property that defines it, on
//! seeded synthetic halves, and the extra bin by hand and against torchmetrics' values in
//! tests/fixtures/estimators/ (`scripts/estimators-reference.py`).

use super::*;
use crate::calibration::{confidences, evaluate};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

const CLASSES: usize = 10;

/// Seeded logits `3·N(0, 1)` of `n` rows and labels uniform over the classes.
fn halves(n: usize, seed: u64) -> (Vec<f32>, Vec<u32>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let logits = (0..n * CLASSES)
        .map(|_| 3.0 * rng.sample::<f32, _>(StandardNormal))
        .collect();
    let labels = (0..n)
        .map(|_| rng.random_range(0..CLASSES as u32))
        .collect();
    (logits, labels)
}

fn predictions(logits: &[f32]) -> Vec<usize> {
    logits.chunks_exact(CLASSES).map(predicted_class).collect()
}

#[test]
fn the_network_case_is_the_evaluation_half_itself() {
    let (logits, labels) = halves(50, 1);
    let rows = case_rows(EstimatorCase::Network, CLASSES, &labels, &logits, &labels).unwrap();
    assert_eq!(rows.logits, logits);
    assert_eq!(rows.labels, labels);
}

#[test]
fn a_fifth_of_the_rows_the_surest_are_certain_at_every_temperature() {
    let (logits, labels) = halves(1000, 2);
    let rows = case_rows(
        EstimatorCase::ConfidenceOne,
        CLASSES,
        &labels,
        &logits,
        &labels,
    )
    .unwrap();
    assert_eq!(rows.labels, labels);
    assert_eq!(predictions(&rows.logits), predictions(&logits));
    let before = Logits::new(&logits, CLASSES).unwrap();
    let (original, _) = confidences(&before, &labels, 1.0).unwrap();
    let after = Logits::new(&rows.logits, CLASSES).unwrap();
    let certain_at = |temperature: f64| -> Vec<usize> {
        let (confidence, _) = confidences(&after, &labels, temperature).unwrap();
        (0..confidence.len())
            .filter(|&row| confidence[row] == 1.0)
            .collect()
    };
    // The rows made certain: 200 at T = 1 and at the slider's hottest T, and still certain at
    // its coldest, where other rows join them.
    let certain = certain_at(1.0);
    assert_eq!(certain.len(), 200);
    assert_eq!(certain_at(20.0), certain);
    let cold = certain_at(0.05);
    assert!(certain.iter().all(|row| cold.contains(row)));
    // They are the surest rows at T = 1: none left out is surer than one taken.
    let least_taken = certain
        .iter()
        .map(|&row| original[row])
        .fold(f64::INFINITY, f64::min);
    assert!((0..original.len())
        .filter(|row| !certain.contains(row))
        .all(|row| original[row] <= least_taken));
}

#[test]
fn empty_bins_leave_four_confidences_and_every_prediction() {
    let (logits, labels) = halves(2000, 3);
    let rows = case_rows(EstimatorCase::EmptyBins, CLASSES, &labels, &logits, &labels).unwrap();
    assert_eq!(predictions(&rows.logits), predictions(&logits));
    let after = Logits::new(&rows.logits, CLASSES).unwrap();
    for temperature in [0.5, 1.0, 3.0] {
        let report = evaluate(&after, &labels, temperature, 15, Binning::Width).unwrap();
        let (confidence, _) = confidences(&after, &labels, temperature).unwrap();
        let (distinct, empty) = distinct_and_empty(&confidence, &report.bins);
        assert_eq!(distinct, 4, "T = {temperature}");
        assert!(empty >= 11, "T = {temperature}: {empty} empty bins");
    }
    // At T = 1 the four confidences are e^L/(e^L + 9), L = 1, 2, 4, 8: bins 3, 6, 12 and 14
    // of 15.
    let report = evaluate(&after, &labels, 1.0, 15, Binning::Width).unwrap();
    let filled: Vec<usize> = (0..15).filter(|&b| report.bins[b].count > 0).collect();
    assert_eq!(filled, [3, 6, 12, 14]);
}

#[test]
fn the_base_rates_are_one_answer_at_the_calibration_shares() {
    // 30 of class 2, 20 of class 5, 10 of class 7 in the calibration half.
    let calibration: Vec<u32> = [vec![2; 30], vec![5; 20], vec![7; 10]].concat();
    let (logits, labels) = halves(400, 4);
    let rows = case_rows(
        EstimatorCase::BaseRate,
        CLASSES,
        &calibration,
        &logits,
        &labels,
    )
    .unwrap();
    let after = Logits::new(&rows.logits, CLASSES).unwrap();
    let probabilities = calibration::softmax(&after, 1.0).unwrap();
    for row in probabilities.chunks_exact(CLASSES) {
        for (class, share) in [(2, 0.5), (5, 1.0 / 3.0), (7, 1.0 / 6.0), (0, 0.0)] {
            assert!(
                (row[class] - share).abs() < 1e-6,
                "class {class}: {}",
                row[class]
            );
        }
    }
    // One bin holds every row: ECE is |accuracy − 0.5|, accuracy the share of class 2.
    let report = evaluate(&after, &labels, 1.0, 15, Binning::Width).unwrap();
    let share = labels.iter().filter(|&&y| y == 2).count() as f64 / labels.len() as f64;
    assert_eq!(report.accuracy, share);
    assert!((report.ece - (share - probabilities[2]).abs()).abs() < 1e-12);
    assert_eq!(EstimatorCase::BaseRate.temperature(3.0), 1.0);
    assert_eq!(EstimatorCase::EmptyBins.temperature(3.0), 3.0);
}

#[test]
fn a_hundred_images_are_the_first_hundred() {
    let (logits, labels) = halves(250, 5);
    let rows = case_rows(
        EstimatorCase::HundredImages,
        CLASSES,
        &labels,
        &logits,
        &labels,
    )
    .unwrap();
    assert_eq!(rows.labels, labels[..100]);
    assert_eq!(rows.logits, logits[..100 * CLASSES]);
    let (few_logits, few_labels) = halves(40, 6);
    let few = case_rows(
        EstimatorCase::HundredImages,
        CLASSES,
        &few_labels,
        &few_logits,
        &few_labels,
    )
    .unwrap();
    assert_eq!(few.labels.len(), 40);
}

#[test]
fn the_extra_bin_by_hand() {
    // Two bins. calibra's last bin holds all four rows: confidence 0.8625, accuracy 0.75.
    // The extra bin takes the two at 1 (one wrong): [0.5, 0.95] both right in bin 1 (gap
    // 0.275, weight ½) and the extra bin (gap 0.5, weight ½).
    let confidence = [0.5, 1.0, 1.0, 0.95];
    let correct = [true, true, false, true];
    let extra = extra_bin_errors(&confidence, &correct, 2, Binning::Width)
        .unwrap()
        .unwrap();
    assert_eq!((extra.certain, extra.certain_wrong), (2, 1));
    assert!((extra.errors.ece - 0.3875).abs() < 1e-12);
    assert!((extra.errors.rmsce - (0.5 * 0.275_f64.powi(2) + 0.5 * 0.25).sqrt()).abs() < 1e-12);
    assert!((extra.errors.mce - 0.5).abs() < 1e-12);
    let none = extra_bin_errors(&[0.5, 0.9], &[true, false], 2, Binning::Width).unwrap();
    assert_eq!(none, None);
}

#[test]
fn the_extra_bin_gives_torchmetrics_values() {
    // The fixture's 8 certain rows are at exactly 1 in f64 at T = 1 (at T = 1.7 only once
    // rounded to f32, as torchmetrics rounds them).
    let fixture: serde_json::Value =
        serde_json::from_str(include_str!("../tests/fixtures/estimators/expected.json")).unwrap();
    let values: Vec<f32> = fixture["logits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap() as f32)
        .collect();
    let labels: Vec<u32> = fixture["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect();
    let classes = fixture["num_classes"].as_u64().unwrap() as usize;
    let bins = fixture["bins"].as_u64().unwrap() as usize;
    let case = &fixture["temperatures"][0];
    assert_eq!(case["temperature"].as_f64(), Some(1.0));
    let (confidence, correct) =
        confidences(&Logits::new(&values, classes).unwrap(), &labels, 1.0).unwrap();
    let extra = extra_bin_errors(&confidence, &correct, bins, Binning::Width)
        .unwrap()
        .unwrap();
    assert_eq!(extra.certain as f64, case["certain_rows"].as_f64().unwrap());
    // torchmetrics computes in f32.
    for (actual, pointer) in [
        (extra.errors.ece, "/torchmetrics/l1"),
        (extra.errors.rmsce, "/torchmetrics/l2"),
        (extra.errors.mce, "/torchmetrics/max"),
    ] {
        let expected = case.pointer(pointer).and_then(|v| v.as_f64()).unwrap();
        assert!(
            (actual - expected).abs() <= 1e-6,
            "{pointer}: {actual} against {expected}"
        );
    }
}
