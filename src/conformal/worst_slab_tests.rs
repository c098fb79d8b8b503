//! Unit tests of `conformal/worst_slab.rs`: Romano, Sesia & Candès's `wsc` search
//! (`scripts/conformal-reference.py`, fixture `tests/fixtures/conformal/worst-slab.json`), a
//! hand-worked case, and seeded data whose conditional coverage is planted.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::Deserialize;

use super::*;

/// The reference divides the same two integers in float64.
const LIBRARY_TOLERANCE: f64 = 1e-12;

#[derive(Deserialize)]
struct Reference {
    features: Vec<f32>,
    dimension: usize,
    covered: Vec<bool>,
    directions: Vec<f64>,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    delta: f64,
    coverage: f64,
    per_direction: Vec<f64>,
}

#[test]
fn coverage_equals_the_arc_codes_search() {
    let reference: Reference = serde_json::from_str(include_str!(
        "../../tests/fixtures/conformal/worst-slab.json"
    ))
    .unwrap();
    for case in &reference.cases {
        let worst = worst_slab_coverage(
            &reference.features,
            reference.dimension,
            &reference.covered,
            &reference.directions,
            case.delta,
        )
        .unwrap();
        assert!(
            (worst.coverage - case.coverage).abs() <= LIBRARY_TOLERANCE,
            "δ = {}: {} against {}",
            case.delta,
            worst.coverage,
            case.coverage
        );
        assert!(worst.count > (case.delta * reference.covered.len() as f64) as usize);
        let dimension = reference.dimension;
        for (index, (direction, expected)) in reference
            .directions
            .chunks_exact(dimension)
            .zip(&case.per_direction)
            .enumerate()
        {
            let along = worst_slab_coverage(
                &reference.features,
                dimension,
                &reference.covered,
                direction,
                case.delta,
            )
            .unwrap();
            assert!(
                (along.coverage - expected).abs() <= LIBRARY_TOLERANCE,
                "δ = {}, direction {index}: {} against {expected}",
                case.delta,
                along.coverage
            );
        }
    }
}

#[test]
fn the_worst_run_of_enough_examples_by_hand() {
    // One dimension, direction +1: sorted by x the flags read 1 1 0 1 0 0 1 1 1 1.
    let features = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
    let covered = [
        true, true, false, true, false, false, true, true, true, true,
    ];
    // δ = 0.2: runs of at least 3; positions 2–4, 3–5 and 4–6 cover 1 of 3, but positions
    // 2–5 (0 1 0 0) cover 1 of 4.
    let worst = worst_slab_coverage(&features, 1, &covered, &[1.0], 0.2).unwrap();
    assert_eq!((worst.coverage, worst.count), (0.25, 4));
    // δ = 0.5: runs of at least 6: positions 0–5 cover 3 of 6.
    let worst = worst_slab_coverage(&features, 1, &covered, &[1.0], 0.5).unwrap();
    assert_eq!(worst.coverage, 0.5);
    // δ = 0.95: a run of 11 does not fit in 10 examples.
    let worst = worst_slab_coverage(&features, 1, &covered, &[1.0], 0.95).unwrap();
    assert_eq!(worst.coverage, 1.0);
}

#[test]
fn bad_input_is_refused() {
    let features = [0.0_f32, 1.0, 2.0, 3.0];
    let covered = [true, false];
    assert!(worst_slab_coverage(&features, 2, &covered, &[1.0, 0.0], 0.5).is_ok());
    assert!(matches!(
        worst_slab_coverage(&features, 2, &covered, &[1.0], 0.5),
        Err(ConformalError::InvalidParameter {
            name: "directions",
            ..
        })
    ));
    assert!(matches!(
        worst_slab_coverage(&features, 3, &covered, &[1.0, 0.0, 0.0], 0.5),
        Err(ConformalError::ShapeMismatch { .. })
    ));
    for delta in [0.0, 1.0, f64::NAN] {
        assert!(matches!(
            worst_slab_coverage(&features, 2, &covered, &[1.0, 0.0], delta),
            Err(ConformalError::InvalidParameter { name: "delta", .. })
        ));
    }
    assert_eq!(
        worst_slab_coverage(&[], 2, &[], &[1.0, 0.0], 0.5),
        Err(ConformalError::Empty)
    );
    assert!(matches!(
        worst_slab_noise_floor(&features, 2, &[1.0, 0.0], 0.5, 0.1, 0, 0),
        Err(ConformalError::InvalidParameter {
            name: "repetitions",
            ..
        })
    ));
}

#[test]
fn directions_are_seeded_unit_vectors() {
    let directions = random_directions(20, 5, 3);
    assert_eq!(directions, random_directions(20, 5, 3));
    assert_ne!(directions, random_directions(20, 5, 4));
    for v in directions.chunks_exact(5) {
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() <= 1e-12);
    }
}

/// `n` features from N(0, I₃) and coverage flags drawn with probability `level(x)`.
fn planted(n: usize, seed: u64, level: impl Fn(&[f32]) -> f64) -> (Vec<f32>, Vec<bool>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let features: Vec<f32> = (0..n * 3)
        .map(|_| {
            let z: f64 = StandardNormal.sample(&mut rng);
            z as f32
        })
        .collect();
    let covered = features
        .chunks_exact(3)
        .map(|x| rng.random::<f64>() < level(x))
        .collect();
    (features, covered)
}

#[test]
fn exact_conditional_coverage_sits_at_the_noise_floor_and_a_planted_gap_below_it() {
    const N: usize = 500;
    const DELTA: f64 = 0.1;
    const ALPHA: f64 = 0.1;
    let directions = random_directions(50, 3, 7);
    let (features, _) = planted(N, 1, |_| 0.9);
    let floor = worst_slab_noise_floor(&features, 3, &directions, DELTA, ALPHA, 40, 8).unwrap();
    // Far below 1 − α: the search picks the worst of many slabs.
    assert!(floor < 0.8 && floor > 0.5, "floor {floor}");
    // Data with exact conditional coverage 1 − α scatter around the floor.
    let exact: Vec<f64> = (0..20)
        .map(|seed| {
            let (features, covered) = planted(N, 100 + seed, |_| 0.9);
            worst_slab_coverage(&features, 3, &covered, &directions, DELTA)
                .unwrap()
                .coverage
        })
        .collect();
    let mean = exact.iter().sum::<f64>() / exact.len() as f64;
    assert!(
        (mean - floor).abs() <= 0.03,
        "mean {mean} against floor {floor}"
    );
    // Coverage 0.5 where x₀ > 1 (16% of the mass): well below the floor.
    let (features, covered) = planted(N, 2, |x| if x[0] > 1.0 { 0.5 } else { 0.9 });
    let gap = worst_slab_coverage(&features, 3, &covered, &directions, DELTA).unwrap();
    assert!(
        gap.coverage < floor - 0.1,
        "{} against floor {floor}",
        gap.coverage
    );
}
