//! The feature store: batches in any order, bad ones refused, and the inputs it gathers split
//! by the flags it is given (the detectors themselves are checked against pytorch-ood in
//! `ood_features_tests.rs`).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use super::*;

const CLASSES: usize = 2;

/// `rows` rows of 128 features, class `row % 2` shifted by 2 on its own half of the units
/// (ReLU-like: negative draws clipped at 0).
fn features(rows: usize, seed: u64) -> Vec<f32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let normal = Normal::new(0.0_f32, 1.0).unwrap();
    (0..rows * FEATURE_WIDTH)
        .map(|i| {
            let (row, unit) = (i / FEATURE_WIDTH, i % FEATURE_WIDTH);
            let shift = if unit % CLASSES == row % CLASSES {
                2.0
            } else {
                0.0
            };
            (normal.sample(&mut rng) + shift).max(0.0)
        })
        .collect()
}

/// A last layer reading class `k` off the units `u ≡ k (mod 2)`: weight then bias.
fn last_layer() -> Vec<f32> {
    let mut values: Vec<f32> = (0..CLASSES * FEATURE_WIDTH)
        .map(|i| {
            if i % FEATURE_WIDTH % CLASSES == i / FEATURE_WIDTH {
                0.1
            } else {
                0.0
            }
        })
        .collect();
    values.extend([0.5, -0.5]);
    values
}

#[test]
fn batches_arrive_in_any_order_and_bad_ones_are_refused() {
    let mut store = FeatureStore::new(2, 4, [3, 2, 2]);
    let test = features(4, 1);
    let half = 2 * FEATURE_WIDTH;
    assert_eq!(
        store
            .add_features(1, ImageSet::Test, 2, &test[half..])
            .unwrap(),
        2
    );
    assert_eq!(store.complete(1, ImageSet::Test), None);
    assert_eq!(
        store
            .add_features(1, ImageSet::Test, 0, &test[..half])
            .unwrap(),
        4
    );
    assert_eq!(store.complete(1, ImageSet::Test), Some(&test[..]));
    assert_eq!(store.complete(0, ImageSet::Test), None);
    assert!(matches!(
        store.add_features(1, ImageSet::Mnist, 2, &test[..half]),
        Err(LabError::BatchOutOfRange { .. })
    ));
    assert!(matches!(
        store.add_features(2, ImageSet::Mnist, 0, &test[..FEATURE_WIDTH]),
        Err(LabError::UnknownModel { index: 2, count: 2 })
    ));
    let mut bad = test[..half].to_vec();
    bad[FEATURE_WIDTH + 3] = f32::NAN;
    assert_eq!(
        store.add_features(0, ImageSet::Gaussian, 0, &bad),
        Err(LabError::NonFiniteFeature { row: 1 })
    );
    assert!(matches!(
        store.set_last_layer(0, &last_layer()[1..]),
        Err(LabError::Features(_))
    ));
}

#[test]
fn inputs_fit_on_the_calibration_rows_and_score_the_others() {
    let (test_rows, set_rows) = (40, [6, 5, 4]);
    let mut store = FeatureStore::new(1, test_rows, set_rows);
    let test = features(test_rows, 2);
    store.add_features(0, ImageSet::Test, 0, &test).unwrap();
    let is_calibration: Vec<bool> = (0..test_rows).map(|row| row % 4 < 2).collect();
    let labels: Vec<u32> = (0..test_rows as u32).map(|row| row % 2).collect();
    // Nothing until every set and the last layer are in.
    assert_eq!(store.inputs(0, &is_calibration, &labels), None);
    let sets: Vec<Vec<f32>> = set_rows
        .iter()
        .zip(3..)
        .map(|(&rows, seed)| features(rows, seed))
        .collect();
    for (set, values) in OodSet::ALL.into_iter().zip(&sets) {
        store.add_features(0, set.into(), 0, values).unwrap();
    }
    assert_eq!(store.inputs(0, &is_calibration, &labels), None);
    assert!(!store.ready(0));
    store.set_last_layer(0, &last_layer()).unwrap();
    assert!(store.ready(0));

    let inputs = store.inputs(0, &is_calibration, &labels).unwrap();
    let rows_of = |calibration: bool| -> Vec<f32> {
        test.chunks_exact(FEATURE_WIDTH)
            .zip(&is_calibration)
            .filter(|(_, &flag)| flag == calibration)
            .flat_map(|(row, _)| row.iter().copied())
            .collect()
    };
    assert_eq!(inputs.calibration, rows_of(true));
    assert_eq!(inputs.evaluation, rows_of(false));
    assert_eq!(inputs.calibration_labels, [0, 1].repeat(test_rows / 4));
    assert_eq!(inputs.out_of_distribution.to_vec(), sets);

    let scores = inputs.scores().unwrap();
    assert_eq!(scores.knn_neighbours, 1);
    assert_eq!(scores.evaluation.knn.len(), test_rows / 2);
    for (scored, &rows) in scores.out_of_distribution.iter().zip(&set_rows) {
        assert_eq!(scored.mahalanobis.len(), rows);
        assert_eq!(scored.gradnorm.len(), rows);
    }

    // As a worker sends them, and back.
    let flat = scores.flat();
    assert_eq!(flat.len(), 6 * (test_rows / 2 + 15));
    let back = NetworkFeatureScores::from_flat(&flat, 1, test_rows / 2, set_rows).unwrap();
    assert_eq!(back, scores);
    assert_eq!(
        back.of(ScoreKind::Vim, OodSet::Gaussian),
        (
            &scores.evaluation.vim[..],
            &scores.out_of_distribution[1].vim[..]
        )
    );
    assert!(NetworkFeatureScores::from_flat(&flat[1..], 1, test_rows / 2, set_rows).is_err());

    let request = FeatureRequest { model: 0, split: 7 };
    assert_eq!(store.scores(&request), None);
    store.add_scores(request, scores.clone());
    assert_eq!(store.scores(&request), Some(&scores));
}
