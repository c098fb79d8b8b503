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
    /// The logarithm every weight was divided by ([`WeightedCalibration::from_log_weights`]),
    /// 0 for weights given as they are.
    log_scale: f64,
}

/// What the weighted sets of a labelled test part measure.
#[derive(Debug, Clone, PartialEq)]
pub struct WeightedSets {
    /// Test rows whose set holds their label, and their share.
    pub covered: usize,
    pub coverage: f64,
    pub average_set_size: f64,
    /// The share of test rows whose `q̂(x)` is `+∞` (their set holds every label).
    pub infinite_share: f64,
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
            log_scale: 0.0,
        })
    }

    /// The calibration part with weights given by their logarithms, as an estimated likelihood
    /// ratio gives them: each weight is divided by the largest, `exp(l_i − max_j l_j)`, which
    /// leaves every `q̂(x)` unchanged (test weights are divided alike) and no weight overflows.
    ///
    /// # Errors
    /// [`ConformalError::InvalidParameter`] (`"log weight"`) for a NaN or infinite logarithm,
    /// and those of [`WeightedCalibration::new`].
    pub fn from_log_weights(scores: &[f64], log_weights: &[f64]) -> Result<Self, ConformalError> {
        if let Some(&bad) = log_weights.iter().find(|l| !l.is_finite()) {
            return Err(ConformalError::InvalidParameter {
                name: "log weight",
                value: bad,
            });
        }
        let largest = log_weights
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        let weights: Vec<f64> = log_weights.iter().map(|l| (l - largest).exp()).collect();
        let mut calibration = Self::new(scores, &weights)?;
        calibration.log_scale = if largest.is_finite() { largest } else { 0.0 };
        Ok(calibration)
    }

    /// `q̂(x)` for a test input whose weight has logarithm `log_weight`, on the scale of the
    /// calibration weights' logarithms: `+∞` where its weight dwarfs theirs past `f64`'s range.
    ///
    /// # Errors
    /// As [`WeightedCalibration::threshold`]; a NaN logarithm is an invalid test weight.
    pub fn threshold_at_log_weight(
        &self,
        log_weight: f64,
        alpha: f64,
    ) -> Result<f64, ConformalError> {
        let weight = (log_weight - self.log_scale).exp();
        if weight == f64::INFINITY {
            super::alpha_numerator(alpha)?;
            return Ok(f64::INFINITY);
        }
        self.threshold(weight, alpha)
    }

    /// The sets `{y : s(x, y) ≤ q̂(x)}` of a labelled test part: `scores` holds every label's
    /// score of each row (`[m, K]`, row-major), `log_weights` each row's weight's logarithm
    /// (as in [`WeightedCalibration::threshold_at_log_weight`]).
    ///
    /// # Errors
    /// [`ConformalError::ShapeMismatch`] unless `m` labels and `m` weights;
    /// [`ConformalError::LabelOutOfRange`]; [`ConformalError::NonFiniteScore`]; and those of
    /// [`WeightedCalibration::threshold`].
    pub fn evaluate(
        &self,
        scores: &[f64],
        log_weights: &[f64],
        labels: &[u32],
        num_classes: usize,
        alpha: f64,
    ) -> Result<WeightedSets, ConformalError> {
        check_length(
            "test scores (rows × num_classes)",
            labels.len() * num_classes,
            scores.len(),
        )?;
        check_length(
            "test weights (one per row)",
            labels.len(),
            log_weights.len(),
        )?;
        check_scores_finite(scores)?;
        let (mut covered, mut members, mut infinite) = (0_usize, 0_usize, 0_usize);
        for (row, ((row_scores, &log_weight), &label)) in scores
            .chunks_exact(num_classes.max(1))
            .zip(log_weights)
            .zip(labels)
            .enumerate()
        {
            if label as usize >= num_classes {
                return Err(ConformalError::LabelOutOfRange {
                    row,
                    label,
                    num_classes,
                });
            }
            let threshold = self.threshold_at_log_weight(log_weight, alpha)?;
            infinite += usize::from(threshold == f64::INFINITY);
            members += row_scores.iter().filter(|&&s| s <= threshold).count();
            covered += usize::from(row_scores[label as usize] <= threshold);
        }
        let m = labels.len().max(1) as f64;
        Ok(WeightedSets {
            covered,
            coverage: covered as f64 / m,
            average_set_size: members as f64 / m,
            infinite_share: infinite as f64 / m,
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
