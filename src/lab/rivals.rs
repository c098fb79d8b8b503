//! Temperature scaling against its rivals (vector scaling, histogram binning, isotonic
//! regression; `crate::recalibration`): each fitted once per network and split on the
//! calibration half, measured on the evaluation half, and the two sentences on what the
//! numbers show. Nothing here depends on the temperature slider.

use super::{Cache, LabError};
use crate::calibration::{Binning, Logits};
use crate::recalibration::{self, Labelled, Method, MethodReport, Recalibration, VectorScaling};
use crate::sentences::{self, BinningFigures};

/// Every method's report, in the table's order ([`Method::ALL`]), with the sentences.
#[derive(Debug, Clone, PartialEq)]
pub struct RivalsView {
    pub reports: Vec<MethodReport>,
    /// Which methods keep the accuracy, and what vector scaling did to it.
    pub accuracy_sentence: String,
    /// How few confidences the binning methods give, and whether they fit the calibration
    /// half better.
    pub binning_sentence: String,
}

/// The fits (cached for the split) and the view for one choice of bins.
#[derive(Debug, Clone, Default)]
pub(super) struct RivalsCache {
    fits: Vec<(Method, Recalibration)>,
    view: Option<((usize, Binning), RivalsView)>,
}

/// The rivals view of the cached halves, fitted when stale.
pub(super) fn rivals_view(
    cache: &mut Cache,
    num_classes: usize,
    bins: usize,
    binning: Binning,
) -> Result<RivalsView, LabError> {
    let calibration = Labelled::new(
        Logits::new(&cache.calibration.logits, num_classes)?,
        &cache.calibration.labels,
    )?;
    let evaluation = Labelled::new(
        Logits::new(&cache.evaluation.logits, num_classes)?,
        &cache.evaluation.labels,
    )?;
    let rivals = &mut cache.rivals;
    if rivals.fits.is_empty() {
        rivals.fits = Method::ALL
            .into_iter()
            .map(|method| {
                let fitted = match method {
                    // The lab's own fit, so the row equals the fitted-T column.
                    Method::Temperature => Recalibration::Temperature(cache.fit.temperature),
                    _ => recalibration::fit(method, &calibration)?,
                };
                Ok((method, fitted))
            })
            .collect::<Result<_, LabError>>()?;
    }
    if let Some((key, view)) = &rivals.view {
        if *key == (bins, binning) {
            return Ok(view.clone());
        }
    }
    let reports = rivals
        .fits
        .iter()
        .map(|(method, fitted)| {
            recalibration::report(*method, fitted, &calibration, &evaluation, bins, binning)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let vector = rivals.fits.iter().find_map(|(_, fitted)| match fitted {
        Recalibration::Vector(fit) => Some(fit),
        _ => None,
    });
    let view = with_sentences(reports, vector, evaluation.labels().len())?;
    rivals.view = Some(((bins, binning), view.clone()));
    Ok(view)
}

/// The view with its two sentences, computed from the reports.
fn with_sentences(
    reports: Vec<MethodReport>,
    vector_fit: Option<&VectorScaling>,
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
    };
    let mut accuracy_sentence = sentences::rivals_accuracy_sentence(
        temperature.accuracy,
        (vector.accuracy, vector.changed_predictions),
        images,
    );
    if let Some(stop) = vector_fit.and_then(sentences::vector_scaling_stop_sentence) {
        accuracy_sentence = format!("{accuracy_sentence} {stop}");
    }
    let binning_sentence = sentences::rivals_binning_sentence(
        binning(find(Method::Histogram)?),
        binning(find(Method::Isotonic)?),
        temperature.distinct_confidences,
        images,
    );
    Ok(RivalsView {
        reports,
        accuracy_sentence,
        binning_sentence,
    })
}
