//! Tests of `venn_abers.rs`: cases worked by hand, the venn-abers library's values
//! (`scripts/estimators-reference.py`), and seeded Monte Carlo on confidences whose true
//! probability of being right is planted.

use super::*;
use crate::calibration::{confidences, Logits};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The library computes the same isotonic fits by another algorithm, in `f64`.
const LIBRARY_TOLERANCE: f64 = 1e-9;

fn assert_close(actual: f64, expected: f64, tolerance: f64) {
    assert!(
        (actual - expected).abs() <= tolerance,
        "expected {expected}, got {actual} (tolerance {tolerance})"
    );
}

#[test]
fn two_calibration_rows_by_hand() {
    // Rows (0.3, wrong) and (0.7, right). At s = 0.5 both augmented sets are already monotone:
    // p0 = 0, p1 = 1, merged ½. At s = 0.8 the added wrong row pools with (0.7, right): p0 = ½;
    // the added right row does not: p1 = 1, merged 1/(1 − ½ + 1) = ⅔.
    let fitted = fit_venn_abers(&[0.3, 0.7], &[false, true]).unwrap();
    assert_eq!(fitted.interval(0.5), VennAbersInterval { p0: 0.0, p1: 1.0 });
    assert_eq!(fitted.interval(0.5).merged(), 0.5);
    let high = fitted.interval(0.8);
    assert_eq!((high.p0, high.p1), (0.5, 1.0));
    assert_close(high.merged(), 2.0 / 3.0, 1e-15);
    // On a calibration confidence the added row pools with its rows: at 0.7, (0.7: 1 of 2).
    assert_eq!(fitted.interval(0.7), VennAbersInterval { p0: 0.5, p1: 1.0 });
}

#[test]
fn the_merged_step_function_is_the_interval_everywhere() {
    // Between and on the calibration confidences, the step function gives what the two
    // isotonic fits give at that confidence.
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let (confidence, correct): (Vec<f64>, Vec<bool>) = (0..60)
        .map(|_| {
            let c = (rng.random_range(0.3..1.0_f64) * 20.0).round() / 20.0;
            (c, rng.random::<f64>() < c)
        })
        .unzip();
    let fitted = fit_venn_abers(&confidence, &correct).unwrap();
    let merged = fitted.merged();
    for s in confidence
        .iter()
        .copied()
        .chain((0..=100).map(|i| f64::from(i) / 100.0 + 0.001))
    {
        assert_eq!(merged.at(s), fitted.interval(s).merged(), "at {s}");
    }
}

#[test]
fn the_library_gives_the_same_probabilities() {
    let fixture: serde_json::Value = serde_json::from_str(include_str!(
        "../../tests/fixtures/estimators/expected.json"
    ))
    .unwrap();
    let numbers = |value: &serde_json::Value| -> Vec<f64> {
        value
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    let logits: Vec<f32> = numbers(&fixture["logits"])
        .iter()
        .map(|&v| v as f32)
        .collect();
    let labels: Vec<u32> = numbers(&fixture["labels"])
        .iter()
        .map(|&v| v as u32)
        .collect();
    let expected = &fixture["venn_abers"];
    let classes = fixture["num_classes"].as_u64().unwrap() as usize;
    let logits = Logits::new(&logits, classes).unwrap();
    let temperature = expected["temperature"].as_f64().unwrap();
    let (confidence, correct) = confidences(&logits, &labels, temperature).unwrap();
    let half = expected["calibration_rows"].as_u64().unwrap() as usize;
    let fitted = fit_venn_abers(&confidence[..half], &correct[..half]).unwrap();
    let merged = fitted.merged();
    let (p0, p1, probability) = (
        numbers(&expected["p0"]),
        numbers(&expected["p1"]),
        numbers(&expected["merged"]),
    );
    for (i, &s) in confidence[half..].iter().enumerate() {
        let interval = fitted.interval(s);
        assert_close(interval.p0, p0[i], LIBRARY_TOLERANCE);
        assert_close(interval.p1, p1[i], LIBRARY_TOLERANCE);
        assert_close(merged.at(s), probability[i], LIBRARY_TOLERANCE);
    }
}

/// `n` confidences uniform on `[0.2, 1)`, each right with probability `c²` (an overconfident
/// network whose truth is known at every confidence).
fn planted(n: usize, rng: &mut ChaCha8Rng) -> (Vec<f64>, Vec<bool>) {
    (0..n)
        .map(|_| {
            let c: f64 = rng.random_range(0.2..1.0);
            (c, rng.random::<f64>() < c * c)
        })
        .unzip()
}

#[test]
fn the_merged_probability_recovers_a_planted_truth() {
    // Fitted on 4,000 rows, the merged probability at 2,000 fresh confidences is within a mean
    // 0.03 of the planted c² (isotonic regression's error at this n is about 0.02), and its
    // mean matches the fresh rows' accuracy within 3 standard errors (√(0.3·0.7/2000) ≈ 0.01).
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let (confidence, correct) = planted(4000, &mut rng);
    let merged = fit_venn_abers(&confidence, &correct).unwrap().merged();
    let (fresh, fresh_correct) = planted(2000, &mut rng);
    let error = fresh
        .iter()
        .map(|&c| (merged.at(c) - c * c).abs())
        .sum::<f64>()
        / fresh.len() as f64;
    assert!(error < 0.03, "mean error {error}");
    let mean = fresh.iter().map(|&c| merged.at(c)).sum::<f64>() / fresh.len() as f64;
    let accuracy = fresh_correct.iter().filter(|&&y| y).count() as f64 / fresh.len() as f64;
    assert_close(mean, accuracy, 0.03);
}

#[test]
fn the_interval_narrows_as_the_calibration_rows_grow() {
    // One added row moves an isotonic fit less the more rows share its block: the mean width
    // p1 − p0 at fresh confidences falls with n (roughly as n^(−2/3), the block sizes growing as
    // n^(2/3)); from 250 to 4,000 rows it falls by more than a factor of 4.
    let width = |n: usize| {
        let mut rng = ChaCha8Rng::seed_from_u64(n as u64);
        let (confidence, correct) = planted(n, &mut rng);
        let fitted = fit_venn_abers(&confidence, &correct).unwrap();
        let (fresh, _) = planted(200, &mut rng);
        fresh
            .iter()
            .map(|&s| {
                let interval = fitted.interval(s);
                assert!(interval.p0 <= interval.p1);
                assert!((interval.p0..=interval.p1).contains(&interval.merged()));
                interval.p1 - interval.p0
            })
            .sum::<f64>()
            / fresh.len() as f64
    };
    let (small, large) = (width(250), width(4000));
    assert!(small > 4.0 * large, "{small} against {large}");
}

/// The definition, slowly: pool-adjacent-violators on the calibration rows with the row
/// `(s, outcome)` added, read at `s`.
fn isotonic_with_the_row(confidence: &[f64], correct: &[bool], s: f64, outcome: bool) -> f64 {
    let mut confidence = confidence.to_vec();
    let mut correct = correct.to_vec();
    confidence.push(s);
    correct.push(outcome);
    crate::recalibration::fit_isotonic(&confidence, &correct)
        .unwrap()
        .at(s)
}

#[test]
fn each_interval_is_the_isotonic_fit_with_the_row_added() {
    // The prefix and suffix blocks give, bit for bit, the PAV fit of every calibration row and
    // the new one: on ties, on the calibration confidences themselves, in every gap, and
    // beyond both ends.
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    for n in [1, 2, 7, 60, 400] {
        let (confidence, correct): (Vec<f64>, Vec<bool>) = (0..n)
            .map(|_| {
                let c = (rng.random_range(0.1..1.0_f64) * 30.0).round() / 30.0;
                (c, rng.random::<f64>() < c)
            })
            .unzip();
        let fitted = fit_venn_abers(&confidence, &correct).unwrap();
        let queries = confidence
            .iter()
            .copied()
            .chain((0..120).map(|i| f64::from(i) / 120.0 + 0.0005))
            .chain([0.0, 1.0]);
        for s in queries {
            let interval = fitted.interval(s);
            assert_eq!(
                interval.p0,
                isotonic_with_the_row(&confidence, &correct, s, false),
                "p0 at {s}, n = {n}"
            );
            assert_eq!(
                interval.p1,
                isotonic_with_the_row(&confidence, &correct, s, true),
                "p1 at {s}, n = {n}"
            );
        }
    }
}

#[test]
fn the_merged_probability_is_never_zero_or_one() {
    // Every calibration row above 0.8 is right and every one below 0.3 wrong: isotonic
    // regression says 1 and 0 there, but the row counted wrong keeps p0 below 1 and the row
    // counted right keeps p1 above 0, so the merge p1 / (1 − p0 + p1) stays inside (0, 1).
    let confidence: Vec<f64> = (0..100).map(|i| f64::from(i) / 100.0).collect();
    let correct: Vec<bool> = confidence.iter().map(|&c| c > 0.5).collect();
    let isotonic = crate::recalibration::fit_isotonic(&confidence, &correct).unwrap();
    assert_eq!((isotonic.at(0.95), isotonic.at(0.1)), (1.0, 0.0));
    let merged = fit_venn_abers(&confidence, &correct).unwrap().merged();
    for &value in merged.values() {
        assert!(value > 0.0 && value < 1.0, "{value}");
    }
}

#[test]
fn the_interval_is_narrow_where_the_calibration_rows_are_many() {
    // 900 calibration rows at confidence 0.9 (810 right), 9 at 0.6 (5 right): one added row
    // moves the fit at 0.9 by about 1/901, at 0.6 by about 1/10.
    let mut confidence = vec![0.9; 900];
    let mut correct: Vec<bool> = (0..900).map(|i| i < 810).collect();
    confidence.extend([0.6; 9]);
    correct.extend((0..9).map(|i| i < 5));
    let fitted = fit_venn_abers(&confidence, &correct).unwrap();
    let dense = fitted.interval(0.9);
    let sparse = fitted.interval(0.6);
    assert_eq!((dense.p0, dense.p1), (810.0 / 901.0, 811.0 / 901.0));
    assert_eq!((sparse.p0, sparse.p1), (5.0 / 10.0, 6.0 / 10.0));
}
