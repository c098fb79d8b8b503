//! The page's state and the computations behind each view, without any web type.
//!
//! The page holds one [`Lab`]: the test labels, the logits of each bundled model as inference
//! streams them in (batches may arrive in any order, from several workers), and a seeded split
//! of the test images into a calibration half (the temperature is fitted there; conformal
//! thresholds are computed there) and an evaluation half (every displayed metric). Views are
//! computed on the rows whose logits have arrived, so charts appear after the first batch and
//! refine as the rest comes in.
//!
//! Work that does not depend on the slider (gathering rows, fitting T, the metrics at T = 1
//! and at the fitted T) is cached and redone only when logits, split, bins or model change, so
//! a slider move costs one pass over the evaluation rows per chart.

use crate::bootstrap::{MetricIntervals, Resamples};
use crate::calibration::{self, Binning, CalibrationError, Logits, TemperatureFit};
use crate::calibration_null::NullOutcomes;
pub use crate::conformal::ScoreKind;
use crate::conformal::{self, ConformalError, Score};
use crate::corp::Corp;
use crate::data;
use crate::smooth_calibration::SmoothEce;

mod adaptive_view;
mod anatomy_view;
mod answers;
mod conditional_view;
mod conformal_view;
mod estimators_view;
mod feature_store;
mod halves;
mod intervals;
mod normalized_view;
mod ood_store;
pub mod ood_view;
mod own_image;
mod pac_view;
mod pvalues_view;
mod rivals;
mod selective_view;
mod shift_store;
mod shift_view;
mod streamed;
mod temperature_view;
mod venn_abers_view;
mod weighted_view;

pub use feature_store::{
    FeatureInputs, FeatureRequest, FeatureStore, NetworkFeatureScores, FEATURE_WIDTH,
};
pub use halves::Halves;
pub use ood_store::{
    DifferenceRequest, ImageSet, OodSet, OodStore, RankingRequest, DIFFERENCE_BOOTSTRAP,
};
pub use own_image::OwnImageSet;
pub use rivals::{RivalDifferences, RivalsRequest, RivalsView};
pub use shift_store::{ShiftStore, ShiftedSet, UnknownShiftedSet, SHIFT_SEED};
pub use shift_view::{ShiftMetrics, ShiftPoint, ShiftView, SHIFT_THUMBNAILS};
pub use streamed::Streamed;

pub use anatomy_view::{AnatomyCurves, AnatomyRequest, AnatomyView, MISTAKES};
use answers::Answers;
pub use conditional_view::WorstSlabView;
pub use conformal_view::{ConformalParts, ThresholdMethod, ThresholdMethodsView, CLUSTERS};
pub use conformal_view::{
    ConformalSettings, ConformalView, CoverageExperiment, Explanation, GalleryFilter, GalleryItem,
    ScoreComparison, LARGE_SET_SIZE, SWEEP_STEP, SWEEP_STEPS,
};
pub use estimators_view::EstimatorsView;
pub use intervals::{IntervalRequest, BOOTSTRAP};
pub use normalized_view::{NormalizedRequest, TemperatureComparison};
pub use pac_view::{PacExperiment, PacThreshold, PacView};
pub use pvalues_view::{
    ChartWindow, PvalueRequest, PvalueView, SortedPvalue, DEFAULT_FDR_LEVEL, DEFAULT_OOD_SHARE,
};
pub use selective_view::{RiskControlExperiment, SelectiveView, DEFAULT_RISK_LEVEL};
pub use venn_abers_view::GalleryInterval;

pub use adaptive_view::{AdaptiveView, StreamBlock, COVERAGE_WINDOW, DEFAULT_ACI_GAMMA};
use temperature_view::FixedReports;
pub use temperature_view::{TemperatureParts, TemperatureView, SMOOTH_CURVE_POINTS};
pub use weighted_view::WeightedView;

/// Why the lab refused a request.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LabError {
    #[error("unknown model index {index}: the lab holds {count} model(s)")]
    UnknownModel { index: usize, count: usize },
    #[error(
        "a batch of {len} logits starting at row {start} does not fit {rows} rows of {num_classes}"
    )]
    BatchOutOfRange {
        start: usize,
        len: usize,
        rows: usize,
        num_classes: usize,
    },
    #[error("label {label} at row {row} is outside [0, {num_classes})")]
    LabelOutOfRange {
        row: usize,
        label: u32,
        num_classes: usize,
    },
    #[error("the lab needs at least 2 classes and 2 rows")]
    TooSmall,
    #[error("{names} class names for {num_classes} classes")]
    ClassNameCount { names: usize, num_classes: usize },
    #[error("no logits yet on both halves of the split: wait for inference")]
    NotReady,
    #[error("temperature {0} is outside [{min}, {max}]", min = calibration::MIN_TEMPERATURE, max = calibration::MAX_TEMPERATURE)]
    TemperatureOutOfRange(f64),
    #[error("gallery row {0} is not an evaluation or calibration image with logits")]
    UnknownImage(usize),
    #[error("ODIN score of row {row} is not finite")]
    NonFiniteScore { row: usize },
    #[error(transparent)]
    Calibration(#[from] CalibrationError),
    #[error(transparent)]
    OodView(#[from] crate::lab::ood_view::OodViewError),
    #[error(transparent)]
    Conformal(#[from] ConformalError),
    #[error(transparent)]
    Bootstrap(#[from] crate::bootstrap::BootstrapError),
    #[error("feature of row {row} is not finite")]
    NonFiniteFeature { row: usize },
    #[error(transparent)]
    Features(#[from] crate::ood_features::FeatureError),
    #[error(transparent)]
    Selective(#[from] crate::selective::SelectiveError),
    #[error(transparent)]
    Domain(#[from] crate::domain_classifier::DomainError),
}

/// One network's accuracy and calibration, as the OOD lab compares them across networks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NetworkSummary {
    /// On every test image.
    pub accuracy: f64,
    /// ECE on the evaluation half at T = 1.
    pub ece_raw: f64,
    /// Fitted on the calibration half.
    pub fitted_temperature: f64,
    /// The fit stopped at a bound of the slider's range (0.05 or 20).
    pub fitted_bound_hit: bool,
    /// ECE on the evaluation half at the fitted T.
    pub ece_fitted: f64,
}

/// One half of the split, gathered into contiguous arrays for the metric functions.
#[derive(Debug, Clone, Default)]
pub struct Part {
    /// Test-set row of each gathered row.
    pub rows: Vec<usize>,
    /// `[rows.len(), K]` logits.
    pub logits: Vec<f32>,
    pub labels: Vec<u32>,
    /// The rows' uniform draws for randomized conformal scores.
    pub uniforms: Vec<f64>,
}

/// Cached results that depend on the data and split, not on the slider or the bins.
#[derive(Debug, Clone)]
struct Cache {
    calibration: Part,
    evaluation: Part,
    fit: TemperatureFit,
    reports: Option<FixedReports>,
    /// Smooth ECE at T = 1 and at the fitted T (no bins, so computed once).
    smooth_fixed: Option<[SmoothEce; 2]>,
    /// The CORP diagram and decompositions at T = 1 and at the fitted T (no bins either).
    corp_fixed: Option<[Corp; 2]>,
    /// The evaluation rows each resample of the smooth diagram's band draws (independent of
    /// T, so drawn once per split).
    band_resamples: Option<Resamples>,
    /// The uniforms of the null law behind the confidence verdict, for the evaluation rows
    /// (independent of T, so drawn once per split).
    null_outcomes: Option<NullOutcomes>,
    /// Each evaluation row's predicted class, for the top-label ECE (independent of T).
    predicted: Option<Vec<u32>>,
    /// The rows of the estimators table's last edge case.
    case_rows: Option<estimators_view::KeptCase>,
    /// Bootstrap intervals a worker computed for this network and split.
    intervals: Answers<IntervalRequest, MetricIntervals>,
    /// Temperature scaling's rivals a worker computed for this network and split.
    rivals: Answers<RivalsRequest, RivalsView>,
    /// Softmax of both halves at the temperature of the last conformal view.
    probabilities: Option<Probabilities>,
    /// Conformal scores at that temperature, one table per score (at most four).
    score_tables: Vec<ScoreTable>,
    /// Confidences at T = 1 and at the fitted T for the selective classification block.
    selective_fixed: Option<selective_view::SelectiveFixed>,
    /// The last selective classification block, kept while T and the risk level stay.
    selective: Option<SelectiveView>,
    /// Both halves' confidences, the risk–coverage curve and its AURC at the last selective
    /// block's T, kept while T stays (the risk level moves only the threshold).
    selective_at: Option<selective_view::SelectiveAtTemperature>,
    /// The last conformal view with its settings and parts, kept while they stay (the lab's
    /// other sliders, the PAC δ and the risk level, move blocks of their own).
    conformal: Option<(ConformalSettings, ConformalParts, ConformalView)>,
    /// The anatomy of the fit a worker computed for this network and split.
    anatomy: Answers<AnatomyRequest, AnatomyCurves>,
    /// The evaluation images' order along each worst-slab direction.
    slab_orders: Option<crate::conformal::worst_slab::SlabOrders>,
    /// The standard deviation of CovGap's noise floor, and the α it is for.
    covgap_floor_spread: Option<(f64, f64)>,
    /// The Venn–Abers predictor of the gallery's intervals, at the last gallery's T.
    venn_abers: Option<venn_abers_view::KeptVennAbers>,
}

/// Softmax probabilities of both halves at one temperature.
#[derive(Debug, Clone)]
struct Probabilities {
    temperature: f64,
    calibration: Vec<f64>,
    evaluation: Vec<f64>,
    /// Both halves' rankings, once a ranked score asks for them: a move of RAPS's or SAPS's
    /// parameters scores the rows again in the same order.
    rankings: Option<[Option<conformal::Rankings>; 2]>,
}

/// One score at one temperature: the calibration half's true-label scores (the thresholds)
/// and every label's score on the evaluation half (the sets); moving α reuses them.
#[derive(Debug, Clone)]
struct ScoreTable {
    score: Score,
    /// `[n_calibration]`.
    calibration: Vec<f64>,
    /// `[n_evaluation, K]`.
    evaluation: Vec<f64>,
    /// Coverage and set size over α with marginal thresholds: the same at every α, computed
    /// once the lab shows it.
    sweep: Option<Vec<conformal::SweepPoint>>,
}

/// The page's state: labels, streamed logits per model, the split, and cached results.
#[derive(Debug, Clone)]
pub struct Lab {
    labels: Vec<u32>,
    num_classes: usize,
    /// What the readouts and charts call each class.
    class_names: Vec<String>,
    /// Each model's test-set logits, `[rows, K]`.
    models: Vec<Streamed<f32>>,
    active: usize,
    split_seed: u64,
    is_calibration: Vec<bool>,
    /// One uniform draw per test row for the randomized conformal scores, seeded with the
    /// split seed, so an image keeps its draw while α, T or the score change.
    row_uniforms: Vec<f64>,
    cache: Option<Cache>,
    /// Each model's [`NetworkSummary`] on this split, with the bins it was computed with.
    summaries: Vec<Option<(usize, Binning, NetworkSummary)>>,
    /// Each model's calibration scores behind the sets of a reader's own image.
    own_image_scores: Vec<Option<own_image::CalibrationScores>>,
}

impl Lab {
    /// A lab for `labels` (one per test image) and `model_count` models of `num_classes`.
    ///
    /// # Errors
    /// [`LabError::TooSmall`] for fewer than 2 classes or rows, [`LabError::LabelOutOfRange`].
    pub fn new(labels: Vec<u32>, num_classes: usize, model_count: usize) -> Result<Self, LabError> {
        if num_classes < 2 || labels.len() < 2 || model_count == 0 {
            return Err(LabError::TooSmall);
        }
        if let Some((row, &label)) = labels
            .iter()
            .enumerate()
            .find(|(_, &l)| l as usize >= num_classes)
        {
            return Err(LabError::LabelOutOfRange {
                row,
                label,
                num_classes,
            });
        }
        let rows = labels.len();
        let mut lab = Self {
            labels,
            num_classes,
            class_names: (0..num_classes).map(|k| format!("class {k}")).collect(),
            models: vec![Streamed::new(rows, num_classes); model_count],
            active: 0,
            split_seed: 0,
            is_calibration: Vec::new(),
            row_uniforms: Vec::new(),
            cache: None,
            summaries: vec![None; model_count],
            own_image_scores: vec![None; model_count],
        };
        lab.set_split(0);
        Ok(lab)
    }

    /// The lab with these names for its classes instead of "class 0", "class 1", ….
    ///
    /// # Errors
    /// [`LabError::ClassNameCount`] unless there is one name per class.
    pub fn with_class_names(mut self, names: Vec<String>) -> Result<Self, LabError> {
        if names.len() != self.num_classes {
            return Err(LabError::ClassNameCount {
                names: names.len(),
                num_classes: self.num_classes,
            });
        }
        self.class_names = names;
        Ok(self)
    }

    /// What the readouts and charts call each class.
    pub fn class_names(&self) -> &[String] {
        &self.class_names
    }

    /// Number of classes.
    pub fn num_classes(&self) -> usize {
        self.num_classes
    }

    /// Number of test rows.
    pub fn rows(&self) -> usize {
        self.labels.len()
    }

    /// The label of test row `row`, if there is one.
    pub fn label(&self, row: usize) -> Option<u32> {
        self.labels.get(row).copied()
    }

    /// Rows whose logits have arrived for `model`.
    ///
    /// # Errors
    /// [`LabError::UnknownModel`].
    pub fn arrived(&self, model: usize) -> Result<usize, LabError> {
        Ok(self.model(model)?.arrived())
    }

    fn model(&self, index: usize) -> Result<&Streamed<f32>, LabError> {
        self.models.get(index).ok_or(LabError::UnknownModel {
            index,
            count: self.models.len(),
        })
    }

    /// Stores a batch of logits for rows `start..start + logits.len()/K` of `model`.
    ///
    /// # Errors
    /// [`LabError::UnknownModel`], [`LabError::BatchOutOfRange`] for a batch that is ragged or
    /// runs past the last row, and the non-finite-logit error of [`Logits::new`].
    pub fn add_logits(
        &mut self,
        model: usize,
        start: usize,
        logits: &[f32],
    ) -> Result<(), LabError> {
        self.model(model)?.check_batch(start, logits.len())?;
        Logits::new(logits, self.num_classes)?;
        self.models[model].add(start, logits)?;
        self.summaries[model] = None;
        if model == self.active {
            self.cache = None;
        }
        Ok(())
    }

    /// Makes `model` the one every view shows.
    ///
    /// # Errors
    /// [`LabError::UnknownModel`].
    pub fn select_model(&mut self, model: usize) -> Result<(), LabError> {
        self.model(model)?;
        if model != self.active {
            self.active = model;
            self.cache = None;
        }
        Ok(())
    }

    /// The model every view shows (the one [`Lab::select_model`] chose last).
    pub fn shown_model(&self) -> usize {
        self.active
    }

    /// The seed of the current split.
    pub fn split_seed(&self) -> u64 {
        self.split_seed
    }

    /// Every test row's label.
    pub fn labels(&self) -> &[u32] {
        &self.labels
    }

    /// Whether each test row is in the calibration half of the current split.
    pub fn calibration_flags(&self) -> &[bool] {
        &self.is_calibration
    }

    /// Splits the test rows into calibration and evaluation halves with `seed`.
    pub fn set_split(&mut self, seed: u64) {
        let (calibration_rows, _) =
            data::seeded_split(self.rows(), data::CALIBRATION_FRACTION, seed);
        let mut is_calibration = vec![false; self.rows()];
        for row in calibration_rows {
            is_calibration[row] = true;
        }
        self.split_seed = seed;
        self.is_calibration = is_calibration;
        self.row_uniforms = conformal::uniforms(self.rows(), seed);
        self.cache = None;
        self.summaries.iter_mut().for_each(|s| *s = None);
    }

    /// Gathers the arrived rows of `model` into the two halves.
    fn gather(&self, model: usize) -> (Part, Part) {
        let model = &self.models[model];
        let (mut calibration, mut evaluation) = (Part::default(), Part::default());
        // Sized first: growing the halves' logits by copies costs as much as gathering them.
        let arrived = |in_calibration: bool| {
            (0..self.rows())
                .filter(|&row| model.has(row) && self.is_calibration[row] == in_calibration)
                .count()
        };
        for (part, rows) in [
            (&mut calibration, arrived(true)),
            (&mut evaluation, arrived(false)),
        ] {
            part.rows.reserve_exact(rows);
            part.logits.reserve_exact(rows * self.num_classes);
            part.labels.reserve_exact(rows);
            part.uniforms.reserve_exact(rows);
        }
        for row in (0..self.rows()).filter(|&row| model.has(row)) {
            let part = if self.is_calibration[row] {
                &mut calibration
            } else {
                &mut evaluation
            };
            part.rows.push(row);
            part.logits.extend_from_slice(model.row(row));
            part.labels.push(self.labels[row]);
            part.uniforms.push(self.row_uniforms[row]);
        }
        (calibration, evaluation)
    }

    /// The gathered halves and the fitted temperature, computed when stale.
    fn prepared(&mut self) -> Result<&mut Cache, LabError> {
        if self.cache.is_none() {
            let (calibration, evaluation) = self.gather(self.active);
            if calibration.labels.is_empty() || evaluation.labels.is_empty() {
                return Err(LabError::NotReady);
            }
            let fit = calibration::fit_temperature(
                &Logits::new(&calibration.logits, self.num_classes)?,
                &calibration.labels,
            )?;
            self.cache = Some(Cache {
                calibration,
                evaluation,
                fit,
                reports: None,
                smooth_fixed: None,
                corp_fixed: None,
                band_resamples: None,
                null_outcomes: None,
                predicted: None,
                case_rows: None,
                intervals: Answers::default(),
                rivals: Answers::default(),
                probabilities: None,
                score_tables: Vec::new(),
                selective_fixed: None,
                selective: None,
                selective_at: None,
                conformal: None,
                anatomy: Answers::default(),
                slab_orders: None,
                covgap_floor_spread: None,
                venn_abers: None,
            });
        }
        self.cache.as_mut().ok_or(LabError::NotReady)
    }

    /// The test-set logits of `model` once every row has arrived (`[rows, K]`).
    ///
    /// # Errors
    /// [`LabError::UnknownModel`].
    pub fn complete_logits(&self, model: usize) -> Result<Option<&[f32]>, LabError> {
        let logits = self.model(model)?;
        Ok(logits.is_complete().then(|| logits.values()))
    }

    /// Accuracy on every test image, and raw and scaled calibration on this split, of a
    /// network whose logits have all arrived: the OOD lab's line for it.
    ///
    /// # Errors
    /// [`LabError::UnknownModel`], [`LabError::NotReady`] before every row has arrived, and
    /// the calibration module's errors for a bad bin count.
    pub fn network_summary(
        &mut self,
        model: usize,
        bins: usize,
        binning: Binning,
    ) -> Result<NetworkSummary, LabError> {
        if let Some(Some((b, kind, summary))) = self.summaries.get(model) {
            if (*b, *kind) == (bins, binning) {
                return Ok(*summary);
            }
        }
        let summary = self.compute_network_summary(model, bins, binning)?;
        self.summaries[model] = Some((bins, binning, summary));
        Ok(summary)
    }

    fn compute_network_summary(
        &self,
        model: usize,
        bins: usize,
        binning: Binning,
    ) -> Result<NetworkSummary, LabError> {
        let all = self.complete_logits(model)?.ok_or(LabError::NotReady)?;
        let k = self.num_classes;
        let accuracy =
            calibration::evaluate(&Logits::new(all, k)?, &self.labels, 1.0, bins, binning)?
                .accuracy;
        let (calibration_part, evaluation) = self.gather(model);
        let fit = calibration::fit_temperature(
            &Logits::new(&calibration_part.logits, k)?,
            &calibration_part.labels,
        )?;
        let evaluation_logits = Logits::new(&evaluation.logits, k)?;
        let at = |t: f64| {
            calibration::evaluate(&evaluation_logits, &evaluation.labels, t, bins, binning)
        };
        let (raw, scaled) = (at(1.0)?, at(fit.temperature)?);
        Ok(NetworkSummary {
            accuracy,
            ece_raw: raw.ece,
            fitted_temperature: fit.temperature,
            fitted_bound_hit: fit.bound_hit.is_some(),
            ece_fitted: scaled.ece,
        })
    }

    /// The temperature fitted on the arrived calibration rows of the active model.
    ///
    /// # Errors
    /// [`LabError::NotReady`] before any row of either half has arrived.
    pub fn fitted_temperature(&mut self) -> Result<TemperatureFit, LabError> {
        Ok(self.prepared()?.fit.clone())
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod test_support;
