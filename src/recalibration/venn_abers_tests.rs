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
