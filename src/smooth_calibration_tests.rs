//! Unit tests of `smooth_calibration.rs`: known answers (constant confidence, exact
//! calibration, mirror symmetry), the density's mass, and relplot's values and the definition
//! summed directly (`scripts/smece-reference.py`, fixture `tests/fixtures/smece/expected.json`).

use super::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

/// Relative tolerance against relplot 1.0.3 where its kernel keeps its mass (below).
const RELPLOT_RELATIVE_TOLERANCE: f64 = 0.02;
/// Bandwidths against relplot: one bisection step, since a step whose `smECE_σ` is within the
/// discretisations' difference of `σ` may go either way.
const BANDWIDTH_TOLERANCE: f64 = 1.0 / 1024.0;
/// relplot is compared only where its kernel keeps at least this share of its mass: its grid
/// reflection drops part of the mass of examples within 10⁻³ of 0 or 1.
const RELPLOT_COMPARABLE_MASS: f64 = 0.98;
/// Relative tolerance against the definition summed directly on 4001 points (the binning and
/// quadrature errors of both computations).
const DEFINITION_RELATIVE_TOLERANCE: f64 = 0.002;
/// Values that are exact up to rounding.
const EXACT_TOLERANCE: f64 = 1e-12;

#[derive(Deserialize)]
struct Fixture {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    confidence: Vec<f64>,
    correct: Vec<bool>,
    smece: f64,
    bandwidth: f64,
    relplot_kernel_mass: f64,
    definition_smece: f64,
    definition_bandwidth: f64,
}

fn fixture() -> Fixture {
    serde_json::from_str(include_str!("../tests/fixtures/smece/expected.json"))
        .expect("the smECE fixture parses")
}

fn relative_difference(actual: f64, expected: f64) -> f64 {
    (actual - expected).abs() / expected.abs()
}

#[test]
fn agrees_with_relplot_where_its_kernel_keeps_its_mass() {
    let mut compared = 0;
    for case in fixture().cases {
        if case.relplot_kernel_mass < RELPLOT_COMPARABLE_MASS {
            continue;
        }
        let ours = smooth_ece(&case.confidence, &case.correct).unwrap();
        assert!(
            relative_difference(ours.smece, case.smece) <= RELPLOT_RELATIVE_TOLERANCE,
            "{}: smECE {} vs relplot {}",
            case.name,
            ours.smece,
            case.smece
        );
        assert!(
            (ours.bandwidth - case.bandwidth).abs() <= BANDWIDTH_TOLERANCE,
            "{}: bandwidth {} vs relplot {}",
            case.name,
            ours.bandwidth,
            case.bandwidth
        );
        compared += 1;
    }
    assert_eq!(compared, 5, "the five synthetic cases are comparable");
}

#[test]
fn agrees_with_the_definition_summed_directly() {
    for case in fixture().cases {
        let ours = smooth_ece(&case.confidence, &case.correct).unwrap();
        assert!(
            relative_difference(ours.smece, case.definition_smece) <= DEFINITION_RELATIVE_TOLERANCE,
            "{}: smECE {} vs definition {}",
            case.name,
            ours.smece,
            case.definition_smece
        );
        assert_eq!(ours.bandwidth, case.definition_bandwidth, "{}", case.name);
    }
}

#[test]
fn relplot_is_larger_where_confidences_pile_up_at_one() {
    // The network's confidences at T = 1: relplot's kernel keeps 72% of its mass, and the
    // confident correct examples it drops are those that pull smECE down.
    let cases = fixture().cases;
    let case = cases
        .iter()
        .find(|case| case.name == "fmnist-ce-first64-T1")
        .unwrap();
    assert!(case.relplot_kernel_mass < 0.75);
    let ours = smooth_ece(&case.confidence, &case.correct).unwrap();
    assert!(
        ours.smece < 0.85 * case.smece,
        "{} vs {}",
        ours.smece,
        case.smece
    );
}

#[test]
fn constant_confidence_gives_the_gap_to_the_accuracy() {
    // Every confidence 0.8, 3 of 5 correct: r̂ = 0.6 − 0.8 wherever the density is positive.
    let confidence = [0.8; 5];
    let correct = [true, false, true, false, true];
    for bandwidth in [0.001, 0.01, 0.1, 1.0] {
        let at = smooth_ece_at(&confidence, &correct, bandwidth).unwrap();
        assert!((at - 0.2).abs() <= EXACT_TOLERANCE, "σ = {bandwidth}: {at}");
    }
    // smECE_σ = 0.2 for every σ: the fixed point is the first multiple of 2⁻¹⁰ at or above it.
    let result = smooth_ece(&confidence, &correct).unwrap();
    assert!((result.smece - 0.2).abs() <= EXACT_TOLERANCE);
    assert_eq!(result.bandwidth, 205.0 / 1024.0);
}

#[test]
fn exact_calibration_gives_zero_at_the_smallest_bandwidth() {
    // Half of the examples at each confidence are correct, and the confidence is 1/2: every
    // residual sum cancels.
    let confidence = [0.5; 8];
    let correct = [true, false, true, false, true, false, true, false];
    let result = smooth_ece(&confidence, &correct).unwrap();
    assert!(result.smece.abs() <= EXACT_TOLERANCE);
    assert_eq!(result.bandwidth, 2.0 / 1024.0);
}

#[test]
fn a_large_calibrated_sample_is_near_zero_and_a_shifted_one_is_not() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let confidence: Vec<f64> = (0..50_000).map(|_| rng.random_range(0.2..1.0)).collect();
    let calibrated: Vec<bool> = confidence
        .iter()
        .map(|&c| rng.random::<f64>() < c)
        .collect();
    let shifted: Vec<bool> = confidence
        .iter()
        .map(|&c| rng.random::<f64>() < c - 0.1)
        .collect();
    // The sampling noise of the smoothed residual is of order 1/sqrt(n·σ) ≈ 0.005.
    assert!(smooth_ece(&confidence, &calibrated).unwrap().smece < 0.01);
    let gap = smooth_ece(&confidence, &shifted).unwrap().smece;
    assert!((gap - 0.1).abs() < 0.01, "{gap}");
}

#[test]
fn mirroring_confidences_and_outcomes_keeps_smece() {
    // The reflected kernel treats 0 and 1 alike: (f, y) → (1 − f, 1 − y) flips every residual's
    // sign and mirrors the grid, so smECE_σ is unchanged, ends included.
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut confidence: Vec<f64> = (0..400).map(|_| rng.random_range(0.0..1.0)).collect();
    confidence[..40].fill(1.0);
    confidence[40..50].fill(0.0);
    let correct: Vec<bool> = confidence
        .iter()
        .map(|&c| rng.random::<f64>() < c * c)
        .collect();
    let mirrored: Vec<f64> = confidence.iter().map(|&c| 1.0 - c).collect();
    let flipped: Vec<bool> = correct.iter().map(|&y| !y).collect();
    for bandwidth in [0.002, 0.03, 0.3] {
        let direct = smooth_ece_at(&confidence, &correct, bandwidth).unwrap();
        let mirror = smooth_ece_at(&mirrored, &flipped, bandwidth).unwrap();
        assert!((direct - mirror).abs() <= 1e-9, "σ = {bandwidth}");
    }
}

#[test]
fn the_reliability_curve_and_density() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let confidence: Vec<f64> = (0..2000).map(|_| rng.random_range(0.0..1.0)).collect();
    let correct: Vec<bool> = confidence
        .iter()
        .map(|&c| rng.random::<f64>() < c)
        .collect();
    let curve = smooth_reliability(&confidence, &correct, 0.05, 201).unwrap();
    assert_eq!(curve.confidence.len(), 201);
    assert_eq!(curve.confidence[0], 0.0);
    assert_eq!(curve.confidence[200], 1.0);
    // The density integrates to 1 (trapezoid on the curve's own 201 points) and is about 1
    // for uniform confidences, ends included thanks to the reflection.
    let integral: f64 = curve
        .density
        .windows(2)
        .map(|w| 0.5 * (w[0] + w[1]) / 200.0)
        .sum();
    assert!((integral - 1.0).abs() < 1e-3, "{integral}");
    assert!(curve.density.iter().all(|&d| (0.8..1.2).contains(&d)));
    // A calibrated sample's curve follows the diagonal within its noise.
    for (&t, &accuracy) in curve.confidence.iter().zip(&curve.accuracy) {
        assert!((accuracy - t).abs() < 0.1, "{t}: {accuracy}");
    }
    // ∫|curve − t|·density is smECE_σ (up to the coarser grid's quadrature).
    let from_curve: f64 = (0..201)
        .map(|p| {
            let weight = if p == 0 || p == 200 { 0.5 } else { 1.0 };
            weight * (curve.accuracy[p] - curve.confidence[p]).abs() * curve.density[p] / 200.0
        })
        .sum();
    let direct = smooth_ece_at(&confidence, &correct, 0.05).unwrap();
    assert!(relative_difference(from_curve, direct) < 0.01);
}

#[test]
fn the_curve_follows_the_diagonal_where_there_is_no_data() {
    let curve = smooth_reliability(&[0.9, 0.95], &[false, true], 0.01, 11).unwrap();
    assert_eq!(curve.accuracy[2], 0.2);
    assert_eq!(curve.density[2], 0.0);
}

#[test]
fn the_search_and_its_curve_together_equal_each_alone() {
    // Calibrated, overconfident and piled-up confidences: bandwidths from the smallest to large.
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for (n, shift) in [(3_000, 0.0), (3_000, 0.15), (40, 0.3), (5_000, -0.02)] {
        let confidence: Vec<f64> = (0..n)
            .map(|_| rng.random_range(0.3..1.0_f64).powf(0.3))
            .collect();
        let correct: Vec<bool> = confidence
            .iter()
            .map(|&c| rng.random::<f64>() < c - shift)
            .collect();
        let (ece, curve) = smooth_ece_and_reliability(&confidence, &correct, 101).unwrap();
        assert_eq!(ece, smooth_ece(&confidence, &correct).unwrap());
        assert_eq!(
            curve,
            smooth_reliability(&confidence, &correct, ece.bandwidth, 101).unwrap()
        );
    }
}

/// The search as relplot states it: every step at `σ ≥ 0.001` evaluates `smECE_σ`.
fn search_evaluating_every_step(confidence: &[f64], correct: &[bool]) -> SmoothEce {
    let (mut below, mut above) = (0.0, 1.0);
    for _ in 0..BANDWIDTH_SEARCH_STEPS {
        let middle = 0.5 * (below + above);
        if middle < MIN_BANDWIDTH || middle < smooth_ece_at(confidence, correct, middle).unwrap() {
            below = middle;
        } else {
            above = middle;
        }
    }
    SmoothEce {
        smece: smooth_ece_at(confidence, correct, above).unwrap(),
        bandwidth: above,
    }
}

/// Confidences like a network's (piled up towards 1, overconfident by `shift`) and outcomes.
fn network_like(rng: &mut ChaCha8Rng, n: usize, shift: f64) -> (Vec<f64>, Vec<bool>) {
    let confidence: Vec<f64> = (0..n)
        .map(|_| rng.random_range(0.1..1.0_f64).powf(0.2))
        .collect();
    let correct = confidence
        .iter()
        .map(|&c| rng.random::<f64>() < c - shift)
        .collect();
    (confidence, correct)
}

#[test]
fn the_bounds_hold_at_every_bandwidth_and_decide_steps() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut decided = 0;
    for (n, shift) in [(5_000, 0.0), (5_000, 0.1), (300, -0.05), (30, 0.4)] {
        let (confidence, correct) = network_like(&mut rng, n, shift);
        let bounds = ErrorBounds::new(&confidence, &correct);
        for bandwidth in [0.001, 0.004, 0.02, 0.07, 0.2, 0.5, 1.0] {
            let error = smooth_ece_at(&confidence, &correct, bandwidth).unwrap();
            assert!(
                bounds.lower <= error * (1.0 + EXACT_TOLERANCE),
                "{n} {shift} {bandwidth}"
            );
            assert!(
                error <= bounds.upper * (1.0 + EXACT_TOLERANCE),
                "{n} {shift} {bandwidth}"
            );
        }
        decided += [0.5, 0.25, 0.125]
            .into_iter()
            .filter(|&b| bounds.surely_above(b) || bounds.surely_below(b))
            .count();
    }
    // The search's first steps, at wide bandwidths, are decided without kernel sums.
    assert!(decided >= 6, "{decided}");
}

#[test]
fn the_search_equals_one_evaluating_every_step_bit_for_bit() {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let mut cases: Vec<(Vec<f64>, Vec<bool>)> = [
        (5_000, 0.0),
        (5_000, 0.08),
        (5_000, -0.03),
        (2_000, 0.3),
        (50, 0.5),
    ]
    .into_iter()
    .map(|(n, shift)| network_like(&mut rng, n, shift))
    .collect();
    // Every outcome wrong at confidence 0.9: smECE_σ is 0.9 at every σ, at the bounds.
    cases.push((vec![0.9; 100], vec![false; 100]));
    // Constant confidence 0.6 at accuracy 0.5.
    cases.push((vec![0.6; 100], (0..100).map(|i| i % 2 == 0).collect()));
    for (confidence, correct) in &cases {
        assert_eq!(
            smooth_ece(confidence, correct).unwrap(),
            search_evaluating_every_step(confidence, correct)
        );
    }
}

#[test]
fn bad_parameters_are_refused() {
    let (confidence, correct) = ([0.5, 0.7], [true, false]);
    for bandwidth in [0.0, 0.0009, 1.5, f64::NAN, -0.1] {
        assert!(matches!(
            smooth_ece_at(&confidence, &correct, bandwidth),
            Err(CalibrationError::InvalidBandwidth(_))
        ));
    }
    for points in [0, 1, MAX_CURVE_POINTS + 1] {
        assert_eq!(
            smooth_reliability(&confidence, &correct, 0.1, points),
            Err(CalibrationError::InvalidPointCount(points))
        );
        assert_eq!(
            smooth_ece_and_reliability(&confidence, &correct, points),
            Err(CalibrationError::InvalidPointCount(points))
        );
    }
    assert_eq!(smooth_ece(&[], &[]), Err(CalibrationError::EmptyInput));
    assert_eq!(
        smooth_ece(&[0.5], &[true, false]),
        Err(CalibrationError::ConfidenceCountMismatch {
            confidences: 1,
            outcomes: 2
        })
    );
    assert_eq!(
        smooth_ece(&[0.5, 1.5], &correct),
        Err(CalibrationError::InvalidConfidence {
            index: 1,
            value: 1.5
        })
    );
}

#[test]
fn the_folded_convolution_is_the_plain_reflected_sum() {
    // Against `Σ_{d=−W..W} g_d · e(j + d)` written out, with the reflection as a function:
    // index `i` folds to `|i|` below 0 and to `2M − i` above `M`; the end points count twice.
    // Kernels wider than the grid (W = 18 on 8 steps, 240 and 1,200 on 200) are wrapped onto
    // one period first.
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for (steps, spread) in [
        (8, 0.7),
        (8, 3.0),
        (200, 3.0),
        (200, 40.0),
        (200, 200.0),
        (1_000, 20.0),
    ] {
        let values: Vec<f64> = (0..=steps).map(|_| rng.random_range(-1.0..1.0)).collect();
        let kernel = sampled_normal(spread);
        let radius = (kernel.len() / 2) as i64;
        let mirrored = |i: i64| {
            let period = 2 * steps as i64;
            let folded = i.rem_euclid(period);
            let index = if folded > steps as i64 {
                period - folded
            } else {
                folded
            } as usize;
            values[index]
                * if index == 0 || index == steps {
                    2.0
                } else {
                    1.0
                }
        };
        let folded = reflected_convolution(&values, 1, &kernel);
        for (j, &out) in folded.iter().enumerate() {
            let plain: f64 = (-radius..=radius)
                .map(|d| kernel[(d + radius) as usize] * mirrored(j as i64 + d))
                .sum();
            assert!(
                (out - plain).abs() <= EXACT_TOLERANCE * plain.abs().max(1.0),
                "M = {steps}, s = {spread}, j = {j}: {out} against {plain}"
            );
        }
    }
}

#[test]
fn columns_side_by_side_convolve_as_each_alone() {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let (steps, width) = (60, 3);
    let values: Vec<f64> = (0..(steps + 1) * width)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let kernel = sampled_normal(4.5);
    let together = reflected_convolution(&values, width, &kernel);
    for column in 0..width {
        let alone: Vec<f64> = values.iter().skip(column).step_by(width).copied().collect();
        let expected = reflected_convolution(&alone, 1, &kernel);
        let got: Vec<f64> = together
            .iter()
            .skip(column)
            .step_by(width)
            .copied()
            .collect();
        assert_eq!(got, expected);
    }
}
