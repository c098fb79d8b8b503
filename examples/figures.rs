//! Writes the README's figures: reliability diagrams of the bundled cross-entropy model on the
//! Fashion-MNIST test set before and after temperature scaling (binned, and smooth), its
//! classwise reliability after, the τ chart of the LogitNorm lab (every trained network against the MNIST digits,
//! energy score at T = 1), and the shift lab's metrics over the severity of rotation (the
//! cross-entropy network, randomized APS at α = 0.1), the last two computed by the page's own
//! `page::render`.
//!
//! `cargo run --release --example figures` (from any folder; paths are relative to the crate).
//! The committed test set's 10,000 images are split in half with
//! `data::seeded_split(n, 0.5, 0)`: the temperature is fitted on the first half (calibration),
//! and every figure shows the second half (evaluation), with 15 equal-width bins. Writes
//! `docs/figures/reliability-before.svg`, `reliability-after.svg`, `smooth-reliability.svg`,
//! `classwise-after.svg`, `tau-chart.svg` and `shift-rotation.svg`, and prints the shift lab's
//! severity table.
//! Exits with status 2 and a message when the model or the data is missing or unreadable.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use calibra::bootstrap::{self, Resamples};
use calibra::calibration::{self, Binning, Logits, TemperatureFit, DEFAULT_NUM_BINS};
use calibra::data::NUM_CLASSES;
use calibra::data::{self, Dataset, FASHION_MNIST_CLASSES};
use calibra::lab::{Lab, OodSet, OodStore, ShiftStore, ShiftedSet};
use calibra::lab::{BOOTSTRAP, SMOOTH_CURVE_POINTS};
use calibra::model::Classifier;
use calibra::page::{self, PageState, Visible, MODELS};
use calibra::plot::{self, ChartStyle};
use plotters::prelude::{IntoDrawingArea, SVGBackend, WHITE};
use plotters::style::FontFamily;

/// The model, the test set and the output folder, relative to the crate.
const MODEL: &str = "assets/models/fmnist-ce.safetensors";
const TEST_IMAGES: &str = "assets/fashion-mnist/t10k-images-idx3-ubyte.gz";
const TEST_LABELS: &str = "assets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
const OUT_DIR: &str = "docs/figures";
/// Share of the test set used to fit the temperature, and the seed of the split.
const CALIBRATION_FRACTION: f64 = 0.5;
const SPLIT_SEED: u64 = 0;
/// Figure sizes in pixels: the reliability figures hold a diagram over a histogram.
const RELIABILITY_SIZE: (u32, u32) = (560, 780);
const HISTOGRAM_HEIGHT: u32 = 200;
const CLASSWISE_SIZE: (u32, u32) = (900, 460);
const TAU_CHART_SIZE: (u32, u32) = (900, 380);
const SMOOTH_SIZE: (u32, u32) = (900, 470);
/// The OOD set of the τ chart.
const MNIST_IMAGES: &str = "assets/mnist-ood-images-idx3-ubyte.gz";
const TITLE_FONT_SIZE: f64 = 15.0;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

fn main() -> ExitCode {
    match write_figures() {
        Ok(paths) => {
            for path in paths {
                println!("wrote {}", path.display());
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("figures: {error}");
            ExitCode::from(2)
        }
    }
}

/// Logits and labels of one part of the test set.
struct Part {
    logits: Vec<f32>,
    labels: Vec<u32>,
}

impl Part {
    fn new(classifier: &Classifier, test: &Dataset, rows: &[usize]) -> Result<Self> {
        let part = test.select(rows);
        Ok(Self {
            logits: classifier.logits(part.images.pixels())?,
            labels: part.labels.iter().map(|&label| u32::from(label)).collect(),
        })
    }

    fn logits(&self) -> Result<Logits<'_>> {
        Ok(Logits::new(&self.logits, NUM_CLASSES)?)
    }
}

fn write_figures() -> Result<Vec<PathBuf>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let model = root.join(MODEL);
    if !model.exists() {
        return Err(format!(
            "{} not found: train the model first with `cargo run --release --bin train` \
             (it writes assets/models/fmnist-ce.safetensors)",
            model.display()
        )
        .into());
    }
    let weights = std::fs::read(&model)
        .map_err(|error| format!("cannot read {}: {error}", model.display()))?;
    let classifier = Classifier::from_safetensors(weights)?;
    let test = Dataset::load(&root.join(TEST_IMAGES), &root.join(TEST_LABELS))?;
    let (calibration_rows, evaluation_rows) =
        data::seeded_split(test.len(), CALIBRATION_FRACTION, SPLIT_SEED);
    let calibration_part = Part::new(&classifier, &test, &calibration_rows)?;
    let evaluation_part = Part::new(&classifier, &test, &evaluation_rows)?;
    let fit = calibration::fit_temperature(&calibration_part.logits()?, &calibration_part.labels)?;
    if let Some(bound) = fit.bound_hit {
        eprintln!(
            "figures: the fitted temperature stopped at the {bound:?} bound, T = {}",
            fit.temperature
        );
    }

    let out_dir = root.join(OUT_DIR);
    std::fs::create_dir_all(&out_dir)
        .map_err(|error| format!("cannot create {}: {error}", out_dir.display()))?;
    let evaluation = evaluation_part.logits()?;
    let labels = &evaluation_part.labels;
    let figures = [
        (
            "reliability-before.svg",
            reliability_figure(
                &evaluation,
                labels,
                1.0,
                "Before temperature scaling, T = 1",
            )?,
        ),
        (
            "reliability-after.svg",
            reliability_figure(
                &evaluation,
                labels,
                fit.temperature,
                &format!("After temperature scaling, T = {:.2}", fit.temperature),
            )?,
        ),
        (
            "classwise-after.svg",
            classwise_figure(&evaluation, labels, &fit)?,
        ),
        (
            "smooth-reliability.svg",
            smooth_figure(&evaluation, labels, fit.temperature)?,
        ),
        ("tau-chart.svg", tau_figure(root, &test)?),
        ("shift-rotation.svg", shift_figure(&classifier, &test)?),
    ];
    let mut written = Vec::with_capacity(figures.len());
    for (name, svg) in figures {
        let path = out_dir.join(name);
        std::fs::write(&path, svg)
            .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// A reliability diagram over a confidence histogram at temperature `temperature`, as SVG.
fn reliability_figure(
    logits: &Logits,
    labels: &[u32],
    temperature: f64,
    title: &str,
) -> Result<String> {
    let report = calibration::evaluate(
        logits,
        labels,
        temperature,
        DEFAULT_NUM_BINS,
        Binning::Width,
    )?;
    let (confidence, _) = calibration::confidences(logits, labels, temperature)?;
    let counts = calibration::histogram_counts(&confidence, DEFAULT_NUM_BINS)?;
    let mean_confidence = confidence.iter().sum::<f64>() / confidence.len() as f64;
    let style = ChartStyle::default();
    let mut svg = String::new();
    {
        let area = SVGBackend::with_string(&mut svg, RELIABILITY_SIZE).into_drawing_area();
        area.fill(&WHITE)?;
        let heading = format!(
            "{title}: ECE {:.1}%, accuracy {:.1}%",
            100.0 * report.ece,
            100.0 * report.accuracy
        );
        let body = area.titled(&heading, (FontFamily::SansSerif, TITLE_FONT_SIZE))?;
        let (_, body_height) = body.dim_in_pixel();
        let (diagram, histogram) =
            body.split_vertically(body_height.saturating_sub(HISTOGRAM_HEIGHT));
        plot::reliability_diagram(&diagram, &report.bins, &style)?;
        plot::confidence_histogram(
            &histogram,
            &counts,
            mean_confidence,
            report.accuracy,
            &style,
        )?;
        area.present()?;
    }
    Ok(svg)
}

/// Smooth reliability diagrams at T = 1 and at the fitted temperature, side by side, as SVG.
fn smooth_figure(logits: &Logits, labels: &[u32], fitted: f64) -> Result<String> {
    let style = ChartStyle::default();
    let mut svg = String::new();
    {
        let area = SVGBackend::with_string(&mut svg, SMOOTH_SIZE).into_drawing_area();
        area.fill(&WHITE)?;
        let (width, _) = area.dim_in_pixel();
        let (left, right) = area.split_horizontally(width / 2);
        let resamples = Resamples::draw(labels.len(), &BOOTSTRAP)?;
        for (panel, temperature, name) in [
            (left, 1.0, "Before, T = 1".to_string()),
            (right, fitted, format!("After, T = {fitted:.2}")),
        ] {
            let (confidence, correct) = calibration::confidences(logits, labels, temperature)?;
            let diagram = bootstrap::smooth_diagram(
                &confidence,
                &correct,
                SMOOTH_CURVE_POINTS,
                Some(&resamples),
            )?;
            let heading = format!("{name}: smooth ECE {:.2}%", 100.0 * diagram.ece.smece);
            let body = panel.titled(&heading, (FontFamily::SansSerif, TITLE_FONT_SIZE))?;
            plot::smooth_reliability_diagram(&body, &diagram.curve, diagram.band.as_ref(), &style)?;
        }
        area.present()?;
    }
    Ok(svg)
}

/// Classwise reliability at the fitted temperature, as SVG.
fn classwise_figure(logits: &Logits, labels: &[u32], fit: &TemperatureFit) -> Result<String> {
    let full = calibration::evaluate_in_full(
        logits,
        labels,
        fit.temperature,
        DEFAULT_NUM_BINS,
        Binning::Width,
    )?;
    let mut svg = String::new();
    {
        let area = SVGBackend::with_string(&mut svg, CLASSWISE_SIZE).into_drawing_area();
        area.fill(&WHITE)?;
        let heading = format!(
            "Classwise reliability after temperature scaling, T = {:.2}: classwise ECE {:.2}%",
            fit.temperature,
            100.0 * full.report.classwise_ece
        );
        let body = area.titled(&heading, (FontFamily::SansSerif, TITLE_FONT_SIZE))?;
        plot::classwise_reliability(
            &body,
            &full.classwise_bins,
            &FASHION_MNIST_CLASSES,
            &ChartStyle::default(),
        )?;
        area.present()?;
    }
    Ok(svg)
}

/// The τ lab's chart for every trained network on the MNIST digits (energy at T = 1), through
/// the page's own frame: the same lab, store and `page::render` as in the browser.
fn tau_figure(root: &Path, test: &Dataset) -> Result<String> {
    let digits_path = root.join(MNIST_IMAGES);
    let digits = std::fs::read(&digits_path)
        .map_err(|error| format!("cannot read {}: {error}", digits_path.display()))?;
    let digits = page::mnist_pixels(
        calibra::data::parse_idx_images(&digits, MNIST_IMAGES)?,
        MNIST_IMAGES,
    )?;
    let labels = test.labels.iter().map(|&l| u32::from(l)).collect();
    let mut lab = Lab::new(labels, NUM_CLASSES, MODELS.len())?
        .with_class_names(calibra::data::fashion_mnist_class_names())?;
    let mut store = OodStore::new(NUM_CLASSES, MODELS.len(), test.len(), [page::OOD_IMAGES; 3]);
    for (index, model) in MODELS.iter().enumerate() {
        let path = root.join(model.url);
        let weights = std::fs::read(&path)
            .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
        let classifier = Classifier::from_safetensors(weights)?;
        lab.add_logits(index, 0, &classifier.logits(test.images.pixels())?)?;
        store.add_logits(index, OodSet::Mnist, 0, &classifier.logits(&digits)?)?;
    }
    let state = PageState::default();
    let visible = Visible {
        ood: true,
        ..Visible::default()
    };
    let frame = page::render(
        page::LabData::Bundled {
            lab: &mut lab,
            store: &mut store,
            shifts: &mut ShiftStore::new(NUM_CLASSES, MODELS.len(), test.len()),
        },
        &state,
        &visible,
    )?;
    let charts = frame
        .ood
        .ok_or("the τ lab did not draw: a network's logits are missing")?;
    let mut svg = String::new();
    {
        let area = SVGBackend::with_string(&mut svg, TAU_CHART_SIZE).into_drawing_area();
        area.fill(&WHITE)?;
        let heading = format!(
            "LogitNorm at each τ against cross-entropy: OOD = MNIST digits, energy score, {} networks",
            charts.tau_points.len()
        );
        let body = area.titled(&heading, (FontFamily::SansSerif, TITLE_FONT_SIZE))?;
        plot::tau_chart(&body, &charts.tau_points, &ChartStyle::default())?;
        area.present()?;
    }
    Ok(svg)
}

/// The shift lab's chart of the cross-entropy network on rotated test images, every severity
/// classified, from the page's own frame; prints its CSV (the severity table).
fn shift_figure(classifier: &Classifier, test: &Dataset) -> Result<String> {
    let labels = test.labels.iter().map(|&l| u32::from(l)).collect();
    let mut lab = Lab::new(labels, NUM_CLASSES, MODELS.len())?
        .with_class_names(calibra::data::fashion_mnist_class_names())?;
    lab.add_logits(0, 0, &classifier.logits(test.images.pixels())?)?;
    let mut shifts = ShiftStore::new(NUM_CLASSES, MODELS.len(), test.len());
    let corruption = calibra::shift::Corruption::Rotation;
    for severity in 1..=corruption.max_severity() {
        let set = ShiftedSet::new(corruption, severity)?;
        let logits = classifier.logits(&set.pixels(test.images.pixels())?)?;
        shifts.add_logits(0, set, 0, &logits)?;
    }
    let state = PageState::from_hash("shift=rotation&severity=5").0;
    let visible = Visible {
        shift: true,
        ..Visible::default()
    };
    let frame = page::render(
        page::LabData::Bundled {
            lab: &mut lab,
            store: &mut OodStore::new(NUM_CLASSES, MODELS.len(), test.len(), [page::OOD_IMAGES; 3]),
            shifts: &mut shifts,
        },
        &state,
        &visible,
    )?;
    let sources = page::Sources {
        frame: &frame,
        experiment: None,
    };
    print!(
        "{}",
        page::figure::csv(page::Figure::ShiftSeverity, &sources)?
    );
    let mut svg = String::new();
    {
        let area = SVGBackend::with_string(&mut svg, TAU_CHART_SIZE).into_drawing_area();
        area.fill(&WHITE)?;
        let body = area.titled(
            "Cross-entropy on rotated images: T and q̂ kept from the clean images, or refitted",
            (FontFamily::SansSerif, TITLE_FONT_SIZE),
        )?;
        page::figure::draw(
            page::Figure::ShiftSeverity,
            &sources,
            &body,
            &ChartStyle::default(),
        )?;
        area.present()?;
    }
    Ok(svg)
}
