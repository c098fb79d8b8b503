//! Temperature scaling's rivals: normalised temperature scaling, vector scaling, histogram
//! binning and isotonic regression, fitted on a calibration part and compared with temperature
//! scaling on another part.
//!
//! # What it computes
//! * **Normalised temperature scaling**: `p = softmax(z/(T·(‖z‖₂ + ε)))`, the input-dependent
//!   temperature LogitNorm (Wei et al., ICML 2022) trains with, one `T` fitted by NLL
//!   ([`fit_normalized_temperature`]: temperature scaling of the unit-length logits).
//! * **Vector scaling** (Guo et al., "On Calibration of Modern Neural Networks", ICML 2017,
//!   §4.2): a scale `w_k` and a bias `b_k` per class on the logits, `p = softmax(w ⊙ z + b)`,
//!   fitted by minimising the mean NLL on the calibration part. The NLL is convex in
//!   `θ = (w, b)` (the logits are linear in θ and the softmax cross-entropy is convex in the
//!   logits), with gradient `mean Jᵀ(p − e_y)` and Hessian `mean Jᵀ(diag p − p pᵀ)J`,
//!   `J = [diag z, I]`. [`fit_vector_scaling`] runs Newton's method from `w = 1, b = 0` (the
//!   uncalibrated network) with a backtracking (Armijo) line search until the Newton decrement
//!   `gᵀH⁻¹g` is below `10⁻¹⁴` (Newton converges quadratically: the step before is typically
//!   at `10⁻⁹`, and NLL values closer than `10⁻¹⁶` cannot be told apart), or after
//!   [`MAX_NEWTON_STEPS`], reported as not converged. The NLL and gradient are summed over
//!   every calibration row, the Hessian over at most `HESSIAN_ROWS` (4,096) evenly spaced ones
//!   (sub-sampled Newton: Byrd, Chin, Neveitt & Nocedal, "On the use of stochastic Hessian
//!   information in optimization methods for machine learning", SIAM J. Optim. 2011): at
//!   K = 100 a row adds 20,100 products to the Hessian against 200 exponentials to the
//!   gradient, and 100,000 rows would make each step cost seconds. The gradient being exact,
//!   the fit stops at the same minimum; the subsampled steps converge linearly instead of
//!   quadratically, a few steps more. Adding the same
//!   constant to every `b_k` changes nothing, so the Hessian is singular along that direction; the Newton system is solved with a tiny
//!   ridge (`10⁻¹⁰` of the Hessian's largest diagonal entry), whose step has no component
//!   along it since the gradient has none; the biases are re-centred to mean 0 after each
//!   step, so that rounding does not drift along it. A scale may change which
//!   logit is largest: vector scaling can change predictions and accuracy.
//! * **Histogram binning** (Zadrozny & Elkan, "Obtaining calibrated probability estimates from
//!   decision trees and naive Bayesian classifiers", ICML 2001) of the top-label confidence
//!   `c = max_k softmax(z)_k`: [`HISTOGRAM_BINNING_BINS`] equal-mass bins of the calibration
//!   confidences (equal mass, as Zadrozny & Elkan, because an overconfident network piles
//!   most confidences into the last equal-width bin), each mapped to the fraction of its
//!   calibration images that are right. The cut between sorted confidences `s_{i−1}` and `s_i`
//!   (`i = ⌊b·n/B⌋`) is their midpoint; a confidence equal to a cut goes to the upper bin, and a
//!   bin left empty by ties is merged into its lower neighbour.
//! * **Isotonic regression** of the top-label confidence (Zadrozny & Elkan, "Transforming
//!   classifier scores into accurate multiclass probability estimates", KDD 2002): the
//!   non-decreasing step function of the confidence closest in squared error to the 0/1
//!   correctness on the calibration part, by pool-adjacent-violators. Equal confidences are
//!   pooled first (their mean correctness, weighted by their count, as scikit-learn does), and
//!   adjacent blocks are pooled while the left mean is at least the right one. A new
//!   confidence takes the value of the last block starting at or below it (the first block's
//!   below the first start): a step function, as PAV fits it. scikit-learn's
//!   `IsotonicRegression.predict` interpolates linearly between blocks instead, which would
//!   give nearly every image its own confidence.
//!
//! # The probability vector of a top-label method
//! Histogram binning and isotonic regression recalibrate only the confidence `c'` of the
//! predicted class `ŷ = argmax_k z_k` (ties to the lowest index); the prediction, and so the
//! accuracy, is unchanged. The other classes share `1 − c'` in proportion to their softmax
//! probabilities: `p'_k = (1 − c')·p_k / Σ_{j≠ŷ} p_j` (computed in the log domain, so a
//! vanishing `Σ_{j≠ŷ} p_j` stays exact). NLL and Brier are computed from this vector. A bin or
//! block whose calibration images were all right maps to `c' = 1`, giving a wrong label
//! probability 0: NLL clips the label's probability below at [`MIN_PROBABILITY`] (`2⁻⁵²`, as
//! scikit-learn's `log_loss`), so such a miss costs 36 nats instead of infinity. Top-label
//! ECE and smECE use `c'` and the unchanged correctness.
//!
//! Every definition, default and tie rule, with its source: docs/definitions.md

use serde::{Deserialize, Serialize};

use crate::bootstrap::{self, BootstrapError, BootstrapSettings, EceNllIntervals, ScoredRows};
use crate::calibration::{
    self, check_labels, fit_temperature, predicted_class, softmax_row, Bin, Binning,
    CalibrationError, Logits,
};
use crate::smooth_calibration::smooth_ece;
use dirichlet::{fit_dirichlet, DirichletCalibration, ODIR_LAMBDA, ODIR_MU};
use venn_abers::fit_venn_abers;

pub mod dirichlet;
pub mod venn_abers;

/// Equal-mass bins of histogram binning (Guo et al. use 15 bins for their comparison).
pub const HISTOGRAM_BINNING_BINS: usize = 15;
/// The smallest label probability NLL takes the log of (`f64::EPSILON`, as scikit-learn's
/// `log_loss`).
pub const MIN_PROBABILITY: f64 = f64::EPSILON;

/// The Newton decrement `gᵀ(H + ridge)⁻¹g` (twice the NLL decrease a Newton step predicts) at
/// which the vector-scaling fit stops: the NLL, about 0.1 to 1, is itself rounded at `10⁻¹⁶`,
/// so a line search cannot see smaller decreases.
const DECREMENT_TOLERANCE: f64 = 1e-14;
/// Calibration rows the vector-scaling Hessian is summed over, at most (see
/// [`hessian_rows`]): at K = 100 a row adds 20,100 products to it, against 200 exponentials
/// to the NLL and gradient, which stay exact over every row.
pub(crate) const HESSIAN_ROWS: usize = 4096;
/// Newton steps after which the vector-scaling fit stops, not converged. Where the NLL has a
/// minimum the fit converges in a few steps (quadratically with every row in the Hessian,
/// linearly with a subsample); where it has none, the diverging scales keep growing step
/// after step, and the fit converges only if the NLL reaches rounding level (the tests'
/// separable classes: 31 steps).
pub const MAX_NEWTON_STEPS: usize = 40;
/// Halvings of a Newton step before the line search gives up.
const MAX_STEP_HALVINGS: usize = 40;
/// Armijo's sufficient-decrease constant.
const SUFFICIENT_DECREASE: f64 = 1e-4;
/// The ridge added to the Newton system, relative to the Hessian's largest diagonal entry.
const RELATIVE_RIDGE: f64 = 1e-10;
/// LogitNorm's guard against a zero logit length.
const NORMALIZED_EPSILON: f64 = 1e-7;
/// Normalised temperature scaling is fitted on the unit-length logits times this (see
/// [`fit_normalized_temperature`]).
const NORMALIZED_LOGIT_SCALE: f64 = 20.0;
/// Tenfold increases of the ridge tried when the Cholesky factorisation fails.
const MAX_RIDGE_INCREASES: i32 = 12;

/// A way to turn logits into calibrated probabilities (the page's and the CLI's names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// The network's softmax, `T = 1`.
    #[cfg_attr(not(target_arch = "wasm32"), value(skip))]
    Uncalibrated,
    /// One temperature for every logit.
    #[default]
    Temperature,
    /// One temperature for the logits divided by their length: `softmax(z/(T‖z‖))`, the
    /// input-dependent temperature LogitNorm trains with.
    Normalized,
    /// A scale and a bias per class.
    Vector,
    /// Equal-mass histogram binning of the top-label confidence.
    Histogram,
    /// Isotonic regression of the top-label confidence.
    Isotonic,
    /// The inductive Venn–Abers predictor of the top-label confidence, its two probabilities
    /// merged (`venn_abers`).
    #[serde(rename = "venn-abers")]
    VennAbers,
    /// Dirichlet calibration with ODIR regularisation: `softmax(W ln q + b)` (`dirichlet`).
    Dirichlet,
}

impl Method {
    /// The methods of the page's table, in its order.
    pub const ALL: [Method; 8] = [
        Method::Uncalibrated,
        Method::Temperature,
        Method::Normalized,
        Method::Vector,
        Method::Histogram,
        Method::Isotonic,
        Method::VennAbers,
        Method::Dirichlet,
    ];

    /// The method's name in a sentence.
    pub fn title(self) -> &'static str {
        match self {
            Method::Uncalibrated => "uncalibrated",
            Method::Temperature => "temperature scaling",
            Method::Normalized => "normalised temperature scaling",
            Method::Vector => "vector scaling",
            Method::Histogram => "histogram binning",
            Method::Isotonic => "isotonic regression",
            Method::VennAbers => "Venn–Abers",
            Method::Dirichlet => "Dirichlet calibration",
        }
    }
}

/// Logits with one label per row, checked.
#[derive(Clone, Copy, Debug)]
pub struct Labelled<'a> {
    logits: Logits<'a>,
    labels: &'a [u32],
}

impl<'a> Labelled<'a> {
    /// Pairs logits with their labels.
    ///
    /// # Errors
    /// The label errors of [`check_labels`].
    pub fn new(logits: Logits<'a>, labels: &'a [u32]) -> Result<Self, CalibrationError> {
        check_labels(&logits, labels)?;
        Ok(Self { logits, labels })
    }

    /// The logits.
    pub fn logits(&self) -> &Logits<'a> {
        &self.logits
    }

    /// One label per row, each below the number of classes.
    pub fn labels(&self) -> &'a [u32] {
        self.labels
    }
}

/// A fitted vector scaling.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VectorScaling {
    /// `w_k`, one per class.
    pub scales: Vec<f64>,
    /// `b_k`, one per class, with mean 0.
    pub biases: Vec<f64>,
    /// Mean NLL on the calibration part at the fit.
    pub nll: f64,
    /// Newton steps taken.
    pub steps: usize,
    /// Whether the Newton decrement reached `10⁻¹⁴`; `false` when the line search or the
    /// factorisation stalled first or 100 steps passed. On classes that the scaled logits
    /// separate, the NLL has no minimum: the decrement falls below the tolerance once the NLL
    /// itself is at rounding level, with large parameters.
    pub converged: bool,
}

/// A step function of the confidence, as the fitters return it: `values[i]` from `starts[i]`
/// on (the first value also below `starts[0]`), at least one step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepFunction {
    starts: Vec<f64>,
    values: Vec<f64>,
}

impl StepFunction {
    /// The function that is `values[i]` from `starts[i]` on (`starts` increasing, as long as
    /// `values`, not empty).
    pub(crate) fn new(starts: Vec<f64>, values: Vec<f64>) -> Self {
        Self { starts, values }
    }

    /// Where each step starts, increasing.
    pub fn starts(&self) -> &[f64] {
        &self.starts
    }

    /// The value of each step.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// The value at confidence `c`.
    pub fn at(&self, confidence: f64) -> f64 {
        let index = self.starts.partition_point(|&start| start <= confidence);
        self.values[index.saturating_sub(1)]
    }
}

/// A fitted recalibration.
#[derive(Clone, Debug, PartialEq)]
pub enum Recalibration {
    Uncalibrated,
    Temperature(f64),
    /// Normalised temperature scaling's T: row `z` is divided by `T·(‖z‖₂ + ε)`.
    Normalized(f64),
    Vector(VectorScaling),
    /// Histogram binning or isotonic regression of the top-label confidence.
    TopLabel(StepFunction),
    Dirichlet(DirichletCalibration),
}

/// Fits `method` on the calibration part (temperature: [`fit_temperature`]).
///
/// # Errors
/// The errors of the fitters.
pub fn fit(method: Method, calibration: &Labelled) -> Result<Recalibration, CalibrationError> {
    Ok(match method {
        Method::Uncalibrated => Recalibration::Uncalibrated,
        Method::Temperature => Recalibration::Temperature(
            fit_temperature(&calibration.logits, calibration.labels)?.temperature,
        ),
        Method::Normalized => Recalibration::Normalized(fit_normalized_temperature(calibration)?),
        Method::Vector => Recalibration::Vector(fit_vector_scaling(calibration)),
        Method::Dirichlet => {
            Recalibration::Dirichlet(fit_dirichlet(calibration, ODIR_LAMBDA, ODIR_MU)?)
        }
        Method::Histogram | Method::Isotonic | Method::VennAbers => {
            let (confidence, correct) =
                calibration::confidences(&calibration.logits, calibration.labels, 1.0)?;
            Recalibration::TopLabel(match method {
                Method::Histogram => {
                    fit_histogram_binning(&confidence, &correct, HISTOGRAM_BINNING_BINS)?
                }
                Method::Isotonic => fit_isotonic(&confidence, &correct)?,
                _ => fit_venn_abers(&confidence, &correct)?.merged(),
            })
        }
    })
}

/// A row's logit length `‖z‖₂ + ε` (`ε` = LogitNorm's `10⁻⁷`, so that all-zero logits stay
/// finite).
fn logit_length(row: &[f32]) -> f64 {
    row.iter()
        .map(|&z| f64::from(z).powi(2))
        .sum::<f64>()
        .sqrt()
        + NORMALIZED_EPSILON
}

/// Fits normalised temperature scaling by NLL: temperature scaling of the unit-length logits
/// `z/(‖z‖ + ε)`, which [`fit_temperature`] fits after scaling them by
/// [`NORMALIZED_LOGIT_SCALE`] (its range `[0.05, 20]` then covers `T ∈ [0.0025, 1]`, where the
/// unit-length logits' temperatures lie: cross-entropy's about 0.05, LogitNorm's near its τ).
///
/// # Errors
/// The label errors of [`fit_temperature`].
pub fn fit_normalized_temperature(calibration: &Labelled) -> Result<f64, CalibrationError> {
    let k = calibration.logits.num_classes();
    let mut scaled = Vec::with_capacity(calibration.logits.len() * k);
    for row in calibration.logits.rows() {
        let length = logit_length(row);
        scaled.extend(
            row.iter()
                .map(|&z| (NORMALIZED_LOGIT_SCALE * f64::from(z) / length) as f32),
        );
    }
    let fit = fit_temperature(&Logits::new(&scaled, k)?, calibration.labels)?;
    Ok(fit.temperature / NORMALIZED_LOGIT_SCALE)
}

/// An objective and its gradient at one point: vector scaling's mean NLL at `θ = (w, b)`
/// over every calibration row (`2K` entries: `∂/∂w_k`, then `∂/∂b_k`), or Dirichlet
/// calibration's regularised one.
pub(crate) struct Objective {
    pub nll: f64,
    pub gradient: Vec<f64>,
}

/// Writes `log softmax(w ⊙ z + b)` of one row into `out` (stable, in `f64`).
fn scaled_log_softmax(row: &[f32], scales: &[f64], biases: &[f64], out: &mut [f64]) {
    for ((u, &z), (&w, &b)) in out.iter_mut().zip(row).zip(scales.iter().zip(biases)) {
        *u = w * f64::from(z) + b;
    }
    let max = out.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let log_sum = out.iter().map(|&u| (u - max).exp()).sum::<f64>().ln() + max;
    out.iter_mut().for_each(|u| *u -= log_sum);
}

/// One pass over every row: the mean NLL and its gradient `mean Jᵀ(p − e_y)`, with one
/// exponential per logit (the pass is most of a Newton step's time at K = 100).
fn vector_objective(data: &Labelled, scales: &[f64], biases: &[f64]) -> Objective {
    let k = data.logits.num_classes();
    let mut shifted = vec![0.0; k];
    let (mut nll, mut gradient) = (0.0, vec![0.0; 2 * k]);
    for (row, &label) in data.logits.rows().zip(data.labels) {
        let label = label as usize;
        for ((u, &z), (&w, &b)) in shifted.iter_mut().zip(row).zip(scales.iter().zip(biases)) {
            *u = w * f64::from(z) + b;
        }
        let max = shifted.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        // −log p_y = log Σ exp(u − max) − (u_y − max).
        let label_shifted = shifted[label] - max;
        shifted.iter_mut().for_each(|u| *u = (*u - max).exp());
        let sum: f64 = shifted.iter().sum();
        nll += sum.ln() - label_shifted;
        for i in 0..k {
            let residual = shifted[i] / sum - f64::from(i == label);
            gradient[i] += residual * f64::from(row[i]);
            gradient[k + i] += residual;
        }
    }
    let n = data.logits.len() as f64;
    gradient.iter_mut().for_each(|g| *g /= n);
    Objective {
        nll: nll / n,
        gradient,
    }
}

/// The rows the vector-scaling Hessian is summed over: all `n` up to `at_most`, else
/// `at_most` evenly spaced (the calibration half is already in a seeded random order).
pub(crate) fn hessian_rows(n: usize, at_most: usize) -> impl Iterator<Item = usize> {
    let m = n.min(at_most);
    (0..m).map(move |i| i * n / m)
}

/// The mean Hessian `Jᵀ(diag p − p pᵀ)J` over `rows`, `2K × 2K`, row-major.
///
/// Each row adds a diagonal part (`p z²`, `p z` and `p` on the diagonals of the four `K × K`
/// blocks of `J = [diag z, I]`) less the outer product `v vᵀ` of `v = Jᵀp = [p ⊙ z, p]`. The
/// outer products are summed on the upper triangle, one contiguous multiply-add per entry, and
/// mirrored at the end: at K = 100 a row adds 20,100 products.
fn vector_hessian(
    data: &Labelled,
    rows: impl Iterator<Item = usize>,
    scales: &[f64],
    biases: &[f64],
) -> Vec<f64> {
    let k = data.logits.num_classes();
    let size = 2 * k;
    let mut log_p = vec![0.0; k];
    let mut v = vec![0.0; size];
    // Σ p z², Σ p z and Σ p per class: the diagonal part.
    let (mut pzz, mut pz, mut ps) = (vec![0.0; k], vec![0.0; k], vec![0.0; k]);
    let mut outer = vec![0.0; size * size];
    let mut count = 0usize;
    for index in rows {
        let row = data.logits.row(index);
        scaled_log_softmax(row, scales, biases, &mut log_p);
        for i in 0..k {
            let (p, z) = (log_p[i].exp(), f64::from(row[i]));
            pzz[i] += p * z * z;
            pz[i] += p * z;
            ps[i] += p;
            v[i] = p * z;
            v[k + i] = p;
        }
        add_outer_upper(&mut outer, &v);
        count += 1;
    }
    let n = count as f64;
    let mut hessian = negated_mean_mirrored(&outer, size, n);
    for i in 0..k {
        hessian[i * size + i] += pzz[i] / n;
        hessian[i * size + k + i] += pz[i] / n;
        hessian[(k + i) * size + i] += pz[i] / n;
        hessian[(k + i) * size + k + i] += ps[i] / n;
    }
    hessian
}

/// Adds `v vᵀ` to the upper triangle of `outer` (`v.len()` square, row-major): one contiguous
/// multiply-add per entry.
pub(crate) fn add_outer_upper(outer: &mut [f64], v: &[f64]) {
    let size = v.len();
    for (i, &vi) in v.iter().enumerate() {
        let upper = &mut outer[i * size + i..(i + 1) * size];
        for (entry, &vj) in upper.iter_mut().zip(&v[i..]) {
            *entry += vi * vj;
        }
    }
}

/// `−outer/n`, its upper triangle mirrored onto the lower one (`size` square, row-major).
pub(crate) fn negated_mean_mirrored(outer: &[f64], size: usize, n: f64) -> Vec<f64> {
    let mut matrix = vec![0.0; size * size];
    for i in 0..size {
        for j in i..size {
            let value = -outer[i * size + j] / n;
            matrix[i * size + j] = value;
            matrix[j * size + i] = value;
        }
    }
    matrix
}

/// Solves `(A + ridge·I) x = rhs` for a symmetric positive semi-definite `A` (`size × size`,
/// row-major) by Cholesky; `None` when the factorisation meets a non-positive pivot.
fn solve_ridged(matrix: &[f64], rhs: &[f64], ridge: f64) -> Option<Vec<f64>> {
    let size = rhs.len();
    let mut lower = vec![0.0; size * size];
    for i in 0..size {
        for j in 0..=i {
            let dot: f64 = (0..j)
                .map(|m| lower[i * size + m] * lower[j * size + m])
                .sum();
            let entry = matrix[i * size + j] + if i == j { ridge } else { 0.0 } - dot;
            if i == j {
                if entry <= 0.0 || !entry.is_finite() {
                    return None;
                }
                lower[i * size + i] = entry.sqrt();
            } else {
                lower[i * size + j] = entry / lower[j * size + j];
            }
        }
    }
    let mut x = rhs.to_vec();
    for i in 0..size {
        let dot: f64 = (0..i).map(|m| lower[i * size + m] * x[m]).sum();
        x[i] = (x[i] - dot) / lower[i * size + i];
    }
    for i in (0..size).rev() {
        let dot: f64 = (i + 1..size).map(|m| lower[m * size + i] * x[m]).sum();
        x[i] = (x[i] - dot) / lower[i * size + i];
    }
    Some(x)
}

/// Fits vector scaling `p = softmax(w ⊙ z + b)` by Newton's method on the mean NLL (see the
/// module documentation). Never fails on checked data: a fit that cannot go on returns where
/// it stopped, with `converged` false.
pub fn fit_vector_scaling(calibration: &Labelled) -> VectorScaling {
    fit_vector_scaling_with(calibration, HESSIAN_ROWS)
}

/// [`fit_vector_scaling`] with the Hessian summed over at most `hessian_rows_at_most` rows.
fn fit_vector_scaling_with(calibration: &Labelled, hessian_rows_at_most: usize) -> VectorScaling {
    let k = calibration.logits.num_classes();
    let n = calibration.logits.len();
    let start: Vec<f64> = std::iter::repeat_n(1.0, k)
        .chain(std::iter::repeat_n(0.0, k))
        .collect();
    let fit = minimise_by_newton(
        start,
        |theta| vector_objective(calibration, &theta[..k], &theta[k..]),
        |theta| {
            vector_hessian(
                calibration,
                hessian_rows(n, hessian_rows_at_most),
                &theta[..k],
                &theta[k..],
            )
        },
        |theta| {
            // The step has no component along "every bias + c" but for rounding, which the
            // ridge would magnify: keep the biases' mean at exactly 0 (the NLL is unchanged).
            let biases = &mut theta[k..];
            let mean = biases.iter().sum::<f64>() / k as f64;
            biases.iter_mut().for_each(|b| *b -= mean);
        },
    );
    let (scales, biases) = fit.parameters.split_at(k);
    VectorScaling {
        converged: fit.converged,
        scales: scales.to_vec(),
        biases: biases.to_vec(),
        nll: fit.value,
        steps: fit.steps,
    }
}

/// Where [`minimise_by_newton`] stopped.
pub(crate) struct NewtonFit {
    pub parameters: Vec<f64>,
    /// The objective there.
    pub value: f64,
    pub steps: usize,
    /// Whether the Newton decrement reached [`DECREMENT_TOLERANCE`].
    pub converged: bool,
}

/// Minimises a convex objective by Newton's method from `start`: each step solves the Newton
/// system by Cholesky with a ridge of [`RELATIVE_RIDGE`] times the Hessian's largest diagonal
/// entry (tenfold larger while a pivot is not positive), searches back from the full step
/// (Armijo), and passes the trial point through `normalise` (a move along a direction the
/// objective ignores) before evaluating it. It stops when the Newton decrement is below
/// [`DECREMENT_TOLERANCE`] (converged, after that last step taken whole), or after [`MAX_NEWTON_STEPS`] steps, or when the line
/// search or the factorisation fails (not converged).
pub(crate) fn minimise_by_newton(
    start: Vec<f64>,
    objective: impl Fn(&[f64]) -> Objective,
    hessian: impl Fn(&[f64]) -> Vec<f64>,
    normalise: impl Fn(&mut [f64]),
) -> NewtonFit {
    let size = start.len();
    let mut parameters = start;
    let (mut steps, mut converged) = (0, false);
    let mut at = objective(&parameters);
    while steps < MAX_NEWTON_STEPS {
        let hessian = hessian(&parameters);
        let diagonal = (0..size).map(|i| hessian[i * size + i]).fold(0.0, f64::max);
        let ridge = RELATIVE_RIDGE * diagonal.max(f64::MIN_POSITIVE);
        let negative: Vec<f64> = at.gradient.iter().map(|g| -g).collect();
        // A larger ridge when rounding leaves a pivot non-positive; none helps a Hessian that
        // overflowed (logits near f32::MAX), and the fit stops where it is.
        let Some(direction) = (0..MAX_RIDGE_INCREASES)
            .find_map(|power| solve_ridged(&hessian, &negative, ridge * 10f64.powi(power)))
        else {
            break;
        };
        let slope: f64 = direction.iter().zip(&at.gradient).map(|(d, g)| d * g).sum();
        if -slope <= DECREMENT_TOLERANCE {
            // The last step, too small for the objective to show its decrease, is taken
            // whole: the parameters then lie within rounding of the minimum, not within
            // `√DECREMENT_TOLERANCE` of it.
            parameters
                .iter_mut()
                .zip(&direction)
                .for_each(|(p, d)| *p += d);
            normalise(&mut parameters);
            at = objective(&parameters);
            converged = true;
            break;
        }
        let mut step = 1.0;
        let accepted = (0..MAX_STEP_HALVINGS).find_map(|_| {
            let mut trial: Vec<f64> = parameters
                .iter()
                .zip(&direction)
                .map(|(p, d)| p + step * d)
                .collect();
            normalise(&mut trial);
            let value = objective(&trial);
            if value.nll <= at.nll + SUFFICIENT_DECREASE * step * slope {
                Some((trial, value))
            } else {
                step *= 0.5;
                None
            }
        });
        let Some((next_parameters, next)) = accepted else {
            break;
        };
        parameters = next_parameters;
        at = next;
        steps += 1;
    }
    NewtonFit {
        parameters,
        value: at.nll,
        steps,
        converged,
    }
}

/// Sorted `(confidence, outcome)` pairs after checking them.
fn sorted_pairs(confidence: &[f64], correct: &[bool]) -> Result<Vec<(f64, f64)>, CalibrationError> {
    calibration::check_confidences(confidence, correct)?;
    let mut pairs: Vec<(f64, f64)> = confidence
        .iter()
        .zip(correct)
        .map(|(&c, &right)| (c, f64::from(right)))
        .collect();
    pairs.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    Ok(pairs)
}

/// Fits histogram binning: `num_bins` equal-mass bins of the confidences (fewer with fewer
/// confidences or ties), each mapped to its fraction of correct examples.
///
/// # Errors
/// [`CalibrationError::InvalidBinCount`] unless `1 <= num_bins <= 1000`, and the errors of
/// checking the confidences ([`CalibrationError::EmptyInput`],
/// [`CalibrationError::ConfidenceCountMismatch`], [`CalibrationError::InvalidConfidence`]).
pub fn fit_histogram_binning(
    confidence: &[f64],
    correct: &[bool],
    num_bins: usize,
) -> Result<StepFunction, CalibrationError> {
    if !(1..=calibration::MAX_BINS).contains(&num_bins) {
        return Err(CalibrationError::InvalidBinCount(num_bins));
    }
    let pairs = sorted_pairs(confidence, correct)?;
    let n = pairs.len();
    let bins = num_bins.min(n);
    let mut cuts: Vec<f64> = (1..bins)
        .map(|b| {
            let i = b * n / bins;
            0.5 * (pairs[i - 1].0 + pairs[i].0)
        })
        .collect();
    cuts.dedup();
    // (start, count, correct) per bin; a confidence equal to a cut goes to the upper bin.
    let mut stats: Vec<(f64, usize, f64)> = std::iter::once(f64::NEG_INFINITY)
        .chain(cuts)
        .map(|start| (start, 0, 0.0))
        .collect();
    for &(c, outcome) in &pairs {
        let bin = stats.partition_point(|&(start, _, _)| start <= c) - 1;
        stats[bin].1 += 1;
        stats[bin].2 += outcome;
    }
    let mut function = StepFunction {
        starts: Vec::new(),
        values: Vec::new(),
    };
    for (start, count, right) in stats.into_iter().filter(|&(_, count, _)| count > 0) {
        // An empty bin's range falls to its lower neighbour; the first kept bin starts at −∞.
        let start = if function.starts.is_empty() {
            f64::NEG_INFINITY
        } else {
            start
        };
        function.starts.push(start);
        function.values.push(right / count as f64);
    }
    Ok(function)
}

/// Fits isotonic regression of the correctness on the confidence by pool-adjacent-violators,
/// as a step function (see the module documentation).
///
/// # Errors
/// The errors of checking the confidences ([`CalibrationError::EmptyInput`],
/// [`CalibrationError::ConfidenceCountMismatch`], [`CalibrationError::InvalidConfidence`]).
pub fn fit_isotonic(
    confidence: &[f64],
    correct: &[bool],
) -> Result<StepFunction, CalibrationError> {
    Ok(pool_adjacent_violators(distinct_points(
        confidence, correct,
    )?))
}

/// Equal confidences made one weighted point each: `(confidence, rows, right)`, ascending.
///
/// # Errors
/// The errors of checking the confidences.
pub(crate) fn distinct_points(
    confidence: &[f64],
    correct: &[bool],
) -> Result<Vec<(f64, f64, f64)>, CalibrationError> {
    let mut points: Vec<(f64, f64, f64)> = Vec::new();
    for (c, outcome) in sorted_pairs(confidence, correct)? {
        match points.last_mut() {
            Some(last) if last.0 == c => {
                last.1 += 1.0;
                last.2 += outcome;
            }
            _ => points.push((c, 1.0, outcome)),
        }
    }
    Ok(points)
}

/// Pool-adjacent-violators on points `(x, weight, weighted sum of y)` sorted by distinct `x`:
/// blocks are pooled while the left mean is at least the right one; the result steps at each
/// block's first `x` to its weighted mean.
pub(crate) fn pool_adjacent_violators(points: Vec<(f64, f64, f64)>) -> StepFunction {
    let mut blocks: Vec<(f64, f64, f64)> = Vec::with_capacity(points.len());
    for point in points {
        blocks.push(point);
        while let [.., left, right] = blocks[..] {
            // left mean < right mean, without dividing (weights are positive).
            if left.2 * right.1 < right.2 * left.1 {
                break;
            }
            blocks.pop();
            if let Some(last) = blocks.last_mut() {
                last.1 += right.1;
                last.2 += right.2;
            }
        }
    }
    StepFunction {
        starts: blocks.iter().map(|block| block.0).collect(),
        values: blocks.iter().map(|block| block.2 / block.1).collect(),
    }
}

/// The evaluation of a recalibration on one part, row by row.
#[derive(Clone, Debug, PartialEq)]
pub struct Predictions {
    /// The recalibrated confidence of each row's predicted class.
    pub confidence: Vec<f64>,
    /// Whether the predicted class is the label.
    pub correct: Vec<bool>,
    /// Rows whose predicted class differs from the arg-max of the logits.
    pub changed_predictions: usize,
    /// Mean NLL of the labels (label probabilities clipped below at [`MIN_PROBABILITY`]).
    pub nll: f64,
    /// Each row's NLL, clipped as [`Predictions::nll`]: what its bootstrap resamples.
    pub row_nll: Vec<f64>,
    /// Mean `Σ_k (p_k − [y = k])²`.
    pub brier: f64,
}

impl Predictions {
    /// The columns the bootstrap resamples.
    fn scored_rows(&self) -> ScoredRows<'_> {
        ScoredRows {
            confidence: &self.confidence,
            correct: &self.correct,
            nll: &self.row_nll,
        }
    }
}

/// `log Σ_{j ≠ skip} exp(values_j)`, stable.
fn log_sum_exp_except(values: &[f64], skip: usize) -> f64 {
    let others = || values.iter().enumerate().filter(|&(j, _)| j != skip);
    let max = others().fold(f64::NEG_INFINITY, |m, (_, &v)| m.max(v));
    max + others().map(|(_, &v)| (v - max).exp()).sum::<f64>().ln()
}

impl Recalibration {
    /// Applies the recalibration to every row: the confidence and correctness of each
    /// prediction, the NLL and the Brier score (conventions in the module documentation).
    pub fn predict(&self, data: &Labelled) -> Predictions {
        let k = data.logits.num_classes();
        let (mut p, mut log_p) = (vec![0.0; k], vec![0.0; k]);
        let rows = data.logits.len();
        let (mut confidence, mut correct) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
        let (mut changed, mut brier) = (0, 0.0);
        let mut row_nll = Vec::with_capacity(rows);
        for (row, &label) in data.logits.rows().zip(data.labels) {
            let label = label as usize;
            let original = predicted_class(row);
            // Only vector scaling and Dirichlet calibration can move the arg-max; the others
            // keep the logits' own. The
            // others' probabilities are `calibration::softmax_row`'s, so that temperature
            // scaling here gives `calibration::evaluate`'s numbers to the last digit.
            let temperature = match self {
                Recalibration::Uncalibrated | Recalibration::TopLabel(_) => Some(1.0),
                Recalibration::Temperature(t) => Some(*t),
                Recalibration::Normalized(t) => Some(t * logit_length(row)),
                Recalibration::Vector(fit) => {
                    scaled_log_softmax(row, &fit.scales, &fit.biases, &mut log_p);
                    None
                }
                Recalibration::Dirichlet(map) => {
                    map.log_probabilities(row, &mut log_p);
                    None
                }
            };
            if let Some(t) = temperature {
                let normaliser = softmax_row(row, t, &mut p);
                for (lp, &z) in log_p.iter_mut().zip(row) {
                    *lp = normaliser.log_probability(z);
                }
            } else {
                for (p, &lp) in p.iter_mut().zip(&log_p) {
                    *p = lp.exp();
                }
            }
            let predicted = match self {
                Recalibration::Vector(_) | Recalibration::Dirichlet(_) => predicted_class(&log_p),
                _ => original,
            };
            let (top, label_log_p, row_brier) = match self {
                Recalibration::TopLabel(map) => {
                    let top = map.at(p[original]);
                    let log_rest = log_sum_exp_except(&log_p, original);
                    let share = |j: usize| (log_p[j] - log_rest).exp();
                    let label_log_p = if label == original {
                        top.ln()
                    } else {
                        (1.0 - top).ln() + log_p[label] - log_rest
                    };
                    let others: f64 = (0..k)
                        .filter(|&j| j != original)
                        .map(|j| ((1.0 - top) * share(j) - f64::from(j == label)).powi(2))
                        .sum();
                    let row_brier = (top - f64::from(label == original)).powi(2) + others;
                    (top, label_log_p, row_brier)
                }
                _ => {
                    let row_brier: f64 = p
                        .iter()
                        .enumerate()
                        .map(|(j, &pj)| (pj - f64::from(j == label)).powi(2))
                        .sum();
                    (p[predicted], log_p[label], row_brier)
                }
            };
            changed += usize::from(predicted != original);
            confidence.push(top);
            correct.push(predicted == label);
            row_nll.push(-label_log_p.max(MIN_PROBABILITY.ln()));
            brier += row_brier;
        }
        Predictions {
            confidence,
            correct,
            changed_predictions: changed,
            nll: row_nll.iter().sum::<f64>() / rows as f64,
            row_nll,
            brier: brier / rows as f64,
        }
    }
}

/// One recalibration measured on the evaluation part, with its ECE on the calibration part.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MethodReport {
    pub method: Method,
    pub accuracy: f64,
    pub ece: f64,
    pub smece: f64,
    pub smece_bandwidth: f64,
    pub nll: f64,
    pub brier: f64,
    /// Distinct confidences among the evaluation rows.
    pub distinct_confidences: usize,
    /// Evaluation rows whose predicted class differs from the arg-max of the logits.
    pub changed_predictions: usize,
    /// ECE on the calibration part the method was fitted on, with the same bins.
    pub calibration_ece: f64,
    /// The evaluation part's reliability bins.
    pub bins: Vec<Bin>,
}

/// Measures `recalibration` on both parts: everything on `evaluation`, and ECE on
/// `calibration` too, with `num_bins` bins of kind `binning`.
///
/// # Errors
/// [`CalibrationError::InvalidBinCount`] unless `1 <= num_bins <= 1000`.
pub fn report(
    method: Method,
    recalibration: &Recalibration,
    calibration: &Labelled,
    evaluation: &Labelled,
    num_bins: usize,
    binning: Binning,
) -> Result<MethodReport, CalibrationError> {
    let on_calibration = recalibration.predict(calibration);
    let calibration_bins = calibration::reliability_bins(
        &on_calibration.confidence,
        &on_calibration.correct,
        num_bins,
        binning,
    )?;
    let predictions = recalibration.predict(evaluation);
    let bins = calibration::reliability_bins(
        &predictions.confidence,
        &predictions.correct,
        num_bins,
        binning,
    )?;
    let smooth = smooth_ece(&predictions.confidence, &predictions.correct)?;
    let mut distinct = predictions.confidence.clone();
    distinct.sort_unstable_by(f64::total_cmp);
    distinct.dedup();
    let right = predictions.correct.iter().filter(|&&c| c).count();
    Ok(MethodReport {
        method,
        accuracy: right as f64 / predictions.correct.len() as f64,
        ece: calibration::expected_calibration_error(&bins),
        smece: smooth.smece,
        smece_bandwidth: smooth.bandwidth,
        nll: predictions.nll,
        brier: predictions.brier,
        distinct_confidences: distinct.len(),
        changed_predictions: predictions.changed_predictions,
        calibration_ece: calibration::expected_calibration_error(&calibration_bins),
        bins,
    })
}

/// ECE (with `num_bins` bins of kind `binning`) and NLL of `recalibration` on `data`, each with
/// its bootstrap percentile interval over the rows of `data` ([`bootstrap::ece_nll_intervals`];
/// the fit held fixed): the estimates are [`report`]'s.
///
/// # Errors
/// Those of [`bootstrap::ece_nll_intervals`].
pub fn bootstrap_ece_nll(
    recalibration: &Recalibration,
    data: &Labelled,
    num_bins: usize,
    binning: Binning,
    settings: &BootstrapSettings,
) -> Result<EceNllIntervals, BootstrapError> {
    let predictions = recalibration.predict(data);
    bootstrap::ece_nll_intervals(predictions.scored_rows(), num_bins, binning, settings)
}

/// ECE (with `num_bins` bins of kind `binning`) and NLL of `first` minus those of `second` on
/// `data`, each with its paired bootstrap interval ([`bootstrap::paired_ece_nll_difference`];
/// the fits held fixed): the estimates are the differences of [`report`]'s.
///
/// # Errors
/// Those of [`bootstrap::paired_ece_nll_difference`].
pub fn paired_ece_nll_difference(
    first: &Recalibration,
    second: &Recalibration,
    data: &Labelled,
    num_bins: usize,
    binning: Binning,
    settings: &BootstrapSettings,
) -> Result<EceNllIntervals, BootstrapError> {
    let (first, second) = (first.predict(data), second.predict(data));
    bootstrap::paired_ece_nll_difference(
        first.scored_rows(),
        second.scored_rows(),
        num_bins,
        binning,
        settings,
    )
}

/// Fits `method` on `calibration` and reports it ([`fit`], then [`report`]).
///
/// # Errors
/// Those of [`fit`] and [`report`].
pub fn fit_and_report(
    method: Method,
    calibration: &Labelled,
    evaluation: &Labelled,
    num_bins: usize,
    binning: Binning,
) -> Result<MethodReport, CalibrationError> {
    let recalibration = fit(method, calibration)?;
    report(
        method,
        &recalibration,
        calibration,
        evaluation,
        num_bins,
        binning,
    )
}

#[cfg(test)]
#[path = "recalibration_tests.rs"]
mod tests;
