//! The shift lab on the page: which corrupted copies the chosen network still needs, the
//! table of the clean and shifted metrics, the sentence that judges coverage both ways, and
//! the rows of the severity table, from a [`ShiftView`].

use serde::Serialize;

use super::readouts::{metric, metric_cell, text, Patch, TableRow};
use super::{PageState, MODELS};
use crate::lab::{Lab, LabError, ShiftMetrics, ShiftStore, ShiftView, ShiftedSet, WeightedView};
use crate::sentences::{self, percent};
use crate::text::grouped;

/// A corrupted copy the page's workers should classify with a network.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShiftJob {
    pub model: usize,
    /// The copy's name ([`ShiftedSet::name`]).
    pub set: String,
}

/// The thumbnails' rows, clean and (past severity 0) from the corrupted copy `set`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShiftThumbnails {
    pub rows: Vec<usize>,
    pub set: Option<String>,
}

/// What the shift lab puts on the page this frame.
#[derive(Debug, Clone, Default)]
pub struct ShiftFrame {
    pub patches: Vec<Patch>,
    pub needs: Vec<ShiftJob>,
    pub thumbnails: Option<ShiftThumbnails>,
    pub view: Option<ShiftView>,
}

/// A metric of the table: its `data-metric` suffix, its value, and how it is written.
type TableMetric = (&'static str, fn(&ShiftMetrics) -> f64, fn(f64) -> String);

/// The metrics of the table.
const METRICS: [TableMetric; 7] = [
    ("temperature", |m| m.temperature, |v| format!("{v:.3}")),
    ("accuracy", |m| m.accuracy, |v| percent(v, 2)),
    ("ece", |m| m.ece, |v| format!("{v:.4}")),
    ("nll", |m| m.nll, |v| format!("{v:.4}")),
    ("brier", |m| m.brier, |v| format!("{v:.4}")),
    ("coverage", |m| m.coverage, |v| percent(v, 2)),
    ("set_size", |m| m.average_set_size, format_size),
];

/// The shift lab of the chosen network in `state`: its needs, readouts and view.
///
/// # Errors
/// The lab's errors other than [`LabError::NotReady`] (a state of the page: the network's clean
/// logits are still arriving).
pub(super) fn render(
    lab: &mut Lab,
    store: &mut ShiftStore,
    state: &PageState,
) -> Result<ShiftFrame, LabError> {
    let model = state.model.index();
    let corruption = state.shift;
    let chosen = ShiftedSet::new(corruption, state.severity).ok();
    let mut frame = ShiftFrame::default();
    // The shown severity first, then the others of the corruption for the chart, one copy at a
    // time: each costs the workers 10,000 images and the page a copy of the pixels, and a reader
    // who scrolls away stops the sweep.
    let levels =
        (1..=corruption.max_severity()).filter_map(|s| ShiftedSet::new(corruption, s).ok());
    let next = chosen
        .into_iter()
        .chain(levels.filter(|&s| Some(s) != chosen))
        .find(|&set| store.complete_logits(model, set).is_none());
    frame.needs = next
        .map(|set| ShiftJob {
            model,
            set: set.name(),
        })
        .into_iter()
        .collect();
    frame.patches.push(text(
        "shift-parameter",
        format!(
            "{} ({})",
            state.severity,
            corruption.parameter(state.severity)
        ),
    ));
    frame.patches.extend([
        text("shift-progress", progress(lab, store, state, next)),
        Patch::Progress {
            id: "shift-progress-bar",
            value: next.map_or(0, |set| store.arrived(model, set)),
            max: lab.rows(),
        },
        Patch::Hidden {
            id: "shift-progress-bar",
            hidden: next.is_none(),
        },
    ]);
    let settings = state.conformal_settings();
    let view = match lab.shift_view(
        store,
        corruption,
        state.severity,
        &settings,
        state.bins,
        state.binning,
    ) {
        Ok(view) => view,
        Err(LabError::NotReady) => {
            frame
                .patches
                .extend(chart_summaries(None, state.recalibrate));
            frame.patches.extend(weighted(None, None));
            return Ok(frame);
        }
        Err(e) => return Err(e),
    };
    let weighted_view = match lab.weighted_view(store, corruption, state.severity, &settings) {
        Ok(weighted_view) => Some(weighted_view),
        Err(LabError::NotReady) => None,
        Err(e) => return Err(e),
    };
    frame
        .patches
        .extend(weighted(Some(&view), weighted_view.as_ref()));
    frame.thumbnails = Some(ShiftThumbnails {
        rows: view.thumbnails.clone(),
        set: chosen.map(ShiftedSet::name),
    });
    frame.patches.extend(table(&view));
    frame.patches.push(text("shift-verdict", verdict(&view)));
    frame.patches.push(severity_rows(&view));
    frame
        .patches
        .extend(chart_summaries(Some(&view), state.recalibrate));
    frame.view = Some(view);
    Ok(frame)
}

/// Which severities are evaluated, and how far the copy being classified (`next`) has got.
fn progress(lab: &Lab, store: &ShiftStore, state: &PageState, next: Option<ShiftedSet>) -> String {
    let model = state.model.index();
    let network = MODELS[model].title;
    let done: Vec<String> = std::iter::once(0)
        .chain((1..=state.shift.max_severity()).filter(|&s| {
            ShiftedSet::new(state.shift, s)
                .is_ok_and(|set| store.complete_logits(model, set).is_some())
        }))
        .map(|s| s.to_string())
        .collect();
    let evaluated = format!(
        "Severities evaluated for the {network} network: {} of 0–{}.",
        done.join(", "),
        state.shift.max_severity()
    );
    match next {
        Some(set) => format!(
            "{evaluated} Classifying severity {}: {} of {} corrupted images…",
            set.severity,
            grouped(store.arrived(model, set)),
            grouped(lab.rows())
        ),
        None => evaluated,
    }
}

/// The table's three columns: the clean images, and the shown severity with T and q̂ kept and
/// refitted; "…" while the shown severity's logits are arriving.
fn table(view: &ShiftView) -> Vec<Patch> {
    let current = view.current();
    let mut patches = Vec::new();
    for (name, value, format) in METRICS {
        let columns = [
            ("clean", view.clean().map(|p| &p.kept)),
            ("kept", current.map(|p| &p.kept)),
            ("refit", current.map(|p| &p.refit)),
        ];
        for (column, metrics) in columns {
            let key = format!("shift_{column}_{name}");
            patches.push(match metrics {
                Some(m) => metric(key, value(m), format(value(m))),
                None => Patch::Metric {
                    id: None,
                    metric: key,
                    value: None,
                    text: "…".to_string(),
                    title: None,
                },
            });
        }
    }
    patches
}

/// Judges the shown severity's coverage against the guarantee band, T and q̂ kept and refitted.
fn verdict(view: &ShiftView) -> String {
    let (Some(point), Some(clean)) = (view.current(), view.clean()) else {
        return "The corrupted images are being classified: the numbers follow.".to_string();
    };
    let judge = |coverage: f64, exchangeable: bool| match view.split_standard_deviation {
        Some(sd) => sentences::shift_coverage_verdict(
            coverage,
            1.0 - view.alpha,
            view.guarantee_upper,
            sd,
            exchangeable,
        ),
        None => sentences::coverage_verdict_without_threshold(coverage, &[]).text,
    };
    if point.severity == 0 {
        return format!(
            "Severity 0 is the clean test images, where both ways are the same: {}",
            judge(point.kept.coverage, true)
        );
    }
    format!(
        "{} at severity {} ({}): accuracy {} (clean: {}). With T and q̂ from the clean \
         calibration half: {} Refitted on the corrupted calibration half: {} The refitted sets \
         hold {} labels on average (clean: {}).",
        capitalised(view.corruption.label()),
        point.severity,
        view.corruption.parameter(point.severity),
        percent(point.kept.accuracy, 2),
        percent(clean.kept.accuracy, 2),
        judge(point.kept.coverage, false),
        judge(point.refit.coverage, true),
        format_size(point.refit.average_set_size),
        format_size(clean.kept.average_set_size),
    )
}

/// The weighted conformal block: its coverage and set size beside the kept and refitted ones
/// (the table's cells), the weights' effective sample size and share of `+∞` thresholds, and
/// the sentence; "…" and no sentence while the shown severity's logits are arriving.
fn weighted(view: Option<&ShiftView>, weighted: Option<&WeightedView>) -> Vec<Patch> {
    let point = view.and_then(ShiftView::current);
    let (Some(view), Some(point), Some(w)) = (view, point, weighted) else {
        let waiting = |key: &str| Patch::Metric {
            id: None,
            metric: key.to_string(),
            value: None,
            text: "…".to_string(),
            title: None,
        };
        return vec![
            waiting("shift_weighted_coverage"),
            waiting("shift_weighted_set_size"),
            waiting("shift_weighted_ess"),
            waiting("shift_weighted_infinite_share"),
            text("shift-weighted-sentence", ""),
        ];
    };
    let figures = sentences::WeightedFigures {
        alpha: view.alpha,
        split_standard_deviation: view.split_standard_deviation,
        kept: (point.kept.coverage, point.kept.average_set_size),
        weighted: (w.coverage, w.average_set_size),
        refit: (point.refit.coverage, point.refit.average_set_size),
        effective_sample_size: w.effective_sample_size,
        n_calibration: w.n_calibration,
        infinite_share: w.infinite_share,
    };
    vec![
        metric(
            "shift_weighted_coverage",
            w.coverage,
            percent(w.coverage, 2),
        ),
        metric(
            "shift_weighted_set_size",
            w.average_set_size,
            format_size(w.average_set_size),
        ),
        metric(
            "shift_weighted_ess",
            w.effective_sample_size,
            format!(
                "{} of {}",
                grouped(w.effective_sample_size.round() as usize),
                grouped(w.n_calibration)
            ),
        ),
        metric(
            "shift_weighted_infinite_share",
            w.infinite_share,
            percent(w.infinite_share, 2),
        ),
        text(
            "shift-weighted-sentence",
            sentences::weighted_sentence(&figures),
        ),
    ]
}

/// An average set size as the table writes it.
fn format_size(size: f64) -> String {
    format!("{size:.3}")
}

/// `text` with its first letter in capitals.
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// One row per severity evaluated: its parameter and the metrics with T and q̂ kept, then
/// coverage and set size refitted.
fn severity_rows(view: &ShiftView) -> Patch {
    let rows = view
        .points
        .iter()
        .map(|point| {
            let s = point.severity;
            let cell = |name: &str, value: f64, text: String| {
                metric_cell(format!("shift_severity_{s}_{name}"), Some(value), text)
            };
            let (kept, refit) = (&point.kept, &point.refit);
            TableRow {
                current: s == view.severity,
                cells: vec![
                    super::readouts::TableCell {
                        text: format!("{s} ({})", view.corruption.parameter(s)),
                        metric: None,
                        value: None,
                    },
                    cell("accuracy", kept.accuracy, percent(kept.accuracy, 2)),
                    cell("ece", kept.ece, format!("{:.4}", kept.ece)),
                    cell("nll", kept.nll, format!("{:.4}", kept.nll)),
                    cell("brier", kept.brier, format!("{:.4}", kept.brier)),
                    cell("coverage_kept", kept.coverage, percent(kept.coverage, 2)),
                    cell(
                        "size_kept",
                        kept.average_set_size,
                        format_size(kept.average_set_size),
                    ),
                    cell("coverage_refit", refit.coverage, percent(refit.coverage, 2)),
                    cell(
                        "size_refit",
                        refit.average_set_size,
                        format_size(refit.average_set_size),
                    ),
                ],
            }
        })
        .collect();
    Patch::Rows {
        id: "shift-severities",
        rows,
    }
}

/// The text alternatives of the lab's two charts: the diagram's images, T, accuracy and ECE
/// (T and q̂ refitted when `recalibrate`, kept otherwise, as the diagram draws them), and the
/// severity chart's way from severity 0 to the highest evaluated; both empty while `view` is
/// not computed, so that no number of another network stays.
fn chart_summaries(view: Option<&ShiftView>, recalibrate: bool) -> [Patch; 2] {
    let current = view.and_then(ShiftView::current);
    let parameter = view.map(|v| v.corruption.parameter(v.severity));
    let corruption = match (view, &parameter) {
        (Some(v), Some(parameter)) if v.severity > 0 => {
            Some((v.corruption.label(), v.severity, parameter.as_str()))
        }
        _ => None,
    };
    let figures = current.map(|point| {
        let metrics = if recalibrate {
            &point.refit
        } else {
            &point.kept
        };
        sentences::ShiftFigures {
            temperature: metrics.temperature,
            accuracy: metrics.accuracy,
            ece: metrics.ece,
        }
    });
    let points: Vec<sentences::SeverityFigures> = view.map_or_else(Vec::new, |v| {
        v.points
            .iter()
            .map(|point| sentences::SeverityFigures {
                severity: point.severity,
                accuracy: point.kept.accuracy,
                ece: point.kept.ece,
                coverage_kept: point.kept.coverage,
                coverage_refit: point.refit.coverage,
            })
            .collect()
    });
    [
        text(
            "shift-reliability-summary",
            sentences::shift_reliability_summary(corruption, recalibrate, figures),
        ),
        text(
            "shift-severity-summary",
            sentences::shift_severity_summary(&points),
        ),
    ]
}
