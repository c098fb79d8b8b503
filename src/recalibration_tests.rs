//! Unit tests of `recalibration.rs`: hand-computed step functions, PAV on a textbook example,
//! planted vector-scaling parameters recovered from seeded data, the temperature path equal to
//! `calibration::evaluate`, and scipy's and scikit-learn's values
//! (`scripts/rivals-reference.py`, fixture `tests/fixtures/rivals/expected.json`).

use super::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Values that are exact up to rounding.
const EXACT_TOLERANCE: f64 = 1e-12;
/// scipy's BFGS and our Newton fit stop at gradients of about 1e-12 and 1e-10: the fitted
/// parameters agree to this (the NLL is flat near its minimum) and the NLL to its square.
const PARAMETER_TOLERANCE: f64 = 1e-6;
const REFERENCE_METRIC_TOLERANCE: f64 = 1e-9;
/// scipy's bounded scalar search stops within 1e-10 of T on its own criterion.
const REFERENCE_TEMPERATURE_TOLERANCE: f64 = 1e-6;
/// Planted parameters recovered from 20,000 seeded rows: a few standard errors.
const RECOVERY_TOLERANCE: f64 = 0.06;

#[derive(serde::Deserialize)]
struct Fixture {
    num_classes: usize,
    calibration_logits: Vec<f32>,
    calibration_labels: Vec<u32>,
    evaluation_logits: Vec<f32>,
    evaluation_labels: Vec<u32>,
    vector: VectorReference,
    temperature: TemperatureReference,
    isotonic: IsotonicReference,
    histogram: HistogramReference,
}

#[derive(serde::Deserialize)]
struct VectorReference {
    scales: Vec<f64>,
    biases: Vec<f64>,
    nll: f64,
    evaluation: Metrics,
}

#[derive(serde::Deserialize)]
struct TemperatureReference {
    temperature: f64,
    evaluation: Metrics,
}

#[derive(serde::Deserialize)]
struct IsotonicReference {
    fitted_at_calibration: Vec<f64>,
    starts: Vec<f64>,
    values: Vec<f64>,
    evaluation: Metrics,
}

#[derive(serde::Deserialize)]
struct HistogramReference {
    values: Vec<f64>,
    evaluation: Metrics,
}

/// A method's metrics on the evaluation rows, as a reference script computes them.
#[derive(serde::Deserialize)]
pub(super) struct Metrics {
    accuracy: f64,
    nll: f64,
    brier: f64,
    ece: f64,
    distinct_confidences: usize,
}

fn fixture() -> Fixture {
    serde_json::from_str(include_str!("../tests/fixtures/rivals/expected.json"))
        .expect("the committed fixture parses")
}

pub(super) fn labelled<'a>(logits: &'a [f32], labels: &'a [u32], k: usize) -> Labelled<'a> {
    Labelled::new(Logits::new(logits, k).unwrap(), labels).unwrap()
}

pub(super) fn assert_close(actual: f64, expected: f64, tolerance: f64, what: &str) {
    assert!(
        (actual - expected).abs() <= tolerance,
        "{what}: {actual} vs {expected}, tolerance {tolerance}"
    );
}

fn assert_all_close(actual: &[f64], expected: &[f64], what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: lengths");
    for (&a, &e) in actual.iter().zip(expected) {
        assert_close(a, e, EXACT_TOLERANCE, what);
    }
}

pub(super) fn assert_metrics(report: &MethodReport, expected: &Metrics, what: &str) {
    assert_close(report.accuracy, expected.accuracy, EXACT_TOLERANCE, what);
    assert_close(report.nll, expected.nll, REFERENCE_METRIC_TOLERANCE, what);
    assert_close(
        report.brier,
        expected.brier,
        REFERENCE_METRIC_TOLERANCE,
        what,
    );
    assert_close(report.ece, expected.ece, REFERENCE_METRIC_TOLERANCE, what);
    assert_eq!(
        report.distinct_confidences, expected.distinct_confidences,
        "{what}: distinct confidences"
    );
}

#[test]
fn pav_matches_the_textbook_example() {
    // y = 1, 3, 2, 4, 3.5, 5 at x = 1..6: the violators (3, 2) and (4, 3.5) are pooled.
    let points = [1.0, 3.0, 2.0, 4.0, 3.5, 5.0]
        .iter()
        .enumerate()
        .map(|(i, &y)| (i as f64 + 1.0, 1.0, y))
        .collect();
    let fit = pool_adjacent_violators(points);
    assert_eq!(fit.starts, vec![1.0, 2.0, 4.0, 6.0]);
    assert_eq!(fit.values, vec![1.0, 2.5, 3.75, 5.0]);
    assert_eq!(fit.at(0.5), 1.0, "below the first block: its value");
    assert_eq!(fit.at(3.0), 2.5);
    assert_eq!(fit.at(5.9), 3.75, "between blocks: the lower block's value");
}

#[test]
fn isotonic_pools_equal_confidences_before_fitting() {
    // Confidences 0.5 (right), 0.6 (wrong), 0.6 (right): the ties average to 0.5, which
    // violates the 1 at 0.5, so everything pools to 2/3.
    let fit = fit_isotonic(&[0.5, 0.6, 0.6], &[true, false, true]).unwrap();
    assert_eq!(fit.starts, vec![0.5]);
    assert_close(fit.values[0], 2.0 / 3.0, EXACT_TOLERANCE, "pooled mean");
}

#[test]
fn histogram_binning_maps_each_equal_mass_bin_to_its_accuracy() {
    let confidence = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8];
    let correct = [false, true, false, true, true, true];
    let fit = fit_histogram_binning(&confidence, &correct, 3).unwrap();
    let cuts = [0.5 * (0.4 + 0.5), 0.5 * (0.6 + 0.7)];
    assert_eq!(fit.starts, vec![f64::NEG_INFINITY, cuts[0], cuts[1]]);
    assert_eq!(fit.values, vec![0.5, 0.5, 1.0]);
    assert_eq!(
        fit.at(cuts[1]),
        1.0,
        "a confidence on a cut goes to the upper bin"
    );
    assert_eq!(fit.at(0.99), 1.0);
}

#[test]
fn histogram_binning_merges_bins_emptied_by_ties() {
    // Four equal confidences: every cut is 0.7, so one bin holds all.
    let fit = fit_histogram_binning(&[0.7; 4], &[true, false, true, true], 4).unwrap();
    assert_eq!(fit.values, vec![0.75]);
    // Fewer confidences than bins: one bin per confidence.
    let fit = fit_histogram_binning(&[0.2, 0.9], &[false, true], 15).unwrap();
    assert_eq!(fit.values, vec![0.0, 1.0]);
}

#[test]
fn top_label_fitters_refuse_bad_input() {
    assert_eq!(
        fit_histogram_binning(&[0.5], &[true], 0),
        Err(CalibrationError::InvalidBinCount(0))
    );
    assert_eq!(fit_isotonic(&[], &[]), Err(CalibrationError::EmptyInput));
    assert!(matches!(
        fit_isotonic(&[0.5, f64::NAN], &[true, false]),
        Err(CalibrationError::InvalidConfidence { index: 1, .. })
    ));
}

#[test]
fn a_top_label_vector_gives_the_rest_in_proportion() {
    // Logits (ln 4, ln 2, ln 2): softmax (0.5, 0.25, 0.25). Recalibrated to 0.8, the others get
    // 0.1 each. Label 1: NLL = −ln 0.1, Brier = 0.8² + 0.9² + 0.1².
    let logits = [4f32.ln(), 2f32.ln(), 2f32.ln()];
    let data = labelled(&logits, &[1], 3);
    let map = StepFunction {
        starts: vec![f64::NEG_INFINITY],
        values: vec![0.8],
    };
    let predictions = Recalibration::TopLabel(map).predict(&data);
    assert_eq!(predictions.confidence, vec![0.8]);
    assert_eq!(predictions.correct, vec![false]);
    assert_close(predictions.nll, -(0.1f64.ln()), 1e-7, "NLL");
    assert_close(predictions.brier, 0.64 + 0.81 + 0.01, 1e-7, "Brier");
}

#[test]
fn a_sure_miss_costs_the_clipped_nll() {
    let logits = [3.0f32, 0.0];
    let data = labelled(&logits, &[1], 2);
    let sure = StepFunction {
        starts: vec![f64::NEG_INFINITY],
        values: vec![1.0],
    };
    let predictions = Recalibration::TopLabel(sure).predict(&data);
    assert_close(
        predictions.nll,
        -MIN_PROBABILITY.ln(),
        EXACT_TOLERANCE,
        "NLL",
    );
    assert_close(predictions.brier, 2.0, EXACT_TOLERANCE, "Brier");
}

/// Seeded logits `[n, K]` and labels drawn from `softmax(w ⊙ z + b)`.
fn planted(n: usize, scales: &[f64], biases: &[f64], seed: u64) -> (Vec<f32>, Vec<u32>) {
    let k = scales.len();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut logits = Vec::with_capacity(n * k);
    let mut labels = Vec::with_capacity(n);
    let mut log_p = vec![0.0; k];
    for _ in 0..n {
        let row: Vec<f32> = (0..k).map(|_| rng.random_range(-4.0..4.0)).collect();
        scaled_log_softmax(&row, scales, biases, &mut log_p);
        let mut draw: f64 = rng.random();
        let label = log_p
            .iter()
            .position(|lp| {
                draw -= lp.exp();
                draw < 0.0
            })
            .unwrap_or(k - 1);
        logits.extend(row);
        labels.push(label as u32);
    }
    (logits, labels)
}

#[test]
fn vector_scaling_recovers_planted_scales_and_biases() {
    let (scales, biases) = ([0.5, 1.0, 1.5, 2.5], [0.4, -0.1, -0.5, 0.2]);
    let (logits, labels) = planted(20_000, &scales, &biases, 11);
    let fit = fit_vector_scaling(&labelled(&logits, &labels, 4));
    assert!(fit.converged, "{fit:?}");
    for k in 0..4 {
        assert_close(fit.scales[k], scales[k], RECOVERY_TOLERANCE, "scale");
        assert_close(fit.biases[k], biases[k], RECOVERY_TOLERANCE, "bias");
    }
    assert_close(fit.biases.iter().sum(), 0.0, EXACT_TOLERANCE, "biases' sum");
}

#[test]
fn a_subsampled_hessian_stops_at_the_full_hessians_minimum() {
    // 6,000 rows, the Hessian over every row or over 300 of them: the gradient is exact either
    // way, so both stop at the same minimum, the subsample after more (linear) steps.
    let (scales, biases) = ([0.6, 1.3, 0.9, 2.0, 1.1], [0.3, -0.2, 0.0, 0.4, -0.5]);
    let (logits, labels) = planted(6_000, &scales, &biases, 5);
    let data = labelled(&logits, &labels, 5);
    let full = fit_vector_scaling_with(&data, usize::MAX);
    let subsampled = fit_vector_scaling_with(&data, 300);
    assert!(
        full.converged && subsampled.converged,
        "{full:?} {subsampled:?}"
    );
    assert!(subsampled.steps > full.steps, "{full:?} {subsampled:?}");
    for k in 0..5 {
        assert_close(
            subsampled.scales[k],
            full.scales[k],
            PARAMETER_TOLERANCE,
            "scale",
        );
        assert_close(
            subsampled.biases[k],
            full.biases[k],
            PARAMETER_TOLERANCE,
            "bias",
        );
    }
    assert_close(subsampled.nll, full.nll, EXACT_TOLERANCE, "NLL");
}

#[test]
fn hessian_rows_are_all_or_evenly_spaced() {
    assert_eq!(hessian_rows(5, 8).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    assert_eq!(hessian_rows(10, 4).collect::<Vec<_>>(), [0, 2, 5, 7]);
}

#[test]
fn vector_scaling_fits_no_worse_than_temperature_scaling() {
    let (logits, labels) = planted(2000, &[0.7; 3], &[0.0; 3], 3);
    let data = labelled(&logits, &labels, 3);
    let vector = fit_vector_scaling(&data);
    let temperature = fit_temperature(&data.logits, &labels).unwrap();
    assert!(vector.nll <= temperature.nll + EXACT_TOLERANCE);
    // Equal planted scales: the fit is a temperature, 1/0.7, within sampling noise.
    for &w in &vector.scales {
        assert_close(w, 0.7, RECOVERY_TOLERANCE, "scale");
    }
}

#[test]
fn the_temperature_path_equals_calibration_evaluate() {
    let (logits, labels) = planted(500, &[1.3, 0.6, 2.0], &[0.0; 3], 5);
    let data = labelled(&logits, &labels, 3);
    let report = report(
        Method::Temperature,
        &Recalibration::Temperature(1.7),
        &data,
        &data,
        15,
        Binning::Mass,
    )
    .unwrap();
    let expected = calibration::evaluate(&data.logits, &labels, 1.7, 15, Binning::Mass).unwrap();
    assert_eq!(report.accuracy, expected.accuracy);
    assert_eq!(report.bins, expected.bins);
    assert_close(report.ece, expected.ece, EXACT_TOLERANCE, "ECE");
    assert_close(report.nll, expected.nll, EXACT_TOLERANCE, "NLL");
    assert_close(report.brier, expected.brier, EXACT_TOLERANCE, "Brier");
    assert_eq!(report.changed_predictions, 0);
    assert_eq!(report.calibration_ece, report.ece, "the same part twice");
}

#[test]
fn histogram_binning_is_exactly_calibrated_on_its_own_part() {
    // Each bin maps to its own accuracy, so on the calibration part the images at each
    // recalibrated confidence are right exactly that often.
    let (logits, labels) = planted(600, &[2.0, 1.0, 0.5], &[0.0; 3], 9);
    let data = labelled(&logits, &labels, 3);
    let recalibration = fit(Method::Histogram, &data).unwrap();
    let predictions = recalibration.predict(&data);
    let mut levels = predictions.confidence.clone();
    levels.sort_unstable_by(f64::total_cmp);
    levels.dedup();
    assert!(levels.len() <= HISTOGRAM_BINNING_BINS);
    for level in levels {
        let outcomes: Vec<f64> = predictions
            .confidence
            .iter()
            .zip(&predictions.correct)
            .filter(|(&c, _)| c == level)
            .map(|(_, &right)| f64::from(right))
            .collect();
        let accuracy = outcomes.iter().sum::<f64>() / outcomes.len() as f64;
        assert_close(accuracy, level, EXACT_TOLERANCE, "a level's accuracy");
    }
    assert_eq!(predictions.changed_predictions, 0);
}

#[test]
fn the_fits_match_scipy_and_scikit_learn() {
    let f = fixture();
    let k = f.num_classes;
    let calibration = labelled(&f.calibration_logits, &f.calibration_labels, k);
    let evaluation = labelled(&f.evaluation_logits, &f.evaluation_labels, k);

    let vector = fit_vector_scaling(&calibration);
    assert!(vector.converged, "{vector:?}");
    for c in 0..k {
        assert_close(
            vector.scales[c],
            f.vector.scales[c],
            PARAMETER_TOLERANCE,
            "scale",
        );
        assert_close(
            vector.biases[c],
            f.vector.biases[c],
            PARAMETER_TOLERANCE,
            "bias",
        );
    }
    assert_close(vector.nll, f.vector.nll, REFERENCE_METRIC_TOLERANCE, "NLL");

    let (confidence, correct) =
        calibration::confidences(&calibration.logits, calibration.labels, 1.0).unwrap();
    let isotonic = fit_isotonic(&confidence, &correct).unwrap();
    for (&c, &expected) in confidence.iter().zip(&f.isotonic.fitted_at_calibration) {
        assert_close(isotonic.at(c), expected, EXACT_TOLERANCE, "isotonic fit");
    }
    // The confidences and numpy's means differ from ours by an ulp or so.
    assert_all_close(
        &isotonic.starts,
        &f.isotonic.starts,
        "isotonic block starts",
    );
    assert_all_close(
        &isotonic.values,
        &f.isotonic.values,
        "isotonic block values",
    );
    let histogram = fit_histogram_binning(&confidence, &correct, HISTOGRAM_BINNING_BINS).unwrap();
    assert_all_close(&histogram.values, &f.histogram.values, "histogram values");

    let measured =
        |method| fit_and_report(method, &calibration, &evaluation, 15, Binning::Width).unwrap();
    assert_metrics(&measured(Method::Vector), &f.vector.evaluation, "vector");
    assert_metrics(
        &measured(Method::Isotonic),
        &f.isotonic.evaluation,
        "isotonic",
    );
    assert_metrics(
        &measured(Method::Histogram),
        &f.histogram.evaluation,
        "histogram",
    );
    let temperature = fit_temperature(&calibration.logits, calibration.labels).unwrap();
    assert_close(
        temperature.temperature,
        f.temperature.temperature,
        REFERENCE_TEMPERATURE_TOLERANCE,
        "T",
    );
    let scaled = measured(Method::Temperature);
    assert_close(
        scaled.nll,
        f.temperature.evaluation.nll,
        REFERENCE_TEMPERATURE_TOLERANCE,
        "temperature NLL",
    );
    assert_eq!(scaled.accuracy, f.temperature.evaluation.accuracy);
}

#[test]
fn vector_scaling_on_separable_classes_stops_where_the_nll_vanishes() {
    // Every label is its row's largest logit: the NLL falls towards 0 as the scales grow, and
    // has no minimum; the fit stops once the NLL is at rounding level, with finite parameters.
    let logits = [1.0f32, 0.0, 0.0, 1.0, 2.0, -1.0, -3.0, 0.5];
    let fit = fit_vector_scaling(&labelled(&logits, &[0, 1, 0, 1], 2));
    assert!(fit.steps < MAX_NEWTON_STEPS, "{fit:?}");
    assert!(fit.nll < 1e-12, "{fit:?}");
    assert!(fit.scales.iter().chain(&fit.biases).all(|v| v.is_finite()));
}

/// Rows whose logit length varies tenfold (`z = s·N(0, 1)`, `s` from 1 to 10), each label drawn
/// from `softmax(z/(T·‖z‖))` with `T = 0.12`: an input-dependent temperature, as LogitNorm
/// trains with. Normalised temperature scaling recovers the planted T; one global temperature
/// cannot make these probabilities calibrated, so its NLL on the same rows is higher.
#[test]
fn normalized_temperature_scaling_recovers_a_planted_input_dependent_temperature() {
    let (k, n, planted) = (10, 20_000, 0.12);
    let mut rng = ChaCha8Rng::seed_from_u64(41);
    let (logits, labels) =
        crate::test_support::planted_rows(n, k, &mut rng, |length| planted * length);
    let data = Labelled::new(Logits::new(&logits, k).unwrap(), &labels).unwrap();
    let fitted = fit_normalized_temperature(&data).unwrap();
    assert!(
        (fitted / planted - 1.0).abs() < 0.03,
        "planted T = {planted}, fitted {fitted}"
    );
    let normalized = fit(Method::Normalized, &data).unwrap().predict(&data);
    let global = fit(Method::Temperature, &data).unwrap().predict(&data);
    assert!(
        normalized.nll < global.nll,
        "normalised NLL {} against one T's {}",
        normalized.nll,
        global.nll
    );
}

/// The bootstrap's estimates are the report's ECE and NLL, exactly, for the calibrators of the
/// LogitNorm lab's table.
#[test]
fn bootstrap_estimates_of_a_recalibration_are_its_reported_ece_and_nll() {
    let mut rng = ChaCha8Rng::seed_from_u64(43);
    let (logits, labels) =
        crate::test_support::planted_rows(4000, 10, &mut rng, |length| 0.2 * length);
    let (calibration, evaluation) = (
        labelled(&logits[..20_000], &labels[..2000], 10),
        labelled(&logits[20_000..], &labels[2000..], 10),
    );
    for method in [Method::Temperature, Method::Normalized] {
        let fitted = fit(method, &calibration).unwrap();
        let report = report(
            method,
            &fitted,
            &calibration,
            &evaluation,
            15,
            Binning::Width,
        )
        .unwrap();
        let settings = BootstrapSettings {
            resamples: 100,
            level: 0.95,
            seed: 0,
        };
        let intervals =
            bootstrap_ece_nll(&fitted, &evaluation, 15, Binning::Width, &settings).unwrap();
        assert_eq!(intervals.ece.estimate, report.ece, "{method:?}");
        assert_eq!(intervals.nll.estimate, report.nll, "{method:?}");
        assert!(intervals.nll.lower < report.nll && report.nll < intervals.nll.upper);
    }
}
