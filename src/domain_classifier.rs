//! The domain classifier behind weighted conformal prediction's likelihood-ratio weights: a
//! logistic regression that tells the shifted inputs from the clean ones, without labels.
//!
//! # Method
//!
//! Each input is a feature vector `x ∈ ℝᵈ` (the network's logits in the shift lab). Every
//! feature is standardised by the mean and standard deviation of the pooled fitting rows
//! (`x̃_j = (x_j − m_j)/s_j`; a feature constant over them is left out, its `x̃_j = 0`), and
//!
//! ```text
//! P(shifted | x) = σ(η(x)),   η(x) = b + βᵀx̃,
//! ```
//!
//! is fitted on `n_c` clean rows (`y = 0`) and `n_s` shifted rows (`y = 1`), `n = n_c + n_s`, by
//! minimising the mean log-loss with an L2 penalty on `β` (the intercept `b` free):
//!
//! ```text
//! L(b, β) = (1/n) Σ_i [ log(1 + e^{η_i}) − y_i η_i ] + (λ/2)‖β‖²,   λ = 1/(C·n),  C = 1,
//! ```
//!
//! scikit-learn's `LogisticRegression(C=1)` objective (`½‖β‖² + C Σ_i loss_i`) divided by
//! `C·n`, so the same fit on the same standardised features. `L` is strictly convex; it is
//! minimised by Newton's method ([`crate::recalibration`]'s minimiser, which Dirichlet
//! calibration and vector scaling share), from `b = β = 0`.
//!
//! By Bayes' rule the likelihood ratio of the shifted inputs' law to the clean inputs' is the
//! odds times the ratio of the counts (Tibshirani et al. 2019, §3):
//!
//! ```text
//! w(x) = P(shifted | x) / P(clean | x) · n_c / n_s = exp(η(x)) · n_c / n_s,
//! ```
//!
//! kept as its logarithm, `η(x) + ln(n_c/n_s)`: where the two domains separate, `η` runs to
//! hundreds and `w` past `f64`'s range. The effective sample size of weights `w_i` is Kish's
//! `(Σ w_i)² / Σ w_i²`: `n` for equal weights, 1 when one weight holds everything.
//!
//! # Sources
//!
//! - R. J. Tibshirani, R. F. Barber, E. J. Candès, A. Ramdas, "Conformal prediction under
//!   covariate shift", NeurIPS 2019 (the classifier's odds as the likelihood ratio).
//! - L. Kish, *Survey Sampling*, Wiley, 1965 (the effective sample size).
//!
//! Every definition, with its source: docs/definitions.md

use thiserror::Error;

use crate::recalibration::{minimise_by_newton, Objective};

/// scikit-learn's `C`, the inverse of the penalty's strength, `λ = 1/(C·n)`.
pub const INVERSE_PENALTY: f64 = 1.0;

/// Why the domain classifier cannot be fitted.
#[derive(Debug, Error, PartialEq)]
pub enum DomainError {
    /// No clean or no shifted rows, or no feature.
    #[error("the domain classifier needs at least one clean row, one shifted row and one feature")]
    Empty,
    /// A feature slice is not whole rows of the dimension.
    #[error("{what}: {length} values are not whole rows of {dimension} features")]
    ShapeMismatch {
        what: &'static str,
        length: usize,
        dimension: usize,
    },
    /// A feature is NaN or infinite.
    #[error("{what}: feature {feature} of row {row} is not finite")]
    NonFinite {
        what: &'static str,
        row: usize,
        feature: usize,
    },
}

/// A fitted domain classifier: the standardisation and the logistic regression on it.
#[derive(Debug, Clone, PartialEq)]
pub struct DomainClassifier {
    /// Each feature's pooled mean.
    pub means: Vec<f64>,
    /// Each feature's `1/s_j`, 0 for a feature constant over the fitting rows.
    pub inverse_deviations: Vec<f64>,
    /// `b`.
    pub intercept: f64,
    /// `β`, on the standardised features.
    pub coefficients: Vec<f64>,
    /// `ln(n_c / n_s)`.
    pub log_count_ratio: f64,
    /// Newton steps taken and whether the decrement reached the minimiser's tolerance.
    pub steps: usize,
    pub converged: bool,
}

/// Checks that `values` are whole finite rows of `dimension` features; returns the row count.
fn check_rows(what: &'static str, values: &[f64], dimension: usize) -> Result<usize, DomainError> {
    if dimension == 0 || !values.len().is_multiple_of(dimension) {
        return Err(DomainError::ShapeMismatch {
            what,
            length: values.len(),
            dimension,
        });
    }
    if let Some(index) = values.iter().position(|v| !v.is_finite()) {
        return Err(DomainError::NonFinite {
            what,
            row: index / dimension,
            feature: index % dimension,
        });
    }
    Ok(values.len() / dimension)
}

/// `log(1 + e^η)`, stable for any `η`.
fn softplus(eta: f64) -> f64 {
    eta.max(0.0) + (-eta.abs()).exp().ln_1p()
}

/// `σ(η) = 1/(1 + e^{−η})`, stable for any `η`.
fn sigmoid(eta: f64) -> f64 {
    if eta >= 0.0 {
        1.0 / (1.0 + (-eta).exp())
    } else {
        let e = eta.exp();
        e / (1.0 + e)
    }
}

/// Fits the domain classifier of `shifted` rows against `clean` rows (row-major `[n, d]`,
/// `d = dimension`) (module docs).
///
/// # Errors
/// [`DomainError::Empty`] without a row on either side or without a feature;
/// [`DomainError::ShapeMismatch`] for slices that are not whole rows;
/// [`DomainError::NonFinite`] for a NaN or infinite feature.
pub fn fit_domain_classifier(
    clean: &[f64],
    shifted: &[f64],
    dimension: usize,
) -> Result<DomainClassifier, DomainError> {
    if dimension == 0 {
        return Err(DomainError::Empty);
    }
    let n_clean = check_rows("clean rows", clean, dimension)?;
    let n_shifted = check_rows("shifted rows", shifted, dimension)?;
    if n_clean == 0 || n_shifted == 0 {
        return Err(DomainError::Empty);
    }
    let n = (n_clean + n_shifted) as f64;
    let rows = || {
        clean
            .chunks_exact(dimension)
            .chain(shifted.chunks_exact(dimension))
    };
    let mut means = vec![0.0; dimension];
    for row in rows() {
        means.iter_mut().zip(row).for_each(|(m, x)| *m += x);
    }
    means.iter_mut().for_each(|m| *m /= n);
    let mut variances = vec![0.0; dimension];
    for row in rows() {
        for ((v, x), m) in variances.iter_mut().zip(row).zip(&means) {
            *v += (x - m) * (x - m);
        }
    }
    let inverse_deviations: Vec<f64> = variances
        .iter()
        .map(|v| {
            let deviation = (v / n).sqrt();
            if deviation > 0.0 && deviation.is_finite() {
                1.0 / deviation
            } else {
                0.0
            }
        })
        .collect();
    // The design matrix: a 1 for the intercept, then the standardised features.
    let size = dimension + 1;
    let design: Vec<f64> = rows()
        .flat_map(|row| {
            std::iter::once(1.0).chain(
                row.iter()
                    .zip(&means)
                    .zip(&inverse_deviations)
                    .map(|((x, m), s)| (x - m) * s),
            )
        })
        .collect();
    let target = |i: usize| if i < n_clean { 0.0 } else { 1.0 };
    let lambda = 1.0 / (INVERSE_PENALTY * n);
    let objective = |theta: &[f64]| {
        let mut loss = 0.0;
        let mut gradient = vec![0.0; size];
        for (i, row) in design.chunks_exact(size).enumerate() {
            let eta: f64 = row.iter().zip(theta).map(|(x, t)| x * t).sum();
            loss += softplus(eta) - target(i) * eta;
            let residual = sigmoid(eta) - target(i);
            gradient
                .iter_mut()
                .zip(row)
                .for_each(|(g, x)| *g += residual * x);
        }
        gradient.iter_mut().for_each(|g| *g /= n);
        let mut penalty = 0.0;
        for (g, t) in gradient.iter_mut().zip(theta).skip(1) {
            penalty += t * t;
            *g += lambda * t;
        }
        Objective {
            nll: loss / n + 0.5 * lambda * penalty,
            gradient,
        }
    };
    let hessian = |theta: &[f64]| {
        let mut matrix = vec![0.0; size * size];
        for row in design.chunks_exact(size) {
            let eta: f64 = row.iter().zip(theta).map(|(x, t)| x * t).sum();
            let p = sigmoid(eta);
            let curvature = p * (1.0 - p);
            for (a, &xa) in row.iter().enumerate() {
                let scaled = curvature * xa;
                for (b, &xb) in row.iter().enumerate().skip(a) {
                    matrix[a * size + b] += scaled * xb;
                }
            }
        }
        for a in 0..size {
            for b in a..size {
                let value = matrix[a * size + b] / n + if a == b && a > 0 { lambda } else { 0.0 };
                matrix[a * size + b] = value;
                matrix[b * size + a] = value;
            }
        }
        matrix
    };
    let fit = minimise_by_newton(vec![0.0; size], objective, hessian, |_| {});
    Ok(DomainClassifier {
        means,
        inverse_deviations,
        intercept: fit.parameters[0],
        coefficients: fit.parameters[1..].to_vec(),
        log_count_ratio: (n_clean as f64 / n_shifted as f64).ln(),
        steps: fit.steps,
        converged: fit.converged,
    })
}

impl DomainClassifier {
    /// `η(x) = ln P(shifted | x)/P(clean | x)` of one row of features.
    pub fn log_odds(&self, features: &[f64]) -> f64 {
        self.intercept
            + features
                .iter()
                .zip(&self.means)
                .zip(&self.inverse_deviations)
                .zip(&self.coefficients)
                .map(|(((x, m), s), beta)| (x - m) * s * beta)
                .sum::<f64>()
    }

    /// `ln w(x) = η(x) + ln(n_c/n_s)` of each row of `features` (row-major, the fitted
    /// dimension).
    pub fn log_weights(&self, features: &[f64]) -> Vec<f64> {
        features
            .chunks_exact(self.means.len())
            .map(|row| self.log_odds(row) + self.log_count_ratio)
            .collect()
    }
}

/// Kish's effective sample size `(Σ w_i)² / Σ w_i²` of weights given by their logarithms
/// (computed relative to the largest, so that no weight overflows); 0 for no weights.
pub fn effective_sample_size(log_weights: &[f64]) -> f64 {
    let largest = log_weights
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    if !largest.is_finite() {
        return 0.0;
    }
    let (sum, squares) = log_weights.iter().fold((0.0, 0.0), |(sum, squares), l| {
        let w = (l - largest).exp();
        (sum + w, squares + w * w)
    });
    sum * sum / squares
}

#[cfg(test)]
#[path = "domain_classifier_tests.rs"]
mod tests;
