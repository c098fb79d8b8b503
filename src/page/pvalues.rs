//! The LogitNorm lab's conformal p-values block on the page: the FDR level and OOD share
//! sliders, the chosen network's outlier test under the chosen score (`lab::pvalues_view`),
//! its readouts, sentence and the chart's text alternative.

use super::ood::score_name;
use super::readouts::{metric, slider, text, Patch};
use super::state::{PageState, StateFields};
use crate::lab::ood_view::OodViewError;
use crate::lab::{Lab, LabError, OodSet, OodStore, PvalueRequest, PvalueView};
use crate::sentences::{self, percent, PvalueFigures};
use crate::text::grouped;

/// Sorted p-values the chart draws at most.
pub const CHART_POINTS: usize = 400;

/// The readouts of the block, emptied ("—") while it waits.
const METRICS: [&str; 7] = [
    "pvalue_calibration",
    "pvalue_discoveries",
    "pvalue_false_discoveries",
    "pvalue_fdp",
    "pvalue_power",
    "pvalue_fdr_bound",
    "pvalue_largest_rejected",
];

/// The chosen network's p-values on the chosen set, with the set they were computed on.
#[derive(Debug, Clone)]
pub struct PvalueFrame {
    pub view: PvalueView,
    pub set: OodSet,
}

/// The FDR level and OOD share sliders and their labels: from the state alone.
pub(super) fn control_patches(state: &PageState, fields: &StateFields) -> Vec<Patch> {
    let level = percent(state.fdr, 0);
    let share = percent(state.ood_share, 0);
    let mut patches = slider(
        fields,
        "ood-fdr",
        "ood-fdr-value",
        level.clone(),
        format!("FDR level {level}"),
    )
    .to_vec();
    patches.extend(slider(
        fields,
        "ood-share",
        "ood-share-value",
        share.clone(),
        format!("OOD share {share}"),
    ));
    patches
}

/// The block for `state`: its patches, and its view once the chosen network's logits on the
/// test images and the set are in and the chosen score is computed.
///
/// # Errors
/// [`LabError`] from the views (which the state's ranges rule out).
pub(super) fn render(
    lab: &Lab,
    store: &mut OodStore,
    state: &PageState,
) -> Result<(Vec<Patch>, Option<PvalueFrame>), LabError> {
    let model = state.tau.index().ok_or(LabError::NotReady)?;
    let kind = state.ood_score;
    let request = PvalueRequest {
        model,
        set: state.ood,
        kind,
        temperature: state.t,
        split: lab.split_seed(),
        ood_share: state.ood_share,
        fdr_level: state.fdr,
    };
    let view = match lab.complete_logits(model)? {
        Some(logits) => match store.pvalues(request, logits, lab.calibration_flags()) {
            Ok(view) => Some(view.clone()),
            Err(LabError::NotReady | LabError::OodView(OodViewError::MissingScore(_))) => None,
            Err(e) => return Err(e),
        },
        None => None,
    };
    let Some(view) = view else {
        let mut patches: Vec<Patch> = METRICS
            .iter()
            .map(|&name| Patch::Metric {
                id: None,
                metric: name.to_string(),
                value: None,
                text: "—".to_string(),
                title: None,
            })
            .collect();
        patches.push(text(
            "pvalue-sentence",
            format!(
                "The p-values wait for {} by {} on the test images and {}.",
                state.tau.title(),
                score_name(kind),
                state.ood.title()
            ),
        ));
        patches.push(text("pvalue-chart-summary", String::new()));
        return Ok((patches, None));
    };
    let patches = readouts(&view, state);
    Ok((
        patches,
        Some(PvalueFrame {
            view,
            set: state.ood,
        }),
    ))
}

/// The numbers, the sentence and the chart's text alternative of one view.
fn readouts(view: &PvalueView, state: &PageState) -> Vec<Patch> {
    let test = &view.test;
    let set = state.ood.title();
    let score = score_name(view.kind);
    let fdp = test.false_discovery_proportion;
    let largest = test.largest_rejected_pvalue;
    let mut patches = vec![
        metric(
            "pvalue_calibration",
            test.n_calibration as f64,
            grouped(test.n_calibration),
        ),
        metric(
            "pvalue_discoveries",
            test.discoveries as f64,
            format!(
                "{} of {} ({} test images + {} {set})",
                grouped(test.discoveries),
                grouped(test.n_in_distribution + test.n_out_of_distribution),
                grouped(test.n_in_distribution),
                grouped(test.n_out_of_distribution)
            ),
        ),
        metric(
            "pvalue_false_discoveries",
            test.false_discoveries as f64,
            grouped(test.false_discoveries),
        ),
        metric("pvalue_fdp", fdp, percent(fdp, 2)),
        metric("pvalue_power", test.power, percent(test.power, 2)),
        metric(
            "pvalue_fdr_bound",
            view.fdr_bound(),
            format!(
                "{} × {} = {}",
                percent(test.fdr_level, 0),
                percent(view.null_share(), 1),
                percent(view.fdr_bound(), 2)
            ),
        ),
        match largest {
            Some(p) => metric("pvalue_largest_rejected", p, format!("{p:.5}")),
            None => Patch::Metric {
                id: None,
                metric: "pvalue_largest_rejected".to_string(),
                value: None,
                text: "none declared".to_string(),
                title: None,
            },
        },
    ];
    patches.push(text(
        "pvalue-sentence",
        sentences::pvalue_sentence(&PvalueFigures {
            score,
            set,
            fdr_level: test.fdr_level,
            n_in_distribution: test.n_in_distribution,
            n_calibration: test.n_calibration,
            n_out_of_distribution: test.n_out_of_distribution,
            discoveries: test.discoveries,
            false_discoveries: test.false_discoveries,
            power: test.power,
        }),
    ));
    let declared = match largest {
        Some(p) => format!(
            "the first {} ranks, p-values up to {p:.5}, are declared OOD, {} of them {set}",
            grouped(test.discoveries),
            grouped(test.discoveries - test.false_discoveries)
        ),
        None => "no p-value lies under the line, so none is declared OOD".to_string(),
    };
    patches.push(text(
        "pvalue-chart-summary",
        format!(
            "{}'s {} p-values by {score}, sorted, against the Benjamini–Hochberg line at q = \
             {}: {declared}.",
            state.tau.title(),
            grouped(view.sorted.len()),
            percent(test.fdr_level, 0)
        ),
    ));
    patches
}
