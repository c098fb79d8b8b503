//! Unit tests of the anatomy chart, checked by parsing the SVG it draws: curves with known
//! minima must put their dots there, every panel must carry its title, and the slider's and
//! the mistakes' lines must stand at their temperatures.

use super::super::test_support::*;
use super::*;
use crate::calibration::TemperatureFit;
use crate::temperature_anatomy::{temperature_grid, ANATOMY_POINTS};

const PURPLE_HEX: &str = "#CC79A7";

/// Curves with their least value at `least` (a grid point): `(log T − log least)²` plus an
/// offset per metric, the evaluation half's a little higher.
fn planted(least: f64) -> TemperatureAnatomy {
    let grid = temperature_grid(ANATOMY_POINTS).unwrap();
    let curve = |offset: f64| -> Vec<f64> {
        grid.iter()
            .map(|t| (t / least).ln().powi(2) / 10.0 + offset)
            .collect()
    };
    let half = |shift: f64| MetricCurves {
        nll: curve(0.3 + shift),
        ece: curve(0.02 + shift),
        smece: curve(0.03 + shift),
        brier: curve(0.15 + shift),
    };
    TemperatureAnatomy {
        grid: grid.clone(),
        calibration: half(0.0),
        evaluation: half(0.01),
        fitted: TemperatureFit {
            temperature: least,
            nll: 0.3,
            bound_hit: None,
            iterations: 1,
        },
    }
}

#[test]
fn each_panel_marks_both_minima_over_their_temperature() {
    let grid = temperature_grid(ANATOMY_POINTS).unwrap();
    let least = grid[70];
    let anatomy = planted(least);
    let mistake = TemperatureLine {
        temperature: 0.2,
        label: "fit on probabilities",
        colour: PURPLE,
    };
    let svg = render((960, 800), |area| {
        anatomy_chart(area, &anatomy, 1.0, &[mistake], &ChartStyle::default())
    })
    .unwrap();
    for label in [
        "NLL",
        "ECE",
        "smooth ECE",
        "Brier",
        "calibration half",
        "evaluation half",
        "this T",
        "fit on probabilities",
    ] {
        assert!(has_text(&svg, label), "{label}");
    }
    let dots = |hex| filled_circles(&svg, hex);
    // One least point per panel and half.
    let (orange, blue) = (dots(ORANGE_HEX), dots(BLUE_HEX));
    assert_eq!((orange.len(), blue.len()), (4, 4));
    // The slider's line (T = 1) and the dots (T = least > 1): in each panel, the dot lies right
    // of the slider's grey line by the same distance.
    let greys: Vec<Vec<(i32, i32)>> = polylines(&svg, FAINT_GREY_HEX)
        .into_iter()
        .filter(|line| line.len() == 2 && line[0].0 == line[1].0)
        .collect();
    assert!(greys.len() >= 4, "{greys:?}");
    let mut gaps: Vec<i32> = orange
        .iter()
        .map(|&(x, _)| {
            let line = greys
                .iter()
                .map(|l| l[0].0)
                .filter(|&gx| gx <= x)
                .max()
                .unwrap();
            x - line
        })
        .collect();
    gaps.sort_unstable();
    assert!(
        gaps[0] > 0 && gaps[3] - gaps[0] <= PIXEL_TOLERANCE,
        "{gaps:?}"
    );
    // The evaluation half's dot sits at the same temperature, higher on screen: its curve is higher.
    for (o, b) in orange.iter().zip(&blue) {
        assert!(
            (o.0 - b.0).abs() <= PIXEL_TOLERANCE && b.1 < o.1,
            "{o:?} {b:?}"
        );
    }
    // The mistake's dashed line, one per panel.
    assert!(svg.matches(PURPLE_HEX).count() >= 4);
}

#[test]
fn a_curve_that_is_not_a_number_is_refused() {
    let mut anatomy = planted(1.0);
    anatomy.evaluation.ece[3] = f64::NAN;
    let error = render((960, 800), |area| {
        anatomy_chart(area, &anatomy, 1.0, &[], &ChartStyle::default())
    })
    .unwrap_err();
    assert!(matches!(error, PlotError::NotFinite { .. }), "{error}");
}
