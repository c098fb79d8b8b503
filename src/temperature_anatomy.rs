//! The anatomy of the temperature fit: every metric over the slider's range of temperatures on
//! both halves, three mistaken ways to fit `T`, and Murphy's decomposition of the Brier score.
//!
//! # What it computes
//! * **Curves.** On a grid of temperatures log-spaced over `[MIN_TEMPERATURE,
//!   MAX_TEMPERATURE]` (the slider's range), the NLL, ECE, smECE and Brier score of the
//!   calibration half and of the evaluation half ([`anatomy`]), each with its minimum on the
//!   grid. The calibration half's NLL is least at the fitted `T` (Guo et al., ICML 2017), up to
//!   the grid's step; the NLL and the Brier score are proper scores, so on the evaluation half
//!   they too are least near the `T` that calibrates the network; ECE's minimum moves with its
//!   bins and with the noise of the half.
//! * **Three mistakes** ([`mistaken_fit`]), each measured on the evaluation half:
//!   [`FitMistake::EvaluationHalf`] fits `T` on the half it then reports (its NLL there is at
//!   most the honest fit's, by construction: an optimistic number); [`FitMistake::Probabilities`]
//!   divides probabilities instead of logits, `softmax(p/T)` with `p = softmax(z)` (rounded to
//!   `f32`, as a file of probabilities holds them), a model that no `T` makes calibrated, so the
//!   fitted `T` means nothing; [`FitMistake::MinimiseEce`] takes the grid's `T` of least ECE on
//!   the calibration half instead of the least NLL: a noisy target that changes with the bins.
//! * **Brier decomposition** (Murphy, "A New Vector Partition of the Probability Score",
//!   Journal of Applied Meteorology, 1973), per class `k` on the classwise bins of
//!   `calibration::evaluate_in_full` (class `k` binned on its own `p_k`; `f_b` the mean `p_k`,
//!   `o_b` the share labelled `k`, `ō_k` the share of all rows labelled `k`):
//!   reliability `Σ_k Σ_b (n_b/n)(f_b − o_b)²`, resolution `Σ_k Σ_b (n_b/n)(o_b − ō_k)²`,
//!   uncertainty `Σ_k ō_k(1 − ō_k)`, and Brier `= reliability − resolution + uncertainty +
//!   within-bin`, where the within-bin term (Stephenson et al., Weather and Forecasting, 2008)
//!   is what binning different forecasts together adds; it is 0 when every bin holds one forecast.
//!
//! Definitions: docs/definitions.md.

use serde::{Deserialize, Serialize};

use crate::calibration::{
    evaluate_in_full, fit_temperature, softmax, Bin, Binning, CalibrationError, CalibrationReport,
    Evaluation, Logits, TemperatureFit, MAX_TEMPERATURE, MIN_TEMPERATURE,
};
use crate::recalibration::Labelled;
use crate::smooth_calibration::smooth_ece;

/// Temperatures of the anatomy chart's grid: 121 points, 50 a decade over the slider's range.
pub const ANATOMY_POINTS: usize = 121;

/// `points` temperatures log-spaced from [`MIN_TEMPERATURE`] to [`MAX_TEMPERATURE`], both ends
/// included exactly.
///
/// # Errors
/// [`CalibrationError::InvalidPointCount`] unless `2 <= points <= 10000`.
pub fn temperature_grid(points: usize) -> Result<Vec<f64>, CalibrationError> {
    if !(2..=crate::smooth_calibration::MAX_CURVE_POINTS).contains(&points) {
        return Err(CalibrationError::InvalidPointCount(points));
    }
    let (low, high) = (MIN_TEMPERATURE.ln(), MAX_TEMPERATURE.ln());
    let last = (points - 1) as f64;
    Ok((0..points)
        .map(|i| match i {
            0 => MIN_TEMPERATURE,
            i if i == points - 1 => MAX_TEMPERATURE,
            i => (low + (high - low) * i as f64 / last).exp(),
        })
        .collect())
}

/// One metric's least value on the grid and the temperature where it is (the lowest such
/// temperature on ties).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CurveMinimum {
    /// The grid's temperature.
    pub temperature: f64,
    /// The metric there.
    pub value: f64,
}

/// NLL, ECE, smECE and Brier score of one half at each temperature of the grid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricCurves {
    /// Mean negative log-likelihood.
    pub nll: Vec<f64>,
    /// Top-label ECE, on the given bins.
    pub ece: Vec<f64>,
    /// Smooth ECE (relplot's bandwidth search).
    pub smece: Vec<f64>,
    /// Brier score.
    pub brier: Vec<f64>,
}

impl MetricCurves {
    /// The four curves in the order NLL, ECE, smECE, Brier: the chart's panels, the view's
    /// minima and the CSV's columns all follow it.
    pub fn in_order(&self) -> [&[f64]; 4] {
        [&self.nll, &self.ece, &self.smece, &self.brier]
    }
}

/// The least value of `values` over `grid` (same length, not empty).
pub fn curve_minimum(grid: &[f64], values: &[f64]) -> CurveMinimum {
    let (index, &value) = values
        .iter()
        .enumerate()
        .fold((0, &values[0]), |best, current| {
            if current.1 < best.1 {
                current
            } else {
                best
            }
        });
    CurveMinimum {
        temperature: grid[index],
        value,
    }
}

/// The four curves of one half on `grid`.
fn metric_curves(
    half: &Labelled,
    grid: &[f64],
    num_bins: usize,
    binning: Binning,
) -> Result<MetricCurves, CalibrationError> {
    let mut curves = MetricCurves {
        nll: Vec::with_capacity(grid.len()),
        ece: Vec::with_capacity(grid.len()),
        smece: Vec::with_capacity(grid.len()),
        brier: Vec::with_capacity(grid.len()),
    };
    for &temperature in grid {
        let evaluation =
            evaluate_in_full(half.logits(), half.labels(), temperature, num_bins, binning)?;
        curves.nll.push(evaluation.report.nll);
        curves.ece.push(evaluation.report.ece);
        curves.brier.push(evaluation.report.brier);
        curves
            .smece
            .push(smooth_ece(&evaluation.confidence, &evaluation.correct)?.smece);
    }
    Ok(curves)
}

/// The curves of both halves on one grid, and the honest fit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TemperatureAnatomy {
    /// The temperatures, ascending.
    pub grid: Vec<f64>,
    /// The calibration half's curves.
    pub calibration: MetricCurves,
    /// The evaluation half's curves.
    pub evaluation: MetricCurves,
    /// `T` fitted by NLL on the calibration half (exact, not on the grid).
    pub fitted: TemperatureFit,
}

/// Every curve of both halves on `grid`, binned with `num_bins` bins of kind `binning`; once
/// per network and split, not per frame.
///
/// # Errors
/// [`CalibrationError::InvalidTemperature`] for a grid point that is not positive and finite,
/// [`CalibrationError::InvalidBinCount`], and [`CalibrationError::EmptyInput`] for an empty
/// grid.
pub fn anatomy(
    calibration: &Labelled,
    evaluation: &Labelled,
    grid: &[f64],
    num_bins: usize,
    binning: Binning,
) -> Result<TemperatureAnatomy, CalibrationError> {
    if grid.is_empty() {
        return Err(CalibrationError::EmptyInput);
    }
    Ok(TemperatureAnatomy {
        grid: grid.to_vec(),
        calibration: metric_curves(calibration, grid, num_bins, binning)?,
        evaluation: metric_curves(evaluation, grid, num_bins, binning)?,
        fitted: fit_temperature(calibration.logits(), calibration.labels())?,
    })
}

/// A mistaken way to fit the temperature (the page's switches and `calibra report --mistake`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum FitMistake {
    /// Fit `T` by NLL on the evaluation half, the half whose metrics are then reported.
    EvaluationHalf,
    /// Fit `T` by NLL with the probabilities `softmax(z)` in place of the logits.
    Probabilities,
    /// Take the grid's `T` of least ECE on the calibration half.
    MinimiseEce,
}

/// What a mistaken fit gives.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MistakenFit {
    /// The mistake.
    pub mistake: FitMistake,
    /// The temperature it fitted.
    pub temperature: f64,
    /// Every metric of the evaluation half under that fit (for
    /// [`FitMistake::Probabilities`], of `softmax(p/T)`).
    pub evaluation: CalibrationReport,
}

/// `softmax(z)` of every row at `T = 1`, rounded to `f32`: the probabilities a file would hold,
/// to be read as if they were logits.
fn probabilities_as_logits(logits: &Logits) -> Result<Vec<f32>, CalibrationError> {
    Ok(softmax(logits, 1.0)?.iter().map(|&p| p as f32).collect())
}

/// The temperature that `mistake` fits (the grid of `grid` for [`FitMistake::MinimiseEce`],
/// the exact fit otherwise), and the evaluation half's metrics under it.
///
/// # Errors
/// The errors of [`fit_temperature`] and [`evaluate_in_full`]; [`CalibrationError::EmptyInput`]
/// for an empty grid.
pub fn mistaken_fit(
    mistake: FitMistake,
    calibration: &Labelled,
    evaluation: &Labelled,
    grid: &[f64],
    num_bins: usize,
    binning: Binning,
) -> Result<MistakenFit, CalibrationError> {
    let report = |logits: &Logits, temperature: f64| {
        evaluate_in_full(logits, evaluation.labels(), temperature, num_bins, binning)
            .map(|full| full.report)
    };
    let (temperature, evaluation_report) = match mistake {
        FitMistake::EvaluationHalf => {
            let t = fit_temperature(evaluation.logits(), evaluation.labels())?.temperature;
            (t, report(evaluation.logits(), t)?)
        }
        FitMistake::Probabilities => {
            let classes = calibration.logits().num_classes();
            let calibration_values = probabilities_as_logits(calibration.logits())?;
            let calibration_probabilities = Logits::new(&calibration_values, classes)?;
            let t = fit_temperature(&calibration_probabilities, calibration.labels())?.temperature;
            let evaluation_values = probabilities_as_logits(evaluation.logits())?;
            (t, report(&Logits::new(&evaluation_values, classes)?, t)?)
        }
        FitMistake::MinimiseEce => {
            if grid.is_empty() {
                return Err(CalibrationError::EmptyInput);
            }
            let ece = grid
                .iter()
                .map(|&t| {
                    evaluate_in_full(
                        calibration.logits(),
                        calibration.labels(),
                        t,
                        num_bins,
                        binning,
                    )
                    .map(|full| full.report.ece)
                })
                .collect::<Result<Vec<f64>, _>>()?;
            let t = curve_minimum(grid, &ece).temperature;
            (t, report(evaluation.logits(), t)?)
        }
    };
    Ok(MistakenFit {
        mistake,
        temperature,
        evaluation: evaluation_report,
    })
}

/// Murphy's three terms of the Brier score and the within-bin remainder.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BrierDecomposition {
    /// `Σ_k Σ_b (n_b/n)(f_b − o_b)²`: how far forecasts are from what happens after them.
    pub reliability: f64,
    /// `Σ_k Σ_b (n_b/n)(o_b − ō_k)²`: how far what happens after each forecast is from the base
    /// rate.
    pub resolution: f64,
    /// `Σ_k ō_k(1 − ō_k)`: the Brier score of always forecasting the base rates.
    pub uncertainty: f64,
    /// `brier − reliability + resolution − uncertainty`: 0 when every bin holds one forecast.
    pub within_bin: f64,
}

impl BrierDecomposition {
    /// The decomposition of one [`Evaluation`]'s Brier score on its classwise bins.
    pub fn of(evaluation: &Evaluation) -> Self {
        let (mut reliability, mut resolution, mut uncertainty) = (0.0, 0.0, 0.0);
        for bins in &evaluation.classwise_bins {
            let total: usize = bins.iter().map(|bin| bin.count).sum();
            let total = total as f64;
            let base_rate = bins
                .iter()
                .map(|bin: &Bin| bin.count as f64 * bin.accuracy)
                .sum::<f64>()
                / total;
            for bin in bins.iter().filter(|bin| bin.count > 0) {
                let weight = bin.count as f64 / total;
                reliability += weight * (bin.confidence - bin.accuracy).powi(2);
                resolution += weight * (bin.accuracy - base_rate).powi(2);
            }
            uncertainty += base_rate * (1.0 - base_rate);
        }
        Self {
            reliability,
            resolution,
            uncertainty,
            within_bin: evaluation.report.brier - reliability + resolution - uncertainty,
        }
    }
}

#[cfg(test)]
#[path = "temperature_anatomy_tests.rs"]
mod tests;
