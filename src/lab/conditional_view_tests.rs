//! The worst-slab view on synthetic calibrated logits (labels drawn from softmax(z)): the
//! numbers `calibra report --worst-slab` computes from the same halves, kept orders reused.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::lab::ConformalParts;
use crate::test_support::calibrated_rows;

const K: usize = 10;

fn settings(alpha: f64, class_conditional: bool) -> ConformalSettings {
    ConformalSettings {
        temperature: 1.0,
        alpha,
        score: ScoreKind::Aps,
        randomized: true,
        raps_lambda: conformal::DEFAULT_RAPS_LAMBDA,
        raps_k_reg: conformal::DEFAULT_RAPS_K_REG,
        saps_lambda: conformal::DEFAULT_SAPS_LAMBDA,
        class_conditional,
    }
}

#[test]
fn the_view_is_the_reports_worst_slab_and_floor_on_the_evaluation_half() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let (probabilities, labels) = calibrated_rows(1_200, K, &mut rng);
    let logits: Vec<f32> = probabilities.iter().map(|p| p.ln() as f32).collect();
    let mut lab = Lab::new(labels, K, 1).unwrap();
    lab.add_logits(0, 0, &logits).unwrap();
    for (alpha, class_conditional) in [(0.1, false), (0.2, true)] {
        let settings = settings(alpha, class_conditional);
        let view = lab.worst_slab_view(&settings).unwrap();
        let conformal = lab.conformal_view(&settings, ConformalParts::ALL).unwrap();
        let seed = lab.split_seed;
        let (cache, table, thresholds) = lab.chosen_score(&settings).unwrap();
        let sets = conformal::sets_from_label_scores(&table.evaluation, K, &thresholds).unwrap();
        let covered: Vec<bool> = (0..)
            .zip(&cache.evaluation.labels)
            .map(|(row, &label)| sets.contains(row, label))
            .collect();
        assert_eq!(
            covered.iter().filter(|&&c| c).count(),
            conformal.metrics.covered
        );
        let directions = worst_slab::random_directions(DIRECTIONS, K, seed);
        let features = &cache.evaluation.logits;
        let worst =
            worst_slab::worst_slab_coverage(features, K, &covered, &directions, DELTA).unwrap();
        let floor = worst_slab::worst_slab_noise_floor(
            features,
            K,
            &directions,
            DELTA,
            alpha,
            FLOOR_REPETITIONS,
            seed,
        )
        .unwrap();
        let f = view.figures;
        assert_eq!(
            (f.coverage, f.rows, f.floor),
            (worst.coverage, worst.count, floor)
        );
        assert_eq!((f.n, f.target), (600, 1.0 - alpha));
        assert!(f.floor < f.target && f.floor_spread > 0.0);
        assert_eq!(view.sentence, sentences::worst_slab_sentence(&f));
    }
}
