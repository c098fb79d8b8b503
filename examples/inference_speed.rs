//! Measures inference throughput natively: candle-nn's plain forward pass (`Cnn::forward`, the
//! network as trained) against the classifier's inference path (`Classifier::logits`, NHWC with
//! Winograd's F(2×2, 3×3) convolutions), on the same images in the same process, and prints
//! both in images/s and their ratio, and the largest difference between their logits on the
//! first batch. Asserts nothing.
//!
//! `RAYON_NUM_THREADS=1 cargo run --release --example inference_speed [-- BATCH [ROUNDS]]`
//! (defaults: batches of 256 images, 5 rounds over the committed test set's first 2,560
//! images). Each round times both paths on every batch, alternating which goes first; the
//! figure per path is its best round, the least disturbed by other work on the machine. Runs
//! `assets/models/fmnist-ce.safetensors`. Exits with status 2 and a message when the model or
//! the data is missing or unreadable, or an argument is not a positive number.

use std::error::Error;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use calibra::data::{self, IMAGE_PIXELS};
use calibra::model::{images_to_tensor, Classifier, Cnn};
use candle_core::{DType, Device, Module};

/// Images timed per round.
const IMAGES: usize = 2_560;

/// What running one batch through a forward pass returns.
type Outcome = Result<(), Box<dyn Error>>;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("inference_speed: {error}");
            ExitCode::from(2)
        }
    }
}

/// The positional argument at `index`, a positive whole number, or `default`.
fn positive_argument(index: usize, default: usize) -> Result<usize, Box<dyn Error>> {
    match std::env::args().nth(index) {
        None => Ok(default),
        Some(text) => match text.parse::<usize>() {
            Ok(value) if value > 0 => Ok(value),
            _ => Err(
                format!("argument {index} must be a positive whole number, got {text:?}").into(),
            ),
        },
    }
}

/// How long one pass over `pixels`, in batches of `batch` images, takes through `forward`.
fn timed(
    pixels: &[u8],
    batch: usize,
    forward: impl Fn(&[u8]) -> Outcome,
) -> Result<Duration, Box<dyn Error>> {
    let started = Instant::now();
    for chunk in pixels.chunks(batch * IMAGE_PIXELS) {
        forward(chunk)?;
    }
    Ok(started.elapsed())
}

fn run() -> Result<(), Box<dyn Error>> {
    let batch = positive_argument(1, 256)?;
    let rounds = positive_argument(2, 5)?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let weights = std::fs::read(root.join("assets/models/fmnist-ce.safetensors"))?;
    let images = data::load_images(&root.join("assets/fashion-mnist/t10k-images-idx3-ubyte.gz"))?;
    let pixels = images
        .pixels()
        .get(..IMAGES * IMAGE_PIXELS)
        .ok_or(format!("the test set has fewer than {IMAGES} images"))?;

    let device = Device::Cpu;
    let vb = calibra::model::shipped::var_builder(&weights, DType::F32)?;
    let cnn = Cnn::new(vb)?;
    let classifier = Classifier::from_safetensors(weights)?;
    let plain = |batch: &[u8]| -> Outcome {
        cnn.forward(&images_to_tensor(batch, &device)?)?;
        Ok(())
    };
    let fast = |batch: &[u8]| -> Outcome {
        classifier.logits(batch)?;
        Ok(())
    };

    let (mut best_plain, mut best_fast) = (Duration::MAX, Duration::MAX);
    for round in 0..rounds {
        // Alternate which path goes first, so neither always runs on the other's warm caches.
        let (plain_time, fast_time) = if round % 2 == 0 {
            let plain_time = timed(pixels, batch, plain)?;
            (plain_time, timed(pixels, batch, fast)?)
        } else {
            let fast_time = timed(pixels, batch, fast)?;
            (timed(pixels, batch, plain)?, fast_time)
        };
        best_plain = best_plain.min(plain_time);
        best_fast = best_fast.min(fast_time);
    }
    let first = &pixels[..batch.min(IMAGES) * IMAGE_PIXELS];
    let plain_logits = cnn
        .forward(&images_to_tensor(first, &device)?)?
        .flatten_all()?
        .to_vec1::<f32>()?;
    let largest_difference = classifier
        .logits(first)?
        .iter()
        .zip(&plain_logits)
        .fold(0.0_f32, |largest, (a, b)| largest.max((a - b).abs()));
    let throughput = [best_plain, best_fast].map(|elapsed| IMAGES as f64 / elapsed.as_secs_f64());
    println!(
        "threads: {} (RAYON_NUM_THREADS), batch {batch}, {IMAGES} images, best of {rounds} rounds",
        std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "all".to_string())
    );
    println!(
        "candle-nn forward (Cnn::forward): {:.0} images/s",
        throughput[0]
    );
    println!(
        "inference path (Classifier::logits): {:.0} images/s",
        throughput[1]
    );
    println!("ratio: {:.2}x", throughput[1] / throughput[0]);
    println!("largest |logit difference| on the first batch: {largest_difference:.2e}");
    Ok(())
}
