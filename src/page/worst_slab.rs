//! The conformal lab's worst-slab block on the page: the measurement the reader asks for (its
//! button), its readouts beside the noise floor, the settings it was measured at, and the
//! sentence.

use super::readouts::{metric, score_name, text, ExperimentReadouts};
use crate::lab::WorstSlabView;
use crate::sentences::percent;
use crate::text::grouped;

/// What a worst-slab measurement writes: the worst slab's coverage and size, the noise floor
/// and its spread, the settings measured, and the sentence.
pub fn worst_slab_readouts(view: &WorstSlabView) -> ExperimentReadouts {
    let f = &view.figures;
    let thresholds = if view.class_conditional {
        "Mondrian thresholds"
    } else {
        "one threshold for all"
    };
    ExperimentReadouts {
        patches: vec![
            metric("worst_slab_coverage", f.coverage, percent(f.coverage, 2)),
            metric("worst_slab_rows", f.rows as f64, grouped(f.rows)),
            metric("worst_slab_floor", f.floor, percent(f.floor, 2)),
            metric(
                "worst_slab_floor_spread",
                f.floor_spread,
                percent(f.floor_spread, 2),
            ),
            text(
                "worst-slab-summary",
                format!(
                    "Measured at α = {:.2}, {}, T = {:.3}, {thresholds}.",
                    view.alpha,
                    score_name(view.score),
                    view.temperature
                ),
            ),
            text("worst-slab-sentence", view.sentence.clone()),
        ],
    }
}
