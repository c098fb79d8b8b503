//! The committed networks against their committed logits fixtures: the first 64 test images,
//! run natively through the inference path, give the logits `train` recorded, and the same
//! logits as candle-nn's plain forward pass (`Cnn::forward`, the network as trained).

use std::path::{Path, PathBuf};

use calibra::data::NUM_CLASSES;
use calibra::data::{self, FashionMnistPart, IMAGE_PIXELS};
use calibra::model::{images_to_tensor, Classifier, Cnn};
use candle_core::{DType, Device, Module};

/// The inference path against the logits `train` recorded (through the inference path of its
/// day, whose dense layers were candle's) and against the plain forward pass: all in `f32`,
/// summing in different orders inside the matrix products (logits are at most a few tens;
/// rounding is about 1e-6, and a dense layer sums 3,136 products).
const TOLERANCE: f32 = 1e-4;
const FIXTURE_IMAGES: usize = 64;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn check_fixture(name: &str) {
    let weights = std::fs::read(root().join(format!("assets/models/{name}.safetensors"))).unwrap();
    let fixture: Vec<f32> = serde_json::from_str(
        &std::fs::read_to_string(root().join(format!("tests/fixtures/{name}-first64-logits.json")))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(fixture.len(), FIXTURE_IMAGES * NUM_CLASSES);
    let test =
        data::load_fashion_mnist(&root().join("assets/fashion-mnist"), FashionMnistPart::Test)
            .unwrap();
    let pixels = &test.images.pixels()[..FIXTURE_IMAGES * IMAGE_PIXELS];
    let vb = calibra::model::shipped::var_builder(&weights, DType::F32).unwrap();
    let plain: Vec<f32> = Cnn::new(vb)
        .unwrap()
        .forward(&images_to_tensor(pixels, &Device::Cpu).unwrap())
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1()
        .unwrap();
    let classifier = Classifier::from_safetensors(weights).unwrap();
    let logits = classifier.logits(pixels).unwrap();
    for (reference, what) in [(&fixture, "fixture"), (&plain, "plain forward")] {
        assert_eq!(logits.len(), reference.len());
        for (index, (a, b)) in logits.iter().zip(reference).enumerate() {
            assert!(
                (a - b).abs() <= TOLERANCE,
                "{name}: image {}, class {}: {a} vs {what} {b}",
                index / NUM_CLASSES,
                index % NUM_CLASSES
            );
        }
    }
}

/// Every committed network, from its weights file's name.
fn committed_networks() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("assets/models"))
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".safetensors").map(str::to_string)
        })
        .collect();
    names.sort();
    names
}

#[test]
fn every_committed_model_reproduces_its_fixture() {
    let names = committed_networks();
    assert!(
        names.len() >= 2,
        "the cross-entropy and LogitNorm networks: {names:?}"
    );
    for name in names {
        check_fixture(&name);
    }
}

#[test]
fn inference_refuses_ragged_pixels_and_bad_weights() {
    let weights = std::fs::read(root().join("assets/models/fmnist-ce.safetensors")).unwrap();
    let classifier = Classifier::from_safetensors(weights).unwrap();
    let error = classifier.logits(&[0; IMAGE_PIXELS + 1]).unwrap_err();
    assert!(error.to_string().contains("785 pixel bytes"), "{error}");
    let error = Classifier::from_safetensors(b"not safetensors".to_vec()).unwrap_err();
    assert!(
        error.to_string().contains("cannot load the model weights"),
        "{error}"
    );
}
