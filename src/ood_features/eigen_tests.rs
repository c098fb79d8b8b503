//! Unit tests of `eigen.rs`: a matrix built from planted eigenvalues and a planted orthonormal
//! basis gives them back (1e-10), and a zero row and column keeps an exact zero eigenvalue.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;

/// Planted and recovered eigenvalues and eigenvectors agree to rounding of `n` sums of `n`
/// terms of order one.
const TOLERANCE: f64 = 1e-10;

/// An orthonormal basis of `n` rows from Gram–Schmidt on uniform vectors.
fn random_basis(n: usize, rng: &mut ChaCha8Rng) -> Vec<Vec<f64>> {
    let mut basis: Vec<Vec<f64>> = Vec::new();
    while basis.len() < n {
        let mut v: Vec<f64> = (0..n).map(|_| rng.random::<f64>() - 0.5).collect();
        for b in &basis {
            let dot: f64 = v.iter().zip(b).map(|(x, y)| x * y).sum();
            v.iter_mut().zip(b).for_each(|(x, y)| *x -= dot * y);
        }
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        basis.push(v.iter().map(|x| x / norm).collect());
    }
    basis
}

#[test]
fn recovers_planted_eigenvalues_and_eigenvectors() {
    let n = 24;
    let mut rng = ChaCha8Rng::seed_from_u64(41);
    let basis = random_basis(n, &mut rng);
    let planted: Vec<f64> = (0..n).map(|i| 10.0 / (1.0 + i as f64)).collect();
    let mut matrix = vec![0.0; n * n];
    for (value, vector) in planted.iter().zip(&basis) {
        for i in 0..n {
            for j in 0..n {
                matrix[i * n + j] += value * vector[i] * vector[j];
            }
        }
    }
    let eigen = symmetric_eigen(&matrix, n);
    for (i, (value, vector)) in planted.iter().zip(&basis).enumerate() {
        assert!((eigen.values[i] - value).abs() <= TOLERANCE, "{i}");
        let found = &eigen.vectors[i * n..(i + 1) * n];
        let dot: f64 = found.iter().zip(vector).map(|(x, y)| x * y).sum();
        assert!((dot.abs() - 1.0).abs() <= TOLERANCE, "{i}: {dot}");
    }
}

#[test]
fn a_zero_row_and_column_keeps_an_exact_zero_eigenvalue() {
    let matrix = [2.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 2.0];
    let eigen = symmetric_eigen(&matrix, 3);
    assert!((eigen.values[0] - 3.0).abs() <= TOLERANCE);
    assert!((eigen.values[1] - 1.0).abs() <= TOLERANCE);
    assert_eq!(eigen.values[2], 0.0);
    assert_eq!(
        eigen.vectors[6..9]
            .iter()
            .map(|x| x.abs())
            .collect::<Vec<_>>(),
        [0.0, 1.0, 0.0]
    );
}
