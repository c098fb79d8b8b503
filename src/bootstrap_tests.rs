//! Unit tests of `bootstrap.rs`: the interval holds the estimate, narrows as `1/√n`, is fixed
//! by its seed, and holds a planted miscalibration where its estimator is unbiased.

use super::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Width ratios between `n` and `4n` rows must fall in this range around the `√4 = 2` of the
/// `1/√n` law: 100 resamples estimate a 95% interval's width to about ±10%, so the ratio of
/// two such widths to about ±15%, and ECE and smECE add a bias that shrinks with `n`.
const WIDTH_RATIO_RANGE: (f64, f64) = (1.5, 2.7);
/// Classes of the synthetic logits.
const CLASSES: usize = 10;

/// Overconfident synthetic logits: labels drawn from `softmax(z)`, logits returned as `2.5·z`.
fn overconfident(n: usize, seed: u64) -> (Vec<f32>, Vec<u32>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut values = Vec::with_capacity(n * CLASSES);
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        let favoured = rng.random_range(0..CLASSES);
        let row: Vec<f64> = (0..CLASSES)
            .map(|class| rng.random_range(-1.0..1.0) + if class == favoured { 2.5 } else { 0.0 })
            .collect();
        let total: f64 = row.iter().map(|z| z.exp()).sum();
        let mut draw = rng.random::<f64>() * total;
        let label = row
            .iter()
            .position(|z| {
                draw -= z.exp();
                draw < 0.0
            })
            .unwrap_or(CLASSES - 1);
        values.extend(row.iter().map(|&z| (2.5 * z) as f32));
        labels.push(label as u32);
    }
    (values, labels)
}

fn intervals(n: usize, seed: u64) -> MetricIntervals {
    let (values, labels) = overconfident(n, 1);
    let logits = Logits::new(&values, CLASSES).unwrap();
    let settings = BootstrapSettings {
        resamples: DEFAULT_RESAMPLES,
        level: DEFAULT_LEVEL,
        seed,
    };
    bootstrap_intervals(&logits, &labels, 1.0, 15, Binning::Width, &settings).unwrap()
}

fn each(intervals: &MetricIntervals) -> [(&'static str, MetricInterval); 7] {
    [
        ("ece", intervals.ece),
        ("smece", intervals.smece),
        ("nll", intervals.nll),
        ("brier", intervals.brier),
        ("ece_debiased", intervals.ece_debiased),
        ("top_label_ece", intervals.top_label_ece),
        ("ks_error", intervals.ks_error),
    ]
}

#[test]
fn the_interval_holds_the_estimate_and_the_estimates_are_the_metrics() {
    let (values, labels) = overconfident(2000, 1);
    let logits = Logits::new(&values, CLASSES).unwrap();
    let result = intervals(2000, 7);
    for (name, interval) in each(&result) {
        assert!(
            interval.lower < interval.estimate && interval.estimate < interval.upper,
            "{name}: {interval:?}"
        );
    }
    let report = calibration::evaluate(&logits, &labels, 1.0, 15, Binning::Width).unwrap();
    let (confidence, correct) = calibration::confidences(&logits, &labels, 1.0).unwrap();
    let smece = smooth_calibration::smooth_ece(&confidence, &correct).unwrap();
    assert_eq!(result.ece.estimate, report.ece);
    assert_eq!(result.smece.estimate, smece.smece);
    assert!((result.nll.estimate - report.nll).abs() <= 1e-12);
    assert!((result.brier.estimate - report.brier).abs() <= 1e-12);
    let estimators =
        calibration_estimators::estimators(&logits, &labels, 1.0, 15, Binning::Width).unwrap();
    assert_eq!(result.ece_debiased.estimate, estimators.ece_debiased);
    assert_eq!(result.top_label_ece.estimate, estimators.top_label_ece);
    assert_eq!(result.ks_error.estimate, estimators.ks_error);
}

/// The miscalibration planted in [`planted_gap`]: every image is right with probability its
/// confidence minus this, so the debiased L2 error, the top-label ECE and the KS error of the
/// population are all exactly this.
const PLANTED_GAP: f64 = 0.05;

/// `n` rows of 10 logits overconfident by [`PLANTED_GAP`] at every confidence
/// (`test_support::planted_gap_rows`).
fn planted_gap(n: usize, seed: u64) -> (Vec<f32>, Vec<u32>) {
    crate::test_support::planted_gap_rows(
        n,
        CLASSES,
        PLANTED_GAP,
        &mut ChaCha8Rng::seed_from_u64(seed),
    )
}

/// Over `sets` seeded sets of 2,000 rows overconfident by [`PLANTED_GAP`]: how many of the
/// debiased L2 error's, the KS error's and the top-label ECE's 95% intervals hold the gap, and
/// how many of the top-label ECE's lie wholly above it.
fn planted_gap_coverage(sets: u64) -> ([usize; 3], usize) {
    let mut held = [0; 3];
    let mut above = 0;
    for seed in 0..sets {
        let (values, labels) = planted_gap(2000, 100 + seed);
        let logits = Logits::new(&values, CLASSES).unwrap();
        let settings = BootstrapSettings {
            resamples: DEFAULT_RESAMPLES,
            level: DEFAULT_LEVEL,
            seed,
        };
        let result =
            bootstrap_intervals(&logits, &labels, 1.0, 15, Binning::Width, &settings).unwrap();
        let intervals = [result.ece_debiased, result.ks_error, result.top_label_ece];
        for (count, interval) in held.iter_mut().zip(intervals) {
            *count += usize::from(interval.lower <= PLANTED_GAP && PLANTED_GAP <= interval.upper);
        }
        above += usize::from(result.top_label_ece.lower > PLANTED_GAP);
    }
    (held, above)
}

#[test]
fn the_debiased_and_ks_intervals_hold_a_planted_gap_at_their_level_over_100_sets() {
    let (held, above) = planted_gap_coverage(100);
    // The KS error's interval within 3 standard errors of 95%; the debiased L2 error's misses a
    // little more (90 of 100 when written): the square root of its unbiased square is biased
    // down, and clipped at 0.
    assert!(held[0] >= 85 && held[1] >= 89, "held of 100: {held:?}");
    assert_eq!(
        above, 100,
        "top-label ECE's bias: {above} of 100 above the gap"
    );
}

#[test]
fn the_width_shrinks_as_one_over_root_n() {
    let (small, large) = (intervals(1000, 3), intervals(4000, 3));
    for ((name, small), (_, large)) in each(&small).into_iter().zip(each(&large)) {
        let ratio = (small.upper - small.lower) / (large.upper - large.lower);
        assert!(
            (WIDTH_RATIO_RANGE.0..=WIDTH_RATIO_RANGE.1).contains(&ratio),
            "{name}: width ratio {ratio}"
        );
    }
}

#[test]
fn a_seed_fixes_the_intervals() {
    assert_eq!(intervals(500, 9), intervals(500, 9));
    assert_ne!(intervals(500, 9), intervals(500, 10));
}

#[test]
fn percentiles_interpolate_between_order_statistics() {
    let sorted = [1.0, 2.0, 4.0, 8.0, 16.0];
    assert_eq!(percentile(&sorted, 0.0), 1.0);
    assert_eq!(percentile(&sorted, 1.0), 16.0);
    assert_eq!(percentile(&sorted, 0.5), 4.0);
    // Position 0.05·4 = 0.2: a fifth of the way from 1 to 2.
    assert!((percentile(&sorted, 0.05) - 1.2).abs() <= 1e-15);
}

#[test]
fn bad_settings_are_refused() {
    let (values, labels) = overconfident(20, 1);
    let logits = Logits::new(&values, CLASSES).unwrap();
    let run = |resamples, level| {
        let settings = BootstrapSettings {
            resamples,
            level,
            seed: 0,
        };
        bootstrap_intervals(&logits, &labels, 1.0, 15, Binning::Width, &settings)
    };
    for resamples in [0, 1, MAX_RESAMPLES + 1] {
        assert_eq!(
            run(resamples, 0.9),
            Err(BootstrapError::InvalidResampleCount(resamples))
        );
    }
    for level in [0.0, 1.0, -0.5] {
        assert_eq!(run(100, level), Err(BootstrapError::InvalidLevel(level)));
    }
    assert!(matches!(
        run(100, f64::NAN),
        Err(BootstrapError::InvalidLevel(_))
    ));
    let settings = BootstrapSettings {
        resamples: 100,
        level: 0.9,
        seed: 0,
    };
    assert_eq!(
        bootstrap_intervals(&logits, &labels, 0.0, 15, Binning::Width, &settings),
        Err(BootstrapError::Calibration(
            CalibrationError::InvalidTemperature(0.0)
        ))
    );
}

/// Confidences and outcomes of the overconfident logits at `T = 1`.
fn overconfident_confidences(n: usize) -> (Vec<f64>, Vec<bool>) {
    let (values, labels) = overconfident(n, 1);
    let logits = Logits::new(&values, CLASSES).unwrap();
    calibration::confidences(&logits, &labels, 1.0).unwrap()
}

fn band_settings(seed: u64) -> BootstrapSettings {
    BootstrapSettings {
        resamples: DEFAULT_RESAMPLES,
        level: DEFAULT_LEVEL,
        seed,
    }
}

#[test]
fn the_resampled_curve_on_the_coarse_grid_is_within_0_002_of_the_curve_where_it_is_drawn() {
    // The overconfident sample at its own bandwidth, and at bandwidths from well below to far
    // above it (the band's grid has 8 steps at σ = 0.67, the T = 20 case of the page).
    let (confidence, correct) = overconfident_confidences(5_000);
    let own = smooth_calibration::smooth_ece(&confidence, &correct)
        .unwrap()
        .bandwidth;
    for bandwidth in [own, 0.005, 0.02, 0.1, 0.3, 0.67] {
        let fine =
            smooth_calibration::smooth_reliability(&confidence, &correct, bandwidth, 201).unwrap();
        let resampler =
            smooth_calibration::CurveResampler::new(&confidence, &correct, bandwidth, 201);
        let coarse = resampler.curves(&vec![1; confidence.len()], 1);
        // Where the diagram draws the curve and its band: about ten examples within σ or more
        // (elsewhere both grids divide kernel tails of nearly nothing by each other).
        let drawn = |p: usize| fine.density[p] * 5_000.0 * 2.0 * bandwidth >= 10.0;
        let largest = (0..201)
            .filter(|&p| drawn(p))
            .map(|p| (fine.accuracy[p] - coarse[p]).abs())
            .fold(0.0, f64::max);
        assert!(
            largest < 0.002,
            "σ = {bandwidth}: coarse grid moves the curve by {largest}"
        );
    }
}

#[test]
fn the_band_holds_the_curve_and_covers_a_calibrated_samples_diagonal() {
    // Calibrated samples: the outcome is drawn with probability equal to the confidence, so
    // the true curve is the diagonal. Neighbouring points of one sample's band miss together
    // (they share most of their examples), so coverage is judged over ten samples.
    let (bandwidth, points, samples) = (0.05, 101, 10);
    let data = 35..=95;
    let mut covered = 0;
    for seed in 0..samples {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let confidence: Vec<f64> = (0..2_000).map(|_| rng.random_range(0.3..1.0)).collect();
        let correct: Vec<bool> = confidence
            .iter()
            .map(|&f| rng.random::<f64>() < f)
            .collect();
        let curve =
            smooth_calibration::smooth_reliability(&confidence, &correct, bandwidth, points)
                .unwrap();
        let resamples = Resamples::draw(confidence.len(), &band_settings(seed)).unwrap();
        let band =
            smooth_reliability_band(&confidence, &correct, bandwidth, points, &resamples).unwrap();
        let inside = |value: f64, p: usize| band.lower[p] <= value && value <= band.upper[p];
        // Where the data lie: the sample's own curve inside its band everywhere, and the band
        // a few hundredths wide, not a sliver and not the whole chart.
        assert!(data.clone().all(|p| inside(curve.accuracy[p], p)));
        for p in data.clone() {
            let width = band.upper[p] - band.lower[p];
            assert!((0.01..0.2).contains(&width), "width {width} at point {p}");
        }
        covered += data
            .clone()
            .filter(|&p| inside(p as f64 / 100.0, p))
            .count();
    }
    // A 95% pointwise band: the percentile bootstrap of 100 resamples covers a little less.
    let share = covered as f64 / (samples as usize * data.count()) as f64;
    assert!(
        share >= 0.85,
        "the diagonal inside the band at {share:.3} of the points"
    );
}

#[test]
fn the_band_is_fixed_by_its_seed_and_narrows_with_more_data() {
    let width = |n: usize, seed: u64| {
        let (confidence, correct) = overconfident_confidences(n);
        let resamples = Resamples::draw(n, &band_settings(seed)).unwrap();
        let band = smooth_reliability_band(&confidence, &correct, 0.05, 51, &resamples).unwrap();
        (band.clone(), band.upper[45] - band.lower[45])
    };
    let (first, small) = width(1_000, 7);
    assert_eq!(first, width(1_000, 7).0);
    assert_ne!(first, width(1_000, 8).0);
    let (_, large) = width(4_000, 7);
    let ratio = small / large;
    assert!(
        (WIDTH_RATIO_RANGE.0..WIDTH_RATIO_RANGE.1).contains(&ratio),
        "width ratio {ratio} between 1,000 and 4,000 rows"
    );
}

#[test]
fn resamples_count_the_rows_that_the_seeded_draws_pick() {
    let settings = band_settings(3);
    let resamples = Resamples::draw(500, &settings).unwrap();
    assert_eq!((resamples.rows(), resamples.settings()), (500, &settings));
    // Independently: the same generator's row draws, counted.
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for resample in 0..DEFAULT_RESAMPLES {
        let mut expected = vec![0_u16; 500];
        for _ in 0..500 {
            expected[rng.random_range(0..500)] += 1;
        }
        let counts: Vec<u16> = (0..500)
            .map(|row| resamples.counts[row * DEFAULT_RESAMPLES + resample])
            .collect();
        assert_eq!(counts, expected);
    }
    assert_eq!(resamples.counts.len(), 500 * DEFAULT_RESAMPLES);
}

#[test]
fn a_resamples_curve_is_the_curve_of_its_rows_written_out() {
    // Counts weigh each row; writing every drawn row out as often as it was drawn and
    // weighing each once gives the same curve up to rounding (1e-12).
    let (confidence, correct) = overconfident_confidences(800);
    let resamples = Resamples::draw(800, &band_settings(5)).unwrap();
    let resampler = smooth_calibration::CurveResampler::new(&confidence, &correct, 0.04, 101);
    let all = resampler.curves(&resamples.counts, DEFAULT_RESAMPLES);
    for resample in [0, 1, DEFAULT_RESAMPLES - 1] {
        let (mut drawn_confidence, mut drawn_correct) = (Vec::new(), Vec::new());
        for row in 0..800 {
            for _ in 0..resamples.counts[row * DEFAULT_RESAMPLES + resample] {
                drawn_confidence.push(confidence[row]);
                drawn_correct.push(correct[row]);
            }
        }
        let written_out =
            smooth_calibration::CurveResampler::new(&drawn_confidence, &drawn_correct, 0.04, 101)
                .curves(&vec![1; drawn_confidence.len()], 1);
        let weighted = all.iter().skip(resample).step_by(DEFAULT_RESAMPLES);
        for (a, b) in weighted.zip(&written_out) {
            assert!(
                (a - b).abs() < 1e-12,
                "resample {resample}: {a} against {b}"
            );
        }
    }
}

#[test]
fn the_band_refuses_bad_parameters() {
    let (confidence, correct) = overconfident_confidences(100);
    let resamples = Resamples::draw(100, &band_settings(1)).unwrap();
    let band = |bandwidth: f64, points: usize| {
        smooth_reliability_band(&confidence, &correct, bandwidth, points, &resamples)
    };
    assert_eq!(
        band(0.0005, 51),
        Err(CalibrationError::InvalidBandwidth(0.0005).into())
    );
    assert_eq!(
        band(0.05, 1),
        Err(CalibrationError::InvalidPointCount(1).into())
    );
    let one = BootstrapSettings {
        resamples: 1,
        ..band_settings(1)
    };
    assert_eq!(
        Resamples::draw(100, &one),
        Err(BootstrapError::InvalidResampleCount(1))
    );
    assert_eq!(
        Resamples::draw(0, &band_settings(1)),
        Err(CalibrationError::EmptyInput.into())
    );
    assert_eq!(
        smooth_reliability_band(&confidence, &correct[1..], 0.05, 51, &resamples),
        Err(CalibrationError::ConfidenceCountMismatch {
            confidences: 100,
            outcomes: 99
        }
        .into())
    );
    let fewer = Resamples::draw(99, &band_settings(1)).unwrap();
    assert_eq!(
        smooth_reliability_band(&confidence, &correct, 0.05, 51, &fewer),
        Err(BootstrapError::ResampledRowMismatch {
            drawn_for: 99,
            rows: 100
        })
    );
}

#[test]
fn a_proportions_interval_is_the_binomial_quantiles() {
    // 4,500 of 5,000 (p̂ = 0.9): the resampled proportion is Binomial(5000, 0.9)/5000, sd
    // √(0.9·0.1/5000) = 0.00424; its 2.5% and 97.5% quantiles lie about 1.96 sd from 0.9, on
    // whole counts: 4,458 and 4,541 (scipy.stats.binom.ppf([0.025, 0.975], 5000, 0.9)).
    let interval = proportion_interval(4_500, 5_000, 0.95).unwrap();
    assert_eq!(interval.estimate, 0.9);
    assert_eq!(interval.lower, 4_458.0 / 5_000.0);
    assert_eq!(interval.upper, 4_541.0 / 5_000.0);
    // A resampling bootstrap of the same proportion agrees within its own noise (1,000
    // resamples: the 2.5% quantile to about ±0.0004).
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut resampled: Vec<f64> = (0..1_000)
        .map(|_| {
            (0..5_000)
                .filter(|_| rng.random_range(0..5_000) < 4_500)
                .count() as f64
                / 5e3
        })
        .collect();
    resampled.sort_unstable_by(f64::total_cmp);
    assert!((percentile(&resampled, 0.025) - interval.lower).abs() <= 0.001);
    assert!((percentile(&resampled, 0.975) - interval.upper).abs() <= 0.001);
    // Every example covered: nothing varies.
    let all = proportion_interval(10, 10, 0.95).unwrap();
    assert_eq!((all.lower, all.upper), (1.0, 1.0));
    assert_eq!(
        proportion_interval(3, 0, 0.95),
        Err(BootstrapError::InvalidProportion { successes: 3, n: 0 })
    );
    assert_eq!(
        proportion_interval(11, 10, 0.95),
        Err(BootstrapError::InvalidProportion {
            successes: 11,
            n: 10
        })
    );
    assert_eq!(
        proportion_interval(5, 10, 1.0),
        Err(BootstrapError::InvalidLevel(1.0))
    );
}

/// The ECE and NLL intervals of rows given column by column are those `bootstrap_intervals`
/// draws for the same rows at one temperature: the same resamples, so the same numbers to the
/// last digit (the page's normalised temperature table beside `calibra report --bootstrap`).
#[test]
fn ece_and_nll_intervals_of_given_rows_share_the_temperature_intervals_resamples() {
    let (values, labels) = overconfident(2000, 3);
    let logits = Logits::new(&values, CLASSES).unwrap();
    let settings = BootstrapSettings {
        resamples: DEFAULT_RESAMPLES,
        level: DEFAULT_LEVEL,
        seed: 5,
    };
    let temperature = 1.7;
    let full =
        bootstrap_intervals(&logits, &labels, temperature, 15, Binning::Mass, &settings).unwrap();
    let (confidence, correct) = calibration::confidences(&logits, &labels, temperature).unwrap();
    let mut probabilities = vec![0.0; CLASSES];
    let nll: Vec<f64> = logits
        .rows()
        .zip(&labels)
        .map(|(row, &label)| {
            -calibration::softmax_row(row, temperature, &mut probabilities)
                .log_probability(row[label as usize])
        })
        .collect();
    let rows = ScoredRows {
        confidence: &confidence,
        correct: &correct,
        nll: &nll,
    };
    let light = ece_nll_intervals(rows, 15, Binning::Mass, &settings).unwrap();
    assert_eq!(light.ece, full.ece);
    assert_eq!(light.nll, full.nll);
}

#[test]
fn ece_and_nll_intervals_refuse_columns_of_different_lengths() {
    let settings = BootstrapSettings {
        resamples: DEFAULT_RESAMPLES,
        level: DEFAULT_LEVEL,
        seed: 0,
    };
    let rows = ScoredRows {
        confidence: &[0.5, 0.9],
        correct: &[true, false],
        nll: &[0.7],
    };
    let error = ece_nll_intervals(rows, 15, Binning::Width, &settings).unwrap_err();
    assert_eq!(
        error.to_string(),
        "2 confidences were given with 1 correctness flags"
    );
}

#[test]
fn a_paired_difference_resamples_the_same_rows_for_both() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let confidence: Vec<f64> = (0..400).map(|_| rng.random_range(0.5..1.0)).collect();
    let correct: Vec<bool> = confidence.iter().map(|&c| rng.random_bool(c)).collect();
    let nll: Vec<f64> = confidence
        .iter()
        .zip(&correct)
        .map(|(&c, &right)| -(if right { c } else { 1.0 - c }).ln())
        .collect();
    let rows = ScoredRows {
        confidence: &confidence,
        correct: &correct,
        nll: &nll,
    };
    let settings = BootstrapSettings {
        resamples: 200,
        level: DEFAULT_LEVEL,
        seed: 3,
    };
    // The same rows twice: every resample's difference is exactly 0.
    let same = paired_ece_nll_difference(rows, rows, 10, Binning::Width, &settings).unwrap();
    for interval in [same.ece, same.nll] {
        assert_eq!(
            (interval.estimate, interval.lower, interval.upper),
            (0.0, 0.0, 0.0)
        );
    }
    // Against constant confidences: the estimates are the differences of each one's own.
    let flat_confidence = vec![0.75; 400];
    let flat_nll: Vec<f64> = correct
        .iter()
        .map(|&right| -(if right { 0.75_f64 } else { 0.25 }).ln())
        .collect();
    let flat = ScoredRows {
        confidence: &flat_confidence,
        correct: &correct,
        nll: &flat_nll,
    };
    let difference = paired_ece_nll_difference(rows, flat, 10, Binning::Width, &settings).unwrap();
    let (own, other) = (
        ece_nll_intervals(rows, 10, Binning::Width, &settings).unwrap(),
        ece_nll_intervals(flat, 10, Binning::Width, &settings).unwrap(),
    );
    assert_eq!(
        difference.ece.estimate,
        own.ece.estimate - other.ece.estimate
    );
    assert_eq!(
        difference.nll.estimate,
        own.nll.estimate - other.nll.estimate
    );
    let error = paired_ece_nll_difference(
        rows,
        ScoredRows {
            confidence: &[0.9],
            correct: &[true],
            nll: &[0.1],
        },
        10,
        Binning::Width,
        &settings,
    )
    .unwrap_err();
    assert_eq!(
        error,
        BootstrapError::ResampledRowMismatch {
            drawn_for: 400,
            rows: 1
        }
    );
}
