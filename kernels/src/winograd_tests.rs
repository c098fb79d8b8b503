//! Unit tests of `winograd.rs`: one image worked by hand (three taps, the bias, the clamp and
//! the border), and random convolutions against the direct sum in `f64`.

use proptest::prelude::*;

use super::*;

/// The 4×4 image 1, 2, …, 16 (row by row), one channel, zero-padded to 6×6.
fn padded_counting_image() -> Vec<f32> {
    let mut padded = vec![0.0; 36];
    for y in 0..4 {
        for x in 0..4 {
            padded[(y + 1) * 6 + x + 1] = (4 * y + x + 1) as f32;
        }
    }
    padded
}

/// A kernel `[(dy, dx, in = 1), out = 8]` of zeros but for `(dy, dx, output, weight)` taps.
fn kernel_with_taps(taps: &[(usize, usize, usize, f32)]) -> WinogradKernel {
    let mut kernel = vec![0.0; 9 * 8];
    for &(dy, dx, output, weight) in taps {
        kernel[(dy * 3 + dx) * 8 + output] = weight;
    }
    WinogradKernel::new(&kernel, 1, 8)
}

#[test]
fn one_image_worked_by_hand() {
    // Output 0 is the centre tap (the image itself) plus 0.5; its windows' maxima are 6, 8,
    // 14 and 16. Output 1 is twice the top-left tap, so output (y, x) is 2 · image(y − 1, x − 1)
    // and zero in the first row and column: rows 0 0 0 0 / 0 2 4 6 / 0 10 12 14 / 0 18 20 22.
    // Output 2 is minus the bottom-right tap plus 3: rows −6 −7 −8 0 / −10 −11 −12 0 /
    // −14 −15 −16 0 / 0 0 0 0 before the bias, so its top-left window clamps at zero. The
    // weights are small integers and the transforms only halve them, so every value is exact.
    let kernel = kernel_with_taps(&[(1, 1, 0, 1.0), (0, 0, 1, 2.0), (2, 2, 2, -1.0)]);
    let bias = [0.5, 0.0, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    let cell = |values: [f32; 3]| [values[0], values[1], values[2], 0.0, 0.0, 0.0, 0.0, 0.0];
    let expected = [
        cell([6.5, 2.0, 0.0]),
        cell([8.5, 6.0, 3.0]),
        cell([14.5, 18.0, 3.0]),
        cell([16.5, 22.0, 3.0]),
    ]
    .concat();
    let mut pooled = vec![f32::NAN; 2 * 2 * 8];
    convolve_max_pool_bias_relu(&padded_counting_image(), 4, &kernel, &bias, &mut pooled, 0);
    assert_eq!(pooled, expected);

    // With a one-pixel border: 4×4 cells, the pooled 2×2 in the middle, the border untouched.
    let mut bordered = vec![7.0; 4 * 4 * 8];
    convolve_max_pool_bias_relu(
        &padded_counting_image(),
        4,
        &kernel,
        &bias,
        &mut bordered,
        1,
    );
    for y in 0..4 {
        for x in 0..4 {
            let cell = &bordered[(y * 4 + x) * 8..(y * 4 + x + 1) * 8];
            if (1..3).contains(&y) && (1..3).contains(&x) {
                let inner = ((y - 1) * 2 + x - 1) * 8;
                assert_eq!(cell, &expected[inner..inner + 8], "cell ({y}, {x})");
            } else {
                assert_eq!(cell, [7.0; 8], "border cell ({y}, {x})");
            }
        }
    }
}

/// The direct convolution of zero-padded NHWC `padded` images (sums in `f64`), then bias, ReLU
/// and 2×2 max-pooling, unpadded: `[n, side/2, side/2, out]`.
fn direct(
    padded: &[f32],
    side: usize,
    kernel: &[f32],
    in_channels: usize,
    bias: &[f32],
) -> Vec<f32> {
    let out_channels = bias.len();
    let padded_side = side + 2;
    let image_len = padded_side * padded_side * in_channels;
    let mut pooled = Vec::new();
    for image in padded.chunks_exact(image_len) {
        let convolution = |y: usize, x: usize, o: usize| -> f64 {
            let mut sum = 0.0;
            for dy in 0..3 {
                for dx in 0..3 {
                    for c in 0..in_channels {
                        let input = image[((y + dy) * padded_side + x + dx) * in_channels + c];
                        let weight = kernel[((dy * 3 + dx) * in_channels + c) * out_channels + o];
                        sum += f64::from(input) * f64::from(weight);
                    }
                }
            }
            sum
        };
        for y in (0..side).step_by(2) {
            for x in (0..side).step_by(2) {
                for (o, &bias) in bias.iter().enumerate() {
                    let window = [(0, 0), (0, 1), (1, 0), (1, 1)]
                        .map(|(i, j)| convolution(y + i, x + j, o))
                        .into_iter()
                        .fold(f64::NEG_INFINITY, f64::max);
                    pooled.push((window + f64::from(bias)).max(0.0) as f32);
                }
            }
        }
    }
    pooled
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    // Up to nine 14×14 images cross the products' groups of four; channel counts that are and
    // are not multiples of four take both transforms of the input.
    #[test]
    fn equals_the_direct_convolution(
        (n, side, in_channels, out_channels, values) in (1..=9_usize, 1..=8_usize, 1..=9_usize, 1..=2_usize)
            .prop_flat_map(|(n, half, in_channels, tiles)| {
                let side = 2 * half;
                let out_channels = 8 * tiles;
                let len = n * (side + 2) * (side + 2) * in_channels
                    + 9 * in_channels * out_channels
                    + out_channels;
                (Just(n), Just(side), Just(in_channels), Just(out_channels),
                 proptest::collection::vec(-1.0_f32..1.0, len))
            }),
    ) {
        let padded_side = side + 2;
        let image_len = padded_side * padded_side * in_channels;
        let (images, rest) = values.split_at(n * image_len);
        let (kernel, bias) = rest.split_at(9 * in_channels * out_channels);
        // Zero the border, as the padding is.
        let mut padded = images.to_vec();
        for (index, value) in padded.iter_mut().enumerate() {
            let pixel = index / in_channels % (padded_side * padded_side);
            let (y, x) = (pixel / padded_side, pixel % padded_side);
            if y == 0 || x == 0 || y == side + 1 || x == side + 1 {
                *value = 0.0;
            }
        }
        let mut pooled = vec![f32::NAN; n * (side / 2) * (side / 2) * out_channels];
        let winograd = WinogradKernel::new(kernel, in_channels, out_channels);
        convolve_max_pool_bias_relu(&padded, side, &winograd, bias, &mut pooled, 0);
        let expected = direct(&padded, side, kernel, in_channels, bias);
        // Each output sums at most 81 products of values below 1 in f32.
        for (index, (got, want)) in pooled.iter().zip(&expected).enumerate() {
            prop_assert!((got - want).abs() <= 1e-5, "output {index}: {got} against {want}");
        }
    }
}
