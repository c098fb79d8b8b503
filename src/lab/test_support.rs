//! Helpers shared by the lab's unit tests.

use super::{ConformalSettings, ScoreKind};

/// The conformal lab's settings at T = 1 for `score` at level `alpha`: randomized, marginal
/// (one threshold for every class), RAPS's λ = 0.1 and k_reg = 1, SAPS's λ = 0.2.
pub fn conformal_settings(alpha: f64, score: ScoreKind) -> ConformalSettings {
    ConformalSettings {
        temperature: 1.0,
        alpha,
        score,
        randomized: true,
        raps_lambda: 0.1,
        raps_k_reg: 1,
        saps_lambda: 0.2,
        class_conditional: false,
    }
}
