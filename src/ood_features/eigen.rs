//! The eigenvalues and eigenvectors of a real symmetric matrix, by cyclic Jacobi rotations
//! (Golub & Van Loan, "Matrix Computations", 4th ed., §8.5; the rotation of Press et al.,
//! "Numerical Recipes", 3rd ed., §11.1), in `f64`.
//!
//! Each rotation zeroes one off-diagonal entry `a_pq`: with `θ = (a_qq − a_pp)/(2·a_pq)`,
//! `t = sign(θ)/(|θ| + √(θ² + 1))`, `c = 1/√(t² + 1)` and `s = t·c`, `A ← PᵀAP` and `V ← VP`
//! where `P` is the identity but for `P_pp = P_qq = c`, `P_pq = s`, `P_qp = −s`. Sweeps over
//! every pair `p < q` run until the off-diagonal entries' sum of squares is below `ε²` times
//! the matrix's (at most [`MAX_SWEEPS`]; a symmetric matrix needs about ten). Jacobi's method
//! gets small eigenvalues to a small multiple of `ε·‖A‖`, and an exactly zero row and column
//! (a feature that is always zero) keeps its zero eigenvalue exactly: no rotation touches it.
//! The feature detectors need it twice: the pseudo-inverse of a covariance (Mahalanobis) and a
//! principal subspace (ViM). For the 128 × 128 covariances of the network's features, a few
//! tens of milliseconds.

/// More sweeps than a symmetric matrix needs: Jacobi's method converges quadratically.
const MAX_SWEEPS: usize = 64;

/// A symmetric matrix's eigenvalues, largest first, and its eigenvectors.
#[derive(Debug)]
pub(crate) struct SymmetricEigen {
    /// The eigenvalues in decreasing order.
    pub values: Vec<f64>,
    /// The unit eigenvectors, one a row, in the order of `values`: `n × n` row-major.
    pub vectors: Vec<f64>,
}

/// The eigendecomposition of the symmetric `n × n` row-major `matrix` (only its upper
/// triangle's symmetry is assumed, not checked).
pub(crate) fn symmetric_eigen(matrix: &[f64], n: usize) -> SymmetricEigen {
    let mut a = matrix.to_vec();
    let mut v = vec![0.0; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    let total: f64 = a.iter().map(|x| x * x).sum();
    for _ in 0..MAX_SWEEPS {
        let off: f64 = (0..n)
            .flat_map(|p| (p + 1..n).map(move |q| (p, q)))
            .map(|(p, q)| a[p * n + q] * a[p * n + q])
            .sum();
        if off <= f64::EPSILON * f64::EPSILON * total {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                rotate(&mut a, &mut v, n, p, q);
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| a[j * n + j].total_cmp(&a[i * n + i]));
    SymmetricEigen {
        values: order.iter().map(|&i| a[i * n + i]).collect(),
        vectors: order
            .iter()
            .flat_map(|&j| (0..n).map(move |k| (k, j)))
            .map(|(k, j)| v[k * n + j])
            .collect(),
    }
}

/// One Jacobi rotation in the plane `(p, q)` that zeroes `a_pq` (module documentation).
fn rotate(a: &mut [f64], v: &mut [f64], n: usize, p: usize, q: usize) {
    let apq = a[p * n + q];
    if apq == 0.0 {
        return;
    }
    let theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
    let t = if theta.abs() > 1e150 {
        0.5 / theta
    } else {
        theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt())
    };
    let c = 1.0 / (t * t + 1.0).sqrt();
    let s = t * c;
    for k in 0..n {
        let (akp, akq) = (a[k * n + p], a[k * n + q]);
        a[k * n + p] = c * akp - s * akq;
        a[k * n + q] = s * akp + c * akq;
    }
    for k in 0..n {
        let (apk, aqk) = (a[p * n + k], a[q * n + k]);
        a[p * n + k] = c * apk - s * aqk;
        a[q * n + k] = s * apk + c * aqk;
    }
    for k in 0..n {
        let (vkp, vkq) = (v[k * n + p], v[k * n + q]);
        v[k * n + p] = c * vkp - s * vkq;
        v[k * n + q] = s * vkp + c * vkq;
    }
}

#[cfg(test)]
#[path = "eigen_tests.rs"]
mod tests;
