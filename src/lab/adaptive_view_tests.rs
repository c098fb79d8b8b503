//! The ACI stream of the shift lab on a planted shift: calibrated synthetic logits (labels drawn
//! from softmax(z)) whose corrupted copies are the same z made overconfident, so that fixed
//! split conformal must lose coverage as the severity rises and ACI must win it back, at the
//! price of larger sets.

use std::rc::Rc;

use super::*;
use crate::calibration::softmax;
use crate::conformal::ScoreKind;
use crate::data::seeded_split;
use crate::lab::test_support::conformal_settings;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const K: usize = 10;
const SPLIT: u64 = 3;

/// `rows` calibrated logits `z` with labels drawn from softmax(z), and the copy the corruption
/// at `severity` gives: `z·(1 + severity)`, the same images seen by an overconfident network.
struct Planted {
    labels: Vec<u32>,
    logits: Vec<f32>,
}

impl Planted {
    fn new(rows: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut logits = Vec::with_capacity(rows * K);
        let mut labels = Vec::with_capacity(rows);
        for _ in 0..rows {
            let z: Vec<f32> = (0..K).map(|_| rng.random_range(-2.0..2.0)).collect();
            let p = softmax(&Logits::new(&z, K).unwrap(), 1.0).unwrap();
            let u: f64 = rng.random();
            let mut total = 0.0;
            let label = p
                .iter()
                .position(|&q| {
                    total += q;
                    u < total
                })
                .unwrap_or(K - 1);
            labels.push(label as u32);
            logits.extend(z);
        }
        Self { labels, logits }
    }

    fn copy(&self, severity: u8) -> Vec<f32> {
        let scale = 1.0 + f32::from(severity);
        self.logits.iter().map(|z| z * scale).collect()
    }

    /// A lab holding the clean logits, and a store holding the copies at `severities`.
    fn lab(&self, severities: &[u8]) -> (Lab, ShiftStore) {
        let rows = self.labels.len();
        let mut lab = Lab::new(self.labels.clone(), K, 1).unwrap();
        lab.set_split(SPLIT);
        lab.add_logits(0, 0, &self.logits).unwrap();
        let mut store = ShiftStore::new(K, 1, rows);
        for &severity in severities {
            let set = ShiftedSet::new(Corruption::Blur, severity).unwrap();
            store.add_logits(0, set, 0, &self.copy(severity)).unwrap();
        }
        (lab, store)
    }
}

#[test]
fn fixed_sets_lose_coverage_as_the_shift_rises_and_aci_wins_it_back_with_larger_sets() {
    let planted = Planted::new(6_000, 11);
    let (mut lab, mut store) = planted.lab(&[1, 2, 3, 4, 5]);
    let view = lab
        .adaptive_view(
            &mut store,
            Corruption::Blur,
            &conformal_settings(0.1, ScoreKind::Aps),
            0.05,
        )
        .unwrap();
    let images = view.rows.len();
    assert_eq!(images, 3_000, "the evaluation half");
    // The stream: the evaluation rows in test-set order, six blocks of 500 at severities 0–5.
    let (_, evaluation_rows) = seeded_split(6_000, 0.5, SPLIT);
    assert_eq!(view.rows, evaluation_rows);
    let blocks: Vec<(u8, usize, usize)> = view
        .blocks
        .iter()
        .map(|b| (b.severity, b.start, b.end))
        .collect();
    assert_eq!(
        blocks,
        (0..6)
            .map(|s| (s as u8, 500 * s, 500 * (s + 1)))
            .collect::<Vec<_>>()
    );
    assert_eq!(view.severity_at(2_999), Some(5));
    // Chance: the spread of 3,000 independent hits at 90% (0.55%), three times over.
    let chance = 3.0 * (0.1 * 0.9 / images as f64).sqrt();
    let clean = &view.blocks[0];
    let last = &view.blocks[5];
    // Calibrated and exchangeable on the clean block: both near 90% there (500 images).
    let block_chance = 3.0 * (0.1 * 0.9 / 500.0_f64).sqrt();
    assert!(
        (clean.fixed_coverage - 0.9).abs() <= block_chance,
        "{clean:?}"
    );
    // Overconfident copies: the fixed sets fall far below 1 − α, more so as the shift rises.
    assert!(last.fixed_coverage < 0.9 - 0.1, "{last:?}");
    assert!(view.run.fixed_coverage < 0.9 - chance, "{:?}", view.run);
    // ACI: long-run coverage within Gibbs & Candès's bound, and within chance of 1 − α.
    assert!((1.0 - view.run.coverage - 0.1).abs() <= view.run.miscoverage_bound);
    assert!(
        (view.run.coverage - 0.9).abs() <= chance,
        "{:?}",
        view.run.coverage
    );
    assert!(view.run.average_set_size > view.run.fixed_average_set_size);
    assert!(last.average_set_size > last.fixed_average_set_size);
    // The running coverages end at the long-run ones; the window holds the last 250 images.
    let end = images - 1;
    assert!((view.running_coverage[end] - view.run.coverage).abs() <= 1e-12);
    assert!((view.fixed_running_coverage[end] - view.run.fixed_coverage).abs() <= 1e-12);
    let window = view.run.steps[images - COVERAGE_WINDOW..]
        .iter()
        .filter(|s| s.covered)
        .count() as f64
        / COVERAGE_WINDOW as f64;
    assert!((view.window_coverage[end] - window).abs() <= 1e-12);
    // The sentence states what the numbers show.
    assert!(
        view.sentence
            .contains("standard deviations below 1 − α = 90%"),
        "{}",
        view.sentence
    );
    assert!(
        view.sentence
            .contains("back within chance of 90% without a refit"),
        "{}",
        view.sentence
    );
    assert!(
        view.sentence.contains("The price is larger sets"),
        "{}",
        view.sentence
    );
}

#[test]
fn the_stream_holds_the_severities_in_and_is_kept_until_they_or_the_settings_change() {
    let planted = Planted::new(1_200, 5);
    let (mut lab, mut store) = planted.lab(&[1, 3]);
    let lac = conformal_settings(0.1, ScoreKind::Lac);
    let view = lab
        .adaptive_view(&mut store, Corruption::Blur, &lac, 0.01)
        .unwrap();
    let severities: Vec<u8> = view.blocks.iter().map(|b| b.severity).collect();
    assert_eq!(severities, [0, 1, 3]);
    assert_eq!(view.blocks[2].end, view.rows.len());
    assert!(
        view.sentence.contains("(those classified so far: 0, 1, 3)"),
        "{}",
        view.sentence
    );
    // Kept: the same view again; another γ or another copy in gives another stream.
    assert_eq!(
        lab.adaptive_view(&mut store, Corruption::Blur, &lac, 0.01)
            .unwrap(),
        view
    );
    let other = lab
        .adaptive_view(&mut store, Corruption::Blur, &lac, 0.02)
        .unwrap();
    assert_eq!(other.gamma, 0.02);
    assert_eq!(other.run.fixed_coverage, view.run.fixed_coverage);
    let set = ShiftedSet::new(Corruption::Blur, 5).unwrap();
    store.add_logits(0, set, 0, &planted.copy(5)).unwrap();
    let more = lab
        .adaptive_view(&mut store, Corruption::Blur, &lac, 0.01)
        .unwrap();
    assert_eq!(more.blocks.len(), 4);
    // Clean only: the stream says the copies are still coming.
    let (mut lab, mut store) = planted.lab(&[]);
    let clean = lab
        .adaptive_view(&mut store, Corruption::Blur, &lac, 0.01)
        .unwrap();
    assert_eq!(clean.blocks.len(), 1);
    assert!(
        clean.sentence.contains("all clean so far"),
        "{}",
        clean.sentence
    );
    // A γ that is not positive is refused with the core's error.
    assert!(lab
        .adaptive_view(&mut store, Corruption::Blur, &lac, 0.0)
        .is_err());
}

/// Moving γ or α replays ACI on the kept scores: the stream is scored again only when what
/// its scores depend on changes (the score, its parameters, the severities in), and every view
/// equals the one a store that kept nothing computes.
#[test]
fn gamma_and_alpha_replay_the_kept_scores_and_every_view_is_a_fresh_stores() {
    let planted = Planted::new(2_000, 7);
    let (mut lab, mut store) = planted.lab(&[1, 2, 3]);
    let aps = conformal_settings(0.1, ScoreKind::Aps);
    let mut kept = Vec::new();
    let steps = [
        (aps, 0.005),
        (aps, 0.02),
        (conformal_settings(0.2, ScoreKind::Aps), 0.02),
        (conformal_settings(0.2, ScoreKind::Lac), 0.02),
        (
            ConformalSettings {
                randomized: !aps.randomized,
                ..aps
            },
            0.02,
        ),
        (aps, 0.005),
    ];
    for (settings, gamma) in steps {
        let view = lab
            .adaptive_view(&mut store, Corruption::Blur, &settings, gamma)
            .unwrap();
        let (mut fresh_lab, mut fresh_store) = planted.lab(&[1, 2, 3]);
        let fresh = fresh_lab
            .adaptive_view(&mut fresh_store, Corruption::Blur, &settings, gamma)
            .unwrap();
        assert_eq!(view, fresh, "{settings:?}, γ = {gamma}");
        let scored = store
            .scored_stream
            .get(&ScoresKey {
                model: 0,
                split: SPLIT,
                corruption: Corruption::Blur,
                severities: vec![0, 1, 2, 3],
                score: settings.score_of(settings.score),
            })
            .cloned()
            .expect("the stream's scores are kept");
        kept.push(scored);
    }
    let same = |a: usize, b: usize| Rc::ptr_eq(&kept[a], &kept[b]);
    assert!(same(0, 1) && same(1, 2), "γ and α reuse the scores");
    assert!(
        !same(2, 3) && !same(3, 4),
        "a new score or draw scores again"
    );
    assert!(!same(4, 5), "only the last scores are kept");
    // A copy that comes in scores the stream again, with its block.
    let copy = ShiftedSet::new(Corruption::Blur, 4).unwrap();
    store.add_logits(0, copy, 0, &planted.copy(4)).unwrap();
    let view = lab
        .adaptive_view(&mut store, Corruption::Blur, &aps, 0.005)
        .unwrap();
    assert_eq!(view.blocks.len(), 5);
    let (mut fresh_lab, mut fresh_store) = planted.lab(&[1, 2, 3, 4]);
    let fresh = fresh_lab
        .adaptive_view(&mut fresh_store, Corruption::Blur, &aps, 0.005)
        .unwrap();
    assert_eq!(view, fresh);
}
