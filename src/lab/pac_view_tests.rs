//! The PAC view on synthetic calibrated logits (labels drawn from softmax(z)): its rank is the
//! library's, its sets are larger than the marginal ones, and the coverage experiment measures
//! each rank's shortfall at the rate the law of a measured coverage predicts.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::lab::{ConformalSettings, ScoreKind};
use crate::test_support::calibrated_rows;

const K: usize = 10;
/// Statistical checks allow this many binomial standard errors.
const STANDARD_ERRORS: f64 = 3.0;

/// A lab of `n` calibrated rows (logits `ln p`, labels drawn from `p`), split in halves.
fn calibrated_lab(n: usize, seed: u64) -> Lab {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (probabilities, labels) = calibrated_rows(n, K, &mut rng);
    let logits: Vec<f32> = probabilities.iter().map(|p| p.ln() as f32).collect();
    let mut lab = Lab::new(labels, K, 2).unwrap();
    lab.add_logits(0, 0, &logits).unwrap();
    lab
}

fn settings(alpha: f64) -> ConformalSettings {
    ConformalSettings {
        temperature: 1.0,
        alpha,
        score: ScoreKind::Lac,
        randomized: false,
        raps_lambda: conformal::DEFAULT_RAPS_LAMBDA,
        raps_k_reg: conformal::DEFAULT_RAPS_K_REG,
        saps_lambda: conformal::DEFAULT_SAPS_LAMBDA,
        class_conditional: false,
    }
}

#[test]
fn the_pac_threshold_sits_above_the_marginal_one_at_a_small_delta() {
    let mut lab = calibrated_lab(4_000, 1);
    let view = lab.pac_view(&settings(0.1), 0.1).unwrap();
    let n = view.n_calibration;
    let pac = view.pac.expect("2,000 calibration rows are enough");
    assert_eq!(pac.k, pac::pac_rank(n, 0.1, 0.1).unwrap());
    assert_eq!(view.marginal_k, conformal::quantile_rank(n, 0.1).unwrap());
    assert!(pac.k > view.marginal_k);
    assert!(pac.qhat >= view.marginal_qhat);
    assert!(pac.average_set_size >= view.marginal_size);
    assert!(pac.coverage >= view.marginal_coverage);
    assert!(pac.shortfall <= 0.1 && view.marginal_shortfall > 0.3);
    assert!(view
        .sentence
        .contains(&format!("rank k = {}", crate::text::grouped(pac.k))));
}

#[test]
fn too_small_a_calibration_half_has_no_pac_threshold_and_says_how_many_it_needs() {
    // (1 − 0.1)^n ≤ 0.1 from n = 22: a calibration half of 15 rows has no PAC threshold.
    let mut lab = calibrated_lab(30, 2);
    let view = lab.pac_view(&settings(0.1), 0.1).unwrap();
    assert_eq!((view.n_calibration, view.pac, view.needed), (15, None, 22));
    assert!(view.sentence.contains("at least 22"), "{}", view.sentence);
    let experiment = lab
        .coverage_experiment(&settings(0.1), 0.1, 0.1, 10, 3)
        .unwrap();
    assert!(experiment.pac.is_none());
}

#[test]
fn the_experiment_measures_each_ranks_shortfall_at_the_rate_its_law_predicts() {
    const SPLITS: usize = 1_000;
    let mut lab = calibrated_lab(4_000, 3);
    let experiment = lab
        .coverage_experiment(&settings(0.1), 0.1, 0.1, SPLITS, 5)
        .unwrap();
    let pac = experiment.pac.expect("a PAC rank");
    assert_eq!(pac.coverages.len(), SPLITS);
    let f = pac.figures;
    for (below, predicted, what) in [
        (f.pac_below, f.predicted_pac_below, "PAC"),
        (f.marginal_below, f.predicted_marginal_below, "marginal"),
    ] {
        let observed = below as f64 / SPLITS as f64;
        let allowance = STANDARD_ERRORS * (predicted * (1.0 - predicted) / SPLITS as f64).sqrt();
        assert!(
            (observed - predicted).abs() <= allowance,
            "{what}: {observed} of splits below 1 − α, predicted {predicted} ± {allowance}"
        );
    }
    // The marginal rank's coverages are the experiment's own, on the same splits.
    let marginal_below = experiment.coverages.iter().filter(|&&c| c < 0.9).count();
    assert_eq!(marginal_below, f.marginal_below);
    // Measured on 2,000 images, the PAC share exceeds δ (binomial noise), and stays far below
    // the marginal one.
    assert!(f.predicted_pac_below > 0.1 && f.pac_below * 2 < f.marginal_below);
    assert!(
        pac.caption.contains("sits where that law puts it"),
        "{}",
        pac.caption
    );
}
