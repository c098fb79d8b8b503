//! Calibration of a classifier: temperature scaling and the metrics that show miscalibration.
//!
//! # What it computes
//! Probabilities come from logits `z ∈ R^K` through a temperature `T > 0`:
//! `p_k = exp(z_k/T − m) / Σ_j exp(z_j/T − m)` with `m = max_j z_j/T`, and
//! `log p_k = (z_k/T − m) − log Σ_j exp(z_j/T − m)` (the stable softmax and log-softmax,
//! evaluated in `f64`, [`softmax_row`]). Every metric is computed from these, and [`softmax`]
//! hands out the probabilities in `f64`: they are never rounded to `f32`.
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
    /// A kernel bandwidth is zero, negative, NaN, infinite or above 1.
    #[error("the bandwidth must be a number in (0, 1], got {0}")]
    InvalidBandwidth(f64),
    /// A curve needs at least 2 and at most [`crate::smooth_calibration::MAX_CURVE_POINTS`]
    /// points.
    #[error("a curve needs between 2 and 10000 points, got {0}")]
    InvalidPointCount(usize),
    /// Dirichlet calibration is fitted for at most
    /// [`crate::recalibration::dirichlet::MAX_DIRICHLET_CLASSES`] classes.
    #[error(
        "Dirichlet calibration fits K(K + 1) parameters by Newton's method: at most 20 classes, \
         got {0}"
    )]
    TooManyClassesForDirichlet(usize),
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

/// `max_j z_j/T` of a row, for a positive temperature. Division by a positive number is
/// monotone, so `max(z)/T` is exactly `max(z/T)`.
fn scaled_max(row: &[f32], temperature: f64) -> f64 {
    row.iter()
        .fold(f64::NEG_INFINITY, |max, &z| max.max(f64::from(z)))
        / temperature
}

/// For a non-empty row and a positive temperature, returns `(m, Σ_j exp(z_j/T − m))` with
/// `m = max_j z_j/T`. The sum is at least 1: the top class contributes `exp(0) = 1` exactly.
fn shifted_exp_sum(row: &[f32], temperature: f64) -> (f64, f64) {
    let max = scaled_max(row, temperature);
    let sum: f64 = row
        .iter()
        .map(|&z| (f64::from(z) / temperature - max).exp())
        .sum();
    (max, sum)
}

/// For a non-empty row and a positive temperature, returns `(m, log Σ_j exp(z_j/T − m))` with
/// `m = max_j z_j/T`; the log-sum-exp is their sum. The sum inside the log is at least 1.
fn shifted_log_sum_exp(row: &[f32], temperature: f64) -> (f64, f64) {
    let (max, sum) = shifted_exp_sum(row, temperature);
    (max, sum.ln())
}

/// The top-label probability `max_k softmax(z/T)_k` of one row: the top class has
/// `exp(z/T − m) = 1`, so it is `1 / Σ_j exp(z_j/T − m)`, exactly the value [`softmax_row`]
/// gives that class. The row must be non-empty and the temperature positive and finite.
pub(crate) fn top_probability(row: &[f32], temperature: f64) -> f64 {
    1.0 / shifted_exp_sum(row, temperature).1
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

/// One row's softmax normaliser at a temperature, as [`softmax_row`] found it: `m = max_j z_j/T`
/// and `log Σ_j exp(z_j/T − m)`. Any class's log-probability follows without another `exp`.
#[derive(Clone, Copy, Debug)]
pub struct Normaliser {
    temperature: f64,
    max: f64,
    log_sum: f64,
}

impl Normaliser {
    /// `log p_k = (z_k/T − m) − log Σ_j exp(z_j/T − m)` for the class whose logit is `logit`.
    pub fn log_probability(&self, logit: f32) -> f64 {
        (f64::from(logit) / self.temperature - self.max) - self.log_sum
    }
}

/// Writes `softmax(z/T)` of one row into `out` as `exp(z_k/T − m) / Σ_j exp(z_j/T − m)`, with
/// `m = max_j z_j/T`, and returns the row's [`Normaliser`], from which the log-probabilities
/// follow without another `exp`: one `exp` per class and one `log` per row, where
/// exponentiating the log-softmax took two `exp` per class.
///
/// The row must be non-empty and the temperature positive and finite; `out` must be as long
/// as the row.
///
/// # Panics
/// If `out` is not as long as `row`.
pub fn softmax_row(row: &[f32], temperature: f64, out: &mut [f64]) -> Normaliser {
    assert_eq!(
        row.len(),
        out.len(),
        "softmax_row needs an output buffer as long as the row"
    );
    let max = scaled_max(row, temperature);
    for (probability, &z) in out.iter_mut().zip(row) {
        *probability = (f64::from(z) / temperature - max).exp();
    }
    let sum: f64 = out.iter().sum();
    for probability in out.iter_mut() {
        *probability /= sum;
    }
    Normaliser {
        temperature,
        max,
        log_sum: sum.ln(),
    }
}

/// Row-major probabilities `softmax(z/T)` in `f64`, each row by [`softmax_row`].
///
/// They are not rounded to `f32`: a top probability of `1 − 10⁻¹⁰` stays below 1 (in `f32` it
/// would be exactly 1), so conformal scores near a threshold keep their order.
///
/// # Errors
/// [`CalibrationError::InvalidTemperature`] if `temperature` is not positive and finite.
pub fn softmax(logits: &Logits, temperature: f64) -> Result<Vec<f64>, CalibrationError> {
    check_temperature(temperature)?;
    // Each row through a small buffer: zeroing the whole array first would write it twice,
    // which at 200,000 × 100 costs as much as the exponentials in WebAssembly.
    let mut probabilities = Vec::with_capacity(logits.values().len());
    let mut row_probabilities = vec![0.0; logits.num_classes()];
    for row in logits.rows() {
        softmax_row(row, temperature, &mut row_probabilities);
        probabilities.extend_from_slice(&row_probabilities);
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TemperatureBound {
    /// The NLL still decreased at [`MIN_TEMPERATURE`]: the optimum lies below it.
    Lower,
    /// The NLL still decreased at [`MAX_TEMPERATURE`]: the optimum lies above it.
    Upper,
}

/// Result of [`fit_temperature`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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

/// `min(floor(c·B), B − 1)` for a confidence `c ∈ [0, 1]`. The cast truncates toward zero and
/// saturates at 0, which gives the floor's bin for every input (a negative `c` lands in bin 0
/// either way) without `floor`, a library call on x86-64's baseline (docs/benchmarks.md).
fn equal_width_index(confidence: f64, num_bins: usize) -> usize {
    ((confidence * num_bins as f64) as usize).min(num_bins - 1)
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
                let boundary = |b: usize| equal_mass_boundary(b, examples.len(), num_bins);
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

/// Checks per-example confidences and correctness flags: at least one example, as many flags
/// as confidences, every confidence a number in `[0, 1]`.
///
/// # Errors
/// [`CalibrationError::EmptyInput`], [`CalibrationError::ConfidenceCountMismatch`] and
/// [`CalibrationError::InvalidConfidence`] for the first confidence that is NaN or outside
/// `[0, 1]`.
pub(crate) fn check_confidences(
    confidence: &[f64],
    correct: &[bool],
) -> Result<(), CalibrationError> {
    if confidence.is_empty() {
        return Err(CalibrationError::EmptyInput);
    }
    if confidence.len() != correct.len() {
        return Err(CalibrationError::ConfidenceCountMismatch {
            confidences: confidence.len(),
            outcomes: correct.len(),
        });
    }
    match confidence
        .iter()
        .enumerate()
        .find(|(_, c)| !(0.0..=1.0).contains(*c))
    {
        Some((index, &value)) => Err(CalibrationError::InvalidConfidence { index, value }),
        None => Ok(()),
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
    check_confidences(confidence, correct)?;
    let mut collector = BinCollector::new(binning, num_bins, confidence.len());
    for (&c, &is_correct) in confidence.iter().zip(correct) {
        collector.add(c, f64::from(is_correct));
    }
    Ok(collector.into_bins())
}

/// The bin each row falls in, as [`BinCollector`] cuts them: equal-width by the confidence,
/// equal-mass by the rank in the same sort (the same comparisons, so the same order of ties).
pub(crate) fn bin_of_each_row(confidence: &[f64], num_bins: usize, binning: Binning) -> Vec<usize> {
    match binning {
        Binning::Width => confidence
            .iter()
            .map(|&c| equal_width_index(c, num_bins))
            .collect(),
        Binning::Mass => {
            let mut ranked: Vec<(f64, usize)> = confidence.iter().copied().zip(0..).collect();
            ranked.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
            let mut bin_of_row = vec![0; confidence.len()];
            for bin in 0..num_bins {
                let members = equal_mass_boundary(bin, ranked.len(), num_bins)
                    ..equal_mass_boundary(bin + 1, ranked.len(), num_bins);
                for &(_, row) in &ranked[members] {
                    bin_of_row[row] = bin;
                }
            }
            bin_of_row
        }
    }
}

/// The first sorted position of equal-mass bin `bin` of `num_bins` over `examples` examples.
fn equal_mass_boundary(bin: usize, examples: usize, num_bins: usize) -> usize {
    // u64 so that bin·n cannot overflow a 32-bit usize (wasm32).
    (bin as u64 * examples as u64 / num_bins as u64) as usize
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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

/// The predicted class of a row of logits or probabilities: the index of its largest value,
/// the lowest index on ties. A NaN is never the largest (it compares false either way, so it
/// must not block the values after it); a row with no number at all gives class 0.
/// Independent of the temperature, so the same for logits and for their softmax. The one
/// arg-max of the crate: every view that names a prediction agrees with every metric.
pub fn predicted_class<T: PartialOrd + Copy>(row: &[T]) -> usize {
    let mut best: Option<(usize, T)> = None;
    for (class, &value) in row.iter().enumerate() {
        let is_nan = value.partial_cmp(&value).is_none();
        match best {
            _ if is_nan => {}
            Some((_, top)) if value <= top => {}
            _ => best = Some((class, value)),
        }
    }
    best.map_or(0, |(class, _)| class)
}

/// All metrics at temperature `temperature`, in one pass over the logits (softmax per row in
/// `f64` into a reused buffer): [`evaluate_in_full`]'s report alone.
///
/// # Errors
/// As [`evaluate_in_full`].
pub fn evaluate(
    logits: &Logits,
    labels: &[u32],
    temperature: f64,
    num_bins: usize,
    binning: Binning,
) -> Result<CalibrationReport, CalibrationError> {
    Ok(evaluate_in_full(logits, labels, temperature, num_bins, binning)?.report)
}

/// What one softmax of every row gives at one temperature: the report, each row's top-label
/// confidence and correctness, and the per-class reliability bins, so that a frame that shows
/// all of them takes the softmax once.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// Every calibration metric.
    pub report: CalibrationReport,
    /// Per-row top-label confidence `max_k p_k` (bit-identical to [`confidences`]).
    pub confidence: Vec<f64>,
    /// Per-row correctness of the top label (ties: lowest index).
    pub correct: Vec<bool>,
    /// Per-class reliability bins, as classwise ECE uses them: class `k` is binned on its own
    /// probability `p_k`; a bin's `confidence` is the mean `p_k` of its members and its
    /// `accuracy` the fraction of them whose label is `k`. Entry `k` holds class `k`'s
    /// `num_bins` bins; the mean over classes of their [`expected_calibration_error`] is the
    /// report's classwise ECE.
    pub classwise_bins: Vec<Vec<Bin>>,
    /// How the bins were cut.
    pub binning: Binning,
}

/// The [`Evaluation`] at temperature `temperature`, in one pass over the logits (softmax per row
/// in `f64` into a reused buffer, one `exp` per class). Equal-width binning is linear in `n`; equal-mass binning
/// sorts, `O(n·K·log n)`.
///
/// # Errors
/// [`CalibrationError::InvalidTemperature`], [`CalibrationError::InvalidBinCount`], and the
/// label errors of [`check_labels`].
pub fn evaluate_in_full(
    logits: &Logits,
    labels: &[u32],
    temperature: f64,
    num_bins: usize,
    binning: Binning,
) -> Result<Evaluation, CalibrationError> {
    let softmax = |_: usize, row: &[f32], out: &mut [f64]| softmax_row(row, temperature, out);
    evaluate_rows(logits, labels, temperature, num_bins, binning, softmax)
}

/// Each row's softmax at one temperature, as [`softmax_row`] gives it, kept from an evaluation
/// ([`evaluate_in_full_keeping`]) so that another set of logits that shares most of its rows
/// with this one (an edge case built from it) is evaluated without exponentiating those rows
/// again ([`evaluate_in_full_beside`]).
#[derive(Clone, Debug)]
pub struct RowSoftmaxes<'a> {
    logits: Logits<'a>,
    temperature: f64,
    /// Row-major `[n, K]`.
    probabilities: Vec<f64>,
    normalisers: Vec<Normaliser>,
}

impl RowSoftmaxes<'_> {
    /// The temperature they were taken at.
    pub fn temperature(&self) -> f64 {
        self.temperature
    }
}

/// [`evaluate_in_full`], and every row's softmax kept for [`evaluate_in_full_beside`].
///
/// # Errors
/// As [`evaluate_in_full`].
pub fn evaluate_in_full_keeping<'a>(
    logits: &Logits<'a>,
    labels: &[u32],
    temperature: f64,
    num_bins: usize,
    binning: Binning,
) -> Result<(Evaluation, RowSoftmaxes<'a>), CalibrationError> {
    let mut probabilities = Vec::with_capacity(logits.values().len());
    let mut normalisers = Vec::with_capacity(logits.len());
    let keep = |_: usize, row: &[f32], out: &mut [f64]| {
        let normaliser = softmax_row(row, temperature, out);
        probabilities.extend_from_slice(out);
        normalisers.push(normaliser);
        normaliser
    };
    let evaluation = evaluate_rows(logits, labels, temperature, num_bins, binning, keep)?;
    let kept = RowSoftmaxes {
        logits: *logits,
        temperature,
        probabilities,
        normalisers,
    };
    Ok((evaluation, kept))
}

/// [`evaluate_in_full`] of `logits` at `known`'s temperature, bit for bit: a row equal bit for
/// bit to `known`'s row at the same index takes that row's kept softmax (the same numbers
/// [`softmax_row`] would give it), every other row is exponentiated.
///
/// # Errors
/// As [`evaluate_in_full`].
pub fn evaluate_in_full_beside(
    logits: &Logits,
    labels: &[u32],
    num_bins: usize,
    binning: Binning,
    known: &RowSoftmaxes,
) -> Result<Evaluation, CalibrationError> {
    let classes = logits.num_classes();
    let shared = if known.logits.num_classes() == classes {
        known.logits.len()
    } else {
        0
    };
    let temperature = known.temperature;
    let reuse = |index: usize, row: &[f32], out: &mut [f64]| {
        if index < shared {
            let range = index * classes..(index + 1) * classes;
            let same = row
                .iter()
                .zip(&known.logits.values()[range.clone()])
                .all(|(a, b)| a.to_bits() == b.to_bits());
            if same {
                out.copy_from_slice(&known.probabilities[range]);
                return known.normalisers[index];
            }
        }
        softmax_row(row, temperature, out)
    };
    evaluate_rows(logits, labels, temperature, num_bins, binning, reuse)
}

/// The pass behind [`evaluate_in_full`], with each row's softmax written into its buffer by
/// `softmax(index, row, out)`.
fn evaluate_rows(
    logits: &Logits,
    labels: &[u32],
    temperature: f64,
    num_bins: usize,
    binning: Binning,
    mut softmax: impl FnMut(usize, &[f32], &mut [f64]) -> Normaliser,
) -> Result<Evaluation, CalibrationError> {
    check_temperature(temperature)?;
    check_bin_count(num_bins)?;
    check_labels(logits, labels)?;
    let rows = logits.len();
    let mut probabilities = vec![0.0; logits.num_classes()];
    let mut top_label = BinCollector::new(binning, num_bins, rows);
    let mut per_class = class_collectors(logits.num_classes(), binning, num_bins, rows);
    let mut confidence = Vec::with_capacity(rows);
    let mut correct = Vec::with_capacity(rows);
    let (mut correct_count, mut nll_sum, mut brier_sum) = (0_usize, 0.0, 0.0);
    for (index, (row, &label)) in logits.rows().zip(labels).enumerate() {
        let label = label as usize;
        let normaliser = softmax(index, row, &mut probabilities);
        nll_sum -= normaliser.log_probability(row[label]);
        let predicted = predicted_class(row);
        let is_correct = predicted == label;
        correct_count += usize::from(is_correct);
        let top = probabilities[predicted];
        top_label.add(top, f64::from(is_correct));
        confidence.push(top);
        correct.push(is_correct);
        for (class, (&probability, collector)) in
            probabilities.iter().zip(&mut per_class).enumerate()
        {
            let target = f64::from(class == label);
            brier_sum += (probability - target).powi(2);
            collector.add(probability, target);
        }
    }
    let n = rows as f64;
    let bins = top_label.into_bins();
    let classwise_bins: Vec<Vec<Bin>> =
        per_class.into_iter().map(BinCollector::into_bins).collect();
    let classwise_ece = classwise_bins
        .iter()
        .map(|bins| expected_calibration_error(bins))
        .sum::<f64>()
        / classwise_bins.len() as f64;
    Ok(Evaluation {
        report: CalibrationReport {
            accuracy: correct_count as f64 / n,
            nll: nll_sum / n,
            brier: brier_sum / n,
            ece: expected_calibration_error(&bins),
            rmsce: root_mean_square_calibration_error(&bins),
            mce: maximum_calibration_error(&bins),
            classwise_ece,
            bins,
        },
        confidence,
        correct,
        classwise_bins,
        binning,
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
            (
                top_probability(row, temperature),
                predicted_class(row) == label as usize,
            )
        })
        .unzip())
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
#[path = "calibration_tests.rs"]
mod tests;
