//! The conformal lab's training-conditional (PAC) block on the page: the δ slider, the PAC
//! threshold's readouts beside the marginal one's, and the coverage experiment's PAC line.

use super::readouts::{metric, slider, text, Patch};
use super::state::{PageState, StateFields};
use crate::lab::{PacExperiment, PacView};
use crate::sentences::{percent, threshold_text};
use crate::text::grouped;

/// The δ slider and its label: from the state alone.
pub(super) fn control_patches(state: &PageState, fields: &StateFields) -> [Patch; 2] {
    let delta = format!("{:.2}", state.delta);
    slider(
        fields,
        "pac-delta",
        "pac-delta-value",
        delta.clone(),
        format!("δ = {delta}"),
    )
}

/// The PAC threshold's readouts: its rank, q̂, coverage and set size beside the marginal
/// rank and its risk, and the sentence. A PAC threshold out of reach reads "—".
pub(super) fn readouts(view: &PacView) -> Vec<Patch> {
    let mut patches = vec![
        metric(
            "marginal_k",
            view.marginal_k as f64,
            grouped(view.marginal_k),
        ),
        metric(
            "marginal_shortfall",
            view.marginal_shortfall,
            percent(view.marginal_shortfall, 1),
        ),
        metric(
            "marginal_qhat",
            view.marginal_qhat,
            threshold_text(view.marginal_qhat),
        ),
        metric(
            "marginal_coverage",
            view.marginal_coverage,
            percent(view.marginal_coverage, 2),
        ),
        metric(
            "marginal_average_set_size",
            view.marginal_size,
            format!("{:.3}", view.marginal_size),
        ),
        text("pac-sentence", view.sentence.clone()),
    ];
    match view.pac {
        Some(pac) => patches.extend([
            metric("pac_k", pac.k as f64, grouped(pac.k)),
            metric("pac_qhat", pac.qhat, threshold_text(pac.qhat)),
            metric("pac_shortfall", pac.shortfall, percent(pac.shortfall, 1)),
            metric("pac_coverage", pac.coverage, percent(pac.coverage, 2)),
            metric(
                "pac_average_set_size",
                pac.average_set_size,
                format!("{:.3}", pac.average_set_size),
            ),
        ]),
        None => patches.extend(
            [
                "pac_k",
                "pac_qhat",
                "pac_shortfall",
                "pac_coverage",
                "pac_average_set_size",
            ]
            .map(|name| Patch::Metric {
                id: None,
                metric: name.to_string(),
                value: None,
                text: "—".to_string(),
                title: None,
            }),
        ),
    }
    patches
}

/// The coverage experiment's PAC caption and the share of its splits below 1 − α; without a
/// PAC rank (too few calibration images), the caption says so.
pub(super) fn experiment_patches(pac: Option<&PacExperiment>) -> Vec<Patch> {
    match pac {
        Some(pac) => {
            let share = |count: usize| count as f64 / pac.figures.repetitions.max(1) as f64;
            let (marginal, pac_share) = (
                share(pac.figures.marginal_below),
                share(pac.figures.pac_below),
            );
            vec![
                metric("marginal_experiment_below", marginal, percent(marginal, 1)),
                metric("pac_experiment_below", pac_share, percent(pac_share, 1)),
                text("pac-experiment-caption", pac.caption.clone()),
            ]
        }
        None => vec![text(
            "pac-experiment-caption",
            "The calibration half is too small for a PAC threshold at this α and δ: the \
             experiment measures the marginal one alone.",
        )],
    }
}
