//! Everything the out-of-distribution (OOD) lab shows for one network and one OOD set,
//! computed from the logits of the in-distribution (ID) inputs and of the OOD inputs.
//!
//! # Scores and metrics
//! Per score kind (all higher = more ID; definitions in `ood.rs`): the maximum softmax
//! probability at the chosen temperature `T` (Hendrycks & Gimpel, ICLR 2017), the max-logit
//! (Hendrycks et al., ICML 2022), the energy score at `T` (Liu et al., NeurIPS 2020) and, when
//! the caller computed them (`Classifier::odin_scores`), ODIN scores (Liang et al., ICLR 2018).
//! For each: FPR95, AUROC, AUPR-In and AUPR-Out from [`ood::detection_metrics`], and the
//! threshold behind FPR95,
//!
//! ```text
//! t = the ⌈0.95·n_in⌉-th largest ID score,   TPR = #{ID ≥ t}/n_in ≥ 0.95,   FPR95 = #{OOD ≥ t}/n_out
//! ```
//!
//! (the count in integers, as in `ood.rs`): inputs scoring at or above `t` are taken for ID, so
//! FPR95 is the share of OOD inputs the detector lets through.
//!
//! # Curves and histograms
//! * **ROC curve** (ID positive): one point `(FPR(t), TPR(t))` per distinct score `t`, in
//!   decreasing order, where `FPR(t)` and `TPR(t)` are the shares of OOD and ID scores `≥ t`,
//!   preceded by `(0, 0)`; it ends at `(1, 1)`. Equal scores are one threshold, so a tie between
//!   ID and OOD scores is one diagonal step. The trapezoidal area under this curve is the
//!   Mann–Whitney AUROC with ties counting half (Fawcett, "An introduction to ROC analysis",
//!   Pattern Recognition Letters, 2006). [`thin_roc_curve`] keeps at most `N` of its points for
//!   drawing; AUROC is always computed from all scores.
//! * **Histograms** of ID and OOD values over shared equal-width bins on the joint range
//!   `[lo, hi]` of both sets (`[v − ½, v + ½]` when every value equals `v`): value `v` goes to
//!   bin `min(⌊B·(v − lo)/(hi − lo)⌋, B − 1)`, so `hi` lands in the last bin; each bin holds its
//!   count as a share of its own set.
//! * **Logit norms** `‖z‖₂` ([`ood::logit_norms`]), their means per set and their histograms:
//!   LogitNorm (Wei et al., ICML 2022) stops the training loss from rewarding large norms.
//! * **The OOD inputs the network is surest about**: the OOD rows with the largest maximum
//!   softmax probability at `T`, with their predicted class (arg-max of the logits, lowest
//!   index on ties), for a gallery ("97% sure this 7 is a sandal").
//!
//! Every definition, default and tie rule, with its source: docs/definitions.md

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::calibration::{Logits, MAX_BINS};
use crate::ood::{self, DetectionMetrics, OodError, ScoreSet};

/// The threshold keeps this percentage of ID scores at or above it, as FPR95 in `ood.rs`.
const TARGET_TRUE_POSITIVE_PERCENT: usize = 95;

/// A score that separates ID from OOD inputs, higher = more ID (serde: `"msp"`,
/// `"max_logit"`, `"energy"`, `"odin"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScoreKind {
    /// Maximum softmax probability at the view's temperature.
    Msp,
    /// Largest logit.
    MaxLogit,
    /// Energy score (negative free energy) at the view's temperature.
    Energy,
    /// ODIN: maximum softmax probability at ODIN's temperature of a perturbed input.
    Odin,
}

impl ScoreKind {
    /// Every kind, in the order the lab lists them.
    pub const ALL: [ScoreKind; 4] = [
        ScoreKind::Msp,
        ScoreKind::MaxLogit,
        ScoreKind::Energy,
        ScoreKind::Odin,
    ];
}

/// ODIN scores of the ID and the OOD inputs, in the order of their logits' rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OdinScores<'a> {
    pub in_distribution: &'a [f64],
    pub out_of_distribution: &'a [f64],
}

/// Why a view, curve or histogram was refused.
#[derive(Debug, Error, PartialEq)]
pub enum OodViewError {
    /// From the scores or the temperature (empty set, NaN score, invalid temperature).
    #[error(transparent)]
    Ood(#[from] OodError),
    /// The two sets of logits have different numbers of classes.
    #[error(
        "the in-distribution logits have {in_distribution} classes, the out-of-distribution \
         logits {out_of_distribution}"
    )]
    ClassCountMismatch {
        in_distribution: usize,
        out_of_distribution: usize,
    },
    /// The number of ODIN scores of a set differs from its number of logit rows.
    #[error("{scores} ODIN scores were given for {rows} {set} rows")]
    OdinCountMismatch {
        set: ScoreSet,
        scores: usize,
        rows: usize,
    },
    /// A value to bin (or an ODIN score) is NaN or infinite.
    #[error("value {index} of the {set} set is not finite: {value}")]
    NonFiniteValue {
        set: ScoreSet,
        index: usize,
        value: f64,
    },
    /// The view was asked for a score it was not given (ODIN).
    #[error("the {0:?} score was not computed for this view")]
    MissingScore(ScoreKind),
    /// The number of bins is 0 or above [`MAX_BINS`].
    #[error("the number of bins must be between 1 and {MAX_BINS}, got {0}")]
    InvalidBinCount(usize),
}

/// The threshold behind FPR95 and the detection metrics of one score.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScoreSummary {
    pub kind: ScoreKind,
    /// FPR95, AUROC, AUPR-In, AUPR-Out. `metrics.fpr95` is the share of OOD scores at or
    /// above [`ScoreSummary::threshold`].
    pub metrics: DetectionMetrics,
    /// The `⌈0.95·n_in⌉`-th largest ID score.
    pub threshold: f64,
    /// Share of ID scores at or above the threshold: at least 0.95, more when scores tie there.
    pub true_positive_rate: f64,
}

/// Histograms of ID and OOD values over shared bins.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PairedHistogram {
    /// `B + 1` increasing bin edges; bin `b` is `[edges[b], edges[b + 1])`, the last bin also
    /// holds its upper edge.
    pub edges: Vec<f64>,
    /// Share of the ID values in each bin (sums to 1).
    pub in_distribution: Vec<f64>,
    /// Share of the OOD values in each bin (sums to 1).
    pub out_of_distribution: Vec<f64>,
}

/// One point of a ROC curve, ID as the positive class.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RocPoint {
    /// Share of OOD scores at or above the threshold.
    pub false_positive_rate: f64,
    /// Share of ID scores at or above the threshold.
    pub true_positive_rate: f64,
}

/// Mean logit norm `‖z‖₂` of each set.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LogitNormMeans {
    pub in_distribution: f64,
    pub out_of_distribution: f64,
}

/// An OOD input the network is sure about.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ConfidentPrediction {
    /// Row of the OOD logits (and image of the OOD set).
    pub index: usize,
    /// Arg-max of the logits, lowest index on ties.
    pub predicted_class: usize,
    /// Maximum softmax probability at the view's temperature.
    pub confidence: f64,
}

/// The scores of both sets for one kind.
#[derive(Clone, Debug)]
struct ScoreSets {
    kind: ScoreKind,
    in_distribution: Vec<f64>,
    out_of_distribution: Vec<f64>,
}

/// Scores, metrics, norms and the surest OOD inputs of one network on one OOD set at one
/// temperature.
#[derive(Clone, Debug)]
pub struct OodView {
    scores: Vec<ScoreSets>,
    summaries: Vec<ScoreSummary>,
    in_distribution_norms: Vec<f64>,
    out_of_distribution_norms: Vec<f64>,
    /// OOD rows by decreasing maximum softmax probability (ties by row), with their class.
    surest: Vec<ConfidentPrediction>,
}

impl OodView {
    /// Computes every score and its metrics from ID and OOD logits (row-major `[n, K]`, the
    /// same `K`), with MSP and energy at `temperature`, and ODIN when `odin` is given.
    ///
    /// # Errors
    /// [`OodViewError::ClassCountMismatch`] if the two sets have different `K`,
    /// [`OodViewError::OdinCountMismatch`] unless there is one ODIN score per row,
    /// [`OodViewError::NonFiniteValue`] for the first ODIN score that is NaN or infinite (ID
    /// first), and [`OodError::InvalidTemperature`] unless `temperature` is positive and finite.
    pub fn new(
        in_distribution: &Logits,
        out_of_distribution: &Logits,
        temperature: f64,
        odin: Option<OdinScores>,
    ) -> Result<Self, OodViewError> {
        if in_distribution.num_classes() != out_of_distribution.num_classes() {
            return Err(OodViewError::ClassCountMismatch {
                in_distribution: in_distribution.num_classes(),
                out_of_distribution: out_of_distribution.num_classes(),
            });
        }
        let msp_in = ood::max_softmax_probability(in_distribution, temperature)?;
        let msp_out = ood::max_softmax_probability(out_of_distribution, temperature)?;
        let mut scores = vec![
            ScoreSets {
                kind: ScoreKind::Msp,
                in_distribution: msp_in,
                out_of_distribution: msp_out,
            },
            ScoreSets {
                kind: ScoreKind::MaxLogit,
                in_distribution: ood::max_logit(in_distribution),
                out_of_distribution: ood::max_logit(out_of_distribution),
            },
            ScoreSets {
                kind: ScoreKind::Energy,
                in_distribution: ood::energy_score(in_distribution, temperature)?,
                out_of_distribution: ood::energy_score(out_of_distribution, temperature)?,
            },
        ];
        if let Some(odin) = odin {
            for (set, odin_scores, rows) in [
                (
                    ScoreSet::InDistribution,
                    odin.in_distribution,
                    in_distribution.len(),
                ),
                (
                    ScoreSet::OutOfDistribution,
                    odin.out_of_distribution,
                    out_of_distribution.len(),
                ),
            ] {
                if odin_scores.len() != rows {
                    return Err(OodViewError::OdinCountMismatch {
                        set,
                        scores: odin_scores.len(),
                        rows,
                    });
                }
                check_finite(odin_scores, set)?;
            }
            scores.push(ScoreSets {
                kind: ScoreKind::Odin,
                in_distribution: odin.in_distribution.to_vec(),
                out_of_distribution: odin.out_of_distribution.to_vec(),
            });
        }
        let summaries = scores
            .iter()
            .map(|sets| summarise(sets.kind, &sets.in_distribution, &sets.out_of_distribution))
            .collect::<Result<Vec<_>, _>>()?;

        let mut surest: Vec<ConfidentPrediction> = scores[0]
            .out_of_distribution
            .iter()
            .zip(out_of_distribution.rows())
            .enumerate()
            .map(|(index, (&confidence, row))| ConfidentPrediction {
                index,
                predicted_class: predicted_class(row),
                confidence,
            })
            .collect();
        surest.sort_by(|a, b| {
            b.confidence
                .total_cmp(&a.confidence)
                .then(a.index.cmp(&b.index))
        });

        Ok(Self {
            scores,
            summaries,
            in_distribution_norms: ood::logit_norms(in_distribution),
            out_of_distribution_norms: ood::logit_norms(out_of_distribution),
            surest,
        })
    }

    /// The summaries of every computed score, in [`ScoreKind::ALL`]'s order.
    pub fn summaries(&self) -> &[ScoreSummary] {
        &self.summaries
    }

    /// The summary of one score.
    ///
    /// # Errors
    /// [`OodViewError::MissingScore`] for ODIN when the view was built without it.
    pub fn summary(&self, kind: ScoreKind) -> Result<&ScoreSummary, OodViewError> {
        self.summaries
            .iter()
            .find(|summary| summary.kind == kind)
            .ok_or(OodViewError::MissingScore(kind))
    }

    /// The ID and the OOD scores of one kind, in row order.
    ///
    /// # Errors
    /// [`OodViewError::MissingScore`] for ODIN when the view was built without it.
    pub fn scores(&self, kind: ScoreKind) -> Result<(&[f64], &[f64]), OodViewError> {
        self.scores
            .iter()
            .find(|sets| sets.kind == kind)
            .map(|sets| (&sets.in_distribution[..], &sets.out_of_distribution[..]))
            .ok_or(OodViewError::MissingScore(kind))
    }

    /// Histograms of one score's ID and OOD values over `bins` shared bins.
    ///
    /// # Errors
    /// [`OodViewError::MissingScore`] as [`OodView::scores`], and
    /// [`OodViewError::InvalidBinCount`] unless `1 <= bins <= 1000`.
    pub fn score_histogram(
        &self,
        kind: ScoreKind,
        bins: usize,
    ) -> Result<PairedHistogram, OodViewError> {
        let (in_distribution, out_of_distribution) = self.scores(kind)?;
        paired_histogram(in_distribution, out_of_distribution, bins)
    }

    /// The exact ROC curve of one score (see [`roc_curve`]).
    ///
    /// # Errors
    /// [`OodViewError::MissingScore`] as [`OodView::scores`].
    pub fn roc_curve(&self, kind: ScoreKind) -> Result<Vec<RocPoint>, OodViewError> {
        let (in_distribution, out_of_distribution) = self.scores(kind)?;
        Ok(roc_curve(in_distribution, out_of_distribution)?)
    }

    /// The logit norms `‖z‖₂` of the ID rows and of the OOD rows.
    pub fn logit_norms(&self) -> (&[f64], &[f64]) {
        (&self.in_distribution_norms, &self.out_of_distribution_norms)
    }

    /// The mean logit norm of each set.
    pub fn logit_norm_means(&self) -> LogitNormMeans {
        LogitNormMeans {
            in_distribution: mean(&self.in_distribution_norms),
            out_of_distribution: mean(&self.out_of_distribution_norms),
        }
    }

    /// Histograms of the ID and OOD logit norms over `bins` shared bins.
    ///
    /// # Errors
    /// [`OodViewError::InvalidBinCount`] unless `1 <= bins <= 1000`.
    pub fn logit_norm_histogram(&self, bins: usize) -> Result<PairedHistogram, OodViewError> {
        paired_histogram(
            &self.in_distribution_norms,
            &self.out_of_distribution_norms,
            bins,
        )
    }

    /// The `count` OOD inputs with the largest maximum softmax probability at the view's
    /// temperature, surest first (ties by row); all of them when there are fewer.
    pub fn surest_out_of_distribution(&self, count: usize) -> &[ConfidentPrediction] {
        &self.surest[..count.min(self.surest.len())]
    }
}

/// Arg-max of a row, lowest index on ties.
fn predicted_class(row: &[f32]) -> usize {
    row.iter()
        .enumerate()
        .fold(0, |best, (k, &z)| if z > row[best] { k } else { best })
}

/// Mean of a non-empty slice (a [`Logits`] has at least one row).
fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

fn check_finite(values: &[f64], set: ScoreSet) -> Result<(), OodViewError> {
    match values.iter().position(|value| !value.is_finite()) {
        Some(index) => Err(OodViewError::NonFiniteValue {
            set,
            index,
            value: values[index],
        }),
        None => Ok(()),
    }
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

fn summarise(
    kind: ScoreKind,
    in_distribution: &[f64],
    out_of_distribution: &[f64],
) -> Result<ScoreSummary, OodError> {
    let metrics = ood::detection_metrics(in_distribution, out_of_distribution)?;
    let threshold = threshold_at_95_tpr(in_distribution)?;
    let at_or_above = in_distribution
        .iter()
        .filter(|&&score| score >= threshold)
        .count();
    Ok(ScoreSummary {
        kind,
        metrics,
        threshold,
        true_positive_rate: at_or_above as f64 / in_distribution.len() as f64,
    })
}

/// The threshold behind FPR95: the `⌈0.95·n_in⌉`-th largest ID score (the count in integers).
///
/// # Errors
/// [`OodError::EmptyScores`] for no scores, [`OodError::NanScore`] for the first NaN.
pub fn threshold_at_95_tpr(in_distribution: &[f64]) -> Result<f64, OodError> {
    check_scores(in_distribution, ScoreSet::InDistribution)?;
    let required = (TARGET_TRUE_POSITIVE_PERCENT * in_distribution.len()).div_ceil(100);
    let mut descending = in_distribution.to_vec();
    descending.sort_unstable_by(|a, b| b.total_cmp(a));
    Ok(descending[required - 1])
}

/// The exact ROC curve, ID positive: `(0, 0)`, then one point per distinct score in decreasing
/// order (equal scores, `−0.0` and `+0.0` included, are one threshold), ending at `(1, 1)`. Its
/// trapezoidal area is [`ood::auroc`].
///
/// # Errors
/// [`OodError::EmptyScores`] if either set is empty, [`OodError::NanScore`] for the first NaN
/// (ID first).
pub fn roc_curve(
    in_distribution: &[f64],
    out_of_distribution: &[f64],
) -> Result<Vec<RocPoint>, OodError> {
    check_scores(in_distribution, ScoreSet::InDistribution)?;
    check_scores(out_of_distribution, ScoreSet::OutOfDistribution)?;
    let mut labelled: Vec<(f64, bool)> = in_distribution
        .iter()
        .map(|&score| (score, true))
        .chain(out_of_distribution.iter().map(|&score| (score, false)))
        .collect();
    labelled.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
    let (n_in, n_out) = (
        in_distribution.len() as f64,
        out_of_distribution.len() as f64,
    );
    let (mut true_positives, mut false_positives) = (0_usize, 0_usize);
    let mut curve = vec![RocPoint {
        false_positive_rate: 0.0,
        true_positive_rate: 0.0,
    }];
    for (position, &(score, is_in_distribution)) in labelled.iter().enumerate() {
        if is_in_distribution {
            true_positives += 1;
        } else {
            false_positives += 1;
        }
        // `==`, not `total_cmp`: −0.0 and 0.0 are one score (they sort next to each other).
        let group_ends = labelled
            .get(position + 1)
            .is_none_or(|&(next, _)| next != score);
        if group_ends {
            curve.push(RocPoint {
                false_positive_rate: false_positives as f64 / n_out,
                true_positive_rate: true_positives as f64 / n_in,
            });
        }
    }
    Ok(curve)
}

/// At most `max_points` points of a ROC curve for drawing (at least its two ends): the first
/// point, then for each `j = 1, …, max_points − 1` the first point whose `FPR + TPR` (the
/// length travelled along a monotone curve, 0 to 2) reaches `2j/(max_points − 1)`, without
/// repeats. Every kept point is a point of the curve and the ends are kept. Between two kept
/// points `a` and `b` the dropped ones lie less than `δ = 2/(max_points − 1)` from `a` in
/// `FPR + TPR`, so (by the shoelace formula) the area between the curve and the chord `ab` is
/// at most `δ·|b − a|₁/2`; summed over the chords, whose `|b − a|₁` add up to 2, the area under
/// the thinned curve differs from the full one by at most `δ`. A curve with at most
/// `max_points` points is returned whole; `max_points < 2` keeps the two ends.
pub fn thin_roc_curve(curve: &[RocPoint], max_points: usize) -> Vec<RocPoint> {
    let max_points = max_points.max(2);
    if curve.len() <= max_points {
        return curve.to_vec();
    }
    let travelled = |point: &RocPoint| point.false_positive_rate + point.true_positive_rate;
    let last = curve.len() - 1;
    let mut kept = vec![curve[0]];
    let mut index = 0;
    for step in 1..max_points {
        let target = 2.0 * step as f64 / (max_points - 1) as f64;
        while index < last && travelled(&curve[index]) < target {
            index += 1;
        }
        if kept.last() != Some(&curve[index]) {
            kept.push(curve[index]);
        }
    }
    if kept.last() != Some(&curve[last]) {
        kept.push(curve[last]);
    }
    kept
}

/// Histograms of `in_distribution` and `out_of_distribution` over `bins` equal-width bins on
/// their joint range (module documentation), each bin's count as a share of its set.
///
/// # Errors
/// [`OodViewError::InvalidBinCount`] unless `1 <= bins <= 1000`, [`OodError::EmptyScores`] if a
/// set is empty, and [`OodViewError::NonFiniteValue`] for the first NaN or infinite value (ID
/// first).
pub fn paired_histogram(
    in_distribution: &[f64],
    out_of_distribution: &[f64],
    bins: usize,
) -> Result<PairedHistogram, OodViewError> {
    if !(1..=MAX_BINS).contains(&bins) {
        return Err(OodViewError::InvalidBinCount(bins));
    }
    for (values, set) in [
        (in_distribution, ScoreSet::InDistribution),
        (out_of_distribution, ScoreSet::OutOfDistribution),
    ] {
        if values.is_empty() {
            return Err(OodError::EmptyScores(set).into());
        }
        check_finite(values, set)?;
    }
    let all = in_distribution.iter().chain(out_of_distribution);
    let (mut low, mut high) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(low, high), &v| {
        (low.min(v), high.max(v))
    });
    if low == high {
        (low, high) = (low - 0.5, high + 0.5);
    }
    // Halved so that the span of any two finite values stays finite.
    let half_span = high / 2.0 - low / 2.0;
    let bin_of = |value: f64| {
        let position = (value / 2.0 - low / 2.0) / half_span * bins as f64;
        (position.floor() as usize).min(bins - 1)
    };
    let shares = |values: &[f64]| {
        let mut counts = vec![0_usize; bins];
        for &value in values {
            counts[bin_of(value)] += 1;
        }
        let total = values.len() as f64;
        counts
            .into_iter()
            .map(|count| count as f64 / total)
            .collect()
    };
    let edges = (0..=bins)
        .map(|edge| {
            let fraction = edge as f64 / bins as f64;
            low * (1.0 - fraction) + high * fraction
        })
        .collect();
    Ok(PairedHistogram {
        edges,
        in_distribution: shares(in_distribution),
        out_of_distribution: shares(out_of_distribution),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Tolerance for values that are exact fractions or computed two ways in `f64`.
    const TOLERANCE: f64 = 1e-12;

    fn assert_close(actual: f64, expected: f64) {
        assert!(
            (actual - expected).abs() <= TOLERANCE,
            "expected {expected}, got {actual}"
        );
    }

    fn point(false_positive_rate: f64, true_positive_rate: f64) -> RocPoint {
        RocPoint {
            false_positive_rate,
            true_positive_rate,
        }
    }

    /// Trapezoidal area under a curve given in increasing FPR and TPR.
    fn trapezoid_area(curve: &[RocPoint]) -> f64 {
        curve
            .windows(2)
            .map(|pair| {
                (pair[1].false_positive_rate - pair[0].false_positive_rate)
                    * (pair[0].true_positive_rate + pair[1].true_positive_rate)
                    / 2.0
            })
            .sum()
    }

    /// Four ID and four OOD scores; binary fractions, so every share and edge is exact.
    const HAND_IN: [f64; 4] = [3.0, 2.0, 1.5, 1.0];
    const HAND_OUT: [f64; 4] = [4.0, 1.25, 1.0, 0.0];

    #[test]
    fn threshold_keeps_95_percent_of_in_distribution_scores() {
        // ⌈0.95·4⌉ = 4: the smallest of four ID scores.
        assert_eq!(threshold_at_95_tpr(&HAND_IN), Ok(1.0));
        // ⌈0.95·20⌉ = 19: the second smallest of 1..=20; ⌈0.95·21⌉ = 20: again 2.
        let twenty: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(threshold_at_95_tpr(&twenty), Ok(2.0));
        let twenty_one: Vec<f64> = (1..=21).map(f64::from).collect();
        assert_eq!(threshold_at_95_tpr(&twenty_one), Ok(2.0));
        assert_eq!(
            threshold_at_95_tpr(&[]),
            Err(OodError::EmptyScores(ScoreSet::InDistribution))
        );
        assert_eq!(
            threshold_at_95_tpr(&[1.0, f64::NAN]),
            Err(OodError::NanScore {
                set: ScoreSet::InDistribution,
                index: 1
            })
        );
        // With ties at the threshold more than 95% of the ID scores lie at or above it.
        let summary = summarise(ScoreKind::Msp, &[5.0, 5.0, 5.0, 1.0, 1.0], &[1.0, 0.0]).unwrap();
        assert_eq!(summary.threshold, 1.0);
        assert_close(summary.true_positive_rate, 1.0);
        assert_close(summary.metrics.fpr95, 0.5);
    }

    #[test]
    fn hand_example_summary_histogram_and_roc() {
        let summary = summarise(ScoreKind::MaxLogit, &HAND_IN, &HAND_OUT).unwrap();
        assert_eq!(summary.threshold, 1.0);
        assert_close(summary.true_positive_rate, 1.0);
        // OOD scores ≥ 1: 4, 1.25 and 1.
        assert_close(summary.metrics.fpr95, 0.75);
        // Pairs with ID above OOD: 3 + 3 + 3 + 1, and the tie 1 = 1 counts half: 10.5/16.
        assert_close(summary.metrics.auroc, 10.5 / 16.0);

        // Range [0, 4] in four bins of width 1; 4 lands in the last bin.
        let histogram = paired_histogram(&HAND_IN, &HAND_OUT, 4).unwrap();
        assert_eq!(histogram.edges, [0.0, 1.0, 2.0, 3.0, 4.0]);
        assert_eq!(histogram.in_distribution, [0.0, 0.5, 0.25, 0.25]);
        assert_eq!(histogram.out_of_distribution, [0.25, 0.5, 0.0, 0.25]);

        // Decreasing: 4 (OOD), 3, 2, 1.5 (ID), 1.25 (OOD), 1 (ID and OOD tied), 0 (OOD).
        let curve = roc_curve(&HAND_IN, &HAND_OUT).unwrap();
        assert_eq!(
            curve,
            [
                point(0.0, 0.0),
                point(0.25, 0.0),
                point(0.25, 0.25),
                point(0.25, 0.5),
                point(0.25, 0.75),
                point(0.5, 0.75),
                point(0.75, 1.0),
                point(1.0, 1.0),
            ]
        );
        assert_close(trapezoid_area(&curve), 10.5 / 16.0);
    }

    #[test]
    fn histograms_of_equal_values_and_refusals() {
        // All values equal: the range is [v − ½, v + ½] and they sit in the middle bin.
        let histogram = paired_histogram(&[2.0, 2.0], &[2.0], 3).unwrap();
        assert_eq!(histogram.in_distribution, [0.0, 1.0, 0.0]);
        assert_eq!(histogram.out_of_distribution, [0.0, 1.0, 0.0]);
        assert_close(histogram.edges[0], 1.5);
        assert_close(histogram.edges[3], 2.5);
        // Values near the ends of f64 keep a finite span.
        let histogram = paired_histogram(&[-f64::MAX], &[f64::MAX], 2).unwrap();
        assert_eq!(histogram.in_distribution, [1.0, 0.0]);
        assert_eq!(histogram.out_of_distribution, [0.0, 1.0]);
        for bins in [0, MAX_BINS + 1] {
            assert_eq!(
                paired_histogram(&[1.0], &[1.0], bins),
                Err(OodViewError::InvalidBinCount(bins))
            );
        }
        assert_eq!(
            paired_histogram(&[1.0], &[], 5),
            Err(OodViewError::Ood(OodError::EmptyScores(
                ScoreSet::OutOfDistribution
            )))
        );
        assert!(matches!(
            paired_histogram(&[1.0, f64::INFINITY], &[1.0], 5),
            Err(OodViewError::NonFiniteValue {
                set: ScoreSet::InDistribution,
                index: 1,
                ..
            })
        ));
    }

    /// Scores on a coarse grid, so that many tie within and across the sets.
    fn tied_scores(rng: &mut ChaCha8Rng, n: usize, shift: i32) -> Vec<f64> {
        (0..n)
            .map(|_| f64::from(rng.random_range(0..12) + shift) / 4.0)
            .collect()
    }

    #[test]
    fn full_curve_area_is_the_auroc_and_the_threshold_gives_fpr95() {
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        for _ in 0..200 {
            let n_in = rng.random_range(1..60);
            let n_out = rng.random_range(1..60);
            let in_distribution = tied_scores(&mut rng, n_in, 3);
            let out_of_distribution = tied_scores(&mut rng, n_out, 0);
            let curve = roc_curve(&in_distribution, &out_of_distribution).unwrap();
            let auroc = ood::auroc(&in_distribution, &out_of_distribution).unwrap();
            assert_close(trapezoid_area(&curve), auroc);
            // The threshold reproduces `ood`'s FPR95: the OOD share at or above it.
            let threshold = threshold_at_95_tpr(&in_distribution).unwrap();
            let above = out_of_distribution
                .iter()
                .filter(|&&score| score >= threshold)
                .count();
            assert_close(
                above as f64 / n_out as f64,
                ood::fpr_at_95_tpr(&in_distribution, &out_of_distribution).unwrap(),
            );
            assert_eq!(curve[0], point(0.0, 0.0));
            assert_eq!(curve[curve.len() - 1], point(1.0, 1.0));
            // One point per distinct score, after (0, 0).
            let mut distinct: Vec<f64> = in_distribution
                .iter()
                .chain(&out_of_distribution)
                .copied()
                .collect();
            distinct.sort_by(f64::total_cmp);
            distinct.dedup();
            assert_eq!(curve.len(), distinct.len() + 1);
        }
        // −0.0 and 0.0 are one threshold.
        assert_eq!(roc_curve(&[0.0], &[-0.0]).unwrap().len(), 2);
    }

    #[test]
    fn thinning_keeps_the_ends_and_bounds_the_area_change() {
        let mut rng = ChaCha8Rng::seed_from_u64(29);
        let in_distribution: Vec<f64> = (0..3000).map(|_| rng.random::<f64>() + 0.3).collect();
        let out_of_distribution: Vec<f64> = (0..2000).map(|_| rng.random::<f64>()).collect();
        let curve = roc_curve(&in_distribution, &out_of_distribution).unwrap();
        assert_eq!(curve.len(), 5001);
        let auroc = ood::auroc(&in_distribution, &out_of_distribution).unwrap();
        for max_points in [2, 3, 10, 200, 1000] {
            let thinned = thin_roc_curve(&curve, max_points);
            assert!(thinned.len() <= max_points, "{}", thinned.len());
            assert!(thinned.len() >= max_points.min(3));
            assert_eq!(thinned[0], curve[0]);
            assert_eq!(thinned[thinned.len() - 1], curve[curve.len() - 1]);
            // A subsequence of the curve, in order.
            let mut rest = curve.iter();
            assert!(thinned.iter().all(|kept| rest.any(|p| p == kept)));
            let bound = 2.0 / (max_points - 1) as f64;
            assert!((trapezoid_area(&thinned) - auroc).abs() <= bound);
        }
        assert_eq!(thin_roc_curve(&curve[..5], 10), &curve[..5]);
        assert_eq!(thin_roc_curve(&curve, 0), [curve[0], curve[5000]]);
    }

    /// Rows of three logits whose largest entry is the hand scores above.
    const HAND_IN_LOGITS: [f32; 12] = [3.0, 0.0, 0.0, 0.0, 2.0, 0.0, 1.5, 0.0, 0.0, 1.0, 0.0, 0.0];
    const HAND_OUT_LOGITS: [f32; 12] =
        [0.0, 0.0, 4.0, 1.25, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0];

    fn hand_view(odin: Option<OdinScores>) -> OodView {
        let in_distribution = Logits::new(&HAND_IN_LOGITS, 3).unwrap();
        let out_of_distribution = Logits::new(&HAND_OUT_LOGITS, 3).unwrap();
        OodView::new(&in_distribution, &out_of_distribution, 1.0, odin).unwrap()
    }

    #[test]
    fn view_of_hand_logits() {
        let view = hand_view(None);
        let kinds: Vec<ScoreKind> = view.summaries().iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            [ScoreKind::Msp, ScoreKind::MaxLogit, ScoreKind::Energy]
        );
        // Max-logit gives the hand scores.
        assert_eq!(
            view.scores(ScoreKind::MaxLogit).unwrap(),
            (&HAND_IN[..], &HAND_OUT[..])
        );
        let summary = view.summary(ScoreKind::MaxLogit).unwrap();
        assert_eq!(summary.threshold, 1.0);
        assert_close(summary.metrics.fpr95, 0.75);
        assert_eq!(view.roc_curve(ScoreKind::MaxLogit).unwrap().len(), 8);
        // MSP and energy agree with `ood`'s functions.
        for kind in [ScoreKind::Msp, ScoreKind::Energy] {
            let (in_scores, out_scores) = view.scores(kind).unwrap();
            let expected = ood::detection_metrics(in_scores, out_scores).unwrap();
            assert_eq!(view.summary(kind).unwrap().metrics, expected);
        }
        assert_eq!(
            view.summary(ScoreKind::Odin),
            Err(OodViewError::MissingScore(ScoreKind::Odin))
        );
        assert!(view.score_histogram(ScoreKind::Odin, 10).is_err());

        // One non-zero logit per row: the norms are the hand scores too.
        let means = view.logit_norm_means();
        assert_close(means.in_distribution, 7.5 / 4.0);
        assert_close(means.out_of_distribution, 6.25 / 4.0);
        let norms = view.logit_norm_histogram(4).unwrap();
        assert_eq!(norms.in_distribution, [0.0, 0.5, 0.25, 0.25]);
        assert_eq!(norms.out_of_distribution, [0.25, 0.5, 0.0, 0.25]);
        let scores = view.score_histogram(ScoreKind::MaxLogit, 4).unwrap();
        assert_eq!(scores, norms);

        // MSP at T = 1 of a row with one logit z and two zeros: e^z/(e^z + 2).
        let msp = |z: f64| z.exp() / (z.exp() + 2.0);
        let surest = view.surest_out_of_distribution(2);
        assert_eq!(surest.len(), 2);
        assert_eq!((surest[0].index, surest[0].predicted_class), (0, 2));
        assert_close(surest[0].confidence, msp(4.0));
        assert_eq!((surest[1].index, surest[1].predicted_class), (1, 0));
        assert_close(surest[1].confidence, msp(1.25));
        // All four when more are asked for; the all-zero row is class 0 at 1/3.
        let all = view.surest_out_of_distribution(10);
        assert_eq!(all.len(), 4);
        assert_eq!((all[3].index, all[3].predicted_class), (3, 0));
        assert_close(all[3].confidence, 1.0 / 3.0);
    }

    #[test]
    fn view_with_odin_scores_and_refusals() {
        let odin_in = [0.5, 0.4, 0.3, 0.2];
        let odin_out = [0.1, 0.1, 0.35, 0.0];
        let view = hand_view(Some(OdinScores {
            in_distribution: &odin_in,
            out_of_distribution: &odin_out,
        }));
        assert_eq!(view.summaries().len(), 4);
        let summary = view.summary(ScoreKind::Odin).unwrap();
        assert_eq!(summary.threshold, 0.2);
        assert_close(summary.metrics.fpr95, 0.25);
        // ID above OOD in 4 + 4 + 3 + 3 of 16 pairs.
        assert_close(summary.metrics.auroc, 14.0 / 16.0);

        let in_distribution = Logits::new(&HAND_IN_LOGITS, 3).unwrap();
        let out_of_distribution = Logits::new(&HAND_OUT_LOGITS, 3).unwrap();
        let short = OdinScores {
            in_distribution: &odin_in,
            out_of_distribution: &odin_out[..3],
        };
        assert_eq!(
            OodView::new(&in_distribution, &out_of_distribution, 1.0, Some(short)).unwrap_err(),
            OodViewError::OdinCountMismatch {
                set: ScoreSet::OutOfDistribution,
                scores: 3,
                rows: 4
            }
        );
        let infinite = [0.5, f64::INFINITY, 0.3, 0.2];
        let bad = OdinScores {
            in_distribution: &infinite,
            out_of_distribution: &odin_out,
        };
        assert!(matches!(
            OodView::new(&in_distribution, &out_of_distribution, 1.0, Some(bad)),
            Err(OodViewError::NonFiniteValue {
                set: ScoreSet::InDistribution,
                index: 1,
                ..
            })
        ));
        assert_eq!(
            OodView::new(&in_distribution, &out_of_distribution, 0.0, None).unwrap_err(),
            OodViewError::Ood(OodError::InvalidTemperature(0.0))
        );
        let two_classes = Logits::new(&[1.0, 0.0], 2).unwrap();
        assert_eq!(
            OodView::new(&in_distribution, &two_classes, 1.0, None).unwrap_err(),
            OodViewError::ClassCountMismatch {
                in_distribution: 3,
                out_of_distribution: 2
            }
        );
    }

    #[test]
    fn score_kinds_have_lowercase_names() {
        let names = serde_json::to_string(&ScoreKind::ALL).unwrap();
        assert_eq!(names, r#"["msp","max_logit","energy","odin"]"#);
        let kinds: Vec<ScoreKind> = serde_json::from_str(&names).unwrap();
        assert_eq!(kinds, ScoreKind::ALL);
    }
}
