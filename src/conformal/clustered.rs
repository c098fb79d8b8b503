//! Clustered conformal prediction: classes whose scores look alike share one threshold, between
//! one threshold for all (marginal) and one per class (Mondrian).
//!
//! # Method (Ding, Angelopoulos, Bates, Jordan & Tibshirani 2023)
//!
//! 1. **Sizes.** With `n_y` calibration rows in class `y` and `t` the fewest rows a finite
//!    threshold needs at α ([`super::minimum_calibration_rows`]), `n_min = max(min_y n_y, t)`
//!    and `K'` the classes with `n_y ≥ n_min`: the authors' heuristic takes
//!    `n_c = ⌊n_min·K'/(75 + K')⌋` rows a class for clustering and `M = ⌊n_c/2⌋` clusters
//!    (or `M` given).
//! 2. **Split.** Each calibration row goes to the clustering part with probability `n_c/n_min`
//!    (ChaCha8 seeded), the rest to the proper calibration part.
//! 3. **Rare classes**, with fewer than `t` clustering rows, join the *null* cluster.
//! 4. **Clustering.** Every other class is embedded as the quantiles of its clustering scores at
//!    0.5, 0.6, 0.7, 0.8 and 0.9 (linear interpolation, NumPy's default), and the embeddings
//!    are grouped by k-means into `M` clusters, each class weighted by the square root of its
//!    clustering rows (k-means++ starts, 10 of them, the lowest weighted inertia kept; Lloyd's
//!    iterations until nothing moves). When no more classes than `M` remain, or `M ≤ 1`, there
//!    is no clustering and every class is in the null cluster.
//! 5. **Thresholds.** Each cluster's `q̂` is split conformal's on the proper calibration scores
//!    of its classes (`+∞` when too few); the null cluster's is the marginal `q̂` of every proper
//!    calibration score. Class `y` uses its cluster's `q̂`.
//!
//! Coverage holds within each cluster (`≥ 1 − α` given the clustering, as the clustering part
//! and the calibration part are disjoint), and so within each class whose cluster holds
//! classes with the same score distribution. Clusters are numbered by their first class.
//!
//! # Sources
//!
//! - T. Ding, A. N. Angelopoulos, S. Bates, M. I. Jordan, R. J. Tibshirani, "Class-conditional
//!   conformal prediction with many classes", NeurIPS 2023, and their code
//!   (`utils/conformal_utils.py`, `clustered_conformal` with `split='random'`).
//! - D. Arthur, S. Vassilvitskii, "k-means++: the advantages of careful seeding", SODA 2007.
//!
//! Every definition, with its source: docs/definitions.md

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::{
    check_labels, check_length, check_num_classes, check_scores_finite, conformal_threshold,
    kth_smallest, minimum_calibration_rows, quantile_rank, ConformalError,
};

/// The quantile levels of a class's embedding.
pub const EMBEDDING_LEVELS: [f64; 5] = [0.5, 0.6, 0.7, 0.8, 0.9];
/// k-means starts; the one with the lowest inertia is kept.
const KMEANS_STARTS: usize = 10;
/// Lloyd iterations at most per start.
const KMEANS_ITERATIONS: usize = 300;

/// What clustered conformal prediction chose and found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClusteredThresholds {
    /// `q̂_y` for each class (its cluster's); `+∞` where a cluster has too few rows.
    pub qhat_per_class: Vec<f64>,
    /// The cluster of each class, `None` for the null cluster.
    pub cluster_of_class: Vec<Option<usize>>,
    /// Clusters asked for (`M`).
    pub clusters: usize,
    /// Calibration rows given to the clustering.
    pub clustering_rows: usize,
}

/// The quantile of `sorted` (ascending, non-empty) at `level` by linear interpolation, as
/// NumPy's `quantile` computes it by default.
fn linear_quantile(sorted: &[f64], level: f64) -> f64 {
    let position = (sorted.len() - 1) as f64 * level;
    let below = position.floor() as usize;
    let above = (below + 1).min(sorted.len() - 1);
    let fraction = position - below as f64;
    let (a, b) = (sorted[below], sorted[above]);
    // NumPy's _lerp: from the nearer end, so that the result never leaves [a, b].
    if fraction >= 0.5 {
        b - (b - a) * (1.0 - fraction)
    } else {
        a + (b - a) * fraction
    }
}

/// The embedding of each class's scores ([`EMBEDDING_LEVELS`]); `None` for a class with none.
pub fn quantile_embeddings(
    scores: &[f64],
    labels: &[u32],
    num_classes: usize,
) -> Vec<Option<[f64; 5]>> {
    let mut per_class: Vec<Vec<f64>> = vec![Vec::new(); num_classes];
    for (&score, &label) in scores.iter().zip(labels) {
        per_class[label as usize].push(score);
    }
    per_class
        .iter_mut()
        .map(|class_scores| {
            (!class_scores.is_empty()).then(|| {
                class_scores.sort_by(f64::total_cmp);
                EMBEDDING_LEVELS.map(|level| linear_quantile(class_scores, level))
            })
        })
        .collect()
}

fn squared_distance(a: &[f64; 5], b: &[f64; 5]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum()
}

/// The nearest center of `point` (the first of equally near ones) and its squared distance.
fn nearest(point: &[f64; 5], centers: &[[f64; 5]]) -> (usize, f64) {
    centers
        .iter()
        .enumerate()
        .map(|(index, center)| (index, squared_distance(point, center)))
        .fold((0, f64::INFINITY), |best, next| {
            if next.1 < best.1 {
                next
            } else {
                best
            }
        })
}

/// An index drawn with probability proportional to `weights` (a zero total draws the first).
fn draw_proportional(weights: &[f64], rng: &mut ChaCha8Rng) -> usize {
    let total: f64 = weights.iter().sum();
    if total <= 0.0 {
        return 0;
    }
    let mut u = rng.random::<f64>() * total;
    for (index, &weight) in weights.iter().enumerate() {
        if u < weight {
            return index;
        }
        u -= weight;
    }
    weights.iter().rposition(|&w| w > 0.0).unwrap_or(0)
}

/// Weighted k-means of `points` into `clusters` groups (module docs): each point's group.
/// `clusters ≤ points.len()`.
pub fn weighted_kmeans(
    points: &[[f64; 5]],
    weights: &[f64],
    clusters: usize,
    seed: u64,
) -> Vec<usize> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut best: Option<(f64, Vec<usize>)> = None;
    for _ in 0..KMEANS_STARTS {
        // k-means++: the first center by weight, each next by weight × squared distance.
        let mut centers = vec![points[draw_proportional(weights, &mut rng)]];
        while centers.len() < clusters {
            let reach: Vec<f64> = points
                .iter()
                .zip(weights)
                .map(|(point, &weight)| weight * nearest(point, &centers).1)
                .collect();
            centers.push(points[draw_proportional(&reach, &mut rng)]);
        }
        let mut assignment = vec![usize::MAX; points.len()];
        for _ in 0..KMEANS_ITERATIONS {
            let next: Vec<usize> = points.iter().map(|p| nearest(p, &centers).0).collect();
            if next == assignment {
                break;
            }
            assignment = next;
            for (index, center) in centers.iter_mut().enumerate() {
                let mut sum = [0.0; 5];
                let mut mass = 0.0;
                for ((point, &weight), _) in points
                    .iter()
                    .zip(weights)
                    .zip(&assignment)
                    .filter(|&(_, &group)| group == index)
                {
                    for (total, value) in sum.iter_mut().zip(point) {
                        *total += weight * value;
                    }
                    mass += weight;
                }
                // An emptied cluster keeps its center.
                if mass > 0.0 {
                    *center = sum.map(|total| total / mass);
                }
            }
        }
        let inertia: f64 = points
            .iter()
            .zip(weights)
            .zip(&assignment)
            .map(|((point, &weight), &group)| weight * squared_distance(point, &centers[group]))
            .sum();
        if best.as_ref().is_none_or(|(lowest, _)| inertia < *lowest) {
            best = Some((inertia, assignment));
        }
    }
    best.map(|(_, assignment)| assignment).unwrap_or_default()
}

/// The clusters of the classes from the clustering part's scores: `None` for a rare class or
/// when there is no clustering (module docs, steps 3 and 4). Clusters are renumbered in the
/// order of their first class.
///
/// # Errors
/// [`ConformalError::InvalidAlpha`].
pub fn cluster_classes(
    scores: &[f64],
    labels: &[u32],
    num_classes: usize,
    alpha: f64,
    clusters: usize,
    seed: u64,
) -> Result<Vec<Option<usize>>, ConformalError> {
    let needed = minimum_calibration_rows(alpha)?;
    let mut counts = vec![0_usize; num_classes];
    for &label in labels {
        counts[label as usize] += 1;
    }
    let embeddings = quantile_embeddings(scores, labels, num_classes);
    let kept: Vec<usize> = (0..num_classes).filter(|&y| counts[y] >= needed).collect();
    let mut cluster_of_class = vec![None; num_classes];
    if kept.len() <= clusters || clusters <= 1 {
        return Ok(cluster_of_class);
    }
    let points: Vec<[f64; 5]> = kept.iter().filter_map(|&y| embeddings[y]).collect();
    let weights: Vec<f64> = kept.iter().map(|&y| (counts[y] as f64).sqrt()).collect();
    let groups = weighted_kmeans(&points, &weights, clusters, seed);
    let mut renumbered: Vec<Option<usize>> = vec![None; clusters];
    let mut next = 0;
    for (&class, &group) in kept.iter().zip(&groups) {
        let number = *renumbered[group].get_or_insert_with(|| {
            next += 1;
            next - 1
        });
        cluster_of_class[class] = Some(number);
    }
    Ok(cluster_of_class)
}

/// Each class's threshold from the proper calibration part (module docs, step 5): its
/// cluster's `q̂` over the scores of the cluster's classes, or for the null cluster (`None`)
/// the marginal `q̂` of every score. Labels are below `cluster_of_class.len()`.
///
/// # Errors
/// [`ConformalError::InvalidAlpha`].
pub fn thresholds_of_clusters(
    scores: &[f64],
    labels: &[u32],
    cluster_of_class: &[Option<usize>],
    alpha: f64,
) -> Result<Vec<f64>, ConformalError> {
    let null_qhat = conformal_threshold(scores, alpha)?;
    let cluster_count = cluster_of_class
        .iter()
        .flatten()
        .max()
        .map_or(0, |&m| m + 1);
    let mut cluster_scores: Vec<Vec<f64>> = vec![Vec::new(); cluster_count];
    for (&score, &label) in scores.iter().zip(labels) {
        if let Some(cluster) = cluster_of_class[label as usize] {
            cluster_scores[cluster].push(score);
        }
    }
    let cluster_qhats: Vec<f64> = cluster_scores
        .iter_mut()
        .map(|values| {
            let k = quantile_rank(values.len(), alpha)?;
            Ok(kth_smallest(values, k))
        })
        .collect::<Result<_, ConformalError>>()?;
    Ok(cluster_of_class
        .iter()
        .map(|cluster| cluster.map_or(null_qhat, |c| cluster_qhats[c]))
        .collect())
}

/// The heuristic's rows a class for clustering and cluster count (module docs, step 1), from
/// the calibration rows of each class: `(n_c, n_min, M)`.
fn clustering_sizes(counts: &[usize], needed: usize) -> (usize, usize, usize) {
    let n_min = counts.iter().copied().min().unwrap_or(0).max(needed);
    let remaining = counts.iter().filter(|&&n| n >= n_min).count();
    let rows = n_min * remaining / (75 + remaining);
    (rows, n_min, rows / 2)
}

/// Clustered conformal thresholds from the true-label `scores` of the calibration rows (module
/// docs). `clusters` overrides the heuristic's `M`; `seed` drives the split and k-means.
///
/// # Errors
/// [`ConformalError::InvalidAlpha`]; [`ConformalError::InvalidParameter`] for
/// `num_classes = 0`; [`ConformalError::ShapeMismatch`]; [`ConformalError::LabelOutOfRange`];
/// [`ConformalError::NonFiniteScore`].
pub fn clustered_thresholds(
    scores: &[f64],
    labels: &[u32],
    num_classes: usize,
    alpha: f64,
    clusters: Option<usize>,
    seed: u64,
) -> Result<ClusteredThresholds, ConformalError> {
    let needed = minimum_calibration_rows(alpha)?;
    check_num_classes(num_classes)?;
    check_length("scores (one per label)", labels.len(), scores.len())?;
    check_labels(labels, num_classes)?;
    check_scores_finite(scores)?;
    let mut counts = vec![0_usize; num_classes];
    for &label in labels {
        counts[label as usize] += 1;
    }
    let (rows, n_min, heuristic_clusters) = clustering_sizes(&counts, needed);
    let clusters = clusters.unwrap_or(heuristic_clusters);
    let share = rows as f64 / n_min as f64;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let in_clustering: Vec<bool> = (0..labels.len())
        .map(|_| rng.random::<f64>() < share)
        .collect();
    let part = |clustering: bool| -> (Vec<f64>, Vec<u32>) {
        scores
            .iter()
            .zip(labels)
            .zip(&in_clustering)
            .filter(|&(_, &c)| c == clustering)
            .map(|((&s, &y), _)| (s, y))
            .unzip()
    };
    let (clustering_scores, clustering_labels) = part(true);
    let (proper_scores, proper_labels) = part(false);
    let cluster_of_class = cluster_classes(
        &clustering_scores,
        &clustering_labels,
        num_classes,
        alpha,
        clusters,
        seed,
    )?;
    Ok(ClusteredThresholds {
        qhat_per_class: thresholds_of_clusters(
            &proper_scores,
            &proper_labels,
            &cluster_of_class,
            alpha,
        )?,
        cluster_of_class,
        clusters,
        clustering_rows: clustering_labels.len(),
    })
}

#[cfg(test)]
#[path = "clustered_tests.rs"]
mod tests;
