//! The shift lab's weighted conformal sets: at severity 0 (the same images on both sides) every
//! weight is 1 and the sets are the kept ones; a copy whose logits move gets weights that
//! differ, fitted once per network, split, corruption and severity whatever α; a copy not yet
//! classified is not ready.

use super::*;
use crate::calibration::softmax;
use crate::conformal::ScoreKind;
use crate::lab::Lab;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::lab::test_support::conformal_settings;
use crate::test_support::draw_index;

const K: usize = 10;
const SPLIT: u64 = 5;
/// Rows: 1,001 calibration and evaluation rows between them, so that `(1 − α)(n + 1)` is not
/// an integer at α = 0.1 for either half's size.
const ROWS: usize = 1_001;

/// Calibrated logits `z ~ U(−2, 2)ᴷ` with labels drawn from softmax(z), in a lab, and a store
/// holding the copy at severity 1: the same z shrunk by half toward 0 (a less confident
/// network), whose logits a classifier tells apart from the clean ones.
fn planted() -> (Lab, ShiftStore) {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let (mut logits, mut labels) = (Vec::with_capacity(ROWS * K), Vec::with_capacity(ROWS));
    for _ in 0..ROWS {
        let z: Vec<f32> = (0..K).map(|_| rng.random_range(-2.0..2.0)).collect();
        let p = softmax(&crate::calibration::Logits::new(&z, K).unwrap(), 1.0).unwrap();
        labels.push(draw_index(&p, &mut rng) as u32);
        logits.extend(z);
    }
    let mut lab = Lab::new(labels, K, 1).unwrap();
    lab.set_split(SPLIT);
    lab.add_logits(0, 0, &logits).unwrap();
    let mut store = ShiftStore::new(K, 1, ROWS);
    let copy: Vec<f32> = logits.iter().map(|z| 0.5 * z).collect();
    let set = ShiftedSet::new(Corruption::Blur, 1).unwrap();
    store.add_logits(0, set, 0, &copy).unwrap();
    (lab, store)
}

#[test]
fn at_severity_zero_every_weight_is_one_and_the_sets_are_the_kept_ones() {
    let (mut lab, mut store) = planted();
    let settings = conformal_settings(0.1, ScoreKind::Aps);
    let view = lab
        .weighted_view(&mut store, Corruption::Blur, 0, &settings)
        .unwrap();
    let shift = lab
        .shift_view(
            &mut store,
            Corruption::Blur,
            0,
            &settings,
            15,
            crate::calibration::Binning::Width,
        )
        .unwrap();
    let kept = &shift.clean().unwrap().kept;
    assert!((view.coverage - kept.coverage).abs() < 1e-12);
    assert!((view.average_set_size - kept.average_set_size).abs() < 1e-12);
    assert!((view.effective_sample_size - view.n_calibration as f64).abs() < 1e-6);
    assert_eq!(view.infinite_share, 0.0);
    assert_eq!(view.n_calibration + view.n_evaluation, ROWS);
    assert!(view.converged);
}

#[test]
fn a_moved_copy_is_weighted_once_whatever_alpha() {
    let (mut lab, mut store) = planted();
    let first = lab
        .weighted_view(
            &mut store,
            Corruption::Blur,
            1,
            &conformal_settings(0.1, ScoreKind::Aps),
        )
        .unwrap();
    assert!(first.effective_sample_size < first.n_calibration as f64);
    assert!(first.effective_sample_size >= 1.0);
    assert!((0.0..=1.0).contains(&first.coverage));
    assert!(first.average_set_size >= 1.0 && first.average_set_size <= K as f64);
    let key = DomainKey {
        model: 0,
        split: SPLIT,
        corruption: Corruption::Blur,
        severity: 1,
    };
    let weights = store.domain_weights(&key).unwrap();
    // Another α: new sets from the same weights, not a new fit.
    let second = lab
        .weighted_view(
            &mut store,
            Corruption::Blur,
            1,
            &conformal_settings(0.2, ScoreKind::Aps),
        )
        .unwrap();
    assert!(Rc::ptr_eq(&weights, &store.domain_weights(&key).unwrap()));
    assert!(second.average_set_size <= first.average_set_size);
    assert_eq!(second.effective_sample_size, first.effective_sample_size);
    // The same inputs again: the kept view.
    assert_eq!(
        lab.weighted_view(
            &mut store,
            Corruption::Blur,
            1,
            &conformal_settings(0.2, ScoreKind::Aps)
        )
        .unwrap(),
        second
    );
}

#[test]
fn a_copy_not_yet_classified_is_not_ready() {
    let (mut lab, mut store) = planted();
    assert!(matches!(
        lab.weighted_view(
            &mut store,
            Corruption::Blur,
            2,
            &conformal_settings(0.1, ScoreKind::Aps)
        ),
        Err(LabError::NotReady)
    ));
}
