//! Unit tests of `ood.rs`: hand examples with and without ties, and the metrics against brute-force
//! counts.

use super::*;
use proptest::prelude::*;

/// Tolerance for comparisons with exact fractions and brute-force counts.
const TOLERANCE: f64 = 1e-12;
/// Tolerance for values written by hand to 7–8 significant digits.
const HAND_TOLERANCE: f64 = 1e-7;

fn assert_close(actual: f64, expected: f64) {
    assert!(
        (actual - expected).abs() <= TOLERANCE,
        "expected {expected}, got {actual}"
    );
}

/// O(n_in·n_out) pair count: ID above OOD counts 1, a tie ½.
fn brute_force_auroc(in_distribution: &[f64], out_of_distribution: &[f64]) -> f64 {
    let mut pairs = 0.0;
    for &i in in_distribution {
        for &o in out_of_distribution {
            pairs += if i > o {
                1.0
            } else if i == o {
                0.5
            } else {
                0.0
            };
        }
    }
    pairs / (in_distribution.len() * out_of_distribution.len()) as f64
}

/// Average precision straight from its definition: for each distinct score t, descending,
/// count positives and negatives ≥ t.
fn brute_force_average_precision(positive: &[f64], negative: &[f64]) -> f64 {
    let mut thresholds: Vec<f64> = positive.iter().chain(negative).copied().collect();
    thresholds.sort_by(|a, b| b.total_cmp(a));
    thresholds.dedup();
    let mut previous_recall = 0.0;
    let mut sum = 0.0;
    for t in thresholds {
        let true_positives = positive.iter().filter(|&&s| s >= t).count() as f64;
        let false_positives = negative.iter().filter(|&&s| s >= t).count() as f64;
        let recall = true_positives / positive.len() as f64;
        if true_positives > 0.0 {
            sum += (recall - previous_recall) * true_positives / (true_positives + false_positives);
        }
        previous_recall = recall;
    }
    sum
}

/// FPR95 straight from its definition: the largest ID score t with ≥ 95% of ID ≥ t.
fn brute_force_fpr95(in_distribution: &[f64], out_of_distribution: &[f64]) -> f64 {
    let count_at_or_above = |scores: &[f64], t: f64| scores.iter().filter(|&&s| s >= t).count();
    let threshold = in_distribution
        .iter()
        .copied()
        .filter(|&t| 100 * count_at_or_above(in_distribution, t) >= 95 * in_distribution.len())
        .fold(f64::NEG_INFINITY, f64::max);
    count_at_or_above(out_of_distribution, threshold) as f64 / out_of_distribution.len() as f64
}

fn negated(scores: &[f64]) -> Vec<f64> {
    scores.iter().map(|s| -s).collect()
}

#[test]
fn hand_example_with_ties() {
    let in_distribution = [0.9, 0.7, 0.7];
    let out_of_distribution = [0.7, 0.2];
    let metrics = detection_metrics(&in_distribution, &out_of_distribution).unwrap();
    // Pairs: 0.9 beats both (2), each 0.7 ties 0.7 (½ + ½) and beats 0.2 (2): 5 of 6.
    assert_close(metrics.auroc, 5.0 / 6.0);
    // ⌈0.95·3⌉ = 3: threshold is the 3rd largest ID score, 0.7; OOD ≥ 0.7: 1 of 2.
    assert_close(metrics.fpr95, 0.5);
    // AUPR-In, thresholds 0.9: P = 1, R = ⅓; 0.7: P = 3/4, R = 1.
    // AP = ⅓·1 + ⅔·¾ = 5/6.
    assert_close(metrics.aupr_in, 5.0 / 6.0);
    // AUPR-Out on negated scores, thresholds −0.2: P = 1, R = ½; −0.7: P = 2/4, R = 1.
    // AP = ½·1 + ½·½ = 3/4.
    assert_close(metrics.aupr_out, 0.75);
}

#[test]
fn hand_example_without_ties() {
    // Descending: 0.9 ID, 0.8 OOD, 0.7 ID, 0.5 OOD, 0.4 ID, 0.2 OOD.
    // AP-In = ⅓·1 + ⅓·⅔ + ⅓·⅗ = 34/45 (scikit-learn gives 0.7555…).
    let metrics = detection_metrics(&[0.9, 0.7, 0.4], &[0.8, 0.5, 0.2]).unwrap();
    assert_close(metrics.aupr_in, 34.0 / 45.0);
    assert_close(metrics.aupr_out, 34.0 / 45.0);
    // ID above OOD in 6 of the 9 pairs.
    assert_close(metrics.auroc, 6.0 / 9.0);
    // Threshold 0.4 (3rd largest ID): OOD ≥ 0.4 are 0.8 and 0.5.
    assert_close(metrics.fpr95, 2.0 / 3.0);
}

#[test]
fn perfect_separation() {
    let in_distribution: Vec<f64> = (0..40).map(|i| 10.0 + f64::from(i)).collect();
    let out_of_distribution: Vec<f64> = (0..25).map(|i| f64::from(i) - 30.0).collect();
    let metrics = detection_metrics(&in_distribution, &out_of_distribution).unwrap();
    assert_eq!(metrics.auroc, 1.0);
    assert_eq!(metrics.fpr95, 0.0);
    assert_eq!(metrics.aupr_in, 1.0);
    assert_eq!(metrics.aupr_out, 1.0);
}

#[test]
fn identical_distributions() {
    let scores = [1.0, 2.0, 3.0, 4.0, 4.0, 7.0];
    assert_eq!(auroc(&scores, &scores).unwrap(), 0.5);
    // ⌈0.95·6⌉ = 6: the threshold is the smallest score, so every OOD score is above it.
    assert_eq!(fpr_at_95_tpr(&scores, &scores).unwrap(), 1.0);
    let constant = [0.3; 5];
    assert_eq!(auroc(&constant, &[0.3; 8]).unwrap(), 0.5);
}

#[test]
fn fpr95_threshold_keeps_95_percent() {
    // 20 ID scores 1..=20: ⌈19⌉ = 19, threshold = 19th largest = 2. OOD ≥ 2: {2, 5}.
    let in_distribution: Vec<f64> = (1..=20).map(f64::from).collect();
    assert_close(
        fpr_at_95_tpr(&in_distribution, &[0.0, 1.0, 1.5, 2.0, 5.0]).unwrap(),
        0.4,
    );
    // 21 ID scores: ⌈19.95⌉ = 20, threshold = 20th largest = 2 of 1..=21.
    let in_distribution: Vec<f64> = (1..=21).map(f64::from).collect();
    assert_close(fpr_at_95_tpr(&in_distribution, &[1.0, 2.0]).unwrap(), 0.5);
}

#[test]
fn scores_from_logits() {
    let values = [1e4_f32, 1e4, -1e4, 2.0, 0.0, 0.0, -1e4, -1e4, -1e4];
    let logits = Logits::new(&values, 3).unwrap();
    let energy = energy_score(&logits, 1.0).unwrap();
    // log(e^1e4 + e^1e4 + e^−1e4) = 1e4 + ln 2; log(e² + 2) = 2.2395447;
    // three equal logits: −1e4 + ln 3.
    assert!((energy[0] - (1e4 + 2.0_f64.ln())).abs() <= HAND_TOLERANCE);
    assert!((energy[1] - 2.239_544_7).abs() <= HAND_TOLERANCE);
    assert!((energy[2] - (-1e4 + 3.0_f64.ln())).abs() <= HAND_TOLERANCE);
    for temperature in [0.05, 20.0] {
        let energy = energy_score(&logits, temperature).unwrap();
        assert!((energy[0] - (1e4 + temperature * 2.0_f64.ln())).abs() <= HAND_TOLERANCE);
        assert!(energy.iter().all(|e| e.is_finite()));
        let msp = max_softmax_probability(&logits, temperature).unwrap();
        assert!(msp.iter().all(|p| p.is_finite()));
    }
    let msp = max_softmax_probability(&logits, 1.0).unwrap();
    // e²/(e² + 2) = 0.7869860.
    assert_close(msp[0], 0.5);
    assert!((msp[1] - 0.786_986_0).abs() <= HAND_TOLERANCE);
    assert_close(msp[2], 1.0 / 3.0);
    assert_eq!(max_logit(&logits), vec![1e4, 2.0, -1e4]);
    assert_eq!(
        energy_score(&logits, 0.0),
        Err(OodError::InvalidTemperature(0.0))
    );
    assert_eq!(
        max_softmax_probability(&logits, -2.0),
        Err(OodError::InvalidTemperature(-2.0))
    );
}

#[test]
fn errors() {
    assert_eq!(
        auroc(&[], &[1.0]),
        Err(OodError::EmptyScores(ScoreSet::InDistribution))
    );
    assert_eq!(
        detection_metrics(&[1.0], &[]),
        Err(OodError::EmptyScores(ScoreSet::OutOfDistribution))
    );
    assert_eq!(
        fpr_at_95_tpr(&[1.0, 2.0], &[0.0, f64::NAN]),
        Err(OodError::NanScore {
            set: ScoreSet::OutOfDistribution,
            index: 1
        })
    );
    assert_eq!(
        aupr_in(&[f64::NAN], &[0.0]).unwrap_err().to_string(),
        "score 0 of the in-distribution set is NaN"
    );
    // Infinite scores are ordered like any other.
    assert_eq!(aupr_out(&[f64::INFINITY], &[f64::NEG_INFINITY]), Ok(1.0));
}

fn scores_with_ties() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec((0_u8..12).prop_map(|level| f64::from(level) * 0.25), 1..80)
}

proptest! {
    #[test]
    fn metrics_match_brute_force(
        in_distribution in scores_with_ties(),
        out_of_distribution in scores_with_ties(),
    ) {
        let metrics = detection_metrics(&in_distribution, &out_of_distribution).unwrap();
        let expected_auroc = brute_force_auroc(&in_distribution, &out_of_distribution);
        prop_assert!((metrics.auroc - expected_auroc).abs() <= TOLERANCE);
        let expected_in = brute_force_average_precision(&in_distribution, &out_of_distribution);
        prop_assert!((metrics.aupr_in - expected_in).abs() <= TOLERANCE);
        let expected_out = brute_force_average_precision(
            &negated(&out_of_distribution),
            &negated(&in_distribution),
        );
        prop_assert!((metrics.aupr_out - expected_out).abs() <= TOLERANCE);
        let expected_fpr = brute_force_fpr95(&in_distribution, &out_of_distribution);
        prop_assert!((metrics.fpr95 - expected_fpr).abs() <= TOLERANCE);
        // Swapping the sets mirrors the AUROC.
        let swapped = auroc(&out_of_distribution, &in_distribution).unwrap();
        prop_assert!((metrics.auroc + swapped - 1.0).abs() <= TOLERANCE);
    }
}
