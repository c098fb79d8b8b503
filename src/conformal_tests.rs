//! Unit tests of `conformal.rs`: hand-computed scores, thresholds against exact rational
//! arithmetic, and the coverage guarantee over many seeded splits.

use super::*;
use proptest::prelude::*;
use rand::Rng;

/// Hand-computed scores: decimal probabilities and their sums, exact to about 1e-16 in `f64`.
const HAND_TOLERANCE: f64 = 1e-12;
/// Trapezoid integrals of the Beta density (100,000 intervals).
const INTEGRAL_TOLERANCE: f64 = 1e-7;
/// Statistical checks allow this many standard errors of the mean.
const STANDARD_ERRORS: f64 = 3.0;

const NUM_CLASSES: usize = 10;
const ALPHA: f64 = 0.1;
const N_CALIBRATION: usize = 500;
/// Pool of the split experiments: 500 calibration + 2,500 evaluation rows.
const POOL: usize = 3000;
const REPETITIONS: usize = 200;

fn assert_close(actual: &[f64], expected: &[f64], tolerance: f64) {
    assert_eq!(actual.len(), expected.len());
    for (index, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert!(
            (a - e).abs() <= tolerance,
            "index {index}: got {a}, expected {e} (tolerance {tolerance})"
        );
    }
}

fn scores_of(probabilities: &[f64], score: Score, u: f64) -> Vec<f64> {
    let mut out = vec![0.0; probabilities.len()];
    label_scores(probabilities, &score, u, &mut out).unwrap();
    out
}

struct Synthetic {
    probabilities: Vec<f64>,
    labels: Vec<u32>,
}

fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
    let radius = (-2.0 * (1.0 - rng.random::<f64>()).ln()).sqrt();
    radius * (2.0 * std::f64::consts::PI * rng.random::<f64>()).cos()
}

/// Logits `z_k = 2·N(0, 1) + 0.15·k`; the label is drawn from `softmax(z)`, so the model is
/// calibrated, and classes differ in frequency and difficulty.
fn synthetic(n: usize, seed: u64) -> Synthetic {
    synthetic_with_scale(n, seed, 2.0)
}

fn synthetic_with_scale(n: usize, seed: u64, scale: f64) -> Synthetic {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut probabilities = Vec::with_capacity(n * NUM_CLASSES);
    let mut labels = Vec::with_capacity(n);
    let mut weights = [0.0_f64; NUM_CLASSES];
    for _ in 0..n {
        for (class, weight) in weights.iter_mut().enumerate() {
            *weight = scale * standard_normal(&mut rng) + 0.15 * class as f64;
        }
        let max = weights.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        for weight in weights.iter_mut() {
            *weight = (*weight - max).exp();
        }
        let total: f64 = weights.iter().sum();
        let draw = rng.random::<f64>() * total;
        let mut cumulative = 0.0;
        let mut label = NUM_CLASSES - 1;
        for (class, weight) in weights.iter().enumerate() {
            cumulative += weight;
            if draw < cumulative {
                label = class;
                break;
            }
        }
        labels.push(label as u32);
        probabilities.extend(weights.iter().map(|w| w / total));
    }
    Synthetic {
        probabilities,
        labels,
    }
}

fn mean_and_standard_error(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (variance / n).sqrt())
}

// p = [0.1, 0.5, 0.2, 0.2]: ranking π = (1, 2, 3, 0); the tie between classes 2 and 3 goes
// to the lower index, so o = [4, 1, 2, 3].
const TIED: [f64; 4] = [0.1, 0.5, 0.2, 0.2];

#[test]
fn lac_is_one_minus_probability() {
    assert_close(
        &scores_of(&TIED, Score::Lac, 0.25),
        &[0.9, 0.5, 0.8, 0.8],
        HAND_TOLERANCE,
    );
}

#[test]
fn aps_sums_the_mass_ranked_above_plus_u_times_own() {
    // Non-randomized (u = 1): label 1: 0.5; label 2: 0.5+0.2 = 0.7; label 3: 0.7+0.2 = 0.9;
    // label 0: 0.9+0.1 = 1.0. The supplied u is ignored.
    let expected = [1.0, 0.5, 0.7, 0.9];
    assert_close(
        &scores_of(&TIED, Score::Aps { randomized: false }, 0.25),
        &expected,
        HAND_TOLERANCE,
    );
    // u = 0.25: label 1: 0.25·0.5 = 0.125; label 2: 0.5 + 0.05 = 0.55;
    // label 3: 0.7 + 0.05 = 0.75; label 0: 0.9 + 0.025 = 0.925.
    assert_close(
        &scores_of(&TIED, Score::Aps { randomized: true }, 0.25),
        &[0.925, 0.125, 0.55, 0.75],
        HAND_TOLERANCE,
    );
    // All tied at 0.25: ranks follow the index, cumulative sums 0.25, 0.5, 0.75, 1.0.
    assert_close(
        &scores_of(&[0.25; 4], Score::Aps { randomized: false }, 0.0),
        &[0.25, 0.5, 0.75, 1.0],
        HAND_TOLERANCE,
    );
}

#[test]
fn raps_adds_a_rank_penalty_beyond_k_reg() {
    // λ = 0.1, k_reg = 2: penalty 0.1·max(0, o − 2) = 0, 0, 0.1, 0.2 for o = 1..4.
    // u = 0.25: APS values 0.125, 0.55, 0.75, 0.925 become 0.125, 0.55, 0.85, 1.125.
    let randomized = Score::Raps {
        lambda: 0.1,
        k_reg: 2,
        randomized: true,
    };
    assert_close(
        &scores_of(&TIED, randomized, 0.25),
        &[1.125, 0.125, 0.55, 0.85],
        HAND_TOLERANCE,
    );
    // Non-randomized: 0.5, 0.7, 0.9 + 0.1 = 1.0, 1.0 + 0.2 = 1.2.
    let plain = Score::Raps {
        lambda: 0.1,
        k_reg: 2,
        randomized: false,
    };
    assert_close(
        &scores_of(&TIED, plain, 0.25),
        &[1.2, 0.5, 0.7, 1.0],
        HAND_TOLERANCE,
    );
    // λ = 0 is exactly APS.
    let no_penalty = Score::Raps {
        lambda: 0.0,
        k_reg: 0,
        randomized: true,
    };
    assert_eq!(
        scores_of(&TIED, no_penalty, 0.3),
        scores_of(&TIED, Score::Aps { randomized: true }, 0.3)
    );
}

#[test]
fn saps_uses_only_the_top_probability_and_the_rank() {
    // λ = 0.3, u = 0.25, p_max = 0.5: o = 1: 0.25·0.5 = 0.125; o = 2: 0.5 + 0.3·0.25 = 0.575;
    // o = 3: 0.5 + 0.3·1.25 = 0.875; o = 4: 0.5 + 0.3·2.25 = 1.175.
    let randomized = Score::Saps {
        lambda: 0.3,
        randomized: true,
    };
    assert_close(
        &scores_of(&TIED, randomized, 0.25),
        &[1.175, 0.125, 0.575, 0.875],
        HAND_TOLERANCE,
    );
    // u = 1: 0.5, 0.5 + 0.3 = 0.8, 0.5 + 0.6 = 1.1, 0.5 + 0.9 = 1.4.
    let plain = Score::Saps {
        lambda: 0.3,
        randomized: false,
    };
    assert_close(
        &scores_of(&TIED, plain, 0.25),
        &[1.4, 0.5, 0.8, 1.1],
        HAND_TOLERANCE,
    );
    // All tied at 0.25, u = 0.5: 0.125, 0.25 + 0.3·0.5 = 0.4, 0.25 + 0.3·1.5 = 0.7,
    // 0.25 + 0.3·2.5 = 1.0.
    assert_close(
        &scores_of(&[0.25; 4], randomized, 0.5),
        &[0.125, 0.4, 0.7, 1.0],
        HAND_TOLERANCE,
    );
}

#[test]
fn batch_scores_match_single_row_scores() {
    let data = synthetic(50, 1);
    let draws = uniforms(50, 2);
    let score = Score::Raps {
        lambda: DEFAULT_RAPS_LAMBDA,
        k_reg: DEFAULT_RAPS_K_REG,
        randomized: true,
    };
    let all = all_label_scores(&data.probabilities, NUM_CLASSES, &score, &draws).unwrap();
    let true_scores = true_label_scores(
        &data.probabilities,
        &data.labels,
        NUM_CLASSES,
        &score,
        &draws,
    )
    .unwrap();
    for (row, p) in data.probabilities.chunks_exact(NUM_CLASSES).enumerate() {
        let single = scores_of(p, score, draws[row]);
        assert_eq!(
            &all[row * NUM_CLASSES..(row + 1) * NUM_CLASSES],
            &single[..]
        );
        assert_eq!(true_scores[row], single[data.labels[row] as usize]);
    }
}

#[test]
fn scores_read_from_kept_rankings_are_the_scores_ranked_row_by_row() {
    let mut data = synthetic(60, 3);
    // Ties, and a −0.0 that ranks with +0.0 by label: the documented order, whichever path.
    data.probabilities[..NUM_CLASSES]
        .copy_from_slice(&[0.25, 0.25, 0.5, 0.0, -0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    let draws = uniforms(60, 4);
    let rankings = Rankings::new(&data.probabilities, NUM_CLASSES)
        .unwrap()
        .unwrap();
    let scores = [
        Score::Lac,
        Score::Aps { randomized: true },
        Score::Raps {
            lambda: 0.3,
            k_reg: 2,
            randomized: false,
        },
        Score::Saps {
            lambda: 0.2,
            randomized: true,
        },
    ];
    let kept = |rankings| {
        (
            all_label_scores_each(&data.probabilities, NUM_CLASSES, &scores, &draws, rankings)
                .unwrap(),
            true_label_scores_each(
                &data.probabilities,
                &data.labels,
                NUM_CLASSES,
                &scores,
                &draws,
                rankings,
            )
            .unwrap(),
        )
    };
    assert_eq!(kept(Some(&rankings)), kept(None));
    for (index, score) in scores.iter().enumerate() {
        assert_eq!(
            kept(Some(&rankings)).0[index],
            all_label_scores(&data.probabilities, NUM_CLASSES, score, &draws).unwrap()
        );
    }
    // Rankings of other rows or another number of classes are refused.
    let refused = |rankings: Rankings| {
        all_label_scores_each(
            &data.probabilities,
            NUM_CLASSES,
            &scores,
            &draws,
            Some(&rankings),
        )
        .unwrap_err()
    };
    let fewer = &data.probabilities[..NUM_CLASSES * 59];
    assert!(matches!(
        refused(Rankings::new(fewer, NUM_CLASSES).unwrap().unwrap()),
        ConformalError::ShapeMismatch { .. }
    ));
    assert!(matches!(
        refused(Rankings::new(&data.probabilities, 5).unwrap().unwrap()),
        ConformalError::InvalidParameter { .. }
    ));
    // Past 256 classes the rows are ranked as they are scored.
    assert!(Rankings::new(&vec![1.0 / 300.0; 600], 300)
        .unwrap()
        .is_none());
}

#[test]
fn uniforms_are_seeded_and_in_the_unit_interval() {
    let draws = uniforms(1000, 7);
    assert_eq!(draws, uniforms(1000, 7));
    assert_ne!(draws, uniforms(1000, 8));
    assert!(draws.iter().all(|u| (0.0..1.0).contains(u)));
    let (mean, standard_error) = mean_and_standard_error(&draws);
    assert!((mean - 0.5).abs() <= STANDARD_ERRORS * standard_error);
}

#[test]
fn score_names_validation_and_serde() {
    let raps = Score::Raps {
        lambda: DEFAULT_RAPS_LAMBDA,
        k_reg: DEFAULT_RAPS_K_REG,
        randomized: true,
    };
    assert_eq!(
        serde_json::to_string(&raps).unwrap(),
        r#"{"score":"raps","lambda":0.1,"k_reg":1,"randomized":true}"#
    );
    assert_eq!(
        serde_json::from_str::<Score>(r#"{"score":"lac"}"#).unwrap(),
        Score::Lac
    );
    let saps: Score =
        serde_json::from_str(r#"{"score":"saps","lambda":0.2,"randomized":false}"#).unwrap();
    assert_eq!(
        saps,
        Score::Saps {
            lambda: DEFAULT_SAPS_LAMBDA,
            randomized: false
        }
    );
    let names: Vec<&str> = [Score::Lac, Score::Aps { randomized: true }, raps, saps]
        .iter()
        .map(Score::name)
        .collect();
    assert_eq!(names, ["lac", "aps", "raps", "saps"]);
    assert_eq!(raps.validate(), Ok(()));
    assert!(!Score::Lac.is_randomized());
    assert!(!saps.is_randomized());
}

#[test]
fn quantile_rank_matches_exact_rational_arithmetic() {
    for m in 1..=999_u64 {
        let alpha = m as f64 / 1000.0;
        // k = ⌈(n + 1)(1000 − m)/1000⌉ with integers only.
        let expected = |n: u64| ((n + 1) * (1000 - m)).div_ceil(1000);
        for n in 1..=2000_u64 {
            assert_eq!(
                quantile_rank(n as usize, alpha).unwrap() as u64,
                expected(n),
                "n = {n}, alpha = {alpha}"
            );
        }
        // The smallest n with a finite threshold, found by scanning.
        let needed = (1..=2000_u64).find(|&n| expected(n) <= n).unwrap();
        assert_eq!(minimum_calibration_rows(alpha).unwrap() as u64, needed);
        assert_eq!(
            finite_quantile_rank(needed as usize, alpha).unwrap() as u64,
            expected(needed)
        );
        if needed > 1 {
            assert_eq!(
                finite_quantile_rank(needed as usize - 1, alpha),
                Err(ConformalError::TooFewCalibrationRows {
                    n: needed as usize - 1,
                    alpha,
                    needed: needed as usize
                })
            );
        }
    }
    // 100·(1 − 0.1) is 90.00000000000001 in floating point; the exact rank is 90.
    assert_eq!(quantile_rank(99, 0.1), Ok(90));
    assert_eq!(quantile_rank(500, 0.1), Ok(451));
    assert_eq!(quantile_rank(0, 0.1), Ok(1));
}

#[test]
fn thresholds_are_order_statistics() {
    let scores = [0.5, 0.1, 0.9, 0.3, 0.7];
    // n = 5, α = 0.5: k = ⌈6·0.5⌉ = 3, the third smallest is 0.5.
    assert_eq!(conformal_threshold(&scores, 0.5), Ok(0.5));
    // α = 0.1: k = ⌈5.4⌉ = 6 > 5, so every label is in every set.
    assert_eq!(conformal_threshold(&scores, 0.1), Ok(f64::INFINITY));
    assert_eq!(conformal_threshold(&[], 0.1), Ok(f64::INFINITY));
    // Class 0 has n = 3, k = ⌈4·0.5⌉ = 2 → 0.2; class 1 has none → +∞.
    assert_eq!(
        class_conditional_thresholds(&[0.3, 0.1, 0.2], &[0, 0, 0], 2, 0.5),
        Ok(vec![0.2, f64::INFINITY])
    );
    // Classes interleaved: class 0 gets {0.9, 0.1, 0.5} → 0.5; class 1 gets {0.4, 0.2, 0.8} → 0.4.
    assert_eq!(
        class_conditional_thresholds(&[0.9, 0.4, 0.1, 0.2, 0.5, 0.8], &[0, 1, 0, 1, 0, 1], 2, 0.5),
        Ok(vec![0.5, 0.4])
    );
}

#[test]
fn lac_sets_can_be_empty() {
    // 1 − p ≤ 0.5 needs p ≥ 0.5: no class of [0.4, 0.3, 0.3] qualifies.
    let sets = prediction_sets(
        &[0.4, 0.3, 0.3, 0.6, 0.3, 0.1],
        3,
        &Score::Lac,
        &[0.0, 0.0],
        &Thresholds::Marginal(0.5),
    )
    .unwrap();
    assert_eq!(sets.sizes, [0, 1]);
    assert_eq!(sets.set(0).count(), 0);
    assert_eq!(sets.set(1).collect::<Vec<_>>(), [0]);
    assert!(sets.contains(1, 0));
    assert!(!sets.contains(1, 1));
    assert!(!sets.contains(5, 0));
    assert!(!sets.contains(0, 7));
    assert_eq!(sets.len(), 2);
    assert!(!sets.is_empty());
}

proptest! {
    /// The integer keys rank labels as the documented comparison does: larger probability
    /// first (`-0.0` as `+0.0`, negative and subnormal values too), ties to the lower index.
    #[test]
    fn ranking_keys_sort_like_the_comparison(
        values in prop::collection::vec(
            prop_oneof![
                Just(0.0_f64),
                Just(-0.0_f64),
                Just(0.25_f64),
                Just(f64::MIN_POSITIVE / 4.0),
                -1.0_f64..1.0,
            ],
            1..24,
        ),
    ) {
        let mut by_key: Vec<usize> = (0..values.len()).collect();
        by_key.sort_by_key(|&y| ranking_key(&values, y));
        let mut by_comparison: Vec<usize> = (0..values.len()).collect();
        by_comparison.sort_by(|&a, &b| {
            (values[b] + 0.0).total_cmp(&(values[a] + 0.0)).then(a.cmp(&b))
        });
        prop_assert_eq!(by_key, by_comparison);
    }

    #[test]
    fn non_randomized_aps_sets_are_ranking_prefixes(
        weights in prop::collection::vec(0.0_f64..1.0, 1..16),
        qhat in 0.0_f64..1.2,
    ) {
        let total: f64 = weights.iter().sum();
        prop_assume!(total > 0.0);
        let p: Vec<f64> = weights.iter().map(|w| w / total).collect();
        let sets = prediction_sets(
            &p,
            p.len(),
            &Score::Aps { randomized: false },
            &[0.5],
            &Thresholds::Marginal(qhat),
        )
        .unwrap();
        let mut ranking: Vec<usize> = (0..p.len()).collect();
        ranking.sort_by(|&a, &b| p[b].partial_cmp(&p[a]).unwrap().then(a.cmp(&b)));
        let size = sets.sizes[0] as usize;
        for (position, &label) in ranking.iter().enumerate() {
            prop_assert_eq!(sets.contains(0, label as u32), position < size);
        }
        // The top label scores p_max, so the set is empty only when q̂ < p_max.
        prop_assert_eq!(size == 0, p[ranking[0]] > qhat);
    }
}

#[test]
fn set_metrics_by_hand() {
    // Rows (K = 3): {0} label 0 (singleton hit), {1, 2} label 0 (miss), {} label 2 (empty),
    // {0, 1, 2} label 1 (hit).
    let sets = PredictionSets {
        num_classes: 3,
        membership: vec![
            true, false, false, false, true, true, false, false, false, true, true, true,
        ],
        sizes: vec![1, 2, 0, 3],
    };
    let metrics = set_metrics(&sets, &[0, 0, 2, 1], ALPHA).unwrap();
    assert_eq!(metrics.coverage, 0.5);
    assert_eq!(
        metrics.per_class_coverage,
        [Some(0.5), Some(1.0), Some(0.0)]
    );
    assert_eq!(metrics.average_set_size, 1.5);
    assert_eq!(metrics.singleton_rate, 0.25);
    assert_eq!(metrics.singleton_hit_rate, 0.25);
    assert_eq!(metrics.empty_rate, 0.25);
    let stratum = |min_size, max_size, count, coverage| Stratum {
        min_size,
        max_size,
        count,
        coverage,
    };
    assert_eq!(
        metrics.size_stratified,
        [
            stratum(0, 0, 1, Some(0.0)),
            stratum(1, 1, 1, Some(1.0)),
            stratum(2, 3, 2, Some(0.5)),
            stratum(4, 6, 0, None),
            stratum(7, 10, 0, None),
        ]
    );
    // (|0.5 − 0.9| + |1 − 0.9| + |0 − 0.9|)/3 = 1.4/3.
    assert_close(&[metrics.covgap], &[1.4 / 3.0], HAND_TOLERANCE);
    // K = 12 adds an 11–12 stratum; class 1 has no examples.
    let mut membership = vec![true; 12];
    membership[3] = false;
    let wide = PredictionSets {
        num_classes: 12,
        membership,
        sizes: vec![11],
    };
    let metrics = set_metrics(&wide, &[0], ALPHA).unwrap();
    assert_eq!(metrics.size_stratified[5], stratum(11, 12, 1, Some(1.0)));
    assert_eq!(metrics.per_class_coverage[1], None);
    assert_close(&[metrics.covgap], &[0.1], HAND_TOLERANCE);
}

#[test]
fn marginal_coverage_lies_in_the_guarantee_band() {
    let data = synthetic(POOL, 11);
    let draws = uniforms(POOL, 12);
    let lower = 1.0 - ALPHA;
    let upper = lower + 1.0 / (N_CALIBRATION as f64 + 1.0);
    let mean_coverage = |score: Score| {
        let scores = true_label_scores(
            &data.probabilities,
            &data.labels,
            NUM_CLASSES,
            &score,
            &draws,
        )
        .unwrap();
        let coverages =
            coverage_experiment(&scores, N_CALIBRATION, ALPHA, REPETITIONS, 13).unwrap();
        mean_and_standard_error(&coverages)
    };
    // Scores are continuous here, so non-randomized APS is exact too.
    let scores = [
        Score::Lac,
        Score::Aps { randomized: true },
        Score::Aps { randomized: false },
        Score::Raps {
            lambda: DEFAULT_RAPS_LAMBDA,
            k_reg: DEFAULT_RAPS_K_REG,
            randomized: true,
        },
        Score::Saps {
            lambda: DEFAULT_SAPS_LAMBDA,
            randomized: true,
        },
    ];
    for score in scores {
        let (mean, standard_error) = mean_coverage(score);
        let margin = STANDARD_ERRORS * standard_error;
        assert!(
            mean >= lower - margin && mean <= upper + margin,
            "{score:?}: mean coverage {mean} outside [{lower}, {upper}] ± {margin}"
        );
    }
}

#[test]
fn non_randomized_aps_over_covers_saturated_probabilities() {
    // Logits 40·N(0, 1): in about a fifth of the rows the top logit leads every other by
    // more than 37, so p_max = 1.0 even in f64. Many non-randomized APS scores tie at exactly
    // 1.0, q̂ lands on the tie and coverage jumps to nearly 1. The uniform draw breaks the
    // ties.
    let data = synthetic_with_scale(POOL, 61, 40.0);
    let draws = uniforms(POOL, 62);
    let upper = 1.0 - ALPHA + 1.0 / (N_CALIBRATION as f64 + 1.0);
    let mean_coverage = |score: Score| {
        let scores = true_label_scores(
            &data.probabilities,
            &data.labels,
            NUM_CLASSES,
            &score,
            &draws,
        )
        .unwrap();
        let coverages =
            coverage_experiment(&scores, N_CALIBRATION, ALPHA, REPETITIONS, 63).unwrap();
        mean_and_standard_error(&coverages)
    };
    let (randomized, randomized_error) = mean_coverage(Score::Aps { randomized: true });
    assert!(
        (randomized - (1.0 - ALPHA)).abs()
            <= upper - (1.0 - ALPHA) + STANDARD_ERRORS * randomized_error,
        "randomized APS mean coverage {randomized}"
    );
    let (plain, plain_error) = mean_coverage(Score::Aps { randomized: false });
    assert!(
        plain > upper + STANDARD_ERRORS * plain_error && plain > randomized,
        "non-randomized APS mean coverage {plain} not above {upper}"
    );
    // q̂ = 1.0 is at least every top probability, so no set is empty.
    let (calibration, evaluation) = (0..N_CALIBRATION, N_CALIBRATION..POOL);
    let report = split_conformal(
        &data.probabilities[calibration.start * NUM_CLASSES..calibration.end * NUM_CLASSES],
        &data.labels[calibration],
        &data.probabilities[evaluation.start * NUM_CLASSES..],
        &data.labels[evaluation],
        NUM_CLASSES,
        &Score::Aps { randomized: false },
        ALPHA,
        ThresholdRule::Marginal,
        &vec![1.0; N_CALIBRATION],
        &vec![1.0; POOL - N_CALIBRATION],
    )
    .unwrap();
    assert_eq!(report.qhat, [1.0]);
    assert_eq!(report.metrics.empty_rate, 0.0);
    assert!(report.metrics.coverage > upper);
}

#[test]
fn mondrian_coverage_holds_within_every_class() {
    let data = synthetic(POOL, 21);
    let draws = uniforms(POOL, 22);
    for score in [Score::Lac, Score::Aps { randomized: true }] {
        let scores = true_label_scores(
            &data.probabilities,
            &data.labels,
            NUM_CLASSES,
            &score,
            &draws,
        )
        .unwrap();
        let mut per_class: Vec<Vec<f64>> = vec![Vec::new(); NUM_CLASSES];
        for repetition in 0..REPETITIONS {
            let split = experiment_split(POOL, N_CALIBRATION, 23, repetition).unwrap();
            let (calibration, evaluation) = split.split_at(N_CALIBRATION);
            let calibration_scores: Vec<f64> = calibration.iter().map(|&i| scores[i]).collect();
            let calibration_labels: Vec<u32> =
                calibration.iter().map(|&i| data.labels[i]).collect();
            let qhats = class_conditional_thresholds(
                &calibration_scores,
                &calibration_labels,
                NUM_CLASSES,
                ALPHA,
            )
            .unwrap();
            let mut count = [0_usize; NUM_CLASSES];
            let mut covered = [0_usize; NUM_CLASSES];
            for &i in evaluation {
                let label = data.labels[i] as usize;
                count[label] += 1;
                covered[label] += usize::from(scores[i] <= qhats[label]);
            }
            for class in 0..NUM_CLASSES {
                if count[class] > 0 {
                    per_class[class].push(covered[class] as f64 / count[class] as f64);
                }
            }
        }
        for (class, coverages) in per_class.iter().enumerate() {
            let (mean, standard_error) = mean_and_standard_error(coverages);
            assert!(
                mean >= 1.0 - ALPHA - STANDARD_ERRORS * standard_error,
                "{} class {class}: mean coverage {mean}",
                score.name()
            );
        }
    }
}

#[test]
fn split_conformal_sets_follow_the_thresholds() {
    let calibration = synthetic(N_CALIBRATION, 51);
    let evaluation = synthetic(800, 52);
    let seed = 53;
    let n_evaluation = evaluation.labels.len();
    let draws = uniforms(N_CALIBRATION + n_evaluation, seed);
    for class_conditional in [false, true] {
        for score in [
            Score::Aps { randomized: false },
            Score::Saps {
                lambda: DEFAULT_SAPS_LAMBDA,
                randomized: true,
            },
        ] {
            let (calibration_draws, evaluation_draws) = draws.split_at(N_CALIBRATION);
            let report = split_conformal(
                &calibration.probabilities,
                &calibration.labels,
                &evaluation.probabilities,
                &evaluation.labels,
                NUM_CLASSES,
                &score,
                ALPHA,
                if class_conditional {
                    ThresholdRule::ClassConditional
                } else {
                    ThresholdRule::Marginal
                },
                calibration_draws,
                evaluation_draws,
            )
            .unwrap();
            let calibration_scores = true_label_scores(
                &calibration.probabilities,
                &calibration.labels,
                NUM_CLASSES,
                &score,
                &draws[..N_CALIBRATION],
            )
            .unwrap();
            let expected_qhat = if class_conditional {
                class_conditional_thresholds(
                    &calibration_scores,
                    &calibration.labels,
                    NUM_CLASSES,
                    ALPHA,
                )
                .unwrap()
            } else {
                vec![conformal_threshold(&calibration_scores, ALPHA).unwrap()]
            };
            assert_eq!(report.qhat, expected_qhat);
            let all = all_label_scores(
                &evaluation.probabilities,
                NUM_CLASSES,
                &score,
                &draws[N_CALIBRATION..],
            )
            .unwrap();
            let mut covered = 0;
            for row in 0..n_evaluation {
                let members: Vec<u32> = (0..NUM_CLASSES as u32)
                    .filter(|&y| {
                        let qhat = report.qhat[if class_conditional { y as usize } else { 0 }];
                        all[row * NUM_CLASSES + y as usize] <= qhat
                    })
                    .collect();
                assert_eq!(report.sets.set(row).collect::<Vec<_>>(), members);
                assert_eq!(report.sets.sizes[row] as usize, members.len());
                covered += usize::from(members.contains(&evaluation.labels[row]));
            }
            assert_eq!(
                report.metrics.coverage,
                covered as f64 / n_evaluation as f64
            );
            if !class_conditional && score == (Score::Aps { randomized: false }) {
                // The top label scores p_max: a set is empty exactly when p_max > q̂.
                let over = evaluation
                    .probabilities
                    .chunks_exact(NUM_CLASSES)
                    .filter(|p| p.iter().any(|&v| v > report.qhat[0]))
                    .count();
                assert_eq!(report.metrics.empty_rate, over as f64 / n_evaluation as f64);
            }
        }
    }
}

#[test]
fn coverage_experiment_equals_brute_force() {
    let data = synthetic(1200, 31);
    let scores = true_label_scores(
        &data.probabilities,
        &data.labels,
        NUM_CLASSES,
        &Score::Lac,
        &uniforms(1200, 0),
    )
    .unwrap();
    let n_calibration = 300;
    let coverages = coverage_experiment(&scores, n_calibration, ALPHA, 5, 32).unwrap();
    assert_eq!(
        coverages,
        coverage_experiment(&scores, n_calibration, ALPHA, 5, 32).unwrap()
    );
    // k = ⌈301·0.9⌉ = ⌈270.9⌉ = 271.
    let k = 271;
    let mut previous: Option<Vec<usize>> = None;
    for (repetition, &coverage) in coverages.iter().enumerate() {
        let split = experiment_split(1200, n_calibration, 32, repetition).unwrap();
        let mut sorted = split.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..1200).collect::<Vec<_>>());
        assert_ne!(previous.as_ref(), Some(&split));
        let mut calibration: Vec<f64> = split[..n_calibration].iter().map(|&i| scores[i]).collect();
        calibration.sort_by(f64::total_cmp);
        let qhat = calibration[k - 1];
        let covered = split[n_calibration..]
            .iter()
            .filter(|&&i| scores[i] <= qhat)
            .count();
        assert_eq!(coverage, covered as f64 / 900.0);
        previous = Some(split);
    }
    // Any rank on the same splits: the 280th smallest score of the same calibration part, and
    // the marginal rank's coverages unchanged beside it.
    let ranks = coverage_experiment_at_ranks(&scores, n_calibration, &[k, 280], 5, 32).unwrap();
    assert_eq!(ranks[0], coverages);
    for (repetition, &coverage) in ranks[1].iter().enumerate() {
        let split = experiment_split(1200, n_calibration, 32, repetition).unwrap();
        let mut calibration: Vec<f64> = split[..n_calibration].iter().map(|&i| scores[i]).collect();
        calibration.sort_by(f64::total_cmp);
        let covered = split[n_calibration..]
            .iter()
            .filter(|&&i| scores[i] <= calibration[279])
            .count();
        assert_eq!(coverage, covered as f64 / 900.0);
    }
    assert!(matches!(
        coverage_experiment_at_ranks(&scores, n_calibration, &[0], 1, 0),
        Err(ConformalError::InvalidParameter { name: "rank", .. })
    ));
    // Too few calibration rows: q̂ = +∞ covers everything.
    assert_eq!(
        coverage_experiment(&scores, 5, ALPHA, 3, 1).unwrap(),
        [1.0, 1.0, 1.0]
    );
}

#[test]
fn alpha_sweep_equals_direct_computation() {
    let calibration = synthetic(600, 41);
    let evaluation = synthetic(900, 42);
    let score = Score::Raps {
        lambda: DEFAULT_RAPS_LAMBDA,
        k_reg: DEFAULT_RAPS_K_REG,
        randomized: true,
    };
    let calibration_scores = true_label_scores(
        &calibration.probabilities,
        &calibration.labels,
        NUM_CLASSES,
        &score,
        &uniforms(600, 43),
    )
    .unwrap();
    let evaluation_draws = uniforms(900, 44);
    let evaluation_scores = all_label_scores(
        &evaluation.probabilities,
        NUM_CLASSES,
        &score,
        &evaluation_draws,
    )
    .unwrap();
    // α = 0.001 needs 999 rows; with 600, q̂ = +∞.
    let alphas = [0.001, 0.01, 0.05, 0.1, 0.2, 0.5, 0.9];
    let points = alpha_sweep(
        &calibration_scores,
        &evaluation_scores,
        &evaluation.labels,
        NUM_CLASSES,
        &alphas,
    )
    .unwrap();
    for (point, &alpha) in points.iter().zip(&alphas) {
        let qhat = conformal_threshold(&calibration_scores, alpha).unwrap();
        let sets = prediction_sets(
            &evaluation.probabilities,
            NUM_CLASSES,
            &score,
            &evaluation_draws,
            &Thresholds::Marginal(qhat),
        )
        .unwrap();
        let metrics = set_metrics(&sets, &evaluation.labels, alpha).unwrap();
        assert_eq!(
            *point,
            SweepPoint {
                alpha,
                qhat,
                coverage: metrics.coverage,
                average_set_size: metrics.average_set_size
            }
        );
    }
    assert_eq!(points[0].qhat, f64::INFINITY);
    assert_eq!(points[0].average_set_size, NUM_CLASSES as f64);
}

#[test]
fn coverage_law_matches_hand_computed_cases() {
    // n = 3, α = 0.5: k = 2, Beta(2, 2) has mean 1/2 and variance 2·2/(4²·5) = 0.05.
    let law = coverage_law(3, 1, 0.5).unwrap();
    assert_eq!(law.k, 2);
    assert!((law.mean - 0.5).abs() <= 1e-15);
    assert!((law.beta_standard_deviation - 0.05_f64.sqrt()).abs() <= 1e-15);
    // One evaluation example is covered or not: a Bernoulli of the mean, for any n and α.
    for (n, alpha) in [(3, 0.5), (19, 0.1), (5000, 0.1), (999, 0.05)] {
        let law = coverage_law(n, 1, alpha).unwrap();
        let bernoulli = (law.mean * (1.0 - law.mean)).sqrt();
        assert!(
            (law.split_standard_deviation - bernoulli).abs() <= 1e-12,
            "n = {n}"
        );
    }
    // The page's split: n = m = 5,000 at α = 0.1 gives about 0.60 points per split, against
    // the 0.42 of the evaluation set's binomial noise alone.
    let law = coverage_law(5000, 5000, 0.1).unwrap();
    assert!((law.split_standard_deviation - 0.0060).abs() < 0.0001);
    assert!(matches!(
        coverage_law(5, 10, 0.01),
        Err(ConformalError::TooFewCalibrationRows { .. })
    ));
}

#[test]
fn beta_density_is_normalized_with_mean_k_over_n_plus_one() {
    // n = 2, α = 0.5: k = 2, Beta(2, 1) has density 2x. n = 3: Beta(2, 2), 6x(1 − x).
    let density = coverage_beta_density(2, 0.5, 0.3).unwrap();
    assert!((density - 0.6).abs() <= 1e-12);
    let density = coverage_beta_density(3, 0.5, 0.25).unwrap();
    assert!((density - 1.125).abs() <= 1e-12);
    assert_eq!(coverage_beta_density(3, 0.5, 1.5), Ok(0.0));
    assert_eq!(coverage_beta_density(3, 0.5, -0.5), Ok(0.0));
    let intervals = 100_000;
    let step = 1.0 / intervals as f64;
    for (n, alpha) in [(500, 0.1), (19, 0.1), (100, 0.05), (5000, 0.2)] {
        let k = quantile_rank(n, alpha).unwrap();
        let (mut integral, mut first_moment) = (0.0, 0.0);
        for i in 0..=intervals {
            let x = i as f64 * step;
            let weight = if i == 0 || i == intervals { 0.5 } else { 1.0 };
            let f = coverage_beta_density(n, alpha, x).unwrap();
            integral += weight * f * step;
            first_moment += weight * x * f * step;
        }
        assert!(
            (integral - 1.0).abs() <= INTEGRAL_TOLERANCE,
            "n = {n}: {integral}"
        );
        let mean = k as f64 / (n as f64 + 1.0);
        assert!(
            (first_moment - mean).abs() <= INTEGRAL_TOLERANCE,
            "n = {n}: {first_moment} vs {mean}"
        );
    }
}

#[test]
fn bad_input_is_rejected() {
    for alpha in [0.0, 1.0, -0.1, 1.5, f64::NAN, f64::INFINITY, 1e-12] {
        assert!(matches!(
            quantile_rank(10, alpha),
            Err(ConformalError::InvalidAlpha(_))
        ));
        assert!(matches!(
            conformal_threshold(&[0.5], alpha),
            Err(ConformalError::InvalidAlpha(_))
        ));
    }
    let p = [0.2, 0.3, 0.5, 0.6, 0.3, 0.1];
    let draws = [0.5, 0.5];
    assert_eq!(
        true_label_scores(&p, &[0, 3], 3, &Score::Lac, &draws),
        Err(ConformalError::LabelOutOfRange {
            row: 1,
            label: 3,
            num_classes: 3
        })
    );
    assert_eq!(
        true_label_scores(&p[..5], &[0, 1], 3, &Score::Lac, &draws),
        Err(ConformalError::ShapeMismatch {
            what: "probabilities (rows × num_classes)",
            expected: 6,
            actual: 5
        })
    );
    assert!(matches!(
        true_label_scores(&p, &[0, 1], 3, &Score::Lac, &[0.5]),
        Err(ConformalError::ShapeMismatch { .. })
    ));
    assert!(matches!(
        all_label_scores(&p, 0, &Score::Lac, &draws),
        Err(ConformalError::InvalidParameter {
            name: "num_classes",
            ..
        })
    ));
    let negative = Score::Raps {
        lambda: -0.1,
        k_reg: 5,
        randomized: true,
    };
    assert_eq!(
        negative.validate(),
        Err(ConformalError::InvalidParameter {
            name: "lambda",
            value: -0.1
        })
    );
    assert!(matches!(
        prediction_sets(&p, 3, &negative, &draws, &Thresholds::Marginal(0.5)),
        Err(ConformalError::InvalidParameter { name: "lambda", .. })
    ));
    let not_finite = Score::Saps {
        lambda: f64::NAN,
        randomized: false,
    };
    assert!(not_finite.validate().is_err());
    let mut with_nan = p;
    with_nan[4] = f64::NAN;
    assert_eq!(
        all_label_scores(&with_nan, 3, &Score::Lac, &draws),
        Err(ConformalError::NonFiniteProbability { row: 1, class: 1 })
    );
    let aps = Score::Aps { randomized: true };
    assert_eq!(
        all_label_scores(&p, 3, &aps, &[0.5, 1.5]),
        Err(ConformalError::InvalidUniform { row: 1, value: 1.5 })
    );
    assert!(all_label_scores(&p, 3, &Score::Aps { randomized: false }, &[0.5, 1.5]).is_ok());
    let mut out = [0.0; 2];
    assert!(matches!(
        label_scores(&p[..3], &aps, 0.5, &mut out),
        Err(ConformalError::ShapeMismatch { .. })
    ));
    assert_eq!(
        conformal_threshold(&[0.1, f64::NAN], 0.5),
        Err(ConformalError::NonFiniteScore { index: 1 })
    );
    assert!(matches!(
        prediction_sets(
            &p,
            3,
            &Score::Lac,
            &draws,
            &Thresholds::ClassConditional(vec![0.5; 2])
        ),
        Err(ConformalError::ShapeMismatch { .. })
    ));
    assert!(matches!(
        prediction_sets(&p, 3, &Score::Lac, &draws, &Thresholds::Marginal(f64::NAN)),
        Err(ConformalError::InvalidParameter {
            name: "threshold",
            ..
        })
    ));
    let empty = PredictionSets {
        num_classes: 3,
        membership: Vec::new(),
        sizes: Vec::new(),
    };
    assert_eq!(set_metrics(&empty, &[], ALPHA), Err(ConformalError::Empty));
    for n_calibration in [0, 3] {
        assert!(matches!(
            coverage_experiment(&[0.1, 0.2, 0.3], n_calibration, ALPHA, 1, 0),
            Err(ConformalError::InvalidParameter {
                name: "n_calibration",
                ..
            })
        ));
    }
    assert_eq!(
        coverage_experiment(&[], 1, ALPHA, 1, 0),
        Err(ConformalError::Empty)
    );
    assert_eq!(
        coverage_beta_density(5, 0.1, 0.5),
        Err(ConformalError::TooFewCalibrationRows {
            n: 5,
            alpha: 0.1,
            needed: 9
        })
    );
    assert!(matches!(
        coverage_beta_density(500, 0.1, f64::NAN),
        Err(ConformalError::InvalidParameter { name: "x", .. })
    ));
    assert!(matches!(
        alpha_sweep(&[0.1], &[0.1, 0.2], &[0], 2, &[0.0]),
        Err(ConformalError::InvalidAlpha(_))
    ));
    assert_eq!(
        alpha_sweep(&[0.1], &[], &[], 2, &[0.1]),
        Err(ConformalError::Empty)
    );
}

/// The spread of an exact Mondrian predictor's CovGap against the real procedure: Mondrian
/// thresholds on uniform (exchangeable, tie-free) scores of four classes, 2,000 times; the
/// standard deviation of the simulated CovGaps agrees within 10% (its own sampling error is
/// about 2%).
#[test]
fn covgap_spread_of_exact_mondrian_matches_the_procedure() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(44);
    let (calibration, evaluation, alpha) = ([99_usize, 30, 5, 60], [40_usize, 12, 20, 50], 0.1);
    let spread =
        covgap_spread_of_exact_mondrian(&calibration, &evaluation, alpha, 4_000, 1).unwrap();
    let covgaps: Vec<f64> = (0..2_000)
        .map(|_| {
            let gaps: f64 = calibration
                .iter()
                .zip(&evaluation)
                .map(|(&n, &m)| {
                    let scores: Vec<f64> = (0..n).map(|_| rng.random::<f64>()).collect();
                    let labels = vec![0; n];
                    let qhat = class_conditional_thresholds(&scores, &labels, 1, alpha).unwrap()[0];
                    let covered = (0..m).filter(|_| rng.random::<f64>() <= qhat).count();
                    (covered as f64 / m as f64 - (1.0 - alpha)).abs()
                })
                .sum();
            gaps / calibration.len() as f64
        })
        .collect();
    let mean = covgaps.iter().sum::<f64>() / covgaps.len() as f64;
    let simulated = (covgaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>()
        / (covgaps.len() - 1) as f64)
        .sqrt();
    assert!(
        (spread / simulated - 1.0).abs() < 0.1,
        "law {spread}, procedure {simulated}"
    );
    assert!(covgap_spread_of_exact_mondrian(&calibration, &evaluation, alpha, 1, 1).is_err());
}

/// The CovGap of an exact Mondrian predictor against a simulation of one: per class, q̂ from
/// `n_y` uniform calibration scores, coverage of `m_y` uniform evaluation scores, 20,000 times.
/// The mean of |coverage − (1 − α)| has a standard error of about 0.0004 per class; the
/// tolerance is about four of them.
#[test]
fn covgap_of_exact_mondrian_matches_a_simulation() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(43);
    let (calibration, evaluation, alpha) = ([99_usize, 30, 5, 9], [40_usize, 12, 20, 15], 0.1);
    let exact = covgap_of_exact_mondrian(&calibration, &evaluation, alpha).unwrap();
    let draws = 20_000;
    let mut simulated = 0.0;
    for (&n, &m) in calibration.iter().zip(&evaluation) {
        let k = quantile_rank(n, alpha).unwrap();
        let mut gap = 0.0;
        for _ in 0..draws {
            let qhat = if k > n {
                f64::INFINITY
            } else {
                let mut scores: Vec<f64> = (0..n).map(|_| rng.random::<f64>()).collect();
                scores.sort_by(f64::total_cmp);
                scores[k - 1]
            };
            let covered = (0..m).filter(|_| rng.random::<f64>() <= qhat).count();
            gap += (covered as f64 / m as f64 - (1.0 - alpha)).abs();
        }
        simulated += gap / draws as f64;
    }
    simulated /= calibration.len() as f64;
    assert!(
        (exact - simulated).abs() < 0.0015,
        "exact {exact}, simulated {simulated}"
    );
    // A class with no evaluation image is left out, as CovGap leaves it out.
    assert_eq!(
        covgap_of_exact_mondrian(&[99, 7], &[40, 0], alpha).unwrap(),
        covgap_of_exact_mondrian(&[99], &[40], alpha).unwrap()
    );
    assert!(covgap_of_exact_mondrian(&[9], &[0], alpha).is_err());
}
