//! The shift lab against the calibration and conformal functions on the split's halves, and
//! the corrupted copies' names and store.

use super::*;
use crate::calibration::{evaluate, fit_temperature, softmax};
use crate::conformal::{split_conformal, ScoreKind, ThresholdRule};
use crate::data::seeded_split;
use crate::lab::test_support::conformal_settings;
use crate::lab::{ConformalSettings, Lab, ShiftStore, ShiftedSet, UnknownShiftedSet};
use crate::shift::Corruption;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const K: usize = 4;
const ROWS: usize = 1_200;
const SPLIT: u64 = 5;

/// Logits whose largest entry is the label's in most rows, scaled by `sharpness`; `noise`
/// rows in a hundred favour a random class instead.
fn logits(labels: &[u32], sharpness: f32, noise: u32, seed: u64) -> Vec<f32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(labels.len() * K);
    for &label in labels {
        let favoured = if rng.random_range(0..100) < noise {
            rng.random_range(0..K as u32)
        } else {
            label
        };
        for k in 0..K as u32 {
            let base: f32 = rng.random_range(-1.0..1.0);
            out.push(sharpness * (base + if k == favoured { 2.0 } else { 0.0 }));
        }
    }
    out
}

/// The rows of `values` (`[ROWS, K]`) at `rows`, and their labels.
fn take(values: &[f32], labels: &[u32], rows: &[usize]) -> (Vec<f32>, Vec<u32>) {
    let logits = rows
        .iter()
        .flat_map(|&r| values[r * K..(r + 1) * K].iter().copied())
        .collect();
    (logits, rows.iter().map(|&r| labels[r]).collect())
}

#[test]
fn kept_and_refitted_equal_the_functions_on_the_halves() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let labels: Vec<u32> = (0..ROWS).map(|_| rng.random_range(0..K as u32)).collect();
    let clean = logits(&labels, 3.0, 10, 2);
    // The corrupted copy: a network still sure of itself, wrong far more often.
    let shifted = logits(&labels, 3.0, 45, 3);
    let mut lab = Lab::new(labels.clone(), K, 1).unwrap();
    lab.set_split(SPLIT);
    lab.add_logits(0, 0, &clean).unwrap();
    let mut store = ShiftStore::new(K, 1, ROWS);
    let set = ShiftedSet::new(Corruption::Blur, 2).unwrap();
    store.add_logits(0, set, 0, &shifted[..600 * K]).unwrap();
    let view = lab
        .shift_view(
            &mut store,
            Corruption::Blur,
            2,
            &conformal_settings(0.1, ScoreKind::Aps),
            15,
            Binning::Width,
        )
        .unwrap();
    // Half a copy is not evaluated: only severity 0 is in.
    assert_eq!(view.points.len(), 1);
    assert!(view.current().is_none());
    store.add_logits(0, set, 600, &shifted[600 * K..]).unwrap();
    let view = lab
        .shift_view(
            &mut store,
            Corruption::Blur,
            2,
            &conformal_settings(0.1, ScoreKind::Aps),
            15,
            Binning::Width,
        )
        .unwrap();
    assert_eq!(
        view.points.iter().map(|p| p.severity).collect::<Vec<_>>(),
        [0, 2]
    );

    // The page's split (rows in increasing order), computed here from the data module.
    let (calibration_rows, evaluation_rows) = seeded_split(ROWS, 0.5, SPLIT);
    let uniforms = conformal::uniforms(ROWS, SPLIT);
    let pick = |rows: &[usize]| rows.iter().map(|&r| uniforms[r]).collect::<Vec<f64>>();
    let (clean_calibration, calibration_labels) = take(&clean, &labels, &calibration_rows);
    let (shifted_calibration, _) = take(&shifted, &labels, &calibration_rows);
    let (shifted_evaluation, evaluation_labels) = take(&shifted, &labels, &evaluation_rows);
    let expected = |calibration: &[f32]| {
        let cal = Logits::new(calibration, K).unwrap();
        let eval = Logits::new(&shifted_evaluation, K).unwrap();
        let t = fit_temperature(&cal, &calibration_labels)
            .unwrap()
            .temperature;
        let report = evaluate(&eval, &evaluation_labels, t, 15, Binning::Width).unwrap();
        let sets = split_conformal(
            &softmax(&cal, t).unwrap(),
            &calibration_labels,
            &softmax(&eval, t).unwrap(),
            &evaluation_labels,
            K,
            &conformal_settings(0.1, ScoreKind::Aps).score_of(ScoreKind::Aps),
            0.1,
            ThresholdRule::Marginal,
            &pick(&calibration_rows),
            &pick(&evaluation_rows),
        )
        .unwrap();
        (t, report, sets.metrics)
    };
    let point = view.current().unwrap();
    for (metrics, calibration) in [
        (&point.kept, &clean_calibration),
        (&point.refit, &shifted_calibration),
    ] {
        let (t, report, sets) = expected(calibration);
        assert_eq!(metrics.temperature, t);
        assert_eq!(
            [metrics.accuracy, metrics.ece, metrics.nll, metrics.brier],
            [report.accuracy, report.ece, report.nll, report.brier]
        );
        assert_eq!(metrics.bins, report.bins);
        assert_eq!(
            [metrics.coverage, metrics.average_set_size],
            [sets.coverage, sets.average_set_size]
        );
    }
    // Kept, the sets still hold about 1 − α of the clean images' labels but far fewer of the
    // corrupted ones'; refitted, they are back near 1 − α.
    assert!(view.clean().unwrap().kept.coverage > 0.87);
    assert!(point.kept.coverage < 0.8, "{}", point.kept.coverage);
    assert!(
        (point.refit.coverage - 0.9).abs() < 0.04,
        "{}",
        point.refit.coverage
    );
    assert_eq!(view.n_calibration + view.n_evaluation, ROWS);
    assert_eq!(
        view.guarantee_upper,
        0.9 + 1.0 / (view.n_calibration as f64 + 1.0)
    );
    assert_eq!(view.thumbnails, evaluation_rows[..SHIFT_THUMBNAILS]);
    // The refitted T is kept for the next frame, which measures the same numbers with it.
    assert_eq!(store.fitted(0, set, SPLIT), Some(point.refit.temperature));
    assert_eq!(store.fitted(0, set, SPLIT + 1), None);
    let again = lab
        .shift_view(
            &mut store,
            Corruption::Blur,
            2,
            &conformal_settings(0.1, ScoreKind::Aps),
            15,
            Binning::Width,
        )
        .unwrap();
    assert_eq!(again, view);
}

/// The view a store keeps is shown again only while its inputs stay: through a reader's moves
/// (the severity shown, α, the score, the bins, the binning, Mondrian thresholds, a copy coming
/// in) every view equals the one a store that kept nothing computes.
#[test]
fn a_kept_view_is_always_the_one_a_fresh_store_computes() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let labels: Vec<u32> = (0..ROWS).map(|_| rng.random_range(0..K as u32)).collect();
    let clean = logits(&labels, 3.0, 10, 2);
    let copies: Vec<(ShiftedSet, Vec<f32>)> = (1..=3)
        .map(|severity| {
            let set = ShiftedSet::new(Corruption::Blur, severity).unwrap();
            (
                set,
                logits(
                    &labels,
                    3.0,
                    10 + 15 * u32::from(severity),
                    10 + u64::from(severity),
                ),
            )
        })
        .collect();
    let lab_and_store = |copies_in: usize| {
        let mut lab = Lab::new(labels.clone(), K, 1).unwrap();
        lab.set_split(SPLIT);
        lab.add_logits(0, 0, &clean).unwrap();
        let mut store = ShiftStore::new(K, 1, ROWS);
        for (set, values) in &copies[..copies_in] {
            store.add_logits(0, *set, 0, values).unwrap();
        }
        (lab, store)
    };
    let (mut lab, mut store) = lab_and_store(2);
    let aps = conformal_settings(0.1, ScoreKind::Aps);
    let aps_20 = conformal_settings(0.2, ScoreKind::Aps);
    let lac_20 = conformal_settings(0.2, ScoreKind::Lac);
    let mondrian = ConformalSettings {
        class_conditional: true,
        ..aps
    };
    // (settings, severity shown, bins, binning, copies in)
    let moves = [
        (aps, 2, 15, Binning::Width, 2),
        (aps, 2, 15, Binning::Width, 2),
        (aps, 1, 15, Binning::Width, 2),
        (aps_20, 1, 15, Binning::Width, 2),
        (lac_20, 1, 15, Binning::Width, 2),
        (lac_20, 1, 10, Binning::Width, 2),
        (lac_20, 1, 10, Binning::Mass, 2),
        (mondrian, 1, 10, Binning::Mass, 2),
        (aps, 3, 15, Binning::Width, 3),
    ];
    for (settings, severity, bins, binning, copies_in) in moves {
        if copies_in == 3 {
            let (set, values) = &copies[2];
            store.add_logits(0, *set, 0, values).unwrap();
        }
        let shown = |lab: &mut Lab, store: &mut ShiftStore| {
            lab.shift_view(store, Corruption::Blur, severity, &settings, bins, binning)
                .unwrap()
        };
        let view = shown(&mut lab, &mut store);
        let (mut fresh_lab, mut fresh_store) = lab_and_store(copies_in);
        let fresh = shown(&mut fresh_lab, &mut fresh_store);
        assert_eq!(
            view, fresh,
            "{settings:?}, severity {severity}, {bins} bins, {binning:?}"
        );
        assert_eq!(view.points.len(), copies_in + 1);
    }
}

#[test]
fn waits_for_the_clean_logits() {
    let labels = vec![0, 1, 2, 3];
    let mut lab = Lab::new(labels.clone(), K, 1).unwrap();
    lab.add_logits(0, 0, &logits(&labels, 1.0, 0, 1)[..2 * K])
        .unwrap();
    let mut store = ShiftStore::new(K, 1, 4);
    assert_eq!(
        lab.shift_view(
            &mut store,
            Corruption::Noise,
            1,
            &conformal_settings(0.1, ScoreKind::Aps),
            15,
            Binning::Width
        ),
        Err(LabError::NotReady)
    );
}

#[test]
fn copies_are_named_and_parsed_back_and_bad_names_refused() {
    for corruption in Corruption::ALL {
        for severity in 1..=corruption.max_severity() {
            let set = ShiftedSet::new(corruption, severity).unwrap();
            assert_eq!(ShiftedSet::parse(&set.name()), Ok(set));
        }
    }
    assert_eq!(
        ShiftedSet::new(Corruption::Rotation, 3).unwrap().name(),
        "shift-rotation-3"
    );
    for bad in [
        "shift-rotation-0",
        "shift-rotation-6",
        "shift-inversion-2",
        "shift-tilt-1",
        "rotation-3",
        "shift-rotation-x",
        "test",
    ] {
        assert_eq!(
            ShiftedSet::parse(bad),
            Err(UnknownShiftedSet(bad.to_string())),
            "{bad}"
        );
    }
}

#[test]
fn the_store_counts_rows_and_refuses_bad_batches() {
    let set = ShiftedSet::new(Corruption::Contrast, 1).unwrap();
    let mut store = ShiftStore::new(K, 2, 3);
    assert_eq!(store.add_logits(1, set, 2, &[0.0; K]), Ok(1));
    assert_eq!(store.arrived(1, set), 1);
    assert_eq!(store.arrived(0, set), 0);
    assert!(store.complete_logits(1, set).is_none());
    assert_eq!(
        store.add_logits(2, set, 0, &[0.0; K]),
        Err(LabError::UnknownModel { index: 2, count: 2 })
    );
    assert!(matches!(
        store.add_logits(1, set, 2, &[0.0; 2 * K]),
        Err(LabError::BatchOutOfRange { .. })
    ));
    assert!(store.add_logits(1, set, 0, &[f32::NAN; K]).is_err());
    assert_eq!(store.add_logits(1, set, 0, &[1.0; 2 * K]), Ok(3));
    assert_eq!(store.complete_logits(1, set).map(<[f32]>::len), Some(3 * K));
}
