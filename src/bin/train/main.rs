//! `train`: reproduces the bundled models from Fashion-MNIST.
//!
//! Recipe (the Keras original's, see `docs/definitions.md`): Adam (lr 1e-3, β = 0.9/0.999, ε = 1e-7 as in
//! Keras), batch 128, 15 epochs, seed 0; the first 10,000 training images are the validation
//! split (the temperature is fitted there), the other 50,000 are trained on. Weights start from
//! Glorot-uniform draws of a seeded ChaCha8 generator (biases zero), and each epoch's order comes
//! from the same generator, so a run is reproducible up to floating-point summation order.
//!
//! `--loss logitnorm` trains with LogitNorm (Wei et al., ICML 2022): cross-entropy of
//! z / (τ·(‖z‖₂ + 1e-7)); the saved network still outputs the raw logits z.
//!
//! Writes `<out-dir>/<name>.safetensors` (in the format the networks ship in, 8 and 16 bits),
//! the model card `<name>.json`, and the logits of the first 64 test images to
//! `tests/fixtures/<name>-first64-logits.json`. After every epoch it writes a checkpoint to
//! `--checkpoint-dir`; `--resume` continues from it to the same bits as an uninterrupted run,
//! so a stopped run loses at most one epoch.

// The binaries are native tools: on wasm32 (browser tests build every target) they are empty.
#![cfg_attr(target_arch = "wasm32", no_main)]
#![cfg(not(target_arch = "wasm32"))]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

mod adam;
mod checkpoint;

use std::collections::HashMap;

use adam::{Adam, AdamConfig};
use calibra::calibration::{self, Binning, CalibrationReport, Logits};
use calibra::data::NUM_CLASSES;
use calibra::data::{self, Dataset, FashionMnistPart, DEBIAN_FASHION_MNIST_DIR};
use calibra::model::{images_to_tensor, shipped, Classifier, Cnn};
use calibra::ood;
use candle_core::{DType, Device, Module, Tensor, D};
use candle_nn::{loss, VarBuilder, VarMap};
use checkpoint::{Checkpoint, Progress};
use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Images held out at the start of the training file for fitting the temperature.
const VALIDATION_SIZE: usize = 10_000;
/// Test images whose logits form the committed fixture.
const FIXTURE_IMAGES: usize = 64;
/// Reliability bins of the card's ECE (the page's default).
const CARD_BINS: usize = 15;
/// The network, in words, for the card.
const ARCHITECTURE: &str = "Conv3x3(32, same)+ReLU, MaxPool2, Conv3x3(64, same)+ReLU, MaxPool2, \
                            Flatten, Dense128+ReLU, Dense10 (logits)";
/// The weights' storage, for the card.
const WEIGHTS: &str = "the format the page ships (src/model/shipped.rs): the first dense \
    layer's 401,408 weights in 8 bits, round(w / s) with a float32 scale s = max |w| / 127 per \
    row, and every other tensor in float16, all from the float32 weights at the end of \
    training; the network computes in float32 from them as read back, and the evaluation is of \
    these weights";
/// What the card promises about reruns, as far as it was measured.
const REPRODUCIBILITY: &str = "Weights start from a seeded ChaCha8 draw and batches come in a \
    seeded order. With one thread (RAYON_NUM_THREADS=1) two runs on the same machine gave \
    bit-identical weights (checked on one-epoch runs), and `train --resume` continues a stopped \
    run to the same bits. candle picks its matrix kernels by the processor's vector extensions \
    (training.cpu_features), so on another kind of processor the weights, and with them every \
    figure here, come out different: a full one-thread rerun of fmnist-ce on an AVX-512 machine \
    gave test accuracy 0.9134 and T 1.683 where this project's card had 0.9120 and 1.759 (all in \
    float32; stored as they ship, its weights give 0.9122 and 1.760). A second seed measures the \
    spread between runs: fmnist-ce with seed 1 (one thread, an AVX-512 Xeon; its card is \
    docs/reproducibility/fmnist-ce-seed1.json) gave test accuracy 0.9135, T 1.656 and ECE \
    0.0414 -> 0.0060 where seed 0 had 0.9120, 1.759 and 0.0430 -> 0.0103, so another seed moves \
    the figures about as much as another machine. More threads also change \
    the summation order; that spread has not been measured.";
/// What the Keras original of this recipe and the LogitNorm paper lead one to expect.
const CE_EXPECTATIONS: &str = "The Keras original of this network and recipe reaches a test \
    accuracy of about 91-92% and a fitted T of about 1.63. Expect the same accuracy and an \
    overconfident network (T > 1); the exact T depends on the initial weights, the batch order \
    and the framework's numerics, none of which are Keras's here.";
const LOGITNORM_EXPECTATIONS: &str = "LogitNorm trains on the logits divided by tau times their \
    length, a loss that does not change when the logits grow, so nothing pushes the raw logits \
    to grow (test_logit_norm records their length). On CIFAR-10 the paper reports a badly \
    calibrated network before scaling (Wei et al. 2022, table 4: ECE 66.95%) that temperature \
    scaling repairs, and accuracy equal to cross-entropy's; test_before_scaling and \
    test_after_scaling say whether that holds here at this tau.";
/// LogitNorm's guard against a zero norm (the paper's 1e-7).
const LOGITNORM_EPSILON: f64 = 1e-7;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum LossKind {
    /// Softmax cross-entropy on the logits.
    Ce,
    /// Cross-entropy on logits divided by τ times their L2 norm.
    Logitnorm,
}

#[derive(Debug, Parser)]
#[command(about = "Train the bundled Fashion-MNIST CNN")]
struct Args {
    /// Training loss.
    #[arg(long, value_enum, default_value = "ce")]
    loss: LossKind,
    /// LogitNorm temperature τ (ignored for --loss ce).
    #[arg(long, default_value_t = 0.04)]
    tau: f64,
    #[arg(long, default_value_t = 15)]
    epochs: usize,
    #[arg(long, default_value_t = 128)]
    batch_size: usize,
    #[arg(long, default_value_t = 1e-3)]
    learning_rate: f64,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Folder with Fashion-MNIST's four *-ubyte.gz files.
    #[arg(long, default_value = DEBIAN_FASHION_MNIST_DIR)]
    data_dir: PathBuf,
    /// Where the weights and the model card go.
    #[arg(long, default_value = "assets/models")]
    out_dir: PathBuf,
    /// Where the logits fixture goes.
    #[arg(long, default_value = "tests/fixtures")]
    fixture_dir: PathBuf,
    /// File name stem; default `fmnist-ce` or `fmnist-logitnorm`.
    #[arg(long)]
    name: Option<String>,
    /// Train on only the first N training images after the validation split (smoke runs).
    #[arg(long)]
    limit: Option<usize>,
    /// Continue from the checkpoint in `--checkpoint-dir` if there is one (start afresh if not).
    #[arg(long)]
    resume: bool,
    /// Where the per-epoch checkpoint goes.
    #[arg(long, default_value = "checkpoints")]
    checkpoint_dir: PathBuf,
    /// Stop once this many epochs are done in all, keeping the checkpoint (to split a long run
    /// into parts that `--resume` joins).
    #[arg(long)]
    stop_after: Option<usize>,
    /// Skip training: reload `<name>.safetensors` (rewritten in the shipped format if it is in
    /// another), keep the card's recipe and training record, and recompute its evaluation and
    /// the fixture (after a change to a metric, say).
    #[arg(long)]
    evaluate_only: bool,
}

#[derive(Debug, Serialize, Deserialize)]
struct Recipe {
    loss: LossKind,
    tau: Option<f64>,
    epochs: usize,
    batch_size: usize,
    learning_rate: f64,
    optimizer: String,
    seed: u64,
    initialisation: String,
    train_images: usize,
    validation_images: usize,
}

#[derive(Debug, Serialize, Deserialize)]
struct Split {
    accuracy: f64,
    nll: f64,
    brier: f64,
    ece: f64,
}

impl From<&CalibrationReport> for Split {
    fn from(report: &CalibrationReport) -> Self {
        Self {
            accuracy: report.accuracy,
            nll: report.nll,
            brier: report.brier,
            ece: report.ece,
        }
    }
}

/// What the training run itself measured.
#[derive(Debug, Serialize, Deserialize)]
struct TrainingRecord {
    /// Training seconds, summed over the runs a resumed training took.
    seconds: f64,
    threads: usize,
    final_epoch_loss: f64,
    final_epoch_train_accuracy: f64,
    /// The processor that ran the last epoch and the vector extensions it has: candle picks its
    /// matrix kernels by these at run time, so they decide the last bits of the weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cpu: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    cpu_features: Vec<String>,
    /// `git rev-parse HEAD` of the code that trained it (`+modified` if the tree differed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    commit: Option<String>,
}

/// Mean and standard deviation of the logits' length `‖z‖₂` over a set of images.
#[derive(Debug, Serialize, Deserialize)]
struct NormSummary {
    mean: f64,
    std: f64,
}

/// The trained network measured on the training, validation and test images.
#[derive(Debug, Serialize, Deserialize)]
struct Evaluation {
    /// On the 50,000 training images with the final weights.
    train_accuracy: f64,
    validation_accuracy: f64,
    fitted_temperature: f64,
    temperature_bound_hit: bool,
    ece_bins: usize,
    test_before_scaling: Split,
    test_after_scaling: Split,
    /// `‖z‖₂` on the test images.
    test_logit_norm: NormSummary,
}

#[derive(Debug, Serialize, Deserialize)]
struct ModelCard {
    name: String,
    architecture: String,
    recipe: Recipe,
    training_data_sha256: String,
    training: TrainingRecord,
    /// How the weights are stored, and so what the evaluation describes.
    #[serde(default)]
    weights: String,
    /// Always recomputed from the weights, so a stored one is not read back.
    #[serde(skip_deserializing)]
    evaluation: Option<Evaluation>,
    /// How far two runs of the recipe may differ.
    #[serde(default)]
    reproducibility: String,
    /// How the figures compare with what the seeds report, and why they may differ.
    #[serde(default)]
    expectations: String,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("train: {message}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    let name = args.name.clone().unwrap_or_else(|| match args.loss {
        LossKind::Ce => "fmnist-ce".to_string(),
        LossKind::Logitnorm => "fmnist-logitnorm".to_string(),
    });
    let weights_path = args.out_dir.join(format!("{name}.safetensors"));
    let card_path = args.out_dir.join(format!("{name}.json"));
    let train_all = data::load_fashion_mnist(&args.data_dir, FashionMnistPart::Train)
        .map_err(|e| e.to_string())?;
    let test = data::load_fashion_mnist(&args.data_dir, FashionMnistPart::Test)
        .map_err(|e| e.to_string())?;
    if train_all.len() <= VALIDATION_SIZE {
        return Err(format!(
            "{} training images: need more than the {VALIDATION_SIZE} held out for validation",
            train_all.len()
        ));
    }
    let validation = train_all.select(&(0..VALIDATION_SIZE).collect::<Vec<_>>());
    let train_end = args.limit.map_or(train_all.len(), |n| {
        (VALIDATION_SIZE + n).min(train_all.len())
    });
    let train = train_all.select(&(VALIDATION_SIZE..train_end).collect::<Vec<_>>());

    let mut card = if args.evaluate_only {
        // Weights in another format (f32 or f16, from an earlier version) are written in the
        // shipped one; shipped weights are left as they are.
        let committed =
            std::fs::read(&weights_path).map_err(|e| format!("{}: {e}", weights_path.display()))?;
        if !shipped::is_shipped(&committed) {
            let tensors = shipped::decode(&committed)
                .map_err(|e| format!("{}: {e}", weights_path.display()))?;
            save_shipped_weights(&tensors, &weights_path)?;
        }
        let text = std::fs::read_to_string(&card_path)
            .map_err(|e| format!("{}: {e}", card_path.display()))?;
        serde_json::from_str::<ModelCard>(&text)
            .map_err(|e| format!("{}: not a model card: {e}", card_path.display()))?
    } else {
        let Some(training) = train_network(args, &name, &train)? else {
            return Ok(());
        };
        std::fs::create_dir_all(&args.out_dir)
            .map_err(|e| format!("{}: {e}", args.out_dir.display()))?;
        let trained = training
            .varmap
            .data()
            .lock()
            .map_err(|e| e.to_string())?
            .iter()
            .map(|(name, var)| (name.clone(), var.as_tensor().clone()))
            .collect();
        save_shipped_weights(&trained, &weights_path)?;
        Checkpoint::new(&args.checkpoint_dir, &name).remove()?;
        let progress = training.progress;
        ModelCard {
            name: name.clone(),
            architecture: ARCHITECTURE.to_string(),
            recipe: Recipe {
                loss: args.loss,
                tau: (args.loss == LossKind::Logitnorm).then_some(args.tau),
                epochs: args.epochs,
                batch_size: args.batch_size,
                learning_rate: args.learning_rate,
                optimizer: "Adam (beta1 0.9, beta2 0.999, eps 1e-7)".to_string(),
                seed: args.seed,
                initialisation: "Glorot uniform from ChaCha8(seed), biases zero".to_string(),
                train_images: train.len(),
                validation_images: validation.len(),
            },
            training_data_sha256: training_data_sha256(&args.data_dir)?,
            training: TrainingRecord {
                seconds: progress.seconds,
                threads: rayon_threads(),
                final_epoch_loss: progress.last_epoch_loss,
                final_epoch_train_accuracy: progress.last_epoch_accuracy,
                cpu: cpu_model(),
                cpu_features: cpu_features(),
                commit: code_commit(),
            },
            weights: String::new(),
            evaluation: None,
            reproducibility: String::new(),
            expectations: String::new(),
        }
    };
    card.weights = WEIGHTS.to_string();
    card.reproducibility = REPRODUCIBILITY.to_string();
    card.expectations = match args.loss {
        LossKind::Ce => CE_EXPECTATIONS,
        LossKind::Logitnorm => LOGITNORM_EXPECTATIONS,
    }
    .to_string();
    write_json(&card_path, &card)?;

    // Reload through the inference path, so the card describes exactly what ships.
    let bytes =
        std::fs::read(&weights_path).map_err(|e| format!("{}: {e}", weights_path.display()))?;
    let classifier = Classifier::from_safetensors(bytes).map_err(|e| e.to_string())?;
    let validation_logits = classifier
        .logits(validation.images.pixels())
        .map_err(|e| e.to_string())?;
    let test_logits = classifier
        .logits(test.images.pixels())
        .map_err(|e| e.to_string())?;
    let train_logits = classifier
        .logits(train.images.pixels())
        .map_err(|e| e.to_string())?;
    let evaluation = evaluate(
        (&train_logits, &train),
        (&validation_logits, &validation),
        (&test_logits, &test),
    )?;
    println!(
        "{name}: test accuracy {:.4}, fitted T {:.4}, test ECE {:.4} -> {:.4}",
        evaluation.test_before_scaling.accuracy,
        evaluation.fitted_temperature,
        evaluation.test_before_scaling.ece,
        evaluation.test_after_scaling.ece
    );
    card.evaluation = Some(evaluation);
    write_json(&card_path, &card)?;
    std::fs::create_dir_all(&args.fixture_dir)
        .map_err(|e| format!("{}: {e}", args.fixture_dir.display()))?;
    let fixture_path = args.fixture_dir.join(format!("{name}-first64-logits.json"));
    write_json(&fixture_path, &test_logits[..FIXTURE_IMAGES * NUM_CLASSES])?;
    println!(
        "wrote {}, {} and {}",
        weights_path.display(),
        card_path.display(),
        fixture_path.display()
    );
    Ok(())
}

/// Writes the weights in the format they ship in (`calibra::model::shipped`: the first dense
/// layer in 8 bits with a scale per row, the rest in f16), a quarter of their f32 bytes: the
/// card, the fixture and every figure are computed from these weights as read back.
fn save_shipped_weights(tensors: &HashMap<String, Tensor>, path: &Path) -> Result<(), String> {
    let bytes = shipped::encode(tensors).map_err(|e| e.to_string())?;
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Threads candle's CPU kernels use (rayon's pool: `RAYON_NUM_THREADS` or one per core).
fn rayon_threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Draws every weight from Glorot-uniform, U(±sqrt(6 / (fan_in + fan_out))) as Keras does, and
/// sets biases to zero; variables are visited in name order so the draw is reproducible.
fn glorot_initialise(varmap: &VarMap, rng: &mut ChaCha8Rng) -> candle_core::Result<()> {
    let data = varmap
        .data()
        .lock()
        .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
    let mut names: Vec<&String> = data.keys().collect();
    names.sort();
    for name in names {
        let var = &data[name];
        let dims = var.dims().to_vec();
        let values: Vec<f32> = if name.ends_with(".bias") {
            vec![0.0; var.elem_count()]
        } else {
            let receptive: usize = dims[2..].iter().product();
            let (fan_out, fan_in) = (dims[0] * receptive, dims[1] * receptive);
            let limit = (6.0 / (fan_in + fan_out) as f64).sqrt();
            (0..var.elem_count())
                .map(|_| rng.random_range(-limit..limit) as f32)
                .collect()
        };
        var.set(&Tensor::from_vec(values, dims, var.device())?)?;
    }
    Ok(())
}

/// A finished training: the weights and what the last epoch measured.
struct Trained {
    varmap: VarMap,
    progress: Progress,
}

/// The recipe in words, stored in the checkpoint so that a resume with other settings refuses.
fn recipe_fingerprint(args: &Args, train_images: usize) -> String {
    format!(
        "loss {:?}, tau {}, epochs {}, batch {}, lr {}, seed {}, {train_images} training images",
        args.loss, args.tau, args.epochs, args.batch_size, args.learning_rate, args.seed
    )
}

/// Trains the network (continuing from the checkpoint with `--resume`), writing a checkpoint
/// after every epoch. Returns `None` when `--stop-after` ended the run before the last epoch.
fn train_network(args: &Args, name: &str, train: &Dataset) -> Result<Option<Trained>, String> {
    let device = Device::Cpu;
    let varmap = VarMap::new();
    let cnn = Cnn::new(VarBuilder::from_varmap(&varmap, DType::F32, &device))
        .map_err(|e| e.to_string())?;
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    glorot_initialise(&varmap, &mut rng).map_err(|e| e.to_string())?;
    let named_vars = {
        let data = varmap.data().lock().map_err(|e| e.to_string())?;
        data.iter()
            .map(|(name, var)| (name.clone(), var.clone()))
            .collect::<Vec<_>>()
    };
    let mut optimizer = Adam::new(
        named_vars.clone(),
        AdamConfig {
            learning_rate: args.learning_rate,
            beta1: 0.9,
            beta2: 0.999,
            epsilon: 1e-7,
        },
    )
    .map_err(|e| e.to_string())?;
    let checkpoint = Checkpoint::new(&args.checkpoint_dir, name);
    let recipe = recipe_fingerprint(args, train.len());
    let mut progress = Progress {
        recipe: recipe.clone(),
        epochs_done: 0,
        adam_steps: 0,
        rng_word_pos: rng.get_word_pos(),
        order: (0..train.len()).collect(),
        seconds: 0.0,
        last_epoch_loss: 0.0,
        last_epoch_accuracy: 0.0,
    };
    if args.resume {
        if let Some((tensors, saved)) = checkpoint.load()? {
            if saved.recipe != recipe {
                return Err(format!(
                    "the checkpoint in {} is of another recipe ({}), not {recipe}",
                    args.checkpoint_dir.display(),
                    saved.recipe
                ));
            }
            for (var_name, var) in &named_vars {
                let tensor = tensors
                    .get(var_name)
                    .ok_or_else(|| format!("the checkpoint has no tensor {var_name}"))?;
                var.set(tensor).map_err(|e| e.to_string())?;
            }
            optimizer
                .restore(&tensors, saved.adam_steps)
                .map_err(|e| e.to_string())?;
            rng.set_word_pos(saved.rng_word_pos);
            eprintln!("{name}: resuming after epoch {}", saved.epochs_done);
            progress = saved;
        }
    }
    let last_epoch = args.stop_after.map_or(args.epochs, |n| n.min(args.epochs));
    let batches = train.len().div_ceil(args.batch_size);
    let bar = ProgressBar::new((args.epochs * batches) as u64);
    bar.set_position((progress.epochs_done * batches) as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix} [{bar:30}] {pos}/{len} batches, {elapsed_precise} elapsed, eta {eta} {msg}",
        )
        .map_err(|e| e.to_string())?
        .progress_chars("=> "),
    );
    for epoch in progress.epochs_done + 1..=last_epoch {
        bar.set_prefix(format!("epoch {epoch}/{}", args.epochs));
        progress.order.shuffle(&mut rng);
        let epoch_started = Instant::now();
        let (loss, accuracy) =
            train_epoch(args, &cnn, &mut optimizer, train, &progress.order, &bar)
                .map_err(|e| e.to_string())?;
        let seconds = epoch_started.elapsed().as_secs_f64();
        progress.epochs_done = epoch;
        progress.adam_steps = optimizer.step_count();
        progress.rng_word_pos = rng.get_word_pos();
        progress.seconds += seconds;
        progress.last_epoch_loss = loss;
        progress.last_epoch_accuracy = accuracy;
        let mut tensors: HashMap<String, Tensor> = named_vars
            .iter()
            .map(|(var_name, var)| (var_name.clone(), var.as_tensor().clone()))
            .collect();
        tensors.extend(optimizer.moments());
        checkpoint.save(tensors, &progress)?;
        bar.suspend(|| {
            eprintln!(
                "epoch {epoch}: loss {loss:.4}, train accuracy {accuracy:.4}, {:.0} images/s, checkpoint saved",
                train.len() as f64 / seconds
            )
        });
    }
    bar.finish_and_clear();
    if progress.epochs_done < args.epochs {
        eprintln!(
            "{name}: stopped after epoch {} of {}; --resume continues from {}",
            progress.epochs_done,
            args.epochs,
            args.checkpoint_dir.display()
        );
        return Ok(None);
    }
    Ok(Some(Trained { varmap, progress }))
}

/// One pass over the training images in `order`; returns the mean loss and the accuracy.
fn train_epoch(
    args: &Args,
    cnn: &Cnn,
    optimizer: &mut Adam,
    train: &Dataset,
    order: &[usize],
    bar: &ProgressBar,
) -> candle_core::Result<(f64, f64)> {
    let device = Device::Cpu;
    let started = Instant::now();
    let (mut loss_sum, mut correct, mut seen) = (0.0f64, 0usize, 0usize);
    for batch in order.chunks(args.batch_size) {
        let examples = train.select(batch);
        let input = images_to_tensor(examples.images.pixels(), &device)
            .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
        let labels: Vec<u32> = examples.labels.iter().map(|&l| u32::from(l)).collect();
        let labels = Tensor::new(labels.as_slice(), &device)?;
        let logits = cnn.forward(&input)?;
        let loss = match args.loss {
            LossKind::Ce => loss::cross_entropy(&logits, &labels)?,
            LossKind::Logitnorm => {
                let norms = (logits.sqr()?.sum_keepdim(D::Minus1)?.sqrt()? + LOGITNORM_EPSILON)?;
                let normalised = logits.broadcast_div(&(norms * args.tau)?)?;
                loss::cross_entropy(&normalised, &labels)?
            }
        };
        optimizer.backward_step(&loss)?;
        let predictions = logits.argmax(D::Minus1)?;
        correct += predictions
            .eq(&labels)?
            .to_dtype(DType::U32)?
            .sum_all()?
            .to_scalar::<u32>()? as usize;
        loss_sum += f64::from(loss.to_scalar::<f32>()?) * batch.len() as f64;
        seen += batch.len();
        bar.inc(1);
        bar.set_message(format!(
            "loss {:.4}, accuracy {:.4}, {:.0} images/s",
            loss_sum / seen as f64,
            correct as f64 / seen as f64,
            seen as f64 / started.elapsed().as_secs_f64()
        ));
    }
    Ok((loss_sum / seen as f64, correct as f64 / seen as f64))
}

/// The processor's model name from `/proc/cpuinfo` (Linux), if it can be read.
fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix("model name"))
        .and_then(|rest| rest.split_once(':'))
        .map(|(_, model)| model.trim().to_string())
}

/// The x86 vector extensions that decide which of candle's kernels run.
fn cpu_features() -> Vec<String> {
    let mut features = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        macro_rules! detect {
            ($($feature:tt),*) => {
                $(if std::arch::is_x86_feature_detected!($feature) {
                    features.push($feature.to_string());
                })*
            };
        }
        detect!("sse4.1", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl");
    }
    features
}

/// The commit of the working tree, marked `+modified` when tracked files differ from it.
fn code_commit() -> Option<String> {
    let git = |args: &[&str]| std::process::Command::new("git").args(args).output().ok();
    let head = git(&["rev-parse", "HEAD"]).filter(|o| o.status.success())?;
    let commit = String::from_utf8_lossy(&head.stdout).trim().to_string();
    let clean = git(&["diff", "--quiet", "HEAD"]).is_some_and(|o| o.status.success());
    Some(if clean {
        commit
    } else {
        format!("{commit}+modified")
    })
}

/// Fits T on the validation logits and measures the test logits before and after scaling.
/// Each split is its logits `[n, 10]` and its data set.
fn evaluate(
    (train_logits, train): (&[f32], &Dataset),
    (validation_logits, validation): (&[f32], &Dataset),
    (test_logits, test): (&[f32], &Dataset),
) -> Result<Evaluation, String> {
    let labels = |d: &Dataset| d.labels.iter().map(|&l| u32::from(l)).collect::<Vec<u32>>();
    let (validation_labels, test_labels) = (labels(validation), labels(test));
    let validation_logits =
        Logits::new(validation_logits, NUM_CLASSES).map_err(|e| e.to_string())?;
    let test_logits = Logits::new(test_logits, NUM_CLASSES).map_err(|e| e.to_string())?;
    let fit = calibration::fit_temperature(&validation_logits, &validation_labels)
        .map_err(|e| e.to_string())?;
    let report = |logits: &Logits, labels: &[u32], t: f64| {
        calibration::evaluate(logits, labels, t, CARD_BINS, Binning::Width)
            .map(|r| Split::from(&r))
            .map_err(|e| e.to_string())
    };
    let train_labels = labels(train);
    let train_logits = Logits::new(train_logits, NUM_CLASSES).map_err(|e| e.to_string())?;
    Ok(Evaluation {
        train_accuracy: report(&train_logits, &train_labels, 1.0)?.accuracy,
        validation_accuracy: report(&validation_logits, &validation_labels, 1.0)?.accuracy,
        fitted_temperature: fit.temperature,
        temperature_bound_hit: fit.bound_hit.is_some(),
        ece_bins: CARD_BINS,
        test_before_scaling: report(&test_logits, &test_labels, 1.0)?,
        test_after_scaling: report(&test_logits, &test_labels, fit.temperature)?,
        test_logit_norm: norm_summary(&ood::logit_norms(&test_logits)),
    })
}

/// Mean and (population) standard deviation of the logits' lengths.
fn norm_summary(norms: &[f64]) -> NormSummary {
    let n = norms.len() as f64;
    let mean = norms.iter().sum::<f64>() / n;
    let variance = norms.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    NormSummary {
        mean,
        std: variance.sqrt(),
    }
}

/// SHA-256 over the training images file followed by the training labels file, as stored.
fn training_data_sha256(dir: &Path) -> Result<String, String> {
    let (images, labels) = data::fashion_mnist_paths(dir, FashionMnistPart::Train);
    let mut hasher = Sha256::new();
    for path in [images, labels] {
        let mut bytes = Vec::new();
        std::fs::File::open(&path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        hasher.update(&bytes);
    }
    Ok(format!("{:x}", hasher.finalize()))
}

fn write_json<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))
}
