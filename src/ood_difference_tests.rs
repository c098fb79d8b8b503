//! Tests of `ood_difference.rs`: the estimate against `ood::detection_metrics`, and the
//! intervals' coverage of a difference planted in synthetic detectors whose true FPR95 and AUROC
//! are known in closed form.

use super::*;
use crate::ood::detection_metrics;
use rand_distr::StandardNormal;

/// Settings small enough for a debug build's Monte Carlo loop.
const QUICK: BootstrapSettings = BootstrapSettings {
    resamples: 200,
    level: 0.95,
    seed: 11,
};

/// The standard normal CDF (statrs).
fn normal_cdf(x: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    Normal::standard().cdf(x)
}

/// Two detectors scoring the same images: ID scores N(shift, 1), OOD scores N(0, 1), each
/// network's noise correlated with the other's by `correlation` (so the pair shares the images'
/// noise). True AUROC Φ(shift/√2); true FPR95 1 − Φ(shift − z₀.₉₅).
#[allow(clippy::type_complexity)]
fn detectors(
    shifts: (f64, f64),
    correlation: f64,
    (n_in, n_out): (usize, usize),
    rng: &mut ChaCha8Rng,
) -> ((Vec<f64>, Vec<f64>), (Vec<f64>, Vec<f64>)) {
    let mut draw = |n: usize, (a, b): (f64, f64)| -> (Vec<f64>, Vec<f64>) {
        (0..n)
            .map(|_| {
                let shared: f64 = rng.sample(StandardNormal);
                let own: f64 = rng.sample(StandardNormal);
                (
                    a + shared,
                    b + correlation * shared + (1.0 - correlation * correlation).sqrt() * own,
                )
            })
            .unzip()
    };
    let (in_a, in_b) = draw(n_in, shifts);
    let (out_a, out_b) = draw(n_out, (0.0, 0.0));
    ((in_a, out_a), (in_b, out_b))
}

fn true_metrics(shift: f64) -> (f64, f64) {
    const Z95: f64 = 1.644_853_626_951_472_2;
    (
        1.0 - normal_cdf(shift - Z95),
        normal_cdf(shift / 2_f64.sqrt()),
    )
}

#[test]
fn the_estimate_is_the_difference_of_the_metrics_on_all_images() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let ((in_a, out_a), (in_b, out_b)) = detectors((1.5, 1.0), 0.6, (500, 120), &mut rng);
    // Ties, and a zero of either sign, count as in `ood.rs`.
    let (mut in_a, mut out_b) = (in_a, out_b);
    in_a[..50].fill(0.0);
    out_b[..30].fill(-0.0);
    let difference = paired_difference((&in_a, &out_a), (&in_b, &out_b), &QUICK).unwrap();
    let (a, b) = (
        detection_metrics(&in_a, &out_a).unwrap(),
        detection_metrics(&in_b, &out_b).unwrap(),
    );
    assert_eq!(difference.fpr95.estimate, a.fpr95 - b.fpr95);
    assert_eq!(difference.auroc.estimate, a.auroc - b.auroc);
    assert_eq!(
        (
            difference.chosen.fpr95.estimate,
            difference.chosen.auroc.estimate
        ),
        (a.fpr95, a.auroc)
    );
    assert_eq!(
        (
            difference.reference.fpr95.estimate,
            difference.reference.auroc.estimate
        ),
        (b.fpr95, b.auroc)
    );
    assert!(difference.fpr95.lower <= difference.fpr95.upper);
    assert!(difference.auroc.lower <= difference.auroc.upper);
}

/// Over 100 seeded pairs of detectors with a planted difference (shifts 1.5 and 1.0: FPR95
/// 0.554 against 0.724, AUROC 0.856 against 0.760) and 100 with none, the 95% intervals must
/// hold the true difference, and each network's own intervals its true FPR95 and AUROC, in at
/// least 88 of 100 (a percentile bootstrap's coverage is approximate; at 95% the count of 100
/// has a standard deviation of about 2).
#[test]
fn the_intervals_cover_a_planted_difference_and_a_planted_tie() {
    let mut rng = ChaCha8Rng::seed_from_u64(41);
    for shifts in [(1.5, 1.0), (1.2, 1.2)] {
        let ((fpr_a, auroc_a), (fpr_b, auroc_b)) = (true_metrics(shifts.0), true_metrics(shifts.1));
        let (mut fpr_covered, mut auroc_covered) = (0, 0);
        // Chosen's FPR95 and AUROC, reference's.
        let mut own_covered = [0; 4];
        for trial in 0..100 {
            let ((in_a, out_a), (in_b, out_b)) = detectors(shifts, 0.7, (1000, 300), &mut rng);
            let settings = BootstrapSettings {
                seed: trial,
                ..QUICK
            };
            let d = paired_difference((&in_a, &out_a), (&in_b, &out_b), &settings).unwrap();
            fpr_covered += usize::from((d.fpr95.lower..=d.fpr95.upper).contains(&(fpr_a - fpr_b)));
            auroc_covered +=
                usize::from((d.auroc.lower..=d.auroc.upper).contains(&(auroc_a - auroc_b)));
            let own = [
                (d.chosen.fpr95, fpr_a),
                (d.chosen.auroc, auroc_a),
                (d.reference.fpr95, fpr_b),
                (d.reference.auroc, auroc_b),
            ];
            for (covered, (interval, truth)) in own_covered.iter_mut().zip(own) {
                *covered += usize::from((interval.lower..=interval.upper).contains(&truth));
            }
        }
        assert!(
            own_covered.iter().all(|&c| c >= 88),
            "each network's FPR95 and AUROC covered {own_covered:?} of 100 at {shifts:?}"
        );
        assert!(
            fpr_covered >= 88,
            "FPR95 difference covered {fpr_covered} of 100 at {shifts:?}"
        );
        assert!(
            auroc_covered >= 88,
            "AUROC difference covered {auroc_covered} of 100 at {shifts:?}"
        );
    }
}

#[test]
fn networks_that_scored_other_images_are_refused() {
    let ones = vec![1.0; 10];
    assert_eq!(
        paired_difference((&ones, &ones[..4]), (&ones, &ones[..5]), &QUICK),
        Err(DifferenceError::UnpairedSets {
            set: ScoreSet::OutOfDistribution,
            chosen: 4,
            reference: 5
        })
    );
    assert_eq!(
        paired_difference((&ones, &[]), (&ones, &[]), &QUICK),
        Err(DifferenceError::Scores(OodError::EmptyScores(
            ScoreSet::OutOfDistribution
        )))
    );
}

/// With every row counted once, the resampling walk gives `ood::detection_metrics`' four
/// metrics (1e-12: the average precisions sum the same steps in another form).
#[test]
fn the_walk_with_unit_counts_gives_the_four_metrics() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    // Rounded to tenths, so that ties within and across the sets are common.
    let draw = |rng: &mut ChaCha8Rng, n: usize, shift: f64| -> Vec<f64> {
        (0..n)
            .map(|_| ((rng.random::<f64>() * 3.0 + shift) * 10.0).round() / 10.0)
            .collect()
    };
    let (id, ood) = (draw(&mut rng, 157, 1.0), draw(&mut rng, 83, 0.0));
    let walked = Ranked::new(&id, &ood).metrics(&vec![1; id.len()], &vec![1; ood.len()]);
    let exact = crate::ood::detection_metrics(&id, &ood).unwrap();
    for (a, b) in walked
        .iter()
        .zip([exact.fpr95, exact.auroc, exact.aupr_in, exact.aupr_out])
    {
        assert!((a - b).abs() <= 1e-12, "{a} vs {b}");
    }
}

/// ID scores N(1, 1) and OOD scores N(0, 1) have AUROC Φ(1/√2) and FPR95 1 − Φ(1 − z₀.₉₅): over
/// 200 seeded draws of 200 + 200 scores, the 95% intervals (200 resamples) cover each truth
/// in 88% to 99% of the draws (the percentile bootstrap's coverage at this size, with 200
/// draws' binomial spread).
#[test]
fn the_four_metric_intervals_cover_planted_fpr95_and_auroc() {
    let (true_fpr95, true_auroc) = true_metrics(1.0);
    let settings = BootstrapSettings {
        resamples: 200,
        level: 0.95,
        seed: 5,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    let (mut fpr_covered, mut auroc_covered) = (0, 0);
    let rounds = 200;
    for _ in 0..rounds {
        let id: Vec<f64> = (0..200)
            .map(|_| 1.0 + rng.sample::<f64, _>(StandardNormal))
            .collect();
        let ood: Vec<f64> = (0..200)
            .map(|_| rng.sample::<f64, _>(StandardNormal))
            .collect();
        let intervals = detection_intervals(&id, &ood, &settings).unwrap();
        let covers = |i: &MetricInterval, truth: f64| i.lower <= truth && truth <= i.upper;
        fpr_covered += usize::from(covers(&intervals.fpr95, true_fpr95));
        auroc_covered += usize::from(covers(&intervals.auroc, true_auroc));
        let exact = crate::ood::detection_metrics(&id, &ood).unwrap();
        assert_eq!(intervals.aupr_in.estimate, exact.aupr_in);
        assert_eq!(intervals.aupr_out.estimate, exact.aupr_out);
        assert!(intervals.aupr_out.lower <= intervals.aupr_out.upper);
    }
    for covered in [fpr_covered, auroc_covered] {
        let share = covered as f64 / rounds as f64;
        assert!((0.88..=0.99).contains(&share), "{share}");
    }
}
