//! The conformal lab's selective classification block: the evaluation half's risk–coverage
//! curve and AURC, images ranked by their confidence at the slider's T; the conformal risk
//! control threshold at the risk level slider, fitted on the calibration half (as
//! `calibra report --selective RISK`); and the lesson, computed: at T = 1 and at the fitted T
//! the AURC (the ranking) barely moves while the threshold's value (its meaning as a
//! probability) does, answering nearly the same images.
//!
//! The methods and their sources are in `selective.rs` and docs/definitions.md ("Selective
//! classification").

use super::{Cache, Lab, LabError, Part};
use crate::calibration::{self, Logits};
use crate::conformal;
use crate::selective::{self, RiskCoveragePoint, SelectiveReport};
use crate::sentences::{self, RiskControlExperimentFigures, SelectiveFigures, SelectiveLesson};

/// The risk level slider's value until the reader moves it: at most 3% of the images answered
/// wrongly.
pub const DEFAULT_RISK_LEVEL: f64 = 0.03;

/// Each image's top-label confidence and whether its prediction is right, on one half.
type Confidences = (Vec<f64>, Vec<bool>);

/// Both halves' confidences at T = 1 and at the fitted T, and the evaluation half's AURC at
/// each: independent of the sliders, so computed once per network and split.
#[derive(Debug, Clone)]
pub(super) struct SelectiveFixed {
    /// `[calibration, evaluation]` at T = 1, then at the fitted T.
    at_one: [Confidences; 2],
    fitted: [Confidences; 2],
    aurc_at_one: f64,
    aurc_fitted: f64,
}

/// Both halves' confidences at one temperature, and the evaluation half's risk–coverage curve
/// and AURC there: what the selective block computes from T alone.
#[derive(Debug, Clone)]
pub(super) struct SelectiveAtTemperature {
    temperature: f64,
    halves: [Confidences; 2],
    curve: Vec<RiskCoveragePoint>,
    aurc: f64,
}

/// What the selective classification block shows.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectiveView {
    pub temperature: f64,
    pub risk_level: f64,
    /// The evaluation half's risk–coverage curve and AURC at `temperature`.
    pub curve: Vec<RiskCoveragePoint>,
    pub aurc: f64,
    pub fitted_temperature: f64,
    pub aurc_at_one: f64,
    pub aurc_fitted: f64,
    /// Conformal risk control at `temperature` on the calibration half, applied to the
    /// evaluation half; `None` when the calibration half has fewer than `needed` rows.
    pub report: Option<SelectiveReport>,
    /// The smallest calibration half whose threshold can answer anything at this risk level.
    pub needed: usize,
    pub n_calibration: usize,
    pub sentence: String,
}

/// Conformal risk control checked by the coverage experiment, on the same splits.
#[derive(Debug, Clone, PartialEq)]
pub struct RiskControlExperiment {
    /// Each split's share of its evaluation part answered wrongly.
    pub answered_error_rates: Vec<f64>,
    pub figures: RiskControlExperimentFigures,
    pub caption: String,
}

/// Conformal risk control at `temperature` and `risk_level` over the coverage experiment's
/// splits of the two halves' images (calibration half first, as the experiment's pool);
/// `None` when a calibration part of the half's size cannot answer anything at this level.
pub(super) fn risk_control_experiment(
    cache: &Cache,
    k: usize,
    temperature: f64,
    risk_level: f64,
    repetitions: usize,
    seed: u64,
) -> Result<Option<RiskControlExperiment>, LabError> {
    let n_calibration = cache.calibration.labels.len();
    if n_calibration < conformal::minimum_calibration_rows(risk_level)? {
        return Ok(None);
    }
    let (mut confidence, mut correct) = confidences_of(&cache.calibration, k, temperature)?;
    let (evaluation_confidence, evaluation_correct) =
        confidences_of(&cache.evaluation, k, temperature)?;
    confidence.extend(evaluation_confidence);
    correct.extend(evaluation_correct);
    let rates = selective::risk_control_experiment(
        &confidence,
        &correct,
        n_calibration,
        risk_level,
        repetitions,
        seed,
    )?;
    let count = rates.len() as f64;
    let mean = rates.iter().sum::<f64>() / count;
    let variance = rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (count - 1.0).max(1.0);
    let figures = RiskControlExperimentFigures {
        repetitions: rates.len(),
        risk_level,
        mean,
        standard_deviation: variance.sqrt(),
        above: rates.iter().filter(|&&r| r > risk_level).count(),
    };
    Ok(Some(RiskControlExperiment {
        answered_error_rates: rates,
        caption: sentences::risk_control_experiment_caption(&figures),
        figures,
    }))
}

/// Top-label confidences and correctness of `part` at `temperature`.
fn confidences_of(part: &Part, k: usize, temperature: f64) -> Result<Confidences, LabError> {
    Ok(calibration::confidences(
        &Logits::new(&part.logits, k)?,
        &part.labels,
        temperature,
    )?)
}

impl Cache {
    /// What the selective block computes from `temperature` alone, computed when T has moved.
    fn selective_at(
        &mut self,
        k: usize,
        temperature: f64,
    ) -> Result<&SelectiveAtTemperature, LabError> {
        let kept = self.selective_at.as_ref();
        if kept.is_none_or(|kept| kept.temperature != temperature) {
            let halves = [
                confidences_of(&self.calibration, k, temperature)?,
                confidences_of(&self.evaluation, k, temperature)?,
            ];
            self.selective_at = Some(SelectiveAtTemperature {
                temperature,
                curve: selective::risk_coverage_curve(&halves[1].0, &halves[1].1)?,
                aurc: selective::aurc(&halves[1].0, &halves[1].1)?,
                halves,
            });
        }
        self.selective_at.as_ref().ok_or(LabError::NotReady)
    }

    /// The confidences at T = 1 and at the fitted T, computed when missing.
    fn selective_fixed(&mut self, k: usize) -> Result<&SelectiveFixed, LabError> {
        if self.selective_fixed.is_none() {
            let fitted_temperature = self.fit.temperature;
            let halves = |temperature| -> Result<[Confidences; 2], LabError> {
                Ok([
                    confidences_of(&self.calibration, k, temperature)?,
                    confidences_of(&self.evaluation, k, temperature)?,
                ])
            };
            let (at_one, fitted) = (halves(1.0)?, halves(fitted_temperature)?);
            self.selective_fixed = Some(SelectiveFixed {
                aurc_at_one: selective::aurc(&at_one[1].0, &at_one[1].1)?,
                aurc_fitted: selective::aurc(&fitted[1].0, &fitted[1].1)?,
                at_one,
                fitted,
            });
        }
        self.selective_fixed.as_ref().ok_or(LabError::NotReady)
    }
}

/// Conformal risk control fitted on `halves[0]` and applied to `halves[1]`.
fn report_of(halves: &[Confidences; 2], risk_level: f64) -> Result<SelectiveReport, LabError> {
    let [(calibration, calibration_correct), (evaluation, evaluation_correct)] = halves;
    Ok(selective::selective_report(
        (calibration, calibration_correct),
        (evaluation, evaluation_correct),
        risk_level,
    )?)
}

impl Lab {
    /// The selective classification block at `temperature` and `risk_level`: the last one
    /// again when neither has moved, as the conformal lab's other sliders (α, δ, the score)
    /// leave it as it is and its curve takes two softmaxes and two sorts.
    ///
    /// # Errors
    /// [`LabError::TemperatureOutOfRange`], [`LabError::NotReady`], and the selective
    /// module's errors for a risk level outside (0, 1).
    pub fn selective_view(
        &mut self,
        temperature: f64,
        risk_level: f64,
    ) -> Result<SelectiveView, LabError> {
        Self::check_temperature(temperature)?;
        let k = self.num_classes;
        let needed = conformal::minimum_calibration_rows(risk_level)?;
        let cache = self.prepared()?;
        if let Some(last) = cache
            .selective
            .as_ref()
            .filter(|last| last.temperature == temperature && last.risk_level == risk_level)
        {
            return Ok(last.clone());
        }
        let fitted_temperature = cache.fit.temperature;
        let SelectiveAtTemperature {
            halves: at_t,
            curve,
            aurc,
            ..
        } = cache.selective_at(k, temperature)?.clone();
        let n_calibration = cache.calibration.labels.len();
        let fixed = cache.selective_fixed(k)?;
        let (report, lesson) = if n_calibration >= needed {
            let at_one = report_of(&fixed.at_one, risk_level)?;
            let fitted = report_of(&fixed.fitted, risk_level)?;
            // The evaluation images that one threshold answers and the other does not.
            let differ = fixed.at_one[1]
                .0
                .iter()
                .zip(&fixed.fitted[1].0)
                .filter(|&(&one, &fit)| (one > at_one.threshold) != (fit > fitted.threshold))
                .count();
            let lesson = SelectiveLesson {
                threshold_at_one: at_one.threshold,
                threshold_fitted: fitted.threshold,
                coverage_at_one: at_one.coverage,
                coverage_fitted: fitted.coverage,
                answered_differently: differ as f64 / fixed.at_one[1].0.len() as f64,
            };
            (Some(report_of(&at_t, risk_level)?), Some(lesson))
        } else {
            (None, None)
        };
        let sentence = sentences::selective_sentence(&SelectiveFigures {
            temperature,
            aurc,
            fitted_temperature,
            aurc_at_one: fixed.aurc_at_one,
            aurc_fitted: fixed.aurc_fitted,
            risk_level,
            n_calibration,
            operating: match (&report, lesson) {
                (Some(report), Some(lesson)) => Ok((report.clone(), lesson)),
                _ => Err(needed),
            },
        });
        let view = SelectiveView {
            temperature,
            risk_level,
            curve,
            aurc,
            fitted_temperature,
            aurc_at_one: fixed.aurc_at_one,
            aurc_fitted: fixed.aurc_fitted,
            report,
            needed,
            n_calibration,
            sentence,
        };
        cache.selective = Some(view.clone());
        Ok(view)
    }
}

#[cfg(test)]
#[path = "selective_view_tests.rs"]
mod tests;
