//! The anatomy of the temperature fit as the temperature lab shows it: NLL, ECE, smECE and
//! Brier over the slider's range on both halves (`temperature_anatomy`), the three mistaken
//! fits, and the sentences on what each mistake does to the numbers.
//!
//! The curves cost 242 evaluations of a half and as many smooth-ECE searches: far more than a
//! frame. They are computed once per network, split and bins, and only once every row has
//! arrived (while the halves grow, every batch would start them again); a slider move only
//! moves the chart's line.

use super::{Lab, LabError};
use crate::calibration::{self, Binning, CalibrationReport, Logits};
use crate::recalibration::Labelled;
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

/// What the anatomy chart and its sentences show, at one slider temperature.
#[derive(Debug, Clone, PartialEq)]
pub struct AnatomyView {
    /// The slider's T: the chart's moving line.
    pub temperature: f64,
    /// Every curve of both halves, and the honest fit.
    pub anatomy: TemperatureAnatomy,
    /// Each curve's least point, `[calibration, evaluation]` per metric in the order NLL,
    /// ECE, smECE, Brier.
    pub minima: [[CurveMinimum; 2]; 4],
    /// The mistakes the reader switched on, in [`MISTAKES`]' order, each with its sentence.
    pub mistakes: Vec<(MistakenFit, String)>,
}

/// The curves and fits of one network, split and choice of bins.
#[derive(Debug, Clone)]
pub(super) struct AnatomyCache {
    binning: (usize, Binning),
    anatomy: TemperatureAnatomy,
    /// The evaluation half's metrics at the honest fit.
    honest: CalibrationReport,
    /// Every mistake of [`MISTAKES`], in order.
    mistakes: Vec<MistakenFit>,
}

impl Lab {
    /// The anatomy at the slider's `temperature` with `bins` bins of kind `binning`, with the
    /// mistakes in `shown` and their sentences; `None` until every row of the shown network
    /// has arrived.
    ///
    /// # Errors
    /// [`LabError::TemperatureOutOfRange`], and the calibration module's errors.
    pub fn anatomy_view(
        &mut self,
        temperature: f64,
        bins: usize,
        binning: Binning,
        shown: &[FitMistake],
    ) -> Result<Option<AnatomyView>, LabError> {
        if !(calibration::MIN_TEMPERATURE..=calibration::MAX_TEMPERATURE).contains(&temperature) {
            return Err(LabError::TemperatureOutOfRange(temperature));
        }
        if !self.model(self.active)?.is_complete() {
            return Ok(None);
        }
        let k = self.num_classes;
        let cache = self.prepared()?;
        if cache
            .anatomy
            .as_ref()
            .is_none_or(|kept| kept.binning != (bins, binning))
        {
            let calibration = Labelled::new(
                Logits::new(&cache.calibration.logits, k)?,
                &cache.calibration.labels,
            )?;
            let evaluation = Labelled::new(
                Logits::new(&cache.evaluation.logits, k)?,
                &cache.evaluation.labels,
            )?;
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
            cache.anatomy = Some(AnatomyCache {
                binning: (bins, binning),
                anatomy,
                honest,
                mistakes,
            });
        }
        let kept = cache.anatomy.as_ref().ok_or(LabError::NotReady)?;
        let anatomy = &kept.anatomy;
        let [calibration, evaluation] =
            [&anatomy.calibration, &anatomy.evaluation].map(|half| half.in_order());
        let minima = std::array::from_fn(|metric| {
            [calibration[metric], evaluation[metric]]
                .map(|curve| curve_minimum(&anatomy.grid, curve))
        });
        let mistakes = kept
            .mistakes
            .iter()
            .filter(|fit| shown.contains(&fit.mistake))
            .map(|fit| {
                let sentence = sentences::fit_mistake_sentence(
                    fit,
                    anatomy.fitted.temperature,
                    &kept.honest,
                    bins,
                );
                (fit.clone(), sentence)
            })
            .collect();
        Ok(Some(AnatomyView {
            temperature,
            anatomy: anatomy.clone(),
            minima,
            mistakes,
        }))
    }
}
