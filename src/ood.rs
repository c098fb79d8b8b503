//! Out-of-distribution (OOD) detection from a classifier's logits, and how well a score
//! separates in-distribution (ID) inputs from OOD inputs.
//!
//! # Scores (higher = more in-distribution)
//! * Maximum softmax probability (Hendrycks & Gimpel, ICLR 2017): `MSP = max_k softmax(z/T)_k`.
//! * Max-logit (Hendrycks et al., "Scaling OOD detection", ICML 2022): `max_k z_k`.
//! * Energy score (Liu et al., "Energy-based OOD detection", NeurIPS 2020), the negative
//!   energy: `T·log Σ_k exp(z_k/T)`, computed as `T·(m + log Σ_k exp(z_k/T − m))` with
//!   `m = max_k z_k/T` so that logits of ±1e4 stay finite.
//!
//! # Detection metrics
//! * **FPR95**: the threshold `t` is the largest value such that at least 95% of the ID scores
//!   are `≥ t`, namely the `⌈0.95·n_in⌉`-th largest ID score (computed in integers). FPR95 is
//!   the fraction of OOD scores `≥ t`. With ties, more than 95% of ID scores may lie at or above
//!   `t`; no interpolation between scores is done.
//! * **AUROC** with ID as the positive class: the Mann–Whitney statistic
//!   `U / (n_in·n_out)`, where `U` counts pairs with the ID score above the OOD score and ties
//!   count half. It is computed in `O(n log n)` by sorting all scores once and walking groups
//!   of equal scores, which equals the midrank formula `U = R_in − n_in(n_in + 1)/2`; the count
//!   is exact (integers) before the final division.
//! * **AUPR-In / AUPR-Out**: average precision with ID, respectively OOD, as the positive
//!   class (for AUPR-Out the scores are negated, so lower = more OOD). Average precision is the
//!   step-wise sum `AP = Σ_t (R_t − R_{t−1})·P_t` over the distinct score values `t` in
//!   decreasing order, where `P_t` and `R_t` are the precision and recall of "positive when
//!   score ≥ t"; equal scores form one threshold. This is scikit-learn's
//!   `average_precision_score`, with no interpolation.
//!
//! Every definition, default and tie rule, with its source: docs/definitions.md

use std::fmt;

use serde::Serialize;
use thiserror::Error;

use crate::calibration::{is_valid_temperature, log_sum_exp, top_probability, Logits};

/// ODIN's temperature, the default of Liang et al. (ICLR 2018).
pub const ODIN_TEMPERATURE: f64 = 1000.0;
/// ODIN's perturbation size in `[0, 1]` pixel units, the default of Liang et al.
pub const ODIN_EPSILON: f64 = 0.0014;

/// FPR95 looks at the threshold that keeps this percentage of in-distribution inputs.
pub(crate) const TARGET_TRUE_POSITIVE_PERCENT: usize = 95;

/// Which of the two score sets an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScoreSet {
    /// Scores of in-distribution inputs.
    InDistribution,
    /// Scores of out-of-distribution inputs.
    OutOfDistribution,
    /// In-distribution scores held out to calibrate conformal p-values (`ood_pvalues`).
    Calibration,
}

impl fmt::Display for ScoreSet {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Self::InDistribution => "in-distribution",
            Self::OutOfDistribution => "out-of-distribution",
            Self::Calibration => "calibration",
        })
    }
}

/// Why an OOD computation was refused.
#[derive(Debug, Error, PartialEq)]
pub enum OodError {
    /// The temperature is zero, negative, NaN or infinite.
    #[error("temperature must be a positive finite number, got {0}")]
    InvalidTemperature(f64),
    /// One of the score sets is empty.
    #[error("the {0} score set is empty")]
    EmptyScores(ScoreSet),
    /// A score is NaN.
    #[error("score {index} of the {set} set is NaN")]
    NanScore { set: ScoreSet, index: usize },
    /// A false discovery rate level outside (0, 1).
    #[error("the false discovery rate level must lie strictly between 0 and 1, got {0}")]
    InvalidFdrLevel(f64),
    /// A share of OOD inputs in a batch outside (0, 1).
    #[error("the share of out-of-distribution images must lie strictly between 0 and 1, got {0}")]
    InvalidOodShare(f64),
}

fn check_temperature(temperature: f64) -> Result<(), OodError> {
    if is_valid_temperature(temperature) {
        Ok(())
    } else {
        Err(OodError::InvalidTemperature(temperature))
    }
}

/// Maximum softmax probability `max_k softmax(z/T)_k` of every row.
///
/// # Errors
/// [`OodError::InvalidTemperature`] if `temperature` is not positive and finite.
pub fn max_softmax_probability(logits: &Logits, temperature: f64) -> Result<Vec<f64>, OodError> {
    check_temperature(temperature)?;
    Ok(logits
        .rows()
        .map(|row| top_probability(row, temperature))
        .collect())
}

/// Largest logit `max_k z_k` of every row.
pub fn max_logit(logits: &Logits) -> Vec<f64> {
    logits
        .rows()
        .map(|row| {
            row.iter()
                .fold(f64::NEG_INFINITY, |max, &z| max.max(f64::from(z)))
        })
        .collect()
}

/// Energy score (negative energy) `T·log Σ_k exp(z_k/T)` of every row, computed stably.
///
/// # Errors
/// [`OodError::InvalidTemperature`] if `temperature` is not positive and finite.
pub fn energy_score(logits: &Logits, temperature: f64) -> Result<Vec<f64>, OodError> {
    check_temperature(temperature)?;
    Ok(logits
        .rows()
        .map(|row| temperature * log_sum_exp(row, temperature))
        .collect())
}

/// Euclidean length `‖z‖₂` of every row of logits, summed in `f64`. LogitNorm (Wei et al., ICML
/// 2022) trains on `z / (τ‖z‖)`, so this length is what the loss no longer rewards for growing.
pub fn logit_norms(logits: &Logits) -> Vec<f64> {
    logits
        .rows()
        .map(|row| {
            row.iter()
                .map(|&z| f64::from(z) * f64::from(z))
                .sum::<f64>()
                .sqrt()
        })
        .collect()
}

/// FPR95, AUROC, AUPR-In and AUPR-Out of one score.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DetectionMetrics {
    /// Fraction of OOD scores at or above the threshold that keeps 95% of ID scores.
    pub fpr95: f64,
    /// Probability that an ID score exceeds an OOD score, ties counting half.
    pub auroc: f64,
    /// Average precision with ID as the positive class.
    pub aupr_in: f64,
    /// Average precision with OOD as the positive class (lower score = more OOD).
    pub aupr_out: f64,
}

/// All scores sharing one value, with how many came from each set.
struct ScoreGroup {
    score: f64,
    in_distribution: usize,
    out_of_distribution: usize,
}

/// Validated scores, grouped by equal value in increasing order: every metric here, and the ROC
/// curve in `ood_view.rs`, walks these groups (one threshold each).
pub(crate) struct GroupedScores {
    groups: Vec<ScoreGroup>,
    in_distribution: usize,
    out_of_distribution: usize,
}

/// Refuses an empty score set ([`OodError::EmptyScores`]) and the first NaN
/// ([`OodError::NanScore`]).
pub(crate) fn check_scores(scores: &[f64], set: ScoreSet) -> Result<(), OodError> {
    if scores.is_empty() {
        return Err(OodError::EmptyScores(set));
    }
    match scores.iter().position(|score| score.is_nan()) {
        Some(index) => Err(OodError::NanScore { set, index }),
        None => Ok(()),
    }
}

impl GroupedScores {
    /// Checks both sets (ID first, as [`check_scores`]) and sorts them together, `O(n log n)`.
    pub(crate) fn new(
        in_distribution: &[f64],
        out_of_distribution: &[f64],
    ) -> Result<Self, OodError> {
        check_scores(in_distribution, ScoreSet::InDistribution)?;
        check_scores(out_of_distribution, ScoreSet::OutOfDistribution)?;
        let mut labelled: Vec<(f64, bool)> = in_distribution
            .iter()
            .map(|&score| (score, true))
            .chain(out_of_distribution.iter().map(|&score| (score, false)))
            .collect();
        labelled.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let mut groups: Vec<ScoreGroup> = Vec::new();
        for (score, is_in_distribution) in labelled {
            let group = match groups.last_mut() {
                // `==`, not `total_cmp`: −0.0 and 0.0 are one score (they sort next to each other).
                Some(group) if group.score == score => group,
                _ => {
                    groups.push(ScoreGroup {
                        score,
                        in_distribution: 0,
                        out_of_distribution: 0,
                    });
                    let last = groups.len() - 1;
                    &mut groups[last]
                }
            };
            if is_in_distribution {
                group.in_distribution += 1;
            } else {
                group.out_of_distribution += 1;
            }
        }
        Ok(Self {
            groups,
            in_distribution: in_distribution.len(),
            out_of_distribution: out_of_distribution.len(),
        })
    }

    /// `(ID count, OOD count)` of each distinct score, highest score first.
    pub(crate) fn counts_from_highest(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.groups
            .iter()
            .rev()
            .map(|group| (group.in_distribution, group.out_of_distribution))
    }

    fn fpr_at_95_tpr(&self) -> f64 {
        let required = (TARGET_TRUE_POSITIVE_PERCENT * self.in_distribution).div_ceil(100);
        let (mut in_at_or_above, mut out_at_or_above) = (0, 0);
        for (in_here, out_here) in self.counts_from_highest() {
            in_at_or_above += in_here;
            out_at_or_above += out_here;
            if in_at_or_above >= required {
                break;
            }
        }
        out_at_or_above as f64 / self.out_of_distribution as f64
    }

    fn auroc(&self) -> f64 {
        // Twice the Mann–Whitney U, so that half-counted ties stay integers.
        let mut twice_u: u64 = 0;
        let mut out_below: u64 = 0;
        for group in &self.groups {
            let (in_here, out_here) = (
                group.in_distribution as u64,
                group.out_of_distribution as u64,
            );
            twice_u += in_here * (2 * out_below + out_here);
            out_below += out_here;
        }
        twice_u as f64 / (2.0 * self.in_distribution as f64 * self.out_of_distribution as f64)
    }

    fn aupr_in(&self) -> f64 {
        average_precision(self.counts_from_highest(), self.in_distribution)
    }

    fn aupr_out(&self) -> f64 {
        average_precision(
            self.groups
                .iter()
                .map(|group| (group.out_of_distribution, group.in_distribution)),
            self.out_of_distribution,
        )
    }
}

/// Step-wise average precision from `(positives, negatives)` per threshold, most positive
/// threshold first: `(1/total_positive)·Σ_t positives_t·precision_t` (dividing once at the end
/// keeps a perfect ranking at exactly 1).
fn average_precision(
    thresholds: impl Iterator<Item = (usize, usize)>,
    total_positive: usize,
) -> f64 {
    let (mut true_positives, mut false_positives) = (0_usize, 0_usize);
    let mut sum = 0.0;
    for (positives, negatives) in thresholds {
        true_positives += positives;
        false_positives += negatives;
        if positives > 0 {
            let precision = true_positives as f64 / (true_positives + false_positives) as f64;
            sum += positives as f64 * precision;
        }
    }
    sum / total_positive as f64
}

/// FPR95, AUROC, AUPR-In and AUPR-Out, sorting the scores once.
///
/// # Errors
/// [`OodError::EmptyScores`] if either set is empty, [`OodError::NanScore`] for the first NaN
/// (in-distribution set first).
pub fn detection_metrics(
    in_distribution: &[f64],
    out_of_distribution: &[f64],
) -> Result<DetectionMetrics, OodError> {
    let grouped = GroupedScores::new(in_distribution, out_of_distribution)?;
    Ok(DetectionMetrics {
        fpr95: grouped.fpr_at_95_tpr(),
        auroc: grouped.auroc(),
        aupr_in: grouped.aupr_in(),
        aupr_out: grouped.aupr_out(),
    })
}

/// Fraction of OOD scores at or above the `⌈0.95·n_in⌉`-th largest ID score.
///
/// # Errors
/// As [`detection_metrics`].
pub fn fpr_at_95_tpr(
    in_distribution: &[f64],
    out_of_distribution: &[f64],
) -> Result<f64, OodError> {
    Ok(GroupedScores::new(in_distribution, out_of_distribution)?.fpr_at_95_tpr())
}

/// Area under the ROC curve, ID positive: Mann–Whitney `U / (n_in·n_out)`, ties counting half.
///
/// # Errors
/// As [`detection_metrics`].
pub fn auroc(in_distribution: &[f64], out_of_distribution: &[f64]) -> Result<f64, OodError> {
    Ok(GroupedScores::new(in_distribution, out_of_distribution)?.auroc())
}

/// Average precision with ID as the positive class (higher score = more ID).
///
/// # Errors
/// As [`detection_metrics`].
pub fn aupr_in(in_distribution: &[f64], out_of_distribution: &[f64]) -> Result<f64, OodError> {
    Ok(GroupedScores::new(in_distribution, out_of_distribution)?.aupr_in())
}

/// Average precision with OOD as the positive class (lower score = more OOD).
///
/// # Errors
/// As [`detection_metrics`].
pub fn aupr_out(in_distribution: &[f64], out_of_distribution: &[f64]) -> Result<f64, OodError> {
    Ok(GroupedScores::new(in_distribution, out_of_distribution)?.aupr_out())
}

#[cfg(test)]
#[path = "ood_tests.rs"]
mod tests;
