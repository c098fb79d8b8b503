//! The inference-only forward pass: the same network as [`Cnn`]'s `forward`, laid out so that
//! each convolution is one matrix product for a whole block of images.
//!
//! candle-nn's `Conv2d` runs an im2col per tile of each image, in NCHW, and ReLU and max-pool
//! each make one more pass over the convolution's output. Here activations stay NHWC (channels
//! last) from the input to the last pooling, images go through in blocks of
//! [`IMAGES_PER_PRODUCT`] (which bounds memory), and each convolution layer is one im2col for
//! the whole block, one matrix product, and bias, ReLU and 2×2 max-pooling in one pass: the
//! `calibra-kernels` crate (`kernels/`), which says how and why it is a crate of its own. Each
//! convolution's kernel `[out, in, 3, 3]` is permuted to `[(dy, dx, c), out]` and tiled for the
//! product once, at load time.
//!
//! The dense layers are candle-nn's `Linear`. The first one expects the flattened features in
//! NCHW order `(c, h, w)`; rather than transposing every image's features, its weight's
//! columns are permuted once at load time to NHWC order `(h, w, c)`, so the pooled output is
//! its input as it lies.
//!
//! The result equals [`Cnn`]'s forward up to the order of the sums inside the products (the
//! tests bound the difference at 1e-4 on the logits). Inference only: training and ODIN's
//! gradient need candle's autograd and use [`Cnn`].

use candle_core::{Device, Module, Tensor};
use candle_nn::{Conv2d, Linear};

use calibra_kernels::{
    convolve, max_pool_bias_relu, padded_input, padded_len, TiledColumns, KERNEL_TAPS,
};

use super::{Cnn, CONV1_CHANNELS, CONV2_CHANNELS, POOLED_SIDE};
use crate::data::NUM_CLASSES;
use crate::data::{IMAGE_PIXELS, IMAGE_SIDE};

/// Images per im2col and matrix product. The largest buffer, the second convolution's patch
/// matrix, holds 196 × 288 values per image: 14.5 MB for 64 images (58 MB for 256, which in
/// WebAssembly ran no faster: 1,472 against 1,483 images/s on the test set in Node 20).
pub(super) const IMAGES_PER_PRODUCT: usize = 64;
/// Side of the second convolution's input and output (after the first pooling).
const CONV2_SIDE: usize = IMAGE_SIDE / 2;

/// The network's weights laid out for the NHWC forward pass (module documentation).
#[derive(Debug)]
pub(super) struct InferenceNetwork {
    conv1: ConvolutionWeights,
    conv2: ConvolutionWeights,
    dense1: Linear,
    dense2: Linear,
}

/// One 3×3 convolution's kernel as the right-hand side of the im2col product,
/// `[(dy, dx, c), out]` in the product's tiled layout, and its bias per output channel.
#[derive(Debug)]
struct ConvolutionWeights {
    kernel: TiledColumns,
    bias: Vec<f32>,
}

impl ConvolutionWeights {
    /// Permutes `conv`'s kernel `[out, in, 3, 3]` to `[(dy, dx, in), out]`.
    fn new(conv: &Conv2d) -> candle_core::Result<Self> {
        let (out, channels, _, _) = conv.weight().dims4()?;
        let kernel = conv
            .weight()
            .permute((2, 3, 1, 0))?
            .flatten_all()?
            .to_vec1::<f32>()?;
        let kernel = TiledColumns::new(&kernel, KERNEL_TAPS * channels, out);
        let bias = match conv.bias() {
            Some(bias) => bias.to_vec1()?,
            None => vec![0.0; out],
        };
        Ok(Self { kernel, bias })
    }
}

impl InferenceNetwork {
    /// Lays out the weights of `cnn` for the NHWC forward pass.
    ///
    /// # Errors
    /// A candle error when a weight does not have the network's shape.
    pub(super) fn new(cnn: &Cnn) -> candle_core::Result<Self> {
        let features = CONV2_CHANNELS * POOLED_SIDE * POOLED_SIDE;
        let dense1_weight = cnn
            .dense1
            .weight()
            .reshape(((), CONV2_CHANNELS, POOLED_SIDE, POOLED_SIDE))?
            .permute((0, 2, 3, 1))?
            .reshape(((), features))?
            .contiguous()?;
        Ok(Self {
            conv1: ConvolutionWeights::new(&cnn.conv1)?,
            conv2: ConvolutionWeights::new(&cnn.conv2)?,
            dense1: Linear::new(dense1_weight, cnn.dense1.bias().cloned()),
            dense2: cnn.dense2.clone(),
        })
    }

    /// Logits `[n, 10]` row-major of `n` images given as `[n, 28, 28]` unsigned bytes (a whole
    /// number of images; the caller checks), [`IMAGES_PER_PRODUCT`] images at a time.
    ///
    /// # Errors
    /// A candle error from a matrix product.
    pub(super) fn logits(&self, pixels: &[u8], device: &Device) -> candle_core::Result<Vec<f32>> {
        let mut logits = Vec::with_capacity(pixels.len() / IMAGE_PIXELS * NUM_CLASSES);
        for block in pixels.chunks(IMAGES_PER_PRODUCT * IMAGE_PIXELS) {
            logits.extend(self.block_logits(block, device)?);
        }
        Ok(logits)
    }

    /// Logits of one block of images: one im2col and one product per convolution.
    fn block_logits(&self, pixels: &[u8], device: &Device) -> candle_core::Result<Vec<f32>> {
        let n = pixels.len() / IMAGE_PIXELS;
        let input = padded_input(pixels, IMAGE_SIDE);
        let conv1 = convolve(&input, IMAGE_SIDE, &self.conv1.kernel);
        let mut pooled1 = vec![0.0; n * padded_len(CONV2_SIDE, CONV1_CHANNELS)];
        max_pool_bias_relu(&conv1, IMAGE_SIDE, &self.conv1.bias, &mut pooled1, 1);
        drop(conv1);
        let conv2 = convolve(&pooled1, CONV2_SIDE, &self.conv2.kernel);
        drop(pooled1);
        let features_len = POOLED_SIDE * POOLED_SIDE * CONV2_CHANNELS;
        let mut pooled2 = vec![0.0; n * features_len];
        max_pool_bias_relu(&conv2, CONV2_SIDE, &self.conv2.bias, &mut pooled2, 0);
        drop(conv2);
        let features = Tensor::from_vec(pooled2, (n, features_len), device)?;
        let hidden = self.dense1.forward(&features)?.relu()?;
        self.dense2.forward(&hidden)?.flatten_all()?.to_vec1()
    }
}

#[cfg(test)]
#[path = "inference_tests.rs"]
mod tests;
