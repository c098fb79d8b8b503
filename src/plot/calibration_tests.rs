//! Unit tests of the calibration charts, checked by parsing the SVG they draw.

use super::super::test_support::*;
use super::*;
use crate::calibration::{reliability_bins, Binning};
use crate::data::FASHION_MNIST_CLASSES;

/// Legend swatches drawn as filled rectangles of the bar colour and of the gap colour.
const LEGEND_BAR_SWATCHES: usize = 1;
const LEGEND_GAP_SWATCHES: usize = 1;

fn bin(lower: f64, upper: f64, count: usize, confidence: f64, accuracy: f64) -> Bin {
    Bin {
        lower,
        upper,
        count,
        confidence,
        accuracy,
    }
}

/// Ten equal-width bins; bins 0, 1 and 4 are empty, bins 5 and 9 perfectly calibrated.
fn example_bins() -> Vec<Bin> {
    (0..10)
        .map(|b| {
            let (lower, upper) = (b as f64 / 10.0, (b + 1) as f64 / 10.0);
            let confidence = lower + 0.05;
            match b {
                0 | 1 | 4 => bin(lower, upper, 0, 0.0, 0.0),
                5 | 9 => bin(lower, upper, 10, confidence, confidence),
                _ => bin(lower, upper, 10, confidence, confidence - 0.1),
            }
        })
        .collect()
}

fn diagram(size: (u32, u32), bins: &[Bin], scale: f64) -> Result<String, PlotError> {
    render(size, |area| {
        reliability_diagram(area, bins, &ChartStyle { scale })
    })
}

#[test]
fn one_bar_per_non_empty_bin() {
    let bins = example_bins();
    let svg = diagram((560, 560), &bins, 1.0).unwrap();
    let non_empty = bins.iter().filter(|bin| bin.count > 0).count();
    assert_eq!(
        filled_rects(&svg, BLUE_HEX).len(),
        non_empty + LEGEND_BAR_SWATCHES
    );
    // Bars are as tall as the accuracy: bin 9 (accuracy 0.95) is 0.95/0.55 as tall as
    // bin 5 (accuracy 0.55).
    let bars = filled_rects(&svg, BLUE_HEX);
    let heights: Vec<i32> = bars[LEGEND_BAR_SWATCHES..]
        .iter()
        .map(|bar| number(bar, "height"))
        .collect();
    // Non-empty bins 2, 3, 5, 6, 7, 8, 9 in order.
    let (bin_5, bin_9) = (heights[2], heights[6]);
    assert!((f64::from(bin_9) / f64::from(bin_5) - 0.95 / 0.55).abs() < 0.02);
    // With equal-mass bins from data: n = 3 < B = 5 leaves two bins empty.
    let bins = reliability_bins(&[0.9, 0.6, 0.3], &[true, false, true], 5, Binning::Mass).unwrap();
    let svg = diagram((360, 400), &bins, 1.0).unwrap();
    assert_eq!(filled_rects(&svg, BLUE_HEX).len(), 3 + LEGEND_BAR_SWATCHES);
}

#[test]
fn empty_bins_draw_no_bar_and_a_dotted_mark() {
    let bins: Vec<Bin> = (0..5)
        .map(|b| bin(b as f64 / 5.0, (b + 1) as f64 / 5.0, 0, 0.0, 0.0))
        .collect();
    let svg = diagram((560, 560), &bins, 1.0).unwrap();
    assert_eq!(filled_rects(&svg, BLUE_HEX).len(), LEGEND_BAR_SWATCHES);
    // No gap is drawn, so the legend has none either.
    assert!(filled_rects(&svg, VERMILLION_HEX).is_empty());
    assert!(!has_text(&svg, "overconfident gap"));
    assert!(has_text(&svg, "empty bin"));
    // The dotted marks sit on the x axis and together span it from tick 0.0 to tick 1.0.
    let axis_y = diagonal_points(&svg).iter().map(|&(_, y)| y).max().unwrap();
    let mark_top = axis_y - EMPTY_BIN_MARK_HEIGHT as i32 - PIXEL_TOLERANCE;
    let marks: Vec<(i32, i32)> = polylines(&svg, FAINT_GREY_HEX)
        .into_iter()
        .flatten()
        .filter(|&(_, y)| y >= mark_top)
        .collect();
    assert!(marks.iter().all(|&(_, y)| y <= axis_y + PIXEL_TOLERANCE));
    let xs = marks.iter().map(|&(x, _)| x);
    let (marks_left, marks_right) = (xs.clone().min().unwrap(), xs.max().unwrap());
    assert!((marks_left - x_tick(&svg, "0.0")).abs() <= PIXEL_TOLERANCE);
    assert!((marks_right - x_tick(&svg, "1.0")).abs() <= PIXEL_TOLERANCE);
    // Without empty bins there is no mark and no legend entry for them.
    let full: Vec<Bin> = example_bins()
        .into_iter()
        .filter(|bin| bin.count > 0)
        .collect();
    let svg = diagram((560, 560), &full, 1.0).unwrap();
    assert!(polylines(&svg, FAINT_GREY_HEX).is_empty());
    assert!(!has_text(&svg, "empty bin"));
}

#[test]
fn gaps_only_where_accuracy_differs_from_confidence() {
    let bins = example_bins();
    let svg = diagram((560, 560), &bins, 1.0).unwrap();
    let with_gap = bins
        .iter()
        .filter(|bin| bin.count > 0 && bin.accuracy != bin.confidence)
        .count();
    assert_eq!(with_gap, 5);
    let gaps = filled_rects(&svg, VERMILLION_HEX);
    assert_eq!(gaps.len(), with_gap + LEGEND_GAP_SWATCHES);
    // Every gap is 0.1 tall, translucent, and hatched.
    let heights: Vec<i32> = gaps[LEGEND_GAP_SWATCHES..]
        .iter()
        .map(|gap| number(gap, "height"))
        .collect();
    let bar_heights: Vec<i32> = filled_rects(&svg, BLUE_HEX)[LEGEND_BAR_SWATCHES..]
        .iter()
        .map(|bar| number(bar, "height"))
        .collect();
    // Bin 2 has accuracy 0.15: its bar is 1.5 gaps tall (each rounded to whole pixels).
    for &height in &heights {
        assert!((2 * bar_heights[0] - 3 * height).abs() <= 3 * PIXEL_TOLERANCE);
    }
    assert!(gaps
        .iter()
        .all(|gap| attribute(gap, "opacity") == Some("0.3")));
    let hatch_and_outlines = polylines(&svg, VERMILLION_HEX);
    assert!(hatch_and_outlines.len() > 2 * gaps.len());
    assert!(has_text(&svg, "overconfident gap"));
    assert!(!has_text(&svg, "underconfident gap"));
    assert!(filled_rects(&svg, YELLOW_HEX).is_empty());
    // An underconfident bin (accuracy above confidence) gets its own yellow gap, nearly
    // opaque over the bar, and its own legend entry.
    let mut mixed = bins.clone();
    mixed[2].accuracy = mixed[2].confidence + 0.1;
    let svg = diagram((560, 560), &mixed, 1.0).unwrap();
    let under = filled_rects(&svg, YELLOW_HEX);
    assert_eq!(under.len(), 1 + LEGEND_GAP_SWATCHES);
    assert!(under
        .iter()
        .all(|gap| attribute(gap, "opacity") == Some("0.85")));
    assert_eq!(
        filled_rects(&svg, VERMILLION_HEX).len(),
        with_gap - 1 + LEGEND_GAP_SWATCHES
    );
    assert!(has_text(&svg, "underconfident gap") && has_text(&svg, "overconfident gap"));
    // A perfectly calibrated diagram has no gap outside the legend.
    let calibrated: Vec<Bin> = (0..4)
        .map(|b| {
            let confidence = 0.25 * b as f64 + 0.1;
            bin(
                0.25 * b as f64,
                0.25 * (b + 1) as f64,
                3,
                confidence,
                confidence,
            )
        })
        .collect();
    let svg = diagram((360, 360), &calibrated, 1.0).unwrap();
    assert!(filled_rects(&svg, VERMILLION_HEX).is_empty());
    assert!(filled_rects(&svg, YELLOW_HEX).is_empty());
    assert!(!has_text(&svg, "overconfident gap") && !has_text(&svg, "underconfident gap"));
}

#[test]
fn diagonal_runs_from_corner_to_corner() {
    let svg = diagram((560, 560), &example_bins(), 1.0).unwrap();
    let points = diagonal_points(&svg);
    assert!(points.len() >= 20, "{} points", points.len());
    let left = points.iter().min_by_key(|point| point.0).unwrap();
    let right = points.iter().max_by_key(|point| point.0).unwrap();
    // Up and to the right at 45° in data space: the plotting area is nearly square here.
    assert!(right.1 < left.1);
    let (run, rise) = (right.0 - left.0, left.1 - right.1);
    assert!(
        run > 300 && (run - rise).abs() < 100,
        "run {run}, rise {rise}"
    );
    // Every dash lies on the line through the two ends.
    for &(x, y) in &points {
        let expected = f64::from(left.1) - f64::from(rise) * f64::from(x - left.0) / f64::from(run);
        assert!((f64::from(y) - expected).abs() <= f64::from(PIXEL_TOLERANCE));
    }
    assert!(has_text(&svg, "perfect calibration"));
    assert!(has_text(&svg, "confidence"));
    assert!(has_text(&svg, "accuracy"));
}

#[test]
fn narrow_bins_get_a_visible_width() {
    let bins = vec![
        bin(0.9999, 0.9999, 5, 0.9999, 0.8),
        bin(0.5, 0.5, 5, 0.5, 0.5),
    ];
    for scale in [1.0, 2.0] {
        let svg = diagram((560, 560), &bins, scale).unwrap();
        let bars = filled_rects(&svg, BLUE_HEX);
        assert_eq!(bars.len(), 2 + LEGEND_BAR_SWATCHES);
        for bar in &bars[LEGEND_BAR_SWATCHES..] {
            assert!(f64::from(number(bar, "width")) >= MIN_BAR_WIDTH * scale);
        }
    }
}

#[test]
fn histogram_draws_bars_lines_and_gap() {
    let counts = [0, 0, 1, 3, 0, 6, 10, 20, 60, 900];
    let svg = render((560, 200), |area| {
        confidence_histogram(area, &counts, 0.95, 0.85, &ChartStyle::default())
    })
    .unwrap();
    let bars = filled_rects(&svg, BAR_GREY_HEX);
    assert_eq!(bars.len(), counts.iter().filter(|&&c| c > 0).count());
    // The accuracy line is one solid blue polyline, plus its legend swatch.
    let accuracy_lines = polylines(&svg, BLUE_HEX);
    assert_eq!(accuracy_lines.len(), 2);
    let vertical = &accuracy_lines[1];
    assert_eq!(vertical[0].0, vertical[1].0);
    // The mean-confidence line is dashed, to the right of the accuracy line.
    let dashes = polylines(&svg, ORANGE_HEX);
    assert!(dashes.len() > 5);
    let rightmost_dash = dashes.iter().flatten().map(|&(x, _)| x).max().unwrap();
    assert!(rightmost_dash > vertical[0].0);
    assert_eq!(
        filled_rects(&svg, VERMILLION_HEX).len(),
        1 + LEGEND_GAP_SWATCHES
    );
    for label in [
        "accuracy 85.0%",
        "mean confidence 95.0%",
        "overconfident gap 10.0 pts",
        "confidence",
        "% of examples",
    ] {
        assert!(has_text(&svg, label), "{label} missing");
    }
    // Equal summaries: no gap band and no gap in the legend.
    let svg = render((560, 200), |area| {
        confidence_histogram(area, &counts, 0.9, 0.9, &ChartStyle::default())
    })
    .unwrap();
    assert!(filled_rects(&svg, VERMILLION_HEX).is_empty());
    assert!(filled_rects(&svg, YELLOW_HEX).is_empty());
    // Accuracy above mean confidence: an underconfident band.
    let svg = render((560, 200), |area| {
        confidence_histogram(area, &counts, 0.2, 0.9, &ChartStyle::default())
    })
    .unwrap();
    assert_eq!(
        filled_rects(&svg, YELLOW_HEX).len(),
        1 + LEGEND_GAP_SWATCHES
    );
    assert!(has_text(&svg, "underconfident gap 70.0 pts"));
}

fn classwise_example() -> Vec<Vec<Bin>> {
    (0..10)
        .map(|class| {
            let mut bins = example_bins();
            // Class k has k more empty bins among the last ones, so every panel differs.
            for bin in bins.iter_mut().rev().take(class / 3) {
                bin.count = 0;
            }
            bins
        })
        .collect()
}

/// The classwise chart of the ten Fashion-MNIST classes drawn at `size`.
fn classwise_svg(per_class: &[Vec<Bin>], size: (u32, u32)) -> String {
    render(size, |area| {
        classwise_reliability(
            area,
            per_class,
            &FASHION_MNIST_CLASSES,
            &ChartStyle::default(),
        )
    })
    .unwrap()
}

#[test]
fn classwise_draws_ten_titled_panels() {
    let per_class = classwise_example();
    let non_empty: usize = per_class
        .iter()
        .flatten()
        .filter(|bin| bin.count > 0)
        .count();
    for size in [(900, 420), (360, 900)] {
        let svg = classwise_svg(&per_class, size);
        for name in FASHION_MNIST_CLASSES {
            let titles = texts(&svg).filter(|(_, text)| *text == name).count();
            assert_eq!(titles, 1, "{name}");
        }
        assert_eq!(
            filled_rects(&svg, BLUE_HEX).len(),
            non_empty + LEGEND_BAR_SWATCHES
        );
        assert!(has_text(&svg, "predicted probability of the class"));
        // Panels run left to right, then top to bottom: 5 columns when wide, 2 when tall.
        let titles: Vec<(i32, i32)> = texts(&svg)
            .filter(|(_, text)| FASHION_MNIST_CLASSES.contains(text))
            .map(|(attributes, _)| (number(&attributes, "x"), number(&attributes, "y")))
            .collect();
        let rows = titles
            .iter()
            .map(|&(_, y)| y)
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        assert_eq!(rows, if size.0 >= size.1 { 2 } else { 5 });
    }
}

#[test]
fn charts_draw_at_every_scale_and_small_sizes() {
    let bins = example_bins();
    let per_class = classwise_example();
    let counts = [1, 0, 5, 7, 9, 30, 100];
    for scale in [1.0, 2.0, 3.0] {
        for size in [(320, 240), (240, 320), (360, 360), (560, 560), (1680, 1680)] {
            let style = ChartStyle { scale };
            diagram(size, &bins, scale).unwrap();
            render(size, |area| {
                confidence_histogram(area, &counts, 0.9, 0.8, &style)
            })
            .unwrap();
            render(size, |area| {
                classwise_reliability(area, &per_class, &FASHION_MNIST_CLASSES, &style)
            })
            .unwrap();
        }
    }
}

#[test]
fn degenerate_inputs_draw_empty_charts() {
    let style = ChartStyle::default();
    let all_empty = vec![bin(0.0, 0.5, 0, 0.0, 0.0), bin(0.5, 1.0, 0, 0.0, 0.0)];
    for bins in [vec![], all_empty.clone()] {
        let svg = diagram((320, 240), &bins, 1.0).unwrap();
        assert_eq!(filled_rects(&svg, BLUE_HEX).len(), LEGEND_BAR_SWATCHES);
    }
    for counts in [vec![], vec![0; 15]] {
        let svg = render((320, 240), |area| {
            confidence_histogram(area, &counts, 0.0, 1.0, &style)
        })
        .unwrap();
        assert!(filled_rects(&svg, BAR_GREY_HEX).is_empty());
    }
    let per_class = vec![vec![], all_empty.clone(), all_empty];
    render((320, 240), |area| {
        classwise_reliability(area, &per_class, &["a", "b", "c"], &style)
    })
    .unwrap();
    render((320, 240), |area| {
        classwise_reliability(area, &[vec![]], &["only"], &style)
    })
    .unwrap();
}

#[test]
fn invalid_input_is_refused_with_a_typed_error() {
    let bins = example_bins();
    for scale in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            diagram((560, 560), &bins, scale),
            Err(PlotError::InvalidScale(_))
        ));
    }
    for size in [(0, 0), (50, 400), (400, 30)] {
        assert!(matches!(
            diagram(size, &bins, 1.0),
            Err(PlotError::AreaTooSmall { .. })
        ));
    }
    let mut bad = bins.clone();
    bad[3].accuracy = f64::NAN;
    assert!(matches!(
        diagram((560, 560), &bad, 1.0),
        Err(PlotError::InvalidBin { index: 3, .. })
    ));
    bad[3] = bin(0.6, 0.4, 1, 0.5, 0.5);
    assert!(matches!(
        diagram((560, 560), &bad, 1.0),
        Err(PlotError::InvalidBin { index: 3, .. })
    ));
    let style = ChartStyle::default();
    assert!(matches!(
        render((560, 200), |area| confidence_histogram(
            area,
            &[1],
            f64::NAN,
            0.5,
            &style
        )),
        Err(PlotError::InvalidFraction {
            name: "mean confidence",
            ..
        })
    ));
    assert!(matches!(
        render((560, 200), |area| confidence_histogram(
            area,
            &[1],
            0.5,
            1.5,
            &style
        )),
        Err(PlotError::InvalidFraction {
            name: "accuracy",
            ..
        })
    ));
    assert!(matches!(
        render((900, 420), |area| classwise_reliability(
            area,
            std::slice::from_ref(&bins),
            &["a", "b"],
            &style
        )),
        Err(PlotError::ClassCountMismatch { bins: 1, names: 2 })
    ));
    assert!(matches!(
        render((900, 420), |area| classwise_reliability(
            area,
            &[],
            &[],
            &style
        )),
        Err(PlotError::NoClasses)
    ));
    assert!(matches!(
        render((900, 420), |area| classwise_reliability(
            area,
            &[bins, bad],
            &["a", "b"],
            &style
        )),
        Err(PlotError::InvalidPanelBin {
            panel: 1,
            index: 3,
            ..
        })
    ));
}

#[test]
fn method_panels_draw_in_one_row_with_their_titles() {
    let bins = example_bins();
    let titles = ["uncalibrated", "temperature scaling", "vector scaling"];
    let methods: Vec<MethodPanel> = titles
        .iter()
        .map(|&title| MethodPanel { title, bins: &bins })
        .collect();
    let svg = render((900, 260), |area| {
        method_reliability(area, &methods, &ChartStyle::default())
    })
    .unwrap();
    let rows: std::collections::BTreeSet<i32> = texts(&svg)
        .filter(|(_, text)| titles.contains(text))
        .map(|(attributes, _)| number(&attributes, "y"))
        .collect();
    assert_eq!(rows.len(), 1, "one row of panels");
    let non_empty = bins.iter().filter(|bin| bin.count > 0).count();
    assert_eq!(
        filled_rects(&svg, BLUE_HEX).len(),
        titles.len() * non_empty + LEGEND_BAR_SWATCHES
    );
    assert!(has_text(&svg, "confidence"));
    let style = ChartStyle::default();
    assert!(matches!(
        render((900, 260), |area| method_reliability(area, &[], &style)),
        Err(PlotError::NoPanels)
    ));
    let mut bad = bins.clone();
    bad[2].accuracy = 1.5;
    let broken = [
        methods[0],
        MethodPanel {
            title: "bad",
            bins: &bad,
        },
    ];
    assert!(matches!(
        render((900, 260), |area| method_reliability(area, &broken, &style)),
        Err(PlotError::InvalidPanelBin {
            panel: 1,
            index: 2,
            ..
        })
    ));
}

/// A smooth curve on 101 points: accuracy `accuracy(t)`, density a triangle peaked at 0.5.
fn smooth_curve(accuracy: impl Fn(f64) -> f64) -> SmoothReliability {
    let confidence: Vec<f64> = (0..=100).map(|p| f64::from(p) / 100.0).collect();
    SmoothReliability {
        bandwidth: 0.05,
        examples: 2000,
        accuracy: confidence.iter().map(|&t| accuracy(t)).collect(),
        density: confidence
            .iter()
            .map(|&t| 2.0 - 4.0 * (t - 0.5).abs())
            .collect(),
        confidence,
    }
}

fn smooth_diagram(curve: &SmoothReliability) -> Result<String, PlotError> {
    render((560, 560), |area| {
        smooth_reliability_diagram(area, curve, None, &ChartStyle::default())
    })
}

#[test]
fn smooth_diagram_draws_the_curve_over_the_density_band() {
    // Accuracy 0.5 everywhere, except above 1 near t = 1, which is drawn clipped at 1.
    let svg = smooth_diagram(&smooth_curve(|t| if t > 0.95 { 1.2 } else { 0.5 })).unwrap();
    let (zero, one) = (y_tick(&svg, "0.0"), y_tick(&svg, "1.0"));
    let half = (zero + one) / 2;
    let (left, right) = (x_tick(&svg, "0.0"), x_tick(&svg, "1.0"));
    let x_of = |t: f64| f64::from(left) + t * f64::from(right - left);
    // One segment per pair of neighbouring points with at least ten examples within σ
    // (2000 · 2 · 0.05 · density ≥ 10, density ≥ 0.05): every pair but the first and the last
    // (mean density 0.02). The legend's
    // swatch sits above the plot.
    let segments: Vec<Vec<(i32, i32)>> = polylines(&svg, BLUE_HEX)
        .into_iter()
        .filter(|points| points.iter().all(|&(_, y)| y >= one - PIXEL_TOLERANCE))
        .collect();
    assert_eq!(segments.len(), 98);
    for &(x, y) in segments.iter().flatten() {
        let expected = if f64::from(x) > x_of(0.955) {
            one
        } else {
            half
        };
        assert!(
            (y - expected).abs() <= PIXEL_TOLERANCE,
            "x {x}: y {y}, expected {expected}"
        );
    }
    assert!(segments
        .iter()
        .flatten()
        .all(|&(x, _)| f64::from(x) >= x_of(0.01) - 1.0));
    // Thicker where the density is higher: the middle segment against one near the ends.
    let widths: Vec<i32> = elements(&svg, "polyline")
        .into_iter()
        .filter(|line| attribute(line, "stroke") == Some(BLUE_HEX))
        .map(|line| number(&line, "stroke-width"))
        .collect();
    let (edge, middle) = (widths[widths.len() - 98], widths[widths.len() - 49]);
    assert!(middle > edge, "middle width {middle}, edge width {edge}");
    // The band: one grey polygon on the x axis whose peak, at t = 0.5, is a quarter high.
    let bands = polygons(&svg, BAR_GREY_HEX);
    assert_eq!(bands.len(), 1);
    let peak = bands[0].iter().min_by_key(|&&(_, y)| y).unwrap();
    assert!((f64::from(peak.0) - x_of(0.5)).abs() <= f64::from(PIXEL_TOLERANCE));
    let quarter = f64::from(zero) - 0.25 * f64::from(zero - one);
    assert!((f64::from(peak.1) - quarter).abs() <= f64::from(PIXEL_TOLERANCE));
    assert!(bands[0].iter().all(|&(_, y)| y <= zero + PIXEL_TOLERANCE));
    assert!(has_text(&svg, "accuracy, smoothed (σ = 0.050)"));
    assert!(has_text(&svg, "density of confidences"));
    assert!(!diagonal_points(&svg).is_empty());
    // No density at all: neither band nor curve, the axes and the diagonal only.
    let mut empty = smooth_curve(|t| t);
    empty.density.iter_mut().for_each(|d| *d = 0.0);
    let svg = smooth_diagram(&empty).unwrap();
    assert!(polygons(&svg, BAR_GREY_HEX).is_empty());
    assert_eq!(
        polylines(&svg, BLUE_HEX).len(),
        1,
        "the legend's swatch only"
    );
    assert!(!diagonal_points(&svg).is_empty());
}

#[test]
fn smooth_diagram_shades_the_band_where_the_curve_is_drawn() {
    // Curve at 0.5, band from 0.4 to 0.6 everywhere; as above, the curve is drawn on every
    // segment but the first and the last, so the band is one polygon from t = 0.01 to 0.99.
    let curve = smooth_curve(|_| 0.5);
    let band = ReliabilityBand {
        level: 0.95,
        lower: vec![0.4; 101],
        upper: vec![0.6; 101],
    };
    let svg = render((560, 560), |area| {
        smooth_reliability_diagram(area, &curve, Some(&band), &ChartStyle::default())
    })
    .unwrap();
    let (zero, one) = (y_tick(&svg, "0.0"), y_tick(&svg, "1.0"));
    let (left, right) = (x_tick(&svg, "0.0"), x_tick(&svg, "1.0"));
    let x_of = |t: f64| f64::from(left) + t * f64::from(right - left);
    let y_of = |a: f64| f64::from(zero) - a * f64::from(zero - one);
    // The legend's swatch is a rectangle; the band is the one blue polygon.
    let bands = polygons(&svg, BLUE_HEX);
    assert_eq!(bands.len(), 1);
    let near = |a: f64, b: f64| (a - b).abs() <= f64::from(PIXEL_TOLERANCE);
    let xs: Vec<f64> = bands[0].iter().map(|&(x, _)| f64::from(x)).collect();
    let (low_x, high_x) = (
        xs.iter().copied().fold(f64::MAX, f64::min),
        xs.iter().copied().fold(f64::MIN, f64::max),
    );
    assert!(
        near(low_x, x_of(0.01)) && near(high_x, x_of(0.99)),
        "band from {low_x} to {high_x}"
    );
    for &(_, y) in &bands[0] {
        let y = f64::from(y);
        assert!(
            near(y, y_of(0.4)) || near(y, y_of(0.6)),
            "band point at y {y}"
        );
    }
    assert!(has_text(&svg, "95% bootstrap band"));
    // Without a band: no polygon, no legend entry.
    let svg = smooth_diagram(&curve).unwrap();
    assert!(polygons(&svg, BLUE_HEX).is_empty());
    assert!(!has_text(&svg, "95% bootstrap band"));
    // A band of the wrong length is refused.
    let short = ReliabilityBand {
        lower: vec![0.4; 100],
        ..band
    };
    assert!(matches!(
        render((560, 560), |area| {
            smooth_reliability_diagram(area, &curve, Some(&short), &ChartStyle::default())
        }),
        Err(PlotError::BandLengthMismatch {
            points: 101,
            lower: 100,
            upper: 101
        })
    ));
}

#[test]
fn smooth_diagram_refuses_a_malformed_curve() {
    let mut short = smooth_curve(|t| t);
    short.density.pop();
    assert!(matches!(
        smooth_diagram(&short),
        Err(PlotError::CurveLengthMismatch {
            confidences: 101,
            accuracies: 101,
            densities: 100
        })
    ));
    let mut not_a_number = smooth_curve(|t| t);
    not_a_number.accuracy[7] = f64::NAN;
    assert!(matches!(
        smooth_diagram(&not_a_number),
        Err(PlotError::NotFinite { .. })
    ));
    let mut negative = smooth_curve(|t| t);
    negative.density[3] = -0.5;
    assert!(matches!(
        smooth_diagram(&negative),
        Err(PlotError::NegativeDensity { index: 3, .. })
    ));
}

/// No chart text below 11 CSS pixels, and the small multiples' last x tick ("1.0", centred on
/// the axis's end) inside its panel, at the widths the page gives the classwise chart on a
/// desktop and on a phone, and in an area small enough to scale the chart down.
#[test]
fn classwise_text_is_readable_and_no_tick_is_clipped() {
    let per_class = classwise_example();
    for size in [(1100, 480), (350, 900), (200, 360)] {
        let svg = classwise_svg(&per_class, size);
        for (attributes, text) in texts(&svg) {
            // plotters' SVG backend writes a font of s pixels as font-size s / 1.24.
            let font = 1.24
                * attribute(&attributes, "font-size")
                    .unwrap()
                    .parse::<f64>()
                    .unwrap();
            assert!(font >= 11.0 - 1e-9, "{text:?} at {font} px in {size:?}");
        }
        // The widest "1.0" ends at least half its width (11 px text: about 9 px) before the
        // chart's right edge.
        let rightmost = texts(&svg)
            .filter(|(_, text)| *text == "1.0")
            .map(|(attributes, _)| number(&attributes, "x"))
            .max()
            .unwrap();
        assert!(rightmost + 9 <= size.0 as i32, "{rightmost} in {size:?}");
    }
}
