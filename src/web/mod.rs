//! The one `#[wasm_bindgen]` facade: thin wrappers over the core for the page and its worker.
//!
//! Bulk numbers cross as typed arrays (`Uint8Array` pixels `[n, 28, 28]`, `Float32Array`
//! logits `[n, 10]`, both row-major); small summaries cross as plain objects. Every export
//! returns `Result<_, JsError>` so a bad input becomes a JavaScript exception with a message,
//! never a panic (a panic in WebAssembly kills the page).

mod canvas;

use plotters::coord::Shift;
use plotters::prelude::*;
use serde::Serialize;
use wasm_bindgen::prelude::*;
use web_sys::HtmlCanvasElement;

use crate::calibration::{Binning, CalibrationReport};
use crate::conformal;
use crate::data::{self, FASHION_MNIST_CLASSES};
use crate::lab::{self, ConformalSettings, GalleryFilter};
use crate::model::{Classifier, NUM_CLASSES};
use crate::plot::{self, ChartStyle};
use canvas::MeasuredCanvas;

/// Installs the panic hook once, when the module is instantiated, so that a bug still reports
/// its message in the console.
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}

/// Unsigned-byte pixels `[n, 28, 28]` of an IDX images file (gzipped or not).
#[wasm_bindgen]
pub fn parse_images(bytes: &[u8], name: &str) -> Result<Vec<u8>, JsError> {
    let images = data::parse_idx_images(bytes, name)?;
    Ok(images.pixels().to_vec())
}

/// Labels of an IDX labels file (gzipped or not).
#[wasm_bindgen]
pub fn parse_labels(bytes: &[u8], name: &str) -> Result<Vec<u8>, JsError> {
    Ok(data::parse_idx_labels(bytes, name)?)
}

/// Fashion-MNIST's class names, in label order.
#[wasm_bindgen]
pub fn class_names() -> Vec<String> {
    FASHION_MNIST_CLASSES
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// A trained CNN, for the inference worker.
#[wasm_bindgen]
pub struct Model {
    inner: Classifier,
}

#[wasm_bindgen]
impl Model {
    /// Loads the network from the bytes of a `.safetensors` file.
    #[wasm_bindgen(constructor)]
    pub fn new(weights: Vec<u8>) -> Result<Model, JsError> {
        Ok(Model {
            inner: Classifier::from_safetensors(weights)?,
        })
    }

    /// Logits `[n, 10]` (row-major `Float32Array`) for `n` images of 784 pixels each.
    pub fn logits(&self, pixels: &[u8]) -> Result<Vec<f32>, JsError> {
        Ok(self.inner.logits(pixels)?)
    }
}

/// The scalar metrics of a [`CalibrationReport`], for the readouts.
#[derive(Serialize)]
struct Metrics {
    accuracy: f64,
    nll: f64,
    brier: f64,
    ece: f64,
    rmsce: f64,
    mce: f64,
    classwise_ece: f64,
}

impl From<&CalibrationReport> for Metrics {
    fn from(r: &CalibrationReport) -> Self {
        Self {
            accuracy: r.accuracy,
            nll: r.nll,
            brier: r.brier,
            ece: r.ece,
            rmsce: r.rmsce,
            mce: r.mce,
            classwise_ece: r.classwise_ece,
        }
    }
}

/// What the page writes next to the temperature lab's charts.
#[derive(Serialize)]
struct TemperatureSummary {
    temperature: f64,
    fitted_temperature: f64,
    fitted_bound_hit: bool,
    n_calibration: usize,
    n_evaluation: usize,
    at_temperature: Metrics,
    at_one: Metrics,
    at_fitted: Metrics,
    mean_confidence: f64,
    ece_floor: f64,
    verdict: String,
}

/// The page's state (labels, streamed logits, split) and its views.
#[wasm_bindgen]
pub struct Lab {
    inner: lab::Lab,
}

#[wasm_bindgen]
impl Lab {
    /// A lab for the test `labels` and `model_count` bundled models.
    #[wasm_bindgen(constructor)]
    pub fn new(labels: &[u8], model_count: usize) -> Result<Lab, JsError> {
        let labels = labels.iter().map(|&l| u32::from(l)).collect();
        Ok(Lab {
            inner: lab::Lab::new(labels, NUM_CLASSES, model_count)?,
        })
    }

    /// Stores a batch of logits for rows `start..`; returns how many rows of `model` have
    /// arrived.
    pub fn add_logits(
        &mut self,
        model: usize,
        start: usize,
        logits: &[f32],
    ) -> Result<usize, JsError> {
        self.inner.add_logits(model, start, logits)?;
        Ok(self.inner.arrived(model)?)
    }

    /// Rows of `model` whose logits have arrived.
    pub fn arrived(&self, model: usize) -> Result<usize, JsError> {
        Ok(self.inner.arrived(model)?)
    }

    /// Makes `model` the one the views show.
    pub fn select_model(&mut self, model: usize) -> Result<(), JsError> {
        Ok(self.inner.select_model(model)?)
    }

    /// Draws a new calibration/evaluation split with `seed`.
    pub fn set_split(&mut self, seed: u32) {
        self.inner.set_split(u64::from(seed));
    }

    /// The temperature fitted on the calibration half (arrived rows).
    pub fn fitted_temperature(&mut self) -> Result<f64, JsError> {
        Ok(self.inner.fitted_temperature()?.temperature)
    }

    /// One slider move: recomputes the temperature lab at `temperature` and redraws its three
    /// canvases (sized in device pixels; `scale` = device pixels per CSS pixel). Returns the
    /// readouts as `{temperature, fitted_temperature, n_calibration, n_evaluation,
    /// at_temperature, at_one, at_fitted, mean_confidence, ece_floor, verdict}`, each metrics
    /// object with accuracy, nll, brier, ece, rmsce, mce and classwise_ece.
    #[allow(clippy::too_many_arguments)]
    pub fn draw_temperature(
        &mut self,
        temperature: f64,
        bins: usize,
        binning: &str,
        reliability: HtmlCanvasElement,
        histogram: HtmlCanvasElement,
        classwise: HtmlCanvasElement,
        scale: f64,
    ) -> Result<JsValue, JsError> {
        let binning: Binning = parse_choice("binning", binning)?;
        let view = self.inner.temperature_view(temperature, bins, binning)?;
        let style = ChartStyle { scale };
        plot::reliability_diagram(
            &canvas_area(reliability)?,
            &view.at_temperature.bins,
            &style,
        )?;
        plot::confidence_histogram(
            &canvas_area(histogram)?,
            &view.confidence_counts,
            view.mean_confidence,
            view.at_temperature.accuracy,
            &style,
        )?;
        plot::classwise_reliability(
            &canvas_area(classwise)?,
            &view.classwise_bins,
            &FASHION_MNIST_CLASSES,
            &style,
        )?;
        let summary = TemperatureSummary {
            temperature: view.temperature,
            fitted_temperature: view.fitted_temperature,
            fitted_bound_hit: view.fitted_bound_hit,
            n_calibration: view.n_calibration,
            n_evaluation: view.n_evaluation,
            at_temperature: Metrics::from(&view.at_temperature),
            at_one: Metrics::from(&view.at_one),
            at_fitted: Metrics::from(&view.at_fitted),
            mean_confidence: view.mean_confidence,
            ece_floor: view.ece_floor,
            verdict: view.verdict,
        };
        Ok(serde_wasm_bindgen::to_value(&summary)?)
    }
}

#[wasm_bindgen]
impl Lab {
    /// One move of a conformal control: recomputes the conformal lab for `settings` (an object
    /// with temperature, alpha, score ("lac" | "aps" | "raps" | "saps"), randomized,
    /// raps_lambda, raps_k_reg, saps_lambda, class_conditional) and redraws its four canvases.
    /// Returns the readouts: qhat, guarantee band, metrics (coverage, per_class_coverage,
    /// average_set_size, singleton_rate, singleton_hit_rate, empty_rate, size_stratified,
    /// covgap), size_counts and the four-score comparison.
    #[allow(clippy::too_many_arguments)]
    pub fn draw_conformal(
        &mut self,
        settings: JsValue,
        set_sizes: HtmlCanvasElement,
        per_class: HtmlCanvasElement,
        stratified: HtmlCanvasElement,
        sweep: HtmlCanvasElement,
        scale: f64,
    ) -> Result<JsValue, JsError> {
        let settings = parse_settings(settings)?;
        let view = self.inner.conformal_view(&settings)?;
        let style = ChartStyle { scale };
        let target = 1.0 - view.alpha;
        plot::set_size_histogram(&canvas_area(set_sizes)?, &view.size_counts, &style)?;
        plot::per_class_coverage(
            &canvas_area(per_class)?,
            &view.metrics.per_class_coverage,
            &FASHION_MNIST_CLASSES,
            target,
            &style,
        )?;
        plot::stratified_coverage(
            &canvas_area(stratified)?,
            &view.metrics.size_stratified,
            target,
            &style,
        )?;
        plot::alpha_sweep_curves(&canvas_area(sweep)?, &view.sweep, view.alpha, &style)?;
        Ok(serde_wasm_bindgen::to_value(&view)?)
    }

    /// Draws `repetitions` random calibration/evaluation splits and plots their evaluation
    /// coverage against Beta(k, n + 1 − k). Returns the summary (mean, standard deviations, k,
    /// sizes) without the raw coverages.
    pub fn draw_coverage_experiment(
        &mut self,
        settings: JsValue,
        repetitions: usize,
        seed: u32,
        canvas: HtmlCanvasElement,
        scale: f64,
    ) -> Result<JsValue, JsError> {
        let settings = parse_settings(settings)?;
        let mut experiment =
            self.inner
                .coverage_experiment(&settings, repetitions, u64::from(seed))?;
        let target = 1.0 - settings.alpha;
        let upper = target + 1.0 / (experiment.summary.n_calibration as f64 + 1.0);
        plot::coverage_experiment_histogram(
            &canvas_area(canvas)?,
            &experiment.coverages,
            &experiment.beta_density,
            target,
            upper,
            &ChartStyle { scale },
        )?;
        experiment.coverages.clear();
        experiment.beta_density.clear();
        // The summary is flattened into the object, which serde writes as a map: ask for a
        // plain object, as the page reads `result.mean`.
        let plain = serde_wasm_bindgen::Serializer::new().serialize_maps_as_objects(true);
        Ok(experiment.serialize(&plain)?)
    }

    /// Up to `limit` evaluation images passing `filter` ("all" | "misses" | "large" | "empty"),
    /// each `{row, label, predicted, set, covered, true_label_score}`.
    pub fn gallery(
        &mut self,
        settings: JsValue,
        filter: &str,
        limit: usize,
    ) -> Result<JsValue, JsError> {
        let settings = parse_settings(settings)?;
        let filter: GalleryFilter = parse_choice("gallery filter", filter)?;
        Ok(serde_wasm_bindgen::to_value(
            &self.inner.gallery(&settings, filter, limit)?,
        )?)
    }

    /// The `count` most and least conformal calibration images: `[most, least]`.
    pub fn conformity_extremes(
        &mut self,
        settings: JsValue,
        count: usize,
    ) -> Result<JsValue, JsError> {
        let settings = parse_settings(settings)?;
        Ok(serde_wasm_bindgen::to_value(
            &self.inner.conformity_extremes(&settings, count)?,
        )?)
    }

    /// Probabilities, each label's score and threshold, and set membership of test image `row`.
    pub fn explain(&mut self, settings: JsValue, row: usize) -> Result<JsValue, JsError> {
        let settings = parse_settings(settings)?;
        Ok(serde_wasm_bindgen::to_value(
            &self.inner.explain(&settings, row)?,
        )?)
    }
}

/// Reads the conformal settings object, naming the field at fault.
fn parse_settings(settings: JsValue) -> Result<ConformalSettings, JsError> {
    let settings: ConformalSettings = serde_wasm_bindgen::from_value(settings)
        .map_err(|e| JsError::new(&format!("bad conformal settings: {e}")))?;
    conformal::quantile_rank(1, settings.alpha)?;
    Ok(settings)
}

/// Reads a choice the page names by its serde name (`"width"`, `"misses"`, …); the message
/// names the field and lists what serde accepts.
fn parse_choice<T: serde::de::DeserializeOwned>(field: &str, name: &str) -> Result<T, JsError> {
    use serde::de::IntoDeserializer;
    T::deserialize(name.into_deserializer())
        .map_err(|e: serde::de::value::Error| JsError::new(&format!("{field}: {e}")))
}

/// A cleared drawing area over a whole canvas.
fn canvas_area(canvas: HtmlCanvasElement) -> Result<DrawingArea<MeasuredCanvas, Shift>, JsError> {
    let backend =
        MeasuredCanvas::new(canvas).ok_or_else(|| JsError::new("canvas has no 2D context"))?;
    let area = backend.into_drawing_area();
    area.fill(&WHITE)
        .map_err(|e| JsError::new(&format!("cannot clear canvas: {e}")))?;
    Ok(area)
}
