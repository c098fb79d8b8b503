//! What a perfectly calibrated classifier with these very confidences would show, and the test
//! of calibration built on it: the verdict "overconfident / underconfident / cannot tell".
//!
//! **The null hypothesis.** Each example is right with probability equal to its top-label
//! confidence c_i, independently. Under it:
//!
//! - the *mean gap* `ḡ = (1/n)·Σ (c_i − 1[correct_i])` has mean 0 and standard error
//!   `se = √(Σ c_i(1 − c_i)) / n` exactly (a sum of independent centred Bernoulli variables);
//! - binned ECE has no closed law, so it is simulated: `draws` rounds in which example i is right
//!   when its uniform `U_i < c_i`, each round's ECE cut on the same bins as the observed one.
//!   Binned ECE is biased upward (Kumar et al., NeurIPS 2019; Roelofs et al., AISTATS 2022): a
//!   calibrated network shows a positive ECE on any finite set, which the simulation measures.
//!
//! **The test.** The Monte Carlo p-value `p = (1 + #{null ECE ≥ observed}) / (1 + draws)` is
//! exact for any number of draws (Besag & Clifford, 1989): under the null the observed ECE is
//! one more draw of the same law, so it ranks uniformly among them. The network is called
//! miscalibrated when `p ≤ LEVEL`; a direction is named only when, besides, `|ḡ|` exceeds
//! `GAP_STANDARD_ERRORS · se`. A direction is therefore named for a calibrated network with
//! probability at most `LEVEL`; the rates measured on synthetic networks whose truth is known are
//! in `docs/definitions.md` ("The confidence verdict") and in [`VERDICT_RATES`].
//!
//! **Draws by position.** Round d's uniforms are attached to positions in the examples' order by
//! bin (bin 0's examples first, each bin's in row order), not to row identities: the uniforms are
//! independent of the confidences, so this is the same law, and it makes each bin's count a sum
//! over a contiguous run of thresholds, which the compiler vectorises. Uniforms are 32-bit
//! integers: example i is right when `U < ⌈c_i·2³²⌉`, a Bernoulli law within 2⁻³² of c_i
//! and exact at c_i = 1.

use crate::calibration::{self, Bin, Binning, CalibrationError, Evaluation};

/// Simulated rounds of the null law: the smallest count the test's level allows to be exact
/// with a margin (p ≤ 0.05 needs at most 9 of 200 null values at or above the observed one).
pub const NULL_DRAWS: usize = 200;
/// The test's level: the largest chance of calling a calibrated network miscalibrated.
pub const LEVEL: f64 = 0.05;
/// How many standard errors the mean gap must exceed before a direction is named.
pub const GAP_STANDARD_ERRORS: f64 = 2.0;

/// The uniforms of the null law's rounds for a set of `rows` examples, from ChaCha8 seeded with
/// `seed`. They depend only on the number of rows, so a page that tests calibration at every
/// temperature draws them once per set.
#[derive(Clone, Debug, PartialEq)]
pub struct NullOutcomes {
    rows: usize,
    /// Row-major `[draws, rows]`: round d's uniform for position j at `d·rows + j`.
    uniforms: Vec<u32>,
}

impl NullOutcomes {
    /// `draws` rounds of uniforms for `rows` examples.
    pub fn draw(rows: usize, draws: usize, seed: u64) -> Self {
        use rand::{RngCore, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut uniforms = vec![0_u32; rows * draws];
        for uniform in &mut uniforms {
            *uniform = rng.next_u32();
        }
        Self { rows, uniforms }
    }

    /// The number of rounds.
    pub fn draws(&self) -> usize {
        self.uniforms.len().checked_div(self.rows).unwrap_or(0)
    }
}

/// The test of calibration of one set of confidences and outcomes.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrationTest {
    /// Binned ECE of the observed outcomes.
    pub ece: f64,
    /// Mean of the null ECE over the rounds: the ECE a calibrated network would show on average
    /// (binned ECE's noise floor).
    pub null_ece_mean: f64,
    /// The ECE beyond which the test rejects: the `⌊LEVEL·(draws + 1)⌋`-th largest null value
    /// (the 10th largest of 200), which about 95% of calibrated networks stay at or under.
    pub null_ece_limit: f64,
    /// Monte Carlo p-value of the observed ECE.
    pub p_value: f64,
    /// Mean confidence minus accuracy.
    pub mean_gap: f64,
    /// Standard error of the mean gap under the null.
    pub gap_standard_error: f64,
}

/// What the test concludes about the confidence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfidenceVerdict {
    /// The ECE is within what chance gives a calibrated network.
    CannotTell,
    /// Miscalibrated, with the mean confidence above the accuracy by more than the noise.
    Overconfident,
    /// Miscalibrated, with the mean confidence below the accuracy by more than the noise.
    Underconfident,
    /// Miscalibrated, with a mean gap within the noise: the bins' gaps point both ways.
    NoDirection,
}

impl CalibrationTest {
    /// The verdict of the rule in the module's doc.
    pub fn verdict(&self) -> ConfidenceVerdict {
        if self.p_value > LEVEL {
            ConfidenceVerdict::CannotTell
        } else if self.mean_gap > GAP_STANDARD_ERRORS * self.gap_standard_error {
            ConfidenceVerdict::Overconfident
        } else if self.mean_gap < -GAP_STANDARD_ERRORS * self.gap_standard_error {
            ConfidenceVerdict::Underconfident
        } else {
            ConfidenceVerdict::NoDirection
        }
    }
}

/// Tests the calibration of `confidence` (top-label confidences) against `correct`, with binned
/// ECE on `num_bins` bins cut by `binning`, and the null law simulated with `outcomes`.
///
/// # Errors
/// As [`calibration::reliability_bins`], and [`CalibrationError::ConfidenceCountMismatch`]
/// when `outcomes` was drawn for another number of rows or holds no round.
pub fn test_calibration(
    confidence: &[f64],
    correct: &[bool],
    num_bins: usize,
    binning: Binning,
    outcomes: &NullOutcomes,
) -> Result<CalibrationTest, CalibrationError> {
    let bins = calibration::reliability_bins(confidence, correct, num_bins, binning)?;
    test_binned(confidence, correct, bins, binning, outcomes)
}

/// [`test_calibration`] of an evaluation's top-label confidences and outcomes, on the bins it
/// cut them into (the same bins `test_calibration` would cut).
///
/// # Errors
/// [`CalibrationError::ConfidenceCountMismatch`] when `outcomes` was drawn for another number
/// of rows or holds no round.
pub fn test_evaluation(
    evaluation: &Evaluation,
    outcomes: &NullOutcomes,
) -> Result<CalibrationTest, CalibrationError> {
    test_binned(
        &evaluation.confidence,
        &evaluation.correct,
        evaluation.report.bins.clone(),
        evaluation.binning,
        outcomes,
    )
}

/// The test on `bins`, the reliability bins of `confidence` and `correct` cut by `binning`.
fn test_binned(
    confidence: &[f64],
    correct: &[bool],
    mut bins: Vec<Bin>,
    binning: Binning,
    outcomes: &NullOutcomes,
) -> Result<CalibrationTest, CalibrationError> {
    let num_bins = bins.len();
    let draws = outcomes.draws();
    if outcomes.rows != confidence.len() || draws == 0 {
        return Err(CalibrationError::ConfidenceCountMismatch {
            confidences: confidence.len(),
            outcomes: outcomes.rows,
        });
    }
    let n = confidence.len() as f64;
    let ece = calibration::expected_calibration_error(&bins);
    let accuracy = correct.iter().filter(|&&c| c).count() as f64 / n;
    let mean_gap = confidence.iter().sum::<f64>() / n - accuracy;
    let gap_standard_error = confidence.iter().map(|c| c * (1.0 - c)).sum::<f64>().sqrt() / n;

    let (thresholds, bin_ends) = thresholds_by_bin(confidence, num_bins, binning);
    let mut null_ece: Vec<f64> = outcomes
        .uniforms
        .chunks_exact(outcomes.rows)
        .map(|round| {
            let mut start = 0;
            for (bin, &end) in bins.iter_mut().zip(&bin_ends) {
                if end > start {
                    bin.accuracy = right_count(&round[start..end], &thresholds[start..end]) as f64
                        / (end - start) as f64;
                }
                start = end;
            }
            calibration::expected_calibration_error(&bins)
        })
        .collect();
    let null_ece_mean = null_ece.iter().sum::<f64>() / draws as f64;
    let at_or_above = null_ece.iter().filter(|&&null| null >= ece).count();
    let p_value = (1 + at_or_above) as f64 / (1 + draws) as f64;
    // Rejected exactly when fewer than `allowed + 1` null values reach the observed ECE, that
    // is when it exceeds the (allowed + 1)-th largest of them.
    let allowed = ((LEVEL * (1 + draws) as f64).floor() as usize).saturating_sub(1);
    null_ece.sort_unstable_by(|a, b| b.total_cmp(a));
    let null_ece_limit = null_ece[allowed.min(draws - 1)];
    Ok(CalibrationTest {
        ece,
        null_ece_mean,
        null_ece_limit,
        p_value,
        mean_gap,
        gap_standard_error,
    })
}

/// The largest 32-bit uniform for which an example at confidence `c` is right:
/// `⌈c·2³²⌉ − 1`, so that it is right with probability `⌈c·2³²⌉ / 2³²` (exactly 1 at c = 1;
/// 2⁻³² rather than 0 at c = 0, which no top-label confidence reaches).
pub(crate) fn last_right_uniform(c: f64) -> u32 {
    ((c * 4_294_967_296.0).ceil() - 1.0).max(0.0) as u32
}

/// The examples' [`last_right_uniform`]s in order by bin (a stable counting sort), and the end of
/// each bin's run in that order.
fn thresholds_by_bin(
    confidence: &[f64],
    num_bins: usize,
    binning: Binning,
) -> (Vec<u32>, Vec<usize>) {
    let bin_of_row = calibration::bin_of_each_row(confidence, num_bins, binning);
    let mut bin_ends = vec![0_usize; num_bins];
    for &bin in &bin_of_row {
        bin_ends[bin] += 1;
    }
    let mut next = 0;
    for end in &mut bin_ends {
        next += *end;
        *end = next;
    }
    let mut place: Vec<usize> = bin_ends.clone();
    let mut thresholds = vec![0_u32; confidence.len()];
    for (&c, &bin) in confidence.iter().zip(&bin_of_row).rev() {
        place[bin] -= 1;
        thresholds[place[bin]] = last_right_uniform(c);
    }
    (thresholds, bin_ends)
}

/// How many positions are right: uniform at or below the last right one.
fn right_count(uniforms: &[u32], thresholds: &[u32]) -> usize {
    uniforms
        .iter()
        .zip(thresholds)
        .map(|(&u, &t)| u32::from(u <= t))
        .sum::<u32>() as usize
}

/// The confidence verdict's error rates, as measured by the seeded Monte Carlo tests of
/// `calibration_null_tests.rs` (release run): on calibrated synthetic networks (three confidence
/// profiles, 1,000 to 10,000 rows) how many were given a direction, and on networks whose true
/// temperature is 1.3 (5,000 rows) how many were called overconfident.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerdictRates {
    /// Calibrated networks called over- or underconfident.
    pub false_alarms: usize,
    /// Calibrated networks called miscalibrated with no direction.
    pub no_direction: usize,
    pub calibrated_sets: usize,
    pub detections: usize,
    pub overconfident_sets: usize,
}

/// The rates the page and `docs/definitions.md` state; the tests fail if a change moves them.
pub const VERDICT_RATES: VerdictRates = VerdictRates {
    false_alarms: 0,
    no_direction: 5,
    calibrated_sets: 240,
    detections: 201,
    overconfident_sets: 201,
};

#[cfg(test)]
#[path = "calibration_null_tests.rs"]
mod tests;
