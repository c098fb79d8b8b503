//! Conformal p-values for out-of-distribution detection, and the Benjamini–Hochberg procedure
//! that turns a batch of them into discoveries with a controlled false discovery rate.
//!
//! # Conformal p-values
//!
//! An OOD score (higher = more in-distribution, `ood.rs`) of `n` held-out in-distribution
//! inputs, `c_1, …, c_n`, calibrates the score `t` of a tested input:
//!
//! ```text
//! p(t) = (1 + #{ i : c_i ≤ t }) / (n + 1).
//! ```
//!
//! A small `p` says that few in-distribution inputs score as low. If the tested input is
//! in-distribution (exchangeable with the calibration inputs), `P(p ≤ u) ≤ u` for every `u`
//! (the p-value is valid, ties included). This is crepes' non-smoothed p-value
//! (`ConformalClassifier.predict_p(…, smoothing=False)`) with the nonconformity `−t`.
//!
//! # Benjamini–Hochberg
//!
//! With `m` p-values sorted, `p_(1) ≤ … ≤ p_(m)`, the procedure finds the largest `i` with
//! `p_(i) ≤ (i/m)·q` and declares the `i` inputs with the smallest p-values out of distribution
//! (every p-value `≤ p_(i)`; none when no `i` qualifies). The product `(i/m)·q` is computed in
//! that order, as statsmodels' `multipletests(…, method="fdr_bh")` does, so the two agree at
//! equality. Conformal p-values that share one calibration set are positively dependent
//! (PRDS), and BH on them keeps the false discovery rate, the expected share of
//! in-distribution inputs among the discoveries, at most `q` (Bates et al. 2023).
//!
//! # A batch with a chosen share of OOD inputs
//!
//! To show BH at a chosen share `s` of OOD inputs, [`mixed_rows`] draws
//! `m₁ = min(n_out, max(1, round(s·m₀/(1 − s))))` of the `n_out` OOD rows (the first `m₁` of a
//! seeded permutation, in row order) to join the `m₀` tested in-distribution inputs. Then
//! `π₀ = m₀/(m₀ + m₁)` is the share of in-distribution inputs in the batch, and BH on
//! conformal p-values keeps the false discovery rate at most `q·π₀` (Bates et al. 2023), below
//! `q` by the share of OOD inputs.
//!
//! # Sources
//!
//! - S. Bates, E. Candès, L. Lei, Y. Romano, M. Sesia, "Testing for outliers with conformal
//!   p-values", Annals of Statistics 2023.
//! - Y. Benjamini, Y. Hochberg, "Controlling the false discovery rate: a practical and powerful
//!   approach to multiple testing", JRSS B 1995.
//!
//! Every definition, with its source: docs/definitions.md

use serde::Serialize;

use crate::data::seeded_permutation;
use crate::ood::{check_scores, OodError, ScoreSet};

/// The conformal p-value of every `tested` score against the `calibration` scores (both higher
/// = more in-distribution). `O((n + m) log n)`.
///
/// # Errors
/// [`OodError::EmptyScores`] or [`OodError::NanScore`] for the calibration set
/// ([`ScoreSet::Calibration`]), and [`OodError::NanScore`] for a NaN tested score
/// ([`ScoreSet::InDistribution`], the set being tested).
pub fn conformal_pvalues(calibration: &[f64], tested: &[f64]) -> Result<Vec<f64>, OodError> {
    check_scores(calibration, ScoreSet::Calibration)?;
    if let Some(index) = tested.iter().position(|t| t.is_nan()) {
        return Err(OodError::NanScore {
            set: ScoreSet::InDistribution,
            index,
        });
    }
    let mut sorted = calibration.to_vec();
    sorted.sort_by(f64::total_cmp);
    Ok(tested
        .iter()
        .map(|&t| pvalue_among_sorted(&sorted, t))
        .collect())
}

/// The conformal p-value of one `tested` score against calibration scores already sorted in
/// increasing order (no NaN), as [`conformal_pvalues`] computes each: `O(log n)`, for a caller
/// that keeps the sorted scores (the "your own image" section).
pub fn pvalue_among_sorted(sorted_calibration: &[f64], tested: f64) -> f64 {
    let at_or_below = sorted_calibration.partition_point(|&c| c <= tested);
    (1 + at_or_below) as f64 / (sorted_calibration.len() + 1) as f64
}

/// Which inputs Benjamini–Hochberg declares out of distribution.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Discoveries {
    /// Whether each input (in the order of the p-values) is a discovery.
    pub rejected: Vec<bool>,
    /// How many are.
    pub count: usize,
    /// The largest p-value declared a discovery, `p_(i)`; `None` when there is none.
    pub largest_rejected_pvalue: Option<f64>,
}

/// Checks a false discovery rate level `q ∈ (0, 1)`.
///
/// # Errors
/// [`OodError::InvalidFdrLevel`] otherwise.
pub fn check_fdr_level(level: f64) -> Result<(), OodError> {
    if level > 0.0 && level < 1.0 {
        Ok(())
    } else {
        Err(OodError::InvalidFdrLevel(level))
    }
}

/// The Benjamini–Hochberg procedure at level `q` on `pvalues` (module docs).
///
/// # Errors
/// [`OodError::InvalidFdrLevel`] unless `0 < q < 1`; [`OodError::EmptyScores`] for no p-values
/// and [`OodError::NanScore`] for a NaN one (both [`ScoreSet::InDistribution`]).
pub fn benjamini_hochberg(pvalues: &[f64], level: f64) -> Result<Discoveries, OodError> {
    check_fdr_level(level)?;
    check_scores(pvalues, ScoreSet::InDistribution)?;
    let mut sorted = pvalues.to_vec();
    sorted.sort_by(f64::total_cmp);
    let m = sorted.len() as f64;
    let largest_rejected_pvalue = sorted
        .iter()
        .enumerate()
        .rev()
        .find(|&(index, &p)| p <= (index + 1) as f64 / m * level)
        .map(|(_, &p)| p);
    let rejected: Vec<bool> = pvalues
        .iter()
        .map(|&p| largest_rejected_pvalue.is_some_and(|cutoff| p <= cutoff))
        .collect();
    Ok(Discoveries {
        count: rejected.iter().filter(|&&r| r).count(),
        rejected,
        largest_rejected_pvalue,
    })
}

/// A batch of in-distribution and OOD inputs tested against held-out in-distribution scores:
/// what BH declares, and how it did, since which inputs are OOD is known here.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OutlierTest {
    /// The level `q`.
    pub fdr_level: f64,
    pub n_calibration: usize,
    /// In-distribution inputs in the batch (the nulls).
    pub n_in_distribution: usize,
    /// OOD inputs in the batch.
    pub n_out_of_distribution: usize,
    /// Inputs declared OOD.
    pub discoveries: usize,
    /// In-distribution inputs declared OOD.
    pub false_discoveries: usize,
    /// `false_discoveries / max(discoveries, 1)`: the realised false discovery proportion.
    pub false_discovery_proportion: f64,
    /// Share of the OOD inputs declared OOD.
    pub power: f64,
    /// The largest p-value declared a discovery (`None`: no discovery).
    pub largest_rejected_pvalue: Option<f64>,
    /// The p-value of each in-distribution input of the batch, in its order.
    pub in_distribution_pvalues: Vec<f64>,
    /// The p-value of each OOD input, in its order.
    pub out_of_distribution_pvalues: Vec<f64>,
}

/// Conformal p-values of the `in_distribution` and `out_of_distribution` scores against the
/// `calibration` scores, then Benjamini–Hochberg at `level` over the whole batch.
///
/// # Errors
/// As [`conformal_pvalues`] and [`benjamini_hochberg`]; [`OodError::EmptyScores`] for an empty
/// batch part.
pub fn outlier_test(
    calibration: &[f64],
    in_distribution: &[f64],
    out_of_distribution: &[f64],
    level: f64,
) -> Result<OutlierTest, OodError> {
    check_fdr_level(level)?;
    check_scores(in_distribution, ScoreSet::InDistribution)?;
    check_scores(out_of_distribution, ScoreSet::OutOfDistribution)?;
    let in_distribution_pvalues = conformal_pvalues(calibration, in_distribution)?;
    let out_of_distribution_pvalues = conformal_pvalues(calibration, out_of_distribution)?;
    OutlierTest::at_level(
        calibration.len(),
        in_distribution_pvalues,
        out_of_distribution_pvalues,
        level,
    )
}

impl OutlierTest {
    /// Benjamini–Hochberg at `level` over p-values already computed against `n_calibration`
    /// scores: [`outlier_test`]'s second step, which a new level repeats alone.
    ///
    /// # Errors
    /// As [`benjamini_hochberg`].
    pub fn at_level(
        n_calibration: usize,
        in_distribution_pvalues: Vec<f64>,
        out_of_distribution_pvalues: Vec<f64>,
        level: f64,
    ) -> Result<Self, OodError> {
        let batch = [
            in_distribution_pvalues.as_slice(),
            &out_of_distribution_pvalues,
        ]
        .concat();
        let discoveries = benjamini_hochberg(&batch, level)?;
        let (nulls, outliers) = discoveries.rejected.split_at(in_distribution_pvalues.len());
        let false_discoveries = nulls.iter().filter(|&&r| r).count();
        let true_discoveries = outliers.iter().filter(|&&r| r).count();
        Ok(Self {
            fdr_level: level,
            n_calibration,
            n_in_distribution: in_distribution_pvalues.len(),
            n_out_of_distribution: out_of_distribution_pvalues.len(),
            discoveries: discoveries.count,
            false_discoveries,
            false_discovery_proportion: false_discoveries as f64 / discoveries.count.max(1) as f64,
            power: true_discoveries as f64 / out_of_distribution_pvalues.len() as f64,
            largest_rejected_pvalue: discoveries.largest_rejected_pvalue,
            in_distribution_pvalues,
            out_of_distribution_pvalues,
        })
    }
}

/// The OOD rows (of `out_of_distribution_rows`) that join `in_distribution_rows` tested
/// inputs so that they make up `share` of the batch, as near as whole rows allow and at least
/// one (module docs); all of them when there are too few. Sorted, seeded by `seed`.
///
/// # Errors
/// [`OodError::InvalidOodShare`] unless `0 < share < 1`; [`OodError::EmptyScores`]
/// ([`ScoreSet::OutOfDistribution`]) when there is no OOD row.
pub fn mixed_rows(
    out_of_distribution_rows: usize,
    in_distribution_rows: usize,
    share: f64,
    seed: u64,
) -> Result<Vec<usize>, OodError> {
    if !(share > 0.0 && share < 1.0) {
        return Err(OodError::InvalidOodShare(share));
    }
    if out_of_distribution_rows == 0 {
        return Err(OodError::EmptyScores(ScoreSet::OutOfDistribution));
    }
    let wanted = (share * in_distribution_rows as f64 / (1.0 - share)).round() as usize;
    let count = wanted.max(1).min(out_of_distribution_rows);
    let mut rows = seeded_permutation(out_of_distribution_rows, seed);
    rows.truncate(count);
    rows.sort_unstable();
    Ok(rows)
}

#[cfg(test)]
#[path = "ood_pvalues_tests.rs"]
mod tests;
