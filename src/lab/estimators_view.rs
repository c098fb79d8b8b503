//! The estimators table on its edge case (`estimator_cases`): the case's rows built once per
//! network, split and case and kept, and its estimators at the slider's T (at T = 1 for the
//! base rates) on every frame, as `calibra report --case` computes them.

use super::LabError;
use crate::bootstrap::MetricIntervals;
use crate::calibration::{self, Binning, CalibrationReport, Logits, RowSoftmaxes};
use crate::calibration_estimators::{self, CumulativeDifferences, Estimators};
use crate::estimator_cases::{
    case_rows, distinct_and_empty, extra_bin_errors, CaseRows, EstimatorCase, ExtraBin,
};
use crate::smooth_calibration;

/// The estimators table's numbers on the rows of one case.
#[derive(Debug, Clone, PartialEq)]
pub struct EstimatorsView {
    pub case: EstimatorCase,
    /// The temperature they are taken at: the slider's, or 1 for the base rates.
    pub temperature: f64,
    /// Rows of the case.
    pub images: usize,
    /// ECE, RMSCE, MCE, class-wise ECE and accuracy on the lab's bins.
    pub report: CalibrationReport,
    pub smece: f64,
    pub estimators: Estimators,
    /// Bootstrap intervals of the errors, once the worker has them.
    pub intervals: Option<MetricIntervals>,
    /// The rows at a confidence of exactly 1, and the binned errors with them in a bin of
    /// their own.
    pub extra_bin: Option<ExtraBin>,
    /// Distinct confidences (counted for the empty-bins case only, 0 otherwise) and empty
    /// bins.
    pub distinct_confidences: usize,
    pub empty_bins: usize,
    /// The constant answer of the base rates: its class and confidence.
    pub constant_answer: Option<(usize, f64)>,
}

impl EstimatorsView {
    /// The table on the network's own rows, from what the temperature view computed.
    ///
    /// # Errors
    /// The errors of [`extra_bin_errors`].
    #[allow(clippy::too_many_arguments)]
    pub(super) fn of_network(
        temperature: f64,
        report: &CalibrationReport,
        smece: f64,
        estimators: &Estimators,
        confidence: &[f64],
        correct: &[bool],
        bins: usize,
        binning: Binning,
    ) -> Result<Self, LabError> {
        Ok(Self {
            case: EstimatorCase::Network,
            temperature,
            images: confidence.len(),
            report: report.clone(),
            smece,
            estimators: estimators.clone(),
            intervals: None,
            extra_bin: extra_bin_errors(confidence, correct, bins, binning)?,
            distinct_confidences: 0,
            empty_bins: report.bins.iter().filter(|bin| bin.count == 0).count(),
            constant_answer: None,
        })
    }
}

/// What a case's rows are built from and evaluated at, the same for its table and its chart.
pub(super) struct CaseInputs<'a> {
    /// The split's calibration labels and evaluation logits and labels, which the case's rows
    /// are built from once and kept.
    pub halves: (&'a [u32], &'a [f32], &'a [u32]),
    pub classes: usize,
    pub case: EstimatorCase,
    /// The slider's temperature, bins and binning.
    pub slider: (f64, usize, Binning),
    /// The evaluation half's softmax when the frame kept it: it spares the case's rows that
    /// are the network's own their exponentials at that temperature (the same numbers).
    pub network: Option<&'a RowSoftmaxes<'a>>,
}

/// The rows of the case, built from the split's halves the first time they are asked for (or
/// when the case changed) and kept in `kept`.
fn kept_case<'a>(
    kept: &'a mut Option<KeptCase>,
    inputs: &CaseInputs,
) -> Result<&'a mut KeptCase, LabError> {
    let CaseInputs {
        halves: (calibration_labels, evaluation_logits, evaluation_labels),
        classes,
        case,
        ..
    } = *inputs;
    if kept.as_ref().is_none_or(|kept| kept.case != case) {
        let rows = case_rows(
            case,
            classes,
            calibration_labels,
            evaluation_logits,
            evaluation_labels,
        )?;
        let predicted =
            calibration_estimators::predicted_classes(&Logits::new(&rows.logits, classes)?);
        *kept = Some(KeptCase {
            case,
            rows,
            predicted,
            last: None,
        });
    }
    kept.as_mut().ok_or(LabError::NotReady)
}

/// The case's rows evaluated at a temperature (already the case's own) with the slider's bins,
/// with the network's softmax where it is at that temperature.
fn case_at(
    rows: &CaseRows,
    inputs: &CaseInputs,
    (temperature, bins, binning): (f64, usize, Binning),
) -> Result<calibration::Evaluation, LabError> {
    let logits = Logits::new(&rows.logits, inputs.classes)?;
    Ok(
        match inputs
            .network
            .filter(|network| network.temperature() == temperature)
        {
            Some(network) => {
                calibration::evaluate_in_full_beside(&logits, &rows.labels, bins, binning, network)?
            }
            None => {
                calibration::evaluate_in_full(&logits, &rows.labels, temperature, bins, binning)?
            }
        },
    )
}

/// The cumulative differences on the rows of the case at the slider's temperature, as
/// [`case_view`] computes them, without the table's estimators and smooth ECE: what the chart
/// alone needs. The last view's are reused where they are at the same temperature.
///
/// # Errors
/// As [`case_view`].
pub(super) fn case_cumulative(
    kept: &mut Option<KeptCase>,
    inputs: &CaseInputs,
) -> Result<CumulativeDifferences, LabError> {
    let KeptCase { rows, last, .. } = kept_case(kept, inputs)?;
    let (temperature, bins, binning) = inputs.slider;
    let temperature = inputs.case.temperature(temperature);
    if let Some(kept) = last.as_ref().filter(|kept| kept.settings.0 == temperature) {
        return Ok(kept.cumulative.clone());
    }
    let full = case_at(rows, inputs, (temperature, bins, binning))?;
    Ok(CumulativeDifferences::new(&full.confidence, &full.correct)?)
}

/// The rows of one case and their predicted classes (which no temperature moves), kept per
/// network and split while the case stays, with the last view computed on them.
#[derive(Debug, Clone)]
pub(super) struct KeptCase {
    case: EstimatorCase,
    rows: CaseRows,
    predicted: Vec<u32>,
    /// The last view: the base rates are taken at T = 1 whatever the slider says, so theirs
    /// is computed once.
    last: Option<KeptView>,
}

/// A case's view and the temperature and bins it was computed at.
#[derive(Debug, Clone)]
struct KeptView {
    settings: (f64, usize, Binning),
    view: EstimatorsView,
    cumulative: CumulativeDifferences,
}

/// The table and the cumulative differences on the rows of the case (not the network's own)
/// at the slider's temperature with its bins, the rows built once and kept in `kept`.
///
/// # Errors
/// The calibration module's errors for a bad bin count.
pub(super) fn case_view(
    kept: &mut Option<KeptCase>,
    inputs: &CaseInputs,
) -> Result<(EstimatorsView, CumulativeDifferences), LabError> {
    let KeptCase {
        rows,
        predicted,
        last,
        ..
    } = kept_case(kept, inputs)?;
    let CaseInputs {
        classes,
        case,
        slider: (temperature, bins, binning),
        ..
    } = *inputs;
    let temperature = case.temperature(temperature);
    let settings = (temperature, bins, binning);
    if let Some(kept) = last.as_ref().filter(|kept| kept.settings == settings) {
        return Ok((kept.view.clone(), kept.cumulative.clone()));
    }
    let full = case_at(rows, inputs, settings)?;
    let smooth = smooth_calibration::smooth_ece(&full.confidence, &full.correct)?;
    let cumulative = CumulativeDifferences::new(&full.confidence, &full.correct)?;
    let estimators = calibration_estimators::estimators_of(
        &full.confidence,
        &full.correct,
        predicted,
        classes,
        bins,
        binning,
        &cumulative,
    )?;
    let (distinct_confidences, empty_bins) = if case == EstimatorCase::EmptyBins {
        distinct_and_empty(&full.confidence, &full.report.bins)
    } else {
        (
            0,
            full.report.bins.iter().filter(|bin| bin.count == 0).count(),
        )
    };
    let constant_answer = predicted
        .first()
        .zip(full.confidence.first())
        .filter(|_| case == EstimatorCase::BaseRate)
        .map(|(&class, &confidence)| (class as usize, confidence));
    let view = EstimatorsView {
        case,
        temperature,
        images: rows.labels.len(),
        extra_bin: extra_bin_errors(&full.confidence, &full.correct, bins, binning)?,
        report: full.report,
        smece: smooth.smece,
        estimators,
        intervals: None,
        distinct_confidences,
        empty_bins,
        constant_answer,
    };
    *last = Some(KeptView {
        settings,
        view: view.clone(),
        cumulative: cumulative.clone(),
    });
    Ok((view, cumulative))
}
