//! Post-hoc out-of-distribution detectors that read a network's penultimate features `h`
//! (the 128 activations after the first dense layer's ReLU) and, for some, its last layer
//! `z = W·h + b`: fitted on in-distribution features (and labels) and scoring any features.
//! Every score is higher for inputs that look more in-distribution, as `ood`'s logit scores,
//! so `ood::detection_metrics` reads them the same way. Computed in `f64` from `f32` features.
//!
//! # Detectors
//! * **Mahalanobis** (Lee, Lee, Lee & Shin, "A Simple Unified Framework for Detecting
//!   Out-of-Distribution Samples and Adversarial Attacks", NeurIPS 2018): class means `μ_k`
//!   and one covariance shared by the classes, `Σ = (1/N)·Σ_i (h_i − μ_{y_i})(h_i − μ_{y_i})ᵀ`;
//!   `score(h) = −min_k (h − μ_k)ᵀ Σ⁺ (h − μ_k)`. `Σ⁺` is the pseudo-inverse (eigenvalues at
//!   most `D·ε·λ_max` count as zero, NumPy's `pinvh` rule), as the authors' code takes
//!   scikit-learn's `EmpiricalCovariance.precision_`: a unit that is zero on every fitting
//!   image (a dead ReLU) leaves `Σ` singular.
//! * **KNN** (Sun, Ming, Zhu & Li, "Out-of-Distribution Detection with Deep Nearest
//!   Neighbors", ICML 2022): features scaled to unit length, `score(h) = −‖ĥ − ĥ_(k)‖₂`, the
//!   distance to the `k`-th nearest fitting feature. The paper uses `k = 50` for CIFAR-10's
//!   50,000 training images; [`knn_neighbours`] keeps that share of the pool, `k =
//!   max(1, round(N/1000))` (5 for the page's 5,000 calibration images).
//! * **ReAct** (Sun, Guo & Li, "ReAct: Out-of-distribution Detection With Rectified
//!   Activations", NeurIPS 2021): every feature clipped at `c`, the 90th percentile of all the
//!   fitting features' activations (NumPy's linear interpolation, the authors' `np.percentile`),
//!   then the energy `log Σ_k exp(z̄_k)` of `z̄ = W·min(h, c) + b`.
//! * **ASH-S** (Djurisic, Bozanic, Ashok & Liu, "Extremely Simple Activation Shaping for
//!   Out-of-Distribution Detection", ICLR 2023): keep the `D − round(D·p/100)` largest
//!   activations of `h` (`p = 90`, the paper's CIFAR setting; NumPy rounds halves to even),
//!   zero the others, scale the kept ones by `exp(s₁/s₂)` (`s₁` the sum of `h`, `s₂` of the
//!   kept values), then the energy of the logits. A row of zeros stays zero (its logits are
//!   `b`), where the authors' code divides 0 by 0.
//! * **ViM** (Wang, Li, Feng & Zhang, "ViM: Out-Of-Distribution with Virtual-logit
//!   Matching", CVPR 2022): origin `u = −W⁺b`; the principal subspace of the `d` largest
//!   eigenvalues of `(1/N)·Σ_i (h_i − u)(h_i − u)ᵀ` and its complement `R`; the virtual logit
//!   `α·‖Rᵀ(h − u)‖` with `α = mean_i max_k z_ik / mean_i ‖Rᵀ(h_i − u)‖` on the fitting
//!   features; `score(h) = log Σ_k exp(z_k) − α·‖Rᵀ(h − u)‖`. `d` follows the authors' code
//!   ([`vim_principal_dimension`]: `D/2` below 768 features, so 64 here).
//! * **GradNorm** (Huang, Geng & Li, "On the Importance of Gradients for Detecting
//!   Distributional Shifts in the Wild", NeurIPS 2021): the L1 norm of the gradient, with
//!   respect to the last layer's weight, of the cross-entropy between the uniform distribution
//!   and `softmax(z)`. That gradient is `(p − 1/K)·hᵀ`, so in closed form
//!   `score(h) = (Σ_k |p_k − 1/K|)·(Σ_j |h_j|)`, `p = softmax(z)`, no backward pass.
//!
//! Linear algebra (the pseudo-inverses and the principal subspace) goes through one symmetric
//! eigendecomposition, [`eigen`]. Definitions, and where pytorch-ood 0.4 differs:
//! docs/definitions.md.

mod eigen;

use std::slice::ChunksExact;

use thiserror::Error;

use crate::bootstrap::percentile;
use eigen::symmetric_eigen;

/// ReAct clips the features at this percentile of the fitting activations (the paper's).
pub const REACT_PERCENTILE: f64 = 90.0;
/// ASH-S prunes this percentage of each row's activations (the paper's CIFAR setting).
pub const ASH_PERCENTILE: f64 = 90.0;
/// KNN's `k` is this share of the pool: 50 of CIFAR-10's 50,000 training images in the paper.
const KNN_POOL_PER_NEIGHBOUR: f64 = 1000.0;

/// Why a feature detector was refused.
#[derive(Debug, Error, PartialEq)]
pub enum FeatureError {
    /// The values do not fill whole rows, or the width is zero.
    #[error("{len} feature values are not whole rows of {width}")]
    Ragged { len: usize, width: usize },
    /// There are no rows.
    #[error("there are no feature rows")]
    Empty,
    /// A feature is NaN or infinite.
    #[error("feature value {index} is not a finite number")]
    NonFinite { index: usize },
    /// Scored features of another width than the fitted ones.
    #[error("the features have {found} columns, but the detector was fitted on {expected}")]
    WidthMismatch { expected: usize, found: usize },
    /// Not one label a row.
    #[error("{labels} labels for {rows} feature rows")]
    LabelCount { labels: usize, rows: usize },
    /// A label outside the classes.
    #[error("label {label} of row {row} is not one of the {classes} classes")]
    LabelOutOfRange {
        label: u32,
        row: usize,
        classes: usize,
    },
    /// A class without fitting rows (its mean is undefined).
    #[error("class {0} has no fitting rows: Mahalanobis needs every class")]
    MissingClass(usize),
    /// `k` is zero or larger than the pool.
    #[error("k = {k} neighbours asked of a pool of {pool} rows")]
    InvalidNeighbours { k: usize, pool: usize },
    /// A percentile outside `[0, 100)`.
    #[error("the percentile must lie in [0, 100), got {0}")]
    InvalidPercentile(f64),
    /// A principal subspace as wide as the features, or empty.
    #[error("the principal subspace needs between 1 and {} dimensions, got {dimension}", .width - 1)]
    InvalidDimension { dimension: usize, width: usize },
    /// The last layer's weight and bias do not fit the features.
    #[error("a last layer of {weight} weights and {bias} biases does not read {width} features")]
    LastLayerShape {
        weight: usize,
        bias: usize,
        width: usize,
    },
}

/// Row-major `[n, D]` features, checked: whole rows, at least one, every value finite.
#[derive(Clone, Copy, Debug)]
pub struct Features<'a> {
    values: &'a [f32],
    width: usize,
}

impl<'a> Features<'a> {
    /// # Errors
    /// [`FeatureError::Ragged`], [`FeatureError::Empty`] or [`FeatureError::NonFinite`].
    pub fn new(values: &'a [f32], width: usize) -> Result<Self, FeatureError> {
        if width == 0 || !values.len().is_multiple_of(width) {
            return Err(FeatureError::Ragged {
                len: values.len(),
                width,
            });
        }
        if values.is_empty() {
            return Err(FeatureError::Empty);
        }
        if let Some(index) = values.iter().position(|v| !v.is_finite()) {
            return Err(FeatureError::NonFinite { index });
        }
        Ok(Self { values, width })
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.values.len() / self.width
    }

    /// Always false: [`Features::new`] refuses empty features.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Features per row `D`.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The rows, each `D` values.
    pub fn rows(&self) -> ChunksExact<'a, f32> {
        self.values.chunks_exact(self.width)
    }

    fn check_width(&self, expected: usize) -> Result<(), FeatureError> {
        if self.width == expected {
            Ok(())
        } else {
            Err(FeatureError::WidthMismatch {
                expected,
                found: self.width,
            })
        }
    }
}

/// The network's last layer `z = W·h + b` in `f64`: `W` is `[K, D]` row-major.
#[derive(Clone, Debug)]
pub struct LastLayer {
    weight: Vec<f64>,
    bias: Vec<f64>,
    width: usize,
}

impl LastLayer {
    /// # Errors
    /// [`FeatureError::LastLayerShape`] unless `weight` has `bias.len() ≥ 2` rows of `width`.
    pub fn new(weight: &[f32], bias: &[f32], width: usize) -> Result<Self, FeatureError> {
        if bias.len() < 2 || weight.len() != bias.len() * width || width == 0 {
            return Err(FeatureError::LastLayerShape {
                weight: weight.len(),
                bias: bias.len(),
                width,
            });
        }
        Ok(Self {
            weight: weight.iter().map(|&w| f64::from(w)).collect(),
            bias: bias.iter().map(|&b| f64::from(b)).collect(),
            width,
        })
    }

    /// Number of classes `K`.
    pub fn classes(&self) -> usize {
        self.bias.len()
    }

    /// `W·h + b` into `logits` (`K` values).
    fn logits_into(&self, h: &[f64], logits: &mut [f64]) {
        for ((z, w), b) in logits
            .iter_mut()
            .zip(self.weight.chunks_exact(self.width))
            .zip(&self.bias)
        {
            *z = dot(w, h) + b;
        }
    }

    /// The energy score `log Σ_k exp(z_k)` of `W·h + b` for every row of `h` after `shape`
    /// has rewritten it in place (ReAct's clipping, ASH's pruning).
    fn energies(
        &self,
        features: &Features,
        mut shape: impl FnMut(&mut [f64]),
    ) -> Result<Vec<f64>, FeatureError> {
        features.check_width(self.width)?;
        let mut h = vec![0.0; self.width];
        let mut logits = vec![0.0; self.classes()];
        Ok(features
            .rows()
            .map(|row| {
                widen_into(row, &mut h);
                shape(&mut h);
                self.logits_into(&h, &mut logits);
                log_sum_exp(&logits)
            })
            .collect())
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn widen_into(row: &[f32], out: &mut [f64]) {
    out.iter_mut()
        .zip(row)
        .for_each(|(o, &v)| *o = f64::from(v));
}

/// `log Σ_k exp(z_k)`, shifted by the largest `z_k` so that it stays finite.
fn log_sum_exp(logits: &[f64]) -> f64 {
    let max = logits.iter().fold(f64::NEG_INFINITY, |m, &z| m.max(z));
    max + logits.iter().map(|z| (z - max).exp()).sum::<f64>().ln()
}

/// The Moore–Penrose pseudo-inverse's factor of a symmetric positive semi-definite `n × n`
/// matrix: the rows `v_j/√λ_j` of its eigenvalues above `n·ε·λ_max`, so that `Σ⁺ = LᵀL`.
fn inverse_square_root(matrix: &[f64], n: usize) -> Vec<f64> {
    let eigen = symmetric_eigen(matrix, n);
    let cutoff = n as f64 * f64::EPSILON * eigen.values[0].max(0.0);
    eigen
        .values
        .iter()
        .zip(eigen.vectors.chunks_exact(n))
        .filter(|(&value, _)| value > cutoff)
        .flat_map(|(value, vector)| vector.iter().map(move |v| v / value.sqrt()))
        .collect()
}

/// Mahalanobis's fit (module documentation): the class means and the pseudo-inverse of the
/// shared covariance, kept as its factor `L` (`Σ⁺ = LᵀL`) with the means multiplied by it.
#[derive(Clone, Debug)]
pub struct Mahalanobis {
    whitening: Vec<f64>,
    whitened_means: Vec<Vec<f64>>,
    width: usize,
}

impl Mahalanobis {
    /// Fits the class means and shared covariance on `features` with `labels` in
    /// `0..num_classes`.
    ///
    /// # Errors
    /// [`FeatureError::LabelCount`], [`FeatureError::LabelOutOfRange`] or
    /// [`FeatureError::MissingClass`].
    pub fn fit(
        features: &Features,
        labels: &[u32],
        num_classes: usize,
    ) -> Result<Self, FeatureError> {
        let width = features.width();
        if labels.len() != features.len() {
            return Err(FeatureError::LabelCount {
                labels: labels.len(),
                rows: features.len(),
            });
        }
        let mut sums = vec![vec![0.0; width]; num_classes];
        let mut counts = vec![0usize; num_classes];
        for (row, (values, &label)) in features.rows().zip(labels).enumerate() {
            let class = label as usize;
            if class >= num_classes {
                return Err(FeatureError::LabelOutOfRange {
                    label,
                    row,
                    classes: num_classes,
                });
            }
            counts[class] += 1;
            sums[class]
                .iter_mut()
                .zip(values)
                .for_each(|(s, &v)| *s += f64::from(v));
        }
        if let Some(class) = counts.iter().position(|&count| count == 0) {
            return Err(FeatureError::MissingClass(class));
        }
        let means: Vec<Vec<f64>> = sums
            .into_iter()
            .zip(&counts)
            .map(|(sum, &count)| sum.into_iter().map(|s| s / count as f64).collect())
            .collect();
        let mut centred = vec![0.0; width];
        let mut covariance = vec![0.0; width * width];
        for (values, &label) in features.rows().zip(labels) {
            let mean = &means[label as usize];
            centred
                .iter_mut()
                .zip(values.iter().zip(mean))
                .for_each(|(c, (&v, m))| *c = f64::from(v) - m);
            add_outer_product(&mut covariance, &centred);
        }
        let n = features.len() as f64;
        covariance.iter_mut().for_each(|c| *c /= n);
        let whitening = inverse_square_root(&covariance, width);
        let whitened_means = means
            .iter()
            .map(|mean| {
                whitening
                    .chunks_exact(width)
                    .map(|l| dot(l, mean))
                    .collect()
            })
            .collect();
        Ok(Self {
            whitening,
            whitened_means,
            width,
        })
    }

    /// `−min_k (h − μ_k)ᵀ Σ⁺ (h − μ_k)` of every row.
    ///
    /// # Errors
    /// [`FeatureError::WidthMismatch`] for features of another width than the fitted ones.
    pub fn scores(&self, features: &Features) -> Result<Vec<f64>, FeatureError> {
        features.check_width(self.width)?;
        let mut h = vec![0.0; self.width];
        let mut whitened = vec![0.0; self.whitening.len() / self.width];
        Ok(features
            .rows()
            .map(|row| {
                widen_into(row, &mut h);
                whitened
                    .iter_mut()
                    .zip(self.whitening.chunks_exact(self.width))
                    .for_each(|(w, l)| *w = dot(l, &h));
                let nearest = self
                    .whitened_means
                    .iter()
                    .map(|mean| {
                        whitened
                            .iter()
                            .zip(mean)
                            .map(|(w, m)| (w - m) * (w - m))
                            .sum::<f64>()
                    })
                    .fold(f64::INFINITY, f64::min);
                -nearest
            })
            .collect())
    }
}

/// Adds `x·xᵀ` to the square row-major `matrix`.
fn add_outer_product(matrix: &mut [f64], x: &[f64]) {
    for (row, &xi) in matrix.chunks_exact_mut(x.len()).zip(x) {
        row.iter_mut().zip(x).for_each(|(m, &xj)| *m += xi * xj);
    }
}

/// KNN's `k` for a pool of `pool_size` fitting rows: the paper's share, one neighbour per
/// 1,000 rows, at least one.
pub fn knn_neighbours(pool_size: usize) -> usize {
    ((pool_size as f64 / KNN_POOL_PER_NEIGHBOUR).round() as usize).max(1)
}

/// KNN's fit: the fitting features scaled to unit length (module documentation).
#[derive(Clone, Debug)]
pub struct Knn {
    pool: Vec<f64>,
    width: usize,
    k: usize,
}

impl Knn {
    /// Keeps the unit-length fitting features and `k`.
    ///
    /// # Errors
    /// [`FeatureError::InvalidNeighbours`] unless `1 ≤ k ≤` the number of rows.
    pub fn fit(features: &Features, k: usize) -> Result<Self, FeatureError> {
        if k == 0 || k > features.len() {
            return Err(FeatureError::InvalidNeighbours {
                k,
                pool: features.len(),
            });
        }
        let width = features.width();
        let mut pool = vec![0.0; features.values.len()];
        for (row, out) in features.rows().zip(pool.chunks_exact_mut(width)) {
            unit_length_into(row, out);
        }
        Ok(Self { pool, width, k })
    }

    /// `−‖ĥ − ĥ_(k)‖₂` of every row: minus the distance to its `k`-th nearest fitting feature,
    /// all at unit length.
    ///
    /// # Errors
    /// [`FeatureError::WidthMismatch`] for features of another width than the fitted ones.
    pub fn scores(&self, features: &Features) -> Result<Vec<f64>, FeatureError> {
        features.check_width(self.width)?;
        let mut query = vec![0.0; self.width];
        let mut distances = vec![0.0; self.pool.len() / self.width];
        Ok(features
            .rows()
            .map(|row| {
                unit_length_into(row, &mut query);
                distances
                    .iter_mut()
                    .zip(self.pool.chunks_exact(self.width))
                    .for_each(|(d, p)| *d = squared_distance(p, &query));
                let (_, kth, _) = distances.select_nth_unstable_by(self.k - 1, f64::total_cmp);
                -kth.sqrt()
            })
            .collect())
    }
}

/// `‖a − b‖₂²` in four running sums, which the compiler keeps in vector registers (one
/// sum in order would be a chain of dependent additions): KNN spends nearly all of its time here.
fn squared_distance(a: &[f64], b: &[f64]) -> f64 {
    let (a_lanes, b_lanes) = (a.chunks_exact(4), b.chunks_exact(4));
    let tail: f64 = a_lanes
        .remainder()
        .iter()
        .zip(b_lanes.remainder())
        .map(|(x, y)| (x - y) * (x - y))
        .sum();
    let mut sums = [0.0; 4];
    for (x, y) in a_lanes.zip(b_lanes) {
        for lane in 0..4 {
            let difference = x[lane] - y[lane];
            sums[lane] += difference * difference;
        }
    }
    sums.iter().sum::<f64>() + tail
}

/// `row/‖row‖₂` into `out`; a row of zeros stays zero (pytorch-ood divides by at least 1e-12).
fn unit_length_into(row: &[f32], out: &mut [f64]) {
    widen_into(row, out);
    let norm = dot(out, out).sqrt().max(1e-12);
    out.iter_mut().for_each(|v| *v /= norm);
}

fn check_percentile(value: f64) -> Result<(), FeatureError> {
    if (0.0..100.0).contains(&value) {
        Ok(())
    } else {
        Err(FeatureError::InvalidPercentile(value))
    }
}

/// ReAct's fit: the clipping threshold `c` (module documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct React {
    /// Every activation above it is clipped to it.
    pub threshold: f64,
}

impl React {
    /// The `percentile` (ReAct's: [`REACT_PERCENTILE`]) of every activation of `features`.
    ///
    /// # Errors
    /// [`FeatureError::InvalidPercentile`] outside `[0, 100)`.
    pub fn fit(features: &Features, percentile_value: f64) -> Result<Self, FeatureError> {
        check_percentile(percentile_value)?;
        let mut activations: Vec<f64> = features.values.iter().map(|&v| f64::from(v)).collect();
        activations.sort_unstable_by(f64::total_cmp);
        Ok(Self {
            threshold: percentile(&activations, percentile_value / 100.0),
        })
    }

    /// The energy of the logits of the clipped features, every row.
    ///
    /// # Errors
    /// [`FeatureError::WidthMismatch`] when `features` are not `last_layer`'s width.
    pub fn scores(
        &self,
        features: &Features,
        last_layer: &LastLayer,
    ) -> Result<Vec<f64>, FeatureError> {
        last_layer.energies(features, |h| {
            h.iter_mut().for_each(|v| *v = v.min(self.threshold));
        })
    }
}

/// ASH-S scores (module documentation) of every row, pruning `percentile` (the paper's
/// [`ASH_PERCENTILE`]) of each row's activations.
///
/// # Errors
/// [`FeatureError::InvalidPercentile`] outside `[0, 100)` or so close to 100 that no
/// activation would be kept, [`FeatureError::WidthMismatch`] when `features` are not
/// `last_layer`'s width.
pub fn ash_scores(
    features: &Features,
    last_layer: &LastLayer,
    percentile_value: f64,
) -> Result<Vec<f64>, FeatureError> {
    check_percentile(percentile_value)?;
    let width = features.width();
    let kept = width - (width as f64 * percentile_value / 100.0).round_ties_even() as usize;
    if kept == 0 {
        return Err(FeatureError::InvalidPercentile(percentile_value));
    }
    let mut order: Vec<usize> = (0..width).collect();
    let mut shaped = vec![0.0; width];
    last_layer.energies(features, |h| {
        let total: f64 = h.iter().sum();
        order
            .iter_mut()
            .enumerate()
            .for_each(|(i, index)| *index = i);
        order.select_nth_unstable_by(kept - 1, |&i, &j| h[j].total_cmp(&h[i]));
        let kept_sum: f64 = order[..kept].iter().map(|&i| h[i]).sum();
        let scale = if kept_sum > 0.0 {
            (total / kept_sum).exp()
        } else {
            0.0
        };
        shaped.fill(0.0);
        for &i in &order[..kept] {
            shaped[i] = h[i] * scale;
        }
        h.copy_from_slice(&shaped);
    })
}

/// ViM's principal dimension `d` for `width` features, the authors' rule: 1,000 from 2,048
/// features, 512 from 768, half the features below.
pub fn vim_principal_dimension(width: usize) -> usize {
    if width >= 2048 {
        1000
    } else if width >= 768 {
        512
    } else {
        width / 2
    }
}

/// ViM's fit (module documentation): the origin `u`, the residual subspace's basis and `α`.
#[derive(Clone, Debug)]
pub struct Vim {
    origin: Vec<f64>,
    residual: Vec<f64>,
    /// The virtual logit's scale.
    pub alpha: f64,
    last_layer: LastLayer,
}

impl Vim {
    /// Fits ViM on `features` with a principal subspace of `dimension` (the authors':
    /// [`vim_principal_dimension`]).
    ///
    /// # Errors
    /// [`FeatureError::WidthMismatch`] when `features` are not `last_layer`'s width,
    /// [`FeatureError::InvalidDimension`] unless `1 ≤ dimension < D`.
    pub fn fit(
        features: &Features,
        last_layer: &LastLayer,
        dimension: usize,
    ) -> Result<Self, FeatureError> {
        let width = last_layer.width;
        features.check_width(width)?;
        if dimension == 0 || dimension >= width {
            return Err(FeatureError::InvalidDimension { dimension, width });
        }
        let origin = last_layer_origin(last_layer);
        let mut centred = vec![0.0; width];
        let mut covariance = vec![0.0; width * width];
        for row in features.rows() {
            centre_into(row, &origin, &mut centred);
            add_outer_product(&mut covariance, &centred);
        }
        let n = features.len() as f64;
        covariance.iter_mut().for_each(|c| *c /= n);
        let residual = symmetric_eigen(&covariance, width).vectors[dimension * width..].to_vec();
        let mut vim = Self {
            origin,
            residual,
            alpha: 1.0,
            last_layer: last_layer.clone(),
        };
        let (mut h, mut logits) = (vec![0.0; width], vec![0.0; last_layer.classes()]);
        let (mut max_logits, mut residual_norms) = (0.0, 0.0);
        for row in features.rows() {
            widen_into(row, &mut h);
            last_layer.logits_into(&h, &mut logits);
            max_logits += logits.iter().fold(f64::NEG_INFINITY, |m, &z| m.max(z));
            residual_norms += vim.residual_norm(row, &mut centred);
        }
        vim.alpha = max_logits / residual_norms;
        Ok(vim)
    }

    /// `‖Rᵀ(h − u)‖`, with `centred` as scratch space.
    fn residual_norm(&self, row: &[f32], centred: &mut [f64]) -> f64 {
        centre_into(row, &self.origin, centred);
        self.residual
            .chunks_exact(self.origin.len())
            .map(|r| dot(r, centred).powi(2))
            .sum::<f64>()
            .sqrt()
    }

    /// `log Σ_k exp(z_k) − α·‖Rᵀ(h − u)‖` of every row.
    ///
    /// # Errors
    /// [`FeatureError::WidthMismatch`] for features of another width than the fitted ones.
    pub fn scores(&self, features: &Features) -> Result<Vec<f64>, FeatureError> {
        features.check_width(self.origin.len())?;
        let mut h = vec![0.0; self.origin.len()];
        let mut centred = h.clone();
        let mut logits = vec![0.0; self.last_layer.classes()];
        Ok(features
            .rows()
            .map(|row| {
                widen_into(row, &mut h);
                self.last_layer.logits_into(&h, &mut logits);
                log_sum_exp(&logits) - self.alpha * self.residual_norm(row, &mut centred)
            })
            .collect())
    }
}

/// `row − origin` into `out`.
fn centre_into(row: &[f32], origin: &[f64], out: &mut [f64]) {
    out.iter_mut()
        .zip(row.iter().zip(origin))
        .for_each(|(o, (&v, u))| *o = f64::from(v) - u);
}

/// ViM's origin `u = −W⁺b = −Wᵀ(WWᵀ)⁺b`: the point whose logits are all zero, nearest 0.
fn last_layer_origin(last_layer: &LastLayer) -> Vec<f64> {
    let (classes, width) = (last_layer.classes(), last_layer.width);
    let rows: Vec<&[f64]> = last_layer.weight.chunks_exact(width).collect();
    let gram: Vec<f64> = rows
        .iter()
        .flat_map(|a| rows.iter().map(move |b| dot(a, b)))
        .collect();
    let factor = inverse_square_root(&gram, classes);
    // (WWᵀ)⁺b = Lᵀ(Lb).
    let projected: Vec<f64> = factor
        .chunks_exact(classes)
        .map(|l| dot(l, &last_layer.bias))
        .collect();
    let mut coefficients = vec![0.0; classes];
    for (l, p) in factor.chunks_exact(classes).zip(&projected) {
        coefficients
            .iter_mut()
            .zip(l)
            .for_each(|(c, l)| *c += l * p);
    }
    (0..width)
        .map(|j| {
            -rows
                .iter()
                .zip(&coefficients)
                .map(|(w, c)| w[j] * c)
                .sum::<f64>()
        })
        .collect()
}

/// GradNorm scores `(Σ_k |p_k − 1/K|)·(Σ_j |h_j|)` of every row (module documentation).
///
/// # Errors
/// [`FeatureError::WidthMismatch`] when `features` are not `last_layer`'s width.
pub fn gradnorm_scores(
    features: &Features,
    last_layer: &LastLayer,
) -> Result<Vec<f64>, FeatureError> {
    features.check_width(last_layer.width)?;
    let classes = last_layer.classes();
    let uniform = 1.0 / classes as f64;
    let (mut h, mut logits) = (vec![0.0; last_layer.width], vec![0.0; classes]);
    Ok(features
        .rows()
        .map(|row| {
            widen_into(row, &mut h);
            last_layer.logits_into(&h, &mut logits);
            let normaliser = log_sum_exp(&logits);
            let gap: f64 = logits
                .iter()
                .map(|z| ((z - normaliser).exp() - uniform).abs())
                .sum();
            gap * h.iter().map(|v| v.abs()).sum::<f64>()
        })
        .collect())
}

/// Every detector fitted once with its paper's settings (module documentation), as the CLI's
/// `calibra ood --model` runs them: Mahalanobis, KNN with [`knn_neighbours`], ReAct at
/// [`REACT_PERCENTILE`], ASH-S at [`ASH_PERCENTILE`], ViM with [`vim_principal_dimension`] and
/// GradNorm.
#[derive(Clone, Debug)]
pub struct FittedDetectors {
    mahalanobis: Mahalanobis,
    knn: Knn,
    react: React,
    vim: Vim,
    last_layer: LastLayer,
}

/// Every detector's scores of the same rows, one a row, higher = more in-distribution.
#[derive(Clone, Debug, PartialEq)]
pub struct FeatureScores {
    pub mahalanobis: Vec<f64>,
    pub knn: Vec<f64>,
    pub react: Vec<f64>,
    pub ash: Vec<f64>,
    pub vim: Vec<f64>,
    pub gradnorm: Vec<f64>,
}

impl FittedDetectors {
    /// Fits every detector on `features` with `labels` in `0..K`, `K` the last layer's classes.
    ///
    /// # Errors
    /// Any error of the detectors' fits: labels that do not fit the rows or the classes, a
    /// class without rows, features that are not the last layer's width.
    pub fn fit(
        features: &Features,
        labels: &[u32],
        last_layer: LastLayer,
    ) -> Result<Self, FeatureError> {
        Ok(Self {
            mahalanobis: Mahalanobis::fit(features, labels, last_layer.classes())?,
            knn: Knn::fit(features, knn_neighbours(features.len()))?,
            react: React::fit(features, REACT_PERCENTILE)?,
            vim: Vim::fit(
                features,
                &last_layer,
                vim_principal_dimension(features.width()),
            )?,
            last_layer,
        })
    }

    /// KNN's `k`.
    pub fn knn_neighbours(&self) -> usize {
        self.knn.k
    }

    /// ReAct's clipping threshold.
    pub fn react_threshold(&self) -> f64 {
        self.react.threshold
    }

    /// ViM's principal dimension `d` and scale `α`.
    pub fn vim_settings(&self) -> (usize, f64) {
        let width = self.last_layer.width;
        (width - self.vim.residual.len() / width, self.vim.alpha)
    }

    /// Every detector's scores of `features`.
    ///
    /// # Errors
    /// [`FeatureError::WidthMismatch`] for features of another width than the fitted ones.
    pub fn scores(&self, features: &Features) -> Result<FeatureScores, FeatureError> {
        Ok(FeatureScores {
            mahalanobis: self.mahalanobis.scores(features)?,
            knn: self.knn.scores(features)?,
            react: self.react.scores(features, &self.last_layer)?,
            ash: ash_scores(features, &self.last_layer, ASH_PERCENTILE)?,
            vim: self.vim.scores(features)?,
            gradnorm: gradnorm_scores(features, &self.last_layer)?,
        })
    }
}

#[cfg(test)]
#[path = "ood_features_tests.rs"]
mod tests;
