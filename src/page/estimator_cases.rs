//! The first lab's estimators table on its edge case: the rows' count and temperature, the
//! binned and smooth errors beside `calibration_estimators`' (whose readouts `readouts.rs`
//! writes), the sentence on which of them agree, and what the case teaches.

use super::readouts::{interval_ends, metric, text, Patch};
use crate::calibration::Binning;
use crate::lab::TemperatureView;
use crate::sentences::{self, CaseFacts, EstimatorsTable};
use crate::text::grouped;

/// The estimators table's readouts of its case beside the ones `readouts::temperature`
/// writes: `estimator_images`, `estimator_temperature`, `estimator_ece`, `estimator_rmsce`,
/// `estimator_mce`, `estimator_classwise_ece` and `estimator_smece` (errors to 4 decimals,
/// ECE's and smooth ECE's bootstrap intervals once the worker has them), the agreement sentence
/// and the case's lesson; none when the view has no table (its block off screen).
/// `class_names` names the base rates' constant answer; `binning` is the lab's.
pub fn readouts(view: &TemperatureView, class_names: &[String], binning: Binning) -> Vec<Patch> {
    let Some(case) = &view.estimator_case else {
        return Vec::new();
    };
    let r = &case.report;
    let mut patches = vec![
        metric("estimator_images", case.images as f64, grouped(case.images)),
        metric(
            "estimator_temperature",
            case.temperature,
            format!("{:.3}", case.temperature),
        ),
    ];
    for (name, value) in [
        ("estimator_ece", r.ece),
        ("estimator_rmsce", r.rmsce),
        ("estimator_mce", r.mce),
        ("estimator_classwise_ece", r.classwise_ece),
        ("estimator_smece", case.smece),
    ] {
        patches.push(metric(name, value, format!("{value:.4}")));
    }
    patches.extend(interval_ends(
        "estimator_ece",
        case.intervals.map(|i| i.ece),
    ));
    patches.extend(interval_ends(
        "estimator_smece",
        case.intervals.map(|i| i.smece),
    ));
    let table = EstimatorsTable {
        images: case.images,
        classes: class_names.len(),
        bins: r.bins.len(),
        binning,
        binned: r,
        smece: case.smece,
        estimators: &case.estimators,
        intervals: case.intervals.as_ref(),
        extra_bin: case.extra_bin,
    };
    let answer = case.constant_answer.map(|(class, confidence)| {
        (
            class_names.get(class).map_or("", String::as_str),
            confidence,
        )
    });
    let facts = CaseFacts {
        case: case.case,
        images: case.images,
        evaluation_images: view.n_evaluation,
        bins: r.bins.len(),
        binning,
        binned: r,
        distinct_confidences: case.distinct_confidences,
        empty_bins: case.empty_bins,
        extra_bin: case.extra_bin,
        constant_answer: answer,
        ece_interval: case.intervals.map(|i| i.ece),
        network_ece_interval: view.intervals[0].map(|i| i.ece),
        temperature: view.temperature,
    };
    patches.push(text(
        "estimators-agreement",
        sentences::estimators_agreement(&table),
    ));
    patches.push(text(
        "estimator-case-lesson",
        sentences::estimator_case_lesson(&facts),
    ));
    patches
}
