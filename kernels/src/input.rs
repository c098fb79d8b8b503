//! The network's input: images of bytes as `f32` in [0, 1], zero-padded by one pixel for the
//! first convolution.

/// Length of one image's activations `[side + 2, side + 2, channels]` with a one-pixel border.
pub fn padded_len(side: usize, channels: usize) -> usize {
    (side + 2) * (side + 2) * channels
}

/// Square greyscale images `[n, side, side]` of bytes as a network input in [0, 1],
/// zero-padded to `[n, side + 2, side + 2]` (one channel). A partial last image is left out.
pub fn padded_input(pixels: &[u8], side: usize) -> Vec<f32> {
    padded(pixels, side, |pixel| f32::from(pixel) / 255.0)
}

/// Square greyscale images `[n, side, side]` already on the network's input scale (ODIN's
/// inputs moved along their gradient, which leave [0, 1]), zero-padded as [`padded_input`]
/// pads. A partial last image is left out.
pub fn padded_values(values: &[f32], side: usize) -> Vec<f32> {
    padded(values, side, |value| value)
}

/// Images `[n, side, side]`, each value through `scale`, zero-padded by one pixel.
fn padded<T: Copy>(values: &[T], side: usize, scale: impl Fn(T) -> f32) -> Vec<f32> {
    let image_len = side * side;
    let n = values.len() / image_len;
    let mut padded = vec![0.0; n * padded_len(side, 1)];
    for (image, target) in values
        .chunks_exact(image_len)
        .zip(padded.chunks_exact_mut(padded_len(side, 1)))
    {
        for (row, target_row) in image
            .chunks_exact(side)
            .zip(target.chunks_exact_mut(side + 2).skip(1))
        {
            for (padded_value, &value) in target_row[1..=side].iter_mut().zip(row) {
                *padded_value = scale(value);
            }
        }
    }
    padded
}

#[cfg(test)]
#[path = "input_tests.rs"]
mod tests;
