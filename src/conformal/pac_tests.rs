//! Unit tests of `conformal/pac.rs`: the rank against exact rational arithmetic
//! (`scripts/conformal-reference.py`, fixture `tests/fixtures/conformal/pac-ranks.json`), and
//! the stated δ over 1,000 seeded calibration sets of a calibrated synthetic classifier.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

use super::*;
use crate::conformal::{conformal_threshold, true_label_scores, Score};
use crate::test_support::calibrated_rows;

/// Statistical checks allow this many binomial standard errors.
const STANDARD_ERRORS: f64 = 3.0;
const NUM_CLASSES: usize = 10;

#[derive(Deserialize)]
struct Reference {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    n: usize,
    epsilon: f64,
    delta: f64,
    /// `None` when no `k ≤ n` has the guarantee.
    k: Option<usize>,
    minimum_rows: usize,
}

#[test]
fn ranks_equal_exact_rational_arithmetic() {
    let reference: Reference = serde_json::from_str(include_str!(
        "../../tests/fixtures/conformal/pac-ranks.json"
    ))
    .unwrap();
    assert!(reference.cases.len() > 50);
    for case in &reference.cases {
        let what = format!("n = {}, ε = {}, δ = {}", case.n, case.epsilon, case.delta);
        assert_eq!(
            minimum_pac_rows(case.epsilon, case.delta).unwrap(),
            case.minimum_rows,
            "{what}"
        );
        match (pac_rank(case.n, case.epsilon, case.delta), case.k) {
            (Ok(k), Some(expected)) => assert_eq!(k, expected, "{what}"),
            (Err(ConformalError::TooFewRowsForPac { needed, .. }), None) => {
                assert_eq!(needed, case.minimum_rows, "{what}")
            }
            (got, expected) => panic!("{what}: got {got:?}, expected {expected:?}"),
        }
    }
}

#[test]
fn the_pac_rank_is_above_the_marginal_one_when_delta_is_below_one_half() {
    for n in [100, 500, 5000] {
        for (epsilon, delta) in [(0.1, 0.1), (0.05, 0.01), (0.2, 0.4)] {
            let marginal = crate::conformal::quantile_rank(n, epsilon).unwrap();
            assert!(pac_rank(n, epsilon, delta).unwrap() > marginal);
        }
    }
}

#[test]
fn bad_levels_and_too_few_rows_are_refused() {
    for bad in [0.0, 1.0, -0.1, 1.5, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            pac_rank(100, bad, 0.1),
            Err(ConformalError::InvalidParameter {
                name: "epsilon",
                ..
            })
        ));
        assert!(matches!(
            pac_rank(100, 0.1, bad),
            Err(ConformalError::InvalidParameter { name: "delta", .. })
        ));
    }
    // 0.9²¹ = 0.109 > 0.1 ≥ 0.9²² = 0.098.
    let error = pac_threshold(&[0.5; 21], 0.1, 0.1).unwrap_err();
    assert_eq!(
        error,
        ConformalError::TooFewRowsForPac {
            n: 21,
            epsilon: 0.1,
            delta: 0.1,
            needed: 22
        }
    );
    assert!(error.to_string().contains("at least 22"));
    assert_eq!(pac_threshold(&[0.5; 22], 0.1, 0.1), Ok(0.5));
    assert_eq!(
        pac_threshold(&[0.5, f64::NAN].repeat(20), 0.1, 0.1),
        Err(ConformalError::NonFiniteScore { index: 1 })
    );
}

/// The population coverage of the LAC threshold `q`, `P(1 − p_Y(X) ≤ q)`, computed exactly
/// given `X` (the label's law is `p(X)` by construction) and averaged over a large pool of `X`.
struct LacCoverage {
    /// Every `(1 − p_y(x), p_y(x) / pool)` of the pool, sorted by score.
    scores: Vec<f64>,
    cumulative: Vec<f64>,
}

impl LacCoverage {
    fn new(pool: usize, rng: &mut ChaCha8Rng) -> Self {
        let (probabilities, _) = calibrated_rows(pool, NUM_CLASSES, rng);
        let mut pairs: Vec<(f64, f64)> = probabilities
            .iter()
            .map(|&p| (1.0 - p, p / pool as f64))
            .collect();
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut total = 0.0;
        let cumulative = pairs
            .iter()
            .map(|&(_, mass)| {
                total += mass;
                total
            })
            .collect();
        Self {
            scores: pairs.iter().map(|&(score, _)| score).collect(),
            cumulative,
        }
    }

    fn at(&self, threshold: f64) -> f64 {
        match self.scores.partition_point(|&s| s <= threshold) {
            0 => 0.0,
            count => self.cumulative[count - 1],
        }
    }
}

#[test]
fn coverage_falls_below_one_minus_epsilon_in_at_most_delta_of_calibration_sets() {
    const SPLITS: usize = 1000;
    const N: usize = 500;
    const EPSILON: f64 = 0.1;
    const DELTA: f64 = 0.1;
    let mut rng = ChaCha8Rng::seed_from_u64(2012);
    let coverage = LacCoverage::new(100_000, &mut rng);
    let (mut pac_short, mut marginal_short) = (0, 0);
    for _ in 0..SPLITS {
        let (probabilities, labels) = calibrated_rows(N, NUM_CLASSES, &mut rng);
        let scores =
            true_label_scores(&probabilities, &labels, NUM_CLASSES, &Score::Lac, &[1.0; N])
                .unwrap();
        let pac = pac_threshold(&scores, EPSILON, DELTA).unwrap();
        let marginal = conformal_threshold(&scores, EPSILON).unwrap();
        pac_short += usize::from(coverage.at(pac) < 1.0 - EPSILON);
        marginal_short += usize::from(coverage.at(marginal) < 1.0 - EPSILON);
    }
    let allowance = STANDARD_ERRORS * (DELTA * (1.0 - DELTA) / SPLITS as f64).sqrt();
    let pac_rate = pac_short as f64 / SPLITS as f64;
    let marginal_rate = marginal_short as f64 / SPLITS as f64;
    assert!(
        pac_rate <= DELTA + allowance,
        "PAC: {pac_rate} of calibration sets below 1 − ε, more than δ = {DELTA} + {allowance}"
    );
    // The marginal threshold's coverage is centred on 1 − ε + 1/(n + 1): it falls short in
    // about 40% of calibration sets, so the test can tell the two apart.
    assert!(
        marginal_rate > DELTA + 3.0 * allowance,
        "marginal: {marginal_rate}"
    );
}

#[test]
fn one_evaluation_score_falls_short_when_it_exceeds_the_threshold() {
    // With m = 1 the measured coverage is 0 or 1: below 1 − ε exactly when the new score lies
    // above s_(k), which by exchangeability has probability (n + 1 − k)/(n + 1).
    for (n, k) in [(10, 1), (10, 10), (99, 91), (500, 460)] {
        let expected = (n + 1 - k) as f64 / (n + 1) as f64;
        let measured = measured_shortfall_probability(n, 1, k, 0.1);
        assert!(
            (measured - expected).abs() < 1e-12,
            "n = {n}, k = {k}: {measured}"
        );
    }
    assert_eq!(measured_shortfall_probability(10, 5, 11, 0.1), 0.0);
}

#[test]
fn a_measured_shortfall_tends_to_the_beta_law_as_the_evaluation_set_grows() {
    let (n, k, epsilon) = (200, 185, 0.1);
    let unlimited = shortfall_probability(n, k, epsilon);
    let far = measured_shortfall_probability(n, 200_000, k, epsilon);
    // The binomial noise of 200,000 images is a 0.07% standard deviation, against the Beta
    // law's 1.9%: the two probabilities agree to about a percent.
    assert!((far - unlimited).abs() < 0.01, "{far} against {unlimited}");
    assert!(measured_shortfall_probability(n, 50, k, epsilon) > unlimited + 0.05);
}

#[test]
fn a_measured_shortfall_matches_fresh_draws_of_calibration_and_evaluation_scores() {
    // Uniform scores drawn afresh for each round: the count of the m evaluation scores at most
    // the k-th smallest calibration score is what the formula sums over.
    const ROUNDS: usize = 20_000;
    let (n, m, epsilon) = (50, 40, 0.1);
    let k = pac_rank(n, epsilon, 0.2).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(43);
    let mut short = 0;
    for _ in 0..ROUNDS {
        let mut calibration: Vec<f64> = (0..n).map(|_| rand::Rng::random(&mut rng)).collect();
        calibration.sort_by(f64::total_cmp);
        let qhat = calibration[k - 1];
        let covered = (0..m)
            .filter(|_| rand::Rng::random::<f64>(&mut rng) <= qhat)
            .count();
        short += usize::from((covered as f64) < m as f64 * (1.0 - epsilon));
    }
    let predicted = measured_shortfall_probability(n, m, k, epsilon);
    let observed = short as f64 / ROUNDS as f64;
    let allowance = STANDARD_ERRORS * (predicted * (1.0 - predicted) / ROUNDS as f64).sqrt();
    assert!(
        (observed - predicted).abs() <= allowance,
        "{observed} against {predicted} ± {allowance}"
    );
}
