//! Tests of `pvalues_view.rs` on planted scores: in-distribution scores from N(0, 1), OOD
//! scores far below them, so which p-values BH declares is known.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use super::*;

/// `count` draws of N(`mean`, 1).
fn normal(rng: &mut ChaCha8Rng, mean: f64, count: usize) -> Vec<f64> {
    let law = Normal::new(mean, 1.0).unwrap();
    (0..count).map(|_| law.sample(rng)).collect()
}

#[test]
fn a_logit_score_calibrates_on_the_calibration_half_and_tests_the_rest() {
    let mut rng = ChaCha8Rng::seed_from_u64(43);
    let scores = normal(&mut rng, 0.0, 2000);
    let flags: Vec<bool> = (0..2000).map(|row| row % 2 == 0).collect();
    let (calibration, tested) = calibration_and_tested(ScoreKind::Energy, &scores, &flags, 0);
    assert_eq!(
        calibration,
        scores.iter().step_by(2).copied().collect::<Vec<_>>()
    );
    assert_eq!(
        tested,
        scores
            .iter()
            .skip(1)
            .step_by(2)
            .copied()
            .collect::<Vec<_>>()
    );

    // OOD scores 8 standard deviations below: each has p = 1/(n + 1) and BH finds them all.
    let out_of_distribution = normal(&mut rng, -8.0, 1000);
    let view = PvalueView::new(
        ScoreKind::Energy,
        (&calibration, &tested),
        &out_of_distribution,
        (0.2, 0.1),
        0,
    )
    .unwrap();
    // 0.2 · 1,000 / 0.8 = 250 OOD images join the 1,000 tested ones.
    assert_eq!(view.test.n_in_distribution, 1000);
    assert_eq!(view.test.n_out_of_distribution, 250);
    assert!((view.null_share() - 0.8).abs() < 1e-15);
    assert!((view.fdr_bound() - 0.08).abs() < 1e-15);
    assert_eq!(view.test.power, 1.0);
    assert_eq!(view.sorted.len(), 1250);
    assert!(view.sorted.windows(2).all(|w| w[0].pvalue <= w[1].pvalue));
    let smallest = 1.0 / 1001.0;
    assert!(view
        .test
        .out_of_distribution_pvalues
        .iter()
        .all(|&p| p == smallest));
    assert!(view.sorted[..250].iter().all(|p| p.pvalue == smallest));
    let rejected = view.sorted.iter().filter(|p| p.rejected).count();
    assert_eq!(rejected, view.test.discoveries);
    assert_eq!(
        view.sorted
            .iter()
            .filter(|p| p.rejected && !p.out_of_distribution)
            .count(),
        view.test.false_discoveries
    );
}

#[test]
fn a_feature_score_splits_the_evaluation_half_again() {
    // The detector was fitted on the calibration half: its scores are of the evaluation half.
    let mut rng = ChaCha8Rng::seed_from_u64(44);
    let scores = normal(&mut rng, 0.0, 1001);
    let (calibration, tested) = calibration_and_tested(ScoreKind::Knn, &scores, &[], 5);
    let (calibration_rows, tested_rows) = data::seeded_split(1001, 0.5, 5);
    assert_eq!(calibration.len(), calibration_rows.len());
    assert_eq!(
        tested,
        tested_rows.iter().map(|&r| scores[r]).collect::<Vec<_>>()
    );
    let mut together = [calibration, tested].concat();
    let mut all = scores.clone();
    together.sort_by(f64::total_cmp);
    all.sort_by(f64::total_cmp);
    assert_eq!(together, all);
}

#[test]
fn the_chart_window_holds_the_smallest_pvalues_around_the_bh_line() {
    let mut rng = ChaCha8Rng::seed_from_u64(45);
    let calibration = normal(&mut rng, 0.0, 3000);
    let tested = normal(&mut rng, 0.0, 9000);
    let view = PvalueView::new(
        ScoreKind::Msp,
        (&calibration, &tested),
        &normal(&mut rng, -8.0, 5000),
        (0.1, 0.2),
        1,
    )
    .unwrap();
    // 1,000 OOD images of 10,000, all found with false discoveries beside them: the window
    // runs to twice the discoveries' ranks, and to twice the BH line's height there.
    assert_eq!(view.sorted.len(), 10_000);
    assert!(view.test.discoveries > 1000 && view.test.power == 1.0);
    let window = view.chart_window(300);
    let x_high = 2.0 * view.test.discoveries as f64 / 10_000.0;
    assert!((window.x_high - x_high).abs() < 1e-12);
    assert!((window.y_high - 2.0 * 0.2 * x_high).abs() < 1e-12);
    assert!(window.points.len() <= 300 && window.points.len() > 200);
    assert!(window
        .points
        .windows(2)
        .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    assert!(window
        .points
        .iter()
        .all(|&(x, p, _)| x <= window.x_high && p <= window.y_high));
    // The first is the smallest p-value there is; both kinds of image are drawn.
    assert_eq!(
        (window.points[0].0, window.points[0].1),
        (1e-4, 1.0 / 3001.0)
    );
    assert!(window.points.iter().any(|&(_, _, ood)| ood));
    assert!(window.points.iter().any(|&(_, _, ood)| !ood));
    assert_eq!(view.chart_window(5000).points.len(), {
        let last = (window.x_high * 10_000.0) as usize;
        view.sorted[..last]
            .iter()
            .filter(|p| p.pvalue <= window.y_high)
            .count()
    });
}

#[test]
fn a_share_or_level_outside_zero_to_one_is_refused() {
    let scores = [0.0, 1.0, 2.0];
    for (share, level) in [(0.0, 0.1), (1.0, 0.1), (0.1, 0.0), (0.1, 1.0)] {
        assert!(PvalueView::new(
            ScoreKind::Msp,
            (&scores, &scores),
            &scores,
            (share, level),
            0
        )
        .is_err());
    }
}

#[test]
fn a_new_level_or_share_on_the_same_images_is_the_test_computed_anew() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let calibration = normal(&mut rng, 0.0, 1000);
    let tested = normal(&mut rng, 0.0, 1000);
    // OOD scores near the in-distribution ones: the discoveries change with the level.
    let out_of_distribution = normal(&mut rng, -2.5, 500);
    let view = |share, level| {
        PvalueView::new(
            ScoreKind::Msp,
            (&calibration, &tested),
            &out_of_distribution,
            (share, level),
            7,
        )
        .unwrap()
    };
    let strict = view(0.2, 0.05);
    for level in [0.01, 0.2, 0.5] {
        let moved = strict.at_level(level).unwrap();
        assert_eq!(moved, view(0.2, level), "level {level}");
    }
    assert_ne!(strict.test.discoveries, view(0.2, 0.5).test.discoveries);
    assert!(strict.at_level(1.5).is_err());
    // A new share draws its batch from the p-values kept.
    let first = view(0.1, 0.1);
    for (share, level) in [(0.05, 0.1), (0.3, 0.1), (0.3, 0.2), (0.6, 0.05)] {
        let moved = first.with_share(share, level, 7).unwrap();
        assert_eq!(moved, view(share, level), "share {share}, level {level}");
        // The chart's order: increasing, an in-distribution p-value first on a tie.
        assert!(moved
            .sorted
            .windows(2)
            .all(|pair| pair[0].pvalue < pair[1].pvalue
                || (pair[0].pvalue == pair[1].pvalue
                    && (!pair[0].out_of_distribution || pair[1].out_of_distribution))));
        // ...holding each part's p-values, each once.
        for (ood, part) in [
            (false, &moved.test.in_distribution_pvalues),
            (true, &moved.test.out_of_distribution_pvalues),
        ] {
            let mut expected = part.clone();
            expected.sort_by(f64::total_cmp);
            let shown: Vec<f64> = moved
                .sorted
                .iter()
                .filter(|p| p.out_of_distribution == ood)
                .map(|p| p.pvalue)
                .collect();
            assert_eq!(shown, expected);
        }
    }
    assert!(first.with_share(1.0, 0.1, 7).is_err());
}
