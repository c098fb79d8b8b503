//! `calibra ood`: how well the maximum softmax probability, the max-logit and the energy score
//! tell in-distribution logits from out-of-distribution ones (FPR95, AUROC, AUPR-In, AUPR-Out).
//! The scores and metrics, with their conventions, are the library's `calibra::ood`.

use std::path::Path;

use calibra::calibration::Logits;
use calibra::ood::{self, DetectionMetrics, OodError};
use serde::Serialize;

use crate::OodArgs;
use calibra::input::{self, LogitsTable};

/// The JSON object `--json` prints.
#[derive(Debug, Serialize)]
struct OodReport {
    /// Temperature of MSP and energy (max-logit does not depend on it).
    temperature: f64,
    n_id: usize,
    n_ood: usize,
    msp: DetectionMetrics,
    max_logit: DetectionMetrics,
    energy: DetectionMetrics,
}

/// Runs the comparison and prints it.
///
/// # Errors
/// A one-line message naming the file or option at fault.
pub fn run(args: &OodArgs) -> Result<(), String> {
    let temperature = args.temperature;
    crate::check_temperature(temperature)?;
    let in_distribution = input::read_logits(&args.id_logits).map_err(|e| e.to_string())?;
    let out_of_distribution = input::read_logits(&args.ood_logits).map_err(|e| e.to_string())?;
    if out_of_distribution.num_classes != in_distribution.num_classes {
        return Err(format!(
            "{}: {} classes, but {} has {}",
            args.ood_logits.display(),
            out_of_distribution.num_classes,
            args.id_logits.display(),
            in_distribution.num_classes
        ));
    }
    let id_view = view(&in_distribution, &args.id_logits)?;
    let ood_view = view(&out_of_distribution, &args.ood_logits)?;
    let metrics = |name: &str, score: &dyn Fn(&Logits) -> Result<Vec<f64>, OodError>| {
        let both = || ood::detection_metrics(&score(&id_view)?, &score(&ood_view)?);
        // The logits read are finite and non-empty, so the only way to fail is a temperature so
        // small that z/T overflows and a score becomes NaN.
        both().map_err(|e| format!("--temperature: {name}: {e}"))
    };
    let report = OodReport {
        temperature,
        n_id: in_distribution.rows(),
        n_ood: out_of_distribution.rows(),
        msp: metrics("msp", &|logits| {
            ood::max_softmax_probability(logits, temperature)
        })?,
        max_logit: metrics("max_logit", &|logits| Ok(ood::max_logit(logits)))?,
        energy: metrics("energy", &|logits| ood::energy_score(logits, temperature))?,
    };
    if args.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        print!("{}", table(&report, in_distribution.num_classes));
    }
    Ok(())
}

/// The library's view of a table read from `path` (the reader has checked it: finite, non-empty,
/// at least 2 classes).
fn view<'a>(table: &'a LogitsTable, path: &Path) -> Result<Logits<'a>, String> {
    Logits::new(&table.values, table.num_classes).map_err(|e| format!("{}: {e}", path.display()))
}

/// The report as an aligned text table.
fn table(report: &OodReport, num_classes: usize) -> String {
    let mut out = format!(
        "{} in-distribution rows, {} out-of-distribution rows, {num_classes} classes\n\
         temperature T = {:.4} (msp and energy)\n\n",
        report.n_id, report.n_ood, report.temperature
    );
    out += &format!(
        "{:<12}{:>10}{:>10}{:>10}{:>10}\n",
        "score", "fpr95", "auroc", "aupr_in", "aupr_out"
    );
    for (name, metrics) in [
        ("msp", &report.msp),
        ("max_logit", &report.max_logit),
        ("energy", &report.energy),
    ] {
        out += &format!(
            "{name:<12}{:>10.4}{:>10.4}{:>10.4}{:>10.4}\n",
            metrics.fpr95, metrics.auroc, metrics.aupr_in, metrics.aupr_out
        );
    }
    out
}
