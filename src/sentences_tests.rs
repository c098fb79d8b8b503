//! Each sentence on both sides of every threshold that flips it.

use super::*;
use crate::bootstrap::MetricInterval;
use crate::temperature_anatomy::CurveMinimum;

#[test]
fn percent_rounds_to_the_asked_decimals() {
    assert_eq!(percent(0.88824, 2), "88.82%");
    assert_eq!(percent(0.9, 0), "90%");
}

/// A test result with the given p-value and mean gap (standard error 0.4 points).
fn tested(p_value: f64, mean_gap: f64) -> CalibrationTest {
    CalibrationTest {
        ece: 0.043,
        null_ece_mean: 0.006,
        null_ece_limit: 0.0104,
        p_value,
        mean_gap,
        gap_standard_error: 0.004,
    }
}

#[test]
fn each_verdict_says_its_direction_with_the_numbers_it_rests_on() {
    let over = confidence_verdict(1.0, 0.912, &tested(1.0 / 201.0, 0.049));
    assert!(over.contains("T = 1.000") && over.contains("91.2%") && over.contains("96.1%"));
    assert!(
        over.contains("overconfident") && over.contains("4.9 points (± 0.8)"),
        "{over}"
    );
    assert!(over.contains("0.0430") && over.contains("0.0104"), "{over}");
    let under = confidence_verdict(1.0, 0.91, &tested(1.0 / 201.0, -0.72));
    assert!(
        under.contains("underconfident") && under.contains("72.0 points"),
        "{under}"
    );
    assert!(!under.contains("overconfident"), "{under}");
    let neither = confidence_verdict(1.0, 0.91, &tested(1.0 / 201.0, 0.005));
    assert!(
        neither.contains("miscalibrated") && neither.contains("no one direction"),
        "{neither}"
    );
    assert!(!neither.contains("overconfident") && !neither.contains("underconfident"));
    let noise = confidence_verdict(1.759, 0.912, &tested(0.3, 0.02));
    assert!(noise.contains("cannot tell"), "{noise}");
    assert!(!noise.contains("overconfident") && !noise.contains("underconfident"));
}

#[test]
fn the_rates_line_states_the_measured_counts() {
    let line = verdict_rates_line();
    let r = VERDICT_RATES;
    assert!(line.contains(&format!(
        "{} of {} calibrated",
        r.false_alarms, r.calibrated_sets
    )));
    assert!(line.contains(&format!(
        "{} of {} networks",
        r.detections, r.overconfident_sets
    )));
}

#[test]
fn coverage_inside_the_band() {
    let verdict = coverage_verdict(0.9001, 0.9, 0.9002, 0.006, 0);
    assert_eq!(verdict.deviations, 0.0);
    assert!(verdict.explained_by_chance);
    assert!(
        verdict.text.contains("inside the guarantee band"),
        "{}",
        verdict.text
    );
}

#[test]
fn coverage_below_by_less_than_three_deviations_is_chance() {
    // Non-randomized APS at the fitted T: 88.82% against 90%, one split's sd 0.60 points.
    let verdict = coverage_verdict(0.8882, 0.9, 0.9002, 0.006, 0);
    assert!((verdict.deviations - (0.8882 - 0.9) / 0.006).abs() < 1e-12);
    assert!(verdict.explained_by_chance);
    assert!(
        verdict.text.contains("2.0 standard deviations below"),
        "{}",
        verdict.text
    );
    assert!(verdict.text.contains("±0.60%"), "{}", verdict.text);
}

#[test]
fn coverage_far_above_with_ties_names_the_ties() {
    let verdict = coverage_verdict(0.9997, 0.9, 0.9002, 0.006, 812);
    assert!(!verdict.explained_by_chance);
    assert!(verdict.deviations > 16.0);
    assert!(
        verdict.text.contains("812 calibration scores tie"),
        "{}",
        verdict.text
    );
}

#[test]
fn coverage_far_below_is_not_chance() {
    let verdict = coverage_verdict(0.85, 0.9, 0.9002, 0.006, 0);
    assert!(!verdict.explained_by_chance);
    assert!(
        verdict
            .text
            .contains("below the band, more than chance usually gives"),
        "{}",
        verdict.text
    );
    assert!(!verdict.text.contains("scores tie"), "{}", verdict.text);
    assert!(
        verdict.text.contains("a sign that a condition fails"),
        "{}",
        verdict.text
    );
}

fn summary() -> ExperimentSummary {
    ExperimentSummary {
        repetitions: 1000,
        n_calibration: 5000,
        n_evaluation: 5000,
        k: 4501,
        mean: 0.90005,
        standard_deviation: 0.0060,
        beta_mean: 4501.0 / 5001.0,
        beta_standard_deviation: 0.00424,
        finite_standard_deviation: 0.00600,
        tied_scores: 0,
        mondrian_ignored: false,
    }
}

#[test]
fn centred_experiment_says_so() {
    let text = experiment_caption(&summary());
    assert!(text.contains("sits where the theory puts it"), "{text}");
    assert!(
        text.contains("matches the Beta-Binomial prediction"),
        "{text}"
    );
    assert!(!text.contains("Mondrian"), "{text}");
}

#[test]
fn off_centre_experiment_with_ties_says_so() {
    // Non-randomized APS at T = 1: mean 99.97% against 90.00%.
    let s = ExperimentSummary {
        mean: 0.9997,
        standard_deviation: 0.0002,
        tied_scores: 1700,
        mondrian_ignored: true,
        ..summary()
    };
    let text = experiment_caption(&s);
    assert!(text.contains("is not where the theory puts it"), "{text}");
    assert!(text.contains("1700 of the pooled scores tie"), "{text}");
    assert!(text.contains("narrower than the Beta-Binomial"), "{text}");
    assert!(text.contains("Mondrian switch does not apply"), "{text}");
    assert!(!text.contains("sits where"), "{text}");
}

#[test]
fn per_class_sentence_names_the_extremes() {
    let names = ["T-shirt/top", "Trouser", "Shirt"];
    let coverage = [Some(0.86), Some(0.99), None];
    let text = per_class_sentence(&names, &coverage, 0.9, false, 0.02);
    assert!(
        text.contains("T-shirt/top's 86.0%") && text.contains("Trouser's 99.0%"),
        "{text}"
    );
    let text = per_class_sentence(&names, &coverage, 0.9, true, 0.0201);
    assert!(
        text.contains("in expectation") && text.contains("±2.0%"),
        "{text}"
    );
}

#[test]
fn score_and_threshold_show_enough_decimals_to_compare() {
    assert_eq!(
        score_against_threshold(0.999_999_71, 0.999_999_52),
        ("0.9999997".to_string(), "0.9999995".to_string())
    );
    assert_eq!(
        score_against_threshold(0.25, 0.5),
        ("0.2500".into(), "0.5000".into())
    );
    assert_eq!(
        score_against_threshold(0.5, 0.5),
        ("0.5000".into(), "0.5000".into())
    );
    assert_eq!(
        score_against_threshold(0.5, f64::INFINITY),
        ("0.5000".into(), "∞".into())
    );
}

#[test]
fn too_few_calibration_images_is_said() {
    let verdict = coverage_verdict_without_threshold(1.0, &[]);
    assert!(
        verdict.text.contains("100.00%") && verdict.text.contains("every set holds every label")
    );
    // Mondrian: only the classes whose own q̂ is infinite join every set.
    let one = coverage_verdict_without_threshold(0.93, &["Sandal"]);
    assert!(
        one.text.contains("of class Sandal for a finite q̂")
            && one.text.contains("its label joins every set"),
        "{}",
        one.text
    );
    assert!(
        !one.text.contains("every set holds every label"),
        "{}",
        one.text
    );
    let two = coverage_verdict_without_threshold(0.93, &["Sandal", "Bag"]);
    assert!(
        two.text.contains("of classes Sandal, Bag")
            && two.text.contains("their labels join every set"),
        "{}",
        two.text
    );
}

#[test]
fn thresholds_a_hair_below_one_are_not_written_as_one() {
    assert_eq!(threshold_text(1.0 - 3.7e-10), "1 − 3.7e-10");
    assert_eq!(threshold_text(1.0), "1.0000");
    assert_eq!(threshold_text(0.87654), "0.8765");
    assert_eq!(threshold_text(f64::INFINITY), "∞");
}

/// A paired difference with these estimates and intervals.
fn difference(fpr95: (f64, f64, f64), auroc: (f64, f64, f64)) -> PairedDifference {
    let interval = |(estimate, lower, upper)| MetricInterval {
        estimate,
        lower,
        upper,
    };
    let own = crate::ood_difference::DetectionIntervals {
        fpr95: interval((0.5, 0.4, 0.6)),
        auroc: interval((0.8, 0.7, 0.9)),
    };
    PairedDifference {
        fpr95: interval(fpr95),
        auroc: interval(auroc),
        chosen: own,
        reference: own,
    }
}

#[test]
fn the_ood_lesson_names_a_difference_only_beyond_its_interval() {
    let args = (
        "LogitNorm τ = 0.04",
        "MNIST digits",
        "energy",
        (0.92, 0.61),
        (0.559, 0.774),
    );
    let pending = ood_lesson(args.0, args.1, args.2, args.3, args.4, None);
    assert!(
        pending.contains("92.0%") && pending.contains("55.9%"),
        "{pending}"
    );
    assert!(pending.contains("AUROC 0.610 against 0.774"), "{pending}");
    assert!(
        pending.contains("Computing how much of the difference is noise"),
        "{pending}"
    );
    let worse = difference((0.361, 0.33, 0.39), (-0.164, -0.18, -0.15));
    let text = ood_lesson(args.0, args.1, args.2, args.3, args.4, Some(&worse));
    assert!(
        text.contains("on this run, LogitNorm τ = 0.04 raises FPR95 by 36.1 points (95% interval +33.0 to +39.0)"),
        "{text}"
    );
    assert!(
        text.contains("AUROC falls by 0.164 (95% interval -0.180 to -0.150)"),
        "{text}"
    );
    let better = difference((-0.3, -0.35, -0.25), (0.05, 0.04, 0.06));
    let text = ood_lesson(
        args.0,
        args.1,
        args.2,
        (0.1, 0.95),
        (0.4, 0.9),
        Some(&better),
    );
    assert!(
        text.contains("lowers FPR95 by 30.0 points") && text.contains("AUROC rises"),
        "{text}"
    );
    let noise = difference((0.01, -0.02, 0.04), (-0.004, -0.01, 0.002));
    let text = ood_lesson(
        args.0,
        args.1,
        args.2,
        (0.57, 0.79),
        (0.56, 0.79),
        Some(&noise),
    );
    assert!(
        text.contains("the FPR95 difference, +1.0 points, is within noise"),
        "{text}"
    );
    assert!(
        text.contains("the AUROC difference, -0.004, is within noise"),
        "{text}"
    );
    for text in [pending, text] {
        assert!(!text.contains("holds") && !text.contains("paper"), "{text}");
    }
}

#[test]
fn the_calibration_lesson_states_the_numbers_and_the_direction_of_t() {
    let logitnorm = NetworkFigures {
        title: "LogitNorm τ = 0.04",
        accuracy: 0.9105,
        ece_raw: 0.7176,
        fitted_temperature: 0.0661,
        fitted_bound_hit: false,
        ece_fitted: 0.0127,
    };
    let ce = NetworkFigures {
        title: "cross-entropy",
        accuracy: 0.912,
        ece_raw: 0.0417,
        fitted_temperature: 1.759,
        fitted_bound_hit: false,
        ece_fitted: 0.0123,
    };
    let text = calibration_lesson(&logitnorm, &ce);
    assert!(
        text.contains(
            "the probabilities of LogitNorm τ = 0.04 are worse calibrated than those of \
             cross-entropy (ECE 0.7176 against 0.0417"
        ),
        "{text}"
    );
    assert!(
        text.contains("T = 0.066 sharpens them and brings ECE to 0.0127"),
        "{text}"
    );
    assert!(text.contains("accuracy 91.05% against 91.20%"), "{text}");
    assert!(
        text.contains("softmax(z/(τ‖z‖))") && !text.contains("stay small"),
        "{text}"
    );
    assert!(!text.contains("bound"), "{text}");
    let at_bound = NetworkFigures {
        fitted_temperature: 0.05,
        fitted_bound_hit: true,
        ..logitnorm
    };
    let text = calibration_lesson(&at_bound, &ce);
    assert!(
        text.contains("T = 0.050 (the fit stopped at the slider's bound"),
        "{text}"
    );
    let text = calibration_lesson(&ce, &logitnorm);
    assert!(
        text.contains("no worse calibrated than") && text.contains("softens"),
        "{text}"
    );
}

#[test]
fn a_confidence_never_rounds_up_to_certainty() {
    assert_eq!(confidence_text(0.973), "97.3%");
    assert_eq!(confidence_text(0.99996), "99.996%");
    assert_eq!(confidence_text(0.999_999_4), "99.9999%");
    assert_eq!(confidence_text(0.999_999_96), "99.999996%");
    assert_eq!(confidence_text(1.0), "> 99.99995%");
    assert_eq!(confidence_text(0.4), "40.0%");
}

#[test]
fn rivals_accuracy_sentence_says_what_vector_scaling_did() {
    let none = rivals_accuracy_sentence(0.914, (0.914, 0), 5000);
    assert!(
        none.contains("91.40%") && none.contains("move none"),
        "{none}"
    );
    let changed = rivals_accuracy_sentence(0.914, (0.9162, 37), 5000);
    assert!(
        changed.contains("change 37 of the 5,000 predictions")
            && changed.contains("91.62%")
            && changed.contains("(+0.22 points)"),
        "{changed}"
    );
    let worse = rivals_accuracy_sentence(0.914, (0.912, 12), 5000);
    assert!(worse.contains("(-0.20 points)"), "{worse}");
    let even = rivals_accuracy_sentence(0.914, (0.914, 4), 5000);
    assert!(
        even.contains("change 4 of") && even.contains("stays the same"),
        "{even}"
    );
}

#[test]
fn rivals_binning_sentence_puts_overfitting_where_it_is_measured() {
    let figures = |distinct, calibration_ece, ece, nll| BinningFigures {
        distinct,
        ece,
        calibration_ece,
        nll,
    };
    let text = rivals_binning_sentence(
        figures(12, 0.0, 0.011, 0.31),
        figures(40, 0.0009, 0.013, 0.35),
        figures(5000, 0.008, 0.010, 0.24),
        5000,
    );
    assert!(
        text.contains("only 12 and 40 distinct confidences (temperature scaling: 5,000)"),
        "{text}"
    );
    assert!(
        text.contains("their ECE (0.0000 and 0.0009) is near zero by construction")
            && text.contains("cannot show overfitting"),
        "{text}"
    );
    assert!(
        text.contains("ECE 0.0110 and 0.0130 against temperature scaling's 0.0100")
            && text.contains("NLL 0.3100 and 0.3500 against 0.2400"),
        "{text}"
    );
    assert!(!text.contains("fits the calibration half better"), "{text}");
}

#[test]
fn shift_verdicts_say_where_coverage_lies_and_whether_the_guarantee_applies() {
    // sd 0.006, band [0.9, 0.9002].
    assert_eq!(
        shift_coverage_verdict(0.9001, 0.9, 0.9002, 0.006, true),
        "Coverage 90.01% lies inside the guarantee band."
    );
    // (0.8882 − 0.9) / 0.006 = −1.97.
    assert_eq!(
        shift_coverage_verdict(0.8882, 0.9, 0.9002, 0.006, true),
        "Coverage 88.82% is 2.0 standard deviations below the band, within what chance gives \
         for one split."
    );
    // (0.88 − 0.9) / 0.006 = −3.33.
    assert_eq!(
        shift_coverage_verdict(0.88, 0.9, 0.9002, 0.006, true),
        "Coverage 88.00% is 3.3 standard deviations below the band, more than chance gives for \
         one split (the guarantee holds on average over splits: try another split)."
    );
    // (0.148 − 0.9) / 0.006 = −125.3.
    assert_eq!(
        shift_coverage_verdict(0.148, 0.9, 0.9002, 0.006, false),
        "Coverage 14.80% is 125.3 standard deviations below the band, more than chance gives \
         for one split; the corrupted images are not exchangeable with the clean calibration \
         images, so the guarantee does not cover them."
    );
    assert_eq!(
        shift_coverage_verdict(0.9001, 0.9, 0.9002, 0.006, false),
        "Coverage 90.01% lies inside the guarantee band; the corrupted images are not \
         exchangeable with the clean calibration images, so the guarantee does not cover them."
    );
}

#[test]
fn vector_scaling_stop_sentence_names_the_steps_and_the_largest_scale() {
    let fit = |converged| crate::recalibration::VectorScaling {
        scales: vec![1.2, -159.34, 25.0],
        biases: vec![0.0; 3],
        nll: 1.5,
        steps: 40,
        converged,
    };
    assert_eq!(vector_scaling_stop_sentence(&fit(true)), None);
    assert_eq!(
        vector_scaling_stop_sentence(&fit(false)).as_deref(),
        Some(
            "Vector scaling did not converge: its fit stopped after 40 Newton steps with its \
             largest per-class scale at -159.3, and its row shows the fit where it stopped."
        )
    );
}

/// The coverage verdict's false-alarm rate: split conformal on exchangeable, tie-free scores (a
/// valid method by construction) over 1,000 random splits of 10,000 rows into 5,000 + 5,000, at
/// α = 0.1. The verdict calls a split "more than chance" when its coverage is over three
/// Beta-Binomial standard deviations from the band; the count stated on the page is this one.
#[test]
fn a_valid_method_is_rarely_called_more_than_chance() {
    use rand::{Rng, SeedableRng};
    let (n, n_calibration, alpha) = (10_000, 5_000, 0.1);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(38);
    let scores: Vec<f64> = (0..n).map(|_| rng.random::<f64>()).collect();
    let coverages = crate::conformal::coverage_experiment(
        &scores,
        n_calibration,
        alpha,
        COVERAGE_FALSE_ALARMS.splits,
        38,
    )
    .unwrap();
    let law = crate::conformal::coverage_law(n_calibration, n - n_calibration, alpha).unwrap();
    let upper = 1.0 - alpha + 1.0 / (n_calibration as f64 + 1.0);
    let alarms = coverages
        .iter()
        .filter(|&&c| {
            !coverage_verdict(c, 1.0 - alpha, upper, law.split_standard_deviation, 0)
                .explained_by_chance
        })
        .count();
    assert_eq!(
        alarms, COVERAGE_FALSE_ALARMS.alarms,
        "stated count is not the measured one"
    );
    assert!(
        alarms * 100 <= coverages.len(),
        "{alarms} false alarms in {} splits",
        coverages.len()
    );
}

#[test]
fn the_seed_spread_gives_each_retrained_network_its_mean_and_range() {
    let networks = [
        SeedFigures {
            network: "cross-entropy".to_string(),
            fpr95: vec![0.5, 0.8, 0.65],
            auroc: vec![0.7, 0.6, 0.8],
        },
        SeedFigures {
            network: "LogitNorm τ = 0.1".to_string(),
            fpr95: vec![0.4],
            auroc: vec![0.9],
        },
    ];
    let text = seed_spread("energy at T = 1.00", &networks);
    assert!(
        text.contains("cross-entropy: FPR95 0.650 on average over 3 seeds (0.500, 0.800, 0.650; 30.0 points apart), AUROC 0.700 (0.700, 0.600, 0.800)"),
        "{text}"
    );
    assert!(
        !text.contains("τ = 0.1"),
        "a network of one seed has no spread"
    );
    assert!(seed_spread("MSP", &networks[1..]).contains("evaluate every network"));
}

#[test]
fn the_detection_intervals_give_each_shown_network_its_own() {
    let d = difference((0.1, 0.05, 0.15), (-0.05, -0.1, 0.0));
    let networks = ["LogitNorm τ = 1".to_string(), "cross-entropy".to_string()];
    let pending = detection_intervals(&networks, "energy", 1000, None);
    assert!(pending.starts_with("Computing"), "{pending}");
    let text = detection_intervals(&networks, "energy", 1000, Some(&d));
    assert!(
        text.contains("LogitNorm τ = 1, FPR95 0.500 (0.400 to 0.600) and AUROC 0.800 (0.700 to 0.900); cross-entropy, FPR95 0.500"),
        "{text}"
    );
    assert!(text.contains("1,000 resamples"), "{text}");
    let alone = detection_intervals(&networks[1..], "energy", 1000, Some(&d));
    assert_eq!(alone.matches("FPR95").count(), 1, "{alone}");
}

#[test]
fn the_reliability_summary_names_the_bin_with_the_largest_gap() {
    let bin = |lower: f64, count, confidence, accuracy| crate::calibration::Bin {
        lower,
        upper: lower + 0.5,
        count,
        confidence,
        accuracy,
    };
    let report = crate::calibration::CalibrationReport {
        accuracy: 0.8,
        nll: 0.5,
        brier: 0.2,
        ece: 0.0625,
        rmsce: 0.1,
        mce: 0.15,
        classwise_ece: 0.01,
        bins: vec![bin(0.0, 0, 0.0, 0.0), bin(0.5, 40, 0.9, 0.75)],
    };
    let text = reliability_summary(1.0, 0.9, &report);
    assert_eq!(
        text,
        "At T = 1.000: accuracy 80.0%, mean confidence 90.0%, ECE 0.0625; 1 of 2 bins hold \
         images; the largest gap is in the bin 0.50–1.00 (40 images): confidence 90.0% against \
         accuracy 75.0%, overconfident by 15.0 points."
    );
}

#[test]
fn the_paper_lesson_says_which_network_lets_fewer_through_and_never_more_than_the_numbers() {
    let row = |chosen_fpr95, cross_entropy_fpr95| PaperFigures {
        set: "MNIST digits",
        score: "MSP",
        chosen_fpr95,
        cross_entropy_fpr95,
    };
    let text = paper_lesson("LogitNorm τ = 0.1", &[row(0.3, 0.6), row(0.7, 0.6)]);
    assert!(
        text.contains(
            "LogitNorm τ = 0.1 lets fewer of them through than cross-entropy (30.0% against 60.0%)"
        ),
        "{text}"
    );
    assert!(
        text.contains("lets more of them through than cross-entropy (70.0% against 60.0%)"),
        "{text}"
    );
    assert!(text.contains("single training runs"), "{text}");
    assert_eq!(paper_lesson("x", &[]), "");
    let selection = paper_selection(0.1, &[(1.0, 0.5), (0.1, 0.25)]);
    assert_eq!(
        selection,
        "Tuned as the paper tunes it, on Gaussian noise (the lowest FPR95 of MSP at T = 1), τ = \
         0.1 is picked here (τ = 0.1: 25.0%, τ = 1: 50.0%)."
    );
}

#[test]
fn the_set_size_summary_gives_each_size_that_occurs_and_the_average() {
    assert_eq!(
        set_size_summary(&[1, 6, 2, 0, 1]),
        "Here: empty 10.0%, 1 label 60.0%, 2 labels 20.0%, 4 labels 10.0%; 1.40 labels on \
         average."
    );
    assert_eq!(set_size_summary(&[0, 0]), "");
}

/// A report with these NLL and ECE (accuracy 0.9).
fn report(nll: f64, ece: f64) -> CalibrationReport {
    CalibrationReport {
        accuracy: 0.9,
        nll,
        brier: 0.15,
        ece,
        rmsce: ece,
        mce: ece,
        classwise_ece: ece,
        bins: Vec::new(),
    }
}

fn mistaken(mistake: FitMistake, temperature: f64, nll: f64, ece: f64) -> MistakenFit {
    MistakenFit {
        mistake,
        temperature,
        evaluation: report(nll, ece),
    }
}

#[test]
fn the_evaluation_half_fit_is_called_flattering_only_when_its_number_is_lower() {
    let honest = report(0.3012, 0.02);
    let lower = fit_mistake_sentence(
        &mistaken(FitMistake::EvaluationHalf, 1.62, 0.2990, 0.018),
        1.55,
        &honest,
        15,
    );
    assert!(
        lower.contains("T lands at 1.620") && lower.contains("(the calibration half's fit: 1.550)"),
        "{lower}"
    );
    assert!(
        lower.contains("0.2990, lower than the honest fit's 0.3012")
            && lower.contains("flattering"),
        "{lower}"
    );
    let same = fit_mistake_sentence(
        &mistaken(FitMistake::EvaluationHalf, 1.551, 0.30118, 0.02),
        1.55,
        &honest,
        15,
    );
    assert!(
        same.contains("the same as the honest fit's") && same.contains("agree to 4 decimals"),
        "{same}"
    );
}

#[test]
fn the_probability_fit_says_what_its_numbers_show() {
    let honest = report(0.30, 0.02);
    let worse = fit_mistake_sentence(
        &mistaken(FitMistake::Probabilities, 0.12, 0.41, 0.09),
        1.55,
        &honest,
        15,
    );
    assert!(
        worse.contains("T = 0.120, far from the logits' 1.550")
            && worse.contains("0.4100, higher than the honest fit's 0.3000")
            && worse.contains("ECE 0.0900, higher than the honest fit's 0.0200")
            && worse.contains("cannot undo"),
        "{worse}"
    );
    assert!(worse.contains("accuracy 90.00%"), "{worse}");
    let lucky = fit_mistake_sentence(
        &mistaken(FitMistake::Probabilities, 0.12, 0.29, 0.01),
        1.55,
        &honest,
        15,
    );
    assert!(
        lucky.contains("happen not to show it") && !lucky.contains("cannot undo"),
        "{lucky}"
    );
    let near = fit_mistake_sentence(
        &mistaken(FitMistake::Probabilities, 1.1, 0.41, 0.09),
        1.55,
        &honest,
        15,
    );
    assert!(
        near.contains("T = 1.100, against the logits' 1.550") && !near.contains("far"),
        "{near}"
    );
}

#[test]
fn the_least_ece_fit_names_its_bins_and_both_numbers() {
    let sentence = fit_mistake_sentence(
        &mistaken(FitMistake::MinimiseEce, 1.9, 0.305, 0.015),
        1.55,
        &report(0.30, 0.02),
        20,
    );
    assert!(
        sentence.contains("with 20 bins, lies at T = 1.900 (the NLL fit: 1.550)")
            && sentence.contains("ECE 0.0150, lower than the honest fit's 0.0200")
            && sentence.contains("NLL on the evaluation half is 0.3050, higher than"),
        "{sentence}"
    );
}

fn decomposition(reliability: f64, resolution: f64) -> BrierDecomposition {
    BrierDecomposition {
        reliability,
        resolution,
        uncertainty: 0.9,
        within_bin: 0.001,
    }
}

#[test]
fn resolution_is_called_nearly_untouched_only_when_it_moves_less_than_half_as_much() {
    let (one, fitted) = (decomposition(0.02, 0.75), decomposition(0.004, 0.752));
    let untouched =
        brier_decomposition_sentence(1.2, &decomposition(0.01, 0.751), &one, &fitted, 1.55);
    assert!(
        untouched.contains(
            "At T = 1.200 the Brier score 0.1600 is reliability 0.0100 − resolution 0.7510 + \
             uncertainty 0.9000, with +0.0010"
        ),
        "{untouched}"
    );
    assert!(
        untouched.contains(
            "reliability goes from 0.0200 to 0.0040 (-80.0%) and resolution from 0.7500 to \
             0.7520 (+0.3%)"
        ) && untouched.contains("nearly untouched"),
        "{untouched}"
    );
    // Resolution moves by 10% of itself, reliability by 5%.
    let small = decomposition(0.02, 0.05);
    let both =
        brier_decomposition_sentence(1.0, &small, &small, &decomposition(0.019, 0.045), 1.02);
    assert!(
        both.contains("moves resolution, for its size, as much as reliability")
            && !both.contains("untouched"),
        "{both}"
    );
    // A calibrated network at T = 1: no share of a reliability of 0.
    let zero = decomposition(0.0, 0.75);
    let calibrated =
        brier_decomposition_sentence(1.0, &zero, &zero, &decomposition(0.0, 0.75), 1.0);
    assert!(
        calibrated.contains("already 0") && !calibrated.contains("untouched"),
        "{calibrated}"
    );
}

#[test]
fn the_anatomy_summary_states_every_least_point() {
    let at = |temperature, value| CurveMinimum { temperature, value };
    let minima = [
        [at(1.5, 0.31), at(1.6, 0.32)],
        [at(1.9, 0.011), at(1.2, 0.013)],
        [at(1.7, 0.012), at(1.4, 0.014)],
        [at(1.5, 0.15), at(1.5, 0.16)],
    ];
    let summary = anatomy_summary(&minima, 1.523);
    for part in [
        "NLL is least at T = 1.500 on the calibration half (0.3100) and 1.600 on the evaluation half (0.3200), beside the exact fit T = 1.523",
        "ECE at T = 1.900 on the calibration half (0.0110) and 1.200",
        "smooth ECE at T = 1.700",
        "Brier score at T = 1.500 on the calibration half (0.1500)",
    ] {
        assert!(summary.contains(part), "{part}: {summary}");
    }
}
