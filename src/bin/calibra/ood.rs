//! `calibra ood`: how well the maximum softmax probability, the max-logit and the energy score
//! tell in-distribution logits from out-of-distribution ones (FPR95, AUROC, AUPR-In, AUPR-Out),
//! and, given a second network's logits on the same images, the paired bootstrap of the
//! difference in FPR95 and AUROC (`calibra::ood_difference`, the τ lab's lesson).
//! The scores and metrics, with their conventions, are the library's `calibra::ood`.

use std::path::Path;

use calibra::calibration::Logits;
use calibra::lab::DIFFERENCE_BOOTSTRAP;
use calibra::ood::{self, DetectionMetrics, OodError};
use calibra::ood_difference::{self, PairedDifference};
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
    /// With a reference network: this network − the reference, per score.
    #[serde(skip_serializing_if = "Option::is_none")]
    difference: Option<Differences>,
}

/// The paired differences of each score.
#[derive(Debug, Serialize)]
struct Differences {
    msp: PairedDifference,
    max_logit: PairedDifference,
    energy: PairedDifference,
}

/// A score of every row of a set of logits.
type ScoreFn<'s> = &'s dyn Fn(&Logits) -> Result<Vec<f64>, OodError>;

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
    // The logits read are finite and non-empty, so the only way a score fails is a temperature
    // so small that z/T overflows and a score becomes NaN.
    let scored = |name: &str, score: ScoreFn, logits: &Logits| {
        score(logits).map_err(|e| format!("--temperature: {name}: {e}"))
    };
    let metrics = |name: &str, score: ScoreFn| {
        ood::detection_metrics(
            &scored(name, score, &id_view)?,
            &scored(name, score, &ood_view)?,
        )
        .map_err(|e| format!("--temperature: {name}: {e}"))
    };
    let msp: ScoreFn = &|logits| ood::max_softmax_probability(logits, temperature);
    let max_logit: ScoreFn = &|logits| Ok(ood::max_logit(logits));
    let energy: ScoreFn = &|logits| ood::energy_score(logits, temperature);
    let difference = match (&args.reference_id_logits, &args.reference_ood_logits) {
        (Some(reference_id), Some(reference_ood)) => {
            let reference = [reference_id, reference_ood]
                .map(|path| input::read_logits(path).map_err(|e| e.to_string()));
            let [reference_in, reference_out] = reference;
            let (reference_in, reference_out) = (reference_in?, reference_out?);
            for (table, path, expected) in [
                (&reference_in, reference_id, &in_distribution),
                (&reference_out, reference_ood, &out_of_distribution),
            ] {
                if (table.rows(), table.num_classes) != (expected.rows(), expected.num_classes) {
                    return Err(format!(
                        "{}: {} rows of {} classes, not the {} rows of {} classes of the same \
                         images",
                        path.display(),
                        table.rows(),
                        table.num_classes,
                        expected.rows(),
                        expected.num_classes
                    ));
                }
            }
            let reference_in_view = view(&reference_in, reference_id)?;
            let reference_out_view = view(&reference_out, reference_ood)?;
            let paired = |name: &str, score: ScoreFn| -> Result<PairedDifference, String> {
                ood_difference::paired_difference(
                    (
                        &scored(name, score, &id_view)?,
                        &scored(name, score, &ood_view)?,
                    ),
                    (
                        &scored(name, score, &reference_in_view)?,
                        &scored(name, score, &reference_out_view)?,
                    ),
                    &DIFFERENCE_BOOTSTRAP,
                )
                .map_err(|e| format!("{name}: {e}"))
            };
            Some(Differences {
                msp: paired("msp", msp)?,
                max_logit: paired("max_logit", max_logit)?,
                energy: paired("energy", energy)?,
            })
        }
        _ => None,
    };
    let report = OodReport {
        temperature,
        n_id: in_distribution.rows(),
        n_ood: out_of_distribution.rows(),
        msp: metrics("msp", msp)?,
        max_logit: metrics("max_logit", max_logit)?,
        energy: metrics("energy", energy)?,
        difference,
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
    if let Some(difference) = &report.difference {
        out += "\nthis network - the reference (paired bootstrap, 1,000 resamples, 95% interval)\n";
        out += &format!("{:<12}{:>28}{:>28}\n", "score", "fpr95", "auroc");
        for (name, d) in [
            ("msp", &difference.msp),
            ("max_logit", &difference.max_logit),
            ("energy", &difference.energy),
        ] {
            let cell = |i: &calibra::bootstrap::MetricInterval| {
                format!("{:+.4} [{:+.4}, {:+.4}]", i.estimate, i.lower, i.upper)
            };
            out += &format!("{name:<12}{:>28}{:>28}\n", cell(&d.fpr95), cell(&d.auroc));
        }
    }
    out
}
