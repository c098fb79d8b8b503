//! `calibra report`: temperature scaling, calibration metrics and split conformal prediction,
//! with one threshold or, with `--mondrian`, one per class (`conformal::split_conformal`, whose
//! Mondrian thresholds are the page's `conformal::class_conditional_thresholds`).

use std::path::Path;

use calibra::bootstrap::{self, BootstrapSettings, MetricInterval, MetricIntervals};
use calibra::calibration::{self, CalibrationReport, Logits, TemperatureBound};
use calibra::conformal::{self, Score, DEFAULT_RAPS_LAMBDA, DEFAULT_SAPS_LAMBDA};
use calibra::data;
use calibra::lab::BOOTSTRAP;
use calibra::recalibration::{self, Labelled, Method, MethodReport, Recalibration, VectorScaling};
use calibra::sentences;
use calibra::smooth_calibration;
use calibra::text::serde_name;
use serde::Serialize;

use crate::ReportArgs;
use calibra::input::{self, LogitsTable};

/// The JSON object `--json` prints.
#[derive(Debug, Serialize)]
struct Report {
    n_calibration: usize,
    n_test: usize,
    num_classes: usize,
    temperature: f64,
    /// Whether `temperature` was fitted (false: given with --temperature).
    temperature_fitted: bool,
    /// Set when the fitted optimum lies outside [0.05, 20] and a bound was returned.
    temperature_bound_hit: Option<TemperatureBound>,
    /// With `--bootstrap`: the resamples behind each metric's interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    bootstrap_resamples: Option<usize>,
    before: TestMetrics,
    after: TestMetrics,
    /// The `--method` recalibration, fitted on the calibration part: its test metrics and its
    /// ECE on the calibration part.
    recalibration: MethodReport,
    /// With `--method vector`: the fit (scales, biases, Newton steps, whether it converged).
    #[serde(skip_serializing_if = "Option::is_none")]
    vector_scaling: Option<VectorScaling>,
    conformal: ConformalSummary,
}

/// The test part's metrics at one temperature: those of `calibration::evaluate`, and smECE
/// with the bandwidth its fixed-point search chose.
#[derive(Debug, Serialize)]
struct TestMetrics {
    #[serde(flatten)]
    binned: CalibrationReport,
    smece: f64,
    smece_bandwidth: f64,
    /// With `--bootstrap`: `{ece, smece, nll, brier}`, each `{estimate, lower, upper}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    intervals: Option<MetricIntervals>,
}

#[derive(Debug, Serialize)]
struct ConformalSummary {
    score: &'static str,
    alpha: f64,
    randomized: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    lambda: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    k_reg: Option<usize>,
    #[serde(flatten)]
    threshold: Threshold,
    coverage: f64,
    /// With `--bootstrap`: coverage's 95% bootstrap interval over the test part
    /// (`bootstrap::proportion_interval`), as the page shows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    coverage_interval: Option<MetricInterval>,
    average_set_size: f64,
    singleton_rate: f64,
    singleton_hit_rate: f64,
    empty_rate: f64,
    covgap: f64,
    per_class_coverage: Vec<Option<f64>>,
}

/// The conformal threshold(s), written as `"qhat": q̂` or `"qhat_per_class": [q̂_0, …]`.
#[derive(Debug, Serialize)]
enum Threshold {
    /// One `q̂` for every label; always finite (the CLI refuses a calibration part too small
    /// for α).
    #[serde(rename = "qhat")]
    Marginal(f64),
    /// One `q̂_y` per class (Mondrian); `None`, JSON `null`, for `+∞`: a class with fewer
    /// calibration rows than α needs, whose label is then in every set.
    #[serde(rename = "qhat_per_class")]
    PerClass(Vec<Option<f64>>),
}

/// Calibration and test rows after reading, validating and splitting.
struct Parts {
    calibration: LogitsTable,
    calibration_labels: Vec<u32>,
    test: LogitsTable,
    test_labels: Vec<u32>,
    /// Each row's uniform draw for randomized scores: row `i` of the split file (or of the
    /// calibration file followed by the test file) gets `uniforms(n, seed)[i]`, as on the page.
    calibration_uniforms: Vec<f64>,
    test_uniforms: Vec<f64>,
}

/// Runs the report and prints it.
///
/// # Errors
/// A one-line message naming the file or option at fault.
pub fn run(args: &ReportArgs) -> Result<(), String> {
    let score = score(args)?;
    check_options(args)?;
    let parts = read_parts(args)?;
    // The CLI refuses an infinite threshold: the calibration part must be large enough for α.
    conformal::finite_quantile_rank(parts.calibration_labels.len(), args.alpha).map_err(|e| {
        let part = if args.test_logits.is_some() {
            ""
        } else {
            " (calibration part)"
        };
        format!("{}{part}: {e}", args.logits.display())
    })?;
    let num_classes = parts.calibration.num_classes;
    let calibration =
        Logits::new(&parts.calibration.values, num_classes).map_err(|e| e.to_string())?;
    let test = Logits::new(&parts.test.values, num_classes).map_err(|e| e.to_string())?;

    let (temperature, temperature_bound_hit) = match args.temperature {
        Some(t) => (t, None),
        None => {
            let fit = calibration::fit_temperature(&calibration, &parts.calibration_labels)
                .map_err(|e| e.to_string())?;
            (fit.temperature, fit.bound_hit)
        }
    };
    let evaluate = |t: f64| -> Result<TestMetrics, String> {
        let binned = calibration::evaluate(&test, &parts.test_labels, t, args.bins, args.binning)
            .map_err(|e| e.to_string())?;
        let (confidence, correct) =
            calibration::confidences(&test, &parts.test_labels, t).map_err(|e| e.to_string())?;
        let smooth =
            smooth_calibration::smooth_ece(&confidence, &correct).map_err(|e| e.to_string())?;
        let intervals = args
            .bootstrap
            .map(|resamples| {
                let settings = BootstrapSettings {
                    resamples,
                    ..BOOTSTRAP
                };
                bootstrap::bootstrap_intervals(
                    &test,
                    &parts.test_labels,
                    t,
                    args.bins,
                    args.binning,
                    &settings,
                )
            })
            .transpose()
            .map_err(|e| format!("--bootstrap: {e}"))?;
        Ok(TestMetrics {
            binned,
            smece: smooth.smece,
            smece_bandwidth: smooth.bandwidth,
            intervals,
        })
    };
    let before = evaluate(1.0)?;
    let after = evaluate(temperature)?;
    let (recalibration, vector_scaling) = recalibrate(
        args,
        temperature,
        &Labelled::new(calibration, &parts.calibration_labels).map_err(|e| e.to_string())?,
        &Labelled::new(test, &parts.test_labels).map_err(|e| e.to_string())?,
    )?;

    let calibration_probabilities =
        calibration::softmax(&calibration, temperature).map_err(|e| e.to_string())?;
    let test_probabilities = calibration::softmax(&test, temperature).map_err(|e| e.to_string())?;
    let conformal_report = conformal::split_conformal(
        &calibration_probabilities,
        &parts.calibration_labels,
        &test_probabilities,
        &parts.test_labels,
        num_classes,
        &score,
        args.alpha,
        args.mondrian,
        &parts.calibration_uniforms,
        &parts.test_uniforms,
    )
    .map_err(|e| e.to_string())?;
    let threshold = if args.mondrian {
        Threshold::PerClass(
            conformal_report
                .qhat
                .iter()
                .map(|&qhat| qhat.is_finite().then_some(qhat))
                .collect(),
        )
    } else {
        Threshold::Marginal(conformal_report.qhat[0])
    };
    let metrics = conformal_report.metrics;
    let (lambda, k_reg) = match score {
        Score::Raps { lambda, k_reg, .. } => (Some(lambda), Some(k_reg)),
        Score::Saps { lambda, .. } => (Some(lambda), None),
        Score::Lac | Score::Aps { .. } => (None, None),
    };
    let report = Report {
        n_calibration: parts.calibration_labels.len(),
        n_test: parts.test_labels.len(),
        num_classes,
        temperature,
        temperature_fitted: args.temperature.is_none(),
        temperature_bound_hit,
        bootstrap_resamples: args.bootstrap,
        before,
        after,
        recalibration,
        vector_scaling,
        conformal: ConformalSummary {
            score: score.name(),
            alpha: args.alpha,
            randomized: score.is_randomized(),
            lambda,
            k_reg,
            threshold,
            coverage: metrics.coverage,
            coverage_interval: args
                .bootstrap
                .map(|_| {
                    bootstrap::proportion_interval(
                        metrics.covered,
                        parts.test_labels.len(),
                        BOOTSTRAP.level,
                    )
                })
                .transpose()
                .map_err(|e| e.to_string())?,
            average_set_size: metrics.average_set_size,
            singleton_rate: metrics.singleton_rate,
            singleton_hit_rate: metrics.singleton_hit_rate,
            empty_rate: metrics.empty_rate,
            covgap: metrics.covgap,
            per_class_coverage: metrics.per_class_coverage,
        },
    };
    if args.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        let rows_per_class = RowsPerClass {
            calibration: count_per_class(&parts.calibration_labels, num_classes),
            test: count_per_class(&parts.test_labels, num_classes),
            needed: conformal::minimum_calibration_rows(args.alpha)
                .map_err(|e| format!("--alpha: {e}"))?,
        };
        print!("{}", table(&report, &rows_per_class));
    }
    Ok(())
}

/// The `--method` recalibration (temperature scaling at `temperature`, fitted or given),
/// measured on both parts, with the vector-scaling fit when that is the method.
fn recalibrate(
    args: &ReportArgs,
    temperature: f64,
    calibration: &Labelled,
    test: &Labelled,
) -> Result<(MethodReport, Option<VectorScaling>), String> {
    let fitted = match args.method {
        Method::Temperature => Recalibration::Temperature(temperature),
        method => recalibration::fit(method, calibration).map_err(|e| e.to_string())?,
    };
    let report = recalibration::report(
        args.method,
        &fitted,
        calibration,
        test,
        args.bins,
        args.binning,
    )
    .map_err(|e| e.to_string())?;
    let vector = match fitted {
        Recalibration::Vector(fit) => Some(fit),
        _ => None,
    };
    Ok((report, vector))
}

/// Checks the option values that do not depend on the data, before any file is read.
fn check_options(args: &ReportArgs) -> Result<(), String> {
    conformal::minimum_calibration_rows(args.alpha).map_err(|e| format!("--alpha: {e}"))?;
    if let Some(temperature) = args.temperature {
        crate::check_temperature(temperature)?;
        if args.method != Method::Temperature {
            return Err(format!(
                "--temperature: applies to --method temperature, not to --method {}",
                serde_name(args.method)
            ));
        }
    }
    if !(1..=calibration::MAX_BINS).contains(&args.bins) {
        return Err(format!(
            "--bins: {} is not between 1 and {}",
            args.bins,
            calibration::MAX_BINS
        ));
    }
    Ok(())
}

fn score(args: &ReportArgs) -> Result<Score, String> {
    let score = args.score.with(
        args.randomized,
        args.lambda.unwrap_or(DEFAULT_RAPS_LAMBDA),
        args.k_reg,
        args.lambda.unwrap_or(DEFAULT_SAPS_LAMBDA),
    );
    score.validate().map_err(|e| format!("--lambda: {e}"))?;
    Ok(score)
}

/// Reads logits and labels, checks they agree, and splits them when no test files are given.
fn read_parts(args: &ReportArgs) -> Result<Parts, String> {
    let (logits, labels) = read_pair(&args.logits, &args.labels, args.from_probabilities)?;
    match (&args.test_logits, &args.test_labels) {
        (Some(test_logits), Some(test_labels)) => {
            let (test, test_labels_values) =
                read_pair(test_logits, test_labels, args.from_probabilities)?;
            if test.num_classes != logits.num_classes {
                return Err(format!(
                    "{}: {} classes, but {} has {}",
                    test_logits.display(),
                    test.num_classes,
                    args.logits.display(),
                    logits.num_classes
                ));
            }
            let mut draws = conformal::uniforms(labels.len() + test_labels_values.len(), args.seed);
            let test_uniforms = draws.split_off(labels.len());
            Ok(Parts {
                calibration: logits,
                calibration_labels: labels,
                test,
                test_labels: test_labels_values,
                calibration_uniforms: draws,
                test_uniforms,
            })
        }
        _ => {
            let fraction = args.cal_fraction;
            if !(fraction > 0.0 && fraction < 1.0) {
                return Err(format!(
                    "--cal-fraction: {fraction} is not strictly between 0 and 1"
                ));
            }
            let (calibration_rows, test_rows) =
                data::seeded_split(labels.len(), fraction, args.seed);
            if calibration_rows.is_empty() || test_rows.is_empty() {
                return Err(format!(
                    "{}: {} rows cannot be split into non-empty calibration and test parts at --cal-fraction {fraction}",
                    args.logits.display(),
                    labels.len()
                ));
            }
            let pick = |rows: &[usize]| rows.iter().map(|&i| labels[i]).collect::<Vec<u32>>();
            let draws = conformal::uniforms(labels.len(), args.seed);
            let draw = |rows: &[usize]| rows.iter().map(|&i| draws[i]).collect::<Vec<f64>>();
            Ok(Parts {
                calibration: logits.select(&calibration_rows),
                calibration_labels: pick(&calibration_rows),
                test: logits.select(&test_rows),
                test_labels: pick(&test_rows),
                calibration_uniforms: draw(&calibration_rows),
                test_uniforms: draw(&test_rows),
            })
        }
    }
}

/// Reads one logits file and its labels; labels must match in number and lie in `[0, K)`.
fn read_pair(
    logits_path: &Path,
    labels_path: &Path,
    from_probabilities: bool,
) -> Result<(LogitsTable, Vec<u32>), String> {
    let mut logits = input::read_logits(logits_path).map_err(|e| e.to_string())?;
    let labels = input::read_labels(labels_path).map_err(|e| e.to_string())?;
    input::check_labels(&logits, logits_path, &labels, labels_path).map_err(|e| e.to_string())?;
    if from_probabilities {
        logits.values = calibration::logits_from_probabilities(&logits.values, logits.num_classes)
            .map_err(|e| format!("{}: {e}", logits_path.display()))?;
    } else {
        input::check_not_probabilities(&logits, logits_path)
            .map_err(|e| format!("{e}; pass --from-probabilities to use log p as logits"))?;
    }
    Ok((logits, labels))
}

/// How many calibration and test rows each class has, and how many calibration rows a finite
/// `q̂_y` needs at α (the Mondrian table shows them).
struct RowsPerClass {
    calibration: Vec<usize>,
    test: Vec<usize>,
    needed: usize,
}

/// Rows per class of `labels` (each below `num_classes`, checked on reading).
fn count_per_class(labels: &[u32], num_classes: usize) -> Vec<usize> {
    let mut counts = vec![0; num_classes];
    for &label in labels {
        counts[label as usize] += 1;
    }
    counts
}

/// The report as aligned text tables.
fn table(report: &Report, rows_per_class: &RowsPerClass) -> String {
    let mut out = String::new();
    let fitted = if report.temperature_fitted {
        match report.temperature_bound_hit {
            Some(TemperatureBound::Lower) => " (fitted; optimum below 0.05, bound returned)",
            Some(TemperatureBound::Upper) => " (fitted; optimum above 20, bound returned)",
            None => " (fitted on the calibration part)",
        }
    } else {
        " (given)"
    };
    out += &format!(
        "{} calibration rows, {} test rows, {} classes\ntemperature T = {:.4}{fitted}\n\n",
        report.n_calibration, report.n_test, report.num_classes, report.temperature
    );
    out += &format!("{:<16}{:>12}{:>12}\n", "test metric", "T = 1", "scaled");
    let (b, a) = (&report.before.binned, &report.after.binned);
    let (sb, sa) = (&report.before, &report.after);
    for (name, before, after) in [
        ("accuracy", b.accuracy, a.accuracy),
        ("nll", b.nll, a.nll),
        ("brier", b.brier, a.brier),
        ("ece", b.ece, a.ece),
        ("rmsce", b.rmsce, a.rmsce),
        ("mce", b.mce, a.mce),
        ("classwise_ece", b.classwise_ece, a.classwise_ece),
        ("smece", sb.smece, sa.smece),
        ("smece_bandwidth", sb.smece_bandwidth, sa.smece_bandwidth),
    ] {
        out += &format!("{name:<16}{before:>12.4}{after:>12.4}\n");
    }
    if let (Some(before), Some(after)) = (&sb.intervals, &sa.intervals) {
        out += &format!(
            "\n95% bootstrap intervals ({} resamples of the test part)\n",
            report.bootstrap_resamples.unwrap_or_default()
        );
        for (name, before, after) in [
            ("nll", before.nll, after.nll),
            ("brier", before.brier, after.brier),
            ("ece", before.ece, after.ece),
            ("smece", before.smece, after.smece),
        ] {
            let range = |i: MetricInterval| format!("[{:.4}, {:.4}]", i.lower, i.upper);
            out += &format!("{name:<16}{:>18}{:>18}\n", range(before), range(after));
        }
    }
    out += &recalibration_table(
        &report.recalibration,
        report.vector_scaling.as_ref(),
        report.temperature_fitted,
    );
    let c = &report.conformal;
    out += &format!(
        "\nsplit conformal, score {}{}, alpha {}{}\n",
        c.score,
        if c.randomized { " (randomized)" } else { "" },
        c.alpha,
        match c.threshold {
            Threshold::Marginal(_) => "",
            Threshold::PerClass(_) => ", Mondrian (one qhat per class)",
        }
    );
    if let Threshold::Marginal(qhat) = c.threshold {
        out += &format!("{:<20}{qhat:>10.4}\n", "qhat");
    }
    for (name, value) in [
        ("coverage", c.coverage),
        ("average_set_size", c.average_set_size),
        ("singleton_rate", c.singleton_rate),
        ("singleton_hit_rate", c.singleton_hit_rate),
        ("empty_rate", c.empty_rate),
        ("covgap", c.covgap),
    ] {
        out += &format!("{name:<20}{value:>10.4}\n");
    }
    if let Some(interval) = c.coverage_interval {
        let range = format!("[{:.4}, {:.4}]", interval.lower, interval.upper);
        out += &format!("{:<20}{range:>18}\n", "coverage, 95%");
    }
    if let Threshold::PerClass(qhats) = &c.threshold {
        out += &per_class_table(qhats, &c.per_class_coverage, rows_per_class);
    }
    out
}

/// The `--method` recalibration's lines, and what the page says of a vector-scaling fit that
/// did not converge. Temperature scaling at a `--temperature` (not `temperature_fitted`) was
/// given its T, not fitted.
fn recalibration_table(
    report: &MethodReport,
    vector: Option<&VectorScaling>,
    temperature_fitted: bool,
) -> String {
    let how = if report.method == Method::Temperature && !temperature_fitted {
        "T given"
    } else {
        "fitted on the calibration part"
    };
    let mut out = format!("\n{} ({how})\n", report.method.title());
    for (name, value) in [
        ("accuracy", report.accuracy),
        ("nll", report.nll),
        ("brier", report.brier),
        ("ece", report.ece),
        ("smece", report.smece),
        ("calibration_ece", report.calibration_ece),
    ] {
        out += &format!("{name:<24}{value:>12.4}\n");
    }
    for (name, count) in [
        ("distinct_confidences", report.distinct_confidences),
        ("changed_predictions", report.changed_predictions),
    ] {
        out += &format!("{name:<24}{count:>12}\n");
    }
    if let Some(stop) = vector.and_then(sentences::vector_scaling_stop_sentence) {
        out += &format!("{stop}\n");
    }
    out
}

/// Mondrian thresholds and coverage, one line per class; `inf` for `q̂_y = +∞`, `-` for a class
/// without test rows.
fn per_class_table(
    qhats: &[Option<f64>],
    coverages: &[Option<f64>],
    rows_per_class: &RowsPerClass,
) -> String {
    let mut out = format!(
        "\n{:<8}{:>12}{:>10}{:>12}{:>10}\n",
        "class", "cal_rows", "qhat", "test_rows", "coverage"
    );
    let lines = qhats
        .iter()
        .zip(coverages)
        .zip(rows_per_class.calibration.iter().zip(&rows_per_class.test));
    for (class, ((qhat, coverage), (calibration_rows, test_rows))) in lines.enumerate() {
        let qhat = qhat.map_or("inf".to_string(), |q| format!("{q:.4}"));
        let coverage = coverage.map_or("-".to_string(), |c| format!("{c:.4}"));
        out +=
            &format!("{class:<8}{calibration_rows:>12}{qhat:>10}{test_rows:>12}{coverage:>10}\n");
    }
    if qhats.iter().any(Option::is_none) {
        out += &format!(
            "inf: fewer than {} calibration rows in the class, so its label is in every set\n",
            rows_per_class.needed
        );
    }
    out
}
