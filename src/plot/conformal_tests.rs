//! Unit tests of the conformal charts, checked by parsing the SVG they draw.

use super::super::test_support::*;
use super::*;
use crate::conformal::{coverage_beta_density, coverage_experiment};
use crate::data::FASHION_MNIST_CLASSES;
use plotters::prelude::{IntoDrawingArea, SVGBackend};
use proptest::prelude::*;

/// Every colour that marks bars has one legend swatch, drawn first.
const LEGEND_SWATCHES: usize = 1;
/// Tolerance on the integral of a density histogram: exact arithmetic, and after rounding
/// bar edges to whole pixels.
const INTEGRAL_TOLERANCE: f64 = 1e-12;
const PIXEL_INTEGRAL_TOLERANCE: f64 = 0.03;

const GREEN_HEX: &str = "#009E73";
const SKY_BLUE_HEX: &str = "#56B4E9";

/// A filled rectangle in pixels.
#[derive(Clone, Copy, Debug)]
struct Bar {
    x: i32,
    y: i32,
    width: i32,
    height: i32,
}

impl Bar {
    fn centre(self) -> (i32, i32) {
        (self.x + self.width / 2, self.y + self.height / 2)
    }
}

/// The bars filled with `hex`, without the legend swatch.
fn bars(svg: &str, hex: &str) -> Vec<Bar> {
    filled_rects(svg, hex)
        .iter()
        .skip(LEGEND_SWATCHES)
        .map(|rect| Bar {
            x: number(rect, "x"),
            y: number(rect, "y"),
            width: number(rect, "width"),
            height: number(rect, "height"),
        })
        .collect()
}

/// Two-point polylines of `hex` whose ends share their x (vertical dashes and lines).
fn vertical_segments(svg: &str, hex: &str) -> Vec<[(i32, i32); 2]> {
    polylines(svg, hex)
        .into_iter()
        .filter(|points| points.len() == 2 && points[0].0 == points[1].0)
        .map(|points| [points[0], points[1]])
        .collect()
}

/// The pixel position of value `v` on an axis from the positions of two tick labels
/// `(value, position)`.
fn interpolate(a: (f64, i32), b: (f64, i32), v: f64) -> f64 {
    f64::from(a.1) + (v - a.0) * f64::from(b.1 - a.1) / (b.0 - a.0)
}

fn close(actual: f64, expected: f64) -> bool {
    (actual - expected).abs() <= f64::from(PIXEL_TOLERANCE)
}

fn style() -> ChartStyle {
    ChartStyle::default()
}

const SIZE_COUNTS: [usize; 11] = [30, 640, 180, 0, 40, 0, 0, 0, 0, 0, 1];

#[test]
fn set_size_bars_one_per_non_empty_size_coloured_by_size() {
    let svg = render((560, 320), |area| {
        set_size_histogram(area, &SIZE_COUNTS, &style())
    })
    .unwrap();
    let (empty, singletons, larger) = (
        bars(&svg, VERMILLION_HEX),
        bars(&svg, GREEN_HEX),
        bars(&svg, BLUE_HEX),
    );
    let non_zero = SIZE_COUNTS.iter().filter(|&&count| count > 0).count();
    assert_eq!(empty.len() + singletons.len() + larger.len(), non_zero);
    assert_eq!((empty.len(), singletons.len(), larger.len()), (1, 1, 3));
    // Each bar stands on its integer tick.
    let centred_on =
        |bar: Bar, label: &str| close(bar.centre().0.into(), x_tick(&svg, label).into());
    assert!(centred_on(empty[0], "0"));
    assert!(centred_on(singletons[0], "1"));
    for (bar, label) in larger.iter().zip(["2", "4", "10"]) {
        assert!(centred_on(*bar, label), "{bar:?} not at {label}");
    }
    // Heights are shares: 640 singletons against 180 sets of two.
    let ratio = f64::from(singletons[0].height) / f64::from(larger[0].height);
    assert!((ratio - 640.0 / 180.0).abs() < 0.05, "ratio {ratio}");
    // One image in 891 still gets a visible bar.
    assert!(f64::from(larger[2].height) >= MIN_BAR_LENGTH);
    // The empty-set bar is hatched: dark diagonal segments inside it.
    let inside = |(x, y): (i32, i32)| {
        (empty[0].x..=empty[0].x + empty[0].width).contains(&x)
            && (empty[0].y..=empty[0].y + empty[0].height).contains(&y)
    };
    let hatch = polylines(&svg, DARK_GREY_HEX)
        .into_iter()
        .filter(|line| line.len() == 2 && line[0].0 != line[1].0 && line[0].1 != line[1].1)
        .filter(|line| line.iter().all(|&point| inside(point)))
        .count();
    assert!(hatch >= 2, "{hatch} hatch lines");
    for label in [
        "3.4%",
        "72%",
        "20%",
        "4.5%",
        "0.1%",
        "empty set",
        "singleton",
    ] {
        assert!(has_text(&svg, label), "{label} missing");
    }
    // Without empty sets only the legend is vermillion.
    let svg = render((560, 320), |area| {
        set_size_histogram(area, &[0, 5, 5], &style())
    })
    .unwrap();
    assert!(bars(&svg, VERMILLION_HEX).is_empty());
    assert_eq!(bars(&svg, GREEN_HEX).len() + bars(&svg, BLUE_HEX).len(), 2);
}

/// Fashion-MNIST-like per-class coverage: Pullover, Coat and Shirt below 0.9, Sandal
/// without examples, Ankle boot exactly on target.
fn class_coverage() -> Vec<Option<f64>> {
    vec![
        Some(0.95),
        Some(0.97),
        Some(0.86),
        Some(0.91),
        Some(0.84),
        None,
        Some(0.72),
        Some(0.96),
        Some(0.99),
        Some(0.9),
    ]
}

#[test]
fn per_class_bars_orange_below_target_and_a_dashed_target_line() {
    let coverage = class_coverage();
    let draw = |target: f64| {
        render((360, 420), |area| {
            per_class_coverage(area, &coverage, &FASHION_MNIST_CLASSES, target, &style())
        })
        .unwrap()
    };
    let svg = draw(0.9);
    let (above, below) = (bars(&svg, BLUE_HEX), bars(&svg, ORANGE_HEX));
    let with_examples = coverage.iter().flatten().count();
    assert_eq!(above.len() + below.len(), with_examples);
    assert_eq!(below.len(), 3);
    // Each orange bar is on the row of a class below target.
    let row_of = |bar: Bar| {
        FASHION_MNIST_CLASSES
            .iter()
            .position(|name| (y_tick(&svg, name) - bar.centre().1).abs() <= PIXEL_TOLERANCE)
            .unwrap()
    };
    let mut low: Vec<&str> = below
        .iter()
        .map(|&bar| FASHION_MNIST_CLASSES[row_of(bar)])
        .collect();
    low.sort_unstable();
    assert_eq!(low, ["Coat", "Pullover", "Shirt"]);
    // Bars end at their coverage on the axis from 50% to 100%.
    let axis = |label: &str, value: f64| (value, x_tick(&svg, label));
    let x_of = |value| interpolate(axis("50%", 0.5), axis("100%", 1.0), value);
    for bar in above.iter().chain(&below) {
        let value = coverage[row_of(*bar)].unwrap();
        assert!(close(f64::from(bar.x + bar.width), x_of(value)), "{bar:?}");
    }
    // The dashed line stands at the target, labelled above the plot.
    let dashes = vertical_segments(&svg, DARK_GREY_HEX);
    assert!(dashes.len() > 10, "{} dashes", dashes.len());
    assert!(dashes.iter().all(|dash| close(dash[0].0.into(), x_of(0.9))));
    let label = texts(&svg)
        .find(|(_, text)| *text == "1 − α")
        .map(|(attributes, _)| number(&attributes, "x"))
        .unwrap();
    assert!(close(label.into(), x_of(0.9)));
    assert!(has_text(&svg, "no examples"));
    // Between ticks: 0.85 is halfway from 80% to 90%; Pullover (0.86) is then above.
    let svg = draw(0.85);
    let x_of = |value| {
        interpolate(
            (0.8, x_tick(&svg, "80%")),
            (0.9, x_tick(&svg, "90%")),
            value,
        )
    };
    let dashes = vertical_segments(&svg, DARK_GREY_HEX);
    assert!(dashes
        .iter()
        .all(|dash| close(dash[0].0.into(), x_of(0.85))));
    assert_eq!(bars(&svg, ORANGE_HEX).len(), 2);
}

#[test]
fn per_class_axis_reaches_down_to_the_lowest_class() {
    let mut coverage = class_coverage();
    coverage[6] = Some(0.3);
    let svg = render((360, 420), |area| {
        per_class_coverage(area, &coverage, &FASHION_MNIST_CLASSES, 0.9, &style())
    })
    .unwrap();
    let x_of = |value| {
        interpolate(
            (0.4, x_tick(&svg, "40%")),
            (1.0, x_tick(&svg, "100%")),
            value,
        )
    };
    let shirt = bars(&svg, ORANGE_HEX)
        .into_iter()
        .find(|bar| (y_tick(&svg, "Shirt") - bar.centre().1).abs() <= PIXEL_TOLERANCE)
        .unwrap();
    assert!(close(f64::from(shirt.x + shirt.width), x_of(0.3)));
    // The axis starts 0.05 below it.
    assert!(close(f64::from(shirt.x), x_of(0.25)));
}

fn stratum(min_size: u32, max_size: u32, count: usize, coverage: Option<f64>) -> Stratum {
    Stratum {
        min_size,
        max_size,
        count,
        coverage,
    }
}

fn example_strata() -> Vec<Stratum> {
    vec![
        stratum(0, 1, 500, Some(0.93)),
        stratum(2, 3, 120, Some(0.85)),
        stratum(4, 6, 0, None),
        stratum(7, 10, 3, Some(1.0)),
    ]
}

#[test]
fn strata_bars_with_counts_and_target_line() {
    let strata = example_strata();
    let svg = render((560, 320), |area| {
        stratified_coverage(area, &strata, 0.9, &style())
    })
    .unwrap();
    let (above, below) = (bars(&svg, BLUE_HEX), bars(&svg, ORANGE_HEX));
    let non_empty = strata.iter().filter(|s| s.count > 0).count();
    assert_eq!(above.len() + below.len(), non_empty);
    assert_eq!(below.len(), 1);
    assert!(close(
        below[0].centre().0.into(),
        x_tick(&svg, "2–3").into()
    ));
    assert!(close(
        above[0].centre().0.into(),
        x_tick(&svg, "0–1").into()
    ));
    assert!(close(
        above[1].centre().0.into(),
        x_tick(&svg, "7–10").into()
    ));
    let ratio = f64::from(above[1].height) / f64::from(above[0].height);
    assert!((ratio - 1.0 / 0.93).abs() < 0.02, "ratio {ratio}");
    // Counts above the bars, "no sets" in the empty slot.
    let text_at = |wanted: &str| {
        texts(&svg)
            .find(|(_, text)| *text == wanted)
            .map(|(attributes, _)| (number(&attributes, "x"), number(&attributes, "y")))
            .unwrap()
    };
    for (label, bar) in [
        ("n = 500", above[0]),
        ("n = 120", below[0]),
        ("n = 3", above[1]),
    ] {
        let (x, y) = text_at(label);
        assert!(close(x.into(), bar.centre().0.into()));
        assert!(y < bar.y, "{label} is not above its bar");
    }
    assert!(close(
        text_at("no sets").0.into(),
        x_tick(&svg, "4–6").into()
    ));
    assert!(!has_text(&svg, "n = 0"));
    // The dashed line at 90%, halfway between the ticks 80% and 100%, across all slots.
    let y_of = |value| {
        interpolate(
            (0.8, y_tick(&svg, "80%")),
            (1.0, y_tick(&svg, "100%")),
            value,
        )
    };
    let plot_top = y_tick(&svg, "100%") - 20;
    let dashes: Vec<(i32, i32)> = polylines(&svg, DARK_GREY_HEX)
        .into_iter()
        .filter(|line| line.len() == 2 && line[0].1 == line[1].1 && line[0].1 > plot_top)
        .flatten()
        .collect();
    assert!(dashes.iter().all(|&(_, y)| close(y.into(), y_of(0.9))));
    let xs = dashes.iter().map(|&(x, _)| x);
    assert!(xs.clone().min().unwrap() < x_tick(&svg, "0–1"));
    assert!(xs.max().unwrap() > x_tick(&svg, "7–10"));
}

/// α = 0.01, …, 0.30 with coverage just above 1 − α, one point with `q̂ = +∞` (coverage 1,
/// size K), one with a NaN coverage and one with a NaN α.
fn sweep_points() -> Vec<SweepPoint> {
    let mut points: Vec<SweepPoint> = (1..=30)
        .map(|i| {
            let alpha = f64::from(i) / 100.0;
            SweepPoint {
                alpha,
                qhat: 0.5,
                coverage: 1.0 - alpha + 0.01,
                average_set_size: 1.0 + 10.0 * (0.3 - alpha),
            }
        })
        .collect();
    points.push(SweepPoint {
        alpha: 0.005,
        qhat: f64::INFINITY,
        coverage: 1.0,
        average_set_size: 10.0,
    });
    points.push(SweepPoint {
        alpha: 0.155,
        qhat: 0.5,
        coverage: f64::NAN,
        average_set_size: 2.0,
    });
    points.push(SweepPoint {
        alpha: f64::NAN,
        qhat: 0.5,
        coverage: 0.5,
        average_set_size: 2.0,
    });
    points
}

#[test]
fn sweep_draws_two_curves_and_the_current_alpha_in_both_panels() {
    let points = sweep_points();
    let svg = render((560, 480), |area| {
        alpha_sweep_curves(area, &points, 0.1, &style())
    })
    .unwrap();
    let coverage_lines = polylines(&svg, BLUE_HEX);
    let size_lines = polylines(&svg, GREEN_HEX);
    assert_eq!((coverage_lines.len(), size_lines.len()), (2, 2));
    let (coverage, sizes) = (&coverage_lines[1], &size_lines[1]);
    let finite = |value: fn(&SweepPoint) -> f64| {
        points
            .iter()
            .filter(|p| p.alpha.is_finite() && value(p).is_finite())
            .count()
    };
    assert_eq!(coverage.len(), finite(|p| p.coverage));
    assert_eq!(sizes.len(), finite(|p| p.average_set_size));
    assert_eq!((coverage.len(), sizes.len()), (31, 32));
    // Coverage on top, set size below.
    let lowest_coverage = coverage.iter().map(|&(_, y)| y).max().unwrap();
    let highest_size = sizes.iter().map(|&(_, y)| y).min().unwrap();
    assert!(lowest_coverage < highest_size);
    // The current α: one vertical line per panel at α = 0.1.
    let markers = vertical_segments(&svg, VERMILLION_HEX);
    assert_eq!(markers.len(), 2);
    let x = f64::from(x_tick(&svg, "0.10"));
    assert!(markers.iter().all(|marker| close(marker[0].0.into(), x)));
    let ends =
        |marker: [(i32, i32); 2]| (marker[0].1.min(marker[1].1), marker[0].1.max(marker[1].1));
    assert!(ends(markers[0]).1 < ends(markers[1]).0);
    assert!(has_text(&svg, "α = 0.10"));
    // The dashed line y = 1 − α slopes down, and the coverage curve stays above it.
    let edge: Vec<(i32, i32)> = polylines(&svg, DARK_GREY_HEX)
        .into_iter()
        .filter(|line| line.len() == 2 && line[0].0 != line[1].0 && line[0].1 != line[1].1)
        .flatten()
        .collect();
    let left = *edge.iter().min().unwrap();
    let right = *edge.iter().max().unwrap();
    assert!(right.1 > left.1);
    let edge_y = |x: i32| interpolate((left.0.into(), left.1), (right.0.into(), right.1), x.into());
    assert!(coverage
        .iter()
        .all(|&(x, y)| f64::from(y) <= edge_y(x) + 1.0));
    // The point with q̂ = +∞ is the first, at coverage 1: the top of the curve.
    assert_eq!(
        coverage[0].1,
        coverage.iter().map(|&(_, y)| y).min().unwrap()
    );
}

#[test]
fn density_histogram_integrates_to_the_share_in_range() {
    let values = [0.1, 0.2, 0.25, 0.9, 1.0];
    let heights = density_histogram(&values, 4, 0.0, 1.0);
    assert_eq!(heights, [1.6, 0.8, 0.0, 1.6]);
    let integral = |heights: &[f64], width: f64| heights.iter().sum::<f64>() * width;
    assert!((integral(&heights, 0.25) - 1.0).abs() < INTEGRAL_TOLERANCE);
    // Out of range and NaN count in N but in no bin.
    let heights = density_histogram(&[0.1, 0.2, 0.25, 0.9, 1.0, 1.5, f64::NAN], 4, 0.0, 1.0);
    assert!((integral(&heights, 0.25) - 5.0 / 7.0).abs() < INTEGRAL_TOLERANCE);
    // Many values, 36 bins on their range.
    let values: Vec<f64> = (0..1000)
        .map(|i| 0.85 + 0.1 * ((i * 37 % 1000) as f64 / 999.0))
        .collect();
    let heights = density_histogram(&values, 36, 0.85, 0.95);
    assert_eq!(heights.len(), 36);
    assert!((integral(&heights, 0.1 / 36.0) - 1.0).abs() < INTEGRAL_TOLERANCE);
    assert_eq!(density_histogram(&[], 3, 0.0, 1.0), [0.0; 3]);
    for (bins, lo, hi) in [
        (0, 0.0, 1.0),
        (3, 1.0, 1.0),
        (3, 1.0, 0.0),
        (3, f64::NAN, 1.0),
        (3, 0.0, f64::INFINITY),
    ] {
        assert!(density_histogram(&values, bins, lo, hi).is_empty());
    }
}

/// Coverages of `R = 400` random splits of 4000 distinct scores (1000 calibration rows,
/// α = 0.1) and the Beta density they follow.
fn experiment() -> (Vec<f64>, Vec<(f64, f64)>, f64, f64) {
    let scores: Vec<f64> = (0..4000)
        .map(|i| f64::from((i * 7919) % 4000) / 4000.0)
        .collect();
    let coverages = coverage_experiment(&scores, 1000, 0.1, 400, 7).unwrap();
    let density = (0..=400)
        .map(|i| {
            let x = 0.8 + 0.2 * f64::from(i) / 400.0;
            (x, coverage_beta_density(1000, 0.1, x).unwrap())
        })
        .collect();
    (coverages, density, 0.9, 0.9 + 1.0 / 1001.0)
}

#[test]
fn experiment_bars_integrate_to_one_under_the_beta_curve() {
    let (coverages, density, target, upper) = experiment();
    let svg = render((1120, 720), |area| {
        coverage_experiment_histogram(area, &coverages, &density, &[], target, upper, &style())
    })
    .unwrap();
    let histogram_bars = bars(&svg, SKY_BLUE_HEX);
    let lo = coverages.iter().copied().fold(target, f64::min);
    let hi = coverages.iter().copied().fold(upper, f64::max);
    let heights = density_histogram(&coverages, EXPERIMENT_BINS, lo, hi);
    assert_eq!(
        histogram_bars.len(),
        heights.iter().filter(|&&h| h > 0.0).count()
    );
    // Σ height × width in data units, from the pixel transform of two ticks per axis.
    let ticks = |anchor: &str, coordinate: &str| -> Vec<(f64, i32)> {
        texts(&svg)
            .filter(|(attributes, _)| attribute(attributes, "text-anchor") == Some(anchor))
            .filter_map(|(attributes, text)| {
                let value: f64 = text.trim_end_matches('%').parse().ok()?;
                Some((value, number(&attributes, coordinate)))
            })
            .collect()
    };
    let (x_ticks, y_ticks) = (ticks("middle", "x"), ticks("end", "y"));
    let x_scale = f64::from(x_ticks[1].1 - x_ticks[0].1) / ((x_ticks[1].0 - x_ticks[0].0) / 100.0);
    let y_scale = f64::from(y_ticks[0].1 - y_ticks[1].1) / (y_ticks[1].0 - y_ticks[0].0);
    let area: f64 = histogram_bars
        .iter()
        .map(|bar| f64::from(bar.width) * f64::from(bar.height))
        .sum();
    let integral = area / (x_scale * y_scale);
    assert!(
        (integral - 1.0).abs() < PIXEL_INTEGRAL_TOLERANCE,
        "integral {integral}"
    );
    // Dashed lines at 1 − α and at the upper edge; the band between them is shaded.
    let x_of =
        |value: f64| f64::from(x_ticks[0].1) + (100.0 * value - x_ticks[0].0) / 100.0 * x_scale;
    let dashes = vertical_segments(&svg, DARK_GREY_HEX);
    let at = |value: f64| {
        dashes
            .iter()
            .filter(|dash| close(dash[0].0.into(), x_of(value)))
            .count()
    };
    assert!(at(target) > 5 && at(upper) > 5);
    assert_eq!(at(target) + at(upper), dashes.len());
    let band = filled_rects(&svg, GREEN_HEX);
    assert_eq!(band.len(), LEGEND_SWATCHES + 1);
    assert!(close(number(&band[1], "x").into(), x_of(target)));
    // The Beta curve: one orange polyline (and the legend's), peaking near its mean
    // k/(n + 1) = 901/1001.
    let curves = polylines(&svg, ORANGE_HEX);
    assert_eq!(curves.len(), 2);
    let peak = curves[1].iter().min_by_key(|&&(_, y)| y).unwrap();
    assert!((f64::from(peak.0) - x_of(901.0 / 1001.0)).abs() < 0.005 * x_scale);
    for label in ["R = 400 splits", "Beta(k, n + 1 − k)"] {
        assert!(has_text(&svg, label), "{label} missing");
    }
}

/// Draws every conformal chart on `size` at `scale`.
fn draw_all(size: (u32, u32), scale: f64) -> Result<(), PlotError> {
    let style = ChartStyle { scale };
    let (coverages, density, target, upper) = experiment();
    render(size, |area| set_size_histogram(area, &SIZE_COUNTS, &style))?;
    render(size, |area| {
        per_class_coverage(area, &class_coverage(), &FASHION_MNIST_CLASSES, 0.9, &style)
    })?;
    render(size, |area| {
        stratified_coverage(area, &example_strata(), 0.9, &style)
    })?;
    render(size, |area| {
        alpha_sweep_curves(area, &sweep_points(), 0.1, &style)
    })?;
    render(size, |area| {
        coverage_experiment_histogram(area, &coverages, &density, &[], target, upper, &style)
    })?;
    Ok(())
}

#[test]
fn charts_draw_at_every_scale_and_small_sizes() {
    for scale in [1.0, 2.0, 3.0] {
        for size in [(320, 240), (240, 320), (360, 360), (560, 560), (1680, 1680)] {
            draw_all(size, scale).unwrap();
        }
    }
}

#[test]
fn empty_inputs_draw_empty_charts() {
    for counts in [vec![], vec![0; 11]] {
        let svg = render((320, 240), |area| {
            set_size_histogram(area, &counts, &style())
        })
        .unwrap();
        for hex in [VERMILLION_HEX, GREEN_HEX, BLUE_HEX] {
            assert!(bars(&svg, hex).is_empty());
        }
    }
    let empty_strata = vec![stratum(0, 1, 0, None), stratum(2, 3, 0, None)];
    for strata in [vec![], empty_strata] {
        let svg = render((320, 240), |area| {
            stratified_coverage(area, &strata, 0.9, &style())
        })
        .unwrap();
        assert!(bars(&svg, BLUE_HEX).is_empty() && bars(&svg, ORANGE_HEX).is_empty());
    }
    let unusable = [SweepPoint {
        alpha: f64::NAN,
        qhat: f64::INFINITY,
        coverage: f64::INFINITY,
        average_set_size: f64::NAN,
    }];
    for points in [&[][..], &unusable] {
        let svg = render((320, 240), |area| {
            alpha_sweep_curves(area, points, 0.1, &style())
        })
        .unwrap();
        assert_eq!(polylines(&svg, BLUE_HEX).len(), LEGEND_SWATCHES);
        assert_eq!(vertical_segments(&svg, VERMILLION_HEX).len(), 2);
    }
    // Proptest's shrunk case: a set size far below the axis once overflowed the pixels.
    let far_off = [SweepPoint {
        alpha: 0.0,
        qhat: 0.0,
        coverage: 0.0,
        average_set_size: -6.758_430_276_577_353e264,
    }];
    render((320, 240), |area| {
        alpha_sweep_curves(area, &far_off, 0.0, &style())
    })
    .unwrap();
    let svg = render((320, 240), |area| {
        coverage_experiment_histogram(area, &[], &[], &[], 0.9, 0.91, &style())
    })
    .unwrap();
    assert!(bars(&svg, SKY_BLUE_HEX).is_empty());
    // All splits equal, and the band of zero width.
    let svg = render((320, 240), |area| {
        coverage_experiment_histogram(area, &[0.9; 5], &[(0.9, f64::NAN)], &[], 0.9, 0.9, &style())
    })
    .unwrap();
    assert_eq!(bars(&svg, SKY_BLUE_HEX).len(), 1);
    assert!(matches!(
        render((320, 240), |area| per_class_coverage(
            area,
            &[],
            &[],
            0.9,
            &style()
        )),
        Err(PlotError::NoClasses)
    ));
}

/// The error of drawing on a comfortable 560×560 area.
fn refuse(
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), PlotError>,
) -> PlotError {
    render((560, 560), draw).unwrap_err()
}

#[test]
fn invalid_input_is_refused_with_a_typed_error() {
    for scale in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            draw_all((560, 560), scale),
            Err(PlotError::InvalidScale(_))
        ));
    }
    for size in [(0, 0), (50, 400), (400, 30)] {
        assert!(matches!(
            draw_all(size, 1.0),
            Err(PlotError::AreaTooSmall { .. })
        ));
    }
    let coverage = class_coverage();
    assert!(matches!(
        refuse(|area| per_class_coverage(area, &coverage, &["a"], 0.9, &style())),
        PlotError::CoverageCountMismatch {
            coverages: 10,
            names: 1
        }
    ));
    assert!(matches!(
        refuse(|area| per_class_coverage(
            area,
            &[Some(0.9), Some(1.5)],
            &["a", "b"],
            0.9,
            &style()
        )),
        PlotError::InvalidCoverage { index: 1, .. }
    ));
    assert!(matches!(
        refuse(|area| per_class_coverage(
            area,
            &coverage,
            &FASHION_MNIST_CLASSES,
            f64::NAN,
            &style()
        )),
        PlotError::InvalidFraction { .. }
    ));
    let mut strata = example_strata();
    strata[2] = stratum(4, 6, 5, Some(f64::NAN));
    assert!(matches!(
        refuse(|area| stratified_coverage(area, &strata, 0.9, &style())),
        PlotError::InvalidCoverage { index: 2, .. }
    ));
    assert!(matches!(
        refuse(|area| stratified_coverage(area, &example_strata(), 1.1, &style())),
        PlotError::InvalidFraction { .. }
    ));
    for alpha in [f64::NAN, 1.5, -0.1] {
        assert!(matches!(
            refuse(|area| alpha_sweep_curves(area, &sweep_points(), alpha, &style())),
            PlotError::InvalidFraction {
                name: "current α",
                ..
            }
        ));
    }
    let experiment = |coverages: &[f64], density: &[(f64, f64)], upper: f64| {
        refuse(|area| {
            coverage_experiment_histogram(area, coverages, density, &[], 0.9, upper, &style())
        })
    };
    let huge = [SweepPoint {
        alpha: 0.1,
        qhat: 0.5,
        coverage: 0.9,
        average_set_size: f64::MAX,
    }];
    assert!(matches!(
        refuse(|area| alpha_sweep_curves(area, &huge, 0.1, &style())),
        PlotError::InvalidAxisRange { .. }
    ));
    for upper in [0.89, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            experiment(&[0.9], &[], upper),
            PlotError::InvalidBand { .. }
        ));
    }
    assert!(matches!(
        experiment(&[0.9, 0.91, 0.92, -0.1], &[], 0.91),
        PlotError::InvalidCoverage { index: 3, .. }
    ));
    assert!(matches!(
        experiment(&[0.9], &[(0.9, 1.0), (0.91, -1.0)], 0.91),
        PlotError::NegativeDensity { index: 1, .. }
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn arbitrary_inputs_draw_or_refuse_without_panicking(
        counts in prop::collection::vec(0_usize..1_000_000, 0..30),
        coverage in prop::collection::vec(prop::option::of(prop::num::f64::ANY), 1..12),
        values in prop::collection::vec(prop::num::f64::ANY, 0..40),
        target in prop::num::f64::ANY,
        upper in prop::num::f64::ANY,
        alpha in prop::num::f64::ANY,
    ) {
        let style = style();
        let names: Vec<String> = (0..coverage.len()).map(|k| format!("class {k}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let strata: Vec<Stratum> = values
            .iter()
            .zip(&counts)
            .zip(0_u32..)
            .map(|((&value, &count), size)| stratum(size, size + 1, count, Some(value)))
            .collect();
        let points: Vec<SweepPoint> = values
            .chunks_exact(3)
            .map(|chunk| SweepPoint {
                alpha: chunk[0],
                qhat: chunk[1],
                coverage: chunk[1],
                average_set_size: chunk[2],
            })
            .collect();
        let density: Vec<(f64, f64)> =
            values.chunks_exact(2).map(|chunk| (chunk[0], chunk[1])).collect();
        let fractions: Vec<f64> = values
            .iter()
            .map(|&value| if value.is_finite() { value.abs().fract() } else { 0.5 })
            .collect();
        let fraction = |value: f64| if value.is_finite() { value.abs().fract() } else { 0.9 };
        let size = (360, 300);
        // Only that nothing panics is checked: each call either draws or refuses.
        let _ = render(size, |area| set_size_histogram(area, &counts, &style));
        let _ = render(size, |area| per_class_coverage(area, &coverage, &names, target, &style));
        let _ = render(size, |area| stratified_coverage(area, &strata, target, &style));
        let _ = render(size, |area| alpha_sweep_curves(area, &points, alpha, &style));
        let _ = render(size, |area| alpha_sweep_curves(area, &points, fraction(alpha), &style));
        for (coverages, density) in [(&values, &density), (&fractions, &density)] {
            let _ = render(size, |area| {
                coverage_experiment_histogram(area, coverages, density, &[], target, upper, &style)
            });
        }
        let (low, high) = (fraction(target), fraction(target) + fraction(upper));
        let _ = render(size, |area| {
            coverage_experiment_histogram(area, &fractions, &density, &[], low, high, &style)
        });
        let heights = density_histogram(&values, counts.len(), target, upper);
        prop_assert!(heights.is_empty() || heights.len() == counts.len());
    }
}

#[test]
fn the_per_class_chart_grows_a_row_a_class_past_twenty_classes() {
    assert_eq!(per_class_height(10), None);
    assert_eq!(per_class_height(20), None);
    assert_eq!(per_class_height(21), Some(80.0 + 14.0 * 21.0));
    assert_eq!(per_class_height(100), Some(1480.0));
    // At that height a 100-class chart draws where the square canvas refused it.
    let names: Vec<String> = (0..100).map(|k| format!("class {k}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let coverage = vec![Some(0.9); 100];
    let draw = |height: u32| {
        let mut svg = String::new();
        let area = SVGBackend::with_string(&mut svg, (618, height)).into_drawing_area();
        per_class_coverage(&area, &coverage, &names, 0.9, &ChartStyle::default()).map(|_| ())
    };
    assert!(matches!(draw(569), Err(PlotError::AreaTooSmall { .. })));
    assert!(draw(1480).is_ok());
}

#[test]
fn the_pac_law_is_drawn_in_purple_with_its_tail_below_the_target_shaded() {
    let (coverages, density, target, upper) = experiment();
    // The PAC rank at ε = δ = 0.1 for n = 1,000, a little above the marginal 901.
    let k = crate::conformal::pac::pac_rank(1000, 0.1, 0.1).unwrap();
    let pac: Vec<(f64, f64)> = (0..=400)
        .map(|i| {
            let x = 0.8 + 0.2 * f64::from(i) / 400.0;
            (
                x,
                crate::conformal::rank_coverage_density(1000, k, x).unwrap(),
            )
        })
        .collect();
    let svg = render((1120, 720), |area| {
        coverage_experiment_histogram(area, &coverages, &density, &pac, target, upper, &style())
    })
    .unwrap();
    const PURPLE_HEX: &str = "#CC79A7";
    assert!(has_text(&svg, "PAC Beta(k′, n + 1 − k′), tail ≤ δ"));
    let curves = polylines(&svg, PURPLE_HEX);
    assert!(
        curves.iter().any(|points| points.len() > 100),
        "the PAC curve"
    );
    // The tail: one filled polygon, wholly left of the target line (the dashed 1 − α edge).
    let tails = polygons(&svg, PURPLE_HEX);
    assert_eq!(tails.len(), 1);
    let target_x = vertical_segments(&svg, DARK_GREY_HEX)
        .iter()
        .map(|[(x, _), _]| *x)
        .min()
        .unwrap();
    assert!(
        tails[0].iter().all(|&(x, _)| x <= target_x + 1),
        "{:?} vs {target_x}",
        tails[0]
    );
    // Without PAC samples, neither the curve nor its legend.
    let plain = render((1120, 720), |area| {
        coverage_experiment_histogram(area, &coverages, &density, &[], target, upper, &style())
    })
    .unwrap();
    assert!(!has_text(&plain, "PAC Beta(k′, n + 1 − k′), tail ≤ δ"));
    assert!(polygons(&plain, PURPLE_HEX).is_empty());
}
