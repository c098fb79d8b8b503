//! The shift lab's stream chart: adaptive conformal inference against fixed split conformal
//! over images whose corruption rises.
//!
//! Two panels share the stream's axis (the images in the order they arrive): on top the
//! running coverage of both methods, over the last images of a window and since the start,
//! with the dashed `1 − α`; below, ACI's level `α_t` with the dashed `α` the fixed sets keep.
//! A faint vertical line marks where each severity's block begins.

use super::*;

/// Comfortable size (CSS pixels).
const STREAM_SIZE: (f64, f64) = (240.0, 260.0);
const REFERENCE_LINE_WIDTH: f64 = 1.5;
/// The coverage axis starts at most this low, lower when a curve goes lower.
const COVERAGE_FLOOR: f64 = 0.5;

/// What the chart draws: per step of the stream, each series' value after that step.
#[derive(Debug, Clone, Copy)]
pub struct StreamSeries<'a> {
    /// ACI's coverage over the last `window` images and since the start.
    pub window: &'a [f64],
    pub running: &'a [f64],
    /// The same of the fixed sets.
    pub fixed_window: &'a [f64],
    pub fixed_running: &'a [f64],
    /// ACI's level `α_t` at each step.
    pub levels: &'a [f64],
    /// Images in the window.
    pub window_size: usize,
    /// The target miscoverage.
    pub alpha: f64,
    /// The step (from 0) at which each block after the first begins.
    pub block_starts: &'a [usize],
}

/// Draws the [`StreamSeries`] into `area`.
///
/// # Errors
/// [`PlotError::InvalidFraction`] for a coverage outside `[0, 1]`, an `α` outside `(0, 1)` or a
/// level that is not finite, [`PlotError::AreaTooSmall`] below 40% of the comfortable size,
/// and [`PlotError::Drawing`] when the backend fails.
pub fn adaptive_stream_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &StreamSeries,
    style: &ChartStyle,
) -> Result<(), PlotError> {
    check_fraction("1 − α", 1.0 - series.alpha)?;
    let coverages = [
        series.window,
        series.running,
        series.fixed_window,
        series.fixed_running,
    ];
    for values in coverages {
        for &value in values {
            check_fraction("coverage", value)?;
        }
    }
    if let Some(&level) = series.levels.iter().find(|level| !level.is_finite()) {
        return Err(PlotError::InvalidFraction {
            name: "α_t",
            value: level,
        });
    }
    let metrics = Metrics::fit(style, area.dim_in_pixel(), STREAM_SIZE)?;
    let line = |colour| LegendMark::Line {
        colour,
        width: CURVE_WIDTH,
        dashed: false,
    };
    let window = series.window_size;
    let legend = [
        LegendEntry::new(line(GREEN), format!("ACI, last {window}")),
        LegendEntry::new(line(BLUE), "ACI, since start"),
        LegendEntry::new(line(ORANGE), format!("q̂ fixed, last {window}")),
        LegendEntry::new(line(VERMILLION), "q̂ fixed, since start"),
        LegendEntry::new(
            LegendMark::Line {
                colour: DARK_GREY,
                width: REFERENCE_LINE_WIDTH,
                dashed: true,
            },
            "1 − α and α",
        ),
    ];
    let rest = draw_legend(area, &legend, metrics.px(Y_LABEL_AREA), metrics)?;

    let length = series.levels.len().max(2) as f64;
    let x_range = 0.0..length;
    let lowest = coverages
        .iter()
        .flat_map(|values| values.iter().copied())
        .fold(COVERAGE_FLOOR, f64::min);
    let coverage_range = (10.0 * lowest).floor() / 10.0..1.0;
    let (level_low, level_high) = series
        .levels
        .iter()
        .fold((series.alpha, series.alpha), |(low, high), &level| {
            (low.min(level), high.max(level))
        });
    let level_margin = 0.1 * (level_high - level_low).max(0.01);
    let level_range = (level_low - level_margin)..(level_high + level_margin);

    let count_label = |x: &f64| format!("{}", x.round() + 0.0);
    let percent_label = |y: &f64| percent(*y, 0);
    let level_decimals =
        tick_decimals(level_range.end - level_range.start, HISTOGRAM_Y_TICK_LABELS);
    let level_label = |y: &f64| format!("{:.level_decimals$}", y + 0.0);
    let areas = stacked_areas(&rest, metrics);
    let (top_chart, bottom_chart) = stacked_charts(
        &areas,
        &SharedXAxis {
            range: x_range.clone(),
            tick_labels: TICK_LABELS,
            description: "image of the stream",
            format: &count_label,
        },
        &PanelYAxis {
            range: coverage_range,
            description: "coverage",
            format: &percent_label,
        },
        &PanelYAxis {
            range: level_range,
            description: "α_t",
            format: &level_label,
        },
        metrics,
    )?;
    let top_pixels = PlotPixels::new(&top_chart);
    let bottom_pixels = PlotPixels::new(&bottom_chart);

    let marker = FAINT_GREY.stroke_width(metrics.stroke(REFERENCE_LINE_WIDTH));
    for pixels in [&top_pixels, &bottom_pixels] {
        for &start in series.block_starts {
            draw_vertical(pixels, start as f64, marker, false, metrics)?;
        }
    }
    let reference = DARK_GREY.stroke_width(metrics.stroke(REFERENCE_LINE_WIDTH));
    for (pixels, y) in [
        (&top_pixels, 1.0 - series.alpha),
        (&bottom_pixels, series.alpha),
    ] {
        draw_line(
            &pixels.canvas,
            pixels.point(x_range.start, y),
            pixels.point(x_range.end, y),
            reference,
            true,
            metrics,
        )?;
    }
    let steps = |values: &'_ [f64]| {
        values
            .iter()
            .enumerate()
            .map(|(step, &value)| ((step + 1) as f64, value))
            .collect::<Vec<_>>()
    };
    for (values, colour) in [
        (series.fixed_window, ORANGE),
        (series.window, GREEN),
        (series.fixed_running, VERMILLION),
        (series.running, BLUE),
    ] {
        draw_polyline(&top_pixels, steps(values), colour, metrics)?;
    }
    draw_polyline(&bottom_pixels, steps(series.levels), GREEN, metrics)?;
    Ok(())
}

#[cfg(test)]
#[path = "adaptive_tests.rs"]
mod tests;
