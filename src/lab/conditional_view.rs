//! The conformal lab's worst-slab coverage: the lowest coverage of the current sets over the
//! slabs of the evaluation half's logit space holding at least 10% of its images, beside its
//! noise floor (the value sets with exact conditional coverage show at these sizes), as
//! `calibra report --worst-slab` computes them on the same split (the split's seed draws the
//! directions and the floor). Measured when the reader asks, not per frame: each direction's
//! order of the images is kept per network and split, but the floor's draws cost tens of
//! milliseconds at each α.
//!
//! The method and its sources are in `conformal/worst_slab.rs` and docs/definitions.md
//! ("Worst-slab coverage").

use super::{ConformalSettings, Lab, LabError};
use crate::conformal::worst_slab::{self, SlabOrders, DELTA, DIRECTIONS, FLOOR_REPETITIONS};
use crate::conformal::{self, ScoreKind};
use crate::sentences::{self, WorstSlabFigures};

/// The worst slab of the current sets and its noise floor.
#[derive(Debug, Clone, PartialEq)]
pub struct WorstSlabView {
    pub alpha: f64,
    pub score: ScoreKind,
    pub temperature: f64,
    pub class_conditional: bool,
    pub figures: WorstSlabFigures,
    pub sentence: String,
}

impl Lab {
    /// Worst-slab coverage of the sets `settings` give on the evaluation half, over slabs of
    /// its logits, with the noise floor's mean and spread over its draws.
    ///
    /// # Errors
    /// As [`Lab::conformal_view`].
    pub fn worst_slab_view(
        &mut self,
        settings: &ConformalSettings,
    ) -> Result<WorstSlabView, LabError> {
        let k = self.num_classes;
        let seed = self.split_seed;
        let (cache, table, thresholds) = self.chosen_score(settings)?;
        let sets = conformal::sets_from_label_scores(&table.evaluation, k, &thresholds)?;
        let covered: Vec<bool> = (0..)
            .zip(&cache.evaluation.labels)
            .map(|(row, &label)| sets.contains(row, label))
            .collect();
        let cache = self.prepared()?;
        if cache.slab_orders.is_none() {
            let directions = worst_slab::random_directions(DIRECTIONS, k, seed);
            cache.slab_orders = Some(SlabOrders::new(&cache.evaluation.logits, k, &directions)?);
        }
        let orders = cache.slab_orders.as_ref().ok_or(LabError::NotReady)?;
        let worst = orders.worst_slab(&covered, DELTA)?;
        let draws = orders.noise_floor_draws(DELTA, settings.alpha, FLOOR_REPETITIONS, seed)?;
        let count = draws.len() as f64;
        let floor = draws.iter().sum::<f64>() / count;
        let variance =
            draws.iter().map(|d| (d - floor).powi(2)).sum::<f64>() / (count - 1.0).max(1.0);
        let figures = WorstSlabFigures {
            target: 1.0 - settings.alpha,
            delta: DELTA,
            directions: DIRECTIONS,
            n: covered.len(),
            rows: worst.count,
            coverage: worst.coverage,
            floor,
            floor_spread: variance.sqrt(),
        };
        Ok(WorstSlabView {
            alpha: settings.alpha,
            score: settings.score,
            temperature: settings.temperature,
            class_conditional: settings.class_conditional,
            sentence: sentences::worst_slab_sentence(&figures),
            figures,
        })
    }
}

#[cfg(test)]
#[path = "conditional_view_tests.rs"]
mod tests;
