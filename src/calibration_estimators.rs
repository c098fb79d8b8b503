//! The estimators of top-label calibration that the binned ECE is compared with: a debiased
//! binned L2 error, the top-label ECE conditioned on the predicted class, and the bin-free
//! cumulative differences with their three tests of calibration.
//!
//! # What it computes
//! With top-label confidences `c_i`, outcomes `y_i = [correct_i]` and predicted classes `ĉ_i`:
//!
//! * **Debiased L2 calibration error** (Kumar, Liang & Ma, "Verified Uncertainty
//!   Calibration", NeurIPS 2019; their library uncertainty-calibration):
//!   `Σ_b (n_b/n)·[(acc_b − conf_b)² − acc_b(1 − acc_b)/(n_b − 1)]` over the bins with
//!   `n_b ≥ 2` (a bin of one example adds 0): the plug-in `(acc_b − conf_b)²` is biased upward
//!   by the variance of `acc_b`, which the second term estimates without bias. The estimate of
//!   the squared error may be negative; the error is `sqrt(max(0, ·))`, comparable to RMSCE.
//! * **Top-label ECE** (Gupta & Ramdas, "Top-label calibration and multiclass-to-binary
//!   reductions", ICLR 2022): the ECE computed separately on the rows of each predicted class,
//!   weighted by the class's share of rows: `Σ_c (n_c/n)·ECE_c`. Confidence ECE pools every
//!   class's rows in one set of bins, so an overconfident class and an underconfident one at the
//!   same confidence cancel; here they do not. MAPIE's `top_label_ece` averages the `ECE_c`
//!   with equal weights instead; [`TopLabelEce::per_class`] gives both.
//! * **Cumulative differences** (Tygert; Arrieta-Ibarra, Gujral, Tannen, Tygert & Xu, "Metrics
//!   of calibration for probabilistic predictions", JMLR 2022): the rows sorted by confidence
//!   (ties keep their row order), `D_k = (1/n) Σ_{j ≤ k} (y_(j) − c_(j))` for `k = 1..n`. A
//!   calibrated network's curve is a random walk around 0; a slope is a miscalibration at those
//!   confidences. Its scale under calibration is `σ = sqrt(Σ_i c_i(1 − c_i))/n`.
//! * **KS calibration error** (Gupta, Rahimi, Ajanthan, Mensink, Sminchisescu & Hartley,
//!   "Calibration of Neural Networks using Splines", ICLR 2021): `max_k |D_k|`.
//! * **Kolmogorov–Smirnov** and **Kuiper** statistics (as MAPIE 1.6 computes them):
//!   `max_k |D_k| / σ` and `(max_k D_k − min_k D_k) / σ`, with p-values `1 − F(x)` where `F` is
//!   the law of the largest absolute value (Darling & Siegert, 1953), respectively of the range
//!   (Feller, 1951), of a standard Brownian motion on `[0, 1]`, each summed as a series truncated
//!   where MAPIE truncates it (Tygert, arXiv:2202.00100, with MAPIE's `ε = 10⁻⁸`).
//! * **Spiegelhalter's Z** (Spiegelhalter, Statistics in Medicine, 1986):
//!   `Z = Σ_i (y_i − c_i)(1 − 2c_i) / sqrt(Σ_i (1 − 2c_i)² c_i (1 − c_i))`, normal under
//!   calibration; MAPIE's p-value is one-sided, `1 − Φ(Z)`.
//!
//! A statistic whose scale is 0 (every confidence 0 or 1, or for Z every confidence in
//! `{0, ½, 1}`) is undefined: the functions return `None` for it rather than a division by 0.
//!
//! MAPIE jitters the confidences by a relative `10⁻⁸` (seeded normal noise) before sorting, to
//! break ties at random; calibra keeps tied rows in their order. Definitions and how each library
//! differs: docs/definitions.md.

use serde::Serialize;
use statrs::function::erf::erfc;

use crate::calibration::{
    check_confidences, confidences, expected_calibration_error, predicted_class, reliability_bins,
    Bin, Binning, CalibrationError, Logits,
};

/// MAPIE's machine precision, the truncation error its series for the Kolmogorov–Smirnov and
/// Kuiper laws aim at (`mapie._machine_precision.EPSILON`).
const SERIES_PRECISION: f64 = 1e-8;

/// The debiased estimate of the squared binned L2 calibration error,
/// `Σ_b (n_b/n)·[(acc_b − conf_b)² − acc_b(1 − acc_b)/(n_b − 1)]` over bins with `n_b ≥ 2`;
/// may be negative, and is 0 when the bins hold no examples.
pub fn debiased_squared_calibration_error(bins: &[Bin]) -> f64 {
    let total: usize = bins.iter().map(|bin| bin.count).sum();
    if total == 0 {
        return 0.0;
    }
    bins.iter()
        .filter(|bin| bin.count >= 2)
        .map(|bin| {
            let count = bin.count as f64;
            let variance = bin.accuracy * (1.0 - bin.accuracy) / (count - 1.0);
            count / total as f64 * ((bin.accuracy - bin.confidence).powi(2) - variance)
        })
        .sum()
}

/// The debiased L2 calibration error `sqrt(max(0, `[`debiased_squared_calibration_error`]`))`
/// (Kumar et al.'s `unbiased_l2_ce`).
pub fn debiased_l2_calibration_error(bins: &[Bin]) -> f64 {
    debiased_squared_calibration_error(bins).max(0.0).sqrt()
}

/// One predicted class's part of the top-label ECE.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClassEce {
    /// Rows whose predicted class is this one.
    pub count: usize,
    /// The ECE of those rows' confidences and correctness, in their own bins; 0 when `count`
    /// is 0.
    pub ece: f64,
}

/// The top-label ECE and its parts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TopLabelEce {
    /// `Σ_c (n_c/n)·ECE_c` (Gupta & Ramdas).
    pub value: f64,
    /// One entry per class, predicted or not.
    pub per_class: Vec<ClassEce>,
}

impl TopLabelEce {
    /// The plain mean of `ECE_c` over the classes predicted at least once: MAPIE's
    /// `top_label_ece`.
    pub fn unweighted(&self) -> f64 {
        let predicted: Vec<f64> = self
            .per_class
            .iter()
            .filter(|class| class.count > 0)
            .map(|class| class.ece)
            .collect();
        predicted.iter().sum::<f64>() / predicted.len() as f64
    }
}

/// The top-label ECE of rows with confidence `confidence[i]`, correctness `correct[i]` and
/// predicted class `predicted[i] < num_classes`, each class's rows binned on their own with
/// `num_bins` bins of kind `binning`.
///
/// # Errors
/// The errors of [`reliability_bins`] (bin count, empty or mismatched input, a confidence
/// outside `[0, 1]`), [`CalibrationError::LabelCountMismatch`] if `predicted` is not as long as
/// `confidence`, and [`CalibrationError::LabelOutOfRange`] for a predicted class
/// `>= num_classes`.
pub fn top_label_ece(
    confidence: &[f64],
    correct: &[bool],
    predicted: &[u32],
    num_classes: usize,
    num_bins: usize,
    binning: Binning,
) -> Result<TopLabelEce, CalibrationError> {
    check_confidences(confidence, correct)?;
    if predicted.len() != confidence.len() {
        return Err(CalibrationError::LabelCountMismatch {
            labels: predicted.len(),
            rows: confidence.len(),
        });
    }
    if let Some((row, &label)) = predicted
        .iter()
        .enumerate()
        .find(|(_, &class)| class as usize >= num_classes)
    {
        return Err(CalibrationError::LabelOutOfRange {
            row,
            label,
            num_classes,
        });
    }
    // One pass sorts the rows into their predicted classes.
    let mut members: Vec<(Vec<f64>, Vec<bool>)> = vec![(Vec::new(), Vec::new()); num_classes];
    for ((&class, &c), &y) in predicted.iter().zip(confidence).zip(correct) {
        let (class_confidence, class_correct) = &mut members[class as usize];
        class_confidence.push(c);
        class_correct.push(y);
    }
    let mut per_class = Vec::with_capacity(num_classes);
    let mut value = 0.0;
    for (class_confidence, class_correct) in &members {
        let count = class_confidence.len();
        let ece = if count == 0 {
            0.0
        } else {
            let bins = reliability_bins(class_confidence, class_correct, num_bins, binning)?;
            expected_calibration_error(&bins)
        };
        value += count as f64 / confidence.len() as f64 * ece;
        per_class.push(ClassEce { count, ece });
    }
    Ok(TopLabelEce { value, per_class })
}

/// The cumulative differences of [`CumulativeDifferences::new`]: the curve, its scale and
/// where it reaches its statistics.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CumulativeDifferences {
    /// The confidences in ascending order (ties in row order).
    pub sorted_confidence: Vec<f64>,
    /// `D_k = (1/n) Σ_{j ≤ k} (y_(j) − c_(j))`, `k = 1..n`, in the same order.
    pub curve: Vec<f64>,
    /// `σ = sqrt(Σ_i c_i(1 − c_i))/n`, the curve's scale under calibration.
    pub scale: f64,
    /// Found once with the curve: the KS error, Kuiper's range, their tests, the chart and its
    /// sentence all read them on a slider's every frame.
    #[serde(skip)]
    landmarks: Landmarks,
}

/// Where the cumulative differences reach their statistics, each the first `k` that does
/// (indices into [`CumulativeDifferences::curve`]): the chart marks them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Landmarks {
    /// The largest `|D_k|`: the KS error.
    pub largest_gap: usize,
    /// The highest and the lowest `D_k`: Kuiper's range between them.
    pub highest: usize,
    pub lowest: usize,
}

impl Landmarks {
    /// The landmarks of `curve` in one pass, each the first `k` that reaches its extreme (0 for
    /// an empty curve).
    fn of(curve: &[f64]) -> Self {
        let mut landmarks = Self {
            largest_gap: 0,
            highest: 0,
            lowest: 0,
        };
        for (k, &d) in curve.iter().enumerate().skip(1) {
            if d.abs() > curve[landmarks.largest_gap].abs() {
                landmarks.largest_gap = k;
            }
            if d > curve[landmarks.highest] {
                landmarks.highest = k;
            }
            if d < curve[landmarks.lowest] {
                landmarks.lowest = k;
            }
        }
        landmarks
    }
}

/// A statistic of a test of calibration and its p-value.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CalibrationTest {
    /// The statistic.
    pub statistic: f64,
    /// The probability of a statistic at least as large under calibration (MAPIE's law).
    pub p_value: f64,
}

impl CumulativeDifferences {
    /// Sorts the rows by confidence (a stable sort: ties keep their row order) and sums the
    /// differences between outcome and confidence.
    ///
    /// # Errors
    /// [`CalibrationError::EmptyInput`], [`CalibrationError::ConfidenceCountMismatch`] and
    /// [`CalibrationError::InvalidConfidence`] from checking the confidences.
    pub fn new(confidence: &[f64], correct: &[bool]) -> Result<Self, CalibrationError> {
        check_confidences(confidence, correct)?;
        let n = confidence.len() as f64;
        let mut rows: Vec<(f64, bool)> = confidence
            .iter()
            .copied()
            .zip(correct.iter().copied())
            .collect();
        rows.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut sum = 0.0;
        let curve: Vec<f64> = rows
            .iter()
            .map(|&(c, y)| {
                sum += f64::from(y) - c;
                sum / n
            })
            .collect();
        let spread: f64 = confidence.iter().map(|&c| c * (1.0 - c)).sum();
        Ok(Self {
            sorted_confidence: rows.iter().map(|&(c, _)| c).collect(),
            landmarks: Landmarks::of(&curve),
            curve,
            scale: spread.sqrt() / n,
        })
    }

    /// Where the curve reaches its statistics: the first `k` of the largest `|D_k|` and of the
    /// highest and the lowest `D_k` (indices into [`CumulativeDifferences::curve`]).
    pub fn landmarks(&self) -> Landmarks {
        self.landmarks
    }

    /// Gupta et al.'s KS calibration error `max_k |D_k|`.
    pub fn ks_error(&self) -> f64 {
        self.curve[self.landmarks().largest_gap].abs()
    }

    /// `(max_k D_k − min_k D_k)`, the curve's range: Kuiper's statistic times `σ`.
    pub fn range(&self) -> f64 {
        let landmarks = self.landmarks();
        self.curve[landmarks.highest] - self.curve[landmarks.lowest]
    }

    /// The Kolmogorov–Smirnov test `max_k |D_k| / σ`; `None` when `σ = 0`.
    pub fn kolmogorov_smirnov(&self) -> Option<CalibrationTest> {
        (self.scale > 0.0).then(|| {
            let statistic = self.ks_error() / self.scale;
            CalibrationTest {
                statistic,
                p_value: 1.0 - kolmogorov_smirnov_cdf(statistic),
            }
        })
    }

    /// Kuiper's test `(max_k D_k − min_k D_k) / σ`; `None` when `σ = 0`.
    pub fn kuiper(&self) -> Option<CalibrationTest> {
        (self.scale > 0.0).then(|| {
            let statistic = self.range() / self.scale;
            CalibrationTest {
                statistic,
                p_value: 1.0 - kuiper_cdf(statistic),
            }
        })
    }
}

/// `P(max_{t ≤ 1} |B(t)| ≤ x)` for a standard Brownian motion `B` (Darling & Siegert):
/// `(2/π) Σ_{k ≥ 0} (−1)^k / (k + ½) · exp(−(k + ½)² π² / (2x²))`, truncated after
/// `⌈½ + x·√2/π·sqrt(ln(4/(π ε)))⌉` terms as MAPIE truncates it; 0 for `x ≤ 0`.
pub fn kolmogorov_smirnov_cdf(x: f64) -> f64 {
    use std::f64::consts::{PI, SQRT_2};
    if x <= 0.0 {
        return 0.0;
    }
    let terms = (0.5 + x * SQRT_2 / PI * (4.0 / (PI * SERIES_PRECISION)).ln().sqrt()).ceil();
    let sum: f64 = (0..terms as usize)
        .map(|k| {
            let half = k as f64 + 0.5;
            let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
            sign / half * (-(half * half) * PI * PI / (2.0 * x * x)).exp()
        })
        .sum();
    sum * 2.0 / PI
}

/// `P(max_{t ≤ 1} B(t) − min_{t ≤ 1} B(t) ≤ x)` for a standard Brownian motion (Feller):
/// `Σ_{k ≥ 0} (8/x² + 2/((k + ½)² π²)) · exp(−2 (k + ½)² π² / x²)`, truncated after
/// `⌈½ + x/(π√2)·sqrt(ln(4/(√(2π) ε)·(1/x + x/π²)))⌉` terms as MAPIE truncates it; 0 for
/// `x ≤ 0`.
pub fn kuiper_cdf(x: f64) -> f64 {
    use std::f64::consts::{PI, SQRT_2};
    if x <= 0.0 {
        return 0.0;
    }
    let log_bound = (4.0 / ((2.0 * PI).sqrt() * SERIES_PRECISION) * (1.0 / x + x / (PI * PI))).ln();
    let terms = (0.5 + x / (PI * SQRT_2) * log_bound.sqrt()).ceil();
    (0..terms as usize)
        .map(|k| {
            let half = k as f64 + 0.5;
            (8.0 / (x * x) + 2.0 / (half * half * PI * PI))
                * (-2.0 * half * half * PI * PI / (x * x)).exp()
        })
        .sum()
}

/// Spiegelhalter's `Z = Σ (y − c)(1 − 2c) / sqrt(Σ (1 − 2c)² c (1 − c))` and its one-sided
/// p-value `1 − Φ(Z) = erfc(Z/√2)/2`; `None` when the denominator is 0.
///
/// # Errors
/// [`CalibrationError::EmptyInput`], [`CalibrationError::ConfidenceCountMismatch`] and
/// [`CalibrationError::InvalidConfidence`] from checking the confidences.
pub fn spiegelhalter(
    confidence: &[f64],
    correct: &[bool],
) -> Result<Option<CalibrationTest>, CalibrationError> {
    check_confidences(confidence, correct)?;
    let (mut numerator, mut variance) = (0.0, 0.0);
    for (&c, &y) in confidence.iter().zip(correct) {
        let lever = 1.0 - 2.0 * c;
        numerator += (f64::from(y) - c) * lever;
        variance += lever * lever * c * (1.0 - c);
    }
    Ok((variance > 0.0).then(|| {
        let statistic = numerator / variance.sqrt();
        CalibrationTest {
            statistic,
            p_value: 0.5 * erfc(statistic / std::f64::consts::SQRT_2),
        }
    }))
}

/// Every estimator of this module at one temperature, as `calibra report --json` writes them
/// in `before` and `after` (`null` for a test whose scale is 0).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Estimators {
    /// Kumar et al.'s debiased L2 calibration error, on the report's bins.
    pub ece_debiased: f64,
    /// Gupta & Ramdas's top-label ECE, on the report's bins.
    pub top_label_ece: f64,
    /// Gupta et al.'s KS calibration error `max |D_k|`.
    pub ks_error: f64,
    /// Spiegelhalter's Z.
    pub spiegelhalter_z: Option<f64>,
    /// Its one-sided p-value `1 − Φ(Z)`.
    pub spiegelhalter_p: Option<f64>,
    /// Kuiper's statistic on the cumulative differences.
    pub kuiper: Option<f64>,
    /// Its p-value.
    pub kuiper_p: Option<f64>,
    /// The Kolmogorov–Smirnov statistic on the cumulative differences.
    pub ks_statistic: Option<f64>,
    /// Its p-value.
    pub ks_p: Option<f64>,
}

/// Every estimator of the top label of `logits` at `temperature`, binned as the ECE is.
///
/// # Errors
/// [`CalibrationError::InvalidTemperature`], [`CalibrationError::InvalidBinCount`] and the
/// label errors of [`crate::calibration::check_labels`].
pub fn estimators(
    logits: &Logits,
    labels: &[u32],
    temperature: f64,
    num_bins: usize,
    binning: Binning,
) -> Result<Estimators, CalibrationError> {
    let (confidence, correct) = confidences(logits, labels, temperature)?;
    estimators_of(
        &confidence,
        &correct,
        &predicted_classes(logits),
        logits.num_classes(),
        num_bins,
        binning,
        &CumulativeDifferences::new(&confidence, &correct)?,
    )
}

/// Each row's predicted class (the largest logit, the lowest index on ties), which no
/// temperature changes.
pub fn predicted_classes(logits: &Logits) -> Vec<u32> {
    logits
        .rows()
        .map(|row| predicted_class(row) as u32)
        .collect()
}

/// Every estimator of rows with top-label confidence `confidence[i]`, correctness `correct[i]`
/// and predicted class `predicted[i] < num_classes`, binned with `num_bins` bins of kind
/// `binning`, whose cumulative differences are `cumulative`: what a page that already has the
/// confidences at its temperature computes, and keeps the curve of for its chart.
///
/// # Errors
/// The errors of [`top_label_ece`].
pub fn estimators_of(
    confidence: &[f64],
    correct: &[bool],
    predicted: &[u32],
    num_classes: usize,
    num_bins: usize,
    binning: Binning,
    cumulative: &CumulativeDifferences,
) -> Result<Estimators, CalibrationError> {
    let top_label = top_label_ece(
        confidence,
        correct,
        predicted,
        num_classes,
        num_bins,
        binning,
    )?;
    let bins = reliability_bins(confidence, correct, num_bins, binning)?;
    let spiegelhalter = spiegelhalter(confidence, correct)?;
    let kuiper = cumulative.kuiper();
    let kolmogorov_smirnov = cumulative.kolmogorov_smirnov();
    Ok(Estimators {
        ece_debiased: debiased_l2_calibration_error(&bins),
        top_label_ece: top_label.value,
        ks_error: cumulative.ks_error(),
        spiegelhalter_z: spiegelhalter.map(|test| test.statistic),
        spiegelhalter_p: spiegelhalter.map(|test| test.p_value),
        kuiper: kuiper.map(|test| test.statistic),
        kuiper_p: kuiper.map(|test| test.p_value),
        ks_statistic: kolmogorov_smirnov.map(|test| test.statistic),
        ks_p: kolmogorov_smirnov.map(|test| test.p_value),
    })
}

#[cfg(test)]
#[path = "calibration_estimators_tests.rs"]
mod tests;
