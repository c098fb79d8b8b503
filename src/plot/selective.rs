//! The risk–coverage chart of selective classification.
//!
//! * **Risk–coverage curve**: the error rate among the images kept (selective risk) against the
//!   share kept, images ranked by confidence, one point per distinct confidence
//!   (`selective::risk_coverage_curve`; Geifman & El-Yaniv, NeurIPS 2017). The dashed curve
//!   `risk = α / coverage` is where the answered-and-wrong share, `risk × coverage`, equals the
//!   risk level α that conformal risk control bounds (Angelopoulos et al., 2022); the dot is the
//!   threshold it chose, on the evaluation images.

use super::*;

/// Comfortable size of the chart (CSS pixels); smaller areas scale it down.
const RISK_COVERAGE_SIZE: (f64, f64) = (240.0, 180.0);
/// Points of the dashed `α / coverage` curve.
const BOUNDARY_POINTS: usize = 120;
/// Radius of the operating point's dot (CSS pixels).
const DOT_RADIUS: f64 = 4.0;
/// Width of the dashed boundary (CSS pixels).
const BOUNDARY_WIDTH: f64 = 1.5;
/// Smallest span of the risk axis: a curve of near-zero risk still gets readable ticks.
const MIN_RISK_SPAN: f64 = 0.02;

/// Draws the risk–coverage curve `(coverage, risk)` into `area`, with the dashed boundary
/// `risk = risk_level / coverage` and, if given, the operating point `(coverage, risk)` of a
/// threshold as a vermillion dot. Coverage runs over `[0, 1]`; the risk axis from 0 to a tenth
/// above the curve's largest risk (at least 2%). Points that are not finite are left out; no
/// points draw empty axes with the boundary. Comfortable from about 240×180 CSS pixels.
///
/// # Errors
/// [`PlotError::InvalidFraction`] for a risk level, a point's coverage or risk outside
/// `[0, 1]`, [`PlotError::InvalidScale`], [`PlotError::AreaTooSmall`] below 40% of the
/// comfortable size, and [`PlotError::Drawing`] when the backend fails.
pub fn risk_coverage_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    curve: &[(f64, f64)],
    risk_level: f64,
    operating: Option<(f64, f64)>,
    style: &ChartStyle,
) -> Result<(), PlotError> {
    check_fraction("risk level", risk_level)?;
    for &(coverage, risk) in curve.iter().chain(&operating) {
        check_fraction("coverage", coverage)?;
        check_fraction("selective risk", risk)?;
    }
    let metrics = Metrics::fit(style, area.dim_in_pixel(), RISK_COVERAGE_SIZE)?;
    let mut legend = vec![
        LegendEntry::new(CURVE_MARK, "error among the images kept"),
        LegendEntry::new(
            LegendMark::Line {
                colour: DARK_GREY,
                width: BOUNDARY_WIDTH,
                dashed: true,
            },
            format!("answered and wrong = {}", percent(risk_level, 0)),
        ),
    ];
    if operating.is_some() {
        legend.push(LegendEntry::new(
            LegendMark::Bar(VERMILLION),
            "conformal risk control threshold",
        ));
    }
    let rest = draw_legend(area, &legend, metrics.px(Y_LABEL_AREA), metrics)?;

    let largest = curve
        .iter()
        .chain(&operating)
        .map(|&(_, risk)| risk)
        .fold(0.0, f64::max);
    let risk_high = (Y_HEADROOM * largest).clamp(MIN_RISK_SPAN, 1.0);
    let mut chart = build_chart(&rest, 0.0..1.0, 0.0..risk_high, FULL_LAYOUT, metrics)?;
    let risk_decimals = tick_decimals(100.0 * risk_high, HISTOGRAM_Y_TICK_LABELS);
    let format_risk = |y: &f64| percent(*y, risk_decimals);
    let format_coverage = |x: &f64| percent(*x, 0);
    draw_axes(
        &mut chart,
        &Axes::gridded(
            ("share of images kept", "error among kept"),
            &format_coverage,
            &format_risk,
        ),
        metrics,
    )?;
    let pixels = PlotPixels::new(&chart);
    // risk = α / coverage, from where it enters the axis (coverage = α / risk_high) to 1.
    let start = (risk_level / risk_high).clamp(0.0, 1.0);
    let boundary: Vec<(i32, i32)> = (0..=BOUNDARY_POINTS)
        .map(|i| start + (1.0 - start) * i as f64 / BOUNDARY_POINTS as f64)
        .filter(|&coverage| coverage > 0.0)
        .map(|coverage| pixels.point(coverage, risk_level / coverage))
        .collect();
    pixels.canvas.draw(&DashedPathElement::new(
        boundary,
        metrics.px_at_least_one(DASH.0),
        metrics.px_at_least_one(DASH.1),
        DARK_GREY.stroke_width(metrics.stroke(BOUNDARY_WIDTH)),
    ))?;
    let mut points: Vec<(f64, f64)> = curve
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    draw_polyline(&pixels, points, BLUE, metrics)?;
    if let Some((coverage, risk)) = operating {
        pixels.canvas.draw(&Circle::new(
            pixels.point(coverage, risk),
            metrics.px_at_least_one(DOT_RADIUS),
            VERMILLION.filled(),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "selective_tests.rs"]
mod tests;
