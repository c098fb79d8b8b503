//! Conformal prediction for an overconfident network, from `f32` logits through `f64`
//! probabilities, against exact arithmetic.
//!
//! Every probability is a dyadic rational `m / 2⁵⁰`, so the reference scores, `q̂` and sets are
//! computed exactly in integers. The logits are `ln p` rounded to `f32`, as a network hands them
//! over. Top probabilities are `1 − ε` with `ε` from `2⁻⁴⁰ ≈ 9.1e-13` to `224·2⁻⁴⁰ ≈ 2.0e-10`
//! (the top logit about 22 to 28 above the next), and some evaluation scores lie only
//! `2⁻⁴⁰ ≈ 9.1e-13` or `2⁻³⁴ ≈ 5.8e-11` from `q̂`, or exactly on it.

use calibra::calibration::{self, Logits};
use calibra::conformal::{self, Score};

/// Largest difference allowed between a computed probability or score and the exact one.
/// Rounding `ln p` to `f32` and computing in `f64` move each by about 2e-16 (a LAC score
/// `1 − p_max` loses the most); the smallest gap between an evaluation score and `q̂` is
/// `2⁻⁴⁰ ≈ 9.1e-13`, 90 times this tolerance.
const TOLERANCE: f64 = 1e-14;

const NUM_CLASSES: usize = 10;
/// Probabilities are numerators over `2⁵⁰`.
const DENOMINATOR: u64 = 1 << 50;
/// `ε` comes in steps of `2⁻⁴⁰`, that is `2¹⁰` numerator units.
const EPSILON_STEP: u64 = 1 << 10;
/// With 19 calibration rows, `k = ⌈20·(1 − 0.2)⌉ = 16`.
const ALPHA: f64 = 0.2;
const RANK: usize = 16;

const SCORES: [Score; 2] = [Score::Lac, Score::Aps { randomized: false }];

#[derive(Clone)]
struct Example {
    /// Probabilities as numerators over [`DENOMINATOR`]; they sum to it.
    numerators: [u64; NUM_CLASSES],
    label: u32,
}

/// Row `index` with top probability `1 − e·2⁻⁴⁰` on class `index mod 10`, the runner-up
/// `e·2⁻⁴⁰ − 36·2⁻⁵⁰` on class `index + 3 mod 10`, and `1, 2, …, 8` times `2⁻⁵⁰` on the others
/// in class order. Labelled with the top class or with the runner-up.
fn example(index: usize, e: u64, labelled_top: bool) -> Example {
    let top = index % NUM_CLASSES;
    let runner_up = (index + 3) % NUM_CLASSES;
    let mut numerators = [0; NUM_CLASSES];
    let others = (0..NUM_CLASSES).filter(|&class| class != top && class != runner_up);
    for (class, tail) in others.zip(1..) {
        numerators[class] = tail;
    }
    numerators[runner_up] = e * EPSILON_STEP - 36;
    numerators[top] = DENOMINATOR - e * EPSILON_STEP;
    assert_eq!(numerators.iter().sum::<u64>(), DENOMINATOR);
    let label = if labelled_top { top } else { runner_up };
    Example {
        numerators,
        label: label as u32,
    }
}

/// The exact score of every label, as a numerator over [`DENOMINATOR`]: LAC `1 − p_y`;
/// non-randomized APS the mass of the labels ranked at or above `y` (by probability, descending,
/// ties to the lower index).
fn exact_scores(example: &Example, score: &Score) -> [u64; NUM_CLASSES] {
    let p = &example.numerators;
    let mut scores = [0; NUM_CLASSES];
    match score {
        Score::Lac => {
            for (s, &m) in scores.iter_mut().zip(p) {
                *s = DENOMINATOR - m;
            }
        }
        Score::Aps { randomized: false } => {
            let mut order: Vec<usize> = (0..NUM_CLASSES).collect();
            order.sort_by(|&a, &b| p[b].cmp(&p[a]).then(a.cmp(&b)));
            let mut mass = 0;
            for class in order {
                mass += p[class];
                scores[class] = mass;
            }
        }
        other => panic!("no exact reference for {other:?}"),
    }
    scores
}

fn exact_value(numerator: u64) -> f64 {
    numerator as f64 / DENOMINATOR as f64
}

/// `softmax` of the examples' `f32` logits `ln p`, row-major.
fn probabilities(examples: &[Example]) -> Vec<f64> {
    let logits: Vec<f32> = examples
        .iter()
        .flat_map(|example| example.numerators.map(|m| exact_value(m).ln() as f32))
        .collect();
    calibration::softmax(&Logits::new(&logits, NUM_CLASSES).unwrap(), 1.0).unwrap()
}

fn labels(examples: &[Example]) -> Vec<u32> {
    examples.iter().map(|example| example.label).collect()
}

fn assert_close(computed: f64, exact: u64, what: &str) {
    let exact = exact_value(exact);
    assert!(
        (computed - exact).abs() <= TOLERANCE,
        "{what}: computed {computed:e}, exact {exact:e} (tolerance {TOLERANCE:e})"
    );
}

#[test]
fn saturated_scores_thresholds_and_sets_match_exact_arithmetic() {
    // Calibration: 18 rows labelled with their top class, ε = 10, 20, …, 180 steps of 2⁻⁴⁰,
    // and one labelled with its runner-up.
    let mut calibration: Vec<Example> = (0..18)
        .map(|row| example(row, 10 * (row as u64 + 1), true))
        .collect();
    calibration.push(example(18, 100, false));
    // Exact thresholds: LAC q̂ = 160·2⁻⁴⁰ ≈ 1.455e-10 (row 15); APS q̂ = 1 − 30·2⁻⁴⁰ ≈ 1 − 2.73e-11
    // (row 2). Evaluation: top-labelled rows with ε 1 step (2⁻⁴⁰) or 64 steps (2⁻³⁴) either side of
    // a threshold, the two calibration rows that set q̂ (scores exactly on it) and the same rows
    // labelled with their runner-up.
    let mut evaluation: Vec<Example> = [1, 29, 31, 94, 159, 161, 224]
        .into_iter()
        .zip(19..)
        .map(|(e, row)| example(row, e, true))
        .collect();
    for row in [2, 15] {
        let runner_up = example(row, 10 * (row as u64 + 1), false);
        evaluation.extend([calibration[row].clone(), runner_up]);
    }
    // Rounded to f32, whose spacing below 1 is 2⁻²⁴ ≈ 6e-8, every top probability here would be
    // exactly 1: the 18 top-label calibration scores would tie at 0 (LAC) and at 1 (APS), q̂
    // would be 0 and 1, and the rows with ε = 161 and 224 steps (LAC) and 1 and 29 steps (APS)
    // would get their top label back: coverage 9/11 instead of the exact 7/11, for both scores.
    let calibration_probabilities = probabilities(&calibration);
    let evaluation_probabilities = probabilities(&evaluation);
    for (probabilities, examples) in [
        (&calibration_probabilities, &calibration),
        (&evaluation_probabilities, &evaluation),
    ] {
        for (row, example) in probabilities.chunks_exact(NUM_CLASSES).zip(examples) {
            for (&p, &m) in row.iter().zip(&example.numerators) {
                assert_close(p, m, "probability");
            }
            assert!(
                row.iter().all(|&p| p < 1.0),
                "a top probability rounded to 1"
            );
        }
    }

    for score in SCORES {
        for (probabilities, examples) in [
            (&calibration_probabilities, &calibration),
            (&evaluation_probabilities, &evaluation),
        ] {
            let draws = conformal::uniforms(examples.len(), 0);
            let computed =
                conformal::all_label_scores(probabilities, NUM_CLASSES, &score, &draws).unwrap();
            for (row, example) in computed.chunks_exact(NUM_CLASSES).zip(examples.iter()) {
                for (&s, &exact) in row.iter().zip(&exact_scores(example, &score)) {
                    assert_close(s, exact, score.name());
                }
            }
        }

        let mut calibration_scores: Vec<u64> = calibration
            .iter()
            .map(|example| exact_scores(example, &score)[example.label as usize])
            .collect();
        calibration_scores.sort_unstable();
        let exact_qhat = calibration_scores[RANK - 1];
        let report = conformal::split_conformal(
            &calibration_probabilities,
            &labels(&calibration),
            &evaluation_probabilities,
            &labels(&evaluation),
            NUM_CLASSES,
            &score,
            ALPHA,
            conformal::ThresholdRule::Marginal,
            &vec![1.0; calibration.len()],
            &vec![1.0; evaluation.len()],
        )
        .unwrap();
        assert_close(report.qhat[0], exact_qhat, "q̂");

        let mut covered = 0;
        let mut smallest_gap = u64::MAX;
        for (row, example) in evaluation.iter().enumerate() {
            let scores = exact_scores(example, &score);
            let exact_set: Vec<u32> = (0..NUM_CLASSES as u32)
                .filter(|&label| scores[label as usize] <= exact_qhat)
                .collect();
            assert_eq!(
                report.sets.set(row).collect::<Vec<_>>(),
                exact_set,
                "{} set of evaluation row {row}",
                score.name()
            );
            covered += usize::from(exact_set.contains(&example.label));
            let true_score = scores[example.label as usize];
            if true_score != exact_qhat {
                smallest_gap = smallest_gap.min(true_score.abs_diff(exact_qhat));
            }
        }
        // The evaluation set probes the threshold as closely as the rows allow.
        assert_eq!(smallest_gap, EPSILON_STEP, "{}", score.name());
        assert_eq!(covered, 7, "{}", score.name());
        assert_eq!(report.metrics.coverage, 7.0 / 11.0, "{}", score.name());
    }
}
