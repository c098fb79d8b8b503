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

use crate::calibration::{
    self, Bin, Binning, CalibrationError, CalibrationReport, Logits, TemperatureFit,
};
use crate::conformal::{self, ConformalError, Score, SetMetrics, SweepPoint, Thresholds};
use crate::data;
use crate::sentences::{self, CoverageVerdict, ExperimentSummary};

/// Resampled outcomes behind the ECE noise floor: enough for a mean within about ±0.0006 at
/// 5,000 images, few enough for a slider frame.
const NOISE_FLOOR_DRAWS: usize = 10;

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
    #[error("no logits yet on both halves of the split: wait for inference")]
    NotReady,
    #[error("temperature {0} is outside [{min}, {max}]", min = calibration::MIN_TEMPERATURE, max = calibration::MAX_TEMPERATURE)]
    TemperatureOutOfRange(f64),
    #[error("gallery row {0} is not an evaluation or calibration image with logits")]
    UnknownImage(usize),
    #[error(transparent)]
    Calibration(#[from] CalibrationError),
    #[error(transparent)]
    Conformal(#[from] ConformalError),
}

/// Logits of one model, `[rows, K]` row-major, with which rows have arrived.
#[derive(Debug, Clone)]
struct ModelLogits {
    values: Vec<f32>,
    arrived: Vec<bool>,
    arrived_count: usize,
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

/// What the temperature lab shows, at one slider temperature.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TemperatureView {
    pub temperature: f64,
    pub fitted_temperature: f64,
    /// Set when the fit stopped at 0.05 or 20.
    pub fitted_bound_hit: bool,
    pub n_calibration: usize,
    pub n_evaluation: usize,
    /// Evaluation metrics at the slider's T, at T = 1 and at the fitted T.
    pub at_temperature: CalibrationReport,
    pub at_one: CalibrationReport,
    pub at_fitted: CalibrationReport,
    /// Top-label confidences of the evaluation rows at the slider's T, counted in the
    /// reliability diagram's equal-width bins.
    pub confidence_counts: Vec<usize>,
    pub mean_confidence: f64,
    /// ECE a perfectly calibrated network with these confidences would show on these images.
    pub ece_floor: f64,
    /// What mean confidence, accuracy and ECE say together, in words.
    pub verdict: String,
    /// Reliability bins of each class (binned on p_k) at the slider's T.
    pub classwise_bins: Vec<Vec<Bin>>,
}

/// Cached results that depend on the data and split, not on the slider or the bins.
#[derive(Debug, Clone)]
struct Cache {
    calibration: Part,
    evaluation: Part,
    fit: TemperatureFit,
    reports: Option<FixedReports>,
    /// Softmax of both halves at the temperature of the last conformal view.
    probabilities: Option<Probabilities>,
    /// Conformal scores at that temperature, one table per score (at most four).
    score_tables: Vec<ScoreTable>,
}

/// Softmax probabilities of both halves at one temperature.
#[derive(Debug, Clone)]
struct Probabilities {
    temperature: f64,
    calibration: Vec<f64>,
    evaluation: Vec<f64>,
}

/// The scores of every label of both halves, for one score at one temperature: moving α
/// reuses them.
#[derive(Debug, Clone)]
struct ScoreTable {
    score: Score,
    /// `[n_calibration, K]` and `[n_evaluation, K]`.
    calibration: Vec<f64>,
    evaluation: Vec<f64>,
}

/// Evaluation metrics at T = 1 and at the fitted T, for one choice of bins.
#[derive(Debug, Clone)]
struct FixedReports {
    binning: (usize, Binning),
    at_one: CalibrationReport,
    at_fitted: CalibrationReport,
}

/// The page's state: labels, streamed logits per model, the split, and cached results.
#[derive(Debug, Clone)]
pub struct Lab {
    labels: Vec<u32>,
    num_classes: usize,
    models: Vec<ModelLogits>,
    active: usize,
    split_seed: u64,
    is_calibration: Vec<bool>,
    /// One uniform draw per test row for the randomized conformal scores, seeded with the
    /// split seed, so an image keeps its draw while α, T or the score change.
    row_uniforms: Vec<f64>,
    cache: Option<Cache>,
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
            models: vec![
                ModelLogits {
                    values: vec![0.0; rows * num_classes],
                    arrived: vec![false; rows],
                    arrived_count: 0,
                };
                model_count
            ],
            active: 0,
            split_seed: 0,
            is_calibration: Vec::new(),
            row_uniforms: Vec::new(),
            cache: None,
        };
        lab.set_split(0);
        Ok(lab)
    }

    /// Number of test rows.
    pub fn rows(&self) -> usize {
        self.labels.len()
    }

    /// Rows whose logits have arrived for `model`.
    ///
    /// # Errors
    /// [`LabError::UnknownModel`].
    pub fn arrived(&self, model: usize) -> Result<usize, LabError> {
        Ok(self.model(model)?.arrived_count)
    }

    fn model(&self, index: usize) -> Result<&ModelLogits, LabError> {
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
        self.model(model)?;
        let (rows, k) = (self.rows(), self.num_classes);
        let out_of_range = LabError::BatchOutOfRange {
            start,
            len: logits.len(),
            rows,
            num_classes: k,
        };
        if logits.is_empty() || !logits.len().is_multiple_of(k) || start + logits.len() / k > rows {
            return Err(out_of_range);
        }
        Logits::new(logits, k)?;
        let entry = &mut self.models[model];
        entry.values[start * k..start * k + logits.len()].copy_from_slice(logits);
        for arrived in &mut entry.arrived[start..start + logits.len() / k] {
            if !*arrived {
                *arrived = true;
                entry.arrived_count += 1;
            }
        }
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

    /// Index of the model every view shows.
    pub fn active_model(&self) -> usize {
        self.active
    }

    /// Splits the test rows into calibration and evaluation halves with `seed`.
    pub fn set_split(&mut self, seed: u64) {
        let (calibration_rows, _) = data::seeded_split(self.rows(), 0.5, seed);
        let mut is_calibration = vec![false; self.rows()];
        for row in calibration_rows {
            is_calibration[row] = true;
        }
        self.split_seed = seed;
        self.is_calibration = is_calibration;
        self.row_uniforms = conformal::uniforms(self.rows(), seed);
        self.cache = None;
    }

    /// Seed of the current split.
    pub fn split_seed(&self) -> u64 {
        self.split_seed
    }

    /// Gathers the arrived rows of the active model into the two halves.
    fn gather(&self) -> (Part, Part) {
        let model = &self.models[self.active];
        let k = self.num_classes;
        let (mut calibration, mut evaluation) = (Part::default(), Part::default());
        for (row, &arrived) in model.arrived.iter().enumerate() {
            if !arrived {
                continue;
            }
            let part = if self.is_calibration[row] {
                &mut calibration
            } else {
                &mut evaluation
            };
            part.rows.push(row);
            part.logits
                .extend_from_slice(&model.values[row * k..(row + 1) * k]);
            part.labels.push(self.labels[row]);
            part.uniforms.push(self.row_uniforms[row]);
        }
        (calibration, evaluation)
    }

    /// The gathered halves and the fitted temperature, computed when stale.
    fn prepared(&mut self) -> Result<&mut Cache, LabError> {
        if self.cache.is_none() {
            let (calibration, evaluation) = self.gather();
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
                probabilities: None,
                score_tables: Vec::new(),
            });
        }
        self.cache.as_mut().ok_or(LabError::NotReady)
    }

    /// The temperature fitted on the arrived calibration rows of the active model.
    ///
    /// # Errors
    /// [`LabError::NotReady`] before any row of either half has arrived.
    pub fn fitted_temperature(&mut self) -> Result<TemperatureFit, LabError> {
        Ok(self.prepared()?.fit.clone())
    }

    /// The calibration and evaluation halves of the active model (arrived rows only).
    ///
    /// # Errors
    /// [`LabError::NotReady`] before any row of either half has arrived.
    pub fn parts(&mut self) -> Result<(&Part, &Part), LabError> {
        let cache = self.prepared()?;
        Ok((&cache.calibration, &cache.evaluation))
    }

    /// Everything the temperature lab shows at `temperature` with `bins` bins.
    ///
    /// # Errors
    /// [`LabError::TemperatureOutOfRange`] outside `[0.05, 20]`, [`LabError::NotReady`], and
    /// the bin-count error of the calibration module.
    pub fn temperature_view(
        &mut self,
        temperature: f64,
        bins: usize,
        binning: Binning,
    ) -> Result<TemperatureView, LabError> {
        if !(calibration::MIN_TEMPERATURE..=calibration::MAX_TEMPERATURE).contains(&temperature) {
            return Err(LabError::TemperatureOutOfRange(temperature));
        }
        let k = self.num_classes;
        let seed = self.split_seed;
        let cache = self.prepared()?;
        let logits = Logits::new(&cache.evaluation.logits, k)?;
        let labels = &cache.evaluation.labels;
        if cache
            .reports
            .as_ref()
            .is_none_or(|r| r.binning != (bins, binning))
        {
            let report = |t: f64| calibration::evaluate(&logits, labels, t, bins, binning);
            cache.reports = Some(FixedReports {
                binning: (bins, binning),
                at_one: report(1.0)?,
                at_fitted: report(cache.fit.temperature)?,
            });
        }
        let reports = cache.reports.as_ref().ok_or(LabError::NotReady)?;
        let at_temperature = calibration::evaluate(&logits, labels, temperature, bins, binning)?;
        let (confidences, _) = calibration::confidences(&logits, labels, temperature)?;
        let mean_confidence = confidences.iter().sum::<f64>() / confidences.len() as f64;
        let ece_floor =
            calibration::ece_noise_floor(&confidences, bins, binning, NOISE_FLOOR_DRAWS, seed)?;
        let verdict = sentences::confidence_verdict(
            temperature,
            at_temperature.accuracy,
            mean_confidence,
            at_temperature.ece,
            ece_floor,
        );
        Ok(TemperatureView {
            temperature,
            fitted_temperature: cache.fit.temperature,
            fitted_bound_hit: cache.fit.bound_hit.is_some(),
            n_calibration: cache.calibration.labels.len(),
            n_evaluation: labels.len(),
            confidence_counts: calibration::histogram_counts(&confidences, bins)?,
            mean_confidence,
            ece_floor,
            verdict,
            classwise_bins: calibration::classwise_bins(
                &logits,
                labels,
                temperature,
                bins,
                binning,
            )?,
            at_one: reports.at_one.clone(),
            at_fitted: reports.at_fitted.clone(),
            at_temperature,
        })
    }
}

/// Sizes at or above this count as a "large" prediction set in the gallery.
pub const LARGE_SET_SIZE: u32 = 3;
/// Miscoverage levels of the α sweep: 0.01, 0.02, …, 0.30.
const SWEEP_STEPS: usize = 30;
const SWEEP_STEP: f64 = 0.01;
/// Points of the theoretical coverage density curves.
const DENSITY_POINTS: usize = 240;

/// Which conformal score, before its parameters are attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScoreKind {
    Lac,
    Aps,
    Raps,
    Saps,
}

/// Everything the conformal lab's controls set.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ConformalSettings {
    /// The temperature lab's T: the sets use softmax(z / T).
    pub temperature: f64,
    pub alpha: f64,
    pub score: ScoreKind,
    /// Randomized APS, RAPS and SAPS (u ~ U(0, 1)); off: u = 1.
    pub randomized: bool,
    pub raps_lambda: f64,
    pub raps_k_reg: usize,
    pub saps_lambda: f64,
    /// Mondrian thresholds, one per class, instead of one for all.
    pub class_conditional: bool,
}

impl ConformalSettings {
    /// The score `kind` with these settings' parameters.
    pub fn score_of(&self, kind: ScoreKind) -> Score {
        let randomized = self.randomized;
        match kind {
            ScoreKind::Lac => Score::Lac,
            ScoreKind::Aps => Score::Aps { randomized },
            ScoreKind::Raps => Score::Raps {
                lambda: self.raps_lambda,
                k_reg: self.raps_k_reg,
                randomized,
            },
            ScoreKind::Saps => Score::Saps {
                lambda: self.saps_lambda,
                randomized,
            },
        }
    }
}

/// One score's results at the current α and T, for the comparison table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ScoreComparison {
    pub score: ScoreKind,
    pub coverage: f64,
    pub average_set_size: f64,
    pub singleton_rate: f64,
    pub empty_rate: f64,
}

/// What the conformal lab shows.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ConformalView {
    pub alpha: f64,
    pub n_calibration: usize,
    pub n_evaluation: usize,
    /// One threshold (marginal) or one per class (Mondrian); `+∞` where too few rows.
    pub qhat: Vec<f64>,
    /// Each threshold as the readout writes it ([`sentences::threshold_text`]).
    pub qhat_text: Vec<String>,
    /// The guarantee `1 − α ≤ E[coverage] ≤ upper`: `upper = 1 − α + 1/(n + 1)` for marginal
    /// thresholds, `1 − α + max_y 1/(n_y + 1)` for Mondrian ones (each class's bound, so the
    /// marginal coverage, a mix of the classes', stays below the largest).
    pub guarantee_lower: f64,
    pub guarantee_upper: f64,
    /// Standard deviation of one split's coverage (Beta-Binomial law); 0 without a finite q̂.
    pub split_standard_deviation: f64,
    /// Calibration images whose true-label score equals their q̂ (ties void the upper bound).
    pub ties_at_threshold: usize,
    pub verdict: CoverageVerdict,
    /// Which classes fall short and which overshoot, in words.
    pub per_class_sentence: String,
    pub metrics: SetMetrics,
    /// Evaluation images with each set size `0..=K`.
    pub size_counts: Vec<usize>,
    /// Coverage and set size over α (marginal thresholds) for the chosen score.
    pub sweep: Vec<SweepPoint>,
    /// All four scores at the current α and T.
    pub comparison: Vec<ScoreComparison>,
}

/// Coverage over random calibration/evaluation splits, against theory.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CoverageExperiment {
    pub coverages: Vec<f64>,
    /// Sizes, observed mean and spread, and the theory's (serialised flat, beside the rest).
    #[serde(flatten)]
    pub summary: ExperimentSummary,
    /// `(x, density)` of `Beta(k, n + 1 − k)`.
    pub beta_density: Vec<(f64, f64)>,
    /// The caption, computed from these numbers.
    pub caption: String,
}

/// Which evaluation images the gallery shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GalleryFilter {
    All,
    /// Sets that miss the true label.
    Misses,
    /// Sets of [`LARGE_SET_SIZE`] labels or more.
    Large,
    /// Empty sets.
    Empty,
}

/// One image of the gallery with its prediction set.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GalleryItem {
    /// Row in the test set (index of the image).
    pub row: usize,
    pub label: u32,
    pub predicted: u32,
    pub set: Vec<u32>,
    pub covered: bool,
    /// The true label's score `s(x, y)`.
    pub true_label_score: f64,
}

/// Why each label of one image is in its set or not.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Explanation {
    pub row: usize,
    pub calibration: bool,
    pub label: u32,
    /// softmax(z / T) per label.
    pub probabilities: Vec<f64>,
    /// s(x, y) per label, and the threshold each is compared with.
    pub scores: Vec<f64>,
    pub thresholds: Vec<f64>,
    /// Each score and its threshold written with enough decimals to show which is larger.
    pub score_text: Vec<String>,
    pub threshold_text: Vec<String>,
    pub in_set: Vec<bool>,
}

/// How many of `labels` fall in each of `num_classes` classes.
fn class_counts(labels: &[u32], num_classes: usize) -> Vec<usize> {
    let mut counts = vec![0; num_classes];
    for &label in labels {
        counts[label as usize] += 1;
    }
    counts
}

/// The name of class `k`: Fashion-MNIST's when the lab has its ten classes.
fn class_name(k: usize, num_classes: usize) -> String {
    match data::FASHION_MNIST_CLASSES.get(k) {
        Some(name) if num_classes == data::FASHION_MNIST_CLASSES.len() => (*name).to_string(),
        _ => format!("class {k}"),
    }
}

/// The per-class chart's sentence, with the typical per-class spread of one split under
/// Mondrian thresholds (the mean over classes of each class's Beta-Binomial deviation).
fn per_class_sentence(
    per_class_coverage: &[Option<f64>],
    calibration_counts: &[usize],
    evaluation_counts: &[usize],
    alpha: f64,
    mondrian: bool,
) -> String {
    let k = per_class_coverage.len();
    let spreads: Vec<f64> = calibration_counts
        .iter()
        .zip(evaluation_counts)
        .filter_map(|(&n, &m)| conformal::coverage_law(n, m, alpha).ok())
        .map(|law| law.split_standard_deviation)
        .collect();
    let class_sd = spreads.iter().sum::<f64>() / spreads.len().max(1) as f64;
    let names: Vec<String> = (0..k).map(|c| class_name(c, k)).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    sentences::per_class_sentence(&names, per_class_coverage, 1.0 - alpha, mondrian, class_sd)
}

/// Index of the largest value, the lowest index on ties.
fn argmax(row: &[f32]) -> u32 {
    let mut best = 0;
    for (index, &value) in row.iter().enumerate() {
        if value > row[best] {
            best = index;
        }
    }
    best as u32
}

/// True-label scores picked from `[n, K]` all-label scores.
fn true_label(label_scores: &[f64], labels: &[u32], num_classes: usize) -> Vec<f64> {
    label_scores
        .chunks_exact(num_classes)
        .zip(labels)
        .map(|(row, &label)| row[label as usize])
        .collect()
}

impl Cache {
    /// Index in `score_tables` of the table of `score` at `temperature`, computed when missing.
    fn score_table(&mut self, score: Score, temperature: f64, k: usize) -> Result<usize, LabError> {
        score.validate()?;
        if self
            .probabilities
            .as_ref()
            .is_none_or(|p| p.temperature != temperature)
        {
            self.probabilities = Some(Probabilities {
                temperature,
                calibration: calibration::softmax(
                    &Logits::new(&self.calibration.logits, k)?,
                    temperature,
                )?,
                evaluation: calibration::softmax(
                    &Logits::new(&self.evaluation.logits, k)?,
                    temperature,
                )?,
            });
            self.score_tables.clear();
        }
        let position = match self.score_tables.iter().position(|t| t.score == score) {
            Some(position) => position,
            None => {
                let probabilities = self.probabilities.as_ref().ok_or(LabError::NotReady)?;
                let table = ScoreTable {
                    score,
                    calibration: conformal::all_label_scores(
                        &probabilities.calibration,
                        k,
                        &score,
                        &self.calibration.uniforms,
                    )?,
                    evaluation: conformal::all_label_scores(
                        &probabilities.evaluation,
                        k,
                        &score,
                        &self.evaluation.uniforms,
                    )?,
                };
                // Four kinds of score: older parameter settings make way.
                if self.score_tables.len() == 4 {
                    self.score_tables.remove(0);
                }
                self.score_tables.push(table);
                self.score_tables.len() - 1
            }
        };
        Ok(position)
    }
}

/// Thresholds from the calibration half's scores.
fn thresholds(
    table: &ScoreTable,
    calibration_labels: &[u32],
    k: usize,
    alpha: f64,
    class_conditional: bool,
) -> Result<Thresholds, LabError> {
    let scores = true_label(&table.calibration, calibration_labels, k);
    Ok(if class_conditional {
        Thresholds::ClassConditional(conformal::class_conditional_thresholds(
            &scores,
            calibration_labels,
            k,
            alpha,
        )?)
    } else {
        Thresholds::Marginal(conformal::conformal_threshold(&scores, alpha)?)
    })
}

impl Lab {
    fn check_temperature(temperature: f64) -> Result<(), LabError> {
        if (calibration::MIN_TEMPERATURE..=calibration::MAX_TEMPERATURE).contains(&temperature) {
            Ok(())
        } else {
            Err(LabError::TemperatureOutOfRange(temperature))
        }
    }

    /// The cached halves, the score table of the settings' chosen score at their temperature,
    /// and the thresholds it gives at their α.
    fn chosen_score(
        &mut self,
        settings: &ConformalSettings,
    ) -> Result<(&Cache, &ScoreTable, Thresholds), LabError> {
        Self::check_temperature(settings.temperature)?;
        let k = self.num_classes;
        let cache = self.prepared()?;
        let index =
            cache.score_table(settings.score_of(settings.score), settings.temperature, k)?;
        let cache: &Cache = cache;
        let table = &cache.score_tables[index];
        let thresholds = thresholds(
            table,
            &cache.calibration.labels,
            k,
            settings.alpha,
            settings.class_conditional,
        )?;
        Ok((cache, table, thresholds))
    }

    /// Everything the conformal lab shows for `settings`.
    ///
    /// # Errors
    /// [`LabError::TemperatureOutOfRange`], [`LabError::NotReady`], and the conformal module's
    /// errors for a bad α or score parameter.
    pub fn conformal_view(
        &mut self,
        settings: &ConformalSettings,
    ) -> Result<ConformalView, LabError> {
        Self::check_temperature(settings.temperature)?;
        let k = self.num_classes;
        let alpha = settings.alpha;
        conformal::quantile_rank(1, alpha)?;
        let cache = self.prepared()?;
        let mut comparison = Vec::with_capacity(4);
        for kind in [
            ScoreKind::Lac,
            ScoreKind::Aps,
            ScoreKind::Raps,
            ScoreKind::Saps,
        ] {
            let table = cache.score_table(settings.score_of(kind), settings.temperature, k)?;
            let table = &cache.score_tables[table];
            let thresholds = thresholds(
                table,
                &cache.calibration.labels,
                k,
                alpha,
                settings.class_conditional,
            )?;
            let sets = conformal::sets_from_label_scores(&table.evaluation, k, &thresholds)?;
            let metrics = conformal::set_metrics(&sets, &cache.evaluation.labels, alpha)?;
            comparison.push(ScoreComparison {
                score: kind,
                coverage: metrics.coverage,
                average_set_size: metrics.average_set_size,
                singleton_rate: metrics.singleton_rate,
                empty_rate: metrics.empty_rate,
            });
        }
        let table =
            cache.score_table(settings.score_of(settings.score), settings.temperature, k)?;
        let table = &cache.score_tables[table];
        let thresholds = thresholds(
            table,
            &cache.calibration.labels,
            k,
            alpha,
            settings.class_conditional,
        )?;
        let sets = conformal::sets_from_label_scores(&table.evaluation, k, &thresholds)?;
        let metrics = conformal::set_metrics(&sets, &cache.evaluation.labels, alpha)?;
        let mut size_counts = vec![0; k + 1];
        for &size in &sets.sizes {
            size_counts[size as usize] += 1;
        }
        let calibration_scores = true_label(&table.calibration, &cache.calibration.labels, k);
        let alphas: Vec<f64> = (1..=SWEEP_STEPS).map(|i| i as f64 * SWEEP_STEP).collect();
        let sweep = conformal::alpha_sweep(
            &calibration_scores,
            &table.evaluation,
            &cache.evaluation.labels,
            k,
            &alphas,
        )?;
        let (n_calibration, n_evaluation) = (
            cache.calibration.labels.len(),
            cache.evaluation.labels.len(),
        );
        let calibration_labels = &cache.calibration.labels;
        let ties_at_threshold = calibration_scores
            .iter()
            .zip(calibration_labels)
            .filter(|&(&score, &y)| thresholds.for_label(y as usize) == Some(score))
            .count();
        let calibration_counts = class_counts(calibration_labels, k);
        let guarantee_upper = 1.0 - alpha
            + if settings.class_conditional {
                calibration_counts
                    .iter()
                    .filter(|&&n| n > 0)
                    .map(|&n| 1.0 / (n as f64 + 1.0))
                    .fold(0.0, f64::max)
            } else {
                1.0 / (n_calibration as f64 + 1.0)
            };
        let law = conformal::coverage_law(n_calibration, n_evaluation, alpha).ok();
        let split_standard_deviation = law.map_or(0.0, |l| l.split_standard_deviation);
        let verdict = if thresholds.values().iter().any(|q| q.is_infinite()) || law.is_none() {
            sentences::coverage_verdict_without_threshold(metrics.coverage)
        } else {
            sentences::coverage_verdict(
                metrics.coverage,
                1.0 - alpha,
                guarantee_upper,
                split_standard_deviation,
                ties_at_threshold,
            )
        };
        let per_class_sentence = per_class_sentence(
            &metrics.per_class_coverage,
            &calibration_counts,
            &class_counts(&cache.evaluation.labels, k),
            alpha,
            settings.class_conditional,
        );
        Ok(ConformalView {
            alpha,
            n_calibration,
            n_evaluation,
            qhat_text: thresholds
                .values()
                .into_iter()
                .map(sentences::threshold_text)
                .collect(),
            qhat: thresholds.values(),
            guarantee_lower: 1.0 - alpha,
            guarantee_upper,
            split_standard_deviation,
            ties_at_threshold,
            verdict,
            per_class_sentence,
            metrics,
            size_counts,
            sweep,
            comparison,
        })
    }

    /// Draws `repetitions` random splits of the arrived rows (as many calibration rows as the
    /// current split has) and returns each evaluation coverage with the theory to compare.
    ///
    /// # Errors
    /// As [`Lab::conformal_view`], and the experiment's errors (fewer than 2 rows).
    pub fn coverage_experiment(
        &mut self,
        settings: &ConformalSettings,
        repetitions: usize,
        seed: u64,
    ) -> Result<CoverageExperiment, LabError> {
        let k = self.num_classes;
        let (cache, table, _) = self.chosen_score(settings)?;
        let mut pool = true_label(&table.calibration, &cache.calibration.labels, k);
        pool.extend(true_label(&table.evaluation, &cache.evaluation.labels, k));
        let n_calibration = cache.calibration.labels.len();
        let n_evaluation = pool.len() - n_calibration;
        let coverages = conformal::coverage_experiment(
            &pool,
            n_calibration,
            settings.alpha,
            repetitions,
            seed,
        )?;
        let law = conformal::coverage_law(n_calibration, n_evaluation, settings.alpha)?;
        let count = coverages.len() as f64;
        let mean = coverages.iter().sum::<f64>() / count;
        let variance =
            coverages.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / (count - 1.0).max(1.0);
        let spread = 5.0 * law.split_standard_deviation;
        let (low, high) = ((law.mean - spread).max(0.0), (law.mean + spread).min(1.0));
        let beta_density = (0..=DENSITY_POINTS)
            .map(|i| {
                let x = low + (high - low) * i as f64 / DENSITY_POINTS as f64;
                conformal::coverage_beta_density(n_calibration, settings.alpha, x).map(|d| (x, d))
            })
            .collect::<Result<Vec<_>, _>>()?;
        pool.sort_by(f64::total_cmp);
        let tied_scores = pool
            .iter()
            .enumerate()
            .filter(|&(i, s)| {
                (i > 0 && pool[i - 1] == *s) || pool.get(i + 1).is_some_and(|next| next == s)
            })
            .count();
        let summary = ExperimentSummary {
            repetitions: coverages.len(),
            n_calibration,
            n_evaluation,
            k: law.k,
            mean,
            standard_deviation: variance.sqrt(),
            beta_mean: law.mean,
            beta_standard_deviation: law.beta_standard_deviation,
            finite_standard_deviation: law.split_standard_deviation,
            tied_scores,
            mondrian_ignored: settings.class_conditional,
        };
        Ok(CoverageExperiment {
            coverages,
            caption: sentences::experiment_caption(&summary),
            summary,
            beta_density,
        })
    }

    /// Up to `limit` evaluation images passing `filter`, in test-set order, with their sets.
    ///
    /// # Errors
    /// As [`Lab::conformal_view`].
    pub fn gallery(
        &mut self,
        settings: &ConformalSettings,
        filter: GalleryFilter,
        limit: usize,
    ) -> Result<Vec<GalleryItem>, LabError> {
        let k = self.num_classes;
        let (cache, table, thresholds) = self.chosen_score(settings)?;
        let sets = conformal::sets_from_label_scores(&table.evaluation, k, &thresholds)?;
        let evaluation = &cache.evaluation;
        let items = (0..evaluation.labels.len()).filter_map(|i| {
            let label = evaluation.labels[i];
            let covered = sets.contains(i, label);
            let size = sets.sizes[i];
            let keep = match filter {
                GalleryFilter::All => true,
                GalleryFilter::Misses => !covered,
                GalleryFilter::Large => size >= LARGE_SET_SIZE,
                GalleryFilter::Empty => size == 0,
            };
            keep.then(|| GalleryItem {
                row: evaluation.rows[i],
                label,
                predicted: argmax(&evaluation.logits[i * k..(i + 1) * k]),
                set: sets.set(i).collect(),
                covered,
                true_label_score: table.evaluation[i * k + label as usize],
            })
        });
        Ok(items.take(limit).collect())
    }

    /// The `count` most conformal (lowest true-label score) and least conformal (highest)
    /// calibration images, with the sets the current thresholds give them.
    ///
    /// # Errors
    /// As [`Lab::conformal_view`].
    pub fn conformity_extremes(
        &mut self,
        settings: &ConformalSettings,
        count: usize,
    ) -> Result<(Vec<GalleryItem>, Vec<GalleryItem>), LabError> {
        let k = self.num_classes;
        let (cache, table, thresholds) = self.chosen_score(settings)?;
        let sets = conformal::sets_from_label_scores(&table.calibration, k, &thresholds)?;
        let calibration = &cache.calibration;
        let scores = true_label(&table.calibration, &calibration.labels, k);
        let mut order: Vec<usize> = (0..scores.len()).collect();
        order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]).then(a.cmp(&b)));
        let item = |i: usize| GalleryItem {
            row: calibration.rows[i],
            label: calibration.labels[i],
            predicted: argmax(&calibration.logits[i * k..(i + 1) * k]),
            set: sets.set(i).collect(),
            covered: sets.contains(i, calibration.labels[i]),
            true_label_score: scores[i],
        };
        let most = order.iter().take(count).map(|&i| item(i)).collect();
        let least = order.iter().rev().take(count).map(|&i| item(i)).collect();
        Ok((most, least))
    }

    /// Probabilities, per-label scores and thresholds of test image `row`.
    ///
    /// # Errors
    /// [`LabError::UnknownImage`] for a row without logits, and as [`Lab::conformal_view`].
    pub fn explain(
        &mut self,
        settings: &ConformalSettings,
        row: usize,
    ) -> Result<Explanation, LabError> {
        let k = self.num_classes;
        let (cache, table, thresholds) = self.chosen_score(settings)?;
        let find = |part: &Part| part.rows.binary_search(&row).ok();
        let (calibration, index) = match (find(&cache.calibration), find(&cache.evaluation)) {
            (Some(index), _) => (true, index),
            (None, Some(index)) => (false, index),
            (None, None) => return Err(LabError::UnknownImage(row)),
        };
        let (part, scores) = if calibration {
            (&cache.calibration, &table.calibration)
        } else {
            (&cache.evaluation, &table.evaluation)
        };
        let mut log_probabilities = vec![0.0; k];
        calibration::log_softmax_row(
            &part.logits[index * k..(index + 1) * k],
            settings.temperature,
            &mut log_probabilities,
        );
        let scores = scores[index * k..(index + 1) * k].to_vec();
        let per_label: Vec<f64> = (0..k)
            .map(|y| thresholds.for_label(y).unwrap_or(f64::INFINITY))
            .collect();
        let (score_text, threshold_text) = scores
            .iter()
            .zip(&per_label)
            .map(|(&s, &q)| sentences::score_against_threshold(s, q))
            .unzip();
        Ok(Explanation {
            row,
            calibration,
            label: part.labels[index],
            probabilities: log_probabilities.iter().map(|lp| lp.exp()).collect(),
            score_text,
            threshold_text,
            in_set: scores.iter().zip(&per_label).map(|(s, q)| s <= q).collect(),
            scores,
            thresholds: per_label,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Results computed two ways must agree to this tolerance (same f64 arithmetic, other order).
    const TOLERANCE: f64 = 1e-12;
    const K: usize = 4;

    /// `n` rows of overconfident logits (scaled by 3) and labels drawn from the unscaled softmax.
    fn synthetic(n: usize, seed: u64) -> (Vec<f32>, Vec<u32>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut logits = Vec::with_capacity(n * K);
        let mut labels = Vec::with_capacity(n);
        for _ in 0..n {
            let row: Vec<f64> = (0..K).map(|_| rng.random_range(-2.0..2.0)).collect();
            let total: f64 = row.iter().map(|z| z.exp()).sum();
            let mut u = rng.random_range(0.0..total);
            let label = row
                .iter()
                .position(|z| {
                    u -= z.exp();
                    u < 0.0
                })
                .unwrap_or(K - 1);
            logits.extend(row.iter().map(|z| (3.0 * z) as f32));
            labels.push(label as u32);
        }
        (logits, labels)
    }

    fn full_lab(n: usize) -> (Lab, Vec<f32>, Vec<u32>) {
        let (logits, labels) = synthetic(n, 1);
        let mut lab = Lab::new(labels.clone(), K, 2).unwrap();
        lab.add_logits(0, 0, &logits).unwrap();
        (lab, logits, labels)
    }

    #[test]
    fn not_ready_until_both_halves_have_rows() {
        let (logits, labels) = synthetic(10, 2);
        let mut lab = Lab::new(labels, K, 1).unwrap();
        assert_eq!(
            lab.temperature_view(1.0, 10, Binning::Width),
            Err(LabError::NotReady)
        );
        lab.add_logits(0, 0, &logits).unwrap();
        assert!(lab.temperature_view(1.0, 10, Binning::Width).is_ok());
    }

    #[test]
    fn batches_in_any_order_equal_one_batch() {
        let (mut whole, logits, labels) = full_lab(1_000);
        let mut streamed = Lab::new(labels, K, 2).unwrap();
        for start in [750, 0, 500, 250] {
            streamed
                .add_logits(0, start, &logits[start * K..(start + 250) * K])
                .unwrap();
        }
        // A repeated batch does not count twice.
        streamed.add_logits(0, 0, &logits[..250 * K]).unwrap();
        assert_eq!(streamed.arrived(0), Ok(1_000));
        let a = whole.temperature_view(1.5, 15, Binning::Width).unwrap();
        let b = streamed.temperature_view(1.5, 15, Binning::Width).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn view_matches_the_library_on_the_gathered_halves() {
        let (mut lab, logits, labels) = full_lab(2_000);
        lab.set_split(9);
        let (calibration_rows, evaluation_rows) = data::seeded_split(2_000, 0.5, 9);
        let gather = |rows: &[usize]| {
            let l: Vec<f32> = rows
                .iter()
                .flat_map(|&r| logits[r * K..(r + 1) * K].to_vec())
                .collect();
            let y: Vec<u32> = rows.iter().map(|&r| labels[r]).collect();
            (l, y)
        };
        let (cal_logits, cal_labels) = gather(&calibration_rows);
        let (eval_logits, eval_labels) = gather(&evaluation_rows);
        let fit = calibration::fit_temperature(&Logits::new(&cal_logits, K).unwrap(), &cal_labels)
            .unwrap();
        let view = lab.temperature_view(0.7, 12, Binning::Mass).unwrap();
        assert_eq!(view.fitted_temperature, fit.temperature);
        assert!(
            view.fitted_temperature > 2.0,
            "planted T = 3, got {}",
            view.fitted_temperature
        );
        assert_eq!((view.n_calibration, view.n_evaluation), (1_000, 1_000));
        let eval = Logits::new(&eval_logits, K).unwrap();
        let direct = |t| calibration::evaluate(&eval, &eval_labels, t, 12, Binning::Mass).unwrap();
        assert_eq!(view.at_temperature, direct(0.7));
        assert_eq!(view.at_one, direct(1.0));
        assert_eq!(view.at_fitted, direct(fit.temperature));
        assert_eq!(view.confidence_counts.iter().sum::<usize>(), 1_000);
        let (confidences, _) = calibration::confidences(&eval, &eval_labels, 0.7).unwrap();
        let mean = confidences.iter().sum::<f64>() / 1_000.0;
        assert!((view.mean_confidence - mean).abs() < TOLERANCE);
        assert_eq!(view.classwise_bins.len(), K);
    }

    #[test]
    fn temperature_moves_confidence_not_accuracy() {
        let (mut lab, _, _) = full_lab(2_000);
        let cold = lab.temperature_view(0.5, 15, Binning::Width).unwrap();
        let hot = lab.temperature_view(5.0, 15, Binning::Width).unwrap();
        assert_eq!(cold.at_temperature.accuracy, hot.at_temperature.accuracy);
        assert!(cold.mean_confidence > hot.mean_confidence);
        assert_ne!(cold.at_temperature.ece, hot.at_temperature.ece);
    }

    #[test]
    fn split_and_model_changes_are_seen() {
        let (mut lab, logits, _) = full_lab(2_000);
        let first = lab.temperature_view(1.0, 15, Binning::Width).unwrap();
        lab.set_split(1);
        let resplit = lab.temperature_view(1.0, 15, Binning::Width).unwrap();
        assert_ne!(first.fitted_temperature, resplit.fitted_temperature);
        // The second model has the same logits divided by 3: a fitted T about 3 times smaller.
        let cooler: Vec<f32> = logits.iter().map(|z| z / 3.0).collect();
        lab.add_logits(1, 0, &cooler).unwrap();
        lab.select_model(1).unwrap();
        let second = lab.temperature_view(1.0, 15, Binning::Width).unwrap();
        let ratio = resplit.fitted_temperature / second.fitted_temperature;
        assert!((ratio - 3.0).abs() < 1e-4, "ratio {ratio}");
    }

    #[test]
    fn bad_requests_are_refused_with_reasons() {
        let (mut lab, logits, _) = full_lab(100);
        assert_eq!(
            lab.select_model(2),
            Err(LabError::UnknownModel { index: 2, count: 2 })
        );
        assert!(matches!(
            lab.add_logits(0, 99, &logits[..2 * K]),
            Err(LabError::BatchOutOfRange { .. })
        ));
        assert!(matches!(
            lab.add_logits(0, 0, &logits[..K + 1]),
            Err(LabError::BatchOutOfRange { .. })
        ));
        let nan = [f32::NAN; K];
        assert!(matches!(
            lab.add_logits(0, 0, &nan),
            Err(LabError::Calibration(_))
        ));
        assert_eq!(
            lab.temperature_view(25.0, 15, Binning::Width),
            Err(LabError::TemperatureOutOfRange(25.0))
        );
        assert!(matches!(
            lab.temperature_view(1.0, 0, Binning::Width),
            Err(LabError::Calibration(_))
        ));
        assert_eq!(
            Lab::new(vec![0, 5], K, 1).unwrap_err(),
            LabError::LabelOutOfRange {
                row: 1,
                label: 5,
                num_classes: K
            }
        );
        assert_eq!(Lab::new(vec![0], K, 1).unwrap_err(), LabError::TooSmall);
    }

    fn settings(score: ScoreKind) -> ConformalSettings {
        ConformalSettings {
            temperature: 1.5,
            alpha: 0.1,
            score,
            randomized: true,
            raps_lambda: conformal::DEFAULT_RAPS_LAMBDA,
            raps_k_reg: conformal::DEFAULT_RAPS_K_REG,
            saps_lambda: conformal::DEFAULT_SAPS_LAMBDA,
            class_conditional: false,
        }
    }

    /// The conformal pipeline computed directly with the conformal module on the same halves.
    fn direct_metrics(
        logits: &[f32],
        labels: &[u32],
        seed: u64,
        settings: &ConformalSettings,
    ) -> (Vec<f64>, SetMetrics) {
        let (calibration_rows, evaluation_rows) = data::seeded_split(labels.len(), 0.5, seed);
        let draws = conformal::uniforms(labels.len(), seed);
        let part = |rows: &[usize]| {
            let l: Vec<f32> = rows
                .iter()
                .flat_map(|&r| logits[r * K..(r + 1) * K].to_vec())
                .collect();
            let p =
                calibration::softmax(&Logits::new(&l, K).unwrap(), settings.temperature).unwrap();
            let y: Vec<u32> = rows.iter().map(|&r| labels[r]).collect();
            let u: Vec<f64> = rows.iter().map(|&r| draws[r]).collect();
            (p, y, u)
        };
        let (cal_p, cal_y, cal_u) = part(&calibration_rows);
        let (eval_p, eval_y, eval_u) = part(&evaluation_rows);
        let score = settings.score_of(settings.score);
        let scores = conformal::true_label_scores(&cal_p, &cal_y, K, &score, &cal_u).unwrap();
        let thresholds = if settings.class_conditional {
            Thresholds::ClassConditional(
                conformal::class_conditional_thresholds(&scores, &cal_y, K, settings.alpha)
                    .unwrap(),
            )
        } else {
            Thresholds::Marginal(conformal::conformal_threshold(&scores, settings.alpha).unwrap())
        };
        let sets = conformal::prediction_sets(&eval_p, K, &score, &eval_u, &thresholds).unwrap();
        (
            thresholds.values(),
            conformal::set_metrics(&sets, &eval_y, settings.alpha).unwrap(),
        )
    }

    #[test]
    fn conformal_view_matches_the_conformal_module() {
        let (mut lab, logits, labels) = full_lab(3_000);
        lab.set_split(4);
        for kind in [
            ScoreKind::Lac,
            ScoreKind::Aps,
            ScoreKind::Raps,
            ScoreKind::Saps,
        ] {
            for class_conditional in [false, true] {
                let settings = ConformalSettings {
                    class_conditional,
                    ..settings(kind)
                };
                let view = lab.conformal_view(&settings).unwrap();
                let (qhat, metrics) = direct_metrics(&logits, &labels, 4, &settings);
                assert_eq!(view.qhat, qhat, "{kind:?}");
                assert_eq!(view.metrics, metrics, "{kind:?}");
                let row = view.comparison.iter().find(|c| c.score == kind).unwrap();
                assert_eq!(
                    (row.coverage, row.average_set_size),
                    (metrics.coverage, metrics.average_set_size)
                );
                assert_eq!(view.size_counts.iter().sum::<usize>(), 1_500);
                assert_eq!(view.qhat.len(), if class_conditional { K } else { 1 });
            }
        }
    }

    #[test]
    fn moving_alpha_or_temperature_changes_the_sets() {
        let (mut lab, _, _) = full_lab(3_000);
        let base = lab.conformal_view(&settings(ScoreKind::Aps)).unwrap();
        let wider = lab
            .conformal_view(&ConformalSettings {
                alpha: 0.05,
                ..settings(ScoreKind::Aps)
            })
            .unwrap();
        assert!(wider.metrics.average_set_size > base.metrics.average_set_size);
        let hotter = lab
            .conformal_view(&ConformalSettings {
                temperature: 4.0,
                ..settings(ScoreKind::Aps)
            })
            .unwrap();
        assert_ne!(hotter.qhat, base.qhat);
        // The sweep's point at the current α is the view's own marginal result.
        let point = base
            .sweep
            .iter()
            .find(|p| (p.alpha - 0.1).abs() < 1e-12)
            .unwrap();
        assert_eq!(
            (point.qhat, point.coverage),
            (base.qhat[0], base.metrics.coverage)
        );
        assert_eq!(base.sweep.len(), SWEEP_STEPS);
    }

    #[test]
    fn coverage_experiment_centres_on_the_beta_law() {
        let (mut lab, _, _) = full_lab(4_000);
        let experiment = lab
            .coverage_experiment(&settings(ScoreKind::Aps), 400, 11)
            .unwrap();
        assert_eq!(experiment.coverages.len(), 400);
        let summary = &experiment.summary;
        assert_eq!(summary.k, conformal::quantile_rank(2_000, 0.1).unwrap());
        // The mean of 400 draws lies within 4 standard errors of the Beta-Binomial mean.
        let standard_error = summary.finite_standard_deviation / 20.0;
        assert!((summary.mean - summary.beta_mean).abs() < 4.0 * standard_error);
        assert!(summary.standard_deviation > summary.beta_standard_deviation);
        let again = lab
            .coverage_experiment(&settings(ScoreKind::Aps), 400, 11)
            .unwrap();
        assert_eq!(again.coverages, experiment.coverages);
    }

    #[test]
    fn gallery_filters_and_explanations_agree_with_the_sets() {
        let (mut lab, _, _) = full_lab(3_000);
        let lac = ConformalSettings {
            alpha: 0.2,
            ..settings(ScoreKind::Lac)
        };
        let view = lab.conformal_view(&lac).unwrap();
        let all = lab.gallery(&lac, GalleryFilter::All, usize::MAX).unwrap();
        assert_eq!(all.len(), 1_500);
        let misses = lab
            .gallery(&lac, GalleryFilter::Misses, usize::MAX)
            .unwrap();
        assert!(misses
            .iter()
            .all(|item| !item.covered && !item.set.contains(&item.label)));
        let covered = all.iter().filter(|item| item.covered).count() as f64 / 1_500.0;
        assert_eq!(covered, view.metrics.coverage);
        let empty = lab.gallery(&lac, GalleryFilter::Empty, usize::MAX).unwrap();
        assert_eq!(empty.len(), view.size_counts[0]);
        let large = lab.gallery(&lac, GalleryFilter::Large, 5).unwrap();
        assert!(large.len() <= 5 && large.iter().all(|item| item.set.len() >= 3));
        for item in all.iter().take(50) {
            let explanation = lab.explain(&lac, item.row).unwrap();
            let set: Vec<u32> = (0..K as u32)
                .filter(|&y| explanation.in_set[y as usize])
                .collect();
            assert_eq!(set, item.set);
            assert!(!explanation.calibration);
            assert!((explanation.probabilities.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
        let (most, least) = lab.conformity_extremes(&lac, 4).unwrap();
        assert!(most[0].true_label_score <= least[0].true_label_score);
        assert!(lab.explain(&lac, most[0].row).unwrap().calibration);
        assert_eq!(lab.explain(&lac, 3_000), Err(LabError::UnknownImage(3_000)));
        let bad_alpha = ConformalSettings { alpha: 0.0, ..lac };
        assert!(matches!(
            lab.conformal_view(&bad_alpha),
            Err(LabError::Conformal(_))
        ));
    }
}
