//! Unit tests of `ood_features.rs`: every detector against pytorch-ood 0.4.0 on the committed
//! synthetic features of `scripts/ood-features-reference.py` (per-row scores within 1e-6
//! relative, FPR95 and AUROC exactly), and planted answers: the Mahalanobis distance of a
//! Gaussian recovered from its samples, a dead unit that the pseudo-inverse ignores, ViM's
//! origin with all-zero logits, GradNorm zero where the softmax is uniform, and each refusal.

use std::path::{Path, PathBuf};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use serde_json::Value;

use super::*;
use crate::input::{read_labels, read_logits};
use crate::ood::detection_metrics;

/// pytorch-ood runs in float64 too; the scores differ by the order of the sums, by the
/// Mahalanobis ridge pytorch-ood adds (below 1e-7 relative, checked by the script) and by
/// its eigensolver's rounding (ViM's subspace).
const REFERENCE_RELATIVE_TOLERANCE: f64 = 1e-6;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ood_features")
}

/// A `.npy` matrix of the fixtures as its values and width.
fn matrix(name: &str) -> (Vec<f32>, usize) {
    let table = read_logits(&fixtures().join(format!("{name}.npy"))).unwrap();
    (table.values, table.num_classes)
}

/// The detectors' scores of the in-distribution and OOD fixtures, in pytorch-ood's settings.
fn calibra_scores() -> Vec<(&'static str, Vec<f64>, Vec<f64>)> {
    let (fit, width) = matrix("fit-features");
    let labels = read_labels(&fixtures().join("fit-labels.npy")).unwrap();
    let (scored, _) = matrix("id-features");
    let (ood, _) = matrix("ood-features");
    let (weight, _) = matrix("last-weight");
    let (bias, _) = matrix("last-bias");
    let fit = Features::new(&fit, width).unwrap();
    let sets = [
        Features::new(&scored, width).unwrap(),
        Features::new(&ood, width).unwrap(),
    ];
    let layer = LastLayer::new(&weight, &bias, width).unwrap();
    let mahalanobis = Mahalanobis::fit(&fit, &labels, 10).unwrap();
    let knn = Knn::fit(&fit, 5).unwrap();
    let react = React::fit(&fit, REACT_PERCENTILE).unwrap();
    let vim = Vim::fit(&fit, &layer, vim_principal_dimension(width)).unwrap();
    type Score<'s> = Box<dyn Fn(&Features) -> Vec<f64> + 's>;
    let detectors: Vec<(&str, Score)> = vec![
        ("mahalanobis", Box::new(|f| mahalanobis.scores(f).unwrap())),
        ("knn", Box::new(|f| knn.scores(f).unwrap())),
        ("react", Box::new(|f| react.scores(f, &layer).unwrap())),
        (
            "ash",
            Box::new(|f| ash_scores(f, &layer, ASH_PERCENTILE).unwrap()),
        ),
        ("vim", Box::new(|f| vim.scores(f).unwrap())),
        (
            "gradnorm",
            Box::new(|f| gradnorm_scores(f, &layer).unwrap()),
        ),
    ];
    detectors
        .into_iter()
        .map(|(name, score)| (name, score(&sets[0]), score(&sets[1])))
        .collect()
}

fn expected() -> Value {
    let text = std::fs::read_to_string(fixtures().join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn numbers(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect()
}

#[test]
fn every_detector_matches_pytorch_ood_row_by_row_and_in_its_metrics() {
    let expected = expected();
    for (name, id_scores, ood_scores) in calibra_scores() {
        let reference = &expected["detectors"][name];
        for (set, ours, theirs) in [
            ("id", &id_scores, numbers(&reference["id"])),
            ("ood", &ood_scores, numbers(&reference["ood"])),
        ] {
            assert_eq!(ours.len(), theirs.len());
            for (row, (a, b)) in ours.iter().zip(&theirs).enumerate() {
                let relative = (a - b).abs() / b.abs().max(f64::MIN_POSITIVE);
                assert!(
                    relative <= REFERENCE_RELATIVE_TOLERANCE,
                    "{name} {set} row {row}: {a} vs {b}"
                );
            }
        }
        let metrics = detection_metrics(&id_scores, &ood_scores).unwrap();
        let reference_metrics =
            detection_metrics(&numbers(&reference["id"]), &numbers(&reference["ood"])).unwrap();
        assert_eq!(
            metrics.fpr95,
            reference["fpr95"].as_f64().unwrap(),
            "{name}"
        );
        assert_eq!(metrics.fpr95, reference_metrics.fpr95, "{name}");
        assert_eq!(metrics.auroc, reference_metrics.auroc, "{name}");
        // scikit-learn sums trapezoids; calibra counts pairs exactly.
        assert!(
            (metrics.auroc - reference["auroc"].as_f64().unwrap()).abs() <= 1e-12,
            "{name}"
        );
    }
}

#[test]
fn the_react_threshold_is_numpys_percentile() {
    let (fit, width) = matrix("fit-features");
    let react = React::fit(&Features::new(&fit, width).unwrap(), REACT_PERCENTILE).unwrap();
    let reference = expected()["react_threshold"].as_f64().unwrap();
    assert!((react.threshold - reference).abs() <= 1e-12 * reference);
}

/// Samples of a planted Gaussian (one class, mean `m`, covariance diag(σ²) rotated): the fitted
/// distance of a point is its planted Mahalanobis distance within Monte Carlo error (20,000
/// samples in 3 dimensions: the covariance's relative error is about 1%; 5% allowed).
#[test]
fn recovers_the_mahalanobis_distance_of_a_planted_gaussian() {
    let mean = [1.0, -2.0, 0.5];
    let deviations = [2.0, 0.5, 1.0];
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let normal = Normal::new(0.0, 1.0).unwrap();
    let n = 20_000;
    let values: Vec<f32> = (0..n)
        .flat_map(|_| {
            let e: Vec<f64> = (0..3).map(|_| normal.sample(&mut rng)).collect();
            // x = m + (σ₀e₀ + σ₁e₁, σ₀e₀ − σ₁e₁)/√2 rotated in the first plane, σ₂e₂ in the third.
            let (a, b) = (deviations[0] * e[0], deviations[1] * e[1]);
            [
                mean[0] + (a + b) / 2f64.sqrt(),
                mean[1] + (a - b) / 2f64.sqrt(),
                mean[2] + deviations[2] * e[2],
            ]
            .map(|v| v as f32)
        })
        .collect();
    let features = Features::new(&values, 3).unwrap();
    let fitted = Mahalanobis::fit(&features, &vec![0; n], 1).unwrap();
    // The point m + (σ₀, σ₀)/√2 + (0, 0, 2σ₂): whitened coordinates (1, 0, 2), distance 5.
    let point = [
        mean[0] + deviations[0] / 2f64.sqrt(),
        mean[1] + deviations[0] / 2f64.sqrt(),
        mean[2] + 2.0 * deviations[2],
    ]
    .map(|v| v as f32);
    let score = fitted.scores(&Features::new(&point, 3).unwrap()).unwrap()[0];
    assert!((score + 5.0).abs() <= 0.25, "{score}");
}

/// A unit that is zero on every fitting row (a dead ReLU) leaves the covariance singular: the
/// pseudo-inverse ignores it, so the scores equal those of the features without it.
#[test]
fn a_dead_unit_is_ignored_by_mahalanobis() {
    let (fit, width) = matrix("fit-features");
    let labels = read_labels(&fixtures().join("fit-labels.npy")).unwrap();
    let with_dead: Vec<f32> = fit
        .chunks_exact(width)
        .flat_map(|row| row.iter().copied().chain([0.0]))
        .collect();
    let (scored, _) = matrix("ood-features");
    let scored_with_dead: Vec<f32> = scored
        .chunks_exact(width)
        .flat_map(|row| row.iter().copied().chain([0.0]))
        .collect();
    let plain = Mahalanobis::fit(&Features::new(&fit, width).unwrap(), &labels, 10)
        .unwrap()
        .scores(&Features::new(&scored, width).unwrap())
        .unwrap();
    let dead = Mahalanobis::fit(&Features::new(&with_dead, width + 1).unwrap(), &labels, 10)
        .unwrap()
        .scores(&Features::new(&scored_with_dead, width + 1).unwrap())
        .unwrap();
    for (a, b) in plain.iter().zip(&dead) {
        assert!((a - b).abs() <= 1e-9 * a.abs(), "{a} vs {b}");
    }
}

/// ViM's origin `u = −W⁺b` is a point whose logits are all zero.
#[test]
fn vims_origin_has_zero_logits() {
    let (weight, width) = matrix("last-weight");
    let (bias, _) = matrix("last-bias");
    let layer = LastLayer::new(&weight, &bias, width).unwrap();
    let origin = last_layer_origin(&layer);
    let mut logits = vec![1.0; layer.classes()];
    layer.logits_into(&origin, &mut logits);
    assert!(logits.iter().all(|z| z.abs() <= 1e-12), "{logits:?}");
}

/// With a zero weight the softmax is uniform and the gradient of the uniform cross-entropy is
/// zero (to rounding); with features of zero, exactly.
#[test]
fn gradnorm_is_zero_where_the_gradient_is() {
    let layer = LastLayer::new(&[0.0; 6], &[0.5, 0.5], 3).unwrap();
    let features = Features::new(&[1.0, 2.0, 3.0], 3).unwrap();
    // exp(z − log Σ exp z) is 1/K to rounding.
    assert!(gradnorm_scores(&features, &layer).unwrap()[0].abs() <= 1e-12);
    let layer = LastLayer::new(&[1.0, 0.0, 0.0, 0.0, 1.0, 0.0], &[0.0, 0.0], 3).unwrap();
    let zeros = Features::new(&[0.0; 3], 3).unwrap();
    assert_eq!(gradnorm_scores(&zeros, &layer).unwrap(), [0.0]);
}

#[test]
fn knn_keeps_the_papers_share_of_the_pool() {
    assert_eq!(knn_neighbours(50_000), 50);
    assert_eq!(knn_neighbours(5_000), 5);
    assert_eq!(knn_neighbours(300), 1);
    assert_eq!(vim_principal_dimension(128), 64);
    assert_eq!(vim_principal_dimension(2048), 1000);
}

#[test]
fn bad_input_is_refused_with_its_reason() {
    assert_eq!(
        Features::new(&[1.0; 5], 2).unwrap_err(),
        FeatureError::Ragged { len: 5, width: 2 }
    );
    assert_eq!(Features::new(&[], 2).unwrap_err(), FeatureError::Empty);
    assert_eq!(
        Features::new(&[1.0, f32::NAN], 2).unwrap_err(),
        FeatureError::NonFinite { index: 1 }
    );
    let features = Features::new(&[1.0, 0.0, 0.0, 1.0], 2).unwrap();
    assert_eq!(
        Mahalanobis::fit(&features, &[0], 2).unwrap_err(),
        FeatureError::LabelCount { labels: 1, rows: 2 }
    );
    assert_eq!(
        Mahalanobis::fit(&features, &[0, 2], 2).unwrap_err(),
        FeatureError::LabelOutOfRange {
            label: 2,
            row: 1,
            classes: 2
        }
    );
    assert_eq!(
        Mahalanobis::fit(&features, &[0, 0], 2).unwrap_err(),
        FeatureError::MissingClass(1)
    );
    assert_eq!(
        Knn::fit(&features, 3).unwrap_err(),
        FeatureError::InvalidNeighbours { k: 3, pool: 2 }
    );
    assert_eq!(
        React::fit(&features, 100.0).unwrap_err(),
        FeatureError::InvalidPercentile(100.0)
    );
    let layer = LastLayer::new(&[1.0, 0.0, 0.0, 1.0], &[0.0, 0.0], 2).unwrap();
    // 99% of 2 activations rounds to 2: none would be kept.
    assert_eq!(
        ash_scores(&features, &layer, 99.0).unwrap_err(),
        FeatureError::InvalidPercentile(99.0)
    );
    assert_eq!(
        Vim::fit(&features, &layer, 2).unwrap_err(),
        FeatureError::InvalidDimension {
            dimension: 2,
            width: 2
        }
    );
    assert_eq!(
        LastLayer::new(&[1.0; 5], &[0.0, 0.0], 2).unwrap_err(),
        FeatureError::LastLayerShape {
            weight: 5,
            bias: 2,
            width: 2
        }
    );
    let wide = Features::new(&[1.0; 3], 3).unwrap();
    assert_eq!(
        gradnorm_scores(&wide, &layer).unwrap_err(),
        FeatureError::WidthMismatch {
            expected: 2,
            found: 3
        }
    );
    assert_eq!(
        FeatureError::InvalidDimension {
            dimension: 2,
            width: 2
        }
        .to_string(),
        "the principal subspace needs between 1 and 1 dimensions, got 2"
    );
}
