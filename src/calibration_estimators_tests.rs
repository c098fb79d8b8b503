//! Tests of `calibration_estimators.rs`: cases worked by hand, and seeded Monte Carlo on
//! confidences whose truth is planted (each row right with probability `c − gap`), so the true
//! calibration error is known by construction; the laws of the two cumulative tests against
//! simulated Brownian motion; and the values of MAPIE, uncertainty-calibration, torchmetrics and
//! netcal on the rows of `scripts/estimators-reference.py` (tests/fixtures/estimators/).

use super::*;
use crate::calibration::{reliability_bins, root_mean_square_calibration_error, Binning};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

/// Tolerance for the values worked by hand to three decimals.
const HAND_TOLERANCE: f64 = 5e-4;
/// Bins of the binned estimators in the Monte Carlo tests (the CLI's default).
const BINS: usize = 15;

fn assert_close(actual: f64, expected: f64, tolerance: f64) {
    assert!(
        (actual - expected).abs() <= tolerance,
        "expected {expected}, got {actual} (tolerance {tolerance})"
    );
}

/// `n` confidences uniform on `[0.3, 1)`, each right with probability `c − gap` (a planted
/// overconfidence of `gap` at every confidence; `gap = 0` is a calibrated network).
fn planted(n: usize, gap: f64, rng: &mut ChaCha8Rng) -> (Vec<f64>, Vec<bool>) {
    (0..n)
        .map(|_| {
            let c: f64 = rng.random_range(0.3..1.0);
            (c, rng.random::<f64>() < c - gap)
        })
        .unzip()
}

/// Mean and standard error of the mean of `values`.
fn mean_and_standard_error(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (variance / n).sqrt())
}

#[test]
fn cumulative_differences_by_hand() {
    // Sorted: 0.3 (wrong), 0.6 (wrong), 0.7 (right): differences −0.3, −0.6, 0.3, summed and
    // divided by n = 3.
    let curve = CumulativeDifferences::new(&[0.7, 0.3, 0.6], &[true, false, false]).unwrap();
    assert_eq!(curve.sorted_confidence, vec![0.3, 0.6, 0.7]);
    for (actual, expected) in curve.curve.iter().zip([-0.1, -0.3, -0.2]) {
        assert_close(*actual, expected, 1e-15);
    }
}

#[test]
fn the_three_tests_by_hand() {
    // Sorted: 0.1, 0.21, 0.5 (wrong), 0.9, 0.9 (right): D = (−0.1, −0.31, −0.81, −0.71,
    // −0.61)/5, σ = sqrt(0.09 + 0.1659 + 0.25 + 0.09 + 0.09)/5 = 0.165638.
    let confidence = [0.1, 0.9, 0.21, 0.9, 0.5];
    let correct = [false, true, false, true, false];
    let curve = CumulativeDifferences::new(&confidence, &correct).unwrap();
    assert_close(curve.scale, 0.6859_f64.sqrt() / 5.0, 1e-15);
    assert_close(curve.ks_error(), 0.162, 1e-15);
    assert_close(
        curve.kolmogorov_smirnov().unwrap().statistic,
        0.978,
        HAND_TOLERANCE,
    );
    assert_close(curve.kuiper().unwrap().statistic, 0.857, HAND_TOLERANCE);
    // D starts highest at k = 1 and is lowest, and largest in size, at k = 3.
    assert_eq!(
        curve.landmarks(),
        Landmarks {
            largest_gap: 2,
            highest: 0,
            lowest: 2
        }
    );
    assert_close(curve.range(), 0.142, 1e-15);
    // Z = −0.3618 / sqrt(3·0.64·0.09 + 0.3364·0.1659) = −0.757; p = 1 − Φ(−0.757) = 0.7755.
    let z = spiegelhalter(&confidence, &correct).unwrap().unwrap();
    assert_close(z.statistic, -0.757, HAND_TOLERANCE);
    assert_close(z.p_value, 0.7755, HAND_TOLERANCE);
}

#[test]
fn a_scale_of_zero_leaves_the_tests_undefined() {
    // Confidences 0 or 1 give σ = 0; confidences of ½ give Z a denominator of 0.
    let curve = CumulativeDifferences::new(&[1.0, 1.0, 0.0], &[true, false, false]).unwrap();
    assert_eq!(curve.kuiper(), None);
    assert_eq!(curve.kolmogorov_smirnov(), None);
    assert_close(curve.ks_error(), 1.0 / 3.0, 1e-15);
    assert_eq!(spiegelhalter(&[0.5, 1.0], &[true, true]).unwrap(), None);
}

#[test]
fn bad_input_is_refused() {
    assert_eq!(
        CumulativeDifferences::new(&[], &[]),
        Err(CalibrationError::EmptyInput)
    );
    assert_eq!(
        spiegelhalter(&[1.5], &[true]),
        Err(CalibrationError::InvalidConfidence {
            index: 0,
            value: 1.5
        })
    );
    assert_eq!(
        top_label_ece(&[0.5, 0.6], &[true, false], &[0], 2, BINS, Binning::Width),
        Err(CalibrationError::LabelCountMismatch { labels: 1, rows: 2 })
    );
    assert_eq!(
        top_label_ece(&[0.5], &[true], &[2], 2, BINS, Binning::Width),
        Err(CalibrationError::LabelOutOfRange {
            row: 0,
            label: 2,
            num_classes: 2
        })
    );
}

#[test]
fn debiased_error_by_hand() {
    // One bin (B = 1) of 4 rows at confidences 0.5, 0.5, 1, 1 with 3 right: acc = 0.75,
    // conf = 0.75, so the plug-in is 0 and the debiased square is −0.75·0.25/3 = −0.0625,
    // clipped to an error of 0. A single row adds nothing.
    let bins = reliability_bins(
        &[0.5, 0.5, 1.0, 1.0],
        &[true, false, true, true],
        1,
        Binning::Width,
    )
    .unwrap();
    assert_close(debiased_squared_calibration_error(&bins), -0.0625, 1e-15);
    assert_eq!(debiased_l2_calibration_error(&bins), 0.0);
    let one = reliability_bins(&[0.9], &[false], 1, Binning::Width).unwrap();
    assert_eq!(debiased_squared_calibration_error(&one), 0.0);
}

#[test]
fn top_label_ece_by_hand() {
    // Class 0 predicted at 0.8 twice, right once: ECE_0 = 0.3. Class 1 predicted at 0.6 twice,
    // right twice: ECE_1 = 0.4. Class 2 never predicted. Weighted: (2·0.3 + 2·0.4)/4 = 0.35;
    // MAPIE's plain mean over predicted classes: 0.35 too; with a third row of class 1 at 0.6
    // right, ECE_1 = 0.4 still and the weighted value is (2·0.3 + 3·0.4)/5 = 0.36.
    let result = top_label_ece(
        &[0.8, 0.8, 0.6, 0.6, 0.6],
        &[true, false, true, true, true],
        &[0, 0, 1, 1, 1],
        3,
        10,
        Binning::Width,
    )
    .unwrap();
    assert_close(result.value, 0.36, 1e-15);
    assert_close(result.unweighted(), 0.35, 1e-15);
    assert_eq!(result.per_class[2], ClassEce { count: 0, ece: 0.0 });
}

#[test]
fn opposite_miscalibrations_cancel_in_ece_but_not_in_top_label_ece() {
    // Class 0 is right with probability c − 0.15, class 1 with c + 0.15 (c on [0.3, 0.85)):
    // pooled, each bin's gap averages to 0, so confidence ECE is at its noise floor; per
    // predicted class each gap is 0.15, the top-label ECE's truth. 20,000 rows put the
    // noise floor of 15 bins near 0.01.
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let n = 20_000;
    let (mut confidence, mut correct, mut predicted) = (vec![], vec![], vec![]);
    for i in 0..n {
        let class = (i % 2) as u32;
        let c: f64 = rng.random_range(0.3..0.85);
        let truth = if class == 0 { c - 0.15 } else { c + 0.15 };
        confidence.push(c);
        correct.push(rng.random::<f64>() < truth);
        predicted.push(class);
    }
    let pooled = reliability_bins(&confidence, &correct, BINS, Binning::Width).unwrap();
    let ece = crate::calibration::expected_calibration_error(&pooled);
    let top_label = top_label_ece(&confidence, &correct, &predicted, 2, BINS, Binning::Width)
        .unwrap()
        .value;
    assert!(ece < 0.03, "pooled ECE {ece}");
    assert_close(top_label, 0.15, 0.02);
}

/// The debiased square over `rounds` seeded sets of `n` rows with a planted gap, and the
/// plug-in square (RMSCE²) on the same bins.
fn squares(rounds: u64, n: usize, gap: f64) -> (Vec<f64>, Vec<f64>) {
    (0..rounds)
        .map(|seed| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let (confidence, correct) = planted(n, gap, &mut rng);
            let bins = reliability_bins(&confidence, &correct, BINS, Binning::Width).unwrap();
            (
                debiased_squared_calibration_error(&bins),
                root_mean_square_calibration_error(&bins).powi(2),
            )
        })
        .unzip()
}

#[test]
fn the_debiased_square_is_unbiased_where_the_plug_in_is_not() {
    // Calibrated rows: the binned L2 error is 0. Over 200 sets of 1,000 rows the plug-in square
    // averages about (bins)·c(1 − c)/n ≈ 1.5e-3, many standard errors above 0; the debiased
    // one stays within 4 standard errors of 0 (its bias, −Σ within-bin spread/(n(n − 1)), is
    // about −4e-6, a tenth of a standard error).
    let (debiased, plug_in) = squares(200, 1000, 0.0);
    let (mean, standard_error) = mean_and_standard_error(&debiased);
    assert!(
        mean.abs() <= 4.0 * standard_error,
        "{mean} ± {standard_error}"
    );
    let (plug_in_mean, plug_in_error) = mean_and_standard_error(&plug_in);
    assert!(plug_in_mean > 10.0 * standard_error + 10.0 * plug_in_error);
}

#[test]
fn the_debiased_square_recovers_a_planted_gap() {
    // A gap of 0.05 in every bin: the binned squared error is 0.0025 exactly. Over 100 sets of
    // 5,000 rows the plug-in adds about (11 bins)·c(1 − c)/n ≈ 4e-4, some 6 standard errors.
    let (debiased, plug_in) = squares(100, 5000, 0.05);
    let (mean, standard_error) = mean_and_standard_error(&debiased);
    assert_close(mean, 0.0025, 4.0 * standard_error);
    let (plug_in_mean, _) = mean_and_standard_error(&plug_in);
    assert!(plug_in_mean - 0.0025 > 5.0 * standard_error);
}

/// How many of `rounds` seeded sets of `n` rows with a planted gap each test rejects at
/// `level`: (Spiegelhalter, Kuiper, Kolmogorov–Smirnov), and the mean KS error.
fn rejections(rounds: u64, n: usize, gap: f64, level: f64) -> ([usize; 3], f64) {
    let mut counts = [0; 3];
    let mut ks_error_sum = 0.0;
    for seed in 0..rounds {
        let mut rng = ChaCha8Rng::seed_from_u64(1000 + seed);
        let (confidence, correct) = planted(n, gap, &mut rng);
        let curve = CumulativeDifferences::new(&confidence, &correct).unwrap();
        ks_error_sum += curve.ks_error();
        let p_values = [
            spiegelhalter(&confidence, &correct)
                .unwrap()
                .unwrap()
                .p_value,
            curve.kuiper().unwrap().p_value,
            curve.kolmogorov_smirnov().unwrap().p_value,
        ];
        for (count, p) in counts.iter_mut().zip(p_values) {
            *count += usize::from(p <= level);
        }
    }
    (counts, ks_error_sum / rounds as f64)
}

#[test]
fn the_tests_hold_their_level_on_a_calibrated_network() {
    // 400 calibrated sets of 1,000 rows: each test rejects at 5% about 20 times; 3 standard
    // errors of a binomial proportion (0.011) allow 7 to 33. The cumulative tests' laws are
    // those of continuous Brownian motion, which a walk of 1,000 steps slightly undershoots, so
    // they are a little conservative.
    let (counts, _) = rejections(400, 1000, 0.0, 0.05);
    for count in counts {
        assert!((7..=33).contains(&count), "rejections {counts:?}");
    }
}

#[test]
fn the_tests_find_a_planted_overconfidence() {
    // A gap of 0.05 on 5,000 rows: the curve ends near −0.05 with σ ≈ 0.0055 (KS about 9), and
    // Z near 4.7. The KS error reads the gap off the curve's end (its maximum is a little past
    // it: the walk's noise only adds).
    let (counts, ks_error) = rejections(100, 5000, 0.05, 0.01);
    assert!(counts[0] >= 95, "Spiegelhalter rejected {}", counts[0]);
    assert_eq!(&counts[1..], &[100, 100]);
    assert_close(ks_error, 0.052, 0.004);
}

#[test]
fn the_laws_match_simulated_brownian_motion() {
    // 4,000 random walks of 2,000 normal steps scaled to [0, 1]: the empirical CDFs of their
    // largest |B| and of their range. A walk misses the maxima between its steps, about
    // 0.58/√2000 ≈ 0.013 of the scale for each end; with 3 standard errors of a proportion
    // (≤ 0.024) the tolerance is 0.04.
    let (paths, steps) = (4000, 2000);
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let scale = (steps as f64).sqrt();
    let (mut largest, mut ranges) = (Vec::new(), Vec::new());
    for _ in 0..paths {
        let (mut position, mut max, mut min) = (0.0_f64, 0.0_f64, 0.0_f64);
        for _ in 0..steps {
            position += rng.sample::<f64, _>(StandardNormal);
            max = max.max(position);
            min = min.min(position);
        }
        largest.push(max.max(-min) / scale);
        ranges.push((max - min) / scale);
    }
    let empirical = |values: &[f64], x: f64| {
        values.iter().filter(|&&v| v <= x).count() as f64 / values.len() as f64
    };
    for x in [0.75, 1.0, 1.5, 2.0] {
        assert_close(kolmogorov_smirnov_cdf(x), empirical(&largest, x), 0.04);
    }
    for x in [1.0, 1.5, 2.0, 2.5] {
        assert_close(kuiper_cdf(x), empirical(&ranges, x), 0.04);
    }
}

#[test]
fn the_kolmogorov_smirnov_law_equals_its_reflection_series() {
    // P(max |B| ≤ x) = Σ_k (−1)^k [Φ((2k + 1)x) − Φ((2k − 1)x)] by the reflection principle,
    // a series that converges at the other end; the truncated series aims at 1e-8.
    let phi = |t: f64| 0.5 * erfc(-t / std::f64::consts::SQRT_2);
    for x in [0.3, 0.5, 1.0, 1.5, 2.0, 3.0] {
        let reflected: f64 = (-40_i32..=40)
            .map(|k| {
                let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
                sign * (phi(f64::from(2 * k + 1) * x) - phi(f64::from(2 * k - 1) * x))
            })
            .sum();
        assert_close(kolmogorov_smirnov_cdf(x), reflected, 2e-8);
    }
    assert_eq!(kolmogorov_smirnov_cdf(0.0), 0.0);
    assert_eq!(kuiper_cdf(0.0), 0.0);
    assert_close(kuiper_cdf(50.0), 1.0, 1e-8);
}

#[test]
fn estimators_of_logits_take_the_top_label() {
    // Two rows whose top class is certain (confidence exactly 1 in f64) and right: every
    // cumulative difference is 0 and σ = 0, so the tests are undefined and the errors are 0.
    let logits = [100.0_f32, 0.0, 0.0, 100.0];
    let logits = Logits::new(&logits, 2).unwrap();
    let all = estimators(&logits, &[0, 1], 1.0, BINS, Binning::Width).unwrap();
    assert_eq!(all.ks_error, 0.0);
    assert_eq!(all.top_label_ece, 0.0);
    assert_eq!(all.ece_debiased, 0.0);
    assert_eq!(
        (all.kuiper, all.ks_p, all.spiegelhalter_z),
        (None, None, None)
    );
}

// ---------------------------------------------------------------------------------------------
// The libraries' values (`scripts/estimators-reference.py`, tests/fixtures/estimators/)

/// MAPIE, uncertainty-calibration and netcal compute in `f64` the same sums in another order.
const LIBRARY_TOLERANCE: f64 = 1e-9;
/// torchmetrics' `multiclass_calibration_error` computes in `f32` whatever it is given, and
/// MAPIE's shipped tests jitter the confidences by a relative 1e-8 before sorting (seeded
/// normal noise), which moves a statistic by about 1e-8 of its size.
const ROUNDED_TOLERANCE: f64 = 1e-6;

fn fixture() -> serde_json::Value {
    serde_json::from_str(include_str!("../tests/fixtures/estimators/expected.json")).unwrap()
}

fn number(value: &serde_json::Value, pointer: &str) -> f64 {
    value
        .pointer(pointer)
        .and_then(serde_json::Value::as_f64)
        .unwrap_or_else(|| panic!("no number at {pointer}"))
}

/// The fixture's logits, labels, class count and bin count.
fn fixture_rows(fixture: &serde_json::Value) -> (Vec<f32>, Vec<u32>, usize, usize) {
    let logits = fixture["logits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap() as f32)
        .collect();
    let labels = fixture["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect();
    let classes = number(fixture, "/num_classes") as usize;
    (logits, labels, classes, number(fixture, "/bins") as usize)
}

#[test]
fn the_estimators_match_the_libraries() {
    let fixture = fixture();
    let (logits, labels, classes, bins) = fixture_rows(&fixture);
    let logits = Logits::new(&logits, classes).unwrap();
    for case in fixture["temperatures"].as_array().unwrap() {
        let temperature = number(case, "/temperature");
        let all = estimators(&logits, &labels, temperature, bins, Binning::Width).unwrap();
        let mapie = &case["mapie"];
        let pairs = [
            (all.spiegelhalter_z, "/spiegelhalter/statistic"),
            (all.spiegelhalter_p, "/spiegelhalter/p_value"),
            (all.kuiper, "/kuiper/statistic"),
            (all.kuiper_p, "/kuiper/p_value"),
            (all.ks_statistic, "/kolmogorov_smirnov/statistic"),
            (all.ks_p, "/kolmogorov_smirnov/p_value"),
        ];
        for (actual, pointer) in pairs {
            let actual = actual.unwrap();
            assert_close(actual, number(mapie, pointer), LIBRARY_TOLERANCE);
            let jittered = number(mapie, &pointer.replace("statistic", "statistic_jittered"));
            let jittered = if pointer.ends_with("p_value") {
                number(mapie, &format!("{pointer}_jittered"))
            } else {
                jittered
            };
            assert_close(actual, jittered, ROUNDED_TOLERANCE * actual.abs().max(1.0));
        }
        assert_close(all.ks_error, number(mapie, "/ks_error"), LIBRARY_TOLERANCE);
        let debiased = &case["uncertainty_calibration"];
        assert_close(
            all.ece_debiased,
            number(debiased, "/debiased_l2_equal_width"),
            LIBRARY_TOLERANCE,
        );
        // torchmetrics' private debiased L2 (given f64) is the same estimator, but for its
        // extra bin at a confidence of exactly 1.
        if number(case, "/certain_rows") == 0.0 {
            assert_close(
                all.ece_debiased,
                number(case, "/torchmetrics/l2_debiased"),
                LIBRARY_TOLERANCE,
            );
        }
    }
}

#[test]
fn the_cumulative_differences_match_mapie() {
    let fixture = fixture();
    let (logits, labels, classes, _) = fixture_rows(&fixture);
    let logits = Logits::new(&logits, classes).unwrap();
    for case in fixture["temperatures"].as_array().unwrap() {
        let temperature = number(case, "/temperature");
        let (confidence, correct) = confidences(&logits, &labels, temperature).unwrap();
        let curve = CumulativeDifferences::new(&confidence, &correct).unwrap();
        let expected = case["mapie"]["cumulative_differences"].as_array().unwrap();
        assert_eq!(curve.curve.len(), expected.len());
        for (actual, expected) in curve.curve.iter().zip(expected) {
            assert_close(*actual, expected.as_f64().unwrap(), LIBRARY_TOLERANCE);
        }
    }
}

#[test]
fn top_label_ece_matches_mapie_class_by_class() {
    // MAPIE's B + 1 uniform bins are {0} and ((b − 1)/B, b/B]: calibra's B bins, for
    // confidences off the inner edges. MAPIE averages the classes' ECEs with equal weights;
    // Gupta & Ramdas weight them by the class's rows.
    let fixture = fixture();
    let (logits, labels, classes, bins) = fixture_rows(&fixture);
    let logits = Logits::new(&logits, classes).unwrap();
    let predicted = predicted_classes(&logits);
    for case in fixture["temperatures"].as_array().unwrap() {
        let temperature = number(case, "/temperature");
        let (confidence, correct) = confidences(&logits, &labels, temperature).unwrap();
        let result = top_label_ece(
            &confidence,
            &correct,
            &predicted,
            classes,
            bins,
            Binning::Width,
        )
        .unwrap();
        let mapie = &case["mapie"];
        for (class, expected) in result
            .per_class
            .iter()
            .zip(mapie["top_label_per_class"].as_array().unwrap())
        {
            assert_eq!(class.count as f64, number(expected, "/count"));
            assert_close(class.ece, number(expected, "/ece"), LIBRARY_TOLERANCE);
        }
        assert_close(
            result.unweighted(),
            number(mapie, "/top_label_ece"),
            LIBRARY_TOLERANCE,
        );
    }
}

/// ECE, RMSCE and MCE with the rows that `certain` picks (all right, at a confidence of 1)
/// in a bin of their own after calibra's `bins` equal-width bins, as torchmetrics bins them.
fn with_extra_bin(
    confidence: &[f64],
    correct: &[bool],
    bins: usize,
    certain: impl Fn(f64) -> bool,
) -> (f64, f64, f64) {
    let (uncertain_confidence, uncertain_correct): (Vec<f64>, Vec<bool>) = confidence
        .iter()
        .zip(correct)
        .filter(|(&c, _)| !certain(c))
        .unzip();
    let count = confidence.len() - uncertain_confidence.len();
    assert!(confidence
        .iter()
        .zip(correct)
        .all(|(&c, &y)| y || !certain(c)));
    let mut extra = reliability_bins(
        &uncertain_confidence,
        &uncertain_correct,
        bins,
        Binning::Width,
    )
    .unwrap();
    if count > 0 {
        extra.push(Bin {
            lower: 1.0,
            upper: 1.0,
            count,
            confidence: 1.0,
            accuracy: 1.0,
        });
    }
    (
        expected_calibration_error(&extra),
        root_mean_square_calibration_error(&extra),
        crate::calibration::maximum_calibration_error(&extra),
    )
}

#[test]
fn binned_errors_match_netcal_and_torchmetrics_but_for_its_extra_bin() {
    // netcal bins as calibra does, [b/B, (b + 1)/B) with 1 in the last bin. torchmetrics too,
    // except that a confidence of exactly 1 goes to a bin of its own, B + 1. The fixture's 8
    // certain rows (all right) are at exactly 1 at T = 1, and at T = 1.7 within 1e-14 of 1,
    // which torchmetrics' f32 rounds to 1. Calibra's bins with those rows taken out into an
    // extra bin give torchmetrics' values, and calibra's own differ. ECE is
    // `Σ_b |Σ_{i ∈ b} (y_i − c_i)| / n`, to which a right row at confidence 1 adds 0 in either
    // bin: RMSCE moves, and MCE can.
    let fixture = fixture();
    let (logits, labels, classes, bins) = fixture_rows(&fixture);
    let logits = Logits::new(&logits, classes).unwrap();
    for case in fixture["temperatures"].as_array().unwrap() {
        let temperature = number(case, "/temperature");
        let report =
            crate::calibration::evaluate(&logits, &labels, temperature, bins, Binning::Width)
                .unwrap();
        let (confidence, correct) = confidences(&logits, &labels, temperature).unwrap();
        let certain = confidence.iter().filter(|&&c| c == 1.0).count();
        assert_eq!(certain as f64, number(case, "/certain_rows"));
        let (ece, rmsce, mce) = with_extra_bin(&confidence, &correct, bins, |c| c == 1.0);
        assert_close(ece, number(case, "/netcal/ece"), LIBRARY_TOLERANCE);
        assert_close(mce, number(case, "/netcal/mce"), LIBRARY_TOLERANCE);
        let (ece, rmsce32, mce) = with_extra_bin(&confidence, &correct, bins, |c| c as f32 == 1.0);
        assert_close(ece, number(case, "/torchmetrics/l1"), ROUNDED_TOLERANCE);
        assert_close(rmsce32, number(case, "/torchmetrics/l2"), ROUNDED_TOLERANCE);
        assert_close(mce, number(case, "/torchmetrics/max"), ROUNDED_TOLERANCE);
        assert_close(report.ece, ece, 1e-12);
        if certain > 0 {
            assert!((report.rmsce - rmsce).abs() > 1e-4);
        }
    }
}
