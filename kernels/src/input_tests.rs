//! Unit tests of `input.rs`, worked by hand.

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
fn values_are_padded_as_they_are() {
    let padded = padded_values(&[-0.5, 0.25, 1.5, 2.0, 9.0], 2);
    #[rustfmt::skip]
    let expected = [
        0.0, 0.0, 0.0, 0.0,
        0.0, -0.5, 0.25, 0.0,
        0.0, 1.5, 2.0, 0.0,
        0.0, 0.0, 0.0, 0.0,
    ];
    assert_eq!(padded, expected);
}
