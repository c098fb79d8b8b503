//! Tests of `rivals.rs`: the direction its sentences name between two rivals, as a verdict on
//! synthetic recalibrations whose truth is known by construction.

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};

use super::*;
use crate::bootstrap::{paired_ece_nll_difference, BootstrapSettings, ScoredRows};
use crate::calibration::Binning;
use crate::sentences::{self, BinningFigures};

/// The Venn–Abers sentence's direction as a verdict, on synthetic recalibrations whose truth
/// is known by construction. Each of 1,000 rows has a true probability `p ~ U(0.5, 1)` that its
/// prediction is right. Equally good in truth: two recalibrations that say `p` plus independent
/// N(0, 0.05²) noise (exchangeable, so their expected ECE and NLL are equal): a "below" or
/// "above" is a false alarm. Better in truth: one that says `p` against one that doubles its
/// logit (`p² / (p² + (1 − p)²)`, overconfident): anything but "below" is a miss. With the
/// page's settings ([`DIFFERENCE_BOOTSTRAP`]), over 100 seeded trials each: false alarms 6
/// (NLL) and 0 (ECE), misses 0 and 2; over 1,000 each: false alarms 5.5% and 0.0%, misses 0.0%
/// and 1.1% (ECE's interval is wider than its tie needs: binned ECE is biased upward on every
/// resample). The bounds leave room for a percentile bootstrap's approximate level.
#[test]
fn rivals_venn_abers_sentence_direction_has_a_known_false_alarm_and_miss_rate() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(47);
    let noise = Normal::new(0.0, 0.05).unwrap();
    let scored = |said: &[f64], correct: &[bool]| -> Vec<f64> {
        said.iter()
            .zip(correct)
            .map(|(&q, &right)| -(if right { q } else { 1.0 - q }).ln())
            .collect()
    };
    let verdict = |text: &str, metric: &str| {
        let clause = text
            .split(metric)
            .nth(1)
            .unwrap()
            .split(" isotonic")
            .next()
            .unwrap();
        ["below", "above"]
            .into_iter()
            .find(|word| clause.ends_with(word))
            .unwrap_or("neither")
    };
    let figures = |ece, nll| BinningFigures {
        distinct: 1000,
        ece,
        calibration_ece: 0.0,
        nll,
    };
    // (false alarms, misses) of NLL and of ECE.
    let (mut false_alarms, mut misses) = ([0; 2], [0; 2]);
    for trial in 0..200_u64 {
        let truth: Vec<f64> = (0..1000).map(|_| rng.random_range(0.5..1.0)).collect();
        let correct: Vec<bool> = truth.iter().map(|&p| rng.random_bool(p)).collect();
        let tied = trial < 100;
        let said = |rng: &mut rand_chacha::ChaCha8Rng, overconfident: bool| -> Vec<f64> {
            truth
                .iter()
                .map(|&p| {
                    if tied {
                        (p + noise.sample(rng)).clamp(0.5, 0.999)
                    } else if overconfident {
                        p * p / (p * p + (1.0 - p) * (1.0 - p))
                    } else {
                        p
                    }
                })
                .collect()
        };
        let (first, second) = (said(&mut rng, false), said(&mut rng, true));
        let (first_nll, second_nll) = (scored(&first, &correct), scored(&second, &correct));
        let rows = |said, nll| ScoredRows {
            confidence: said,
            correct: &correct,
            nll,
        };
        let settings = BootstrapSettings {
            seed: trial,
            ..DIFFERENCE_BOOTSTRAP
        };
        let difference = paired_ece_nll_difference(
            rows(&first, &first_nll),
            rows(&second, &second_nll),
            15,
            Binning::Width,
            &settings,
        )
        .unwrap();
        let (first_figures, second_figures) = (
            figures(difference.ece.estimate, difference.nll.estimate),
            figures(0.0, 0.0),
        );
        let text =
            sentences::rivals_venn_abers_sentence(first_figures, second_figures, &difference);
        for (m, metric) in ["its NLL is", "its ECE"].into_iter().enumerate() {
            let said = verdict(&text, metric);
            if tied {
                false_alarms[m] += usize::from(said != "neither");
            } else {
                misses[m] += usize::from(said != "below");
            }
        }
    }
    assert!(
        false_alarms.iter().all(|&count| count <= 10) && misses.iter().all(|&count| count <= 5),
        "false alarms {false_alarms:?} and misses {misses:?} of 100 (NLL, ECE)"
    );
}
