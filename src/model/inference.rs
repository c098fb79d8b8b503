//! The inference-only forward pass: the same network as [`Cnn`]'s `forward`, with each
//! convolution layer computed in one pass for a whole block of images.
//!
//! candle-nn's `Conv2d` runs an im2col per tile of each image, in NCHW, and ReLU and max-pool
//! each make one more pass over the convolution's output. Here activations stay NHWC (channels
//! last) from the input to the last pooling, images go through in blocks of
//! [`IMAGES_PER_BLOCK`] (which bounds memory), and each convolution layer, with its bias, ReLU
//! and 2×2 max-pooling, is one call into the `calibra-kernels` crate (`kernels/`): Winograd's
//! F(2×2, 3×3), whose 2×2 output blocks are the pooling's windows. That crate says how, and why
//! it is a crate of its own. Each convolution's kernel `[out, in, 3, 3]` is permuted to
//! `[(dy, dx, c), out]` and transformed for it once, at load time.
//!
//! The dense layers are products of the same crate ([`DenseWeights`]), not candle-nn's
//! `Linear`: `gemm` sums in an order that depends on the CPU's vector width and on where a row
//! falls in its batch, so the page (WebAssembly, batches of its own sizes) and the CLI gave
//! features and logits that differed in their last bits. The crate's loops sum each output in
//! one fixed order, so an image gets the same features and logits to the bit natively and in
//! the browser, in any batch. The first layer expects the flattened features in NCHW order
//! `(c, h, w)`; rather than transposing every image's features, its weight's columns are
//! permuted once at load time to NHWC order `(h, w, c)`, so the pooled output is its input as it
//! lies.
//!
//! The result equals [`Cnn`]'s forward up to rounding: Winograd's transforms and the products
//! sum in another order (the tests bound the difference at 1e-4 on the logits). Inference
//! only: training needs candle's autograd and uses [`Cnn`]; ODIN's gradient is module `odin`'s.

use candle_core::Tensor;
use candle_nn::{Conv2d, Linear};

use calibra_kernels::{
    convolve_max_pool_bias_relu, matrix_product, padded_input, padded_len, padded_values,
    TiledColumns, WinogradKernel, TILE_COLUMNS,
};

use super::{
    bias_or_zeros, kernel_by_tap, transposed, Cnn, CONV1_CHANNELS, CONV2_CHANNELS, HIDDEN_UNITS,
    POOLED_SIDE,
};
use crate::data::NUM_CLASSES;
use crate::data::{IMAGE_PIXELS, IMAGE_SIDE};

/// Images per pass through the convolution layers. The largest buffer, the first pooling's
/// padded output, holds 16 × 16 × 32 values per image: 2.1 MB for 64 images.
pub(super) const IMAGES_PER_BLOCK: usize = 64;
/// Side of the second convolution's input and output (after the first pooling).
const CONV2_SIDE: usize = IMAGE_SIDE / 2;

/// The network's weights laid out for the NHWC forward pass (module documentation).
#[derive(Debug)]
pub(super) struct InferenceNetwork {
    conv1: ConvolutionWeights,
    conv2: ConvolutionWeights,
    dense1: DenseWeights,
    dense2: DenseWeights,
}

/// One 3×3 convolution's kernel, transformed for Winograd's algorithm, and its bias per output
/// channel.
#[derive(Debug)]
struct ConvolutionWeights {
    kernel: WinogradKernel,
    bias: Vec<f32>,
}

impl ConvolutionWeights {
    /// Permutes `conv`'s kernel `[out, in, 3, 3]` to `[(dy, dx, in), out]`.
    fn new(conv: &Conv2d) -> candle_core::Result<Self> {
        let (kernel, channels, out) = kernel_by_tap(conv)?;
        let kernel = WinogradKernel::new(&kernel, channels, out);
        let bias = bias_or_zeros(conv.bias(), out)?;
        Ok(Self { kernel, bias })
    }

    /// The convolution of `padded` images of `side` pixels, then bias, ReLU and 2×2 max-pooling,
    /// into `pooled` inside a border of `pad` zeros.
    fn apply(&self, padded: &[f32], side: usize, pooled: &mut [f32], pad: usize) {
        convolve_max_pool_bias_relu(padded, side, &self.kernel, &self.bias, pooled, pad);
    }
}

/// A dense layer `y = x·Wᵀ + b`: its weight `W` `[outputs, inputs]` transposed to
/// `[inputs, outputs]` and tiled for the kernels' product once, at load time. The product's
/// columns are padded with zeros to a whole number of tiles (the last layer has 10 outputs);
/// a zero column changes no other column's sums.
#[derive(Debug)]
struct DenseWeights {
    weight: TiledColumns,
    /// Columns of the product, `outputs` rounded up to a multiple of [`TILE_COLUMNS`].
    columns: usize,
    bias: Vec<f32>,
}

impl DenseWeights {
    /// Lays out `linear`'s weight (or `weight`, the same shape, where the caller permuted its
    /// columns) for the product.
    fn new(weight: &Tensor, linear: &Linear) -> candle_core::Result<Self> {
        let (outputs, inputs) = weight.dims2()?;
        let columns = outputs.next_multiple_of(TILE_COLUMNS);
        let transposed = transposed(&weight.flatten_all()?.to_vec1::<f32>()?, inputs, columns);
        Ok(Self {
            weight: TiledColumns::new(&transposed, inputs, columns),
            columns,
            bias: bias_or_zeros(linear.bias(), outputs)?,
        })
    }

    /// `x·Wᵀ + b` for the rows of `x` `[n, inputs]`, as `[n, outputs]` row-major, each value
    /// passed through `activation`.
    fn apply(&self, x: &[f32], activation: impl Fn(f32) -> f32) -> Vec<f32> {
        let product = matrix_product(x, &self.weight);
        let rows = product.len() / self.columns;
        let mut out = Vec::with_capacity(rows * self.bias.len());
        for row in product.chunks_exact(self.columns) {
            out.extend(row.iter().zip(&self.bias).map(|(s, b)| activation(s + b)));
        }
        out
    }
}

impl InferenceNetwork {
    /// Lays out the weights of `cnn` for the NHWC forward pass.
    ///
    /// # Errors
    /// A candle error when a weight does not have the network's shape.
    pub(super) fn new(cnn: &Cnn) -> candle_core::Result<Self> {
        Ok(Self {
            conv1: ConvolutionWeights::new(&cnn.conv1)?,
            conv2: ConvolutionWeights::new(&cnn.conv2)?,
            dense1: DenseWeights::new(&cnn.dense1_weight_nhwc()?, &cnn.dense1)?,
            dense2: DenseWeights::new(cnn.dense2.weight(), &cnn.dense2)?,
        })
    }

    /// Logits `[n, 10]` row-major of `n` images given as `[n, 28, 28]` unsigned bytes (a whole
    /// number of images; the caller checks), [`IMAGES_PER_BLOCK`] images at a time.
    pub(super) fn logits(&self, pixels: &[u8]) -> Vec<f32> {
        let mut logits = Vec::with_capacity(pixels.len() / IMAGE_PIXELS * NUM_CLASSES);
        self.for_each_block(pixels, |_, block_logits| logits.extend(block_logits));
        logits
    }

    /// The penultimate features `[n, 128]` (the first dense layer after its ReLU) and the
    /// logits `[n, 10]`, both row-major, from one pass: the logits are those of
    /// [`Self::logits`], to the bit.
    pub(super) fn features_and_logits(&self, pixels: &[u8]) -> (Vec<f32>, Vec<f32>) {
        let n = pixels.len() / IMAGE_PIXELS;
        let mut features = Vec::with_capacity(n * HIDDEN_UNITS);
        let mut logits = Vec::with_capacity(n * NUM_CLASSES);
        self.for_each_block(pixels, |hidden, block_logits| {
            logits.extend(block_logits);
            features.extend_from_slice(hidden);
        });
        (features, logits)
    }

    /// Logits `[n, 10]` row-major of `n` images `[n, 28, 28]` already on the network's input
    /// scale (ODIN's moved inputs), [`IMAGES_PER_BLOCK`] images at a time: for pixels scaled to
    /// [0, 1], those of [`Self::logits`] to the bit.
    pub(super) fn logits_of_values(&self, values: &[f32]) -> Vec<f32> {
        let mut logits = Vec::with_capacity(values.len() / IMAGE_PIXELS * NUM_CLASSES);
        for block in values.chunks(IMAGES_PER_BLOCK * IMAGE_PIXELS) {
            let hidden = self.block_hidden(padded_values(block, IMAGE_SIDE));
            logits.extend(self.dense2.apply(&hidden, |z| z));
        }
        logits
    }

    /// Runs the network on [`IMAGES_PER_BLOCK`] images at a time and hands `each` a block's
    /// hidden layer (after its ReLU, `[block, 128]` row-major) and its logits, row-major.
    fn for_each_block(&self, pixels: &[u8], mut each: impl FnMut(&[f32], Vec<f32>)) {
        for block in pixels.chunks(IMAGES_PER_BLOCK * IMAGE_PIXELS) {
            let hidden = self.block_hidden(padded_input(block, IMAGE_SIDE));
            let logits = self.dense2.apply(&hidden, |z| z);
            each(&hidden, logits);
        }
    }

    /// The first dense layer's output after its ReLU, `[n, 128]` row-major, for one block of
    /// padded images (`padded_input`'s layout): one call per convolution layer, then the dense
    /// layer.
    fn block_hidden(&self, input: Vec<f32>) -> Vec<f32> {
        let n = input.len() / padded_len(IMAGE_SIDE, 1);
        let mut pooled1 = vec![0.0; n * padded_len(CONV2_SIDE, CONV1_CHANNELS)];
        self.conv1.apply(&input, IMAGE_SIDE, &mut pooled1, 1);
        drop(input);
        let features_len = POOLED_SIDE * POOLED_SIDE * CONV2_CHANNELS;
        let mut pooled2 = vec![0.0; n * features_len];
        self.conv2.apply(&pooled1, CONV2_SIDE, &mut pooled2, 0);
        drop(pooled1);
        self.dense1.apply(&pooled2, |z| z.max(0.0))
    }
}

#[cfg(test)]
#[path = "inference_tests.rs"]
mod tests;
