//! Temperature scaling against its rivals (vector scaling, histogram binning, isotonic
//! regression, Venn–Abers, Dirichlet calibration up to its 20 classes; `crate::recalibration`):
//! each fitted on the calibration half, measured on the evaluation half, and the three
//! sentences on what the numbers show, each difference they state with its paired bootstrap
//! interval. Nothing here depends on the temperature slider.
//!
//! Vector scaling's Newton fit costs about 20 ms on the test images but seconds on a reader's
//! 200,000 rows of 100 classes, far more than a frame: the page asks a worker for the rivals
//! with a [`RivalsRequest`] once every row has arrived ([`Halves::rivals`] answers it), and
//! the lab shows them once they are back, for the state they were computed for.

use serde::{Deserialize, Serialize};

use super::answers::WorkerRequest;
use super::{halves, Halves, Lab, LabError, DIFFERENCE_BOOTSTRAP};
use crate::bootstrap::EceNllIntervals;
use crate::calibration::Binning;
use crate::recalibration::dirichlet::MAX_DIRICHLET_CLASSES;
use crate::recalibration::{self, Method, MethodReport, Recalibration, VectorScaling};
use crate::sentences::{self, BinningFigures};

/// Every method's report, in the table's order ([`Method::ALL`]), with the sentences.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RivalsView {
    pub reports: Vec<MethodReport>,
    /// Which methods keep the accuracy, and what vector scaling did to it.
    pub accuracy_sentence: String,
    /// How few confidences the binning methods give, and whether they fit the calibration
    /// half better.
    pub binning_sentence: String,
    /// What Venn–Abers' merged probability is, and its NLL and ECE against isotonic
    /// regression's.
    pub venn_abers_sentence: String,
    /// The differences the sentences state, with their paired bootstrap intervals.
    pub differences: RivalDifferences,
}

/// ECE and NLL differences on the evaluation half, each with its paired bootstrap interval
/// ([`DIFFERENCE_BOOTSTRAP`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RivalDifferences {
    /// Histogram binning's minus temperature scaling's.
    pub histogram_against_temperature: EceNllIntervals,
    /// Isotonic regression's minus temperature scaling's.
    pub isotonic_against_temperature: EceNllIntervals,
    /// Venn–Abers' minus isotonic regression's.
    pub venn_abers_against_isotonic: EceNllIntervals,
}

/// Which rivals: the network and split whose halves they are fitted and measured on, the
/// temperature the lab fitted there (temperature scaling's row, so that it equals the
/// fitted-T column), and the bins they are measured with.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RivalsRequest {
    pub model: usize,
    pub split: u64,
    pub temperature: f64,
    pub bins: usize,
    pub binning: Binning,
}

/// The rivals fitted on a calibration half, for the temperature they were fitted with: a
/// change of bins measures them again without fitting them again.
#[derive(Debug, Clone)]
pub(super) struct RivalFits {
    temperature: f64,
    fits: Vec<(Method, Recalibration)>,
}

impl Halves {
    /// The rivals view `request` asks for, on these halves (the fits kept for the next
    /// request with the same temperature).
    ///
    /// # Errors
    /// The fitters' errors and the bin-count error of the calibration module.
    pub fn rivals(&mut self, request: &RivalsRequest) -> Result<RivalsView, LabError> {
        let Self {
            classes,
            calibration_logits,
            calibration_labels,
            evaluation_logits,
            evaluation_labels,
            rival_fits,
        } = self;
        let (calibration, evaluation) = halves::labelled(
            *classes,
            (calibration_logits, calibration_labels),
            (evaluation_logits, evaluation_labels),
        )?;
        let fits = match rival_fits {
            Some(kept) if kept.temperature == request.temperature => kept,
            _ => rival_fits.insert(RivalFits {
                temperature: request.temperature,
                fits: Method::ALL
                    .into_iter()
                    .filter(|&method| {
                        method != Method::Dirichlet || *classes <= MAX_DIRICHLET_CLASSES
                    })
                    .map(|method| {
                        let fitted = match method {
                            Method::Temperature => Recalibration::Temperature(request.temperature),
                            _ => recalibration::fit(method, &calibration)?,
                        };
                        Ok((method, fitted))
                    })
                    .collect::<Result<_, LabError>>()?,
            }),
        };
        let reports = fits
            .fits
            .iter()
            .map(|(method, fitted)| {
                recalibration::report(
                    *method,
                    fitted,
                    &calibration,
                    &evaluation,
                    request.bins,
                    request.binning,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let vector = fits.fits.iter().find_map(|(_, fitted)| match fitted {
            Recalibration::Vector(fit) => Some(fit),
            _ => None,
        });
        let fitted = |wanted: Method| {
            fits.fits
                .iter()
                .find(|(method, _)| *method == wanted)
                .map(|(_, fitted)| fitted)
                .ok_or(LabError::NotReady)
        };
        let difference = |first: Method, second: Method| {
            recalibration::paired_ece_nll_difference(
                fitted(first)?,
                fitted(second)?,
                &evaluation,
                request.bins,
                request.binning,
                &DIFFERENCE_BOOTSTRAP,
            )
            .map_err(LabError::from)
        };
        let differences = RivalDifferences {
            histogram_against_temperature: difference(Method::Histogram, Method::Temperature)?,
            isotonic_against_temperature: difference(Method::Isotonic, Method::Temperature)?,
            venn_abers_against_isotonic: difference(Method::VennAbers, Method::Isotonic)?,
        };
        with_sentences(reports, vector, differences, evaluation.labels().len())
    }
}

impl Lab {
    /// Keeps rivals a worker computed, if they are for the network and split shown now (an
    /// answer that arrives after a switch is dropped).
    pub fn add_rivals(&mut self, request: RivalsRequest, view: RivalsView) {
        self.keep_answer(|cache| &mut cache.rivals, request, view);
    }

    /// The rivals with these bins, or the request for them when every row has arrived and
    /// none are kept (before that, the halves are still growing).
    pub(super) fn rivals_at(
        &mut self,
        bins: usize,
        binning: Binning,
    ) -> Result<Result<RivalsView, Option<RivalsRequest>>, LabError> {
        let request = RivalsRequest {
            model: self.active,
            split: self.split_seed,
            temperature: self.prepared()?.fit.temperature,
            bins,
            binning,
        };
        self.kept_answer(|cache| &mut cache.rivals, request)
    }
}

impl WorkerRequest for RivalsRequest {
    fn network_and_split(&self) -> (usize, u64) {
        (self.model, self.split)
    }
}

/// The view with its two sentences, computed from the reports.
fn with_sentences(
    reports: Vec<MethodReport>,
    vector_fit: Option<&VectorScaling>,
    differences: RivalDifferences,
    images: usize,
) -> Result<RivalsView, LabError> {
    let find = |method: Method| {
        reports
            .iter()
            .find(|report| report.method == method)
            .ok_or(LabError::NotReady)
    };
    let (temperature, vector) = (find(Method::Temperature)?, find(Method::Vector)?);
    let binning = |report: &MethodReport| BinningFigures {
        distinct: report.distinct_confidences,
        ece: report.ece,
        calibration_ece: report.calibration_ece,
        nll: report.nll,
    };
    let dirichlet = reports
        .iter()
        .find(|report| report.method == Method::Dirichlet)
        .map(|report| (report.accuracy, report.changed_predictions));
    let mut accuracy_sentence = sentences::rivals_accuracy_sentence(
        temperature.accuracy,
        (vector.accuracy, vector.changed_predictions),
        dirichlet,
        images,
    );
    if let Some(stop) = vector_fit.and_then(sentences::vector_scaling_stop_sentence) {
        accuracy_sentence = format!("{accuracy_sentence} {stop}");
    }
    let isotonic = binning(find(Method::Isotonic)?);
    let binning_sentence = sentences::rivals_binning_sentence(
        binning(find(Method::Histogram)?),
        isotonic,
        binning(temperature),
        images,
        [
            &differences.histogram_against_temperature,
            &differences.isotonic_against_temperature,
        ],
    );
    let venn_abers_sentence = sentences::rivals_venn_abers_sentence(
        binning(find(Method::VennAbers)?),
        isotonic,
        &differences.venn_abers_against_isotonic,
    );
    Ok(RivalsView {
        reports,
        accuracy_sentence,
        binning_sentence,
        venn_abers_sentence,
        differences,
    })
}

#[cfg(test)]
#[path = "rivals_tests.rs"]
mod tests;
