//! Tests of `temperature_anatomy.rs` on synthetic networks whose truth is planted: logits
//! `3·N(0, 1)` in each of 10 classes with labels drawn from `softmax(z / T_true)`, so the
//! temperature that calibrates them is `T_true` by construction.

use super::*;
use crate::calibration::evaluate;
use crate::test_support::planted_temperature_rows;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const CLASSES: usize = 10;
const BINS: usize = 15;

/// `n` rows of planted logits and labels drawn from `softmax(z / true_temperature)`.
fn planted(n: usize, true_temperature: f64, seed: u64) -> (Vec<f32>, Vec<u32>) {
    planted_temperature_rows(n, CLASSES, true_temperature, seed)
}

/// Planted halves of `n` rows each, the two drawn with different seeds.
struct Halves {
    calibration: (Vec<f32>, Vec<u32>),
    evaluation: (Vec<f32>, Vec<u32>),
}

impl Halves {
    fn new(n: usize, true_temperature: f64, seed: u64) -> Self {
        Self {
            calibration: planted(n, true_temperature, 2 * seed),
            evaluation: planted(n, true_temperature, 2 * seed + 1),
        }
    }

    fn labelled(&self) -> (Labelled<'_>, Labelled<'_>) {
        (labelled(&self.calibration), labelled(&self.evaluation))
    }
}

fn labelled((logits, labels): &(Vec<f32>, Vec<u32>)) -> Labelled<'_> {
    Labelled::new(Logits::new(logits, CLASSES).unwrap(), labels).unwrap()
}

fn assert_close(actual: f64, expected: f64, tolerance: f64) {
    assert!(
        (actual - expected).abs() <= tolerance,
        "expected {expected}, got {actual} (tolerance {tolerance})"
    );
}

/// Mean and standard deviation of `values`.
fn mean_and_deviation(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, variance.sqrt())
}

#[test]
fn the_grid_spans_the_slider_on_a_log_scale() {
    let grid = temperature_grid(ANATOMY_POINTS).unwrap();
    assert_eq!(grid.len(), ANATOMY_POINTS);
    assert_eq!(
        (grid[0], grid[ANATOMY_POINTS - 1]),
        (MIN_TEMPERATURE, MAX_TEMPERATURE)
    );
    let ratio = grid[1] / grid[0];
    for pair in grid.windows(2) {
        assert_close(pair[1] / pair[0], ratio, 1e-12);
    }
    // 400 = 20/0.05 is 2.6 decades: 120 steps make 46 a decade.
    assert_close(ratio.log10(), 400_f64.log10() / 120.0, 1e-15);
    assert_eq!(
        temperature_grid(1),
        Err(CalibrationError::InvalidPointCount(1))
    );
}

#[test]
fn the_minima_sit_at_the_planted_temperature() {
    // T_true = 2 on 4,000 rows a half: the NLL's minimum on the calibration half is the fitted T
    // to the grid's half step (a ratio of 1.025), and the fit recovers 2 within 5% (its
    // sampling error is about 1%). The Brier score is proper too: its minimum on either half is
    // near 2. Both NLL curves fall, then rise.
    let halves = Halves::new(4000, 2.0, 1);
    let (calibration, evaluation) = halves.labelled();
    let grid = temperature_grid(ANATOMY_POINTS).unwrap();
    let result = anatomy(&calibration, &evaluation, &grid, BINS, Binning::Width).unwrap();
    let fitted = result.fitted.temperature;
    assert_close(fitted, 2.0, 0.1);
    let half_step = (grid[1] / grid[0]).sqrt();
    let nll = curve_minimum(&grid, &result.calibration.nll);
    assert!((nll.temperature / fitted).ln().abs() <= half_step.ln() + 1e-12);
    for curves in [&result.calibration, &result.evaluation] {
        let nll = curve_minimum(&grid, &curves.nll);
        assert_close(nll.temperature, 2.0, 0.2);
        let brier = curve_minimum(&grid, &curves.brier);
        assert_close(brier.temperature, 2.0, 0.3);
        assert!(curves.nll[0] > nll.value && curves.nll[ANATOMY_POINTS - 1] > nll.value);
        assert_eq!(curves.ece.len(), ANATOMY_POINTS);
        assert_eq!(curves.smece.len(), ANATOMY_POINTS);
    }
    // Every curve at T = 1 is the library's evaluation there (the grid's point nearest 1).
    let index = grid
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.ln().abs().total_cmp(&b.1.ln().abs()))
        .unwrap()
        .0;
    let direct = evaluate(
        evaluation.logits(),
        evaluation.labels(),
        grid[index],
        BINS,
        Binning::Width,
    )
    .unwrap();
    assert_eq!(result.evaluation.ece[index], direct.ece);
    assert_eq!(result.evaluation.nll[index], direct.nll);
}

/// `T` fitted by NLL on the calibration half, and the evaluation half's metrics there.
fn honest_fit(calibration: &Labelled, evaluation: &Labelled) -> (f64, CalibrationReport) {
    let t = fit_temperature(calibration.logits(), calibration.labels())
        .unwrap()
        .temperature;
    let report = evaluate(
        evaluation.logits(),
        evaluation.labels(),
        t,
        BINS,
        Binning::Width,
    );
    (t, report.unwrap())
}

/// A mistake that needs no grid, on 15 equal-width bins.
fn fit_by_mistake(
    mistake: FitMistake,
    calibration: &Labelled,
    evaluation: &Labelled,
) -> MistakenFit {
    mistaken_fit(
        mistake,
        calibration,
        evaluation,
        &[1.0],
        BINS,
        Binning::Width,
    )
    .unwrap()
}

#[test]
fn fitting_on_the_evaluation_half_is_optimistic_by_one_over_n() {
    // Fitted on the half it reports, T minimises that half's NLL: it is never above the honest
    // fit's NLL there. On average the gap is (1/2)·I·Var(T̂_cal − T̂_eval) = (1/2)(1/n + 1/n) = 1/n
    // for one parameter fitted by maximum likelihood on each of two independent halves of n
    // rows (I the Fisher information). 200 planted pairs of 1,000 rows: the gap is about
    // (1/n)·χ²₁, so the mean's standard error is √2/(n√200) = 0.1/n; 4 of them: 0.4/n.
    let n = 1000;
    let gaps: Vec<f64> = (0..200)
        .map(|seed| {
            let halves = Halves::new(n, 1.5, 100 + seed);
            let (calibration, evaluation) = halves.labelled();
            let (_, honest) = honest_fit(&calibration, &evaluation);
            let mistaken = fit_by_mistake(FitMistake::EvaluationHalf, &calibration, &evaluation);
            let gap = honest.nll - mistaken.evaluation.nll;
            assert!(gap >= -1e-12, "the in-sample fit lost: {gap}");
            gap
        })
        .collect();
    let (mean, _) = mean_and_deviation(&gaps);
    assert_close(mean * n as f64, 1.0, 0.4);
}

#[test]
fn dividing_probabilities_fits_a_meaningless_temperature() {
    // A calibrated network (T_true = 1): the honest fit finds T ≈ 1. Probabilities in place of
    // logits can only spread by 1/T within [0, 1], so the fit must go far below 1 to be
    // confident, lands where no temperature of the logits would, and loses NLL on the
    // evaluation half; the predictions (the argmax) do not change.
    let halves = Halves::new(3000, 1.0, 7);
    let (calibration, evaluation) = halves.labelled();
    let (honest_temperature, honest_report) = honest_fit(&calibration, &evaluation);
    assert_close(honest_temperature, 1.0, 0.05);
    let mistaken = fit_by_mistake(FitMistake::Probabilities, &calibration, &evaluation);
    assert!(mistaken.temperature < 0.3, "T = {}", mistaken.temperature);
    assert!(
        mistaken.evaluation.nll > honest_report.nll + 0.05,
        "{} against {}",
        mistaken.evaluation.nll,
        honest_report.nll
    );
    assert_eq!(mistaken.evaluation.accuracy, honest_report.accuracy);
}

#[test]
fn minimising_ece_is_noisier_than_minimising_nll() {
    // 40 planted sets of 1,000 rows (T_true = 1.5): the T of least ECE on the grid (its points
    // between 0.75 and 3, where both fits land) scatters more widely than the NLL's fitted T
    // (1.7 times on these seeds; each standard deviation of 40 draws is good to about 11%, so
    // the bound is 1.3), and moves when the bins change (15 against 30 bins) in most sets.
    let grid: Vec<f64> = temperature_grid(ANATOMY_POINTS)
        .unwrap()
        .into_iter()
        .filter(|t| (0.75..=3.0).contains(t))
        .collect();
    let (mut by_nll, mut by_ece) = (Vec::new(), Vec::new());
    let mut moved = 0;
    for seed in 0..40 {
        let halves = Halves::new(1000, 1.5, 500 + seed);
        let (calibration, evaluation) = halves.labelled();
        by_nll.push(
            fit_temperature(calibration.logits(), calibration.labels())
                .unwrap()
                .temperature,
        );
        let at = |bins| {
            mistaken_fit(
                FitMistake::MinimiseEce,
                &calibration,
                &evaluation,
                &grid,
                bins,
                Binning::Width,
            )
            .unwrap()
            .temperature
        };
        let fifteen = at(15);
        by_ece.push(fifteen);
        moved += usize::from(fifteen != at(30));
    }
    let (nll_mean, nll_deviation) = mean_and_deviation(&by_nll);
    let (_, ece_deviation) = mean_and_deviation(&by_ece);
    assert_close(nll_mean, 1.5, 0.05);
    assert!(
        ece_deviation > 1.3 * nll_deviation,
        "{ece_deviation} against {nll_deviation}"
    );
    assert!(
        moved >= 20,
        "the bins moved the ECE fit in {moved} of 40 sets"
    );
}

#[test]
fn the_brier_decomposition_recovers_planted_forecasts() {
    // Two classes, forecasts p_0 ∈ {0.2, 0.5, 0.8} with equal shares and labels drawn from them:
    // 10 bins keep the three forecasts apart, so the within-bin term is 0 (to rounding) and
    // reliability is sampling noise alone; resolution is 2·Var(p) = 0.12, uncertainty
    // 2·¼ = 0.5, and the Brier score their difference, 0.38. On 30,000 rows the noise is about
    // 0.003.
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let (mut logits, mut labels) = (Vec::new(), Vec::new());
    for i in 0..30_000 {
        let p: f64 = [0.2, 0.5, 0.8][i % 3];
        logits.extend([(p / (1.0 - p)).ln() as f32, 0.0]);
        labels.push(u32::from(rng.random::<f64>() >= p));
    }
    let logits = Logits::new(&logits, 2).unwrap();
    let evaluation = evaluate_in_full(&logits, &labels, 1.0, 10, Binning::Width).unwrap();
    let parts = BrierDecomposition::of(&evaluation);
    assert_close(parts.within_bin, 0.0, 1e-9);
    assert_close(parts.reliability, 0.0, 0.001);
    assert_close(parts.resolution, 0.12, 0.01);
    assert_close(parts.uncertainty, 0.5, 0.001);
    assert_close(evaluation.report.brier, 0.38, 0.01);
}

#[test]
fn temperature_scaling_moves_reliability_not_resolution() {
    // T_true = 2: at T = 1 the forecasts are too sharp, which is reliability; the fitted T
    // removes most of it. Resolution, what the forecasts can tell apart, changes by a few
    // percent (the bins regroup the rows), and uncertainty, the labels' alone, not at all.
    let halves = Halves::new(5000, 2.0, 3);
    let (calibration, evaluation) = halves.labelled();
    let fitted = fit_temperature(calibration.logits(), calibration.labels())
        .unwrap()
        .temperature;
    let at = |t| {
        BrierDecomposition::of(
            &evaluate_in_full(
                evaluation.logits(),
                evaluation.labels(),
                t,
                BINS,
                Binning::Width,
            )
            .unwrap(),
        )
    };
    let (cold, scaled) = (at(1.0), at(fitted));
    assert!(
        scaled.reliability < 0.2 * cold.reliability,
        "{scaled:?} {cold:?}"
    );
    assert!((scaled.resolution - cold.resolution).abs() < 0.1 * cold.resolution);
    assert_eq!(scaled.uncertainty, cold.uncertainty);
}
