//! The classifier: a small CNN for Fashion-MNIST in candle (recipe in docs/definitions.md).
//!
//! Input `[n, 1, 28, 28]` pixels scaled to [0, 1]; Conv 3×3 32 "same" + ReLU, MaxPool 2,
//! Conv 3×3 64 "same" + ReLU, MaxPool 2, Flatten, Dense 128 + ReLU, Dense 10 → logits.
//! Weights are stored as safetensors under the names `conv1.weight`, `conv1.bias`, `conv2.*`,
//! `dense1.*`, `dense2.*` (candle-nn's layout: conv kernels `[out, in, 3, 3]`, dense `[out, in]`).

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{Conv2d, Conv2dConfig, Linear, VarBuilder};

use crate::data::{IMAGE_PIXELS, IMAGE_SIDE};

/// Number of classes the network predicts.
pub const NUM_CLASSES: usize = 10;
/// Channels after the first and second convolution, and width of the hidden dense layer.
const CONV1_CHANNELS: usize = 32;
const CONV2_CHANNELS: usize = 64;
const HIDDEN_UNITS: usize = 128;
/// Images per forward pass inside [`Classifier::logits`]: the first convolution's output for
/// 256 images is 25 MB, small enough for a browser tab.
pub const INFERENCE_CHUNK: usize = 256;
/// Spatial side after two 2×2 poolings.
const POOLED_SIDE: usize = IMAGE_SIDE / 4;

/// What went wrong building or running the network.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("cannot load the model weights: {0}")]
    Weights(candle_core::Error),
    #[error("inference failed: {0}")]
    Inference(candle_core::Error),
    #[error("{len} pixel bytes is not a whole number of 28x28 images")]
    PartialImage { len: usize },
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
}

impl Module for Cnn {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let x = self.conv1.forward(x)?.relu()?.max_pool2d(2)?;
        let x = self.conv2.forward(&x)?.relu()?.max_pool2d(2)?;
        let x = x.flatten_from(1)?;
        self.dense2.forward(&self.dense1.forward(&x)?.relu()?)
    }
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
    device: Device,
}

impl Classifier {
    /// Loads weights from the bytes of a safetensors file.
    ///
    /// # Errors
    /// [`ModelError::Weights`] when the bytes are not safetensors or lack a layer.
    pub fn from_safetensors(bytes: Vec<u8>) -> Result<Self, ModelError> {
        let device = Device::Cpu;
        let vb = VarBuilder::from_buffered_safetensors(bytes, DType::F32, &device)
            .map_err(ModelError::Weights)?;
        let cnn = Cnn::new(vb).map_err(ModelError::Weights)?;
        Ok(Self { cnn, device })
    }

    /// Logits `[n, 10]` row-major for `n` images given as `[n, 28, 28]` unsigned bytes.
    ///
    /// # Errors
    /// [`ModelError::PartialImage`] for a ragged input, [`ModelError::Inference`] otherwise.
    /// Runs in chunks of [`INFERENCE_CHUNK`] images so memory stays bounded for any `n`.
    pub fn logits(&self, pixels: &[u8]) -> Result<Vec<f32>, ModelError> {
        if !pixels.len().is_multiple_of(IMAGE_PIXELS) {
            return Err(ModelError::PartialImage { len: pixels.len() });
        }
        let mut logits = Vec::with_capacity(pixels.len() / IMAGE_PIXELS * NUM_CLASSES);
        for chunk in pixels.chunks(INFERENCE_CHUNK * IMAGE_PIXELS) {
            let input = images_to_tensor(chunk, &self.device)?;
            let chunk_logits = self
                .cnn
                .forward(&input)
                .and_then(|logits| logits.flatten_all()?.to_vec1::<f32>())
                .map_err(ModelError::Inference)?;
            logits.extend_from_slice(&chunk_logits);
        }
        Ok(logits)
    }
}
