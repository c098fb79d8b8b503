//! Does fitting the temperature on the conformal calibration set cost coverage?
//!
//! The page fits `T` on its calibration half and computes `q̂` from the same half's scores at
//! that `T`, so the calibration scores depend on the calibration labels through `T` and are, in
//! the strict sense, no longer exchangeable with the evaluation scores. This test measures the
//! effect on the bundled cross-entropy network and the 10,000 committed test images. Each of
//! [`SPLITS`] seeded splits divides the images into A (2,500, fits `T` in the "disjoint"
//! protocol), B (2,500, the conformal calibration set, which also fits `T` in the "same"
//! protocol) and C (5,000, evaluation), and records the coverage on C at `α = 0.1` under both
//! protocols, for randomized APS and for LAC. The protocols share B, C and the draws `u`, so
//! they differ only by `T` and are compared split by split.
//!
//! Under "disjoint", `T` depends on A alone, so given A the scores of B ∪ C are exchangeable and
//! have no ties at `q̂` (randomized APS; LAC's scores tie only at 0, a saturated `p_y = 1`, far
//! below `q̂`): the coverage follows `conformal::coverage_law(2,500, 5,000, 0.1)`, mean
//! `k/(n + 1)` with `k = 2,251`. "Same" has no such law; the question is how far it moves.
//!
//! Tolerances, with `SE` = sample standard deviation over `√R`:
//! - each protocol's mean coverage lies within 3 SE of `k/(n + 1)`;
//! - the mean paired difference "same − disjoint" lies within 3 of its SE of 0 (no effect
//!   detected), and that difference plus 3 of its SE is below a tenth of one split's standard
//!   deviation under the law (an effect the test could miss would be negligible).
//!
//! The splits are independent draws, so each check fails by chance with probability about 0.3%;
//! the seeds are fixed, so the outcome is reproducible.

use std::path::Path;
use std::sync::OnceLock;

use calibra::calibration::{self, Logits};
use calibra::conformal::{self, Score, Thresholds};
use calibra::data::NUM_CLASSES;
use calibra::data::{self, FashionMnistPart};
use calibra::model::Classifier;

const SPLITS: usize = 400;
const ALPHA: f64 = 0.1;
const TEMPERATURE_ROWS: usize = 2_500;
const CALIBRATION_ROWS: usize = 2_500;
const EVALUATION_ROWS: usize = 5_000;
/// Split `r` permutes the rows with seed `SPLIT_SEEDS_FROM + r`.
const SPLIT_SEEDS_FROM: u64 = 0;
/// Split `r` draws the rows' `u` with seed `UNIFORM_SEEDS_FROM + r`, so that the part a row
/// lands in and its `u` come from different generators.
const UNIFORM_SEEDS_FROM: u64 = 1_000_000;
/// Standard errors a mean may lie from its expected value.
const STANDARD_ERRORS: f64 = 3.0;
/// An effect smaller than this fraction of one split's standard deviation counts as negligible.
const NEGLIGIBLE_FRACTION: f64 = 0.1;

const RANDOMIZED_APS: Score = Score::Aps { randomized: true };

/// Rows of one part of a split, gathered contiguously.
struct Part {
    logits: Vec<f32>,
    labels: Vec<u32>,
    uniforms: Vec<f64>,
}

impl Part {
    fn gather(test_set: &TestSet, rows: &[usize], uniforms: &[f64]) -> Part {
        Part {
            logits: rows
                .iter()
                .flat_map(|&row| &test_set.logits[row * NUM_CLASSES..(row + 1) * NUM_CLASSES])
                .copied()
                .collect(),
            labels: rows.iter().map(|&row| test_set.labels[row]).collect(),
            uniforms: rows.iter().map(|&row| uniforms[row]).collect(),
        }
    }

    fn as_logits(&self) -> Logits<'_> {
        Logits::new(&self.logits, NUM_CLASSES).unwrap()
    }

    fn fitted_temperature(&self) -> f64 {
        let fit = calibration::fit_temperature(&self.as_logits(), &self.labels).unwrap();
        assert_eq!(fit.bound_hit, None, "the temperature fit hit a bound");
        fit.temperature
    }

    fn probabilities(&self, temperature: f64) -> Vec<f64> {
        calibration::softmax(&self.as_logits(), temperature).unwrap()
    }

    fn true_label_scores(&self, probabilities: &[f64], score: &Score) -> Vec<f64> {
        conformal::true_label_scores(
            probabilities,
            &self.labels,
            NUM_CLASSES,
            score,
            &self.uniforms,
        )
        .unwrap()
    }
}

/// The network's logits `[10,000, 10]` on the committed test images, and their labels.
struct TestSet {
    logits: Vec<f32>,
    labels: Vec<u32>,
}

/// Runs inference (tens of seconds in the dev profile).
fn test_set() -> TestSet {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let test = data::load_fashion_mnist(&root.join("assets/fashion-mnist"), FashionMnistPart::Test)
        .unwrap();
    let weights = std::fs::read(root.join("assets/models/fmnist-ce.safetensors")).unwrap();
    let classifier = Classifier::from_safetensors(weights).unwrap();
    TestSet {
        logits: classifier.logits(test.images.pixels()).unwrap(),
        labels: test.labels.iter().map(|&label| u32::from(label)).collect(),
    }
}

/// The probabilities of B and C at one temperature.
struct AtTemperature {
    calibration: Vec<f64>,
    evaluation: Vec<f64>,
}

/// Coverage on C of `score`, `q̂` from B. A label is in a set exactly when its score is `≤ q̂`,
/// and `true_label_scores` shares the sets' code path, so this is the sets' coverage.
fn coverage(score: &Score, at: &AtTemperature, calibration: &Part, evaluation: &Part) -> f64 {
    let qhat = conformal::conformal_threshold(
        &calibration.true_label_scores(&at.calibration, score),
        ALPHA,
    )
    .unwrap();
    let scores = evaluation.true_label_scores(&at.evaluation, score);
    scores.iter().filter(|&&s| s <= qhat).count() as f64 / scores.len() as f64
}

/// [`coverage`] through the library's prediction sets and set metrics.
fn coverage_of_sets(
    score: &Score,
    at: &AtTemperature,
    calibration: &Part,
    evaluation: &Part,
) -> f64 {
    let qhat = conformal::conformal_threshold(
        &calibration.true_label_scores(&at.calibration, score),
        ALPHA,
    )
    .unwrap();
    let sets = conformal::prediction_sets(
        &at.evaluation,
        NUM_CLASSES,
        score,
        &evaluation.uniforms,
        &Thresholds::Marginal(qhat),
    )
    .unwrap();
    conformal::set_metrics(&sets, &evaluation.labels, ALPHA)
        .unwrap()
        .coverage
}

/// One score's coverage on C with `T` fitted on B ("same") and on A ("disjoint").
struct Pair {
    same: f64,
    disjoint: f64,
}

/// What one split measured.
struct Split {
    same_temperature: f64,
    disjoint_temperature: f64,
    aps: Pair,
    lac: Pair,
}

/// All splits, computed once per test binary (inference included).
fn experiment() -> &'static [Split] {
    static SPLITS_MEASURED: OnceLock<Vec<Split>> = OnceLock::new();
    SPLITS_MEASURED.get_or_init(|| {
        let test_set = test_set();
        let n = test_set.labels.len();
        assert_eq!(n, TEMPERATURE_ROWS + CALIBRATION_ROWS + EVALUATION_ROWS);
        (0..SPLITS)
            .map(|split| {
                let order = data::seeded_permutation(n, SPLIT_SEEDS_FROM + split as u64);
                let uniforms = conformal::uniforms(n, UNIFORM_SEEDS_FROM + split as u64);
                let (temperature_rows, rest) = order.split_at(TEMPERATURE_ROWS);
                let (calibration_rows, evaluation_rows) = rest.split_at(CALIBRATION_ROWS);
                let calibration = Part::gather(&test_set, calibration_rows, &uniforms);
                let evaluation = Part::gather(&test_set, evaluation_rows, &uniforms);
                let same_temperature = calibration.fitted_temperature();
                let disjoint_temperature =
                    Part::gather(&test_set, temperature_rows, &uniforms).fitted_temperature();
                let [same, disjoint] =
                    [same_temperature, disjoint_temperature].map(|t| AtTemperature {
                        calibration: calibration.probabilities(t),
                        evaluation: evaluation.probabilities(t),
                    });
                let pair = |score: Score| {
                    let pair = Pair {
                        same: coverage(&score, &same, &calibration, &evaluation),
                        disjoint: coverage(&score, &disjoint, &calibration, &evaluation),
                    };
                    if split == 0 {
                        assert_eq!(
                            pair.same,
                            coverage_of_sets(&score, &same, &calibration, &evaluation)
                        );
                    }
                    pair
                };
                Split {
                    same_temperature,
                    disjoint_temperature,
                    aps: pair(RANDOMIZED_APS),
                    lac: pair(Score::Lac),
                }
            })
            .collect()
    })
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Sample standard deviation over `√R`.
fn standard_error(values: &[f64]) -> f64 {
    let m = mean(values);
    let variance =
        values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (values.len() as f64 - 1.0);
    (variance / values.len() as f64).sqrt()
}

fn check(name: &str, pair_of: fn(&Split) -> &Pair) {
    let splits = experiment();
    let law = conformal::coverage_law(CALIBRATION_ROWS, EVALUATION_ROWS, ALPHA).unwrap();
    let same: Vec<f64> = splits.iter().map(|s| pair_of(s).same).collect();
    let disjoint: Vec<f64> = splits.iter().map(|s| pair_of(s).disjoint).collect();
    let differences: Vec<f64> = same.iter().zip(&disjoint).map(|(s, d)| s - d).collect();
    let temperatures: Vec<f64> = splits.iter().map(|s| s.same_temperature).collect();
    let gaps: Vec<f64> = splits
        .iter()
        .map(|s| (s.same_temperature - s.disjoint_temperature).abs())
        .collect();
    let changed = differences.iter().filter(|&&d| d != 0.0).count();
    let root = (SPLITS as f64).sqrt();
    eprintln!(
        "{name}, {SPLITS} splits, α = {ALPHA}: law mean k/(n + 1) = {}/{} = {:.5}, sd of one split {:.5}",
        law.k,
        CALIBRATION_ROWS + 1,
        law.mean,
        law.split_standard_deviation,
    );
    for (protocol, values) in [("same", &same), ("disjoint", &disjoint)] {
        let (m, error) = (mean(values), standard_error(values));
        eprintln!(
            "{name}: {protocol:<8} mean coverage {m:.5} ± {error:.5} SE (sd {:.5}), {:+.2} SE from the law",
            error * root,
            (m - law.mean) / error
        );
        assert!(
            (m - law.mean).abs() <= STANDARD_ERRORS * error,
            "{name} {protocol}: mean coverage {m} is more than {STANDARD_ERRORS} SE ({error}) from {}",
            law.mean
        );
    }
    let (difference, error) = (mean(&differences), standard_error(&differences));
    eprintln!(
        "{name}: same − disjoint {difference:+.6} ± {error:.6} SE (sd {:.6}; {changed} of {SPLITS} splits differ)",
        error * root
    );
    eprintln!(
        "{name}: mean T_B {:.4}, mean |T_B − T_A| {:.4}",
        mean(&temperatures),
        mean(&gaps)
    );
    assert!(
        difference.abs() <= STANDARD_ERRORS * error,
        "{name}: mean paired difference {difference} is more than {STANDARD_ERRORS} SE ({error}) from 0"
    );
    let negligible = NEGLIGIBLE_FRACTION * law.split_standard_deviation;
    assert!(
        difference.abs() + STANDARD_ERRORS * error <= negligible,
        "{name}: the paired difference {difference} ± {STANDARD_ERRORS}·{error} is not resolved below {negligible}"
    );
}

#[test]
fn fitting_temperature_on_the_calibration_set_leaves_randomized_aps_coverage_unchanged() {
    check("randomized APS", |split| &split.aps);
}

#[test]
fn fitting_temperature_on_the_calibration_set_leaves_lac_coverage_unchanged() {
    check("LAC", |split| &split.lac);
}
