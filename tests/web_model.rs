//! Browser test of the trained network: the logits computed in WebAssembly (simd128) match the
//! fixture the native training run wrote (`tests/fixtures/fmnist-ce-first64-logits.json`, the
//! logits `[64, 10]` row-major of the first 64 test images).
//!
//! Not run yet: the weights are still training. Once `assets/models/fmnist-ce.safetensors` and
//! the fixture are committed, add `--test web_model` to the wasm stage of `scripts/test`.

#![cfg(target_arch = "wasm32")]

use calibra::data::{parse_idx_images, IMAGE_PIXELS};
use calibra::model::{Classifier, NUM_CLASSES};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

const WEIGHTS: &[u8] = include_bytes!("../assets/models/fmnist-ce.safetensors");
const FIXTURE_LOGITS_JSON: &str = include_str!("fixtures/fmnist-ce-first64-logits.json");
const TEST_IMAGES_GZ: &[u8] = include_bytes!("../assets/fashion-mnist/t10k-images-idx3-ubyte.gz");
/// Images the fixture covers.
const FIXTURE_IMAGES: usize = 64;
/// Largest absolute difference allowed between a browser logit and the native one: f32 sums
/// taken in a different order (simd128 versus the native kernels) differ by far less.
const LOGIT_TOLERANCE: f32 = 1e-3;

/// The browser's forward pass reproduces the native logits of the first 64 test images.
#[wasm_bindgen_test]
fn browser_logits_match_the_native_fixture() {
    let expected: Vec<f32> =
        serde_json::from_str(FIXTURE_LOGITS_JSON).expect("the fixture is a JSON array of numbers");
    assert_eq!(expected.len(), FIXTURE_IMAGES * NUM_CLASSES);

    let images = parse_idx_images(TEST_IMAGES_GZ, "t10k-images-idx3-ubyte.gz")
        .expect("the committed test images parse");
    let classifier =
        Classifier::from_safetensors(WEIGHTS.to_vec()).expect("the committed weights load");
    let actual = classifier
        .logits(&images.pixels()[..FIXTURE_IMAGES * IMAGE_PIXELS])
        .expect("inference runs");

    assert_eq!(actual.len(), expected.len());
    for (index, (a, e)) in actual.iter().zip(&expected).enumerate() {
        assert!(
            (a - e).abs() <= LOGIT_TOLERANCE,
            "image {}, class {}: browser logit {a}, native {e}",
            index / NUM_CLASSES,
            index % NUM_CLASSES,
        );
    }
}
