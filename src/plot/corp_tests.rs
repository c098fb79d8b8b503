//! The CORP reliability diagram drawn to SVG and inspected.

use super::*;
use crate::corp::corp;
use crate::plot::test_support::*;

fn style() -> ChartStyle {
    ChartStyle { scale: 1.0 }
}

#[test]
fn the_pav_curve_steps_through_its_blocks() {
    // Two blocks: 0.6 and 0.7 pooled at 0.5, 0.8 and 0.9 at 1 (`corp_tests.rs`' worked example).
    let corp = corp(&[0.6, 0.7, 0.8, 0.9], &[true, false, true, true]).unwrap();
    let svg = render((720, 660), |area| {
        corp_reliability_diagram(area, &corp, &style())
    })
    .unwrap();
    let blue = polylines(&svg, BLUE_HEX);
    let curve = blue.iter().find(|points| points.len() == 4).unwrap();
    // Flat across each block's confidences, at 0.5 and at 1.
    let (left, right) = (x_tick(&svg, "0.0"), x_tick(&svg, "1.0"));
    let (bottom, top) = (y_tick(&svg, "0.0"), y_tick(&svg, "1.0"));
    let at = |x: f64, y: f64| {
        (
            left + (x * f64::from(right - left)).round() as i32,
            bottom + (y * f64::from(top - bottom)).round() as i32,
        )
    };
    for (point, expected) in
        curve
            .iter()
            .zip([at(0.6, 0.5), at(0.7, 0.5), at(0.8, 1.0), at(0.9, 1.0)])
    {
        assert!(
            (point.0 - expected.0).abs() <= PIXEL_TOLERANCE
                && (point.1 - expected.1).abs() <= PIXEL_TOLERANCE,
            "{curve:?}"
        );
    }
    assert!(has_text(&svg, "share right, PAV (2 blocks)"));
    assert!(has_text(&svg, "Brier MCB 0.0500, DSC 0.0625"));
}

#[test]
fn a_value_that_is_not_finite_is_refused_and_a_small_area_too() {
    let mut broken = corp(&[0.6, 0.7], &[true, false]).unwrap();
    broken.blocks[0].value = f64::NAN;
    let refused = render((720, 660), |area| {
        corp_reliability_diagram(area, &broken, &style())
    })
    .unwrap_err();
    assert!(matches!(
        refused,
        PlotError::NotFinite {
            name: "PAV value",
            ..
        }
    ));
    let fine = corp(&[0.6, 0.7], &[true, false]).unwrap();
    let small = render((60, 50), |area| {
        corp_reliability_diagram(area, &fine, &style())
    })
    .unwrap_err();
    assert!(matches!(small, PlotError::AreaTooSmall { .. }));
}
