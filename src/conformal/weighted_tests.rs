//! Unit tests of `conformal/weighted.rs`: hand-worked thresholds, equal weights against split
//! conformal, and coverage under a planted covariate shift whose likelihood ratio is known.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use super::*;
use crate::conformal::conformal_threshold;
use crate::test_support::draw_index;

/// Statistical checks allow this many standard errors.
const STANDARD_ERRORS: f64 = 3.0;

#[test]
fn thresholds_by_hand() {
    // Scores 0.1, 0.2, 0.3, 0.4 with weights 1, 1, 1, 5 (sum 8).
    let calibration =
        WeightedCalibration::new(&[0.4, 0.1, 0.3, 0.2], &[5.0, 1.0, 1.0, 1.0]).unwrap();
    // Test weight 0, α = 0.5: the target mass is 4: 1, 2, 3, 8 reach it at 0.4.
    assert_eq!(calibration.threshold(0.0, 0.5), Ok(0.4));
    // α = 0.7: target 0.3·8 = 2.4, reached at 0.3.
    assert_eq!(calibration.threshold(0.0, 0.7), Ok(0.3));
    // A heavy test point (weight 8): α = 0.4 needs 0.6·16 = 9.6 > 8: +∞.
    assert_eq!(calibration.threshold(8.0, 0.4), Ok(f64::INFINITY));
}

#[test]
fn equal_weights_give_split_conformal() {
    let scores: Vec<f64> = (0..257).map(|i| ((i * 37) % 257) as f64 / 257.0).collect();
    let calibration = WeightedCalibration::new(&scores, &vec![1.0; 257]).unwrap();
    for alpha in [0.05, 0.1, 0.13, 0.2, 0.33] {
        assert_eq!(
            calibration.threshold(1.0, alpha).unwrap(),
            conformal_threshold(&scores, alpha).unwrap(),
            "α = {alpha}"
        );
    }
}

#[test]
fn bad_input_is_refused() {
    assert!(matches!(
        WeightedCalibration::new(&[0.1, 0.2], &[1.0]),
        Err(ConformalError::ShapeMismatch { .. })
    ));
    assert!(matches!(
        WeightedCalibration::new(&[0.1], &[-1.0]),
        Err(ConformalError::InvalidParameter { name: "weight", .. })
    ));
    assert!(matches!(
        WeightedCalibration::new(&[0.1], &[0.0]),
        Err(ConformalError::InvalidParameter {
            name: "weights",
            ..
        })
    ));
    assert_eq!(
        WeightedCalibration::new(&[], &[]),
        Err(ConformalError::Empty)
    );
    let calibration = WeightedCalibration::new(&[0.1], &[1.0]).unwrap();
    assert!(matches!(
        calibration.threshold(f64::NAN, 0.1),
        Err(ConformalError::InvalidParameter {
            name: "test weight",
            ..
        })
    ));
    assert!(matches!(
        calibration.threshold(1.0, 1.0),
        Err(ConformalError::InvalidAlpha(_))
    ));
}

/// Label probabilities at input `x`: `softmax(x·(−2, 0, 2))`, uncertain near `x = 0`.
fn label_law(x: f64) -> [f64; 3] {
    let logits = [-2.0 * x, 0.0, 2.0 * x];
    let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let weights = logits.map(|z| (z - max).exp());
    let total: f64 = weights.iter().sum();
    weights.map(|w| w / total)
}

/// The likelihood ratio of the test inputs, N(0, 0.5²), to the calibration inputs, N(0, 1.5²).
fn likelihood_ratio(x: f64) -> f64 {
    3.0 * (-x * x / (2.0 * 0.25) + x * x / (2.0 * 2.25)).exp()
}

#[test]
fn weighted_sets_cover_under_a_planted_covariate_shift_where_unweighted_ones_do_not() {
    const REPETITIONS: usize = 300;
    const N: usize = 300;
    const ALPHA: f64 = 0.1;
    let calibration_inputs = Normal::new(0.0, 1.5).unwrap();
    let test_inputs = Normal::new(0.0, 0.5).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(2019);
    let (mut weighted, mut unweighted) = (Vec::new(), Vec::new());
    for _ in 0..REPETITIONS {
        let (mut scores, mut weights) = (Vec::with_capacity(N), Vec::with_capacity(N));
        for _ in 0..N {
            let x: f64 = calibration_inputs.sample(&mut rng);
            let law = label_law(x);
            let y = draw_index(&law, &mut rng);
            scores.push(1.0 - law[y]);
            weights.push(likelihood_ratio(x));
        }
        let calibration = WeightedCalibration::new(&scores, &weights).unwrap();
        let shared = conformal_threshold(&scores, ALPHA).unwrap();
        // Coverage given x is exact: the label law at x is known.
        let coverage_at = |x: f64, threshold: f64| -> f64 {
            label_law(x)
                .iter()
                .filter(|&&p| 1.0 - p <= threshold)
                .sum::<f64>()
        };
        let (mut with, mut without) = (0.0, 0.0);
        for _ in 0..200 {
            let x: f64 = test_inputs.sample(&mut rng);
            with += coverage_at(
                x,
                calibration.threshold(likelihood_ratio(x), ALPHA).unwrap(),
            );
            without += coverage_at(x, shared);
        }
        weighted.push(with / 200.0);
        unweighted.push(without / 200.0);
    }
    let mean_and_error = |values: &[f64]| {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, (variance / n).sqrt())
    };
    let (mean, error) = mean_and_error(&weighted);
    assert!(
        mean >= 1.0 - ALPHA - STANDARD_ERRORS * error,
        "weighted coverage {mean}"
    );
    let (unweighted_mean, _) = mean_and_error(&unweighted);
    assert!(
        unweighted_mean < 1.0 - ALPHA - 0.02,
        "unweighted coverage {unweighted_mean}"
    );
}
