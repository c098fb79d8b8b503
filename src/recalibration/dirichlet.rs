//! Dirichlet calibration with off-diagonal and intercept regularisation (ODIR): multinomial
//! logistic regression on the network's log-probabilities.
//!
//! # What it computes
//! Kull, Perello-Nieto, Kängsepp, Silva Filho, Song & Flach, "Beyond temperature scaling:
//! Obtaining well-calibrated multi-class probabilities with Dirichlet calibration", NeurIPS
//! 2019. With `q = softmax(z)` the network's probabilities, the calibrated probabilities are
//! `p = softmax(W ln q + b)`, a `K × K` matrix `W` and a bias `b` per class (`W = I`, `b = 0`
//! is the network itself; `W = I/T`, `b = 0` is temperature scaling). They minimise, over the
//! calibration half's `n` rows,
//!
//! `L(W, b) = −(1/n) Σ_i ln p_{y_i}(x_i) + λ/(K(K − 1)) Σ_{j≠l} W_jl² + μ/K Σ_j b_j²`,
//!
//! the mean NLL plus ODIR: the off-diagonal weights and the biases are pulled towards 0, the
//! diagonal is free. `λ` and `μ` are [`ODIR_LAMBDA`] and [`ODIR_MU`] (the paper picks them
//! by cross-validation over a grid; the page fits once, in the worker, so they are fixed).
//! Adding one vector to every row of `(W, b)` leaves `p` unchanged, but not the penalty,
//! which is strictly convex along every such direction: with `λ, μ > 0` the objective is
//! strictly convex and its minimum unique (the dirichletcal library's `ref_row=False`; its
//! default fixes the last class's row at 0 instead, which penalises the identity map).
//!
//! The fit runs Newton's method from the identity map (`super::minimise_by_newton`, the same
//! as vector scaling's): the gradient of the mean NLL is `mean (p − e_y) ⊗ x̃`, its Hessian
//! `mean (diag p − p pᵀ) ⊗ x̃ x̃ᵀ` with `x̃ = (ln q, 1)`, summed over at most
//! `super::HESSIAN_ROWS` evenly spaced rows (the gradient over all). `ln q` is the stable
//! log-softmax of the logits (the library takes `ln` of probabilities clipped below at the
//! smallest normal `f64`, the same wherever no probability underflows). `K(K + 1)` parameters
//! make a Hessian of `K²(K + 1)²` entries: [`MAX_DIRICHLET_CLASSES`] at most.
//!
//! A full matrix can change which class is largest: Dirichlet calibration can change
//! predictions and accuracy, as vector scaling can. Definitions: docs/definitions.md.

use serde::Serialize;

use super::{
    add_outer_upper, hessian_rows, minimise_by_newton, negated_mean_mirrored, Labelled, Objective,
    HESSIAN_ROWS,
};
use crate::calibration::{softmax_row, CalibrationError};

/// ODIR's weight on the mean squared off-diagonal entry of `W`.
pub const ODIR_LAMBDA: f64 = 0.01;
/// ODIR's weight on the mean squared bias.
pub const ODIR_MU: f64 = 0.01;
/// The most classes Dirichlet calibration is fitted for: at 20 classes its Newton system has
/// 420 unknowns, and each Hessian row adds 88,410 products.
pub const MAX_DIRICHLET_CLASSES: usize = 20;

/// A fitted Dirichlet calibration map `p = softmax(W ln q + b)`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DirichletCalibration {
    /// `(W | b)` row by row, `K × (K + 1)`: row `j` holds `W_j1 … W_jK` and then `b_j` (the
    /// dirichletcal library's `weights_`).
    pub map: Vec<f64>,
    /// The regularisation it was fitted with.
    pub lambda: f64,
    pub mu: f64,
    /// The regularised objective `L` on the calibration half at the fit.
    pub objective: f64,
    /// Newton steps taken.
    pub steps: usize,
    /// Whether the Newton decrement reached `10⁻¹⁴`.
    pub converged: bool,
}

/// The parameters' layout: row `j` of `(W | b)`, `K + 1` entries, one after another (the
/// library's `weights_` row by row).
fn columns(k: usize) -> usize {
    k + 1
}

/// One row's `x̃ = (ln q, 1)`, `ln q = log_softmax(z)`.
fn features(row: &[f32], probabilities: &mut [f64], out: &mut [f64]) {
    let normaliser = softmax_row(row, 1.0, probabilities);
    for (x, &z) in out.iter_mut().zip(row) {
        *x = normaliser.log_probability(z);
    }
    out[row.len()] = 1.0;
}

/// Writes `log softmax(W x + b)` of one row's features `x̃` into `out`.
fn map_log_softmax(theta: &[f64], features: &[f64], out: &mut [f64]) {
    let width = features.len();
    for (u, row) in out.iter_mut().zip(theta.chunks_exact(width)) {
        *u = row.iter().zip(features).map(|(w, x)| w * x).sum();
    }
    let max = out.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let log_sum = out.iter().map(|&u| (u - max).exp()).sum::<f64>().ln() + max;
    out.iter_mut().for_each(|u| *u -= log_sum);
}

/// ODIR's penalty weights per parameter: `λ/(K(K−1))` off the diagonal, `μ/K` on the biases,
/// 0 on the diagonal.
fn penalty_weights(k: usize, lambda: f64, mu: f64) -> Vec<f64> {
    let width = columns(k);
    (0..k * width)
        .map(|index| {
            let (row, column) = (index / width, index % width);
            if column == k {
                mu / k as f64
            } else if column == row {
                0.0
            } else {
                lambda / (k * (k - 1)) as f64
            }
        })
        .collect()
}

/// The regularised objective and its gradient at `theta`, over every calibration row.
fn objective(data: &Labelled, theta: &[f64], penalty: &[f64]) -> Objective {
    let k = data.logits().num_classes();
    let width = columns(k);
    let (mut q, mut x, mut log_p) = (vec![0.0; k], vec![0.0; width], vec![0.0; k]);
    let (mut nll, mut gradient) = (0.0, vec![0.0; k * width]);
    for (row, &label) in data.logits().rows().zip(data.labels()) {
        features(row, &mut q, &mut x);
        map_log_softmax(theta, &x, &mut log_p);
        nll -= log_p[label as usize];
        for (j, block) in gradient.chunks_exact_mut(width).enumerate() {
            let residual = log_p[j].exp() - f64::from(j == label as usize);
            for (g, &feature) in block.iter_mut().zip(&x) {
                *g += residual * feature;
            }
        }
    }
    let n = data.logits().len() as f64;
    let mut value = nll / n;
    for ((g, &t), &weight) in gradient.iter_mut().zip(theta).zip(penalty) {
        *g = *g / n + 2.0 * weight * t;
        value += weight * t * t;
    }
    Objective {
        nll: value,
        gradient,
    }
}

/// The regularised objective's Hessian at `theta`, the NLL's part averaged over `rows`,
/// `K(K+1)` square, row-major: `(diag p − p pᵀ) ⊗ x̃ x̃ᵀ` per row (its outer product summed on
/// the upper triangle and mirrored), plus `2·penalty` on the diagonal.
fn hessian(
    data: &Labelled,
    rows: impl Iterator<Item = usize>,
    theta: &[f64],
    penalty: &[f64],
) -> Vec<f64> {
    let k = data.logits().num_classes();
    let width = columns(k);
    let size = k * width;
    let (mut q, mut x, mut log_p) = (vec![0.0; k], vec![0.0; width], vec![0.0; k]);
    let mut v = vec![0.0; size];
    // Σ p_j x̃ x̃ᵀ per class (the diagonal blocks), and Σ v vᵀ with v = p ⊗ x̃.
    let mut blocks = vec![0.0; k * width * width];
    let mut outer = vec![0.0; size * size];
    let mut count = 0usize;
    for index in rows {
        features(data.logits().row(index), &mut q, &mut x);
        map_log_softmax(theta, &x, &mut log_p);
        for j in 0..k {
            let p = log_p[j].exp();
            for c in 0..width {
                v[j * width + c] = p * x[c];
                let block = &mut blocks[(j * width + c) * width..(j * width + c + 1) * width];
                for (entry, &xd) in block.iter_mut().zip(&x) {
                    *entry += p * x[c] * xd;
                }
            }
        }
        add_outer_upper(&mut outer, &v);
        count += 1;
    }
    let n = count as f64;
    let mut matrix = negated_mean_mirrored(&outer, size, n);
    for j in 0..k {
        for c in 0..width {
            for d in 0..width {
                matrix[(j * width + c) * size + j * width + d] +=
                    blocks[(j * width + c) * width + d] / n;
            }
        }
    }
    for (i, &weight) in penalty.iter().enumerate() {
        matrix[i * size + i] += 2.0 * weight;
    }
    matrix
}

/// Fits Dirichlet calibration with ODIR weights `lambda` and `mu` on the calibration half by
/// Newton's method from the identity map (see the module documentation).
///
/// # Errors
/// [`CalibrationError::TooManyClassesForDirichlet`] above [`MAX_DIRICHLET_CLASSES`] classes.
pub fn fit_dirichlet(
    calibration: &Labelled,
    lambda: f64,
    mu: f64,
) -> Result<DirichletCalibration, CalibrationError> {
    let k = calibration.logits().num_classes();
    if k > MAX_DIRICHLET_CLASSES {
        return Err(CalibrationError::TooManyClassesForDirichlet(k));
    }
    let width = columns(k);
    let n = calibration.logits().len();
    let penalty = penalty_weights(k, lambda, mu);
    let identity: Vec<f64> = (0..k * width)
        .map(|index| f64::from(index / width == index % width))
        .collect();
    let fit = minimise_by_newton(
        identity,
        |theta| objective(calibration, theta, &penalty),
        |theta| hessian(calibration, hessian_rows(n, HESSIAN_ROWS), theta, &penalty),
        |_| {},
    );
    Ok(DirichletCalibration {
        map: fit.parameters,
        lambda,
        mu,
        objective: fit.value,
        steps: fit.steps,
        converged: fit.converged,
    })
}

impl DirichletCalibration {
    /// Writes the calibrated `log p = log softmax(W ln q + b)` of one row of logits into
    /// `out` (as long as the row).
    pub fn log_probabilities(&self, row: &[f32], out: &mut [f64]) {
        let k = row.len();
        let (mut q, mut x) = (vec![0.0; k], vec![0.0; columns(k)]);
        features(row, &mut q, &mut x);
        map_log_softmax(&self.map, &x, out);
    }
}

#[cfg(test)]
#[path = "dirichlet_tests.rs"]
mod tests;
