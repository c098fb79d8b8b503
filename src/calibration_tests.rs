//! Unit tests of `calibration.rs`: hand-computed metrics, a planted temperature recovered from
//! seeded synthetic logits, and derivatives against finite differences.

use super::*;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Tolerance for values computed by hand (the inputs are `f32`, so about 1e-7 relative).
const HAND_TOLERANCE: f64 = 1e-6;
/// Tolerance for one quantity computed two ways in `f64`.
const AGREEMENT_TOLERANCE: f64 = 1e-12;
/// Relative tolerance on a recovered temperature. The sampling error of the fitted 1/T is
/// 1/sqrt(n·mean Var_p[z]) ≈ 0.79%·sqrt(20000/n) for the planted data below, so n = 40000
/// puts the tolerance at about 3.6 standard deviations (at n = 20000 it would be 2.5).
const RECOVERY_TOLERANCE: f64 = 0.02;
/// Step of the central differences; their error is O(step²) ≈ 1e-10, rounding adds
/// about 1e-16/step.
const FINITE_DIFFERENCE_STEP: f64 = 1e-5;
/// Relative tolerance of analytic derivatives against central differences.
const DERIVATIVE_TOLERANCE: f64 = 1e-6;

fn assert_close(actual: f64, expected: f64, tolerance: f64) {
    assert!(
        (actual - expected).abs() <= tolerance,
        "expected {expected}, got {actual} (tolerance {tolerance})"
    );
}

/// Row-major K=2 logits `[log(p/(1−p)), 0]`-style rows with known probabilities:
/// row 0 p = [0.75, 0.25], label 0 (correct, confidence 0.75);
/// row 1 p = [0.1, 0.9], label 1 (correct, confidence 0.9);
/// row 2 p = [0.7, 0.3], label 1 (wrong, confidence 0.7);
/// row 3 p = [0.5, 0.5], label 1 (tie goes to class 0: wrong, confidence 0.5).
fn hand_example() -> (Vec<f32>, Vec<u32>) {
    let logits = vec![
        3.0_f32.ln(),
        0.0,
        0.0,
        9.0_f32.ln(),
        (7.0_f32 / 3.0).ln(),
        0.0,
        0.0,
        0.0,
    ];
    (logits, vec![0, 1, 1, 1])
}

#[test]
fn hand_computed_metrics() {
    let (values, labels) = hand_example();
    let logits = Logits::new(&values, 2).unwrap();
    let report = evaluate(&logits, &labels, 1.0, 5, Binning::Width).unwrap();
    // Accuracy: rows 0 and 1 are correct → 2/4.
    assert_close(report.accuracy, 0.5, HAND_TOLERANCE);
    // NLL: (−ln 0.75 − ln 0.9 − ln 0.3 + ln 2)/4
    //    = (0.2876821 + 0.1053605 + 1.2039728 + 0.6931472)/4 = 2.2901626/4 = 0.5725406.
    assert_close(report.nll, 0.572_540_6, HAND_TOLERANCE);
    // Brier: (2·0.25² + 2·0.1² + 2·0.7² + 2·0.5²)/4 = (0.125 + 0.02 + 0.98 + 0.5)/4 = 0.40625.
    assert_close(report.brier, 0.40625, HAND_TOLERANCE);
    // Bins of width 0.2: bin 2 holds c = 0.5 (acc 0), bin 3 holds 0.75 and 0.7
    // (conf 0.725, acc 0.5), bin 4 holds 0.9 (acc 1).
    let counts: Vec<usize> = report.bins.iter().map(|bin| bin.count).collect();
    assert_eq!(counts, vec![0, 0, 1, 2, 1]);
    assert_close(report.bins[3].confidence, 0.725, HAND_TOLERANCE);
    assert_close(report.bins[3].accuracy, 0.5, HAND_TOLERANCE);
    assert_close(report.bins[0].confidence, 0.0, 0.0);
    // ECE = ¼·0.5 + ½·0.225 + ¼·0.1 = 0.125 + 0.1125 + 0.025 = 0.2625.
    assert_close(report.ece, 0.2625, HAND_TOLERANCE);
    // RMSCE = sqrt(¼·0.25 + ½·0.050625 + ¼·0.01) = sqrt(0.0903125) = 0.3005204.
    assert_close(report.rmsce, 0.300_520_4, HAND_TOLERANCE);
    // MCE = max(0.5, 0.225, 0.1) = 0.5; the empty bins 0 and 1 (|0 − 0| anyway) are skipped.
    assert_close(report.mce, 0.5, HAND_TOLERANCE);
    // Classwise, K = 2: class 0 on p_0 = (0.75, 0.1, 0.7, 0.5) with targets (1, 0, 0, 0):
    // ¼·0.1 + ¼·0.5 + ½·|0.5 − 0.725| = 0.2625; class 1 on p_1 = (0.25, 0.9, 0.3, 0.5),
    // targets (0, 1, 1, 1): ½·|0.5 − 0.275| + ¼·0.5 + ¼·0.1 = 0.2625. Mean 0.2625.
    assert_close(report.classwise_ece, 0.2625, HAND_TOLERANCE);
}

#[test]
fn hand_computed_classwise_ece_with_three_classes() {
    let probabilities = [0.6, 0.3, 0.1, 0.2, 0.7, 0.1, 0.3, 0.3, 0.4];
    let labels = [0, 2, 2];
    // Two bins split at 0.5.
    // Class 0: p = (0.6, 0.2, 0.3), targets (1, 0, 0): ⅔·|0 − 0.25| + ⅓·|1 − 0.6| = 0.3.
    // Class 1: p = (0.3, 0.7, 0.3), targets 0: ⅔·0.3 + ⅓·0.7 = 0.4333333.
    // Class 2: p = (0.1, 0.1, 0.4), targets (0, 1, 1): one bin, |⅔ − 0.2| = 0.4666667.
    // Mean: 1.2/3 = 0.4.
    let ece = classwise_ece(&probabilities, &labels, 3, 2, Binning::Width).unwrap();
    assert_close(ece, 0.4, HAND_TOLERANCE);
}

#[test]
fn softmax_matches_hand_example() {
    let (values, _) = hand_example();
    let logits = Logits::new(&values, 2).unwrap();
    let probabilities = softmax(&logits, 1.0).unwrap();
    let expected = [0.75, 0.25, 0.1, 0.9, 0.7, 0.3, 0.5, 0.5];
    for (&p, &e) in probabilities.iter().zip(&expected) {
        assert_close(p, e, HAND_TOLERANCE);
    }
    // T = 2 halves the logits: p = sqrt(3)/(sqrt(3) + 1) = 0.6339746 for row 0.
    let probabilities = softmax(&logits, 2.0).unwrap();
    assert_close(probabilities[0], 0.633_974_6, HAND_TOLERANCE);
}

#[test]
fn confidences_match_hand_example() {
    let (values, labels) = hand_example();
    let logits = Logits::new(&values, 2).unwrap();
    let (confidence, correct) = confidences(&logits, &labels, 1.0).unwrap();
    for (&c, &e) in confidence.iter().zip(&[0.75, 0.9, 0.7, 0.5]) {
        assert_close(c, e, HAND_TOLERANCE);
    }
    assert_eq!(correct, vec![true, true, false, false]);
}

/// Draws `n` rows of "true" logits uniform in [−3, 3], samples each label from
/// softmax(true logits) by inverse CDF, and returns the true logits scaled by `temperature`.
fn planted_temperature_data(
    n: usize,
    num_classes: usize,
    temperature: f64,
    seed: u64,
) -> (Vec<f32>, Vec<u32>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut values = Vec::with_capacity(n * num_classes);
    let mut labels = Vec::with_capacity(n);
    let mut true_logits = vec![0.0_f64; num_classes];
    for _ in 0..n {
        for z in true_logits.iter_mut() {
            *z = rng.random_range(-3.0..3.0);
        }
        let max = true_logits
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        let weights: Vec<f64> = true_logits.iter().map(|z| (z - max).exp()).collect();
        let total: f64 = weights.iter().sum();
        let u: f64 = rng.random::<f64>() * total;
        let mut cumulative = 0.0;
        let mut label = num_classes - 1;
        for (class, weight) in weights.iter().enumerate() {
            cumulative += weight;
            if u < cumulative {
                label = class;
                break;
            }
        }
        labels.push(label as u32);
        values.extend(true_logits.iter().map(|z| (z * temperature) as f32));
    }
    (values, labels)
}

#[test]
fn fit_recovers_planted_temperature() {
    for (planted, seed) in [(2.5, 7), (0.3, 11)] {
        let (values, labels) = planted_temperature_data(40_000, 10, planted, seed);
        let logits = Logits::new(&values, 10).unwrap();
        let fit = fit_temperature(&logits, &labels).unwrap();
        assert_eq!(fit.bound_hit, None);
        assert!(
            (fit.temperature / planted - 1.0).abs() <= RECOVERY_TOLERANCE,
            "planted {planted}, fitted {}",
            fit.temperature
        );
        // The fitted NLL is what evaluate reports there, and no worse than at T = 1.
        let at_fit = evaluate(&logits, &labels, fit.temperature, 15, Binning::Width).unwrap();
        assert_close(at_fit.nll, fit.nll, AGREEMENT_TOLERANCE);
        let at_one = evaluate(&logits, &labels, 1.0, 15, Binning::Width).unwrap();
        assert!(fit.nll <= at_one.nll);
        // The derivative vanishes at the fitted temperature: a Newton step from there,
        // g/(β·h) in log β, is within the fit's tolerance (with a factor 10 of slack).
        let derivatives = nll_derivatives(&logits, &labels, 1.0 / fit.temperature);
        let newton_step = derivatives.first * fit.temperature / derivatives.second;
        assert!(newton_step.abs() <= 10.0 * TEMPERATURE_TOLERANCE);
    }
}

#[test]
fn nll_derivatives_match_finite_differences() {
    let (values, labels) = planted_temperature_data(500, 4, 1.7, 3);
    let logits = Logits::new(&values, 4).unwrap();
    for inverse_temperature in [0.1, 0.6, 1.0, 3.0] {
        let at = nll_derivatives(&logits, &labels, inverse_temperature);
        let above = nll_derivatives(
            &logits,
            &labels,
            inverse_temperature + FINITE_DIFFERENCE_STEP,
        );
        let below = nll_derivatives(
            &logits,
            &labels,
            inverse_temperature - FINITE_DIFFERENCE_STEP,
        );
        let first = (above.nll - below.nll) / (2.0 * FINITE_DIFFERENCE_STEP);
        let second = (above.first - below.first) / (2.0 * FINITE_DIFFERENCE_STEP);
        assert_close(at.first, first, DERIVATIVE_TOLERANCE * first.abs().max(1.0));
        assert_close(
            at.second,
            second,
            DERIVATIVE_TOLERANCE * second.abs().max(1.0),
        );
        // The NLL from the derivative pass equals the one from log-softmax.
        let report = evaluate(
            &logits,
            &labels,
            1.0 / inverse_temperature,
            10,
            Binning::Width,
        )
        .unwrap();
        assert_close(at.nll, report.nll, AGREEMENT_TOLERANCE);
    }
}

#[test]
fn fit_hits_bounds() {
    // The label is always the largest logit: sharper is always better, optimum T → 0.
    let values = [2.0, 0.0, -1.0, 0.5, 3.0, 1.0, 0.0, -2.0, 0.1];
    let logits = Logits::new(&values, 3).unwrap();
    let fit = fit_temperature(&logits, &[0, 1, 2]).unwrap();
    assert_eq!(fit.bound_hit, Some(TemperatureBound::Lower));
    assert_eq!(fit.temperature, MIN_TEMPERATURE);
    assert!(fit.nll.is_finite());
    // The label is always the smallest logit: flatter is always better, optimum T → ∞.
    let fit = fit_temperature(&logits, &[2, 2, 1]).unwrap();
    assert_eq!(fit.bound_hit, Some(TemperatureBound::Upper));
    assert_eq!(fit.temperature, MAX_TEMPERATURE);
    assert!(fit.nll.is_finite());
}

#[test]
fn fit_on_tied_logits_returns_one() {
    let values = [1.5; 12];
    let logits = Logits::new(&values, 3).unwrap();
    let fit = fit_temperature(&logits, &[0, 1, 2, 0]).unwrap();
    assert_eq!(fit.temperature, 1.0);
    assert_eq!(fit.bound_hit, None);
    assert_close(fit.nll, 3.0_f64.ln(), AGREEMENT_TOLERANCE);
}

#[test]
fn extreme_logits_stay_finite() {
    let values = [
        1e4, -1e4, 0.0, // one class dominating
        -1e4, -1e4, -1e4, // tied
        1e4, 1e4, -1e4, // tied at the top
        0.0, 0.0, 1e4,
    ];
    let labels = [1, 2, 1, 2];
    let logits = Logits::new(&values, 3).unwrap();
    for temperature in [MIN_TEMPERATURE, 1.0, MAX_TEMPERATURE] {
        for binning in [Binning::Width, Binning::Mass] {
            let report = evaluate(&logits, &labels, temperature, 15, binning).unwrap();
            for value in [
                report.accuracy,
                report.nll,
                report.brier,
                report.ece,
                report.rmsce,
                report.mce,
                report.classwise_ece,
            ] {
                assert!(value.is_finite(), "T = {temperature}: {report:?}");
            }
            assert!((0.0..=2.0).contains(&report.brier));
        }
        let probabilities = softmax(&logits, temperature).unwrap();
        assert!(probabilities.iter().all(|p| p.is_finite()));
        for row in probabilities.chunks_exact(3) {
            assert_close(row.iter().sum(), 1.0, HAND_TOLERANCE);
        }
        let (confidence, _) = confidences(&logits, &labels, temperature).unwrap();
        assert!(confidence.iter().all(|c| (0.0..=1.0).contains(c)));
    }
    // At T = 1: row 0 has p_1 = exp(−2e4), so its NLL term alone is 2e4.
    let report = evaluate(&logits, &labels, 1.0, 15, Binning::Width).unwrap();
    assert!(report.nll > 5e3);
    let fit = fit_temperature(&logits, &labels).unwrap();
    assert!(fit.temperature.is_finite() && fit.nll.is_finite());
}

#[test]
fn equal_width_puts_confidence_one_in_last_bin() {
    let bins =
        reliability_bins(&[1.0, 0.0, 0.5], &[true, false, true], 10, Binning::Width).unwrap();
    assert_eq!(bins.len(), 10);
    assert_eq!(bins[9].count, 1);
    assert_eq!(bins[0].count, 1);
    assert_eq!(bins[5].count, 1);
    assert_eq!((bins[9].lower, bins[9].upper), (0.9, 1.0));
    assert_eq!(bins[9].accuracy, 1.0);
}

#[test]
fn equal_mass_bin_sizes_are_floor_or_ceil() {
    let confidence: Vec<f64> = (0..10).map(|i| f64::from(i) / 10.0).rev().collect();
    let correct = vec![true; 10];
    let bins = reliability_bins(&confidence, &correct, 3, Binning::Mass).unwrap();
    // Boundaries floor(b·10/3) = 0, 3, 6, 10.
    let counts: Vec<usize> = bins.iter().map(|bin| bin.count).collect();
    assert_eq!(counts, vec![3, 3, 4]);
    assert_eq!((bins[0].lower, bins[0].upper), (0.0, 0.2));
    assert_eq!((bins[2].lower, bins[2].upper), (0.6, 0.9));
    // n = 2 < B = 4: boundaries 0, 0, 1, 1, 2, so bins 0 and 2 are empty.
    let bins = reliability_bins(&[0.9, 0.3], &[true, false], 4, Binning::Mass).unwrap();
    let counts: Vec<usize> = bins.iter().map(|bin| bin.count).collect();
    assert_eq!(counts, vec![0, 1, 0, 1]);
    assert_eq!((bins[0].confidence, bins[0].accuracy), (0.0, 0.0));
    assert_eq!((bins[2].lower, bins[2].upper), (0.9, 0.9));
    // Empty bins add nothing: ECE = ½·0.3 + ½·0.1.
    assert_close(expected_calibration_error(&bins), 0.2, AGREEMENT_TOLERANCE);
    assert_close(maximum_calibration_error(&bins), 0.3, AGREEMENT_TOLERANCE);
}

#[test]
fn errors_name_the_offending_value() {
    let values = [0.0, 1.0, 2.0, 3.0, 4.0, f32::NAN];
    assert!(matches!(
        Logits::new(&values, 3),
        Err(CalibrationError::NonFinite { row: 1, class: 2, value }) if value.is_nan()
    ));
    let values = [0.0, f32::INFINITY, 2.0, 3.0];
    assert_eq!(
        Logits::new(&values, 2),
        Err(CalibrationError::NonFinite {
            row: 0,
            class: 1,
            value: f32::INFINITY
        })
    );
    assert_eq!(Logits::new(&[], 3), Err(CalibrationError::EmptyInput));
    assert_eq!(
        Logits::new(&[1.0, 2.0], 1),
        Err(CalibrationError::TooFewClasses(1))
    );
    assert_eq!(
        Logits::new(&[1.0, 2.0, 3.0], 2),
        Err(CalibrationError::ShapeMismatch {
            len: 3,
            num_classes: 2
        })
    );
    let values = [0.0; 6];
    let logits = Logits::new(&values, 3).unwrap();
    assert_eq!(
        check_labels(&logits, &[0, 3]),
        Err(CalibrationError::LabelOutOfRange {
            row: 1,
            label: 3,
            num_classes: 3
        })
    );
    assert_eq!(
        fit_temperature(&logits, &[0]),
        Err(CalibrationError::LabelCountMismatch { labels: 1, rows: 2 })
    );
    for num_bins in [0, MAX_BINS + 1] {
        assert_eq!(
            evaluate(&logits, &[0, 1], 1.0, num_bins, Binning::Width),
            Err(CalibrationError::InvalidBinCount(num_bins))
        );
        assert_eq!(
            reliability_bins(&[0.5], &[true], num_bins, Binning::Mass),
            Err(CalibrationError::InvalidBinCount(num_bins))
        );
    }
    assert!(evaluate(&logits, &[0, 1], 1.0, MAX_BINS, Binning::Mass).is_ok());
    for temperature in [0.0, -1.0, f64::INFINITY] {
        assert_eq!(
            softmax(&logits, temperature),
            Err(CalibrationError::InvalidTemperature(temperature))
        );
    }
    assert!(matches!(
        evaluate(&logits, &[0, 1], f64::NAN, 10, Binning::Width),
        Err(CalibrationError::InvalidTemperature(t)) if t.is_nan()
    ));
    assert_eq!(
        reliability_bins(&[0.5, 1.5], &[true, true], 10, Binning::Width),
        Err(CalibrationError::InvalidConfidence {
            index: 1,
            value: 1.5
        })
    );
    assert_eq!(
        reliability_bins(&[0.5], &[true, true], 10, Binning::Width),
        Err(CalibrationError::ConfidenceCountMismatch {
            confidences: 1,
            outcomes: 2
        })
    );
    assert_eq!(
        classwise_ece(&[0.5, 0.5, 1.2, -0.2], &[0, 1], 2, 10, Binning::Width),
        Err(CalibrationError::InvalidProbability {
            row: 1,
            class: 0,
            value: 1.2
        })
    );
}

#[test]
fn probabilities_are_recognised_and_converted_on_request() {
    let probabilities = [0.25, 0.75, 1.0, 0.0];
    let as_logits = Logits::new(&probabilities, 2).unwrap();
    assert!(looks_like_probabilities(&as_logits));
    let (values, _) = hand_example();
    assert!(!looks_like_probabilities(&Logits::new(&values, 2).unwrap()));
    let converted = logits_from_probabilities(&probabilities, 2).unwrap();
    let logits = Logits::new(&converted, 2).unwrap();
    let round_trip = softmax(&logits, 1.0).unwrap();
    for (&p, &q) in round_trip.iter().zip(&probabilities) {
        assert_close(p, f64::from(q), HAND_TOLERANCE);
    }
}

#[test]
fn full_evaluation_reproduces_classwise_ece_and_confidences() {
    let (values, labels) = planted_temperature_data(2_000, 4, 1.8, 5);
    let logits = Logits::new(&values, 4).unwrap();
    for binning in [Binning::Width, Binning::Mass] {
        for temperature in [0.5, 1.0, 2.5] {
            let full = evaluate_in_full(&logits, &labels, temperature, 15, binning).unwrap();
            // The one-pass confidences are the cheap path's, bit for bit.
            let (confidence, correct) = confidences(&logits, &labels, temperature).unwrap();
            assert_eq!(full.confidence, confidence);
            assert_eq!(full.correct, correct);
            let per_class = &full.classwise_bins;
            assert_eq!(per_class.len(), 4);
            let mean_ece = per_class
                .iter()
                .map(|bins| expected_calibration_error(bins))
                .sum::<f64>()
                / 4.0;
            let report = evaluate(&logits, &labels, temperature, 15, binning).unwrap();
            assert_eq!(report, full.report);
            assert_eq!(mean_ece, report.classwise_ece);
            // Independently: from the probabilities through `classwise_ece`.
            let probabilities = softmax(&logits, temperature).unwrap();
            let from_probabilities =
                classwise_ece(&probabilities, &labels, 4, 15, binning).unwrap();
            assert_close(mean_ece, from_probabilities, HAND_TOLERANCE);
            for (class, bins) in per_class.iter().enumerate() {
                assert_eq!(bins.len(), 15);
                assert_eq!(
                    bins.iter().map(|bin| bin.count).sum::<usize>(),
                    labels.len()
                );
                // Σ_b n_b·acc_b counts the examples labelled `class`.
                let members: f64 = bins.iter().map(|bin| bin.count as f64 * bin.accuracy).sum();
                let labelled = labels.iter().filter(|&&y| y as usize == class).count();
                assert_close(members, labelled as f64, HAND_TOLERANCE);
            }
        }
    }
    assert_eq!(
        evaluate_in_full(&logits, &labels, 0.0, 15, Binning::Width),
        Err(CalibrationError::InvalidTemperature(0.0))
    );
    assert_eq!(
        evaluate_in_full(&logits, &labels, 1.0, 0, Binning::Width),
        Err(CalibrationError::InvalidBinCount(0))
    );
    assert_eq!(
        evaluate_in_full(&logits, &labels[1..], 1.0, 15, Binning::Width),
        Err(CalibrationError::LabelCountMismatch {
            labels: 1_999,
            rows: 2_000
        })
    );
}

#[test]
fn an_evaluation_beside_kept_softmaxes_is_the_evaluation_alone_bit_for_bit() {
    let (values, labels) = planted_temperature_data(900, 4, 1.8, 11);
    let logits = Logits::new(&values, 4).unwrap();
    // Sets sharing most rows with the kept one: every third row changed (a raised logit, a
    // rotated row, a halved logit) and one logit 0.0 where the kept row has -0.0 (equal, but
    // not bit for bit), the same with 100 rows fewer; then sets that share none.
    let mut shared = values.clone();
    for row in (0..900).step_by(3) {
        let values = &mut shared[row * 4..(row + 1) * 4];
        match row % 9 {
            0 => values[0] += 1_000.0,
            3 => values.rotate_left(1),
            _ => values[2] *= 0.5,
        }
    }
    shared[5 * 4 + 1] = 0.0;
    let mut kept_zero = values.clone();
    kept_zero[5 * 4 + 1] = -0.0;
    let kept_logits = Logits::new(&kept_zero, 4).unwrap();
    let others: Vec<f32> = values[..600 * 4].iter().map(|z| z * 1.5).collect();
    let three_classes = &values[..900 * 3];
    for binning in [Binning::Width, Binning::Mass] {
        for temperature in [0.5, 1.0, 2.5] {
            let (full, kept) =
                evaluate_in_full_keeping(&kept_logits, &labels, temperature, 12, binning).unwrap();
            assert_eq!(
                full,
                evaluate_in_full(&kept_logits, &labels, temperature, 12, binning).unwrap()
            );
            assert_eq!(kept.temperature(), temperature);
            for (values, classes, rows) in [
                (&values[..], 4, 900),
                (&shared[..], 4, 900),
                (&shared[..800 * 4], 4, 800),
                (&others[..], 4, 600),
                (three_classes, 3, 900),
            ] {
                let logits = Logits::new(values, classes).unwrap();
                let labels: Vec<u32> = labels[..rows].iter().map(|&y| y % 3).collect();
                assert_eq!(
                    evaluate_in_full_beside(&logits, &labels, 12, binning, &kept).unwrap(),
                    evaluate_in_full(&logits, &labels, temperature, 12, binning).unwrap(),
                    "{binning:?} {temperature} {classes} {rows}"
                );
            }
        }
    }
    let (_, kept) = evaluate_in_full_keeping(&logits, &labels, 1.0, 12, Binning::Width).unwrap();
    assert_eq!(
        evaluate_in_full_beside(&logits, &labels[1..], 12, Binning::Width, &kept),
        Err(CalibrationError::LabelCountMismatch {
            labels: 899,
            rows: 900
        })
    );
}

#[test]
fn histogram_counts_use_the_equal_width_rule() {
    let counts = histogram_counts(&[0.0, 0.05, 0.1, 0.55, 0.999, 1.0], 10).unwrap();
    assert_eq!(counts, vec![2, 1, 0, 0, 0, 1, 0, 0, 0, 2]);
    assert_eq!(histogram_counts(&[], 4).unwrap(), vec![0; 4]);
    // The same counts as equal-width reliability bins.
    let (values, labels) = planted_temperature_data(1_000, 5, 1.3, 9);
    let logits = Logits::new(&values, 5).unwrap();
    let (confidence, correct) = confidences(&logits, &labels, 1.0).unwrap();
    let bins = reliability_bins(&confidence, &correct, 15, Binning::Width).unwrap();
    let bin_counts: Vec<usize> = bins.iter().map(|bin| bin.count).collect();
    assert_eq!(histogram_counts(&confidence, 15).unwrap(), bin_counts);
    assert_eq!(
        histogram_counts(&[0.5], 0),
        Err(CalibrationError::InvalidBinCount(0))
    );
    assert_eq!(
        histogram_counts(&[0.5, -0.25], 10),
        Err(CalibrationError::InvalidConfidence {
            index: 1,
            value: -0.25
        })
    );
    assert!(matches!(
        histogram_counts(&[f64::NAN], 10),
        Err(CalibrationError::InvalidConfidence { index: 0, value }) if value.is_nan()
    ));
}

fn logits_and_labels() -> impl Strategy<Value = (usize, Vec<f32>, Vec<u32>)> {
    (2_usize..6, 1_usize..40).prop_flat_map(|(num_classes, rows)| {
        (
            Just(num_classes),
            // Logits from a few integer levels, so ties are common.
            prop::collection::vec(
                (-4_i8..4).prop_map(|z| f32::from(z) * 2.5),
                rows * num_classes,
            ),
            prop::collection::vec(0..num_classes as u32, rows),
        )
    })
}

proptest! {
    #[test]
    fn accuracy_does_not_depend_on_temperature(
        (num_classes, values, labels) in logits_and_labels(),
        first in MIN_TEMPERATURE..MAX_TEMPERATURE,
        second in MIN_TEMPERATURE..MAX_TEMPERATURE,
    ) {
        let logits = Logits::new(&values, num_classes).unwrap();
        let at_first = evaluate(&logits, &labels, first, 10, Binning::Width).unwrap();
        let at_second = evaluate(&logits, &labels, second, 10, Binning::Mass).unwrap();
        prop_assert_eq!(at_first.accuracy, at_second.accuracy);
        let (_, correct_first) = confidences(&logits, &labels, first).unwrap();
        let (_, correct_second) = confidences(&logits, &labels, second).unwrap();
        prop_assert_eq!(correct_first, correct_second);
    }

    #[test]
    fn equal_mass_bins_hold_floor_or_ceil(
        confidence in prop::collection::vec(0.0_f64..=1.0, 1..200),
        num_bins in 1_usize..50,
    ) {
        let n = confidence.len();
        let correct = vec![false; n];
        let bins = reliability_bins(&confidence, &correct, num_bins, Binning::Mass).unwrap();
        prop_assert_eq!(bins.len(), num_bins);
        prop_assert_eq!(bins.iter().map(|bin| bin.count).sum::<usize>(), n);
        for bin in &bins {
            prop_assert!(bin.count == n / num_bins || bin.count == n.div_ceil(num_bins));
            prop_assert!(bin.lower <= bin.upper);
        }
        for pair in bins.windows(2) {
            prop_assert!(pair[0].upper <= pair[1].lower);
        }
    }
}

#[test]
fn the_predicted_class_is_the_first_largest_value_and_never_a_nan() {
    assert_eq!(predicted_class(&[0.1_f32, 3.0, -2.0]), 1);
    assert_eq!(
        predicted_class(&[2.0_f64, 5.0, 5.0, 1.0]),
        1,
        "ties go to the lowest index"
    );
    for nan_at in 0..3 {
        let mut row = [1.0_f32, 4.0, 2.0];
        row[nan_at] = f32::NAN;
        let expected = if nan_at == 1 { 2 } else { 1 };
        assert_eq!(predicted_class(&row), expected, "NaN at {nan_at}");
        let row64: Vec<f64> = row.iter().map(|&z| f64::from(z)).collect();
        assert_eq!(predicted_class(&row64), expected, "f64, NaN at {nan_at}");
    }
    assert_eq!(predicted_class(&[f32::NAN, f32::NEG_INFINITY]), 1);
    assert_eq!(
        predicted_class(&[f64::NAN, f64::NAN]),
        0,
        "no number at all"
    );
    assert_eq!(predicted_class::<f32>(&[]), 0);
}
