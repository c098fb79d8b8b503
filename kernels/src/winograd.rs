//! A 3×3 "same" convolution followed by bias, ReLU and 2×2 max-pooling, through Winograd's
//! minimal filtering algorithm F(2×2, 3×3) (Lavin and Gray, "Fast Algorithms for Convolutional
//! Neural Networks", CVPR 2016).
//!
//! # Why
//! The direct convolution (im2col and a matrix product) spends 9 multiply-adds per output
//! pixel, input channel and output channel. F(2×2, 3×3) computes a 2×2 block of outputs from
//! the 4×4 input patch around it with 16 instead of 36: each channel's patch `d` is transformed
//! to `Bᵀ d B` and each kernel `g` to `G g Gᵀ` (4×4 each), the two are multiplied position by
//! position and summed over the input channels (for each of the 16 positions, one matrix
//! product `[blocks, in] × [in, out]`), and `Aᵀ m A` turns the 4×4 sum back into the 2×2
//! outputs. The transforms only add and subtract (the kernel's, done once at load time, also
//! halves), so the multiplications drop 2.25-fold. The second convolution is most of the
//! network's arithmetic: this way it and its pooling take about half the time of an im2col and
//! one matrix product, which this replaces (docs/benchmarks.md has the page's figures).
//!
//! The 2×2 output block is exactly the window that the 2×2 max-pooling that follows takes, so
//! the outputs are pooled as they come out of `Aᵀ m A` and never stored: the block's maximum,
//! plus the bias, clamped at zero (the bias is the same for the four outputs and rounding is
//! monotonic, so this is `max relu(z + b)` exactly).
//!
//! # Precision and sameness
//! The result is the convolution up to rounding, in a different order from the direct sum (the
//! transforms add up to four terms each). The tests bound it: within 1e-5 of the direct sum in
//! `f64` on random layers, and the network's logits within 1e-4 of candle-nn's forward (9.5e-6
//! at most on the test set's first 256 images). Every operation is a plain `f32` addition or
//! multiplication in a fixed order (Rust never fuses them), and vectorising runs channels side
//! by side without changing any one sum, so natively and in WebAssembly the bits are the same.

use crate::matrix_product::{matrix_product, TiledColumns};

/// Positions of a transformed 4×4 tile.
const POSITIONS: usize = 16;
/// Channels transformed side by side: one `f32x4`.
const LANES: usize = 4;
/// Output blocks transformed and multiplied together: four 14×14 images' 7 × 7 blocks. It keeps
/// the second convolution's transformed tiles (16 × 196 × 32 values in, 16 × 196 × 64 out)
/// within about 1.2 MB; larger and smaller groups ran no faster.
const BLOCKS_PER_PRODUCT: usize = 196;

/// `G`, the kernel's transform: `G g Gᵀ` is a 3×3 kernel `g` as 4×4.
const G: [[f64; 3]; 4] = [
    [1.0, 0.0, 0.0],
    [0.5, 0.5, 0.5],
    [0.5, -0.5, 0.5],
    [0.0, 0.0, 1.0],
];

/// A 3×3 convolution's kernel transformed for F(2×2, 3×3): for each of the 16 positions
/// `(ξ, ν)`, `(G g Gᵀ)[ξ, ν]` of every (input, output) channel pair, laid out as its
/// convolution reads it. Built once per network, at load time.
#[derive(Debug)]
pub struct WinogradKernel {
    transformed: Transformed,
    in_channels: usize,
    out_channels: usize,
}

/// The transformed kernel, as the path for its number of input channels reads it.
#[derive(Debug)]
enum Transformed {
    /// One input channel ([`convolve_one_channel`]): for each group of [`LANES`] output
    /// channels, its values at the 16 positions.
    OneChannel(Vec<[Lanes<LANES>; POSITIONS]>),
    /// More ([`convolve_channels`]): each position's `[in, out]`, tiled for its matrix product.
    Channels(Vec<TiledColumns>),
}

impl WinogradKernel {
    /// Transforms `kernel`, `[(dy, dx, in), out]` row-major. Each transformed value is summed
    /// in `f64` and rounded once to `f32`.
    ///
    /// # Panics
    /// Unless `kernel` holds `9 × in × out` values and `out` is a multiple of
    /// eight (the matrix product's tile).
    pub fn new(kernel: &[f32], in_channels: usize, out_channels: usize) -> Self {
        let pair_count = in_channels * out_channels;
        assert_eq!(
            kernel.len(),
            9 * pair_count,
            "a 3×3 kernel of {in_channels} → {out_channels} channels"
        );
        let mut transformed = Vec::with_capacity(POSITIONS * pair_count);
        for position in 0..POSITIONS {
            let (xi, nu) = (position / 4, position % 4);
            transformed.extend((0..pair_count).map(|pair| {
                let mut sum = 0.0;
                for (dy, g_row) in G[xi].iter().enumerate() {
                    for (dx, g_column) in G[nu].iter().enumerate() {
                        let tap = f64::from(kernel[(dy * 3 + dx) * pair_count + pair]);
                        sum += g_row * g_column * tap;
                    }
                }
                sum as f32
            }));
        }
        let transformed = if in_channels == 1 {
            assert!(
                out_channels.is_multiple_of(8),
                "{out_channels} output channels"
            );
            Transformed::OneChannel(
                (0..out_channels)
                    .step_by(LANES)
                    .map(|first| {
                        std::array::from_fn(|position| {
                            Lanes::load(&transformed[position * out_channels + first..])
                        })
                    })
                    .collect(),
            )
        } else {
            Transformed::Channels(
                transformed
                    .chunks_exact(pair_count)
                    .map(|values| TiledColumns::new(values, in_channels, out_channels))
                    .collect(),
            )
        };
        Self {
            transformed,
            in_channels,
            out_channels,
        }
    }
}

/// `relu(max over each 2×2 window + bias)` of the 3×3 "same" convolution (without its bias) of
/// zero-padded NHWC images `[n, side + 2, side + 2, in]`, written into `pooled`,
/// `[n, side/2 + 2·pad, side/2 + 2·pad, out]`, inside a border of `pad` pixels that is left as
/// it is (zero, for the next convolution's padding).
///
/// # Panics
/// Unless `side` is even and `bias` holds one value per output channel of `kernel`.
pub fn convolve_max_pool_bias_relu(
    padded: &[f32],
    side: usize,
    kernel: &WinogradKernel,
    bias: &[f32],
    pooled: &mut [f32],
    pad: usize,
) {
    assert!(side.is_multiple_of(2), "side {side}");
    assert_eq!(bias.len(), kernel.out_channels, "one bias per output");
    let layer = Layer {
        kernel,
        bias,
        side,
        pad,
    };
    match &kernel.transformed {
        Transformed::OneChannel(groups) => convolve_one_channel(padded, pooled, &layer, groups),
        Transformed::Channels(positions) => convolve_channels(padded, pooled, &layer, positions),
    }
}

/// One call's convolution: its kernel and bias, and the sizes of its input and output.
struct Layer<'a> {
    kernel: &'a WinogradKernel,
    bias: &'a [f32],
    side: usize,
    pad: usize,
}

impl Layer<'_> {
    /// Blocks of 2×2 outputs along each side: the pooled side without the border.
    fn blocks_side(&self) -> usize {
        self.side / 2
    }

    /// Values of one padded input image, `[side + 2, side + 2, in]`.
    fn image_len(&self) -> usize {
        (self.side + 2) * (self.side + 2) * self.kernel.in_channels
    }

    /// Values of one pooled output image with its border.
    fn pooled_len(&self) -> usize {
        let pooled_side = self.blocks_side() + 2 * self.pad;
        pooled_side * pooled_side * self.kernel.out_channels
    }

    /// Where the pooled cell of block `(block_y, block_x)` starts in its output image.
    fn cell_start(&self, block_y: usize, block_x: usize) -> usize {
        let pooled_side = self.blocks_side() + 2 * self.pad;
        ((block_y + self.pad) * pooled_side + block_x + self.pad) * self.kernel.out_channels
    }

    /// `relu(max of the 2×2 outputs + bias)` of block `(block_y, block_x)` of an output image,
    /// [`LANES`] output channels at a time from the 4×4 tile `tile(first)` of channels
    /// `first..first + LANES`, which `Aᵀ m A` turns into the 2×2 outputs.
    #[inline(always)]
    fn pool_block(
        &self,
        target: &mut [f32],
        (block_y, block_x): (usize, usize),
        tile: impl Fn(usize) -> [Lanes<LANES>; POSITIONS],
    ) {
        let start = self.cell_start(block_y, block_x);
        let cell = &mut target[start..start + self.kernel.out_channels];
        for (first, (values, bias)) in cell
            .chunks_exact_mut(LANES)
            .zip(self.bias.chunks_exact(LANES))
            .enumerate()
        {
            let [y00, y01, y10, y11] = transform_output(tile(first * LANES));
            let window = y00.larger(y01).larger(y10.larger(y11));
            let Lanes(pooled) = (window + Lanes::load(bias)).larger(Lanes([0.0; LANES]));
            values.copy_from_slice(&pooled);
        }
    }
}

/// [`convolve_max_pool_bias_relu`] of one input channel (the network's first convolution).
/// Each position's product is then a product of two numbers, so the 16 are not matrix products:
/// the block's transformed patch is scaled by the transformed kernel and turned back into the
/// pooled outputs four channels at a time, without storing the products: faster than 16
/// products of one inner value, and than an im2col.
fn convolve_one_channel(
    padded: &[f32],
    pooled: &mut [f32],
    layer: &Layer,
    groups: &[[Lanes<LANES>; POSITIONS]],
) {
    let padded_side = layer.side + 2;
    for (image, target) in padded
        .chunks_exact(layer.image_len())
        .zip(pooled.chunks_exact_mut(layer.pooled_len()))
    {
        for block_y in 0..layer.blocks_side() {
            for block_x in 0..layer.blocks_side() {
                let patch = transform_input(std::array::from_fn(|position| {
                    let (y, x) = (2 * block_y + position / 4, 2 * block_x + position % 4);
                    image[y * padded_side + x]
                }));
                layer.pool_block(target, (block_y, block_x), |first| {
                    let group = &groups[first / LANES];
                    std::array::from_fn(|p| group[p].scale(patch[p]))
                });
            }
        }
    }
}

/// [`convolve_max_pool_bias_relu`] of more than one input channel: the input transform of
/// groups of images, one matrix product per position, and the output transform and pooling.
fn convolve_channels(
    padded: &[f32],
    pooled: &mut [f32],
    layer: &Layer,
    positions: &[TiledColumns],
) {
    let (in_channels, out_channels) = (layer.kernel.in_channels, layer.kernel.out_channels);
    let blocks_side = layer.blocks_side();
    let blocks_per_image = blocks_side * blocks_side;
    let images_per_product = (BLOCKS_PER_PRODUCT / blocks_per_image).max(1);
    let image_len = layer.image_len();
    let mut transformed = Vec::new();
    for (images, targets) in padded
        .chunks(images_per_product * image_len)
        .zip(pooled.chunks_mut(images_per_product * layer.pooled_len()))
    {
        let blocks = images.len() / image_len * blocks_per_image;
        transformed.clear();
        transformed.resize(POSITIONS * blocks * in_channels, 0.0);
        if in_channels.is_multiple_of(LANES) {
            transform_inputs::<LANES>(images, layer.side, in_channels, &mut transformed);
        } else {
            transform_inputs::<1>(images, layer.side, in_channels, &mut transformed);
        }
        let products: Vec<Vec<f32>> = transformed
            .chunks_exact(blocks * in_channels)
            .zip(positions)
            .map(|(a, b)| matrix_product(a, b))
            .collect();
        for (image_index, target) in targets.chunks_exact_mut(layer.pooled_len()).enumerate() {
            for block_y in 0..blocks_side {
                for block_x in 0..blocks_side {
                    let block = (image_index * blocks_side + block_y) * blocks_side + block_x;
                    let sums: [&[f32]; POSITIONS] = std::array::from_fn(|position| {
                        &products[position][block * out_channels..(block + 1) * out_channels]
                    });
                    layer.pool_block(target, (block_y, block_x), |first| {
                        std::array::from_fn(|p| Lanes::load(&sums[p][first..]))
                    });
                }
            }
        }
    }
}

/// `Bᵀ d B` of the 4×4 patch around each 2×2 block of outputs, of the zero-padded NHWC
/// `images` `[n, side + 2, side + 2, in]`, into `transformed`, `[16 positions, n blocks, in]`
/// (the left-hand sides of the 16 products), `L` channels at a time.
fn transform_inputs<const L: usize>(
    images: &[f32],
    side: usize,
    in_channels: usize,
    transformed: &mut [f32],
) {
    let image_len = (side + 2) * (side + 2) * in_channels;
    let blocks_side = side / 2;
    let blocks = images.len() / image_len * blocks_side * blocks_side;
    let mut slabs: Vec<&mut [f32]> = transformed.chunks_exact_mut(blocks * in_channels).collect();
    let mut block = 0;
    for image in images.chunks_exact(image_len) {
        for block_y in 0..blocks_side {
            for block_x in 0..blocks_side {
                let patch: [&[f32]; POSITIONS] = std::array::from_fn(|position| {
                    let (y, x) = (2 * block_y + position / 4, 2 * block_x + position % 4);
                    let start = (y * (side + 2) + x) * in_channels;
                    &image[start..start + in_channels]
                });
                for first in (0..in_channels).step_by(L) {
                    let tile = transform_input(std::array::from_fn(|position| {
                        Lanes::<L>::load(&patch[position][first..])
                    }));
                    let start = block * in_channels + first;
                    for (slab, Lanes(values)) in slabs.iter_mut().zip(tile) {
                        slab[start..start + L].copy_from_slice(&values);
                    }
                }
                block += 1;
            }
        }
    }
}

/// `L` channels side by side, computed lane by lane (LLVM turns four lanes into one `f32x4`
/// operation).
#[derive(Clone, Copy, Debug)]
struct Lanes<const L: usize>([f32; L]);

impl<const L: usize> Lanes<L> {
    /// The first `L` values of `values`.
    #[inline(always)]
    fn load(values: &[f32]) -> Self {
        Self(std::array::from_fn(|lane| values[..L][lane]))
    }

    /// Each lane times `factor`.
    #[inline(always)]
    fn scale(self, factor: f32) -> Self {
        Self(self.0.map(|value| value * factor))
    }

    /// The larger of each pair of lanes ([`larger`]).
    #[inline(always)]
    fn larger(self, other: Self) -> Self {
        Self(std::array::from_fn(|lane| {
            larger(self.0[lane], other.0[lane])
        }))
    }
}

impl<const L: usize> std::ops::Add for Lanes<L> {
    type Output = Self;
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        Self(std::array::from_fn(|lane| self.0[lane] + other.0[lane]))
    }
}

impl<const L: usize> std::ops::Sub for Lanes<L> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, other: Self) -> Self {
        Self(std::array::from_fn(|lane| self.0[lane] - other.0[lane]))
    }
}

/// `Bᵀ d B` of a 4×4 patch `d` (row-major), with
/// `Bᵀ = [[1, 0, −1, 0], [0, 1, 1, 0], [0, −1, 1, 0], [0, 1, 0, −1]]`.
#[inline(always)]
fn transform_input<T>(d: [T; POSITIONS]) -> [T; POSITIONS]
where
    T: Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T>,
{
    let d = |i: usize, j: usize| d[4 * i + j];
    let rows: [[T; 4]; 4] = [
        std::array::from_fn(|j| d(0, j) - d(2, j)),
        std::array::from_fn(|j| d(1, j) + d(2, j)),
        std::array::from_fn(|j| d(2, j) - d(1, j)),
        std::array::from_fn(|j| d(1, j) - d(3, j)),
    ];
    std::array::from_fn(|position| {
        let row = rows[position / 4];
        match position % 4 {
            0 => row[0] - row[2],
            1 => row[1] + row[2],
            2 => row[2] - row[1],
            _ => row[1] - row[3],
        }
    })
}

/// The larger of `a` and `b` (`a` when they tie), written as a comparison: LLVM turns the pooling
/// loop into WebAssembly's `f32x4.pmax` (natively `maxps`), four channels per instruction
/// (this alone made the whole forward pass about 1.6 times as fast).
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

/// `Aᵀ m A` of a 4×4 tile `m` (row-major): the 2×2 outputs `[y00, y01, y10, y11]`, with
/// `Aᵀ = [[1, 1, 1, 0], [0, 1, −1, −1]]`.
#[inline(always)]
fn transform_output<T>(m: [T; POSITIONS]) -> [T; 4]
where
    T: Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T>,
{
    let m = |i: usize, j: usize| m[4 * i + j];
    let top: [T; 4] = std::array::from_fn(|j| m(0, j) + m(1, j) + m(2, j));
    let bottom: [T; 4] = std::array::from_fn(|j| m(1, j) - m(2, j) - m(3, j));
    [
        top[0] + top[1] + top[2],
        top[1] - top[2] - top[3],
        bottom[0] + bottom[1] + bottom[2],
        bottom[1] - bottom[2] - bottom[3],
    ]
}

#[cfg(test)]
#[path = "winograd_tests.rs"]
mod tests;
