//! Unit tests of `ood_pvalues.rs`: hand-worked cases, crepes' p-values and statsmodels'
//! Benjamini–Hochberg (`scripts/conformal-reference.py`, fixture
//! `tests/fixtures/conformal/ood-pvalues.json`), and the false discovery rate over 1,000
//! seeded batches whose nulls are planted.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use serde::Deserialize;

use super::*;

/// crepes' p-values are counts over `n + 1` in float64, as here: equal but for the last bit.
const LIBRARY_TOLERANCE: f64 = 1e-12;
/// Statistical checks allow this many standard errors.
const STANDARD_ERRORS: f64 = 3.0;

#[derive(Deserialize)]
struct Reference {
    calibration: Vec<f64>,
    tested: Vec<f64>,
    pvalues: Vec<f64>,
    benjamini_hochberg: Vec<Rejections>,
}

#[derive(Deserialize)]
struct Rejections {
    level: f64,
    rejected: Vec<bool>,
}

#[test]
fn pvalues_and_rejections_equal_crepes_and_statsmodels() {
    let reference: Reference =
        serde_json::from_str(include_str!("../tests/fixtures/conformal/ood-pvalues.json")).unwrap();
    let pvalues = conformal_pvalues(&reference.calibration, &reference.tested).unwrap();
    assert_eq!(pvalues.len(), reference.pvalues.len());
    for (index, (p, expected)) in pvalues.iter().zip(&reference.pvalues).enumerate() {
        assert!(
            (p - expected).abs() <= LIBRARY_TOLERANCE,
            "row {index}: {p} against crepes' {expected}"
        );
    }
    for case in &reference.benjamini_hochberg {
        let discoveries = benjamini_hochberg(&pvalues, case.level).unwrap();
        assert_eq!(discoveries.rejected, case.rejected, "q = {}", case.level);
        assert!(discoveries.count > 0);
    }
}

#[test]
fn pvalues_count_the_calibration_scores_at_or_below() {
    let pvalues = conformal_pvalues(&[3.0, 1.0, 2.0], &[0.0, 2.0, 5.0, 1.0]).unwrap();
    assert_eq!(pvalues, [0.25, 0.75, 1.0, 0.5]);
}

#[test]
fn benjamini_hochberg_steps_up_to_the_largest_qualifying_rank() {
    // q = 0.1, m = 4: 0.01 ≤ 0.025, 0.03 ≤ 0.05, 0.04 ≤ 0.075, 0.5 > 0.1.
    let found = benjamini_hochberg(&[0.01, 0.04, 0.03, 0.5], 0.1).unwrap();
    assert_eq!(found.rejected, [true, true, true, false]);
    assert_eq!(found.count, 3);
    assert_eq!(found.largest_rejected_pvalue, Some(0.04));
    // m = 3: 0.04 > 0.033 fails at rank 1, but 0.06 ≤ 0.067 at rank 2 rejects both.
    let stepped = benjamini_hochberg(&[0.5, 0.06, 0.04], 0.1).unwrap();
    assert_eq!(stepped.rejected, [false, true, true]);
    let none = benjamini_hochberg(&[0.2, 0.3], 0.1).unwrap();
    assert_eq!((none.count, none.largest_rejected_pvalue), (0, None));
}

#[test]
fn bad_input_is_refused() {
    for level in [0.0, 1.0, -0.1, f64::NAN] {
        assert!(matches!(
            benjamini_hochberg(&[0.5], level),
            Err(OodError::InvalidFdrLevel(_))
        ));
    }
    assert_eq!(
        conformal_pvalues(&[], &[1.0]),
        Err(OodError::EmptyScores(ScoreSet::Calibration))
    );
    assert_eq!(
        conformal_pvalues(&[1.0, f64::NAN], &[1.0]),
        Err(OodError::NanScore {
            set: ScoreSet::Calibration,
            index: 1
        })
    );
    assert_eq!(
        outlier_test(&[1.0], &[1.0], &[], 0.1),
        Err(OodError::EmptyScores(ScoreSet::OutOfDistribution))
    );
}

/// One seeded batch: `n` calibration and `nulls` tested scores from N(0, 1), `outliers` tested
/// scores from N(−3, 1) (lower = more OOD); the outlier test at `level`.
fn planted_batch(
    rng: &mut ChaCha8Rng,
    n: usize,
    nulls: usize,
    outliers: usize,
    level: f64,
) -> OutlierTest {
    let null = Normal::new(0.0, 1.0).unwrap();
    let shifted = Normal::new(-3.0, 1.0).unwrap();
    let calibration: Vec<f64> = (0..n).map(|_| null.sample(rng)).collect();
    let in_distribution: Vec<f64> = (0..nulls).map(|_| null.sample(rng)).collect();
    let out_of_distribution: Vec<f64> = (0..outliers).map(|_| shifted.sample(rng)).collect();
    outlier_test(&calibration, &in_distribution, &out_of_distribution, level).unwrap()
}

/// How far a share of `draws` events of probability `level` may stray: [`STANDARD_ERRORS`]
/// binomial standard errors.
fn share_allowance(level: f64, draws: usize) -> f64 {
    STANDARD_ERRORS * (level * (1.0 - level) / draws as f64).sqrt()
}

/// The mean of `values` and its standard error.
fn mean_and_standard_error(values: &[f64]) -> (f64, f64) {
    let count = values.len() as f64;
    let mean = values.iter().sum::<f64>() / count;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (count - 1.0);
    (mean, (variance / count).sqrt())
}

#[test]
fn the_false_discovery_rate_stays_below_the_level_on_planted_nulls() {
    const BATCHES: usize = 1000;
    const LEVEL: f64 = 0.1;
    let mut rng = ChaCha8Rng::seed_from_u64(1995);
    let proportions: Vec<f64> = (0..BATCHES)
        .map(|_| planted_batch(&mut rng, 200, 180, 20, LEVEL))
        .map(|test| {
            assert!(test.power >= 0.0 && test.discoveries >= test.false_discoveries);
            test.false_discovery_proportion
        })
        .collect();
    let (mean, standard_error) = mean_and_standard_error(&proportions);
    assert!(
        mean <= LEVEL + STANDARD_ERRORS * standard_error,
        "FDR {mean} above q = {LEVEL} (standard error {standard_error})"
    );
    // Not vacuous: BH on these p-values has power.
    let power: f64 = (0..100)
        .map(|_| planted_batch(&mut rng, 200, 180, 20, LEVEL).power)
        .sum::<f64>()
        / 100.0;
    assert!(power > 0.3, "power {power}");
}

#[test]
fn with_only_nulls_any_discovery_is_rarer_than_the_level() {
    // With every tested input in distribution the FDR is the chance of any discovery.
    const BATCHES: usize = 1000;
    const LEVEL: f64 = 0.1;
    let mut rng = ChaCha8Rng::seed_from_u64(2023);
    let null = Normal::new(0.0, 1.0).unwrap();
    let mut draw =
        |count: usize| -> Vec<f64> { (0..count).map(|_| null.sample(&mut rng)).collect() };
    let any = (0..BATCHES)
        .filter(|_| {
            let calibration = draw(200);
            let pvalues = conformal_pvalues(&calibration, &draw(100)).unwrap();
            benjamini_hochberg(&pvalues, LEVEL).unwrap().count > 0
        })
        .count() as f64
        / BATCHES as f64;
    let allowance = share_allowance(LEVEL, BATCHES);
    assert!(
        any <= LEVEL + allowance,
        "{any} of batches with a false discovery"
    );
}

#[test]
fn mixed_rows_make_up_the_share_asked() {
    // 0.2 · 4,000 / 0.8 = 1,000 of 2,000 OOD rows; sorted, distinct, seeded.
    let rows = mixed_rows(2000, 4000, 0.2, 7).unwrap();
    assert_eq!(rows.len(), 1000);
    assert!(rows.windows(2).all(|pair| pair[0] < pair[1]));
    assert!(rows.iter().all(|&row| row < 2000));
    assert_eq!(rows, mixed_rows(2000, 4000, 0.2, 7).unwrap());
    assert_ne!(rows, mixed_rows(2000, 4000, 0.2, 8).unwrap());
    // Too few OOD rows: all of them; a share too small for one row: one.
    assert_eq!(mixed_rows(300, 4000, 0.2, 7).unwrap().len(), 300);
    assert_eq!(mixed_rows(300, 10, 0.001, 7).unwrap().len(), 1);
    for share in [0.0, 1.0, f64::NAN, -0.5] {
        assert!(matches!(
            mixed_rows(300, 10, share, 7),
            Err(OodError::InvalidOodShare(_))
        ));
    }
    assert_eq!(
        mixed_rows(0, 10, 0.5, 7),
        Err(OodError::EmptyScores(ScoreSet::OutOfDistribution))
    );
}

#[test]
fn the_false_discovery_rate_stays_below_the_level_times_the_null_share() {
    // Half the batch OOD, mixed as the page mixes it: the FDR bound is q·π₀ = q/2, and BH's
    // FDR on conformal p-values sits near it, well below q itself.
    const BATCHES: usize = 1000;
    const LEVEL: f64 = 0.2;
    const NULLS: usize = 100;
    let mut rng = ChaCha8Rng::seed_from_u64(2019);
    let null = Normal::new(0.0, 1.0).unwrap();
    let shifted = Normal::new(-2.0, 1.0).unwrap();
    let proportions: Vec<f64> = (0..BATCHES as u64)
        .map(|seed| {
            let calibration: Vec<f64> = (0..200).map(|_| null.sample(&mut rng)).collect();
            let nulls: Vec<f64> = (0..NULLS).map(|_| null.sample(&mut rng)).collect();
            let pool: Vec<f64> = (0..400).map(|_| shifted.sample(&mut rng)).collect();
            let rows = mixed_rows(pool.len(), NULLS, 0.5, seed).unwrap();
            let outliers: Vec<f64> = rows.iter().map(|&row| pool[row]).collect();
            let test = outlier_test(&calibration, &nulls, &outliers, LEVEL).unwrap();
            assert_eq!(test.n_out_of_distribution, NULLS);
            test.false_discovery_proportion
        })
        .collect();
    let (mean, standard_error) = mean_and_standard_error(&proportions);
    let bound = LEVEL * 0.5;
    assert!(
        mean <= bound + STANDARD_ERRORS * standard_error,
        "FDR {mean} above q·π₀ = {bound} (standard error {standard_error})"
    );
    assert!(mean < 0.75 * LEVEL, "FDR {mean} not below q = {LEVEL}");
}

#[test]
fn one_in_distribution_pvalue_is_at_most_five_percent_in_at_most_five_percent_of_draws() {
    // The claim the "your own image" section makes of a single p-value at 5%.
    const DRAWS: usize = 4000;
    const LEVEL: f64 = 0.05;
    let mut rng = ChaCha8Rng::seed_from_u64(2012);
    let null = Normal::new(0.0, 1.0).unwrap();
    let small = (0..DRAWS)
        .filter(|_| {
            let mut calibration: Vec<f64> = (0..199).map(|_| null.sample(&mut rng)).collect();
            calibration.sort_by(f64::total_cmp);
            pvalue_among_sorted(&calibration, null.sample(&mut rng)) <= LEVEL
        })
        .count() as f64
        / DRAWS as f64;
    let allowance = share_allowance(LEVEL, DRAWS);
    assert!(
        small <= LEVEL + allowance,
        "{small} of draws at or below 5%"
    );
    // Not vacuous: with 199 calibration scores, p ≤ 5% exactly when at most 9 lie at or below,
    // which happens with probability 10/200 = 5%.
    assert!(small >= LEVEL - allowance, "{small}");
}
