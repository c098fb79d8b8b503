//! The selective classification block on synthetic logits whose truth is planted: calibrated
//! logits (labels drawn from softmax(z)) made overconfident by a factor of 3, so that the fitted
//! T is near 3, the ranking by confidence barely depends on T, and a threshold's value does.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::test_support::calibrated_rows;

const K: usize = 10;
/// The planted overconfidence: logits are 3 × ln p.
const PLANTED_TEMPERATURE: f64 = 3.0;

fn overconfident_lab(n: usize, seed: u64) -> Lab {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (probabilities, labels) = calibrated_rows(n, K, &mut rng);
    let logits: Vec<f32> = probabilities
        .iter()
        .map(|p| (PLANTED_TEMPERATURE * p.ln()) as f32)
        .collect();
    let mut lab = Lab::new(labels, K, 2).unwrap();
    lab.add_logits(0, 0, &logits).unwrap();
    lab
}

#[test]
fn scaling_moves_the_threshold_but_hardly_the_ranking_or_the_images_answered() {
    let mut lab = overconfident_lab(6_000, 1);
    let view = lab.selective_view(1.0, 0.2).unwrap();
    assert!((view.fitted_temperature - PLANTED_TEMPERATURE).abs() < 0.3);
    // At T = 1 the view's own AURC is the one at T = 1.
    assert_eq!(view.aurc, view.aurc_at_one);
    assert!(
        (view.aurc_at_one - view.aurc_fitted).abs() < 0.05 * view.aurc_at_one,
        "{} against {}",
        view.aurc_at_one,
        view.aurc_fitted
    );
    let report = view.report.as_ref().expect("3,000 calibration rows");
    // Overconfident at T = 1: the threshold sits higher on the confidence scale than at the
    // fitted T, where the confidences mean what they say.
    let fitted = lab.selective_view(view.fitted_temperature, 0.2).unwrap();
    let fitted_report = fitted.report.as_ref().unwrap();
    assert!(report.threshold > fitted_report.threshold + 0.05);
    assert!((report.coverage - fitted_report.coverage).abs() < 0.02);
    // The guarantee's share is met on the evaluation half, within sampling noise.
    assert!(report.answered_error_rate <= 0.2 + 3.0 * (0.2 * 0.8 / 3_000.0_f64).sqrt());
    assert!(view.sentence.contains("barely moves"), "{}", view.sentence);
    assert!(view.sentence.contains(&format!("{:.4}", report.threshold)));
}

#[test]
fn the_curve_and_threshold_are_those_of_the_halves_at_t() {
    let mut lab = overconfident_lab(2_000, 2);
    let view = lab.selective_view(2.0, 0.1).unwrap();
    let cache = lab.prepared().unwrap();
    let halves = [
        confidences_of(&cache.calibration, K, 2.0).unwrap(),
        confidences_of(&cache.evaluation, K, 2.0).unwrap(),
    ];
    assert_eq!(
        view.curve,
        selective::risk_coverage_curve(&halves[1].0, &halves[1].1).unwrap()
    );
    assert_eq!(view.report.unwrap(), report_of(&halves, 0.1).unwrap());
}

#[test]
fn too_small_a_calibration_half_answers_nothing_and_says_how_many_it_needs() {
    // At a risk level of 1%, ⌈(n + 1)·0.99⌉ ≤ n needs n ≥ 99.
    let mut lab = overconfident_lab(60, 3);
    let view = lab.selective_view(1.0, 0.01).unwrap();
    assert_eq!(
        (view.n_calibration, view.needed, view.report),
        (30, 99, None)
    );
    assert!(
        view.sentence
            .ends_with("needs at least 99 calibration examples to answer anything; there are 30."),
        "{}",
        view.sentence
    );
}

#[test]
fn a_block_kept_while_t_and_the_risk_level_stay_is_the_one_computed_afresh() {
    let mut lab = overconfident_lab(2_000, 3);
    let first = lab.selective_view(2.0, 0.1).unwrap();
    // The α slider moves the conformal lab's other blocks, not this one.
    let settings = crate::lab::ConformalSettings {
        temperature: 2.0,
        alpha: 0.2,
        score: crate::lab::ScoreKind::Lac,
        randomized: false,
        raps_lambda: conformal::DEFAULT_RAPS_LAMBDA,
        raps_k_reg: conformal::DEFAULT_RAPS_K_REG,
        saps_lambda: conformal::DEFAULT_SAPS_LAMBDA,
        class_conditional: false,
    };
    lab.pac_view(&settings, 0.1).unwrap();
    let kept = lab.selective_view(2.0, 0.1).unwrap();
    assert_eq!(kept, first);
    let mut fresh = lab.clone();
    fresh.set_split(1);
    fresh.set_split(0);
    assert_eq!(kept, fresh.selective_view(2.0, 0.1).unwrap());
    // A moved T or risk level is computed anew.
    let moved = lab.selective_view(2.5, 0.1).unwrap();
    assert_eq!(moved.temperature, 2.5);
    assert_eq!(moved, fresh.selective_view(2.5, 0.1).unwrap());
    assert_eq!(
        lab.selective_view(2.5, 0.2).unwrap(),
        fresh.selective_view(2.5, 0.2).unwrap()
    );
}

#[test]
fn the_experiment_checks_risk_control_on_the_coverage_experiments_splits() {
    // Calibrated logits scaled by 3: at T = 3 the confidences are calibrated, at any T the
    // guarantee holds on average over the splits, and the caption never calls the mean above
    // the level more than chance on pools of several seeds.
    let settings = crate::lab::ConformalSettings {
        temperature: 2.0,
        alpha: 0.1,
        score: crate::conformal::ScoreKind::Lac,
        randomized: false,
        raps_lambda: conformal::DEFAULT_RAPS_LAMBDA,
        raps_k_reg: conformal::DEFAULT_RAPS_K_REG,
        saps_lambda: conformal::DEFAULT_SAPS_LAMBDA,
        class_conditional: false,
    };
    for seed in 0..5 {
        let mut lab = overconfident_lab(2_000, 10 + seed);
        let experiment = lab
            .coverage_experiment(&settings, 0.1, 0.15, 200, seed)
            .unwrap();
        let run = experiment.risk_control.expect("1,000 calibration rows");
        assert_eq!(run.answered_error_rates.len(), experiment.coverages.len());
        let f = run.figures;
        assert!(
            f.mean <= 0.15 + 3.0 * f.standard_deviation / (200.0_f64).sqrt(),
            "seed {seed}: mean {}",
            f.mean
        );
        assert!(
            f.above > 0 && f.above < 200,
            "seed {seed}: {} above",
            f.above
        );
        assert!(!run.caption.contains("more than chance"), "{}", run.caption);
        assert!(run
            .caption
            .starts_with("Conformal risk control at a risk level of 15%: over 200 splits"));
    }
    // Too few calibration rows to answer anything at 1%: no check.
    let mut small = overconfident_lab(100, 3);
    let experiment = small
        .coverage_experiment(&settings, 0.1, 0.01, 20, 0)
        .unwrap();
    assert!(experiment.risk_control.is_none());
}

#[test]
fn a_risk_level_moved_at_the_same_temperature_gives_the_block_computed_anew() {
    let mut lab = overconfident_lab(4_000, 3);
    lab.selective_view(1.7, 0.2).unwrap();
    let moved = lab.selective_view(1.7, 0.1).unwrap();
    let mut fresh = overconfident_lab(4_000, 3);
    assert_eq!(moved, fresh.selective_view(1.7, 0.1).unwrap());
    // And T moved with the risk level kept.
    assert_eq!(
        lab.selective_view(2.5, 0.1).unwrap(),
        fresh.selective_view(2.5, 0.1).unwrap()
    );
}
