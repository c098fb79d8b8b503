//! The layers around the matrix product: the zero-padded input, the im2col that feeds the
//! product, and bias + ReLU + 2×2 max-pooling fused in one pass. Activations are NHWC
//! (channels last) and zero-padded by one pixel where a convolution reads them.

use crate::matrix_product::{matrix_product, TiledColumns};

/// Taps of a 3×3 kernel.
pub const KERNEL_TAPS: usize = 9;

/// Length of one image's activations `[side + 2, side + 2, channels]` with a one-pixel border.
pub fn padded_len(side: usize, channels: usize) -> usize {
    (side + 2) * (side + 2) * channels
}

/// Square greyscale images `[n, side, side]` of bytes as a network input in [0, 1],
/// zero-padded to `[n, side + 2, side + 2]` (one channel). A partial last image is left out.
pub fn padded_input(pixels: &[u8], side: usize) -> Vec<f32> {
    let image_len = side * side;
    let n = pixels.len() / image_len;
    let mut padded = vec![0.0; n * padded_len(side, 1)];
    for (image, target) in pixels
        .chunks_exact(image_len)
        .zip(padded.chunks_exact_mut(padded_len(side, 1)))
    {
        for (row, target_row) in image
            .chunks_exact(side)
            .zip(target.chunks_exact_mut(side + 2).skip(1))
        {
            for (value, &pixel) in target_row[1..=side].iter_mut().zip(row) {
                *value = f32::from(pixel) / 255.0;
            }
        }
    }
    padded
}

/// The 3×3 "same" convolution of zero-padded NHWC images `[n, side + 2, side + 2, in]`,
/// without its bias, as `[n·side², out]` (NHWC): one im2col for all the images, then one
/// product with `kernel`, `[(dy, dx, c), out]` tiled.
///
/// In NHWC the three horizontal taps of a kernel row are adjacent in memory, so the patch
/// matrix's row for output pixel `(y, x)` is three contiguous copies of `3·in` values, from
/// rows `y`, `y + 1` and `y + 2` of the padded input:
/// `patches[(i, y, x), (dy, dx, c)] = padded[i, y + dy, x + dx, c]`.
///
/// # Panics
/// Unless `kernel`'s inner dimension is a multiple of [`KERNEL_TAPS`].
pub fn convolve(padded: &[f32], side: usize, kernel: &TiledColumns) -> Vec<f32> {
    let taps_len = kernel.inner();
    assert!(taps_len.is_multiple_of(KERNEL_TAPS), "{taps_len} taps");
    let channels = taps_len / KERNEL_TAPS;
    let padded_row = (side + 2) * channels;
    let kernel_row = 3 * channels;
    let images = padded.chunks_exact(padded_len(side, channels));
    let mut patches = Vec::with_capacity(images.len() * side * side * taps_len);
    for image in images {
        for y in 0..side {
            for x in 0..side {
                for dy in 0..3 {
                    let start = (y + dy) * padded_row + x * channels;
                    patches.extend_from_slice(&image[start..start + kernel_row]);
                }
            }
        }
    }
    matrix_product(&patches, kernel)
}

/// `relu(max over each 2×2 window + bias)` of NHWC convolution outputs
/// `[n, side, side, channels]` (`channels = bias.len()`), written into `pooled`,
/// `[n, side/2 + 2·pad, side/2 + 2·pad, channels]`, inside a border of `pad` pixels that is
/// left as it is (zero, for the next convolution's padding).
///
/// The bias is the same for the four pixels of a window and rounding is monotonic, so
/// `max_j relu(z_j + b) = relu(max_j z_j + b)` holds exactly in floating point: the pass takes
/// the window's maximum, adds the bias and clamps at zero, reading each value once and writing
/// a quarter as many.
pub fn max_pool_bias_relu(conv: &[f32], side: usize, bias: &[f32], pooled: &mut [f32], pad: usize) {
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
/// above into WebAssembly's `f32x4.pmax` (natively `maxps`), four channels per instruction
/// (in Node 20 this alone took the forward pass from 664 to 1,073 images/s on the test set).
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
#[path = "layers_tests.rs"]
mod tests;
