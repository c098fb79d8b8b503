//! The inference worker's export: the network (the only part of the facade that needs candle).

use wasm_bindgen::prelude::*;

use crate::model::Classifier;
#[cfg(feature = "odin")]
use crate::ood::{ODIN_EPSILON, ODIN_TEMPERATURE};

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

#[cfg(feature = "odin")]
#[wasm_bindgen]
impl Model {
    /// ODIN scores (`Float64Array [n]`) for `n` images, at the paper's temperature and
    /// perturbation: a backward pass per image.
    pub fn odin(&self, pixels: &[u8]) -> Result<Vec<f64>, JsError> {
        Ok(self
            .inner
            .odin_scores(pixels, ODIN_TEMPERATURE, ODIN_EPSILON)?)
    }
}
