//! Adaptive conformal inference: a stream of examples whose distribution may drift, and a
//! miscoverage level `α_t` that is corrected after each one.
//!
//! # Method (Gibbs & Candès 2021)
//!
//! The calibration scores `s_1, …, s_n` stay fixed. At step `t` the set is split conformal's at
//! level `α_t`, `C_t = { y : s(x_t, y) ≤ q̂(α_t) }` with `q̂(a) = s_(k)`,
//! `k = ⌈(n + 1)(1 − a)⌉` (computed in `f64`, as `α_t` is any real number): `k > n` (so
//! `a ≤ 1/(n + 1)`, including `a ≤ 0`) gives `q̂ = +∞`, every label; `k < 1` (`a ≥ 1`) gives
//! `q̂ = −∞`, the empty set. After the label is seen, with `err_t = 1[y_t ∉ C_t]`,
//!
//! ```text
//! α_{t+1} = α_t + γ·(α − err_t),   α_1 = α.
//! ```
//!
//! A miss lowers `α_t` (larger sets), a hit raises it. Whatever the sequence, even chosen by an
//! adversary, the long-run miscoverage obeys (their Proposition 4.1)
//!
//! ```text
//! | (1/T) Σ_{t ≤ T} err_t − α | ≤ (max(α_1, 1 − α_1) + γ) / (γ·T),
//! ```
//!
//! since `α_t` stays in `[−γ, 1 + γ]`. The price is sets that grow when the data move.
//!
//! # Source
//!
//! - I. Gibbs, E. Candès, "Adaptive conformal inference under distribution shift",
//!   NeurIPS 2021.
//!
//! Every definition, with its source: docs/definitions.md

use serde::Serialize;

use super::{check_labels, check_matrix, check_num_classes, check_scores_finite, ConformalError};

/// One step of the stream.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct AdaptiveStep {
    /// `α_t`, the level the set was built at.
    pub alpha: f64,
    /// Whether the set held the label.
    pub covered: bool,
    /// Labels in the set.
    pub set_size: usize,
    /// Whether fixed split conformal's set, at level α throughout, held the label.
    pub fixed_covered: bool,
    /// Labels in the fixed set.
    pub fixed_set_size: usize,
}

/// Adaptive conformal inference over a stream, beside fixed split conformal on the same stream.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AdaptiveRun {
    pub gamma: f64,
    pub steps: Vec<AdaptiveStep>,
    /// Share of the stream covered by the adaptive sets.
    pub coverage: f64,
    /// Mean size of the adaptive sets.
    pub average_set_size: f64,
    /// The deterministic bound on `|miscoverage − α|` at this length.
    pub miscoverage_bound: f64,
    /// Share of the stream covered at the fixed level α.
    pub fixed_coverage: f64,
    /// Mean size of the fixed sets.
    pub fixed_average_set_size: f64,
}

/// The calibration scores, sorted, and `q̂` at any level.
struct SortedScores(Vec<f64>);

impl SortedScores {
    fn threshold(&self, level: f64) -> f64 {
        let n = self.0.len();
        let k = ((n + 1) as f64 * (1.0 - level)).ceil();
        if k > n as f64 {
            f64::INFINITY
        } else if k < 1.0 {
            f64::NEG_INFINITY
        } else {
            self.0[k as usize - 1]
        }
    }
}

/// Runs adaptive conformal inference with step `gamma` at target `alpha` over the stream
/// (`stream_scores`: every label's score, row-major `[T, K]`; `stream_labels`: the labels, in
/// the order they arrive), calibrated on `calibration_scores`; and fixed split conformal at
/// `alpha` on the same stream.
///
/// # Errors
/// [`ConformalError::InvalidAlpha`] unless `0 < alpha < 1`; [`ConformalError::InvalidParameter`]
/// (`"gamma"`) unless `gamma` is finite and positive, or for `num_classes = 0`;
/// [`ConformalError::ShapeMismatch`], [`ConformalError::LabelOutOfRange`],
/// [`ConformalError::NonFiniteScore`]; [`ConformalError::Empty`] for no stream.
pub fn adaptive_conformal(
    calibration_scores: &[f64],
    stream_scores: &[f64],
    stream_labels: &[u32],
    num_classes: usize,
    alpha: f64,
    gamma: f64,
) -> Result<AdaptiveRun, ConformalError> {
    super::alpha_numerator(alpha)?;
    if !(gamma.is_finite() && gamma > 0.0) {
        return Err(ConformalError::InvalidParameter {
            name: "gamma",
            value: gamma,
        });
    }
    check_num_classes(num_classes)?;
    check_matrix(
        "stream scores (stream labels × num_classes)",
        stream_scores.len(),
        stream_labels.len(),
        num_classes,
    )?;
    check_labels(stream_labels, num_classes)?;
    check_scores_finite(calibration_scores)?;
    check_scores_finite(stream_scores)?;
    if stream_labels.is_empty() {
        return Err(ConformalError::Empty);
    }
    let mut sorted = calibration_scores.to_vec();
    sorted.sort_by(f64::total_cmp);
    let sorted = SortedScores(sorted);
    let fixed_threshold = sorted.threshold(alpha);
    let mut level = alpha;
    let mut steps = Vec::with_capacity(stream_labels.len());
    for (row, &label) in stream_scores.chunks_exact(num_classes).zip(stream_labels) {
        let threshold = sorted.threshold(level);
        let covered = row[label as usize] <= threshold;
        steps.push(AdaptiveStep {
            alpha: level,
            covered,
            set_size: row.iter().filter(|&&s| s <= threshold).count(),
            fixed_covered: row[label as usize] <= fixed_threshold,
            fixed_set_size: row.iter().filter(|&&s| s <= fixed_threshold).count(),
        });
        level += gamma * (alpha - if covered { 0.0 } else { 1.0 });
    }
    let length = steps.len() as f64;
    let share = |count: usize| count as f64 / length;
    Ok(AdaptiveRun {
        gamma,
        coverage: share(steps.iter().filter(|s| s.covered).count()),
        average_set_size: share(steps.iter().map(|s| s.set_size).sum()),
        miscoverage_bound: (alpha.max(1.0 - alpha) + gamma) / (gamma * length),
        fixed_coverage: share(steps.iter().filter(|s| s.fixed_covered).count()),
        fixed_average_set_size: share(steps.iter().map(|s| s.fixed_set_size).sum()),
        steps,
    })
}

#[cfg(test)]
#[path = "adaptive_tests.rs"]
mod tests;
