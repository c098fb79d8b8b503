//! Each sentence on both sides of every threshold that flips it.

use super::*;
use crate::bootstrap::{EceNllIntervals, MetricInterval};
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
    let none = rivals_accuracy_sentence(0.914, (0.914, 0), Some((0.914, 0)), 5000);
    assert!(
        none.contains("91.40%") && none.contains("move none"),
        "{none}"
    );
    let changed = rivals_accuracy_sentence(0.914, (0.9162, 37), Some((0.914, 0)), 5000);
    assert!(
        changed.contains("change 37 of the 5,000 predictions")
            && changed.contains("91.62%")
            && changed.contains("(+0.22 points)"),
        "{changed}"
    );
    let worse = rivals_accuracy_sentence(0.914, (0.912, 12), Some((0.914, 0)), 5000);
    assert!(worse.contains("(-0.20 points)"), "{worse}");
    let even = rivals_accuracy_sentence(0.914, (0.914, 4), Some((0.914, 0)), 5000);
    assert!(
        even.contains("change 4 of") && even.contains("stays the same"),
        "{even}"
    );
}

#[test]
fn rivals_accuracy_sentence_says_what_dirichlet_calibration_did() {
    let none = rivals_accuracy_sentence(0.914, (0.914, 0), Some((0.914, 0)), 5000);
    assert!(
        none.ends_with(
            "Dirichlet calibration's weights on the log-probabilities could move predictions, \
             but here they move none."
        ),
        "{none}"
    );
    let changed = rivals_accuracy_sentence(0.914, (0.914, 0), Some((0.9172, 41)), 5000);
    assert!(
        changed.ends_with(
            "Dirichlet calibration's weights on the log-probabilities change 41 of the 5,000 \
             predictions, and the accuracy to 91.72% (+0.32 points)."
        ),
        "{changed}"
    );
    let even = rivals_accuracy_sentence(0.914, (0.914, 0), Some((0.914, 6)), 5000);
    assert!(
        even.ends_with("change 6 of the 5,000 predictions, as many to right as to wrong, and the accuracy stays the same."),
        "{even}"
    );
    let not_fitted = rivals_accuracy_sentence(0.914, (0.914, 0), None, 5000);
    assert!(
        not_fitted.ends_with(
            "Dirichlet calibration is not fitted for more than 20 classes (its matrix has \
             K(K + 1) entries)."
        ),
        "{not_fitted}"
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
    let interval = |estimate: f64, half_width: f64| MetricInterval {
        estimate,
        lower: estimate - half_width,
        upper: estimate + half_width,
    };
    // Histogram binning: NLL above temperature scaling's beyond the noise, ECE within it;
    // isotonic regression: NLL above, ECE below (as the LogitNorm network's halves are).
    let histogram = EceNllIntervals {
        ece: interval(0.001, 0.002),
        nll: interval(0.07, 0.02),
    };
    let isotonic = EceNllIntervals {
        ece: interval(-0.004, 0.002),
        nll: interval(0.11, 0.02),
    };
    let text = rivals_binning_sentence(
        figures(12, 0.0, 0.011, 0.31),
        figures(40, 0.0009, 0.006, 0.35),
        figures(5000, 0.008, 0.010, 0.24),
        5000,
        [&histogram, &isotonic],
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
        text.contains(
            "histogram binning's NLL is 0.3100, above temperature scaling's 0.2400 (difference \
             +0.0700, 95% interval +0.0500 to +0.0900), and isotonic regression's 0.3500, above \
             temperature scaling's 0.2400 (difference +0.1100, 95% interval +0.0900 to \
             +0.1300); histogram binning's ECE is 0.0110, within the noise of temperature \
             scaling's 0.0100 (difference +0.0010, 95% interval -0.0010 to +0.0030), and \
             isotonic regression's 0.0060, below temperature scaling's 0.0100 (difference \
             -0.0040, 95% interval -0.0060 to -0.0020)."
        ),
        "{text}"
    );
    assert!(!text.contains("fits the calibration half better"), "{text}");
}

#[test]
fn rivals_venn_abers_sentence_names_a_direction_only_when_the_interval_excludes_zero() {
    let figures = |ece, nll| BinningFigures {
        distinct: 100,
        ece,
        calibration_ece: 0.0,
        nll,
    };
    let isotonic = figures(0.013, 0.35);
    let interval = |estimate: f64, half_width: f64| MetricInterval {
        estimate,
        lower: estimate - half_width,
        upper: estimate + half_width,
    };
    // Venn–Abers' (ECE, NLL), the half-widths of the difference's intervals, and the end of the
    // sentence.
    let cases = [
        (
            (0.012, 0.30),
            (0.0005, 0.01),
            "its NLL is 0.3000, below isotonic regression's 0.3500 (difference -0.0500, 95% \
             interval -0.0600 to -0.0400), and its ECE 0.0120, below isotonic regression's \
             0.0130 (difference -0.0010, 95% interval -0.0015 to -0.0005).",
        ),
        (
            (0.02, 0.36),
            (0.01, 0.005),
            "its NLL is 0.3600, above isotonic regression's 0.3500 (difference +0.0100, 95% \
             interval +0.0050 to +0.0150), and its ECE 0.0200, within the noise of isotonic \
             regression's 0.0130 (difference +0.0070, 95% interval -0.0030 to +0.0170).",
        ),
        (
            // An interval that excludes 0 by less than its printed decimals show: within the
            // noise, as the printed "-0.0000" says.
            (0.012, 0.34),
            (0.000_999_99, 0.009_99),
            "its NLL is 0.3400, within the noise of isotonic regression's 0.3500 (difference \
             -0.0100, 95% interval -0.0200 to -0.0000), and its ECE 0.0120, within the noise of \
             isotonic regression's 0.0130 (difference -0.0010, 95% interval -0.0020 to -0.0000).",
        ),
        (
            (0.013_01, 0.350_02),
            (0.000_001, 0.000_001),
            "its NLL is 0.3500, the same to four decimals as isotonic regression's 0.3500 \
             (difference +0.0000, 95% interval +0.0000 to +0.0000), and its ECE 0.0130, the \
             same to four decimals as isotonic regression's 0.0130 (difference +0.0000, 95% \
             interval +0.0000 to +0.0000).",
        ),
    ];
    for ((ece, nll), (ece_half, nll_half), ending) in cases {
        let difference = EceNllIntervals {
            ece: interval(ece - isotonic.ece, ece_half),
            nll: interval(nll - isotonic.nll, nll_half),
        };
        let text = rivals_venn_abers_sentence(figures(ece, nll), isotonic, &difference);
        assert!(
            text.contains("the table measures the merge p1 / (1 − p0 + p1)")
                && text.contains("never 0 or 1")
                && text.contains(ending)
                && text.ends_with("The intervals resample the same evaluation images for both."),
            "{text}"
        );
    }
}

#[test]
fn a_venn_abers_interval_shows_as_many_decimals_as_its_ends_need() {
    assert_eq!(
        venn_abers_interval_text(0.912, 0.968),
        (
            "Venn–Abers: 0.91–0.97".to_string(),
            "Venn–Abers interval 0.91 to 0.97".to_string()
        )
    );
    assert_eq!(
        venn_abers_interval_text(0.9912, 0.9934).0,
        "Venn–Abers: 0.991–0.993"
    );
    assert_eq!(
        venn_abers_interval_text(0.99912, 0.99934).1,
        "Venn–Abers interval 0.9991 to 0.9993"
    );
    assert_eq!(
        venn_abers_interval_text(0.999_912, 0.999_934).0,
        "Venn–Abers: 0.9999–0.9999"
    );
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

/// How often [`reliability_summary`] gives the largest gap a direction, over `sets` seeded
/// synthetic test sets of 5,000 rows whose labels are drawn from softmax(z) (calibrated at
/// T = 1), read at temperature `temperature` (below 1: overconfident by construction).
fn reliability_direction_rate(temperature: f64, sets: usize) -> (usize, usize) {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(39);
    let (mut over, mut under) = (0, 0);
    for _ in 0..sets {
        let (probabilities, labels) = crate::test_support::calibrated_rows(5_000, 10, &mut rng);
        let logits: Vec<f32> = probabilities.iter().map(|p| p.ln() as f32).collect();
        let view = crate::calibration::Logits::new(&logits, 10).unwrap();
        let evaluation = crate::calibration::evaluate_in_full(
            &view,
            &labels,
            temperature,
            15,
            crate::calibration::Binning::Width,
        )
        .unwrap();
        let mean_confidence =
            evaluation.confidence.iter().sum::<f64>() / evaluation.confidence.len() as f64;
        let text = reliability_summary(temperature, mean_confidence, &evaluation.report);
        over += usize::from(text.contains("overconfident by"));
        under += usize::from(text.contains("underconfident by"));
    }
    (over, under)
}

#[test]
fn the_reliability_summary_gives_a_calibrated_networks_largest_gap_no_direction() {
    // Bonferroni over the filled bins holds the familywise rate at 5%; the exact binomial test
    // with the bin's mean confidence is conservative, so the rate is lower still. 100 sets:
    // at most 10 false alarms (the 5% rate's binomial tail beyond 10 is under 3%).
    let (over, under) = reliability_direction_rate(1.0, 100);
    assert!(
        over + under <= 10,
        "{over} over- and {under} underconfident of 100"
    );
}

#[test]
fn the_reliability_summary_calls_a_planted_overconfidence_by_its_name() {
    // T = 0.5 doubles every logit: the network is overconfident by construction.
    let (over, under) = reliability_direction_rate(0.5, 40);
    assert_eq!(under, 0);
    assert!(over >= 38, "{over} of 40 called overconfident");
}

/// A report of two bins, the first empty and the second (0.5–1.0) holding `count` images at
/// confidence 0.9 and accuracy 0.75.
fn two_bin_report(count: usize) -> crate::calibration::CalibrationReport {
    let bin = |lower: f64, count, confidence, accuracy| crate::calibration::Bin {
        lower,
        upper: lower + 0.5,
        count,
        confidence,
        accuracy,
    };
    crate::calibration::CalibrationReport {
        accuracy: 0.8,
        nll: 0.5,
        brier: 0.2,
        ece: 0.0625,
        rmsce: 0.1,
        mce: 0.15,
        classwise_ece: 0.01,
        bins: vec![bin(0.0, 0, 0.0, 0.0), bin(0.5, count, 0.9, 0.75)],
    }
}

#[test]
fn the_reliability_summary_says_when_chance_explains_the_largest_gap() {
    let text = reliability_summary(1.0, 0.9, &two_bin_report(8));
    assert!(
        text.ends_with(
            "(8 images): confidence 90.0% against accuracy 75.0%, a gap of 15.0 points, which \
             chance alone can make with this many images."
        ),
        "{text}"
    );
}

#[test]
fn the_reliability_summary_names_the_bin_with_the_largest_gap() {
    let text = reliability_summary(1.0, 0.9, &two_bin_report(40));
    assert_eq!(
        text,
        "At T = 1.000: accuracy 80.0%, mean confidence 90.0%, ECE 0.0625; 1 of 2 bins hold \
         images; the largest gap is in the bin 0.50–1.00 (40 images): confidence 90.0% against \
         accuracy 75.0%, overconfident by 15.0 points, more than chance explains."
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

fn interval(estimate: f64, lower: f64, upper: f64) -> MetricInterval {
    MetricInterval {
        estimate,
        lower,
        upper,
    }
}

#[test]
fn the_ranking_sentence_names_the_best_and_weighs_its_lead_against_the_noise() {
    let knn = RankedFigures {
        detector: "KNN",
        network: "LogitNorm τ = 0.04",
        auroc: interval(0.991, 0.987, 0.994),
    };
    let vim = RankedFigures {
        detector: "ViM",
        network: "cross-entropy",
        auroc: interval(0.962, 0.955, 0.969),
    };
    assert_eq!(
        ranking_lesson("MNIST digits", None, None),
        "Ranking every score on both networks, with 95% bootstrap intervals…"
    );
    assert_eq!(
        ranking_lesson("MNIST digits", Some(&[knn]), None),
        "Here KNN on LogitNorm τ = 0.04 separates MNIST digits best, AUROC 0.991 (0.987 to \
         0.994); it is the only score computed yet."
    );
    let beyond = ranking_lesson(
        "MNIST digits",
        Some(&[knn, vim]),
        Some(&interval(0.029, 0.021, 0.037)),
    );
    assert_eq!(
        beyond,
        "Here KNN on LogitNorm τ = 0.04 separates MNIST digits best, AUROC 0.991 (0.987 to \
         0.994). Its lead over ViM on cross-entropy (AUROC 0.962 (0.955 to 0.969)), +0.029 \
         (+0.021 to +0.037) in AUROC, is larger than the noise of these images."
    );
    let within = ranking_lesson(
        "MNIST digits",
        Some(&[knn, vim]),
        Some(&interval(0.029, -0.001, 0.057)),
    );
    assert!(
        within.ends_with(
            "+0.029 (-0.001 to +0.057) in AUROC, is within the noise of these images: on \
             them the two cannot be told apart."
        ),
        "{within}"
    );
}

/// The sentence's claim on detectors whose truth is planted: one that detects better by
/// construction (ID scores N(3, 1) against N(1, 1), both against OOD N(0, 1)) leads beyond the
/// noise; two that are the same scores lead by nothing, within it.
#[test]
fn the_ranking_sentence_holds_on_planted_detectors() {
    use crate::bootstrap::BootstrapSettings;
    use crate::ood_ranking::rank_detectors;
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let mut normal = |shift: f64, n: usize| -> Vec<f64> {
        (0..n)
            .map(|_| shift + rng.sample::<f64, _>(rand_distr::StandardNormal))
            .collect()
    };
    let (better, worse, out) = (normal(3.0, 300), normal(1.0, 300), normal(0.0, 150));
    let settings = BootstrapSettings {
        resamples: 300,
        level: 0.95,
        seed: 0,
    };
    for (candidates, beyond) in [
        ([(&worse[..], &out[..]), (&better[..], &out[..])], true),
        ([(&better[..], &out[..]), (&better[..], &out[..])], false),
    ] {
        let ranking = rank_detectors(&candidates, &settings).unwrap();
        let names = ["worse", "better"];
        let figures: Vec<RankedFigures> = ranking
            .ranked
            .iter()
            .map(|r| RankedFigures {
                detector: names[r.candidate],
                network: "a network",
                auroc: r.metrics.auroc,
            })
            .collect();
        let lesson = ranking_lesson(
            "OOD",
            Some(&figures),
            ranking.lead.as_ref().map(|l| &l.auroc),
        );
        assert_eq!(lesson.contains("larger than the noise"), beyond, "{lesson}");
        if beyond {
            assert!(lesson.starts_with("Here better on a network"), "{lesson}");
        }
    }
}

/// The PAC sentence's figures at n = 5,000, ε = 0.1: marginal rank 4,501, its risk 47.2%.
fn pac_figures(delta: f64, pac: Result<PacOutcome, usize>) -> PacFigures {
    PacFigures {
        n_calibration: 5_000,
        epsilon: 0.1,
        delta,
        marginal_k: 4_501,
        marginal_shortfall: 0.472,
        marginal_size: 1.5,
        pac,
    }
}

#[test]
fn the_pac_sentence_in_each_state() {
    let outcome = |k| PacOutcome {
        k,
        coverage: 0.9061,
        average_set_size: 1.5432,
    };
    let above = pac_sentence(&pac_figures(0.1, Ok(outcome(4_528))));
    assert_eq!(
        above,
        "The marginal q̂ (rank k = 4,501 of 5,000 calibration scores) promises coverage ≥ 90% on \
         average over calibration sets; for one calibration set, its coverage falls below 90% \
         with probability 47.2%. The PAC threshold (rank k = 4,528, above the marginal rank) \
         holds coverage ≥ 90% for this calibration set with probability ≥ 90% (δ = 10%); on the \
         evaluation half it covers 90.61%, with sets of 1.543 labels on average against the \
         marginal threshold's 1.500."
    );
    let same = pac_sentence(&pac_figures(0.5, Ok(outcome(4_501))));
    assert!(
        same.ends_with("At δ = 50% the PAC threshold is the marginal one (rank k = 4,501): its risk is already at most δ."),
        "{same}"
    );
    let below = pac_sentence(&pac_figures(0.5, Ok(outcome(4_499))));
    assert!(
        below.contains("At δ = 50%, more than the marginal threshold risks, the PAC threshold (rank k = 4,499) sits below it: coverage ≥ 90% with probability only ≥ 50%;"),
        "{below}"
    );
    let none = pac_sentence(&PacFigures {
        n_calibration: 15,
        marginal_k: 15,
        ..pac_figures(0.1, Err(22))
    });
    // (0.9)^15 = 20.6%.
    assert!(
        none.ends_with("No threshold holds coverage ≥ 90% with probability ≥ 90% (δ = 10%) from 15 calibration scores: even the largest falls short with probability (1 − ε)ⁿ = 20.6%, more than δ. That takes at least 22 scores."),
        "{none}"
    );
    let infinite = pac_sentence(&PacFigures {
        n_calibration: 8,
        marginal_k: 9,
        ..pac_figures(0.1, Err(22))
    });
    assert!(
        infinite.starts_with(
            "The marginal q̂ is infinite here (rank k = 9 is above the 8 calibration scores)"
        ),
        "{infinite}"
    );
}

#[test]
fn the_pac_experiment_caption_calls_a_share_off_its_law_beyond_three_standard_errors() {
    let figures = PacExperimentFigures {
        repetitions: 1_000,
        n_evaluation: 5_000,
        epsilon: 0.1,
        delta: 0.1,
        k: 4_528,
        marginal_k: 4_501,
        pac_below: 180,
        marginal_below: 480,
        predicted_pac_below: 0.18,
        predicted_marginal_below: 0.49,
    };
    let caption = pac_experiment_caption(&figures);
    assert!(
        caption.starts_with("PAC at δ = 10%: over 1,000 splits, the PAC threshold (rank k = 4,528, purple curve) covered less than 90% in 180 of them (18.0%), the marginal one (rank k = 4,501) in 480 (48.0%)."),
        "{caption}"
    );
    assert!(caption.contains("predicts 18.0% for the PAC rank and 49.0% for the marginal one."));
    assert!(
        caption.ends_with("The PAC share sits where that law puts it (within 3 standard errors).")
    );
    // One standard error is √(0.18 · 0.82 / 1,000) = 1.21%: 22% is 3.3 of them above.
    let high = pac_experiment_caption(&PacExperimentFigures {
        pac_below: 220,
        ..figures
    });
    assert!(
        high.contains("The PAC share is higher than that law puts it"),
        "{high}"
    );
    let low = pac_experiment_caption(&PacExperimentFigures {
        pac_below: 140,
        ..figures
    });
    assert!(
        low.contains("The PAC share is lower than that law puts it"),
        "{low}"
    );
}

#[test]
fn the_risk_control_caption_reads_the_mean_against_the_level_and_its_noise() {
    let figures = RiskControlExperimentFigures {
        repetitions: 1_000,
        risk_level: 0.03,
        mean: 0.0291,
        standard_deviation: 0.0032,
        above: 380,
    };
    let caption = risk_control_experiment_caption(&figures);
    assert_eq!(
        caption,
        "Conformal risk control at a risk level of 3%: over 1,000 splits, the threshold fitted \
         on each calibration part answered 2.91% of its evaluation part wrongly on average \
         (spread (sd) 0.32%), and more than 3% in 380 of them (38.0%). It guarantees the \
         average over calibration sets, not each one. The mean is at most the level, as \
         guaranteed."
    );
    // One standard error of the mean is 0.32%/√1,000 = 0.0101%: 3.02% is 2 of them above,
    // 3.05% 5 of them.
    let near = risk_control_experiment_caption(&RiskControlExperimentFigures {
        mean: 0.0302,
        ..figures
    });
    assert!(
        near.ends_with(
            "The mean is above the level by less than 3 standard errors of the experiment \
             (0.01%), which chance explains."
        ),
        "{near}"
    );
    let far = risk_control_experiment_caption(&RiskControlExperimentFigures {
        mean: 0.0305,
        ..figures
    });
    assert!(
        far.ends_with(
            "The mean is above the level by more than 3 standard errors of the experiment \
             (0.01%): more than chance explains."
        ),
        "{far}"
    );
}

/// The worst-slab sentence on `n` examples of three standard normal features whose coverage
/// flags are drawn with probability `level(x)`, against the floor of 10 draws at α = 0.1 over
/// 50 directions, as the page computes it.
fn worst_slab_sentence_of_planted(n: usize, seed: u64, level: impl Fn(&[f32]) -> f64) -> String {
    use crate::conformal::worst_slab::{random_directions, SlabOrders};
    use rand::{Rng, SeedableRng};
    use rand_distr::{Distribution, StandardNormal};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let features: Vec<f32> = (0..n * 3)
        .map(|_| StandardNormal.sample(&mut rng))
        .map(|z: f64| z as f32)
        .collect();
    let covered: Vec<bool> = features
        .chunks_exact(3)
        .map(|x| rng.random::<f64>() < level(x))
        .collect();
    let orders = SlabOrders::new(&features, 3, &random_directions(50, 3, seed)).unwrap();
    let worst = orders.worst_slab(&covered, 0.1).unwrap();
    let draws = orders.noise_floor_draws(0.1, 0.1, 10, seed).unwrap();
    let floor = draws.iter().sum::<f64>() / 10.0;
    let spread = (draws.iter().map(|d| (d - floor).powi(2)).sum::<f64>() / 9.0).sqrt();
    worst_slab_sentence(&WorstSlabFigures {
        target: 0.9,
        delta: 0.1,
        directions: 50,
        n,
        rows: worst.count,
        coverage: worst.coverage,
        floor,
        floor_spread: spread,
    })
}

#[test]
fn the_worst_slab_sentence_calls_a_planted_gap_real_and_exact_coverage_chance() {
    const REAL: &str = "a real gap in conditional coverage";
    // Exact conditional coverage 1 − α: called a real gap rarely (a 3-deviation rule).
    let false_alarms = (0..20)
        .filter(|&seed| worst_slab_sentence_of_planted(2_000, seed, |_| 0.9).contains(REAL))
        .count();
    assert!(
        false_alarms <= 2,
        "{false_alarms} of 20 exact runs called a gap"
    );
    // Coverage 0.5 where x₀ > 1 (16% of the mass): called a real gap every time.
    for seed in 0..5 {
        let sentence =
            worst_slab_sentence_of_planted(
                2_000,
                50 + seed,
                |x| if x[0] > 1.0 { 0.5 } else { 0.9 },
            );
        assert!(sentence.contains(REAL), "{sentence}");
    }
}

#[test]
fn the_worst_slab_sentence_states_its_numbers_in_each_verdict() {
    let figures = WorstSlabFigures {
        target: 0.9,
        delta: 0.1,
        directions: 100,
        n: 5_000,
        rows: 501,
        coverage: 0.851,
        floor: 0.86,
        floor_spread: 0.005,
    };
    let sentence = worst_slab_sentence(&figures);
    assert!(
        sentence.starts_with(
            "Of the slabs of the logit space holding at least 10% of the 5,000 evaluation \
             images (along 100 random directions), the worst covers 85.1% of its 501 images, \
             against 1 − α = 90%."
        ),
        "{sentence}"
    );
    assert!(sentence.contains("86.0% on average here (the noise floor; standard deviation 0.5%"));
    assert!(sentence.ends_with("which chance explains: no sign of a region covered less than 90%."));
    let above = worst_slab_sentence(&WorstSlabFigures {
        coverage: 0.87,
        ..figures
    });
    assert!(
        above.ends_with("no region is covered worse than chance explains."),
        "{above}"
    );
    let gap = worst_slab_sentence(&WorstSlabFigures {
        coverage: 0.84,
        ..figures
    });
    assert!(
        gap.ends_with("a real gap in conditional coverage."),
        "{gap}"
    );
}

#[test]
fn the_threshold_methods_sentence_reads_each_covgap_against_the_floor_in_each_state() {
    let figures = ThresholdMethodsFigures {
        covgaps: [0.052, 0.014, 0.021],
        clusters: 3,
        clustered_any: true,
        clustering_rows: 575,
        floor: 0.0125,
        floor_spread: 0.002,
    };
    // Bound: 1.25% + 3 × 0.2% = 1.85%.
    assert_eq!(
        threshold_methods_sentence(&figures),
        "CovGap, the mean gap between a class's coverage and 1 − α: marginal 5.20%, Mondrian \
         1.40%, clustered 2.10% (3 clusters of classes found on 575 calibration images set \
         aside). An exact class-conditional method shows 1.25% on average at these class sizes \
         (the noise floor; standard deviation 0.20%). Mondrian is within 3 standard deviations \
         of it, what chance gives an exact method; marginal and clustered are above, a real gap \
         between the classes."
    );
    let all_within = threshold_methods_sentence(&ThresholdMethodsFigures {
        covgaps: [0.015, 0.014, 0.013],
        ..figures
    });
    assert!(
        all_within.ends_with(
            "All three are within 3 standard deviations of it: what chance gives an exact method."
        ),
        "{all_within}"
    );
    let all_above = threshold_methods_sentence(&ThresholdMethodsFigures {
        covgaps: [0.05, 0.03, 0.04],
        ..figures
    });
    assert!(
        all_above.ends_with("real gaps between the classes."),
        "{all_above}"
    );
    let two_within = threshold_methods_sentence(&ThresholdMethodsFigures {
        covgaps: [0.05, 0.014, 0.015],
        clustered_any: false,
        ..figures
    });
    assert!(
        two_within.contains("Mondrian and clustered are within 3 standard deviations")
            && two_within.contains("marginal is above"),
        "{two_within}"
    );
    assert!(two_within.contains(
        "(no cluster formed from 575 calibration images set aside, so every class shares the \
         marginal threshold of the rest)"
    ));
}

/// The selective sentence's figures at T = 1 with the fitted T = 1.25, risk level 3%.
fn selective_figures(
    aurc_fitted: f64,
    threshold: f64,
    selective_risk: Option<f64>,
) -> SelectiveFigures {
    SelectiveFigures {
        temperature: 1.0,
        aurc: 0.02,
        fitted_temperature: 1.25,
        aurc_at_one: 0.02,
        aurc_fitted,
        risk_level: 0.03,
        n_calibration: 5_000,
        operating: Ok((
            SelectiveReport {
                risk_level: 0.03,
                threshold,
                coverage: 0.8123,
                selective_risk,
                answered_error_rate: 0.0291,
                aurc: 0.02,
            },
            SelectiveLesson {
                threshold_at_one: threshold,
                threshold_fitted: 0.9012,
                coverage_at_one: 0.8123,
                coverage_fitted: 0.8101,
                answered_differently: 0.0042,
            },
        )),
    }
}

#[test]
fn the_selective_sentence_in_each_state() {
    let usual = selective_sentence(&selective_figures(0.0205, 0.9876, Some(0.0358)));
    assert_eq!(
        usual,
        "Ranked by their confidence at T = 1.000, the evaluation images' AURC (the error among \
         the images kept, averaged over every share kept) is 0.0200. At T = 1 it is 0.0200, at \
         the fitted T = 1.250 0.0205: temperature scaling changes no prediction, and the ranking \
         by confidence, and so the curve, barely moves. To answer wrongly on at most 3% of the \
         images on average over calibration sets, conformal risk control answers an image with a confidence above 0.9876 at \
         T = 1.000: on the evaluation half it answers 81.2% of the images, 2.91% of all of them \
         wrongly (3.58% of those answered). The same risk level asks for a confidence above \
         0.9876 at T = 1 and a confidence above 0.9012 at the fitted T: what a threshold reads \
         as a probability changes with T, while the images answered (81.2% and 81.0%) differ \
         for 0.42% of them."
    );
    // AURCs 0.0200 and 0.0220 differ by 9% of the larger: more than 5%.
    let reordered = selective_sentence(&selective_figures(0.022, 0.9876, Some(0.0358)));
    assert!(
        reordered.contains("it reorders enough images to move the curve"),
        "{reordered}"
    );
    let everything =
        selective_sentence(&selective_figures(0.0205, f64::NEG_INFINITY, Some(0.0291)));
    assert!(
        everything.contains("answers an image with any confidence at T = 1.000"),
        "{everything}"
    );
    let nothing = selective_sentence(&selective_figures(0.0205, 0.9999, None));
    assert!(
        nothing.contains("on the evaluation half it answers none of the images. The same"),
        "{nothing}"
    );
    let too_few = selective_sentence(&SelectiveFigures {
        n_calibration: 20,
        operating: Err(33),
        ..selective_figures(0.0205, 0.9876, None)
    });
    assert!(
        too_few.ends_with(
            "barely moves. Conformal risk control at a risk level of 3% needs at least 33 \
             calibration examples to answer anything; there are 20."
        ),
        "{too_few}"
    );
}

#[test]
fn the_smooth_diagrams_summary_gives_its_numbers_and_where_the_drawn_line_strays_most() {
    assert_eq!(smooth_reliability_summary(0.01, 0.02, 0, None), "");
    assert_eq!(
        smooth_reliability_summary(0.01234, 0.0312, 5000, Some((0.853, 0.7821))),
        "Here: smooth ECE 0.0123, σ = 0.0312, on 5,000 images; where the line is drawn, it is \
         furthest from the diagonal at confidence 85.3%, where accuracy is 78.2%."
    );
    assert_eq!(
        smooth_reliability_summary(0.2, 0.5, 3, None),
        "Here: smooth ECE 0.2000, σ = 0.5000, on 3 images; too few images lie near any \
         confidence to draw the line."
    );
}

#[test]
fn the_classwise_summary_names_the_classes_furthest_off_and_closest_ties_together() {
    assert_eq!(classwise_summary(0.0, &[]), "");
    assert_eq!(
        classwise_summary(0.02, &[("Shirt", 0.04), ("Bag", 0.001), ("Coat", 0.019)]),
        "Here: class-wise ECE 0.0200, the mean of the 3 classes' ECEs; furthest off: Shirt \
         (ECE 0.0400); closest: Bag (ECE 0.0010)."
    );
    // A tie in the printed digits names both: the hidden digits break no tie.
    let tied = classwise_summary(0.01, &[("Shirt", 0.01), ("Coat", 0.010_01), ("Bag", 0.003)]);
    assert!(
        tied.contains("furthest off: Shirt and Coat (ECE 0.0100)"),
        "{tied}"
    );
    // One class is both.
    let one = classwise_summary(0.05, &[("Shirt", 0.05)]);
    assert!(
        one.contains("furthest off: Shirt (ECE 0.0500); closest: Shirt"),
        "{one}"
    );
}

#[test]
fn the_rivals_summary_gives_each_methods_ece_and_the_lowest_and_nothing_while_fitting() {
    assert_eq!(rivals_reliability_summary(&[]), "");
    assert_eq!(
        rivals_reliability_summary(&[
            ("temperature scaling", 0.0123),
            ("isotonic regression", 0.0201),
            ("vector scaling", 0.0098),
        ]),
        "ECE on the evaluation half: temperature scaling 0.0123, isotonic regression 0.0201, \
         vector scaling 0.0098; lowest: vector scaling (0.0098)."
    );
    let tied = rivals_reliability_summary(&[("a", 0.012_31), ("b", 0.012_34), ("c", 0.02)]);
    assert!(tied.ends_with("lowest: a and b (0.0123)."), "{tied}");
}

#[test]
fn the_stratified_summary_gives_each_strata_coverage_and_count() {
    use crate::conformal::Stratum;
    let stratum = |min_size, max_size, count, coverage| Stratum {
        min_size,
        max_size,
        count,
        coverage,
    };
    assert_eq!(stratified_summary(&[]), "");
    assert_eq!(stratified_summary(&[stratum(0, 0, 0, None)]), "");
    assert_eq!(
        stratified_summary(&[
            stratum(0, 0, 12, Some(0.0)),
            stratum(1, 1, 4321, Some(0.93214)),
            stratum(2, 3, 0, None),
            stratum(4, 10, 1200, Some(0.98)),
        ]),
        "Coverage by set size here: empty sets 0.00% (12 sets); 1 label 93.21% (4,321 sets); \
         2–3 labels: no sets; 4–10 labels 98.00% (1,200 sets)."
    );
}

#[test]
fn the_sweep_summary_gives_both_ends_and_the_current_alpha() {
    use crate::conformal::SweepPoint;
    let points: Vec<SweepPoint> = (1..=30)
        .map(|i| {
            let alpha = f64::from(i) * 0.01;
            SweepPoint {
                alpha,
                qhat: 0.5,
                coverage: 1.0 - alpha,
                average_set_size: 3.0 - 10.0 * alpha,
            }
        })
        .collect();
    assert_eq!(sweep_summary(&[], 0.1), "");
    assert_eq!(
        sweep_summary(&points, 0.1),
        "Here, at α = 0.01: coverage 99.00%, 2.900 labels on average; at α = 0.10 (current): \
         coverage 90.00%, 2.000 labels on average; at α = 0.30: coverage 70.00%, 0.000 labels \
         on average."
    );
    // The current α at an end is said once, there.
    let at_end = sweep_summary(&points, 0.3);
    assert_eq!(at_end.matches("α = ").count(), 2, "{at_end}");
    assert!(at_end.contains("α = 0.30 (current)"), "{at_end}");
    let one = sweep_summary(&points[..1], 0.5);
    assert_eq!(
        one,
        "Here, at α = 0.01: coverage 99.00%, 2.900 labels on average."
    );
}

#[test]
fn the_shift_diagrams_summary_names_the_images_and_how_t_was_chosen() {
    let figures = ShiftFigures {
        temperature: 1.2345,
        accuracy: 0.4567,
        ece: 0.12345,
    };
    assert_eq!(shift_reliability_summary(None, false, None), "");
    assert_eq!(
        shift_reliability_summary(Some(("Gaussian blur", 2, "σ = 1.0 px")), false, None),
        ""
    );
    assert_eq!(
        shift_reliability_summary(
            Some(("Gaussian blur", 2, "σ = 1.0 px")),
            true,
            Some(figures)
        ),
        "Here, on severity 2 of Gaussian blur (σ = 1.0 px), T = 1.234 refitted on these images: \
         accuracy 45.67%, ECE 0.1235."
    );
    assert_eq!(
        shift_reliability_summary(None, false, Some(figures)),
        "Here, on the clean images (severity 0), T = 1.234 kept from the clean images: accuracy \
         45.67%, ECE 0.1235."
    );
}

#[test]
fn the_severity_summary_goes_from_severity_0_to_the_highest_evaluated() {
    let point = |severity, accuracy| SeverityFigures {
        severity,
        accuracy,
        ece: 1.0 - accuracy,
        coverage_kept: accuracy,
        coverage_refit: 0.9,
    };
    assert_eq!(shift_severity_summary(&[]), "");
    assert_eq!(
        shift_severity_summary(&[point(0, 0.9)]),
        "Only severity 0 is evaluated so far: accuracy 90.00%, ECE 0.1000, coverage 90.00%."
    );
    assert_eq!(
        shift_severity_summary(&[point(0, 0.9), point(2, 0.7), point(4, 0.5)]),
        "From severity 0 to 4 (the highest evaluated so far): accuracy 90.00% → 50.00%, ECE \
         0.1000 → 0.5000; coverage with T and q̂ kept 90.00% → 50.00%, refitted 90.00% → \
         90.00%."
    );
}

#[test]
fn the_roc_and_norm_summaries_give_each_networks_numbers() {
    assert_eq!(roc_summary("energy", "MNIST digits", &[]), "");
    assert_eq!(
        roc_summary(
            "energy",
            "MNIST digits",
            &[
                ("cross-entropy".to_string(), 0.91234, 0.3456),
                ("LogitNorm τ = 0.04".to_string(), 0.98, 0.081),
            ]
        ),
        "Here, by energy on MNIST digits: cross-entropy AUROC 0.912, FPR95 34.6%; LogitNorm τ = \
         0.04 AUROC 0.980, FPR95 8.1%."
    );
    assert_eq!(
        logit_norm_summary("cross-entropy", "MNIST digits", 12.345, 8.7),
        "Here, for cross-entropy: mean ‖z‖ 12.35 on Fashion-MNIST and 8.70 on MNIST digits."
    );
}

#[test]
fn the_tau_summary_ranks_the_mean_over_seeds_and_claims_no_more() {
    let network = |name: &str, fpr95: &[f64]| SeedFigures {
        network: name.to_string(),
        fpr95: fpr95.to_vec(),
        auroc: vec![0.9; fpr95.len()],
    };
    assert_eq!(tau_chart_summary("MSP", &[]), "");
    // Cross-entropy's best seed is lower than τ = 0.04's mean, but its mean is not.
    assert_eq!(
        tau_chart_summary(
            "MSP",
            &[
                network("cross-entropy", &[0.05, 0.4, 0.45]),
                network("LogitNorm τ = 0.04", &[0.1, 0.2, 0.12]),
                network("LogitNorm τ = 0.1", &[0.3]),
            ]
        ),
        "Lowest FPR95 so far by MSP: LogitNorm τ = 0.04, 0.140, the mean over 3 seeds."
    );
    assert_eq!(
        tau_chart_summary("MSP", &[network("cross-entropy", &[0.3])]),
        "Lowest FPR95 so far by MSP: cross-entropy, 0.300."
    );
    let tied = tau_chart_summary("MSP", &[network("a", &[0.3]), network("b", &[0.3001])]);
    assert_eq!(tied, "Lowest FPR95 so far by MSP: a and b, 0.300.");
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

#[test]
fn the_cumulative_summary_reads_the_curves_end_and_statistics_in_each_direction() {
    use crate::calibration_estimators::CumulativeDifferences;
    // The worked example: D = (−0.02, −0.062, −0.162, −0.142, −0.122), σ = 0.165638.
    let over = CumulativeDifferences::new(
        &[0.1, 0.9, 0.21, 0.9, 0.5],
        &[false, true, false, true, false],
    )
    .unwrap();
    assert_eq!(
        cumulative_differences_summary(&over),
        "Here, on 5 images: the curve ends at -0.1220, accuracy minus mean confidence \
         (overconfident on average); the KS error, its largest distance from 0, is 0.1620, \
         reached at confidence 50.0%; Kuiper's range is 0.1420, 0.9 times a calibrated \
         network's spread (p = 0.986)."
    );
    // Right where it was unsure: the curve rises.
    let under = CumulativeDifferences::new(&[0.6, 0.7], &[true, true]).unwrap();
    let text = cumulative_differences_summary(&under);
    assert!(
        text.contains("ends at 0.3500, accuracy minus mean confidence (underconfident on average)"),
        "{text}"
    );
    let level = CumulativeDifferences::new(&[0.5, 0.5], &[true, false]).unwrap();
    let text = cumulative_differences_summary(&level);
    assert!(
        text.contains("(as confident as accurate on average)"),
        "{text}"
    );
    let certain = CumulativeDifferences::new(&[1.0, 1.0], &[true, false]).unwrap();
    let text = cumulative_differences_summary(&certain);
    assert!(
        text.ends_with("with no spread to compare it with (every confidence is 0 or 1)."),
        "{text}"
    );
}

#[test]
fn the_cumulative_summary_states_accuracy_minus_mean_confidence_on_planted_data() {
    use crate::calibration_estimators::CumulativeDifferences;
    use rand::{Rng, SeedableRng};
    // Every image right with probability its confidence minus 0.1: the curve ends near −0.1,
    // and exactly at the sample's accuracy minus its mean confidence.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let confidence: Vec<f64> = (0..4000).map(|_| rng.random_range(0.4..1.0)).collect();
    let correct: Vec<bool> = confidence
        .iter()
        .map(|&c| rng.random::<f64>() < c - 0.1)
        .collect();
    let n = confidence.len() as f64;
    let accuracy = correct.iter().filter(|&&y| y).count() as f64 / n;
    let mean_confidence = confidence.iter().sum::<f64>() / n;
    let curve = CumulativeDifferences::new(&confidence, &correct).unwrap();
    let text = cumulative_differences_summary(&curve);
    let end = accuracy - mean_confidence;
    assert!((end + 0.1).abs() < 0.02, "{end}");
    assert!(
        text.contains(&format!(
            "the curve ends at {end:.4}, accuracy minus mean confidence (overconfident"
        )),
        "{text}"
    );
    // The gap grows with every image: the KS error is the end's size, at the surest image.
    assert!(
        text.contains(&format!(
            "the KS error, its largest distance from 0, is {:.4}",
            end.abs()
        )),
        "{text}"
    );
    assert!(text.contains("p < 0.001"), "{text}");
}

/// An interval `estimate (lower to upper)`.
fn spread(estimate: f64, lower: f64, upper: f64) -> MetricInterval {
    MetricInterval {
        estimate,
        lower,
        upper,
    }
}

/// One network's figures from its ECE after one T and after normalised T, and NLL likewise.
fn normalized_figures(
    plain_ece: MetricInterval,
    normalized_ece: MetricInterval,
    normalized_nll: MetricInterval,
) -> NormalizedFigures<'static> {
    NormalizedFigures {
        network: "LogitNorm τ = 1",
        plain: EceNllIntervals {
            ece: plain_ece,
            nll: spread(0.38, 0.35, 0.41),
        },
        normalized: EceNllIntervals {
            ece: normalized_ece,
            nll: normalized_nll,
        },
    }
}

#[test]
fn the_normalised_temperature_lesson_names_each_case_from_the_intervals() {
    let waiting = normalized_lesson(None, &[], "cross-entropy and LogitNorm τ = 1");
    assert!(
        waiting
            .starts_with("Evaluate cross-entropy and LogitNorm τ = 1 (\"Evaluate every network\")"),
        "{waiting}"
    );
    let cross_entropy = spread(0.007, 0.007, 0.016);
    let (lower_nll, same_nll) = (spread(0.30, 0.28, 0.33), spread(0.37, 0.34, 0.40));
    let cases = [
        // One T leaves it above cross-entropy; normalised T brings it within cross-entropy's.
        (
            spread(0.056, 0.051, 0.064),
            spread(0.012, 0.009, 0.015),
            lower_nll,
            "normalised T repairs what one T leaves: its ECE is lower beyond the noise and as \
             low as cross-entropy's within it; its NLL too is lower beyond the noise.",
        ),
        (
            spread(0.056, 0.051, 0.064),
            spread(0.039, 0.033, 0.048),
            same_nll,
            "normalised T lowers the ECE beyond the noise but not to cross-entropy's: it \
             repairs part of what one T leaves; its NLL is not lower beyond the noise.",
        ),
        (
            spread(0.046, 0.041, 0.053),
            spread(0.050, 0.043, 0.058),
            same_nll,
            "normalised T does not repair what one T leaves: its ECE is not lower beyond the \
             noise; its NLL is not lower beyond the noise.",
        ),
        (
            spread(0.012, 0.010, 0.020),
            spread(0.004, 0.003, 0.006),
            lower_nll,
            "one T already calibrates it as well as cross-entropy within the noise, and \
             normalised T lowers the ECE further, beyond the noise; its NLL too is lower beyond \
             the noise.",
        ),
        (
            spread(0.012, 0.010, 0.020),
            spread(0.012, 0.009, 0.020),
            same_nll,
            "one T already calibrates it as well as cross-entropy within the noise, and \
             normalised T does no better beyond it; its NLL is not lower beyond the noise.",
        ),
    ];
    for (plain, normalized, nll, verdict) in cases {
        let figures = normalized_figures(plain, normalized, nll);
        let lesson = normalized_lesson(Some(&cross_entropy), &[figures], "");
        assert!(
            lesson.starts_with("Against cross-entropy's ECE after one T, 0.0070 (0.0070 to 0.0160): LogitNorm τ = 1 has ECE "),
            "{lesson}"
        );
        assert!(lesson.contains(&interval_text(&plain)), "{lesson}");
        assert!(lesson.contains(&interval_text(&normalized)), "{lesson}");
        assert!(lesson.contains(&interval_text(&nll)), "{lesson}");
        assert!(lesson.ends_with(verdict), "{lesson}\nexpected: {verdict}");
    }
}

/// A full stream of 5,000 images, rotation 0–5, at α = 10% and γ = 0.005: ACI back at 89.9%,
/// the fixed sets at 84.0% (61.0% at severity 5), ACI's sets larger.
fn adaptive_figures() -> AdaptiveFigures {
    AdaptiveFigures {
        corruption: "rotation",
        alpha: 0.1,
        gamma: 0.005,
        images: 5_000,
        severities: vec![0, 1, 2, 3, 4, 5],
        max_severity: 5,
        coverage: 0.899,
        average_set_size: 2.412,
        miscoverage_bound: 0.0362,
        fixed_coverage: 0.84,
        fixed_average_set_size: 1.634,
        last_block: Some((0.86, 4.2, 0.61, 1.9)),
    }
}

#[test]
fn the_aci_sentence_says_the_fixed_sets_fall_and_aci_returns_at_the_price_of_larger_sets() {
    // The spread of 5,000 hits at 90%: 0.42%; 84.0% is 14.1 of them below.
    assert_eq!(
        adaptive_sentence(&adaptive_figures()),
        "The stream: the 5,000 evaluation images, the rotation rising from severity 0 to 5 in \
         blocks of about 833 images. Split conformal with q̂ fixed on the clean calibration half \
         covers 84.0%, 61.0% at severity 5, 14.1 standard deviations below 1 − α = 90%: the \
         shifted images are not exchangeable with the clean calibration images. Adaptive \
         conformal inference at γ = 0.005, correcting α_t after each image, covers 89.9% in \
         the long run, back within chance of 90% without a refit (whatever the order, its \
         miscoverage ends within ±3.6% of α). The price is larger sets: 2.41 labels on average \
         against 1.63; at severity 5, 4.20 against 1.90."
    );
}

#[test]
fn the_aci_sentence_in_each_other_state_it_offers() {
    // Only the clean images so far: both within chance, no severity named.
    let clean = AdaptiveFigures {
        severities: vec![0],
        coverage: 0.9,
        fixed_coverage: 0.902,
        average_set_size: 1.6,
        fixed_average_set_size: 1.62,
        last_block: Some((0.9, 1.6, 0.902, 1.62)),
        ..adaptive_figures()
    };
    let sentence = adaptive_sentence(&clean);
    assert!(
        sentence.starts_with(
            "The stream holds the 5,000 evaluation images, all clean so far: the corrupted \
             copies are still being classified. Split conformal with q̂ fixed on the clean \
             calibration half covers 90.2%, within chance of 1 − α = 90%."
        ),
        "{sentence}"
    );
    assert!(
        sentence.ends_with("Its sets are no larger: 1.60 labels on average against 1.62."),
        "{sentence}"
    );
    // Some severities classified: named; ACI still short at a small γ; fixed above the target.
    let partial = AdaptiveFigures {
        severities: vec![0, 1, 3],
        coverage: 0.85,
        fixed_coverage: 0.95,
        ..adaptive_figures()
    };
    let sentence = adaptive_sentence(&partial);
    assert!(
        sentence.contains(
            "rising from severity 0 to 3 (those classified so far: 0, 1, 3) in blocks of about \
             1,666 images"
        ),
        "{sentence}"
    );
    assert!(
        sentence.contains(
            "covers 95.0%, 61.0% at severity 3, 11.8 standard deviations above 1 − α = 90%."
        ),
        "{sentence}"
    );
    assert!(
        sentence.contains(
            "covers 85.0% in the long run, still 11.8 standard deviations below 90%: at γ = 0.005 \
             its level moves too slowly for 5,000 images"
        ),
        "{sentence}"
    );
    // ACI above the target by more than chance.
    let above = AdaptiveFigures {
        coverage: 0.95,
        ..adaptive_figures()
    };
    assert!(adaptive_sentence(&above)
        .contains("covers 95.0% in the long run, 11.8 standard deviations above 90% ("));
}

#[test]
fn the_aci_chart_summary_states_where_the_curves_end_and_the_levels_range() {
    assert_eq!(
        adaptive_chart_summary((0.899, 0.84), (0.88, 0.6), 250, (-0.0123, 0.1456)),
        "After the last image, coverage since the start is 89.9% with ACI and 84.0% with q̂ \
         fixed; over the last 250 images 88.0% and 60.0%. α_t ranged from -0.0123 to 0.1456."
    );
}

/// A batch of 5,000 test images (against 5,000 calibrating) and 556 digits at q = 10%:
/// `π₀ = 5000/5556`, the bound `q·π₀ = 9.0%`.
fn pvalue_figures(
    discoveries: usize,
    false_discoveries: usize,
    power: f64,
) -> PvalueFigures<'static> {
    PvalueFigures {
        score: "energy",
        set: "MNIST digits",
        fdr_level: 0.1,
        n_in_distribution: 5000,
        n_calibration: 5000,
        n_out_of_distribution: 556,
        discoveries,
        false_discoveries,
        power,
    }
}

#[test]
fn the_pvalue_sentence_says_what_bh_declared_in_each_state() {
    let intro = "Each of the 5,000 test images and 556 MNIST digits gets a conformal p-value by \
                 energy: one plus the number of the 5,000 held-out test images that score as low or \
                 lower, over 5,001.";
    let bound = " Over batches drawn like this one, the average of that proportion, the false \
                 discovery rate, is at most q × 90.0% (the test images' share of the batch) = 9.0%.";
    assert_eq!(
        pvalue_sentence(&pvalue_figures(0, 0, 0.0)),
        format!(
            "{intro} At q = 10%, Benjamini–Hochberg declares none of the 5,556 images out of \
             distribution: no p-value is small enough for its rank, so this batch's false discovery \
             proportion is 0.{bound}"
        )
    );
    assert_eq!(
        pvalue_sentence(&pvalue_figures(550, 0, 550.0 / 556.0)),
        format!(
            "{intro} At q = 10%, Benjamini–Hochberg declares 550 of the 5,556 images out of \
             distribution, none of them a test image: a false discovery proportion of 0.0%, and \
             550 of the 556 MNIST digits found (power 98.9%).{bound}"
        )
    );
    assert!(pvalue_sentence(&pvalue_figures(551, 1, 550.0 / 556.0))
        .contains("551 of the 5,556 images out of distribution, 1 of them a test image: a false discovery proportion of 0.2%"));
    // 60 of 600 = 10% is above the bound of 9.0%: said, and that only the average is bounded.
    let above = pvalue_sentence(&pvalue_figures(600, 60, 540.0 / 556.0));
    assert!(
        above.contains("60 of them test images: a false discovery proportion of 10.0%"),
        "{above}"
    );
    assert!(above.ends_with(
        "= 9.0%. This batch's proportion is above it: one batch may be, their average may not."
    ));
    // 50 of 600 = 8.3% is below it: nothing more said.
    assert!(pvalue_sentence(&pvalue_figures(600, 50, 550.0 / 556.0)).ends_with("= 9.0%."));
}

#[test]
fn the_own_image_pvalue_sentence_counts_the_images_as_low_and_decides_at_five_percent() {
    // p = (1 + at or below) / 5,001.
    assert_eq!(
        own_image_pvalue(1.0 / 5001.0, 5000),
        "Its conformal p-value is 0.0002: none of the 5,000 calibration test images scores as \
         low, small enough to call it OOD at a 5% level, which a test image would be in at most \
         5% of cases."
    );
    assert!(own_image_pvalue(2.0 / 5001.0, 5000)
        .contains(": 1 of the 5,000 calibration test images scores as low or lower, small enough"));
    let typical = own_image_pvalue(2501.0 / 5001.0, 5000);
    assert!(typical.contains("2,500 of the 5,000 calibration test images score as low or lower"));
    assert!(
        typical.ends_with("not small enough to call it OOD at a 5% level."),
        "{typical}"
    );
    // At exactly 5%: declared (p ≤ q).
    assert!(own_image_pvalue(0.05, 19).contains(", small enough"));
}

/// Weighted figures at α = 0.1 with one split's standard deviation 0.005 (so "short" is below
/// 0.885), 5,000 calibration rows, an effective sample size of 2,000 and no `+∞` threshold.
fn weighted_figures(kept: f64, weighted: f64) -> WeightedFigures {
    WeightedFigures {
        alpha: 0.1,
        split_standard_deviation: Some(0.005),
        kept: (kept, 1.5),
        weighted: (weighted, 2.25),
        refit: (0.9, 2.5),
        effective_sample_size: 2000.0,
        n_calibration: 5000,
        infinite_share: 0.0,
    }
}

#[test]
fn the_weighted_sentence_in_every_state() {
    let calm =
        "The weights' effective sample size is 2,000 of 5,000 calibration images, and 0.00% \
                of the evaluation images get q̂ = +∞ (every label).";
    let sizes = "sets of 2.250 labels on average (kept: 1.500; refitted: 2.500)";
    // Kept within chance of 90% (0.885 is exactly three standard deviations below): nothing
    // to repair.
    assert_eq!(
        weighted_sentence(&weighted_figures(0.885, 0.9)),
        format!(
            "With q̂ kept, coverage is 88.50%, not short of 90% by more than chance: there is \
             nothing for the weights to repair, and weighted it is 90.00%, with {sizes}. {calm}"
        )
    );
    // Kept short, weighted back within chance: it helps.
    let helps = weighted_sentence(&weighted_figures(0.8, 0.886));
    assert_eq!(
        helps,
        format!(
            "Weighted by the domain classifier, without a label of the corrupted images, \
             coverage is back to 88.60% (kept: 80.00%; refitted with labels: 90.00%), with \
             {sizes}: here the weights repair what the shift broke. {calm}"
        )
    );
    // Kept short, weighted short but higher: part of it.
    let part = weighted_sentence(&weighted_figures(0.8, 0.884));
    assert!(
        part.starts_with("Weighted, coverage rises from 80.00% to 88.40%, still short of 90% by more than chance"),
        "{part}"
    );
    assert!(
        part.contains("correct part of the shift. The weights'"),
        "{part}"
    );
    // Kept short, weighted no higher: no help.
    let none = weighted_sentence(&weighted_figures(0.8, 0.8));
    assert!(
        none.starts_with("Weighted, coverage is 80.00% against 80.00% kept"),
        "{none}"
    );
    assert!(none.contains("the weights do not help here"), "{none}");
    assert!(none.ends_with(calm), "{none}");
}

#[test]
fn the_weighted_sentence_calls_weights_too_extreme_at_its_two_thresholds() {
    let extreme_tail = "the estimated weights are too extreme to trust: their effective sample \
                        size is";
    // An effective sample size of 10% of the rows is not extreme; below it is.
    let mut f = weighted_figures(0.8, 0.9);
    f.effective_sample_size = 500.0;
    assert!(weighted_sentence(&f).contains("here the weights repair"));
    f.effective_sample_size = 499.0;
    let few = weighted_sentence(&f);
    assert_eq!(
        few,
        "Weighted, coverage reaches 90.00% (kept: 80.00%; refitted with labels: 90.00%), with \
         sets of 2.250 labels on average (kept: 1.500; refitted: 2.500), but not by a \
         trustworthy correction: the estimated weights are too extreme to trust: their \
         effective sample size is 499 of 5,000 calibration images, and 0.00% of the evaluation \
         images get q̂ = +∞ (every label)."
    );
    // α/2 = 5% of the images at +∞ is extreme; just under it is not.
    let mut f = weighted_figures(0.8, 0.9);
    f.infinite_share = 0.0499;
    assert!(weighted_sentence(&f).contains("here the weights repair"));
    f.infinite_share = 0.05;
    let infinite = weighted_sentence(&f);
    assert!(infinite.contains(extreme_tail), "{infinite}");
    assert!(infinite.ends_with("and 5.00% of the evaluation images get q̂ = +∞ (every label)."));
    // Extreme weights are named in the other states too, capitalised after a full stop.
    let mut f = weighted_figures(0.8, 0.8);
    f.effective_sample_size = 3.0;
    let none = weighted_sentence(&f);
    assert!(
        none.contains("can repair. The estimated weights are too extreme to trust: their effective sample size is 3 of 5,000"),
        "{none}"
    );
    // Without a standard deviation (q̂ infinite) "short" is below 1 − α itself.
    let mut f = weighted_figures(0.899, 0.9);
    f.split_standard_deviation = None;
    assert!(weighted_sentence(&f).contains("here the weights repair"));
}

/// Ten rows at each of two confidences, `low` and `high`, one and nine of them right: the
/// share right is 0.1 and 0.9 by construction, whatever the confidences.
fn two_pools(low: f64, high: f64) -> crate::corp::Corp {
    let confidence: Vec<f64> = [low; 10].into_iter().chain([high; 10]).collect();
    let correct: Vec<bool> = (0..20).map(|i| i == 0 || i >= 11).collect();
    crate::corp::corp(&confidence, &correct).unwrap()
}

#[test]
fn the_corp_sentence_reads_each_state_off_the_numbers() {
    // Confidences 0.2 and 0.95 miscalibrated, 0.1 and 0.9 calibrated, in the same order: the
    // fit removes all miscalibration, and PAV's pools, so DSC, are the same.
    let (off, calibrated) = (two_pools(0.2, 0.95), two_pools(0.1, 0.9));
    assert!(calibrated.brier.miscalibration.abs() < 1e-15);
    assert_eq!(off.brier.discrimination, calibrated.brier.discrimination);
    let removed = corp_decomposition_sentence(1.0, &off, &off, &calibrated, 1.4);
    assert!(
        removed.contains(&format!(
            "At T = 1.000, without bins, the Brier score of the top label {:.4} = MCB {:.4} − \
             DSC {:.4} + UNC {:.4}",
            off.brier.score,
            off.brier.miscalibration,
            off.brier.discrimination,
            off.brier.uncertainty
        )) && removed.contains(&format!(
            "MCB goes from {:.4} to 0.0000 (Brier)",
            off.brier.miscalibration
        )) && removed.contains("nearly untouched"),
        "{removed}"
    );
    // The other way round: the fitted T adds miscalibration on this half.
    let added = corp_decomposition_sentence(1.0, &calibrated, &off, &calibrated, 0.7);
    let added_back = corp_decomposition_sentence(1.0, &calibrated, &calibrated, &off, 0.7);
    assert!(
        added.contains("nearly untouched") && !added.contains("adds"),
        "{added}"
    );
    assert!(
        added_back.contains("adds miscalibration (Brier and log)"),
        "{added_back}"
    );
    let nothing = corp_decomposition_sentence(1.0, &calibrated, &calibrated, &calibrated, 1.0);
    assert!(
        nothing.contains("MCB 0.0000 to the decimals shown")
            && nothing.contains("nothing to remove"),
        "{nothing}"
    );
    let raised = corp_decomposition_sentence(1.0, &off, &two_pools(0.15, 0.92), &off, 0.7);
    assert!(
        raised.contains("adds miscalibration (Brier and log)") && !raised.contains("untouched"),
        "{raised}"
    );
    // One confidence for every row (no discrimination) against the calibrated pools: MCB
    // falls a little and DSC rises from 0 to all of the uncertainty.
    let constant =
        crate::corp::corp(&[0.6; 20], &(0..20).map(|i| i % 2 == 0).collect::<Vec<_>>()).unwrap();
    assert_eq!(constant.brier.discrimination, 0.0);
    let reordered = corp_decomposition_sentence(1.0, &constant, &constant, &calibrated, 1.1);
    assert!(
        reordered.contains("DSC moves, for its size, as much as MCB")
            && !reordered.contains("untouched"),
        "{reordered}"
    );
}

#[test]
fn the_corp_summary_names_the_gap_that_weighs_most() {
    // The pool at 0.2 is 0.1 too confident (10 × 0.01), the one at 0.95 0.05 (10 × 0.0025).
    let corp = two_pools(0.2, 0.95);
    let text = corp_reliability_summary(&corp);
    assert!(
        text.starts_with("Here PAV pools 20 images into 2 blocks.")
            && text.contains(
                "10 images at confidence 20.0%, 20.0% confident on average, were right 10.0% of \
                 the time (overconfident there)"
            )
            && text.contains(&format!("MCB {:.4}", corp.brier.miscalibration)),
        "{text}"
    );
    let under = corp_reliability_summary(&two_pools(0.02, 0.9));
    assert!(under.contains("(underconfident there)"), "{under}");
}
