//! Bootstrap intervals of the temperature lab's metrics, computed off the page's frame.
//!
//! `bootstrap::bootstrap_intervals` on the evaluation half takes about a second per
//! temperature (100 resamples, each choosing smECE's bandwidth again), far more than a slider
//! frame: the page asks a worker for them with an [`IntervalRequest`], and the lab shows each
//! interval once it is back, for the state it was computed for ([`Halves::intervals`] answers
//! it).

use serde::{Deserialize, Serialize};

use super::answers::WorkerRequest;
use super::{Halves, Lab, LabError};
use crate::bootstrap::{self, BootstrapSettings, MetricIntervals};
use crate::calibration::{Binning, Logits};
use crate::estimator_cases::{case_rows, EstimatorCase};

/// The resamples, level and seed of every bootstrap the page and `calibra report --bootstrap`
/// draw: the metric intervals and the band around the smooth reliability curve.
pub const BOOTSTRAP: BootstrapSettings = BootstrapSettings {
    resamples: bootstrap::DEFAULT_RESAMPLES,
    level: bootstrap::DEFAULT_LEVEL,
    seed: 0,
};

/// Which intervals: the network, split, temperature and bins they are computed for, and the
/// rows (the evaluation half, or an edge case of the estimators table built from it).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntervalRequest {
    pub model: usize,
    pub split: u64,
    pub temperature: f64,
    pub bins: usize,
    pub binning: Binning,
    #[serde(default)]
    pub case: EstimatorCase,
}

impl Halves {
    /// The bootstrap intervals of `request` on the evaluation half, or on the rows of its
    /// edge case.
    ///
    /// # Errors
    /// The errors of [`bootstrap::bootstrap_intervals`], as [`LabError::Bootstrap`].
    pub fn intervals(&self, request: &IntervalRequest) -> Result<MetricIntervals, LabError> {
        let rows = case_rows(
            request.case,
            self.classes,
            &self.calibration_labels,
            &self.evaluation_logits,
            &self.evaluation_labels,
        )?;
        let logits = Logits::new(&rows.logits, self.classes)?;
        Ok(bootstrap::bootstrap_intervals(
            &logits,
            &rows.labels,
            request.temperature,
            request.bins,
            request.binning,
            &BOOTSTRAP,
        )?)
    }
}

impl Lab {
    /// Keeps intervals a worker computed, if they are for the network and split shown now
    /// (an answer that arrives after a switch is dropped).
    pub fn add_intervals(&mut self, request: IntervalRequest, intervals: MetricIntervals) {
        self.keep_answer(|cache| &mut cache.intervals, request, intervals);
    }

    /// The intervals at `temperature` with these bins on the rows of `case`, or the request for
    /// them when all rows have arrived and none are kept (before that, the metrics themselves
    /// are provisional).
    pub(super) fn intervals_at(
        &mut self,
        temperature: f64,
        bins: usize,
        binning: Binning,
        case: EstimatorCase,
    ) -> Result<Result<MetricIntervals, Option<IntervalRequest>>, LabError> {
        let request = IntervalRequest {
            model: self.active,
            split: self.split_seed,
            temperature,
            bins,
            binning,
            case,
        };
        self.kept_answer(|cache| &mut cache.intervals, request)
    }
}

impl WorkerRequest for IntervalRequest {
    fn network_and_split(&self) -> (usize, u64) {
        (self.model, self.split)
    }
}
