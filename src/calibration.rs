//! Calibration of a classifier: temperature scaling and the metrics that show miscalibration.
//!
//! # What it computes
//! Probabilities come from logits `z ∈ R^K` through a temperature `T > 0`:
//! `log p_k = z_k/T − (m + log Σ_j exp(z_j/T − m))` with `m = max_j z_j/T` (stable
//! log-softmax, evaluated in `f64`). Every metric is computed from these log-probabilities,
//! and [`softmax`] hands out their `exp` in `f64`: probabilities are never rounded to `f32`.
//!
//! * **Temperature scaling** (Guo et al., "On Calibration of Modern Neural Networks", ICML 2017):
//!   `T* = argmin_T (1/n) Σ_i −log p_{i,y_i}(T)`. The mean negative log-likelihood (NLL) is
//!   convex in `β = 1/T`, with `dNLL/dβ = mean(E_p[z] − z_y)` and
//!   `d²NLL/dβ² = mean(Var_p[z]) ≥ 0`. [`fit_temperature`] brackets the root of the derivative
//!   and runs a safeguarded Newton iteration on `log β` (bisection whenever a Newton step leaves
//!   the bracket) to a relative tolerance of `1e-7`, inside `T ∈ [0.05, 20]`.
//! * **Top-label reliability** (Guo et al.; Naeini et al., AAAI 2015): confidence
//!   `c_i = max_k p_ik`, correct when `argmax_k p_ik = y_i` (ties go to the lowest index).
//!   With bins `b`, `ECE = Σ_b (n_b/n)·|acc_b − conf_b|`,
//!   `RMSCE = sqrt(Σ_b (n_b/n)·(acc_b − conf_b)²)`, `MCE = max_b |acc_b − conf_b|` over
//!   non-empty bins.
//! * **Classwise ECE** (Kull et al., "Beyond temperature scaling", NeurIPS 2019):
//!   `(1/K) Σ_k Σ_b (n_{b,k}/n)·|mean_b([y = k]) − mean_b(p_k)|`, each class binned on its own
//!   probability `p_k` with the same binning.
//! * **NLL** `= mean −log p_{i,y_i}` and **Brier score** `= mean Σ_k (p_ik − [y_i = k])²`, in
//!   `[0, 2]`. TensorFlow Probability and keras-proba report `Σ_k p_k² − 2 p_y`, which is this
//!   score minus 1.
//!
//! # Bins
//! * [`Binning::Width`]: `B` equal bins on `[0, 1]`; an example with confidence `c` goes to bin
//!   `min(floor(c·B), B − 1)`, so `c = 1` lands in the last bin. Bin `b` spans `[b/B, (b+1)/B]`.
//! * [`Binning::Mass`]: examples sorted by confidence; bin `b` holds the sorted examples
//!   `floor(b·n/B) .. floor((b+1)·n/B)`, so every bin holds `floor(n/B)` or `ceil(n/B)`
//!   examples. Its `lower` and `upper` are the smallest and largest confidence among its
//!   members (equal-mass bins therefore do not tile `[0, 1]`, and equal confidences may be
//!   split between neighbouring bins). With fewer examples than bins some bins are empty; an
//!   empty bin reports `lower = upper =` the confidence of the next example in sorted order.
//!
//! An empty bin has `count = 0`, and its `confidence` and `accuracy` are reported as `0.0`; it
//! contributes nothing to ECE, RMSCE or MCE. Plots must check `count == 0` and draw such a bin
//! as empty, not as a zero-height bar.
//!
//! Every definition, default and tie rule, with its source: docs/definitions.md

use std::slice::ChunksExact;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Smallest temperature [`fit_temperature`] returns.
pub const MIN_TEMPERATURE: f64 = 0.05;
/// Largest temperature [`fit_temperature`] returns.
pub const MAX_TEMPERATURE: f64 = 20.0;
/// Largest number of bins accepted by the binned metrics.
pub const MAX_BINS: usize = 1000;
/// Number of bins used by Guo et al., torchmetrics and keras-proba.
pub const DEFAULT_NUM_BINS: usize = 15;

/// Relative tolerance on the fitted temperature (an absolute tolerance on `log β`).
const TEMPERATURE_TOLERANCE: f64 = 1e-7;
/// Passes over the data after which the temperature fit stops even if not converged;
/// bisection alone reaches the tolerance in about 26 passes.
const MAX_FIT_EVALUATIONS: usize = 100;
/// A row counts as a probability vector when it sums to 1 within this tolerance.
const PROBABILITY_SUM_TOLERANCE: f64 = 1e-3;

/// Why a calibration computation was refused.
#[derive(Debug, Error, PartialEq)]
pub enum CalibrationError {
    /// A classifier needs at least two classes.
    #[error("a classifier needs at least 2 classes, got {0}")]
    TooFewClasses(usize),
    /// No examples were given.
    #[error("the input holds no examples")]
    EmptyInput,
    /// The number of values is not a multiple of the number of classes.
    #[error("{len} values cannot be split into rows of {num_classes} classes")]
    ShapeMismatch { len: usize, num_classes: usize },
    /// The number of labels differs from the number of rows.
    #[error("{labels} labels were given for {rows} rows")]
    LabelCountMismatch { labels: usize, rows: usize },
    /// A label is not a valid class index.
    #[error("label {label} in row {row} is out of range: classes are 0..{num_classes}")]
    LabelOutOfRange {
        row: usize,
        label: u32,
        num_classes: usize,
    },
    /// A logit is NaN or infinite.
    #[error("logit in row {row}, class {class} is not finite: {value}")]
    NonFinite {
        row: usize,
        class: usize,
        value: f32,
    },
    /// A probability is NaN or outside `[0, 1]`.
    #[error("probability in row {row}, class {class} is {value}, not a number in [0, 1]")]
    InvalidProbability {
        row: usize,
        class: usize,
        value: f64,
    },
    /// A confidence is NaN or outside `[0, 1]`.
    #[error("confidence {index} is {value}, not a number in [0, 1]")]
    InvalidConfidence { index: usize, value: f64 },
    /// The confidences and the correctness flags differ in length.
    #[error("{confidences} confidences were given with {outcomes} correctness flags")]
    ConfidenceCountMismatch { confidences: usize, outcomes: usize },
    /// The temperature is zero, negative, NaN or infinite.
    #[error("temperature must be a positive finite number, got {0}")]
    InvalidTemperature(f64),
    /// The number of bins is 0 or above [`MAX_BINS`].
    #[error("the number of bins must be between 1 and 1000, got {0}")]
    InvalidBinCount(usize),
}

/// A validated row-major `[n, K]` view of logits: `K ≥ 2`, `n ≥ 1`, every value finite.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Logits<'a> {
    values: &'a [f32],
    num_classes: usize,
}

impl<'a> Logits<'a> {
    /// Wraps row-major logits with `num_classes` values per row.
    ///
    /// # Errors
    /// [`CalibrationError::TooFewClasses`] if `num_classes < 2`, [`CalibrationError::EmptyInput`]
    /// if `values` is empty, [`CalibrationError::ShapeMismatch`] if its length is not a multiple
    /// of `num_classes`, and [`CalibrationError::NonFinite`] naming the row and class of the
    /// first NaN or infinite value.
    pub fn new(values: &'a [f32], num_classes: usize) -> Result<Self, CalibrationError> {
        check_shape(values.len(), num_classes)?;
        if let Some((index, &value)) = values.iter().enumerate().find(|(_, z)| !z.is_finite()) {
            return Err(CalibrationError::NonFinite {
                row: index / num_classes,
                class: index % num_classes,
                value,
            });
        }
        Ok(Self {
            values,
            num_classes,
        })
    }

    /// Number of rows (examples).
    pub fn len(&self) -> usize {
        self.values.len() / self.num_classes
    }

    /// Always `false`: a `Logits` holds at least one row.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Number of classes `K`.
    pub fn num_classes(&self) -> usize {
        self.num_classes
    }

    /// The `K` logits of row `index`.
    ///
    /// # Panics
    /// If `index >= self.len()`.
    pub fn row(&self, index: usize) -> &'a [f32] {
        &self.values[index * self.num_classes..(index + 1) * self.num_classes]
    }

    /// The rows in order, each of length `K`.
    pub fn rows(&self) -> ChunksExact<'a, f32> {
        self.values.chunks_exact(self.num_classes)
    }

    /// All logits, row-major.
    pub fn values(&self) -> &'a [f32] {
        self.values
    }
}

fn check_shape(len: usize, num_classes: usize) -> Result<(), CalibrationError> {
    if num_classes < 2 {
        return Err(CalibrationError::TooFewClasses(num_classes));
    }
    if len == 0 {
        return Err(CalibrationError::EmptyInput);
    }
    if !len.is_multiple_of(num_classes) {
        return Err(CalibrationError::ShapeMismatch { len, num_classes });
    }
    Ok(())
}

/// Checks that there is one label per row and that every label is a class index `< K`.
///
/// # Errors
/// [`CalibrationError::LabelCountMismatch`] if `labels.len() != logits.len()`, and
/// [`CalibrationError::LabelOutOfRange`] for the first label `>= K`.
pub fn check_labels(logits: &Logits, labels: &[u32]) -> Result<(), CalibrationError> {
    check_labels_for_rows(logits.len(), logits.num_classes(), labels)
}

fn check_labels_for_rows(
    rows: usize,
    num_classes: usize,
    labels: &[u32],
) -> Result<(), CalibrationError> {
    if labels.len() != rows {
        return Err(CalibrationError::LabelCountMismatch {
            labels: labels.len(),
            rows,
        });
    }
    match labels
        .iter()
        .enumerate()
        .find(|(_, &label)| label as usize >= num_classes)
    {
        Some((row, &label)) => Err(CalibrationError::LabelOutOfRange {
            row,
            label,
            num_classes,
        }),
        None => Ok(()),
    }
}

/// Whether `temperature` is positive and finite.
pub(crate) fn is_valid_temperature(temperature: f64) -> bool {
    temperature > 0.0 && temperature.is_finite()
}

fn check_temperature(temperature: f64) -> Result<(), CalibrationError> {
    if is_valid_temperature(temperature) {
        Ok(())
    } else {
        Err(CalibrationError::InvalidTemperature(temperature))
    }
}

fn check_bin_count(num_bins: usize) -> Result<(), CalibrationError> {
    if (1..=MAX_BINS).contains(&num_bins) {
        Ok(())
    } else {
        Err(CalibrationError::InvalidBinCount(num_bins))
    }
}

/// For a non-empty row and a positive temperature, returns `(m, log Σ_j exp(z_j/T − m))` with
/// `m = max_j z_j/T`; the log-sum-exp is their sum. The sum inside the log is at least 1.
pub(crate) fn shifted_log_sum_exp(row: &[f32], temperature: f64) -> (f64, f64) {
    // Division by a positive number is monotone, so max(z)/T is exactly max(z/T).
    let max = row
        .iter()
        .fold(f64::NEG_INFINITY, |max, &z| max.max(f64::from(z)))
        / temperature;
    let sum: f64 = row
        .iter()
        .map(|&z| (f64::from(z) / temperature - max).exp())
        .sum();
    (max, sum.ln())
}

/// `log Σ_k exp(z_k/T)` of one row, computed stably in `f64`.
///
/// The row must be non-empty and the temperature positive and finite (as checked by
/// [`Logits::new`] and by the functions taking a temperature); otherwise the result is not
/// meaningful.
pub fn log_sum_exp(row: &[f32], temperature: f64) -> f64 {
    let (max, log_sum) = shifted_log_sum_exp(row, temperature);
    max + log_sum
}

/// Writes the stable log-softmax `log softmax(z/T)` of one row into `out`, in `f64`.
///
/// The row must be non-empty and the temperature positive and finite; every output is `≤ 0`
/// and the largest logit gets exactly `−log Σ_j exp(z_j/T − m)`.
///
/// # Panics
/// If `out.len() != row.len()`.
pub fn log_softmax_row(row: &[f32], temperature: f64, out: &mut [f64]) {
    assert_eq!(
        row.len(),
        out.len(),
        "log_softmax_row needs an output buffer as long as the row"
    );
    let (max, log_sum) = shifted_log_sum_exp(row, temperature);
    for (log_probability, &z) in out.iter_mut().zip(row) {
        *log_probability = (f64::from(z) / temperature - max) - log_sum;
    }
}

/// Row-major probabilities `softmax(z/T)` in `f64`: the `exp` of [`log_softmax_row`].
///
/// They are not rounded to `f32`: a top probability of `1 − 10⁻¹⁰` stays below 1 (in `f32` it
/// would be exactly 1), so conformal scores near a threshold keep their order.
///
/// # Errors
/// [`CalibrationError::InvalidTemperature`] if `temperature` is not positive and finite.
pub fn softmax(logits: &Logits, temperature: f64) -> Result<Vec<f64>, CalibrationError> {
    check_temperature(temperature)?;
    let mut log_probabilities = vec![0.0; logits.num_classes()];
    let mut probabilities = Vec::with_capacity(logits.values().len());
    for row in logits.rows() {
        log_softmax_row(row, temperature, &mut log_probabilities);
        probabilities.extend(log_probabilities.iter().map(|&lp| lp.exp()));
    }
    Ok(probabilities)
}

/// Whether every row is non-negative and sums to 1 (within `1e-3`): values that look like
/// probabilities, not logits. Temperature scaling and every metric here expect logits; a page
/// given probabilities should say so and convert only on request
/// ([`logits_from_probabilities`]).
pub fn looks_like_probabilities(logits: &Logits) -> bool {
    logits.rows().all(|row| {
        let sum: f64 = row.iter().map(|&p| f64::from(p)).sum();
        row.iter().all(|&p| p >= 0.0) && (sum - 1.0).abs() <= PROBABILITY_SUM_TOLERANCE
    })
}

/// Converts row-major probabilities to logits `log p` (natural log). A zero probability becomes
/// `log(f32::MIN_POSITIVE) ≈ −87.3` so that the result stays finite.
///
/// # Errors
/// The shape errors of [`Logits::new`], and [`CalibrationError::InvalidProbability`] for the
/// first value that is NaN or outside `[0, 1]`.
pub fn logits_from_probabilities(
    probabilities: &[f32],
    num_classes: usize,
) -> Result<Vec<f32>, CalibrationError> {
    check_probabilities(probabilities, num_classes)?;
    Ok(probabilities
        .iter()
        .map(|&p| p.max(f32::MIN_POSITIVE).ln())
        .collect())
}

fn check_probabilities<P: Copy + Into<f64>>(
    probabilities: &[P],
    num_classes: usize,
) -> Result<(), CalibrationError> {
    check_shape(probabilities.len(), num_classes)?;
    match probabilities
        .iter()
        .map(|&p| p.into())
        .enumerate()
        .find(|(_, p)| !(0.0..=1.0).contains(p))
    {
        Some((index, value)) => Err(CalibrationError::InvalidProbability {
            row: index / num_classes,
            class: index % num_classes,
            value,
        }),
        None => Ok(()),
    }
}

/// Which end of `[MIN_TEMPERATURE, MAX_TEMPERATURE]` stopped the temperature fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TemperatureBound {
    /// The NLL still decreased at [`MIN_TEMPERATURE`]: the optimum lies below it.
    Lower,
    /// The NLL still decreased at [`MAX_TEMPERATURE`]: the optimum lies above it.
    Upper,
}

/// Result of [`fit_temperature`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TemperatureFit {
    /// The fitted temperature, in `[MIN_TEMPERATURE, MAX_TEMPERATURE]`.
    pub temperature: f64,
    /// Mean NLL at that temperature.
    pub nll: f64,
    /// `Some` when the optimum lies outside the allowed range and a bound was returned.
    pub bound_hit: Option<TemperatureBound>,
    /// Passes over the data (NLL and derivative evaluations), including the two at the bounds;
    /// 0 when the NLL does not depend on the temperature.
    pub iterations: usize,
}

/// Mean NLL at `β = 1/T` and its first two derivatives with respect to `β`.
struct NllDerivatives {
    nll: f64,
    first: f64,
    second: f64,
}

/// One pass over validated logits and labels at inverse temperature `inverse_temperature`:
/// `nll = mean(β(m − z_y) + log Σ_k exp(β(z_k − m)))`, `first = mean(E_p[z] − z_y)`,
/// `second = mean(Var_p[z])` (two-pass variance, so large logits do not cancel).
fn nll_derivatives(logits: &Logits, labels: &[u32], inverse_temperature: f64) -> NllDerivatives {
    let mut weights = vec![0.0; logits.num_classes()];
    let (mut nll, mut first, mut second) = (0.0, 0.0, 0.0);
    for (row, &label) in logits.rows().zip(labels) {
        let max = row
            .iter()
            .fold(f64::NEG_INFINITY, |max, &z| max.max(f64::from(z)));
        let (mut sum, mut weighted_sum) = (0.0, 0.0);
        for (weight, &z) in weights.iter_mut().zip(row) {
            let z = f64::from(z);
            *weight = (inverse_temperature * (z - max)).exp();
            sum += *weight;
            weighted_sum += *weight * z;
        }
        let mean = weighted_sum / sum;
        let variance = weights
            .iter()
            .zip(row)
            .map(|(&weight, &z)| weight * (f64::from(z) - mean).powi(2))
            .sum::<f64>()
            / sum;
        let label_logit = f64::from(row[label as usize]);
        nll += inverse_temperature * (max - label_logit) + sum.ln();
        first += mean - label_logit;
        second += variance;
    }
    let n = logits.len() as f64;
    NllDerivatives {
        nll: nll / n,
        first: first / n,
        second: second / n,
    }
}

/// Fits the temperature `T* = argmin_T mean −log p_{i,y_i}(T)` by safeguarded Newton on
/// `log(1/T)`, to a relative tolerance of `1e-7`, inside `[MIN_TEMPERATURE, MAX_TEMPERATURE]`.
///
/// If the optimum lies outside that range the nearest bound is returned with `bound_hit` set.
/// If every row's logits are all equal, the NLL is `log K` at every temperature: the fit
/// returns `T = 1` with no bound hit and no error.
///
/// # Errors
/// [`CalibrationError::LabelCountMismatch`] and [`CalibrationError::LabelOutOfRange`] from
/// [`check_labels`].
pub fn fit_temperature(
    logits: &Logits,
    labels: &[u32],
) -> Result<TemperatureFit, CalibrationError> {
    check_labels(logits, labels)?;
    if logits.rows().all(|row| row.iter().all(|&z| z == row[0])) {
        return Ok(TemperatureFit {
            temperature: 1.0,
            nll: (logits.num_classes() as f64).ln(),
            bound_hit: None,
            iterations: 0,
        });
    }

    // The NLL is convex in β = 1/T, so the sign of dNLL/dβ brackets the optimum.
    let at_max_temperature = nll_derivatives(logits, labels, 1.0 / MAX_TEMPERATURE);
    if at_max_temperature.first >= 0.0 {
        return Ok(TemperatureFit {
            temperature: MAX_TEMPERATURE,
            nll: at_max_temperature.nll,
            bound_hit: Some(TemperatureBound::Upper),
            iterations: 1,
        });
    }
    let at_min_temperature = nll_derivatives(logits, labels, 1.0 / MIN_TEMPERATURE);
    if at_min_temperature.first <= 0.0 {
        return Ok(TemperatureFit {
            temperature: MIN_TEMPERATURE,
            nll: at_min_temperature.nll,
            bound_hit: Some(TemperatureBound::Lower),
            iterations: 2,
        });
    }

    let mut low = (1.0 / MAX_TEMPERATURE).ln();
    let mut high = (1.0 / MIN_TEMPERATURE).ln();
    let mut log_inverse_temperature: f64 = 0.0;
    let mut evaluations = 2;
    loop {
        let inverse_temperature = log_inverse_temperature.exp();
        let at_current = nll_derivatives(logits, labels, inverse_temperature);
        evaluations += 1;
        if at_current.first > 0.0 {
            high = log_inverse_temperature;
        } else {
            low = log_inverse_temperature;
        }
        // With u = log β: dNLL/du = β·g and d²NLL/du² = β·g + β²·h.
        let slope = inverse_temperature * at_current.first;
        let curvature = slope + inverse_temperature.powi(2) * at_current.second;
        let newton = log_inverse_temperature - slope / curvature;
        let next = if curvature > 0.0 && (low..=high).contains(&newton) {
            newton
        } else {
            0.5 * (low + high)
        };
        if (next - log_inverse_temperature).abs() <= TEMPERATURE_TOLERANCE
            || high - low <= TEMPERATURE_TOLERANCE
            || evaluations >= MAX_FIT_EVALUATIONS
        {
            return Ok(TemperatureFit {
                temperature: (-log_inverse_temperature).exp(),
                nll: at_current.nll,
                bound_hit: None,
                iterations: evaluations,
            });
        }
        log_inverse_temperature = next;
    }
}

/// How the confidence axis is cut into bins (the page's and the CLI's names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Binning {
    /// Equal-width bins on `[0, 1]` (the default).
    #[default]
    Width,
    /// Equal-mass bins: each holds `floor(n/B)` or `ceil(n/B)` examples.
    Mass,
}

/// One bin of a reliability diagram. An empty bin has `count == 0` and reports `confidence`
/// and `accuracy` as `0.0`; see the module documentation for the bounds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bin {
    /// Lower edge (equal-width) or smallest member confidence (equal-mass).
    pub lower: f64,
    /// Upper edge (equal-width) or largest member confidence (equal-mass).
    pub upper: f64,
    /// Number of examples in the bin.
    pub count: usize,
    /// Mean confidence of the members; 0 when empty.
    pub confidence: f64,
    /// Fraction of members that are correct (or of the class, for classwise bins); 0 when empty.
    pub accuracy: f64,
}

/// Running sums of one bin.
#[derive(Clone, Copy, Debug, Default)]
struct BinAccumulator {
    count: usize,
    confidence_sum: f64,
    outcome_sum: f64,
}

impl BinAccumulator {
    fn add(&mut self, confidence: f64, outcome: f64) {
        self.count += 1;
        self.confidence_sum += confidence;
        self.outcome_sum += outcome;
    }

    fn into_bin(self, lower: f64, upper: f64) -> Bin {
        let (confidence, accuracy) = if self.count == 0 {
            (0.0, 0.0)
        } else {
            let count = self.count as f64;
            (self.confidence_sum / count, self.outcome_sum / count)
        };
        Bin {
            lower,
            upper,
            count: self.count,
            confidence,
            accuracy,
        }
    }
}

/// `min(floor(c·B), B − 1)` for a confidence `c ∈ [0, 1]`.
fn equal_width_index(confidence: f64, num_bins: usize) -> usize {
    ((confidence * num_bins as f64).floor() as usize).min(num_bins - 1)
}

/// Collects `(confidence, outcome)` pairs, outcome 1 or 0, into bins.
enum BinCollector {
    EqualWidth(Vec<BinAccumulator>),
    EqualMass {
        examples: Vec<(f64, f64)>,
        num_bins: usize,
    },
}

impl BinCollector {
    fn new(binning: Binning, num_bins: usize, expected_examples: usize) -> Self {
        match binning {
            Binning::Width => Self::EqualWidth(vec![BinAccumulator::default(); num_bins]),
            Binning::Mass => Self::EqualMass {
                examples: Vec::with_capacity(expected_examples),
                num_bins,
            },
        }
    }

    fn add(&mut self, confidence: f64, outcome: f64) {
        match self {
            Self::EqualWidth(accumulators) => {
                let index = equal_width_index(confidence, accumulators.len());
                accumulators[index].add(confidence, outcome);
            }
            Self::EqualMass { examples, .. } => examples.push((confidence, outcome)),
        }
    }

    fn into_bins(self) -> Vec<Bin> {
        match self {
            Self::EqualWidth(accumulators) => {
                let num_bins = accumulators.len() as f64;
                accumulators
                    .into_iter()
                    .enumerate()
                    .map(|(b, accumulator)| {
                        accumulator.into_bin(b as f64 / num_bins, (b + 1) as f64 / num_bins)
                    })
                    .collect()
            }
            Self::EqualMass {
                mut examples,
                num_bins,
            } => {
                examples.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
                // u64 so that b·n cannot overflow a 32-bit usize (wasm32).
                let boundary =
                    |b: usize| (b as u64 * examples.len() as u64 / num_bins as u64) as usize;
                (0..num_bins)
                    .map(|b| {
                        let (start, end) = (boundary(b), boundary(b + 1));
                        let members = &examples[start..end];
                        let mut accumulator = BinAccumulator::default();
                        for &(confidence, outcome) in members {
                            accumulator.add(confidence, outcome);
                        }
                        let (lower, upper) = match (members.first(), members.last()) {
                            (Some(first), Some(last)) => (first.0, last.0),
                            _ => {
                                let next = examples.get(start).map_or(1.0, |example| example.0);
                                (next, next)
                            }
                        };
                        accumulator.into_bin(lower, upper)
                    })
                    .collect()
            }
        }
    }
}

/// Top-label reliability bins from per-example confidences and correctness.
///
/// # Errors
/// [`CalibrationError::InvalidBinCount`] unless `1 <= num_bins <= 1000`,
/// [`CalibrationError::EmptyInput`] if there are no confidences,
/// [`CalibrationError::ConfidenceCountMismatch`] if the slices differ in length, and
/// [`CalibrationError::InvalidConfidence`] for the first confidence that is NaN or outside
/// `[0, 1]`.
pub fn reliability_bins(
    confidence: &[f64],
    correct: &[bool],
    num_bins: usize,
    binning: Binning,
) -> Result<Vec<Bin>, CalibrationError> {
    check_bin_count(num_bins)?;
    if confidence.is_empty() {
        return Err(CalibrationError::EmptyInput);
    }
    if confidence.len() != correct.len() {
        return Err(CalibrationError::ConfidenceCountMismatch {
            confidences: confidence.len(),
            outcomes: correct.len(),
        });
    }
    if let Some((index, &value)) = confidence
        .iter()
        .enumerate()
        .find(|(_, c)| !(0.0..=1.0).contains(*c))
    {
        return Err(CalibrationError::InvalidConfidence { index, value });
    }
    let mut collector = BinCollector::new(binning, num_bins, confidence.len());
    for (&c, &is_correct) in confidence.iter().zip(correct) {
        collector.add(c, f64::from(is_correct));
    }
    Ok(collector.into_bins())
}

/// The binned ECE that a perfectly calibrated classifier with these confidences would show on
/// this many examples: the mean, over `draws` resamples seeded by `seed`, of the ECE when each
/// example is correct with probability equal to its confidence.
///
/// Binned ECE is biased upward: with finite bins every `|acc_b − conf_b|` is positive under
/// sampling noise, even when the model is calibrated (Kumar et al., "Verified Uncertainty
/// Calibration", NeurIPS 2019; Roelofs et al., "Mitigating Bias in Calibration Error
/// Estimation", AISTATS 2022). A measured ECE at or below this floor cannot be told from
/// perfect calibration.
///
/// # Errors
/// As [`reliability_bins`].
pub fn ece_noise_floor(
    confidence: &[f64],
    num_bins: usize,
    binning: Binning,
    draws: usize,
    seed: u64,
) -> Result<f64, CalibrationError> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut correct = vec![false; confidence.len()];
    let mut total = 0.0;
    for _ in 0..draws {
        for (outcome, &c) in correct.iter_mut().zip(confidence) {
            *outcome = rng.random::<f64>() < c;
        }
        total +=
            expected_calibration_error(&reliability_bins(confidence, &correct, num_bins, binning)?);
    }
    Ok(total / draws.max(1) as f64)
}

fn total_count(bins: &[Bin]) -> usize {
    bins.iter().map(|bin| bin.count).sum()
}

/// `ECE = Σ_b (n_b/n)·|acc_b − conf_b|`; 0 when the bins hold no examples.
pub fn expected_calibration_error(bins: &[Bin]) -> f64 {
    let total = total_count(bins) as f64;
    if total == 0.0 {
        return 0.0;
    }
    bins.iter()
        .map(|bin| bin.count as f64 / total * (bin.accuracy - bin.confidence).abs())
        .sum()
}

/// `RMSCE = sqrt(Σ_b (n_b/n)·(acc_b − conf_b)²)`; 0 when the bins hold no examples.
pub fn root_mean_square_calibration_error(bins: &[Bin]) -> f64 {
    let total = total_count(bins) as f64;
    if total == 0.0 {
        return 0.0;
    }
    bins.iter()
        .map(|bin| bin.count as f64 / total * (bin.accuracy - bin.confidence).powi(2))
        .sum::<f64>()
        .sqrt()
}

/// `MCE = max |acc_b − conf_b|` over non-empty bins; 0 when every bin is empty.
pub fn maximum_calibration_error(bins: &[Bin]) -> f64 {
    bins.iter()
        .filter(|bin| bin.count > 0)
        .map(|bin| (bin.accuracy - bin.confidence).abs())
        .fold(0.0, f64::max)
}

/// Mean over classes of each class's ECE, the class binned on its own probability `p_k`.
fn classwise_ece_from_collectors(collectors: Vec<BinCollector>) -> f64 {
    let num_classes = collectors.len() as f64;
    collectors
        .into_iter()
        .map(|collector| expected_calibration_error(&collector.into_bins()))
        .sum::<f64>()
        / num_classes
}

fn class_collectors(
    num_classes: usize,
    binning: Binning,
    num_bins: usize,
    rows: usize,
) -> Vec<BinCollector> {
    (0..num_classes)
        .map(|_| BinCollector::new(binning, num_bins, rows))
        .collect()
}

/// Classwise ECE `(1/K) Σ_k Σ_b (n_{b,k}/n)·|mean_b([y = k]) − mean_b(p_k)|` from row-major
/// probabilities `[n, K]`.
///
/// # Errors
/// [`CalibrationError::InvalidBinCount`], the shape errors of [`Logits::new`], the label errors
/// of [`check_labels`], and [`CalibrationError::InvalidProbability`] for the first value that
/// is NaN or outside `[0, 1]`.
pub fn classwise_ece(
    probabilities: &[f64],
    labels: &[u32],
    num_classes: usize,
    num_bins: usize,
    binning: Binning,
) -> Result<f64, CalibrationError> {
    check_bin_count(num_bins)?;
    check_probabilities(probabilities, num_classes)?;
    let rows = probabilities.len() / num_classes;
    check_labels_for_rows(rows, num_classes, labels)?;
    let mut collectors = class_collectors(num_classes, binning, num_bins, rows);
    for (row, &label) in probabilities.chunks_exact(num_classes).zip(labels) {
        for (class, (&probability, collector)) in row.iter().zip(&mut collectors).enumerate() {
            collector.add(probability, f64::from(class == label as usize));
        }
    }
    Ok(classwise_ece_from_collectors(collectors))
}

/// Every calibration metric at one temperature.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CalibrationReport {
    /// Fraction of examples whose top class (ties: lowest index) is the label.
    pub accuracy: f64,
    /// Mean negative log-likelihood of the label.
    pub nll: f64,
    /// Mean `Σ_k (p_k − [y = k])²`, in `[0, 2]`.
    pub brier: f64,
    /// Top-label expected calibration error.
    pub ece: f64,
    /// Top-label root-mean-square calibration error.
    pub rmsce: f64,
    /// Top-label maximum calibration error over non-empty bins.
    pub mce: f64,
    /// Classwise expected calibration error.
    pub classwise_ece: f64,
    /// The top-label reliability bins.
    pub bins: Vec<Bin>,
}

/// Index of the largest logit, the lowest index on ties. Independent of the temperature.
fn predicted_class(row: &[f32]) -> usize {
    row.iter()
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |(best, best_logit), (class, &z)| {
            if z > best_logit {
                (class, z)
            } else {
                (best, best_logit)
            }
        })
        .0
}

/// All metrics at temperature `temperature`, in one pass over the logits (log-softmax per row
/// in `f64` into a reused buffer). Equal-width binning is linear in `n`; equal-mass binning
/// sorts, `O(n·K·log n)`.
///
/// # Errors
/// [`CalibrationError::InvalidTemperature`], [`CalibrationError::InvalidBinCount`], and the
/// label errors of [`check_labels`].
pub fn evaluate(
    logits: &Logits,
    labels: &[u32],
    temperature: f64,
    num_bins: usize,
    binning: Binning,
) -> Result<CalibrationReport, CalibrationError> {
    check_temperature(temperature)?;
    check_bin_count(num_bins)?;
    check_labels(logits, labels)?;
    let rows = logits.len();
    let mut log_probabilities = vec![0.0; logits.num_classes()];
    let mut top_label = BinCollector::new(binning, num_bins, rows);
    let mut per_class = class_collectors(logits.num_classes(), binning, num_bins, rows);
    let (mut correct_count, mut nll_sum, mut brier_sum) = (0_usize, 0.0, 0.0);
    for (row, &label) in logits.rows().zip(labels) {
        let label = label as usize;
        log_softmax_row(row, temperature, &mut log_probabilities);
        nll_sum -= log_probabilities[label];
        let predicted = predicted_class(row);
        let is_correct = predicted == label;
        correct_count += usize::from(is_correct);
        top_label.add(log_probabilities[predicted].exp(), f64::from(is_correct));
        for (class, (&log_probability, collector)) in
            log_probabilities.iter().zip(&mut per_class).enumerate()
        {
            let probability = log_probability.exp();
            let target = f64::from(class == label);
            brier_sum += (probability - target).powi(2);
            collector.add(probability, target);
        }
    }
    let n = rows as f64;
    let bins = top_label.into_bins();
    Ok(CalibrationReport {
        accuracy: correct_count as f64 / n,
        nll: nll_sum / n,
        brier: brier_sum / n,
        ece: expected_calibration_error(&bins),
        rmsce: root_mean_square_calibration_error(&bins),
        mce: maximum_calibration_error(&bins),
        classwise_ece: classwise_ece_from_collectors(per_class),
        bins,
    })
}

/// Per-example top-label confidence `max_k p_k` and correctness (`argmax` with ties going to
/// the lowest index equals the label), for plots such as the confidence histogram.
///
/// # Errors
/// [`CalibrationError::InvalidTemperature`] and the label errors of [`check_labels`].
pub fn confidences(
    logits: &Logits,
    labels: &[u32],
    temperature: f64,
) -> Result<(Vec<f64>, Vec<bool>), CalibrationError> {
    check_temperature(temperature)?;
    check_labels(logits, labels)?;
    Ok(logits
        .rows()
        .zip(labels)
        .map(|(row, &label)| {
            // The top class has z/T − m = 0, so its probability is exp(−log Σ exp(z/T − m)).
            let (_, log_sum) = shifted_log_sum_exp(row, temperature);
            ((-log_sum).exp(), predicted_class(row) == label as usize)
        })
        .unzip())
}

/// Per-class reliability bins at temperature `temperature`, as classwise ECE uses them: class
/// `k` is binned on its own probability `p_k`; a bin's `confidence` is the mean `p_k` of its
/// members and its `accuracy` the fraction of them whose label is `k`. Entry `k` of the result
/// holds class `k`'s `num_bins` bins, so the mean over classes of
/// [`expected_calibration_error`] of each entry is the classwise ECE of [`evaluate`]. One pass
/// over the logits, log-softmax per row in `f64` into a reused buffer.
///
/// # Errors
/// [`CalibrationError::InvalidTemperature`], [`CalibrationError::InvalidBinCount`], and the
/// label errors of [`check_labels`].
pub fn classwise_bins(
    logits: &Logits,
    labels: &[u32],
    temperature: f64,
    num_bins: usize,
    binning: Binning,
) -> Result<Vec<Vec<Bin>>, CalibrationError> {
    check_temperature(temperature)?;
    check_bin_count(num_bins)?;
    check_labels(logits, labels)?;
    let mut log_probabilities = vec![0.0; logits.num_classes()];
    let mut per_class = class_collectors(logits.num_classes(), binning, num_bins, logits.len());
    for (row, &label) in logits.rows().zip(labels) {
        log_softmax_row(row, temperature, &mut log_probabilities);
        for (class, (&log_probability, collector)) in
            log_probabilities.iter().zip(&mut per_class).enumerate()
        {
            collector.add(log_probability.exp(), f64::from(class == label as usize));
        }
    }
    Ok(per_class.into_iter().map(BinCollector::into_bins).collect())
}

/// Counts of `values` per equal-width bin on `[0, 1]`: value `c` goes to bin
/// `min(floor(c·B), B − 1)`, the rule of [`Binning::Width`], so `c = 1` lands in the last bin.
/// No values give `num_bins` zero counts.
///
/// # Errors
/// [`CalibrationError::InvalidBinCount`] unless `1 <= num_bins <= 1000`, and
/// [`CalibrationError::InvalidConfidence`] for the first value that is NaN or outside `[0, 1]`.
pub fn histogram_counts(values: &[f64], num_bins: usize) -> Result<Vec<usize>, CalibrationError> {
    check_bin_count(num_bins)?;
    let mut counts = vec![0; num_bins];
    for (index, &value) in values.iter().enumerate() {
        if !(0.0..=1.0).contains(&value) {
            return Err(CalibrationError::InvalidConfidence { index, value });
        }
        counts[equal_width_index(value, num_bins)] += 1;
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Tolerance for values computed by hand (the inputs are `f32`, so about 1e-7 relative).
    const HAND_TOLERANCE: f64 = 1e-6;
    /// Tolerance for one quantity computed two ways in `f64`.
    const AGREEMENT_TOLERANCE: f64 = 1e-12;
    /// Relative tolerance on a recovered temperature. The sampling error of the fitted 1/T is
    /// 1/sqrt(n·mean Var_p[z]) ≈ 0.79%·sqrt(20000/n) for the planted data below, so n = 40000
    /// puts the tolerance at about 3.6 standard deviations (at n = 20000 it would be 2.5).
    const RECOVERY_TOLERANCE: f64 = 0.02;
    /// Step of the central differences; their error is O(step²) ≈ 1e-10, rounding adds
    /// about 1e-16/step.
    const FINITE_DIFFERENCE_STEP: f64 = 1e-5;
    /// Relative tolerance of analytic derivatives against central differences.
    const DERIVATIVE_TOLERANCE: f64 = 1e-6;

    #[test]
    fn ece_noise_floor_of_two_fair_coins_is_a_quarter() {
        // One bin, two examples of confidence 0.5: accuracy is 0, 0.5 or 1 with probabilities
        // 1/4, 1/2, 1/4, so E|acc − 0.5| = 1/4·0.5 + 1/2·0 + 1/4·0.5 = 0.25. The mean of 4,000
        // draws has a standard error of 0.25/sqrt(4000) ≈ 0.004.
        let floor = ece_noise_floor(&[0.5, 0.5], 1, Binning::Width, 4000, 1).unwrap();
        assert_close(floor, 0.25, 0.016);
    }

    #[test]
    fn ece_noise_floor_follows_the_half_normal_law() {
        // One bin of n examples at confidence p: acc − p is about N(0, p(1 − p)/n), so the
        // expected |acc − p| is sqrt(2p(1 − p)/(πn)) = 0.002394 for p = 0.9, n = 10,000. The
        // mean of 200 draws has a standard error of about 0.0018/sqrt(200) ≈ 0.00013.
        let expected = (2.0 * 0.9 * 0.1 / (std::f64::consts::PI * 10_000.0)).sqrt();
        let floor = ece_noise_floor(&vec![0.9; 10_000], 1, Binning::Width, 200, 7).unwrap();
        assert_close(floor, expected, 0.0005);
        // More bins cannot lower it: each bin adds its own positive noise.
        let spread: Vec<f64> = (0..10_000)
            .map(|i| 0.5 + 0.5 * i as f64 / 10_000.0)
            .collect();
        let one = ece_noise_floor(&spread, 1, Binning::Width, 50, 7).unwrap();
        let fifteen = ece_noise_floor(&spread, 15, Binning::Width, 50, 7).unwrap();
        assert!(fifteen > 2.0 * one, "15 bins {fifteen} vs 1 bin {one}");
    }

    fn assert_close(actual: f64, expected: f64, tolerance: f64) {
        assert!(
            (actual - expected).abs() <= tolerance,
            "expected {expected}, got {actual} (tolerance {tolerance})"
        );
    }

    /// Row-major K=2 logits `[log(p/(1−p)), 0]`-style rows with known probabilities:
    /// row 0 p = [0.75, 0.25], label 0 (correct, confidence 0.75);
    /// row 1 p = [0.1, 0.9], label 1 (correct, confidence 0.9);
    /// row 2 p = [0.7, 0.3], label 1 (wrong, confidence 0.7);
    /// row 3 p = [0.5, 0.5], label 1 (tie goes to class 0: wrong, confidence 0.5).
    fn hand_example() -> (Vec<f32>, Vec<u32>) {
        let logits = vec![
            3.0_f32.ln(),
            0.0,
            0.0,
            9.0_f32.ln(),
            (7.0_f32 / 3.0).ln(),
            0.0,
            0.0,
            0.0,
        ];
        (logits, vec![0, 1, 1, 1])
    }

    #[test]
    fn hand_computed_metrics() {
        let (values, labels) = hand_example();
        let logits = Logits::new(&values, 2).unwrap();
        let report = evaluate(&logits, &labels, 1.0, 5, Binning::Width).unwrap();
        // Accuracy: rows 0 and 1 are correct → 2/4.
        assert_close(report.accuracy, 0.5, HAND_TOLERANCE);
        // NLL: (−ln 0.75 − ln 0.9 − ln 0.3 + ln 2)/4
        //    = (0.2876821 + 0.1053605 + 1.2039728 + 0.6931472)/4 = 2.2901626/4 = 0.5725406.
        assert_close(report.nll, 0.572_540_6, HAND_TOLERANCE);
        // Brier: (2·0.25² + 2·0.1² + 2·0.7² + 2·0.5²)/4 = (0.125 + 0.02 + 0.98 + 0.5)/4 = 0.40625.
        assert_close(report.brier, 0.40625, HAND_TOLERANCE);
        // Bins of width 0.2: bin 2 holds c = 0.5 (acc 0), bin 3 holds 0.75 and 0.7
        // (conf 0.725, acc 0.5), bin 4 holds 0.9 (acc 1).
        let counts: Vec<usize> = report.bins.iter().map(|bin| bin.count).collect();
        assert_eq!(counts, vec![0, 0, 1, 2, 1]);
        assert_close(report.bins[3].confidence, 0.725, HAND_TOLERANCE);
        assert_close(report.bins[3].accuracy, 0.5, HAND_TOLERANCE);
        assert_close(report.bins[0].confidence, 0.0, 0.0);
        // ECE = ¼·0.5 + ½·0.225 + ¼·0.1 = 0.125 + 0.1125 + 0.025 = 0.2625.
        assert_close(report.ece, 0.2625, HAND_TOLERANCE);
        // RMSCE = sqrt(¼·0.25 + ½·0.050625 + ¼·0.01) = sqrt(0.0903125) = 0.3005204.
        assert_close(report.rmsce, 0.300_520_4, HAND_TOLERANCE);
        // MCE = max(0.5, 0.225, 0.1) = 0.5; the empty bins 0 and 1 (|0 − 0| anyway) are skipped.
        assert_close(report.mce, 0.5, HAND_TOLERANCE);
        // Classwise, K = 2: class 0 on p_0 = (0.75, 0.1, 0.7, 0.5) with targets (1, 0, 0, 0):
        // ¼·0.1 + ¼·0.5 + ½·|0.5 − 0.725| = 0.2625; class 1 on p_1 = (0.25, 0.9, 0.3, 0.5),
        // targets (0, 1, 1, 1): ½·|0.5 − 0.275| + ¼·0.5 + ¼·0.1 = 0.2625. Mean 0.2625.
        assert_close(report.classwise_ece, 0.2625, HAND_TOLERANCE);
    }

    #[test]
    fn hand_computed_classwise_ece_with_three_classes() {
        let probabilities = [0.6, 0.3, 0.1, 0.2, 0.7, 0.1, 0.3, 0.3, 0.4];
        let labels = [0, 2, 2];
        // Two bins split at 0.5.
        // Class 0: p = (0.6, 0.2, 0.3), targets (1, 0, 0): ⅔·|0 − 0.25| + ⅓·|1 − 0.6| = 0.3.
        // Class 1: p = (0.3, 0.7, 0.3), targets 0: ⅔·0.3 + ⅓·0.7 = 0.4333333.
        // Class 2: p = (0.1, 0.1, 0.4), targets (0, 1, 1): one bin, |⅔ − 0.2| = 0.4666667.
        // Mean: 1.2/3 = 0.4.
        let ece = classwise_ece(&probabilities, &labels, 3, 2, Binning::Width).unwrap();
        assert_close(ece, 0.4, HAND_TOLERANCE);
    }

    #[test]
    fn softmax_matches_hand_example() {
        let (values, _) = hand_example();
        let logits = Logits::new(&values, 2).unwrap();
        let probabilities = softmax(&logits, 1.0).unwrap();
        let expected = [0.75, 0.25, 0.1, 0.9, 0.7, 0.3, 0.5, 0.5];
        for (&p, &e) in probabilities.iter().zip(&expected) {
            assert_close(p, e, HAND_TOLERANCE);
        }
        // T = 2 halves the logits: p = sqrt(3)/(sqrt(3) + 1) = 0.6339746 for row 0.
        let probabilities = softmax(&logits, 2.0).unwrap();
        assert_close(probabilities[0], 0.633_974_6, HAND_TOLERANCE);
    }

    #[test]
    fn confidences_match_hand_example() {
        let (values, labels) = hand_example();
        let logits = Logits::new(&values, 2).unwrap();
        let (confidence, correct) = confidences(&logits, &labels, 1.0).unwrap();
        for (&c, &e) in confidence.iter().zip(&[0.75, 0.9, 0.7, 0.5]) {
            assert_close(c, e, HAND_TOLERANCE);
        }
        assert_eq!(correct, vec![true, true, false, false]);
    }

    /// Draws `n` rows of "true" logits uniform in [−3, 3], samples each label from
    /// softmax(true logits) by inverse CDF, and returns the true logits scaled by `temperature`.
    fn planted_temperature_data(
        n: usize,
        num_classes: usize,
        temperature: f64,
        seed: u64,
    ) -> (Vec<f32>, Vec<u32>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut values = Vec::with_capacity(n * num_classes);
        let mut labels = Vec::with_capacity(n);
        let mut true_logits = vec![0.0_f64; num_classes];
        for _ in 0..n {
            for z in true_logits.iter_mut() {
                *z = rng.random_range(-3.0..3.0);
            }
            let max = true_logits
                .iter()
                .copied()
                .fold(f64::NEG_INFINITY, f64::max);
            let weights: Vec<f64> = true_logits.iter().map(|z| (z - max).exp()).collect();
            let total: f64 = weights.iter().sum();
            let u: f64 = rng.random::<f64>() * total;
            let mut cumulative = 0.0;
            let mut label = num_classes - 1;
            for (class, weight) in weights.iter().enumerate() {
                cumulative += weight;
                if u < cumulative {
                    label = class;
                    break;
                }
            }
            labels.push(label as u32);
            values.extend(true_logits.iter().map(|z| (z * temperature) as f32));
        }
        (values, labels)
    }

    #[test]
    fn fit_recovers_planted_temperature() {
        for (planted, seed) in [(2.5, 7), (0.3, 11)] {
            let (values, labels) = planted_temperature_data(40_000, 10, planted, seed);
            let logits = Logits::new(&values, 10).unwrap();
            let fit = fit_temperature(&logits, &labels).unwrap();
            assert_eq!(fit.bound_hit, None);
            assert!(
                (fit.temperature / planted - 1.0).abs() <= RECOVERY_TOLERANCE,
                "planted {planted}, fitted {}",
                fit.temperature
            );
            // The fitted NLL is what evaluate reports there, and no worse than at T = 1.
            let at_fit = evaluate(&logits, &labels, fit.temperature, 15, Binning::Width).unwrap();
            assert_close(at_fit.nll, fit.nll, AGREEMENT_TOLERANCE);
            let at_one = evaluate(&logits, &labels, 1.0, 15, Binning::Width).unwrap();
            assert!(fit.nll <= at_one.nll);
            // The derivative vanishes at the fitted temperature: a Newton step from there,
            // g/(β·h) in log β, is within the fit's tolerance (with a factor 10 of slack).
            let derivatives = nll_derivatives(&logits, &labels, 1.0 / fit.temperature);
            let newton_step = derivatives.first * fit.temperature / derivatives.second;
            assert!(newton_step.abs() <= 10.0 * TEMPERATURE_TOLERANCE);
        }
    }

    #[test]
    fn nll_derivatives_match_finite_differences() {
        let (values, labels) = planted_temperature_data(500, 4, 1.7, 3);
        let logits = Logits::new(&values, 4).unwrap();
        for inverse_temperature in [0.1, 0.6, 1.0, 3.0] {
            let at = nll_derivatives(&logits, &labels, inverse_temperature);
            let above = nll_derivatives(
                &logits,
                &labels,
                inverse_temperature + FINITE_DIFFERENCE_STEP,
            );
            let below = nll_derivatives(
                &logits,
                &labels,
                inverse_temperature - FINITE_DIFFERENCE_STEP,
            );
            let first = (above.nll - below.nll) / (2.0 * FINITE_DIFFERENCE_STEP);
            let second = (above.first - below.first) / (2.0 * FINITE_DIFFERENCE_STEP);
            assert_close(at.first, first, DERIVATIVE_TOLERANCE * first.abs().max(1.0));
            assert_close(
                at.second,
                second,
                DERIVATIVE_TOLERANCE * second.abs().max(1.0),
            );
            // The NLL from the derivative pass equals the one from log-softmax.
            let report = evaluate(
                &logits,
                &labels,
                1.0 / inverse_temperature,
                10,
                Binning::Width,
            )
            .unwrap();
            assert_close(at.nll, report.nll, AGREEMENT_TOLERANCE);
        }
    }

    #[test]
    fn fit_hits_bounds() {
        // The label is always the largest logit: sharper is always better, optimum T → 0.
        let values = [2.0, 0.0, -1.0, 0.5, 3.0, 1.0, 0.0, -2.0, 0.1];
        let logits = Logits::new(&values, 3).unwrap();
        let fit = fit_temperature(&logits, &[0, 1, 2]).unwrap();
        assert_eq!(fit.bound_hit, Some(TemperatureBound::Lower));
        assert_eq!(fit.temperature, MIN_TEMPERATURE);
        assert!(fit.nll.is_finite());
        // The label is always the smallest logit: flatter is always better, optimum T → ∞.
        let fit = fit_temperature(&logits, &[2, 2, 1]).unwrap();
        assert_eq!(fit.bound_hit, Some(TemperatureBound::Upper));
        assert_eq!(fit.temperature, MAX_TEMPERATURE);
        assert!(fit.nll.is_finite());
    }

    #[test]
    fn fit_on_tied_logits_returns_one() {
        let values = [1.5; 12];
        let logits = Logits::new(&values, 3).unwrap();
        let fit = fit_temperature(&logits, &[0, 1, 2, 0]).unwrap();
        assert_eq!(fit.temperature, 1.0);
        assert_eq!(fit.bound_hit, None);
        assert_close(fit.nll, 3.0_f64.ln(), AGREEMENT_TOLERANCE);
    }

    #[test]
    fn extreme_logits_stay_finite() {
        let values = [
            1e4, -1e4, 0.0, // one class dominating
            -1e4, -1e4, -1e4, // tied
            1e4, 1e4, -1e4, // tied at the top
            0.0, 0.0, 1e4,
        ];
        let labels = [1, 2, 1, 2];
        let logits = Logits::new(&values, 3).unwrap();
        for temperature in [MIN_TEMPERATURE, 1.0, MAX_TEMPERATURE] {
            for binning in [Binning::Width, Binning::Mass] {
                let report = evaluate(&logits, &labels, temperature, 15, binning).unwrap();
                for value in [
                    report.accuracy,
                    report.nll,
                    report.brier,
                    report.ece,
                    report.rmsce,
                    report.mce,
                    report.classwise_ece,
                ] {
                    assert!(value.is_finite(), "T = {temperature}: {report:?}");
                }
                assert!((0.0..=2.0).contains(&report.brier));
            }
            let probabilities = softmax(&logits, temperature).unwrap();
            assert!(probabilities.iter().all(|p| p.is_finite()));
            for row in probabilities.chunks_exact(3) {
                assert_close(row.iter().sum(), 1.0, HAND_TOLERANCE);
            }
            let (confidence, _) = confidences(&logits, &labels, temperature).unwrap();
            assert!(confidence.iter().all(|c| (0.0..=1.0).contains(c)));
        }
        // At T = 1: row 0 has p_1 = exp(−2e4), so its NLL term alone is 2e4.
        let report = evaluate(&logits, &labels, 1.0, 15, Binning::Width).unwrap();
        assert!(report.nll > 5e3);
        let fit = fit_temperature(&logits, &labels).unwrap();
        assert!(fit.temperature.is_finite() && fit.nll.is_finite());
    }

    #[test]
    fn equal_width_puts_confidence_one_in_last_bin() {
        let bins =
            reliability_bins(&[1.0, 0.0, 0.5], &[true, false, true], 10, Binning::Width).unwrap();
        assert_eq!(bins.len(), 10);
        assert_eq!(bins[9].count, 1);
        assert_eq!(bins[0].count, 1);
        assert_eq!(bins[5].count, 1);
        assert_eq!((bins[9].lower, bins[9].upper), (0.9, 1.0));
        assert_eq!(bins[9].accuracy, 1.0);
    }

    #[test]
    fn equal_mass_bin_sizes_are_floor_or_ceil() {
        let confidence: Vec<f64> = (0..10).map(|i| f64::from(i) / 10.0).rev().collect();
        let correct = vec![true; 10];
        let bins = reliability_bins(&confidence, &correct, 3, Binning::Mass).unwrap();
        // Boundaries floor(b·10/3) = 0, 3, 6, 10.
        let counts: Vec<usize> = bins.iter().map(|bin| bin.count).collect();
        assert_eq!(counts, vec![3, 3, 4]);
        assert_eq!((bins[0].lower, bins[0].upper), (0.0, 0.2));
        assert_eq!((bins[2].lower, bins[2].upper), (0.6, 0.9));
        // n = 2 < B = 4: boundaries 0, 0, 1, 1, 2, so bins 0 and 2 are empty.
        let bins = reliability_bins(&[0.9, 0.3], &[true, false], 4, Binning::Mass).unwrap();
        let counts: Vec<usize> = bins.iter().map(|bin| bin.count).collect();
        assert_eq!(counts, vec![0, 1, 0, 1]);
        assert_eq!((bins[0].confidence, bins[0].accuracy), (0.0, 0.0));
        assert_eq!((bins[2].lower, bins[2].upper), (0.9, 0.9));
        // Empty bins add nothing: ECE = ½·0.3 + ½·0.1.
        assert_close(expected_calibration_error(&bins), 0.2, AGREEMENT_TOLERANCE);
        assert_close(maximum_calibration_error(&bins), 0.3, AGREEMENT_TOLERANCE);
    }

    #[test]
    fn errors_name_the_offending_value() {
        let values = [0.0, 1.0, 2.0, 3.0, 4.0, f32::NAN];
        assert!(matches!(
            Logits::new(&values, 3),
            Err(CalibrationError::NonFinite { row: 1, class: 2, value }) if value.is_nan()
        ));
        let values = [0.0, f32::INFINITY, 2.0, 3.0];
        assert_eq!(
            Logits::new(&values, 2),
            Err(CalibrationError::NonFinite {
                row: 0,
                class: 1,
                value: f32::INFINITY
            })
        );
        assert_eq!(Logits::new(&[], 3), Err(CalibrationError::EmptyInput));
        assert_eq!(
            Logits::new(&[1.0, 2.0], 1),
            Err(CalibrationError::TooFewClasses(1))
        );
        assert_eq!(
            Logits::new(&[1.0, 2.0, 3.0], 2),
            Err(CalibrationError::ShapeMismatch {
                len: 3,
                num_classes: 2
            })
        );
        let values = [0.0; 6];
        let logits = Logits::new(&values, 3).unwrap();
        assert_eq!(
            check_labels(&logits, &[0, 3]),
            Err(CalibrationError::LabelOutOfRange {
                row: 1,
                label: 3,
                num_classes: 3
            })
        );
        assert_eq!(
            fit_temperature(&logits, &[0]),
            Err(CalibrationError::LabelCountMismatch { labels: 1, rows: 2 })
        );
        for num_bins in [0, MAX_BINS + 1] {
            assert_eq!(
                evaluate(&logits, &[0, 1], 1.0, num_bins, Binning::Width),
                Err(CalibrationError::InvalidBinCount(num_bins))
            );
            assert_eq!(
                reliability_bins(&[0.5], &[true], num_bins, Binning::Mass),
                Err(CalibrationError::InvalidBinCount(num_bins))
            );
        }
        assert!(evaluate(&logits, &[0, 1], 1.0, MAX_BINS, Binning::Mass).is_ok());
        for temperature in [0.0, -1.0, f64::INFINITY] {
            assert_eq!(
                softmax(&logits, temperature),
                Err(CalibrationError::InvalidTemperature(temperature))
            );
        }
        assert!(matches!(
            evaluate(&logits, &[0, 1], f64::NAN, 10, Binning::Width),
            Err(CalibrationError::InvalidTemperature(t)) if t.is_nan()
        ));
        assert_eq!(
            reliability_bins(&[0.5, 1.5], &[true, true], 10, Binning::Width),
            Err(CalibrationError::InvalidConfidence {
                index: 1,
                value: 1.5
            })
        );
        assert_eq!(
            reliability_bins(&[0.5], &[true, true], 10, Binning::Width),
            Err(CalibrationError::ConfidenceCountMismatch {
                confidences: 1,
                outcomes: 2
            })
        );
        assert_eq!(
            classwise_ece(&[0.5, 0.5, 1.2, -0.2], &[0, 1], 2, 10, Binning::Width),
            Err(CalibrationError::InvalidProbability {
                row: 1,
                class: 0,
                value: 1.2
            })
        );
    }

    #[test]
    fn probabilities_are_recognised_and_converted_on_request() {
        let probabilities = [0.25, 0.75, 1.0, 0.0];
        let as_logits = Logits::new(&probabilities, 2).unwrap();
        assert!(looks_like_probabilities(&as_logits));
        let (values, _) = hand_example();
        assert!(!looks_like_probabilities(&Logits::new(&values, 2).unwrap()));
        let converted = logits_from_probabilities(&probabilities, 2).unwrap();
        let logits = Logits::new(&converted, 2).unwrap();
        let round_trip = softmax(&logits, 1.0).unwrap();
        for (&p, &q) in round_trip.iter().zip(&probabilities) {
            assert_close(p, f64::from(q), HAND_TOLERANCE);
        }
    }

    #[test]
    fn classwise_bins_reproduce_classwise_ece() {
        let (values, labels) = planted_temperature_data(2_000, 4, 1.8, 5);
        let logits = Logits::new(&values, 4).unwrap();
        for binning in [Binning::Width, Binning::Mass] {
            for temperature in [0.5, 1.0, 2.5] {
                let per_class = classwise_bins(&logits, &labels, temperature, 15, binning).unwrap();
                assert_eq!(per_class.len(), 4);
                let mean_ece = per_class
                    .iter()
                    .map(|bins| expected_calibration_error(bins))
                    .sum::<f64>()
                    / 4.0;
                let report = evaluate(&logits, &labels, temperature, 15, binning).unwrap();
                assert_close(mean_ece, report.classwise_ece, AGREEMENT_TOLERANCE);
                // Independently: from the probabilities through `classwise_ece`.
                let probabilities = softmax(&logits, temperature).unwrap();
                let from_probabilities =
                    classwise_ece(&probabilities, &labels, 4, 15, binning).unwrap();
                assert_close(mean_ece, from_probabilities, HAND_TOLERANCE);
                for (class, bins) in per_class.iter().enumerate() {
                    assert_eq!(bins.len(), 15);
                    assert_eq!(
                        bins.iter().map(|bin| bin.count).sum::<usize>(),
                        labels.len()
                    );
                    // Σ_b n_b·acc_b counts the examples labelled `class`.
                    let members: f64 = bins.iter().map(|bin| bin.count as f64 * bin.accuracy).sum();
                    let labelled = labels.iter().filter(|&&y| y as usize == class).count();
                    assert_close(members, labelled as f64, HAND_TOLERANCE);
                }
            }
        }
        assert_eq!(
            classwise_bins(&logits, &labels, 0.0, 15, Binning::Width),
            Err(CalibrationError::InvalidTemperature(0.0))
        );
        assert_eq!(
            classwise_bins(&logits, &labels, 1.0, 0, Binning::Width),
            Err(CalibrationError::InvalidBinCount(0))
        );
        assert_eq!(
            classwise_bins(&logits, &labels[1..], 1.0, 15, Binning::Width),
            Err(CalibrationError::LabelCountMismatch {
                labels: 1_999,
                rows: 2_000
            })
        );
    }

    #[test]
    fn histogram_counts_use_the_equal_width_rule() {
        let counts = histogram_counts(&[0.0, 0.05, 0.1, 0.55, 0.999, 1.0], 10).unwrap();
        assert_eq!(counts, vec![2, 1, 0, 0, 0, 1, 0, 0, 0, 2]);
        assert_eq!(histogram_counts(&[], 4).unwrap(), vec![0; 4]);
        // The same counts as equal-width reliability bins.
        let (values, labels) = planted_temperature_data(1_000, 5, 1.3, 9);
        let logits = Logits::new(&values, 5).unwrap();
        let (confidence, correct) = confidences(&logits, &labels, 1.0).unwrap();
        let bins = reliability_bins(&confidence, &correct, 15, Binning::Width).unwrap();
        let bin_counts: Vec<usize> = bins.iter().map(|bin| bin.count).collect();
        assert_eq!(histogram_counts(&confidence, 15).unwrap(), bin_counts);
        assert_eq!(
            histogram_counts(&[0.5], 0),
            Err(CalibrationError::InvalidBinCount(0))
        );
        assert_eq!(
            histogram_counts(&[0.5, -0.25], 10),
            Err(CalibrationError::InvalidConfidence {
                index: 1,
                value: -0.25
            })
        );
        assert!(matches!(
            histogram_counts(&[f64::NAN], 10),
            Err(CalibrationError::InvalidConfidence { index: 0, value }) if value.is_nan()
        ));
    }

    fn logits_and_labels() -> impl Strategy<Value = (usize, Vec<f32>, Vec<u32>)> {
        (2_usize..6, 1_usize..40).prop_flat_map(|(num_classes, rows)| {
            (
                Just(num_classes),
                // Logits from a few integer levels, so ties are common.
                prop::collection::vec(
                    (-4_i8..4).prop_map(|z| f32::from(z) * 2.5),
                    rows * num_classes,
                ),
                prop::collection::vec(0..num_classes as u32, rows),
            )
        })
    }

    proptest! {
        #[test]
        fn accuracy_does_not_depend_on_temperature(
            (num_classes, values, labels) in logits_and_labels(),
            first in MIN_TEMPERATURE..MAX_TEMPERATURE,
            second in MIN_TEMPERATURE..MAX_TEMPERATURE,
        ) {
            let logits = Logits::new(&values, num_classes).unwrap();
            let at_first = evaluate(&logits, &labels, first, 10, Binning::Width).unwrap();
            let at_second = evaluate(&logits, &labels, second, 10, Binning::Mass).unwrap();
            prop_assert_eq!(at_first.accuracy, at_second.accuracy);
            let (_, correct_first) = confidences(&logits, &labels, first).unwrap();
            let (_, correct_second) = confidences(&logits, &labels, second).unwrap();
            prop_assert_eq!(correct_first, correct_second);
        }

        #[test]
        fn equal_mass_bins_hold_floor_or_ceil(
            confidence in prop::collection::vec(0.0_f64..=1.0, 1..200),
            num_bins in 1_usize..50,
        ) {
            let n = confidence.len();
            let correct = vec![false; n];
            let bins = reliability_bins(&confidence, &correct, num_bins, Binning::Mass).unwrap();
            prop_assert_eq!(bins.len(), num_bins);
            prop_assert_eq!(bins.iter().map(|bin| bin.count).sum::<usize>(), n);
            for bin in &bins {
                prop_assert!(bin.count == n / num_bins || bin.count == n.div_ceil(num_bins));
                prop_assert!(bin.lower <= bin.upper);
            }
            for pair in bins.windows(2) {
                prop_assert!(pair[0].upper <= pair[1].lower);
            }
        }
    }
}
