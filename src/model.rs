//! The classifier: a small CNN for Fashion-MNIST in candle (recipe in docs/definitions.md).
//!
//! Input `[n, 1, 28, 28]` pixels scaled to [0, 1]; Conv 3×3 32 "same" + ReLU, MaxPool 2,
//! Conv 3×3 64 "same" + ReLU, MaxPool 2, Flatten, Dense 128 + ReLU, Dense 10 → logits.
//! Weights are stored as safetensors under the names `conv1.weight`, `conv1.bias`, `conv2.*`,
//! `dense1.*`, `dense2.*` (candle-nn's layout: conv kernels `[out, in, 3, 3]`, dense `[out, in]`),
//! in the format the bundled networks ship in (module [`shipped`]: the first dense layer in 8
//! bits, the rest in f16), or in f16 or f32; all are read into `f32`, and the network computes
//! in `f32`.
//!
//! # ODIN
//! ODIN (Liang, Li & Srikant, "Enhancing the Reliability of Out-of-distribution Image Detection
//! in Neural Networks", ICLR 2018) scores an input by the largest softmax probability at a high
//! temperature `T` after one signed-gradient step on the input that raises that probability:
//!
//! ```text
//! S_ŷ(x; T) = max_k softmax(f(x)/T)_k,        ŷ = argmax_k f(x)_k
//! x̃ = x − ε·sign(−∇ₓ log S_ŷ(x; T))
//! score(x) = max_k softmax(f(x̃)/T)_k
//! ```
//!
//! The step raises `log S_ŷ` by about `ε·‖∇ₓ log S_ŷ‖₁`, which the paper finds larger for
//! in-distribution inputs. Inputs are pixels in `[0, 1]`, as the network sees them; the paper
//! divides the gradient by the normalisation's standard deviation, which this network does not
//! have, and does not clip `x̃` to `[0, 1]`, nor does this code. The gradient comes from
//! candle's reverse-mode autograd through the network in `f32`; the score is computed from the
//! logits in `f64`. Defaults are the paper's,
//! [`ODIN_TEMPERATURE`](crate::ood::ODIN_TEMPERATURE) and
//! [`ODIN_EPSILON`](crate::ood::ODIN_EPSILON).
//!
//! # Inference
//! [`Classifier::logits`] runs the same network through the `inference` module's forward pass
//! (NHWC, each convolution through Winograd's F(2×2, 3×3) for a whole block of images; bias,
//! ReLU and pooling fused), equal to [`Cnn`]'s forward up to rounding and faster.

mod inference;
pub mod shipped;

use candle_core::{DType, Device, Module, Tensor, Var};
use candle_nn::{Conv2d, Conv2dConfig, Linear, VarBuilder};

use crate::calibration::top_probability;
use crate::data::{IMAGE_PIXELS, IMAGE_SIDE, NUM_CLASSES};
use inference::InferenceNetwork;

/// Channels after the first and second convolution.
const CONV1_CHANNELS: usize = 32;
const CONV2_CHANNELS: usize = 64;
/// Width of the hidden dense layer: the penultimate features that
/// [`Classifier::features_and_logits`] returns and the detectors of `ood_features` read.
pub const HIDDEN_UNITS: usize = 128;
/// Images per forward and backward pass inside [`Classifier::odin_scores`]: the first
/// convolution's output for 256 images is 25 MB, small enough for a browser tab.
pub const ODIN_CHUNK: usize = 256;
/// Spatial side after two 2×2 poolings.
const POOLED_SIDE: usize = IMAGE_SIDE / 4;

/// What went wrong building or running the network.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("cannot load the model weights: {0}")]
    Weights(candle_core::Error),
    #[error("cannot load the model weights: {0}")]
    WeightsFile(String),
    #[error("inference failed: {0}")]
    Inference(candle_core::Error),
    #[error("{len} pixel bytes is not a whole number of 28x28 images")]
    PartialImage { len: usize },
    #[error("the ODIN temperature must be a positive finite number, got {0}")]
    InvalidTemperature(f64),
    #[error("the ODIN perturbation size must be a finite number >= 0, got {0}")]
    InvalidPerturbation(f64),
}

/// The CNN's layers; `forward` maps `[n, 1, 28, 28]` f32 in [0, 1] to `[n, 10]` logits.
#[derive(Debug)]
pub struct Cnn {
    conv1: Conv2d,
    conv2: Conv2d,
    dense1: Linear,
    dense2: Linear,
}

impl Cnn {
    /// Builds the layers from `vb` (fresh variables when training, stored tensors when loading).
    ///
    /// # Errors
    /// A missing or mis-shaped tensor.
    pub fn new(vb: VarBuilder) -> candle_core::Result<Self> {
        let same = Conv2dConfig {
            padding: 1,
            ..Default::default()
        };
        Ok(Self {
            conv1: candle_nn::conv2d(1, CONV1_CHANNELS, 3, same, vb.pp("conv1"))?,
            conv2: candle_nn::conv2d(CONV1_CHANNELS, CONV2_CHANNELS, 3, same, vb.pp("conv2"))?,
            dense1: candle_nn::linear(
                CONV2_CHANNELS * POOLED_SIDE * POOLED_SIDE,
                HIDDEN_UNITS,
                vb.pp("dense1"),
            )?,
            dense2: candle_nn::linear(HIDDEN_UNITS, NUM_CLASSES, vb.pp("dense2"))?,
        })
    }

    /// The forward pass with `pool` as the 2×2 max-pooling.
    fn forward_with_pool(
        &self,
        x: &Tensor,
        pool: fn(&Tensor) -> candle_core::Result<Tensor>,
    ) -> candle_core::Result<Tensor> {
        let x = pool(&self.conv1.forward(x)?.relu()?)?;
        let x = pool(&self.conv2.forward(&x)?.relu()?)?;
        let x = x.flatten_from(1)?;
        self.dense2.forward(&self.dense1.forward(&x)?.relu()?)
    }
}

impl Module for Cnn {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        self.forward_with_pool(x, |x| x.max_pool2d(2))
    }
}

/// 2×2 max-pooling of `[n, c, h, w]` (even `h` and `w`) whose gradient goes to the first
/// maximum of each window in row-major order, as PyTorch's does: the same values as
/// `max_pool2d(2)`, built from a reshape, an arg-max and a gather, which candle differentiates
/// exactly. candle 0.11's own `max_pool2d` backward multiplies the gradient by (number of
/// maxima)/4 instead of sending it to one maximum, so a unique maximum passes only a quarter of
/// it: two poolings would shrink the input gradient 16-fold, and ties (flat background, where
/// every window of a channel holds the same value) would get several shares.
fn max_pool_2x2_first_maximum(x: &Tensor) -> candle_core::Result<Tensor> {
    let (n, channels, height, width) = x.dims4()?;
    let shape = (n, channels, height / 2, width / 2, 4);
    let windows = x
        .reshape((n, channels, height / 2, 2, width / 2, 2))?
        .permute((0, 1, 2, 4, 3, 5))?
        .contiguous()?
        .reshape(shape)?;
    let first_maximum = windows.argmax_keepdim(4)?;
    windows.gather(&first_maximum, 4)?.squeeze(4)
}

/// Turns unsigned-byte images into the network's input tensor `[n, 1, 28, 28]` in [0, 1].
///
/// # Errors
/// [`ModelError::PartialImage`] when `pixels` is not a whole number of images.
pub fn images_to_tensor(pixels: &[u8], device: &Device) -> Result<Tensor, ModelError> {
    if !pixels.len().is_multiple_of(IMAGE_PIXELS) {
        return Err(ModelError::PartialImage { len: pixels.len() });
    }
    let n = pixels.len() / IMAGE_PIXELS;
    let scaled: Vec<f32> = pixels.iter().map(|&p| f32::from(p) / 255.0).collect();
    Tensor::from_vec(scaled, (n, 1, IMAGE_SIDE, IMAGE_SIDE), device).map_err(ModelError::Inference)
}

/// A trained network ready for inference on the CPU (natively or in WebAssembly).
#[derive(Debug)]
pub struct Classifier {
    cnn: Cnn,
    inference: InferenceNetwork,
    device: Device,
}

impl Classifier {
    /// Loads weights from the bytes of a safetensors file.
    ///
    /// # Errors
    /// [`ModelError::Weights`] when the bytes are not safetensors or lack a layer.
    pub fn from_safetensors(bytes: Vec<u8>) -> Result<Self, ModelError> {
        let device = Device::Cpu;
        let vb = shipped::var_builder(&bytes, DType::F32)?;
        let cnn = Cnn::new(vb).map_err(ModelError::Weights)?;
        let inference = InferenceNetwork::new(&cnn).map_err(ModelError::Weights)?;
        Ok(Self {
            cnn,
            inference,
            device,
        })
    }

    /// The network's shape with every weight zero (its logits are all zero): it runs the same
    /// code as a trained one, which lets the inference worker compile and warm that code up
    /// before a network's weights have arrived.
    ///
    /// # Errors
    /// [`ModelError::Weights`] from candle, which zero tensors of the network's shapes do not
    /// give.
    pub fn blank() -> Result<Self, ModelError> {
        let device = Device::Cpu;
        let cnn = Cnn::new(VarBuilder::zeros(DType::F32, &device)).map_err(ModelError::Weights)?;
        let inference = InferenceNetwork::new(&cnn).map_err(ModelError::Weights)?;
        Ok(Self {
            cnn,
            inference,
            device,
        })
    }

    /// Logits `[n, 10]` row-major for `n` images given as `[n, 28, 28]` unsigned bytes, from
    /// the inference-only forward pass (module `inference`).
    ///
    /// # Errors
    /// [`ModelError::PartialImage`] for a ragged input.
    /// Runs in blocks of a fixed number of images so memory stays bounded for any `n`.
    pub fn logits(&self, pixels: &[u8]) -> Result<Vec<f32>, ModelError> {
        if !pixels.len().is_multiple_of(IMAGE_PIXELS) {
            return Err(ModelError::PartialImage { len: pixels.len() });
        }
        Ok(self.inference.logits(pixels))
    }

    /// The penultimate features `[n, 128]` (the [`HIDDEN_UNITS`] activations after the first
    /// dense layer's ReLU, the last layer's input) and the logits `[n, 10]`, both row-major,
    /// from one forward pass; the logits are [`Self::logits`]'s to the bit. The feature-based
    /// OOD detectors (`ood_features`) read the first beside the second.
    ///
    /// # Errors
    /// [`ModelError::PartialImage`] for a ragged input.
    pub fn features_and_logits(&self, pixels: &[u8]) -> Result<(Vec<f32>, Vec<f32>), ModelError> {
        if !pixels.len().is_multiple_of(IMAGE_PIXELS) {
            return Err(ModelError::PartialImage { len: pixels.len() });
        }
        Ok(self.inference.features_and_logits(pixels))
    }

    /// The last layer's weight `[10, 128]` row-major and bias `[10]`: logits = weight ·
    /// features + bias. ReAct, ASH, ViM and GradNorm (`ood_features`) need them.
    ///
    /// # Errors
    /// [`ModelError::Inference`] from candle, which a loaded network's tensors do not give.
    pub fn last_layer(&self) -> Result<(Vec<f32>, Vec<f32>), ModelError> {
        let dense2 = &self.cnn.dense2;
        let weight = dense2
            .weight()
            .flatten_all()
            .and_then(|w| w.to_vec1::<f32>())
            .map_err(ModelError::Inference)?;
        let bias = match dense2.bias() {
            Some(bias) => bias.to_vec1::<f32>().map_err(ModelError::Inference)?,
            None => vec![0.0; NUM_CLASSES],
        };
        Ok((weight, bias))
    }
}

impl Classifier {
    /// ODIN scores (module documentation) of `n` images given as `[n, 28, 28]` unsigned bytes:
    /// the largest softmax probability at `temperature` of each image moved by `epsilon` (in
    /// `[0, 1]` pixel units, not clipped) along the sign of the gradient of its log largest
    /// softmax probability. `epsilon = 0` gives the plain maximum softmax probability at
    /// `temperature`. Runs in chunks of [`ODIN_CHUNK`] images.
    ///
    /// # Errors
    /// [`ModelError::InvalidTemperature`] unless `temperature` is positive and finite,
    /// [`ModelError::InvalidPerturbation`] unless `epsilon` is finite and `>= 0`,
    /// [`ModelError::PartialImage`] for a ragged input, [`ModelError::Inference`] otherwise.
    pub fn odin_scores(
        &self,
        pixels: &[u8],
        temperature: f64,
        epsilon: f64,
    ) -> Result<Vec<f64>, ModelError> {
        if !(temperature > 0.0 && temperature.is_finite()) {
            return Err(ModelError::InvalidTemperature(temperature));
        }
        if !(epsilon >= 0.0 && epsilon.is_finite()) {
            return Err(ModelError::InvalidPerturbation(epsilon));
        }
        if !pixels.len().is_multiple_of(IMAGE_PIXELS) {
            return Err(ModelError::PartialImage { len: pixels.len() });
        }
        let mut scores = Vec::with_capacity(pixels.len() / IMAGE_PIXELS);
        for chunk in pixels.chunks(ODIN_CHUNK * IMAGE_PIXELS) {
            let input = images_to_tensor(chunk, &self.device)?;
            let logits = self
                .log_max_softmax_gradient(&input, temperature)
                .and_then(|gradient| input + (gradient.sign()? * epsilon)?)
                .and_then(|perturbed| self.cnn.forward(&perturbed))
                .and_then(|logits| logits.flatten_all()?.to_vec1::<f32>())
                .map_err(ModelError::Inference)?;
            scores.extend(
                logits
                    .chunks_exact(NUM_CLASSES)
                    .map(|row| top_probability(row, temperature)),
            );
        }
        Ok(scores)
    }

    /// `∇ₓ log S_ŷ(x; T)` of every image of a batch `[n, 1, 28, 28]`, same shape: the gradient
    /// of `Σ_i log softmax(f(x_i)/T)_{ŷ_i}` with `ŷ_i` the arg-max of image `i`'s logits. The
    /// network treats images independently, so each image's part of the gradient of the sum is
    /// the gradient of its own term.
    fn log_max_softmax_gradient(
        &self,
        input: &Tensor,
        temperature: f64,
    ) -> candle_core::Result<Tensor> {
        let variable = Var::from_tensor(input)?;
        let logits = self
            .cnn
            .forward_with_pool(variable.as_tensor(), max_pool_2x2_first_maximum)?;
        let predicted = logits.detach().argmax_keepdim(1)?;
        let log_probabilities = candle_nn::ops::log_softmax(&(logits / temperature)?, 1)?;
        let objective = log_probabilities.gather(&predicted, 1)?.sum_all()?;
        let gradients = objective.backward()?;
        gradients
            .get(variable.as_tensor())
            .cloned()
            .ok_or_else(|| candle_core::Error::Msg("no gradient reached the input".to_string()))
    }
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
