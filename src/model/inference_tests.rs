//! Unit tests of `inference.rs`: the NHWC forward pass against candle-nn's plain forward
//! ([`Cnn`]'s `forward`) on random images of random batch sizes and across block boundaries
//! (the kernels' own tests work single layers by hand). `tests/model.rs` compares the two on every
//! committed network's fixture images.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Module};
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
    let vb = crate::model::shipped::var_builder(&weights, DType::F32).unwrap();
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
    let fast = InferenceNetwork::new(cnn).unwrap().logits(pixels);
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
    let pixels: Vec<u8> = (0..(2 * IMAGES_PER_BLOCK + 3) * IMAGE_PIXELS)
        .map(|i| ((i * 2_654_435_761) >> 13) as u8)
        .collect();
    let fast = classifier.logits(&pixels).unwrap();
    let difference = largest_difference(&fast, &plain_logits(&cnn, &pixels));
    assert!(difference <= TOLERANCE, "{difference}");
}

proptest! {
    // Batches of 1 to a little over two blocks: most are not a whole number of blocks, and
    // some cross one or two block boundaries.
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn equals_the_plain_forward_on_random_images(
        pixels in (1..=2 * IMAGES_PER_BLOCK + 5).prop_flat_map(|n| {
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

/// The first dense layer's output after its ReLU `[n, 128]` through candle-nn's plain layers,
/// row-major.
fn plain_features(cnn: &Cnn, pixels: &[u8]) -> Vec<f32> {
    let input = crate::model::images_to_tensor(pixels, &Device::Cpu).unwrap();
    let pooled1 = cnn.conv1.forward(&input).unwrap().relu().unwrap();
    let pooled1 = pooled1.max_pool2d(2).unwrap();
    let pooled2 = cnn.conv2.forward(&pooled1).unwrap().relu().unwrap();
    let flat = pooled2.max_pool2d(2).unwrap().flatten_from(1).unwrap();
    cnn.dense1
        .forward(&flat)
        .unwrap()
        .relu()
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1()
        .unwrap()
}

#[test]
fn features_are_the_last_layers_input_and_leave_the_logits_unchanged() {
    let cnn = load_cnn("fmnist-logitnorm");
    let weights = std::fs::read(root().join("assets/models/fmnist-logitnorm.safetensors")).unwrap();
    let classifier = crate::model::Classifier::from_safetensors(weights).unwrap();
    let n = IMAGES_PER_BLOCK + 7;
    let pixels: Vec<u8> = (0..n * IMAGE_PIXELS)
        .map(|i| ((i * 2_654_435_761) >> 11) as u8)
        .collect();
    let (features, logits) = classifier.features_and_logits(&pixels).unwrap();
    assert_eq!(logits, classifier.logits(&pixels).unwrap());
    assert_eq!(features.len(), n * HIDDEN_UNITS);
    assert!(features.iter().all(|&h| h >= 0.0));
    let difference = largest_difference(&features, &plain_features(&cnn, &pixels));
    assert!(difference <= TOLERANCE, "{difference}");
    // The last layer applied to the features gives the logits.
    let (weight, bias) = classifier.last_layer().unwrap();
    let recomputed: Vec<f32> = features
        .chunks_exact(HIDDEN_UNITS)
        .flat_map(|h| {
            weight
                .chunks_exact(HIDDEN_UNITS)
                .zip(&bias)
                .map(move |(w, b)| w.iter().zip(h).map(|(w, h)| w * h).sum::<f32>() + b)
        })
        .collect();
    let difference = largest_difference(&recomputed, &logits);
    assert!(difference <= TOLERANCE, "{difference}");
}

/// The page infers in batches of its own sizes and the CLI in others: an image's features and
/// logits must not depend on the batch it is in nor on its place there (module
/// documentation), or the page and the CLI would disagree in the last bits.
#[test]
fn an_images_features_and_logits_are_the_same_bits_in_any_batch() {
    let weights = std::fs::read(root().join("assets/models/fmnist-ce.safetensors")).unwrap();
    let classifier = crate::model::Classifier::from_safetensors(weights).unwrap();
    let n = IMAGES_PER_BLOCK + 9;
    let pixels: Vec<u8> = (0..n * IMAGE_PIXELS)
        .map(|i| ((i * 2_654_435_761) >> 9) as u8)
        .collect();
    let (features, logits) = classifier.features_and_logits(&pixels).unwrap();
    for image in [0, 3, IMAGES_PER_BLOCK - 1, IMAGES_PER_BLOCK, n - 1] {
        for first in [image.saturating_sub(2), image] {
            let batch = &pixels[first * IMAGE_PIXELS..(image + 1) * IMAGE_PIXELS];
            let (alone_features, alone_logits) = classifier.features_and_logits(batch).unwrap();
            let place = image - first;
            assert_eq!(
                alone_logits[place * NUM_CLASSES..][..NUM_CLASSES],
                logits[image * NUM_CLASSES..][..NUM_CLASSES],
                "image {image} from {first}"
            );
            assert_eq!(
                alone_features[place * HIDDEN_UNITS..][..HIDDEN_UNITS],
                features[image * HIDDEN_UNITS..][..HIDDEN_UNITS],
                "image {image} from {first}"
            );
        }
    }
}
