//! Worst-slab coverage: the lowest coverage of prediction sets over the slabs of feature space
//! that hold at least a share δ of the examples, a measure of conditional coverage.
//!
//! # Method
//!
//! For a unit direction `v` and `a < b`, the slab `S = { x : a ≤ vᵀx ≤ b }`. Along `v` the
//! examples are sorted by `vᵀx`; a slab is a run of consecutive examples, and only runs of at
//! least `⌊δn⌉ + 1` examples count (`⌊·⌉`: rounding half away from zero). The worst-slab
//! coverage along `v` is the smallest share of covered examples in such a run, or 1 when
//! there is none; over directions `v_1, …, v_M` (drawn uniformly on the sphere, seeded), it is
//! the smallest of those (Cauchois, Gupta & Duchi 2021). This is the search of Romano, Sesia &
//! Candès's `wsc` (their `arc` code), done exactly in `O(n log n)` a direction: with `P_i` the
//! covered count among the first `i` sorted examples, the coverage of the run `[a, b)` is the
//! slope from `(a, P_a)` to `(b, P_b)`; for each end `b` the smallest slope over the starts
//! `a ≤ b − L` is found on the upper convex hull of those points, whose slopes to `(b, P_b)`
//! fall and then rise, by bisection, in integer arithmetic.
//!
//! Since the search picks the worst of many slabs, even a method whose coverage is exactly
//! `1 − α` at every `x` shows a worst-slab coverage below `1 − α`. The **noise floor** is that
//! value: the mean worst-slab coverage, over `R` seeded draws, of coverage indicators drawn
//! independently as Bernoulli(`1 − α`) for the same features and directions. A measured value
//! near the floor is what chance gives; one well below it is a real gap.
//!
//! # Sources
//!
//! - M. Cauchois, S. Gupta, J. Duchi, "Knowing what you know: valid and validated confidence
//!   sets in multiclass and multilabel prediction", JMLR 2021 (worst-slab coverage).
//! - Y. Romano, M. Sesia, E. Candès, "Classification with valid and adaptive coverage",
//!   NeurIPS 2020, and their code `arc/coverage.py` (`wsc`).
//!
//! Every definition, with its source: docs/definitions.md

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::Serialize;

use super::ConformalError;

/// The page's and the CLI's settings: slabs of at least 10% of the examples, 100 directions,
/// and a noise floor from 10 draws (Cauchois et al. use δ = 0.1 too).
pub const DELTA: f64 = 0.1;
pub const DIRECTIONS: usize = 100;
pub const FLOOR_REPETITIONS: usize = 10;

/// The worst slab found, and its coverage.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorstSlab {
    /// The smallest coverage of a slab holding at least a share δ of the examples.
    pub coverage: f64,
    /// Index of the direction it lies along.
    pub direction: usize,
    /// Examples in it.
    pub count: usize,
}

/// `count` unit directions in `dimension` dimensions, uniform on the sphere (normalised
/// standard normal vectors, ChaCha8 seeded with `seed`), row-major `[count, dimension]`.
pub fn random_directions(count: usize, dimension: usize, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut directions = Vec::with_capacity(count * dimension);
    for _ in 0..count {
        let v: Vec<f64> = (0..dimension)
            .map(|_| StandardNormal.sample(&mut rng))
            .collect();
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        directions.extend(v.iter().map(|x| x / norm));
    }
    directions
}

/// Checks the shapes of `n` examples' features and of the directions.
fn check(
    features: &[f32],
    dimension: usize,
    n: usize,
    directions: &[f64],
) -> Result<(), ConformalError> {
    if dimension == 0 || directions.is_empty() || !directions.len().is_multiple_of(dimension) {
        return Err(ConformalError::InvalidParameter {
            name: "directions",
            value: directions.len() as f64,
        });
    }
    super::check_length(
        "features (examples × dimension)",
        n * dimension,
        features.len(),
    )?;
    if n == 0 {
        return Err(ConformalError::Empty);
    }
    Ok(())
}

fn check_delta(delta: f64) -> Result<(), ConformalError> {
    if delta > 0.0 && delta < 1.0 {
        Ok(())
    } else {
        Err(ConformalError::InvalidParameter {
            name: "delta",
            value: delta,
        })
    }
}

/// The point `(index, covered count before it)` of the prefix path.
type Point = (i64, i64);

/// `(b − o) × (c − o)`: positive when `o → b → c` turns counterclockwise.
fn cross(o: Point, b: Point, c: Point) -> i64 {
    (b.0 - o.0) * (c.1 - o.1) - (b.1 - o.1) * (c.0 - o.0)
}

/// Whether the slope from `a` to `q` is below the slope from `b` to `q` (`q` right of both).
fn flatter(a: Point, b: Point, q: Point) -> bool {
    (q.1 - a.1) * (q.0 - b.0) < (q.1 - b.1) * (q.0 - a.0)
}

/// The run of at least `minimum` consecutive examples with the lowest share covered, as
/// `(covered, length)`, from the prefix counts `prefix[i]` of the first `i`; `None` when
/// there are fewer than `minimum` examples.
fn worst_run(prefix: &[i64], minimum: usize) -> Option<(i64, i64)> {
    let n = prefix.len() - 1;
    let mut hull: Vec<Point> = Vec::new();
    let mut worst: Option<(i64, i64)> = None;
    for end in minimum..=n {
        let start: Point = ((end - minimum) as i64, prefix[end - minimum]);
        while hull.len() >= 2 && cross(hull[hull.len() - 2], hull[hull.len() - 1], start) >= 0 {
            hull.pop();
        }
        hull.push(start);
        let q: Point = (end as i64, prefix[end]);
        // The slopes to q fall along the hull, then rise: the first point whose successor is
        // not flatter is the lowest.
        let (mut low, mut high) = (0, hull.len() - 1);
        while low < high {
            let middle = (low + high) / 2;
            if flatter(hull[middle + 1], hull[middle], q) {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        let best = hull[low];
        let run = (q.1 - best.1, q.0 - best.0);
        // run.0 / run.1 < worst.0 / worst.1, in integers.
        if worst.is_none_or(|(covered, length)| run.0 * length < covered * run.1) {
            worst = Some(run);
        }
    }
    worst
}

/// The examples' order along each direction, sorted by `vᵀx` (ties in example order): all the
/// search needs of the features, and independent of the coverage flags, so a page computes it
/// once per set of features and measures many sets of flags against it.
#[derive(Clone, Debug, PartialEq)]
pub struct SlabOrders {
    /// Examples.
    n: usize,
    /// One order of the example indices per direction.
    orders: Vec<Vec<u32>>,
}

impl SlabOrders {
    /// The orders of `features` (row-major `[n, dimension]`) along each of `directions`
    /// (row-major `[M, dimension]`, unit vectors).
    ///
    /// # Errors
    /// [`ConformalError::InvalidParameter`] (`"directions"`) for directions that are not whole
    /// rows; [`ConformalError::ShapeMismatch`] for features that are not whole rows;
    /// [`ConformalError::Empty`] for no examples.
    pub fn new(
        features: &[f32],
        dimension: usize,
        directions: &[f64],
    ) -> Result<SlabOrders, ConformalError> {
        let n = features.len() / dimension.max(1);
        check(features, dimension, n, directions)?;
        let mut projected: Vec<(f64, u32)> = Vec::with_capacity(n);
        let orders = directions
            .chunks_exact(dimension)
            .map(|v| {
                projected.clear();
                projected.extend(features.chunks_exact(dimension).zip(0..).map(|(x, index)| {
                    let z: f64 = x.iter().zip(v).map(|(&x, &v)| f64::from(x) * v).sum();
                    (z, index)
                }));
                projected.sort_by(|a, b| a.0.total_cmp(&b.0));
                projected.iter().map(|&(_, index)| index).collect()
            })
            .collect();
        Ok(SlabOrders { n, orders })
    }

    /// Worst-slab coverage of `covered` (one flag per example) over the slabs holding at least
    /// a share `delta` of the examples.
    ///
    /// # Errors
    /// [`ConformalError::ShapeMismatch`] for flags that are not one per example;
    /// [`ConformalError::InvalidParameter`] (`"delta"`) for a δ outside (0, 1).
    pub fn worst_slab(&self, covered: &[bool], delta: f64) -> Result<WorstSlab, ConformalError> {
        let n = self.n;
        super::check_length("coverage flags (one per example)", n, covered.len())?;
        check_delta(delta)?;
        let minimum = (delta * n as f64).round() as usize + 1;
        let mut worst = WorstSlab {
            coverage: 1.0,
            direction: 0,
            count: n,
        };
        let mut prefix = vec![0_i64; n + 1];
        for (index, order) in self.orders.iter().enumerate() {
            for (i, &example) in order.iter().enumerate() {
                prefix[i + 1] = prefix[i] + i64::from(covered[example as usize]);
            }
            if let Some((hits, length)) = worst_run(&prefix, minimum) {
                let coverage = hits as f64 / length as f64;
                if coverage < worst.coverage {
                    worst = WorstSlab {
                        coverage,
                        direction: index,
                        count: length as usize,
                    };
                }
            }
        }
        Ok(worst)
    }

    /// The noise floor of [`SlabOrders::worst_slab`]: its mean over `repetitions` draws
    /// ([`SlabOrders::noise_floor_draws`]).
    ///
    /// # Errors
    /// As [`SlabOrders::noise_floor_draws`].
    pub fn noise_floor(
        &self,
        delta: f64,
        alpha: f64,
        repetitions: usize,
        seed: u64,
    ) -> Result<f64, ConformalError> {
        let draws = self.noise_floor_draws(delta, alpha, repetitions, seed)?;
        Ok(draws.iter().sum::<f64>() / draws.len() as f64)
    }

    /// [`SlabOrders::worst_slab`]'s coverage for each of `repetitions` draws of coverage flags,
    /// each Bernoulli(`1 − alpha`) independently of the features (a method with exact
    /// conditional coverage), ChaCha8 seeded with `seed`: their mean is the noise floor, their
    /// spread how far chance alone moves a measured value.
    ///
    /// # Errors
    /// As [`SlabOrders::worst_slab`]; [`ConformalError::InvalidAlpha`] unless `0 < alpha < 1`;
    /// [`ConformalError::InvalidParameter`] (`"repetitions"`) for none.
    pub fn noise_floor_draws(
        &self,
        delta: f64,
        alpha: f64,
        repetitions: usize,
        seed: u64,
    ) -> Result<Vec<f64>, ConformalError> {
        super::alpha_numerator(alpha)?;
        if repetitions == 0 {
            return Err(ConformalError::InvalidParameter {
                name: "repetitions",
                value: 0.0,
            });
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..repetitions)
            .map(|_| {
                let covered: Vec<bool> =
                    (0..self.n).map(|_| rng.random::<f64>() >= alpha).collect();
                Ok(self.worst_slab(&covered, delta)?.coverage)
            })
            .collect()
    }
}

/// Worst-slab coverage of `covered` (one flag per example) over slabs of `features`
/// (row-major `[n, dimension]`) along each of `directions` (row-major `[M, dimension]`, unit
/// vectors) holding at least a share `delta` of the examples.
///
/// # Errors
/// [`ConformalError::InvalidParameter`] (`"directions"`, `"delta"`) for directions that are
/// not whole rows or a δ outside (0, 1); [`ConformalError::ShapeMismatch`] for features that
/// are not `n` rows; [`ConformalError::Empty`] for no examples.
pub fn worst_slab_coverage(
    features: &[f32],
    dimension: usize,
    covered: &[bool],
    directions: &[f64],
    delta: f64,
) -> Result<WorstSlab, ConformalError> {
    check(features, dimension, covered.len(), directions)?;
    check_delta(delta)?;
    SlabOrders::new(features, dimension, directions)?.worst_slab(covered, delta)
}

/// The noise floor of [`worst_slab_coverage`] ([`SlabOrders::noise_floor`]).
///
/// # Errors
/// As [`worst_slab_coverage`]; [`ConformalError::InvalidAlpha`] unless `0 < alpha < 1`;
/// [`ConformalError::InvalidParameter`] (`"repetitions"`) for none.
pub fn worst_slab_noise_floor(
    features: &[f32],
    dimension: usize,
    directions: &[f64],
    delta: f64,
    alpha: f64,
    repetitions: usize,
    seed: u64,
) -> Result<f64, ConformalError> {
    SlabOrders::new(features, dimension, directions)?.noise_floor(delta, alpha, repetitions, seed)
}

#[cfg(test)]
#[path = "worst_slab_tests.rs"]
mod tests;
