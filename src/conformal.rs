//! Split conformal classification: prediction sets with a finite-sample coverage guarantee.
//!
//! # Method
//!
//! A nonconformity score `s(x, y)` says how badly label `y` fits input `x` (larger = worse).
//! On `n` held-out calibration examples the true-label scores `s_i = s(x_i, y_i)` are computed,
//! and the threshold is their `k`-th smallest value,
//!
//! ```text
//! k = ⌈(n + 1)(1 − α)⌉,   q̂ = s_(k)   (q̂ = +∞ when k > n),
//! C(x) = { y : s(x, y) ≤ q̂ }.
//! ```
//!
//! `k` is computed exactly in integers (α read to 9 decimal places), never as a floating-point
//! ceiling of a product that should be an integer. If the calibration scores and a new example
//! are exchangeable, `P(Y ∈ C(X)) ≥ 1 − α`; if moreover the scores have no ties,
//! `P(Y ∈ C(X)) ≤ 1 − α + 1/(n + 1)`, and over random calibration sets the coverage of a large
//! test set follows `Beta(k, n + 1 − k)`.
//! When `k > n` the threshold is `+∞` and every label is in every set: the library allows that
//! (it is the honest answer), and [`finite_quantile_rank`] turns it into an error for callers
//! that must refuse it.
//!
//! # Scores
//!
//! With `π` sorting the probabilities `p` in descending order (ties: lower class index first),
//! `o(y)` the 1-based rank of `y` and `u ~ Uniform[0, 1)` one draw per example:
//!
//! - LAC (least ambiguous set-valued classifier, TorchCP's THR): `1 − p_y`. Sets can be empty.
//! - APS: `Σ_{j<o(y)} p_{π_j} + u·p_y`; non-randomized `u = 1`, i.e. `Σ_{j≤o(y)} p_{π_j}`.
//!   Non-randomized sets are prefixes of the ranking, empty exactly when `p_max > q̂` (so never
//!   empty once `q̂ ≥ 1`). They over-cover when many scores tie: where the top of `z/T` leads
//!   every other class by more than about 37 (`e⁻³⁷ < 2⁻⁵³`), `p_max` is exactly 1 even in
//!   `f64`; if many rows are like that, their scores tie at 1, `q̂` lands on the tie and coverage
//!   jumps far above `1 − α`. The draw `u` breaks those ties.
//! - RAPS: APS `+ λ·max(0, o(y) − k_reg)`.
//! - SAPS: `u·p_max` if `o(y) = 1`, else `p_max + λ·(o(y) − 2 + u)`.
//!
//! When a score is not randomized, `u = 1` is used whatever the supplied draw (as TorchCP does).
//! Probabilities, scores and their sums are `f64` throughout (the probabilities come from
//! `calibration::softmax`, which does not round them to `f32`), so a top probability of
//! `1 − 10⁻¹⁰` and a score `10⁻¹²` away from `q̂` keep their values and their order.
//!
//! Class-conditional (Mondrian) conformal prediction computes one `q̂_y` per class from that
//! class's calibration scores with the same rule, which gives coverage `≥ 1 − α` within each
//! class; `C(x) = { y : s(x, y) ≤ q̂_y }`.
//!
//! # Sources
//!
//! - V. Vovk, A. Gammerman, G. Shafer, *Algorithmic Learning in a Random World*, Springer 2005;
//!   V. Vovk, "Conditional validity of inductive conformal predictors", ACML 2012 (Mondrian
//!   conformal prediction; the Beta distribution of coverage).
//! - M. Sadinle, J. Lei, L. Wasserman, "Least ambiguous set-valued classifiers with bounded error
//!   levels", JASA 2019 (LAC).
//! - Y. Romano, M. Sesia, E. Candès, "Classification with valid and adaptive coverage",
//!   NeurIPS 2020 (APS).
//! - A. Angelopoulos, S. Bates, J. Malik, M. Jordan, "Uncertainty sets for image classifiers
//!   using conformal prediction", ICLR 2021 (RAPS).
//! - J. Huang, H. Xi, L. Zhang, H. Yao, Y. Qiu, H. Wei, "Conformal prediction for deep
//!   classifier via label ranking", ICML 2024, arXiv:2310.06430 (SAPS).
//! - T. Ding, A. Angelopoulos, S. Bates, M. Jordan, R. Tibshirani, "Class-conditional conformal
//!   prediction with many classes", NeurIPS 2023 (CovGap).
//! - H. Wei, J. Huang et al., TorchCP (conventions: `u = 1` when not randomized, SAPS
//!   `λ = 0.2`, singleton-hit ratio).
//! - C. Lanczos, "A precision approximation of the gamma function", SIAM J. Numer. Anal. 1964
//!   (ln Γ for the Beta density).
//!
//! Every definition, default and tie rule, with its source: docs/definitions.md

use std::cmp::Ordering;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Default RAPS penalty weight λ and the rank `k_reg` after which it applies: every label after
/// the top one pays 0.1 per rank. Chosen so that RAPS visibly differs from APS on this
/// project's ten-class networks, whose sets hold one or two labels: with λ = 0.01 and
/// `k_reg` = 5 a penalty starts only at the sixth label and is too small to move any set, so
/// RAPS gave exactly APS's sets. (Angelopoulos et al., ICLR 2021, choose both on held-out data.)
pub const DEFAULT_RAPS_LAMBDA: f64 = 0.1;
pub const DEFAULT_RAPS_K_REG: usize = 1;
/// Default SAPS rank weight λ (TorchCP's default).
pub const DEFAULT_SAPS_LAMBDA: f64 = 0.2;

/// α is read as a decimal with this many parts per unit (9 decimal places).
const ALPHA_DENOMINATOR: u128 = 1_000_000_000;

/// Everything that can be wrong with the input of a conformal computation.
#[derive(Debug, Error, PartialEq)]
pub enum ConformalError {
    /// α must be finite, in (0, 1), and not round to 0 or 1 at 9 decimal places.
    #[error("alpha must be a finite number in (0, 1) that does not round to 0 or 1 at 9 decimal places, got {0}")]
    InvalidAlpha(f64),
    /// A slice does not have the length the others imply.
    #[error("{what}: expected length {expected}, got {actual}")]
    ShapeMismatch {
        what: &'static str,
        expected: usize,
        actual: usize,
    },
    /// A label is not below the number of classes.
    #[error("label {label} in row {row} is out of range for {num_classes} classes")]
    LabelOutOfRange {
        row: usize,
        label: u32,
        num_classes: usize,
    },
    /// A probability is NaN or infinite.
    #[error("probability of class {class} in row {row} is not finite")]
    NonFiniteProbability { row: usize, class: usize },
    /// A score handed in directly is NaN or infinite.
    #[error("score at index {index} is not finite")]
    NonFiniteScore { index: usize },
    /// A uniform draw for a randomized score is not in [0, 1].
    #[error("uniform draw for row {row} must lie in [0, 1], got {value}")]
    InvalidUniform { row: usize, value: f64 },
    /// A parameter is out of its range.
    #[error("invalid {name}: {value}")]
    InvalidParameter { name: &'static str, value: f64 },
    /// The calibration set is too small for a finite threshold at this α.
    #[error("{n} calibration rows are too few for alpha = {alpha}: a finite threshold needs at least {needed}")]
    TooFewCalibrationRows { n: usize, alpha: f64, needed: usize },
    /// There are no examples to evaluate.
    #[error("no examples to evaluate")]
    Empty,
}

/// Which score, before its parameters are attached: the one set of names the page, the CLI
/// and the tests share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum ScoreKind {
    Lac,
    Aps,
    Raps,
    Saps,
}

impl ScoreKind {
    /// Every score, in the order the page's comparison table lists them.
    pub const ALL: [ScoreKind; 4] = [Self::Lac, Self::Aps, Self::Raps, Self::Saps];

    /// The score with its parameters (each score takes the ones it uses).
    pub fn with(
        self,
        randomized: bool,
        raps_lambda: f64,
        raps_k_reg: usize,
        saps_lambda: f64,
    ) -> Score {
        match self {
            Self::Lac => Score::Lac,
            Self::Aps => Score::Aps { randomized },
            Self::Raps => Score::Raps {
                lambda: raps_lambda,
                k_reg: raps_k_reg,
                randomized,
            },
            Self::Saps => Score::Saps {
                lambda: saps_lambda,
                randomized,
            },
        }
    }
}

/// A nonconformity score for classification (larger = the label fits worse).
///
/// Serialized with an internal tag, e.g. `{"score":"raps","lambda":0.01,"k_reg":5,"randomized":true}`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "score", rename_all = "lowercase")]
pub enum Score {
    /// Least ambiguous set-valued classifier: `1 − p_y`.
    Lac,
    /// Adaptive prediction sets: mass of the labels ranked above `y` plus `u·p_y`.
    Aps { randomized: bool },
    /// Regularized APS: APS `+ λ·max(0, o(y) − k_reg)`.
    Raps {
        lambda: f64,
        k_reg: usize,
        randomized: bool,
    },
    /// Sorted adaptive prediction sets: only the top probability and the rank are used.
    Saps { lambda: f64, randomized: bool },
}

impl Score {
    /// Short lowercase name: `"lac"`, `"aps"`, `"raps"` or `"saps"`.
    pub fn name(&self) -> &'static str {
        match self {
            Score::Lac => "lac",
            Score::Aps { .. } => "aps",
            Score::Raps { .. } => "raps",
            Score::Saps { .. } => "saps",
        }
    }

    /// Whether the score uses the per-example uniform draw `u` (LAC never does).
    pub fn is_randomized(&self) -> bool {
        match *self {
            Score::Lac => false,
            Score::Aps { randomized }
            | Score::Raps { randomized, .. }
            | Score::Saps { randomized, .. } => randomized,
        }
    }

    /// Checks the score's parameters.
    ///
    /// # Errors
    /// [`ConformalError::InvalidParameter`] (`"lambda"`) if a RAPS or SAPS λ is negative or not
    /// finite.
    pub fn validate(&self) -> Result<(), ConformalError> {
        match *self {
            Score::Lac | Score::Aps { .. } => Ok(()),
            Score::Raps { lambda, .. } | Score::Saps { lambda, .. } => {
                if lambda.is_finite() && lambda >= 0.0 {
                    Ok(())
                } else {
                    Err(ConformalError::InvalidParameter {
                        name: "lambda",
                        value: lambda,
                    })
                }
            }
        }
    }
}

/// One uniform draw `u ∈ [0, 1)` per example from a `ChaCha8Rng` seeded with `seed`.
///
/// The same seed gives the same draws on every platform (native and WebAssembly). Scores that
/// are not randomized ignore the draws and use `u = 1`, as TorchCP does.
pub fn uniforms(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| rng.random::<f64>()).collect()
}

/// Ranking order of classes `a` and `b`: larger probability first, ties broken by the lower
/// index. `-0.0` is read as `+0.0`, so the order is total and exactly the documented one.
fn ranking_order(p: &[f64], a: usize, b: usize) -> Ordering {
    let pa = p[a] + 0.0;
    let pb = p[b] + 0.0;
    pb.total_cmp(&pa).then(a.cmp(&b))
}

/// Scores all labels of one row, reusing its ordering buffer across rows.
struct RowScorer {
    order: Vec<usize>,
}

impl RowScorer {
    fn new(num_classes: usize) -> Self {
        Self {
            order: Vec::with_capacity(num_classes),
        }
    }

    /// Writes `s(x, y)` for every label into `out`. Preconditions (checked by the callers):
    /// `p.len() == out.len()`, `p` finite, `score` validated.
    fn score_row(&mut self, p: &[f64], score: &Score, u: f64, out: &mut [f64]) {
        let u = if score.is_randomized() { u } else { 1.0 };
        match *score {
            Score::Lac => {
                for (s, &pk) in out.iter_mut().zip(p) {
                    *s = 1.0 - pk;
                }
            }
            Score::Aps { .. } => {
                self.by_rank(p, out, |before, p_label, _, _| before + u * p_label);
            }
            Score::Raps { lambda, k_reg, .. } => {
                self.by_rank(p, out, |before, p_label, rank, _| {
                    before + u * p_label + lambda * rank.saturating_sub(k_reg) as f64
                });
            }
            Score::Saps { lambda, .. } => {
                self.by_rank(p, out, |_, p_label, rank, p_max| {
                    if rank == 1 {
                        u * p_label
                    } else {
                        p_max + lambda * ((rank - 2) as f64 + u)
                    }
                });
            }
        }
    }

    /// Sorts the labels by rank and sets `out[y] = f(mass ranked above y, p_y, o(y), p_max)`.
    fn by_rank(&mut self, p: &[f64], out: &mut [f64], f: impl Fn(f64, f64, usize, f64) -> f64) {
        self.order.clear();
        self.order.extend(0..p.len());
        self.order.sort_unstable_by(|&a, &b| ranking_order(p, a, b));
        let p_max = self.order.first().map_or(0.0, |&top| p[top]);
        let mut before = 0.0_f64;
        for (position, &label) in self.order.iter().enumerate() {
            let p_label = p[label];
            out[label] = f(before, p_label, position + 1, p_max);
            before += p_label;
        }
    }
}

fn check_num_classes(num_classes: usize) -> Result<(), ConformalError> {
    if num_classes == 0 || u32::try_from(num_classes).is_err() {
        return Err(ConformalError::InvalidParameter {
            name: "num_classes",
            value: num_classes as f64,
        });
    }
    Ok(())
}

fn check_length(what: &'static str, expected: usize, actual: usize) -> Result<(), ConformalError> {
    if expected == actual {
        Ok(())
    } else {
        Err(ConformalError::ShapeMismatch {
            what,
            expected,
            actual,
        })
    }
}

/// Checks that a row-major `[rows, num_classes]` array has exactly that many entries.
fn check_matrix(
    what: &'static str,
    len: usize,
    rows: usize,
    num_classes: usize,
) -> Result<(), ConformalError> {
    check_length(what, rows.saturating_mul(num_classes), len)
}

fn check_labels(labels: &[u32], num_classes: usize) -> Result<(), ConformalError> {
    match labels
        .iter()
        .position(|&label| label as usize >= num_classes)
    {
        Some(row) => Err(ConformalError::LabelOutOfRange {
            row,
            label: labels[row],
            num_classes,
        }),
        None => Ok(()),
    }
}

fn check_scores_finite(scores: &[f64]) -> Result<(), ConformalError> {
    match scores.iter().position(|s| !s.is_finite()) {
        Some(index) => Err(ConformalError::NonFiniteScore { index }),
        None => Ok(()),
    }
}

fn check_uniforms(uniforms: &[f64], score: &Score) -> Result<(), ConformalError> {
    if !score.is_randomized() {
        return Ok(());
    }
    match uniforms.iter().position(|u| !(0.0..=1.0).contains(u)) {
        Some(row) => Err(ConformalError::InvalidUniform {
            row,
            value: uniforms[row],
        }),
        None => Ok(()),
    }
}

fn check_row_finite(p: &[f64], row: usize) -> Result<(), ConformalError> {
    match p.iter().position(|v| !v.is_finite()) {
        Some(class) => Err(ConformalError::NonFiniteProbability { row, class }),
        None => Ok(()),
    }
}

/// Scores every row of a validated `[uniforms.len(), num_classes]` array with one reused buffer
/// and hands each row's label scores to `visit`. Checks each row for non-finite values.
fn for_each_row(
    probabilities: &[f64],
    num_classes: usize,
    score: &Score,
    uniforms: &[f64],
    mut visit: impl FnMut(usize, &[f64]),
) -> Result<(), ConformalError> {
    let mut scorer = RowScorer::new(num_classes);
    let mut row_scores = vec![0.0; num_classes];
    for (row, (p, &u)) in probabilities
        .chunks_exact(num_classes)
        .zip(uniforms)
        .enumerate()
    {
        check_row_finite(p, row)?;
        scorer.score_row(p, score, u, &mut row_scores);
        visit(row, &row_scores);
    }
    Ok(())
}

/// Checks the inputs shared by the batch scoring functions: `n = uniforms.len()` rows.
fn check_batch(
    probabilities: &[f64],
    num_classes: usize,
    score: &Score,
    uniforms: &[f64],
) -> Result<(), ConformalError> {
    score.validate()?;
    check_num_classes(num_classes)?;
    check_matrix(
        "probabilities (rows × num_classes)",
        probabilities.len(),
        uniforms.len(),
        num_classes,
    )?;
    check_uniforms(uniforms, score)
}

/// Score of every label of one example: `out[y] = s(x, y)`, with `K = probabilities.len()`.
///
/// Labels are ranked by probability, descending, ties broken by the lower index; `o(y)` is the
/// 1-based rank. `u` is the example's uniform draw (ignored, i.e. `u = 1`, when the score is
/// not randomized). This single-row form allocates its ordering buffer; the batch functions
/// ([`all_label_scores`], [`prediction_sets`], [`true_label_scores`]) reuse one.
///
/// # Errors
/// [`ConformalError::ShapeMismatch`] if `out.len() != probabilities.len()`;
/// [`ConformalError::InvalidParameter`] for an empty row or a bad λ;
/// [`ConformalError::InvalidUniform`] (row 0) if the score is randomized and `u ∉ [0, 1]`;
/// [`ConformalError::NonFiniteProbability`] (row 0) for a NaN or infinite probability.
pub fn label_scores(
    probabilities: &[f64],
    score: &Score,
    u: f64,
    out: &mut [f64],
) -> Result<(), ConformalError> {
    check_batch(probabilities, probabilities.len(), score, &[u])?;
    check_length("out (one score per class)", probabilities.len(), out.len())?;
    check_row_finite(probabilities, 0)?;
    RowScorer::new(probabilities.len()).score_row(probabilities, score, u, out);
    Ok(())
}

/// Scores of all labels of all examples, row-major `[n, num_classes]` with `n = uniforms.len()`.
///
/// # Errors
/// [`ConformalError::ShapeMismatch`] if `probabilities.len() != n·num_classes`;
/// [`ConformalError::InvalidParameter`] for `num_classes = 0` or a bad λ;
/// [`ConformalError::InvalidUniform`] for a draw outside `[0, 1]` (randomized scores);
/// [`ConformalError::NonFiniteProbability`] for a NaN or infinite probability.
pub fn all_label_scores(
    probabilities: &[f64],
    num_classes: usize,
    score: &Score,
    uniforms: &[f64],
) -> Result<Vec<f64>, ConformalError> {
    check_batch(probabilities, num_classes, score, uniforms)?;
    let mut scores = Vec::with_capacity(probabilities.len());
    for_each_row(probabilities, num_classes, score, uniforms, |_, row| {
        scores.extend_from_slice(row);
    })?;
    Ok(scores)
}

/// True-label score `s(x_i, y_i)` of every example (the calibration scores).
///
/// Computed with the same code path as [`all_label_scores`], so a calibration score and the
/// same example's entry in a prediction set are bit-identical.
///
/// # Errors
/// As [`all_label_scores`], plus [`ConformalError::ShapeMismatch`] if `uniforms.len()` differs
/// from `labels.len()` and [`ConformalError::LabelOutOfRange`] for a label `≥ num_classes`.
pub fn true_label_scores(
    probabilities: &[f64],
    labels: &[u32],
    num_classes: usize,
    score: &Score,
    uniforms: &[f64],
) -> Result<Vec<f64>, ConformalError> {
    check_length(
        "uniforms (one per labelled row)",
        labels.len(),
        uniforms.len(),
    )?;
    check_batch(probabilities, num_classes, score, uniforms)?;
    check_labels(labels, num_classes)?;
    let mut scores = Vec::with_capacity(labels.len());
    for_each_row(
        probabilities,
        num_classes,
        score,
        uniforms,
        |row, row_scores| {
            scores.push(row_scores[labels[row] as usize]);
        },
    )?;
    Ok(scores)
}

/// Numerator of α over [`ALPHA_DENOMINATOR`], validated to lie in `1..ALPHA_DENOMINATOR`.
fn alpha_numerator(alpha: f64) -> Result<u128, ConformalError> {
    if !(alpha.is_finite() && alpha > 0.0 && alpha < 1.0) {
        return Err(ConformalError::InvalidAlpha(alpha));
    }
    let numerator = (alpha * ALPHA_DENOMINATOR as f64).round();
    if numerator < 1.0 || numerator >= ALPHA_DENOMINATOR as f64 {
        return Err(ConformalError::InvalidAlpha(alpha));
    }
    Ok(numerator as u128)
}

/// `k = ⌈(n + 1)(1 − α)⌉`, the rank of the conformal threshold, computed exactly in integers.
///
/// α is read as a decimal with 9 places: `A = round(α·10⁹)`, `D = 10⁹`,
/// `k = ((n + 1)(D − A) + D − 1) / D` in `u128`. The result may exceed `n` (then `q̂ = +∞`);
/// it is always at least 1.
///
/// # Errors
/// [`ConformalError::InvalidAlpha`] unless α is finite, in (0, 1) and does not round to 0 or 1 at
/// 9 decimal places; [`ConformalError::InvalidParameter`] (`"n"`) if `k` does not fit in `usize`
/// (only for `n = usize::MAX`).
pub fn quantile_rank(n: usize, alpha: f64) -> Result<usize, ConformalError> {
    let numerator = alpha_numerator(alpha)?;
    // ⌈x / D⌉ = (x + D − 1) / D in integers.
    let k = ((n as u128 + 1) * (ALPHA_DENOMINATOR - numerator)).div_ceil(ALPHA_DENOMINATOR);
    usize::try_from(k).map_err(|_| ConformalError::InvalidParameter {
        name: "n",
        value: n as f64,
    })
}

/// The smallest calibration size `n` with a finite threshold at α, i.e. with
/// `⌈(n + 1)(1 − α)⌉ ≤ n`: `n = ⌈(1 − α)/α⌉`, computed exactly (α read to 9 decimals).
///
/// # Errors
/// [`ConformalError::InvalidAlpha`] as in [`quantile_rank`].
pub fn minimum_calibration_rows(alpha: f64) -> Result<usize, ConformalError> {
    let numerator = alpha_numerator(alpha)?;
    // ⌈(D − A)/A⌉ = ⌊(D − 1)/A⌋; at most 10⁹ − 1, so it fits in usize on 32-bit targets.
    let needed = (ALPHA_DENOMINATOR - 1) / numerator;
    usize::try_from(needed).map_err(|_| ConformalError::InvalidAlpha(alpha))
}

/// [`quantile_rank`] for callers that must refuse an infinite threshold (the CLI): `k ≤ n`.
///
/// # Errors
/// As [`quantile_rank`], plus [`ConformalError::TooFewCalibrationRows`] when `k > n`.
pub fn finite_quantile_rank(n: usize, alpha: f64) -> Result<usize, ConformalError> {
    let k = quantile_rank(n, alpha)?;
    if k > n {
        return Err(ConformalError::TooFewCalibrationRows {
            n,
            alpha,
            needed: minimum_calibration_rows(alpha)?,
        });
    }
    Ok(k)
}

/// The `k`-th smallest value (1-based), or `+∞` when `k > values.len()`. Reorders `values`.
/// `k ≥ 1` (guaranteed by [`quantile_rank`]); values are finite.
fn kth_smallest(values: &mut [f64], k: usize) -> f64 {
    if k > values.len() {
        return f64::INFINITY;
    }
    *values.select_nth_unstable_by(k - 1, f64::total_cmp).1
}

/// Marginal conformal threshold: `q̂` = the `k`-th smallest score, `k = ⌈(n + 1)(1 − α)⌉`.
///
/// `O(n)` (selection, not a sort). Returns `+∞` when `k > n`, including for no scores: every
/// label is then in every set.
///
/// # Errors
/// [`ConformalError::InvalidAlpha`] for a bad α; [`ConformalError::NonFiniteScore`] for a NaN or
/// infinite score.
pub fn conformal_threshold(scores: &[f64], alpha: f64) -> Result<f64, ConformalError> {
    let k = quantile_rank(scores.len(), alpha)?;
    check_scores_finite(scores)?;
    let mut buffer = scores.to_vec();
    Ok(kth_smallest(&mut buffer, k))
}

/// Class-conditional (Mondrian) thresholds: `q̂_y` from the `n_y` calibration scores of class `y`
/// with the same rule as [`conformal_threshold`]; `+∞` when `k > n_y` (including `n_y = 0`).
///
/// # Errors
/// [`ConformalError::InvalidAlpha`]; [`ConformalError::InvalidParameter`] for
/// `num_classes = 0`; [`ConformalError::ShapeMismatch`] if `scores.len() != labels.len()`;
/// [`ConformalError::LabelOutOfRange`]; [`ConformalError::NonFiniteScore`].
pub fn class_conditional_thresholds(
    scores: &[f64],
    labels: &[u32],
    num_classes: usize,
    alpha: f64,
) -> Result<Vec<f64>, ConformalError> {
    alpha_numerator(alpha)?;
    check_num_classes(num_classes)?;
    check_length("scores (one per label)", labels.len(), scores.len())?;
    check_labels(labels, num_classes)?;
    check_scores_finite(scores)?;
    // Counting sort by class: class y's scores occupy grouped[starts[y]..starts[y + 1]].
    let mut starts = vec![0_usize; num_classes + 1];
    for &label in labels {
        starts[label as usize + 1] += 1;
    }
    for class in 0..num_classes {
        starts[class + 1] += starts[class];
    }
    let mut next = starts.clone();
    let mut grouped = vec![0.0; scores.len()];
    for (&score, &label) in scores.iter().zip(labels) {
        grouped[next[label as usize]] = score;
        next[label as usize] += 1;
    }
    starts
        .windows(2)
        .map(|bounds| {
            let class_scores = &mut grouped[bounds[0]..bounds[1]];
            let k = quantile_rank(class_scores.len(), alpha)?;
            Ok(kth_smallest(class_scores, k))
        })
        .collect()
}

/// The threshold `q̂_y` applied to label `y`.
#[derive(Clone, Debug, PartialEq)]
pub enum Thresholds {
    /// One threshold for every label.
    Marginal(f64),
    /// One threshold per class (Mondrian), indexed by label.
    ClassConditional(Vec<f64>),
}

impl Thresholds {
    /// `q̂_y` for `label`, or `None` for a class-conditional label out of range.
    pub fn for_label(&self, label: usize) -> Option<f64> {
        match self {
            Thresholds::Marginal(qhat) => Some(*qhat),
            Thresholds::ClassConditional(qhats) => qhats.get(label).copied(),
        }
    }

    /// All thresholds: one value (marginal) or one per class.
    pub fn values(&self) -> Vec<f64> {
        match self {
            Thresholds::Marginal(qhat) => vec![*qhat],
            Thresholds::ClassConditional(qhats) => qhats.clone(),
        }
    }

    /// One threshold per label, checked: no NaN, and `num_classes` of them if class-conditional.
    fn per_label(&self, num_classes: usize) -> Result<Vec<f64>, ConformalError> {
        let expanded = match self {
            Thresholds::Marginal(qhat) => vec![*qhat; num_classes],
            Thresholds::ClassConditional(qhats) => {
                check_length(
                    "class-conditional thresholds (one per class)",
                    num_classes,
                    qhats.len(),
                )?;
                qhats.clone()
            }
        };
        match expanded.iter().find(|q| q.is_nan()) {
            Some(&value) => Err(ConformalError::InvalidParameter {
                name: "threshold",
                value,
            }),
            None => Ok(expanded),
        }
    }
}

/// Prediction sets of `n` examples: `membership[i·K + y]` says whether `y ∈ C(x_i)`.
#[derive(Clone, Debug, PartialEq)]
pub struct PredictionSets {
    /// `K`, the number of classes.
    pub num_classes: usize,
    /// Row-major `[n, K]` membership.
    pub membership: Vec<bool>,
    /// `|C(x_i)|` for every example.
    pub sizes: Vec<u32>,
}

impl PredictionSets {
    /// Number of examples.
    pub fn len(&self) -> usize {
        self.sizes.len()
    }

    /// Whether there are no examples.
    pub fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }

    /// Membership row of example `row` (empty if out of range).
    fn row(&self, row: usize) -> &[bool] {
        row.checked_mul(self.num_classes)
            .and_then(|start| {
                self.membership
                    .get(start..start.checked_add(self.num_classes)?)
            })
            .unwrap_or(&[])
    }

    /// Whether `label ∈ C(x_row)`; `false` for a row or label out of range.
    pub fn contains(&self, row: usize, label: u32) -> bool {
        self.row(row).get(label as usize).copied().unwrap_or(false)
    }

    /// The labels in `C(x_row)`, ascending (none for a row out of range).
    pub fn set(&self, row: usize) -> impl Iterator<Item = u32> + '_ {
        (0_u32..)
            .zip(self.row(row))
            .filter_map(|(label, &inside)| inside.then_some(label))
    }
}

/// Prediction sets `C(x) = { y : s(x, y) ≤ q̂_y }` for `n = uniforms.len()` examples.
///
/// # Errors
/// As [`all_label_scores`] and [`sets_from_label_scores`].
pub fn prediction_sets(
    probabilities: &[f64],
    num_classes: usize,
    score: &Score,
    uniforms: &[f64],
    thresholds: &Thresholds,
) -> Result<PredictionSets, ConformalError> {
    let label_scores = all_label_scores(probabilities, num_classes, score, uniforms)?;
    sets_from_label_scores(&label_scores, num_classes, thresholds)
}

/// Prediction sets from precomputed scores of every label (`[n, K]` row-major, as
/// [`all_label_scores`] returns): `y ∈ C(x_i)` when `s(x_i, y) ≤ q̂_y`. Lets a caller that moves
/// only α reuse the scores.
///
/// # Errors
/// [`ConformalError::InvalidParameter`] for `num_classes = 0` or a NaN threshold;
/// [`ConformalError::ShapeMismatch`] for scores that are not whole rows or class-conditional
/// thresholds that are not one per class.
pub fn sets_from_label_scores(
    label_scores: &[f64],
    num_classes: usize,
    thresholds: &Thresholds,
) -> Result<PredictionSets, ConformalError> {
    check_num_classes(num_classes)?;
    if !label_scores.len().is_multiple_of(num_classes) {
        return Err(ConformalError::ShapeMismatch {
            what: "label scores (a multiple of num_classes)",
            expected: label_scores.len().next_multiple_of(num_classes),
            actual: label_scores.len(),
        });
    }
    let qhats = thresholds.per_label(num_classes)?;
    let membership: Vec<bool> = label_scores
        .chunks_exact(num_classes)
        .flat_map(|row| row.iter().zip(&qhats).map(|(&s, &qhat)| s <= qhat))
        .collect();
    let sizes = membership
        .chunks_exact(num_classes)
        .map(|row| row.iter().map(|&inside| u32::from(inside)).sum())
        .collect();
    Ok(PredictionSets {
        num_classes,
        membership,
        sizes,
    })
}

/// Examples whose set size lies in `min_size..=max_size`, and how often their sets cover.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stratum {
    pub min_size: u32,
    pub max_size: u32,
    pub count: usize,
    /// `None` when the stratum is empty.
    pub coverage: Option<f64>,
}

/// Quality of a batch of prediction sets.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SetMetrics {
    /// Fraction of examples whose set contains the true label.
    pub coverage: f64,
    /// Coverage among the examples of each class (`None` for a class with no examples).
    pub per_class_coverage: Vec<Option<f64>>,
    pub average_set_size: f64,
    /// Fraction with `|C| = 1`.
    pub singleton_rate: f64,
    /// Fraction with `|C| = 1` and the label covered, over all examples (TorchCP's
    /// `singleton_hit_ratio`).
    pub singleton_hit_rate: f64,
    /// Fraction with `|C| = 0`.
    pub empty_rate: f64,
    /// Size strata 0–1, 2–3, 4–6, 7–10, and `11–K` only when `K > 10`.
    pub size_stratified: Vec<Stratum>,
    /// CovGap: mean over the classes present of `|cov_y − (1 − α)|`.
    pub covgap: f64,
}

/// Index of the size stratum (0–1, 2–3, 4–6, 7–10, 11+).
fn stratum_index(size: u32) -> usize {
    match size {
        0..=1 => 0,
        2..=3 => 1,
        4..=6 => 2,
        7..=10 => 3,
        _ => 4,
    }
}

/// Coverage, per-class coverage, set sizes and size-stratified coverage of `sets` against the
/// true `labels`. Sizes are counted from `membership`.
///
/// # Errors
/// [`ConformalError::InvalidAlpha`]; [`ConformalError::InvalidParameter`] for
/// `num_classes = 0`; [`ConformalError::ShapeMismatch`] if `membership` is not
/// `labels.len() × num_classes`; [`ConformalError::LabelOutOfRange`];
/// [`ConformalError::Empty`] for no examples.
pub fn set_metrics(
    sets: &PredictionSets,
    labels: &[u32],
    alpha: f64,
) -> Result<SetMetrics, ConformalError> {
    alpha_numerator(alpha)?;
    let num_classes = sets.num_classes;
    check_num_classes(num_classes)?;
    check_matrix(
        "prediction set membership (labels × num_classes)",
        sets.membership.len(),
        labels.len(),
        num_classes,
    )?;
    check_labels(labels, num_classes)?;
    if labels.is_empty() {
        return Err(ConformalError::Empty);
    }
    let mut strata: Vec<Stratum> = [(0, 1), (2, 3), (4, 6), (7, 10)]
        .into_iter()
        .chain((num_classes > 10).then_some((11, num_classes as u32)))
        .map(|(min_size, max_size)| Stratum {
            min_size,
            max_size,
            count: 0,
            coverage: None,
        })
        .collect();
    let mut stratum_covered = vec![0_usize; strata.len()];
    let mut class_count = vec![0_usize; num_classes];
    let mut class_covered = vec![0_usize; num_classes];
    let (mut covered, mut total_size, mut singletons, mut singleton_hits, mut empties) =
        (0_usize, 0_u64, 0_usize, 0_usize, 0_usize);
    for (row, &label) in sets.membership.chunks_exact(num_classes).zip(labels) {
        let label = label as usize;
        let size = row.iter().filter(|&&inside| inside).count() as u32;
        let hit = row[label];
        covered += usize::from(hit);
        total_size += u64::from(size);
        singletons += usize::from(size == 1);
        singleton_hits += usize::from(size == 1 && hit);
        empties += usize::from(size == 0);
        class_count[label] += 1;
        class_covered[label] += usize::from(hit);
        let stratum = stratum_index(size);
        if let Some(entry) = strata.get_mut(stratum) {
            entry.count += 1;
            stratum_covered[stratum] += usize::from(hit);
        }
    }
    for (stratum, &hits) in strata.iter_mut().zip(&stratum_covered) {
        stratum.coverage = (stratum.count > 0).then(|| hits as f64 / stratum.count as f64);
    }
    let per_class_coverage: Vec<Option<f64>> = class_count
        .iter()
        .zip(&class_covered)
        .map(|(&count, &hits)| (count > 0).then(|| hits as f64 / count as f64))
        .collect();
    let target = 1.0 - alpha;
    let gaps: Vec<f64> = per_class_coverage
        .iter()
        .flatten()
        .map(|coverage| (coverage - target).abs())
        .collect();
    let n = labels.len() as f64;
    Ok(SetMetrics {
        coverage: covered as f64 / n,
        per_class_coverage,
        average_set_size: total_size as f64 / n,
        singleton_rate: singletons as f64 / n,
        singleton_hit_rate: singleton_hits as f64 / n,
        empty_rate: empties as f64 / n,
        size_stratified: strata,
        covgap: gaps.iter().sum::<f64>() / gaps.len() as f64,
    })
}

/// Result of [`split_conformal`].
#[derive(Clone, Debug, PartialEq)]
pub struct ConformalReport {
    pub score: Score,
    pub alpha: f64,
    /// One threshold (marginal) or one per class (class-conditional); `+∞` where too few rows.
    pub qhat: Vec<f64>,
    /// Metrics of the evaluation sets.
    pub metrics: SetMetrics,
    /// Prediction sets of the evaluation rows.
    pub sets: PredictionSets,
}

/// Split conformal prediction in one call: true-label scores on the calibration part,
/// thresholds (marginal or Mondrian), then sets and metrics on the evaluation part.
///
/// The caller gives each row its uniform draw `u` (used by randomized scores only). The page and
/// the CLI give row `i` of the data they split the draw `uniforms(n, seed)[i]`, so both compute
/// the same sets for the same split. Too few calibration rows give
/// `q̂ = +∞` (every label in every set), not an error; see [`finite_quantile_rank`].
///
/// # Errors
/// Any error of [`true_label_scores`], [`conformal_threshold`],
/// [`class_conditional_thresholds`], [`prediction_sets`] and [`set_metrics`] (so
/// [`ConformalError::Empty`] for no evaluation rows).
#[allow(clippy::too_many_arguments)]
pub fn split_conformal(
    calibration_probabilities: &[f64],
    calibration_labels: &[u32],
    evaluation_probabilities: &[f64],
    evaluation_labels: &[u32],
    num_classes: usize,
    score: &Score,
    alpha: f64,
    class_conditional: bool,
    calibration_uniforms: &[f64],
    evaluation_uniforms: &[f64],
) -> Result<ConformalReport, ConformalError> {
    alpha_numerator(alpha)?;
    let calibration_scores = true_label_scores(
        calibration_probabilities,
        calibration_labels,
        num_classes,
        score,
        calibration_uniforms,
    )?;
    let thresholds = if class_conditional {
        Thresholds::ClassConditional(class_conditional_thresholds(
            &calibration_scores,
            calibration_labels,
            num_classes,
            alpha,
        )?)
    } else {
        Thresholds::Marginal(conformal_threshold(&calibration_scores, alpha)?)
    };
    check_matrix(
        "evaluation probabilities (evaluation labels × num_classes)",
        evaluation_probabilities.len(),
        evaluation_labels.len(),
        num_classes,
    )?;
    let sets = prediction_sets(
        evaluation_probabilities,
        num_classes,
        score,
        evaluation_uniforms,
        &thresholds,
    )?;
    let metrics = set_metrics(&sets, evaluation_labels, alpha)?;
    Ok(ConformalReport {
        score: *score,
        alpha,
        qhat: thresholds.values(),
        metrics,
        sets,
    })
}

/// The generator of repetition `repetition` of a coverage experiment: stream `repetition` of a
/// `ChaCha8Rng` seeded with `seed`, so every repetition can be reproduced on its own.
fn repetition_rng(seed: u64, repetition: usize) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(repetition as u64);
    rng
}

/// Partial Fisher–Yates: afterwards `values[..m]` is a uniformly random `m`-subset in random
/// order. `m ≤ values.len()`.
fn partial_shuffle<T>(values: &mut [T], m: usize, rng: &mut ChaCha8Rng) {
    let n = values.len();
    for i in 0..m {
        let j = rng.random_range(i..n);
        values.swap(i, j);
    }
}

fn check_experiment(n: usize, n_calibration: usize) -> Result<(), ConformalError> {
    if n == 0 {
        return Err(ConformalError::Empty);
    }
    if n_calibration == 0 || n_calibration >= n {
        return Err(ConformalError::InvalidParameter {
            name: "n_calibration",
            value: n_calibration as f64,
        });
    }
    Ok(())
}

/// The split used by repetition `repetition` of [`coverage_experiment`] on a pool of `n`
/// examples: a permutation of `0..n` whose first `n_calibration` entries are the calibration
/// rows and the rest the evaluation rows.
///
/// # Errors
/// [`ConformalError::Empty`] for `n = 0`; [`ConformalError::InvalidParameter`]
/// (`"n_calibration"`) unless `1 ≤ n_calibration < n`.
pub fn experiment_split(
    n: usize,
    n_calibration: usize,
    seed: u64,
    repetition: usize,
) -> Result<Vec<usize>, ConformalError> {
    check_experiment(n, n_calibration)?;
    let mut indices: Vec<usize> = (0..n).collect();
    partial_shuffle(
        &mut indices,
        n_calibration,
        &mut repetition_rng(seed, repetition),
    );
    Ok(indices)
}

/// Coverage over random calibration/evaluation splits of a pool of true-label scores.
///
/// Repetition `r` splits the pool as [`experiment_split`]`(n, n_calibration, seed, r)`, computes
/// `q̂` on the calibration part and returns the fraction of evaluation scores `≤ q̂`. One buffer
/// is reused; each repetition costs `O(n)` (copy, partial Fisher–Yates, selection, count). The
/// values follow `Beta(k, n_calibration + 1 − k)` approximately when the evaluation part is large
/// (see [`coverage_beta_density`]).
///
/// # Errors
/// [`ConformalError::InvalidAlpha`]; [`ConformalError::NonFiniteScore`];
/// [`ConformalError::Empty`] for an empty pool; [`ConformalError::InvalidParameter`]
/// (`"n_calibration"`) unless `1 ≤ n_calibration < n`.
pub fn coverage_experiment(
    true_label_scores: &[f64],
    n_calibration: usize,
    alpha: f64,
    repetitions: usize,
    seed: u64,
) -> Result<Vec<f64>, ConformalError> {
    let n = true_label_scores.len();
    let k = quantile_rank(n_calibration, alpha)?;
    check_experiment(n, n_calibration)?;
    check_scores_finite(true_label_scores)?;
    let n_evaluation = (n - n_calibration) as f64;
    let mut buffer = true_label_scores.to_vec();
    let coverages = (0..repetitions)
        .map(|repetition| {
            buffer.copy_from_slice(true_label_scores);
            partial_shuffle(
                &mut buffer,
                n_calibration,
                &mut repetition_rng(seed, repetition),
            );
            let (calibration, evaluation) = buffer.split_at_mut(n_calibration);
            let qhat = kth_smallest(calibration, k);
            evaluation.iter().filter(|&&s| s <= qhat).count() as f64 / n_evaluation
        })
        .collect();
    Ok(coverages)
}

/// The law of the coverage of split conformal prediction over random calibration sets of
/// `n_calibration` exchangeable, tie-free scores, measured on `n_evaluation` further examples
/// (Vovk 2012; Angelopoulos & Bates, "A Gentle Introduction to Conformal Prediction", 2021,
/// section 3.2): with `k = ⌈(n + 1)(1 − α)⌉`, the coverage of an infinite evaluation set is
/// `Beta(k, n + 1 − k)`, and a finite one of `m` examples makes it `BetaBinomial(m, k, n + 1 −
/// k) / m`, whose variance is the Beta's times `(n + 1 + m)/m`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CoverageLaw {
    /// `k = ⌈(n + 1)(1 − α)⌉`.
    pub k: usize,
    /// `k / (n + 1)`, the mean of both laws.
    pub mean: f64,
    /// Standard deviation of `Beta(k, n + 1 − k)`.
    pub beta_standard_deviation: f64,
    /// Standard deviation of one split's measured coverage (Beta-Binomial).
    pub split_standard_deviation: f64,
}

/// The [`CoverageLaw`] for `n_calibration` calibration and `n_evaluation` evaluation examples.
///
/// # Errors
/// [`ConformalError::InvalidAlpha`]; [`ConformalError::TooFewCalibrationRows`] when `k > n`
/// (the coverage is then always 1); [`ConformalError::InvalidParameter`] (`"n_evaluation"`)
/// for no evaluation examples.
pub fn coverage_law(
    n_calibration: usize,
    n_evaluation: usize,
    alpha: f64,
) -> Result<CoverageLaw, ConformalError> {
    let k = finite_quantile_rank(n_calibration, alpha)?;
    if n_evaluation == 0 {
        return Err(ConformalError::InvalidParameter {
            name: "n_evaluation",
            value: 0.0,
        });
    }
    let (a, b) = (k as f64, (n_calibration + 1 - k) as f64);
    let beta_variance = a * b / ((a + b).powi(2) * (a + b + 1.0));
    let m = n_evaluation as f64;
    Ok(CoverageLaw {
        k,
        mean: a / (a + b),
        beta_standard_deviation: beta_variance.sqrt(),
        split_standard_deviation: (beta_variance * (a + b + m) / m).sqrt(),
    })
}

/// Density at `x` of `Beta(k, n + 1 − k)`, `k = ⌈(n + 1)(1 − α)⌉`: the distribution of the
/// coverage of a large test set over random calibration sets of size `n` (statrs's Beta).
/// Zero outside `[0, 1]`.
///
/// # Errors
/// [`ConformalError::InvalidAlpha`]; [`ConformalError::TooFewCalibrationRows`] when `k > n`
/// (the coverage is then always 1); [`ConformalError::InvalidParameter`] (`"x"`) for a NaN `x`.
pub fn coverage_beta_density(
    n_calibration: usize,
    alpha: f64,
    x: f64,
) -> Result<f64, ConformalError> {
    use statrs::distribution::{Beta, Continuous};
    let k = finite_quantile_rank(n_calibration, alpha)?;
    if x.is_nan() {
        return Err(ConformalError::InvalidParameter {
            name: "x",
            value: x,
        });
    }
    if !(0.0..=1.0).contains(&x) {
        return Ok(0.0);
    }
    let law = Beta::new(k as f64, (n_calibration + 1 - k) as f64).map_err(|_| {
        ConformalError::InvalidParameter {
            name: "n_calibration",
            value: n_calibration as f64,
        }
    })?;
    Ok(law.pdf(x))
}

/// One α of an [`alpha_sweep`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SweepPoint {
    pub alpha: f64,
    /// Marginal threshold (`+∞` when too few calibration rows).
    pub qhat: f64,
    pub coverage: f64,
    pub average_set_size: f64,
}

/// Coverage and average set size of marginal split conformal over a grid of α, for one score.
///
/// The calibration scores, the evaluation true-label scores and all evaluation label scores are
/// each sorted once; each α is then an index lookup for `q̂` and two binary searches, so the sweep
/// costs `O(nK log(nK) + |alphas| log(nK))`.
///
/// # Errors
/// [`ConformalError::InvalidParameter`] for `num_classes = 0`;
/// [`ConformalError::ShapeMismatch`] if `evaluation_label_scores` is not
/// `evaluation_labels.len() × num_classes`; [`ConformalError::LabelOutOfRange`];
/// [`ConformalError::NonFiniteScore`] (index into the calibration scores, then into the
/// evaluation scores); [`ConformalError::Empty`] for no evaluation rows;
/// [`ConformalError::InvalidAlpha`] for any bad α.
pub fn alpha_sweep(
    calibration_scores: &[f64],
    evaluation_label_scores: &[f64],
    evaluation_labels: &[u32],
    num_classes: usize,
    alphas: &[f64],
) -> Result<Vec<SweepPoint>, ConformalError> {
    check_num_classes(num_classes)?;
    check_matrix(
        "evaluation label scores (evaluation labels × num_classes)",
        evaluation_label_scores.len(),
        evaluation_labels.len(),
        num_classes,
    )?;
    check_labels(evaluation_labels, num_classes)?;
    check_scores_finite(calibration_scores)?;
    check_scores_finite(evaluation_label_scores)?;
    if evaluation_labels.is_empty() {
        return Err(ConformalError::Empty);
    }
    let mut sorted_calibration = calibration_scores.to_vec();
    sorted_calibration.sort_unstable_by(f64::total_cmp);
    let mut sorted_true: Vec<f64> = evaluation_label_scores
        .chunks_exact(num_classes)
        .zip(evaluation_labels)
        .map(|(row, &label)| row[label as usize])
        .collect();
    sorted_true.sort_unstable_by(f64::total_cmp);
    let mut sorted_all = evaluation_label_scores.to_vec();
    sorted_all.sort_unstable_by(f64::total_cmp);
    let n_evaluation = evaluation_labels.len() as f64;
    alphas
        .iter()
        .map(|&alpha| {
            let k = quantile_rank(sorted_calibration.len(), alpha)?;
            let qhat = sorted_calibration
                .get(k - 1)
                .copied()
                .unwrap_or(f64::INFINITY);
            let covered = sorted_true.partition_point(|&s| s <= qhat);
            let in_sets = sorted_all.partition_point(|&s| s <= qhat);
            Ok(SweepPoint {
                alpha,
                qhat,
                coverage: covered as f64 / n_evaluation,
                average_set_size: in_sets as f64 / n_evaluation,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::Rng;

    /// Hand-computed scores: decimal probabilities and their sums, exact to about 1e-16 in `f64`.
    const HAND_TOLERANCE: f64 = 1e-12;
    /// Trapezoid integrals of the Beta density (100,000 intervals).
    const INTEGRAL_TOLERANCE: f64 = 1e-7;
    /// Statistical checks allow this many standard errors of the mean.
    const STANDARD_ERRORS: f64 = 3.0;

    const NUM_CLASSES: usize = 10;
    const ALPHA: f64 = 0.1;
    const N_CALIBRATION: usize = 500;
    /// Pool of the split experiments: 500 calibration + 2,500 evaluation rows.
    const POOL: usize = 3000;
    const REPETITIONS: usize = 200;

    fn assert_close(actual: &[f64], expected: &[f64], tolerance: f64) {
        assert_eq!(actual.len(), expected.len());
        for (index, (a, e)) in actual.iter().zip(expected).enumerate() {
            assert!(
                (a - e).abs() <= tolerance,
                "index {index}: got {a}, expected {e} (tolerance {tolerance})"
            );
        }
    }

    fn scores_of(probabilities: &[f64], score: Score, u: f64) -> Vec<f64> {
        let mut out = vec![0.0; probabilities.len()];
        label_scores(probabilities, &score, u, &mut out).unwrap();
        out
    }

    struct Synthetic {
        probabilities: Vec<f64>,
        labels: Vec<u32>,
    }

    fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
        let radius = (-2.0 * (1.0 - rng.random::<f64>()).ln()).sqrt();
        radius * (2.0 * std::f64::consts::PI * rng.random::<f64>()).cos()
    }

    /// Logits `z_k = 2·N(0, 1) + 0.15·k`; the label is drawn from `softmax(z)`, so the model is
    /// calibrated, and classes differ in frequency and difficulty.
    fn synthetic(n: usize, seed: u64) -> Synthetic {
        synthetic_with_scale(n, seed, 2.0)
    }

    fn synthetic_with_scale(n: usize, seed: u64, scale: f64) -> Synthetic {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut probabilities = Vec::with_capacity(n * NUM_CLASSES);
        let mut labels = Vec::with_capacity(n);
        let mut weights = [0.0_f64; NUM_CLASSES];
        for _ in 0..n {
            for (class, weight) in weights.iter_mut().enumerate() {
                *weight = scale * standard_normal(&mut rng) + 0.15 * class as f64;
            }
            let max = weights.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            for weight in weights.iter_mut() {
                *weight = (*weight - max).exp();
            }
            let total: f64 = weights.iter().sum();
            let draw = rng.random::<f64>() * total;
            let mut cumulative = 0.0;
            let mut label = NUM_CLASSES - 1;
            for (class, weight) in weights.iter().enumerate() {
                cumulative += weight;
                if draw < cumulative {
                    label = class;
                    break;
                }
            }
            labels.push(label as u32);
            probabilities.extend(weights.iter().map(|w| w / total));
        }
        Synthetic {
            probabilities,
            labels,
        }
    }

    fn mean_and_standard_error(values: &[f64]) -> (f64, f64) {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, (variance / n).sqrt())
    }

    // p = [0.1, 0.5, 0.2, 0.2]: ranking π = (1, 2, 3, 0); the tie between classes 2 and 3 goes
    // to the lower index, so o = [4, 1, 2, 3].
    const TIED: [f64; 4] = [0.1, 0.5, 0.2, 0.2];

    #[test]
    fn lac_is_one_minus_probability() {
        assert_close(
            &scores_of(&TIED, Score::Lac, 0.25),
            &[0.9, 0.5, 0.8, 0.8],
            HAND_TOLERANCE,
        );
    }

    #[test]
    fn aps_sums_the_mass_ranked_above_plus_u_times_own() {
        // Non-randomized (u = 1): label 1: 0.5; label 2: 0.5+0.2 = 0.7; label 3: 0.7+0.2 = 0.9;
        // label 0: 0.9+0.1 = 1.0. The supplied u is ignored.
        let expected = [1.0, 0.5, 0.7, 0.9];
        assert_close(
            &scores_of(&TIED, Score::Aps { randomized: false }, 0.25),
            &expected,
            HAND_TOLERANCE,
        );
        // u = 0.25: label 1: 0.25·0.5 = 0.125; label 2: 0.5 + 0.05 = 0.55;
        // label 3: 0.7 + 0.05 = 0.75; label 0: 0.9 + 0.025 = 0.925.
        assert_close(
            &scores_of(&TIED, Score::Aps { randomized: true }, 0.25),
            &[0.925, 0.125, 0.55, 0.75],
            HAND_TOLERANCE,
        );
        // All tied at 0.25: ranks follow the index, cumulative sums 0.25, 0.5, 0.75, 1.0.
        assert_close(
            &scores_of(&[0.25; 4], Score::Aps { randomized: false }, 0.0),
            &[0.25, 0.5, 0.75, 1.0],
            HAND_TOLERANCE,
        );
    }

    #[test]
    fn raps_adds_a_rank_penalty_beyond_k_reg() {
        // λ = 0.1, k_reg = 2: penalty 0.1·max(0, o − 2) = 0, 0, 0.1, 0.2 for o = 1..4.
        // u = 0.25: APS values 0.125, 0.55, 0.75, 0.925 become 0.125, 0.55, 0.85, 1.125.
        let randomized = Score::Raps {
            lambda: 0.1,
            k_reg: 2,
            randomized: true,
        };
        assert_close(
            &scores_of(&TIED, randomized, 0.25),
            &[1.125, 0.125, 0.55, 0.85],
            HAND_TOLERANCE,
        );
        // Non-randomized: 0.5, 0.7, 0.9 + 0.1 = 1.0, 1.0 + 0.2 = 1.2.
        let plain = Score::Raps {
            lambda: 0.1,
            k_reg: 2,
            randomized: false,
        };
        assert_close(
            &scores_of(&TIED, plain, 0.25),
            &[1.2, 0.5, 0.7, 1.0],
            HAND_TOLERANCE,
        );
        // λ = 0 is exactly APS.
        let no_penalty = Score::Raps {
            lambda: 0.0,
            k_reg: 0,
            randomized: true,
        };
        assert_eq!(
            scores_of(&TIED, no_penalty, 0.3),
            scores_of(&TIED, Score::Aps { randomized: true }, 0.3)
        );
    }

    #[test]
    fn saps_uses_only_the_top_probability_and_the_rank() {
        // λ = 0.3, u = 0.25, p_max = 0.5: o = 1: 0.25·0.5 = 0.125; o = 2: 0.5 + 0.3·0.25 = 0.575;
        // o = 3: 0.5 + 0.3·1.25 = 0.875; o = 4: 0.5 + 0.3·2.25 = 1.175.
        let randomized = Score::Saps {
            lambda: 0.3,
            randomized: true,
        };
        assert_close(
            &scores_of(&TIED, randomized, 0.25),
            &[1.175, 0.125, 0.575, 0.875],
            HAND_TOLERANCE,
        );
        // u = 1: 0.5, 0.5 + 0.3 = 0.8, 0.5 + 0.6 = 1.1, 0.5 + 0.9 = 1.4.
        let plain = Score::Saps {
            lambda: 0.3,
            randomized: false,
        };
        assert_close(
            &scores_of(&TIED, plain, 0.25),
            &[1.4, 0.5, 0.8, 1.1],
            HAND_TOLERANCE,
        );
        // All tied at 0.25, u = 0.5: 0.125, 0.25 + 0.3·0.5 = 0.4, 0.25 + 0.3·1.5 = 0.7,
        // 0.25 + 0.3·2.5 = 1.0.
        assert_close(
            &scores_of(&[0.25; 4], randomized, 0.5),
            &[0.125, 0.4, 0.7, 1.0],
            HAND_TOLERANCE,
        );
    }

    #[test]
    fn batch_scores_match_single_row_scores() {
        let data = synthetic(50, 1);
        let draws = uniforms(50, 2);
        let score = Score::Raps {
            lambda: DEFAULT_RAPS_LAMBDA,
            k_reg: DEFAULT_RAPS_K_REG,
            randomized: true,
        };
        let all = all_label_scores(&data.probabilities, NUM_CLASSES, &score, &draws).unwrap();
        let true_scores = true_label_scores(
            &data.probabilities,
            &data.labels,
            NUM_CLASSES,
            &score,
            &draws,
        )
        .unwrap();
        for (row, p) in data.probabilities.chunks_exact(NUM_CLASSES).enumerate() {
            let single = scores_of(p, score, draws[row]);
            assert_eq!(
                &all[row * NUM_CLASSES..(row + 1) * NUM_CLASSES],
                &single[..]
            );
            assert_eq!(true_scores[row], single[data.labels[row] as usize]);
        }
    }

    #[test]
    fn uniforms_are_seeded_and_in_the_unit_interval() {
        let draws = uniforms(1000, 7);
        assert_eq!(draws, uniforms(1000, 7));
        assert_ne!(draws, uniforms(1000, 8));
        assert!(draws.iter().all(|u| (0.0..1.0).contains(u)));
        let (mean, standard_error) = mean_and_standard_error(&draws);
        assert!((mean - 0.5).abs() <= STANDARD_ERRORS * standard_error);
    }

    #[test]
    fn score_names_validation_and_serde() {
        let raps = Score::Raps {
            lambda: DEFAULT_RAPS_LAMBDA,
            k_reg: DEFAULT_RAPS_K_REG,
            randomized: true,
        };
        assert_eq!(
            serde_json::to_string(&raps).unwrap(),
            r#"{"score":"raps","lambda":0.1,"k_reg":1,"randomized":true}"#
        );
        assert_eq!(
            serde_json::from_str::<Score>(r#"{"score":"lac"}"#).unwrap(),
            Score::Lac
        );
        let saps: Score =
            serde_json::from_str(r#"{"score":"saps","lambda":0.2,"randomized":false}"#).unwrap();
        assert_eq!(
            saps,
            Score::Saps {
                lambda: DEFAULT_SAPS_LAMBDA,
                randomized: false
            }
        );
        let names: Vec<&str> = [Score::Lac, Score::Aps { randomized: true }, raps, saps]
            .iter()
            .map(Score::name)
            .collect();
        assert_eq!(names, ["lac", "aps", "raps", "saps"]);
        assert_eq!(raps.validate(), Ok(()));
        assert!(!Score::Lac.is_randomized());
        assert!(!saps.is_randomized());
    }

    #[test]
    fn quantile_rank_matches_exact_rational_arithmetic() {
        for m in 1..=999_u64 {
            let alpha = m as f64 / 1000.0;
            // k = ⌈(n + 1)(1000 − m)/1000⌉ with integers only.
            let expected = |n: u64| ((n + 1) * (1000 - m)).div_ceil(1000);
            for n in 1..=2000_u64 {
                assert_eq!(
                    quantile_rank(n as usize, alpha).unwrap() as u64,
                    expected(n),
                    "n = {n}, alpha = {alpha}"
                );
            }
            // The smallest n with a finite threshold, found by scanning.
            let needed = (1..=2000_u64).find(|&n| expected(n) <= n).unwrap();
            assert_eq!(minimum_calibration_rows(alpha).unwrap() as u64, needed);
            assert_eq!(
                finite_quantile_rank(needed as usize, alpha).unwrap() as u64,
                expected(needed)
            );
            if needed > 1 {
                assert_eq!(
                    finite_quantile_rank(needed as usize - 1, alpha),
                    Err(ConformalError::TooFewCalibrationRows {
                        n: needed as usize - 1,
                        alpha,
                        needed: needed as usize
                    })
                );
            }
        }
        // 100·(1 − 0.1) is 90.00000000000001 in floating point; the exact rank is 90.
        assert_eq!(quantile_rank(99, 0.1), Ok(90));
        assert_eq!(quantile_rank(500, 0.1), Ok(451));
        assert_eq!(quantile_rank(0, 0.1), Ok(1));
    }

    #[test]
    fn thresholds_are_order_statistics() {
        let scores = [0.5, 0.1, 0.9, 0.3, 0.7];
        // n = 5, α = 0.5: k = ⌈6·0.5⌉ = 3, the third smallest is 0.5.
        assert_eq!(conformal_threshold(&scores, 0.5), Ok(0.5));
        // α = 0.1: k = ⌈5.4⌉ = 6 > 5, so every label is in every set.
        assert_eq!(conformal_threshold(&scores, 0.1), Ok(f64::INFINITY));
        assert_eq!(conformal_threshold(&[], 0.1), Ok(f64::INFINITY));
        // Class 0 has n = 3, k = ⌈4·0.5⌉ = 2 → 0.2; class 1 has none → +∞.
        assert_eq!(
            class_conditional_thresholds(&[0.3, 0.1, 0.2], &[0, 0, 0], 2, 0.5),
            Ok(vec![0.2, f64::INFINITY])
        );
        // Classes interleaved: class 0 gets {0.9, 0.1, 0.5} → 0.5; class 1 gets {0.4, 0.2, 0.8} → 0.4.
        assert_eq!(
            class_conditional_thresholds(
                &[0.9, 0.4, 0.1, 0.2, 0.5, 0.8],
                &[0, 1, 0, 1, 0, 1],
                2,
                0.5
            ),
            Ok(vec![0.5, 0.4])
        );
    }

    #[test]
    fn lac_sets_can_be_empty() {
        // 1 − p ≤ 0.5 needs p ≥ 0.5: no class of [0.4, 0.3, 0.3] qualifies.
        let sets = prediction_sets(
            &[0.4, 0.3, 0.3, 0.6, 0.3, 0.1],
            3,
            &Score::Lac,
            &[0.0, 0.0],
            &Thresholds::Marginal(0.5),
        )
        .unwrap();
        assert_eq!(sets.sizes, [0, 1]);
        assert_eq!(sets.set(0).count(), 0);
        assert_eq!(sets.set(1).collect::<Vec<_>>(), [0]);
        assert!(sets.contains(1, 0));
        assert!(!sets.contains(1, 1));
        assert!(!sets.contains(5, 0));
        assert!(!sets.contains(0, 7));
        assert_eq!(sets.len(), 2);
        assert!(!sets.is_empty());
    }

    proptest! {
        #[test]
        fn non_randomized_aps_sets_are_ranking_prefixes(
            weights in prop::collection::vec(0.0_f64..1.0, 1..16),
            qhat in 0.0_f64..1.2,
        ) {
            let total: f64 = weights.iter().sum();
            prop_assume!(total > 0.0);
            let p: Vec<f64> = weights.iter().map(|w| w / total).collect();
            let sets = prediction_sets(
                &p,
                p.len(),
                &Score::Aps { randomized: false },
                &[0.5],
                &Thresholds::Marginal(qhat),
            )
            .unwrap();
            let mut ranking: Vec<usize> = (0..p.len()).collect();
            ranking.sort_by(|&a, &b| p[b].partial_cmp(&p[a]).unwrap().then(a.cmp(&b)));
            let size = sets.sizes[0] as usize;
            for (position, &label) in ranking.iter().enumerate() {
                prop_assert_eq!(sets.contains(0, label as u32), position < size);
            }
            // The top label scores p_max, so the set is empty only when q̂ < p_max.
            prop_assert_eq!(size == 0, p[ranking[0]] > qhat);
        }
    }

    #[test]
    fn set_metrics_by_hand() {
        // Rows (K = 3): {0} label 0 (singleton hit), {1, 2} label 0 (miss), {} label 2 (empty),
        // {0, 1, 2} label 1 (hit).
        let sets = PredictionSets {
            num_classes: 3,
            membership: vec![
                true, false, false, false, true, true, false, false, false, true, true, true,
            ],
            sizes: vec![1, 2, 0, 3],
        };
        let metrics = set_metrics(&sets, &[0, 0, 2, 1], ALPHA).unwrap();
        assert_eq!(metrics.coverage, 0.5);
        assert_eq!(
            metrics.per_class_coverage,
            [Some(0.5), Some(1.0), Some(0.0)]
        );
        assert_eq!(metrics.average_set_size, 1.5);
        assert_eq!(metrics.singleton_rate, 0.25);
        assert_eq!(metrics.singleton_hit_rate, 0.25);
        assert_eq!(metrics.empty_rate, 0.25);
        let stratum = |min_size, max_size, count, coverage| Stratum {
            min_size,
            max_size,
            count,
            coverage,
        };
        assert_eq!(
            metrics.size_stratified,
            [
                stratum(0, 1, 2, Some(0.5)),
                stratum(2, 3, 2, Some(0.5)),
                stratum(4, 6, 0, None),
                stratum(7, 10, 0, None),
            ]
        );
        // (|0.5 − 0.9| + |1 − 0.9| + |0 − 0.9|)/3 = 1.4/3.
        assert_close(&[metrics.covgap], &[1.4 / 3.0], HAND_TOLERANCE);
        // K = 12 adds an 11–12 stratum; class 1 has no examples.
        let mut membership = vec![true; 12];
        membership[3] = false;
        let wide = PredictionSets {
            num_classes: 12,
            membership,
            sizes: vec![11],
        };
        let metrics = set_metrics(&wide, &[0], ALPHA).unwrap();
        assert_eq!(metrics.size_stratified[4], stratum(11, 12, 1, Some(1.0)));
        assert_eq!(metrics.per_class_coverage[1], None);
        assert_close(&[metrics.covgap], &[0.1], HAND_TOLERANCE);
    }

    #[test]
    fn marginal_coverage_lies_in_the_guarantee_band() {
        let data = synthetic(POOL, 11);
        let draws = uniforms(POOL, 12);
        let lower = 1.0 - ALPHA;
        let upper = lower + 1.0 / (N_CALIBRATION as f64 + 1.0);
        let mean_coverage = |score: Score| {
            let scores = true_label_scores(
                &data.probabilities,
                &data.labels,
                NUM_CLASSES,
                &score,
                &draws,
            )
            .unwrap();
            let coverages =
                coverage_experiment(&scores, N_CALIBRATION, ALPHA, REPETITIONS, 13).unwrap();
            mean_and_standard_error(&coverages)
        };
        // Scores are continuous here, so non-randomized APS is exact too.
        let scores = [
            Score::Lac,
            Score::Aps { randomized: true },
            Score::Aps { randomized: false },
            Score::Raps {
                lambda: DEFAULT_RAPS_LAMBDA,
                k_reg: DEFAULT_RAPS_K_REG,
                randomized: true,
            },
            Score::Saps {
                lambda: DEFAULT_SAPS_LAMBDA,
                randomized: true,
            },
        ];
        for score in scores {
            let (mean, standard_error) = mean_coverage(score);
            let margin = STANDARD_ERRORS * standard_error;
            assert!(
                mean >= lower - margin && mean <= upper + margin,
                "{score:?}: mean coverage {mean} outside [{lower}, {upper}] ± {margin}"
            );
        }
    }

    #[test]
    fn non_randomized_aps_over_covers_saturated_probabilities() {
        // Logits 40·N(0, 1): in about a fifth of the rows the top logit leads every other by
        // more than 37, so p_max = 1.0 even in f64. Many non-randomized APS scores tie at exactly
        // 1.0, q̂ lands on the tie and coverage jumps to nearly 1. The uniform draw breaks the
        // ties.
        let data = synthetic_with_scale(POOL, 61, 40.0);
        let draws = uniforms(POOL, 62);
        let upper = 1.0 - ALPHA + 1.0 / (N_CALIBRATION as f64 + 1.0);
        let mean_coverage = |score: Score| {
            let scores = true_label_scores(
                &data.probabilities,
                &data.labels,
                NUM_CLASSES,
                &score,
                &draws,
            )
            .unwrap();
            let coverages =
                coverage_experiment(&scores, N_CALIBRATION, ALPHA, REPETITIONS, 63).unwrap();
            mean_and_standard_error(&coverages)
        };
        let (randomized, randomized_error) = mean_coverage(Score::Aps { randomized: true });
        assert!(
            (randomized - (1.0 - ALPHA)).abs()
                <= upper - (1.0 - ALPHA) + STANDARD_ERRORS * randomized_error,
            "randomized APS mean coverage {randomized}"
        );
        let (plain, plain_error) = mean_coverage(Score::Aps { randomized: false });
        assert!(
            plain > upper + STANDARD_ERRORS * plain_error && plain > randomized,
            "non-randomized APS mean coverage {plain} not above {upper}"
        );
        // q̂ = 1.0 is at least every top probability, so no set is empty.
        let (calibration, evaluation) = (0..N_CALIBRATION, N_CALIBRATION..POOL);
        let report = split_conformal(
            &data.probabilities[calibration.start * NUM_CLASSES..calibration.end * NUM_CLASSES],
            &data.labels[calibration],
            &data.probabilities[evaluation.start * NUM_CLASSES..],
            &data.labels[evaluation],
            NUM_CLASSES,
            &Score::Aps { randomized: false },
            ALPHA,
            false,
            &vec![1.0; N_CALIBRATION],
            &vec![1.0; POOL - N_CALIBRATION],
        )
        .unwrap();
        assert_eq!(report.qhat, [1.0]);
        assert_eq!(report.metrics.empty_rate, 0.0);
        assert!(report.metrics.coverage > upper);
    }

    #[test]
    fn mondrian_coverage_holds_within_every_class() {
        let data = synthetic(POOL, 21);
        let draws = uniforms(POOL, 22);
        for score in [Score::Lac, Score::Aps { randomized: true }] {
            let scores = true_label_scores(
                &data.probabilities,
                &data.labels,
                NUM_CLASSES,
                &score,
                &draws,
            )
            .unwrap();
            let mut per_class: Vec<Vec<f64>> = vec![Vec::new(); NUM_CLASSES];
            for repetition in 0..REPETITIONS {
                let split = experiment_split(POOL, N_CALIBRATION, 23, repetition).unwrap();
                let (calibration, evaluation) = split.split_at(N_CALIBRATION);
                let calibration_scores: Vec<f64> = calibration.iter().map(|&i| scores[i]).collect();
                let calibration_labels: Vec<u32> =
                    calibration.iter().map(|&i| data.labels[i]).collect();
                let qhats = class_conditional_thresholds(
                    &calibration_scores,
                    &calibration_labels,
                    NUM_CLASSES,
                    ALPHA,
                )
                .unwrap();
                let mut count = [0_usize; NUM_CLASSES];
                let mut covered = [0_usize; NUM_CLASSES];
                for &i in evaluation {
                    let label = data.labels[i] as usize;
                    count[label] += 1;
                    covered[label] += usize::from(scores[i] <= qhats[label]);
                }
                for class in 0..NUM_CLASSES {
                    if count[class] > 0 {
                        per_class[class].push(covered[class] as f64 / count[class] as f64);
                    }
                }
            }
            for (class, coverages) in per_class.iter().enumerate() {
                let (mean, standard_error) = mean_and_standard_error(coverages);
                assert!(
                    mean >= 1.0 - ALPHA - STANDARD_ERRORS * standard_error,
                    "{} class {class}: mean coverage {mean}",
                    score.name()
                );
            }
        }
    }

    #[test]
    fn split_conformal_sets_follow_the_thresholds() {
        let calibration = synthetic(N_CALIBRATION, 51);
        let evaluation = synthetic(800, 52);
        let seed = 53;
        let n_evaluation = evaluation.labels.len();
        let draws = uniforms(N_CALIBRATION + n_evaluation, seed);
        for class_conditional in [false, true] {
            for score in [
                Score::Aps { randomized: false },
                Score::Saps {
                    lambda: DEFAULT_SAPS_LAMBDA,
                    randomized: true,
                },
            ] {
                let (calibration_draws, evaluation_draws) = draws.split_at(N_CALIBRATION);
                let report = split_conformal(
                    &calibration.probabilities,
                    &calibration.labels,
                    &evaluation.probabilities,
                    &evaluation.labels,
                    NUM_CLASSES,
                    &score,
                    ALPHA,
                    class_conditional,
                    calibration_draws,
                    evaluation_draws,
                )
                .unwrap();
                let calibration_scores = true_label_scores(
                    &calibration.probabilities,
                    &calibration.labels,
                    NUM_CLASSES,
                    &score,
                    &draws[..N_CALIBRATION],
                )
                .unwrap();
                let expected_qhat = if class_conditional {
                    class_conditional_thresholds(
                        &calibration_scores,
                        &calibration.labels,
                        NUM_CLASSES,
                        ALPHA,
                    )
                    .unwrap()
                } else {
                    vec![conformal_threshold(&calibration_scores, ALPHA).unwrap()]
                };
                assert_eq!(report.qhat, expected_qhat);
                let all = all_label_scores(
                    &evaluation.probabilities,
                    NUM_CLASSES,
                    &score,
                    &draws[N_CALIBRATION..],
                )
                .unwrap();
                let mut covered = 0;
                for row in 0..n_evaluation {
                    let members: Vec<u32> = (0..NUM_CLASSES as u32)
                        .filter(|&y| {
                            let qhat = report.qhat[if class_conditional { y as usize } else { 0 }];
                            all[row * NUM_CLASSES + y as usize] <= qhat
                        })
                        .collect();
                    assert_eq!(report.sets.set(row).collect::<Vec<_>>(), members);
                    assert_eq!(report.sets.sizes[row] as usize, members.len());
                    covered += usize::from(members.contains(&evaluation.labels[row]));
                }
                assert_eq!(
                    report.metrics.coverage,
                    covered as f64 / n_evaluation as f64
                );
                if !class_conditional && score == (Score::Aps { randomized: false }) {
                    // The top label scores p_max: a set is empty exactly when p_max > q̂.
                    let over = evaluation
                        .probabilities
                        .chunks_exact(NUM_CLASSES)
                        .filter(|p| p.iter().any(|&v| v > report.qhat[0]))
                        .count();
                    assert_eq!(report.metrics.empty_rate, over as f64 / n_evaluation as f64);
                }
            }
        }
    }

    #[test]
    fn coverage_experiment_equals_brute_force() {
        let data = synthetic(1200, 31);
        let scores = true_label_scores(
            &data.probabilities,
            &data.labels,
            NUM_CLASSES,
            &Score::Lac,
            &uniforms(1200, 0),
        )
        .unwrap();
        let n_calibration = 300;
        let coverages = coverage_experiment(&scores, n_calibration, ALPHA, 5, 32).unwrap();
        assert_eq!(
            coverages,
            coverage_experiment(&scores, n_calibration, ALPHA, 5, 32).unwrap()
        );
        // k = ⌈301·0.9⌉ = ⌈270.9⌉ = 271.
        let k = 271;
        let mut previous: Option<Vec<usize>> = None;
        for (repetition, &coverage) in coverages.iter().enumerate() {
            let split = experiment_split(1200, n_calibration, 32, repetition).unwrap();
            let mut sorted = split.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..1200).collect::<Vec<_>>());
            assert_ne!(previous.as_ref(), Some(&split));
            let mut calibration: Vec<f64> =
                split[..n_calibration].iter().map(|&i| scores[i]).collect();
            calibration.sort_by(f64::total_cmp);
            let qhat = calibration[k - 1];
            let covered = split[n_calibration..]
                .iter()
                .filter(|&&i| scores[i] <= qhat)
                .count();
            assert_eq!(coverage, covered as f64 / 900.0);
            previous = Some(split);
        }
        // Too few calibration rows: q̂ = +∞ covers everything.
        assert_eq!(
            coverage_experiment(&scores, 5, ALPHA, 3, 1).unwrap(),
            [1.0, 1.0, 1.0]
        );
    }

    #[test]
    fn alpha_sweep_equals_direct_computation() {
        let calibration = synthetic(600, 41);
        let evaluation = synthetic(900, 42);
        let score = Score::Raps {
            lambda: DEFAULT_RAPS_LAMBDA,
            k_reg: DEFAULT_RAPS_K_REG,
            randomized: true,
        };
        let calibration_scores = true_label_scores(
            &calibration.probabilities,
            &calibration.labels,
            NUM_CLASSES,
            &score,
            &uniforms(600, 43),
        )
        .unwrap();
        let evaluation_draws = uniforms(900, 44);
        let evaluation_scores = all_label_scores(
            &evaluation.probabilities,
            NUM_CLASSES,
            &score,
            &evaluation_draws,
        )
        .unwrap();
        // α = 0.001 needs 999 rows; with 600, q̂ = +∞.
        let alphas = [0.001, 0.01, 0.05, 0.1, 0.2, 0.5, 0.9];
        let points = alpha_sweep(
            &calibration_scores,
            &evaluation_scores,
            &evaluation.labels,
            NUM_CLASSES,
            &alphas,
        )
        .unwrap();
        for (point, &alpha) in points.iter().zip(&alphas) {
            let qhat = conformal_threshold(&calibration_scores, alpha).unwrap();
            let sets = prediction_sets(
                &evaluation.probabilities,
                NUM_CLASSES,
                &score,
                &evaluation_draws,
                &Thresholds::Marginal(qhat),
            )
            .unwrap();
            let metrics = set_metrics(&sets, &evaluation.labels, alpha).unwrap();
            assert_eq!(
                *point,
                SweepPoint {
                    alpha,
                    qhat,
                    coverage: metrics.coverage,
                    average_set_size: metrics.average_set_size
                }
            );
        }
        assert_eq!(points[0].qhat, f64::INFINITY);
        assert_eq!(points[0].average_set_size, NUM_CLASSES as f64);
    }

    #[test]
    fn coverage_law_matches_hand_computed_cases() {
        // n = 3, α = 0.5: k = 2, Beta(2, 2) has mean 1/2 and variance 2·2/(4²·5) = 0.05.
        let law = coverage_law(3, 1, 0.5).unwrap();
        assert_eq!(law.k, 2);
        assert!((law.mean - 0.5).abs() <= 1e-15);
        assert!((law.beta_standard_deviation - 0.05_f64.sqrt()).abs() <= 1e-15);
        // One evaluation example is covered or not: a Bernoulli of the mean, for any n and α.
        for (n, alpha) in [(3, 0.5), (19, 0.1), (5000, 0.1), (999, 0.05)] {
            let law = coverage_law(n, 1, alpha).unwrap();
            let bernoulli = (law.mean * (1.0 - law.mean)).sqrt();
            assert!(
                (law.split_standard_deviation - bernoulli).abs() <= 1e-12,
                "n = {n}"
            );
        }
        // The page's split: n = m = 5,000 at α = 0.1 gives about 0.60 points per split, against
        // the 0.42 of the evaluation set's binomial noise alone.
        let law = coverage_law(5000, 5000, 0.1).unwrap();
        assert!((law.split_standard_deviation - 0.0060).abs() < 0.0001);
        assert!(matches!(
            coverage_law(5, 10, 0.01),
            Err(ConformalError::TooFewCalibrationRows { .. })
        ));
    }

    #[test]
    fn beta_density_is_normalized_with_mean_k_over_n_plus_one() {
        // n = 2, α = 0.5: k = 2, Beta(2, 1) has density 2x. n = 3: Beta(2, 2), 6x(1 − x).
        let density = coverage_beta_density(2, 0.5, 0.3).unwrap();
        assert!((density - 0.6).abs() <= 1e-12);
        let density = coverage_beta_density(3, 0.5, 0.25).unwrap();
        assert!((density - 1.125).abs() <= 1e-12);
        assert_eq!(coverage_beta_density(3, 0.5, 1.5), Ok(0.0));
        assert_eq!(coverage_beta_density(3, 0.5, -0.5), Ok(0.0));
        let intervals = 100_000;
        let step = 1.0 / intervals as f64;
        for (n, alpha) in [(500, 0.1), (19, 0.1), (100, 0.05), (5000, 0.2)] {
            let k = quantile_rank(n, alpha).unwrap();
            let (mut integral, mut first_moment) = (0.0, 0.0);
            for i in 0..=intervals {
                let x = i as f64 * step;
                let weight = if i == 0 || i == intervals { 0.5 } else { 1.0 };
                let f = coverage_beta_density(n, alpha, x).unwrap();
                integral += weight * f * step;
                first_moment += weight * x * f * step;
            }
            assert!(
                (integral - 1.0).abs() <= INTEGRAL_TOLERANCE,
                "n = {n}: {integral}"
            );
            let mean = k as f64 / (n as f64 + 1.0);
            assert!(
                (first_moment - mean).abs() <= INTEGRAL_TOLERANCE,
                "n = {n}: {first_moment} vs {mean}"
            );
        }
    }

    #[test]
    fn bad_input_is_rejected() {
        for alpha in [0.0, 1.0, -0.1, 1.5, f64::NAN, f64::INFINITY, 1e-12] {
            assert!(matches!(
                quantile_rank(10, alpha),
                Err(ConformalError::InvalidAlpha(_))
            ));
            assert!(matches!(
                conformal_threshold(&[0.5], alpha),
                Err(ConformalError::InvalidAlpha(_))
            ));
        }
        let p = [0.2, 0.3, 0.5, 0.6, 0.3, 0.1];
        let draws = [0.5, 0.5];
        assert_eq!(
            true_label_scores(&p, &[0, 3], 3, &Score::Lac, &draws),
            Err(ConformalError::LabelOutOfRange {
                row: 1,
                label: 3,
                num_classes: 3
            })
        );
        assert_eq!(
            true_label_scores(&p[..5], &[0, 1], 3, &Score::Lac, &draws),
            Err(ConformalError::ShapeMismatch {
                what: "probabilities (rows × num_classes)",
                expected: 6,
                actual: 5
            })
        );
        assert!(matches!(
            true_label_scores(&p, &[0, 1], 3, &Score::Lac, &[0.5]),
            Err(ConformalError::ShapeMismatch { .. })
        ));
        assert!(matches!(
            all_label_scores(&p, 0, &Score::Lac, &draws),
            Err(ConformalError::InvalidParameter {
                name: "num_classes",
                ..
            })
        ));
        let negative = Score::Raps {
            lambda: -0.1,
            k_reg: 5,
            randomized: true,
        };
        assert_eq!(
            negative.validate(),
            Err(ConformalError::InvalidParameter {
                name: "lambda",
                value: -0.1
            })
        );
        assert!(matches!(
            prediction_sets(&p, 3, &negative, &draws, &Thresholds::Marginal(0.5)),
            Err(ConformalError::InvalidParameter { name: "lambda", .. })
        ));
        let not_finite = Score::Saps {
            lambda: f64::NAN,
            randomized: false,
        };
        assert!(not_finite.validate().is_err());
        let mut with_nan = p;
        with_nan[4] = f64::NAN;
        assert_eq!(
            all_label_scores(&with_nan, 3, &Score::Lac, &draws),
            Err(ConformalError::NonFiniteProbability { row: 1, class: 1 })
        );
        let aps = Score::Aps { randomized: true };
        assert_eq!(
            all_label_scores(&p, 3, &aps, &[0.5, 1.5]),
            Err(ConformalError::InvalidUniform { row: 1, value: 1.5 })
        );
        assert!(all_label_scores(&p, 3, &Score::Aps { randomized: false }, &[0.5, 1.5]).is_ok());
        let mut out = [0.0; 2];
        assert!(matches!(
            label_scores(&p[..3], &aps, 0.5, &mut out),
            Err(ConformalError::ShapeMismatch { .. })
        ));
        assert_eq!(
            conformal_threshold(&[0.1, f64::NAN], 0.5),
            Err(ConformalError::NonFiniteScore { index: 1 })
        );
        assert!(matches!(
            prediction_sets(
                &p,
                3,
                &Score::Lac,
                &draws,
                &Thresholds::ClassConditional(vec![0.5; 2])
            ),
            Err(ConformalError::ShapeMismatch { .. })
        ));
        assert!(matches!(
            prediction_sets(&p, 3, &Score::Lac, &draws, &Thresholds::Marginal(f64::NAN)),
            Err(ConformalError::InvalidParameter {
                name: "threshold",
                ..
            })
        ));
        let empty = PredictionSets {
            num_classes: 3,
            membership: Vec::new(),
            sizes: Vec::new(),
        };
        assert_eq!(set_metrics(&empty, &[], ALPHA), Err(ConformalError::Empty));
        for n_calibration in [0, 3] {
            assert!(matches!(
                coverage_experiment(&[0.1, 0.2, 0.3], n_calibration, ALPHA, 1, 0),
                Err(ConformalError::InvalidParameter {
                    name: "n_calibration",
                    ..
                })
            ));
        }
        assert_eq!(
            coverage_experiment(&[], 1, ALPHA, 1, 0),
            Err(ConformalError::Empty)
        );
        assert_eq!(
            coverage_beta_density(5, 0.1, 0.5),
            Err(ConformalError::TooFewCalibrationRows {
                n: 5,
                alpha: 0.1,
                needed: 9
            })
        );
        assert!(matches!(
            coverage_beta_density(500, 0.1, f64::NAN),
            Err(ConformalError::InvalidParameter { name: "x", .. })
        ));
        assert!(matches!(
            alpha_sweep(&[0.1], &[0.1, 0.2], &[0], 2, &[0.0]),
            Err(ConformalError::InvalidAlpha(_))
        ));
        assert_eq!(
            alpha_sweep(&[0.1], &[], &[], 2, &[0.1]),
            Err(ConformalError::Empty)
        );
    }
}
