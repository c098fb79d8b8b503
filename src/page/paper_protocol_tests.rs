//! The paper protocol's choice of τ and its table, on networks whose detection on each set is
//! planted: every test image's top logit is 2, and an OOD image's top logit is 1 for the
//! network meant to win on Gaussian noise (its MSP below every test image's: FPR95 0) and 3 for
//! the others (above: FPR95 1).

use super::*;
use crate::data::FASHION_MNIST_CLASSES;
use crate::lab::OodStore;
use crate::page::MODELS;

const K: usize = 10;
const ROWS: usize = 200;
const OOD_ROWS: usize = 20;

/// `rows` rows whose class `row % K` has logit `top` and the others 0.
fn logits(rows: usize, top: f32) -> Vec<f32> {
    (0..rows)
        .flat_map(|row| (0..K).map(move |k| if k == row % K { top } else { 0.0 }))
        .collect()
}

#[test]
fn the_tuned_tau_is_the_lowest_gaussian_fpr95_the_smaller_on_a_tie() {
    assert_eq!(
        choose_tau(&[(0.04, 0.5), (0.1, 0.2), (1.0, 0.3)]),
        Some(0.1)
    );
    assert_eq!(choose_tau(&[(1.0, 0.2), (0.1, 0.2)]), Some(0.1));
    assert_eq!(choose_tau(&[]), None);
}

#[test]
fn closed_it_asks_for_nothing_and_hides_its_block() {
    let labels: Vec<u32> = (0..ROWS).map(|i| (i % K) as u32).collect();
    let lab = Lab::new(labels, K, MODELS.len()).unwrap();
    let mut store = OodStore::new(K, MODELS.len(), ROWS, [OOD_ROWS; 3]);
    let out = render(&lab, &mut store, &PageState::default()).unwrap();
    assert!(out.needs.is_empty());
    assert_eq!(
        out.patches,
        [Patch::Hidden {
            id: "paper-block",
            hidden: true
        }]
    );
}

#[test]
fn open_it_evaluates_every_tau_on_gaussian_noise_and_compares_the_winner_with_cross_entropy() {
    let labels: Vec<u32> = (0..ROWS).map(|i| (i % K) as u32).collect();
    let mut lab = Lab::new(labels, K, MODELS.len())
        .and_then(|lab| lab.with_class_names(FASHION_MNIST_CLASSES.map(String::from).to_vec()))
        .unwrap();
    let mut store = OodStore::new(K, MODELS.len(), ROWS, [OOD_ROWS; 3]);
    let state = PageState {
        paper: true,
        ..PageState::default()
    };
    let first = render(&lab, &mut store, &state).unwrap();
    let trained = Network::trained().len();
    assert_eq!(
        first.needs.len(),
        4 * trained,
        "test images and three sets each"
    );

    let winner = Network::Tau01;
    for network in Network::trained() {
        let model = network.index().unwrap();
        lab.add_logits(model, 0, &logits(ROWS, 2.0)).unwrap();
        let gaussian_top = if network == winner { 1.0 } else { 3.0 };
        store
            .add_logits(model, OodSet::Gaussian, 0, &logits(OOD_ROWS, gaussian_top))
            .unwrap();
        for set in [OodSet::Mnist, OodSet::Uniform] {
            store
                .add_logits(model, set, 0, &logits(OOD_ROWS, 1.0))
                .unwrap();
        }
    }
    let out = render(&lab, &mut store, &state).unwrap();
    assert!(out.needs.is_empty());
    let texts: Vec<(&str, &str)> = out
        .patches
        .iter()
        .filter_map(|p| match p {
            Patch::Text { id, text } => Some((*id, text.as_str())),
            _ => None,
        })
        .collect();
    let selection = texts
        .iter()
        .find(|(id, _)| *id == "paper-selection")
        .unwrap()
        .1;
    assert!(selection.contains("τ = 0.1 is picked"), "{selection}");
    assert!(
        selection.contains("τ = 0.1: 0.0%") && selection.contains("τ = 1: 100.0%"),
        "{selection}"
    );
    let title = texts
        .iter()
        .find(|(id, _)| *id == "paper-network-title")
        .unwrap()
        .1;
    assert_eq!(title, winner.title());
    let rows = out
        .patches
        .iter()
        .find_map(|p| match p {
            Patch::Rows {
                id: "paper-metrics",
                rows,
            } => Some(rows),
            _ => None,
        })
        .unwrap();
    assert_eq!(rows.len(), 4, "two sets by two scores");
    let metrics: Vec<&str> = rows
        .iter()
        .flat_map(|r| &r.cells)
        .filter_map(|c| c.metric.as_deref())
        .collect();
    for metric in ["paper_fpr95_msp_mnist", "paper_auroc_energy_uniform_ce"] {
        assert!(metrics.contains(&metric), "{metric} in {metrics:?}");
    }
    // Every OOD image here scores below every test image by MSP: FPR95 0 for both networks.
    let cell = |name: &str| {
        rows.iter()
            .flat_map(|r| &r.cells)
            .find(|c| c.metric.as_deref() == Some(name))
            .unwrap()
            .value
    };
    assert_eq!(cell("paper_fpr95_msp_mnist"), Some(0.0));
    assert_eq!(cell("paper_fpr95_msp_mnist_ce"), Some(0.0));
    let lesson = texts
        .iter()
        .find(|(id, _)| *id == "paper-lesson")
        .unwrap()
        .1;
    assert!(
        lesson.contains("as many of them through as cross-entropy"),
        "{lesson}"
    );
}
