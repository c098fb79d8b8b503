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
//! - statrs (the Beta density of the coverage over calibration sets).
//!
//! Every definition, default and tie rule, with its source: docs/definitions.md

pub mod adaptive;
pub mod clustered;
pub mod pac;
pub mod weighted;
pub mod worst_slab;

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
/// Default miscoverage level: sets that hold the true label for at least 90% of images, the
/// level of Angelopoulos & Bates' gentle introduction.
pub const DEFAULT_ALPHA: f64 = 0.1;
/// APS, RAPS and SAPS draw their uniform `u` by default: the randomized scores are the ones
/// whose coverage is exactly `1 − α` on average rather than at least it.
pub const DEFAULT_RANDOMIZED: bool = true;

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
    /// The calibration set is too small for a training-conditional threshold at (ε, δ).
    #[error("{n} calibration rows are too few for coverage 1 - {epsilon} with probability 1 - {delta}: a finite threshold needs at least {needed}")]
    TooFewRowsForPac {
        n: usize,
        epsilon: f64,
        delta: f64,
        needed: usize,
    },
    /// There are no examples to evaluate.
    #[error("no examples to evaluate")]
    Empty,
}

/// Which score, before its parameters are attached: the one set of names the page, the CLI
/// and the tests share.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum ScoreKind {
    Lac,
    /// The default: adaptive sets without a parameter to choose.
    #[default]
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

    /// Whether the score depends on the labels' ranking (all but LAC).
    pub fn is_ranked(&self) -> bool {
        !matches!(self, Score::Lac)
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

/// The key labels are ranked by, ascending: larger probability first, ties broken by the lower
/// index, `-0.0` read as `+0.0` so that the order is total and exactly the documented one. The
/// key is `f64::total_cmp`'s integer image of `p_y`, negated, then `y`: sorting these pairs of
/// integers gives the order of that comparison about twice as fast (no indirect loads).
fn ranking_key(p: &[f64], y: usize) -> (i64, u32) {
    let bits = (p[y] + 0.0).to_bits() as i64;
    let total = bits ^ ((((bits >> 63) as u64) >> 1) as i64);
    (!total, y as u32)
}

/// Every row's labels in ranking order (by [`ranking_key`]), found once for a table of
/// probabilities. The ranked scores' parameters (RAPS's λ and `k_reg`, SAPS's λ) do not move
/// the order, so a slider over them scores the rows again without sorting them again: the sort
/// was most of such a move's frame.
#[derive(Clone, Debug)]
pub struct Rankings {
    num_classes: usize,
    /// `[rows, num_classes]`: a row's labels, most probable first.
    labels: Vec<u8>,
}

impl Rankings {
    /// The rankings of the rows of the row-major `probabilities` (`num_classes` a row); `None`
    /// for more than 256 classes, whose rows are ranked as they are scored.
    ///
    /// # Errors
    /// [`ConformalError::InvalidParameter`] for `num_classes = 0`,
    /// [`ConformalError::ShapeMismatch`] for a length that is not a multiple of it, and
    /// [`ConformalError::NonFiniteProbability`] for a NaN or infinite probability.
    pub fn new(probabilities: &[f64], num_classes: usize) -> Result<Option<Self>, ConformalError> {
        check_num_classes(num_classes)?;
        check_matrix(
            "probabilities (rows × num_classes)",
            probabilities.len(),
            probabilities.len() / num_classes,
            num_classes,
        )?;
        if num_classes > usize::from(u8::MAX) + 1 {
            return Ok(None);
        }
        let mut scorer = RowScorer::new(num_classes);
        let mut labels = Vec::with_capacity(probabilities.len());
        for (row, p) in probabilities.chunks_exact(num_classes).enumerate() {
            check_row_finite(p, row)?;
            scorer.rank(p);
            // At most 256 classes: every label fits.
            labels.extend(scorer.order.iter().map(|&(_, label)| label as u8));
        }
        Ok(Some(Self {
            num_classes,
            labels,
        }))
    }

    /// How many rows are ranked.
    pub fn rows(&self) -> usize {
        self.labels.len() / self.num_classes
    }

    fn row(&self, row: usize) -> impl Iterator<Item = usize> + '_ {
        self.labels[row * self.num_classes..(row + 1) * self.num_classes]
            .iter()
            .map(|&label| usize::from(label))
    }
}

/// Scores all labels of one row, reusing its ordering buffer across rows.
struct RowScorer {
    order: Vec<(i64, u32)>,
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
        if score.is_ranked() {
            self.rank(p);
        }
        score_in_order(p, score, u, self.labels(), out);
    }

    /// Sorts the labels of `p` into ranking order, for the ranked scores of this row.
    fn rank(&mut self, p: &[f64]) {
        self.order.clear();
        self.order.extend((0..p.len()).map(|y| ranking_key(p, y)));
        self.order.sort_unstable();
    }

    /// The labels [`RowScorer::rank`] ordered, most probable first.
    fn labels(&self) -> impl Iterator<Item = usize> + '_ {
        self.order.iter().map(|&(_, label)| label as usize)
    }
}

/// Writes `s(x, y)` for every label of `p` into `out`, the labels in ranking order given by
/// `order` (read by the ranked scores only). Preconditions as [`RowScorer::score_row`]'s.
fn score_in_order(
    p: &[f64],
    score: &Score,
    u: f64,
    order: impl Iterator<Item = usize>,
    out: &mut [f64],
) {
    let u = if score.is_randomized() { u } else { 1.0 };
    match *score {
        Score::Lac => {
            for (s, &pk) in out.iter_mut().zip(p) {
                *s = 1.0 - pk;
            }
        }
        Score::Aps { .. } => {
            by_rank(p, order, out, |before, p_label, _, _| before + u * p_label);
        }
        Score::Raps { lambda, k_reg, .. } => {
            by_rank(p, order, out, |before, p_label, rank, _| {
                before + u * p_label + lambda * rank.saturating_sub(k_reg) as f64
            });
        }
        Score::Saps { lambda, .. } => {
            by_rank(p, order, out, |_, p_label, rank, p_max| {
                if rank == 1 {
                    u * p_label
                } else {
                    p_max + lambda * ((rank - 2) as f64 + u)
                }
            });
        }
    }
}

/// Sets `out[y] = f(mass ranked above y, p_y, o(y), p_max)`, the labels in ranking order.
fn by_rank(
    p: &[f64],
    order: impl Iterator<Item = usize>,
    out: &mut [f64],
    f: impl Fn(f64, f64, usize, f64) -> f64,
) {
    let mut order = order.peekable();
    let p_max = order.peek().map_or(0.0, |&top| p[top]);
    let mut before = 0.0_f64;
    for (position, label) in order.enumerate() {
        let p_label = p[label];
        out[label] = f(before, p_label, position + 1, p_max);
        before += p_label;
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

/// Scores every row of a validated `[uniforms.len(), num_classes]` array with each of `scores`
/// (ranking its labels once for all of them, or reading them from `rankings`, which must rank
/// these rows) and hands each row's label scores to `visit` with the score's index. Checks
/// each row for non-finite values.
fn for_each_row(
    probabilities: &[f64],
    num_classes: usize,
    scores: &[Score],
    uniforms: &[f64],
    rankings: Option<&Rankings>,
    mut visit: impl FnMut(usize, usize, &[f64]),
) -> Result<(), ConformalError> {
    let mut scorer = RowScorer::new(num_classes);
    let mut row_scores = vec![0.0; num_classes];
    let ranked = scores.iter().any(Score::is_ranked);
    for (row, (p, &u)) in probabilities
        .chunks_exact(num_classes)
        .zip(uniforms)
        .enumerate()
    {
        check_row_finite(p, row)?;
        if ranked && rankings.is_none() {
            scorer.rank(p);
        }
        for (index, score) in scores.iter().enumerate() {
            match rankings {
                Some(rankings) => score_in_order(p, score, u, rankings.row(row), &mut row_scores),
                None => score_in_order(p, score, u, scorer.labels(), &mut row_scores),
            }
            visit(row, index, &row_scores);
        }
    }
    Ok(())
}

/// Checks that `rankings`, if any, rank `rows` rows of `num_classes` labels.
fn check_rankings(
    rankings: Option<&Rankings>,
    rows: usize,
    num_classes: usize,
) -> Result<(), ConformalError> {
    match rankings {
        Some(rankings) if rankings.num_classes != num_classes => {
            Err(ConformalError::InvalidParameter {
                name: "rankings' classes",
                value: rankings.num_classes as f64,
            })
        }
        Some(rankings) => check_length("rankings (one per row)", rows, rankings.rows()),
        None => Ok(()),
    }
}

/// Checks the inputs shared by the batch scoring functions: `n = uniforms.len()` rows.
fn check_batch(
    probabilities: &[f64],
    num_classes: usize,
    scores: &[Score],
    uniforms: &[f64],
) -> Result<(), ConformalError> {
    for score in scores {
        score.validate()?;
    }
    check_num_classes(num_classes)?;
    check_matrix(
        "probabilities (rows × num_classes)",
        probabilities.len(),
        uniforms.len(),
        num_classes,
    )?;
    scores
        .iter()
        .try_for_each(|score| check_uniforms(uniforms, score))
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
    check_batch(
        probabilities,
        probabilities.len(),
        std::slice::from_ref(score),
        &[u],
    )?;
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
    let tables = all_label_scores_each(
        probabilities,
        num_classes,
        std::slice::from_ref(score),
        uniforms,
        None,
    )?;
    Ok(tables.into_iter().next().unwrap_or_default())
}

/// [`all_label_scores`] of each of `scores`, in their order: each row's labels are ranked once
/// for all of them (the sort is most of a ranked score's cost), or read from `rankings` of
/// these probabilities ([`Rankings::new`]).
///
/// # Errors
/// As [`all_label_scores`], for any of the scores, and [`ConformalError::ShapeMismatch`] or
/// [`ConformalError::InvalidParameter`] for rankings of another shape.
pub fn all_label_scores_each(
    probabilities: &[f64],
    num_classes: usize,
    scores: &[Score],
    uniforms: &[f64],
    rankings: Option<&Rankings>,
) -> Result<Vec<Vec<f64>>, ConformalError> {
    check_batch(probabilities, num_classes, scores, uniforms)?;
    check_rankings(rankings, uniforms.len(), num_classes)?;
    // Not `vec![…; n]`: a clone of an empty vector drops its capacity.
    let mut tables: Vec<Vec<f64>> = scores
        .iter()
        .map(|_| Vec::with_capacity(probabilities.len()))
        .collect();
    for_each_row(
        probabilities,
        num_classes,
        scores,
        uniforms,
        rankings,
        |_, index, row| tables[index].extend_from_slice(row),
    )?;
    Ok(tables)
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
    let scores = true_label_scores_each(
        probabilities,
        labels,
        num_classes,
        std::slice::from_ref(score),
        uniforms,
        None,
    )?;
    Ok(scores.into_iter().next().unwrap_or_default())
}

/// [`true_label_scores`] of each of `scores`, in their order, each row's labels ranked once or
/// read from `rankings` of these probabilities.
///
/// # Errors
/// As [`true_label_scores`], for any of the scores, and as [`all_label_scores_each`] for
/// rankings of another shape.
pub fn true_label_scores_each(
    probabilities: &[f64],
    labels: &[u32],
    num_classes: usize,
    scores: &[Score],
    uniforms: &[f64],
    rankings: Option<&Rankings>,
) -> Result<Vec<Vec<f64>>, ConformalError> {
    check_length(
        "uniforms (one per labelled row)",
        labels.len(),
        uniforms.len(),
    )?;
    check_batch(probabilities, num_classes, scores, uniforms)?;
    check_rankings(rankings, uniforms.len(), num_classes)?;
    check_labels(labels, num_classes)?;
    let mut true_scores: Vec<Vec<f64>> = scores
        .iter()
        .map(|_| Vec::with_capacity(labels.len()))
        .collect();
    for_each_row(
        probabilities,
        num_classes,
        scores,
        uniforms,
        rankings,
        |row, index, row_scores| true_scores[index].push(row_scores[labels[row] as usize]),
    )?;
    Ok(true_scores)
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

/// How [`split_conformal`] turns the calibration scores into thresholds at α.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ThresholdRule {
    /// One `q̂` from every calibration score ([`conformal_threshold`]).
    Marginal,
    /// One `q̂_y` per class (Mondrian, [`class_conditional_thresholds`]).
    ClassConditional,
    /// One `q̂` with coverage `≥ 1 − α` for this calibration set with probability `≥ 1 − δ`
    /// ([`pac::pac_threshold`] with `ε = α`).
    TrainingConditional { delta: f64 },
    /// One `q̂` per cluster of classes with alike scores ([`clustered::clustered_thresholds`]:
    /// `clusters` overrides the heuristic's count, `seed` drives its split and k-means).
    Clustered { clusters: Option<usize>, seed: u64 },
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
    // Extended row by row into its full size: a flattened iterator's unknown length would
    // grow the vector by copies.
    let mut membership = Vec::with_capacity(label_scores.len());
    for row in label_scores.chunks_exact(num_classes) {
        membership.extend(row.iter().zip(&qhats).map(|(&s, &qhat)| s <= qhat));
    }
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
    /// Number of examples whose set contains the true label.
    pub covered: usize,
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
    /// Size strata 0 (empty sets, never covered), 1, 2–3, 4–6, 7–10, and `11–K` only when
    /// `K > 10`: Angelopoulos et al.'s strata, with the empty sets apart from the singletons,
    /// since the two mean opposite things.
    pub size_stratified: Vec<Stratum>,
    /// CovGap: mean over the classes present of `|cov_y − (1 − α)|`.
    pub covgap: f64,
}

/// Index of the size stratum (0, 1, 2–3, 4–6, 7–10, 11+).
fn stratum_index(size: u32) -> usize {
    match size {
        0 => 0,
        1 => 1,
        2..=3 => 2,
        4..=6 => 3,
        7..=10 => 4,
        _ => 5,
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
    let mut strata: Vec<Stratum> = [(0, 0), (1, 1), (2, 3), (4, 6), (7, 10)]
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
        covered,
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
/// thresholds by `rule` (marginal, Mondrian, training-conditional or clustered), then sets and
/// metrics on the evaluation part.
///
/// The caller gives each row its uniform draw `u` (used by randomized scores only). The page and
/// the CLI give row `i` of the data they split the draw `uniforms(n, seed)[i]`, so both compute
/// the same sets for the same split. Too few calibration rows give
/// `q̂ = +∞` (every label in every set), not an error; see [`finite_quantile_rank`].
///
/// # Errors
/// Any error of [`true_label_scores`], [`conformal_threshold`],
/// [`class_conditional_thresholds`], [`pac::pac_threshold`],
/// [`clustered::clustered_thresholds`], [`prediction_sets`] and
/// [`set_metrics`] (so [`ConformalError::Empty`] for no evaluation rows).
#[allow(clippy::too_many_arguments)]
pub fn split_conformal(
    calibration_probabilities: &[f64],
    calibration_labels: &[u32],
    evaluation_probabilities: &[f64],
    evaluation_labels: &[u32],
    num_classes: usize,
    score: &Score,
    alpha: f64,
    rule: ThresholdRule,
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
    let thresholds = match rule {
        ThresholdRule::Marginal => {
            Thresholds::Marginal(conformal_threshold(&calibration_scores, alpha)?)
        }
        ThresholdRule::ClassConditional => {
            Thresholds::ClassConditional(class_conditional_thresholds(
                &calibration_scores,
                calibration_labels,
                num_classes,
                alpha,
            )?)
        }
        ThresholdRule::TrainingConditional { delta } => {
            Thresholds::Marginal(pac::pac_threshold(&calibration_scores, alpha, delta)?)
        }
        ThresholdRule::Clustered { clusters, seed } => Thresholds::ClassConditional(
            clustered::clustered_thresholds(
                &calibration_scores,
                calibration_labels,
                num_classes,
                alpha,
                clusters,
                seed,
            )?
            .qhat_per_class,
        ),
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
    let k = quantile_rank(n_calibration, alpha)?;
    let mut coverages =
        coverage_experiment_at_ranks(true_label_scores, n_calibration, &[k], repetitions, seed)?;
    Ok(coverages.pop().unwrap_or_default())
}

/// [`coverage_experiment`] with the threshold of each split taken as the `k`-th smallest
/// calibration score for each `k` of `ranks` (a rank above `n_calibration` is `q̂ = +∞`), on
/// the same splits: one vector of coverages per rank, in the order of `ranks`. So the marginal
/// rank and the training-conditional one ([`pac::pac_rank`]) are measured on the same draws.
///
/// # Errors
/// [`ConformalError::NonFiniteScore`]; [`ConformalError::Empty`] for an empty pool;
/// [`ConformalError::InvalidParameter`] (`"n_calibration"`) unless `1 ≤ n_calibration < n`,
/// (`"rank"`) for a rank of 0.
pub fn coverage_experiment_at_ranks(
    true_label_scores: &[f64],
    n_calibration: usize,
    ranks: &[usize],
    repetitions: usize,
    seed: u64,
) -> Result<Vec<Vec<f64>>, ConformalError> {
    let n = true_label_scores.len();
    check_experiment(n, n_calibration)?;
    check_scores_finite(true_label_scores)?;
    if ranks.contains(&0) {
        return Err(ConformalError::InvalidParameter {
            name: "rank",
            value: 0.0,
        });
    }
    let n_evaluation = (n - n_calibration) as f64;
    let mut buffer = true_label_scores.to_vec();
    let mut coverages = vec![Vec::with_capacity(repetitions); ranks.len()];
    for repetition in 0..repetitions {
        buffer.copy_from_slice(true_label_scores);
        partial_shuffle(
            &mut buffer,
            n_calibration,
            &mut repetition_rng(seed, repetition),
        );
        let (calibration, evaluation) = buffer.split_at_mut(n_calibration);
        for (&k, coverages) in ranks.iter().zip(&mut coverages) {
            // Selection reorders the calibration part only: the split stays the same.
            let qhat = kth_smallest(calibration, k);
            coverages.push(evaluation.iter().filter(|&&s| s <= qhat).count() as f64 / n_evaluation);
        }
    }
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

/// The CovGap a perfect Mondrian predictor shows on average at these class sizes: the expected
/// mean over classes of `|coverage_y − (1 − α)|` when each class's scores are exchangeable and
/// tie-free, so that class `y`'s coverage on its `m_y` evaluation examples follows
/// `BetaBinomial(m_y, k_y, n_y + 1 − k_y) / m_y` with `k_y = ⌈(n_y + 1)(1 − α)⌉` over its `n_y`
/// calibration examples ([`CoverageLaw`]). Summed exactly over the law's support. A measured
/// CovGap near this value is what chance gives an exact method; classes with no evaluation
/// example are left out (as CovGap leaves them out), and a class too small for a finite q̂
/// (`k_y > n_y`) is covered always, a gap of exactly α.
///
/// # Errors
/// [`ConformalError::InvalidAlpha`]; [`ConformalError::InvalidParameter`] (`"classes"`) when
/// the two count lists differ in length or no class has an evaluation example.
pub fn covgap_of_exact_mondrian(
    calibration_counts: &[usize],
    evaluation_counts: &[usize],
    alpha: f64,
) -> Result<f64, ConformalError> {
    use statrs::function::gamma::ln_gamma;
    alpha_numerator(alpha)?;
    let classes = calibration_counts.len();
    let shown = evaluation_counts.iter().filter(|&&m| m > 0).count();
    if classes != evaluation_counts.len() || shown == 0 {
        return Err(ConformalError::InvalidParameter {
            name: "classes",
            value: classes as f64,
        });
    }
    let target = 1.0 - alpha;
    let mut total = 0.0;
    for (&n, &m) in calibration_counts.iter().zip(evaluation_counts) {
        if m == 0 {
            continue;
        }
        let k = quantile_rank(n, alpha)?;
        if k > n {
            total += alpha;
            continue;
        }
        // P(X = x) = C(m, x)·B(x + a, m − x + b)/B(a, b), from its mean outward by the ratio
        // P(x + 1)/P(x) = (m − x)(x + a) / ((x + 1)(m − x − 1 + b)): log-gammas only at the
        // start (an α slider frame computes this), and no term underflows near the mass.
        let (a, b, trials) = (k as f64, (n + 1 - k) as f64, m as f64);
        let ln_beta = |p: f64, q: f64| ln_gamma(p) + ln_gamma(q) - ln_gamma(p + q);
        let ratio = |x: f64| (trials - x) * (x + a) / ((x + 1.0) * (trials - x - 1.0 + b));
        let start = (trials * a / (a + b)).round().clamp(0.0, trials);
        let ln_start =
            ln_gamma(trials + 1.0) - ln_gamma(start + 1.0) - ln_gamma(trials - start + 1.0)
                + ln_beta(start + a, trials - start + b)
                - ln_beta(a, b);
        let gap = |x: f64| (x / trials - target).abs();
        let mut expected_gap = 0.0;
        let mut p = ln_start.exp();
        for x in (start as usize)..=m {
            expected_gap += p * gap(x as f64);
            p *= ratio(x as f64);
        }
        let mut p = ln_start.exp();
        for x in (0..start as usize).rev() {
            p /= ratio(x as f64);
            expected_gap += p * gap(x as f64);
        }
        total += expected_gap;
    }
    Ok(total / shown as f64)
}

/// The standard deviation of the CovGap a perfect Mondrian predictor shows at these class
/// sizes, by simulation: how far chance alone moves a measured CovGap around
/// [`covgap_of_exact_mondrian`]. Each of `draws` draws (ChaCha8 seeded with `seed`) takes
/// each class's coverage of unlimited data from `Beta(k_y, n_y + 1 − k_y)` and its measured
/// coverage from `Binomial(m_y, ·)/m_y`, the law [`covgap_of_exact_mondrian`] sums exactly;
/// classes are left out or covered always as there.
///
/// # Errors
/// As [`covgap_of_exact_mondrian`]; [`ConformalError::InvalidParameter`] (`"draws"`) for
/// fewer than 2.
pub fn covgap_spread_of_exact_mondrian(
    calibration_counts: &[usize],
    evaluation_counts: &[usize],
    alpha: f64,
    draws: usize,
    seed: u64,
) -> Result<f64, ConformalError> {
    use rand_distr::{Beta, Binomial, Distribution};
    covgap_of_exact_mondrian(calibration_counts, evaluation_counts, alpha)?;
    if draws < 2 {
        return Err(ConformalError::InvalidParameter {
            name: "draws",
            value: draws as f64,
        });
    }
    let target = 1.0 - alpha;
    // Each shown class's law: `None` for one covered always.
    let laws: Vec<(Option<Beta<f64>>, u64)> = calibration_counts
        .iter()
        .zip(evaluation_counts)
        .filter(|&(_, &m)| m > 0)
        .map(|(&n, &m)| {
            let k = quantile_rank(n, alpha)?;
            let beta = (k <= n)
                .then(|| Beta::new(k as f64, (n + 1 - k) as f64))
                .transpose()
                .map_err(|_| ConformalError::InvalidParameter {
                    name: "classes",
                    value: n as f64,
                })?;
            Ok((beta, m as u64))
        })
        .collect::<Result<_, ConformalError>>()?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let gaps: Vec<f64> = (0..draws)
        .map(|_| {
            laws.iter()
                .map(|(beta, m)| match beta {
                    None => alpha,
                    Some(beta) => {
                        let p = beta.sample(&mut rng);
                        let covered = Binomial::new(*m, p).map_or(0, |b| b.sample(&mut rng));
                        (covered as f64 / *m as f64 - target).abs()
                    }
                })
                .sum::<f64>()
                / laws.len() as f64
        })
        .collect();
    let mean = gaps.iter().sum::<f64>() / draws as f64;
    let variance = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (draws - 1) as f64;
    Ok(variance.sqrt())
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
    let k = finite_quantile_rank(n_calibration, alpha)?;
    rank_coverage_density(n_calibration, k, x)
}

/// Density at `x` of `Beta(k, n + 1 − k)`: the law of the coverage of `q̂ = s_(k)`, the `k`-th
/// smallest of `n` calibration scores, over random calibration sets (as
/// [`coverage_beta_density`], for any rank: the training-conditional one of [`pac::pac_rank`]).
/// Zero outside `[0, 1]`.
///
/// # Errors
/// [`ConformalError::InvalidParameter`] (`"rank"`) unless `1 ≤ k ≤ n`, (`"x"`) for a NaN `x`.
pub fn rank_coverage_density(
    n_calibration: usize,
    k: usize,
    x: f64,
) -> Result<f64, ConformalError> {
    use statrs::distribution::{Beta, Continuous};
    if !(1..=n_calibration).contains(&k) {
        return Err(ConformalError::InvalidParameter {
            name: "rank",
            value: k as f64,
        });
    }
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

/// For each of the `ascending` thresholds, how many of `scores` lie at or below it: each score
/// counted once where it first fits, then a running sum.
fn counts_at_or_below(ascending: &[f64], scores: impl Iterator<Item = f64>) -> Vec<usize> {
    let mut first_at_or_above = vec![0usize; ascending.len() + 1];
    for score in scores {
        first_at_or_above[ascending.partition_point(|&q| q < score)] += 1;
    }
    let mut running = 0;
    first_at_or_above[..ascending.len()]
        .iter()
        .map(|&count| {
            running += count;
            running
        })
        .collect()
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
    let qhats = alphas
        .iter()
        .map(|&alpha| {
            let k = quantile_rank(sorted_calibration.len(), alpha)?;
            Ok(sorted_calibration
                .get(k - 1)
                .copied()
                .unwrap_or(f64::INFINITY))
        })
        .collect::<Result<Vec<f64>, ConformalError>>()?;
    // Each score counted once, against the thresholds in increasing order: the labels at or
    // below each threshold are a running sum, without sorting the n·K scores.
    let mut ascending = qhats.clone();
    ascending.sort_unstable_by(f64::total_cmp);
    let covered = counts_at_or_below(
        &ascending,
        evaluation_label_scores
            .chunks_exact(num_classes)
            .zip(evaluation_labels)
            .map(|(row, &label)| row[label as usize]),
    );
    let in_sets = counts_at_or_below(&ascending, evaluation_label_scores.iter().copied());
    let n_evaluation = evaluation_labels.len() as f64;
    Ok(alphas
        .iter()
        .zip(&qhats)
        .map(|(&alpha, &qhat)| {
            let position = ascending.partition_point(|&q| q < qhat);
            SweepPoint {
                alpha,
                qhat,
                coverage: covered[position] as f64 / n_evaluation,
                average_set_size: in_sets[position] as f64 / n_evaluation,
            }
        })
        .collect())
}

#[cfg(test)]
#[path = "conformal_tests.rs"]
mod tests;
