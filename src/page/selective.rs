//! The conformal lab's selective classification block on the page: the risk level slider, the
//! readouts of the risk–coverage curve, its AURC and conformal risk control's threshold.

use super::readouts::{metric, slider, text, Patch};
use super::state::{PageState, StateFields};
use crate::lab::{RiskControlExperiment, SelectiveView};
use crate::sentences::percent;

/// The risk level slider and its label: from the state alone.
pub(super) fn control_patches(state: &PageState, fields: &StateFields) -> [Patch; 2] {
    let risk = percent(state.risk, 0);
    slider(
        fields,
        "selective-risk",
        "selective-risk-value",
        risk.clone(),
        format!("risk level {risk}"),
    )
}

/// The block's readouts: the AURC at T, at T = 1 and at the fitted T, conformal risk
/// control's threshold and what it answers (each "—" without enough calibration images), and
/// the sentence.
pub(super) fn readouts(view: &SelectiveView) -> Vec<Patch> {
    let mut patches = vec![
        metric("selective_aurc", view.aurc, format!("{:.4}", view.aurc)),
        metric(
            "selective_aurc_at_one",
            view.aurc_at_one,
            format!("{:.4}", view.aurc_at_one),
        ),
        metric(
            "selective_aurc_fitted",
            view.aurc_fitted,
            format!("{:.4}", view.aurc_fitted),
        ),
        text("selective-sentence", view.sentence.clone()),
    ];
    let unknown = |name: &str| Patch::Metric {
        id: None,
        metric: name.to_string(),
        value: None,
        text: "—".to_string(),
        title: None,
    };
    match &view.report {
        Some(report) => {
            let threshold = if report.threshold == f64::NEG_INFINITY {
                "none: every image".to_string()
            } else {
                format!("{:.4}", report.threshold)
            };
            patches.extend([
                metric("selective_threshold", report.threshold, threshold),
                metric(
                    "selective_coverage",
                    report.coverage,
                    percent(report.coverage, 1),
                ),
                metric(
                    "selective_answered_error_rate",
                    report.answered_error_rate,
                    percent(report.answered_error_rate, 2),
                ),
            ]);
            patches.push(match report.selective_risk {
                Some(risk) => metric("selective_risk", risk, percent(risk, 2)),
                None => unknown("selective_risk"),
            });
        }
        None => patches.extend(
            [
                "selective_threshold",
                "selective_coverage",
                "selective_answered_error_rate",
                "selective_risk",
            ]
            .map(unknown),
        ),
    }
    patches
}

/// The coverage experiment's risk control line: the mean share answered wrongly over its
/// splits, the share of splits above the risk level, and the caption; without a threshold
/// (too few calibration images for the level), the caption says so.
pub(super) fn experiment_patches(risk_control: Option<&RiskControlExperiment>) -> Vec<Patch> {
    match risk_control {
        Some(run) => {
            let f = &run.figures;
            let above = f.above as f64 / f.repetitions.max(1) as f64;
            vec![
                metric("risk_experiment_mean", f.mean, percent(f.mean, 2)),
                metric("risk_experiment_above", above, percent(above, 1)),
                text("risk-experiment-caption", run.caption.clone()),
            ]
        }
        None => vec![text(
            "risk-experiment-caption",
            "The calibration half is too small for conformal risk control at this risk level: \
             the experiment checks the coverage alone.",
        )],
    }
}
