//! ODIN's pass through the network (the score is defined in the `model` module's
//! documentation): a forward pass that keeps what the backward pass needs and the gradient of
//! `log S_ŷ(x; T)` with respect to the input, on the `calibra-kernels` crate's matrix product;
//! the moved input's logits then come from the inference path (module `inference`).
//!
//! candle's reverse-mode autograd gives the same gradient (the tests compare them), but its
//! convolutions' backward pass also computes every kernel's gradient, which ODIN never reads,
//! and its max-pooling had to be rebuilt from a reshape, an arg-max and a gather for the
//! gradient to reach one maximum per window (docs/benchmarks.md, "ODIN's gradient by hand",
//! has what it cost). Here each 3×3 "same" convolution is a product of its input's columns
//! (im2col, rows `(image, y, x)`, columns `(dy, dx, channel)`) with its kernel
//! `[(dy, dx, in), out]`, and its input gradient the product of the output's gradient with the
//! kernel's transpose, scattered back to the positions each column came from (col2im).
//! Activations are NHWC, as in module `inference`.
//!
//! Where the gradient of a kink goes: a 2×2 max-pooling sends its output's gradient to the first
//! maximum of its window in row-major order, as PyTorch's does, and a ReLU passes the gradient
//! where its input is positive. The logits that choose `ŷ` here equal the inference path's up to
//! rounding (another order of sums).

use candle_core::Tensor;
use candle_nn::{Conv2d, Linear};

use calibra_kernels::{matrix_product, TiledColumns, TILE_COLUMNS};

use super::inference::InferenceNetwork;
use super::{bias_or_zeros, kernel_by_tap, transposed, Cnn};
use crate::calibration::{predicted_class, top_probability};
use crate::data::{IMAGE_PIXELS, IMAGE_SIDE, NUM_CLASSES};

/// Images per pass. The largest buffers are the second convolution's columns and their
/// gradient, 226 KB an image each: 7 MB for 32 images.
const IMAGES_PER_BLOCK: usize = 32;
/// Positions of a 3×3 kernel.
const TAPS: usize = 9;
/// Side of the second convolution's input and output (after the first pooling).
const CONV2_SIDE: usize = IMAGE_SIDE / 2;

/// The network's weights laid out for ODIN's pass (module documentation).
#[derive(Debug)]
pub(super) struct OdinNetwork {
    conv1: Convolution,
    conv2: Convolution,
    dense1: Dense,
    dense2: Dense,
}

/// What a forward pass keeps for the backward pass: each layer's pre-activations and, for each
/// pooled value, which of its window's four values it took.
struct Forward {
    conv1: Vec<f32>,
    pool1: Vec<u8>,
    conv2: Vec<f32>,
    pool2: Vec<u8>,
    dense1: Vec<f32>,
    logits: Vec<f32>,
}

impl OdinNetwork {
    /// Lays out the weights of `cnn` for ODIN's pass.
    ///
    /// # Errors
    /// A candle error when a weight does not have the network's shape.
    pub(super) fn new(cnn: &Cnn) -> candle_core::Result<Self> {
        Ok(Self {
            conv1: Convolution::new(&cnn.conv1)?,
            conv2: Convolution::new(&cnn.conv2)?,
            dense1: Dense::new(&cnn.dense1_weight_nhwc()?, &cnn.dense1)?,
            dense2: Dense::new(cnn.dense2.weight(), &cnn.dense2)?,
        })
    }

    /// ODIN scores of `n` images given as `[n, 28, 28]` unsigned bytes (a whole number of
    /// images; the caller checks the parameters): the largest softmax probability at
    /// `temperature` of each image moved by `epsilon` along the sign of its gradient, from the
    /// logits `inference` gives the moved image.
    pub(super) fn scores(
        &self,
        inference: &InferenceNetwork,
        pixels: &[u8],
        temperature: f64,
        epsilon: f64,
    ) -> Vec<f64> {
        let step = epsilon as f32;
        let mut scores = Vec::with_capacity(pixels.len() / IMAGE_PIXELS);
        for block in pixels.chunks(IMAGES_PER_BLOCK * IMAGE_PIXELS) {
            let input: Vec<f32> = block.iter().map(|&p| f32::from(p) / 255.0).collect();
            let gradient = self.log_max_softmax_gradient(&input, temperature);
            let moved: Vec<f32> = input
                .iter()
                .zip(&gradient)
                .map(|(&x, &g)| x + sign(g) * step)
                .collect();
            let logits = inference.logits_of_values(&moved);
            scores.extend(
                logits
                    .chunks_exact(NUM_CLASSES)
                    .map(|row| top_probability(row, temperature)),
            );
        }
        scores
    }

    /// `∇ₓ log S_ŷ(x; T)` of each image of `input` (`[n, 28, 28]` in `f32`), same layout: the
    /// gradient of `log softmax(f(x)/T)_ŷ` with `ŷ` the arg-max of the image's logits.
    pub(super) fn log_max_softmax_gradient(&self, input: &[f32], temperature: f64) -> Vec<f32> {
        let forward = self.forward(input);
        // ∂ log softmax(z/T)_ŷ / ∂z_k = (1[k = ŷ] − softmax(z/T)_k) / T.
        let mut gradient = Vec::with_capacity(forward.logits.len());
        for row in forward.logits.chunks_exact(NUM_CLASSES) {
            let predicted = predicted_class(row);
            let largest = f64::from(row[predicted]);
            let weights: Vec<f64> = row
                .iter()
                .map(|&z| ((f64::from(z) - largest) / temperature).exp())
                .collect();
            let sum: f64 = weights.iter().sum();
            gradient.extend(weights.iter().enumerate().map(|(k, w)| {
                let indicator = if k == predicted { 1.0 } else { 0.0 };
                ((indicator - w / sum) / temperature) as f32
            }));
        }
        let gradient = self.dense2.input_gradient(&gradient);
        let gradient = relu_gradient(gradient, &forward.dense1);
        let gradient = self.dense1.input_gradient(&gradient);
        let gradient = unpool(
            &gradient,
            &forward.pool2,
            &forward.conv2,
            CONV2_SIDE,
            self.conv2.outputs,
        );
        let gradient = self.conv2.input_gradient(&gradient, CONV2_SIDE);
        let gradient = unpool(
            &gradient,
            &forward.pool1,
            &forward.conv1,
            IMAGE_SIDE,
            self.conv1.outputs,
        );
        self.conv1.input_gradient(&gradient, IMAGE_SIDE)
    }

    /// The forward pass of images `[n, 28, 28]` in `f32`, keeping what the backward pass needs.
    fn forward(&self, input: &[f32]) -> Forward {
        let conv1 = self.conv1.forward(input, IMAGE_SIDE);
        let (pooled1, pool1) = relu_max_pool(&conv1, IMAGE_SIDE, self.conv1.outputs);
        let conv2 = self.conv2.forward(&pooled1, CONV2_SIDE);
        let (pooled2, pool2) = relu_max_pool(&conv2, CONV2_SIDE, self.conv2.outputs);
        let dense1 = self.dense1.forward(&pooled2);
        let hidden: Vec<f32> = dense1.iter().map(|&z| z.max(0.0)).collect();
        let logits = self.dense2.forward(&hidden);
        Forward {
            conv1,
            pool1,
            conv2,
            pool2,
            dense1,
            logits,
        }
    }
}

/// `1`, `−1` or `0` (candle's `sign`: zero stays zero).
fn sign(value: f32) -> f32 {
    f32::from(u8::from(value > 0.0)) - f32::from(u8::from(value < 0.0))
}

/// One 3×3 "same" convolution: its kernel `[(dy, dx, in), out]` for the forward product, its
/// transpose `[out, (dy, dx, in)]` (columns padded with zeros to a whole number of tiles) for
/// the input gradient, and its bias.
#[derive(Debug)]
struct Convolution {
    channels: usize,
    outputs: usize,
    kernel: TiledColumns,
    transposed: TiledColumns,
    transposed_columns: usize,
    bias: Vec<f32>,
}

impl Convolution {
    /// Permutes `conv`'s kernel `[out, in, 3, 3]` to `[(dy, dx, in), out]`, and transposes it.
    fn new(conv: &Conv2d) -> candle_core::Result<Self> {
        let (kernel, channels, outputs) = kernel_by_tap(conv)?;
        let inner = TAPS * channels;
        let transposed_columns = inner.next_multiple_of(TILE_COLUMNS);
        let kernel_transposed = transposed(&kernel, outputs, transposed_columns);
        Ok(Self {
            channels,
            outputs,
            kernel: TiledColumns::new(&kernel, inner, outputs),
            transposed: TiledColumns::new(&kernel_transposed, outputs, transposed_columns),
            transposed_columns,
            bias: bias_or_zeros(conv.bias(), outputs)?,
        })
    }

    /// Pre-activations `[n, side, side, out]` of images `[n, side, side, in]`.
    fn forward(&self, input: &[f32], side: usize) -> Vec<f32> {
        let mut output = matrix_product(&columns(input, side, self.channels), &self.kernel);
        add_bias(&mut output, &self.bias);
        output
    }

    /// The gradient with respect to the input `[n, side, side, in]`, from the gradient with
    /// respect to the pre-activations `[n, side, side, out]`.
    fn input_gradient(&self, gradient: &[f32], side: usize) -> Vec<f32> {
        let columns = matrix_product(gradient, &self.transposed);
        scatter_columns(&columns, self.transposed_columns, side, self.channels)
    }
}

/// A dense layer `y = x·Wᵀ + b`: `Wᵀ` `[inputs, outputs]` (columns padded with zeros to a whole
/// number of tiles) for the forward product, `W` `[outputs, inputs]` for the input gradient.
#[derive(Debug)]
struct Dense {
    transposed: TiledColumns,
    transposed_columns: usize,
    weight: TiledColumns,
    bias: Vec<f32>,
}

impl Dense {
    /// Lays out `linear`'s weight (or `weight`, the same shape, where the caller permuted its
    /// columns) for both products.
    fn new(weight: &Tensor, linear: &Linear) -> candle_core::Result<Self> {
        let (outputs, inputs) = weight.dims2()?;
        let rows = weight.flatten_all()?.to_vec1::<f32>()?;
        let transposed_columns = outputs.next_multiple_of(TILE_COLUMNS);
        let weight_transposed = transposed(&rows, inputs, transposed_columns);
        Ok(Self {
            transposed: TiledColumns::new(&weight_transposed, inputs, transposed_columns),
            transposed_columns,
            weight: TiledColumns::new(&rows, outputs, inputs),
            bias: bias_or_zeros(linear.bias(), outputs)?,
        })
    }

    /// `x·Wᵀ + b` for the rows of `x` `[n, inputs]`, as `[n, outputs]`.
    fn forward(&self, x: &[f32]) -> Vec<f32> {
        let product = matrix_product(x, &self.transposed);
        product
            .chunks_exact(self.transposed_columns)
            .flat_map(|row| row.iter().zip(&self.bias).map(|(s, b)| s + b))
            .collect()
    }

    /// The gradient with respect to the input `[n, inputs]` from that with respect to the
    /// output `[n, outputs]`: `g·W`.
    fn input_gradient(&self, gradient: &[f32]) -> Vec<f32> {
        matrix_product(gradient, &self.weight)
    }
}

/// Adds `bias` to each row of `values` (rows of `bias.len()`).
fn add_bias(values: &mut [f32], bias: &[f32]) {
    for row in values.chunks_exact_mut(bias.len()) {
        for (value, b) in row.iter_mut().zip(bias) {
            *value += b;
        }
    }
}

/// The gradient through a ReLU: `gradient` where its input `pre` is positive, zero elsewhere.
fn relu_gradient(mut gradient: Vec<f32>, pre: &[f32]) -> Vec<f32> {
    for (g, &z) in gradient.iter_mut().zip(pre) {
        if z <= 0.0 {
            *g = 0.0;
        }
    }
    gradient
}

/// Calls `each(position, tap, at)` for each position `y·side + x` of a `side`×`side` image with
/// `channels` values a pixel and each tap `(dy, dx)` (as `3·dy + dx`) of its 3×3 window that
/// falls inside the image, at the pixel `(y + dy − 1, x + dx − 1)` whose first value is `at`.
fn for_each_tap(side: usize, channels: usize, mut each: impl FnMut(usize, usize, usize)) {
    let inside = |p: usize, d: usize| (p + d).checked_sub(1).filter(|&q| q < side);
    for position in 0..side * side {
        let (y, x) = (position / side, position % side);
        for tap in 0..TAPS {
            if let (Some(yy), Some(xx)) = (inside(y, tap / 3), inside(x, tap % 3)) {
                each(position, tap, (yy * side + xx) * channels);
            }
        }
    }
}

/// The im2col matrix of images `[n, side, side, channels]` for a 3×3 "same" convolution:
/// `[n·side², 9·channels]`, row `(image, y, x)` holding the input at `(y + dy − 1, x + dx − 1)`
/// in columns `(dy, dx, channel)`, zero outside the image.
fn columns(input: &[f32], side: usize, channels: usize) -> Vec<f32> {
    let row_len = TAPS * channels;
    let mut columns = vec![0.0; input.len() / channels * row_len];
    for (image, rows) in input
        .chunks_exact(side * side * channels)
        .zip(columns.chunks_exact_mut(side * side * row_len))
    {
        for_each_tap(side, channels, |position, tap, at| {
            let start = position * row_len + tap * channels;
            rows[start..start + channels].copy_from_slice(&image[at..at + channels]);
        });
    }
    columns
}

/// The adjoint of [`columns`]: adds each column value of `columns` (rows of `stride` values,
/// the first `9·channels` of them used) back to the input position it was read from.
fn scatter_columns(columns: &[f32], stride: usize, side: usize, channels: usize) -> Vec<f32> {
    let image_len = side * side * channels;
    let mut input = vec![0.0; columns.len() / stride * channels];
    for (image, rows) in input
        .chunks_exact_mut(image_len)
        .zip(columns.chunks_exact(side * side * stride))
    {
        for_each_tap(side, channels, |position, tap, at| {
            let start = position * stride + tap * channels;
            for (sum, &value) in image[at..at + channels].iter_mut().zip(&rows[start..]) {
                *sum += value;
            }
        });
    }
    input
}

/// The offsets `(dy, dx)` of a 2×2 window in row-major order.
const WINDOW: [(usize, usize); 4] = [(0, 0), (0, 1), (1, 0), (1, 1)];

/// ReLU then 2×2 max-pooling of pre-activations `[n, side, side, channels]`: the pooled values
/// `[n, side/2, side/2, channels]` and, for each, the offset in [`WINDOW`] of its window's
/// first maximum.
fn relu_max_pool(pre: &[f32], side: usize, channels: usize) -> (Vec<f32>, Vec<u8>) {
    let half = side / 2;
    let pooled_len = pre.len() / 4;
    let mut pooled = Vec::with_capacity(pooled_len);
    let mut first = Vec::with_capacity(pooled_len);
    for image in pre.chunks_exact(side * side * channels) {
        for y in 0..half {
            for x in 0..half {
                for channel in 0..channels {
                    let value = |(dy, dx): (usize, usize)| {
                        image[((2 * y + dy) * side + 2 * x + dx) * channels + channel].max(0.0)
                    };
                    let mut best = (0_u8, value(WINDOW[0]));
                    for (offset, &at) in (1_u8..).zip(&WINDOW[1..]) {
                        let candidate = value(at);
                        if candidate > best.1 {
                            best = (offset, candidate);
                        }
                    }
                    first.push(best.0);
                    pooled.push(best.1);
                }
            }
        }
    }
    (pooled, first)
}

/// The gradient with respect to the pre-activations `pre` `[n, side, side, channels]` of a ReLU
/// then a 2×2 max-pooling, from the gradient with respect to the pooled values: each goes to
/// its window's first maximum (`first`, from [`relu_max_pool`]), where the ReLU passes it.
fn unpool(gradient: &[f32], first: &[u8], pre: &[f32], side: usize, channels: usize) -> Vec<f32> {
    let half = side / 2;
    let image_len = side * side * channels;
    let pooled_len = half * half * channels;
    let mut unpooled = vec![0.0; pre.len()];
    for ((image, pre), (gradient, first)) in unpooled
        .chunks_exact_mut(image_len)
        .zip(pre.chunks_exact(image_len))
        .zip(
            gradient
                .chunks_exact(pooled_len)
                .zip(first.chunks_exact(pooled_len)),
        )
    {
        for (pooled, (&g, &offset)) in gradient.iter().zip(first).enumerate() {
            let (position, channel) = (pooled / channels, pooled % channels);
            let (y, x) = (position / half, position % half);
            let (dy, dx) = WINDOW[usize::from(offset)];
            let at = ((2 * y + dy) * side + 2 * x + dx) * channels + channel;
            if pre[at] > 0.0 {
                image[at] = g;
            }
        }
    }
    unpooled
}
