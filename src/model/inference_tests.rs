//! Unit tests of `inference.rs`: the NHWC forward pass against candle-nn's plain forward
//! ([`Cnn`]'s `forward`) on random images of random batch sizes and across block boundaries,
//! and the fused pooling on a hand-computed window. `tests/model.rs` compares the two on every
//! committed network's fixture images.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Module};
use candle_nn::VarBuilder;
use proptest::prelude::*;

use super::*;

/// Largest absolute difference allowed between the two forward passes' logits: both compute in
/// `f32` and differ only in the order of the sums inside the products (logits are at most a few
/// tens, so rounding is about 1e-6).
const TOLERANCE: f32 = 1e-4;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// The network stored as `assets/models/{name}.safetensors`.
fn load_cnn(name: &str) -> Cnn {
    let weights = std::fs::read(root().join(format!("assets/models/{name}.safetensors"))).unwrap();
    let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu).unwrap();
    Cnn::new(vb).unwrap()
}

/// Logits `[n, 10]` of candle-nn's plain forward pass, row-major.
fn plain_logits(cnn: &Cnn, pixels: &[u8]) -> Vec<f32> {
    let input = crate::model::images_to_tensor(pixels, &Device::Cpu).unwrap();
    cnn.forward(&input)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1()
        .unwrap()
}

/// The largest absolute difference between the NHWC pass's logits of `pixels` and the plain
/// forward's.
fn difference_from_plain(cnn: &Cnn, pixels: &[u8]) -> f32 {
    let fast = InferenceNetwork::new(cnn)
        .unwrap()
        .logits(pixels, &Device::Cpu)
        .unwrap();
    largest_difference(&fast, &plain_logits(cnn, pixels))
}

/// The largest absolute difference between two equally long logit arrays.
fn largest_difference(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .fold(0.0, |largest, (a, b)| largest.max((a - b).abs()))
}

#[test]
fn a_classifier_equals_the_plain_forward_across_block_boundaries() {
    let cnn = load_cnn("fmnist-ce");
    let weights = std::fs::read(root().join("assets/models/fmnist-ce.safetensors")).unwrap();
    let classifier = crate::model::Classifier::from_safetensors(weights).unwrap();
    // Deterministic varied pixels: a byte hash of the position.
    let pixels: Vec<u8> = (0..(2 * IMAGES_PER_PRODUCT + 3) * IMAGE_PIXELS)
        .map(|i| ((i * 2_654_435_761) >> 13) as u8)
        .collect();
    let fast = classifier.logits(&pixels).unwrap();
    let difference = largest_difference(&fast, &plain_logits(&cnn, &pixels));
    assert!(difference <= TOLERANCE, "{difference}");
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

proptest! {
    // Batches of 1 to a little over two blocks: most are not a whole number of blocks, and
    // some cross one or two block boundaries.
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn equals_the_plain_forward_on_random_images(
        pixels in (1..=2 * IMAGES_PER_PRODUCT + 5).prop_flat_map(|n| {
            proptest::collection::vec(any::<u8>(), n * IMAGE_PIXELS)
        }),
    ) {
        let difference = difference_from_plain(&load_cnn("fmnist-ce"), &pixels);
        prop_assert!(difference <= TOLERANCE, "{} images: {}", pixels.len() / IMAGE_PIXELS, difference);
    }

    #[test]
    fn equals_the_plain_forward_on_a_single_random_image(
        pixels in proptest::collection::vec(any::<u8>(), IMAGE_PIXELS),
    ) {
        prop_assert!(difference_from_plain(&load_cnn("fmnist-ce"), &pixels) <= TOLERANCE);
    }
}
