//! The network's input: images of bytes as `f32` in [0, 1], zero-padded by one pixel for the
//! first convolution.

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

#[cfg(test)]
#[path = "input_tests.rs"]
mod tests;
