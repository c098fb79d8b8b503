//! Smooth ECE and the smooth reliability diagram: kernel regression of the residual on the
//! confidence instead of bins.
//!
//! # What it computes
//! Błasiok & Nakkiran, "Smooth ECE: Principled Reliability Diagrams via Kernel Smoothing",
//! ICLR 2024 (the definition of their library relplot). For confidences `f_i ∈ [0, 1]` and
//! outcomes `y_i ∈ {0, 1}` (1 when the top label is correct), with residuals `r_i = y_i − f_i`:
//!
//! * the **reflected Gaussian kernel** of bandwidth `σ` on `[0, 1]` folds the normal density
//!   `φ_σ` back into the interval at both ends:
//!   `K_σ(t, f) = Σ_{k ∈ Z} φ_σ(t − f − 2k) + φ_σ(t + f − 2k)`, so `∫_0^1 K_σ(t, f) dt = 1`;
//! * the **density** of the confidences `δ̂_σ(t) = (1/n) Σ_i K_σ(t, f_i)`;
//! * the **smoothed residual** (Nadaraya–Watson) `r̂_σ(t) = Σ_i K_σ(t, f_i) r_i / Σ_i K_σ(t, f_i)`,
//!   and the smooth reliability curve `t + r̂_σ(t)`, the mean correctness near confidence `t`;
//! * `smECE_σ = ∫_0^1 |r̂_σ(t)| δ̂_σ(t) dt = ∫_0^1 |Σ_i K_σ(t, f_i) r_i| dt / ∫_0^1 Σ_i K_σ(t, f_i) dt`;
//! * **smECE** `= smECE_σ*` at the fixed point `smECE_σ* = σ*`, found as relplot finds it: 10
//!   bisection steps on `(0, 1]`, a step at `σ` moving up when `σ < 0.001` or `smECE_σ > σ`,
//!   and the result is the upper end of the final bracket (a multiple of `2⁻¹⁰`, at least
//!   `2⁻⁹`) with `smECE_σ` there, which is then at most `σ`.
//!
//! # Discretisation
//! The integrals are taken on a grid of `M + 1` points `t_j = j/M` with
//! `M = max(200, ⌈20/σ⌉)` (at least 20 grid steps per bandwidth). Each example is split
//! between its two neighbouring grid points in proportion to its distance to each (linear
//! binning, Wand, "Fast computation of multivariate kernel estimators", JCGS 1994); the
//! binned weights are convolved with `φ_σ` sampled on the grid and cut at `6σ` (the normal
//! mass beyond is `2·10⁻⁹`), the kernel's images reflected back into `[0, 1]`; the integrals
//! are trapezoid sums. Since `smECE_σ` is a ratio of two such sums, the normal's constant and
//! the quadrature's share cancel, and a constant confidence with constant accuracy gives
//! `|accuracy − confidence|` exactly.
//!
//! relplot 1.0.3 discretises the same definition but reflects its grid without counting the
//! end points twice: an example at confidence exactly 0 or 1 keeps only half of its kernel
//! mass there, and one within a grid step (10⁻³) of an end part of it. On confidences that
//! pile up at 1 (a network's top-label confidence at `T = 1`) its value is therefore larger;
//! elsewhere the two agree to a fraction of a percent. Definitions: docs/definitions.md.

use serde::Serialize;

use crate::calibration::{check_confidences, CalibrationError};

/// Bisection steps of the bandwidth search: the bandwidth is a multiple of `2⁻¹⁰`.
pub const BANDWIDTH_SEARCH_STEPS: u32 = 10;
/// Bandwidths below this count as below the fixed point without evaluating smECE there, and
/// [`smooth_ece_at`] and [`smooth_reliability`] refuse them.
pub const MIN_BANDWIDTH: f64 = 0.001;
/// Most points [`smooth_reliability`] evaluates the curve and the density at.
pub const MAX_CURVE_POINTS: usize = 10_000;

/// Fewest grid steps on `[0, 1]` at any bandwidth.
const MIN_GRID_STEPS: usize = 200;
/// Grid steps per bandwidth: the grid step is at most `σ/20`.
const GRID_STEPS_PER_BANDWIDTH: f64 = 20.0;
/// Grid steps per bandwidth of the bootstrap band's resampled curves: a quarter of the
/// estimate's, so that a hundred resamples fit in a slider frame; the curves move by less than
/// 0.002 against the finer grid (tested), well inside the band's width at thousands of images.
pub const BAND_STEPS_PER_BANDWIDTH: f64 = 5.0;
/// Fewest grid steps of the band's resampled curves (at bandwidths above 0.6).
pub const BAND_MIN_GRID_STEPS: usize = 8;
/// The sampled kernel is cut at this many bandwidths from its centre.
const KERNEL_RADIUS: f64 = 6.0;

/// smECE with the bandwidth the fixed-point search chose.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SmoothEce {
    /// `smECE_σ` at `σ = bandwidth`.
    pub smece: f64,
    /// The bandwidth `σ`, a multiple of `2⁻¹⁰` in `[2⁻⁹, 1]`.
    pub bandwidth: f64,
}

/// The smooth reliability diagram at one bandwidth, on `points` equally spaced confidences
/// from 0 to 1.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SmoothReliability {
    /// The kernel bandwidth `σ`.
    pub bandwidth: f64,
    /// The number of examples `n` behind the curve.
    pub examples: usize,
    /// The confidences `t_p = p/(points − 1)` the curve is evaluated at, from 0 to 1.
    pub confidence: Vec<f64>,
    /// The smoothed mean correctness `t_p + r̂_σ(t_p)`; `t_p` itself (residual 0) where no
    /// confidence lies within `6σ`, so that the density is 0.
    pub accuracy: Vec<f64>,
    /// The density `δ̂_σ(t_p)` of the confidences; it integrates to 1 over `[0, 1]`.
    pub density: Vec<f64>,
}

/// smECE at the bandwidth chosen as the fixed point `smECE_σ = σ` (relplot's `smECE`).
///
/// # Errors
/// [`CalibrationError::EmptyInput`], [`CalibrationError::ConfidenceCountMismatch`] and
/// [`CalibrationError::InvalidConfidence`] from checking the confidences.
pub fn smooth_ece(confidence: &[f64], correct: &[bool]) -> Result<SmoothEce, CalibrationError> {
    check_confidences(confidence, correct)?;
    Ok(search(confidence, correct).0)
}

/// [`smooth_ece`] and the smooth reliability curve at its bandwidth, as [`smooth_reliability`]
/// draws it on `points` points: the search's last kernel sums at that bandwidth serve the curve
/// too, where computing the two apart makes them twice (the page's slider frame does this).
///
/// # Errors
/// [`CalibrationError::InvalidPointCount`] and the errors of checking the confidences, as
/// [`smooth_reliability`].
pub fn smooth_ece_and_reliability(
    confidence: &[f64],
    correct: &[bool],
    points: usize,
) -> Result<(SmoothEce, SmoothReliability), CalibrationError> {
    check_point_count(points)?;
    check_confidences(confidence, correct)?;
    let (ece, smoothed) = search(confidence, correct);
    let curve = smoothed.curve(ece.bandwidth, confidence.len(), points);
    Ok((ece, curve))
}

/// The fixed-point search of [`smooth_ece`] on checked inputs, with the kernel sums at the
/// bandwidth it returns.
///
/// A step whose answer [`ErrorBounds`] already gives is not evaluated: the search takes the
/// same steps and returns the same value, bit for bit, as one that evaluates every step (tested),
/// with two or three fewer kernel sums on a network's confidences.
fn search(confidence: &[f64], correct: &[bool]) -> (SmoothEce, SmoothedResidual) {
    let bounds = ErrorBounds::new(confidence, correct);
    let (mut below, mut above) = (0.0, 1.0);
    let mut at_above = None;
    for _ in 0..BANDWIDTH_SEARCH_STEPS {
        let middle = 0.5 * (below + above);
        if middle < MIN_BANDWIDTH || bounds.surely_below(middle) {
            below = middle;
            continue;
        }
        if bounds.surely_above(middle) {
            above = middle;
            at_above = None;
            continue;
        }
        let smoothed = SmoothedResidual::new(confidence, correct, middle);
        if middle < smoothed.error() {
            below = middle;
        } else {
            above = middle;
            at_above = Some(smoothed);
        }
    }
    let smoothed = at_above.unwrap_or_else(|| SmoothedResidual::new(confidence, correct, above));
    let ece = SmoothEce {
        smece: smoothed.error(),
        bandwidth: above,
    };
    (ece, smoothed)
}

/// Bounds on `smECE_σ` that hold at every bandwidth, from the residuals alone:
/// `|mean r_i| ≤ smECE_σ ≤ mean |r_i|`. On the grid every example carries the same kernel mass
/// (its linear-binned weights sum to 1, the reflection returns what leaves `[0, 1]`, and the
/// trapezoid sum of a reflected, symmetric convolution is half its sum over a period), so the
/// denominator is `n` times that mass and the numerator lies between `|Σ r_i|` and `Σ |r_i|`
/// times it. A bisection step at `σ` outside these bounds, by a relative margin far above
/// rounding, goes the way evaluating `smECE_σ` there would send it.
struct ErrorBounds {
    lower: f64,
    upper: f64,
}

/// Relative margin between a bound and a bandwidth for [`ErrorBounds`] to decide a step: the
/// computed `smECE_σ` differs from its exact value by rounding, some `10⁻¹²` at most.
const BOUND_MARGIN: f64 = 1e-9;

impl ErrorBounds {
    fn new(confidence: &[f64], correct: &[bool]) -> Self {
        let (mut sum, mut absolute_sum) = (0.0, 0.0);
        for (&f, &is_correct) in confidence.iter().zip(correct) {
            let r = f64::from(u8::from(is_correct)) - f;
            sum += r;
            absolute_sum += r.abs();
        }
        let n = confidence.len() as f64;
        Self {
            lower: (sum / n).abs(),
            upper: absolute_sum / n,
        }
    }

    /// `σ < smECE_σ` for certain: the search moves up.
    fn surely_below(&self, bandwidth: f64) -> bool {
        bandwidth < self.lower * (1.0 - BOUND_MARGIN)
    }

    /// `σ ≥ smECE_σ` for certain: the search moves down.
    fn surely_above(&self, bandwidth: f64) -> bool {
        bandwidth > self.upper * (1.0 + BOUND_MARGIN)
    }
}

/// `smECE_σ` at a given bandwidth `σ`.
///
/// # Errors
/// [`CalibrationError::InvalidBandwidth`] unless `0.001 ≤ bandwidth ≤ 1`, and the errors of
/// checking the confidences as [`smooth_ece`].
pub fn smooth_ece_at(
    confidence: &[f64],
    correct: &[bool],
    bandwidth: f64,
) -> Result<f64, CalibrationError> {
    check_bandwidth(bandwidth)?;
    check_confidences(confidence, correct)?;
    Ok(SmoothedResidual::new(confidence, correct, bandwidth).error())
}

/// The smooth reliability curve and the density of the confidences at bandwidth `σ`, on
/// `points` equally spaced confidences from 0 to 1 (both included), for drawing the diagram.
///
/// # Errors
/// [`CalibrationError::InvalidBandwidth`] unless `0.001 ≤ bandwidth ≤ 1`,
/// [`CalibrationError::InvalidPointCount`] unless `2 ≤ points ≤ 10000`, and the errors of
/// checking the confidences as [`smooth_ece`].
pub fn smooth_reliability(
    confidence: &[f64],
    correct: &[bool],
    bandwidth: f64,
    points: usize,
) -> Result<SmoothReliability, CalibrationError> {
    check_bandwidth(bandwidth)?;
    check_point_count(points)?;
    check_confidences(confidence, correct)?;
    let smoothed = SmoothedResidual::new(confidence, correct, bandwidth);
    Ok(smoothed.curve(bandwidth, confidence.len(), points))
}

fn check_point_count(points: usize) -> Result<(), CalibrationError> {
    if (2..=MAX_CURVE_POINTS).contains(&points) {
        Ok(())
    } else {
        Err(CalibrationError::InvalidPointCount(points))
    }
}

/// The smooth reliability curves of bootstrap resamples at one bandwidth `σ`, for the band
/// around the curve. The grid has [`BAND_STEPS_PER_BANDWIDTH`] steps per bandwidth (and at least
/// [`BAND_MIN_GRID_STEPS`]), a quarter of the estimate's density and without its minimum of
/// 200: each example's grid cell and share are found once and the kernel is sampled once. All
/// resamples are binned, convolved and interpolated together, on grids laid out cell by cell
/// with the resamples side by side, so every step runs along contiguous memory.
pub(crate) struct CurveResampler {
    steps: usize,
    kernel: Vec<f64>,
    /// Each example's left grid point, its share of the right one, and its residual.
    left: Vec<usize>,
    share: Vec<f64>,
    residual: Vec<f64>,
    points: usize,
}

impl CurveResampler {
    /// The inputs must have been checked; `σ ≥ MIN_BANDWIDTH`, `points ≥ 2`.
    pub(crate) fn new(confidence: &[f64], correct: &[bool], bandwidth: f64, points: usize) -> Self {
        let steps = BAND_MIN_GRID_STEPS.max((BAND_STEPS_PER_BANDWIDTH / bandwidth).ceil() as usize);
        let (mut left, mut share, mut residual) = (Vec::new(), Vec::new(), Vec::new());
        for (&f, &is_correct) in confidence.iter().zip(correct) {
            let position = f * steps as f64;
            let cell = (position.floor() as usize).min(steps - 1);
            left.push(cell);
            share.push(position - cell as f64);
            residual.push(f64::from(u8::from(is_correct)) - f);
        }
        Self {
            steps,
            kernel: sampled_normal(bandwidth * steps as f64),
            left,
            share,
            residual,
            points,
        }
    }

    /// The curves `t_p + r̂_σ(t_p)` of `resamples` resamples at the `points` confidences
    /// `t_p = p/(points − 1)`, where resample `r` draws example `i` `counts[i·resamples + r]`
    /// times (one row of `counts` an example); `t_p` where no drawn example lies within `6σ`.
    /// Returned row-major `[points, resamples]`: each point's values side by side.
    pub(crate) fn curves(&self, counts: &[u16], resamples: usize) -> Vec<f64> {
        let cells = self.steps + 1;
        let mut residual = vec![0.0; cells * resamples];
        let mut count = vec![0.0; cells * resamples];
        for (row, drawn) in counts.chunks_exact(resamples).enumerate() {
            let (cell, share, r) = (self.left[row], self.share[row], self.residual[row]);
            let span = cell * resamples..(cell + 2) * resamples;
            let (at_left, at_right) = residual[span.clone()].split_at_mut(resamples);
            for ((left, right), &n) in at_left.iter_mut().zip(at_right).zip(drawn) {
                let n = f64::from(n);
                *left += n * (1.0 - share) * r;
                *right += n * share * r;
            }
            let (at_left, at_right) = count[span].split_at_mut(resamples);
            for ((left, right), &n) in at_left.iter_mut().zip(at_right).zip(drawn) {
                let n = f64::from(n);
                *left += n * (1.0 - share);
                *right += n * share;
            }
        }
        let residual = reflected_convolution(&residual, resamples, &self.kernel);
        let count = reflected_convolution(&count, resamples, &self.kernel);
        let mut curves = Vec::with_capacity(self.points * resamples);
        for p in 0..self.points {
            let t = p as f64 / (self.points - 1) as f64;
            let (left, share) = grid_position(t, self.steps);
            let at = |values: &[f64], r: usize| {
                (1.0 - share) * values[left * resamples + r]
                    + share * values[(left + 1) * resamples + r]
            };
            curves.extend((0..resamples).map(|r| {
                let count = at(&count, r);
                t + if count > 0.0 {
                    at(&residual, r) / count
                } else {
                    0.0
                }
            }));
        }
        curves
    }
}

/// The grid point at or left of `t ∈ [0, 1]` on a grid of `steps` steps (the last step's left
/// end for `t = 1`), and `t`'s share of the way to the next point.
fn grid_position(t: f64, steps: usize) -> (usize, f64) {
    let position = t * steps as f64;
    let left = (position.floor() as usize).min(steps - 1);
    (left, position - left as f64)
}

pub(crate) fn check_bandwidth(bandwidth: f64) -> Result<(), CalibrationError> {
    if (MIN_BANDWIDTH..=1.0).contains(&bandwidth) {
        Ok(())
    } else {
        Err(CalibrationError::InvalidBandwidth(bandwidth))
    }
}

/// `Σ_i K_σ(t_j, f_i) r_i` and `Σ_i K_σ(t_j, f_i)` on the grid `t_j = j/M`, up to the
/// normal's constant (common to both).
struct SmoothedResidual {
    /// `M`: the grid has `M + 1` points.
    steps: usize,
    /// The two sums side by side at each grid point, `[M + 1, 2]` row-major: binned and
    /// convolved together, each step runs over both with one pass through memory.
    sums: Vec<f64>,
}

impl SmoothedResidual {
    /// Linear binning onto the grid of bandwidth `σ`, then the reflected convolution. The
    /// inputs must have been checked; `σ ≥ MIN_BANDWIDTH`.
    fn new(confidence: &[f64], correct: &[bool], bandwidth: f64) -> Self {
        let steps = MIN_GRID_STEPS.max((GRID_STEPS_PER_BANDWIDTH / bandwidth).ceil() as usize);
        let mut binned = vec![0.0; 2 * (steps + 1)];
        for (&f, &is_correct) in confidence.iter().zip(correct) {
            let position = f * steps as f64;
            let left = (position.floor() as usize).min(steps - 1);
            let share = position - left as f64;
            let r = f64::from(u8::from(is_correct)) - f;
            binned[2 * left] += (1.0 - share) * r;
            binned[2 * left + 1] += 1.0 - share;
            binned[2 * left + 2] += share * r;
            binned[2 * left + 3] += share;
        }
        let kernel = sampled_normal(bandwidth * steps as f64);
        Self {
            steps,
            sums: reflected_convolution(&binned, 2, &kernel),
        }
    }

    /// The residual sums on the grid.
    fn residual(&self) -> impl ExactSizeIterator<Item = f64> + '_ {
        self.sums.iter().step_by(2).copied()
    }

    /// The count sums on the grid.
    fn count(&self) -> impl ExactSizeIterator<Item = f64> + '_ {
        self.sums.iter().skip(1).step_by(2).copied()
    }

    /// `∫|Σ K r| / ∫ Σ K`, both by the trapezoid rule on the grid.
    fn error(&self) -> f64 {
        trapezoid(self.residual().map(f64::abs)) / trapezoid(self.count())
    }

    /// The smooth reliability curve of `examples` examples at `bandwidth` (these sums'), on
    /// `points` equally spaced confidences from 0 to 1.
    fn curve(&self, bandwidth: f64, examples: usize, points: usize) -> SmoothReliability {
        // `∫ Σ_i K_σ(t, f_i) dt` by the trapezoid rule, up to the grid step.
        let mass = trapezoid(self.count()) / self.steps as f64;
        let mut curve = SmoothReliability {
            bandwidth,
            examples,
            confidence: Vec::with_capacity(points),
            accuracy: Vec::with_capacity(points),
            density: Vec::with_capacity(points),
        };
        for p in 0..points {
            let t = p as f64 / (points - 1) as f64;
            let (residual, count) = self.interpolate(t);
            let mean_residual = if count > 0.0 { residual / count } else { 0.0 };
            curve.confidence.push(t);
            curve.accuracy.push(t + mean_residual);
            curve.density.push(count / mass);
        }
        curve
    }

    /// Both sums at `t ∈ [0, 1]`, linearly interpolated between grid points.
    fn interpolate(&self, t: f64) -> (f64, f64) {
        let (left, share) = grid_position(t, self.steps);
        let at = |column: usize| {
            (1.0 - share) * self.sums[2 * left + column] + share * self.sums[2 * left + 2 + column]
        };
        (at(0), at(1))
    }
}

/// `exp(−d²/(2s²))` for `d = −W..=W`, `W = ⌈6s⌉`: the normal of standard deviation `s` grid
/// steps, unnormalised.
fn sampled_normal(steps_per_bandwidth: f64) -> Vec<f64> {
    let radius = (KERNEL_RADIUS * steps_per_bandwidth).ceil() as i64;
    (-radius..=radius)
        .map(|d| (-0.5 * (d as f64 / steps_per_bandwidth).powi(2)).exp())
        .collect()
}

/// `out_j = Σ_d kernel_d · e_{j+d−W}` over `j = 0..=M`, for each of `width` columns side by side
/// (`values` row-major `[M + 1, width]`), where `e` extends the grid values to all integers by
/// reflection at `0` and `M` (period `2M`). An end point is its own mirror image, so it enters
/// twice: the kernel mass that leaves `[0, 1]` comes back. The kernel is symmetric
/// (`kernel_{W−d} = kernel_{W+d}`), so each output takes `W + 1` products of the kernel with
/// sums of mirrored pairs, and the sum runs offset by offset over the whole grid at once.
/// A kernel wider than the grid is first wrapped onto one period (see [`periodic_kernel`]).
fn reflected_convolution(values: &[f64], width: usize, kernel: &[f64]) -> Vec<f64> {
    let cells = values.len() / width;
    let steps = cells - 1;
    let wrapped;
    let kernel = if kernel.len() / 2 > steps {
        wrapped = periodic_kernel(kernel, steps);
        &wrapped
    } else {
        kernel
    };
    let radius = kernel.len() / 2;
    let period = 2 * steps as i64;
    let mut extended = Vec::with_capacity((cells + 2 * radius) * width);
    for k in 0..cells + 2 * radius {
        let folded = (k as i64 - radius as i64).rem_euclid(period);
        let index = if folded > steps as i64 {
            period - folded
        } else {
            folded
        } as usize;
        let images = if index == 0 || index == steps {
            2.0
        } else {
            1.0
        };
        extended.extend(
            values[index * width..(index + 1) * width]
                .iter()
                .map(|v| images * v),
        );
    }
    let row = |offset: usize| &extended[offset * width..(offset + cells) * width];
    let mut out: Vec<f64> = row(radius).iter().map(|e| kernel[radius] * e).collect();
    for d in 1..=radius {
        let weight = kernel[radius + d];
        for ((o, before), after) in out.iter_mut().zip(row(radius - d)).zip(row(radius + d)) {
            *o += weight * (before + after);
        }
    }
    out
}

/// The symmetric kernel `kernel` (offsets `−W..=W`) wrapped onto the period `2M` of the
/// reflected grid, as offsets `−M..=M`: `g̃_d = Σ_m g_{d+2Mm}`. The extended grid repeats every
/// `2M`, so the products of all offsets congruent modulo `2M` meet the same value, and summing
/// their weights first gives the same convolution with `2M + 1` offsets instead of `2W + 1`
/// (at bandwidths near 1 the kernel spans six periods of the 200-step grid). Offsets `M` and
/// `−M` are one class; each takes half of its weight, which keeps the kernel symmetric.
fn periodic_kernel(kernel: &[f64], steps: usize) -> Vec<f64> {
    let radius = (kernel.len() / 2) as i64;
    let (steps_i, period) = (steps as i64, 2 * steps as i64);
    let mut wrapped = vec![0.0; 2 * steps + 1];
    for (offset, &weight) in (-radius..=radius).zip(kernel) {
        // The class's representative in `−M..M`.
        let class = (offset + steps_i).rem_euclid(period) - steps_i;
        wrapped[(class + steps_i) as usize] += weight;
    }
    let ends = wrapped[0] / 2.0;
    wrapped[0] = ends;
    wrapped[2 * steps] = ends;
    wrapped
}

/// Trapezoid sum with unit step: the end values count half.
fn trapezoid(values: impl ExactSizeIterator<Item = f64>) -> f64 {
    let last = values.len() - 1;
    values
        .enumerate()
        .map(|(j, v)| if j == 0 || j == last { 0.5 * v } else { v })
        .sum()
}

#[cfg(test)]
#[path = "smooth_calibration_tests.rs"]
mod tests;
