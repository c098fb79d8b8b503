//! The ACI stream chart drawn to SVG and inspected.

use super::*;
use crate::plot::test_support::*;

fn style() -> ChartStyle {
    ChartStyle { scale: 1.0 }
}

/// A stream of 600 images: coverage near 90% that dips in the second half for the fixed sets,
/// a level that falls there.
struct Stream {
    window: Vec<f64>,
    running: Vec<f64>,
    fixed_window: Vec<f64>,
    fixed_running: Vec<f64>,
    levels: Vec<f64>,
}

fn stream() -> Stream {
    let steps = 0..600;
    let dip = |step: usize| if step < 300 { 0.9 } else { 0.7 };
    Stream {
        window: steps.clone().map(|_| 0.9).collect(),
        running: steps.clone().map(|_| 0.9).collect(),
        fixed_window: steps.clone().map(dip).collect(),
        fixed_running: steps
            .clone()
            .map(|s| if s < 300 { 0.9 } else { 0.8 })
            .collect(),
        levels: steps.map(|s| if s < 300 { 0.1 } else { 0.02 }).collect(),
    }
}

fn series(stream: &Stream) -> StreamSeries<'_> {
    StreamSeries {
        window: &stream.window,
        running: &stream.running,
        fixed_window: &stream.fixed_window,
        fixed_running: &stream.fixed_running,
        levels: &stream.levels,
        window_size: 250,
        alpha: 0.1,
        block_starts: &[300],
    }
}

#[test]
fn both_methods_curves_the_level_and_the_block_line_are_drawn() {
    let stream = stream();
    let svg = render((720, 540), |area| {
        adaptive_stream_chart(area, &series(&stream), &style())
    })
    .unwrap();
    // Since the start: ACI in blue, the fixed sets in vermillion; each a line of 600 points.
    for hex in [BLUE_HEX, VERMILLION_HEX, ORANGE_HEX] {
        let lines = polylines(&svg, hex);
        assert!(
            lines.iter().any(|points| points.len() == 600),
            "{hex}: {lines:?}"
        );
    }
    for label in [
        "ACI, last 250",
        "q̂ fixed, since start",
        "coverage",
        "α_t",
        "image of the stream",
    ] {
        assert!(has_text(&svg, label), "{label}");
    }
    // The block's start: a faint vertical line in each panel.
    let faint = polylines(&svg, FAINT_GREY_HEX);
    let verticals = faint
        .iter()
        .filter(|points| points.len() == 2 && points[0].0 == points[1].0)
        .count();
    assert_eq!(verticals, 2, "{faint:?}");
}

#[test]
fn values_that_are_not_shares_are_refused_and_small_areas_too() {
    let mut bad = stream();
    bad.window[3] = 1.5;
    let refused = render((720, 540), |area| {
        adaptive_stream_chart(area, &series(&bad), &style())
    })
    .unwrap_err();
    assert!(matches!(
        refused,
        PlotError::InvalidFraction {
            name: "coverage",
            ..
        }
    ));
    let mut bad = stream();
    bad.levels[0] = f64::NAN;
    assert!(matches!(
        render((720, 540), |area| adaptive_stream_chart(
            area,
            &series(&bad),
            &style()
        )),
        Err(PlotError::InvalidFraction { name: "α_t", .. })
    ));
    let stream = stream();
    assert!(matches!(
        render((40, 30), |area| adaptive_stream_chart(
            area,
            &series(&stream),
            &style()
        )),
        Err(PlotError::AreaTooSmall { .. })
    ));
}
