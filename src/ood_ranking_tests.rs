//! Tests of `ood_ranking.rs` on synthetic detectors whose AUROC is planted: ID scores
//! N(shift, 1) against OOD scores N(0, 1) have AUROC Φ(shift/√2), so a larger shift detects
//! better by construction.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

use super::*;
use crate::ood::detection_metrics;

/// Settings small enough for a debug build's Monte Carlo loop.
const QUICK: BootstrapSettings = BootstrapSettings {
    resamples: 200,
    level: 0.95,
    seed: 5,
};

/// Detectors scoring the same `n_in` ID and `n_out` OOD images, one per planted shift: each
/// image's noise is shared by the detectors with weight `correlation` (as two detectors of the
/// same images share their difficulty).
fn detectors(
    shifts: &[f64],
    correlation: f64,
    (n_in, n_out): (usize, usize),
    rng: &mut ChaCha8Rng,
) -> Vec<(Vec<f64>, Vec<f64>)> {
    let mut sets = vec![(Vec::new(), Vec::new()); shifts.len()];
    for (n, in_distribution) in [(n_in, true), (n_out, false)] {
        for _ in 0..n {
            let shared: f64 = rng.sample(StandardNormal);
            for (set, &shift) in sets.iter_mut().zip(shifts) {
                let own: f64 = rng.sample(StandardNormal);
                let noise = correlation * shared + (1.0 - correlation * correlation).sqrt() * own;
                if in_distribution {
                    set.0.push(shift + noise);
                } else {
                    set.1.push(noise);
                }
            }
        }
    }
    sets
}

fn slices(sets: &[(Vec<f64>, Vec<f64>)]) -> Vec<(&[f64], &[f64])> {
    sets.iter().map(|(a, b)| (&a[..], &b[..])).collect()
}

#[test]
fn ranks_by_auroc_with_each_detectors_own_metrics_and_the_leads_pair() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let sets = detectors(&[2.0, 0.5, 1.0], 0.5, (400, 200), &mut rng);
    let ranking = rank_detectors(&slices(&sets), &QUICK).unwrap();
    let order: Vec<usize> = ranking.ranked.iter().map(|r| r.candidate).collect();
    assert_eq!(
        order,
        [0, 2, 1],
        "by planted AUROC Φ(2/√2) > Φ(1/√2) > Φ(0.5/√2)"
    );
    for ranked in &ranking.ranked {
        let (in_distribution, out_of_distribution) = &sets[ranked.candidate];
        let expected = detection_metrics(in_distribution, out_of_distribution).unwrap();
        assert_eq!(ranked.metrics.auroc.estimate, expected.auroc);
        assert_eq!(ranked.metrics.fpr95.estimate, expected.fpr95);
        assert!(ranked.metrics.auroc.lower <= expected.auroc);
        assert!(ranked.metrics.auroc.upper >= expected.auroc);
    }
    let lead = ranking.lead.unwrap();
    assert_eq!(
        lead.auroc.estimate,
        ranking.ranked[0].metrics.auroc.estimate - ranking.ranked[1].metrics.auroc.estimate
    );
    assert_eq!(ranking.lead_beyond_noise(), Some(true));

    // One candidate: no lead; none, or unpaired sets: refused.
    let alone = rank_detectors(&slices(&sets[..1]), &QUICK).unwrap();
    assert_eq!((alone.lead, alone.lead_beyond_noise()), (None, None));
    assert!(rank_detectors(&[], &QUICK).is_err());
    let short = [slices(&sets)[0], (&sets[1].0[..], &sets[1].1[..199])];
    assert!(matches!(
        rank_detectors(&short, &QUICK),
        Err(DifferenceError::UnpairedSets {
            set: ScoreSet::OutOfDistribution,
            ..
        })
    ));
}

/// Over `SEEDS` draws of two detectors with the same planted law, the lead is called larger
/// than the noise in about 5% of them (at most 5% + 3 standard errors); with a planted lead of
/// AUROC Φ(1.5/√2) − Φ(0.5/√2) ≈ 0.22 it is called so in every draw.
#[test]
fn an_equal_lead_is_called_beyond_the_noise_in_about_five_percent_of_draws() {
    const SEEDS: usize = 200;
    let called = |shifts: &[f64]| {
        (0..SEEDS as u64)
            .filter(|&seed| {
                let mut rng = ChaCha8Rng::seed_from_u64(100 + seed);
                let sets = detectors(shifts, 0.5, (200, 100), &mut rng);
                rank_detectors(&slices(&sets), &QUICK)
                    .unwrap()
                    .lead_beyond_noise()
                    .unwrap()
            })
            .count() as f64
            / SEEDS as f64
    };
    let alpha = 1.0 - QUICK.level;
    let bound = alpha + 3.0 * (alpha * (1.0 - alpha) / SEEDS as f64).sqrt();
    let equal = called(&[1.0, 1.0]);
    assert!(
        equal <= bound,
        "equal detectors called apart in {equal} of draws"
    );
    assert_eq!(called(&[1.5, 0.5]), 1.0);
}
