//! The conformal lab's training-conditional (PAC) threshold beside the marginal one: the rank
//! `k` whose coverage law `Beta(k, n + 1 − k)` puts at most `δ` below `1 − ε` (with `ε` the
//! lab's α, as `calibra report --pac α,δ`), its `q̂`, its sets on the evaluation half, and what
//! the coverage experiment measures of both ranks on the same splits.
//!
//! The method and its sources are in `conformal/pac.rs` and docs/definitions.md
//! ("Training-conditional (PAC) thresholds").

use super::{Lab, LabError};
use crate::conformal::{self, pac, Thresholds};
use crate::sentences::{self, PacExperimentFigures, PacFigures, PacOutcome};

/// Points of the PAC rank's coverage density curve on the experiment's chart.
const DENSITY_POINTS: usize = 240;

/// The PAC threshold on the shown split, beside the marginal one.
#[derive(Debug, Clone, PartialEq)]
pub struct PacView {
    pub epsilon: f64,
    pub delta: f64,
    pub n_calibration: usize,
    /// The marginal rank `⌈(n + 1)(1 − ε)⌉` (above `n`: `q̂ = +∞`), and the probability over
    /// calibration sets that its coverage falls below `1 − ε`.
    pub marginal_k: usize,
    pub marginal_shortfall: f64,
    /// The marginal `q̂` (`+∞` above `n`) and its sets' coverage and average size on the
    /// evaluation half, whatever the Mondrian switch.
    pub marginal_qhat: f64,
    pub marginal_coverage: f64,
    pub marginal_size: f64,
    /// The PAC threshold, or `None` when `n` is below [`PacView::needed`].
    pub pac: Option<PacThreshold>,
    /// The smallest calibration size with a PAC threshold at `(ε, δ)`.
    pub needed: usize,
    pub sentence: String,
}

/// The PAC threshold and its sets on the evaluation half.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PacThreshold {
    pub k: usize,
    pub qhat: f64,
    /// `I_{1−ε}(k, n + 1 − k) ≤ δ`.
    pub shortfall: f64,
    pub coverage: f64,
    pub average_set_size: f64,
}

/// The PAC rank in the coverage experiment: its coverages on the same splits as the marginal
/// rank's, and how often each fell below `1 − ε`.
#[derive(Debug, Clone, PartialEq)]
pub struct PacExperiment {
    pub delta: f64,
    pub k: usize,
    pub coverages: Vec<f64>,
    /// `(x, density)` of `Beta(k, n + 1 − k)` at the PAC rank.
    pub beta_density: Vec<(f64, f64)>,
    pub figures: PacExperimentFigures,
    pub caption: String,
}

impl Lab {
    /// The PAC threshold at `(ε = α, δ)` for the chosen score and T, on the calibration half's
    /// true-label scores (marginal, whatever the Mondrian switch), with its sets' coverage and
    /// size on the evaluation half beside the marginal threshold's.
    ///
    /// # Errors
    /// As [`Lab::conformal_view`]; [`conformal::ConformalError::InvalidParameter`] for a δ
    /// outside (0, 1).
    pub fn pac_view(
        &mut self,
        settings: &super::ConformalSettings,
        delta: f64,
    ) -> Result<PacView, LabError> {
        let k = self.num_classes;
        let epsilon = settings.alpha;
        let (cache, table, _) = self.chosen_score(settings)?;
        let scores = &table.calibration;
        let n_calibration = scores.len();
        let marginal_k = conformal::quantile_rank(n_calibration, epsilon)?;
        let needed = pac::minimum_pac_rows(epsilon, delta)?;
        let marginal_qhat = conformal::conformal_threshold(scores, epsilon)?;
        let marginal_sets = conformal::sets_from_label_scores(
            &table.evaluation,
            k,
            &Thresholds::Marginal(marginal_qhat),
        )?;
        let marginal = conformal::set_metrics(&marginal_sets, &cache.evaluation.labels, epsilon)?;
        let pac = if n_calibration >= needed {
            let rank = pac::pac_rank(n_calibration, epsilon, delta)?;
            let qhat = pac::pac_threshold(scores, epsilon, delta)?;
            let sets = conformal::sets_from_label_scores(
                &table.evaluation,
                k,
                &Thresholds::Marginal(qhat),
            )?;
            let metrics = conformal::set_metrics(&sets, &cache.evaluation.labels, epsilon)?;
            Some(PacThreshold {
                k: rank,
                qhat,
                shortfall: pac::shortfall_probability(n_calibration, rank, epsilon),
                coverage: metrics.coverage,
                average_set_size: metrics.average_set_size,
            })
        } else {
            None
        };
        let marginal_shortfall = pac::shortfall_probability(n_calibration, marginal_k, epsilon);
        let sentence = sentences::pac_sentence(&PacFigures {
            n_calibration,
            epsilon,
            delta,
            marginal_k,
            marginal_shortfall,
            marginal_size: marginal.average_set_size,
            pac: pac.map_or(Err(needed), |p| {
                Ok(PacOutcome {
                    k: p.k,
                    coverage: p.coverage,
                    average_set_size: p.average_set_size,
                })
            }),
        });
        Ok(PacView {
            epsilon,
            delta,
            n_calibration,
            marginal_k,
            marginal_shortfall,
            marginal_qhat,
            marginal_coverage: marginal.coverage,
            marginal_size: marginal.average_set_size,
            pac,
            needed,
            sentence,
        })
    }
}

/// The PAC part of a coverage experiment: `marginal` and `pac` are the coverages of the
/// marginal rank `marginal_k` and of the PAC rank `k` on the same `n_evaluation`-image splits.
/// The density curve spans five standard deviations of `Beta(k, n + 1 − k)` on each side.
///
/// # Errors
/// [`conformal::ConformalError::InvalidParameter`] for a rank outside `1..=n_calibration`.
pub(super) fn pac_experiment(
    marginal: &[f64],
    pac: Vec<f64>,
    n_calibration: usize,
    n_evaluation: usize,
    epsilon: f64,
    delta: f64,
    (marginal_k, k): (usize, usize),
) -> Result<PacExperiment, LabError> {
    let below = |coverages: &[f64]| coverages.iter().filter(|&&c| c < 1.0 - epsilon).count();
    let figures = PacExperimentFigures {
        repetitions: pac.len(),
        n_evaluation,
        epsilon,
        delta,
        k,
        marginal_k,
        pac_below: below(&pac),
        marginal_below: below(marginal),
        predicted_pac_below: pac::measured_shortfall_probability(
            n_calibration,
            n_evaluation,
            k,
            epsilon,
        ),
        predicted_marginal_below: pac::measured_shortfall_probability(
            n_calibration,
            n_evaluation,
            marginal_k,
            epsilon,
        ),
    };
    let (a, b) = (k as f64, (n_calibration + 1 - k.min(n_calibration)) as f64);
    let spread = 5.0 * (a * b / ((a + b).powi(2) * (a + b + 1.0))).sqrt();
    let mean = a / (a + b);
    let (low, high) = ((mean - spread).max(0.0), (mean + spread).min(1.0));
    let beta_density = (0..=DENSITY_POINTS)
        .map(|i| {
            let x = low + (high - low) * i as f64 / DENSITY_POINTS as f64;
            conformal::rank_coverage_density(n_calibration, k, x).map(|d| (x, d))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(PacExperiment {
        delta,
        k,
        coverages: pac,
        beta_density,
        caption: sentences::pac_experiment_caption(&figures),
        figures,
    })
}

#[cfg(test)]
#[path = "pac_view_tests.rs"]
mod tests;
