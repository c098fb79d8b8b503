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
//! have, and does not clip `x̃` to `[0, 1]`, nor does this code. The gradient is taken by hand
//! through the network in `f32` (module `odin`; the tests compare it with candle's reverse-mode
//! autograd and with central differences); the score is computed from the logits in `f64`.
//! Defaults are the paper's, [`ODIN_TEMPERATURE`](crate::ood::ODIN_TEMPERATURE) and
//! [`ODIN_EPSILON`](crate::ood::ODIN_EPSILON).
//!
//! # Inference
//! [`Classifier::logits`] runs the same network through the `inference` module's forward pass
//! (NHWC, each convolution through Winograd's F(2×2, 3×3) for a whole block of images; bias,
//! ReLU and pooling fused), equal to [`Cnn`]'s forward up to rounding and faster.

mod inference;
mod odin;
pub mod shipped;

use std::sync::OnceLock;

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{Conv2d, Conv2dConfig, Linear, VarBuilder};

use crate::data::{IMAGE_PIXELS, IMAGE_SIDE, NUM_CLASSES};
use inference::InferenceNetwork;
use odin::OdinNetwork;

/// Channels after the first and second convolution.
const CONV1_CHANNELS: usize = 32;
const CONV2_CHANNELS: usize = 64;
/// Width of the hidden dense layer: the penultimate features that
/// [`Classifier::features_and_logits`] returns and the detectors of `ood_features` read.
pub const HIDDEN_UNITS: usize = 128;
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

    /// The first dense layer's weight `[128, 64·7·7]` with its columns in NHWC order
    /// `(h, w, c)` rather than candle's NCHW `(c, h, w)`: the order in which the NHWC passes
    /// (modules `inference` and `odin`) leave the pooled features, so no image's features are
    /// transposed.
    fn dense1_weight_nhwc(&self) -> candle_core::Result<Tensor> {
        let features = CONV2_CHANNELS * POOLED_SIDE * POOLED_SIDE;
        self.dense1
            .weight()
            .reshape(((), CONV2_CHANNELS, POOLED_SIDE, POOLED_SIDE))?
            .permute((0, 2, 3, 1))?
            .reshape(((), features))
    }
}

impl Module for Cnn {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let x = self.conv1.forward(x)?.relu()?.max_pool2d(2)?;
        let x = self.conv2.forward(&x)?.relu()?.max_pool2d(2)?;
        let x = x.flatten_from(1)?;
        self.dense2.forward(&self.dense1.forward(&x)?.relu()?)
    }
}

/// A 3×3 convolution's kernel `[out, in, 3, 3]` permuted to `[(dy, dx, in), out]` row-major (an
/// im2col product's right-hand side, and what Winograd's transform reads), with `in` and `out`.
fn kernel_by_tap(conv: &Conv2d) -> candle_core::Result<(Vec<f32>, usize, usize)> {
    let (outputs, channels, _, _) = conv.weight().dims4()?;
    let kernel = conv
        .weight()
        .permute((2, 3, 1, 0))?
        .flatten_all()?
        .to_vec1::<f32>()?;
    Ok((kernel, channels, outputs))
}

/// A layer's bias, `outputs` zeros where it has none.
fn bias_or_zeros(bias: Option<&Tensor>, outputs: usize) -> candle_core::Result<Vec<f32>> {
    bias.map_or_else(|| Ok(vec![0.0; outputs]), Tensor::to_vec1)
}

/// `matrix` `[rows, columns]` row-major, transposed to `[columns, padded]` with zeros past its
/// `rows` columns: a product's right-hand side, whose columns fill whole tiles of the kernels'
/// product.
fn transposed(matrix: &[f32], columns: usize, padded: usize) -> Vec<f32> {
    let mut transposed = vec![0.0; columns * padded];
    for (row, values) in matrix.chunks_exact(columns).enumerate() {
        for (column, &value) in values.iter().enumerate() {
            transposed[column * padded + row] = value;
        }
    }
    transposed
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
    /// ODIN's layout of the weights, made at the first ODIN request: most networks loaded (the
    /// inference worker's, the CLI's) never need it.
    odin: OnceLock<OdinNetwork>,
}

impl Classifier {
    /// Loads weights from the bytes of a safetensors file.
    ///
    /// # Errors
    /// [`ModelError::Weights`] when the bytes are not safetensors or lack a layer.
    pub fn from_safetensors(bytes: Vec<u8>) -> Result<Self, ModelError> {
        let vb = shipped::var_builder(&bytes, DType::F32)?;
        let cnn = Cnn::new(vb).map_err(ModelError::Weights)?;
        let inference = InferenceNetwork::new(&cnn).map_err(ModelError::Weights)?;
        Ok(Self {
            cnn,
            inference,
            odin: OnceLock::new(),
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
        let cnn =
            Cnn::new(VarBuilder::zeros(DType::F32, &Device::Cpu)).map_err(ModelError::Weights)?;
        let inference = InferenceNetwork::new(&cnn).map_err(ModelError::Weights)?;
        Ok(Self {
            cnn,
            inference,
            odin: OnceLock::new(),
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
    /// `temperature`.
    ///
    /// # Errors
    /// [`ModelError::InvalidTemperature`] unless `temperature` is positive and finite,
    /// [`ModelError::InvalidPerturbation`] unless `epsilon` is finite and `>= 0`,
    /// [`ModelError::PartialImage`] for a ragged input, [`ModelError::Weights`] where a weight
    /// does not have the network's shape (a loaded network's do).
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
        let network = match self.odin.get() {
            Some(network) => network,
            None => {
                let network = OdinNetwork::new(&self.cnn).map_err(ModelError::Weights)?;
                self.odin.get_or_init(|| network)
            }
        };
        Ok(network.scores(&self.inference, pixels, temperature, epsilon))
    }
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
