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

use crate::calibration::{predicted_class, Logits, MAX_BINS};
use crate::ood::{
    self, check_scores, DetectionMetrics, GroupedScores, OodError, ScoreSet,
    TARGET_TRUE_POSITIVE_PERCENT,
};

/// A score that separates ID from OOD inputs, higher = more ID (serde: `"msp"`,
/// `"max_logit"`, `"energy"`, `"odin"`, and the feature detectors' `"mahalanobis"`, `"knn"`,
/// `"react"`, `"ash"`, `"vim"`, `"gradnorm"`, the keys of `calibra ood --model --json`).
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
    /// The feature detectors of `ood_features`, fitted on the ID calibration half.
    Mahalanobis,
    Knn,
    React,
    Ash,
    Vim,
    #[serde(rename = "gradnorm")]
    GradNorm,
}

impl ScoreKind {
    /// Every kind, in the order the lab lists them.
    pub const ALL: [ScoreKind; 10] = [
        ScoreKind::Msp,
        ScoreKind::MaxLogit,
        ScoreKind::Energy,
        ScoreKind::Odin,
        ScoreKind::Mahalanobis,
        ScoreKind::Knn,
        ScoreKind::React,
        ScoreKind::Ash,
        ScoreKind::Vim,
        ScoreKind::GradNorm,
    ];

    /// The kinds that read the penultimate features, in [`ScoreKind::ALL`]'s order.
    pub const FEATURES: [ScoreKind; 6] = {
        let [_, _, _, _, features @ ..] = Self::ALL;
        features
    };

    /// Whether the score reads the penultimate features (one of [`ScoreKind::FEATURES`]).
    pub fn reads_features(self) -> bool {
        Self::FEATURES.contains(&self)
    }

    /// Whether the score is computed from the logits alone (at the view's temperature).
    pub fn reads_logits_only(self) -> bool {
        matches!(self, Self::Msp | Self::MaxLogit | Self::Energy)
    }
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

    /// Adds a score computed elsewhere (the feature detectors'): its ID and OOD values, higher
    /// = more ID. Its ID set may be another than the logits' (the feature detectors score the
    /// evaluation half, having been fitted on the calibration half); each kind is added once,
    /// in [`ScoreKind::ALL`]'s order, which keeps [`OodView::summaries`] in it.
    ///
    /// # Errors
    /// [`OodViewError::NonFiniteValue`] for the first NaN or infinite value (ID first), and
    /// [`OodError::EmptyScores`] for an empty set.
    pub fn add_scores(
        &mut self,
        kind: ScoreKind,
        in_distribution: Vec<f64>,
        out_of_distribution: Vec<f64>,
    ) -> Result<(), OodViewError> {
        check_finite(&in_distribution, ScoreSet::InDistribution)?;
        check_finite(&out_of_distribution, ScoreSet::OutOfDistribution)?;
        let summary = summarise(kind, &in_distribution, &out_of_distribution)?;
        self.scores.push(ScoreSets {
            kind,
            in_distribution,
            out_of_distribution,
        });
        self.summaries.push(summary);
        Ok(())
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
    let grouped = GroupedScores::new(in_distribution, out_of_distribution)?;
    let (n_in, n_out) = (
        in_distribution.len() as f64,
        out_of_distribution.len() as f64,
    );
    let (mut true_positives, mut false_positives) = (0_usize, 0_usize);
    let mut curve = vec![RocPoint {
        false_positive_rate: 0.0,
        true_positive_rate: 0.0,
    }];
    for (in_here, out_here) in grouped.counts_from_highest() {
        true_positives += in_here;
        false_positives += out_here;
        curve.push(RocPoint {
            false_positive_rate: false_positives as f64 / n_out,
            true_positive_rate: true_positives as f64 / n_in,
        });
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
#[path = "ood_view_tests.rs"]
mod tests;
