//! Unit tests of `selective.rs`: hand-worked curves, AURC and thresholds; the risk guarantee
//! over 1,000 seeded calibration sets of a calibrated synthetic classifier; and what
//! temperature scaling does to the ranking.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

use super::*;
use crate::calibration::{confidences, Logits};
use crate::test_support::calibrated_rows;

/// Hand-worked values: sums of a few decimal fractions.
const HAND_TOLERANCE: f64 = 1e-12;
/// Statistical checks allow this many standard errors.
const STANDARD_ERRORS: f64 = 3.0;

#[test]
fn curve_and_aurc_by_hand() {
    let confidence = [0.6, 0.8, 0.9, 0.5, 0.8];
    let correct = [true, false, true, false, true];
    let curve = risk_coverage_curve(&confidence, &correct).unwrap();
    // 0.9 kept: no error; both 0.8s: 1 of 3; 0.6: 1 of 4; 0.5: 2 of 5.
    let expected = [
        (0.9, 1, 0.0),
        (0.8, 3, 1.0 / 3.0),
        (0.6, 4, 0.25),
        (0.5, 5, 0.4),
    ];
    assert_eq!(curve.len(), expected.len());
    for (point, &(c, kept, risk)) in curve.iter().zip(&expected) {
        assert_eq!((point.confidence, point.kept), (c, kept));
        assert!((point.risk - risk).abs() <= HAND_TOLERANCE);
        assert!((point.coverage - kept as f64 / 5.0).abs() <= HAND_TOLERANCE);
    }
    // (1·0 + 2·(1/3) + 1·0.25 + 1·0.4) / 5.
    let expected_aurc = (2.0 / 3.0 + 0.25 + 0.4) / 5.0;
    assert!((aurc(&confidence, &correct).unwrap() - expected_aurc).abs() <= HAND_TOLERANCE);
}

#[test]
fn risk_control_threshold_by_hand() {
    // n = 9, four wrong answers at 0.95, 0.7, 0.6, 0.4.
    let confidence = [0.95, 0.99, 0.7, 0.9, 0.6, 0.8, 0.4, 0.85, 0.5];
    let correct = [false, true, false, true, false, true, false, true, true];
    // α = 0.3: ⌊3⌋ − 1 = 2 wrong answers may be kept, so λ̂ is the third largest, 0.6.
    assert_eq!(risk_control_threshold(&confidence, &correct, 0.3), Ok(0.6));
    // α = 0.5: ⌊5⌋ − 1 = 4, every wrong answer may be kept.
    assert_eq!(
        risk_control_threshold(&confidence, &correct, 0.5),
        Ok(f64::NEG_INFINITY)
    );
    // α = 0.05: ⌊0.5⌋ − 1 < 0, nothing may be kept.
    assert_eq!(
        risk_control_threshold(&confidence, &correct, 0.05),
        Ok(f64::INFINITY)
    );
    let report = selective_report((&confidence, &correct), (&confidence, &correct), 0.3).unwrap();
    // Kept: 0.95 (wrong), 0.99, 0.7 (wrong), 0.9, 0.8, 0.85.
    assert_eq!(report.threshold, 0.6);
    assert!((report.coverage - 6.0 / 9.0).abs() <= HAND_TOLERANCE);
    assert!((report.selective_risk.unwrap() - 2.0 / 6.0).abs() <= HAND_TOLERANCE);
    assert!((report.answered_error_rate - 2.0 / 9.0).abs() <= HAND_TOLERANCE);
}

#[test]
fn bad_input_is_refused() {
    assert_eq!(
        aurc(&[0.5], &[true, false]),
        Err(SelectiveError::LengthMismatch {
            confidences: 1,
            flags: 2
        })
    );
    assert_eq!(aurc(&[], &[]), Err(SelectiveError::Empty));
    assert_eq!(
        risk_coverage_curve(&[0.5, f64::NAN], &[true, true]),
        Err(SelectiveError::NanConfidence { index: 1 })
    );
    for level in [0.0, 1.0, -0.2, f64::NAN] {
        assert!(matches!(
            risk_control_threshold(&[0.5], &[true], level),
            Err(SelectiveError::InvalidRiskLevel(_))
        ));
    }
}

/// The expected loss of keeping an example above `λ`, `E[(1 − p_max(X))·1[p_max(X) > λ]]`,
/// exact given `X` (a calibrated classifier errs with probability `1 − p_max`), averaged
/// over a large pool of `X`.
struct AnsweredErrorRate {
    /// The pool's top probabilities, increasing.
    top: Vec<f64>,
    /// `suffix[i]`: the sum of `1 − top[j]` over `j ≥ i`, over the pool's size.
    suffix: Vec<f64>,
}

impl AnsweredErrorRate {
    fn new(pool: usize, rng: &mut ChaCha8Rng) -> Self {
        let (probabilities, _) = calibrated_rows(pool, 10, rng);
        let mut top: Vec<f64> = probabilities
            .chunks(10)
            .map(|p| p.iter().copied().fold(0.0, f64::max))
            .collect();
        top.sort_by(f64::total_cmp);
        let mut suffix = vec![0.0; pool + 1];
        for index in (0..pool).rev() {
            suffix[index] = suffix[index + 1] + (1.0 - top[index]) / pool as f64;
        }
        Self { top, suffix }
    }

    fn at(&self, threshold: f64) -> f64 {
        self.suffix[self.top.partition_point(|&c| c <= threshold)]
    }
}

/// Top-label confidences and correctness of `n` images of a calibrated synthetic classifier of
/// ten classes.
fn calibrated_confidences(n: usize, rng: &mut ChaCha8Rng) -> (Vec<f64>, Vec<bool>) {
    let (probabilities, labels) = calibrated_rows(n, 10, rng);
    probabilities
        .chunks(10)
        .zip(&labels)
        .map(|(p, &label)| {
            let top = (0..10).fold(0, |best, k| if p[k] > p[best] { k } else { best });
            (p[top], top == label as usize)
        })
        .unzip()
}

#[test]
fn the_answered_error_rate_is_at_most_the_risk_level_over_calibration_sets() {
    const SPLITS: usize = 1000;
    const N: usize = 500;
    const LEVEL: f64 = 0.1;
    let mut rng = ChaCha8Rng::seed_from_u64(2022);
    let truth = AnsweredErrorRate::new(100_000, &mut rng);
    let losses: Vec<f64> = (0..SPLITS)
        .map(|_| {
            let (confidence, correct) = calibrated_confidences(N, &mut rng);
            truth.at(risk_control_threshold(&confidence, &correct, LEVEL).unwrap())
        })
        .collect();
    let mean = losses.iter().sum::<f64>() / SPLITS as f64;
    let variance = losses.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (SPLITS - 1) as f64;
    let standard_error = (variance / SPLITS as f64).sqrt();
    assert!(
        mean <= LEVEL + STANDARD_ERRORS * standard_error,
        "mean answered error rate {mean} above α = {LEVEL} (standard error {standard_error})"
    );
    // Tight: conformal risk control's loss is at least α − 2/(n + 1) without ties.
    let lower = LEVEL - 2.0 / (N as f64 + 1.0);
    assert!(
        mean >= lower - STANDARD_ERRORS * standard_error,
        "mean {mean} below {lower}: the threshold is needlessly strict"
    );
}

/// `n` rows of `k` logits `s·N(0, 1)` with a scale `s` drawn per row from 0.5 to 4 (rows
/// differ in shape as well as size), labels drawn from `softmax(z)`.
fn varied_logits(n: usize, k: usize, seed: u64) -> (Vec<f32>, Vec<u32>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut logits = Vec::with_capacity(n * k);
    let mut labels = Vec::with_capacity(n);
    for row in 0..n {
        let scale = 0.5 + 3.5 * (row % 7) as f64 / 6.0;
        let z: Vec<f64> = (0..k)
            .map(|_| {
                let noise: f64 = StandardNormal.sample(&mut rng);
                scale * noise
            })
            .collect();
        let max = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let weights: Vec<f64> = z.iter().map(|v| (v - max).exp()).collect();
        labels.push(crate::test_support::draw_index(&weights, &mut rng) as u32);
        logits.extend(z.iter().map(|&v| v as f32));
    }
    (logits, labels)
}

#[test]
fn with_two_classes_temperature_scaling_moves_the_threshold_but_not_the_curve() {
    let (logits, labels) = varied_logits(2000, 2, 5);
    let view = Logits::new(&logits, 2).unwrap();
    let (calibration, test) = (0..1000, 1000..2000);
    let at = |t: f64| confidences(&view, &labels, t).unwrap();
    let (reference_confidence, correct) = at(1.0);
    let reference = risk_coverage_curve(&reference_confidence, &correct).unwrap();
    let reference_report = selective_report(
        (
            &reference_confidence[calibration.clone()],
            &correct[calibration.clone()],
        ),
        (&reference_confidence[test.clone()], &correct[test.clone()]),
        0.1,
    )
    .unwrap();
    for temperature in [0.5, 2.5] {
        let (confidence, same_correct) = at(temperature);
        assert_eq!(same_correct, correct, "predictions do not move");
        let curve = risk_coverage_curve(&confidence, &correct).unwrap();
        let shape = |curve: &[RiskCoveragePoint]| -> Vec<(usize, f64)> {
            curve.iter().map(|p| (p.kept, p.risk)).collect()
        };
        assert_eq!(shape(&curve), shape(&reference), "T = {temperature}");
        let report = selective_report(
            (
                &confidence[calibration.clone()],
                &correct[calibration.clone()],
            ),
            (&confidence[test.clone()], &correct[test.clone()]),
            0.1,
        )
        .unwrap();
        assert_ne!(report.threshold, reference_report.threshold);
        assert_eq!(report.coverage, reference_report.coverage);
        assert_eq!(report.selective_risk, reference_report.selective_risk);
        assert_eq!(report.aurc, reference_report.aurc);
    }
}

#[test]
fn with_ten_classes_temperature_scaling_moves_the_curve_only_a_little() {
    let (logits, labels) = varied_logits(5000, 10, 6);
    let view = Logits::new(&logits, 10).unwrap();
    let aurc_at = |t: f64| {
        let (confidence, correct) = confidences(&view, &labels, t).unwrap();
        aurc(&confidence, &correct).unwrap()
    };
    let reference = aurc_at(1.0);
    for temperature in [0.5, 2.5] {
        let moved = aurc_at(temperature);
        assert!(moved != reference, "rows of different shapes swap places");
        assert!(
            (moved - reference).abs() <= 0.05 * reference,
            "T = {temperature}: AURC {moved} against {reference}"
        );
    }
}

#[test]
fn over_the_experiments_splits_the_mean_answered_error_rate_is_at_most_the_risk_level() {
    // One pool of a calibrated synthetic classifier, split at random as the coverage
    // experiment splits it: the splits' examples are exchangeable, so the guarantee holds for
    // the mean over splits, and without ties it is tight (at least α − 2/(n + 1)).
    const SPLITS: usize = 1000;
    const POOL: usize = 1000;
    const N: usize = 500;
    const LEVEL: f64 = 0.1;
    let mut rng = ChaCha8Rng::seed_from_u64(2024);
    let (confidence, correct) = calibrated_confidences(POOL, &mut rng);
    let risks = risk_control_experiment(&confidence, &correct, N, LEVEL, SPLITS, 9).unwrap();
    assert_eq!(risks.len(), SPLITS);
    let mean = risks.iter().sum::<f64>() / SPLITS as f64;
    let variance = risks.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (SPLITS - 1) as f64;
    let standard_error = (variance / SPLITS as f64).sqrt();
    let lower = LEVEL - 2.0 / (N as f64 + 1.0);
    assert!(
        mean <= LEVEL + STANDARD_ERRORS * standard_error
            && mean >= lower - STANDARD_ERRORS * standard_error,
        "mean answered error rate {mean} outside [{lower}, {LEVEL}] ± {STANDARD_ERRORS} × \
         {standard_error}"
    );
    // Not for each split: one calibration set's threshold answers too many wrongly about half
    // the time.
    let above = risks.iter().filter(|&&r| r > LEVEL).count();
    assert!(
        above > SPLITS / 10 && above < SPLITS * 9 / 10,
        "{above} splits above"
    );
    assert!(matches!(
        risk_control_experiment(&confidence, &correct, POOL, LEVEL, 1, 0),
        Err(SelectiveError::Experiment(_))
    ));
}
