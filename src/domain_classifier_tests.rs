//! Unit tests of `domain_classifier.rs`: a planted Gaussian shift whose likelihood ratio is
//! known recovered, identical domains giving equal weights, Kish's effective sample size by
//! hand, and separable domains held finite by the penalty. (Weighted conformal with the
//! estimated weights is tested in `conformal/weighted_tests.rs`.)

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

use super::*;

/// `n` rows of `N(mean, I)` in `mean.len()` dimensions.
fn gaussian_rows(n: usize, mean: &[f64], rng: &mut ChaCha8Rng) -> Vec<f64> {
    (0..n)
        .flat_map(|_| {
            mean.iter()
                .map(|m| {
                    let noise: f64 = StandardNormal.sample(&mut *rng);
                    m + noise
                })
                .collect::<Vec<f64>>()
        })
        .collect()
}

#[test]
fn a_planted_gaussian_shift_gives_its_known_likelihood_ratio() {
    // Clean N(0, I), shifted N(μ, I): ln w(x) = μᵀx − ½‖μ‖², linear in x, so the logistic
    // model is right. 20,000 clean and 10,000 shifted rows: ln(n_c/n_s) = ln 2 cancels in w.
    let mu = [0.8, -0.5];
    let mut rng = ChaCha8Rng::seed_from_u64(43);
    let clean = gaussian_rows(20_000, &[0.0, 0.0], &mut rng);
    let shifted = gaussian_rows(10_000, &mu, &mut rng);
    let fit = fit_domain_classifier(&clean, &shifted, 2).unwrap();
    assert!(fit.converged);
    assert!((fit.log_count_ratio - 2f64.ln()).abs() < 1e-15);
    // Tolerance: several times the estimate's sampling error at these sizes.
    let tolerance = 0.08;
    for point in [
        [0.0, 0.0],
        [1.0, 0.0],
        [0.0, -1.0],
        [-1.0, 1.0],
        [1.5, -1.5],
    ] {
        let truth = mu[0] * point[0] + mu[1] * point[1] - 0.5 * (mu[0] * mu[0] + mu[1] * mu[1]);
        let estimate = fit.log_weights(&point)[0];
        assert!(
            (estimate - truth).abs() < tolerance,
            "at {point:?}: ln w = {estimate}, truth {truth}"
        );
    }
}

#[test]
fn identical_domains_give_equal_weights() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let rows = gaussian_rows(500, &[1.0, 2.0, -3.0], &mut rng);
    let fit = fit_domain_classifier(&rows, &rows, 3).unwrap();
    for l in fit.log_weights(&rows) {
        assert!(l.abs() < 1e-12, "ln w = {l}");
    }
    let ess = effective_sample_size(&fit.log_weights(&rows));
    assert!((ess - 500.0).abs() < 1e-9, "ESS {ess}");
}

#[test]
fn effective_sample_size_by_hand() {
    // Weights 1, 1, 2: (1 + 1 + 2)² / (1 + 1 + 4) = 16/6.
    let ess = effective_sample_size(&[0.0, 0.0, 2f64.ln()]);
    assert!((ess - 16.0 / 6.0).abs() < 1e-12);
    // The same weights scaled by e^1000: no overflow, the same size.
    let ess = effective_sample_size(&[1000.0, 1000.0, 1000.0 + 2f64.ln()]);
    assert!((ess - 16.0 / 6.0).abs() < 1e-12);
    // One weight holding everything.
    assert!((effective_sample_size(&[0.0, -800.0, -900.0]) - 1.0).abs() < 1e-12);
    assert_eq!(effective_sample_size(&[]), 0.0);
}

#[test]
fn separable_domains_stay_finite_and_a_constant_feature_is_left_out() {
    // Clean at x < 0, shifted at x > 0; the second feature never varies.
    let clean: Vec<f64> = (1..=50).flat_map(|i| [-(i as f64), 3.0]).collect();
    let shifted: Vec<f64> = (1..=50).flat_map(|i| [i as f64, 3.0]).collect();
    let fit = fit_domain_classifier(&clean, &shifted, 2).unwrap();
    assert!(fit.converged);
    assert!(fit.coefficients[0].is_finite() && fit.coefficients[0] > 3.0);
    assert_eq!(fit.inverse_deviations[1], 0.0);
    assert_eq!(fit.coefficients[1], 0.0);
    // The clean rows' weights fall off away from the boundary: fewer effective rows.
    let weights = fit.log_weights(&clean);
    assert!(weights.iter().all(|l| l.is_finite()));
    assert!(effective_sample_size(&weights) < 25.0);
}

#[test]
fn bad_input_is_refused() {
    assert_eq!(
        fit_domain_classifier(&[], &[1.0], 1),
        Err(DomainError::Empty)
    );
    assert_eq!(
        fit_domain_classifier(&[1.0], &[1.0], 0),
        Err(DomainError::Empty)
    );
    assert!(matches!(
        fit_domain_classifier(&[1.0, 2.0, 3.0], &[1.0, 2.0], 2),
        Err(DomainError::ShapeMismatch { .. })
    ));
    assert_eq!(
        fit_domain_classifier(&[1.0, 2.0], &[1.0, f64::NAN], 2),
        Err(DomainError::NonFinite {
            what: "shifted rows",
            row: 0,
            feature: 1
        })
    );
}
