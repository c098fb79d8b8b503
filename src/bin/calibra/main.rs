//! `calibra`: the page's analyses on anyone's logits, from the command line.
//!
//! `calibra report` fits a temperature on a calibration part, reports calibration metrics on a
//! test part before and after scaling, with `--method` one of temperature scaling's rivals
//! (vector scaling, histogram binning, isotonic regression, Venn–Abers, Dirichlet calibration)
//! fitted and measured the same way,
//! and runs split conformal prediction with the scaled
//! probabilities (one threshold, or one per class with `--mondrian`); `calibra ood` compares
//! in-distribution and out-of-distribution logits with the MSP, max-logit and energy scores
//! (FPR95, AUROC, AUPR-In, AUPR-Out), or, with `--model` and images, those and the detectors
//! that read the network's features; `calibra logits` runs a bundled model on IDX images, or on
//! the corrupted copy the page's shift lab classifies (`--corruption`, `--severity`), and
//! `calibra features` writes its penultimate features. Bad
//! input exits with status 2 and a one-line message naming the file and the problem.

// The binaries are native tools: on wasm32 (browser tests build every target) they are empty.
#![cfg_attr(target_arch = "wasm32", no_main)]
#![cfg(not(target_arch = "wasm32"))]

mod ood;
mod ood_model;
mod report;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use calibra::calibration::{Binning, DEFAULT_NUM_BINS};
use calibra::conformal::{self, ScoreKind};
use calibra::data::NUM_CLASSES;
use calibra::estimator_cases::EstimatorCase;
use calibra::lab::ShiftedSet;
use calibra::model::{Classifier, HIDDEN_UNITS};
use calibra::recalibration::Method;
use calibra::shift::Corruption;
use calibra::temperature_anatomy::FitMistake;
use calibra::{data, input, own_image};
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "calibra",
    version,
    about = "Calibration, conformal prediction and OOD metrics on logits"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Temperature scaling, calibration metrics and split conformal prediction on logits.
    Report(ReportArgs),
    /// How well MSP, max-logit and energy separate in-distribution from OOD logits, or, with
    /// --model and images, those and the feature detectors.
    Ood(OodArgs),
    /// Logits of a bundled model for IDX images, written as a float32 .npy of shape [n, 10].
    Logits(LogitsArgs),
    /// Penultimate features of a bundled model for IDX images (the 128 activations after the
    /// first dense layer's ReLU), written as a float32 .npy of shape [n, 128].
    Features(NetworkRun),
}

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Logits (.npy [n, K] float, or .csv/.txt rows of K numbers); the calibration part.
    #[arg(long)]
    pub logits: PathBuf,
    /// Labels (.npy [n] integers, or one integer a line).
    #[arg(long)]
    pub labels: PathBuf,
    /// Test logits; without them, --logits is split into calibration and test parts.
    #[arg(long, requires = "test_labels")]
    pub test_logits: Option<PathBuf>,
    #[arg(long, requires = "test_logits")]
    pub test_labels: Option<PathBuf>,
    /// Fraction of rows used for calibration when splitting.
    #[arg(long, default_value_t = data::CALIBRATION_FRACTION, allow_negative_numbers = true)]
    pub cal_fraction: f64,
    /// Seed of the split and of the randomized scores' uniform draws.
    #[arg(long, default_value_t = u64::from(data::DEFAULT_SPLIT_SEED), allow_negative_numbers = true)]
    pub seed: u64,
    /// Use this temperature instead of fitting one.
    #[arg(long, allow_negative_numbers = true)]
    pub temperature: Option<f64>,
    /// The recalibration fitted on the calibration part and reported on the test part beside
    /// temperature scaling's metrics: temperature, normalized (one temperature for the logits
    /// divided by their length, LogitNorm's form), vector (a scale and bias per class),
    /// histogram (binning of the top-label confidence), isotonic (regression of it), venn-abers
    /// (the Venn–Abers predictor of it) or dirichlet (Dirichlet calibration with ODIR, at most
    /// 20 classes).
    #[arg(long, value_enum, default_value = "temperature")]
    pub method: Method,
    /// Miscoverage level of the prediction sets.
    #[arg(long, default_value_t = conformal::DEFAULT_ALPHA, allow_negative_numbers = true)]
    pub alpha: f64,
    #[arg(long, value_enum, default_value_t = ScoreKind::default())]
    pub score: ScoreKind,
    /// Class-conditional (Mondrian) thresholds: one q̂ per class, from that class's calibration
    /// rows.
    #[arg(long)]
    pub mondrian: bool,
    /// Clustered conformal thresholds (Ding et al. 2023): classes whose calibration scores look
    /// alike share one q̂; CLUSTERS overrides the authors' heuristic count (with 10 classes it
    /// asks for more clusters than classes, so every class gets the marginal q̂).
    #[arg(long, value_name = "CLUSTERS", num_args = 0..=1, conflicts_with = "mondrian")]
    pub clustered: Option<Option<usize>>,
    /// Training-conditional (PAC) threshold: coverage at least 1 − EPS for this calibration
    /// part with probability at least 1 − DELTA over calibration parts (replaces --alpha).
    #[arg(long, value_name = "EPS,DELTA", value_parser = parse_pac, conflicts_with_all = ["alpha", "mondrian", "clustered"])]
    pub pac: Option<PacLevels>,
    /// Selective classification at the scaled temperature: the conformal risk control
    /// threshold that keeps the share of test rows answered wrongly at most RISK, and the test
    /// part's AURC.
    #[arg(long, value_name = "RISK", allow_negative_numbers = true)]
    pub selective: Option<f64>,
    /// What a mistaken fit of the temperature does to the test part's numbers, as the page's
    /// anatomy switches show it: evaluation-half (fitted by NLL on the test part itself),
    /// probabilities (fitted on softmax(z) read as logits) or minimise-ece (the T of least ECE
    /// on the calibration part, over the anatomy chart's grid, with --bins and --binning).
    #[arg(long, value_enum)]
    pub mistake: Option<FitMistake>,
    /// Adaptive conformal inference with step GAMMA: the test rows, in their order, as a stream
    /// whose level α_t moves after each row (Gibbs & Candès 2021), beside fixed split conformal
    /// on the same stream; against the marginal calibration scores.
    #[arg(long, value_name = "GAMMA", allow_negative_numbers = true)]
    pub aci_gamma: Option<f64>,
    /// Weighted split conformal under covariate shift (Tibshirani et al. 2019): FILE holds
    /// unlabelled logits of the shifted inputs; a logistic regression on the logits, fitted on
    /// the calibration part against FILE's rows, weighs every row by its likelihood ratio, and
    /// the test part gets the weighted sets (one threshold for all classes).
    #[arg(long, value_name = "FILE", conflicts_with = "pac")]
    pub covariate_shift: Option<PathBuf>,
    /// Conditional coverage of the sets beside CovGap: worst-slab coverage over slabs of the
    /// test logits holding at least 10% of the test rows (100 directions, seeded by --seed),
    /// and the noise floors of both, their values for a method with exact conditional coverage.
    #[arg(long)]
    pub worst_slab: bool,
    /// Randomized APS/RAPS/SAPS (u ~ U(0,1)); false uses u = 1.
    #[arg(long, default_value_t = conformal::DEFAULT_RANDOMIZED, action = clap::ArgAction::Set)]
    pub randomized: bool,
    /// λ of RAPS (default 0.1) or SAPS (default 0.2).
    #[arg(long, allow_negative_numbers = true)]
    pub lambda: Option<f64>,
    /// k_reg of RAPS.
    #[arg(long, default_value_t = conformal::DEFAULT_RAPS_K_REG, allow_negative_numbers = true)]
    pub k_reg: usize,
    /// Reliability bins.
    #[arg(long, default_value_t = DEFAULT_NUM_BINS, allow_negative_numbers = true)]
    pub bins: usize,
    #[arg(long, value_enum, default_value_t = Binning::default())]
    pub binning: Binning,
    /// The inputs are probabilities: use log p as logits.
    #[arg(long)]
    pub from_probabilities: bool,
    /// Add 95% bootstrap intervals of ECE, smECE, NLL and Brier from RESAMPLES resamples of
    /// the test part (seed 0; without a number 100, the page's) to both temperatures' metrics,
    /// about a second per 100, of ECE and NLL to the --method recalibration's (its fit held
    /// fixed), and the coverage's (exact, no resampling).
    #[arg(long, value_name = "RESAMPLES", num_args = 0..=1, default_missing_value = "100")]
    pub bootstrap: Option<usize>,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Replace the test part by one of the page's edge cases of its estimators table, built
    /// from the split's parts as the page builds them: a fifth of the rows at a confidence
    /// of exactly 1, four distinct confidences, the calibration part's base rates for every
    /// row, or the first 100 rows (docs/definitions.md).
    #[arg(long, value_enum, default_value_t = EstimatorCase::Network)]
    pub case: EstimatorCase,
}

/// The options of `calibra ood --model`, which replace the logits files.
const MODEL_OPTIONS: [&str; 5] = [
    "model",
    "fit_images",
    "fit_labels",
    "id_images",
    "ood_images",
];

#[derive(Debug, clap::Args)]
pub struct OodArgs {
    /// In-distribution logits (.npy [n, K] float, or .csv/.txt rows of K numbers). Not asked
    /// for once any of --model's options is given, so that an incomplete --model run is told
    /// what it lacks, not every option of both ways.
    #[arg(long, required_unless_present_any = MODEL_OPTIONS)]
    pub id_logits: Option<PathBuf>,
    /// Out-of-distribution logits, in the same formats and with the same K.
    #[arg(long, required_unless_present_any = MODEL_OPTIONS)]
    pub ood_logits: Option<PathBuf>,
    /// Instead of logits files: this network (.safetensors) run on --fit-images (with
    /// --fit-labels), --id-images and --ood-images, and every logit score and every score of
    /// its features (Mahalanobis, KNN, ReAct, ASH-S, ViM, GradNorm) fitted on the first and
    /// compared on the other two.
    #[arg(
        long,
        requires_all = ["fit_images", "fit_labels", "id_images", "ood_images"],
        conflicts_with_all = ["id_logits", "ood_logits", "reference_id_logits", "pvalues"]
    )]
    pub model: Option<PathBuf>,
    /// In-distribution IDX images the feature detectors are fitted on (with --model).
    #[arg(long, requires = "model")]
    pub fit_images: Option<PathBuf>,
    /// Their labels (IDX, .npy or one integer a line).
    #[arg(long, requires = "model")]
    pub fit_labels: Option<PathBuf>,
    /// In-distribution IDX images to score (with --model).
    #[arg(long, requires = "model")]
    pub id_images: Option<PathBuf>,
    /// Out-of-distribution IDX images to score (with --model).
    #[arg(long, requires = "model")]
    pub ood_images: Option<PathBuf>,
    /// Temperature of the MSP and energy scores.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub temperature: f64,
    /// A second network's logits on the same in-distribution images, in the same order: adds the
    /// paired bootstrap of the difference (this network − that one) in FPR95 and AUROC, as the
    /// page's τ lab gives it (1,000 resamples, seed 0, 95%).
    #[arg(long, requires = "reference_ood_logits")]
    pub reference_id_logits: Option<PathBuf>,
    /// The second network's logits on the same out-of-distribution images, in the same order.
    #[arg(long, requires = "reference_id_logits")]
    pub reference_ood_logits: Option<PathBuf>,
    /// Conformal p-values: split the in-distribution rows in halves (--seed, as `report` and
    /// the page split them), score every row of the second half and every OOD row against the
    /// first half, and declare OOD what Benjamini–Hochberg rejects at --fdr.
    #[arg(long)]
    pub pvalues: bool,
    /// The false discovery rate level of Benjamini–Hochberg.
    #[arg(
        long,
        default_value_t = 0.1,
        requires = "pvalues",
        allow_negative_numbers = true
    )]
    pub fdr: f64,
    /// Seed of the in-distribution rows' split into calibration and tested halves.
    #[arg(long, default_value_t = 0, requires = "pvalues")]
    pub seed: u64,
    /// Test only as many OOD rows (drawn with --seed) as make up this share of the batch, as
    /// the LogitNorm lab's share slider does; without it, every OOD row.
    #[arg(long, requires = "pvalues", allow_negative_numbers = true)]
    pub ood_share: Option<f64>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
struct LogitsArgs {
    #[command(flatten)]
    run: NetworkRun,
    /// For a PNG picture: negate it when its border is light (auto), always (on) or never (off).
    #[arg(long, value_enum, default_value_t = InvertArg::Auto)]
    invert: InvertArg,
    /// Corrupt the images first, as the page's shift lab does (same seed): rotation, blur,
    /// noise, contrast, translation or inversion.
    #[arg(long, value_parser = parse_corruption, requires = "severity")]
    corruption: Option<Corruption>,
    /// The corruption's severity, from 1 to 5 (inversion: 1).
    #[arg(long, requires = "corruption")]
    severity: Option<u8>,
}

/// What `logits` and `features` share: a network run over images into an `.npy` file.
#[derive(Debug, clap::Args)]
struct NetworkRun {
    /// Model weights (.safetensors), e.g. assets/models/fmnist-ce.safetensors.
    #[arg(long)]
    model: PathBuf,
    /// IDX images (gzipped or not), e.g. assets/fashion-mnist/t10k-images-idx3-ubyte.gz; for
    /// `logits`, also a PNG picture, made into one 28×28 image as the page makes a reader's
    /// picture.
    #[arg(long)]
    images: PathBuf,
    /// Output .npy file.
    #[arg(long)]
    out: PathBuf,
}

/// A `--corruption` value, by the name the page's link uses.
fn parse_corruption(name: &str) -> Result<Corruption, String> {
    use serde::{de::IntoDeserializer, Deserialize};
    Corruption::deserialize(name.into_deserializer())
        .map_err(|e: serde::de::value::Error| e.to_string())
}

/// `--pac EPS,DELTA`: the coverage `1 − epsilon` held with probability `1 − delta`.
#[derive(Debug, Clone, Copy)]
pub struct PacLevels {
    pub epsilon: f64,
    pub delta: f64,
}

/// A `--pac` value: two numbers in (0, 1) separated by a comma.
fn parse_pac(text: &str) -> Result<PacLevels, String> {
    let levels = text.split_once(',').and_then(|(epsilon, delta)| {
        Some((epsilon.trim().parse().ok()?, delta.trim().parse().ok()?))
    });
    match levels {
        Some((epsilon, delta)) if [epsilon, delta].iter().all(|&v: &f64| v > 0.0 && v < 1.0) => {
            Ok(PacLevels { epsilon, delta })
        }
        _ => Err(format!(
            "'{text}' is not two numbers between 0 and 1 written EPS,DELTA (e.g. 0.1,0.05)"
        )),
    }
}

/// `--invert`'s values, those of the page's control.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum InvertArg {
    Auto,
    On,
    Off,
}

impl From<InvertArg> for own_image::Invert {
    fn from(choice: InvertArg) -> Self {
        match choice {
            InvertArg::Auto => Self::Auto,
            InvertArg::On => Self::On,
            InvertArg::Off => Self::Off,
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) if !error.use_stderr() => {
            // --help and --version.
            let _ = error.print();
            return ExitCode::SUCCESS;
        }
        Err(error) => return fail(&one_line(&error.to_string())),
    };
    let result = match cli.command {
        Command::Report(args) => report::run(&args),
        Command::Ood(args) => ood::run(&args),
        Command::Logits(args) => logits(&args),
        Command::Features(args) => features(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => fail(&message),
    }
}

/// Checks a `--temperature` value: `report` and `ood` both divide logits by it.
///
/// # Errors
/// The option's message when `temperature` is not a finite positive number.
pub fn check_temperature(temperature: f64) -> Result<(), String> {
    if temperature.is_finite() && temperature > 0.0 {
        Ok(())
    } else {
        Err(format!(
            "--temperature: {temperature} is not a positive number"
        ))
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("calibra: {message}");
    ExitCode::from(2)
}

/// clap's message without its usage block, on one line.
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .take_while(|line| !line.starts_with("Usage:") && !line.starts_with("For more information"))
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .trim_start_matches("error: ")
        .to_string()
}

/// The network stored at `path`.
///
/// # Errors
/// A one-line message naming the file when it cannot be read or is not the network's weights.
pub fn load_classifier(path: &Path) -> Result<Classifier, String> {
    let weights = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Classifier::from_safetensors(weights).map_err(|e| format!("{}: {e}", path.display()))
}

/// The pixels of the IDX images at `path`.
///
/// # Errors
/// A one-line message naming the file when it cannot be read or is not IDX images.
pub fn read_idx_pixels(path: &Path) -> Result<Vec<u8>, String> {
    idx_pixels(&read_file(path)?, path)
}

/// The bytes of the file at `path`.
fn read_file(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))
}

/// The pixels of IDX images read from `path`.
fn idx_pixels(bytes: &[u8], path: &Path) -> Result<Vec<u8>, String> {
    Ok(data::parse_idx_images(bytes, &path.display().to_string())
        .map_err(|e| e.to_string())?
        .pixels()
        .to_vec())
}

fn logits(args: &LogitsArgs) -> Result<(), String> {
    let classifier = load_classifier(&args.run.model)?;
    let bytes = read_file(&args.run.images)?;
    let pixels = if input::is_png(&bytes) {
        input::parse_png_picture(&bytes, args.invert.into(), &args.run.images)
            .map_err(|e| e.to_string())?
    } else {
        idx_pixels(&bytes, &args.run.images)?
    };
    let pixels = match (args.corruption, args.severity) {
        (Some(corruption), Some(severity)) => ShiftedSet::new(corruption, severity)
            .and_then(|set| set.pixels(&pixels))
            .map_err(|e| format!("--severity: {e}"))?,
        _ => pixels,
    };
    let logits = classifier
        .logits(&pixels)
        .map_err(|e| format!("{}: {e}", args.run.images.display()))?;
    write_rows(&args.run.out, &logits, NUM_CLASSES, "logits")
}

fn features(args: &NetworkRun) -> Result<(), String> {
    let classifier = load_classifier(&args.model)?;
    let pixels = read_idx_pixels(&args.images)?;
    let (features, _) = classifier
        .features_and_logits(&pixels)
        .map_err(|e| format!("{}: {e}", args.images.display()))?;
    write_rows(&args.out, &features, HIDDEN_UNITS, "features")
}

/// Writes `[n, width]` values (`what`: logits or features) to `out` as `.npy` and says so.
fn write_rows(out: &Path, values: &[f32], width: usize, what: &str) -> Result<(), String> {
    input::write_npy_matrix(out, values, width).map_err(|e| e.to_string())?;
    println!(
        "wrote {what} of {} images to {}",
        values.len() / width,
        out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use calibra::page::PageState;

    /// `calibra report` without options computes what the page shows on a first visit, and
    /// `--bootstrap` alone draws the page's resamples.
    #[test]
    fn the_reports_defaults_are_the_pages_first_view() {
        let cli = Cli::try_parse_from([
            "calibra",
            "report",
            "--logits",
            "z.npy",
            "--labels",
            "y.npy",
            "--bootstrap",
        ])
        .expect("the command line parses");
        let Command::Report(args) = cli.command else {
            panic!("a report's arguments")
        };
        let page = PageState::default();
        assert_eq!(args.seed, u64::from(page.split));
        assert_eq!(args.alpha, page.alpha);
        assert_eq!(args.score, page.score);
        assert_eq!(args.randomized, page.randomized);
        assert_eq!(args.k_reg, page.k_reg);
        assert_eq!(args.bins, page.bins);
        assert_eq!(args.binning, page.binning);
        assert_eq!(args.cal_fraction, data::CALIBRATION_FRACTION);
        assert_eq!(args.bootstrap, Some(calibra::bootstrap::DEFAULT_RESAMPLES));
    }
}
