//! The LogitNorm lab's conformal p-values: each tested image's p-value under the chosen OOD
//! score, against in-distribution images held out for the purpose, and Benjamini–Hochberg over
//! a batch of test images with OOD images mixed in at the share slider's share; the realised
//! false discovery proportion and power, since which images are OOD is known here.
//!
//! # Which images calibrate, which are tested
//! * A logit score (MSP, max-logit, energy) or ODIN scores every test image the same way, so
//!   the calibration half calibrates and the evaluation half is tested, as
//!   `calibra ood --pvalues --seed <split>` splits them.
//! * A feature detector was fitted on the calibration half, so its scores of those images are
//!   not exchangeable with a new image's (KNN's distance of a calibration image to the
//!   calibration images is 0). The evaluation half is split again,
//!   `seeded_split(n_evaluation, ½, split)`: its first half calibrates, its second is tested.
//!
//! The OOD images joining the tested ones are [`ood_pvalues::mixed_rows`] of the chosen set,
//! seeded by the split. Formulas and sources: `ood_pvalues.rs`, docs/definitions.md
//! ("Conformal p-values and the false discovery rate").

use super::ood_view::{OodViewError, ScoreKind};
use super::{LabError, OodStore};
use crate::data;
use crate::ood::OodError;
use crate::ood_pvalues::{self, OutlierTest};

/// The FDR level slider's value until the reader moves it.
pub const DEFAULT_FDR_LEVEL: f64 = 0.1;
/// The OOD share slider's value until the reader moves it.
pub const DEFAULT_OOD_SHARE: f64 = 0.1;

/// What the p-values are computed from: one network's scores on one OOD set, at one
/// temperature, split, share and level. Equal requests give equal views, so the store keeps
/// the last one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PvalueRequest {
    pub model: usize,
    pub set: super::OodSet,
    pub kind: ScoreKind,
    pub temperature: f64,
    pub split: u64,
    pub ood_share: f64,
    pub fdr_level: f64,
}

/// One p-value of the batch, in the sorted order the chart draws.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SortedPvalue {
    pub pvalue: f64,
    /// Whether its image is one of the OOD set's.
    pub out_of_distribution: bool,
    /// Whether Benjamini–Hochberg declares it OOD.
    pub rejected: bool,
}

/// The outlier test of one batch and its p-values sorted.
#[derive(Clone, Debug, PartialEq)]
pub struct PvalueView {
    pub kind: ScoreKind,
    pub ood_share: f64,
    /// Counts, realised FDP and power, the p-values of each part.
    pub test: OutlierTest,
    /// Every p-value of the batch, increasing (ties: in-distribution first, then by row).
    pub sorted: Vec<SortedPvalue>,
    /// What every share's batch is drawn from.
    pvalues: Pvalues,
}

/// The p-values against the calibration scores of the tested in-distribution images
/// (increasing; in their order they are the test's) and of every OOD image of the set: a new
/// share draws other OOD rows from them, and none needs computing again.
#[derive(Clone, Debug, PartialEq)]
struct Pvalues {
    in_distribution_increasing: Vec<f64>,
    every_out_of_distribution: Vec<f64>,
}

impl PvalueView {
    /// The outlier test at `fdr_level` of the `in_distribution` scores and of the OOD scores
    /// [`ood_pvalues::mixed_rows`] draws (seeded by `seed`) for `ood_share`, against the
    /// `calibration` scores.
    ///
    /// # Errors
    /// [`OodError`] for a level or share outside `(0, 1)`, an empty or NaN set.
    pub fn new(
        kind: ScoreKind,
        (calibration, in_distribution): (&[f64], &[f64]),
        out_of_distribution: &[f64],
        (ood_share, fdr_level): (f64, f64),
        seed: u64,
    ) -> Result<Self, OodError> {
        // The test's first step over every OOD image at once; each share's batch is then a
        // choice of their p-values (`with_share`).
        let every = ood_pvalues::outlier_test(
            calibration,
            in_distribution,
            out_of_distribution,
            fdr_level,
        )?;
        let mut in_distribution_increasing = every.in_distribution_pvalues.clone();
        in_distribution_increasing.sort_by(f64::total_cmp);
        Self::of_batch(
            kind,
            (every.n_calibration, every.in_distribution_pvalues),
            Pvalues {
                in_distribution_increasing,
                every_out_of_distribution: every.out_of_distribution_pvalues,
            },
            (ood_share, fdr_level),
            seed,
        )
    }

    /// The same images' test with the OOD share `ood_share` at `fdr_level` (the OOD rows drawn
    /// as [`PvalueView::new`] draws them, seeded by `seed`): no p-value is computed again.
    ///
    /// # Errors
    /// [`OodError`] for a level or share outside `(0, 1)`.
    pub fn with_share(&self, ood_share: f64, fdr_level: f64, seed: u64) -> Result<Self, OodError> {
        Self::of_batch(
            self.kind,
            (
                self.test.n_calibration,
                self.test.in_distribution_pvalues.clone(),
            ),
            self.pvalues.clone(),
            (ood_share, fdr_level),
            seed,
        )
    }

    /// The batch of the tested images (`in_distribution`: their p-values against
    /// `n_calibration` scores, in their order) and the OOD rows of `pvalues` drawn for
    /// `ood_share`, tested at `fdr_level`.
    fn of_batch(
        kind: ScoreKind,
        (n_calibration, in_distribution): (usize, Vec<f64>),
        pvalues: Pvalues,
        (ood_share, fdr_level): (f64, f64),
        seed: u64,
    ) -> Result<Self, OodError> {
        let rows = ood_pvalues::mixed_rows(
            pvalues.every_out_of_distribution.len(),
            in_distribution.len(),
            ood_share,
            seed,
        )?;
        let mut mixed: Vec<f64> = rows
            .iter()
            .map(|&row| pvalues.every_out_of_distribution[row])
            .collect();
        let test = OutlierTest::at_level(n_calibration, in_distribution, mixed.clone(), fdr_level)?;
        // Both parts increasing, merged with the in-distribution p-value first on a tie: the
        // order a stable sort of the batch gives, without sorting it.
        mixed.sort_by(f64::total_cmp);
        let in_distribution = &pvalues.in_distribution_increasing;
        let mut sorted = Vec::with_capacity(in_distribution.len() + mixed.len());
        let (mut i, mut j) = (0, 0);
        while i < in_distribution.len() || j < mixed.len() {
            let from_nulls = j == mixed.len()
                || (i < in_distribution.len() && in_distribution[i].total_cmp(&mixed[j]).is_le());
            let (pvalue, out_of_distribution) = if from_nulls {
                i += 1;
                (in_distribution[i - 1], false)
            } else {
                j += 1;
                (mixed[j - 1], true)
            };
            sorted.push(SortedPvalue {
                pvalue,
                out_of_distribution,
                rejected: rejected(&test, pvalue),
            });
        }
        Ok(Self {
            kind,
            ood_share,
            test,
            sorted,
            pvalues,
        })
    }

    /// The same batch's test at `fdr_level`: Benjamini–Hochberg again on its p-values, which
    /// do not depend on the level.
    ///
    /// # Errors
    /// [`OodError`] for a level outside `(0, 1)`.
    pub fn at_level(&self, fdr_level: f64) -> Result<Self, OodError> {
        let test = OutlierTest::at_level(
            self.test.n_calibration,
            self.test.in_distribution_pvalues.clone(),
            self.test.out_of_distribution_pvalues.clone(),
            fdr_level,
        )?;
        let sorted = self
            .sorted
            .iter()
            .map(|p| SortedPvalue {
                rejected: rejected(&test, p.pvalue),
                ..*p
            })
            .collect();
        Ok(Self {
            kind: self.kind,
            ood_share: self.ood_share,
            test,
            sorted,
            pvalues: self.pvalues.clone(),
        })
    }

    /// `π₀`: the share of in-distribution images in the batch.
    pub fn null_share(&self) -> f64 {
        let nulls = self.test.n_in_distribution as f64;
        nulls / (nulls + self.test.n_out_of_distribution as f64)
    }

    /// `q·π₀`, the bound on the expected false discovery proportion.
    pub fn fdr_bound(&self) -> f64 {
        self.test.fdr_level * self.null_share()
    }

    /// What the chart draws: the smallest p-values, where BH decides. The x axis (rank ÷
    /// batch size) runs to `x_high = clamp(2·max(discoveries, OOD images)/m, 5%, 100%)`, the y
    /// axis to `y_high = min(2·q·x_high, 1)`, twice the BH line there; the p-values in that
    /// window as `(rank/m, p, OOD)`, at most `max_points` evenly spaced in rank.
    pub fn chart_window(&self, max_points: usize) -> ChartWindow {
        let count = self.sorted.len();
        let ranked = self.test.discoveries.max(self.test.n_out_of_distribution);
        let x_high = (2.0 * ranked as f64 / count as f64).clamp(0.05, 1.0);
        let y_high = (2.0 * self.test.fdr_level * x_high).min(1.0);
        let inside: Vec<(f64, f64, bool)> = self
            .sorted
            .iter()
            .enumerate()
            .map(|(i, p)| {
                (
                    (i + 1) as f64 / count as f64,
                    p.pvalue,
                    p.out_of_distribution,
                )
            })
            .take_while(|&(share, _, _)| share <= x_high)
            .filter(|&(_, p, _)| p <= y_high)
            .collect();
        let max_points = max_points.max(2);
        let points = if inside.len() <= max_points {
            inside
        } else {
            let mut picked: Vec<usize> = (0..max_points)
                .map(|j| j * (inside.len() - 1) / (max_points - 1))
                .collect();
            picked.dedup();
            picked.into_iter().map(|i| inside[i]).collect()
        };
        ChartWindow {
            x_high,
            y_high,
            points,
        }
    }
}

/// Whether Benjamini–Hochberg declares `pvalue` a discovery in `test`: every p-value up to the
/// largest one it rejected.
fn rejected(test: &OutlierTest, pvalue: f64) -> bool {
    test.largest_rejected_pvalue
        .is_some_and(|cutoff| pvalue <= cutoff)
}

/// The window of the sorted p-values the chart draws ([`PvalueView::chart_window`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ChartWindow {
    pub x_high: f64,
    pub y_high: f64,
    /// `(rank/m, p-value, whether the image is OOD)`, increasing in rank.
    pub points: Vec<(f64, f64, bool)>,
}

impl OodStore {
    /// The p-values of `request`, from the network's logits on every test image
    /// (`in_distribution`) and the split's calibration flags; the last ones are kept, a new
    /// FDR level on the same batch reruns Benjamini–Hochberg alone, and a new share on the
    /// same images draws its batch from the p-values kept.
    ///
    /// # Errors
    /// [`LabError::NotReady`] before the set's logits are complete, the view's errors (a score
    /// not computed yet: ODIN, a feature score), and [`OodError`]s as [`PvalueView::new`].
    pub fn pvalues(
        &mut self,
        request: PvalueRequest,
        in_distribution: &[f32],
        is_calibration: &[bool],
    ) -> Result<&PvalueView, LabError> {
        let kept = matches!(&self.pvalues, Some((kept, _)) if *kept == request);
        let same_batch = matches!(&self.pvalues,
            Some((kept, _)) if PvalueRequest { fdr_level: request.fdr_level, ..*kept } == request);
        let same_images = matches!(&self.pvalues,
            Some((kept, _)) if PvalueRequest {
                fdr_level: request.fdr_level,
                ood_share: request.ood_share,
                ..*kept
            } == request);
        if let (false, true, Some((_, view))) = (kept, same_batch, &self.pvalues) {
            let at_level = view
                .at_level(request.fdr_level)
                .map_err(OodViewError::from)?;
            self.pvalues = Some((request, at_level));
        } else if let (false, true, Some((_, view))) = (kept, same_images, &self.pvalues) {
            let with_share = view
                .with_share(request.ood_share, request.fdr_level, request.split)
                .map_err(OodViewError::from)?;
            self.pvalues = Some((request, with_share));
        } else if !kept {
            let view = self.view(
                request.model,
                request.set,
                request.temperature,
                in_distribution,
                request.split,
            )?;
            let (scores, out_of_distribution) = view.scores(request.kind)?;
            let halves =
                calibration_and_tested(request.kind, scores, is_calibration, request.split);
            let pvalues = PvalueView::new(
                request.kind,
                (&halves.0, &halves.1),
                out_of_distribution,
                (request.ood_share, request.fdr_level),
                request.split,
            )
            .map_err(OodViewError::from)?;
            self.pvalues = Some((request, pvalues));
        }
        match &self.pvalues {
            Some((_, view)) => Ok(view),
            None => Err(LabError::NotReady),
        }
    }
}

/// The calibration and tested in-distribution scores of `kind` (module docs): `scores` are a
/// logit score's or ODIN's of every test image (`is_calibration` flags the calibration half),
/// or a feature detector's of the evaluation half alone, split again with `seed`.
pub fn calibration_and_tested(
    kind: ScoreKind,
    scores: &[f64],
    is_calibration: &[bool],
    seed: u64,
) -> (Vec<f64>, Vec<f64>) {
    if kind.reads_features() {
        let (calibration, tested) = data::seeded_split(scores.len(), 0.5, seed);
        let pick = |rows: Vec<usize>| rows.into_iter().map(|row| scores[row]).collect();
        (pick(calibration), pick(tested))
    } else {
        let (calibration, tested): (Vec<(&f64, &bool)>, _) = scores
            .iter()
            .zip(is_calibration)
            .partition(|(_, &calibration)| calibration);
        let values = |part: Vec<(&f64, &bool)>| part.into_iter().map(|(&s, _)| s).collect();
        (values(calibration), values(tested))
    }
}

#[cfg(test)]
#[path = "pvalues_view_tests.rs"]
mod tests;
