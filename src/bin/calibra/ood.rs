//! `calibra ood`: how well the maximum softmax probability, the max-logit and the energy score
//! tell in-distribution logits from out-of-distribution ones (FPR95, AUROC, AUPR-In, AUPR-Out),
//! and, given a second network's logits on the same images, the paired bootstrap of the
//! difference in FPR95 and AUROC (`calibra::ood_difference`, the τ lab's lesson).
//! With `--pvalues`, each score's conformal p-values against half of the in-distribution rows
//! and the Benjamini–Hochberg discoveries at `--fdr` (`calibra::ood_pvalues`).
//! The scores and metrics, with their conventions, are the library's `calibra::ood`.

use std::path::Path;

use calibra::calibration::Logits;
use calibra::data;
use calibra::lab::DIFFERENCE_BOOTSTRAP;
use calibra::ood::{self, DetectionMetrics, OodError};
use calibra::ood_difference::{self, PairedDifference};
use calibra::ood_pvalues::{self, OutlierTest};
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
    /// With `--pvalues`: each score's conformal p-values and Benjamini–Hochberg discoveries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pvalues: Option<OutlierTests>,
}

/// Each score's outlier test of the tested in-distribution half and the OOD rows against the
/// calibration half of the in-distribution rows.
#[derive(Debug, Serialize)]
struct OutlierTests {
    seed: u64,
    /// With `--ood-share`: the share of OOD rows the tested batch was mixed to.
    #[serde(skip_serializing_if = "Option::is_none")]
    ood_share: Option<f64>,
    msp: OutlierTest,
    max_logit: OutlierTest,
    energy: OutlierTest,
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
    if let Some(model) = &args.model {
        return crate::ood_model::run(args, model);
    }
    let (Some(id_path), Some(ood_path)) = (&args.id_logits, &args.ood_logits) else {
        return Err("ood needs --id-logits and --ood-logits, or --model and images".to_string());
    };
    if args.pvalues {
        ood_pvalues::check_fdr_level(args.fdr).map_err(|e| format!("--fdr: {e}"))?;
    }
    let in_distribution = input::read_logits(id_path).map_err(|e| e.to_string())?;
    let out_of_distribution = input::read_logits(ood_path).map_err(|e| e.to_string())?;
    if out_of_distribution.num_classes != in_distribution.num_classes {
        return Err(format!(
            "{}: {} classes, but {} has {}",
            ood_path.display(),
            out_of_distribution.num_classes,
            id_path.display(),
            in_distribution.num_classes
        ));
    }
    let id_view = view(&in_distribution, id_path)?;
    let ood_view = view(&out_of_distribution, ood_path)?;
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
    let pvalues = if args.pvalues {
        let (calibration_rows, tested_rows) = data::seeded_split(id_view.len(), 0.5, args.seed);
        if calibration_rows.is_empty() || tested_rows.is_empty() {
            return Err(format!(
                "{}: --pvalues needs at least 2 in-distribution rows, one to calibrate and one to test",
                id_path.display()
            ));
        }
        let ood_rows = match args.ood_share {
            Some(share) => {
                ood_pvalues::mixed_rows(ood_view.len(), tested_rows.len(), share, args.seed)
                    .map_err(|e| format!("--ood-share: {e}"))?
            }
            None => (0..ood_view.len()).collect(),
        };
        let test = |name: &str, score: ScoreFn| -> Result<OutlierTest, String> {
            let id_scores = scored(name, score, &id_view)?;
            let ood_scores = scored(name, score, &ood_view)?;
            let pick = |scores: &[f64], rows: &[usize]| {
                rows.iter().map(|&i| scores[i]).collect::<Vec<f64>>()
            };
            ood_pvalues::outlier_test(
                &pick(&id_scores, &calibration_rows),
                &pick(&id_scores, &tested_rows),
                &pick(&ood_scores, &ood_rows),
                args.fdr,
            )
            .map_err(|e| format!("--pvalues: {name}: {e}"))
        };
        Some(OutlierTests {
            seed: args.seed,
            ood_share: args.ood_share,
            msp: test("msp", msp)?,
            max_logit: test("max_logit", max_logit)?,
            energy: test("energy", energy)?,
        })
    } else {
        None
    };
    let report = OodReport {
        temperature,
        n_id: in_distribution.rows(),
        n_ood: out_of_distribution.rows(),
        msp: metrics("msp", msp)?,
        max_logit: metrics("max_logit", max_logit)?,
        energy: metrics("energy", energy)?,
        difference,
        pvalues,
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

/// Each score's FPR95, AUROC, AUPR-In and AUPR-Out as an aligned text table.
pub fn metrics_table(scores: &[(&str, &DetectionMetrics)]) -> String {
    let mut out = format!(
        "{:<12}{:>10}{:>10}{:>10}{:>10}\n",
        "score", "fpr95", "auroc", "aupr_in", "aupr_out"
    );
    for (name, metrics) in scores {
        out += &format!(
            "{name:<12}{:>10.4}{:>10.4}{:>10.4}{:>10.4}\n",
            metrics.fpr95, metrics.auroc, metrics.aupr_in, metrics.aupr_out
        );
    }
    out
}

/// The report as an aligned text table.
fn table(report: &OodReport, num_classes: usize) -> String {
    let mut out = format!(
        "{} in-distribution rows, {} out-of-distribution rows, {num_classes} classes\n\
         temperature T = {:.4} (msp and energy)\n\n",
        report.n_id, report.n_ood, report.temperature
    );
    out += &metrics_table(&[
        ("msp", &report.msp),
        ("max_logit", &report.max_logit),
        ("energy", &report.energy),
    ]);
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
    if let Some(tests) = &report.pvalues {
        let first = &tests.msp;
        out += &format!(
            "\nconformal p-values against {} in-distribution rows (seed {}), {} in-distribution \
             and {} OOD rows tested;\nBenjamini-Hochberg at false discovery rate {}\n",
            first.n_calibration,
            tests.seed,
            first.n_in_distribution,
            first.n_out_of_distribution,
            first.fdr_level
        );
        out += &format!(
            "{:<12}{:>12}{:>8}{:>10}{:>10}\n",
            "score", "discoveries", "false", "fdp", "power"
        );
        for (name, test) in [
            ("msp", &tests.msp),
            ("max_logit", &tests.max_logit),
            ("energy", &tests.energy),
        ] {
            out += &format!(
                "{name:<12}{:>12}{:>8}{:>10.4}{:>10.4}\n",
                test.discoveries,
                test.false_discoveries,
                test.false_discovery_proportion,
                test.power
            );
        }
    }
    out
}
