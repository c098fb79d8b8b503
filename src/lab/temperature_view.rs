//! The temperature lab's view: the metrics at the slider's T, at T = 1 and at the fitted T,
//! the reliability and classwise bins, the confidence histogram, the sentence on over- or
//! underconfidence, and temperature scaling against its rivals (from a worker, see
//! `rivals.rs`).

use super::estimators_view::{case_cumulative, case_view, CaseInputs, EstimatorsView};
use super::intervals::{IntervalRequest, BOOTSTRAP};
use super::rivals::{RivalsRequest, RivalsView};
use super::{Lab, LabError};
use crate::bootstrap::{self, MetricIntervals, Resamples, SmoothDiagram};
use crate::calibration::{self, Bin, Binning, CalibrationReport, Logits};
use crate::calibration_estimators::{self, CumulativeDifferences};
use crate::calibration_null::{self, CalibrationTest, NullOutcomes, NULL_DRAWS};
use crate::corp::{self, Corp};
use crate::estimator_cases::EstimatorCase;
use crate::sentences;
use crate::smooth_calibration::{self, SmoothEce};
use crate::temperature_anatomy::BrierDecomposition;

/// Points the smooth reliability curve is drawn through: finer than a chart's pixels need at
/// the bandwidths the search finds on thousands of images.
pub const SMOOTH_CURVE_POINTS: usize = 201;

/// What the temperature lab shows, at one slider temperature.
#[derive(Debug, Clone, PartialEq)]
pub struct TemperatureView {
    pub temperature: f64,
    pub fitted_temperature: f64,
    /// Set when the fit stopped at 0.05 or 20.
    pub fitted_bound_hit: bool,
    pub n_calibration: usize,
    pub n_evaluation: usize,
    /// Evaluation metrics at the slider's T, at T = 1 and at the fitted T.
    pub at_temperature: CalibrationReport,
    pub at_one: CalibrationReport,
    pub at_fitted: CalibrationReport,
    /// Top-label confidences of the evaluation rows at the slider's T, counted in the
    /// reliability diagram's equal-width bins.
    pub confidence_counts: Vec<usize>,
    pub mean_confidence: f64,
    /// The test of calibration at the slider's T: the ECE against the law of a perfectly
    /// calibrated network with these confidences on these images, and the mean gap.
    pub calibration_test: CalibrationTest,
    /// The test's verdict on the confidence, in words.
    pub verdict: String,
    /// Reliability bins of each class (binned on p_k) at the slider's T.
    pub classwise_bins: Vec<Vec<Bin>>,
    /// The estimators table on its case's rows: the other estimators and the three tests of
    /// calibration at the slider's T, on the lab's bins (`calibration_estimators`, as `calibra
    /// report` computes them). With [`TemperatureParts::estimators`].
    pub estimator_case: Option<EstimatorsView>,
    /// The cumulative differences behind the KS error, Kuiper and Kolmogorov–Smirnov at the
    /// slider's T on the same rows (Tygert's chart draws them). With
    /// [`TemperatureParts::estimators`].
    pub cumulative: Option<CumulativeDifferences>,
    /// Murphy's decomposition of the Brier score on the classwise bins, at the slider's T, at
    /// T = 1 and at the fitted T. With [`TemperatureParts::brier`].
    pub brier_decomposition: Option<[BrierDecomposition; 3]>,
    /// The CORP reliability diagram and the CORP decompositions of the top-label Brier and log
    /// scores (PAV, no bins), at the slider's T, at T = 1 and at the fitted T. With
    /// [`TemperatureParts::corp`].
    pub corp: Option<[Corp; 3]>,
    /// Smooth ECE (no bins) at T = 1 and at the fitted T.
    pub smooth_at_one: SmoothEce,
    pub smooth_at_fitted: SmoothEce,
    /// The smooth reliability diagram at the slider's T: smooth ECE, curve and band (the band
    /// with [`TemperatureParts::band`]). With [`TemperatureParts::smooth`], and with the
    /// estimators on the network's own rows, whose table shows the smooth ECE.
    pub smooth: Option<SmoothDiagram>,
    /// Bootstrap intervals of ECE, smECE, NLL and Brier at the slider's T, at T = 1 and at the
    /// fitted T, each once a worker has computed it.
    pub intervals: [Option<MetricIntervals>; 3],
    /// The intervals to ask a worker for (none before every row has arrived).
    pub interval_requests: Vec<IntervalRequest>,
    /// Temperature scaling and its rivals on the evaluation half, independent of the slider,
    /// once a worker has computed them.
    pub rivals: Option<RivalsView>,
    /// The rivals to ask a worker for (none before every row has arrived).
    pub rivals_request: Option<RivalsRequest>,
}

/// What a temperature view computes beyond what the lab's first screen always shows (the
/// metrics at the three temperatures, the bins, the test of calibration and its verdict): each
/// part costs a share of a slider frame, so the page asks for one only while a block or a
/// figure that shows it is on screen (`page::render`), as it draws only the figures on screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemperatureParts {
    /// The smooth ECE at the slider's T (its search is the costliest part) and its curve.
    pub smooth: bool,
    /// The smooth curve's bootstrap band: a third of a whole view's arithmetic. Implies
    /// `smooth`.
    pub band: bool,
    /// The estimators table on its case's rows and the cumulative differences. On the
    /// network's own rows the table shows the smooth ECE, so this implies `smooth` there.
    pub estimators: bool,
    /// The cumulative differences alone, on the estimators' case's rows: the chart needs
    /// neither the table's estimators nor an edge case's smooth-ECE search.
    pub cumulative: bool,
    /// The CORP diagram and decompositions.
    pub corp: bool,
    /// Murphy's decomposition of the Brier score.
    pub brier: bool,
}

impl TemperatureParts {
    /// Every part, the smooth curve's band with `band`.
    pub const fn all(band: bool) -> Self {
        Self {
            smooth: true,
            band,
            estimators: true,
            cumulative: true,
            corp: true,
            brier: true,
        }
    }
}

/// The evaluation half at T = 1 and at the fitted T, for one choice of bins: their metrics,
/// and the confidences behind their smooth ECE and behind a slider resting on either T.
#[derive(Debug, Clone)]
pub(super) struct FixedReports {
    binning: (usize, Binning),
    at_one: calibration::Evaluation,
    at_fitted: calibration::Evaluation,
}

impl Lab {
    /// The temperature lab's `parts` at `temperature` with `bins` bins, the estimators table
    /// on the network's own logits: [`Lab::temperature_view_of_case`] with
    /// [`EstimatorCase::Network`].
    ///
    /// # Errors
    /// Those of [`Lab::temperature_view_of_case`].
    pub fn temperature_view(
        &mut self,
        temperature: f64,
        bins: usize,
        binning: Binning,
        parts: TemperatureParts,
    ) -> Result<TemperatureView, LabError> {
        self.temperature_view_of_case(temperature, bins, binning, parts, EstimatorCase::Network)
    }

    /// The temperature lab at `temperature` with `bins` bins: what its first screen shows and
    /// `parts`, the estimators table and the cumulative differences on the rows of `case`.
    ///
    /// # Errors
    /// [`LabError::TemperatureOutOfRange`] outside `[0.05, 20]`, [`LabError::NotReady`], and
    /// the bin-count error of the calibration module.
    pub fn temperature_view_of_case(
        &mut self,
        temperature: f64,
        bins: usize,
        binning: Binning,
        parts: TemperatureParts,
        case: EstimatorCase,
    ) -> Result<TemperatureView, LabError> {
        if !(calibration::MIN_TEMPERATURE..=calibration::MAX_TEMPERATURE).contains(&temperature) {
            return Err(LabError::TemperatureOutOfRange(temperature));
        }
        let k = self.num_classes;
        let seed = self.split_seed;
        let (rivals, rivals_request) = match self.rivals_at(bins, binning)? {
            Ok(view) => (Some(view), None),
            Err(request) => (None, request),
        };
        let cache = self.prepared()?;
        let logits = Logits::new(&cache.evaluation.logits, k)?;
        let labels = &cache.evaluation.labels;
        if cache
            .reports
            .as_ref()
            .is_none_or(|r| r.binning != (bins, binning))
        {
            let evaluate =
                |t: f64| calibration::evaluate_in_full(&logits, labels, t, bins, binning);
            cache.reports = Some(FixedReports {
                binning: (bins, binning),
                at_one: evaluate(1.0)?,
                at_fitted: evaluate(cache.fit.temperature)?,
            });
        }
        let reports = cache.reports.as_ref().ok_or(LabError::NotReady)?;
        let [smooth_at_one, smooth_at_fitted] = match cache.smooth_fixed {
            Some(fixed) => fixed,
            None => {
                // `evaluate_in_full`'s confidences are `calibration::confidences`', bit for bit:
                // the smECE `calibra report` computes.
                let smooth = |e: &calibration::Evaluation| {
                    smooth_calibration::smooth_ece(&e.confidence, &e.correct)
                };
                let fixed = [smooth(&reports.at_one)?, smooth(&reports.at_fitted)?];
                cache.smooth_fixed = Some(fixed);
                fixed
            }
        };
        // A slider resting on T = 1 or on the fitted T (where the page opens, and where the
        // fit button puts it) shows the evaluation already made there.
        // The softmax of each row is kept when the estimators' case shares most of its rows.
        let (at_slider, network_softmax) = if temperature == 1.0 {
            (reports.at_one.clone(), None)
        } else if temperature == cache.fit.temperature {
            (reports.at_fitted.clone(), None)
        } else if (parts.estimators || parts.cumulative) && case.keeps_most_rows() {
            let (evaluation, kept) =
                calibration::evaluate_in_full_keeping(&logits, labels, temperature, bins, binning)?;
            (evaluation, Some(kept))
        } else {
            let evaluation =
                calibration::evaluate_in_full(&logits, labels, temperature, bins, binning)?;
            (evaluation, None)
        };
        let brier_decomposition = parts
            .brier
            .then(|| [&at_slider, &reports.at_one, &reports.at_fitted].map(BrierDecomposition::of));
        let outcomes = cache
            .null_outcomes
            .get_or_insert_with(|| NullOutcomes::draw(labels.len(), NULL_DRAWS, seed));
        let calibration_test = calibration_null::test_evaluation(&at_slider, outcomes)?;
        let calibration::Evaluation {
            report: at_temperature,
            confidence: confidences,
            correct,
            classwise_bins,
            ..
        } = at_slider;
        let (at_one, at_fitted) = (
            reports.at_one.report.clone(),
            reports.at_fitted.report.clone(),
        );
        let network_estimators = parts.estimators && case == EstimatorCase::Network;
        let smooth = if parts.smooth || parts.band || network_estimators {
            let resamples = if parts.band {
                Some(match &mut cache.band_resamples {
                    Some(resamples) => &*resamples,
                    empty => empty.insert(Resamples::draw(labels.len(), &BOOTSTRAP)?),
                })
            } else {
                None
            };
            Some(bootstrap::smooth_diagram(
                &confidences,
                &correct,
                SMOOTH_CURVE_POINTS,
                resamples,
            )?)
        } else {
            None
        };
        let mean_confidence = confidences.iter().sum::<f64>() / confidences.len() as f64;
        let verdict =
            sentences::confidence_verdict(temperature, at_temperature.accuracy, &calibration_test);
        let case_inputs = CaseInputs {
            halves: (
                &cache.calibration.labels,
                &cache.evaluation.logits,
                &cache.evaluation.labels,
            ),
            classes: k,
            case,
            slider: (temperature, bins, binning),
            network: network_softmax.as_ref(),
        };
        let (estimator_case, cumulative) = match (&smooth, parts.estimators) {
            (_, false) if !parts.cumulative => (None, None),
            (_, false) if case == EstimatorCase::Network => (
                None,
                Some(CumulativeDifferences::new(&confidences, &correct)?),
            ),
            (_, false) => {
                let cumulative = case_cumulative(&mut cache.case_rows, &case_inputs)?;
                (None, Some(cumulative))
            }
            (Some(smooth), true) if case == EstimatorCase::Network => {
                let cumulative = CumulativeDifferences::new(&confidences, &correct)?;
                let estimators = calibration_estimators::estimators_of(
                    &confidences,
                    &correct,
                    cache
                        .predicted
                        .get_or_insert_with(|| calibration_estimators::predicted_classes(&logits)),
                    k,
                    bins,
                    binning,
                    &cumulative,
                )?;
                let view = EstimatorsView::of_network(
                    temperature,
                    &at_temperature,
                    smooth.ece.smece,
                    &estimators,
                    &confidences,
                    &correct,
                    bins,
                    binning,
                )?;
                (Some(view), Some(cumulative))
            }
            (_, true) => {
                let (view, cumulative) = case_view(&mut cache.case_rows, &case_inputs)?;
                (Some(view), Some(cumulative))
            }
        };
        let corp = if parts.corp {
            let [corp_at_one, corp_at_fitted] = match &cache.corp_fixed {
                Some(fixed) => fixed.clone(),
                None => {
                    let of = |e: &calibration::Evaluation| corp::corp(&e.confidence, &e.correct);
                    let fixed = [of(&reports.at_one)?, of(&reports.at_fitted)?];
                    cache.corp_fixed = Some(fixed.clone());
                    fixed
                }
            };
            Some([
                corp::corp(&confidences, &correct)?,
                corp_at_one,
                corp_at_fitted,
            ])
        } else {
            None
        };
        let mut view = TemperatureView {
            temperature,
            fitted_temperature: cache.fit.temperature,
            fitted_bound_hit: cache.fit.bound_hit.is_some(),
            n_calibration: cache.calibration.labels.len(),
            n_evaluation: labels.len(),
            confidence_counts: calibration::histogram_counts(&confidences, bins)?,
            mean_confidence,
            calibration_test,
            verdict,
            classwise_bins,
            cumulative,
            estimator_case,
            brier_decomposition,
            corp,
            at_one,
            at_fitted,
            at_temperature,
            smooth,
            smooth_at_one,
            smooth_at_fitted,
            rivals,
            rivals_request,
            intervals: [None; 3],
            interval_requests: Vec::new(),
        };
        for (slot, t) in [temperature, 1.0, view.fitted_temperature]
            .into_iter()
            .enumerate()
        {
            match self.intervals_at(t, bins, binning, EstimatorCase::Network)? {
                Ok(kept) => view.intervals[slot] = Some(kept),
                Err(Some(request)) if !view.interval_requests.contains(&request) => {
                    view.interval_requests.push(request);
                }
                Err(_) => {}
            }
        }
        if let Some(table) = &mut view.estimator_case {
            table.intervals = if case == EstimatorCase::Network {
                view.intervals[0]
            } else {
                match self.intervals_at(table.temperature, bins, binning, case)? {
                    Ok(kept) => Some(kept),
                    Err(request) => {
                        // The case's intervals before the other columns': they are what the
                        // reader just asked for.
                        view.interval_requests.extend(request);
                        view.interval_requests
                            .rotate_right(usize::from(request.is_some()));
                        None
                    }
                }
            };
        }
        Ok(view)
    }
}
