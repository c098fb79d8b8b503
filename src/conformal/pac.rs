//! Training-conditional (PAC) split conformal thresholds: coverage `≥ 1 − ε` for *this*
//! calibration set, with probability `≥ 1 − δ` over calibration sets.
//!
//! # Method
//!
//! Split conformal's guarantee `P(Y ∈ C(X)) ≥ 1 − α` averages over calibration sets. Given the
//! calibration set, the coverage of `q̂ = s_(k)`, the `k`-th smallest of `n` exchangeable,
//! tie-free scores, is distributed as `Beta(k, n + 1 − k)` over calibration sets (Vovk 2012).
//! The training-conditional threshold takes the smallest `k` whose law puts at most `δ` below
//! `1 − ε`:
//!
//! ```text
//! k = min{ k ∈ 1..=n : I_{1−ε}(k, n + 1 − k) ≤ δ },   q̂ = s_(k),
//! ```
//!
//! with `I_x(a, b)` the regularized incomplete Beta function (the Beta law's distribution
//! function; `I_x(k, n + 1 − k) = P(Binomial(n, x) ≥ k)`), so that
//! `P(coverage(q̂) < 1 − ε) ≤ δ`. `I_{1−ε}(k, n + 1 − k)` decreases in `k`, so `k` is found by
//! bisection. With ties among the scores the coverage is only larger. When even `k = n` fails,
//! that is when `(1 − ε)ⁿ > δ`, no finite threshold has the guarantee and the rank is refused
//! ([`ConformalError::TooFewRowsForPac`], naming the smallest `n` that works).
//!
//! # Sources
//!
//! - V. Vovk, "Conditional validity of inductive conformal predictors", ACML 2012
//!   (training-conditional validity, the Beta law of coverage given the calibration set).
//! - A. Angelopoulos, S. Bates, "Conformal prediction: a gentle introduction", 2023,
//!   section 3.2 (the PAC choice of `k` from the Beta law).
//! - statrs (`beta_reg`, the regularized incomplete Beta function).
//!
//! Every definition, with its source: docs/definitions.md

use statrs::function::beta::beta_reg;

use super::{kth_smallest, ConformalError};

/// The page's δ until the reader moves it: coverage `≥ 1 − ε` for nine calibration sets in ten.
pub const DEFAULT_DELTA: f64 = 0.1;

/// The probability that the coverage of `s_(k)` over `n` tie-free calibration scores lies below
/// `1 − epsilon`: `I_{1−ε}(k, n + 1 − k)`, for `1 ≤ k ≤ n`; 0 for `k > n` (`q̂ = +∞` covers
/// everything). What the marginal rank risks, beside the `δ` the training-conditional one bounds.
pub fn shortfall_probability(n: usize, k: usize, epsilon: f64) -> f64 {
    if k > n {
        return 0.0;
    }
    beta_reg(k as f64, (n + 1 - k) as f64, 1.0 - epsilon)
}

/// Checks that `value` (the option `name`) lies strictly between 0 and 1.
fn check_unit(name: &'static str, value: f64) -> Result<(), ConformalError> {
    if value.is_finite() && value > 0.0 && value < 1.0 {
        Ok(())
    } else {
        Err(ConformalError::InvalidParameter { name, value })
    }
}

/// The probability that the coverage of `s_(k)`, *measured* on `m` further exchangeable,
/// tie-free scores, lies below `1 − epsilon`: what a coverage experiment on evaluation sets of
/// `m` examples sees. The count of the `m` scores at most `s_(k)` follows
/// `BetaBinomial(m, k, n + 1 − k)` exactly (the ranks of `n + m` exchangeable scores are
/// uniform), so the probability is the sum of its mass below `m(1 − ε)`:
///
/// ```text
/// P(J < m(1 − ε)) = Σ_{j < m(1 − ε)} C(k − 1 + j, j) · C(n − k + m − j, m − j) / C(n + m, m).
/// ```
///
/// It exceeds [`shortfall_probability`] (the coverage of unlimited evaluation data) by the
/// binomial noise of `m` examples, and tends to it as `m` grows. `1 ≤ k ≤ n`, `m ≥ 1`; 0 for
/// `k > n`.
pub fn measured_shortfall_probability(n: usize, m: usize, k: usize, epsilon: f64) -> f64 {
    use statrs::function::factorial::ln_binomial;
    if k > n || m == 0 {
        return 0.0;
    }
    let (n, m, k) = (n as u64, m as u64, k as u64);
    let total = ln_binomial(n + m, m);
    (0..=m)
        .take_while(|&j| (j as f64) < m as f64 * (1.0 - epsilon))
        .map(|j| (ln_binomial(k - 1 + j, j) + ln_binomial(n - k + m - j, m - j) - total).exp())
        .sum::<f64>()
        .min(1.0)
}

/// The smallest calibration size with a training-conditional threshold at `(ε, δ)`: the
/// smallest `n` with `(1 − ε)ⁿ ≤ δ`.
///
/// # Errors
/// [`ConformalError::InvalidParameter`] (`"epsilon"`, `"delta"`) unless both lie in (0, 1).
pub fn minimum_pac_rows(epsilon: f64, delta: f64) -> Result<usize, ConformalError> {
    check_unit("epsilon", epsilon)?;
    check_unit("delta", delta)?;
    // ln δ / ln(1 − ε), then corrected by the exact test the estimate's rounding may miss.
    let estimate = (delta.ln() / (1.0 - epsilon).ln()).ceil().max(1.0) as usize;
    let fails = |n: usize| (1.0 - epsilon).powf(n as f64) > delta;
    let mut n = estimate.saturating_sub(1).max(1);
    while fails(n) {
        n += 1;
    }
    Ok(n)
}

/// The rank `k` of the training-conditional threshold for `n` calibration scores:
/// the smallest `k ≤ n` with `I_{1−ε}(k, n + 1 − k) ≤ δ`.
///
/// # Errors
/// [`ConformalError::InvalidParameter`] (`"epsilon"`, `"delta"`) unless both lie in (0, 1);
/// [`ConformalError::TooFewRowsForPac`] when `(1 − ε)ⁿ > δ` (no `k ≤ n` works).
pub fn pac_rank(n: usize, epsilon: f64, delta: f64) -> Result<usize, ConformalError> {
    let needed = minimum_pac_rows(epsilon, delta)?;
    if n < needed {
        return Err(ConformalError::TooFewRowsForPac {
            n,
            epsilon,
            delta,
            needed,
        });
    }
    // Invariant: k = high satisfies the bound (k = n does, as n ≥ needed); k < low does not.
    let (mut low, mut high) = (1, n);
    while low < high {
        let middle = low + (high - low) / 2;
        if shortfall_probability(n, middle, epsilon) <= delta {
            high = middle;
        } else {
            low = middle + 1;
        }
    }
    Ok(high)
}

/// The training-conditional threshold `q̂ = s_(k)` of `scores`, with `k` from [`pac_rank`].
///
/// # Errors
/// As [`pac_rank`] with `n = scores.len()`; [`ConformalError::NonFiniteScore`].
pub fn pac_threshold(scores: &[f64], epsilon: f64, delta: f64) -> Result<f64, ConformalError> {
    let k = pac_rank(scores.len(), epsilon, delta)?;
    if let Some(index) = scores.iter().position(|s| !s.is_finite()) {
        return Err(ConformalError::NonFiniteScore { index });
    }
    let mut buffer = scores.to_vec();
    Ok(kth_smallest(&mut buffer, k))
}

#[cfg(test)]
#[path = "pac_tests.rs"]
mod tests;
