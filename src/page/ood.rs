//! The τ lab's frame: which logits and ODIN scores it still needs, the chosen network's and
//! cross-entropy's views on the chosen out-of-distribution set, the τ chart's points, and
//! their readouts.

use serde::Serialize;

use super::figure::Figure;
use super::readouts::{metric, metric_cell, text, Patch, TableCell, TableRow};
use super::state::{Network, PageState};
use crate::bootstrap::MetricInterval;
use crate::data::FASHION_MNIST_CLASSES;
use crate::lab::ood_view::{
    thin_roc_curve, LogitNormMeans, OodView, PairedHistogram, RocPoint, ScoreKind as OodScore,
};
use crate::lab::{
    DifferenceRequest, FeatureRequest, ImageSet, Lab, LabError, NetworkSummary, OodSet, OodStore,
    RankingRequest,
};
use crate::ood::{ODIN_EPSILON, ODIN_TEMPERATURE};
use crate::ood_difference::PairedDifference;
use crate::ood_ranking::Ranking;
use crate::plot::TauPoint;
use crate::sentences::{self, percent, NetworkFigures};
use crate::text::{grouped, serde_name};

/// Bins of the score and ‖z‖ histograms.
const HISTOGRAM_BINS: usize = 40;
/// Points of each drawn ROC curve (the metrics use every score).
const ROC_POINTS: usize = 400;
/// OOD images in each network's "surest" gallery.
const SUREST: usize = 8;
/// The text alternatives of the ROC, ‖z‖ and τ charts, emptied while the lab waits for logits
/// so that no number of another network or set stays.
const CHART_SUMMARIES: [&str; 3] = ["ood-roc-summary", "ood-norms-summary", "tau-chart-summary"];

/// A batch of work the page should start: `model`'s logits (or ODIN scores) on `set`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Job {
    pub model: usize,
    pub set: ImageSet,
}

/// One network's surest OOD images.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OodGallery {
    pub title: String,
    pub set: OodSet,
    pub items: Vec<OodTile>,
}

/// An OOD image and what the network makes of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OodTile {
    /// Row of the OOD set.
    pub index: usize,
    /// "97.3% sure: Sandal".
    pub text: String,
}

/// What the facade draws for the τ lab.
#[derive(Debug, Clone)]
pub struct OodCharts {
    /// The chosen score's histogram with its 95%-TPR threshold and the OOD share at or above
    /// it; `None` while that score (ODIN) is not computed, or its chart is off screen.
    pub score_histogram: Option<(PairedHistogram, f64, f64)>,
    /// The x axis of the score histogram.
    pub score_label: String,
    pub set_title: &'static str,
    /// Cross-entropy's and the chosen network's ROC curves for the chosen score, labelled;
    /// none while their chart is off screen.
    pub roc: Vec<(String, Vec<RocPoint>)>,
    pub norms: PairedHistogram,
    pub norm_means: LogitNormMeans,
    pub tau_points: Vec<TauPoint>,
}

/// The τ lab's part of a frame.
#[derive(Debug, Clone, Default)]
pub struct OodOutput {
    pub patches: Vec<Patch>,
    /// Logits the lab needs and has not got.
    pub needs: Vec<Job>,
    /// ODIN scores the "compute ODIN" button would start.
    pub odin_needs: Vec<Job>,
    pub charts: Option<OodCharts>,
    pub galleries: Vec<OodGallery>,
    /// The paired difference the lesson waits for, to ask a worker for.
    pub difference_request: Option<DifferenceRequest>,
    /// The feature scores the chosen score waits for, to ask a worker for: the shown
    /// networks' first, then the τ chart's.
    pub feature_requests: Vec<FeatureRequest>,
    /// The ranking of every computed score on both networks, to ask a worker for.
    pub ranking_request: Option<RankingRequest>,
}

/// A score's name as the text writes it.
pub fn score_name(kind: OodScore) -> &'static str {
    match kind {
        OodScore::Msp => "MSP",
        OodScore::MaxLogit => "max-logit",
        OodScore::Energy => "energy",
        OodScore::Odin => "ODIN",
        OodScore::Mahalanobis => "Mahalanobis",
        OodScore::Knn => "KNN",
        OodScore::React => "ReAct",
        OodScore::Ash => "ASH-S",
        OodScore::Vim => "ViM",
        OodScore::GradNorm => "GradNorm",
    }
}

/// The τ lab for `state`: the chosen network against cross-entropy on the chosen set.
///
/// # Errors
/// [`LabError`] from the views (which the state's ranges rule out).
pub(super) fn render(
    lab: &mut Lab,
    store: &mut OodStore,
    state: &PageState,
    figures: &[Figure],
) -> Result<OodOutput, LabError> {
    let cross_entropy = Network::Ce.index().ok_or(LabError::NotReady)?;
    let chosen = state.tau.index().ok_or(LabError::NotReady)?;
    let mut pair = vec![chosen];
    if chosen != cross_entropy {
        pair.push(cross_entropy);
    }
    let set = state.ood;
    let mut out = OodOutput::default();
    let mut waiting = Vec::new();
    for &model in &pair {
        let title = model_title(model);
        let test = lab.arrived(model)?;
        if test < lab.rows() {
            out.needs.push(Job {
                model,
                set: ImageSet::Test,
            });
            waiting.push(format!(
                "{title} on the test images ({} / {})",
                grouped(test),
                grouped(lab.rows())
            ));
        }
        // The feature detectors are fitted once and score every OOD set.
        let sets = if state.ood_score.reads_features() {
            OodSet::ALL.to_vec()
        } else {
            vec![set]
        };
        for set in sets {
            let (arrived, rows) = store.logits_progress(model, set);
            if arrived < rows {
                out.needs.push(Job {
                    model,
                    set: set.into(),
                });
                waiting.push(format!(
                    "{title} on {} ({} / {})",
                    set.title(),
                    grouped(arrived),
                    grouped(rows)
                ));
            }
        }
        for part in [ImageSet::Test, set.into()] {
            let (arrived, rows) = store.odin_progress(model, part);
            if arrived < rows {
                out.odin_needs.push(Job { model, set: part });
            }
        }
    }
    out.patches
        .push(odin_status(store, &pair, set, out.odin_needs.is_empty()));
    out.patches.push(Patch::Disabled {
        id: "compute-odin",
        disabled: out.odin_needs.is_empty(),
    });
    let status = if waiting.is_empty() {
        String::new()
    } else {
        format!("Running {}…", waiting.join("; "))
    };
    out.patches.push(text("ood-status", status));
    if !out.needs.is_empty() {
        out.patches
            .extend(CHART_SUMMARIES.map(|id| text(id, String::new())));
        return Ok(out);
    }

    let split = lab.split_seed();
    if state.ood_score.reads_features() {
        out.feature_requests = feature_requests(store, &pair, split);
    }
    out.patches.push(feature_status(
        store,
        &pair,
        split,
        lab.rows() - evaluation_rows(lab),
        state.ood_score.reads_features(),
    ));
    let chosen_view = store
        .view(chosen, set, state.t, complete(lab, chosen)?, split)?
        .clone();
    let ce_view = store
        .view(
            cross_entropy,
            set,
            state.t,
            complete(lab, cross_entropy)?,
            split,
        )?
        .clone();
    let chosen_summary = lab.network_summary(chosen, state.bins, state.binning)?;
    let ce_summary = lab.network_summary(cross_entropy, state.bins, state.binning)?;

    out.patches.extend(network_patches(&chosen_summary, ""));
    out.patches.extend(network_patches(&ce_summary, "_ce"));
    out.patches
        .push(metrics_table(&chosen_view, &ce_view, state.ood_score));
    for (view, suffix) in [(&chosen_view, ""), (&ce_view, "_ce")] {
        let means = view.logit_norm_means();
        for (name, value) in [
            ("logit_norm_id", means.in_distribution),
            ("logit_norm_ood", means.out_of_distribution),
        ] {
            out.patches.push(metric(
                format!("{name}{suffix}"),
                value,
                format!("{value:.2}"),
            ));
        }
    }
    out.patches.push(text("ood-set-title", set.title()));
    out.patches.push(text(
        "ood-gallery-title",
        format!(
            "The OOD images each network is surest about, at T = {:.3} (the first lab's temperature)",
            state.t
        ),
    ));
    let request = DifferenceRequest {
        chosen,
        reference: cross_entropy,
        set,
        score: state.ood_score,
        temperature: state.t,
        split: lab.split_seed(),
    };
    let difference = store.difference(&request);
    // Asked for cross-entropy alone too: its own intervals come with the resamples.
    if difference.is_none() && chosen_view.summary(state.ood_score).is_ok() {
        out.difference_request = Some(request);
    }
    let mut networks = vec![state.tau.title()];
    if chosen != cross_entropy {
        networks.push(Network::Ce.title());
    }
    out.patches.push(text(
        "ood-intervals",
        sentences::detection_intervals(
            &networks,
            score_name(state.ood_score),
            crate::lab::DIFFERENCE_BOOTSTRAP.resamples,
            difference.as_ref(),
        ),
    ));
    let ranking_request = RankingRequest {
        chosen,
        reference: cross_entropy,
        set,
        temperature: state.t,
        split,
        candidates: pair
            .iter()
            .flat_map(|&model| {
                let view = if model == chosen {
                    &chosen_view
                } else {
                    &ce_view
                };
                OodScore::ALL
                    .into_iter()
                    .filter(|&kind| view.summary(kind).is_ok())
                    .map(move |kind| (kind, model))
            })
            .collect(),
    };
    let ranking = store.ranking(&ranking_request);
    out.patches
        .extend(ranking_patches(&ranking_request, ranking, set));
    if ranking.is_none() {
        out.ranking_request = Some(ranking_request);
    }
    out.patches.extend(lessons(
        &chosen_view,
        &ce_view,
        &chosen_summary,
        &ce_summary,
        difference.as_ref(),
        state,
    ));

    let kind = state.ood_score;
    // The score histogram and the ROC curves (a sort of every score) only for a chart on
    // screen: the lab's sliders below them (the FDR level, the OOD share) move neither.
    let score_histogram = match chosen_view.summary(kind) {
        Ok(summary) if figures.contains(&Figure::OodHistogram) => Some((
            chosen_view.score_histogram(kind, HISTOGRAM_BINS)?,
            summary.threshold,
            summary.metrics.fpr95,
        )),
        _ => None,
    };
    out.patches.push(text(
        "ood-histogram-summary",
        chosen_view.summary(kind).map_or_else(
            |_| String::new(),
            |summary| {
                format!(
                    "Here, {} by {}: the threshold {:.4} lets through {} of {} (AUROC {:.3}).",
                    state.tau.title(),
                    score_name(kind),
                    summary.threshold,
                    percent(summary.metrics.fpr95, 1),
                    set.title(),
                    summary.metrics.auroc
                )
            },
        ),
    ));
    let mut roc = Vec::new();
    let roc_pairs = if figures.contains(&Figure::OodRoc) {
        vec![(&ce_view, Network::Ce), (&chosen_view, state.tau)]
    } else {
        Vec::new()
    };
    for (view, network) in roc_pairs {
        if network == Network::Ce && state.tau == Network::Ce && !roc.is_empty() {
            continue;
        }
        if let Ok(summary) = view.summary(kind) {
            let label = format!("{}, AUROC {:.3}", network.title(), summary.metrics.auroc);
            roc.push((label, thin_roc_curve(&view.roc_curve(kind)?, ROC_POINTS)));
        }
    }
    if state.tau == Network::Ce {
        roc.truncate(1);
    }
    let tau_points = tau_points(lab, store, state)?;
    let trained = super::MODELS.len();
    out.patches.push(Patch::Metric {
        id: Some("tau-points"),
        metric: "tau_points".to_string(),
        value: Some(tau_points.len() as f64),
        text: format!("{} of {trained} networks evaluated.", tau_points.len()),
        title: None,
    });
    out.patches.push(text(
        "tau-seeds",
        sentences::seed_spread(&score_label(kind, state.t), &seed_figures(&tau_points)),
    ));
    // The networks whose curves the ROC chart draws: cross-entropy's, then the chosen one's.
    let drawn: Vec<(String, f64, f64)> = [(&ce_view, Network::Ce), (&chosen_view, state.tau)]
        .into_iter()
        .take(if state.tau == Network::Ce { 1 } else { 2 })
        .filter_map(|(view, network)| {
            let metrics = &view.summary(kind).ok()?.metrics;
            Some((network.title(), metrics.auroc, metrics.fpr95))
        })
        .collect();
    let norms = chosen_view.logit_norm_means();
    let summaries = [
        sentences::roc_summary(score_name(kind), set.title(), &drawn),
        sentences::logit_norm_summary(
            &state.tau.title(),
            set.title(),
            norms.in_distribution,
            norms.out_of_distribution,
        ),
        sentences::tau_chart_summary(&score_label(kind, state.t), &seed_figures(&tau_points)),
    ];
    out.patches.extend(
        CHART_SUMMARIES
            .into_iter()
            .zip(summaries)
            .map(|(id, summary)| text(id, summary)),
    );
    out.charts = Some(OodCharts {
        score_histogram,
        score_label: score_label(kind, state.t),
        set_title: set.title(),
        roc,
        norms: chosen_view.logit_norm_histogram(HISTOGRAM_BINS)?,
        norm_means: chosen_view.logit_norm_means(),
        tau_points,
    });
    for (view, network) in [(&chosen_view, state.tau), (&ce_view, Network::Ce)] {
        if network == Network::Ce && state.tau == Network::Ce && !out.galleries.is_empty() {
            continue;
        }
        out.galleries.push(OodGallery {
            title: network.title(),
            set,
            items: view
                .surest_out_of_distribution(SUREST)
                .iter()
                .map(|p| OodTile {
                    index: p.index,
                    text: format!(
                        "{} sure: {}",
                        sentences::confidence_text(p.confidence),
                        FASHION_MNIST_CLASSES
                            .get(p.predicted_class)
                            .copied()
                            .unwrap_or("?")
                    ),
                })
                .collect(),
        });
    }
    Ok(out)
}

/// The feature scores still to compute on `split`: the shown networks' (`pair`), then every
/// other trained network's whose features are all in (the τ chart's).
fn feature_requests(store: &OodStore, pair: &[usize], split: u64) -> Vec<FeatureRequest> {
    let others = Network::trained()
        .into_iter()
        .flat_map(Network::seed_models)
        .filter(|model| !pair.contains(model));
    pair.iter()
        .copied()
        .chain(others)
        .map(|model| FeatureRequest { model, split })
        .filter(|request| {
            store.features().ready(request.model) && store.features().scores(request).is_none()
        })
        .collect()
}

/// The ranking's table (each candidate's rank, score, network, FPR95 and AUROC with their
/// intervals) and its sentence; the table empty and the sentence waiting until a worker has
/// answered `request`.
fn ranking_patches(request: &RankingRequest, ranking: Option<&Ranking>, set: OodSet) -> Vec<Patch> {
    let name = |candidate: usize| {
        let (kind, model) = request.candidates[candidate];
        (score_name(kind), model_title(model), kind, model)
    };
    let rows = ranking.map_or_else(Vec::new, |ranking| {
        ranking
            .ranked
            .iter()
            .enumerate()
            .map(|(rank, ranked)| {
                let (score, network, kind, model) = name(ranked.candidate);
                let suffix = if model == request.chosen { "" } else { "_ce" };
                let key = format!("{}{suffix}", serde_name(kind));
                let cell = |metric: &str, value: &MetricInterval| {
                    metric_cell(
                        format!("rank_{metric}_{key}"),
                        Some(value.estimate),
                        format!(
                            "{:.3} ({:.3} to {:.3})",
                            value.estimate, value.lower, value.upper
                        ),
                    )
                };
                TableRow {
                    current: false,
                    cells: vec![
                        label_cell((rank + 1).to_string()),
                        label_cell(score.to_string()),
                        label_cell(network),
                        cell("fpr95", &ranked.metrics.fpr95),
                        cell("auroc", &ranked.metrics.auroc),
                    ],
                }
            })
            .collect()
    });
    let names: Vec<(&str, String)> = ranking.map_or_else(Vec::new, |ranking| {
        ranking
            .ranked
            .iter()
            .map(|ranked| {
                let (score, network, _, _) = name(ranked.candidate);
                (score, network)
            })
            .collect()
    });
    let figures: Option<Vec<sentences::RankedFigures>> = ranking.map(|ranking| {
        ranking
            .ranked
            .iter()
            .zip(&names)
            .map(|(ranked, (score, network))| sentences::RankedFigures {
                detector: score,
                network,
                auroc: ranked.metrics.auroc,
            })
            .collect()
    });
    vec![
        Patch::Rows {
            id: "ood-ranking",
            rows,
        },
        text(
            "ood-ranking-lesson",
            sentences::ranking_lesson(
                set.title(),
                figures.as_deref(),
                ranking
                    .and_then(|r| r.lead.as_ref())
                    .map(|lead| &lead.auroc),
            ),
        ),
    ]
}

/// A label cell of a table.
fn label_cell(text: String) -> TableCell {
    TableCell {
        text,
        metric: None,
        value: None,
    }
}

/// The scores a ranking is computed on, each candidate's (ID, OOD) laid end to end: every
/// score on the evaluation half of the split (the logit scores and ODIN, computed on every
/// test image, restricted to it) and the OOD set. Returns them with the two sets' sizes.
///
/// # Errors
/// [`LabError::NotReady`] before a candidate's view is computed (another split or
/// temperature since), and the views' errors.
pub fn ranking_scores(
    lab: &Lab,
    store: &mut OodStore,
    request: &RankingRequest,
) -> Result<(Vec<f64>, usize, usize), LabError> {
    if lab.split_seed() != request.split {
        return Err(LabError::NotReady);
    }
    let flags = lab.calibration_flags();
    let (mut scores, mut rows) = (Vec::new(), (0, 0));
    for &(kind, model) in &request.candidates {
        let (in_distribution, out_of_distribution) = view_scores(
            lab,
            store,
            model,
            (request.set, request.temperature, request.split),
            kind,
        )?;
        let before = scores.len();
        if kind.reads_features() {
            scores.extend_from_slice(in_distribution);
        } else {
            scores.extend(
                in_distribution
                    .iter()
                    .zip(flags)
                    .filter(|(_, &calibration)| !calibration)
                    .map(|(&score, _)| score),
            );
        }
        rows = (scores.len() - before, out_of_distribution.len());
        scores.extend_from_slice(out_of_distribution);
    }
    Ok((scores, rows.0, rows.1))
}

/// Rows of the evaluation half.
fn evaluation_rows(lab: &Lab) -> usize {
    lab.calibration_flags().iter().filter(|&&c| !c).count()
}

/// What the feature detectors are fitted on, and whether they are yet for the shown networks
/// (`asked`: a feature score is chosen, so the worker fits them).
fn feature_status(
    store: &OodStore,
    pair: &[usize],
    split: u64,
    calibration_rows: usize,
    asked: bool,
) -> Patch {
    let fitted: Vec<usize> = pair
        .iter()
        .filter_map(|&model| {
            store
                .features()
                .scores(&FeatureRequest { model, split })
                .map(|scores| scores.knn_neighbours)
        })
        .collect();
    let fit = format!(
        "Mahalanobis, KNN, ReAct, ASH-S, ViM and GradNorm read the network's 128 penultimate \
         features. The page has no training images, so they are fitted on the calibration half \
         ({} test images with their labels) and scored on the evaluation half and the OOD images",
        grouped(calibration_rows)
    );
    let line = match fitted.first() {
        Some(&k) if fitted.len() == pair.len() => format!(
            "{fit}; KNN's score is the distance to the k-th nearest calibration image, k = {k}."
        ),
        _ if asked => format!("{fit}. Fitting them for the networks shown…"),
        _ => format!("{fit}, once one of them is chosen."),
    };
    text("feature-status", line)
}

/// The scores a paired difference is computed on: `[chosen ID, chosen OOD, reference ID,
/// reference OOD]`, each network's test and OOD images in the same order.
///
/// # Errors
/// [`LabError::NotReady`] before either network's logits are complete, and the views' errors
/// (a score not computed, ODIN before it is).
pub fn difference_scores(
    lab: &Lab,
    store: &mut OodStore,
    request: &DifferenceRequest,
) -> Result<[Vec<f64>; 4], LabError> {
    let mut scores = Vec::with_capacity(4);
    for model in [request.chosen, request.reference] {
        let (in_distribution, out_of_distribution) = view_scores(
            lab,
            store,
            model,
            (request.set, request.temperature, request.split),
            request.score,
        )?;
        scores.push(in_distribution.to_vec());
        scores.push(out_of_distribution.to_vec());
    }
    scores.try_into().map_err(|_| LabError::NotReady)
}

/// The ID and OOD scores of `kind` in `model`'s view of `(set, temperature, split)`.
fn view_scores<'a>(
    lab: &Lab,
    store: &'a mut OodStore,
    model: usize,
    (set, temperature, split): (OodSet, f64, u64),
    kind: OodScore,
) -> Result<(&'a [f64], &'a [f64]), LabError> {
    let view = store.view(model, set, temperature, complete(lab, model)?, split)?;
    Ok(view.scores(kind)?)
}

/// The test-set logits of `model`, once all have arrived.
fn complete(lab: &Lab, model: usize) -> Result<&[f32], LabError> {
    lab.complete_logits(model)?.ok_or(LabError::NotReady)
}

/// The progress line's name of a model.
fn model_title(model: usize) -> String {
    super::MODELS
        .get(model)
        .map_or_else(String::new, |m| m.network.title())
}

/// Where ODIN stands for the shown networks.
fn odin_status(store: &OodStore, pair: &[usize], set: OodSet, done: bool) -> Patch {
    let (mut arrived, mut rows) = (0, 0);
    for &model in pair {
        for part in [ImageSet::Test, set.into()] {
            let (a, r) = store.odin_progress(model, part);
            arrived += a;
            rows += r;
        }
    }
    let line = if done {
        format!(
            "ODIN (T = {ODIN_TEMPERATURE}, ε = {ODIN_EPSILON}) is computed for the networks shown."
        )
    } else if arrived > 0 {
        format!("ODIN: {} / {} images…", grouped(arrived), grouped(rows))
    } else {
        format!(
            "ODIN needs a backward pass through the network for each of {} images.",
            grouped(rows)
        )
    };
    text("odin-status", line)
}

/// One network's accuracy and calibration readouts, `suffix` naming the network.
fn network_patches(summary: &NetworkSummary, suffix: &str) -> Vec<Patch> {
    let named = |name: &str| format!("{name}{suffix}");
    vec![
        metric(
            named("network_accuracy"),
            summary.accuracy,
            percent(summary.accuracy, 2),
        ),
        metric(
            named("network_ece_raw"),
            summary.ece_raw,
            format!("{:.4}", summary.ece_raw),
        ),
        // A fit stopped at the slider's bound is flagged, as the first lab flags it.
        metric(
            named("network_fitted_temperature"),
            summary.fitted_temperature,
            format!(
                "{:.3}{}",
                summary.fitted_temperature,
                if summary.fitted_bound_hit {
                    " (bound)"
                } else {
                    ""
                }
            ),
        ),
        metric(
            named("network_ece_fitted"),
            summary.ece_fitted,
            format!("{:.4}", summary.ece_fitted),
        ),
    ]
}

/// The detection metrics of every score: the chosen network's four and cross-entropy's FPR95
/// and AUROC; "—" for ODIN until it is computed.
fn metrics_table(chosen: &OodView, cross_entropy: &OodView, current: OodScore) -> Patch {
    let rows = OodScore::ALL
        .iter()
        .map(|&kind| {
            let key = serde_name(kind);
            let mut cells = vec![TableCell {
                text: score_name(kind).to_string(),
                metric: None,
                value: None,
            }];
            let chosen = chosen.summary(kind).ok().map(|s| s.metrics.clone());
            let ce = cross_entropy.summary(kind).ok().map(|s| s.metrics.clone());
            let rate = |v: f64| percent(v, 1);
            let area = |v: f64| format!("{v:.3}");
            for (name, suffix, value, format) in [
                (
                    "fpr95",
                    "",
                    chosen.as_ref().map(|m| m.fpr95),
                    &rate as &dyn Fn(f64) -> String,
                ),
                ("auroc", "", chosen.as_ref().map(|m| m.auroc), &area),
                ("aupr_in", "", chosen.as_ref().map(|m| m.aupr_in), &area),
                ("aupr_out", "", chosen.as_ref().map(|m| m.aupr_out), &area),
                ("fpr95", "_ce", ce.as_ref().map(|m| m.fpr95), &rate),
                ("auroc", "_ce", ce.as_ref().map(|m| m.auroc), &area),
            ] {
                let text = value.map_or_else(|| "—".to_string(), format);
                cells.push(metric_cell(format!("{name}_{key}{suffix}"), value, text));
            }
            TableRow {
                current: kind == current,
                cells,
            }
        })
        .collect();
    Patch::Rows {
        id: "ood-metrics",
        rows,
    }
}

/// The two sentences of the lab, computed from the numbers shown.
fn lessons(
    chosen: &OodView,
    cross_entropy: &OodView,
    chosen_summary: &NetworkSummary,
    ce_summary: &NetworkSummary,
    difference: Option<&PairedDifference>,
    state: &PageState,
) -> Vec<Patch> {
    if state.tau == Network::Ce {
        let line =
            "This is the cross-entropy network: move τ to compare a LogitNorm network with it.";
        return vec![text("ood-lesson", line), text("calibration-lesson", "")];
    }
    let kind = state.ood_score;
    let ood = match (chosen.summary(kind), cross_entropy.summary(kind)) {
        (Ok(a), Ok(b)) => sentences::ood_lesson(
            &state.tau.title(),
            state.ood.title(),
            score_name(kind),
            (a.metrics.fpr95, a.metrics.auroc),
            (b.metrics.fpr95, b.metrics.auroc),
            difference,
        ),
        _ => format!(
            "{} is not computed yet for these networks.",
            score_name(kind)
        ),
    };
    let title = state.tau.title();
    let figures = |title, s: &NetworkSummary| NetworkFigures {
        title,
        accuracy: s.accuracy,
        ece_raw: s.ece_raw,
        fitted_temperature: s.fitted_temperature,
        fitted_bound_hit: s.fitted_bound_hit,
        ece_fitted: s.ece_fitted,
    };
    let chosen_figures = figures(&title, chosen_summary);
    let ce_figures = figures("cross-entropy", ce_summary);
    vec![
        text("ood-lesson", ood),
        text(
            "calibration-lesson",
            sentences::calibration_lesson(&chosen_figures, &ce_figures),
        ),
    ]
}

/// The score histogram's x axis.
fn score_label(kind: OodScore, temperature: f64) -> String {
    match kind {
        OodScore::Msp | OodScore::Energy => format!("{} at T = {temperature:.3}", score_name(kind)),
        OodScore::MaxLogit => score_name(kind).to_string(),
        OodScore::Odin => format!("ODIN (T = {ODIN_TEMPERATURE}, ε = {ODIN_EPSILON})"),
        feature => format!("{} (fitted on the calibration half)", score_name(feature)),
    }
}

/// The τ chart's points as each network's figures over its seeds, in the slider's order.
fn seed_figures(points: &[TauPoint]) -> Vec<sentences::SeedFigures> {
    Network::trained()
        .into_iter()
        .map(|network| {
            let seeds: Vec<&TauPoint> = points.iter().filter(|p| p.tau == network.tau()).collect();
            sentences::SeedFigures {
                network: network.title(),
                fpr95: seeds.iter().map(|p| p.fpr95).collect(),
                auroc: seeds.iter().map(|p| p.auroc).collect(),
            }
        })
        .filter(|figures| !figures.fpr95.is_empty())
        .collect()
}

/// One point per trained network and seed whose logits on the test images and on the chosen
/// set have all arrived (and whose chosen score is computed): the τ chart grows as networks
/// are evaluated.
fn tau_points(
    lab: &mut Lab,
    store: &mut OodStore,
    state: &PageState,
) -> Result<Vec<TauPoint>, LabError> {
    let split = lab.split_seed();
    let mut points = Vec::new();
    for model in Network::trained()
        .into_iter()
        .flat_map(Network::seed_models)
    {
        let Some(logits) = lab.complete_logits(model)? else {
            continue;
        };
        let (arrived, rows) = store.logits_progress(model, state.ood);
        if arrived < rows {
            continue;
        }
        let view = store.view(model, state.ood, state.t, logits, split)?;
        let Ok(detection) = view.summary(state.ood_score) else {
            continue;
        };
        let (fpr95, auroc) = (detection.metrics.fpr95, detection.metrics.auroc);
        let summary = lab.network_summary(model, state.bins, state.binning)?;
        points.push(TauPoint {
            tau: super::MODELS[model].network.tau(),
            seed: super::MODELS[model].seed,
            accuracy: summary.accuracy,
            ece_raw: summary.ece_raw,
            ece_fitted: summary.ece_fitted,
            fpr95,
            auroc,
        });
    }
    Ok(points)
}
