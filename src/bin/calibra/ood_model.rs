//! `calibra ood --model M --fit-images C --fit-labels CL --id-images I --ood-images O`: the
//! whole comparison from a network and images. The network gives each image's logits and
//! penultimate features in one pass; the logit scores (MSP, max-logit, energy, at
//! `--temperature`) and the feature detectors (`calibra::ood_features`, fitted on the fitting
//! images with their labels, at their papers' settings) score the in-distribution and OOD
//! images, and each score gets FPR95, AUROC, AUPR-In and AUPR-Out (`calibra::ood`), each
//! with its 95% bootstrap interval (`calibra::ood_difference::detection_intervals`, the τ
//! lab's settings: 1,000 resamples, seed 0), every score resampled on the same images.

use std::path::Path;

use calibra::calibration::Logits;
use calibra::data::NUM_CLASSES;
use calibra::input;
use calibra::lab::DIFFERENCE_BOOTSTRAP;
use calibra::model::{Classifier, HIDDEN_UNITS};
use calibra::ood::{self, DetectionMetrics};
use calibra::ood_difference::{detection_intervals, DetectionMetricIntervals};
use calibra::ood_features::{
    Features, FittedDetectors, LastLayer, ASH_PERCENTILE, REACT_PERCENTILE,
};
use serde::Serialize;

use crate::OodArgs;

/// The JSON object `--json` prints.
#[derive(Debug, Serialize)]
struct ModelReport {
    /// Temperature of MSP and energy (the feature scores use T = 1, as their papers).
    temperature: f64,
    n_fit: usize,
    n_id: usize,
    n_ood: usize,
    /// The detectors' settings: KNN's k, ReAct's percentile and threshold, ASH-S's percentile,
    /// ViM's principal dimension and α.
    knn_k: usize,
    react_percentile: f64,
    react_threshold: f64,
    ash_percentile: f64,
    vim_dimension: usize,
    vim_alpha: f64,
    msp: ScoreMetrics,
    max_logit: ScoreMetrics,
    energy: ScoreMetrics,
    mahalanobis: ScoreMetrics,
    knn: ScoreMetrics,
    react: ScoreMetrics,
    ash: ScoreMetrics,
    vim: ScoreMetrics,
    gradnorm: ScoreMetrics,
}

impl ModelReport {
    /// Each score's name and metrics, in the JSON's order.
    fn scores(&self) -> [(&'static str, &ScoreMetrics); 9] {
        [
            ("msp", &self.msp),
            ("max_logit", &self.max_logit),
            ("energy", &self.energy),
            ("mahalanobis", &self.mahalanobis),
            ("knn", &self.knn),
            ("react", &self.react),
            ("ash", &self.ash),
            ("vim", &self.vim),
            ("gradnorm", &self.gradnorm),
        ]
    }
}

/// One score's four metrics, each with its bootstrap interval (`_lo`, `_hi`).
#[derive(Debug, Serialize)]
struct ScoreMetrics {
    fpr95: f64,
    fpr95_lo: f64,
    fpr95_hi: f64,
    auroc: f64,
    auroc_lo: f64,
    auroc_hi: f64,
    aupr_in: f64,
    aupr_in_lo: f64,
    aupr_in_hi: f64,
    aupr_out: f64,
    aupr_out_lo: f64,
    aupr_out_hi: f64,
}

impl From<DetectionMetricIntervals> for ScoreMetrics {
    fn from(intervals: DetectionMetricIntervals) -> Self {
        let DetectionMetricIntervals {
            fpr95: f,
            auroc: a,
            aupr_in: i,
            aupr_out: o,
        } = intervals;
        Self {
            fpr95: f.estimate,
            fpr95_lo: f.lower,
            fpr95_hi: f.upper,
            auroc: a.estimate,
            auroc_lo: a.lower,
            auroc_hi: a.upper,
            aupr_in: i.estimate,
            aupr_in_lo: i.lower,
            aupr_in_hi: i.upper,
            aupr_out: o.estimate,
            aupr_out_lo: o.lower,
            aupr_out_hi: o.upper,
        }
    }
}

impl ScoreMetrics {
    /// The four metrics without their intervals.
    fn metrics(&self) -> DetectionMetrics {
        DetectionMetrics {
            fpr95: self.fpr95,
            auroc: self.auroc,
            aupr_in: self.aupr_in,
            aupr_out: self.aupr_out,
        }
    }
}

/// One image set's features `[n, 128]` and logits `[n, 10]`.
struct Activations {
    features: Vec<f32>,
    logits: Vec<f32>,
}

impl Activations {
    /// The network's features and logits of the IDX images at `path`.
    fn of(classifier: &Classifier, path: &Path) -> Result<Self, String> {
        let pixels = crate::read_idx_pixels(path)?;
        let (features, logits) = classifier
            .features_and_logits(&pixels)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Self { features, logits })
    }

    fn features(&self, path: &Path) -> Result<Features<'_>, String> {
        Features::new(&self.features, HIDDEN_UNITS).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn logits(&self, path: &Path) -> Result<Logits<'_>, String> {
        Logits::new(&self.logits, NUM_CLASSES).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// Runs the comparison on `model` and prints it.
///
/// # Errors
/// A one-line message naming the file or option at fault.
pub fn run(args: &OodArgs, model: &Path) -> Result<(), String> {
    let (Some(fit_path), Some(labels_path), Some(id_path), Some(ood_path)) = (
        &args.fit_images,
        &args.fit_labels,
        &args.id_images,
        &args.ood_images,
    ) else {
        return Err(
            "--model needs --fit-images, --fit-labels, --id-images and --ood-images".to_string(),
        );
    };
    let classifier = crate::load_classifier(model)?;
    let labels = input::read_labels(labels_path).map_err(|e| e.to_string())?;
    let fit = Activations::of(&classifier, fit_path)?;
    let in_distribution = Activations::of(&classifier, id_path)?;
    let out_of_distribution = Activations::of(&classifier, ood_path)?;
    let (weight, bias) = classifier
        .last_layer()
        .map_err(|e| format!("{}: {e}", model.display()))?;
    let last_layer = LastLayer::new(&weight, &bias, HIDDEN_UNITS)
        .map_err(|e| format!("{}: {e}", model.display()))?;
    let detectors = FittedDetectors::fit(&fit.features(fit_path)?, &labels, last_layer)
        .map_err(|e| format!("{}: {e}", labels_path.display()))?;
    let feature_scores = [
        (&in_distribution, id_path),
        (&out_of_distribution, ood_path),
    ]
    .map(|(set, path)| {
        detectors
            .scores(&set.features(path)?)
            .map_err(|e| format!("{}: {e}", path.display()))
    });
    let [id_features, ood_features] = feature_scores;
    let (id_features, ood_features) = (id_features?, ood_features?);
    let (id_logits, ood_logits) = (
        in_distribution.logits(id_path)?,
        out_of_distribution.logits(ood_path)?,
    );
    let temperature = args.temperature;
    let metrics = |name: &str, id_scores: &[f64], ood_scores: &[f64]| {
        detection_intervals(id_scores, ood_scores, &DIFFERENCE_BOOTSTRAP)
            .map(ScoreMetrics::from)
            .map_err(|e| format!("{name}: {e}"))
    };
    let tempered = |name: &str, score: fn(&Logits, f64) -> Result<Vec<f64>, ood::OodError>| {
        let scored = |logits: &Logits| {
            score(logits, temperature).map_err(|e| format!("--temperature: {name}: {e}"))
        };
        metrics(name, &scored(&id_logits)?, &scored(&ood_logits)?)
    };
    let (knn_k, react_threshold) = (detectors.knn_neighbours(), detectors.react_threshold());
    let (vim_dimension, vim_alpha) = detectors.vim_settings();
    let report = ModelReport {
        temperature,
        n_fit: labels.len(),
        n_id: id_logits.len(),
        n_ood: ood_logits.len(),
        knn_k,
        react_percentile: REACT_PERCENTILE,
        react_threshold,
        ash_percentile: ASH_PERCENTILE,
        vim_dimension,
        vim_alpha,
        msp: tempered("msp", ood::max_softmax_probability)?,
        max_logit: metrics(
            "max_logit",
            &ood::max_logit(&id_logits),
            &ood::max_logit(&ood_logits),
        )?,
        energy: tempered("energy", ood::energy_score)?,
        mahalanobis: metrics(
            "mahalanobis",
            &id_features.mahalanobis,
            &ood_features.mahalanobis,
        )?,
        knn: metrics("knn", &id_features.knn, &ood_features.knn)?,
        react: metrics("react", &id_features.react, &ood_features.react)?,
        ash: metrics("ash", &id_features.ash, &ood_features.ash)?,
        vim: metrics("vim", &id_features.vim, &ood_features.vim)?,
        gradnorm: metrics("gradnorm", &id_features.gradnorm, &ood_features.gradnorm)?,
    };
    if args.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        print!("{}", table(&report));
    }
    Ok(())
}

/// The report as an aligned text table.
fn table(report: &ModelReport) -> String {
    let mut out = format!(
        "{} fitting, {} in-distribution and {} out-of-distribution images\n\
         temperature T = {:.4} (msp and energy); knn k = {}, react threshold {:.4} (percentile \
         {}), ash-s percentile {}, vim dimension {} (alpha {:.4})\n\n",
        report.n_fit,
        report.n_id,
        report.n_ood,
        report.temperature,
        report.knn_k,
        report.react_threshold,
        report.react_percentile,
        report.ash_percentile,
        report.vim_dimension,
        report.vim_alpha
    );
    let scores = report.scores();
    let metrics: Vec<(&str, DetectionMetrics)> = scores
        .iter()
        .map(|(name, score)| (*name, score.metrics()))
        .collect();
    let rows: Vec<(&str, &DetectionMetrics)> = metrics.iter().map(|(name, m)| (*name, m)).collect();
    out += &crate::ood::metrics_table(&rows);
    out += "\n95% bootstrap intervals (1,000 resamples of the images, seed 0)\n";
    out += &format!(
        "{:<12}{:>18}{:>18}{:>18}{:>18}\n",
        "score", "fpr95", "auroc", "aupr_in", "aupr_out"
    );
    for (name, s) in scores {
        let cell = |lo: f64, hi: f64| format!("[{lo:.4}, {hi:.4}]");
        out += &format!(
            "{name:<12}{:>18}{:>18}{:>18}{:>18}\n",
            cell(s.fpr95_lo, s.fpr95_hi),
            cell(s.auroc_lo, s.auroc_hi),
            cell(s.aupr_in_lo, s.aupr_in_hi),
            cell(s.aupr_out_lo, s.aupr_out_hi)
        );
    }
    out
}
