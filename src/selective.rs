//! Selective classification: answering only when confident enough, the risk–coverage curve,
//! its area (AURC), and a confidence threshold whose risk conformal risk control guarantees.
//!
//! # Risk–coverage curve and AURC
//!
//! Examples are ranked by confidence (the top-label probability at the temperature in use),
//! highest first. Keeping those with confidence `≥ c` keeps a share `coverage(c)` of them, and
//! the **selective risk** is the error rate among those kept. The curve has one point per
//! distinct confidence (tied examples are kept or dropped together). AURC (Geifman et al.
//! 2019) averages the selective risk over the examples: each example counts the risk of the
//! point at which it is first kept,
//!
//! ```text
//! AURC = (1/n) Σ_i risk(c_i),   risk(c) = #{j : c_j ≥ c, wrong_j} / #{j : c_j ≥ c};
//! ```
//!
//! without ties this is the mean of the risk after keeping 1, 2, …, n examples.
//! Temperature scaling changes no prediction, so which examples are wrong does not move; with
//! two classes the top probability is increasing in `|z_1 − z_2|/T` at every `T`, so the
//! ranking and the curve do not move either. With more classes two examples whose logits
//! differ in shape can swap places (a narrow lead over one rival against a wide lead over
//! many), so the curve can move, a little.
//!
//! # Conformal risk control
//!
//! The loss of keeping example `i` at threshold `λ` is `L_i(λ) = 1[wrong_i and c_i > λ]`: a
//! wrong answer given, an abstention costing nothing. It is bounded by 1 and nonincreasing and
//! right-continuous in `λ`. Conformal risk control (Angelopoulos et al. 2022) takes, over `n`
//! calibration examples,
//!
//! ```text
//! λ̂ = inf{ λ : (n/(n + 1))·R̂_n(λ) + 1/(n + 1) ≤ α },   R̂_n(λ) = (1/n) Σ_i L_i(λ),
//! ```
//!
//! and guarantees `E[L_{n+1}(λ̂)] ≤ α` for an exchangeable new example: at most a share `α` of
//! the examples get a wrong answer; the rest get a right one or none. The condition reads
//! `#{i : wrong_i, c_i > λ} ≤ ⌊α(n + 1)⌋ − 1 =: m`, so `λ̂` is the `(m + 1)`-th largest
//! confidence among the wrong calibration examples (`−∞`, keep everything, when there are at
//! most `m` of them; `+∞`, keep nothing, when `m < 0`). `⌊α(n + 1)⌋ = n + 1 − ⌈(n + 1)(1 − α)⌉`
//! is computed exactly with [`crate::conformal::quantile_rank`]. The guarantee is on the
//! share of answered-and-wrong examples, not on the error rate among the answered ones, which
//! is larger.
//!
//! # Sources
//!
//! - Y. Geifman, R. El-Yaniv, "Selective classification for deep neural networks",
//!   NeurIPS 2017 (the risk–coverage trade-off).
//! - Y. Geifman, G. Uziel, R. El-Yaniv, "Bias-reduced uncertainty estimation for deep neural
//!   classifiers", ICLR 2019 (AURC).
//! - A. N. Angelopoulos, S. Bates, A. Fisch, L. Lei, T. Schuster, "Conformal risk control",
//!   ICLR 2024 (arXiv:2208.02814, 2022).
//!
//! Every definition, with its source: docs/definitions.md

use serde::Serialize;
use thiserror::Error;

use crate::conformal::{experiment_split, quantile_rank, ConformalError};

/// Why a selective classification computation was refused.
#[derive(Debug, Error, PartialEq)]
pub enum SelectiveError {
    /// The confidences and the correctness flags differ in length.
    #[error("{confidences} confidences but {flags} correctness flags")]
    LengthMismatch { confidences: usize, flags: usize },
    /// No examples.
    #[error("no examples")]
    Empty,
    /// A confidence is NaN.
    #[error("confidence {index} is NaN")]
    NanConfidence { index: usize },
    /// The risk level is not in (0, 1) (read, as α, to 9 decimal places).
    #[error("risk level: {0}")]
    InvalidRiskLevel(ConformalError),
    /// The experiment's pool cannot be split as asked.
    #[error("risk control experiment: {0}")]
    Experiment(ConformalError),
}

fn check(confidence: &[f64], correct: &[bool]) -> Result<(), SelectiveError> {
    if confidence.len() != correct.len() {
        return Err(SelectiveError::LengthMismatch {
            confidences: confidence.len(),
            flags: correct.len(),
        });
    }
    if confidence.is_empty() {
        return Err(SelectiveError::Empty);
    }
    match confidence.iter().position(|c| c.is_nan()) {
        Some(index) => Err(SelectiveError::NanConfidence { index }),
        None => Ok(()),
    }
}

/// One point of the risk–coverage curve: keeping the examples with confidence `≥ confidence`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RiskCoveragePoint {
    pub confidence: f64,
    /// Share of the examples kept.
    pub coverage: f64,
    /// Error rate among them.
    pub risk: f64,
    /// How many are kept.
    pub kept: usize,
}

/// The risk–coverage curve, one point per distinct confidence, coverage increasing.
///
/// # Errors
/// [`SelectiveError::LengthMismatch`], [`SelectiveError::Empty`],
/// [`SelectiveError::NanConfidence`].
pub fn risk_coverage_curve(
    confidence: &[f64],
    correct: &[bool],
) -> Result<Vec<RiskCoveragePoint>, SelectiveError> {
    check(confidence, correct)?;
    let mut order: Vec<usize> = (0..confidence.len()).collect();
    order.sort_by(|&a, &b| confidence[b].total_cmp(&confidence[a]));
    let n = confidence.len() as f64;
    let mut curve: Vec<RiskCoveragePoint> = Vec::new();
    let mut errors = 0_usize;
    for (position, &index) in order.iter().enumerate() {
        errors += usize::from(!correct[index]);
        let kept = position + 1;
        let last_of_its_value = order
            .get(kept)
            .is_none_or(|&next| confidence[next] != confidence[index]);
        if last_of_its_value {
            curve.push(RiskCoveragePoint {
                confidence: confidence[index],
                coverage: kept as f64 / n,
                risk: errors as f64 / kept as f64,
                kept,
            });
        }
    }
    Ok(curve)
}

/// The area under the risk–coverage curve (module docs): each example counts the selective
/// risk of the point at which it is first kept.
///
/// # Errors
/// As [`risk_coverage_curve`].
pub fn aurc(confidence: &[f64], correct: &[bool]) -> Result<f64, SelectiveError> {
    let curve = risk_coverage_curve(confidence, correct)?;
    let mut previous_kept = 0;
    let mut total = 0.0;
    for point in &curve {
        total += (point.kept - previous_kept) as f64 * point.risk;
        previous_kept = point.kept;
    }
    Ok(total / confidence.len() as f64)
}

/// The conformal risk control threshold `λ̂` at risk level `α` (module docs): keep an example
/// when its confidence is `> λ̂`. `−∞` keeps everything, `+∞` nothing (when `α(n + 1) < 1`).
///
/// # Errors
/// As [`risk_coverage_curve`]; [`SelectiveError::InvalidRiskLevel`] unless `α ∈ (0, 1)`.
pub fn risk_control_threshold(
    confidence: &[f64],
    correct: &[bool],
    risk_level: f64,
) -> Result<f64, SelectiveError> {
    check(confidence, correct)?;
    let n = confidence.len();
    let k = quantile_rank(n, risk_level).map_err(SelectiveError::InvalidRiskLevel)?;
    // ⌊α(n + 1)⌋ − 1 = n − k wrong answers may be kept; none when k > n.
    let Some(allowed) = n.checked_sub(k) else {
        return Ok(f64::INFINITY);
    };
    let mut wrong: Vec<f64> = confidence
        .iter()
        .zip(correct)
        .filter(|&(_, &right)| !right)
        .map(|(&c, _)| c)
        .collect();
    if wrong.len() <= allowed {
        return Ok(f64::NEG_INFINITY);
    }
    wrong.sort_by(|a, b| b.total_cmp(a));
    Ok(wrong[allowed])
}

/// Selective classification of a test part with the threshold of a calibration part.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SelectiveReport {
    /// `α`, the share of wrong answers allowed.
    pub risk_level: f64,
    /// `λ̂`: an example is answered when its confidence is above it (`−∞`: every example).
    pub threshold: f64,
    /// Share of the test examples answered.
    pub coverage: f64,
    /// Error rate among the answered test examples (`None`: none answered).
    pub selective_risk: Option<f64>,
    /// Share of the test examples answered wrongly, what the guarantee bounds by `α`.
    pub answered_error_rate: f64,
    /// AURC of the test part.
    pub aurc: f64,
}

/// [`risk_control_threshold`] on the calibration part, applied to the test part, with the test
/// part's AURC.
///
/// # Errors
/// As [`risk_control_threshold`] and [`aurc`].
pub fn selective_report(
    calibration: (&[f64], &[bool]),
    test: (&[f64], &[bool]),
    risk_level: f64,
) -> Result<SelectiveReport, SelectiveError> {
    let threshold = risk_control_threshold(calibration.0, calibration.1, risk_level)?;
    let aurc = aurc(test.0, test.1)?;
    let (mut answered, mut wrong) = (0_usize, 0_usize);
    for (&c, &right) in test.0.iter().zip(test.1) {
        if c > threshold {
            answered += 1;
            wrong += usize::from(!right);
        }
    }
    let n = test.0.len() as f64;
    Ok(SelectiveReport {
        risk_level,
        threshold,
        coverage: answered as f64 / n,
        selective_risk: (answered > 0).then(|| wrong as f64 / answered as f64),
        answered_error_rate: wrong as f64 / n,
        aurc,
    })
}

/// Conformal risk control over the coverage experiment's random splits of one pool: split `r`
/// is [`experiment_split`]`(n, n_calibration, seed, r)`, the coverage experiment's split `r` of
/// a pool in the same order; the threshold is fitted on its first `n_calibration` examples and
/// the share of the rest answered wrongly is returned, one per split. Conformal risk control
/// bounds their expectation by `α` (the examples of a random split are exchangeable), not each
/// of them.
///
/// # Errors
/// As [`risk_control_threshold`]; [`SelectiveError::Experiment`] unless
/// `1 ≤ n_calibration < n`.
pub fn risk_control_experiment(
    confidence: &[f64],
    correct: &[bool],
    n_calibration: usize,
    risk_level: f64,
    repetitions: usize,
    seed: u64,
) -> Result<Vec<f64>, SelectiveError> {
    check(confidence, correct)?;
    let n = confidence.len();
    let mut calibration_confidence = Vec::with_capacity(n_calibration);
    let mut calibration_correct = Vec::with_capacity(n_calibration);
    (0..repetitions)
        .map(|repetition| {
            let order = experiment_split(n, n_calibration, seed, repetition)
                .map_err(SelectiveError::Experiment)?;
            let (calibration, test) = order.split_at(n_calibration);
            calibration_confidence.clear();
            calibration_correct.clear();
            calibration_confidence.extend(calibration.iter().map(|&i| confidence[i]));
            calibration_correct.extend(calibration.iter().map(|&i| correct[i]));
            let threshold =
                risk_control_threshold(&calibration_confidence, &calibration_correct, risk_level)?;
            let wrong = test
                .iter()
                .filter(|&&i| confidence[i] > threshold && !correct[i])
                .count();
            Ok(wrong as f64 / test.len() as f64)
        })
        .collect()
}

#[cfg(test)]
#[path = "selective_tests.rs"]
mod tests;
