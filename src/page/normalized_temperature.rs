//! The LogitNorm lab's table of one temperature against normalised temperature scaling, one
//! row per trained network (seed 0) whose test logits are all in, and its sentence on whether
//! normalised temperature scaling repairs the networks of large τ where one T does not
//! (`lab::normalized_view`; the numbers come from the bootstrap worker).

use super::readouts::{metric_cell, text, Patch, TableCell, TableRow};
use super::state::{Network, PageState};
use crate::bootstrap::MetricInterval;
use crate::lab::{Lab, LabError, NormalizedRequest, OodStore, TemperatureComparison};
use crate::sentences::{self, interval_text, NormalizedFigures};

/// The smallest τ whose networks the sentence asks about: one T leaves them miscalibrated.
const LARGE_TAU: f64 = 0.3;

/// The table's patches and sentence, and the comparisons still to ask the worker for.
#[derive(Debug, Clone, Default)]
pub struct NormalizedOutput {
    pub patches: Vec<Patch>,
    pub requests: Vec<NormalizedRequest>,
}

/// The table and the sentence for `state`'s split and bins.
///
/// # Errors
/// [`LabError::UnknownModel`] (which the bundled networks rule out).
pub(super) fn render(
    lab: &Lab,
    store: &OodStore,
    state: &PageState,
) -> Result<NormalizedOutput, LabError> {
    let mut out = NormalizedOutput::default();
    let mut rows = Vec::new();
    let mut cross_entropy = None;
    let mut large_tau = Vec::new();
    let mut unevaluated = Vec::new();
    let mut pending = false;
    for network in Network::trained() {
        let Some(model) = network.index() else {
            continue;
        };
        let request = NormalizedRequest {
            model,
            split: lab.split_seed(),
            bins: state.bins,
            binning: state.binning,
        };
        let complete = lab.complete_logits(model)?.is_some();
        let comparison = store.comparison(&request);
        if complete && comparison.is_none() {
            out.requests.push(request);
        }
        rows.push(row(network, comparison.as_ref(), complete));
        let asked = network == Network::Ce || network.tau().is_some_and(|tau| tau >= LARGE_TAU);
        match comparison {
            Some(comparison) if network == Network::Ce => {
                cross_entropy = Some(comparison.plain.ece)
            }
            Some(comparison) if asked => large_tau.push((network.title(), comparison)),
            None if asked && complete => pending = true,
            None if asked => unevaluated.push(network.title()),
            _ => {}
        }
    }
    let figures: Vec<NormalizedFigures> = large_tau
        .iter()
        .map(|(title, comparison)| NormalizedFigures {
            network: title,
            plain: comparison.plain,
            normalized: comparison.normalized,
        })
        .collect();
    out.patches.push(Patch::Rows {
        id: "normalized-table",
        rows,
    });
    out.patches.push(text(
        "normalized-lesson",
        lesson(cross_entropy.as_ref(), &figures, &unevaluated, pending),
    ));
    Ok(out)
}

/// The sentence once cross-entropy and every network of large τ are in; before that, which
/// to evaluate, or that the worker is computing them.
fn lesson(
    cross_entropy: Option<&MetricInterval>,
    figures: &[NormalizedFigures],
    unevaluated: &[String],
    pending: bool,
) -> String {
    match unevaluated {
        [] if pending => {
            "Fitting both temperatures on each network, with bootstrap intervals…".to_string()
        }
        [] => sentences::normalized_lesson(cross_entropy, figures, ""),
        [only] => sentences::normalized_lesson(None, &[], only),
        [first @ .., last] => {
            sentences::normalized_lesson(None, &[], &format!("{} and {last}", first.join(", ")))
        }
    }
}

/// One network's row: its two temperatures, and ECE and NLL after each with their intervals;
/// "—" until the worker has answered, "not evaluated" before its test logits are in.
fn row(network: Network, comparison: Option<&TemperatureComparison>, complete: bool) -> TableRow {
    let key = network.name();
    let missing = if complete { "—" } else { "not evaluated" };
    let cell = |name: &str, value: Option<f64>, shown: Option<String>| {
        metric_cell(
            format!("normalized_{name}_{key}"),
            value,
            shown.unwrap_or_else(|| missing.to_string()),
        )
    };
    let interval = |name: &str, pick: fn(&TemperatureComparison) -> MetricInterval| {
        let value = comparison.map(pick);
        cell(
            name,
            value.map(|v| v.estimate),
            value.as_ref().map(interval_text),
        )
    };
    let temperature = |name: &str, pick: fn(&TemperatureComparison) -> f64| {
        let value = comparison.map(pick);
        cell(name, value, value.map(|t| format!("{t:.4}")))
    };
    TableRow {
        current: false,
        cells: vec![
            TableCell {
                text: network.title(),
                metric: None,
                value: None,
            },
            temperature("t_plain", |c| c.temperature),
            interval("ece_plain", |c| c.plain.ece),
            interval("nll_plain", |c| c.plain.nll),
            temperature("t_normalized", |c| c.normalized_temperature),
            interval("ece_normalized", |c| c.normalized.ece),
            interval("nll_normalized", |c| c.normalized.nll),
        ],
    }
}
