//! The cumulative-differences chart drawn to SVG and inspected.

use super::*;
use crate::plot::test_support::*;

fn style() -> ChartStyle {
    ChartStyle { scale: 1.0 }
}

/// The curve of `calibration_estimators_tests.rs`'s worked example: `D = (−0.02, −0.062,
/// −0.162, −0.142, −0.122)`, its KS error 0.162 at the third image and its range 0.142.
fn worked_example() -> CumulativeDifferences {
    CumulativeDifferences::new(
        &[0.1, 0.9, 0.21, 0.9, 0.5],
        &[false, true, false, true, false],
    )
    .unwrap()
}

#[test]
fn the_curve_and_its_ks_and_kuiper_marks_are_drawn() {
    let svg = render((720, 600), |area| {
        cumulative_differences_chart(area, &worked_example(), &style())
    })
    .unwrap();
    let blue = polylines(&svg, BLUE_HEX);
    // The origin and the five images.
    assert!(blue.iter().any(|points| points.len() == 6), "{blue:?}");
    assert!(has_text(&svg, "KS error 0.1620"));
    assert!(has_text(&svg, "range (Kuiper) 0.1420"));
    // The KS segment stands at the third image's share, 60%, from 0 down to the curve's
    // lowest point: the blue curve's third point after the origin.
    let lowest = blue.iter().find(|points| points.len() == 6).unwrap()[3];
    let segments = polylines(&svg, VERMILLION_HEX);
    assert!(
        segments.iter().any(|points| points.len() == 2
            && (points[0].0 - x_tick(&svg, "60%")).abs() <= PIXEL_TOLERANCE
            && (points[1].0 - lowest.0).abs() <= PIXEL_TOLERANCE
            && (points[1].1 - lowest.1).abs() <= PIXEL_TOLERANCE),
        "{segments:?}"
    );
}

#[test]
fn a_difference_that_is_not_finite_is_refused_and_a_small_area_too() {
    let mut broken = worked_example();
    broken.curve[1] = f64::NAN;
    let refused = render((720, 600), |area| {
        cumulative_differences_chart(area, &broken, &style())
    })
    .unwrap_err();
    assert!(matches!(
        refused,
        PlotError::NotFinite {
            name: "cumulative difference",
            ..
        }
    ));
    let small = render((60, 50), |area| {
        cumulative_differences_chart(area, &worked_example(), &style())
    })
    .unwrap_err();
    assert!(matches!(small, PlotError::AreaTooSmall { .. }));
}
