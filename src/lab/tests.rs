//! The lab against the library on the same halves, and its caches against recomputation.

use super::*;
use crate::calibration::Binning;
use crate::conformal::{SetMetrics, Thresholds};
use crate::smooth_calibration;
use crate::temperature_anatomy::FitMistake;
use conformal_view::SWEEP_STEPS;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Results computed two ways must agree to this tolerance (same f64 arithmetic, other order).
const TOLERANCE: f64 = 1e-12;
const K: usize = 4;

/// `n` rows of overconfident logits (scaled by 3) and labels drawn from the unscaled softmax.
fn synthetic(n: usize, seed: u64) -> (Vec<f32>, Vec<u32>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut logits = Vec::with_capacity(n * K);
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        let row: Vec<f64> = (0..K).map(|_| rng.random_range(-2.0..2.0)).collect();
        let total: f64 = row.iter().map(|z| z.exp()).sum();
        let mut u = rng.random_range(0.0..total);
        let label = row
            .iter()
            .position(|z| {
                u -= z.exp();
                u < 0.0
            })
            .unwrap_or(K - 1);
        logits.extend(row.iter().map(|z| (3.0 * z) as f32));
        labels.push(label as u32);
    }
    (logits, labels)
}

/// The temperature view at `temperature` with the rivals a worker computed for it.
fn view_with_rivals(
    lab: &mut Lab,
    temperature: f64,
    bins: usize,
    binning: Binning,
) -> TemperatureView {
    let view = lab
        .temperature_view(temperature, bins, binning, TemperatureParts::all(true))
        .unwrap();
    if let Some(request) = view.rivals_request {
        let answer = lab.worker_halves().unwrap().rivals(&request).unwrap();
        lab.add_rivals(request, answer);
    }
    lab.temperature_view(temperature, bins, binning, TemperatureParts::all(true))
        .unwrap()
}

fn full_lab(n: usize) -> (Lab, Vec<f32>, Vec<u32>) {
    let (logits, labels) = synthetic(n, 1);
    let mut lab = Lab::new(labels.clone(), K, 2).unwrap();
    lab.add_logits(0, 0, &logits).unwrap();
    (lab, logits, labels)
}

#[test]
fn not_ready_until_both_halves_have_rows() {
    let (logits, labels) = synthetic(10, 2);
    let mut lab = Lab::new(labels, K, 1).unwrap();
    assert_eq!(
        lab.temperature_view(1.0, 10, Binning::Width, TemperatureParts::all(true)),
        Err(LabError::NotReady)
    );
    lab.add_logits(0, 0, &logits).unwrap();
    assert!(lab
        .temperature_view(1.0, 10, Binning::Width, TemperatureParts::all(true))
        .is_ok());
}

#[test]
fn batches_in_any_order_equal_one_batch() {
    let (mut whole, logits, labels) = full_lab(1_000);
    let mut streamed = Lab::new(labels, K, 2).unwrap();
    for start in [750, 0, 500, 250] {
        streamed
            .add_logits(0, start, &logits[start * K..(start + 250) * K])
            .unwrap();
    }
    // A repeated batch does not count twice.
    streamed.add_logits(0, 0, &logits[..250 * K]).unwrap();
    assert_eq!(streamed.arrived(0), Ok(1_000));
    let a = whole
        .temperature_view(1.5, 15, Binning::Width, TemperatureParts::all(true))
        .unwrap();
    let b = streamed
        .temperature_view(1.5, 15, Binning::Width, TemperatureParts::all(true))
        .unwrap();
    assert_eq!(a, b);
}

#[test]
fn view_matches_the_library_on_the_gathered_halves() {
    let (mut lab, logits, labels) = full_lab(2_000);
    lab.set_split(9);
    let (calibration_rows, evaluation_rows) = data::seeded_split(2_000, 0.5, 9);
    let gather = |rows: &[usize]| {
        let l: Vec<f32> = rows
            .iter()
            .flat_map(|&r| logits[r * K..(r + 1) * K].to_vec())
            .collect();
        let y: Vec<u32> = rows.iter().map(|&r| labels[r]).collect();
        (l, y)
    };
    let (cal_logits, cal_labels) = gather(&calibration_rows);
    let (eval_logits, eval_labels) = gather(&evaluation_rows);
    let fit =
        calibration::fit_temperature(&Logits::new(&cal_logits, K).unwrap(), &cal_labels).unwrap();
    let view = lab
        .temperature_view(0.7, 12, Binning::Mass, TemperatureParts::all(true))
        .unwrap();
    assert_eq!(view.fitted_temperature, fit.temperature);
    // The planted T = 3 within 15% on 1,000 calibration rows, about 3 standard errors (see
    // `planted_temperature_is_recovered_within_two_percent` for the law and a 2% check).
    assert!(
        (view.fitted_temperature - 3.0).abs() < 0.45,
        "planted T = 3, got {}",
        view.fitted_temperature
    );
    assert_eq!((view.n_calibration, view.n_evaluation), (1_000, 1_000));
    let eval = Logits::new(&eval_logits, K).unwrap();
    let direct = |t| calibration::evaluate(&eval, &eval_labels, t, 12, Binning::Mass).unwrap();
    assert_eq!(view.at_temperature, direct(0.7));
    assert_eq!(view.at_one, direct(1.0));
    assert_eq!(view.at_fitted, direct(fit.temperature));
    assert_eq!(view.confidence_counts.iter().sum::<usize>(), 1_000);
    let (confidences, _) = calibration::confidences(&eval, &eval_labels, 0.7).unwrap();
    let mean = confidences.iter().sum::<f64>() / 1_000.0;
    assert!((view.mean_confidence - mean).abs() < TOLERANCE);
    assert_eq!(view.classwise_bins.len(), K);
    // Smooth ECE as `calibra report` computes it, at the three temperatures; the curve at the
    // slider's T and its bandwidth.
    let smooth = |t| {
        let (confidences, correct) = calibration::confidences(&eval, &eval_labels, t).unwrap();
        smooth_calibration::smooth_ece(&confidences, &correct).unwrap()
    };
    let diagram = view.smooth.as_ref().unwrap();
    assert_eq!(diagram.ece, smooth(0.7));
    assert_eq!(view.smooth_at_one, smooth(1.0));
    assert_eq!(view.smooth_at_fitted, smooth(fit.temperature));
    // The CORP diagram and decompositions as `calibra report` computes them, at the three
    // temperatures.
    let corp = |t| {
        let (confidences, correct) = calibration::confidences(&eval, &eval_labels, t).unwrap();
        crate::corp::corp(&confidences, &correct).unwrap()
    };
    assert_eq!(
        view.corp,
        Some([corp(0.7), corp(1.0), corp(fit.temperature)])
    );
    assert_eq!(diagram.curve.bandwidth, diagram.ece.bandwidth);
    assert_eq!(diagram.curve.confidence.len(), 201);
    assert_eq!(diagram.band.as_ref().unwrap().lower.len(), 201);
    // Without the band (the smooth diagram off screen) the view is the same but for it.
    let mut without = lab
        .temperature_view(0.7, 12, Binning::Mass, TemperatureParts::all(false))
        .unwrap();
    let without_diagram = without.smooth.as_mut().unwrap();
    assert_eq!(without_diagram.band, None);
    without_diagram.band.clone_from(&diagram.band);
    assert_eq!(without, view);
}

#[test]
fn each_part_left_out_is_none_and_changes_nothing_else() {
    let (mut lab, ..) = full_lab(2_000);
    let all = lab
        .temperature_view(0.7, 12, Binning::Mass, TemperatureParts::all(true))
        .unwrap();
    let none = TemperatureParts {
        smooth: false,
        band: false,
        estimators: false,
        cumulative: false,
        corp: false,
        brier: false,
    };
    let mut first_screen = lab.temperature_view(0.7, 12, Binning::Mass, none).unwrap();
    assert_eq!(first_screen.smooth, None);
    assert_eq!(first_screen.estimator_case, None);
    assert_eq!(first_screen.cumulative, None);
    assert_eq!(first_screen.corp, None);
    assert_eq!(first_screen.brier_decomposition, None);
    // The parts a frame leaves out are the only difference from the whole view: the metrics,
    // the test of calibration and its verdict are the same numbers.
    first_screen.smooth.clone_from(&all.smooth);
    first_screen.estimator_case.clone_from(&all.estimator_case);
    first_screen.cumulative.clone_from(&all.cumulative);
    first_screen.corp.clone_from(&all.corp);
    first_screen.brier_decomposition = all.brier_decomposition;
    assert_eq!(first_screen, all);
    // Each part alone; the estimators on the network's rows bring the smooth ECE they show,
    // and the table brings the cumulative differences it reads.
    for (parts, has) in [
        (
            TemperatureParts {
                smooth: true,
                ..none
            },
            [true, false, false, false, false],
        ),
        (
            TemperatureParts {
                estimators: true,
                ..none
            },
            [true, true, true, false, false],
        ),
        (
            TemperatureParts {
                cumulative: true,
                ..none
            },
            [false, false, true, false, false],
        ),
        (
            TemperatureParts { corp: true, ..none },
            [false, false, false, true, false],
        ),
        (
            TemperatureParts {
                brier: true,
                ..none
            },
            [false, false, false, false, true],
        ),
    ] {
        let view = lab.temperature_view(0.7, 12, Binning::Mass, parts).unwrap();
        let got = [
            view.smooth.is_some(),
            view.estimator_case.is_some(),
            view.cumulative.is_some(),
            view.corp.is_some(),
            view.brier_decomposition.is_some(),
        ];
        assert_eq!(got, has, "{parts:?}");
        assert_eq!(
            view.smooth.as_ref().map(|s| s.ece),
            all.smooth.as_ref().filter(|_| has[0]).map(|s| s.ece)
        );
        assert_eq!(
            view.cumulative.as_ref(),
            all.cumulative.as_ref().filter(|_| has[2])
        );
    }
}

#[test]
fn temperature_moves_confidence_not_accuracy() {
    let (mut lab, _, _) = full_lab(2_000);
    let cold = lab
        .temperature_view(0.5, 15, Binning::Width, TemperatureParts::all(true))
        .unwrap();
    let hot = lab
        .temperature_view(5.0, 15, Binning::Width, TemperatureParts::all(true))
        .unwrap();
    assert_eq!(cold.at_temperature.accuracy, hot.at_temperature.accuracy);
    assert!(cold.mean_confidence > hot.mean_confidence);
    assert_ne!(cold.at_temperature.ece, hot.at_temperature.ece);
}

#[test]
fn rivals_agree_with_the_metrics_table_and_ignore_the_slider() {
    use crate::recalibration::Method;
    let (mut lab, _, _) = full_lab(2_000);
    let mass_request = lab
        .temperature_view(0.5, 12, Binning::Mass, TemperatureParts::all(true))
        .unwrap()
        .rivals_request
        .unwrap();
    let cold = view_with_rivals(&mut lab, 0.5, 12, Binning::Mass);
    let hot = lab
        .temperature_view(5.0, 12, Binning::Mass, TemperatureParts::all(true))
        .unwrap();
    assert_eq!(cold.rivals, hot.rivals, "the slider moves no rival");
    assert_eq!(hot.rivals_request, None);
    let rivals = cold.rivals.as_ref().unwrap();
    let methods: Vec<Method> = rivals.reports.iter().map(|r| r.method).collect();
    assert_eq!(methods, Method::ALL);
    for (method, column) in [
        (Method::Uncalibrated, &cold.at_one),
        (Method::Temperature, &cold.at_fitted),
    ] {
        let report = rivals.reports.iter().find(|r| r.method == method).unwrap();
        assert_eq!(report.accuracy, column.accuracy);
        assert_eq!(report.bins, column.bins);
        assert!((report.ece - column.ece).abs() <= TOLERANCE);
        assert!((report.nll - column.nll).abs() <= TOLERANCE);
        assert!((report.brier - column.brier).abs() <= TOLERANCE);
    }
    assert_eq!(rivals.reports[1].smece, cold.smooth_at_fitted.smece);
    // The differences the sentences state: the estimates are the reports' differences, and
    // the paired intervals hold them.
    let report = |method| rivals.reports.iter().find(|r| r.method == method).unwrap();
    let differences = &rivals.differences;
    for (difference, first, second) in [
        (
            &differences.histogram_against_temperature,
            Method::Histogram,
            Method::Temperature,
        ),
        (
            &differences.isotonic_against_temperature,
            Method::Isotonic,
            Method::Temperature,
        ),
        (
            &differences.venn_abers_against_isotonic,
            Method::VennAbers,
            Method::Isotonic,
        ),
    ] {
        let (first, second) = (report(first), report(second));
        for (interval, ours, theirs) in [
            (&difference.ece, first.ece, second.ece),
            (&difference.nll, first.nll, second.nll),
        ] {
            assert!((interval.estimate - (ours - theirs)).abs() <= TOLERANCE);
            assert!(interval.lower <= interval.estimate && interval.estimate <= interval.upper);
        }
    }
    // Other bins: a new request, answered by the same worker without fitting again, equal to
    // a fresh worker's answer.
    let pending = lab
        .temperature_view(1.0, 15, Binning::Width, TemperatureParts::all(true))
        .unwrap();
    assert_eq!(pending.rivals, None);
    let request = pending.rivals_request.unwrap();
    assert_eq!((request.bins, request.binning), (15, Binning::Width));
    let mut worker = lab.worker_halves().unwrap();
    worker.rivals(&mass_request).unwrap();
    let kept_fits = worker.rivals(&request).unwrap();
    assert_eq!(
        kept_fits,
        lab.worker_halves().unwrap().rivals(&request).unwrap()
    );
    assert_ne!(kept_fits.reports, rivals.reports, "bins reach the rivals");
    assert!(rivals.accuracy_sentence.contains("keep every prediction"));
}

#[test]
fn rivals_are_asked_for_once_every_row_is_in_and_kept_for_their_network_and_split() {
    let (logits, labels) = synthetic(400, 5);
    let mut lab = Lab::new(labels, K, 2).unwrap();
    lab.add_logits(0, 0, &logits[..200 * K]).unwrap();
    let view = lab
        .temperature_view(1.0, 10, Binning::Width, TemperatureParts::all(true))
        .unwrap();
    assert_eq!((view.rivals, view.rivals_request), (None, None));
    lab.add_logits(0, 200, &logits[200 * K..]).unwrap();
    let view = lab
        .temperature_view(1.0, 10, Binning::Width, TemperatureParts::all(true))
        .unwrap();
    let request = view.rivals_request.unwrap();
    assert_eq!(
        (request.model, request.split, request.temperature),
        (0, 0, view.fitted_temperature)
    );
    let answer = lab.worker_halves().unwrap().rivals(&request).unwrap();
    for stale in [
        RivalsRequest {
            model: 1,
            ..request
        },
        RivalsRequest {
            split: 9,
            ..request
        },
    ] {
        lab.add_rivals(stale, answer.clone());
        let view = lab
            .temperature_view(1.0, 10, Binning::Width, TemperatureParts::all(true))
            .unwrap();
        assert_eq!(view.rivals, None, "{stale:?} is dropped");
    }
    lab.add_rivals(request, answer.clone());
    let view = lab
        .temperature_view(1.0, 10, Binning::Width, TemperatureParts::all(true))
        .unwrap();
    assert_eq!(view.rivals, Some(answer));
    lab.set_split(1);
    let view = lab
        .temperature_view(1.0, 10, Binning::Width, TemperatureParts::all(true))
        .unwrap();
    assert_eq!(view.rivals, None, "a new split asks again");
    assert_eq!(view.rivals_request.map(|r| r.split), Some(1));
}

#[test]
fn split_and_model_changes_are_seen() {
    let (mut lab, logits, _) = full_lab(2_000);
    let first = lab
        .temperature_view(1.0, 15, Binning::Width, TemperatureParts::all(true))
        .unwrap();
    lab.set_split(1);
    let resplit = lab
        .temperature_view(1.0, 15, Binning::Width, TemperatureParts::all(true))
        .unwrap();
    // Another 1,000 calibration rows: another fit, but within sampling error of the first. The
    // fitted T has a relative standard error of about 4.6% here (see the test below); two splits
    // that share half their rows differ by about 4.6% too, so 15% is about 3 of those.
    assert_ne!(first.fitted_temperature, resplit.fitted_temperature);
    let change = (first.fitted_temperature / resplit.fitted_temperature - 1.0).abs();
    assert!(change < 0.15, "a new split moved T by {change}");
    // The second model has the same logits divided by 3: a fitted T about 3 times smaller.
    let cooler: Vec<f32> = logits.iter().map(|z| z / 3.0).collect();
    lab.add_logits(1, 0, &cooler).unwrap();
    lab.select_model(1).unwrap();
    let second = lab
        .temperature_view(1.0, 15, Binning::Width, TemperatureParts::all(true))
        .unwrap();
    let ratio = resplit.fitted_temperature / second.fitted_temperature;
    assert!((ratio - 3.0).abs() < 1e-4, "ratio {ratio}");
}

#[test]
fn bad_requests_are_refused_with_reasons() {
    let (mut lab, logits, _) = full_lab(100);
    assert_eq!(
        lab.select_model(2),
        Err(LabError::UnknownModel { index: 2, count: 2 })
    );
    assert!(matches!(
        lab.add_logits(0, 99, &logits[..2 * K]),
        Err(LabError::BatchOutOfRange { .. })
    ));
    assert!(matches!(
        lab.add_logits(0, 0, &logits[..K + 1]),
        Err(LabError::BatchOutOfRange { .. })
    ));
    let nan = [f32::NAN; K];
    assert!(matches!(
        lab.add_logits(0, 0, &nan),
        Err(LabError::Calibration(_))
    ));
    assert_eq!(
        lab.temperature_view(25.0, 15, Binning::Width, TemperatureParts::all(true)),
        Err(LabError::TemperatureOutOfRange(25.0))
    );
    assert!(matches!(
        lab.temperature_view(1.0, 0, Binning::Width, TemperatureParts::all(true)),
        Err(LabError::Calibration(_))
    ));
    assert_eq!(
        Lab::new(vec![0, 5], K, 1).unwrap_err(),
        LabError::LabelOutOfRange {
            row: 1,
            label: 5,
            num_classes: K
        }
    );
    assert_eq!(Lab::new(vec![0], K, 1).unwrap_err(), LabError::TooSmall);
}

fn settings(score: ScoreKind) -> ConformalSettings {
    ConformalSettings {
        temperature: 1.5,
        alpha: 0.1,
        score,
        randomized: true,
        raps_lambda: conformal::DEFAULT_RAPS_LAMBDA,
        raps_k_reg: conformal::DEFAULT_RAPS_K_REG,
        saps_lambda: conformal::DEFAULT_SAPS_LAMBDA,
        class_conditional: false,
    }
}

/// The conformal pipeline computed directly with the conformal module on the same halves.
fn direct_metrics(
    logits: &[f32],
    labels: &[u32],
    seed: u64,
    settings: &ConformalSettings,
) -> (Vec<f64>, SetMetrics) {
    let (calibration_rows, evaluation_rows) = data::seeded_split(labels.len(), 0.5, seed);
    let draws = conformal::uniforms(labels.len(), seed);
    let part = |rows: &[usize]| {
        let l: Vec<f32> = rows
            .iter()
            .flat_map(|&r| logits[r * K..(r + 1) * K].to_vec())
            .collect();
        let p = calibration::softmax(&Logits::new(&l, K).unwrap(), settings.temperature).unwrap();
        let y: Vec<u32> = rows.iter().map(|&r| labels[r]).collect();
        let u: Vec<f64> = rows.iter().map(|&r| draws[r]).collect();
        (p, y, u)
    };
    let (cal_p, cal_y, cal_u) = part(&calibration_rows);
    let (eval_p, eval_y, eval_u) = part(&evaluation_rows);
    let score = settings.score_of(settings.score);
    let scores = conformal::true_label_scores(&cal_p, &cal_y, K, &score, &cal_u).unwrap();
    let thresholds = if settings.class_conditional {
        Thresholds::ClassConditional(
            conformal::class_conditional_thresholds(&scores, &cal_y, K, settings.alpha).unwrap(),
        )
    } else {
        Thresholds::Marginal(conformal::conformal_threshold(&scores, settings.alpha).unwrap())
    };
    let sets = conformal::prediction_sets(&eval_p, K, &score, &eval_u, &thresholds).unwrap();
    (
        thresholds.values(),
        conformal::set_metrics(&sets, &eval_y, settings.alpha).unwrap(),
    )
}

#[test]
fn conformal_view_matches_the_conformal_module() {
    let (mut lab, logits, labels) = full_lab(3_000);
    lab.set_split(4);
    for kind in [
        ScoreKind::Lac,
        ScoreKind::Aps,
        ScoreKind::Raps,
        ScoreKind::Saps,
    ] {
        for class_conditional in [false, true] {
            let settings = ConformalSettings {
                class_conditional,
                ..settings(kind)
            };
            let view = lab.conformal_view(&settings, ConformalParts::ALL).unwrap();
            let (qhat, metrics) = direct_metrics(&logits, &labels, 4, &settings);
            assert_eq!(view.qhat, qhat, "{kind:?}");
            assert_eq!(view.metrics, metrics, "{kind:?}");
            let comparison = view.comparison.as_ref().unwrap();
            let row = comparison.iter().find(|c| c.score == kind).unwrap();
            assert_eq!(
                (row.coverage, row.average_set_size),
                (metrics.coverage, metrics.average_set_size)
            );
            assert_eq!(view.size_counts.iter().sum::<usize>(), 1_500);
            assert_eq!(view.qhat.len(), if class_conditional { K } else { 1 });
        }
    }
}

#[test]
fn a_kept_conformal_view_is_the_one_computed_anew_for_its_settings() {
    let (mut lab, _, _) = full_lab(3_000);
    let (first, second) = (settings(ScoreKind::Aps), settings(ScoreKind::Lac));
    let before = lab.conformal_view(&first, ConformalParts::ALL).unwrap();
    lab.conformal_view(&second, ConformalParts::ALL).unwrap();
    let first_screen = ConformalParts {
        comparison: false,
        methods: false,
    };
    let fewer = lab.conformal_view(&first, first_screen).unwrap();
    assert_eq!(fewer.comparison, None, "other parts are another view");
    assert_eq!(
        lab.conformal_view(&first, ConformalParts::ALL).unwrap(),
        before
    );
    let (mut fresh, _, _) = full_lab(3_000);
    assert_eq!(
        fresh.conformal_view(&first, ConformalParts::ALL).unwrap(),
        before
    );
    // A new split is new data: its view is computed on it.
    lab.set_split(9);
    fresh.set_split(9);
    assert_eq!(
        lab.conformal_view(&first, ConformalParts::ALL).unwrap(),
        fresh.conformal_view(&first, ConformalParts::ALL).unwrap()
    );
    assert_ne!(
        lab.conformal_view(&first, ConformalParts::ALL).unwrap(),
        before
    );
}

#[test]
fn the_conformal_parts_left_out_are_none_and_change_nothing_else() {
    let (mut lab, _, _) = full_lab(3_000);
    let all = lab
        .conformal_view(&settings(ScoreKind::Raps), ConformalParts::ALL)
        .unwrap();
    let none = ConformalParts {
        comparison: false,
        methods: false,
    };
    let mut first_screen = lab
        .conformal_view(&settings(ScoreKind::Raps), none)
        .unwrap();
    assert_eq!(first_screen.comparison, None);
    assert_eq!(first_screen.threshold_methods, None);
    first_screen.comparison.clone_from(&all.comparison);
    first_screen
        .threshold_methods
        .clone_from(&all.threshold_methods);
    assert_eq!(first_screen, all);
    // The sweep kept from another α is the one computed at this α.
    let (mut moved, _, _) = full_lab(3_000);
    let elsewhere = ConformalSettings {
        alpha: 0.2,
        ..settings(ScoreKind::Raps)
    };
    moved.conformal_view(&elsewhere, none).unwrap();
    let back = moved
        .conformal_view(&settings(ScoreKind::Raps), none)
        .unwrap();
    assert_eq!(back.sweep, all.sweep);
    assert_eq!(back.sweep.len(), SWEEP_STEPS);
}

#[test]
fn moving_alpha_or_temperature_changes_the_sets() {
    let (mut lab, _, _) = full_lab(3_000);
    let base = lab
        .conformal_view(&settings(ScoreKind::Aps), ConformalParts::ALL)
        .unwrap();
    let wider = lab
        .conformal_view(
            &ConformalSettings {
                alpha: 0.05,
                ..settings(ScoreKind::Aps)
            },
            ConformalParts::ALL,
        )
        .unwrap();
    assert!(wider.metrics.average_set_size > base.metrics.average_set_size);
    let hotter = lab
        .conformal_view(
            &ConformalSettings {
                temperature: 4.0,
                ..settings(ScoreKind::Aps)
            },
            ConformalParts::ALL,
        )
        .unwrap();
    assert_ne!(hotter.qhat, base.qhat);
    // The sweep's point at the current α is the view's own marginal result.
    let point = base
        .sweep
        .iter()
        .find(|p| (p.alpha - 0.1).abs() < 1e-12)
        .unwrap();
    assert_eq!(
        (point.qhat, point.coverage),
        (base.qhat[0], base.metrics.coverage)
    );
    assert_eq!(base.sweep.len(), SWEEP_STEPS);
}

#[test]
fn coverage_experiment_centres_on_the_beta_law() {
    let (mut lab, _, _) = full_lab(4_000);
    let experiment = lab
        .coverage_experiment(&settings(ScoreKind::Aps), 0.1, 0.1, 400, 11)
        .unwrap();
    assert_eq!(experiment.coverages.len(), 400);
    let summary = &experiment.summary;
    assert_eq!(summary.k, conformal::quantile_rank(2_000, 0.1).unwrap());
    // The mean of 400 draws lies within 4 standard errors of the Beta-Binomial mean.
    let standard_error = summary.finite_standard_deviation / 20.0;
    assert!((summary.mean - summary.beta_mean).abs() < 4.0 * standard_error);
    assert!(summary.standard_deviation > summary.beta_standard_deviation);
    let again = lab
        .coverage_experiment(&settings(ScoreKind::Aps), 0.1, 0.1, 400, 11)
        .unwrap();
    assert_eq!(again.coverages, experiment.coverages);
}

#[test]
fn gallery_filters_and_explanations_agree_with_the_sets() {
    let (mut lab, _, _) = full_lab(3_000);
    let lac = ConformalSettings {
        alpha: 0.2,
        ..settings(ScoreKind::Lac)
    };
    let view = lab.conformal_view(&lac, ConformalParts::ALL).unwrap();
    let all = lab.gallery(&lac, GalleryFilter::All, usize::MAX).unwrap();
    assert_eq!(all.len(), 1_500);
    let misses = lab
        .gallery(&lac, GalleryFilter::Misses, usize::MAX)
        .unwrap();
    assert!(misses
        .iter()
        .all(|item| !item.covered && !item.set.contains(&item.label)));
    let covered = all.iter().filter(|item| item.covered).count() as f64 / 1_500.0;
    assert_eq!(covered, view.metrics.coverage);
    let empty = lab.gallery(&lac, GalleryFilter::Empty, usize::MAX).unwrap();
    assert_eq!(empty.len(), view.size_counts[0]);
    let large = lab.gallery(&lac, GalleryFilter::Large, 5).unwrap();
    assert!(large.len() <= 5 && large.iter().all(|item| item.set.len() >= 3));
    for item in all.iter().take(50) {
        let explanation = lab.explain(&lac, item.row).unwrap();
        let set: Vec<u32> = (0..K as u32)
            .filter(|&y| explanation.in_set[y as usize])
            .collect();
        assert_eq!(set, item.set);
        assert!(!explanation.calibration);
        assert!((explanation.probabilities.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }
    let (most, least) = lab.conformity_extremes(&lac, 4).unwrap();
    assert!(most[0].true_label_score <= least[0].true_label_score);
    assert!(lab.explain(&lac, most[0].row).unwrap().calibration);
    assert_eq!(lab.explain(&lac, 3_000), Err(LabError::UnknownImage(3_000)));
    let bad_alpha = ConformalSettings { alpha: 0.0, ..lac };
    assert!(matches!(
        lab.conformal_view(&bad_alpha, ConformalParts::ALL),
        Err(LabError::Conformal(_))
    ));
}

#[test]
fn planted_temperature_is_recovered_within_two_percent() {
    // The NLL's curvature in 1/T is n · mean Var_p[z], so the fitted 1/T (and T) has a relative
    // standard error of about 1/sqrt(n · v), with v ≈ 0.465 the mean variance of the unscaled
    // logits U(−2, 2)⁴ under their own softmax (a Monte Carlo estimate over 200,000 rows). With
    // 40,000 calibration rows that is 0.73%, so 2% is about 2.7 standard errors.
    let (logits, labels) = synthetic(80_000, 7);
    let mut lab = Lab::new(labels, K, 1).unwrap();
    lab.add_logits(0, 0, &logits).unwrap();
    let fitted = lab.fitted_temperature().unwrap().temperature;
    assert!(
        (fitted / 3.0 - 1.0).abs() < 0.02,
        "planted T = 3, got {fitted}"
    );
}

#[test]
fn intervals_are_asked_for_once_every_row_is_in_and_kept_for_their_state() {
    let (logits, labels) = synthetic(400, 5);
    let mut lab = Lab::new(labels, K, 2).unwrap();
    // Half the rows: the metrics are provisional, so no interval is asked for.
    lab.add_logits(0, 0, &logits[..200 * K]).unwrap();
    let view = lab
        .temperature_view(0.7, 10, Binning::Width, TemperatureParts::all(true))
        .unwrap();
    assert!(view.interval_requests.is_empty());
    assert!(lab.complete_halves().is_err());
    lab.add_logits(0, 200, &logits[200 * K..]).unwrap();
    let view = lab
        .temperature_view(0.7, 10, Binning::Width, TemperatureParts::all(true))
        .unwrap();
    let temperatures: Vec<f64> = view
        .interval_requests
        .iter()
        .map(|r| r.temperature)
        .collect();
    assert_eq!(temperatures, [0.7, 1.0, view.fitted_temperature]);
    assert_eq!(view.intervals, [None; 3]);
    // The worker's answer for the slider's T, computed from the evaluation half as the worker
    // gets it, is shown at that T only.
    let request = view.interval_requests[0];
    let answer = lab.worker_halves().unwrap().intervals(&request).unwrap();
    let (half_logits, half_labels) = {
        let (_, evaluation) = lab.complete_halves().unwrap();
        (evaluation.logits.clone(), evaluation.labels.clone())
    };
    let direct = crate::bootstrap::bootstrap_intervals(
        &Logits::new(&half_logits, K).unwrap(),
        &half_labels,
        0.7,
        10,
        Binning::Width,
        &BOOTSTRAP,
    )
    .unwrap();
    assert_eq!(answer, direct);
    assert_eq!(answer.ece.estimate, view.at_temperature.ece);
    // The estimators table's errors are their intervals' estimates.
    let estimators = &view.estimator_case.as_ref().unwrap().estimators;
    assert_eq!(answer.ece_debiased.estimate, estimators.ece_debiased);
    assert_eq!(answer.top_label_ece.estimate, estimators.top_label_ece);
    assert_eq!(answer.ks_error.estimate, estimators.ks_error);
    lab.add_intervals(request, answer);
    let view = lab
        .temperature_view(0.7, 10, Binning::Width, TemperatureParts::all(true))
        .unwrap();
    assert_eq!(view.intervals[0], Some(answer));
    assert_eq!(view.interval_requests.len(), 2);
    let view = lab
        .temperature_view(0.8, 10, Binning::Width, TemperatureParts::all(true))
        .unwrap();
    assert_eq!(view.intervals[0], None);
    // An answer for another network or split is dropped.
    for stale in [
        IntervalRequest {
            model: 1,
            ..request
        },
        IntervalRequest {
            split: 9,
            ..request
        },
    ] {
        lab.add_intervals(stale, answer);
    }
    let view = lab
        .temperature_view(0.7, 10, Binning::Width, TemperatureParts::all(true))
        .unwrap();
    assert_eq!(view.intervals[0], Some(answer));
    lab.set_split(9);
    let view = lab
        .temperature_view(0.7, 10, Binning::Width, TemperatureParts::all(true))
        .unwrap();
    assert_eq!(view.intervals[0], None);
}

#[test]
fn a_test_images_logits_given_as_a_readers_image_get_its_explained_set() {
    // Without randomization the set depends on the logits and thresholds alone, so a test
    // image's logits given as a new image get the set the lab explains for that image, under
    // the active model and under one that is not (selected afterwards for the check).
    let (mut lab, logits, _) = full_lab(2_000);
    let (second, _) = synthetic(2_000, 7);
    lab.add_logits(1, 0, &second).unwrap();
    for score in ScoreKind::ALL {
        for class_conditional in [false, true] {
            let chosen = ConformalSettings {
                randomized: false,
                class_conditional,
                ..settings(score)
            };
            for (model, values) in [(0, &logits), (1, &second)] {
                lab.select_model(1 - model).unwrap();
                let sets: Vec<OwnImageSet> = (0..40)
                    .map(|row| {
                        lab.own_image_set(model, &chosen, &values[row * K..(row + 1) * K])
                            .unwrap()
                    })
                    .collect();
                lab.select_model(model).unwrap();
                for (row, set) in sets.iter().enumerate() {
                    let explanation = lab.explain(&chosen, row).unwrap();
                    let expected: Vec<usize> = (0..K).filter(|&y| explanation.in_set[y]).collect();
                    assert_eq!(set.labels, expected, "{score:?} model {model} row {row}");
                    assert_eq!(set.thresholds, explanation.thresholds);
                    assert_eq!(set.scores, explanation.scores);
                }
            }
        }
    }
    // The randomized scores draw the (n + 1)-th uniform of the split's stream.
    let randomized = settings(ScoreKind::Aps);
    let set = lab.own_image_set(0, &randomized, &logits[..K]).unwrap();
    assert_eq!(set.uniform, conformal::uniforms(2_001, 0)[2_000]);
    assert!(matches!(
        lab.own_image_set(0, &randomized, &logits[..K - 1]),
        Err(LabError::Calibration(_))
    ));
    assert_eq!(
        lab.own_image_set(5, &randomized, &logits[..K]),
        Err(LabError::UnknownModel { index: 5, count: 2 })
    );
}

/// On a planted network (logits 3·z, labels drawn from softmax(z): the true temperature is 3),
/// the anatomy shows what each mistake does by construction: the evaluation half's own fit
/// can only flatter it, dividing probabilities lands far below 1 and costs NLL, and the fit
/// removes reliability while resolution stays; the curves wait for every row.
#[test]
fn the_anatomy_of_a_planted_network_shows_what_each_mistake_does() {
    let (logits, labels) = synthetic(4000, 3);
    let mut lab = Lab::new(labels, K, 1).unwrap();
    lab.add_logits(0, 0, &logits[..3000 * K]).unwrap();
    assert_eq!(
        lab.anatomy_view(1.0, 15, Binning::Width, &MISTAKES)
            .unwrap(),
        Err(None),
        "not asked for before every row is in"
    );
    lab.add_logits(0, 3000, &logits[3000 * K..]).unwrap();
    let Err(Some(request)) = lab
        .anatomy_view(0.7, 15, Binning::Width, &MISTAKES)
        .unwrap()
    else {
        panic!("the curves are asked of a worker once every row is in")
    };
    let curves = lab.worker_halves().unwrap().anatomy(&request).unwrap();
    lab.add_anatomy(request, curves);
    let view = lab
        .anatomy_view(0.7, 15, Binning::Width, &MISTAKES)
        .unwrap()
        .unwrap();
    assert_eq!(view.temperature, 0.7);
    let fitted = view.anatomy.fitted.temperature;
    assert!((fitted - 3.0).abs() < 0.3, "fitted {fitted}");
    // The calibration half's NLL is least within a grid step of the exact fit.
    let step = (calibration::MAX_TEMPERATURE / calibration::MIN_TEMPERATURE).ln() / 120.0;
    let [nll_calibration, _] = view.minima[0];
    assert!((nll_calibration.temperature / fitted).ln().abs() <= step);

    let honest = lab
        .temperature_view(fitted, 15, Binning::Width, TemperatureParts::all(false))
        .unwrap()
        .at_fitted;
    let [(on_evaluation, flattered), (on_probabilities, broken), (by_ece, noisy)] =
        <[_; 3]>::try_from(view.mistakes.clone()).unwrap();
    assert_eq!(on_evaluation.mistake, FitMistake::EvaluationHalf);
    assert!(on_evaluation.evaluation.nll <= honest.nll + TOLERANCE);
    assert!(flattered.contains("flatter"), "{flattered}");
    assert!(on_probabilities.temperature < 1.0 && on_probabilities.evaluation.nll > honest.nll);
    assert!(broken.contains("cannot undo"), "{broken}");
    assert_eq!(by_ece.mistake, FitMistake::MinimiseEce);
    assert!(noisy.contains("with 15 bins"), "{noisy}");

    // Only the mistakes switched on are shown.
    let one = lab
        .anatomy_view(0.7, 15, Binning::Width, &[FitMistake::Probabilities])
        .unwrap()
        .unwrap();
    assert_eq!(one.mistakes.len(), 1);
    assert_eq!(one.mistakes[0].0, on_probabilities);

    // Temperature scaling takes most of the reliability term away and leaves resolution.
    let at_one = lab
        .temperature_view(1.0, 15, Binning::Width, TemperatureParts::all(false))
        .unwrap();
    let [_, one_terms, fitted_terms] = at_one.brier_decomposition.unwrap();
    assert!(fitted_terms.reliability < 0.3 * one_terms.reliability);
    let sentence = crate::sentences::brier_decomposition_sentence(
        1.0,
        &one_terms,
        &one_terms,
        &fitted_terms,
        fitted,
    );
    assert!(sentence.contains("nearly untouched"), "{sentence}");
    // And, without bins, the CORP miscalibration of both scores, while discrimination stays.
    let [_, one_corp, fitted_corp] = at_one.corp.as_ref().unwrap();
    for (one, fitted) in [
        (one_corp.brier, fitted_corp.brier),
        (one_corp.log, fitted_corp.log),
    ] {
        assert!(fitted.miscalibration < 0.3 * one.miscalibration);
    }
    let sentence =
        crate::sentences::corp_decomposition_sentence(1.0, one_corp, one_corp, fitted_corp, fitted);
    assert!(sentence.contains("nearly untouched"), "{sentence}");
}

/// Ten classes of calibrated logits (`ln p`, labels drawn from `p`), the rows of class 0 with
/// their true label's logit lowered by 3: marginal thresholds under-cover class 0 by
/// construction, while Mondrian thresholds are exact within each class.
fn lab_with_a_hard_class(n: usize, seed: u64) -> Lab {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (probabilities, labels) = crate::test_support::calibrated_rows(n, 10, &mut rng);
    let logits: Vec<f32> = probabilities
        .chunks(10)
        .zip(&labels)
        .flat_map(|(row, &label)| {
            row.iter().enumerate().map(move |(class, p)| {
                let lowered = if label == 0 && class == 0 { 3.0 } else { 0.0 };
                (p.ln() - lowered) as f32
            })
        })
        .collect();
    let mut lab = Lab::new(labels, 10, 1).unwrap();
    lab.add_logits(0, 0, &logits).unwrap();
    lab
}

#[test]
fn the_methods_sentence_calls_a_planted_class_gap_real_and_exact_mondrian_chance() {
    let settings = ConformalSettings {
        temperature: 1.0,
        score: ScoreKind::Lac,
        ..settings(ScoreKind::Lac)
    };
    // The part of the verdict before "within" names the methods called chance.
    let within = |sentence: &str, name: &str| {
        let verdict = sentence.rsplit("). ").next().unwrap_or_default();
        verdict.starts_with("All three are within")
            || verdict
                .split(" within ")
                .next()
                .unwrap_or_default()
                .contains(name)
    };
    let mut mondrian_chance = 0;
    for seed in 0..10 {
        let view = lab_with_a_hard_class(4_000, 60 + seed)
            .conformal_view(&settings, ConformalParts::ALL)
            .unwrap()
            .threshold_methods
            .unwrap();
        let sentence = &view.sentence;
        assert!(!within(sentence, "arginal"), "seed {seed}: {sentence}");
        mondrian_chance += usize::from(within(sentence, "Mondrian"));
        // Mondrian lifts the hard class; marginal leaves it far below 1 − α.
        assert!(view.methods[0].lowest_class_coverage < 0.8, "seed {seed}");
        assert!(view.methods[1].lowest_class_coverage > 0.8, "seed {seed}");
        assert_eq!(view.clustered.clusters, CLUSTERS);
    }
    assert!(
        mondrian_chance >= 9,
        "Mondrian called chance in {mondrian_chance} of 10"
    );
}

#[test]
fn each_gallery_image_gets_the_venn_abers_interval_of_the_core_predictor_at_the_labs_t() {
    use crate::calibration::confidences;
    use crate::recalibration::venn_abers::fit_venn_abers;
    let (mut lab, _, _) = full_lab(1_200);
    for temperature in [0.7, 2.5, 0.7] {
        let settings = ConformalSettings {
            temperature,
            ..settings(ScoreKind::Lac)
        };
        let items = lab
            .gallery(&settings, GalleryFilter::All, usize::MAX)
            .unwrap();
        let cache = lab.prepared().unwrap();
        let at_temperature = |part: &Part| {
            confidences(
                &Logits::new(&part.logits, K).unwrap(),
                &part.labels,
                temperature,
            )
            .unwrap()
        };
        let (confidence, correct) = at_temperature(&cache.calibration);
        let fitted = fit_venn_abers(&confidence, &correct).unwrap();
        let (evaluation_confidence, _) = at_temperature(&cache.evaluation);
        assert_eq!(items.len(), cache.evaluation.rows.len());
        for item in &items {
            let index = cache.evaluation.rows.binary_search(&item.row).unwrap();
            let expected = fitted.interval(evaluation_confidence[index]);
            let shown = item
                .venn_abers
                .as_ref()
                .expect("an evaluation image's interval");
            assert_eq!(
                (shown.p0, shown.p1),
                (expected.p0, expected.p1),
                "row {}",
                item.row
            );
            assert!(shown.p0 < shown.p1, "row {}", item.row);
            let (text, spoken) = crate::sentences::venn_abers_interval_text(shown.p0, shown.p1);
            assert_eq!((&shown.text, &shown.spoken), (&text, &spoken));
        }
        let width = |item: &GalleryItem| item.venn_abers.as_ref().map(|i| i.p1 - i.p0);
        assert!(items.iter().any(|item| width(item) != width(&items[0])));
    }
    // The calibration images of the extremes are the evidence: no interval.
    let (most, least) = lab
        .conformity_extremes(&settings(ScoreKind::Lac), 5)
        .unwrap();
    assert!(most
        .iter()
        .chain(&least)
        .all(|item| item.venn_abers.is_none()));
}

#[test]
fn the_estimators_table_on_a_case_is_the_library_on_the_case_rows() {
    use crate::estimator_cases::{case_rows, EstimatorCase};
    let (mut lab, _, _) = full_lab(600);
    let network = lab
        .temperature_view(0.7, 10, Binning::Width, TemperatureParts::all(true))
        .unwrap();
    let (calibration_labels, evaluation_logits, evaluation_labels) = {
        let (calibration, evaluation) = lab.complete_halves().unwrap();
        (
            calibration.labels.clone(),
            evaluation.logits.clone(),
            evaluation.labels.clone(),
        )
    };
    for case in EstimatorCase::ALL {
        let view = lab
            .temperature_view_of_case(0.7, 10, Binning::Width, TemperatureParts::all(true), case)
            .unwrap();
        let rows = case_rows(
            case,
            K,
            &calibration_labels,
            &evaluation_logits,
            &evaluation_labels,
        )
        .unwrap();
        let logits = Logits::new(&rows.logits, K).unwrap();
        let t = case.temperature(0.7);
        let expected =
            crate::calibration_estimators::estimators(&logits, &rows.labels, t, 10, Binning::Width)
                .unwrap();
        let report = calibration::evaluate(&logits, &rows.labels, t, 10, Binning::Width).unwrap();
        let table = view.estimator_case.as_ref().unwrap();
        assert_eq!(table.estimators, expected, "{case:?}");
        assert_eq!(table.report.ece, report.ece, "{case:?}");
        assert_eq!(table.report.rmsce, report.rmsce, "{case:?}");
        assert_eq!(table.images, rows.labels.len(), "{case:?}");
        let cumulative = view.cumulative.as_ref().unwrap();
        assert_eq!(cumulative.curve.len(), rows.labels.len(), "{case:?}");
        // The rest of the lab is the network's whatever the case.
        assert_eq!(view.at_temperature, network.at_temperature, "{case:?}");
        if case == EstimatorCase::Network {
            assert_eq!(table.intervals, view.intervals[0]);
            continue;
        }
        // The case's intervals are asked for first, and shown once the worker answers.
        let request = view.interval_requests[0];
        assert_eq!((request.case, request.temperature), (case, t));
        let answer = lab.worker_halves().unwrap().intervals(&request).unwrap();
        assert_eq!(answer.ece_debiased.estimate, expected.ece_debiased);
        lab.add_intervals(request, answer);
        let view = lab
            .temperature_view_of_case(0.7, 10, Binning::Width, TemperatureParts::all(true), case)
            .unwrap();
        assert_eq!(view.estimator_case.unwrap().intervals, Some(answer));
    }
}

#[test]
fn the_cumulative_differences_alone_are_the_whole_views_on_every_case() {
    use crate::estimator_cases::EstimatorCase;
    let alone = TemperatureParts {
        smooth: false,
        band: false,
        estimators: false,
        cumulative: true,
        corp: false,
        brier: false,
    };
    let (mut kept, _, _) = full_lab(600);
    for case in EstimatorCase::ALL {
        // Alone, after a whole view at the same temperature (which it may reuse), at another
        // temperature, and back.
        for (t, parts) in [
            (0.7, TemperatureParts::all(false)),
            (0.7, alone),
            (1.9, alone),
            (0.7, alone),
        ] {
            let view = kept
                .temperature_view_of_case(t, 10, Binning::Width, parts, case)
                .unwrap();
            let (mut fresh, _, _) = full_lab(600);
            let whole = fresh
                .temperature_view_of_case(t, 10, Binning::Width, TemperatureParts::all(false), case)
                .unwrap();
            assert_eq!(view.cumulative, whole.cumulative, "{case:?} {t}");
            assert_eq!(
                view.estimator_case.is_some(),
                parts.estimators,
                "{case:?} {t}"
            );
        }
    }
}

#[test]
fn a_case_kept_across_slider_moves_shows_what_a_fresh_lab_computes() {
    use crate::estimator_cases::EstimatorCase;
    let parts = TemperatureParts::all(false);
    let (mut kept, _, _) = full_lab(600);
    for case in EstimatorCase::ALL {
        // The same case over several temperatures and bins (the base rates' view is the same
        // at each temperature), then back to the first.
        for (t, bins) in [(0.7, 10), (1.9, 10), (1.9, 12), (0.7, 10)] {
            let moved = kept
                .temperature_view_of_case(t, bins, Binning::Width, parts, case)
                .unwrap();
            let (mut fresh, _, _) = full_lab(600);
            let expected = fresh
                .temperature_view_of_case(t, bins, Binning::Width, parts, case)
                .unwrap();
            assert_eq!(
                moved.estimator_case, expected.estimator_case,
                "{case:?} {t} {bins}"
            );
            assert_eq!(moved.cumulative, expected.cumulative, "{case:?} {t} {bins}");
        }
    }
}
