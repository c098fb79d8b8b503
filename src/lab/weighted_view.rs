//! The shift lab's weighted conformal prediction (Tibshirani et al. 2019): split conformal's
//! threshold on the clean calibration half, reweighted by the likelihood ratio of the corrupted
//! images' logits to the clean images', which a domain classifier estimates without a label
//! of the corrupted images.
//!
//! At the shown severity, the domain classifier ([`crate::domain_classifier`]: logistic
//! regression on the K logits) is fitted on the clean calibration half (clean) against the
//! corrupted copy's calibration half, its labels unused (shifted); its weights
//! `w(x) = exp(η(x)) · n_c/n_s` reweight the clean calibration half's true-label scores
//! ([`WeightedCalibration`]), and every image of the corrupted copy's evaluation half gets the
//! set `{y : s(x, y) ≤ q̂(x)}`, `q̂(x)` the weighted quantile with its own weight at `+∞`. The
//! sets are built at the clean calibration half's fitted T with the conformal lab's score and
//! α, as the "kept" column's; one threshold for all classes, so the Mondrian switch does not
//! apply. At severity 0 both sides are the clean images and every weight is 1: the kept sets.
//!
//! The classifier is fitted once per network, split, corruption and severity and its weights
//! kept ([`ShiftStore::domain_weights`]); the sets once per those, score, α and T
//! ([`ShiftStore::weighted`]), never per frame.

use std::rc::Rc;

use super::adaptive_view::kept_scores;
use super::{ConformalSettings, Lab, LabError, Part, ShiftStore, ShiftedSet};
use crate::conformal::weighted::WeightedCalibration;
use crate::conformal::Score;
use crate::domain_classifier::{effective_sample_size, fit_domain_classifier};
use crate::shift::Corruption;

/// Weighted conformal's sets on the corrupted evaluation half at one severity.
#[derive(Debug, Clone, PartialEq)]
pub struct WeightedView {
    pub corruption: Corruption,
    pub severity: u8,
    pub alpha: f64,
    /// The clean calibration half's fitted T, at which every set is built.
    pub temperature: f64,
    /// Clean calibration rows, unlabelled corrupted rows the classifier was fitted against,
    /// and corrupted evaluation rows.
    pub n_calibration: usize,
    pub n_unlabelled: usize,
    pub n_evaluation: usize,
    pub coverage: f64,
    pub average_set_size: f64,
    /// Kish's effective sample size of the calibration weights.
    pub effective_sample_size: f64,
    /// The share of evaluation images whose `q̂(x)` is `+∞`.
    pub infinite_share: f64,
    /// Whether the classifier's Newton iterations converged.
    pub converged: bool,
}

/// The logarithms of the likelihood-ratio weights of one network, split and copy: of each
/// clean calibration row and of each corrupted evaluation row, in the halves' order.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct DomainWeights {
    pub calibration: Vec<f64>,
    pub evaluation: Vec<f64>,
    pub converged: bool,
}

/// What a kept [`DomainWeights`] was fitted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct DomainKey {
    pub model: usize,
    pub split: u64,
    pub corruption: Corruption,
    pub severity: u8,
}

/// What a kept [`WeightedView`] was computed from.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct WeightedKey {
    domain: DomainKey,
    score: Score,
    alpha: f64,
    temperature: f64,
}

/// The logits of a half as `f64` features.
fn features(part: &Part) -> Vec<f64> {
    part.logits.iter().map(|&z| f64::from(z)).collect()
}

impl Lab {
    /// Weighted conformal's sets for the active model on `corruption` at `severity`, with the
    /// conformal lab's score and α from `settings` (its T and Mondrian switch aside: the sets
    /// are at the clean fitted T, with one threshold), computed once per inputs and kept in
    /// `store`.
    ///
    /// # Errors
    /// [`LabError::NotReady`] until the active model's clean logits, and its logits on the
    /// corrupted copy past severity 0, are complete; the domain classifier's and the conformal
    /// module's errors.
    pub fn weighted_view(
        &mut self,
        store: &mut ShiftStore,
        corruption: Corruption,
        severity: u8,
        settings: &ConformalSettings,
    ) -> Result<WeightedView, LabError> {
        let model = self.active;
        let severity = severity.min(corruption.max_severity());
        let temperature = self.prepared()?.fit.temperature;
        let clean_logits = self.complete_logits(model)?.ok_or(LabError::NotReady)?;
        let shifted_logits = if severity == 0 {
            clean_logits
        } else {
            let set = ShiftedSet::new(corruption, severity).map_err(|_| LabError::NotReady)?;
            store
                .complete_logits(model, set)
                .ok_or(LabError::NotReady)?
        };
        let domain = DomainKey {
            model,
            split: self.split_seed,
            corruption,
            severity,
        };
        let key = WeightedKey {
            domain,
            score: settings.score_of(settings.score),
            alpha: settings.alpha,
            temperature,
        };
        if let Some(view) = store.weighted.get(&key) {
            return Ok(view.clone());
        }
        let (calibration, _) = self.halves(clean_logits);
        let (unlabelled, evaluation) = self.halves(shifted_logits);
        let k = self.num_classes;
        let weights = match store.domain_weights(&domain) {
            Some(weights) => weights,
            None => {
                let classifier =
                    fit_domain_classifier(&features(&calibration), &features(&unlabelled), k)?;
                let weights = Rc::new(DomainWeights {
                    calibration: classifier.log_weights(&features(&calibration)),
                    evaluation: classifier.log_weights(&features(&evaluation)),
                    converged: classifier.converged,
                });
                store.keep_domain_weights(domain, Rc::clone(&weights));
                weights
            }
        };
        let (calibration_scores, evaluation_scores) =
            kept_scores(&calibration, &evaluation, k, temperature, &key.score)?;
        let sets =
            WeightedCalibration::from_log_weights(&calibration_scores, &weights.calibration)?
                .evaluate(
                    &evaluation_scores,
                    &weights.evaluation,
                    &evaluation.labels,
                    k,
                    settings.alpha,
                )?;
        let view = WeightedView {
            corruption,
            severity,
            alpha: settings.alpha,
            temperature,
            n_calibration: calibration.labels.len(),
            n_unlabelled: unlabelled.labels.len(),
            n_evaluation: evaluation.labels.len(),
            coverage: sets.coverage,
            average_set_size: sets.average_set_size,
            effective_sample_size: effective_sample_size(&weights.calibration),
            infinite_share: sets.infinite_share,
            converged: weights.converged,
        };
        store.weighted.keep(key, view.clone());
        Ok(view)
    }
}

#[cfg(test)]
#[path = "weighted_view_tests.rs"]
mod tests;
