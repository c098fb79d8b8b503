//! The anatomy of the temperature fit as the temperature lab shows it: NLL, ECE, smECE and
//! Brier over the slider's range on both halves (`temperature_anatomy`), the three mistaken
//! fits, and the sentences on what each mistake does to the numbers.
//!
//! The curves cost 242 evaluations of a half and as many smooth-ECE searches, and the
//! least-ECE fit 121 more: hundreds of milliseconds, far more than a frame. The page asks the
//! bootstrap worker for them with an [`AnatomyRequest`] once every row has arrived
//! ([`Halves::anatomy`] answers it), once per network, split and bins, and keeps them; a
//! slider move only moves the chart's line.

use serde::{Deserialize, Serialize};

use super::answers::WorkerRequest;
use super::{Halves, Lab, LabError};
use crate::calibration::{self, Binning, CalibrationReport};
use crate::sentences;
use crate::temperature_anatomy::{
    self, curve_minimum, CurveMinimum, FitMistake, MistakenFit, TemperatureAnatomy, ANATOMY_POINTS,
};

/// The three mistakes, in the order the page lists their switches.
pub const MISTAKES: [FitMistake; 3] = [
    FitMistake::EvaluationHalf,
    FitMistake::Probabilities,
    FitMistake::MinimiseEce,
];

/// Which curves: the network and split whose halves they are computed on, and the bins of
/// their ECE.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnatomyRequest {
    pub model: usize,
    pub split: u64,
    pub bins: usize,
    pub binning: Binning,
}

/// The curves and fits of one network, split and choice of bins, as the worker computes them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnatomyCurves {
    pub anatomy: TemperatureAnatomy,
    /// The evaluation half's metrics at the honest fit.
    pub honest: CalibrationReport,
    /// Every mistake of [`MISTAKES`], in order.
    pub mistakes: Vec<MistakenFit>,
}

/// What the anatomy chart and its sentences show, at one slider temperature.
#[derive(Debug, Clone, PartialEq)]
pub struct AnatomyView {
    /// The slider's T: the chart's moving line.
    pub temperature: f64,
    /// Every curve of both halves, and the honest fit.
    pub anatomy: TemperatureAnatomy,
    /// Each curve's least point, `[calibration, evaluation]` per metric in the order of
    /// [`temperature_anatomy::MetricCurves::in_order`].
    pub minima: [[CurveMinimum; 2]; 4],
    /// The mistakes the reader switched on, in [`MISTAKES`]' order, each with its sentence.
    pub mistakes: Vec<(MistakenFit, String)>,
}

impl Halves {
    /// The curves and mistaken fits `request` asks for, on these halves.
    ///
    /// # Errors
    /// The calibration module's errors (a bin count out of range).
    pub fn anatomy(&self, request: &AnatomyRequest) -> Result<AnatomyCurves, LabError> {
        let (calibration, evaluation) = self.labelled()?;
        let (bins, binning) = (request.bins, request.binning);
        let grid = temperature_anatomy::temperature_grid(ANATOMY_POINTS)?;
        let anatomy =
            temperature_anatomy::anatomy(&calibration, &evaluation, &grid, bins, binning)?;
        let honest = calibration::evaluate_in_full(
            evaluation.logits(),
            evaluation.labels(),
            anatomy.fitted.temperature,
            bins,
            binning,
        )?
        .report;
        let mistakes = MISTAKES
            .into_iter()
            .map(|mistake| {
                temperature_anatomy::mistaken_fit(
                    mistake,
                    &calibration,
                    &evaluation,
                    &grid,
                    bins,
                    binning,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AnatomyCurves {
            anatomy,
            honest,
            mistakes,
        })
    }
}

impl WorkerRequest for AnatomyRequest {
    fn network_and_split(&self) -> (usize, u64) {
        (self.model, self.split)
    }
}

impl Lab {
    /// Keeps curves a worker computed, if they are for the network and split shown now (an
    /// answer that arrives after a switch is dropped).
    pub fn add_anatomy(&mut self, request: AnatomyRequest, curves: AnatomyCurves) {
        self.keep_answer(|cache| &mut cache.anatomy, request, curves);
    }

    /// The anatomy at the slider's `temperature` with `bins` bins of kind `binning`, with the
    /// mistakes in `shown` and their sentences; or, while no worker has computed its curves,
    /// the request for them (`None` before every row of the shown network has arrived).
    ///
    /// # Errors
    /// [`LabError::TemperatureOutOfRange`], and [`LabError::UnknownModel`].
    pub fn anatomy_view(
        &mut self,
        temperature: f64,
        bins: usize,
        binning: Binning,
        shown: &[FitMistake],
    ) -> Result<Result<AnatomyView, Option<AnatomyRequest>>, LabError> {
        if !(calibration::MIN_TEMPERATURE..=calibration::MAX_TEMPERATURE).contains(&temperature) {
            return Err(LabError::TemperatureOutOfRange(temperature));
        }
        let request = AnatomyRequest {
            model: self.active,
            split: self.split_seed,
            bins,
            binning,
        };
        let AnatomyCurves {
            anatomy,
            honest,
            mistakes,
        } = match self.kept_answer(|cache| &mut cache.anatomy, request)? {
            Ok(curves) => curves,
            Err(request) => return Ok(Err(request)),
        };
        let [calibration, evaluation] =
            [&anatomy.calibration, &anatomy.evaluation].map(|half| half.in_order());
        let minima = std::array::from_fn(|metric| {
            [calibration[metric], evaluation[metric]]
                .map(|curve| curve_minimum(&anatomy.grid, curve))
        });
        let mistakes = mistakes
            .into_iter()
            .filter(|fit| shown.contains(&fit.mistake))
            .map(|fit| {
                let sentence = sentences::fit_mistake_sentence(
                    &fit,
                    anatomy.fitted.temperature,
                    &honest,
                    bins,
                );
                (fit, sentence)
            })
            .collect();
        Ok(Ok(AnatomyView {
            temperature,
            anatomy,
            minima,
            mistakes,
        }))
    }
}
