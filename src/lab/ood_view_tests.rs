//! Unit tests of `ood_view.rs`: a hand example, the full ROC curve against the AUROC, thinning,
//! histograms and refusals.

use super::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Tolerance for values that are exact fractions or computed two ways in `f64`.
const TOLERANCE: f64 = 1e-12;

fn assert_close(actual: f64, expected: f64) {
    assert!(
        (actual - expected).abs() <= TOLERANCE,
        "expected {expected}, got {actual}"
    );
}

fn point(false_positive_rate: f64, true_positive_rate: f64) -> RocPoint {
    RocPoint {
        false_positive_rate,
        true_positive_rate,
    }
}

/// Trapezoidal area under a curve given in increasing FPR and TPR.
fn trapezoid_area(curve: &[RocPoint]) -> f64 {
    curve
        .windows(2)
        .map(|pair| {
            (pair[1].false_positive_rate - pair[0].false_positive_rate)
                * (pair[0].true_positive_rate + pair[1].true_positive_rate)
                / 2.0
        })
        .sum()
}

/// Four ID and four OOD scores; binary fractions, so every share and edge is exact.
const HAND_IN: [f64; 4] = [3.0, 2.0, 1.5, 1.0];
const HAND_OUT: [f64; 4] = [4.0, 1.25, 1.0, 0.0];

#[test]
fn threshold_keeps_95_percent_of_in_distribution_scores() {
    // ⌈0.95·4⌉ = 4: the smallest of four ID scores.
    assert_eq!(threshold_at_95_tpr(&HAND_IN), Ok(1.0));
    // ⌈0.95·20⌉ = 19: the second smallest of 1..=20; ⌈0.95·21⌉ = 20: again 2.
    let twenty: Vec<f64> = (1..=20).map(f64::from).collect();
    assert_eq!(threshold_at_95_tpr(&twenty), Ok(2.0));
    let twenty_one: Vec<f64> = (1..=21).map(f64::from).collect();
    assert_eq!(threshold_at_95_tpr(&twenty_one), Ok(2.0));
    assert_eq!(
        threshold_at_95_tpr(&[]),
        Err(OodError::EmptyScores(ScoreSet::InDistribution))
    );
    assert_eq!(
        threshold_at_95_tpr(&[1.0, f64::NAN]),
        Err(OodError::NanScore {
            set: ScoreSet::InDistribution,
            index: 1
        })
    );
    // With ties at the threshold more than 95% of the ID scores lie at or above it.
    let summary = summarise(ScoreKind::Msp, &[5.0, 5.0, 5.0, 1.0, 1.0], &[1.0, 0.0]).unwrap();
    assert_eq!(summary.threshold, 1.0);
    assert_close(summary.true_positive_rate, 1.0);
    assert_close(summary.metrics.fpr95, 0.5);
}

#[test]
fn hand_example_summary_histogram_and_roc() {
    let summary = summarise(ScoreKind::MaxLogit, &HAND_IN, &HAND_OUT).unwrap();
    assert_eq!(summary.threshold, 1.0);
    assert_close(summary.true_positive_rate, 1.0);
    // OOD scores ≥ 1: 4, 1.25 and 1.
    assert_close(summary.metrics.fpr95, 0.75);
    // Pairs with ID above OOD: 3 + 3 + 3 + 1, and the tie 1 = 1 counts half: 10.5/16.
    assert_close(summary.metrics.auroc, 10.5 / 16.0);

    // Range [0, 4] in four bins of width 1; 4 lands in the last bin.
    let histogram = paired_histogram(&HAND_IN, &HAND_OUT, 4).unwrap();
    assert_eq!(histogram.edges, [0.0, 1.0, 2.0, 3.0, 4.0]);
    assert_eq!(histogram.in_distribution, [0.0, 0.5, 0.25, 0.25]);
    assert_eq!(histogram.out_of_distribution, [0.25, 0.5, 0.0, 0.25]);

    // Decreasing: 4 (OOD), 3, 2, 1.5 (ID), 1.25 (OOD), 1 (ID and OOD tied), 0 (OOD).
    let curve = roc_curve(&HAND_IN, &HAND_OUT).unwrap();
    assert_eq!(
        curve,
        [
            point(0.0, 0.0),
            point(0.25, 0.0),
            point(0.25, 0.25),
            point(0.25, 0.5),
            point(0.25, 0.75),
            point(0.5, 0.75),
            point(0.75, 1.0),
            point(1.0, 1.0),
        ]
    );
    assert_close(trapezoid_area(&curve), 10.5 / 16.0);
}

#[test]
fn histograms_of_equal_values_and_refusals() {
    // All values equal: the range is [v − ½, v + ½] and they sit in the middle bin.
    let histogram = paired_histogram(&[2.0, 2.0], &[2.0], 3).unwrap();
    assert_eq!(histogram.in_distribution, [0.0, 1.0, 0.0]);
    assert_eq!(histogram.out_of_distribution, [0.0, 1.0, 0.0]);
    assert_close(histogram.edges[0], 1.5);
    assert_close(histogram.edges[3], 2.5);
    // Values near the ends of f64 keep a finite span.
    let histogram = paired_histogram(&[-f64::MAX], &[f64::MAX], 2).unwrap();
    assert_eq!(histogram.in_distribution, [1.0, 0.0]);
    assert_eq!(histogram.out_of_distribution, [0.0, 1.0]);
    for bins in [0, MAX_BINS + 1] {
        assert_eq!(
            paired_histogram(&[1.0], &[1.0], bins),
            Err(OodViewError::InvalidBinCount(bins))
        );
    }
    assert_eq!(
        paired_histogram(&[1.0], &[], 5),
        Err(OodViewError::Ood(OodError::EmptyScores(
            ScoreSet::OutOfDistribution
        )))
    );
    assert!(matches!(
        paired_histogram(&[1.0, f64::INFINITY], &[1.0], 5),
        Err(OodViewError::NonFiniteValue {
            set: ScoreSet::InDistribution,
            index: 1,
            ..
        })
    ));
}

/// Scores on a coarse grid, so that many tie within and across the sets.
fn tied_scores(rng: &mut ChaCha8Rng, n: usize, shift: i32) -> Vec<f64> {
    (0..n)
        .map(|_| f64::from(rng.random_range(0..12) + shift) / 4.0)
        .collect()
}

#[test]
fn full_curve_area_is_the_auroc_and_the_threshold_gives_fpr95() {
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    for _ in 0..200 {
        let n_in = rng.random_range(1..60);
        let n_out = rng.random_range(1..60);
        let in_distribution = tied_scores(&mut rng, n_in, 3);
        let out_of_distribution = tied_scores(&mut rng, n_out, 0);
        let curve = roc_curve(&in_distribution, &out_of_distribution).unwrap();
        let auroc = ood::auroc(&in_distribution, &out_of_distribution).unwrap();
        assert_close(trapezoid_area(&curve), auroc);
        // The threshold reproduces `ood`'s FPR95: the OOD share at or above it.
        let threshold = threshold_at_95_tpr(&in_distribution).unwrap();
        let above = out_of_distribution
            .iter()
            .filter(|&&score| score >= threshold)
            .count();
        assert_close(
            above as f64 / n_out as f64,
            ood::fpr_at_95_tpr(&in_distribution, &out_of_distribution).unwrap(),
        );
        assert_eq!(curve[0], point(0.0, 0.0));
        assert_eq!(curve[curve.len() - 1], point(1.0, 1.0));
        // One point per distinct score, after (0, 0).
        let mut distinct: Vec<f64> = in_distribution
            .iter()
            .chain(&out_of_distribution)
            .copied()
            .collect();
        distinct.sort_by(f64::total_cmp);
        distinct.dedup();
        assert_eq!(curve.len(), distinct.len() + 1);
    }
    // −0.0 and 0.0 are one threshold.
    assert_eq!(roc_curve(&[0.0], &[-0.0]).unwrap().len(), 2);
}

#[test]
fn thinning_keeps_the_ends_and_bounds_the_area_change() {
    let mut rng = ChaCha8Rng::seed_from_u64(29);
    let in_distribution: Vec<f64> = (0..3000).map(|_| rng.random::<f64>() + 0.3).collect();
    let out_of_distribution: Vec<f64> = (0..2000).map(|_| rng.random::<f64>()).collect();
    let curve = roc_curve(&in_distribution, &out_of_distribution).unwrap();
    assert_eq!(curve.len(), 5001);
    let auroc = ood::auroc(&in_distribution, &out_of_distribution).unwrap();
    for max_points in [2, 3, 10, 200, 1000] {
        let thinned = thin_roc_curve(&curve, max_points);
        assert!(thinned.len() <= max_points, "{}", thinned.len());
        assert!(thinned.len() >= max_points.min(3));
        assert_eq!(thinned[0], curve[0]);
        assert_eq!(thinned[thinned.len() - 1], curve[curve.len() - 1]);
        // A subsequence of the curve, in order.
        let mut rest = curve.iter();
        assert!(thinned.iter().all(|kept| rest.any(|p| p == kept)));
        let bound = 2.0 / (max_points - 1) as f64;
        assert!((trapezoid_area(&thinned) - auroc).abs() <= bound);
    }
    assert_eq!(thin_roc_curve(&curve[..5], 10), &curve[..5]);
    assert_eq!(thin_roc_curve(&curve, 0), [curve[0], curve[5000]]);
}

/// Rows of three logits whose largest entry is the hand scores above.
const HAND_IN_LOGITS: [f32; 12] = [3.0, 0.0, 0.0, 0.0, 2.0, 0.0, 1.5, 0.0, 0.0, 1.0, 0.0, 0.0];
const HAND_OUT_LOGITS: [f32; 12] = [0.0, 0.0, 4.0, 1.25, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0];

fn hand_view(odin: Option<OdinScores>) -> OodView {
    let in_distribution = Logits::new(&HAND_IN_LOGITS, 3).unwrap();
    let out_of_distribution = Logits::new(&HAND_OUT_LOGITS, 3).unwrap();
    OodView::new(&in_distribution, &out_of_distribution, 1.0, odin).unwrap()
}

#[test]
fn view_of_hand_logits() {
    let view = hand_view(None);
    let kinds: Vec<ScoreKind> = view.summaries().iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [ScoreKind::Msp, ScoreKind::MaxLogit, ScoreKind::Energy]
    );
    // Max-logit gives the hand scores.
    assert_eq!(
        view.scores(ScoreKind::MaxLogit).unwrap(),
        (&HAND_IN[..], &HAND_OUT[..])
    );
    let summary = view.summary(ScoreKind::MaxLogit).unwrap();
    assert_eq!(summary.threshold, 1.0);
    assert_close(summary.metrics.fpr95, 0.75);
    assert_eq!(view.roc_curve(ScoreKind::MaxLogit).unwrap().len(), 8);
    // MSP and energy agree with `ood`'s functions.
    for kind in [ScoreKind::Msp, ScoreKind::Energy] {
        let (in_scores, out_scores) = view.scores(kind).unwrap();
        let expected = ood::detection_metrics(in_scores, out_scores).unwrap();
        assert_eq!(view.summary(kind).unwrap().metrics, expected);
    }
    assert_eq!(
        view.summary(ScoreKind::Odin),
        Err(OodViewError::MissingScore(ScoreKind::Odin))
    );
    assert!(view.score_histogram(ScoreKind::Odin, 10).is_err());

    // One non-zero logit per row: the norms are the hand scores too.
    let means = view.logit_norm_means();
    assert_close(means.in_distribution, 7.5 / 4.0);
    assert_close(means.out_of_distribution, 6.25 / 4.0);
    let norms = view.logit_norm_histogram(4).unwrap();
    assert_eq!(norms.in_distribution, [0.0, 0.5, 0.25, 0.25]);
    assert_eq!(norms.out_of_distribution, [0.25, 0.5, 0.0, 0.25]);
    let scores = view.score_histogram(ScoreKind::MaxLogit, 4).unwrap();
    assert_eq!(scores, norms);

    // MSP at T = 1 of a row with one logit z and two zeros: e^z/(e^z + 2).
    let msp = |z: f64| z.exp() / (z.exp() + 2.0);
    let surest = view.surest_out_of_distribution(2);
    assert_eq!(surest.len(), 2);
    assert_eq!((surest[0].index, surest[0].predicted_class), (0, 2));
    assert_close(surest[0].confidence, msp(4.0));
    assert_eq!((surest[1].index, surest[1].predicted_class), (1, 0));
    assert_close(surest[1].confidence, msp(1.25));
    // All four when more are asked for; the all-zero row is class 0 at 1/3.
    let all = view.surest_out_of_distribution(10);
    assert_eq!(all.len(), 4);
    assert_eq!((all[3].index, all[3].predicted_class), (3, 0));
    assert_close(all[3].confidence, 1.0 / 3.0);
}

#[test]
fn view_with_odin_scores_and_refusals() {
    let odin_in = [0.5, 0.4, 0.3, 0.2];
    let odin_out = [0.1, 0.1, 0.35, 0.0];
    let view = hand_view(Some(OdinScores {
        in_distribution: &odin_in,
        out_of_distribution: &odin_out,
    }));
    assert_eq!(view.summaries().len(), 4);
    let summary = view.summary(ScoreKind::Odin).unwrap();
    assert_eq!(summary.threshold, 0.2);
    assert_close(summary.metrics.fpr95, 0.25);
    // ID above OOD in 4 + 4 + 3 + 3 of 16 pairs.
    assert_close(summary.metrics.auroc, 14.0 / 16.0);

    let in_distribution = Logits::new(&HAND_IN_LOGITS, 3).unwrap();
    let out_of_distribution = Logits::new(&HAND_OUT_LOGITS, 3).unwrap();
    let short = OdinScores {
        in_distribution: &odin_in,
        out_of_distribution: &odin_out[..3],
    };
    assert_eq!(
        OodView::new(&in_distribution, &out_of_distribution, 1.0, Some(short)).unwrap_err(),
        OodViewError::OdinCountMismatch {
            set: ScoreSet::OutOfDistribution,
            scores: 3,
            rows: 4
        }
    );
    let infinite = [0.5, f64::INFINITY, 0.3, 0.2];
    let bad = OdinScores {
        in_distribution: &infinite,
        out_of_distribution: &odin_out,
    };
    assert!(matches!(
        OodView::new(&in_distribution, &out_of_distribution, 1.0, Some(bad)),
        Err(OodViewError::NonFiniteValue {
            set: ScoreSet::InDistribution,
            index: 1,
            ..
        })
    ));
    assert_eq!(
        OodView::new(&in_distribution, &out_of_distribution, 0.0, None).unwrap_err(),
        OodViewError::Ood(OodError::InvalidTemperature(0.0))
    );
    let two_classes = Logits::new(&[1.0, 0.0], 2).unwrap();
    assert_eq!(
        OodView::new(&in_distribution, &two_classes, 1.0, None).unwrap_err(),
        OodViewError::ClassCountMismatch {
            in_distribution: 3,
            out_of_distribution: 2
        }
    );
}

#[test]
fn added_scores_are_summarised_on_their_own_sets() {
    let mut view = hand_view(None);
    // Two ID rows (an evaluation half) against the four OOD rows: ID above OOD in 4 + 3 of 8
    // pairs; the threshold keeps both ID rows, so it is the lower, 0.2, and lets one OOD through.
    view.add_scores(ScoreKind::Knn, vec![0.9, 0.2], vec![0.1, 0.1, 0.3, 0.0])
        .unwrap();
    let kinds: Vec<ScoreKind> = view.summaries().iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [
            ScoreKind::Msp,
            ScoreKind::MaxLogit,
            ScoreKind::Energy,
            ScoreKind::Knn
        ]
    );
    let summary = view.summary(ScoreKind::Knn).unwrap();
    assert_eq!(summary.threshold, 0.2);
    assert_close(summary.metrics.fpr95, 0.25);
    assert_close(summary.metrics.auroc, 7.0 / 8.0);
    assert_eq!(view.roc_curve(ScoreKind::Knn).unwrap().len(), 6);
    assert!(matches!(
        view.add_scores(ScoreKind::Vim, vec![0.5], vec![f64::NAN]),
        Err(OodViewError::NonFiniteValue {
            set: ScoreSet::OutOfDistribution,
            index: 0,
            ..
        })
    ));
    assert!(view.add_scores(ScoreKind::Vim, vec![], vec![0.5]).is_err());
    assert!(ScoreKind::FEATURES
        .iter()
        .all(|kind| !kind.reads_logits_only()));
}

#[test]
fn score_kinds_have_lowercase_names() {
    let names = serde_json::to_string(&ScoreKind::ALL).unwrap();
    assert_eq!(
        names,
        r#"["msp","max_logit","energy","odin","mahalanobis","knn","react","ash","vim","gradnorm"]"#
    );
    let kinds: Vec<ScoreKind> = serde_json::from_str(&names).unwrap();
    assert_eq!(kinds, ScoreKind::ALL);
}
