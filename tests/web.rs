//! Browser tests, run in headless Chromium by `scripts/test`
//! (`cargo test --target wasm32-unknown-unknown --test web`).

#![cfg(target_arch = "wasm32")]

use calibra::data::{parse_idx_images, parse_idx_labels};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

/// The committed Fashion-MNIST test set, exactly the bytes the page fetches.
const TEST_IMAGES_GZ: &[u8] = include_bytes!("../assets/fashion-mnist/t10k-images-idx3-ubyte.gz");
const TEST_LABELS_GZ: &[u8] = include_bytes!("../assets/fashion-mnist/t10k-labels-idx1-ubyte.gz");

/// Gzip inflation and IDX parsing work in the browser: 10,000 images, the known first labels.
#[wasm_bindgen_test]
fn parses_the_gzipped_test_set() {
    let images = parse_idx_images(TEST_IMAGES_GZ, "t10k-images-idx3-ubyte.gz")
        .expect("the committed test images parse");
    let labels = parse_idx_labels(TEST_LABELS_GZ, "t10k-labels-idx1-ubyte.gz")
        .expect("the committed test labels parse");
    assert_eq!(images.len(), 10_000);
    assert_eq!(labels.len(), 10_000);
    assert_eq!(labels[..5], [9, 2, 1, 1, 6]);
}
