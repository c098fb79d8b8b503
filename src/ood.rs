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

use crate::calibration::{is_valid_temperature, log_sum_exp, shifted_log_sum_exp, Logits};

/// FPR95 looks at the threshold that keeps this percentage of in-distribution inputs.
const TARGET_TRUE_POSITIVE_PERCENT: usize = 95;

/// Which of the two score sets an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScoreSet {
    /// Scores of in-distribution inputs.
    InDistribution,
    /// Scores of out-of-distribution inputs.
    OutOfDistribution,
}

impl fmt::Display for ScoreSet {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Self::InDistribution => "in-distribution",
            Self::OutOfDistribution => "out-of-distribution",
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
        .map(|row| {
            // The top class has z/T − m = 0, so its probability is exp(−log Σ exp(z/T − m)).
            let (_, log_sum) = shifted_log_sum_exp(row, temperature);
            (-log_sum).exp()
        })
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

/// Validated scores, grouped by equal value in increasing order.
struct GroupedScores {
    groups: Vec<ScoreGroup>,
    in_distribution: usize,
    out_of_distribution: usize,
}

fn check_scores(scores: &[f64], set: ScoreSet) -> Result<(), OodError> {
    if scores.is_empty() {
        return Err(OodError::EmptyScores(set));
    }
    match scores.iter().position(|score| score.is_nan()) {
        Some(index) => Err(OodError::NanScore { set, index }),
        None => Ok(()),
    }
}

impl GroupedScores {
    /// Checks both sets and sorts them together, `O(n log n)`.
    fn new(in_distribution: &[f64], out_of_distribution: &[f64]) -> Result<Self, OodError> {
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

    fn fpr_at_95_tpr(&self) -> f64 {
        let required = (TARGET_TRUE_POSITIVE_PERCENT * self.in_distribution).div_ceil(100);
        let (mut in_at_or_above, mut out_at_or_above) = (0, 0);
        for group in self.groups.iter().rev() {
            in_at_or_above += group.in_distribution;
            out_at_or_above += group.out_of_distribution;
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
        average_precision(
            self.groups
                .iter()
                .rev()
                .map(|group| (group.in_distribution, group.out_of_distribution)),
            self.in_distribution,
        )
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
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Tolerance for comparisons with exact fractions and brute-force counts.
    const TOLERANCE: f64 = 1e-12;
    /// Tolerance for values written by hand to 7–8 significant digits.
    const HAND_TOLERANCE: f64 = 1e-7;

    fn assert_close(actual: f64, expected: f64) {
        assert!(
            (actual - expected).abs() <= TOLERANCE,
            "expected {expected}, got {actual}"
        );
    }

    /// O(n_in·n_out) pair count: ID above OOD counts 1, a tie ½.
    fn brute_force_auroc(in_distribution: &[f64], out_of_distribution: &[f64]) -> f64 {
        let mut pairs = 0.0;
        for &i in in_distribution {
            for &o in out_of_distribution {
                pairs += if i > o {
                    1.0
                } else if i == o {
                    0.5
                } else {
                    0.0
                };
            }
        }
        pairs / (in_distribution.len() * out_of_distribution.len()) as f64
    }

    /// Average precision straight from its definition: for each distinct score t, descending,
    /// count positives and negatives ≥ t.
    fn brute_force_average_precision(positive: &[f64], negative: &[f64]) -> f64 {
        let mut thresholds: Vec<f64> = positive.iter().chain(negative).copied().collect();
        thresholds.sort_by(|a, b| b.total_cmp(a));
        thresholds.dedup();
        let mut previous_recall = 0.0;
        let mut sum = 0.0;
        for t in thresholds {
            let true_positives = positive.iter().filter(|&&s| s >= t).count() as f64;
            let false_positives = negative.iter().filter(|&&s| s >= t).count() as f64;
            let recall = true_positives / positive.len() as f64;
            if true_positives > 0.0 {
                sum += (recall - previous_recall) * true_positives
                    / (true_positives + false_positives);
            }
            previous_recall = recall;
        }
        sum
    }

    /// FPR95 straight from its definition: the largest ID score t with ≥ 95% of ID ≥ t.
    fn brute_force_fpr95(in_distribution: &[f64], out_of_distribution: &[f64]) -> f64 {
        let count_at_or_above = |scores: &[f64], t: f64| scores.iter().filter(|&&s| s >= t).count();
        let threshold = in_distribution
            .iter()
            .copied()
            .filter(|&t| 100 * count_at_or_above(in_distribution, t) >= 95 * in_distribution.len())
            .fold(f64::NEG_INFINITY, f64::max);
        count_at_or_above(out_of_distribution, threshold) as f64 / out_of_distribution.len() as f64
    }

    fn negated(scores: &[f64]) -> Vec<f64> {
        scores.iter().map(|s| -s).collect()
    }

    #[test]
    fn hand_example_with_ties() {
        let in_distribution = [0.9, 0.7, 0.7];
        let out_of_distribution = [0.7, 0.2];
        let metrics = detection_metrics(&in_distribution, &out_of_distribution).unwrap();
        // Pairs: 0.9 beats both (2), each 0.7 ties 0.7 (½ + ½) and beats 0.2 (2): 5 of 6.
        assert_close(metrics.auroc, 5.0 / 6.0);
        // ⌈0.95·3⌉ = 3: threshold is the 3rd largest ID score, 0.7; OOD ≥ 0.7: 1 of 2.
        assert_close(metrics.fpr95, 0.5);
        // AUPR-In, thresholds 0.9: P = 1, R = ⅓; 0.7: P = 3/4, R = 1.
        // AP = ⅓·1 + ⅔·¾ = 5/6.
        assert_close(metrics.aupr_in, 5.0 / 6.0);
        // AUPR-Out on negated scores, thresholds −0.2: P = 1, R = ½; −0.7: P = 2/4, R = 1.
        // AP = ½·1 + ½·½ = 3/4.
        assert_close(metrics.aupr_out, 0.75);
    }

    #[test]
    fn hand_example_without_ties() {
        // Descending: 0.9 ID, 0.8 OOD, 0.7 ID, 0.5 OOD, 0.4 ID, 0.2 OOD.
        // AP-In = ⅓·1 + ⅓·⅔ + ⅓·⅗ = 34/45 (scikit-learn gives 0.7555…).
        let metrics = detection_metrics(&[0.9, 0.7, 0.4], &[0.8, 0.5, 0.2]).unwrap();
        assert_close(metrics.aupr_in, 34.0 / 45.0);
        assert_close(metrics.aupr_out, 34.0 / 45.0);
        // ID above OOD in 6 of the 9 pairs.
        assert_close(metrics.auroc, 6.0 / 9.0);
        // Threshold 0.4 (3rd largest ID): OOD ≥ 0.4 are 0.8 and 0.5.
        assert_close(metrics.fpr95, 2.0 / 3.0);
    }

    #[test]
    fn perfect_separation() {
        let in_distribution: Vec<f64> = (0..40).map(|i| 10.0 + f64::from(i)).collect();
        let out_of_distribution: Vec<f64> = (0..25).map(|i| f64::from(i) - 30.0).collect();
        let metrics = detection_metrics(&in_distribution, &out_of_distribution).unwrap();
        assert_eq!(metrics.auroc, 1.0);
        assert_eq!(metrics.fpr95, 0.0);
        assert_eq!(metrics.aupr_in, 1.0);
        assert_eq!(metrics.aupr_out, 1.0);
    }

    #[test]
    fn identical_distributions() {
        let scores = [1.0, 2.0, 3.0, 4.0, 4.0, 7.0];
        assert_eq!(auroc(&scores, &scores).unwrap(), 0.5);
        // ⌈0.95·6⌉ = 6: the threshold is the smallest score, so every OOD score is above it.
        assert_eq!(fpr_at_95_tpr(&scores, &scores).unwrap(), 1.0);
        let constant = [0.3; 5];
        assert_eq!(auroc(&constant, &[0.3; 8]).unwrap(), 0.5);
    }

    #[test]
    fn fpr95_threshold_keeps_95_percent() {
        // 20 ID scores 1..=20: ⌈19⌉ = 19, threshold = 19th largest = 2. OOD ≥ 2: {2, 5}.
        let in_distribution: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_close(
            fpr_at_95_tpr(&in_distribution, &[0.0, 1.0, 1.5, 2.0, 5.0]).unwrap(),
            0.4,
        );
        // 21 ID scores: ⌈19.95⌉ = 20, threshold = 20th largest = 2 of 1..=21.
        let in_distribution: Vec<f64> = (1..=21).map(f64::from).collect();
        assert_close(fpr_at_95_tpr(&in_distribution, &[1.0, 2.0]).unwrap(), 0.5);
    }

    #[test]
    fn scores_from_logits() {
        let values = [1e4_f32, 1e4, -1e4, 2.0, 0.0, 0.0, -1e4, -1e4, -1e4];
        let logits = Logits::new(&values, 3).unwrap();
        let energy = energy_score(&logits, 1.0).unwrap();
        // log(e^1e4 + e^1e4 + e^−1e4) = 1e4 + ln 2; log(e² + 2) = 2.2395447;
        // three equal logits: −1e4 + ln 3.
        assert!((energy[0] - (1e4 + 2.0_f64.ln())).abs() <= HAND_TOLERANCE);
        assert!((energy[1] - 2.239_544_7).abs() <= HAND_TOLERANCE);
        assert!((energy[2] - (-1e4 + 3.0_f64.ln())).abs() <= HAND_TOLERANCE);
        for temperature in [0.05, 20.0] {
            let energy = energy_score(&logits, temperature).unwrap();
            assert!((energy[0] - (1e4 + temperature * 2.0_f64.ln())).abs() <= HAND_TOLERANCE);
            assert!(energy.iter().all(|e| e.is_finite()));
            let msp = max_softmax_probability(&logits, temperature).unwrap();
            assert!(msp.iter().all(|p| p.is_finite()));
        }
        let msp = max_softmax_probability(&logits, 1.0).unwrap();
        // e²/(e² + 2) = 0.7869860.
        assert_close(msp[0], 0.5);
        assert!((msp[1] - 0.786_986_0).abs() <= HAND_TOLERANCE);
        assert_close(msp[2], 1.0 / 3.0);
        assert_eq!(max_logit(&logits), vec![1e4, 2.0, -1e4]);
        assert_eq!(
            energy_score(&logits, 0.0),
            Err(OodError::InvalidTemperature(0.0))
        );
        assert_eq!(
            max_softmax_probability(&logits, -2.0),
            Err(OodError::InvalidTemperature(-2.0))
        );
    }

    #[test]
    fn errors() {
        assert_eq!(
            auroc(&[], &[1.0]),
            Err(OodError::EmptyScores(ScoreSet::InDistribution))
        );
        assert_eq!(
            detection_metrics(&[1.0], &[]),
            Err(OodError::EmptyScores(ScoreSet::OutOfDistribution))
        );
        assert_eq!(
            fpr_at_95_tpr(&[1.0, 2.0], &[0.0, f64::NAN]),
            Err(OodError::NanScore {
                set: ScoreSet::OutOfDistribution,
                index: 1
            })
        );
        assert_eq!(
            aupr_in(&[f64::NAN], &[0.0]).unwrap_err().to_string(),
            "score 0 of the in-distribution set is NaN"
        );
        // Infinite scores are ordered like any other.
        assert_eq!(aupr_out(&[f64::INFINITY], &[f64::NEG_INFINITY]), Ok(1.0));
    }

    fn scores_with_ties() -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec((0_u8..12).prop_map(|level| f64::from(level) * 0.25), 1..80)
    }

    proptest! {
        #[test]
        fn metrics_match_brute_force(
            in_distribution in scores_with_ties(),
            out_of_distribution in scores_with_ties(),
        ) {
            let metrics = detection_metrics(&in_distribution, &out_of_distribution).unwrap();
            let expected_auroc = brute_force_auroc(&in_distribution, &out_of_distribution);
            prop_assert!((metrics.auroc - expected_auroc).abs() <= TOLERANCE);
            let expected_in = brute_force_average_precision(&in_distribution, &out_of_distribution);
            prop_assert!((metrics.aupr_in - expected_in).abs() <= TOLERANCE);
            let expected_out = brute_force_average_precision(
                &negated(&out_of_distribution),
                &negated(&in_distribution),
            );
            prop_assert!((metrics.aupr_out - expected_out).abs() <= TOLERANCE);
            let expected_fpr = brute_force_fpr95(&in_distribution, &out_of_distribution);
            prop_assert!((metrics.fpr95 - expected_fpr).abs() <= TOLERANCE);
            // Swapping the sets mirrors the AUROC.
            let swapped = auroc(&out_of_distribution, &in_distribution).unwrap();
            prop_assert!((metrics.auroc + swapped - 1.0).abs() <= TOLERANCE);
        }
    }
}
