//! The inference worker's export: the network (the only part of the facade that needs candle).

use wasm_bindgen::prelude::*;

use crate::data::IMAGE_PIXELS;
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

    /// The penultimate features and the logits of `n` images of 784 pixels each, from one
    /// forward pass, in one `Float32Array`: the features `[n, 128]` first, then the logits
    /// `[n, 10]`, both row-major (one buffer to transfer; the feature-based OOD detectors read
    /// the first beside the second).
    pub fn features_and_logits(&self, pixels: &[u8]) -> Result<Vec<f32>, JsError> {
        let (mut features, logits) = self.inner.features_and_logits(pixels)?;
        features.extend_from_slice(&logits);
        Ok(features)
    }

    /// The last layer (logits = weight · features + bias) in one `Float32Array`: the weight
    /// `[10, 128]` row-major, then the bias `[10]`.
    pub fn last_layer(&self) -> Result<Vec<f32>, JsError> {
        let (mut weight, bias) = self.inner.last_layer()?;
        weight.extend_from_slice(&bias);
        Ok(weight)
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

/// How many blank images [`warm_up`] runs: enough for the browser to optimise the network's
/// kernels (4, 16 and 64 gave first batches as fast), few enough to be over before a network's
/// weights come.
const WARM_UP_IMAGES: usize = 4;

/// Runs a network of the right shape with zero weights ([`Classifier::blank`]) on a few blank
/// images and drops the result, so that the first real batch does not pay for the code's first
/// run. The browser compiles a wasm function when it is first called and optimises it only once
/// it has run a while; `worker.js` calls this while its first network's weights are still
/// downloading, which spends that wait (a first batch after a warm-up takes a fraction of its
/// cold time).
#[wasm_bindgen]
pub fn warm_up() -> Result<(), JsError> {
    Classifier::blank()?.logits(&[0; WARM_UP_IMAGES * IMAGE_PIXELS])?;
    Ok(())
}
