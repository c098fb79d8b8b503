//! The inductive Venn–Abers predictor of the top-label confidence: two isotonic regressions
//! per confidence, whose values bracket the probability that the prediction is right.
//!
//! # What it computes
//! Vovk & Petej, "Venn-Abers Predictors", UAI 2014; the inductive version of Vovk, Petej &
//! Fedorova, "Large-scale probabilistic predictors with and without guarantees of validity",
//! NeurIPS 2015. With the calibration half's top-label confidences `c_i` and correctness
//! `y_i ∈ {0, 1}`, for a new confidence `s`:
//!
//! * `p0(s)` is the isotonic regression (pool-adjacent-violators, equal confidences pooled
//!   first) of the outcomes on the confidences of the calibration rows **plus** the row
//!   `(s, 0)`, read at `s`; `p1(s)` the same with `(s, 1)`. So `p0 ≤ p1`, and one of the two is
//!   the probability of a calibrated predictor that saw this row's outcome (Venn's property):
//!   their distance is how much one more row can move the fit there.
//! * The single probability is their log-loss merge `p = p1 / (1 − p0 + p1)` (Vovk et al.,
//!   2015), in `[p0, p1]`.
//!
//! Between two neighbouring calibration confidences `p0` and `p1` do not change, so the merged
//! probability is a step function of `s` with a step on each calibration confidence (its own
//! value there) and on the next larger `f64` (the value of the gap after it):
//! [`VennAbers::merged`] computes it once, `2m + 1` isotonic fits of `m + 1` points for `m`
//! distinct calibration confidences. The venn-abers library (1.5) computes `p0` and `p1` by the
//! fast algorithm of Vovk et al.; for a new confidence equal to a calibration one it looks `p0`
//! and `p1` up on opposite sides of it, where this module adds the row at that confidence.
//! Definitions: docs/definitions.md.

use serde::Serialize;

use super::{distinct_points, pool_adjacent_violators, StepFunction};
use crate::calibration::CalibrationError;

/// The calibration rows, as isotonic regression sees them.
#[derive(Clone, Debug, PartialEq)]
pub struct VennAbers {
    /// `(confidence, rows, right)` per distinct confidence, ascending.
    points: Vec<(f64, f64, f64)>,
}

/// The two probabilities of one confidence.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct VennAbersInterval {
    /// The isotonic fit at `s` with the row `(s, wrong)` added.
    pub p0: f64,
    /// The isotonic fit at `s` with the row `(s, right)` added.
    pub p1: f64,
}

impl VennAbersInterval {
    /// The log-loss merge `p1 / (1 − p0 + p1)`.
    pub fn merged(&self) -> f64 {
        self.p1 / (1.0 - self.p0 + self.p1)
    }
}

/// Keeps the calibration half's top-label confidences and correctness.
///
/// # Errors
/// The errors of checking the confidences ([`CalibrationError::EmptyInput`],
/// [`CalibrationError::ConfidenceCountMismatch`], [`CalibrationError::InvalidConfidence`]).
pub fn fit_venn_abers(confidence: &[f64], correct: &[bool]) -> Result<VennAbers, CalibrationError> {
    Ok(VennAbers {
        points: distinct_points(confidence, correct)?,
    })
}

impl VennAbers {
    /// `p0(s)` and `p1(s)` for a confidence `s`.
    pub fn interval(&self, s: f64) -> VennAbersInterval {
        VennAbersInterval {
            p0: self.isotonic_with(s, 0.0),
            p1: self.isotonic_with(s, 1.0),
        }
    }

    /// The isotonic regression of the calibration rows and the row `(s, outcome)`, at `s`.
    fn isotonic_with(&self, s: f64, outcome: f64) -> f64 {
        let position = self.points.partition_point(|point| point.0 < s);
        let mut points = self.points.clone();
        match points.get_mut(position) {
            Some(point) if point.0 == s => {
                point.1 += 1.0;
                point.2 += outcome;
            }
            _ => points.insert(position, (s, 1.0, outcome)),
        }
        pool_adjacent_violators(points).at(s)
    }

    /// The merged probability as a step function of the confidence: below the smallest
    /// calibration confidence, on each one, and in each gap after one.
    pub fn merged(&self) -> StepFunction {
        let first = self.points[0].0;
        let mut starts = vec![f64::NEG_INFINITY];
        let mut values = vec![self.interval(first.next_down()).merged()];
        for (index, point) in self.points.iter().enumerate() {
            let x = point.0;
            starts.push(x);
            values.push(self.interval(x).merged());
            let gap = x.next_up();
            if self.points.get(index + 1).is_none_or(|next| gap < next.0) {
                starts.push(gap);
                values.push(self.interval(gap).merged());
            }
        }
        StepFunction::new(starts, values)
    }
}

#[cfg(test)]
#[path = "venn_abers_tests.rs"]
mod tests;
