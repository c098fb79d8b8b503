//! The shift lab's adaptive conformal inference block on the page: the γ slider, the stream's
//! readouts (both methods' long-run coverage and mean set size, the last level `α_t`, the
//! bound), its sentence and its chart's text alternative, from an [`AdaptiveView`].

use super::readouts::{metric, slider, text, Patch};
use super::state::{PageState, StateFields};
use crate::lab::{AdaptiveView, COVERAGE_WINDOW};
use crate::sentences::{self, percent};
use crate::text::grouped;

/// The γ slider and its label: from the state alone.
pub(super) fn control_patches(state: &PageState, fields: &StateFields) -> [Patch; 2] {
    let gamma = format!("{}", state.aci_gamma);
    slider(
        fields,
        "aci-gamma",
        "aci-gamma-value",
        gamma.clone(),
        format!("γ = {gamma}: α_t moves by γ times (α − miss) after each image"),
    )
}

/// The block's readouts, its sentence and the chart's text alternative; without a view (the
/// network's clean logits still arriving) the sentence and the summary are empty, so that no
/// number of another network stays.
pub(super) fn readouts(view: Option<&AdaptiveView>) -> Vec<Patch> {
    let Some(view) = view else {
        return vec![text("aci-sentence", ""), text("aci-stream-summary", "")];
    };
    let run = &view.run;
    let final_alpha = run.steps.last().map_or(view.alpha, |step| step.alpha);
    let (lowest, highest) = run
        .steps
        .iter()
        .fold((view.alpha, view.alpha), |(low, high), step| {
            (low.min(step.alpha), high.max(step.alpha))
        });
    let end = view.rows.len().saturating_sub(1);
    let last = |values: &[f64]| values.get(end).copied().unwrap_or(0.0);
    vec![
        metric(
            "aci_images",
            view.rows.len() as f64,
            grouped(view.rows.len()),
        ),
        metric("aci_coverage", run.coverage, percent(run.coverage, 2)),
        metric(
            "aci_set_size",
            run.average_set_size,
            format!("{:.3}", run.average_set_size),
        ),
        metric(
            "aci_fixed_coverage",
            run.fixed_coverage,
            percent(run.fixed_coverage, 2),
        ),
        metric(
            "aci_fixed_set_size",
            run.fixed_average_set_size,
            format!("{:.3}", run.fixed_average_set_size),
        ),
        metric("aci_final_alpha", final_alpha, format!("{final_alpha:.4}")),
        metric(
            "aci_bound",
            run.miscoverage_bound,
            format!("±{}", percent(run.miscoverage_bound, 2)),
        ),
        text("aci-sentence", view.sentence.clone()),
        text(
            "aci-stream-summary",
            sentences::adaptive_chart_summary(
                (
                    last(&view.running_coverage),
                    last(&view.fixed_running_coverage),
                ),
                (
                    last(&view.window_coverage),
                    last(&view.fixed_window_coverage),
                ),
                COVERAGE_WINDOW.min(view.rows.len()),
                (lowest, highest),
            ),
        ),
    ]
}
