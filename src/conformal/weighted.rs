//! Weighted split conformal prediction under covariate shift: the calibration scores reweighted
//! by the likelihood ratio of the test inputs' distribution to the calibration inputs'.
//!
//! # Method (Tibshirani, Barber, Candès & Ramdas 2019)
//!
//! When the inputs of the test data follow another law than those of the calibration data, but
//! the labels given the inputs do not change (covariate shift), and `w(x) = dP_test/dP_cal(x)`
//! is known, the threshold for a test input `x` is the `1 − α` quantile of the weighted
//! distribution of the calibration scores with the test point's own mass at `+∞`:
//!
//! ```text
//! p_i(x) = w(X_i) / (Σ_j w(X_j) + w(x)),   p_{n+1}(x) = w(x) / (Σ_j w(X_j) + w(x)),
//! q̂(x) = inf{ s : Σ_{i : s_i ≤ s} p_i(x) ≥ 1 − α }   (+∞ when the calibration mass never
//!        reaches 1 − α),
//! ```
//!
//! and `C(x) = { y : s(x, y) ≤ q̂(x) }` covers with probability `≥ 1 − α` under the test law.
//! With equal weights this is split conformal's `s_(⌈(n + 1)(1 − α)⌉)`. The comparison with
//! `(1 − α)(W + w(x))` is done in `f64`, so where that product is an integer the rank may
//! differ from the exact integer rule by one. In practice `w` is estimated (a classifier of
//! calibration against test inputs gives `w = P(test | x)/P(calibration | x)` up to the ratio
//! of their counts); large weights on a few calibration points make `q̂` jump, and a test
//! point far outside the calibration inputs gets `+∞`.
//!
//! # Source
//!
//! - R. J. Tibshirani, R. F. Barber, E. J. Candès, A. Ramdas, "Conformal prediction under
//!   covariate shift", NeurIPS 2019.
//!
//! Every definition, with its source: docs/definitions.md

use super::{check_length, check_scores_finite, ConformalError};

/// Calibration scores sorted with the running sum of their weights: `q̂(x)` for any test
/// weight in `O(log n)`.
#[derive(Clone, Debug, PartialEq)]
pub struct WeightedCalibration {
    scores: Vec<f64>,
    /// `cumulative[i]`: the weight of the `i + 1` smallest scores.
    cumulative: Vec<f64>,
}

/// Checks a weight: finite and non-negative.
fn check_weight(name: &'static str, weight: f64) -> Result<(), ConformalError> {
    if weight.is_finite() && weight >= 0.0 {
        Ok(())
    } else {
        Err(ConformalError::InvalidParameter {
            name,
            value: weight,
        })
    }
}

impl WeightedCalibration {
    /// The calibration part: scores and the likelihood-ratio weight of each one's input.
    ///
    /// # Errors
    /// [`ConformalError::ShapeMismatch`] unless one weight per score;
    /// [`ConformalError::NonFiniteScore`]; [`ConformalError::InvalidParameter`] (`"weight"`)
    /// for a negative or non-finite weight, or (`"weights"`) when they sum to 0;
    /// [`ConformalError::Empty`] for no scores.
    pub fn new(scores: &[f64], weights: &[f64]) -> Result<Self, ConformalError> {
        check_length("weights (one per score)", scores.len(), weights.len())?;
        check_scores_finite(scores)?;
        for &weight in weights {
            check_weight("weight", weight)?;
        }
        if scores.is_empty() {
            return Err(ConformalError::Empty);
        }
        let mut pairs: Vec<(f64, f64)> = scores
            .iter()
            .copied()
            .zip(weights.iter().copied())
            .collect();
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut total = 0.0;
        let cumulative: Vec<f64> = pairs
            .iter()
            .map(|&(_, weight)| {
                total += weight;
                total
            })
            .collect();
        if total <= 0.0 {
            return Err(ConformalError::InvalidParameter {
                name: "weights",
                value: total,
            });
        }
        Ok(Self {
            scores: pairs.iter().map(|&(score, _)| score).collect(),
            cumulative,
        })
    }

    /// `q̂(x)` for a test input of weight `test_weight` at level `alpha` (module docs).
    ///
    /// # Errors
    /// [`ConformalError::InvalidAlpha`] unless `0 < alpha < 1`;
    /// [`ConformalError::InvalidParameter`] (`"test weight"`) for a negative or non-finite
    /// weight.
    pub fn threshold(&self, test_weight: f64, alpha: f64) -> Result<f64, ConformalError> {
        super::alpha_numerator(alpha)?;
        check_weight("test weight", test_weight)?;
        let total = self.cumulative.last().copied().unwrap_or(0.0);
        let target = (1.0 - alpha) * (total + test_weight);
        let index = self.cumulative.partition_point(|&mass| mass < target);
        Ok(self.scores.get(index).copied().unwrap_or(f64::INFINITY))
    }
}

#[cfg(test)]
#[path = "weighted_tests.rs"]
mod tests;
