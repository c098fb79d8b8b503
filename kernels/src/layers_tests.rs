//! Unit tests of `layers.rs`, worked by hand: the padded input, a convolution through two
//! chosen taps, and the fused pooling with and without a border.

use super::*;

#[test]
fn the_input_is_scaled_and_padded_and_a_partial_image_is_left_out() {
    let padded = padded_input(&[0, 51, 102, 255, 7], 2);
    #[rustfmt::skip]
    let expected = [
        0.0, 0.0, 0.0, 0.0,
        0.0, 0.0, 0.2, 0.0,
        0.0, 0.4, 1.0, 0.0,
        0.0, 0.0, 0.0, 0.0,
    ];
    assert_eq!(padded, expected);
}

#[test]
fn a_convolution_reads_each_tap_where_it_lies() {
    // One 2×2 image, one channel; output channel 0 takes the centre tap (dy, dx) = (1, 1),
    // channel 1 the top-left tap (0, 0) twice, the other six nothing.
    let padded = padded_input(&[10, 20, 30, 40], 2);
    let mut kernel = vec![0.0; KERNEL_TAPS * 8];
    kernel[4 * 8] = 1.0;
    kernel[1] = 2.0;
    let out = convolve(&padded, 2, &TiledColumns::new(&kernel, KERNEL_TAPS, 8));
    let pixel = |value: f32| value / 255.0;
    let channel = |c: usize| -> Vec<f32> { out.chunks_exact(8).map(|row| row[c]).collect() };
    assert_eq!(
        channel(0),
        [pixel(10.0), pixel(20.0), pixel(30.0), pixel(40.0)]
    );
    // The top-left tap of output (y, x) is input (y − 1, x − 1): inside only at (1, 1).
    assert_eq!(channel(1), [0.0, 0.0, 0.0, 2.0 * pixel(10.0)]);
    assert!(out.chunks_exact(8).all(|row| row[2..] == [0.0; 6]));
}

#[test]
fn pooling_takes_the_window_maximum_adds_the_bias_and_clamps() {
    // One image, 2×2 pixels, 2 channels, NHWC: channel 0 holds 1, 4, -2, 3 and channel 1
    // holds -5, -1, -3, -4.
    let conv = [1.0, -5.0, 4.0, -1.0, -2.0, -3.0, 3.0, -4.0];
    let bias = [0.5, 0.5];
    let mut unpadded = [f32::NAN; 2];
    max_pool_bias_relu(&conv, 2, &bias, &mut unpadded, 0);
    assert_eq!(unpadded, [4.5, 0.0]);
    // With a one-pixel border: 3×3 cells of 2 channels, the window in the middle one, the
    // border untouched.
    let mut padded = [7.0; 18];
    max_pool_bias_relu(&conv, 2, &bias, &mut padded, 1);
    let mut expected = [7.0; 18];
    expected[8..10].copy_from_slice(&[4.5, 0.0]);
    assert_eq!(padded, expected);
}
