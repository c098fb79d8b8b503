//! How far apart two detectors really are on the same images: the paired bootstrap of the
//! difference of their FPR95 and AUROC; and one detector's four metrics with their bootstrap
//! intervals ([`detection_intervals`], the same resamples for every detector of the same images).
//!
//! Two networks (LogitNorm and cross-entropy, say) score the *same* in-distribution and OOD
//! images, so their metrics share the images' noise. Each of `R` resamples draws `n_in` ID rows
//! and `n_out` OOD rows with replacement (`rng.random_range(0..n)` from ChaCha8 seeded with the
//! settings' seed: the ID rows first, then the OOD rows) and recomputes both networks' FPR95 and
//! AUROC **on the same rows**; the interval of `chosen − reference` is the percentile interval of
//! the `R` differences (Efron & Tibshirani, "An Introduction to the Bootstrap", 1993, ch. 13;
//! numpy's linear interpolation, as `bootstrap.rs`); each network's own FPR95 and AUROC get the
//! percentile interval of their `R` resampled values, from the same resamples. The ID and OOD rows are resampled
//! separately, so every resample keeps the sets' sizes, as the metrics' definitions need.
//!
//! The metrics are those of [`crate::ood`] (FPR95 at the `⌈0.95·n_in⌉`-th largest ID score,
//! ties in AUROC counting half), computed on the resample's counts: each network's scores are
//! sorted once, and every resample walks that order adding its counts, `O(n)` per resample and
//! network. With every count 1 the walk gives [`crate::ood::detection_metrics`]' values.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::bootstrap::{percentile, BootstrapError, BootstrapSettings, MetricInterval};
use crate::ood::{check_scores, OodError, ScoreSet, TARGET_TRUE_POSITIVE_PERCENT};

/// Why a paired difference was refused.
#[derive(Debug, Error, PartialEq)]
pub enum DifferenceError {
    /// A score set was empty or held a NaN.
    #[error(transparent)]
    Scores(#[from] OodError),
    /// The resample count or level was refused.
    #[error(transparent)]
    Settings(#[from] BootstrapError),
    /// The two networks did not score the same number of images.
    #[error("the two networks scored {chosen} and {reference} {set} images, not the same images")]
    UnpairedSets {
        set: ScoreSet,
        chosen: usize,
        reference: usize,
    },
}

/// The difference `chosen − reference` of FPR95 and AUROC, each with its paired bootstrap
/// percentile interval, and each network's own FPR95 and AUROC with their intervals from the
/// same resamples.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairedDifference {
    pub fpr95: MetricInterval,
    pub auroc: MetricInterval,
    pub chosen: DetectionIntervals,
    pub reference: DetectionIntervals,
}

/// One network's FPR95 and AUROC, each with its bootstrap percentile interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DetectionIntervals {
    pub fpr95: MetricInterval,
    pub auroc: MetricInterval,
}

/// One network's scores in decreasing order, as (row, is ID), with the end of each run of
/// equal scores.
struct Ranked {
    order: Vec<(u32, bool)>,
    group_ends: Vec<usize>,
}

impl Ranked {
    fn new(in_distribution: &[f64], out_of_distribution: &[f64]) -> Self {
        let mut scored: Vec<(f64, u32, bool)> = in_distribution
            .iter()
            .zip(0..)
            .map(|(&score, row)| (score, row, true))
            .chain(
                out_of_distribution
                    .iter()
                    .zip(0..)
                    .map(|(&score, row)| (score, row, false)),
            )
            .collect();
        scored.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
        let mut group_ends = Vec::new();
        for (position, pair) in scored.windows(2).enumerate() {
            // `!=`, not `total_cmp`: −0.0 and 0.0 are one score, as in `ood.rs`.
            if pair[0].0 != pair[1].0 {
                group_ends.push(position + 1);
            }
        }
        group_ends.push(scored.len());
        Self {
            order: scored
                .into_iter()
                .map(|(_, row, is_in)| (row, is_in))
                .collect(),
            group_ends,
        }
    }

    /// FPR95, AUROC, AUPR-In and AUPR-Out when ID row i counts `in_counts[i]` times and OOD
    /// row j `out_counts[j]` times (FPR95 and AUROC in integer arithmetic, as `ood.rs`; the
    /// average precisions as `ood.rs` sums them, one step per group of equal scores).
    fn metrics(&self, in_counts: &[u32], out_counts: &[u32]) -> [f64; 4] {
        let total_in: u64 = in_counts.iter().map(|&c| u64::from(c)).sum();
        let total_out: u64 = out_counts.iter().map(|&c| u64::from(c)).sum();
        let required = (TARGET_TRUE_POSITIVE_PERCENT as u64 * total_in).div_ceil(100);
        let (mut in_above, mut out_above) = (0_u64, 0_u64);
        let mut fpr95 = None;
        let mut twice_u = 0_u64;
        let mut aupr_in = 0.0;
        let mut groups = Vec::with_capacity(self.group_ends.len());
        let mut start = 0;
        for &end in &self.group_ends {
            let (mut in_here, mut out_here) = (0_u64, 0_u64);
            for &(row, is_in) in &self.order[start..end] {
                if is_in {
                    in_here += u64::from(in_counts[row as usize]);
                } else {
                    out_here += u64::from(out_counts[row as usize]);
                }
            }
            // Pairs with the OOD image here and the ID image above, ties counting half.
            twice_u += out_here * (2 * in_above + in_here);
            in_above += in_here;
            out_above += out_here;
            if in_here > 0 {
                aupr_in += in_here as f64 / total_in as f64 * in_above as f64
                    / (in_above + out_above) as f64;
            }
            if fpr95.is_none() && in_above >= required {
                fpr95 = Some(out_above as f64 / total_out as f64);
            }
            groups.push((in_here, out_here));
            start = end;
        }
        // AUPR-Out: OOD positive, the lowest scores first.
        let (mut in_below, mut out_below, mut aupr_out) = (0_u64, 0_u64, 0.0);
        for &(in_here, out_here) in groups.iter().rev() {
            in_below += in_here;
            out_below += out_here;
            if out_here > 0 {
                aupr_out += out_here as f64 / total_out as f64 * out_below as f64
                    / (in_below + out_below) as f64;
            }
        }
        let auroc = twice_u as f64 / (2.0 * total_in as f64 * total_out as f64);
        [fpr95.unwrap_or(1.0), auroc, aupr_in, aupr_out]
    }
}

/// `R` resamples of `n_in` ID rows and `n_out` OOD rows with replacement (module
/// documentation), each given to `metrics` as the rows' counts: the `M` values it returns, one
/// list a value, sorted.
fn resampled<const M: usize>(
    n_in: usize,
    n_out: usize,
    settings: &BootstrapSettings,
    metrics: impl Fn(&[u32], &[u32]) -> [f64; M],
) -> [Vec<f64>; M] {
    let mut rng = ChaCha8Rng::seed_from_u64(settings.seed);
    let (mut in_counts, mut out_counts) = (vec![0_u32; n_in], vec![0_u32; n_out]);
    let mut draws: [Vec<f64>; M] = std::array::from_fn(|_| Vec::with_capacity(settings.resamples));
    for _ in 0..settings.resamples {
        in_counts.fill(0);
        out_counts.fill(0);
        for _ in 0..n_in {
            in_counts[rng.random_range(0..n_in)] += 1;
        }
        for _ in 0..n_out {
            out_counts[rng.random_range(0..n_out)] += 1;
        }
        for (draw, value) in draws.iter_mut().zip(metrics(&in_counts, &out_counts)) {
            draw.push(value);
        }
    }
    draws
        .iter_mut()
        .for_each(|values| values.sort_unstable_by(f64::total_cmp));
    draws
}

/// The percentile interval at `settings.level` of the sorted `values` around `estimate`.
fn interval(values: &[f64], estimate: f64, settings: &BootstrapSettings) -> MetricInterval {
    MetricInterval {
        estimate,
        lower: percentile(values, (1.0 - settings.level) / 2.0),
        upper: percentile(values, (1.0 + settings.level) / 2.0),
    }
}

/// One detector's FPR95, AUROC, AUPR-In and AUPR-Out, each with its bootstrap percentile
/// interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DetectionMetricIntervals {
    pub fpr95: MetricInterval,
    pub auroc: MetricInterval,
    pub aupr_in: MetricInterval,
    pub aupr_out: MetricInterval,
}

/// The four detection metrics of one detector's (ID scores, OOD scores) with their bootstrap
/// percentile intervals (module documentation: the ID and OOD rows resampled separately). The
/// estimates are [`crate::ood::detection_metrics`]'. Two detectors scored on the same images
/// with the same settings are resampled on the same rows.
///
/// # Errors
/// [`DifferenceError::Scores`] for an empty score set or a NaN score,
/// [`DifferenceError::Settings`] for a resample count outside 2 to 10,000 or a level outside
/// (0, 1).
pub fn detection_intervals(
    in_distribution: &[f64],
    out_of_distribution: &[f64],
    settings: &BootstrapSettings,
) -> Result<DetectionMetricIntervals, DifferenceError> {
    let estimate = crate::ood::detection_metrics(in_distribution, out_of_distribution)?;
    crate::bootstrap::check_settings(settings)?;
    let ranked = Ranked::new(in_distribution, out_of_distribution);
    let [fpr95, auroc, aupr_in, aupr_out] = resampled(
        in_distribution.len(),
        out_of_distribution.len(),
        settings,
        |in_counts, out_counts| ranked.metrics(in_counts, out_counts),
    );
    Ok(DetectionMetricIntervals {
        fpr95: interval(&fpr95, estimate.fpr95, settings),
        auroc: interval(&auroc, estimate.auroc, settings),
        aupr_in: interval(&aupr_in, estimate.aupr_in, settings),
        aupr_out: interval(&aupr_out, estimate.aupr_out, settings),
    })
}

/// The paired bootstrap of `chosen − reference` in FPR95 and AUROC, each network given as (ID
/// scores, OOD scores) of the same images in the same order.
///
/// # Errors
/// [`DifferenceError::Scores`] for an empty set or a NaN (chosen network first, ID set first),
/// [`DifferenceError::UnpairedSets`] when the networks' sets differ in size, and
/// [`DifferenceError::Settings`] for a resample count outside 2 to 10,000 or a level outside
/// (0, 1).
pub fn paired_difference(
    chosen: (&[f64], &[f64]),
    reference: (&[f64], &[f64]),
    settings: &BootstrapSettings,
) -> Result<PairedDifference, DifferenceError> {
    for (a, b) in [chosen, reference] {
        check_scores(a, ScoreSet::InDistribution)?;
        check_scores(b, ScoreSet::OutOfDistribution)?;
    }
    check_paired(chosen, reference)?;
    crate::bootstrap::check_settings(settings)?;
    let (n_in, n_out) = (chosen.0.len(), chosen.1.len());
    let ranked = [
        Ranked::new(chosen.0, chosen.1),
        Ranked::new(reference.0, reference.1),
    ];
    // Per resample: chosen's (FPR95, AUROC), reference's, and their difference.
    let metrics = |in_counts: &[u32], out_counts: &[u32]| {
        let [a, b] = ranked.each_ref().map(|r| r.metrics(in_counts, out_counts));
        [a[0], a[1], b[0], b[1], a[0] - b[0], a[1] - b[1]]
    };
    let estimate = metrics(&vec![1; n_in], &vec![1; n_out]);
    let draws = resampled(n_in, n_out, settings, metrics);
    let [chosen, reference, difference] = std::array::from_fn(|i| DetectionIntervals {
        fpr95: interval(&draws[2 * i], estimate[2 * i], settings),
        auroc: interval(&draws[2 * i + 1], estimate[2 * i + 1], settings),
    });
    Ok(PairedDifference {
        fpr95: difference.fpr95,
        auroc: difference.auroc,
        chosen,
        reference,
    })
}

/// Whether two detectors' (ID scores, OOD scores) are of as many images each.
///
/// # Errors
/// [`DifferenceError::UnpairedSets`] for the first set whose sizes differ (ID first).
pub(crate) fn check_paired(
    chosen: (&[f64], &[f64]),
    reference: (&[f64], &[f64]),
) -> Result<(), DifferenceError> {
    for (set, a, b) in [
        (ScoreSet::InDistribution, chosen.0.len(), reference.0.len()),
        (
            ScoreSet::OutOfDistribution,
            chosen.1.len(),
            reference.1.len(),
        ),
    ] {
        if a != b {
            return Err(DifferenceError::UnpairedSets {
                set,
                chosen: a,
                reference: b,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "ood_difference_tests.rs"]
mod tests;
