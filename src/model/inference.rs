//! The inference-only forward pass: the same network as [`Cnn`]'s `forward`, laid out so that
//! each convolution is one matrix product for a whole block of images.
//!
//! candle-nn's `Conv2d` runs an im2col per tile of each image, in NCHW, and ReLU and max-pool
//! each make one more pass over the convolution's output. Here activations stay NHWC (channels
//! last) from the input to the last pooling, images go through in blocks of
//! [`IMAGES_PER_PRODUCT`] (which bounds memory), and each convolution layer is:
//!
//! 1. **im2col for the whole block.** The previous layer's output is kept zero-padded by one
//!    pixel, `[n, side + 2, side + 2, channels]`. In NHWC the three horizontal taps of a kernel
//!    row are adjacent in memory, so the row of the patch matrix for output pixel `(y, x)` is
//!    three contiguous copies of `3·channels` values, from rows `y`, `y + 1` and `y + 2` of the
//!    padded input: `patches[(i, y, x), (dy, dx, c)] = padded[i, y + dy, x + dx, c]`.
//! 2. **One matrix product** per convolution, `matrix_product` (plain loops that LLVM
//!    vectorises; why not candle's `Tensor::matmul` is said there):
//!    `[n·side², 9·in] × [9·in, out] = [n·side², out]`, which is the NHWC output itself. The
//!    kernel `[out, in, 3, 3]` is permuted to `[(dy, dx, c), out]` and tiled once, at load time.
//! 3. **Bias, ReLU and 2×2 max-pooling in one pass** over the product. The bias is the same for
//!    the four pixels of a window and rounding is monotonic, so
//!    `max_j relu(z_j + b) = relu(max_j z_j + b)` holds exactly in floating point: the pass
//!    takes the window's maximum, adds the bias and clamps at zero, reading each product value
//!    once and writing a quarter as many (into the next layer's padded input, for the first).
//!    Its maximum is written as a comparison, which LLVM vectorises to WebAssembly's
//!    `f32x4.pmax` under `+simd128` (`f32::max` stays scalar there); in Node 20 this alone
//!    took the pass from 664 to 1,073 images/s on the test set, so no hand-written
//!    `core::arch::wasm32` code is needed.
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

use super::matrix_product::{matrix_product, TiledColumns};
use super::{Cnn, CONV1_CHANNELS, CONV2_CHANNELS, POOLED_SIDE};
use crate::data::NUM_CLASSES;
use crate::data::{IMAGE_PIXELS, IMAGE_SIDE};

/// Images per im2col and matrix product. The largest buffer, the second convolution's patch
/// matrix, holds 196 × 288 values per image: 14.5 MB for 64 images (58 MB for 256, which in
/// WebAssembly ran no faster: 1,472 against 1,483 images/s on the test set in Node 20).
pub(super) const IMAGES_PER_PRODUCT: usize = 64;
/// Side of the second convolution's input and output (after the first pooling).
const CONV2_SIDE: usize = IMAGE_SIDE / 2;
/// Taps of a 3×3 kernel.
const KERNEL_TAPS: usize = 9;

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
        let input = padded_input(pixels);
        let conv1 = convolve(&input, n, IMAGE_SIDE, &self.conv1);
        let mut pooled1 = vec![0.0; n * padded_len(CONV2_SIDE, CONV1_CHANNELS)];
        max_pool_bias_relu(&conv1, IMAGE_SIDE, &self.conv1.bias, &mut pooled1, 1);
        drop(conv1);
        let conv2 = convolve(&pooled1, n, CONV2_SIDE, &self.conv2);
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

/// Length of one image's activations `[side + 2, side + 2, channels]` with a one-pixel border.
fn padded_len(side: usize, channels: usize) -> usize {
    (side + 2) * (side + 2) * channels
}

/// Pixels `[n, 28, 28]` as the network's input in [0, 1], zero-padded to `[n, 30, 30]`.
fn padded_input(pixels: &[u8]) -> Vec<f32> {
    let padded_side = IMAGE_SIDE + 2;
    let n = pixels.len() / IMAGE_PIXELS;
    let mut padded = vec![0.0; n * padded_len(IMAGE_SIDE, 1)];
    for (image, target) in pixels
        .chunks_exact(IMAGE_PIXELS)
        .zip(padded.chunks_exact_mut(padded_len(IMAGE_SIDE, 1)))
    {
        for (row, target_row) in image
            .chunks_exact(IMAGE_SIDE)
            .zip(target.chunks_exact_mut(padded_side).skip(1))
        {
            for (value, &pixel) in target_row[1..=IMAGE_SIDE].iter_mut().zip(row) {
                *value = f32::from(pixel) / 255.0;
            }
        }
    }
    padded
}

/// The 3×3 "same" convolution of `n` zero-padded NHWC images `[n, side + 2, side + 2, in]`,
/// without its bias: `[n·side², out]`, NHWC. One im2col for all images, then one product.
fn convolve(padded: &[f32], n: usize, side: usize, weights: &ConvolutionWeights) -> Vec<f32> {
    let taps_len = weights.kernel.inner();
    let channels = taps_len / KERNEL_TAPS;
    let padded_row = (side + 2) * channels;
    let kernel_row = 3 * channels;
    let mut patches = Vec::with_capacity(n * side * side * taps_len);
    for image in padded.chunks_exact(padded_len(side, channels)) {
        for y in 0..side {
            for x in 0..side {
                for dy in 0..3 {
                    let start = (y + dy) * padded_row + x * channels;
                    patches.extend_from_slice(&image[start..start + kernel_row]);
                }
            }
        }
    }
    matrix_product(&patches, &weights.kernel)
}

/// `relu(max over each 2×2 window + bias)` of NHWC convolution outputs
/// `[n, side, side, channels]` (`channels = bias.len()`), written into `pooled`,
/// `[n, side/2 + 2·pad, side/2 + 2·pad, channels]`, inside a border of `pad` pixels that is
/// left as it is (zero, for the next convolution's padding).
fn max_pool_bias_relu(conv: &[f32], side: usize, bias: &[f32], pooled: &mut [f32], pad: usize) {
    let channels = bias.len();
    let row = side * channels;
    let half = side / 2;
    let pooled_side = half + 2 * pad;
    for (image, target) in conv
        .chunks_exact(side * row)
        .zip(pooled.chunks_exact_mut(pooled_side * pooled_side * channels))
    {
        for (y, rows) in image.chunks_exact(2 * row).enumerate() {
            let (top, bottom) = rows.split_at(row);
            let start = ((y + pad) * pooled_side + pad) * channels;
            let target_row = &mut target[start..start + half * channels];
            for ((cell, top), bottom) in target_row
                .chunks_exact_mut(channels)
                .zip(top.chunks_exact(2 * channels))
                .zip(bottom.chunks_exact(2 * channels))
            {
                let (top_left, top_right) = top.split_at(channels);
                let (bottom_left, bottom_right) = bottom.split_at(channels);
                for (c, value) in cell.iter_mut().enumerate() {
                    let window = larger(
                        larger(top_left[c], top_right[c]),
                        larger(bottom_left[c], bottom_right[c]),
                    );
                    *value = larger(window + bias[c], 0.0);
                }
            }
        }
    }
}

/// The larger of `a` and `b` (`a` when they tie), written as a comparison: LLVM turns the loop
/// above into WebAssembly's `f32x4.pmax` (natively `maxps`), four channels per instruction.
/// `f32::max`'s rule for NaN (return the other operand) has no such instruction, and the loop
/// stays scalar in WebAssembly. The inputs come from finite pixels and weights, so they never
/// hold NaN and the two agree.
#[inline(always)]
fn larger(a: f32, b: f32) -> f32 {
    if b > a {
        b
    } else {
        a
    }
}

#[cfg(test)]
#[path = "inference_tests.rs"]
mod tests;
