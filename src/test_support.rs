//! Helpers shared by the unit tests that build synthetic data whose truth is known.

use rand::Rng;

/// An index drawn with probability proportional to `weights` (non-negative, not all 0): the
/// label of a synthetic example drawn from its own probabilities.
pub fn draw_index(weights: &[f64], rng: &mut impl Rng) -> usize {
    let mut u = rng.random_range(0.0..weights.iter().sum::<f64>());
    weights
        .iter()
        .position(|w| {
            u -= w;
            u < 0.0
        })
        .unwrap_or(weights.len() - 1)
}
