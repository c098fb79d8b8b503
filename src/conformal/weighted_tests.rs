//! Unit tests of `conformal/weighted.rs`: hand-worked thresholds and sets, equal weights against
//! split conformal, and coverage under a planted covariate shift whose likelihood ratio is
//! known, then estimated by the domain classifier.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use super::*;
use crate::conformal::conformal_threshold;
use crate::domain_classifier::{effective_sample_size, fit_domain_classifier};
use crate::test_support::draw_index;

/// Statistical checks allow this many standard errors: a one-sided false alarm about once in
/// 740 runs (the normal law's 0.135% tail) where the checked property holds.
const STANDARD_ERRORS: f64 = 3.0;

/// The mean of `values` and its standard error.
fn mean_and_error(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (variance / n).sqrt())
}

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

/// Checks that the weighted sets' mean coverage over repetitions reaches `1 − alpha` less
/// [`STANDARD_ERRORS`] standard errors while the unweighted sets' falls more than 2 points short.
fn assert_weighted_covers_and_unweighted_falls_short(
    weighted: &[f64],
    unweighted: &[f64],
    alpha: f64,
) {
    let (mean, error) = mean_and_error(weighted);
    assert!(
        mean >= 1.0 - alpha - STANDARD_ERRORS * error,
        "weighted coverage {mean} ± {error}"
    );
    let (unweighted_mean, _) = mean_and_error(unweighted);
    assert!(
        unweighted_mean < 1.0 - alpha - 0.02,
        "unweighted coverage {unweighted_mean}"
    );
}

/// Label probabilities at input `x`: `softmax(x·(−2, 0, 2))`, uncertain near `x = 0`.
fn label_law(x: f64) -> [f64; 3] {
    let logits = [-2.0 * x, 0.0, 2.0 * x];
    let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let weights = logits.map(|z| (z - max).exp());
    let total: f64 = weights.iter().sum();
    weights.map(|w| w / total)
}

/// The exact coverage at input `x` of the LAC set at `threshold`: the label law's mass on the
/// labels whose score `1 − p` is at most the threshold.
fn coverage_at(x: f64, threshold: f64) -> f64 {
    label_law(x)
        .iter()
        .filter(|&&p| 1.0 - p <= threshold)
        .sum::<f64>()
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
    assert_weighted_covers_and_unweighted_falls_short(&weighted, &unweighted, ALPHA);
}

#[test]
fn weighted_sets_with_estimated_weights_cover_under_a_planted_covariate_shift() {
    // Clean inputs N(0, 1.5²), shifted ones N(0, 0.5²), where the labels are less certain:
    // ln w(x) is quadratic in x, so the classifier reads the features (x, x²). Per repetition,
    // 300 labelled clean rows calibrate, 300 unlabelled shifted rows fit the classifier
    // against them, and 200 other shifted rows are tested, their coverage given x exact.
    // Over 200 seeded repetitions the mean coverage must reach 1 − α less three standard
    // errors (a false alarm about once in 740 runs were the guarantee exact; the weights are
    // estimated, so it is approximate), and the unweighted sets must fall short.
    const REPETITIONS: usize = 200;
    const N: usize = 300;
    const TESTED: usize = 200;
    const ALPHA: f64 = 0.1;
    let clean_inputs = Normal::new(0.0, 1.5).unwrap();
    let shifted_inputs = Normal::new(0.0, 0.5).unwrap();
    let features = |xs: &[f64]| -> Vec<f64> { xs.iter().flat_map(|&x| [x, x * x]).collect() };
    let mut rng = ChaCha8Rng::seed_from_u64(2019);
    let (mut weighted, mut unweighted, mut effective) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..REPETITIONS {
        let clean: Vec<f64> = (0..N).map(|_| clean_inputs.sample(&mut rng)).collect();
        let scores: Vec<f64> = clean
            .iter()
            .map(|&x| {
                let law = label_law(x);
                1.0 - law[draw_index(&law, &mut rng)]
            })
            .collect();
        let unlabelled: Vec<f64> = (0..N).map(|_| shifted_inputs.sample(&mut rng)).collect();
        let tested: Vec<f64> = (0..TESTED)
            .map(|_| shifted_inputs.sample(&mut rng))
            .collect();
        let fit = fit_domain_classifier(&features(&clean), &features(&unlabelled), 2).unwrap();
        let calibration_weights = fit.log_weights(&features(&clean));
        effective.push(effective_sample_size(&calibration_weights));
        let calibration =
            WeightedCalibration::from_log_weights(&scores, &calibration_weights).unwrap();
        let shared = conformal_threshold(&scores, ALPHA).unwrap();
        let test_weights = fit.log_weights(&features(&tested));
        let (mut with, mut without) = (0.0, 0.0);
        for (&x, &l) in tested.iter().zip(&test_weights) {
            with += coverage_at(x, calibration.threshold_at_log_weight(l, ALPHA).unwrap());
            without += coverage_at(x, shared);
        }
        weighted.push(with / TESTED as f64);
        unweighted.push(without / TESTED as f64);
    }
    assert_weighted_covers_and_unweighted_falls_short(&weighted, &unweighted, ALPHA);
    // The shift concentrates the weight on the clean rows near 0: fewer effective rows.
    let (ess, _) = mean_and_error(&effective);
    assert!(ess < 0.8 * N as f64 && ess > 0.1 * N as f64, "ESS {ess}");
}

#[test]
fn evaluate_counts_sets_by_hand() {
    // Scores 0.1..0.4 with equal weights; α = 0.5: target 0.5·(4 + 1) = 2.5 → q̂ = 0.3.
    let calibration =
        WeightedCalibration::from_log_weights(&[0.1, 0.2, 0.3, 0.4], &[5.0; 4]).unwrap();
    // Two rows of three labels: the first with weight e^5 (relative 1), the second with a
    // weight e^900 times larger, whose q̂ is +∞.
    let scores = [0.05, 0.3, 0.9, 0.5, 0.6, 0.7];
    let sets = calibration
        .evaluate(&scores, &[5.0, 905.0], &[2, 1], 3, 0.5)
        .unwrap();
    assert_eq!(sets.covered, 1);
    assert_eq!(sets.coverage, 0.5);
    assert_eq!(sets.average_set_size, (2.0 + 3.0) / 2.0);
    assert_eq!(sets.infinite_share, 0.5);
    assert!(calibration
        .evaluate(&scores, &[5.0], &[2, 1], 3, 0.5)
        .is_err());
    assert!(calibration
        .evaluate(&scores, &[5.0, 5.0], &[2, 3], 3, 0.5)
        .is_err());
}
