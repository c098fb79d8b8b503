//! The one `#[wasm_bindgen]` facade: thin wrappers over the core for the page and its worker.
//!
//! Bulk numbers cross as typed arrays (`Uint8Array` pixels `[n, 28, 28]`, `Float32Array`
//! logits `[n, 10]`, both row-major); the page state and the readouts cross as plain objects
//! (see [`crate::page`]). Every export returns `Result<_, JsError>` so a bad input becomes a
//! JavaScript exception with a message, never a panic (a panic in WebAssembly kills the page).

mod canvas;

use plotters::coord::Shift;
use plotters::prelude::*;
use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::HtmlCanvasElement;

use crate::data::{self, FASHION_MNIST_CLASSES};
use crate::lab;
use crate::model::{Classifier, NUM_CLASSES};
use crate::page::{self, PageState, Visible};
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

/// Every constant the page's script needs ([`page::Limits`]).
#[wasm_bindgen]
pub fn limits() -> Result<JsValue, JsError> {
    to_js(&page::limits())
}

/// The controls' values and labels for `state` ([`page::control_patches`]), for the first
/// paint, before the data has arrived.
#[wasm_bindgen]
pub fn controls(state: JsValue) -> Result<JsValue, JsError> {
    to_js(&page::control_patches(&read_state(state)?))
}

/// A state and the hash that writes it, after a link, a control or a button.
#[derive(Serialize)]
struct Next {
    state: PageState,
    hash: String,
    /// The hash entries that were ignored, each as a sentence.
    rejected: Vec<String>,
}

impl Next {
    fn of(state: PageState, rejected: Vec<String>) -> Self {
        Self {
            hash: state.to_hash(),
            state,
            rejected,
        }
    }
}

/// The state a URL hash describes: `{state, hash, rejected}`, with each ignored entry and why.
#[wasm_bindgen]
pub fn read_hash(hash: &str) -> Result<JsValue, JsError> {
    let (state, rejected) = PageState::from_hash(hash);
    to_js(&Next::of(
        state,
        rejected.iter().map(ToString::to_string).collect(),
    ))
}

/// The test set's labels, the logits of each bundled network as inference streams them in, and
/// the page's one render call.
#[wasm_bindgen]
pub struct Page {
    lab: lab::Lab,
}

#[wasm_bindgen]
impl Page {
    /// A page over the test `labels`.
    #[wasm_bindgen(constructor)]
    pub fn new(labels: &[u8]) -> Result<Page, JsError> {
        let labels = labels.iter().map(|&l| u32::from(l)).collect();
        Ok(Page {
            lab: lab::Lab::new(labels, NUM_CLASSES, page::MODELS.len())?,
        })
    }

    /// Stores a batch of logits of `model` for rows `start..`; returns how many rows of that
    /// model have arrived.
    pub fn add_logits(
        &mut self,
        model: usize,
        start: usize,
        logits: &[f32],
    ) -> Result<usize, JsError> {
        self.lab.add_logits(model, start, logits)?;
        Ok(self.lab.arrived(model)?)
    }

    /// `{state, hash}` after control `id` took `value` (a slider's position, a select's value,
    /// a checkbox's `"true"`/`"false"`).
    pub fn control(&self, state: JsValue, id: &str, value: &str) -> Result<JsValue, JsError> {
        let next = read_state(state)?.set_control(id, value)?;
        to_js(&Next::of(next, Vec::new()))
    }

    /// `{state, hash}` after the button `action` (`fit`, `reset-temperature`, `new-split`, a
    /// preset's name).
    pub fn action(&mut self, state: JsValue, action: &str) -> Result<JsValue, JsError> {
        let fitted = self.lab.fitted_temperature().ok().map(|f| f.temperature);
        let next = read_state(state)?.act(action, fitted)?;
        to_js(&Next::of(next, Vec::new()))
    }

    /// The frame's one call: applies `state`, redraws the charts of the labs `visible` says
    /// are on screen (`{temperature, conformal, gallery, explain}`), and returns the readouts
    /// ([`page::Readouts`]).
    pub fn render(&mut self, state: JsValue, visible: JsValue) -> Result<JsValue, JsError> {
        let state = read_state(state)?;
        let visible: Visible = serde_wasm_bindgen::from_value(visible)
            .map_err(|e| JsError::new(&format!("bad visibility object: {e}")))?;
        let frame = page::render(&mut self.lab, &state, &visible)?;
        if let Some(view) = &frame.temperature {
            let [reliability, histogram, classwise] =
                canvases(["reliability", "histogram", "classwise"])?;
            plot::reliability_diagram(&reliability.0, &view.at_temperature.bins, &reliability.1)?;
            plot::confidence_histogram(
                &histogram.0,
                &view.confidence_counts,
                view.mean_confidence,
                view.at_temperature.accuracy,
                &histogram.1,
            )?;
            plot::classwise_reliability(
                &classwise.0,
                &view.classwise_bins,
                &FASHION_MNIST_CLASSES,
                &classwise.1,
            )?;
        }
        if let Some(view) = &frame.conformal {
            let target = 1.0 - view.alpha;
            let [sizes, per_class, stratified, sweep] =
                canvases(["set-sizes", "per-class", "stratified", "sweep"])?;
            plot::set_size_histogram(&sizes.0, &view.size_counts, &sizes.1)?;
            plot::per_class_coverage(
                &per_class.0,
                &view.metrics.per_class_coverage,
                &FASHION_MNIST_CLASSES,
                target,
                &per_class.1,
            )?;
            plot::stratified_coverage(
                &stratified.0,
                &view.metrics.size_stratified,
                target,
                &stratified.1,
            )?;
            plot::alpha_sweep_curves(&sweep.0, &view.sweep, view.alpha, &sweep.1)?;
        }
        to_js(&frame.readouts)
    }

    /// Draws `repetitions` (the input's text) random calibration/evaluation splits, plots
    /// their evaluation coverage against Beta(k, n + 1 − k), and returns the summary's patches.
    pub fn run_experiment(
        &mut self,
        state: JsValue,
        repetitions: &str,
    ) -> Result<JsValue, JsError> {
        let state = read_state(state)?;
        let (min, max, _) = page::REPETITIONS;
        let repetitions: usize = repetitions
            .trim()
            .parse()
            .ok()
            .filter(|r| (min..=max).contains(r))
            .ok_or_else(|| {
                JsError::new(&format!(
                    "Random splits R must be a whole number from {} to {}, not \"{repetitions}\".",
                    page::grouped(min),
                    page::grouped(max)
                ))
            })?;
        let settings = state.conformal_settings();
        let experiment =
            self.lab
                .coverage_experiment(&settings, repetitions, u64::from(state.split))?;
        let target = 1.0 - settings.alpha;
        let upper = target + 1.0 / (experiment.summary.n_calibration as f64 + 1.0);
        let [canvas] = canvases(["experiment"])?;
        plot::coverage_experiment_histogram(
            &canvas.0,
            &experiment.coverages,
            &experiment.beta_density,
            target,
            upper,
            &canvas.1,
        )?;
        to_js(&page::experiment_readouts(&state, &experiment))
    }
}

/// Reads the page state object, naming the field at fault.
fn read_state(state: JsValue) -> Result<PageState, JsError> {
    serde_wasm_bindgen::from_value(state).map_err(|e| JsError::new(&format!("bad page state: {e}")))
}

/// A plain JavaScript object (not a `Map`) for a serde value.
fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    let serializer = serde_wasm_bindgen::Serializer::new().serialize_maps_as_objects(true);
    Ok(value.serialize(&serializer)?)
}

/// A cleared canvas to draw on, with the chart style for its pixel ratio.
type Chart = (DrawingArea<MeasuredCanvas, Shift>, ChartStyle);

/// The canvases with these ids, each sized to its CSS box times the device pixel ratio and
/// cleared, with the chart style for that ratio.
fn canvases<const N: usize>(ids: [&str; N]) -> Result<[Chart; N], JsError> {
    let window = web_sys::window().ok_or_else(|| JsError::new("no window"))?;
    let document = window
        .document()
        .ok_or_else(|| JsError::new("no document"))?;
    let ratio = window.device_pixel_ratio();
    let mut areas = Vec::with_capacity(N);
    for id in ids {
        let canvas: HtmlCanvasElement = document
            .get_element_by_id(id)
            .and_then(|e| e.dyn_into().ok())
            .ok_or_else(|| JsError::new(&format!("the page has no canvas #{id}")))?;
        let width = (f64::from(canvas.client_width()) * ratio).round() as u32;
        let height = (f64::from(canvas.client_height()) * ratio).round() as u32;
        if canvas.width() != width || canvas.height() != height {
            canvas.set_width(width);
            canvas.set_height(height);
        }
        let backend = MeasuredCanvas::new(canvas)
            .ok_or_else(|| JsError::new(&format!("canvas #{id} has no 2D context")))?;
        let area = backend.into_drawing_area();
        area.fill(&WHITE)
            .map_err(|e| JsError::new(&format!("cannot clear canvas #{id}: {e}")))?;
        areas.push((area, ChartStyle { scale: ratio }));
    }
    areas
        .try_into()
        .map_err(|_| JsError::new("canvas count mismatch"))
}
