//! Measures what one frame of the temperature lab costs natively, part by part: the lab's whole
//! view with the smooth diagram's band (`Lab::temperature_view`, what the page's render
//! computes before drawing when that diagram is on screen) and, on the same evaluation half,
//! each computation inside it (the CORP diagram's PAV fit among them), at temperatures across
//! the slider's range.
//! Prints milliseconds (best of 5 runs each, the least disturbed by other work on the machine)
//! and each part's share of the view, then what the anatomy chart costs once and per frame; then
//! whole frames of the page without drawing (`page::render`): those drawn while the logits
//! arrive a batch at a time, the temperature slider's with a desktop's and with a phone's first
//! screen, and the conformal lab's α slider's with its parts (the PAC and selective blocks),
//! each position the best of 5, with the median and 95th percentile over the positions. Asserts nothing; the
//! browser's figures (wasm call and drawing) come from `scripts/bench`.
//!
//! `cargo run --release --example temperature_frame` on the committed test set and the bundled
//! cross-entropy network. Exits with status 2 and a message when the model or the data is
//! missing or unreadable.

use std::error::Error;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use calibra::bootstrap::{self, Resamples};
use calibra::calibration::{self, Binning, Logits};
use calibra::calibration_estimators;
use calibra::calibration_null::{self, NullOutcomes, NULL_DRAWS};
use calibra::data::Dataset;
use calibra::data::NUM_CLASSES;
use calibra::lab::{
    ConformalParts, Lab, OodStore, ShiftStore, TemperatureParts, BOOTSTRAP, MISTAKES,
    SMOOTH_CURVE_POINTS,
};
use calibra::model::Classifier;
use calibra::page::{self, Block, Figure, LabData, PageState, Visible, OOD_IMAGES};
use calibra::smooth_calibration;

const MODEL: &str = "assets/models/fmnist-ce.safetensors";
const TEST_IMAGES: &str = "assets/fashion-mnist/t10k-images-idx3-ubyte.gz";
const TEST_LABELS: &str = "assets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
/// The page's defaults: 15 equal-width bins, split seed 0.
const BINS: usize = 15;
const RUNS: usize = 5;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("temperature_frame: {error}");
            ExitCode::from(2)
        }
    }
}

/// The best of [`RUNS`] timings of `work`, in milliseconds; its results are dropped.
fn best<T, E: Into<Box<dyn Error>>>(
    mut work: impl FnMut() -> std::result::Result<T, E>,
) -> Result<f64> {
    let mut fastest = Duration::MAX;
    for _ in 0..RUNS {
        let started = Instant::now();
        work().map_err(Into::into)?;
        fastest = fastest.min(started.elapsed());
    }
    Ok(fastest.as_secs_f64() * 1e3)
}

fn run() -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let weights =
        std::fs::read(root.join(MODEL)).map_err(|error| format!("cannot read {MODEL}: {error}"))?;
    let classifier = Classifier::from_safetensors(weights)?;
    let test = Dataset::load(&root.join(TEST_IMAGES), &root.join(TEST_LABELS))?;
    let labels: Vec<u32> = test.labels.iter().map(|&label| u32::from(label)).collect();
    let mut lab = Lab::new(labels, NUM_CLASSES, 1)?
        .with_class_names(calibra::data::fashion_mnist_class_names())?;
    let all_logits = classifier.logits(test.images.pixels())?;
    let streaming = streaming_frames(lab.clone(), &all_logits)?;
    lab.add_logits(0, 0, &all_logits)?;
    let fitted = lab.fitted_temperature()?.temperature;
    // The first view computes the fixed columns once; frames after it do not (the rivals come
    // from the page's worker).
    lab.temperature_view(1.0, BINS, Binning::Width, TemperatureParts::all(true))?;
    let (_, evaluation) = lab.complete_halves()?;
    let (logits, labels) = (evaluation.logits.clone(), evaluation.labels.clone());
    let table = Logits::new(&logits, NUM_CLASSES)?;

    println!("| T | view | metrics, confidences and classwise bins | smooth ECE search and curve | band (100 resamples) | test of calibration (null ECE) | estimators table | CORP (PAV, both decompositions) |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    let resamples = Resamples::draw(labels.len(), &BOOTSTRAP)?;
    let outcomes = NullOutcomes::draw(labels.len(), NULL_DRAWS, 0);
    let predicted = calibration_estimators::predicted_classes(&table);
    for temperature in [0.05, 0.3, 1.0, fitted, 5.0, 20.0] {
        let view = best(|| {
            lab.temperature_view(
                temperature,
                BINS,
                Binning::Width,
                TemperatureParts::all(true),
            )
        })?;
        let full =
            calibration::evaluate_in_full(&table, &labels, temperature, BINS, Binning::Width)?;
        let (f, y) = (&full.confidence, &full.correct);
        let bandwidth = smooth_calibration::smooth_ece(f, y)?.bandwidth;
        let points = SMOOTH_CURVE_POINTS;
        let parts = [
            best(|| {
                calibration::evaluate_in_full(&table, &labels, temperature, BINS, Binning::Width)
            })?,
            best(|| smooth_calibration::smooth_ece_and_reliability(f, y, points))?,
            best(|| bootstrap::smooth_reliability_band(f, y, bandwidth, points, &resamples))?,
            best(|| calibration_null::test_calibration(f, y, BINS, Binning::Width, &outcomes))?,
            best(|| {
                let cumulative = calibration_estimators::CumulativeDifferences::new(f, y)?;
                calibration_estimators::estimators_of(
                    f,
                    y,
                    &predicted,
                    NUM_CLASSES,
                    BINS,
                    Binning::Width,
                    &cumulative,
                )
            })?,
            best(|| calibra::corp::corp(f, y))?,
        ];
        let cells: Vec<String> = parts
            .iter()
            .map(|ms| format!("{ms:.2} ({:.0}%)", 100.0 * ms / view))
            .collect();
        println!(
            "| {temperature:.3} | {view:.2} ms | {} |",
            cells.join(" | ")
        );
    }
    // The anatomy chart: its curves and mistaken fits once per network, split and bins, in the
    // page's bootstrap worker; then each frame with the chart on screen only reads them.
    let halves = lab.worker_halves()?;
    let Err(Some(request)) = lab.anatomy_view(fitted, BINS, Binning::Width, &MISTAKES)? else {
        return Err("the anatomy's curves were kept before they were asked for".into());
    };
    let once = best(|| halves.anatomy(&request))?;
    lab.add_anatomy(request, halves.anatomy(&request)?);
    let per_frame = best(|| lab.anatomy_view(fitted, BINS, Binning::Width, &MISTAKES))?;
    println!(
        "\nanatomy chart: {once:.0} ms in the worker once per network, split and bins (242 \
         evaluations and smooth-ECE searches, the three mistaken fits); {per_frame:.3} ms a \
         frame once kept"
    );
    page_frames(lab, &streaming)
}

/// The figures on the page's first screen, with the metrics table beside them on a desktop
/// (`metrics_table`; on a phone it is below the fold).
fn first_screen(metrics_table: bool) -> Visible {
    Visible {
        temperature: true,
        figures: vec![Figure::Reliability, Figure::Histogram],
        blocks: if metrics_table {
            vec![Block::TemperatureMetrics]
        } else {
            Vec::new()
        },
        ..Visible::default()
    }
}

/// One frame of the page in `state`, without drawing.
fn render(lab: &mut Lab, state: &PageState, visible: &Visible) -> Result<()> {
    let rows = lab.rows();
    page::render(
        LabData::Bundled {
            lab,
            store: &mut OodStore::new(NUM_CLASSES, 1, rows, [OOD_IMAGES; 3]),
            shifts: &mut ShiftStore::new(NUM_CLASSES, 1, rows),
        },
        state,
        visible,
    )?;
    Ok(())
}

/// "median m ms, p95 p ms" of `times`.
fn spread(mut times: Vec<f64>) -> String {
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    format!("median {:.2} ms, p95 {:.2} ms", at(0.5), at(0.95))
}

/// The frames drawn while the network's `logits` arrive into `lab` (which has none yet) a batch
/// at a time, each after its batch: every one recomputes what is kept per network and split.
fn streaming_frames(mut lab: Lab, logits: &[f32]) -> Result<String> {
    let (state, visible) = (PageState::default(), first_screen(true));
    let mut times = Vec::new();
    for start in (0..lab.rows()).step_by(page::INFERENCE_BATCH) {
        let end = (start + page::INFERENCE_BATCH).min(lab.rows());
        lab.add_logits(0, start, &logits[start * NUM_CLASSES..end * NUM_CLASSES])?;
        // Timed on copies, as the original must see each batch once.
        times.push(best(|| render(&mut lab.clone(), &state, &visible))?);
    }
    Ok(spread(times))
}

/// Slider frames of the page on `lab` (every row in), after the frames of the logits'
/// arrival (`streaming`).
fn page_frames(mut lab: Lab, streaming: &str) -> Result<()> {
    const POSITIONS: usize = 60;
    let defaults = PageState::default();
    let (temperature_lab, conformal_lab) = (
        first_screen(true),
        Visible {
            conformal: true,
            figures: vec![
                Figure::SetSizes,
                Figure::PerClass,
                Figure::Stratified,
                Figure::Sweep,
            ],
            ..Visible::default()
        },
    );
    // The first frames compute what is kept per network and split.
    render(&mut lab, &defaults, &temperature_lab)?;
    render(&mut lab, &defaults, &conformal_lab)?;
    println!("\npage frames without drawing (`page::render`):\n");
    println!(
        "- while the logits arrive, a frame after each batch of {}: {streaming}",
        page::INFERENCE_BATCH
    );
    for (screen, visible) in [
        ("a desktop's first screen", &temperature_lab),
        ("a phone's first screen", &first_screen(false)),
    ] {
        let mut frames = Vec::new();
        for i in 0..POSITIONS {
            let t = 0.05 * 400_f64.powf(i as f64 / (POSITIONS - 1) as f64);
            let state = defaults.set("t", &t.to_string())?;
            frames.push(best(|| render(&mut lab, &state, visible))?);
        }
        println!(
            "- temperature slider, {POSITIONS} positions from 0.05 to 20, {screen}: {}",
            spread(frames)
        );
    }
    // What the α slider's frame computes with its first charts on screen: no table below them.
    let first_screen_parts = ConformalParts {
        comparison: false,
        methods: false,
    };
    let mut parts: [Vec<f64>; 4] = Default::default();
    for i in 0..POSITIONS {
        let alpha = 0.01 + 0.29 * i as f64 / (POSITIONS - 1) as f64;
        let state = defaults.set("alpha", &format!("{alpha:.2}"))?;
        let settings = state.conformal_settings();
        parts[0].push(best(|| render(&mut lab, &state, &conformal_lab))?);
        parts[1].push(best(|| lab.conformal_view(&settings, first_screen_parts))?);
        parts[2].push(best(|| lab.pac_view(&settings, state.delta))?);
        parts[3].push(best(|| lab.selective_view(state.t, state.risk))?);
    }
    let names = [
        "the frame",
        "its conformal view",
        "its PAC block",
        "its selective block",
    ];
    for (name, times) in names.into_iter().zip(parts) {
        println!(
            "- α slider, {POSITIONS} positions from 0.01 to 0.30, {name}: {}",
            spread(times)
        );
    }
    Ok(())
}
