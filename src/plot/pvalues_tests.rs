//! The conformal p-values chart drawn to SVG and inspected.

use super::*;
use crate::plot::test_support::*;

fn style() -> ChartStyle {
    ChartStyle { scale: 1.0 }
}

const LABELS: PvalueLabels<'static> = PvalueLabels {
    in_distribution: "test image",
    out_of_distribution: "MNIST digit",
};

/// Ten OOD p-values at the smallest value, then ten test images' rising.
fn points() -> Vec<(f64, f64, bool)> {
    (1..=20)
        .map(|i| {
            let share = f64::from(i) / 100.0;
            let pvalue = if i <= 10 { 0.001 } else { 0.002 * f64::from(i) };
            (share, pvalue, i <= 10)
        })
        .collect()
}

#[test]
fn the_dots_the_bh_line_and_the_discoveries_are_drawn() {
    let svg = render((720, 540), |area| {
        pvalue_chart(
            area,
            &points(),
            (0.2, 0.04),
            0.1,
            Some(0.1),
            LABELS,
            &style(),
        )
    })
    .unwrap();
    for hex in [BLUE_HEX, ORANGE_HEX] {
        assert!(svg.contains(&format!("fill=\"{hex}\"")), "{hex} dots");
    }
    assert_eq!(svg.matches("<circle").count(), 20);
    for text in [
        "test image",
        "MNIST digit",
        "BH line, q = 10%",
        "declared OOD up to here",
        "p-value",
    ] {
        assert!(has_text(&svg, text), "{text}");
    }
    assert!(svg.contains(VERMILLION_HEX), "the discoveries' marker");
    // Without a discovery, no marker and no legend entry for it.
    let none = render((720, 540), |area| {
        pvalue_chart(area, &points(), (0.2, 0.04), 0.1, None, LABELS, &style())
    })
    .unwrap();
    assert!(!has_text(&none, "declared OOD up to here"));
    assert!(!none.contains(VERMILLION_HEX));
}

#[test]
fn values_that_are_not_shares_are_refused_and_small_areas_too() {
    let refused = |points: &[(f64, f64, bool)], level: f64| {
        render((720, 540), |area| {
            pvalue_chart(area, points, (0.2, 0.04), level, None, LABELS, &style())
        })
        .unwrap_err()
    };
    assert!(matches!(
        refused(&[(0.5, 1.5, true)], 0.1),
        PlotError::InvalidFraction {
            name: "p-value",
            ..
        }
    ));
    assert!(matches!(
        refused(&points(), f64::NAN),
        PlotError::InvalidFraction {
            name: "FDR level",
            ..
        }
    ));
    assert!(matches!(
        render((40, 30), |area| pvalue_chart(
            area,
            &points(),
            (0.2, 0.04),
            0.1,
            None,
            LABELS,
            &style()
        )),
        Err(PlotError::AreaTooSmall { .. })
    ));
}
