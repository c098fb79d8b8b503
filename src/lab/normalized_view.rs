//! Normalised temperature scaling against one temperature, network by network: the LogitNorm
//! lab's table of whether `softmax(z/(T‖z‖))`, the form LogitNorm trains with, calibrates the
//! LogitNorm networks where one `T` does not (`crate::recalibration`).
//!
//! For one network and split, each calibrator is fitted by NLL on the calibration half
//! ([`calibration::fit_temperature`], [`recalibration::fit_normalized_temperature`]) and held
//! fixed; its ECE and NLL on the evaluation half get bootstrap percentile intervals over the
//! evaluation images ([`recalibration::bootstrap_ece_nll`], the first lab's [`BOOTSTRAP`]
//! settings), the numbers `calibra report --method temperature|normalized --bootstrap` prints.
//! Both calibrators' resamples draw the same rows. A few tens of milliseconds a network, more
//! than a frame for every network at once: the page asks the bootstrap worker for them with a
//! [`NormalizedRequest`] per network ([`Halves::temperature_comparison`] answers it) and keeps
//! the answers in the [`super::OodStore`].

use serde::{Deserialize, Serialize};

use super::answers::Answers;
use super::{Halves, LabError, BOOTSTRAP};
use crate::bootstrap::EceNllIntervals;
use crate::calibration::{self, Binning};
use crate::recalibration::{self, Recalibration};

/// Which comparison: the network and split it is fitted and measured on, and the bins of its
/// ECE.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NormalizedRequest {
    pub model: usize,
    pub split: u64,
    pub bins: usize,
    pub binning: Binning,
}

/// One network's two calibrators on the evaluation half.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TemperatureComparison {
    /// Temperature scaling's T, fitted on the calibration half.
    pub temperature: f64,
    /// Normalised temperature scaling's T: row `z` divided by `T·(‖z‖ + ε)`.
    pub normalized_temperature: f64,
    /// ECE and NLL after temperature scaling.
    pub plain: EceNllIntervals,
    /// ECE and NLL after normalised temperature scaling.
    pub normalized: EceNllIntervals,
}

/// The comparisons a worker computed, by request (each is a few numbers).
pub(super) type Comparisons = Answers<NormalizedRequest, TemperatureComparison>;

impl Halves {
    /// Both calibrators fitted on the calibration half and measured on the evaluation half,
    /// with intervals.
    ///
    /// # Errors
    /// The fitters' errors, and the bin-count error of the calibration module (as
    /// [`LabError::Bootstrap`]).
    pub fn temperature_comparison(
        &self,
        request: &NormalizedRequest,
    ) -> Result<TemperatureComparison, LabError> {
        let (calibration, evaluation) = self.labelled()?;
        let temperature =
            calibration::fit_temperature(calibration.logits(), calibration.labels())?.temperature;
        let normalized_temperature = recalibration::fit_normalized_temperature(&calibration)?;
        let measure = |fitted: Recalibration| {
            recalibration::bootstrap_ece_nll(
                &fitted,
                &evaluation,
                request.bins,
                request.binning,
                &BOOTSTRAP,
            )
        };
        Ok(TemperatureComparison {
            temperature,
            normalized_temperature,
            plain: measure(Recalibration::Temperature(temperature))?,
            normalized: measure(Recalibration::Normalized(normalized_temperature))?,
        })
    }
}

#[cfg(test)]
#[path = "normalized_view_tests.rs"]
mod tests;
