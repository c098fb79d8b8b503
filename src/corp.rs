//! The CORP reliability diagram of the top-label confidence and the CORP decomposition of its
//! Brier and log scores.
//!
//! # What it computes
//! * **CORP reliability diagram** (Dimitriadis, Gneiting & Jordan, "Stable reliability
//!   diagrams for probabilistic classifiers", PNAS 2021: Consistent, Optimally binned,
//!   Reproducible, PAV): the isotonic regression of the correctness `y_i ∈ {0, 1}` on the
//!   top-label confidence `c_i`, the non-decreasing function of `c` closest to the outcomes in
//!   squared error, fitted by pool-adjacent-violators on the rows it describes
//!   ([`crate::recalibration::fit_isotonic`], the isotonic rival's fit: equal confidences
//!   pooled first, adjacent blocks pooled while the left mean is at least the right one). Its
//!   blocks are the diagram's bins, chosen by the data rather than by the reader: each holds
//!   the confidences from its lowest to its highest, and its value `ĉ` is the share of them
//!   that are right.
//! * **CORP decomposition** of a proper score `S` of the top-label event (the prediction is
//!   right or not), with `ĉ_i` the PAV value of row `i` and `r` the share of rows right, as
//!   means over the rows:
//!   `S̄(c) = MCB − DSC + UNC`, miscalibration `MCB = S̄(c) − S̄(ĉ)`, discrimination
//!   `DSC = S̄(r) − S̄(ĉ)`, uncertainty `UNC = S̄(r)`. The PAV fit is the best non-decreasing
//!   function of `c` under every proper score of a binary event at once (the isotonic
//!   regression minimises every Bregman divergence, as Dimitriadis et al. recall), and both `c` itself and the constant
//!   `r` are such functions: so `MCB ≥ 0` and `DSC ≥ 0`, each 0 only when the forecast is
//!   already its own PAV fit, or carries nothing beyond the base rate. Unlike Murphy's
//!   decomposition (`temperature_anatomy::BrierDecomposition`) it needs no bins and leaves no
//!   within-bin remainder.
//! * **The scores**: Brier `S(p, y) = (p − y)²`; log `S(p, y) = −ln p_y` with `p_y = p` for a
//!   right prediction and `1 − p` for a wrong one, `p_y` clipped below at
//!   [`MIN_PROBABILITY`] (`2⁻⁵²`, as the NLL clips it): a confidence of exactly 1 on a wrong
//!   prediction costs 36 nats, not infinity. PAV's values never meet the clip: a block valued 0
//!   holds only wrong predictions and one valued 1 only right ones (its mean is 0 or 1), so each
//!   of its rows gets probability 1 for what happened and scores `−ln 1 = 0` (the `0·ln 0 = 0`
//!   of model-diagnostics' `LogLoss`); the base rate is 0 or 1 only when every row is wrong or
//!   every row right, and then `UNC = 0` likewise.
//!
//! Definitions, and how they differ from the binned decomposition: docs/definitions.md.

use serde::Serialize;

use crate::calibration::CalibrationError;
use crate::recalibration::{fit_isotonic, MIN_PROBABILITY};

/// A proper score of a probability `p` for the top-label event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProperScore {
    /// `(p − y)²`.
    Brier,
    /// `−ln p_y`, `p_y` clipped below at [`MIN_PROBABILITY`].
    Log,
}

impl ProperScore {
    /// The score of probability `probability` that the prediction is right, for a prediction
    /// that is `right` or not.
    pub fn of(self, probability: f64, right: bool) -> f64 {
        let outcome = f64::from(right);
        match self {
            ProperScore::Brier => (probability - outcome).powi(2),
            ProperScore::Log => {
                let happened = if right {
                    probability
                } else {
                    1.0 - probability
                };
                -happened.max(MIN_PROBABILITY).ln()
            }
        }
    }
}

/// One block of the PAV fit: a bin the data chose.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CorpBlock {
    /// The lowest and the highest confidence in the block.
    pub lowest: f64,
    pub highest: f64,
    /// The block's rows, and those right.
    pub rows: usize,
    pub right: usize,
    /// The mean confidence of its rows.
    pub mean_confidence: f64,
    /// PAV's value, the share of its rows right: the recalibrated confidence of each.
    pub value: f64,
}

/// A mean score split as `score = miscalibration − discrimination + uncertainty`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ScoreDecomposition {
    /// `S̄(c)`, the forecasts' mean score.
    pub score: f64,
    /// MCB, `S̄(c) − S̄(ĉ)`.
    pub miscalibration: f64,
    /// DSC, `S̄(r) − S̄(ĉ)`.
    pub discrimination: f64,
    /// UNC, `S̄(r)`.
    pub uncertainty: f64,
}

/// The CORP reliability diagram's blocks and the decompositions of both scores.
#[derive(Clone, Debug, PartialEq)]
pub struct Corp {
    /// PAV's blocks, by increasing confidence.
    pub blocks: Vec<CorpBlock>,
    /// The share of rows right, `r`.
    pub base_rate: f64,
    pub brier: ScoreDecomposition,
    pub log: ScoreDecomposition,
}

impl Corp {
    /// The rows it was computed on.
    pub fn rows(&self) -> usize {
        self.blocks.iter().map(|block| block.rows).sum()
    }
}

/// The CORP diagram and decompositions of top-label confidences `confidence` whose
/// predictions are `correct` or not (see the module documentation).
///
/// # Errors
/// The errors of checking the confidences ([`CalibrationError::EmptyInput`],
/// [`CalibrationError::ConfidenceCountMismatch`], [`CalibrationError::InvalidConfidence`]).
pub fn corp(confidence: &[f64], correct: &[bool]) -> Result<Corp, CalibrationError> {
    let fit = fit_isotonic(confidence, correct)?;
    let starts = fit.starts();
    let mut blocks: Vec<CorpBlock> = starts
        .iter()
        .zip(fit.values())
        .map(|(&start, &value)| CorpBlock {
            lowest: start,
            highest: start,
            rows: 0,
            right: 0,
            mean_confidence: 0.0,
            value,
        })
        .collect();
    let mut forecast_scores = [0.0; 2];
    for (&c, &right) in confidence.iter().zip(correct) {
        // Every confidence is at or above the first block's start, the least of them.
        let block = &mut blocks[starts.partition_point(|&start| start <= c) - 1];
        block.rows += 1;
        block.right += usize::from(right);
        block.highest = block.highest.max(c);
        block.mean_confidence += c;
        for (sum, score) in forecast_scores.iter_mut().zip(SCORES) {
            *sum += score.of(c, right);
        }
    }
    for block in &mut blocks {
        block.mean_confidence /= block.rows as f64;
    }
    let rows = confidence.len();
    let right: usize = blocks.iter().map(|block| block.right).sum();
    let base_rate = right as f64 / rows as f64;
    // The mean score of `probability` given to `right` right rows of `total`.
    let pooled = |score: ProperScore, probability: f64, right: usize, total: usize| {
        right as f64 * score.of(probability, true)
            + (total - right) as f64 * score.of(probability, false)
    };
    let decomposition = |score: ProperScore, forecast_sum: f64| {
        let n = rows as f64;
        let recalibrated = blocks
            .iter()
            .map(|block| pooled(score, block.value, block.right, block.rows))
            .sum::<f64>()
            / n;
        let uncertainty = pooled(score, base_rate, right, rows) / n;
        let mean = forecast_sum / n;
        ScoreDecomposition {
            score: mean,
            miscalibration: mean - recalibrated,
            discrimination: uncertainty - recalibrated,
            uncertainty,
        }
    };
    Ok(Corp {
        brier: decomposition(ProperScore::Brier, forecast_scores[0]),
        log: decomposition(ProperScore::Log, forecast_scores[1]),
        blocks,
        base_rate,
    })
}

/// The scores [`corp`] decomposes, in the order of its sums.
const SCORES: [ProperScore; 2] = [ProperScore::Brier, ProperScore::Log];

#[cfg(test)]
#[path = "corp_tests.rs"]
mod tests;
