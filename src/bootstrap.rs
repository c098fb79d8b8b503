//! Bootstrap percentile intervals for the calibration metrics of one set of logits and labels.
//!
//! # What it computes
//! The nonparametric bootstrap (Efron, "Bootstrap methods: another look at the jackknife",
//! Annals of Statistics 1979; Efron & Tibshirani, "An Introduction to the Bootstrap", 1993,
//! ch. 13): each of `R` resamples draws `n` rows with replacement from the `n` rows, uniformly
//! (`rng.random_range(0..n)` from ChaCha8 seeded with `seed`), and recomputes the metric. The
//! interval at level `1 − a` is the percentile interval `[q_{a/2}, q_{1−a/2}]` of the `R`
//! recomputed values, each quantile interpolated linearly between order statistics (position
//! `q·(R − 1)` in the sorted values, numpy's default). The metrics, at one temperature:
//!
//! * binned top-label ECE ([`calibration::reliability_bins`]),
//! * smECE at its own fixed-point bandwidth, chosen again on every resample
//!   ([`smooth_calibration::smooth_ece`]),
//! * NLL and Brier score (means of per-row values, as [`calibration::evaluate`]),
//! * the estimators of [`calibration_estimators`] that are errors rather than tests: Kumar et
//!   al.'s debiased L2 error on the ECE's bins, Gupta & Ramdas's top-label ECE (each predicted
//!   class on its own bins) and Gupta et al.'s KS error (the cumulative differences sorted
//!   again in every resample). The three tests have p-values instead of intervals.
//!
//! Rows are drawn once per resample and shared by the seven metrics. [`ece_nll_intervals`] gives
//! the first and third alone from rows a recalibration other than one temperature computed,
//! from the same draws, and [`paired_ece_nll_difference`] the difference of two
//! recalibrations' ECE and NLL, drawing the same rows for both. The same seed gives the same
//! intervals on every platform. Definitions: docs/definitions.md.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use statrs::distribution::{Binomial, DiscreteCDF};
use thiserror::Error;

use crate::calibration::{self, Binning, CalibrationError, Logits};
use crate::calibration_estimators::{self, CumulativeDifferences};
use crate::smooth_calibration::{self, SmoothEce, SmoothReliability};

/// Resamples of the page and the CLI.
pub const DEFAULT_RESAMPLES: usize = 100;
/// Level of the page's and the CLI's intervals.
pub const DEFAULT_LEVEL: f64 = 0.95;
/// Most resamples [`bootstrap_intervals`] accepts.
pub const MAX_RESAMPLES: usize = 10_000;

/// Why bootstrap intervals were refused.
#[derive(Debug, Error, PartialEq)]
pub enum BootstrapError {
    /// The logits, labels, temperature or bins were refused.
    #[error(transparent)]
    Calibration(#[from] CalibrationError),
    /// Fewer than 2 or more than [`MAX_RESAMPLES`] resamples.
    #[error("the number of resamples must be between 2 and 10000, got {0}")]
    InvalidResampleCount(usize),
    /// The level is not strictly between 0 and 1.
    #[error("the interval's level must be strictly between 0 and 1, got {0}")]
    InvalidLevel(f64),
    /// Resample counts drawn for another number of rows than the band is asked for.
    #[error("the resamples were drawn for {drawn_for} rows, not the {rows} given")]
    ResampledRowMismatch { drawn_for: usize, rows: usize },
    /// One row drawn more often in one resample than its count can hold.
    #[error("row {row} was drawn more than 65535 times in one resample")]
    DrawnTooOften { row: usize },
    /// A proportion of no examples, or with more successes than examples.
    #[error("a proportion needs 0 <= successes <= n and n > 0, got {successes} of {n}")]
    InvalidProportion { successes: usize, n: usize },
}

/// How many resamples, at which level, from which seed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BootstrapSettings {
    /// Number of resamples `R`, 2 to [`MAX_RESAMPLES`].
    pub resamples: usize,
    /// Level of the percentile interval, strictly between 0 and 1 (0.9: from the 5th to the
    /// 95th percentile).
    pub level: f64,
    /// Seed of the ChaCha8 generator that draws the rows.
    pub seed: u64,
}

/// A metric on all rows and its bootstrap percentile interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricInterval {
    /// The metric on the rows as given.
    pub estimate: f64,
    /// The `(1 − level)/2` percentile of the resampled values.
    pub lower: f64,
    /// The `(1 + level)/2` percentile of the resampled values.
    pub upper: f64,
}

/// Bootstrap intervals of the seven metrics, each named as `calibra report --json` names the
/// metric.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricIntervals {
    /// Binned top-label ECE.
    pub ece: MetricInterval,
    /// smECE at its fixed-point bandwidth.
    pub smece: MetricInterval,
    /// Mean negative log-likelihood.
    pub nll: MetricInterval,
    /// Mean Brier score.
    pub brier: MetricInterval,
    /// Kumar et al.'s debiased L2 calibration error, on the ECE's bins.
    pub ece_debiased: MetricInterval,
    /// Gupta & Ramdas's top-label ECE, on the ECE's bins.
    pub top_label_ece: MetricInterval,
    /// Gupta et al.'s KS calibration error.
    pub ks_error: MetricInterval,
}

/// ECE and NLL with their bootstrap intervals ([`ece_nll_intervals`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct EceNllIntervals {
    /// Binned top-label ECE.
    pub ece: MetricInterval,
    /// Mean negative log-likelihood.
    pub nll: MetricInterval,
}

/// Per-row values the metrics are computed from.
struct Rows {
    confidence: Vec<f64>,
    correct: Vec<bool>,
    predicted: Vec<u32>,
    nll: Vec<f64>,
    brier: Vec<f64>,
}

/// The seven metrics of some rows of `num_classes` classes, in the order ECE, smECE, NLL,
/// Brier, debiased L2 error, top-label ECE, KS error.
fn metrics(
    rows: &Rows,
    num_classes: usize,
    num_bins: usize,
    binning: Binning,
) -> Result<[f64; 7], CalibrationError> {
    let bins = calibration::reliability_bins(&rows.confidence, &rows.correct, num_bins, binning)?;
    let mean = |values: &[f64]| values.iter().sum::<f64>() / values.len() as f64;
    Ok([
        calibration::expected_calibration_error(&bins),
        smooth_calibration::smooth_ece(&rows.confidence, &rows.correct)?.smece,
        mean(&rows.nll),
        mean(&rows.brier),
        calibration_estimators::debiased_l2_calibration_error(&bins),
        calibration_estimators::top_label_ece(
            &rows.confidence,
            &rows.correct,
            &rows.predicted,
            num_classes,
            num_bins,
            binning,
        )?
        .value,
        CumulativeDifferences::new(&rows.confidence, &rows.correct)?.ks_error(),
    ])
}

/// Bootstrap percentile intervals of ECE (with `num_bins` bins of kind `binning`), smECE, NLL,
/// Brier score, the debiased L2 error and the top-label ECE (on the same bins) and the KS error
/// at temperature `temperature`.
///
/// # Errors
/// [`BootstrapError::InvalidResampleCount`] and [`BootstrapError::InvalidLevel`] for the
/// settings, and as [`BootstrapError::Calibration`] the errors of [`calibration::evaluate`].
pub fn bootstrap_intervals(
    logits: &Logits,
    labels: &[u32],
    temperature: f64,
    num_bins: usize,
    binning: Binning,
    settings: &BootstrapSettings,
) -> Result<MetricIntervals, BootstrapError> {
    check_settings(settings)?;
    let (confidence, correct) = calibration::confidences(logits, labels, temperature)?;
    let mut probabilities = vec![0.0; logits.num_classes()];
    let (nll, brier) = logits
        .rows()
        .zip(labels)
        .map(|(row, &label)| {
            let label = label as usize;
            let normaliser = calibration::softmax_row(row, temperature, &mut probabilities);
            let brier = probabilities
                .iter()
                .enumerate()
                .map(|(class, &p)| (p - f64::from(class == label)).powi(2))
                .sum::<f64>();
            (-normaliser.log_probability(row[label]), brier)
        })
        .unzip();
    let all = Rows {
        confidence,
        correct,
        predicted: calibration_estimators::predicted_classes(logits),
        nll,
        brier,
    };
    let num_classes = logits.num_classes();
    let [ece, smece, nll, brier, ece_debiased, top_label_ece, ks_error] =
        percentile_intervals([&all], settings, |[rows]| {
            metrics(rows, num_classes, num_bins, binning)
        })?;
    Ok(MetricIntervals {
        ece,
        smece,
        nll,
        brier,
        ece_debiased,
        top_label_ece,
        ks_error,
    })
}

/// One recalibration's rows as the ECE and NLL are computed from them: each row's
/// confidence in its predicted class, whether that class is the label, and its NLL.
#[derive(Clone, Copy, Debug)]
pub struct ScoredRows<'a> {
    pub confidence: &'a [f64],
    pub correct: &'a [bool],
    pub nll: &'a [f64],
}

impl ScoredRows<'_> {
    /// The columns as resampled rows.
    ///
    /// # Errors
    /// [`CalibrationError::ConfidenceCountMismatch`] for columns of different lengths.
    fn to_rows(self) -> Result<Rows, CalibrationError> {
        if let Some(&outcomes) = [self.correct.len(), self.nll.len()]
            .iter()
            .find(|&&len| len != self.confidence.len())
        {
            return Err(CalibrationError::ConfidenceCountMismatch {
                confidences: self.confidence.len(),
                outcomes,
            });
        }
        Ok(Rows {
            confidence: self.confidence.to_vec(),
            correct: self.correct.to_vec(),
            predicted: Vec::new(),
            nll: self.nll.to_vec(),
            brier: Vec::new(),
        })
    }
}

/// Binned ECE and mean NLL of some rows.
fn ece_and_nll(
    rows: &Rows,
    num_bins: usize,
    binning: Binning,
) -> Result<[f64; 2], CalibrationError> {
    let bins = calibration::reliability_bins(&rows.confidence, &rows.correct, num_bins, binning)?;
    Ok([
        calibration::expected_calibration_error(&bins),
        rows.nll.iter().sum::<f64>() / rows.nll.len() as f64,
    ])
}

/// Bootstrap percentile intervals of binned ECE (with `num_bins` bins of kind `binning`) and
/// mean NLL of `rows`: those of a recalibration other than one temperature
/// (`recalibration::bootstrap_ece_nll`). The resamples are [`bootstrap_intervals`]' for as many
/// rows and the same settings, so at one temperature its ECE and NLL intervals are these.
///
/// # Errors
/// [`BootstrapError::InvalidResampleCount`] and [`BootstrapError::InvalidLevel`] for the
/// settings, and as [`BootstrapError::Calibration`] [`CalibrationError::ConfidenceCountMismatch`]
/// for columns of different lengths and the errors of [`calibration::reliability_bins`].
pub fn ece_nll_intervals(
    rows: ScoredRows<'_>,
    num_bins: usize,
    binning: Binning,
    settings: &BootstrapSettings,
) -> Result<EceNllIntervals, BootstrapError> {
    check_settings(settings)?;
    let [ece, nll] = percentile_intervals([&rows.to_rows()?], settings, |[rows]| {
        ece_and_nll(rows, num_bins, binning)
    })?;
    Ok(EceNllIntervals { ece, nll })
}

/// The paired bootstrap of two recalibrations of the same rows: ECE (with `num_bins` bins of
/// kind `binning`) and mean NLL of `first` minus those of `second`, each with its percentile
/// interval over resamples that draw the same rows for both (so that what the rows share,
/// their hard and easy images, cancels in the difference). A difference whose interval holds
/// 0 is one these rows cannot tell from noise. The resamples are [`ece_nll_intervals`]'.
///
/// # Errors
/// Those of [`ece_nll_intervals`], and [`BootstrapError::ResampledRowMismatch`] when the two
/// have different numbers of rows.
pub fn paired_ece_nll_difference(
    first: ScoredRows<'_>,
    second: ScoredRows<'_>,
    num_bins: usize,
    binning: Binning,
    settings: &BootstrapSettings,
) -> Result<EceNllIntervals, BootstrapError> {
    check_settings(settings)?;
    if first.confidence.len() != second.confidence.len() {
        return Err(BootstrapError::ResampledRowMismatch {
            drawn_for: first.confidence.len(),
            rows: second.confidence.len(),
        });
    }
    let both = [&first.to_rows()?, &second.to_rows()?];
    let [ece, nll] = percentile_intervals(both, settings, |[first, second]| {
        let ([ece_1, nll_1], [ece_2, nll_2]) = (
            ece_and_nll(first, num_bins, binning)?,
            ece_and_nll(second, num_bins, binning)?,
        );
        Ok([ece_1 - ece_2, nll_1 - nll_2])
    })?;
    Ok(EceNllIntervals { ece, nll })
}

/// The `M` metrics of the `P` row sets `all` (of equal lengths) and their percentile intervals
/// over `settings.resamples` resamples, each drawing the same rows from every set (a column
/// left empty, as the predicted classes' and Brier's where they are not measured, is not
/// resampled).
fn percentile_intervals<const P: usize, const M: usize>(
    all: [&Rows; P],
    settings: &BootstrapSettings,
    metrics: impl Fn([&Rows; P]) -> Result<[f64; M], CalibrationError>,
) -> Result<[MetricInterval; M], BootstrapError> {
    let estimates = metrics(all)?;
    let n = all[0].confidence.len();
    let mut rng = ChaCha8Rng::seed_from_u64(settings.seed);
    let mut resamples: [Rows; P] = std::array::from_fn(|set| Rows {
        confidence: vec![0.0; n],
        correct: vec![false; n],
        predicted: vec![0; all[set].predicted.len()],
        nll: vec![0.0; n],
        brier: vec![0.0; all[set].brier.len()],
    });
    let mut values: [Vec<f64>; M] = std::array::from_fn(|_| Vec::with_capacity(settings.resamples));
    for _ in 0..settings.resamples {
        for slot in 0..n {
            let row = rng.random_range(0..n);
            for (resample, all) in resamples.iter_mut().zip(all) {
                resample.confidence[slot] = all.confidence[row];
                resample.correct[slot] = all.correct[row];
                resample.nll[slot] = all.nll[row];
                if let Some(&predicted) = all.predicted.get(row) {
                    resample.predicted[slot] = predicted;
                }
                if let Some(&brier) = all.brier.get(row) {
                    resample.brier[slot] = brier;
                }
            }
        }
        for (list, value) in values.iter_mut().zip(metrics(resamples.each_ref())?) {
            list.push(value);
        }
    }
    let tail = 0.5 * (1.0 - settings.level);
    Ok(std::array::from_fn(|m| {
        let sorted = &mut values[m];
        sorted.sort_unstable_by(f64::total_cmp);
        MetricInterval {
            estimate: estimates[m],
            lower: percentile(sorted, tail),
            upper: percentile(sorted, 1.0 - tail),
        }
    }))
}

/// The rows that each of a bootstrap's resamples draws, as counts: how often resample `r`
/// drew row `i`. They depend only on the number of rows and the settings, not on the values,
/// so a page that redraws the band at every temperature draws them once per set of rows. The
/// draws are those of [`bootstrap_intervals`]: `n` rows with replacement per resample,
/// `rng.random_range(0..n)` from ChaCha8 seeded with the settings' seed.
#[derive(Clone, Debug, PartialEq)]
pub struct Resamples {
    settings: BootstrapSettings,
    rows: usize,
    /// Row-major `[rows, resamples]`: each row's counts in all resamples side by side, the
    /// layout the band's curves are binned from.
    counts: Vec<u16>,
}

impl Resamples {
    /// Draws `settings.resamples` resamples of `rows` rows.
    ///
    /// # Errors
    /// [`BootstrapError::InvalidResampleCount`] and [`BootstrapError::InvalidLevel`] for the
    /// settings, [`CalibrationError::EmptyInput`] (as [`BootstrapError::Calibration`]) for no
    /// rows, and [`BootstrapError::DrawnTooOften`] should one row be drawn more than 65,535
    /// times in one resample (possible only beyond 65,535 rows, and then with a probability
    /// far below 10⁻¹⁰⁰).
    pub fn draw(rows: usize, settings: &BootstrapSettings) -> Result<Self, BootstrapError> {
        check_settings(settings)?;
        if rows == 0 {
            return Err(CalibrationError::EmptyInput.into());
        }
        let resamples = settings.resamples;
        let mut rng = ChaCha8Rng::seed_from_u64(settings.seed);
        let mut counts = vec![0_u16; rows * resamples];
        for resample in 0..resamples {
            for _ in 0..rows {
                let row = rng.random_range(0..rows);
                let count = &mut counts[row * resamples + resample];
                *count = count
                    .checked_add(1)
                    .ok_or(BootstrapError::DrawnTooOften { row })?;
            }
        }
        Ok(Self {
            settings: *settings,
            rows,
            counts,
        })
    }

    /// The number of rows each resample draws from.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The settings they were drawn with.
    pub fn settings(&self) -> &BootstrapSettings {
        &self.settings
    }
}

/// The pointwise bootstrap band of the smooth reliability curve.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReliabilityBand {
    /// The band's level: it holds this share of the resampled curves at each point.
    pub level: f64,
    /// The `(1 − level)/2` percentile of the resampled curves at each point.
    pub lower: Vec<f64>,
    /// The `(1 + level)/2` percentile of the resampled curves at each point.
    pub upper: Vec<f64>,
}

/// The pointwise percentile band of the smooth reliability curve at bandwidth `bandwidth`, on
/// `points` equally spaced confidences from 0 to 1 (those of
/// [`smooth_calibration::smooth_reliability`]), over the rows `resamples` draws.
///
/// As relplot's diagram draws it, every resample keeps the bandwidth of the full sample
/// (choosing it again would mix the noise of the data with that of the bandwidth search), and
/// its curve is taken on the coarser grid of
/// [`smooth_calibration::BAND_STEPS_PER_BANDWIDTH`] steps per bandwidth (at least
/// [`smooth_calibration::BAND_MIN_GRID_STEPS`]).
///
/// # Errors
/// [`BootstrapError::ResampledRowMismatch`] unless `resamples` was drawn for as many rows as
/// there are confidences, and as [`BootstrapError::Calibration`] the errors of
/// [`smooth_calibration::smooth_reliability`].
pub fn smooth_reliability_band(
    confidence: &[f64],
    correct: &[bool],
    bandwidth: f64,
    points: usize,
    resamples: &Resamples,
) -> Result<ReliabilityBand, BootstrapError> {
    smooth_calibration::check_bandwidth(bandwidth)?;
    if !(2..=smooth_calibration::MAX_CURVE_POINTS).contains(&points) {
        return Err(CalibrationError::InvalidPointCount(points).into());
    }
    calibration::check_confidences(confidence, correct)?;
    if resamples.rows != confidence.len() {
        return Err(BootstrapError::ResampledRowMismatch {
            drawn_for: resamples.rows,
            rows: confidence.len(),
        });
    }
    let resampler = smooth_calibration::CurveResampler::new(confidence, correct, bandwidth, points);
    let count = resamples.settings.resamples;
    let mut curves = resampler.curves(&resamples.counts, count);
    let level = resamples.settings.level;
    let tail = 0.5 * (1.0 - level);
    let (lower, upper) = curves
        .chunks_exact_mut(count)
        .map(|values| {
            values.sort_unstable_by(f64::total_cmp);
            (percentile(values, tail), percentile(values, 1.0 - tail))
        })
        .unzip();
    Ok(ReliabilityBand {
        level,
        lower,
        upper,
    })
}

/// The smooth reliability diagram as the page, the CLI's figures and the README draw it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SmoothDiagram {
    /// smECE and the bandwidth its search chose.
    pub ece: SmoothEce,
    /// The curve and the density at that bandwidth.
    pub curve: SmoothReliability,
    /// The bootstrap band around the curve, when resamples were given.
    pub band: Option<ReliabilityBand>,
}

/// smECE, the smooth reliability curve at its bandwidth on `points` points, and, given
/// `resamples`, the band over them around it: the one way the page and the figures compute the
/// diagram. The band is most of the arithmetic (a curve per resample), so the page asks for it
/// only when the diagram is on screen.
///
/// # Errors
/// As [`smooth_reliability_band`].
pub fn smooth_diagram(
    confidence: &[f64],
    correct: &[bool],
    points: usize,
    resamples: Option<&Resamples>,
) -> Result<SmoothDiagram, BootstrapError> {
    let (ece, curve) = smooth_calibration::smooth_ece_and_reliability(confidence, correct, points)?;
    let band = resamples
        .map(|resamples| {
            smooth_reliability_band(confidence, correct, ece.bandwidth, points, resamples)
        })
        .transpose()?;
    Ok(SmoothDiagram { ece, curve, band })
}

/// The percentile bootstrap interval of a proportion `successes / n` (a coverage, an accuracy),
/// computed exactly: a resample's proportion is `Binomial(n, p̂)/n` with `p̂ = successes/n`, so
/// its `(1 − level)/2` and `(1 + level)/2` quantiles (the smallest `k/n` whose binomial
/// cumulative probability reaches them, statrs' `inverse_cdf`) are where infinitely many
/// resamples would put the interval; no draws, so it costs nothing in a frame.
///
/// # Errors
/// [`BootstrapError::InvalidProportion`] unless `0 ≤ successes ≤ n` and `n > 0`, and
/// [`BootstrapError::InvalidLevel`].
pub fn proportion_interval(
    successes: usize,
    n: usize,
    level: f64,
) -> Result<MetricInterval, BootstrapError> {
    if n == 0 || successes > n {
        return Err(BootstrapError::InvalidProportion { successes, n });
    }
    if !(level > 0.0 && level < 1.0) {
        return Err(BootstrapError::InvalidLevel(level));
    }
    let estimate = successes as f64 / n as f64;
    let resampled = Binomial::new(estimate, n as u64)
        .map_err(|_| BootstrapError::InvalidProportion { successes, n })?;
    let tail = 0.5 * (1.0 - level);
    let quantile = |q: f64| resampled.inverse_cdf(q) as f64 / n as f64;
    Ok(MetricInterval {
        estimate,
        lower: quantile(tail),
        upper: quantile(1.0 - tail),
    })
}

pub(crate) fn check_settings(settings: &BootstrapSettings) -> Result<(), BootstrapError> {
    if !(2..=MAX_RESAMPLES).contains(&settings.resamples) {
        return Err(BootstrapError::InvalidResampleCount(settings.resamples));
    }
    if !(settings.level > 0.0 && settings.level < 1.0) {
        return Err(BootstrapError::InvalidLevel(settings.level));
    }
    Ok(())
}

/// The `q`-quantile of sorted values (at least one), interpolated linearly at position
/// `q·(R − 1)`.
pub(crate) fn percentile(sorted: &[f64], q: f64) -> f64 {
    let position = q * (sorted.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = (below + 1).min(sorted.len() - 1);
    let share = position - below as f64;
    sorted[below] + share * (sorted[above] - sorted[below])
}

#[cfg(test)]
#[path = "bootstrap_tests.rs"]
mod tests;
