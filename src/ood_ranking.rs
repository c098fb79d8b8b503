//! Which of several detectors separates the same in-distribution (ID) and out-of-distribution
//! (OOD) images best, and whether its lead over the next is larger than the images' noise.
//!
//! Each candidate is one detector on one network, given as its (ID scores, OOD scores) of the
//! same images in the same order. Candidates are ranked by **AUROC** (higher first; threshold
//! free, so the rank does not hang on one operating point; equal AUROCs keep the order given),
//! each with its FPR95, AUROC, AUPR-In and AUPR-Out and their bootstrap percentile intervals
//! ([`detection_intervals`]: every candidate is resampled on the same rows, the settings' seed
//! and the sets' sizes being the same). The first's **lead** over the second is the paired
//! bootstrap of their difference ([`paired_difference`]: both on the same resampled rows); the
//! lead is **larger than the noise** when the AUROC difference's interval lies above 0.
//!
//! The first two are chosen on the same images the lead is measured on, so under no real
//! difference the lead is the larger of two noisy estimates; its percentile interval still
//! clears 0 in about `1 − level` of the draws, since it clears 0 exactly when the difference,
//! either way, is beyond the interval's half width (`ood_ranking_tests.rs` checks the rate).
//! Definitions: docs/definitions.md.

use serde::{Deserialize, Serialize};

use crate::bootstrap::BootstrapSettings;
use crate::ood::{OodError, ScoreSet};
use crate::ood_difference::{
    check_paired, detection_intervals, paired_difference, DetectionMetricIntervals,
    DifferenceError, PairedDifference,
};

/// One candidate in the ranking: its position in the candidates given, and its metrics.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankedDetector {
    pub candidate: usize,
    pub metrics: DetectionMetricIntervals,
}

/// The candidates by decreasing AUROC, and the first's lead over the second.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ranking {
    pub ranked: Vec<RankedDetector>,
    /// `first − second` (`None` with a single candidate).
    pub lead: Option<PairedDifference>,
}

impl Ranking {
    /// Whether the first's AUROC lead over the second is larger than the noise (its interval
    /// above 0); `None` with a single candidate.
    pub fn lead_beyond_noise(&self) -> Option<bool> {
        self.lead.map(|lead| lead.auroc.lower > 0.0)
    }
}

/// Ranks `candidates` (each (ID scores, OOD scores) of the same images) by AUROC with their
/// intervals, and measures the first's lead over the second.
///
/// # Errors
/// [`DifferenceError::Scores`] for no candidate, an empty set or a NaN score,
/// [`DifferenceError::UnpairedSets`] for candidates that did not score the same number of
/// images, and [`DifferenceError::Settings`] for settings the bootstrap refuses.
pub fn rank_detectors(
    candidates: &[(&[f64], &[f64])],
    settings: &BootstrapSettings,
) -> Result<Ranking, DifferenceError> {
    let Some(&first) = candidates.first() else {
        return Err(OodError::EmptyScores(ScoreSet::InDistribution).into());
    };
    for &candidate in &candidates[1..] {
        check_paired(first, candidate)?;
    }
    let mut ranked = candidates
        .iter()
        .enumerate()
        .map(|(candidate, &(in_distribution, out_of_distribution))| {
            Ok(RankedDetector {
                candidate,
                metrics: detection_intervals(in_distribution, out_of_distribution, settings)?,
            })
        })
        .collect::<Result<Vec<_>, DifferenceError>>()?;
    ranked.sort_by(|a, b| {
        b.metrics
            .auroc
            .estimate
            .total_cmp(&a.metrics.auroc.estimate)
            .then(a.candidate.cmp(&b.candidate))
    });
    let lead = match ranked.get(1) {
        Some(second) => Some(paired_difference(
            candidates[ranked[0].candidate],
            candidates[second.candidate],
            settings,
        )?),
        None => None,
    };
    Ok(Ranking { ranked, lead })
}

#[cfg(test)]
#[path = "ood_ranking_tests.rs"]
mod tests;
