//! `calibra report`: temperature scaling, calibration metrics and split conformal prediction,
//! with one threshold or, with `--mondrian`, one per class (`conformal::split_conformal`, whose
//! Mondrian thresholds are the page's `conformal::class_conditional_thresholds`).

use std::path::Path;

use calibra::bootstrap::{
    self, BootstrapSettings, EceNllIntervals, MetricInterval, MetricIntervals,
};
use calibra::calibration::{self, CalibrationReport, Logits, TemperatureBound};
use calibra::calibration_estimators::{self, Estimators};
use calibra::conformal::weighted::WeightedCalibration;
use calibra::conformal::{self, Score, ThresholdRule, DEFAULT_RAPS_LAMBDA, DEFAULT_SAPS_LAMBDA};
use calibra::corp::{self, Corp};
use calibra::data;
use calibra::domain_classifier::{self, fit_domain_classifier};
use calibra::estimator_cases::{self, EstimatorCase};
use calibra::lab::BOOTSTRAP;
use calibra::recalibration::dirichlet::DirichletCalibration;
use calibra::recalibration::{self, Labelled, Method, MethodReport, Recalibration, VectorScaling};
use calibra::selective::{self, SelectiveReport};
use calibra::sentences;
use calibra::smooth_calibration;
use calibra::temperature_anatomy::{
    mistaken_fit, temperature_grid, BrierDecomposition, MistakenFit, ANATOMY_POINTS,
};
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
    /// With `--bootstrap`: the `--method` recalibration's `{ece, nll}` on the test part, each
    /// `{estimate, lower, upper}`, the fit held fixed (the LogitNorm lab's table).
    #[serde(skip_serializing_if = "Option::is_none")]
    recalibration_intervals: Option<EceNllIntervals>,
    /// With `--method dirichlet`: the fit (`(W | b)` row by row, λ, μ, the regularised
    /// objective, Newton steps, whether it converged).
    #[serde(skip_serializing_if = "Option::is_none")]
    dirichlet: Option<DirichletCalibration>,
    conformal: ConformalSummary,
    /// With `--aci-gamma GAMMA`: adaptive conformal inference over the test rows in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    aci: Option<AdaptiveSummary>,
    /// With `--covariate-shift FILE`: weighted split conformal's sets on the test part, the
    /// weights from a domain classifier of FILE's rows against the calibration part's.
    #[serde(skip_serializing_if = "Option::is_none")]
    weighted: Option<WeightedSummary>,
    /// With `--worst-slab`: worst-slab coverage and CovGap, each with its noise floor.
    #[serde(skip_serializing_if = "Option::is_none")]
    conditional_coverage: Option<ConditionalCoverage>,
    /// With `--selective RISK`: the conformal risk control threshold fitted on the calibration
    /// part and applied to the test part, at the scaled temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    selective: Option<SelectiveReport>,
    /// With `--mistake M`: the temperature the mistaken fit lands on, the test part's metrics
    /// under it, and the page's sentence on them.
    #[serde(skip_serializing_if = "Option::is_none")]
    mistake: Option<MistakeReport>,
}

/// A mistaken fit of the temperature with what the page's anatomy block says of it.
#[derive(Debug, Serialize)]
struct MistakeReport {
    #[serde(flatten)]
    fit: MistakenFit,
    sentence: String,
}

/// The test part's metrics at one temperature: those of `calibration::evaluate`, smECE with
/// the bandwidth its fixed-point search chose, and the other estimators and tests of
/// `calibration_estimators`.
#[derive(Debug, Serialize)]
struct TestMetrics {
    #[serde(flatten)]
    binned: CalibrationReport,
    smece: f64,
    smece_bandwidth: f64,
    #[serde(flatten)]
    estimators: Estimators,
    /// Murphy's decomposition of the Brier score on the classwise bins.
    brier_decomposition: BrierDecomposition,
    #[serde(flatten)]
    corp: CorpNumbers,
    /// With `--bootstrap`: `{ece, smece, nll, brier, ece_debiased, top_label_ece, ks_error}`,
    /// each `{estimate, lower, upper}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    intervals: Option<MetricIntervals>,
}

/// The CORP decompositions of the top-label event's Brier and log scores (`corp`: PAV, no
/// bins): `score = mcb − dsc + unc`.
#[derive(Debug, Serialize)]
struct CorpNumbers {
    corp_brier_score: f64,
    corp_brier_mcb: f64,
    corp_brier_dsc: f64,
    corp_brier_unc: f64,
    corp_log_score: f64,
    corp_log_mcb: f64,
    corp_log_dsc: f64,
    corp_log_unc: f64,
}

impl From<&Corp> for CorpNumbers {
    fn from(corp: &Corp) -> Self {
        Self {
            corp_brier_score: corp.brier.score,
            corp_brier_mcb: corp.brier.miscalibration,
            corp_brier_dsc: corp.brier.discrimination,
            corp_brier_unc: corp.brier.uncertainty,
            corp_log_score: corp.log.score,
            corp_log_mcb: corp.log.miscalibration,
            corp_log_dsc: corp.log.discrimination,
            corp_log_unc: corp.log.uncertainty,
        }
    }
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
    /// With `--pac EPS,DELTA`: `q̂` is the `pac_k`-th smallest calibration score, whose
    /// coverage is at least `1 − alpha` (`alpha` = EPS) with probability at least
    /// `1 − pac_delta` over calibration parts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pac_k: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pac_delta: Option<f64>,
    /// With `--clustered`: the clusters behind `qhat_per_class`.
    #[serde(skip_serializing_if = "Option::is_none")]
    clusters: Option<Clusters>,
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

/// Weighted split conformal under covariate shift: the domain classifier's fit, the weights'
/// effective sample size, and the test part's weighted sets.
#[derive(Debug, Serialize)]
struct WeightedSummary {
    /// Rows of the unlabelled shifted file the classifier was fitted on.
    n_unlabelled: usize,
    /// scikit-learn's `C` of the classifier's L2 penalty.
    inverse_penalty: f64,
    /// Whether the classifier's Newton iterations converged.
    converged: bool,
    /// Kish's `(Σw)²/Σw²` of the calibration part's weights.
    effective_sample_size: f64,
    coverage: f64,
    average_set_size: f64,
    /// The share of test rows whose weighted threshold is +∞.
    infinite_share: f64,
}

/// Adaptive conformal inference over the test rows as a stream: coverage and set size beside
/// fixed split conformal's on the same stream, the bound on the long-run miscoverage, and the
/// last level `α_t`.
#[derive(Debug, Serialize)]
struct AdaptiveSummary {
    gamma: f64,
    coverage: f64,
    average_set_size: f64,
    miscoverage_bound: f64,
    fixed_coverage: f64,
    fixed_average_set_size: f64,
    final_alpha: f64,
}

/// Conditional coverage of the conformal sets on the test part, each measure beside the value a
/// method with exact conditional coverage shows on average at these sizes.
#[derive(Debug, Serialize)]
struct ConditionalCoverage {
    /// The share of the test rows a slab must hold.
    delta: f64,
    /// Directions searched.
    directions: usize,
    worst_slab_coverage: f64,
    /// Test rows in the worst slab.
    worst_slab_rows: usize,
    worst_slab_noise_floor: f64,
    covgap: f64,
    /// CovGap of exact class-conditional coverage at these class sizes.
    covgap_noise_floor: f64,
}

/// Clustered conformal prediction's choices: clusters asked for, calibration rows spent on
/// clustering, and each class's cluster (`null`: the null cluster, which uses the marginal q̂).
#[derive(Debug, Serialize)]
struct Clusters {
    clusters: usize,
    clustering_rows: usize,
    cluster_of_class: Vec<Option<usize>>,
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
    let parts = with_case(read_parts(args)?, args.case)?;
    // `--pac EPS,DELTA` sets α = EPS.
    let alpha = args.pac.map_or(args.alpha, |levels| levels.epsilon);
    let rule = match args.pac {
        Some(levels) => ThresholdRule::TrainingConditional {
            delta: levels.delta,
        },
        None => match args.clustered {
            Some(clusters) => ThresholdRule::Clustered {
                clusters,
                seed: args.seed,
            },
            None if args.mondrian => ThresholdRule::ClassConditional,
            None => ThresholdRule::Marginal,
        },
    };
    // The CLI refuses an infinite threshold: the calibration part must be large enough for α
    // (or for the training-conditional guarantee).
    let n_calibration = parts.calibration_labels.len();
    let pac_k = match args.pac {
        Some(levels) => {
            conformal::pac::pac_rank(n_calibration, levels.epsilon, levels.delta).map(Some)
        }
        None => conformal::finite_quantile_rank(n_calibration, alpha).map(|_| None),
    }
    .map_err(|e| {
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
        let full =
            calibration::evaluate_in_full(&test, &parts.test_labels, t, args.bins, args.binning)
                .map_err(|e| e.to_string())?;
        let brier_decomposition = BrierDecomposition::of(&full);
        let binned = full.report;
        let (confidence, correct) =
            calibration::confidences(&test, &parts.test_labels, t).map_err(|e| e.to_string())?;
        let smooth =
            smooth_calibration::smooth_ece(&confidence, &correct).map_err(|e| e.to_string())?;
        let corp =
            CorpNumbers::from(&corp::corp(&confidence, &correct).map_err(|e| e.to_string())?);
        let estimators = calibration_estimators::estimators(
            &test,
            &parts.test_labels,
            t,
            args.bins,
            args.binning,
        )
        .map_err(|e| e.to_string())?;
        let intervals = bootstrap_settings(args)
            .map(|settings| {
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
            estimators,
            brier_decomposition,
            corp,
            intervals,
        })
    };
    let before = evaluate(1.0)?;
    let after = evaluate(temperature)?;
    let calibration_part =
        Labelled::new(calibration, &parts.calibration_labels).map_err(|e| e.to_string())?;
    let test_part = Labelled::new(test, &parts.test_labels).map_err(|e| e.to_string())?;
    let (recalibration, fitted, recalibration_intervals) =
        recalibrate(args, temperature, &calibration_part, &test_part)?;
    let mistake = args
        .mistake
        .map(|mistake| -> Result<MistakeReport, String> {
            let grid = temperature_grid(ANATOMY_POINTS).map_err(|e| e.to_string())?;
            let fit = mistaken_fit(
                mistake,
                &calibration_part,
                &test_part,
                &grid,
                args.bins,
                args.binning,
            )
            .map_err(|e| format!("--mistake: {e}"))?;
            let sentence =
                sentences::fit_mistake_sentence(&fit, temperature, &after.binned, args.bins);
            Ok(MistakeReport { fit, sentence })
        })
        .transpose()?;

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
        alpha,
        rule,
        &parts.calibration_uniforms,
        &parts.test_uniforms,
    )
    .map_err(|e| e.to_string())?;
    // The calibration part's true-label scores, for what is computed beside the sets.
    let calibration_scores = conformal::true_label_scores(
        &calibration_probabilities,
        &parts.calibration_labels,
        num_classes,
        &score,
        &parts.calibration_uniforms,
    )
    .map_err(|e| e.to_string())?;
    let clusters = match rule {
        ThresholdRule::Clustered { clusters, seed } => {
            let found = conformal::clustered::clustered_thresholds(
                &calibration_scores,
                &parts.calibration_labels,
                num_classes,
                alpha,
                clusters,
                seed,
            )
            .map_err(|e| e.to_string())?;
            Some(Clusters {
                clusters: found.clusters,
                clustering_rows: found.clustering_rows,
                cluster_of_class: found.cluster_of_class,
            })
        }
        _ => None,
    };
    let threshold = if args.mondrian || clusters.is_some() {
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
    let aci = args
        .aci_gamma
        .map(|gamma| -> Result<AdaptiveSummary, String> {
            let stream_scores = conformal::all_label_scores(
                &test_probabilities,
                num_classes,
                &score,
                &parts.test_uniforms,
            )
            .map_err(|e| e.to_string())?;
            let run = conformal::adaptive::adaptive_conformal(
                &calibration_scores,
                &stream_scores,
                &parts.test_labels,
                num_classes,
                alpha,
                gamma,
            )
            .map_err(|e| format!("--aci-gamma: {e}"))?;
            Ok(AdaptiveSummary {
                gamma,
                coverage: run.coverage,
                average_set_size: run.average_set_size,
                miscoverage_bound: run.miscoverage_bound,
                fixed_coverage: run.fixed_coverage,
                fixed_average_set_size: run.fixed_average_set_size,
                final_alpha: run.steps.last().map_or(alpha, |step| step.alpha),
            })
        })
        .transpose()?;
    let weighted = args
        .covariate_shift
        .as_deref()
        .map(|path| {
            weighted_summary(
                path,
                args.from_probabilities,
                &parts,
                (&calibration_scores, &test_probabilities),
                &score,
                alpha,
            )
        })
        .transpose()?;
    let conditional_coverage = args
        .worst_slab
        .then(|| {
            conditional_coverage(
                &parts,
                &conformal_report.sets,
                alpha,
                conformal_report.metrics.covgap,
                args.seed,
            )
        })
        .transpose()?;
    let metrics = conformal_report.metrics;
    let selective = args
        .selective
        .map(|risk_level| -> Result<SelectiveReport, String> {
            let needed = conformal::minimum_calibration_rows(risk_level)
                .map_err(|e| format!("--selective: {e}"))?;
            if n_calibration < needed {
                return Err(format!(
                    "{}: {n_calibration} calibration rows are too few for --selective \
                     {risk_level}: a threshold that answers anything needs at least {needed}",
                    args.logits.display()
                ));
            }
            let (calibration_confidence, calibration_correct) =
                calibration::confidences(&calibration, &parts.calibration_labels, temperature)
                    .map_err(|e| e.to_string())?;
            let (test_confidence, test_correct) =
                calibration::confidences(&test, &parts.test_labels, temperature)
                    .map_err(|e| e.to_string())?;
            selective::selective_report(
                (&calibration_confidence, &calibration_correct),
                (&test_confidence, &test_correct),
                risk_level,
            )
            .map_err(|e| format!("--selective: {e}"))
        })
        .transpose()?;
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
        vector_scaling: match &fitted {
            Recalibration::Vector(fit) => Some(fit.clone()),
            _ => None,
        },
        dirichlet: match fitted {
            Recalibration::Dirichlet(fit) => Some(fit),
            _ => None,
        },
        mistake,
        recalibration_intervals,
        conformal: ConformalSummary {
            score: score.name(),
            alpha,
            randomized: score.is_randomized(),
            lambda,
            k_reg,
            threshold,
            pac_k,
            pac_delta: args.pac.map(|levels| levels.delta),
            clusters,
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
        aci,
        weighted,
        conditional_coverage,
        selective,
    };
    if args.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        let rows_per_class = RowsPerClass {
            calibration: count_per_class(&parts.calibration_labels, num_classes),
            test: count_per_class(&parts.test_labels, num_classes),
            needed: conformal::minimum_calibration_rows(alpha)
                .map_err(|e| format!("--alpha: {e}"))?,
        };
        print!("{}", table(&report, &rows_per_class));
    }
    Ok(())
}

/// Weighted conformal's sets on the test part: the domain classifier fitted on the calibration
/// part's logits (clean) against the logits in `path` (shifted), its weights on the
/// calibration scores, each test row's own weight in its threshold.
fn weighted_summary(
    path: &Path,
    from_probabilities: bool,
    parts: &Parts,
    (calibration_scores, test_probabilities): (&[f64], &[f64]),
    score: &Score,
    alpha: f64,
) -> Result<WeightedSummary, String> {
    let mut unlabelled = input::read_logits(path).map_err(|e| e.to_string())?;
    let num_classes = parts.calibration.num_classes;
    if unlabelled.num_classes != num_classes {
        return Err(format!(
            "{}: {} classes, but the calibration logits have {num_classes}",
            path.display(),
            unlabelled.num_classes
        ));
    }
    if from_probabilities {
        unlabelled.values = calibration::logits_from_probabilities(&unlabelled.values, num_classes)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    } else {
        input::check_not_probabilities(&unlabelled, path)
            .map_err(|e| format!("{e}; pass --from-probabilities to use log p as logits"))?;
    }
    let features = |values: &[f32]| -> Vec<f64> { values.iter().map(|&z| f64::from(z)).collect() };
    let calibration_features = features(&parts.calibration.values);
    let classifier = fit_domain_classifier(
        &calibration_features,
        &features(&unlabelled.values),
        num_classes,
    )
    .map_err(|e| format!("--covariate-shift: {e}"))?;
    let calibration_weights = classifier.log_weights(&calibration_features);
    let test_scores =
        conformal::all_label_scores(test_probabilities, num_classes, score, &parts.test_uniforms)
            .map_err(|e| e.to_string())?;
    let sets = WeightedCalibration::from_log_weights(calibration_scores, &calibration_weights)
        .and_then(|weighted| {
            weighted.evaluate(
                &test_scores,
                &classifier.log_weights(&features(&parts.test.values)),
                &parts.test_labels,
                num_classes,
                alpha,
            )
        })
        .map_err(|e| format!("--covariate-shift: {e}"))?;
    Ok(WeightedSummary {
        n_unlabelled: unlabelled.rows(),
        inverse_penalty: domain_classifier::INVERSE_PENALTY,
        converged: classifier.converged,
        effective_sample_size: domain_classifier::effective_sample_size(&calibration_weights),
        coverage: sets.coverage,
        average_set_size: sets.average_set_size,
        infinite_share: sets.infinite_share,
    })
}

/// Worst-slab coverage of `sets` over slabs of the test logits, CovGap, and their noise floors.
fn conditional_coverage(
    parts: &Parts,
    sets: &conformal::PredictionSets,
    alpha: f64,
    covgap: f64,
    seed: u64,
) -> Result<ConditionalCoverage, String> {
    use conformal::worst_slab::{self, DELTA, DIRECTIONS, FLOOR_REPETITIONS};
    let num_classes = parts.test.num_classes;
    let covered: Vec<bool> = (0..)
        .zip(&parts.test_labels)
        .map(|(row, &label)| sets.contains(row, label))
        .collect();
    let directions = worst_slab::random_directions(DIRECTIONS, num_classes, seed);
    let features = &parts.test.values;
    let failed = |e: conformal::ConformalError| format!("--worst-slab: {e}");
    let worst =
        worst_slab::worst_slab_coverage(features, num_classes, &covered, &directions, DELTA)
            .map_err(failed)?;
    let floor = worst_slab::worst_slab_noise_floor(
        features,
        num_classes,
        &directions,
        DELTA,
        alpha,
        FLOOR_REPETITIONS,
        seed,
    )
    .map_err(failed)?;
    let covgap_noise_floor = conformal::covgap_of_exact_mondrian(
        &count_per_class(&parts.calibration_labels, num_classes),
        &count_per_class(&parts.test_labels, num_classes),
        alpha,
    )
    .map_err(failed)?;
    Ok(ConditionalCoverage {
        delta: DELTA,
        directions: DIRECTIONS,
        worst_slab_coverage: worst.coverage,
        worst_slab_rows: worst.count,
        worst_slab_noise_floor: floor,
        covgap,
        covgap_noise_floor,
    })
}

/// The `--method` recalibration (temperature scaling at `temperature`, fitted or given),
/// measured on both parts, with the fit, and with `--bootstrap` its ECE and NLL intervals on
/// the test part.
fn recalibrate(
    args: &ReportArgs,
    temperature: f64,
    calibration: &Labelled,
    test: &Labelled,
) -> Result<(MethodReport, Recalibration, Option<EceNllIntervals>), String> {
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
    let intervals = bootstrap_settings(args)
        .map(|settings| {
            recalibration::bootstrap_ece_nll(&fitted, test, args.bins, args.binning, &settings)
        })
        .transpose()
        .map_err(|e| format!("--bootstrap: {e}"))?;
    Ok((report, fitted, intervals))
}

/// With `--bootstrap RESAMPLES`: the page's bootstrap settings with that many resamples.
fn bootstrap_settings(args: &ReportArgs) -> Option<BootstrapSettings> {
    args.bootstrap.map(|resamples| BootstrapSettings {
        resamples,
        ..BOOTSTRAP
    })
}

/// Checks the option values that do not depend on the data, before any file is read.
fn check_options(args: &ReportArgs) -> Result<(), String> {
    conformal::minimum_calibration_rows(args.alpha).map_err(|e| format!("--alpha: {e}"))?;
    if let Some(risk_level) = args.selective {
        conformal::minimum_calibration_rows(risk_level).map_err(|_| {
            format!("--selective: {risk_level} is not a risk level strictly between 0 and 1")
        })?;
    }
    if let Some(temperature) = args.temperature {
        crate::check_temperature(temperature)?;
        if let Some(mistake) = args.mistake {
            return Err(format!(
                "--mistake {}: compares the mistaken fit with the fitted temperature; leave out \
                 --temperature",
                serde_name(mistake)
            ));
        }
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

/// The parts with the test part replaced by the rows of `case` (the page's edge cases of its
/// estimators table), each row keeping its uniform draw.
fn with_case(mut parts: Parts, case: EstimatorCase) -> Result<Parts, String> {
    if case == EstimatorCase::Network {
        return Ok(parts);
    }
    let rows = estimator_cases::case_rows(
        case,
        parts.test.num_classes,
        &parts.calibration_labels,
        &parts.test.values,
        &parts.test_labels,
    )
    .map_err(|e| format!("--case: {e}"))?;
    parts.test_uniforms.truncate(rows.labels.len());
    parts.test.values = rows.logits;
    parts.test_labels = rows.labels;
    Ok(parts)
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
        (
            "ece_debiased",
            sb.estimators.ece_debiased,
            sa.estimators.ece_debiased,
        ),
        (
            "top_label_ece",
            sb.estimators.top_label_ece,
            sa.estimators.top_label_ece,
        ),
        ("ks_error", sb.estimators.ks_error, sa.estimators.ks_error),
    ] {
        out += &format!("{name:<16}{before:>12.4}{after:>12.4}\n");
    }
    out += &tests_table(&sb.estimators, &sa.estimators);
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
            ("ece_debiased", before.ece_debiased, after.ece_debiased),
            ("top_label_ece", before.top_label_ece, after.top_label_ece),
            ("ks_error", before.ks_error, after.ks_error),
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
    if let Some(intervals) = &report.recalibration_intervals {
        for (name, interval) in [("ece", intervals.ece), ("nll", intervals.nll)] {
            out += &format!(
                "{:<24}{:>12}\n",
                format!("{name} 95% interval"),
                format!("[{:.4}, {:.4}]", interval.lower, interval.upper)
            );
        }
    }
    if let Some(mistake) = &report.mistake {
        out += &mistake_table(mistake);
    }
    let c = &report.conformal;
    out += &format!(
        "\nsplit conformal, score {}{}, alpha {}{}\n",
        c.score,
        if c.randomized { " (randomized)" } else { "" },
        c.alpha,
        match (&c.threshold, c.pac_delta) {
            (Threshold::PerClass(_), _) if c.clusters.is_some() => {
                ", clustered (one qhat per cluster of classes)".to_string()
            }
            (Threshold::PerClass(_), _) => ", Mondrian (one qhat per class)".to_string(),
            (Threshold::Marginal(_), Some(delta)) => format!(
                ", training-conditional (coverage >= {} with probability >= {})",
                1.0 - c.alpha,
                1.0 - delta
            ),
            (Threshold::Marginal(_), None) => String::new(),
        }
    );
    if let Threshold::Marginal(qhat) = c.threshold {
        out += &format!("{:<20}{qhat:>10.4}\n", "qhat");
    }
    if let Some(k) = c.pac_k {
        out += &format!("{:<20}{k:>10}\n", "pac_k");
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
    if let Some(clusters) = &c.clusters {
        let each: Vec<String> = clusters
            .cluster_of_class
            .iter()
            .map(|cluster| cluster.map_or("-".to_string(), |k| k.to_string()))
            .collect();
        out += &format!(
            "{} clusters asked, {} calibration rows spent on clustering; cluster of each class \
             (-: none, the marginal qhat): {}\n",
            clusters.clusters,
            clusters.clustering_rows,
            each.join(" ")
        );
    }
    if let Some(a) = &report.aci {
        out += &format!(
            "\nadaptive conformal inference over the test rows in order, gamma {}\n{:<24}{:>10}{:>10}\n",
            a.gamma, "", "adaptive", "fixed"
        );
        out += &format!(
            "{:<24}{:>10.4}{:>10.4}\n",
            "coverage", a.coverage, a.fixed_coverage
        );
        out += &format!(
            "{:<24}{:>10.4}{:>10.4}\n",
            "average_set_size", a.average_set_size, a.fixed_average_set_size
        );
        out += &format!(
            "|miscoverage - alpha| <= {:.4} whatever the order; last alpha_t {:.4}\n",
            a.miscoverage_bound, a.final_alpha
        );
    }
    if let Some(w) = &report.weighted {
        out += &format!(
            "\nweighted conformal under covariate shift ({} unlabelled rows)\n\
             {:<24}{:>10.4}\n{:<24}{:>10.4}\n{:<24}{:>10.1}\n{:<24}{:>10.4}\n",
            w.n_unlabelled,
            "coverage",
            w.coverage,
            "average_set_size",
            w.average_set_size,
            "effective_sample_size",
            w.effective_sample_size,
            "infinite_share",
            w.infinite_share
        );
    }
    if let Some(w) = &report.conditional_coverage {
        out += &format!(
            "\nconditional coverage (noise floor: a method with exact conditional coverage)\n\
             {:<32}{:>10}{:>14}\n",
            "measure", "value", "noise floor"
        );
        out += &format!(
            "{:<32}{:>10.4}{:>14.4}\n",
            format!("worst-slab coverage ({} rows)", w.worst_slab_rows),
            w.worst_slab_coverage,
            w.worst_slab_noise_floor
        );
        out += &format!(
            "{:<28}{:>10.4}{:>14.4}\n",
            "covgap", w.covgap, w.covgap_noise_floor
        );
    }
    if let Some(s) = &report.selective {
        out += &format!(
            "\nselective classification, conformal risk control at risk level {}\n",
            s.risk_level
        );
        let threshold = if s.threshold.is_finite() {
            format!("{:.4}", s.threshold)
        } else {
            "none".to_string()
        };
        out += &format!("{:<20}{threshold:>10}\n", "threshold");
        let risk = s
            .selective_risk
            .map_or("-".to_string(), |r| format!("{r:.4}"));
        out += &format!("{:<20}{:>10.4}\n", "coverage", s.coverage);
        out += &format!("{:<20}{risk:>10}\n", "selective_risk");
        out += &format!(
            "{:<20}{:>10.4}\n",
            "answered_error_rate", s.answered_error_rate
        );
        out += &format!("{:<20}{:>10.4}\n", "aurc", s.aurc);
    }
    out
}

/// The three tests of calibration of the top-label confidence, statistic and p-value at both
/// temperatures; `-` for a test whose scale is 0 (every confidence 0 or 1).
fn tests_table(before: &Estimators, after: &Estimators) -> String {
    let cell = |value: Option<f64>| value.map_or("-".to_string(), |v| format!("{v:.4}"));
    let mut out = format!(
        "\n{:<16}{:>12}{:>12}{:>12}{:>12}\n",
        "test", "T = 1", "p", "scaled", "p"
    );
    for (name, before_pair, after_pair) in [
        (
            "spiegelhalter_z",
            (before.spiegelhalter_z, before.spiegelhalter_p),
            (after.spiegelhalter_z, after.spiegelhalter_p),
        ),
        (
            "kuiper",
            (before.kuiper, before.kuiper_p),
            (after.kuiper, after.kuiper_p),
        ),
        (
            "ks_statistic",
            (before.ks_statistic, before.ks_p),
            (after.ks_statistic, after.ks_p),
        ),
    ] {
        out += &format!(
            "{name:<16}{:>12}{:>12}{:>12}{:>12}\n",
            cell(before_pair.0),
            cell(before_pair.1),
            cell(after_pair.0),
            cell(after_pair.1)
        );
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

/// The `--mistake` fit's temperature and test metrics, and the page's sentence on them.
fn mistake_table(mistake: &MistakeReport) -> String {
    let (fit, metrics) = (&mistake.fit, &mistake.fit.evaluation);
    let mut out = format!("\nmistaken fit: {}\n", serde_name(fit.mistake));
    for (name, value) in [
        ("temperature", fit.temperature),
        ("accuracy", metrics.accuracy),
        ("nll", metrics.nll),
        ("brier", metrics.brier),
        ("ece", metrics.ece),
    ] {
        out += &format!("{name:<24}{value:>12.4}\n");
    }
    out + &mistake.sentence + "\n"
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
