//! Unit tests of `normalized_view.rs`: on rows whose labels are drawn with LogitNorm's
//! input-dependent temperature, normalised temperature scaling recovers the planted T and beats
//! one temperature beyond the noise, and the sentence says it repairs the network; on rows
//! drawn with one temperature, it does no better, and the sentence says so.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::sentences::{normalized_lesson, NormalizedFigures};
use crate::test_support::planted_rows;

const CLASSES: usize = 10;
/// Rows of each half: the page's 5,000.
const HALF: usize = 5000;
/// A planted temperature recovered from 5,000 rows: a few standard errors.
const RECOVERY_TOLERANCE: f64 = 0.05;

/// Two halves of rows drawn with `temperature(‖z‖)`.
fn halves(seed: u64, temperature: impl Fn(f64) -> f64) -> Halves {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (logits, labels) = planted_rows(2 * HALF, CLASSES, &mut rng, temperature);
    let (calibration_logits, evaluation_logits) = logits.split_at(HALF * CLASSES);
    let (calibration_labels, evaluation_labels) = labels.split_at(HALF);
    Halves::new(
        CLASSES,
        (calibration_logits.to_vec(), calibration_labels.to_vec()),
        (evaluation_logits.to_vec(), evaluation_labels.to_vec()),
    )
    .unwrap()
}

fn compare(halves: &Halves) -> TemperatureComparison {
    halves
        .temperature_comparison(&NormalizedRequest {
            model: 0,
            split: 0,
            bins: 15,
            binning: Binning::Width,
        })
        .unwrap()
}

/// The sentence on `network` against a reference network whose rows are drawn with `T = 1`
/// (calibrated by one temperature), as cross-entropy's.
fn lesson_against_a_calibrated_network(network: &TemperatureComparison) -> String {
    let reference = compare(&halves(2, |_| 1.0));
    normalized_lesson(
        Some(&reference.plain.ece),
        &[NormalizedFigures {
            network: "LogitNorm τ = 0.3",
            plain: network.plain,
            normalized: network.normalized,
        }],
        "",
    )
}

#[test]
fn on_logitnorm_rows_normalised_scaling_recovers_t_and_repairs_what_one_t_leaves() {
    let planted = 0.3;
    let logitnorm = compare(&halves(1, |length| planted * length));
    assert!(
        (logitnorm.normalized_temperature / planted - 1.0).abs() < RECOVERY_TOLERANCE,
        "planted {planted}, fitted {}",
        logitnorm.normalized_temperature
    );
    assert!(
        logitnorm.normalized.ece.upper < logitnorm.plain.ece.lower,
        "{logitnorm:?}"
    );
    assert!(
        logitnorm.normalized.nll.upper < logitnorm.plain.nll.lower,
        "{logitnorm:?}"
    );
    let lesson = lesson_against_a_calibrated_network(&logitnorm);
    assert!(
        lesson.contains("normalised T repairs what one T leaves")
            && lesson.contains("its NLL too is lower beyond the noise"),
        "{lesson}"
    );
}

#[test]
fn on_rows_of_one_temperature_normalised_scaling_does_no_better() {
    let planted = 1.5;
    let plain = compare(&halves(3, |_| planted));
    assert!(
        (plain.temperature / planted - 1.0).abs() < RECOVERY_TOLERANCE,
        "planted {planted}, fitted {}",
        plain.temperature
    );
    assert!(
        plain.plain.nll.upper < plain.normalized.nll.lower,
        "{plain:?}"
    );
    let lesson = lesson_against_a_calibrated_network(&plain);
    assert!(
        lesson.contains("one T already calibrates it as well as cross-entropy")
            && lesson.contains("normalised T does no better")
            && lesson.contains("its NLL is not lower beyond the noise"),
        "{lesson}"
    );
}
