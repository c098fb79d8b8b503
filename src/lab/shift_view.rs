//! The shift lab's view: what happens to temperature scaling and split conformal prediction
//! when the test images are corrupted after T and q̂ were fitted.
//!
//! Every number is measured on the evaluation half of a corrupted copy of the test images
//! ([`ShiftedSet`]), with T and q̂ fitted on one of two calibration halves:
//! - **kept**: the clean calibration half, as a deployed model would keep them after the data
//!   drifted (the exchangeability the conformal guarantee assumes is broken);
//! - **refit**: the corrupted copy's own calibration half ("recalibrate on shifted data"),
//!   exchangeable with the evaluation half again, so the guarantee holds again.
//!
//! In both, T is the temperature that minimises the calibration half's NLL
//! ([`calibration::fit_temperature`]), and the sets are split conformal's at that T with the
//! conformal lab's score, α and thresholds ([`conformal::split_conformal`]). Severity 0 is the
//! clean images, where both are the same.

use super::{ConformalSettings, Lab, LabError, Part, ShiftStore, ShiftedSet};
use crate::calibration::{self, Bin, Binning, Logits};
use crate::conformal::{self, ThresholdRule};
use crate::shift::Corruption;

/// Evaluation images the lab shows clean and corrupted side by side.
pub const SHIFT_THUMBNAILS: usize = 8;

/// The metrics of the evaluation half of one copy, with T and q̂ from one calibration half.
#[derive(Debug, Clone, PartialEq)]
pub struct ShiftMetrics {
    /// Fitted on the calibration half.
    pub temperature: f64,
    pub accuracy: f64,
    pub ece: f64,
    pub nll: f64,
    pub brier: f64,
    /// Share of evaluation images whose set holds the label.
    pub coverage: f64,
    pub average_set_size: f64,
    /// The top-label reliability bins at the fitted T.
    pub bins: Vec<Bin>,
}

/// One severity's metrics, both ways.
#[derive(Debug, Clone, PartialEq)]
pub struct ShiftPoint {
    pub severity: u8,
    /// T and q̂ from the clean calibration half.
    pub kept: ShiftMetrics,
    /// T and q̂ refitted on the corrupted copy's calibration half.
    pub refit: ShiftMetrics,
}

/// The shift lab for one network, corruption and the conformal lab's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ShiftView {
    pub corruption: Corruption,
    /// The severity shown.
    pub severity: u8,
    pub alpha: f64,
    /// Every severity whose logits are in, from 0 (the clean images) up.
    pub points: Vec<ShiftPoint>,
    /// Evaluation rows shown as thumbnails.
    pub thumbnails: Vec<usize>,
    pub n_calibration: usize,
    pub n_evaluation: usize,
    /// The guarantee band's upper edge, `1 − α + 1/(n + 1)` (with Mondrian thresholds, the
    /// largest over classes of `1/(n_k + 1)`).
    pub guarantee_upper: f64,
    /// The standard deviation of one split's coverage (Beta-Binomial law), when q̂ is finite.
    pub split_standard_deviation: Option<f64>,
}

impl ShiftView {
    /// The shown severity's point, once its logits are in.
    pub fn current(&self) -> Option<&ShiftPoint> {
        self.points.iter().find(|p| p.severity == self.severity)
    }

    /// The clean images' point.
    pub fn clean(&self) -> Option<&ShiftPoint> {
        self.points.iter().find(|p| p.severity == 0)
    }
}

/// What a kept [`ShiftView`] was computed from: with the network's and the copies' logits
/// complete, the split fixes the halves and both fitted T.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ViewKey {
    model: usize,
    split: u64,
    corruption: Corruption,
    severity: u8,
    settings: ConformalSettings,
    bins: usize,
    binning: Binning,
    /// The severities whose logits are complete.
    severities: Vec<u8>,
}

impl Lab {
    /// The shift lab's view of the active model on `corruption`, showing `severity`, with the
    /// conformal lab's `settings` (its temperature aside: both T are fitted) and the
    /// temperature lab's bins; kept in `store` and shown again while its inputs stay
    /// ([`ViewKey`]).
    ///
    /// # Errors
    /// [`LabError::NotReady`] until the active model's clean logits are complete, and the
    /// calibration and conformal modules' errors.
    pub fn shift_view(
        &mut self,
        store: &mut ShiftStore,
        corruption: Corruption,
        severity: u8,
        settings: &ConformalSettings,
        bins: usize,
        binning: Binning,
    ) -> Result<ShiftView, LabError> {
        let model = self.active;
        let clean_logits = self.complete_logits(model)?.ok_or(LabError::NotReady)?;
        let key = ViewKey {
            model,
            split: self.split_seed,
            corruption,
            severity,
            settings: *settings,
            bins,
            binning,
            severities: (1..=corruption.max_severity())
                .filter(|&level| {
                    ShiftedSet::new(corruption, level)
                        .is_ok_and(|set| store.complete_logits(model, set).is_some())
                })
                .collect(),
        };
        if let Some(view) = store.view.get(&key) {
            return Ok(view.clone());
        }
        let (clean_calibration, clean_evaluation) = self.halves(clean_logits);
        let measure = Measure {
            num_classes: self.num_classes,
            settings,
            bins,
            binning,
        };
        // The clean T is the one the temperature lab fitted on the same rows.
        let clean_temperature = self.prepared()?.fit.temperature;
        let clean_fit = measure.fit(&clean_calibration, Some(clean_temperature))?;
        let clean = measure.metrics(&clean_fit, &clean_evaluation)?;
        let mut points = vec![ShiftPoint {
            severity: 0,
            kept: clean.clone(),
            refit: clean,
        }];
        for level in 1..=corruption.max_severity() {
            let set = ShiftedSet::new(corruption, level).map_err(|_| LabError::NotReady)?;
            let Some(logits) = store.complete_logits(model, set) else {
                continue;
            };
            let (calibration, evaluation) = self.halves(logits);
            let refit = measure.fit(&calibration, store.fitted(model, set, self.split_seed))?;
            store.keep_fit(model, set, self.split_seed, refit.temperature);
            points.push(ShiftPoint {
                severity: level,
                kept: measure.metrics(&clean_fit, &evaluation)?,
                refit: measure.metrics(&refit, &evaluation)?,
            });
        }
        let (n_calibration, n_evaluation) = (
            clean_calibration.labels.len(),
            clean_evaluation.labels.len(),
        );
        let smallest = if settings.class_conditional {
            let mut counts = vec![0_usize; self.num_classes];
            for &label in &clean_calibration.labels {
                counts[label as usize] += 1;
            }
            counts
                .into_iter()
                .filter(|&n| n > 0)
                .min()
                .unwrap_or(n_calibration)
        } else {
            n_calibration
        };
        let guarantee_upper = 1.0 - settings.alpha + 1.0 / (smallest as f64 + 1.0);
        let view = ShiftView {
            corruption,
            severity: severity.min(corruption.max_severity()),
            alpha: settings.alpha,
            points,
            thumbnails: clean_evaluation
                .rows
                .iter()
                .take(SHIFT_THUMBNAILS)
                .copied()
                .collect(),
            n_calibration,
            n_evaluation,
            guarantee_upper,
            split_standard_deviation: conformal::coverage_law(
                n_calibration,
                n_evaluation,
                settings.alpha,
            )
            .ok()
            .map(|law| law.split_standard_deviation),
        };
        store.view.keep(key, view.clone());
        Ok(view)
    }

    /// Every row of `logits` (`[rows, K]`, one per test image) in the split's two halves.
    pub(super) fn halves(&self, logits: &[f32]) -> (Part, Part) {
        let k = self.num_classes;
        let (mut calibration, mut evaluation) = (Part::default(), Part::default());
        for (row, values) in logits.chunks_exact(k).enumerate() {
            let part = if self.is_calibration[row] {
                &mut calibration
            } else {
                &mut evaluation
            };
            part.rows.push(row);
            part.logits.extend_from_slice(values);
            part.labels.push(self.labels[row]);
            part.uniforms.push(self.row_uniforms[row]);
        }
        (calibration, evaluation)
    }
}

/// What the lab measures with: the conformal settings and the reliability bins.
struct Measure<'a> {
    num_classes: usize,
    settings: &'a ConformalSettings,
    bins: usize,
    binning: Binning,
}

/// A calibration half with its fitted T and its probabilities at that T.
struct Fitted<'a> {
    part: &'a Part,
    temperature: f64,
    probabilities: Vec<f64>,
}

impl Measure<'_> {
    /// T fitted on `calibration` (`known` when it was fitted before), and the half's
    /// probabilities at that T.
    fn fit<'p>(&self, calibration: &'p Part, known: Option<f64>) -> Result<Fitted<'p>, LabError> {
        let logits = Logits::new(&calibration.logits, self.num_classes)?;
        let temperature = match known {
            Some(temperature) => temperature,
            None => calibration::fit_temperature(&logits, &calibration.labels)?.temperature,
        };
        Ok(Fitted {
            part: calibration,
            temperature,
            probabilities: calibration::softmax(&logits, temperature)?,
        })
    }

    /// The evaluation half's metrics at the calibration half's T, and its split conformal sets
    /// with q̂ from that half at that T.
    fn metrics(&self, fitted: &Fitted, evaluation: &Part) -> Result<ShiftMetrics, LabError> {
        let k = self.num_classes;
        let (calibration, temperature) = (fitted.part, fitted.temperature);
        let evaluation_logits = Logits::new(&evaluation.logits, k)?;
        let report = calibration::evaluate(
            &evaluation_logits,
            &evaluation.labels,
            temperature,
            self.bins,
            self.binning,
        )?;
        let sets = conformal::split_conformal(
            &fitted.probabilities,
            &calibration.labels,
            &calibration::softmax(&evaluation_logits, temperature)?,
            &evaluation.labels,
            k,
            &self.settings.score_of(self.settings.score),
            self.settings.alpha,
            if self.settings.class_conditional {
                ThresholdRule::ClassConditional
            } else {
                ThresholdRule::Marginal
            },
            &calibration.uniforms,
            &evaluation.uniforms,
        )?;
        Ok(ShiftMetrics {
            temperature,
            accuracy: report.accuracy,
            ece: report.ece,
            nll: report.nll,
            brier: report.brier,
            coverage: sets.metrics.coverage,
            average_set_size: sets.metrics.average_set_size,
            bins: report.bins,
        })
    }
}

#[cfg(test)]
#[path = "shift_view_tests.rs"]
mod tests;
