//! Unit tests of the shift lab's chart, checked by parsing the SVG it draws.

use super::super::test_support::*;
use super::*;

const BLUE_HEX: &str = "#0072B2";
const GREEN_HEX: &str = "#009E73";
const ORANGE_HEX: &str = "#E69F00";

fn point(severity: u8, coverage_kept: f64, size_refit: f64) -> SeverityPoint {
    SeverityPoint {
        severity,
        accuracy: 0.9 - 0.1 * f64::from(severity),
        ece: 0.02 * f64::from(severity),
        coverage_kept,
        size_kept: 1.5,
        coverage_refit: 0.9,
        size_refit,
    }
}

#[test]
fn dots_sit_at_their_severities_and_lines_join_them_in_order() {
    // Severities 3, 0 and 5 evaluated, out of order.
    let points = [point(3, 0.7, 2.0), point(0, 0.9, 1.5), point(5, 0.5, 3.0)];
    let svg = render((560, 480), |area| {
        severity_chart(area, &points, 5, 0.9, 3, &ChartStyle::default())
    })
    .unwrap();
    let dots = |hex| filled_circles(&svg, hex);
    // Accuracy (top), coverage kept (top) and set size kept (bottom) in orange: 2 × 3 dots.
    assert_eq!(dots(BLUE_HEX).len(), 3);
    assert_eq!(dots(ORANGE_HEX).len(), 6);
    assert_eq!(dots(GREEN_HEX).len(), 6);
    // The accuracy dots sit at the ticks 0, 3 and 5, left to right.
    let mut xs: Vec<i32> = dots(BLUE_HEX).iter().map(|&(x, _)| x).collect();
    xs.sort_unstable();
    for (x, label) in xs.iter().zip(["0", "3", "5"]) {
        assert!(
            (x - x_tick(&svg, label)).abs() <= PIXEL_TOLERANCE,
            "{label}"
        );
    }
    // One accuracy line through the three points, by increasing severity, falling.
    let lines: Vec<Vec<(i32, i32)>> = polylines(&svg, BLUE_HEX)
        .into_iter()
        .filter(|line| line.len() == 3)
        .collect();
    assert_eq!(lines.len(), 1);
    assert!(lines[0]
        .windows(2)
        .all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
    for label in ["accuracy", "ECE", "1 − α", "severity (0 = clean)"] {
        assert!(has_text(&svg, label), "{label}");
    }
}

#[test]
fn refuses_shares_outside_the_unit_interval_and_draws_empty_axes() {
    let bad = [point(1, 1.2, 1.0)];
    let result = render((560, 480), |area| {
        severity_chart(area, &bad, 5, 0.9, 1, &ChartStyle::default())
    });
    assert!(matches!(
        result,
        Err(PlotError::InvalidFraction {
            name: "coverage",
            ..
        })
    ));
    // Inversion: severities 0 and 1 only, nothing evaluated yet.
    let svg = render((560, 480), |area| {
        severity_chart(area, &[], 1, 0.9, 1, &ChartStyle::default())
    })
    .unwrap();
    assert!(elements(&svg, "circle").is_empty());
    assert!(has_text(&svg, "0") && has_text(&svg, "1"));
}
