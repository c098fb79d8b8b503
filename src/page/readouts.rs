//! The page's readouts as patches: which element gets which text, number or control value.
//! Every number on the page is formatted here, once.

use std::collections::HashMap;

use serde::Serialize;

use serde_json::Value;

use super::state::{temperature_fraction, FieldKind, PageState, StateFields, FIELDS, MODELS};
use super::{GalleryChoice, GALLERY_LIMIT};
use crate::bootstrap::{MetricInterval, MetricIntervals};
use crate::calibration::{MAX_TEMPERATURE, MIN_TEMPERATURE};
use crate::calibration_estimators::Estimators;
use crate::calibration_null::GAP_STANDARD_ERRORS;
use crate::corp::Corp;
use crate::lab::MISTAKES;
use crate::lab::{
    AnatomyRequest, AnatomyView, ConformalView, CoverageExperiment, GalleryItem, RivalsView,
    ScoreKind, TemperatureView, SWEEP_STEP, SWEEP_STEPS,
};
use crate::recalibration::Method;
use crate::sentences::{self, percent};
use crate::temperature_anatomy::{BrierDecomposition, FitMistake};
use crate::text::{grouped, serde_name};

/// One change to one element of the page.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Patch {
    /// The element's text.
    Text {
        id: &'static str,
        text: String,
    },
    /// A readout: its text for people and its value (`data-value`) for tests and copying. The
    /// element is `id` when given, otherwise the one whose `data-metric` is `metric`.
    Metric {
        id: Option<&'static str>,
        metric: String,
        value: Option<f64>,
        text: String,
        /// A tooltip with the details behind a summary; cleared when `None`.
        title: Option<String>,
    },
    /// A control's value and, for a slider, the value a screen reader speaks (its position is
    /// not always its value).
    Control {
        id: &'static str,
        value: String,
        valuetext: Option<String>,
    },
    Checked {
        id: &'static str,
        checked: bool,
    },
    Disabled {
        id: &'static str,
        disabled: bool,
    },
    Hidden {
        id: &'static str,
        hidden: bool,
    },
    /// A progress bar's value and maximum.
    Progress {
        id: &'static str,
        value: usize,
        max: usize,
    },
    /// A slider's largest value, where it depends on another control (inversion's severity
    /// is 0 or 1).
    Max {
        id: &'static str,
        max: String,
    },
    /// A CSS custom property of the element.
    Style {
        id: &'static str,
        property: &'static str,
        value: String,
    },
    /// Readouts written one after the other, separated by " · ".
    Metrics {
        id: &'static str,
        items: Vec<MetricItem>,
    },
    /// The rows of a table's body.
    Rows {
        id: &'static str,
        rows: Vec<TableRow>,
    },
    /// The rows of a bar chart drawn as a table: a label, then bars whose lengths are their
    /// readouts' values (shares in `[0, 1]`), each with its readout beside it.
    Bars {
        id: &'static str,
        rows: Vec<BarRow>,
    },
}

/// One row of a [`Patch::Bars`] chart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BarRow {
    pub label: String,
    pub bars: Vec<MetricItem>,
}

/// What each element was last sent, so that a frame leaves out the patches that would change
/// nothing: at every slider step most of a lab's hundred readouts keep their text (its limits,
/// the metrics at T = 1 and at the fitted T, the rivals' table), and each one sent costs the
/// frame its conversion to JavaScript and the page a lookup and a comparison, or for a table a
/// rebuild, which costs a layout and a screen reader its place. Besides the frames, only a new
/// state's control patches and a coverage experiment's readouts write these elements, with the
/// values the next frame computes from the same state and experiment, and the reader, who
/// changes a control's value: [`SentPatches::forget`] that control when the reader touches it, so
/// that the state's value is sent back to it whether it took the reader's or refused it.
#[derive(Debug, Default)]
pub struct SentPatches(HashMap<PatchTarget, Patch>);

/// The element (or, for a readout without an id, every element showing that metric) and the
/// property of it that a patch writes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PatchTarget {
    kind: std::mem::Discriminant<Patch>,
    element: String,
}

impl SentPatches {
    /// Removes from `patches` every patch equal to the one last sent to its target, and
    /// remembers the others.
    pub fn drop_unchanged(&mut self, patches: &mut Vec<Patch>) {
        patches.retain(|patch| {
            let element = match patch {
                Patch::Metric {
                    id: None, metric, ..
                } => metric.clone(),
                Patch::Metric { id: Some(id), .. }
                | Patch::Control { id, .. }
                | Patch::Checked { id, .. }
                | Patch::Text { id, .. }
                | Patch::Disabled { id, .. }
                | Patch::Hidden { id, .. }
                | Patch::Progress { id, .. }
                | Patch::Max { id, .. }
                | Patch::Metrics { id, .. }
                | Patch::Rows { id, .. }
                | Patch::Bars { id, .. } => format!("#{id}"),
                Patch::Style { id, property, .. } => format!("#{id} {property}"),
            };
            let target = PatchTarget {
                kind: std::mem::discriminant(patch),
                element,
            };
            if self.0.get(&target) == Some(patch) {
                return false;
            }
            self.0.insert(target, patch.clone());
            true
        });
    }

    /// Forgets what was sent to control `id` (a slider, a select, a check box or a group of
    /// radio buttons), which the reader has just changed: its next patch is sent even if equal
    /// to the last one.
    pub fn forget(&mut self, id: &str) {
        let element = format!("#{id}");
        self.0.retain(|target, patch| {
            target.element != element
                || !matches!(patch, Patch::Control { .. } | Patch::Checked { .. })
        });
    }
}

/// One readout of a [`Patch::Metrics`] list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricItem {
    pub metric: String,
    pub value: Option<f64>,
    pub text: String,
}

/// One row of a [`Patch::Rows`] table; `current` marks the row of the chosen setting.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableRow {
    pub current: bool,
    pub cells: Vec<TableCell>,
}

/// One cell: a readout when `metric` is set, a label otherwise.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableCell {
    pub text: String,
    pub metric: Option<String>,
    pub value: Option<f64>,
}

/// A titled group of gallery images.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GallerySection {
    pub title: Option<&'static str>,
    pub items: Vec<GalleryItem>,
}

/// What the coverage experiment, or another measurement the reader asks for, writes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExperimentReadouts {
    pub patches: Vec<Patch>,
}

/// Whether the labs' numbers are provisional: the Fit button's mark, and each drawn lab's line
/// naming how many of the `rows` (the test images, or the rows of the reader's files) they are
/// computed on (a line of about the same length once all are in, so that the page does not
/// jump when loading ends).
pub(super) fn provisional(
    arrived: usize,
    rows: usize,
    what: &str,
    labs: &[&'static str],
) -> Vec<Patch> {
    let partial = arrived < rows;
    let line = if partial {
        format!(
            "Provisional: computed on the {} of {} {what} classified so far; the numbers settle \
             once all are in.",
            grouped(arrived),
            grouped(rows)
        )
    } else {
        format!("Computed on all {} {what}.", grouped(rows))
    };
    let mut patches = vec![text(
        "fit-provisional",
        if partial { " (provisional)" } else { "" },
    )];
    for &lab in labs {
        let id = match lab {
            "temperature" => "temperature-provisional",
            "conformal" => "conformal-provisional",
            _ => continue,
        };
        patches.push(text(id, line.clone()));
    }
    patches
}

pub(super) fn text(id: &'static str, text: impl Into<String>) -> Patch {
    Patch::Text {
        id,
        text: text.into(),
    }
}

pub(super) fn metric(name: impl Into<String>, value: f64, text: String) -> Patch {
    Patch::Metric {
        id: None,
        metric: name.into(),
        value: Some(value),
        text,
        title: None,
    }
}

/// The slider `id`'s position (from the field table, [`StateFields::slider_position`]) and
/// spoken value, and the text shown beside it (element `label`).
pub(super) fn slider(
    fields: &StateFields,
    id: &'static str,
    label: &'static str,
    shown: String,
    valuetext: String,
) -> [Patch; 2] {
    [
        Patch::Control {
            id,
            value: fields.slider_position(id).unwrap_or_default(),
            valuetext: Some(valuetext),
        },
        text(label, shown),
    ]
}

/// A table cell holding a readout (`value` `None` while it is not known).
pub(super) fn metric_cell(metric: String, value: Option<f64>, text: String) -> TableCell {
    TableCell {
        text,
        metric: Some(metric),
        value,
    }
}

/// A score's name as the text writes it.
pub fn score_name(kind: ScoreKind) -> &'static str {
    match kind {
        ScoreKind::Lac => "LAC",
        ScoreKind::Aps => "APS",
        ScoreKind::Raps => "RAPS",
        ScoreKind::Saps => "SAPS",
    }
}

/// The value of each control that sets a choice or a flag ([`FieldKind::Choice`],
/// [`FieldKind::Flag`]), made from [`FIELDS`]: a select's option is the field's name in the hash,
/// a check box is checked when the hash says `1`.
fn choice_patches(values: &StateFields) -> Vec<Patch> {
    FIELDS
        .iter()
        .filter_map(|field| {
            let id = field.control?;
            match (field.kind, values.get(field.key)?) {
                (FieldKind::Choice, Value::String(name)) => Some(Patch::Control {
                    id,
                    value: name.clone(),
                    valuetext: None,
                }),
                (FieldKind::Flag, Value::Bool(checked)) => Some(Patch::Checked {
                    id,
                    checked: *checked,
                }),
                _ => None,
            }
        })
        .collect()
}

/// The controls, their labels and which of them apply: from the state alone, so they are
/// right before any logits arrive.
pub fn control_patches(state: &PageState) -> Vec<Patch> {
    let t = format!("{:.3}", state.t);
    let alpha = format!("{:.2}", state.alpha);
    let target = percent(1.0 - state.alpha, 0);
    let raps_lambda = format!("{:.2}", state.raps_lambda);
    let saps_lambda = format!("{:.2}", state.saps_lambda);
    let lac = state.score == ScoreKind::Lac;
    let mut idle = Vec::new();
    if lac {
        idle.push("“randomized” does nothing for LAC, whose score 1 − p(y) has no draw");
    }
    if state.score != ScoreKind::Raps {
        idle.push("the RAPS parameters apply to RAPS only");
    }
    if state.score != ScoreKind::Saps {
        idle.push("the SAPS parameter applies to SAPS only");
    }
    let reason = if idle.is_empty() {
        String::new()
    } else {
        format!("Disabled: {}.", idle.join("; "))
    };
    let (low, high) = (MIN_TEMPERATURE, MAX_TEMPERATURE);
    let fields = state.fields();
    let mut patches = vec![
        text("temperature-min", format!("{low}")),
        text("temperature-max", format!("{high}")),
        text("scale-min", format!("{low}")),
        text("scale-middle", format!("{}", (low * high).sqrt())),
        text("scale-max", format!("{high}")),
        text(
            "sweep-range",
            format!("{SWEEP_STEP:.2} to {:.2}", SWEEP_STEP * SWEEP_STEPS as f64),
        ),
        Patch::Control {
            id: "temperature",
            value: fields.slider_position("temperature").unwrap_or_default(),
            valuetext: Some(format!("T = {t}")),
        },
        Patch::Metric {
            id: Some("temperature-value"),
            metric: "temperature".to_string(),
            value: Some(state.t),
            text: t.clone(),
            title: None,
        },
        text("conformal-temperature", t.clone()),
        text("ood-temperature", t),
        text("split-seed", state.split.to_string()),
        text("target-value", target.clone()),
        Patch::Disabled {
            id: "randomized",
            disabled: lac,
        },
        Patch::Disabled {
            id: "raps-parameters",
            disabled: state.score != ScoreKind::Raps,
        },
        Patch::Disabled {
            id: "saps-parameters",
            disabled: state.score != ScoreKind::Saps,
        },
        text("controls-reason", reason),
        text("ood-network-title", state.tau.title()),
        text(
            "progress-label",
            format!(
                "Running the {} network on the test images…",
                MODELS[state.model.index()].title
            ),
        ),
    ];
    let severity = state.severity.to_string();
    let parameter = state.shift.parameter(state.severity);
    patches.extend(choice_patches(&fields));
    patches.push(Patch::Max {
        id: "severity",
        max: state.shift.max_severity().to_string(),
    });
    patches.extend(slider(
        &fields,
        "severity",
        "severity-value",
        format!("{severity} ({parameter})"),
        format!("severity {severity} ({parameter})"),
    ));
    let thresholds = if state.mondrian {
        "class-conditional thresholds"
    } else {
        "one threshold"
    };
    let randomized = if state.randomized && !lac {
        " randomized"
    } else {
        ""
    };
    patches.push(text(
        "shift-settings",
        format!(
            "{}{randomized}, α = {alpha}, {thresholds}",
            score_name(state.score)
        ),
    ));
    patches.extend(slider(
        &fields,
        "tau",
        "tau-value",
        state.tau.title(),
        state.tau.title(),
    ));
    let bins = state.bins.to_string();
    let k_reg = state.k_reg.to_string();
    for pair in [
        slider(
            &fields,
            "bins",
            "bins-value",
            bins,
            format!("{} bins", state.bins),
        ),
        slider(
            &fields,
            "alpha",
            "alpha-value",
            alpha.clone(),
            format!("α = {alpha}, target coverage {target}"),
        ),
        slider(
            &fields,
            "raps-lambda",
            "raps-lambda-value",
            raps_lambda.clone(),
            format!("λ = {raps_lambda}"),
        ),
        slider(
            &fields,
            "k-reg",
            "k-reg-value",
            k_reg.clone(),
            format!("k reg = {k_reg}"),
        ),
        slider(
            &fields,
            "saps-lambda",
            "saps-lambda-value",
            saps_lambda.clone(),
            format!("λ = {saps_lambda}"),
        ),
    ] {
        patches.extend(pair);
    }
    patches.extend(super::pac::control_patches(state, &fields));
    patches.extend(super::selective::control_patches(state, &fields));
    patches.extend(super::adaptive::control_patches(state, &fields));
    patches.extend(super::pvalues::control_patches(state, &fields));
    patches
}

/// The temperature lab's readouts: those of the parts the view computed (the others keep what
/// they show until their block is computed again, see [`super::block`]).
pub(super) fn temperature(view: &TemperatureView) -> Vec<Patch> {
    let mut patches = Vec::new();
    for (suffix, report, smooth) in [
        (
            "",
            &view.at_temperature,
            view.smooth.as_ref().map(|s| &s.ece),
        ),
        ("_t1", &view.at_one, Some(&view.smooth_at_one)),
        ("_fitted", &view.at_fitted, Some(&view.smooth_at_fitted)),
    ] {
        patches.push(metric(
            format!("accuracy{suffix}"),
            report.accuracy,
            percent(report.accuracy, 2),
        ));
        for (name, value) in [
            ("ece", Some(report.ece)),
            ("smece", smooth.map(|s| s.smece)),
            ("mce", Some(report.mce)),
            ("nll", Some(report.nll)),
            ("brier", Some(report.brier)),
        ] {
            if let Some(value) = value {
                patches.push(metric(
                    format!("{name}{suffix}"),
                    value,
                    format!("{value:.4}"),
                ));
            }
        }
    }
    for (suffix, intervals) in ["", "_t1", "_fitted"].into_iter().zip(&view.intervals) {
        let each = intervals.map(|i| [i.ece, i.smece, i.nll, i.brier]);
        for (m, name) in ["ece", "smece", "nll", "brier"].into_iter().enumerate() {
            patches.extend(interval_ends(
                &format!("{name}{suffix}"),
                each.map(|e| e[m]),
            ));
        }
    }
    if let Some(table) = &view.estimator_case {
        patches.extend(estimator_readouts(&table.estimators, table.intervals));
    }
    if let Some(columns) = &view.brier_decomposition {
        patches.extend(brier_decomposition_readouts(view, columns));
    }
    if let Some(columns) = &view.corp {
        patches.extend(corp_decomposition_readouts(view, columns));
    }
    if let Some(smooth) = &view.smooth {
        patches.push(metric(
            "smece_bandwidth",
            smooth.ece.bandwidth,
            format!("{:.4}", smooth.ece.bandwidth),
        ));
    }
    let fitted = view.fitted_temperature;
    let bound = if view.fitted_bound_hit {
        " (bound)"
    } else {
        ""
    };
    patches.extend([
        metric(
            "mean_confidence",
            view.mean_confidence,
            percent(view.mean_confidence, 2),
        ),
        metric(
            "ece_floor",
            view.calibration_test.null_ece_mean,
            format!("{:.4}", view.calibration_test.null_ece_mean),
        ),
        metric(
            "ece_null_limit",
            view.calibration_test.null_ece_limit,
            format!("{:.4}", view.calibration_test.null_ece_limit),
        ),
        metric(
            "ece_p_value",
            view.calibration_test.p_value,
            format!("{:.3}", view.calibration_test.p_value),
        ),
        metric(
            "mean_gap",
            view.calibration_test.mean_gap,
            format!(
                "{:+.1} ± {:.1} points",
                100.0 * view.calibration_test.mean_gap,
                100.0 * GAP_STANDARD_ERRORS * view.calibration_test.gap_standard_error
            ),
        ),
        text("confidence-verdict", view.verdict.clone()),
        text(
            "reliability-summary",
            sentences::reliability_summary(
                view.temperature,
                view.mean_confidence,
                &view.at_temperature,
            ),
        ),
        text("verdict-rates", sentences::verdict_rates_line()),
        metric("fitted_temperature", fitted, format!("{fitted:.3}{bound}")),
        Patch::Disabled {
            id: "fit",
            disabled: false,
        },
        Patch::Hidden {
            id: "fitted-marker",
            hidden: false,
        },
        Patch::Style {
            id: "fitted-marker",
            property: "--position",
            value: format!("{}", temperature_fraction(fitted)),
        },
        text("evaluation-size", grouped(view.n_evaluation)),
        rivals_rows(view.rivals.as_ref()),
        text(
            "rivals-accuracy-sentence",
            view.rivals.as_ref().map_or_else(
                || sentences::rivals_pending(view.rivals_request.is_some()),
                |rivals| rivals.accuracy_sentence.clone(),
            ),
        ),
        text(
            "rivals-binning-sentence",
            view.rivals
                .as_ref()
                .map_or_else(String::new, |rivals| rivals.binning_sentence.clone()),
        ),
        text(
            "rivals-venn-abers-sentence",
            view.rivals
                .as_ref()
                .map_or_else(String::new, |rivals| rivals.venn_abers_sentence.clone()),
        ),
        text(
            "split-sizes",
            format!(
                "{} calibration / {} evaluation images",
                grouped(view.n_calibration),
                grouped(view.n_evaluation)
            ),
        ),
    ]);
    patches
}

/// The text alternatives of the temperature lab's smooth, CORP, class-wise and rivals' diagrams:
/// their main numbers, at the end of each caption (the reliability diagram's is in
/// [`temperature`]'s list), for the diagrams whose numbers the view computed. `class_names`
/// names the classes as the charts do.
pub(super) fn temperature_chart_summaries(
    view: &TemperatureView,
    class_names: &[String],
) -> Vec<Patch> {
    let classes: Vec<(&str, f64)> = class_names
        .iter()
        .map(String::as_str)
        .zip(
            view.classwise_bins
                .iter()
                .map(|bins| crate::calibration::expected_calibration_error(bins)),
        )
        .collect();
    let methods: Vec<(&str, f64)> = view.rivals.as_ref().map_or_else(Vec::new, |rivals| {
        rivals
            .reports
            .iter()
            .map(|report| (report.method.title(), report.ece))
            .collect()
    });
    let mut patches = vec![
        text(
            "classwise-summary",
            sentences::classwise_summary(view.at_temperature.classwise_ece, &classes),
        ),
        text(
            "rivals-reliability-summary",
            sentences::rivals_reliability_summary(&methods),
        ),
    ];
    if let Some(smooth) = &view.smooth {
        let curve = &smooth.curve;
        let furthest = curve
            .confidence
            .iter()
            .zip(&curve.accuracy)
            .zip(&curve.density)
            .filter(|(_, &density)| crate::plot::smooth_curve_shown(curve, density))
            .map(|((&confidence, &accuracy), _)| (confidence, accuracy))
            .max_by(|a, b| (a.1 - a.0).abs().total_cmp(&(b.1 - b.0).abs()));
        patches.push(text(
            "smooth-reliability-summary",
            sentences::smooth_reliability_summary(
                smooth.ece.smece,
                smooth.ece.bandwidth,
                curve.examples,
                furthest,
            ),
        ));
    }
    if let Some([at_slider, ..]) = &view.corp {
        patches.push(text(
            "corp-reliability-summary",
            sentences::corp_reliability_summary(at_slider),
        ));
    }
    if let Some(cumulative) = &view.cumulative {
        patches.push(text(
            "cumulative-differences-summary",
            sentences::cumulative_differences_summary(cumulative),
        ));
    }
    patches
}

/// The two ends `{name}_lo` and `{name}_hi` of a bootstrap interval, to 4 decimals, or "…"
/// and no value while the worker computes it.
pub(super) fn interval_ends(name: &str, interval: Option<MetricInterval>) -> [Patch; 2] {
    [
        ("lo", interval.map(|i| i.lower)),
        ("hi", interval.map(|i| i.upper)),
    ]
    .map(|(end, value)| Patch::Metric {
        id: None,
        metric: format!("{name}_{end}"),
        value,
        text: value.map_or_else(|| "…".to_string(), |v| format!("{v:.4}")),
        title: None,
    })
}

/// The estimators table at the slider's T, each readout named as `calibra report --json` names
/// it: errors to 4 decimals with their bootstrap intervals (`intervals`, once the worker has
/// them), statistics to 2, p-values to 3 (below 0.001 as "< 0.001"); "–" and no value for a
/// test without scale (every confidence 0 or 1).
fn estimator_readouts(estimators: &Estimators, intervals: Option<MetricIntervals>) -> Vec<Patch> {
    let errors = [
        (
            "ece_debiased",
            estimators.ece_debiased,
            intervals.map(|i| i.ece_debiased),
        ),
        (
            "top_label_ece",
            estimators.top_label_ece,
            intervals.map(|i| i.top_label_ece),
        ),
        (
            "ks_error",
            estimators.ks_error,
            intervals.map(|i| i.ks_error),
        ),
    ]
    .into_iter()
    .flat_map(|(name, value, interval)| {
        std::iter::once(metric(name, value, format!("{value:.4}")))
            .chain(interval_ends(name, interval))
    })
    .collect::<Vec<_>>();
    let statistic = |value: f64| format!("{value:.2}");
    let p_value = |value: f64| {
        if value < 0.001 {
            "< 0.001".to_string()
        } else {
            format!("{value:.3}")
        }
    };
    let tests = [
        (
            "spiegelhalter_z",
            estimators.spiegelhalter_z,
            statistic as fn(f64) -> String,
        ),
        ("spiegelhalter_p", estimators.spiegelhalter_p, p_value),
        ("kuiper", estimators.kuiper, statistic),
        ("kuiper_p", estimators.kuiper_p, p_value),
        ("ks_statistic", estimators.ks_statistic, statistic),
        ("ks_p", estimators.ks_p, p_value),
    ]
    .map(|(name, value, format)| Patch::Metric {
        id: None,
        metric: name.to_string(),
        value,
        text: value.map_or_else(|| "–".to_string(), format),
        title: None,
    });
    errors.into_iter().chain(tests).collect()
}

/// A decomposition's table at the slider's T, at T = 1 and at the fitted T (`columns`): each
/// term of `terms` (its metric name and value) in a column `<name>`, `<name>_t1` and
/// `<name>_fitted`, to 4 decimals, and the sentence `sentence` writes of the three columns
/// (the slider's T, the columns, the fitted T) into `sentence_id`.
fn decomposition_table<T>(
    view: &TemperatureView,
    columns: &[T; 3],
    terms: impl Fn(&T) -> Vec<(String, f64)>,
    sentence_id: &'static str,
    sentence: fn(f64, &T, &T, &T, f64) -> String,
) -> Vec<Patch> {
    let mut patches: Vec<Patch> = ["", "_t1", "_fitted"]
        .into_iter()
        .zip(columns)
        .flat_map(|(suffix, column)| {
            terms(column).into_iter().map(move |(name, value)| {
                metric(
                    format!("{name}{suffix}"),
                    value,
                    crate::text::fixed(value, 4),
                )
            })
        })
        .collect();
    let [at_slider, at_one, at_fitted] = columns;
    patches.push(text(
        sentence_id,
        sentence(
            view.temperature,
            at_slider,
            at_one,
            at_fitted,
            view.fitted_temperature,
        ),
    ));
    patches
}

/// The Brier decomposition's table (`brier_<term>`, `brier_<term>_t1`, `brier_<term>_fitted`,
/// the terms named as `calibra report --json` names them) and its sentence.
fn brier_decomposition_readouts(
    view: &TemperatureView,
    columns: &[BrierDecomposition; 3],
) -> Vec<Patch> {
    decomposition_table(
        view,
        columns,
        |terms| {
            [
                ("reliability", terms.reliability),
                ("resolution", terms.resolution),
                ("uncertainty", terms.uncertainty),
                ("within_bin", terms.within_bin),
            ]
            .map(|(name, value)| (format!("brier_{name}"), value))
            .to_vec()
        },
        "brier-decomposition-sentence",
        sentences::brier_decomposition_sentence,
    )
}

/// The CORP decompositions' table (`corp_<score>_<term>`, `corp_<score>_<term>_t1`,
/// `corp_<score>_<term>_fitted`, named as `calibra report --json` names them) and its sentence.
fn corp_decomposition_readouts(view: &TemperatureView, columns: &[Corp; 3]) -> Vec<Patch> {
    decomposition_table(
        view,
        columns,
        |corp| {
            [("brier", corp.brier), ("log", corp.log)]
                .into_iter()
                .flat_map(|(score, terms)| {
                    [
                        ("score", terms.score),
                        ("mcb", terms.miscalibration),
                        ("dsc", terms.discrimination),
                        ("unc", terms.uncertainty),
                    ]
                    .map(|(name, value)| (format!("corp_{score}_{name}"), value))
                })
                .collect()
        },
        "corp-decomposition-sentence",
        sentences::corp_decomposition_sentence,
    )
}

/// The anatomy chart's text alternative and each mistake's sentence (empty while its switch is
/// off), with the temperature each mistaken fit lands on (`mistake_<name>_temperature`); or,
/// while its curves are not in, what they wait for (the request for them, or every row).
pub(super) fn anatomy(
    view: Result<&AnatomyView, &Option<AnatomyRequest>>,
    shown: &[FitMistake],
) -> Vec<Patch> {
    let view = match view {
        Ok(view) => view,
        Err(request) => {
            return vec![text(
                "anatomy-summary",
                sentences::anatomy_pending(request.is_some()),
            )]
        }
    };
    let mut patches = vec![text(
        "anatomy-summary",
        sentences::anatomy_summary(&view.minima, view.anatomy.fitted.temperature),
    )];
    for (mistake, id) in MISTAKES.into_iter().zip(MISTAKE_SENTENCES) {
        let fit = view.mistakes.iter().find(|(fit, _)| fit.mistake == mistake);
        let name = serde_name(mistake).replace('-', "_");
        patches.push(text(
            id,
            fit.map_or_else(String::new, |(_, sentence)| sentence.clone()),
        ));
        let temperature = fit
            .filter(|_| shown.contains(&mistake))
            .map(|(fit, _)| fit.temperature);
        patches.push(Patch::Metric {
            id: None,
            metric: format!("mistake_{name}_temperature"),
            value: temperature,
            text: temperature.map_or_else(|| "–".to_string(), |t| format!("{t:.3}")),
            title: None,
        });
    }
    patches
}

/// The elements of the mistakes' sentences, in [`MISTAKES`]' order.
const MISTAKE_SENTENCES: [&str; 3] = [
    "mistake-evaluation-half-sentence",
    "mistake-probabilities-sentence",
    "mistake-minimise-ece-sentence",
];

/// The rivals table: one row per method, every number a readout `rival_<method>_<metric>`,
/// "…" without a value in each while the rivals are being fitted.
fn rivals_rows(rivals: Option<&RivalsView>) -> Patch {
    let rows = Method::ALL
        .into_iter()
        .map(|method| {
            let name = serde_name(method);
            let report = rivals.and_then(|r| r.reports.iter().find(|r| r.method == method));
            // Waiting for the worker, or (a method the view left out: Dirichlet calibration
            // above its most classes) not fitted.
            let missing = if rivals.is_some() { "—" } else { "…" };
            let cell = |metric: &str, figure: Option<(f64, String)>| match figure {
                Some((value, text)) => {
                    metric_cell(format!("rival_{name}_{metric}"), Some(value), text)
                }
                None => metric_cell(format!("rival_{name}_{metric}"), None, missing.to_string()),
            };
            let four = |value: f64| Some((value, format!("{value:.4}")));
            let mut cells = vec![TableCell {
                text: method.title().to_string(),
                metric: None,
                value: None,
            }];
            cells.extend([
                cell(
                    "accuracy",
                    report.map(|r| (r.accuracy, percent(r.accuracy, 2))),
                ),
                cell("ece", report.and_then(|r| four(r.ece))),
                cell("smece", report.and_then(|r| four(r.smece))),
                cell("nll", report.and_then(|r| four(r.nll))),
                cell("brier", report.and_then(|r| four(r.brier))),
                cell(
                    "distinct_confidences",
                    report.map(|r| {
                        (
                            r.distinct_confidences as f64,
                            grouped(r.distinct_confidences),
                        )
                    }),
                ),
                cell(
                    "calibration_ece",
                    report.and_then(|r| four(r.calibration_ece)),
                ),
            ]);
            TableRow {
                current: false,
                cells,
            }
        })
        .collect();
    Patch::Rows { id: "rivals", rows }
}

/// The conformal lab's readouts.
pub(super) fn conformal(
    view: &ConformalView,
    chosen: ScoreKind,
    class_names: &[String],
) -> Vec<Patch> {
    let m = &view.metrics;
    let qhat = if let [q] = view.qhat[..] {
        Patch::Metric {
            id: Some("qhat"),
            metric: "qhat".to_string(),
            value: Some(q),
            text: if q.is_finite() {
                view.qhat_text[0].clone()
            } else {
                "∞ (too few calibration images)".to_string()
            },
            title: None,
        }
    } else {
        let finite = view.qhat.iter().copied().filter(|q| q.is_finite());
        let low = finite.clone().fold(f64::INFINITY, f64::min);
        let high = finite.fold(f64::NEG_INFINITY, f64::max);
        let per_class: Vec<String> = view
            .qhat_text
            .iter()
            .enumerate()
            .map(|(k, q)| format!("{}: {q}", class_names[k]))
            .collect();
        Patch::Metric {
            id: Some("qhat"),
            metric: "qhat_per_class".to_string(),
            value: None,
            text: format!("per class, {low:.3} to {high:.3}"),
            title: Some(per_class.join("\n")),
        }
    };
    let mut patches = vec![qhat];
    for (name, value) in [
        ("coverage", m.coverage),
        ("coverage_lo", view.coverage_interval.lower),
        ("coverage_hi", view.coverage_interval.upper),
        ("singleton_rate", m.singleton_rate),
        ("singleton_hit_rate", m.singleton_hit_rate),
        ("empty_rate", m.empty_rate),
        ("covgap", m.covgap),
        ("covgap_floor", view.covgap_floor),
        ("guarantee_lower", view.guarantee_lower),
        ("guarantee_upper", view.guarantee_upper),
    ] {
        patches.push(metric(name, value, percent(value, 2)));
    }
    patches.extend([
        metric(
            "average_set_size",
            m.average_set_size,
            format!("{:.3}", m.average_set_size),
        ),
        text(
            "conformal-sizes",
            format!(
                "{} images; q̂ from {} calibration images",
                grouped(view.n_evaluation),
                grouped(view.n_calibration)
            ),
        ),
        Patch::Metric {
            id: Some("coverage-verdict"),
            metric: "coverage_deviations".to_string(),
            value: Some(view.verdict.deviations),
            text: view.verdict.text.clone(),
            title: None,
        },
        text("per-class-sentence", view.per_class_sentence.clone()),
        text(
            "set-sizes-summary",
            sentences::set_size_summary(&view.size_counts),
        ),
        Patch::Metrics {
            id: "per-class-values",
            items: m
                .per_class_coverage
                .iter()
                .enumerate()
                .map(|(k, c)| MetricItem {
                    metric: format!("coverage_class_{k}"),
                    value: *c,
                    text: format!(
                        "{} {}",
                        class_names[k],
                        c.map_or("—".to_string(), |c| percent(c, 1))
                    ),
                })
                .collect(),
        },
    ]);
    if let Some(comparison) = &view.comparison {
        patches.push(Patch::Rows {
            id: "comparison",
            rows: comparison
                .iter()
                .map(|c| {
                    let name = serde_name(c.score);
                    let cell = |field: &str, value: f64, text: String| TableCell {
                        text,
                        metric: Some(format!("compare_{name}_{field}")),
                        value: Some(value),
                    };
                    TableRow {
                        current: c.score == chosen,
                        cells: vec![
                            TableCell {
                                text: score_name(c.score).to_string(),
                                metric: None,
                                value: None,
                            },
                            cell("coverage", c.coverage, percent(c.coverage, 2)),
                            cell(
                                "average_set_size",
                                c.average_set_size,
                                format!("{:.3}", c.average_set_size),
                            ),
                            cell(
                                "singleton_rate",
                                c.singleton_rate,
                                percent(c.singleton_rate, 1),
                            ),
                            cell("empty_rate", c.empty_rate, percent(c.empty_rate, 1)),
                        ],
                    }
                })
                .collect(),
        });
    }
    patches.extend([
        text(
            "stratified-summary",
            sentences::stratified_summary(&m.size_stratified),
        ),
        text(
            "sweep-summary",
            sentences::sweep_summary(&view.sweep, view.alpha),
        ),
    ]);
    patches
}

/// The gallery's count line.
pub(super) fn gallery_count(sections: &[GallerySection], choice: GalleryChoice) -> Patch {
    let count: usize = sections.iter().map(|s| s.items.len()).sum();
    let line = match count {
        0 => "No image matches.".to_string(),
        1 => "1 image.".to_string(),
        n if choice != GalleryChoice::Extremes && n == GALLERY_LIMIT => {
            format!("{n} images (the first ones).")
        }
        n => format!("{n} images."),
    };
    text("gallery-count", line)
}

/// The coverage experiment's summary line and caption.
pub fn experiment_readouts(
    state: &PageState,
    experiment: &CoverageExperiment,
) -> ExperimentReadouts {
    let s = &experiment.summary;
    ExperimentReadouts {
        patches: vec![
            Patch::Metric {
                id: Some("experiment-summary"),
                metric: "experiment_mean_coverage".to_string(),
                value: Some(s.mean),
                text: format!(
                    "{} splits ({}, α = {:.2}, T = {:.3}): mean coverage {}, spread (sd) {}.",
                    grouped(s.repetitions),
                    score_name(state.score),
                    state.alpha,
                    state.t,
                    percent(s.mean, 2),
                    percent(s.standard_deviation, 2)
                ),
                title: None,
            },
            text("experiment-caption", experiment.caption.clone()),
        ]
        .into_iter()
        .chain(super::pac::experiment_patches(experiment.pac.as_ref()))
        .chain(super::selective::experiment_patches(
            experiment.risk_control.as_ref(),
        ))
        .collect(),
    }
}
