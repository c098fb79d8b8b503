//! Tests of Dirichlet calibration: planted maps recovered from seeded data (a temperature, the
//! identity of a calibrated network, a full matrix), and dirichletcal's fit
//! (`scripts/dirichlet-reference.py`, fixture `tests/fixtures/dirichlet/expected.json`).

use super::*;
use crate::recalibration::tests::{assert_close, assert_metrics, labelled, Metrics};
use crate::recalibration::{Method, Recalibration};
use crate::test_support::draw_index;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The library's fit finished to a gradient below 1e-13 and calibra's minimise the same strictly
/// convex objective: the maps and every metric agree to rounding.
const REFERENCE_TOLERANCE: f64 = 1e-9;
/// The library's own Newton method stops with its parameters within 5e-9 of the minimum.
const LIBRARY_STOP_TOLERANCE: f64 = 1e-8;
/// The objective is flat at its minimum: 5e-9 away from it, it is higher by about 1e-17.
const OBJECTIVE_TOLERANCE: f64 = 1e-12;
/// Planted maps recovered from 40,000 seeded rows: a few standard errors.
const RECOVERY_TOLERANCE: f64 = 0.06;

#[derive(serde::Deserialize)]
struct Fixture {
    num_classes: usize,
    lambda: f64,
    mu: f64,
    calibration_logits: Vec<f32>,
    calibration_labels: Vec<u32>,
    evaluation_logits: Vec<f32>,
    evaluation_labels: Vec<u32>,
    library_fit: LibraryFit,
    fit: Reference,
}

/// The library's fit where its Newton method stopped.
#[derive(serde::Deserialize)]
struct LibraryFit {
    map: Vec<f64>,
    objective: f64,
}

#[derive(serde::Deserialize)]
struct Reference {
    map: Vec<f64>,
    objective: f64,
    evaluation_probabilities: Vec<f64>,
    evaluation: Metrics,
}

#[test]
fn the_fit_matches_dirichletcal() {
    let f: Fixture =
        serde_json::from_str(include_str!("../../tests/fixtures/dirichlet/expected.json"))
            .expect("the committed fixture parses");
    let k = f.num_classes;
    let calibration = labelled(&f.calibration_logits, &f.calibration_labels, k);
    let evaluation = labelled(&f.evaluation_logits, &f.evaluation_labels, k);
    let fit = fit_dirichlet(&calibration, f.lambda, f.mu).unwrap();
    assert!(fit.converged, "{fit:?}");
    for ((&ours, &theirs), &stopped) in fit.map.iter().zip(&f.fit.map).zip(&f.library_fit.map) {
        assert_close(ours, theirs, REFERENCE_TOLERANCE, "(W | b)");
        assert_close(
            ours,
            stopped,
            LIBRARY_STOP_TOLERANCE,
            "(W | b) as the library stops",
        );
    }
    for expected in [f.fit.objective, f.library_fit.objective] {
        assert_close(fit.objective, expected, OBJECTIVE_TOLERANCE, "objective");
    }
    let mut log_p = vec![0.0; k];
    for (row, expected) in evaluation
        .logits()
        .rows()
        .zip(f.fit.evaluation_probabilities.chunks_exact(k))
    {
        fit.log_probabilities(row, &mut log_p);
        for (&lp, &p) in log_p.iter().zip(expected) {
            assert_close(lp.exp(), p, REFERENCE_TOLERANCE, "probability");
        }
    }
    let recalibration = Recalibration::Dirichlet(fit);
    let report = crate::recalibration::report(
        Method::Dirichlet,
        &recalibration,
        &calibration,
        &evaluation,
        15,
        crate::calibration::Binning::Width,
    )
    .unwrap();
    assert_metrics(&report, &f.fit.evaluation, "Dirichlet calibration");
}

/// Seeded logits `[n, K]` and labels drawn from the planted map `softmax(W ln q + b)`.
fn planted(n: usize, map: &DirichletCalibration, k: usize, seed: u64) -> (Vec<f32>, Vec<u32>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut logits, mut labels) = (Vec::with_capacity(n * k), Vec::with_capacity(n));
    let mut log_p = vec![0.0; k];
    for _ in 0..n {
        let row: Vec<f32> = (0..k).map(|_| rng.random_range(-4.0..4.0)).collect();
        map.log_probabilities(&row, &mut log_p);
        let p: Vec<f64> = log_p.iter().map(|lp| lp.exp()).collect();
        labels.push(draw_index(&p, &mut rng) as u32);
        logits.extend(row);
    }
    (logits, labels)
}

/// A map from `W` (`K × K`, row-major) and `b`.
fn map_of(weights: &[f64], biases: &[f64]) -> DirichletCalibration {
    let k = biases.len();
    DirichletCalibration {
        map: weights
            .chunks_exact(k)
            .zip(biases)
            .flat_map(|(row, &b)| row.iter().copied().chain([b]))
            .collect(),
        lambda: 0.0,
        mu: 0.0,
        objective: 0.0,
        steps: 0,
        converged: true,
    }
}

/// `W = I/T`, `b = 0`: temperature scaling as a Dirichlet map.
fn temperature_map(k: usize, temperature: f64) -> DirichletCalibration {
    let weights: Vec<f64> = (0..k * k)
        .map(|i| {
            if i / k == i % k {
                1.0 / temperature
            } else {
                0.0
            }
        })
        .collect();
    map_of(&weights, &vec![0.0; k])
}

#[test]
fn a_planted_temperature_is_recovered_on_the_diagonal() {
    // W = I/T is the representative of its map with the least penalty: the fit lands on it.
    for (temperature, seed) in [(2.0, 1), (0.5, 2), (1.0, 3)] {
        let k = 4;
        let (logits, labels) = planted(40_000, &temperature_map(k, temperature), k, seed);
        let fit = fit_dirichlet(&labelled(&logits, &labels, k), ODIR_LAMBDA, ODIR_MU).unwrap();
        assert!(fit.converged, "T = {temperature}: {fit:?}");
        for (index, &value) in fit.map.iter().enumerate() {
            let (row, column) = (index / (k + 1), index % (k + 1));
            let planted = if row == column {
                1.0 / temperature
            } else {
                0.0
            };
            assert_close(
                value,
                planted,
                RECOVERY_TOLERANCE,
                &format!("T = {temperature}: (W | b) entry ({row}, {column})"),
            );
        }
    }
}

#[test]
fn a_planted_full_map_is_recovered_in_its_probabilities() {
    // A full matrix is identified only up to a vector added to every row; its probabilities
    // are not: on fresh rows they equal the planted ones within a few hundredths, and the fit
    // loses less than 0.005 nats of NLL to the planted map there.
    let k = 3;
    let planted_map = map_of(
        &[1.2, 0.4, -0.3, 0.1, 0.7, 0.2, -0.2, 0.3, 1.5],
        &[0.3, -0.4, 0.1],
    );
    let (logits, labels) = planted(40_000, &planted_map, k, 4);
    let fit = fit_dirichlet(&labelled(&logits, &labels, k), ODIR_LAMBDA, ODIR_MU).unwrap();
    assert!(fit.converged, "{fit:?}");
    let (fresh_logits, fresh_labels) = planted(20_000, &planted_map, k, 5);
    let fresh = labelled(&fresh_logits, &fresh_labels, k);
    let (mut fitted_p, mut planted_p) = (vec![0.0; k], vec![0.0; k]);
    let mut largest_gap: f64 = 0.0;
    for row in fresh.logits().rows() {
        fit.log_probabilities(row, &mut fitted_p);
        planted_map.log_probabilities(row, &mut planted_p);
        for (a, b) in fitted_p.iter().zip(&planted_p) {
            largest_gap = largest_gap.max((a.exp() - b.exp()).abs());
        }
    }
    assert!(largest_gap < RECOVERY_TOLERANCE, "{largest_gap}");
    let nll = |map: DirichletCalibration| Recalibration::Dirichlet(map).predict(&fresh).nll;
    let (fitted_nll, planted_nll) = (nll(fit), nll(planted_map));
    assert!(
        fitted_nll - planted_nll < 0.005,
        "{fitted_nll} vs {planted_nll}"
    );
}

#[test]
fn a_calibrated_network_is_left_nearly_as_it_is() {
    // Labels drawn from softmax(z): the identity map is the truth, and the fit stays near it.
    let k = 5;
    let (logits, labels) = planted(40_000, &temperature_map(k, 1.0), k, 6);
    let data = labelled(&logits, &labels, k);
    let fit = fit_dirichlet(&data, ODIR_LAMBDA, ODIR_MU).unwrap();
    let fitted = Recalibration::Dirichlet(fit).predict(&data);
    let network = Recalibration::Uncalibrated.predict(&data);
    assert!(fitted.nll <= network.nll, "the fit minimises the NLL");
    assert!(network.nll - fitted.nll < 1e-3, "{fitted:?}");
}

#[test]
fn too_many_classes_are_refused_by_name() {
    let k = MAX_DIRICHLET_CLASSES + 1;
    let logits = vec![0.0; k];
    let error = fit_dirichlet(&labelled(&logits, &[0], k), ODIR_LAMBDA, ODIR_MU).unwrap_err();
    assert_eq!(
        error,
        CalibrationError::TooManyClassesForDirichlet(MAX_DIRICHLET_CLASSES + 1)
    );
    assert!(error.to_string().contains("at most 20 classes"));
}
