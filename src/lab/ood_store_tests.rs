//! The OOD store against the view built directly from the same logits.

use super::*;
use crate::lab::ood_view::ScoreKind;

const K: usize = 3;

/// `rows` rows whose logits grow with the row: `[i, 0, -i] / 10`.
fn logits(rows: usize, scale: f32) -> Vec<f32> {
    (0..rows)
        .flat_map(|i| {
            let z = i as f32 * scale;
            [z, 0.0, -z]
        })
        .collect()
}

#[test]
fn batches_arrive_in_any_order_and_bad_ones_are_refused() {
    let mut store = OodStore::new(K, 2, 4, [3, 2, 2]);
    let set = logits(3, 0.1);
    assert_eq!(store.add_logits(1, OodSet::Mnist, 2, &set[6..]).unwrap(), 1);
    assert_eq!(store.logits_progress(1, OodSet::Mnist), (1, 3));
    assert_eq!(store.complete_logits(1, OodSet::Mnist).unwrap(), None);
    assert_eq!(store.add_logits(1, OodSet::Mnist, 0, &set[..6]).unwrap(), 3);
    assert_eq!(
        store.complete_logits(1, OodSet::Mnist).unwrap(),
        Some(&set[..])
    );
    assert!(matches!(
        store.add_logits(1, OodSet::Mnist, 2, &set[..6]),
        Err(LabError::BatchOutOfRange { .. })
    ));
    assert!(matches!(
        store.add_logits(2, OodSet::Mnist, 0, &set[..3]),
        Err(LabError::UnknownModel { index: 2, count: 2 })
    ));
    assert!(store
        .add_logits(0, OodSet::Gaussian, 0, &[f32::NAN, 0.0, 0.0])
        .is_err());
    assert_eq!(
        store.add_odin(0, ImageSet::Test, 1, &[0.5, f64::INFINITY]),
        Err(LabError::NonFiniteScore { row: 2 })
    );
    assert_eq!(store.logits_progress(0, OodSet::Gaussian), (0, 2));
}

#[test]
fn the_view_is_the_one_built_from_the_same_logits_and_odin_joins_when_complete() {
    let mut store = OodStore::new(K, 1, 4, [3, 2, 2]);
    let test = logits(4, 1.0);
    let mnist = logits(3, 0.3);
    assert_eq!(
        store.view(0, OodSet::Mnist, 1.0, &test, 0).unwrap_err(),
        LabError::NotReady
    );
    store.add_logits(0, OodSet::Mnist, 0, &mnist).unwrap();
    let direct = OodView::new(
        &Logits::new(&test, K).unwrap(),
        &Logits::new(&mnist, K).unwrap(),
        2.0,
        None,
    )
    .unwrap();
    let view = store.view(0, OodSet::Mnist, 2.0, &test, 0).unwrap();
    assert_eq!(view.summaries(), direct.summaries());
    assert!(view.summary(ScoreKind::Odin).is_err());

    // ODIN on the OOD set alone is not enough: the test images need theirs too.
    store
        .add_odin(0, ImageSet::Mnist, 0, &[0.1, 0.2, 0.3])
        .unwrap();
    assert!(!store.has_odin(0, OodSet::Mnist));
    store
        .add_odin(0, ImageSet::Test, 0, &[0.9, 0.8, 0.7, 0.6])
        .unwrap();
    assert!(store.has_odin(0, OodSet::Mnist));
    assert!(!store.has_odin(0, OodSet::Gaussian));
    let odin = store.view(0, OodSet::Mnist, 2.0, &test, 0).unwrap();
    let metrics = &odin.summary(ScoreKind::Odin).unwrap().metrics;
    // Every ID score is above every OOD score: a perfect detector.
    assert_eq!((metrics.fpr95, metrics.auroc), (0.0, 1.0));
}
