//! Unit tests of `conformal/clustered.rs`: the authors' pipeline with scikit-learn's k-means
//! (`scripts/conformal-reference.py`, fixture `tests/fixtures/conformal/clustered.json`), the
//! heuristic's sizes, and per-class coverage over seeded calibration sets of planted clusters.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

use super::*;

/// NumPy interpolates the same two order statistics; the last bit may differ.
const LIBRARY_TOLERANCE: f64 = 1e-12;
/// Statistical checks allow this many standard errors.
const STANDARD_ERRORS: f64 = 3.0;

#[derive(Deserialize)]
struct Reference {
    alpha: f64,
    clustering_scores: Vec<f64>,
    clustering_labels: Vec<u32>,
    proper_scores: Vec<f64>,
    proper_labels: Vec<u32>,
    embeddings: Vec<[f64; 5]>,
    cluster_of_class: Vec<Option<usize>>,
    qhat_per_class: Vec<f64>,
}

#[test]
fn embeddings_clusters_and_thresholds_equal_the_authors_pipeline() {
    let reference: Reference = serde_json::from_str(include_str!(
        "../../tests/fixtures/conformal/clustered.json"
    ))
    .unwrap();
    let embeddings = quantile_embeddings(
        &reference.clustering_scores,
        &reference.clustering_labels,
        13,
    );
    for (class, (ours, numpy)) in embeddings.iter().zip(&reference.embeddings).enumerate() {
        for (a, b) in ours.unwrap().iter().zip(numpy) {
            assert!(
                (a - b).abs() <= LIBRARY_TOLERANCE,
                "class {class}: {a} against {b}"
            );
        }
    }
    let clusters = cluster_classes(
        &reference.clustering_scores,
        &reference.clustering_labels,
        13,
        reference.alpha,
        3,
        0,
    )
    .unwrap();
    assert_eq!(clusters, reference.cluster_of_class);
    let thresholds = thresholds_of_clusters(
        &reference.proper_scores,
        &reference.proper_labels,
        &clusters,
        reference.alpha,
    )
    .unwrap();
    assert_eq!(thresholds, reference.qhat_per_class);
}

#[test]
fn ten_classes_of_five_hundred_rows_are_not_clustered() {
    // n_min = 500, K' = 10: ⌊500·10/85⌋ = 58 rows a class, ⌊58/2⌋ = 29 clusters ≥ 10 classes.
    assert_eq!(clustering_sizes(&[500; 10], 9), (58, 500, 29));
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let labels: Vec<u32> = (0..5000).map(|row| (row % 10) as u32).collect();
    let scores: Vec<f64> = labels.iter().map(|_| rng.random()).collect();
    let clustered = clustered_thresholds(&scores, &labels, 10, 0.1, None, 0).unwrap();
    assert_eq!(clustered.clusters, 29);
    assert_eq!(clustered.cluster_of_class, vec![None; 10]);
    assert!(clustered
        .qhat_per_class
        .iter()
        .all(|&q| q == clustered.qhat_per_class[0]));
    // About 58/500 of the rows go to the clustering.
    assert!((clustered.clustering_rows as f64 - 580.0).abs() < 100.0);
}

#[test]
fn bad_input_is_refused() {
    assert!(matches!(
        clustered_thresholds(&[0.5], &[0], 1, 0.0, None, 0),
        Err(ConformalError::InvalidAlpha(_))
    ));
    assert!(matches!(
        clustered_thresholds(&[0.5], &[3], 2, 0.1, None, 0),
        Err(ConformalError::LabelOutOfRange { .. })
    ));
    assert!(matches!(
        clustered_thresholds(&[0.5, 0.2], &[0], 2, 0.1, None, 0),
        Err(ConformalError::ShapeMismatch { .. })
    ));
    assert!(matches!(
        clustered_thresholds(&[f64::NAN], &[0], 2, 0.1, None, 0),
        Err(ConformalError::NonFiniteScore { index: 0 })
    ));
}

/// Class `y`'s scores follow `U^POWERS[y % 3]`, whose distribution function is `q^(1/power)`.
const POWERS: [f64; 3] = [0.5, 1.0, 3.0];
const CLASSES: usize = 12;

fn planted_calibration(rows_per_class: usize, rng: &mut ChaCha8Rng) -> (Vec<f64>, Vec<u32>) {
    (0..rows_per_class * CLASSES)
        .map(|row| {
            let class = row % CLASSES;
            (rng.random::<f64>().powf(POWERS[class % 3]), class as u32)
        })
        .unzip()
}

fn coverage_of(class: usize, qhat: f64) -> f64 {
    qhat.clamp(0.0, 1.0).powf(1.0 / POWERS[class % 3])
}

#[test]
fn each_cluster_is_covered_and_the_classes_closer_to_the_target_than_marginal() {
    const REPETITIONS: usize = 200;
    const ALPHA: f64 = 0.1;
    let mut rng = ChaCha8Rng::seed_from_u64(2023);
    // For each class, the coverage of the cluster it is in (the mean over that cluster's
    // classes, which are equally frequent): what the method guarantees.
    let mut cluster_coverage = vec![Vec::new(); CLASSES];
    let (mut clustered_gap, mut marginal_gap) = (0.0, 0.0);
    for repetition in 0..REPETITIONS {
        let (scores, labels) = planted_calibration(400, &mut rng);
        let thresholds =
            clustered_thresholds(&scores, &labels, CLASSES, ALPHA, Some(3), repetition as u64)
                .unwrap();
        let shared = conformal_threshold(&scores, ALPHA).unwrap();
        let coverage: Vec<f64> = (0..CLASSES)
            .map(|class| coverage_of(class, thresholds.qhat_per_class[class]))
            .collect();
        for class in 0..CLASSES {
            let cluster = thresholds.cluster_of_class[class];
            let members: Vec<f64> = (0..CLASSES)
                .filter(|&other| thresholds.cluster_of_class[other] == cluster)
                .map(|other| coverage[other])
                .collect();
            cluster_coverage[class].push(members.iter().sum::<f64>() / members.len() as f64);
            clustered_gap += (coverage[class] - (1.0 - ALPHA)).abs();
            marginal_gap += (coverage_of(class, shared) - (1.0 - ALPHA)).abs();
        }
    }
    for (class, values) in cluster_coverage.iter().enumerate() {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let error = (variance / n).sqrt();
        assert!(
            mean >= 1.0 - ALPHA - STANDARD_ERRORS * error,
            "the cluster of class {class}: coverage {mean}"
        );
    }
    // CovGap: clustering brings each class nearer 1 − α than one shared threshold does.
    let scale = (REPETITIONS * CLASSES) as f64;
    let (clustered_gap, marginal_gap) = (clustered_gap / scale, marginal_gap / scale);
    assert!(
        clustered_gap < 0.5 * marginal_gap,
        "CovGap: clustered {clustered_gap}, marginal {marginal_gap}"
    );
}
