//! The shift lab's chart: metrics of the evaluation half over a corruption's severity, with T
//! and q̂ kept from the clean calibration half and refitted on the corrupted one.
//!
//! Two panels share the severity axis (0 = the clean images): on top the shares — accuracy,
//! ECE, and coverage both ways over the dashed `1 − α` line; below, the average set size both
//! ways. Only the severities evaluated so far are drawn, each as a dot, joined in order; the
//! severity shown on the page is marked by a vertical line in both panels.

use super::*;

/// Comfortable size (CSS pixels).
const SEVERITY_SIZE: (f64, f64) = (240.0, 260.0);
/// Room left and right of the first and last severity, in severities.
const SEVERITY_PADDING: f64 = 0.3;
const REFERENCE_LINE_WIDTH: f64 = 1.5;
/// Radius of the dot at each evaluated severity (CSS pixels).
const DOT_RADIUS: f64 = 3.0;

/// A line of the chart: its colour and the value it draws of each point.
type Series = (RGBColor, fn(&SeverityPoint) -> f64);

/// One evaluated severity, as the chart draws it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeverityPoint {
    pub severity: u8,
    pub accuracy: f64,
    /// ECE with T from the clean calibration half.
    pub ece: f64,
    /// Coverage and average set size with T and q̂ from the clean calibration half.
    pub coverage_kept: f64,
    pub size_kept: f64,
    /// The same, refitted on the corrupted calibration half.
    pub coverage_refit: f64,
    pub size_refit: f64,
}

/// Draws [`SeverityPoint`]s of severities `0..=max_severity` into `area`, with the `target`
/// coverage `1 − α` dashed and `current` severity marked.
///
/// # Errors
/// [`PlotError::InvalidFraction`] for a share outside `[0, 1]` or a negative set size,
/// [`PlotError::InvalidScale`], [`PlotError::AreaTooSmall`] below 40% of the comfortable size,
/// and [`PlotError::Drawing`] when the backend fails.
pub fn severity_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    points: &[SeverityPoint],
    max_severity: u8,
    target: f64,
    current: u8,
    style: &ChartStyle,
) -> Result<(), PlotError> {
    check_fraction("1 − α", target)?;
    for point in points {
        check_fraction("accuracy", point.accuracy)?;
        check_fraction("ECE", point.ece)?;
        check_fraction("coverage", point.coverage_kept)?;
        check_fraction("coverage after recalibration", point.coverage_refit)?;
        for size in [point.size_kept, point.size_refit] {
            if !(size >= 0.0 && size.is_finite()) {
                return Err(PlotError::InvalidFraction {
                    name: "average set size",
                    value: size,
                });
            }
        }
    }
    let mut points = points.to_vec();
    points.sort_by_key(|point| point.severity);
    let metrics = Metrics::fit(style, area.dim_in_pixel(), SEVERITY_SIZE)?;
    let line = |colour| LegendMark::Line {
        colour,
        width: CURVE_WIDTH,
        dashed: false,
    };
    let legend = [
        LegendEntry::new(line(BLUE), "accuracy"),
        LegendEntry::new(line(VERMILLION), "ECE"),
        LegendEntry::new(line(ORANGE), "T, q̂ from clean images"),
        LegendEntry::new(line(GREEN), "T, q̂ refitted on shifted"),
        LegendEntry::new(
            LegendMark::Line {
                colour: DARK_GREY,
                width: REFERENCE_LINE_WIDTH,
                dashed: true,
            },
            "1 − α",
        ),
    ];
    let rest = draw_legend(area, &legend, metrics.px(Y_LABEL_AREA), metrics)?;

    let x_range = -SEVERITY_PADDING..(f64::from(max_severity.max(1)) + SEVERITY_PADDING);
    let largest_size = points
        .iter()
        .map(|point| point.size_kept.max(point.size_refit))
        .fold(1.0, f64::max);
    let size_range = 0.0..Y_HEADROOM * largest_size;

    let whole = |x: &f64| {
        if (x - x.round()).abs() < 1e-9 {
            format!("{}", x.round() + 0.0)
        } else {
            String::new()
        }
    };
    let percent_label = |y: &f64| format!("{:.0}%", 100.0 * y);
    let size_decimals = if size_range.end < 5.0 { 1 } else { 0 };
    let size_label = |y: &f64| format!("{:.size_decimals$}", y + 0.0);
    let areas = stacked_areas(&rest, metrics);
    let (top_chart, bottom_chart) = stacked_charts(
        &areas,
        &SharedXAxis {
            range: x_range.clone(),
            tick_labels: usize::from(max_severity) + 1,
            description: "severity (0 = clean)",
            format: &whole,
        },
        &PanelYAxis {
            range: 0.0..1.0,
            description: "share",
            format: &percent_label,
        },
        &PanelYAxis {
            range: size_range,
            description: "avg set size",
            format: &size_label,
        },
        metrics,
    )?;
    let top_pixels = PlotPixels::new(&top_chart);
    draw_line(
        &top_pixels.canvas,
        top_pixels.point(x_range.start, target),
        top_pixels.point(x_range.end, target),
        DARK_GREY.stroke_width(metrics.stroke(REFERENCE_LINE_WIDTH)),
        true,
        metrics,
    )?;
    let bottom_pixels = PlotPixels::new(&bottom_chart);

    let marker = FAINT_GREY.stroke_width(metrics.stroke(REFERENCE_LINE_WIDTH));
    let current = f64::from(current);
    for pixels in [&top_pixels, &bottom_pixels] {
        draw_vertical(pixels, current, marker, false, metrics)?;
    }

    let top_series: [Series; 4] = [
        (BLUE, |p| p.accuracy),
        (VERMILLION, |p| p.ece),
        (ORANGE, |p| p.coverage_kept),
        (GREEN, |p| p.coverage_refit),
    ];
    let bottom_series: [Series; 2] = [(ORANGE, |p| p.size_kept), (GREEN, |p| p.size_refit)];
    let radius = metrics.px_at_least_one(DOT_RADIUS);
    for (pixels, series) in [
        (&top_pixels, &top_series[..]),
        (&bottom_pixels, &bottom_series[..]),
    ] {
        for &(colour, value) in series {
            let line = points.iter().map(|p| (f64::from(p.severity), value(p)));
            draw_polyline(pixels, line.clone(), colour, metrics)?;
            for (x, y) in line {
                pixels
                    .canvas
                    .draw(&Circle::new(pixels.point(x, y), radius, colour.filled()))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "shift_tests.rs"]
mod tests;
