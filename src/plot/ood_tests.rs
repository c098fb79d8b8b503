//! Unit tests of the OOD charts, checked by parsing the SVG they draw.

use super::super::test_support::*;
use super::*;
use crate::lab::ood_view::{paired_histogram, roc_curve, thin_roc_curve};

const GREEN_HEX: &str = "#009E73";
const PURPLE_HEX: &str = "#CC79A7";

const LABELS: HistogramLabels<'static> = HistogramLabels {
    in_distribution: "Fashion-MNIST",
    out_of_distribution: "MNIST",
    value: "MSP",
};

/// Legend swatches drawn as filled rectangles: one blue (ID) and two orange (OOD, and the
/// hatched OOD at or above the threshold).
const LEGEND_BLUE_SWATCHES: usize = 1;

fn style() -> ChartStyle {
    ChartStyle::default()
}

/// Ten bins on [0, 1]: ID values from 0.5 to 1 fill bins 5–9, OOD values from 0 to 0.684
/// fill bins 0–6.
fn example_histogram() -> PairedHistogram {
    let in_distribution: Vec<f64> = (0..40).map(|i| 0.5 + f64::from(i) / 78.0).collect();
    let out_of_distribution: Vec<f64> = (0..40).map(|i| f64::from(i) / 57.0).collect();
    paired_histogram(&in_distribution, &out_of_distribution, 10).unwrap()
}

/// The x pixel of data value `x` from the pixels of the ticks labelled `a` at `value_a` and
/// `b` at `value_b`.
fn x_pixel(svg: &str, (a, value_a): (&str, f64), (b, value_b): (&str, f64), x: f64) -> f64 {
    let (pixel_a, pixel_b) = (f64::from(x_tick(svg, a)), f64::from(x_tick(svg, b)));
    pixel_a + (pixel_b - pixel_a) * (x - value_a) / (value_b - value_a)
}

/// Vertical polylines (two points, same x) stroked in `hex`, as (x, top, bottom).
fn vertical_lines(svg: &str, hex: &str) -> Vec<(i32, i32, i32)> {
    polylines(svg, hex)
        .into_iter()
        .filter(|points| points.len() == 2 && points[0].0 == points[1].0)
        .map(|points| {
            let (top, bottom) = (points[0].1.min(points[1].1), points[0].1.max(points[1].1));
            (points[0].0, top, bottom)
        })
        .collect()
}

#[test]
fn score_histogram_draws_the_threshold_at_its_value() {
    let histogram = example_histogram();
    let threshold = 0.55;
    let svg = render((560, 360), |area| {
        score_histogram(area, &histogram, threshold, 0.125, &LABELS, &style())
    })
    .unwrap();
    // One vermillion vertical line (the legend's swatch is horizontal), at x = 0.55.
    let lines = vertical_lines(&svg, VERMILLION_HEX);
    assert_eq!(lines.len(), 1);
    let expected = x_pixel(&svg, ("0.0", 0.0), ("1.0", 1.0), threshold);
    assert!((f64::from(lines[0].0) - expected).abs() <= f64::from(PIXEL_TOLERANCE));
    // One blue bar per bin with ID values; the shaded side starts at the line.
    let bins_with_in = histogram
        .in_distribution
        .iter()
        .filter(|&&s| s > 0.0)
        .count();
    assert_eq!(bins_with_in, 5);
    assert_eq!(
        filled_rects(&svg, BLUE_HEX).len(),
        bins_with_in + LEGEND_BLUE_SWATCHES
    );
    let band: Vec<_> = filled_rects(&svg, VERMILLION_HEX)
        .into_iter()
        .filter(|rect| attribute(rect, "opacity") == Some("0.2"))
        .collect();
    assert_eq!(band.len(), 1);
    assert!((number(&band[0], "x") - lines[0].0).abs() <= PIXEL_TOLERANCE);
    // OOD bars: the values i/57 fill bins 0–6. The OOD halves of bins 5 and 6 ([0.55,
    // 0.6] and [0.65, 0.7]) lie at or above 0.55 and are hatched; bins 0–4 are plain:
    // 7 bar pieces, plus the two orange legend swatches.
    let orange = filled_rects(&svg, ORANGE_HEX);
    let bins_with_out = histogram
        .out_of_distribution
        .iter()
        .filter(|&&s| s > 0.0)
        .count();
    assert_eq!(bins_with_out, 7);
    assert_eq!(orange.len(), bins_with_out + 2);
    for label in [
        "Fashion-MNIST",
        "MNIST",
        "threshold: 95% of ID at or above",
        "MNIST at or above: 12.5%",
        "MSP",
        "% of set",
    ] {
        assert!(has_text(&svg, label), "{label} missing");
    }
}

#[test]
fn a_threshold_inside_an_ood_bar_splits_it() {
    // One bin [0, 1] with both sets; the threshold at 0.75 splits the OOD half [0.5, 1].
    let histogram = PairedHistogram {
        edges: vec![0.0, 1.0],
        in_distribution: vec![1.0],
        out_of_distribution: vec![1.0],
    };
    let svg = render((480, 360), |area| {
        score_histogram(area, &histogram, 0.75, 0.5, &LABELS, &style())
    })
    .unwrap();
    let orange = filled_rects(&svg, ORANGE_HEX);
    // Legend: two swatches; chart: the plain piece [0.5, 0.75] and the hatched [0.75, 1].
    assert_eq!(orange.len(), 4);
    let (plain, hatched) = (&orange[2], &orange[3]);
    let threshold_x = vertical_lines(&svg, VERMILLION_HEX)[0].0;
    assert!((number(plain, "x") + number(plain, "width") - threshold_x).abs() <= PIXEL_TOLERANCE);
    assert!((number(hatched, "x") - threshold_x).abs() <= PIXEL_TOLERANCE);
    assert!((number(plain, "width") - number(hatched, "width")).abs() <= PIXEL_TOLERANCE);
}

#[test]
fn roc_curves_draw_every_point_and_the_diagonal() {
    let in_distribution: Vec<f64> = (0..300).map(|i| f64::from(i % 97) / 50.0).collect();
    let out_of_distribution: Vec<f64> = (0..200).map(|i| f64::from(i % 89) / 60.0).collect();
    let full = roc_curve(&in_distribution, &out_of_distribution).unwrap();
    let thinned = thin_roc_curve(&full, 40);
    let other = [
        RocPoint {
            false_positive_rate: 0.0,
            true_positive_rate: 0.0,
        },
        RocPoint {
            false_positive_rate: 0.1,
            true_positive_rate: 0.8,
        },
        RocPoint {
            false_positive_rate: 1.0,
            true_positive_rate: 1.0,
        },
    ];
    let curves = [
        RocCurve {
            label: "cross-entropy",
            points: &thinned,
        },
        RocCurve {
            label: "LogitNorm τ = 0.04",
            points: &other,
        },
    ];
    let svg = render((480, 520), |area| roc_curves(area, &curves, &style())).unwrap();
    for (hex, expected) in [(BLUE_HEX, thinned.len()), (ORANGE_HEX, other.len())] {
        let lines: Vec<Vec<(i32, i32)>> = polylines(&svg, hex)
            .into_iter()
            .filter(|points| points.len() > 2)
            .collect();
        assert_eq!(lines.len(), 1, "{hex}");
        assert_eq!(lines[0].len(), expected, "{hex}");
    }
    // The second curve runs from corner to corner through (0.1, 0.8).
    let orange = polylines(&svg, ORANGE_HEX)
        .into_iter()
        .find(|points| points.len() == 3)
        .unwrap();
    let x_of = |fpr: f64| x_pixel(&svg, ("0.0", 0.0), ("1.0", 1.0), fpr);
    let (bottom, top) = (f64::from(orange[0].1), f64::from(orange[2].1));
    assert!((f64::from(orange[0].0) - x_of(0.0)).abs() <= f64::from(PIXEL_TOLERANCE));
    assert!((f64::from(orange[1].0) - x_of(0.1)).abs() <= f64::from(PIXEL_TOLERANCE));
    assert!((f64::from(orange[2].0) - x_of(1.0)).abs() <= f64::from(PIXEL_TOLERANCE));
    let expected_y = bottom + 0.8 * (top - bottom);
    assert!((f64::from(orange[1].1) - expected_y).abs() <= f64::from(PIXEL_TOLERANCE));
    // The chance diagonal runs from corner to corner.
    let diagonal = diagonal_points(&svg);
    assert!(diagonal.len() >= 20);
    for label in ["cross-entropy", "LogitNorm τ = 0.04", "chance"] {
        assert!(has_text(&svg, label), "{label} missing");
    }
}

#[test]
fn logit_norm_histogram_draws_bars_and_both_means() {
    let in_norms: Vec<f64> = (0..50).map(|i| 10.0 + f64::from(i) / 5.0).collect();
    let out_norms: Vec<f64> = (0..30).map(|i| 2.0 + f64::from(i) / 3.0).collect();
    let histogram = paired_histogram(&in_norms, &out_norms, 12).unwrap();
    let means = LogitNormMeans {
        in_distribution: 14.9,
        out_of_distribution: 6.833,
    };
    let labels = HistogramLabels {
        value: "logit norm ‖z‖₂",
        ..LABELS
    };
    let svg = render((560, 360), |area| {
        logit_norm_histogram(area, &histogram, &means, &labels, &style())
    })
    .unwrap();
    let blue_bins = histogram
        .in_distribution
        .iter()
        .filter(|&&s| s > 0.0)
        .count();
    let orange_bins = histogram
        .out_of_distribution
        .iter()
        .filter(|&&s| s > 0.0)
        .count();
    assert_eq!(filled_rects(&svg, BLUE_HEX).len(), blue_bins + 1);
    assert_eq!(filled_rects(&svg, ORANGE_HEX).len(), orange_bins + 1);
    // The solid ID mean line is right of every dash of the OOD mean line.
    let solid: Vec<(i32, i32, i32)> = vertical_lines(&svg, DARK_GREY_HEX)
        .into_iter()
        .filter(|&(_, top, bottom)| bottom - top > 100)
        .collect();
    assert_eq!(solid.len(), 1);
    let dashes: Vec<(i32, i32, i32)> = vertical_lines(&svg, DARK_GREY_HEX)
        .into_iter()
        .filter(|&(_, top, bottom)| bottom - top <= 10)
        .collect();
    assert!(dashes.len() > 5);
    assert!(dashes.iter().all(|&(x, _, _)| x < solid[0].0 - 50));
    for label in [
        "mean Fashion-MNIST: 14.90",
        "mean MNIST: 6.83",
        "logit norm ‖z‖₂",
    ] {
        assert!(has_text(&svg, label), "{label} missing");
    }
}

fn tau_point(tau: Option<f64>, base: f64) -> TauPoint {
    TauPoint {
        tau,
        seed: 0,
        accuracy: 0.9,
        ece_raw: base,
        ece_fitted: base / 4.0,
        fpr95: 0.5 + base,
        auroc: 0.95 - base,
    }
}

#[test]
fn tau_chart_draws_one_marker_per_point_and_series() {
    // Evaluated so far: τ = 0.1, 0.01, 1 (out of order), 0.04, and cross-entropy.
    let points = [
        tau_point(Some(0.1), 0.05),
        tau_point(Some(0.01), 0.2),
        tau_point(None, 0.1),
        tau_point(Some(1.0), 0.02),
        tau_point(Some(0.04), 0.15),
    ];
    let svg = render((560, 420), |area| tau_chart(area, &points, &style())).unwrap();
    let circles = elements(&svg, "circle");
    for hex in [BLUE_HEX, VERMILLION_HEX, ORANGE_HEX, PURPLE_HEX, GREEN_HEX] {
        let markers: Vec<(i32, i32)> = circles
            .iter()
            .filter(|circle| attribute(circle, "fill") == Some(hex))
            .map(|circle| (number(circle, "cx"), number(circle, "cy")))
            .collect();
        assert_eq!(markers.len(), points.len(), "{hex}");
        // The line joins the four LogitNorm points in increasing τ.
        let lines: Vec<Vec<(i32, i32)>> = polylines(&svg, hex)
            .into_iter()
            .filter(|line| line.len() == 4)
            .collect();
        assert_eq!(lines.len(), 1, "{hex}");
        assert!(lines[0].windows(2).all(|pair| pair[0].0 < pair[1].0));
    }
    // Markers sit at log10 τ between the decade ticks; CE right of τ = 1.
    let accuracy_markers: Vec<i32> = circles
        .iter()
        .filter(|circle| attribute(circle, "fill") == Some(BLUE_HEX))
        .map(|circle| number(circle, "cx"))
        .collect();
    let tick = |label| f64::from(x_tick(&svg, label));
    let at = |tau: f64| tick("0.01") + (tick("1") - tick("0.01")) * (tau.log10() + 2.0) / 2.0;
    // Drawn in increasing τ, cross-entropy last.
    let mut in_order = points.to_vec();
    in_order.sort_by(|a, b| {
        let key = |p: &TauPoint| p.tau.unwrap_or(f64::INFINITY);
        key(a).total_cmp(&key(b))
    });
    for (marker, point) in accuracy_markers.iter().zip(&in_order) {
        let expected = match point.tau {
            Some(tau) => at(tau),
            None => tick("CE"),
        };
        assert!((f64::from(*marker) - expected).abs() <= f64::from(PIXEL_TOLERANCE));
    }
    assert!(tick("0.1") > tick("0.01") && tick("1") > tick("0.1") && tick("CE") > tick("1"));
    // All accuracies are 0.9: every accuracy marker is on one row.
    let rows: std::collections::BTreeSet<i32> = circles
        .iter()
        .filter(|circle| attribute(circle, "fill") == Some(BLUE_HEX))
        .map(|circle| number(circle, "cy"))
        .collect();
    assert_eq!(rows.len(), 1);
    for label in ["accuracy", "ECE (raw)", "ECE (after T)", "FPR95", "AUROC"] {
        assert!(has_text(&svg, label), "{label} missing");
    }
}

#[test]
fn tau_chart_draws_the_mean_over_seeds_and_a_ring_per_seed() {
    // Cross-entropy and τ = 0.04 with three seeds each, τ = 0.1 with one.
    let seeded = |tau, seed, fpr95| TauPoint {
        seed,
        fpr95,
        ..tau_point(tau, 0.1)
    };
    let points = [
        seeded(None, 0, 0.2),
        seeded(Some(0.04), 2, 0.9),
        seeded(None, 1, 0.5),
        seeded(Some(0.1), 0, 0.4),
        seeded(Some(0.04), 0, 0.7),
        seeded(None, 2, 0.8),
        seeded(Some(0.04), 1, 0.8),
    ];
    let svg = render((560, 420), |area| tau_chart(area, &points, &style())).unwrap();
    let circles = elements(&svg, "circle");
    let purple = |filled: bool| -> Vec<(i32, i32)> {
        circles
            .iter()
            .filter(|c| (attribute(c, "fill") == Some(PURPLE_HEX)) == filled)
            .filter(|c| filled || attribute(c, "stroke") == Some(PURPLE_HEX))
            .map(|c| (number(c, "cx"), number(c, "cy")))
            .collect()
    };
    let (means, rings) = (purple(true), purple(false));
    assert_eq!(means.len(), 3, "one mean per τ");
    assert_eq!(rings.len(), 6, "a ring per seed where there are several");
    let y = |fpr95: f64| {
        let (top, bottom) = (y_tick(&svg, "1.0"), y_tick(&svg, "0.0"));
        f64::from(bottom) + (f64::from(top) - f64::from(bottom)) * fpr95
    };
    let cross_entropy = means.iter().max_by_key(|m| m.0).unwrap();
    assert!((f64::from(cross_entropy.1) - y(0.5)).abs() <= f64::from(PIXEL_TOLERANCE));
    let ce_rings: Vec<i32> = rings
        .iter()
        .filter(|r| r.0 == cross_entropy.0)
        .map(|r| r.1)
        .collect();
    assert_eq!(ce_rings.len(), 3);
    for fpr95 in [0.2, 0.5, 0.8] {
        assert!(ce_rings
            .iter()
            .any(|&r| (f64::from(r) - y(fpr95)).abs() <= f64::from(PIXEL_TOLERANCE)));
    }
    // The line joins the two LogitNorm means, τ = 0.04's (at 0.8) and τ = 0.1's.
    let leftmost = means.iter().min_by_key(|m| m.0).unwrap();
    assert!((f64::from(leftmost.1) - y(0.8)).abs() <= f64::from(PIXEL_TOLERANCE));
    assert!(polylines(&svg, PURPLE_HEX)
        .iter()
        .any(|line| line.len() == 2 && line[0] == *leftmost));
}

#[test]
fn tau_chart_with_few_points() {
    // Only cross-entropy: markers, no lines; no points: empty axes with the ticks.
    let svg = render((560, 420), |area| {
        tau_chart(area, &[tau_point(None, 0.1)], &style())
    })
    .unwrap();
    assert_eq!(elements(&svg, "circle").len(), TAU_SERIES.len());
    assert!(polylines(&svg, GREEN_HEX)
        .iter()
        .all(|line| line.len() == 2));
    let svg = render((560, 420), |area| tau_chart(area, &[], &style())).unwrap();
    assert!(elements(&svg, "circle").is_empty());
    assert!(has_text(&svg, "CE") && has_text(&svg, "0.01"));
    // A τ outside [0.01, 1] widens the axis.
    let svg = render((560, 420), |area| {
        tau_chart(area, &[tau_point(Some(0.001), 0.1)], &style())
    })
    .unwrap();
    assert!(has_text(&svg, "0.001"));
}

#[test]
fn charts_draw_at_every_scale_and_small_sizes() {
    let histogram = example_histogram();
    let curve = [
        RocPoint {
            false_positive_rate: 0.0,
            true_positive_rate: 0.0,
        },
        RocPoint {
            false_positive_rate: 1.0,
            true_positive_rate: 1.0,
        },
    ];
    let curves = [RocCurve {
        label: "one",
        points: &curve,
    }];
    let means = LogitNormMeans {
        in_distribution: 0.8,
        out_of_distribution: 0.3,
    };
    let points = [tau_point(Some(0.02), 0.1), tau_point(None, 0.2)];
    for scale in [1.0, 2.0, 3.0] {
        let style = ChartStyle { scale };
        for size in [(320, 240), (240, 320), (560, 560), (1680, 1680)] {
            render(size, |area| {
                score_histogram(area, &histogram, 0.6, 0.1, &LABELS, &style)
            })
            .unwrap();
            render(size, |area| {
                logit_norm_histogram(area, &histogram, &means, &LABELS, &style)
            })
            .unwrap();
            render(size, |area| roc_curves(area, &curves, &style)).unwrap();
            render(size, |area| tau_chart(area, &points, &style)).unwrap();
        }
    }
    // Empty curves and a single point.
    render((400, 400), |area| roc_curves(area, &[], &style())).unwrap();
    let single = [RocCurve {
        label: "dot",
        points: &curve[..1],
    }];
    let svg = render((400, 400), |area| roc_curves(area, &single, &style())).unwrap();
    assert_eq!(elements(&svg, "circle").len(), 1);
}

#[test]
fn invalid_input_is_refused_with_a_typed_error() {
    let histogram = example_histogram();
    let draw_histogram = |histogram: &PairedHistogram, threshold: f64, share: f64| {
        render((560, 360), |area| {
            score_histogram(area, histogram, threshold, share, &LABELS, &style())
        })
    };
    assert!(matches!(
        draw_histogram(&histogram, f64::NAN, 0.1),
        Err(PlotError::NotFinite {
            name: "threshold",
            ..
        })
    ));
    assert!(matches!(
        draw_histogram(&histogram, 0.5, 1.5),
        Err(PlotError::InvalidFraction { .. })
    ));
    let mut short = histogram.clone();
    short.edges.pop();
    assert!(matches!(
        draw_histogram(&short, 0.5, 0.1),
        Err(PlotError::HistogramShape { edges: 10, .. })
    ));
    let mut unordered = histogram.clone();
    unordered.edges.swap(2, 3);
    assert!(matches!(
        draw_histogram(&unordered, 0.5, 0.1),
        Err(PlotError::InvalidAxisRange { .. })
    ));
    let mut bad_share = histogram.clone();
    bad_share.out_of_distribution[0] = f64::NAN;
    assert!(matches!(
        draw_histogram(&bad_share, 0.5, 0.1),
        Err(PlotError::InvalidFraction { .. })
    ));
    let means = LogitNormMeans {
        in_distribution: f64::INFINITY,
        out_of_distribution: 0.3,
    };
    assert!(matches!(
        render((560, 360), |area| logit_norm_histogram(
            area,
            &histogram,
            &means,
            &LABELS,
            &style()
        )),
        Err(PlotError::NotFinite { .. })
    ));
    let outside = [RocPoint {
        false_positive_rate: 0.5,
        true_positive_rate: -0.1,
    }];
    let curves = [RocCurve {
        label: "bad",
        points: &outside,
    }];
    assert!(matches!(
        render((400, 400), |area| roc_curves(area, &curves, &style())),
        Err(PlotError::InvalidFraction {
            name: "true positive rate",
            ..
        })
    ));
    for tau in [0.0, -0.1, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            render((560, 420), |area| tau_chart(
                area,
                &[tau_point(Some(tau), 0.1)],
                &style()
            )),
            Err(PlotError::InvalidTau(_))
        ));
    }
    let mut bad = tau_point(None, 0.1);
    bad.fpr95 = 1.2;
    assert!(matches!(
        render((560, 420), |area| tau_chart(area, &[bad], &style())),
        Err(PlotError::InvalidFraction { name: "FPR95", .. })
    ));
    assert!(matches!(
        render((50, 50), |area| tau_chart(area, &[], &style())),
        Err(PlotError::AreaTooSmall { .. })
    ));
}
