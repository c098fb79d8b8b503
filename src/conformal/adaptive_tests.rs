//! Unit tests of `conformal/adaptive.rs`: hand-worked steps, and Gibbs & Candès's bound on the
//! long-run miscoverage on a stream that drifts, where fixed split conformal loses coverage.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;

/// Hand-worked levels: a few decimal steps.
const HAND_TOLERANCE: f64 = 1e-12;

#[test]
fn the_level_moves_after_each_miss_and_hit() {
    let calibration: Vec<f64> = (1..=10).map(|i| i as f64 / 10.0).collect();
    // Two labels; the true label is 0 in every row.
    let stream = [0.95, 0.05, 0.95, 0.5, 0.3, 0.99];
    let run = adaptive_conformal(&calibration, &stream, &[0, 0, 0], 2, 0.2, 0.1).unwrap();
    // α₁ = 0.2: k = ⌈11·0.8⌉ = 9, q̂ = 0.9; 0.95 is missed, 0.05 kept.
    // α₂ = 0.2 + 0.1·(0.2 − 1) = 0.12: k = ⌈9.68⌉ = 10, q̂ = 1.0; 0.95 is covered.
    // α₃ = 0.12 + 0.1·0.2 = 0.14: k = ⌈9.46⌉ = 10, q̂ = 1.0; 0.3 covered, 0.99 too.
    let expected = [(0.2, false, 1), (0.12, true, 2), (0.14, true, 2)];
    for (step, &(alpha, covered, size)) in run.steps.iter().zip(&expected) {
        assert!((step.alpha - alpha).abs() <= HAND_TOLERANCE, "{step:?}");
        assert_eq!((step.covered, step.set_size), (covered, size), "{step:?}");
    }
    assert!((run.coverage - 2.0 / 3.0).abs() <= HAND_TOLERANCE);
    // Fixed at q̂ = 0.9: covers 0.3 only; sizes 1, 1, 1.
    assert!((run.fixed_coverage - 1.0 / 3.0).abs() <= HAND_TOLERANCE);
    assert!((run.fixed_average_set_size - 1.0).abs() <= HAND_TOLERANCE);
    // (max(0.2, 0.8) + 0.1) / (0.1·3).
    assert!((run.miscoverage_bound - 3.0).abs() <= HAND_TOLERANCE);
}

#[test]
fn levels_beyond_zero_and_one_give_every_label_and_none() {
    let calibration = [0.2, 0.4, 0.6];
    // α = 0.9, γ = 0.05, every score 0.1: α₁ = 0.9, k = ⌈4·0.1⌉ = 1, q̂ = 0.2, a hit; then
    // 0.945 (k = ⌈0.22⌉ = 1) and 0.99 (k = ⌈0.04⌉ = 1), hits; then 1.035: k = ⌈−0.14⌉ = 0,
    // the empty set, a miss.
    let stream = [0.1, 0.1, 0.1, 0.1];
    let run = adaptive_conformal(&calibration, &stream, &[0, 0, 0, 0], 1, 0.9, 0.05).unwrap();
    let sizes: Vec<usize> = run.steps.iter().map(|s| s.set_size).collect();
    let levels: Vec<f64> = run.steps.iter().map(|s| s.alpha).collect();
    assert_eq!(sizes, [1, 1, 1, 0]);
    for (level, expected) in levels.iter().zip([0.9, 0.945, 0.99, 1.035]) {
        assert!((level - expected).abs() <= HAND_TOLERANCE, "{levels:?}");
    }
    // α = 0.3, γ = 1: k = ⌈2.8⌉ = 3, q̂ = 0.6 misses 0.9, and α₂ = 0.3 + (0.3 − 1) = −0.4:
    // every label, so 0.9 is covered.
    let run = adaptive_conformal(&calibration, &[0.9, 0.9], &[0, 0], 1, 0.3, 1.0).unwrap();
    assert!(!run.steps[0].covered);
    assert!((run.steps[1].alpha + 0.4).abs() <= HAND_TOLERANCE);
    assert!(run.steps[1].covered);
}

#[test]
fn bad_input_is_refused() {
    let calibration = [0.5];
    assert!(matches!(
        adaptive_conformal(&calibration, &[0.1], &[0], 1, 0.0, 0.1),
        Err(ConformalError::InvalidAlpha(_))
    ));
    for gamma in [0.0, -0.1, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            adaptive_conformal(&calibration, &[0.1], &[0], 1, 0.1, gamma),
            Err(ConformalError::InvalidParameter { name: "gamma", .. })
        ));
    }
    assert!(matches!(
        adaptive_conformal(&calibration, &[0.1, 0.2], &[0], 1, 0.1, 0.1),
        Err(ConformalError::ShapeMismatch { .. })
    ));
    assert_eq!(
        adaptive_conformal(&calibration, &[], &[], 1, 0.1, 0.1),
        Err(ConformalError::Empty)
    );
}

/// A stream of `length` rows of 3 labels whose true-label score drifts from the calibration
/// law `U(0, 1)` to `U^0.1` (mostly near 1): the data move, and nobody refits.
fn drifting_stream(length: usize, rng: &mut ChaCha8Rng) -> (Vec<f64>, Vec<u32>) {
    let mut scores = Vec::with_capacity(length * 3);
    let mut labels = Vec::with_capacity(length);
    for t in 0..length {
        let power = 1.0 - 0.9 * t as f64 / length as f64;
        let label = rng.random_range(0..3_u32);
        for class in 0..3 {
            let u: f64 = rng.random();
            scores.push(if class == label { u.powf(power) } else { u });
        }
        labels.push(label);
    }
    (scores, labels)
}

#[test]
fn long_run_coverage_returns_to_the_target_on_a_drifting_stream() {
    const ALPHA: f64 = 0.1;
    let mut rng = ChaCha8Rng::seed_from_u64(2021);
    let calibration: Vec<f64> = (0..1000).map(|_| rng.random()).collect();
    let (scores, labels) = drifting_stream(5000, &mut rng);
    for gamma in [0.005, 0.02, 0.1] {
        let run = adaptive_conformal(&calibration, &scores, &labels, 3, ALPHA, gamma).unwrap();
        // The bound holds at every length, not only at the end.
        let mut misses = 0;
        for (index, step) in run.steps.iter().enumerate() {
            misses += usize::from(!step.covered);
            let t = (index + 1) as f64;
            let bound = (ALPHA.max(1.0 - ALPHA) + gamma) / (gamma * t);
            assert!(
                (misses as f64 / t - ALPHA).abs() <= bound,
                "γ = {gamma}, t = {t}: miscoverage {} beyond {bound}",
                misses as f64 / t
            );
        }
        assert!(run
            .steps
            .iter()
            .all(|s| s.alpha >= -gamma && s.alpha <= 1.0 + gamma));
        // Fixed split conformal loses coverage as the scores drift; ACI pays in set size.
        assert!(
            run.fixed_coverage < 1.0 - ALPHA - 0.05,
            "{}",
            run.fixed_coverage
        );
        assert!(run.average_set_size > run.fixed_average_set_size);
    }
}
