//! The risk–coverage chart drawn to SVG and inspected.

use super::*;
use crate::plot::test_support::*;

fn style() -> ChartStyle {
    ChartStyle { scale: 1.0 }
}

/// A curve whose risk falls from 10% at full coverage to 1% at a tenth kept.
fn curve() -> Vec<(f64, f64)> {
    (1..=10)
        .map(|i| (f64::from(i) / 10.0, 0.01 * f64::from(i)))
        .collect()
}

#[test]
fn the_curve_the_boundary_and_the_operating_point_are_drawn() {
    let svg = render((720, 540), |area| {
        risk_coverage_chart(area, &curve(), 0.05, Some((0.6, 0.06)), &style())
    })
    .unwrap();
    let blue = polylines(&svg, BLUE_HEX);
    assert!(blue.iter().any(|points| points.len() == 10), "{blue:?}");
    assert!(has_text(&svg, "error among the images kept"));
    assert!(has_text(&svg, "answered and wrong = 5%"));
    assert!(has_text(&svg, "conformal risk control threshold"));
    assert!(
        svg.contains(&format!("fill=\"{VERMILLION_HEX}\"")),
        "the operating point"
    );
    // Without a threshold, neither the dot nor its legend.
    let plain = render((720, 540), |area| {
        risk_coverage_chart(area, &curve(), 0.05, None, &style())
    })
    .unwrap();
    assert!(!has_text(&plain, "conformal risk control threshold"));
    assert!(!plain.contains(&format!("fill=\"{VERMILLION_HEX}\"")));
}

#[test]
fn values_that_are_not_shares_are_refused_and_small_areas_too() {
    let refused = |curve: &[(f64, f64)], level: f64| {
        render((720, 540), |area| {
            risk_coverage_chart(area, curve, level, None, &style())
        })
        .unwrap_err()
    };
    assert!(matches!(
        refused(&[(0.5, 1.5)], 0.05),
        PlotError::InvalidFraction {
            name: "selective risk",
            ..
        }
    ));
    assert!(matches!(
        refused(&curve(), f64::NAN),
        PlotError::InvalidFraction {
            name: "risk level",
            ..
        }
    ));
    assert!(matches!(
        render((40, 30), |area| risk_coverage_chart(
            area,
            &curve(),
            0.05,
            None,
            &style()
        )),
        Err(PlotError::AreaTooSmall { .. })
    ));
}
