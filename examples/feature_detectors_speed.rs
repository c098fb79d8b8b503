//! What the feature detectors cost natively, part by part: the forward pass with and without
//! the features (`Classifier::features_and_logits` against `Classifier::logits`), then
//! `ood_features::FittedDetectors`' fit on a calibration half of the test images (5,000 images,
//! the page's split 0), its scores of the evaluation half and of the 2,000 MNIST digits, and
//! the bootstrap intervals of one score (`ood_difference::detection_intervals`). Prints the
//! seconds of each and what the features weigh beside the logits. Asserts nothing.
//!
//! `RAYON_NUM_THREADS=1 cargo run --release --example feature_detectors_speed [-- MODEL]`
//! (default `assets/models/fmnist-ce.safetensors`). Exits with status 2 and a message when the
//! model or the data is missing or unreadable.

use std::error::Error;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use calibra::data::{self, IMAGE_PIXELS, NUM_CLASSES};
use calibra::lab::DIFFERENCE_BOOTSTRAP;
use calibra::model::{Classifier, HIDDEN_UNITS};
use calibra::ood_difference::detection_intervals;
use calibra::ood_features::{Features, FittedDetectors, LastLayer};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("feature_detectors_speed: {error}");
            ExitCode::from(2)
        }
    }
}

/// Runs `work` once and prints how long it took under `label`.
fn timed<T>(label: &str, work: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let result = work();
    println!("{label:<48}{:>9.3} s", started.elapsed().as_secs_f64());
    result
}

fn run() -> Result<(), Box<dyn Error>> {
    let model = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "assets/models/fmnist-ce.safetensors".to_string());
    let classifier = Classifier::from_safetensors(std::fs::read(&model)?)?;
    let test = data::load_images(Path::new("assets/fashion-mnist/t10k-images-idx3-ubyte.gz"))?;
    let labels = data::load_labels(Path::new("assets/fashion-mnist/t10k-labels-idx1-ubyte.gz"))?;
    let digits = data::load_images(Path::new("assets/mnist-ood-images-idx3-ubyte.gz"))?;
    timed("logits of the 10,000 test images", || {
        classifier.logits(test.pixels())
    })?;
    let (test_features, _) = timed("features and logits of the 10,000 test images", || {
        classifier.features_and_logits(test.pixels())
    })?;
    let (digit_features, _) = classifier.features_and_logits(digits.pixels())?;
    println!(
        "the features weigh {} bytes a image beside the logits' {}",
        HIDDEN_UNITS * 4,
        NUM_CLASSES * 4
    );
    let (calibration, evaluation) = data::seeded_split(test.pixels().len() / IMAGE_PIXELS, 0.5, 0);
    let rows = |indices: &[usize]| -> Vec<f32> {
        indices
            .iter()
            .flat_map(|&i| &test_features[i * HIDDEN_UNITS..(i + 1) * HIDDEN_UNITS])
            .copied()
            .collect()
    };
    let (fit, scored) = (rows(&calibration), rows(&evaluation));
    let fit_labels: Vec<u32> = calibration.iter().map(|&i| u32::from(labels[i])).collect();
    let (weight, bias) = classifier.last_layer()?;
    let last_layer = LastLayer::new(&weight, &bias, HIDDEN_UNITS)?;
    let detectors = timed("fit every detector on 5,000 images", || {
        FittedDetectors::fit(&Features::new(&fit, HIDDEN_UNITS)?, &fit_labels, last_layer)
    })?;
    let id_scores = timed("score the 5,000 evaluation images", || {
        detectors.scores(&Features::new(&scored, HIDDEN_UNITS)?)
    })?;
    let ood_scores = timed("score the 2,000 digits", || {
        detectors.scores(&Features::new(&digit_features, HIDDEN_UNITS)?)
    })?;
    timed("one score's intervals (1,000 resamples)", || {
        detection_intervals(&id_scores.vim, &ood_scores.vim, &DIFFERENCE_BOOTSTRAP)
    })?;
    Ok(())
}
