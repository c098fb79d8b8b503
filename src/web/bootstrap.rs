//! The bootstrap worker's exports: the fits it runs off the page's thread (bootstrap intervals,
//! the rivals, the anatomy chart's curves, normalised temperature scaling, the feature
//! detectors and the paired and ranked OOD bootstraps). A module of their own
//! (`scripts/build-site`), so that the page's module, which the first chart waits for, does not
//! carry them.

use wasm_bindgen::prelude::*;

use super::{from_js, set_field, to_js};
use crate::lab;
use crate::ood_difference;
use crate::ood_ranking;

/// One network's two halves in the page's worker, which answers interval and rivals requests
/// there, so that the page's frames stay short.
#[wasm_bindgen]
pub struct Bootstrap(lab::Halves);

#[wasm_bindgen]
impl Bootstrap {
    /// The halves: logits `[n, classes]` row-major and their labels, each.
    #[wasm_bindgen(constructor)]
    pub fn new(
        classes: usize,
        calibration_logits: Vec<f32>,
        calibration_labels: Vec<u32>,
        evaluation_logits: Vec<f32>,
        evaluation_labels: Vec<u32>,
    ) -> Result<Bootstrap, JsError> {
        Ok(Bootstrap(lab::Halves::new(
            classes,
            (calibration_logits, calibration_labels),
            (evaluation_logits, evaluation_labels),
        )?))
    }

    /// The intervals of `request` (an [`lab::IntervalRequest`]): `{ece, smece, nll, brier}`,
    /// each `{estimate, lower, upper}`.
    pub fn intervals(&self, request: JsValue) -> Result<JsValue, JsError> {
        let request: lab::IntervalRequest = from_js(request, "interval request")?;
        to_js(&self.0.intervals(&request)?)
    }

    /// The rivals of `request` (a [`lab::RivalsRequest`]), a [`lab::RivalsView`].
    pub fn rivals(&mut self, request: JsValue) -> Result<JsValue, JsError> {
        let request: lab::RivalsRequest = from_js(request, "rivals request")?;
        to_js(&self.0.rivals(&request)?)
    }

    /// The anatomy chart's curves of `request` (a [`lab::AnatomyRequest`]), a
    /// [`lab::AnatomyCurves`].
    pub fn anatomy(&self, request: JsValue) -> Result<JsValue, JsError> {
        let request: lab::AnatomyRequest = from_js(request, "anatomy request")?;
        to_js(&self.0.anatomy(&request)?)
    }

    /// One temperature against normalised temperature scaling on these halves (`request`, a
    /// [`lab::NormalizedRequest`]), a [`lab::TemperatureComparison`].
    pub fn temperature_comparison(&self, request: JsValue) -> Result<JsValue, JsError> {
        let request: lab::NormalizedRequest = from_js(request, "normalised temperature request")?;
        to_js(&self.0.temperature_comparison(&request)?)
    }
}

/// The paired bootstrap of `chosen − reference` in FPR95 and AUROC on the same test (`_in`) and
/// OOD (`_out`) images, at the τ lab's settings ([`lab::DIFFERENCE_BOOTSTRAP`]):
/// `{fpr95, auroc}`, each `{estimate, lower, upper}`. The page's worker runs it (about a tenth
/// of a second natively, more than a frame).
#[wasm_bindgen]
pub fn paired_difference(
    chosen_in: &[f64],
    chosen_out: &[f64],
    reference_in: &[f64],
    reference_out: &[f64],
) -> Result<JsValue, JsError> {
    to_js(&ood_difference::paired_difference(
        (chosen_in, chosen_out),
        (reference_in, reference_out),
        &lab::DIFFERENCE_BOOTSTRAP,
    )?)
}

/// Fits every feature detector on the calibration half's features and labels and scores the
/// evaluation half and the OOD sets ([`lab::FeatureInputs::scores`], about a second): the
/// bootstrap worker runs it on what [`Page::feature_inputs`] gave. Returns `{knn_neighbours,
/// scores}`, the scores a `Float64Array` laid out as [`lab::NetworkFeatureScores::flat`].
#[wasm_bindgen]
pub fn feature_scores(
    calibration: Vec<f32>,
    calibration_labels: Vec<u32>,
    evaluation: Vec<f32>,
    mnist: Vec<f32>,
    gaussian: Vec<f32>,
    uniform: Vec<f32>,
    last_layer: Vec<f32>,
) -> Result<JsValue, JsError> {
    let scores = lab::FeatureInputs {
        calibration,
        calibration_labels,
        evaluation,
        out_of_distribution: [mnist, gaussian, uniform],
        last_layer,
    }
    .scores()?;
    let object = js_sys::Object::new();
    set_field(
        &object,
        "knn_neighbours",
        &JsValue::from(scores.knn_neighbours),
        "feature scores",
    )?;
    set_field(
        &object,
        "scores",
        &js_sys::Float64Array::from(&scores.flat()[..]).into(),
        "feature scores",
    )?;
    Ok(object.into())
}

/// Ranks detectors (`ood_ranking`) at the τ lab's bootstrap settings
/// ([`lab::DIFFERENCE_BOOTSTRAP`]): `scores` holds each candidate's `rows_in` ID scores then its
/// `rows_out` OOD scores, end to end, as [`Page::ranking_scores`] gives them. Returns an
/// [`ood_ranking::Ranking`]. The bootstrap worker runs it (a second for twenty candidates).
#[wasm_bindgen]
pub fn rank_detectors(scores: &[f64], rows_in: usize, rows_out: usize) -> Result<JsValue, JsError> {
    let width = rows_in + rows_out;
    if width == 0 || !scores.len().is_multiple_of(width) {
        return Err(JsError::new(&format!(
            "{} scores are not candidates of {rows_in} ID and {rows_out} OOD scores",
            scores.len()
        )));
    }
    let candidates: Vec<(&[f64], &[f64])> = scores
        .chunks_exact(width)
        .map(|candidate| candidate.split_at(rows_in))
        .collect();
    to_js(&ood_ranking::rank_detectors(
        &candidates,
        &lab::DIFFERENCE_BOOTSTRAP,
    )?)
}
