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
//! [`VennAbers::merged`] computes it once, `2m + 1` intervals for `m` distinct calibration
//! confidences.
//!
//! # How an interval is computed
//! Pool-adjacent-violators gives the same fit whatever order it pools violators in, and a
//! prefix's pooled blocks stay pooled when rows are added after it (a suffix's, before it). So
//! the fit with the row `(s, y)` added is the PAV blocks of the calibration rows below `s`,
//! the row `(s, y)` (with the rows at `s`), and the PAV blocks of the rows above `s`, the
//! middle block pooled with its neighbours while they violate the order. [`fit_venn_abers`]
//! keeps the blocks of every prefix and every suffix as persistent stacks (`O(m)` blocks in
//! all, each pointing at the next block away from the middle), so an interval costs only the
//! poolings of its own row. The sums of rows and of right rows are integers, exact in `f64`:
//! the pooling order cannot change a bit of the result. The venn-abers library (1.5) computes
//! `p0` and `p1` by the fast algorithm of Vovk et al.; for a new confidence equal to a
//! calibration one it looks `p0` and `p1` up on opposite sides of it, where this module adds
//! the row at that confidence.
//! Definitions: docs/definitions.md.

use serde::Serialize;

use super::{distinct_points, StepFunction};
use crate::calibration::CalibrationError;

/// The calibration rows, as isotonic regression sees them, with the pooled blocks of each
/// prefix and suffix of them.
#[derive(Clone, Debug, PartialEq)]
pub struct VennAbers {
    /// `(confidence, rows, right)` per distinct confidence, ascending.
    points: Vec<(f64, f64, f64)>,
    /// The blocks of every prefix's and suffix's PAV fit, each pointing at its neighbour away
    /// from the middle.
    blocks: Vec<Block>,
    /// `prefix[i]`: the last block of the PAV fit of `points[..i]`.
    prefix: Vec<Option<usize>>,
    /// `suffix[j]`: the first block of the PAV fit of `points[j..]`.
    suffix: Vec<Option<usize>>,
}

/// A pooled block: its rows and right rows, and the next block outwards.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Block {
    rows: f64,
    right: f64,
    next: Option<usize>,
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

/// Keeps the calibration half's top-label confidences and correctness, with the PAV blocks of
/// each prefix and suffix of them.
///
/// # Errors
/// The errors of checking the confidences ([`CalibrationError::EmptyInput`],
/// [`CalibrationError::ConfidenceCountMismatch`], [`CalibrationError::InvalidConfidence`]).
pub fn fit_venn_abers(confidence: &[f64], correct: &[bool]) -> Result<VennAbers, CalibrationError> {
    let points = distinct_points(confidence, correct)?;
    let m = points.len();
    let mut blocks: Vec<Block> = Vec::with_capacity(2 * m);
    let mut pooled = |(rows, right): (f64, f64), mut outward: Option<usize>, left: bool| {
        let (mut rows, mut right) = (rows, right);
        while let Some(block) = outward.map(|index| blocks[index]) {
            // A block to the left pools while its mean is at least this one's; to the right,
            // while its mean is at most this one's (no division: weights are positive).
            let violates = if left {
                block.right * rows >= right * block.rows
            } else {
                right * block.rows >= block.right * rows
            };
            if !violates {
                break;
            }
            rows += block.rows;
            right += block.right;
            outward = block.next;
        }
        blocks.push(Block {
            rows,
            right,
            next: outward,
        });
        Some(blocks.len() - 1)
    };
    let mut prefix = vec![None; m + 1];
    for (i, point) in points.iter().enumerate() {
        prefix[i + 1] = pooled((point.1, point.2), prefix[i], true);
    }
    let mut suffix = vec![None; m + 1];
    for (j, point) in points.iter().enumerate().rev() {
        suffix[j] = pooled((point.1, point.2), suffix[j + 1], false);
    }
    Ok(VennAbers {
        points,
        blocks,
        prefix,
        suffix,
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

    /// The isotonic regression of the calibration rows and the row `(s, outcome)`, at `s`: the
    /// row (with the rows at `s`) pooled with the blocks of the rows below and above `s` while
    /// they violate the order.
    fn isotonic_with(&self, s: f64, outcome: f64) -> f64 {
        let position = self.points.partition_point(|point| point.0 < s);
        let (mut rows, mut right) = (1.0, outcome);
        let after = match self.points.get(position) {
            Some(point) if point.0 == s => {
                rows += point.1;
                right += point.2;
                position + 1
            }
            _ => position,
        };
        let (mut below, mut above) = (self.prefix[position], self.suffix[after]);
        loop {
            if let Some(block) = below.map(|index| self.blocks[index]) {
                if block.right * rows >= right * block.rows {
                    rows += block.rows;
                    right += block.right;
                    below = block.next;
                    continue;
                }
            }
            if let Some(block) = above.map(|index| self.blocks[index]) {
                if right * block.rows >= block.right * rows {
                    rows += block.rows;
                    right += block.right;
                    above = block.next;
                    continue;
                }
            }
            return right / rows;
        }
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
