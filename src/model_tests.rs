//! Unit tests of `model.rs`: the ODIN perturbation, its gradient against central differences and
//! against candle's reverse-mode autograd, on the first test images; the blank network's logits.

use std::path::Path;

use candle_core::Var;

use super::*;
use crate::calibration::Logits;
use crate::data::{load_images, NUM_CLASSES};
use crate::ood::{max_softmax_probability, ODIN_EPSILON, ODIN_TEMPERATURE};

/// Images used by the ODIN tests, the first of the Fashion-MNIST test set.
const TEST_IMAGES: usize = 64;
/// Step of the finite differences, in `[0, 1]` pixel units. The network is piecewise
/// linear in its input, so a central difference is exact up to the softmax's curvature
/// (order step²) unless a ReLU or a max-pool switches within one step.
const FINITE_DIFFERENCE_STEP: f64 = 1e-5;
/// Largest gap between the forward and backward differences of a pixel, relative to the
/// image's largest difference, for `log S_ŷ` to count as smooth there. Rounding in `f64`
/// makes gaps of about 1e-16·|log S| / step ≈ 2e-11, far below it; a kink makes gaps of
/// the size of a unit's contribution.
const KINK_THRESHOLD: f64 = 1e-6;
/// Tolerance on the autograd gradient (`f32`) against the central difference of the same
/// network in `f64`, relative to the image's largest difference: `f32` rounding through
/// the network is about 1e-7 relative (2e-7 at worst on the images below).
const GRADIENT_TOLERANCE: f64 = 1e-5;
/// Tolerance on a probability computed twice from the same `f32` logits.
const PROBABILITY_TOLERANCE: f64 = 1e-6;
/// Tolerance on the gradient against candle's autograd on the same `f32` weights, relative to
/// the image's largest gradient: both sum in `f32`, in different orders.
const AUTOGRAD_TOLERANCE: f32 = 1e-4;
/// Largest top probability of an image whose gradient is compared with candle's autograd.
const AUTOGRAD_CONFIDENCE: f64 = 0.99;
/// Images per forward pass of the finite differences (1,569 inputs an image).
const DIFFERENCE_CHUNK: usize = 256;

fn assets() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("assets")
}

fn weights() -> Vec<u8> {
    std::fs::read(assets().join("models/fmnist-ce.safetensors")).unwrap()
}

fn test_pixels() -> Vec<u8> {
    let images = load_images(&assets().join("fashion-mnist/t10k-images-idx3-ubyte.gz")).unwrap();
    images.pixels()[..TEST_IMAGES * IMAGE_PIXELS].to_vec()
}

/// Pixels as the network reads them, in `[0, 1]`.
fn scaled(pixels: &[u8]) -> Vec<f32> {
    pixels.iter().map(|&p| f32::from(p) / 255.0).collect()
}

/// 2×2 max-pooling of `[n, c, h, w]` (even `h` and `w`) whose gradient goes to the first
/// maximum of each window in row-major order, as PyTorch's does: the same values as
/// `max_pool2d(2)`, built from a reshape, an arg-max and a gather, which candle differentiates
/// exactly. candle 0.11's own `max_pool2d` backward multiplies the gradient by (number of
/// maxima)/4 instead of sending it to one maximum, so it cannot be the reference.
fn max_pool_2x2_first_maximum(x: &Tensor) -> candle_core::Result<Tensor> {
    let (n, channels, height, width) = x.dims4()?;
    let shape = (n, channels, height / 2, width / 2, 4);
    let windows = x
        .reshape((n, channels, height / 2, 2, width / 2, 2))?
        .permute((0, 1, 2, 4, 3, 5))?
        .contiguous()?
        .reshape(shape)?;
    let first_maximum = windows.argmax_keepdim(4)?;
    windows.gather(&first_maximum, 4)?.squeeze(4)
}

/// The reference for module `odin`'s gradient: `∇ₓ log S_ŷ(x; T)` of each image of `pixels` by
/// candle's reverse-mode autograd through `cnn`'s layers, with [`max_pool_2x2_first_maximum`]
/// as the pooling, flattened.
fn autograd_gradient(cnn: &Cnn, pixels: &[u8], temperature: f64) -> Vec<f32> {
    let input = images_to_tensor(pixels, &Device::Cpu).unwrap();
    let variable = Var::from_tensor(&input).unwrap();
    let pool = |x: Tensor| max_pool_2x2_first_maximum(&x.relu().unwrap()).unwrap();
    let x = pool(cnn.conv1.forward(variable.as_tensor()).unwrap());
    let x = pool(cnn.conv2.forward(&x).unwrap());
    let hidden = cnn.dense1.forward(&x.flatten_from(1).unwrap()).unwrap();
    let logits = cnn.dense2.forward(&hidden.relu().unwrap()).unwrap();
    let predicted = logits.detach().argmax_keepdim(1).unwrap();
    let log_probabilities =
        candle_nn::ops::log_softmax(&(logits / temperature).unwrap(), 1).unwrap();
    let objective = log_probabilities
        .gather(&predicted, 1)
        .unwrap()
        .sum_all()
        .unwrap();
    let gradients = objective.backward().unwrap();
    let gradient = gradients.get(variable.as_tensor()).unwrap();
    gradient.flatten_all().unwrap().to_vec1().unwrap()
}

/// `log softmax(z/T)_class` of one row, in `f64`.
fn log_probability(logits: &[f64], class: usize, temperature: f64) -> f64 {
    let max = logits.iter().fold(f64::NEG_INFINITY, |m, &z| m.max(z)) / temperature;
    let sum: f64 = logits.iter().map(|z| (z / temperature - max).exp()).sum();
    logits[class] / temperature - max - sum.ln()
}

/// Forward and backward differences `(f(x + h·e_i) − f(x))/h` and `(f(x) − f(x − h·e_i))/h`
/// of `f(x) = log S_ŷ(x; T)` for every pixel `i` of one image, with the network's weights
/// in `f64` and `ŷ` fixed to `class`.
fn one_sided_differences(image: &[u8], class: usize, temperature: f64) -> Vec<(f64, f64)> {
    let device = Device::Cpu;
    let vb = shipped::var_builder(&weights(), DType::F64).unwrap();
    let cnn = Cnn::new(vb).unwrap();
    let clean: Vec<f64> = image.iter().map(|&p| f64::from(p) / 255.0).collect();
    let mut batch = clean.clone();
    for pixel in 0..IMAGE_PIXELS {
        for step in [FINITE_DIFFERENCE_STEP, -FINITE_DIFFERENCE_STEP] {
            let mut moved = clean.clone();
            moved[pixel] += step;
            batch.extend(moved);
        }
    }
    let mut values = Vec::with_capacity(2 * IMAGE_PIXELS + 1);
    for chunk in batch.chunks(DIFFERENCE_CHUNK * IMAGE_PIXELS) {
        let n = chunk.len() / IMAGE_PIXELS;
        let input = Tensor::from_slice(chunk, (n, 1, IMAGE_SIDE, IMAGE_SIDE), &device).unwrap();
        let logits = cnn.forward(&input).unwrap().flatten_all().unwrap();
        let logits = logits.to_vec1::<f64>().unwrap();
        values.extend(
            logits
                .chunks_exact(NUM_CLASSES)
                .map(|row| log_probability(row, class, temperature)),
        );
    }
    let at_clean = values[0];
    values[1..]
        .chunks_exact(2)
        .map(|pair| {
            let (up, down) = (pair[0], pair[1]);
            (
                (up - at_clean) / FINITE_DIFFERENCE_STEP,
                (at_clean - down) / FINITE_DIFFERENCE_STEP,
            )
        })
        .collect()
}

#[test]
fn odin_gradient_matches_central_differences() {
    let classifier = Classifier::from_safetensors(weights()).unwrap();
    let pixels = test_pixels();
    // At T = 1 most images are so confident that log S_ŷ ≈ −1e-8 and its differences
    // drown in rounding; take the first image whose largest probability is below 0.9.
    let values = classifier.logits(&pixels).unwrap();
    let confidences =
        max_softmax_probability(&Logits::new(&values, NUM_CLASSES).unwrap(), 1.0).unwrap();
    let unsure = confidences.iter().position(|&c| c < 0.9).unwrap();
    // Images 0 (ankle boot) and 1 (pullover) at ODIN's temperature.
    for (image, temperature) in [(0, ODIN_TEMPERATURE), (1, ODIN_TEMPERATURE), (unsure, 1.0)] {
        let image_pixels = &pixels[image * IMAGE_PIXELS..(image + 1) * IMAGE_PIXELS];
        let logits = classifier.logits(image_pixels).unwrap();
        let class =
            (0..NUM_CLASSES).fold(0, |best, k| if logits[k] > logits[best] { k } else { best });
        let gradient = OdinNetwork::new(&classifier.cnn)
            .unwrap()
            .log_max_softmax_gradient(&scaled(image_pixels), temperature);
        let differences = one_sided_differences(image_pixels, class, temperature);
        let largest = differences.iter().fold(0.0_f64, |m, &(forward, backward)| {
            m.max(forward.abs()).max(backward.abs())
        });
        assert!(largest > 0.0);
        // Where the two one-sided differences disagree, a ReLU or a max-pool switches
        // within one step (on flat regions every window of a channel ties): `log S_ŷ` has
        // a kink there, and no central difference equals a gradient.
        let smooth: Vec<(usize, f64)> = differences
            .iter()
            .enumerate()
            .filter(|(_, (forward, backward))| {
                (forward - backward).abs() <= KINK_THRESHOLD * largest
            })
            .map(|(pixel, (forward, backward))| (pixel, (forward + backward) / 2.0))
            .collect();
        assert!(
            smooth.len() >= 100,
            "image {image}: {} smooth pixels",
            smooth.len()
        );
        assert!(smooth
            .iter()
            .any(|&(_, central)| central.abs() >= 0.1 * largest));
        for (pixel, central) in smooth {
            let error = (f64::from(gradient[pixel]) - central).abs();
            assert!(
                error <= GRADIENT_TOLERANCE * largest,
                "image {image}, pixel {pixel}, T = {temperature}: gradient {}, central \
                 difference {central}",
                gradient[pixel],
            );
        }
    }
}

#[test]
fn odin_gradient_equals_candles_autograd() {
    let classifier = Classifier::from_safetensors(weights()).unwrap();
    let odin = OdinNetwork::new(&classifier.cnn).unwrap();
    let pixels = test_pixels();
    let values = classifier.logits(&pixels).unwrap();
    let logits = Logits::new(&values, NUM_CLASSES).unwrap();
    for temperature in [1.0, ODIN_TEMPERATURE] {
        let expected = autograd_gradient(&classifier.cnn, &pixels, temperature);
        let gradient = odin.log_max_softmax_gradient(&scaled(&pixels), temperature);
        assert_eq!(gradient.len(), expected.len());
        // candle's log-softmax backward takes 1 − S_ŷ in `f32`, all rounding where S_ŷ is near
        // 1 (at T = 1 most images): there its gradient is no reference.
        let confidences = max_softmax_probability(&logits, temperature).unwrap();
        let mut compared = 0;
        for (image, (gradient, expected)) in gradient
            .chunks_exact(IMAGE_PIXELS)
            .zip(expected.chunks_exact(IMAGE_PIXELS))
            .enumerate()
            .filter(|(image, _)| confidences[*image] <= AUTOGRAD_CONFIDENCE)
        {
            compared += 1;
            let largest = expected.iter().fold(0.0_f32, |m, g| m.max(g.abs()));
            assert!(largest > 0.0, "image {image}");
            for (pixel, (g, e)) in gradient.iter().zip(expected).enumerate() {
                assert!(
                    (g - e).abs() <= AUTOGRAD_TOLERANCE * largest,
                    "image {image}, pixel {pixel}, T = {temperature}: {g} against autograd's {e}"
                );
            }
        }
        assert!(
            compared >= 8,
            "{compared} images compared at T = {temperature}"
        );
    }
}

#[test]
fn pooling_for_the_gradient_matches_max_pool() {
    let values: Vec<f32> = (0..2 * 3 * 4 * 6).map(|i| ((i * 37) % 11) as f32).collect();
    let x = Tensor::from_vec(values, (2, 3, 4, 6), &Device::Cpu).unwrap();
    let expected: Vec<f32> = x
        .max_pool2d(2)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1()
        .unwrap();
    let pooled = max_pool_2x2_first_maximum(&x).unwrap();
    assert_eq!(pooled.dims(), &[2, 3, 2, 3]);
    assert_eq!(
        pooled.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
        expected
    );
    // The gradient of the sum: one 1 per window, at its first maximum.
    let variable =
        Var::from_tensor(&Tensor::ones((1, 1, 2, 2), DType::F32, &Device::Cpu).unwrap()).unwrap();
    let gradients = max_pool_2x2_first_maximum(variable.as_tensor())
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let gradient: Vec<f32> = gradients
        .get(variable.as_tensor())
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1()
        .unwrap();
    assert_eq!(gradient, [1.0, 0.0, 0.0, 0.0]);
}

#[test]
fn odin_without_perturbation_is_the_tempered_max_softmax() {
    let classifier = Classifier::from_safetensors(weights()).unwrap();
    let pixels = test_pixels();
    // The moved input's logits are the inference path's: at ε = 0, the same logits.
    let values = classifier.logits(&pixels).unwrap();
    let logits = Logits::new(&values, NUM_CLASSES).unwrap();
    for temperature in [1.0, ODIN_TEMPERATURE] {
        let expected = max_softmax_probability(&logits, temperature).unwrap();
        let scores = classifier.odin_scores(&pixels, temperature, 0.0).unwrap();
        assert_eq!(scores.len(), TEST_IMAGES);
        for (score, expected) in scores.iter().zip(&expected) {
            assert!(
                (score - expected).abs() <= PROBABILITY_TOLERANCE,
                "{score} against {expected} at T = {temperature}"
            );
        }
    }
}

#[test]
fn odin_step_raises_the_tempered_max_softmax() {
    let classifier = Classifier::from_safetensors(weights()).unwrap();
    let pixels = test_pixels();
    let values = classifier.logits(&pixels).unwrap();
    let clean = max_softmax_probability(
        &Logits::new(&values, NUM_CLASSES).unwrap(),
        ODIN_TEMPERATURE,
    )
    .unwrap();
    let perturbed = classifier
        .odin_scores(&pixels, ODIN_TEMPERATURE, ODIN_EPSILON)
        .unwrap();
    let raised = perturbed.iter().zip(&clean).filter(|(p, c)| p >= c).count();
    // A first-order ascent step: at least 95% of the images (61 of 64) gain.
    assert!(
        100 * raised >= 95 * TEST_IMAGES,
        "{raised} of {TEST_IMAGES}"
    );
    assert!(perturbed.iter().all(|&p| (0.1..=1.0).contains(&p)));
}

#[test]
fn odin_refuses_bad_parameters() {
    let classifier = Classifier::from_safetensors(weights()).unwrap();
    let image = [0_u8; IMAGE_PIXELS];
    for temperature in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            classifier.odin_scores(&image, temperature, ODIN_EPSILON),
            Err(ModelError::InvalidTemperature(_))
        ));
    }
    for epsilon in [-1e-3, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            classifier.odin_scores(&image, ODIN_TEMPERATURE, epsilon),
            Err(ModelError::InvalidPerturbation(_))
        ));
    }
    assert!(matches!(
        classifier.odin_scores(&image[1..], ODIN_TEMPERATURE, ODIN_EPSILON),
        Err(ModelError::PartialImage { len: 783 })
    ));
    assert!(classifier
        .odin_scores(&[], ODIN_TEMPERATURE, ODIN_EPSILON)
        .unwrap()
        .is_empty());
}

#[test]
fn a_blank_network_gives_zero_logits_of_the_trained_shape() {
    let pixels = test_pixels();
    let blank = Classifier::blank().unwrap().logits(&pixels).unwrap();
    let trained = Classifier::from_safetensors(weights())
        .unwrap()
        .logits(&pixels)
        .unwrap();
    assert_eq!(blank.len(), TEST_IMAGES * NUM_CLASSES);
    assert_eq!(blank.len(), trained.len());
    assert!(blank.iter().all(|&logit| logit == 0.0), "{blank:?}");
    assert!(trained.iter().any(|&logit| logit != 0.0));
}
