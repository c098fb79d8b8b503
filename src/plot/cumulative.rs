//! The cumulative-differences chart: calibration without bins.
//!
//! * **Cumulative differences** (Tygert, "Cumulative deviation of a subpopulation from the full
//!   population", 2021; Arrieta-Ibarra, Gujral, Tannen, Tygert & Xu, "Metrics of calibration
//!   for probabilistic predictions", JMLR 2022): the images sorted by confidence, the curve
//!   `D_k = (1/n) Σ_{j ≤ k} (y_(j) − c_(j))` against the share `k/n` of images, from `(0, 0)`
//!   (`calibration_estimators::CumulativeDifferences`). A calibrated network's curve wanders
//!   around 0; a steady slope down is overconfidence at those confidences (the slope is the gap
//!   there), up is underconfidence.
//! * Its statistics read off it: the KS error `max_k |D_k|` (Gupta et al., ICLR 2021) as a
//!   vermillion segment from 0 to the curve where it is reached, and Kuiper's range
//!   `max_k D_k − min_k D_k` between two dashed lines.

use super::*;
use crate::calibration_estimators::CumulativeDifferences;

/// Comfortable size of the chart (CSS pixels); smaller areas scale it down.
const CUMULATIVE_SIZE: (f64, f64) = (240.0, 200.0);
/// Smallest span of the difference axis: a curve that stays near 0 still gets readable ticks.
const MIN_DIFFERENCE_SPAN: f64 = 0.01;
/// Width of the KS error's segment and of Kuiper's lines (CSS pixels).
const MARK_WIDTH: f64 = 2.0;

/// Draws the cumulative differences `cumulative` into `area`: the curve against the share of
/// images, the KS error marked where it is reached and Kuiper's range between the highest and
/// the lowest point, with a legend giving both. The difference axis spans the curve and 0, a
/// tenth wider (at least 0.01). Comfortable from about 240×200 CSS pixels.
///
/// # Errors
/// [`PlotError::NotFinite`] for a difference that is not finite, [`PlotError::InvalidScale`],
/// [`PlotError::AreaTooSmall`] below 40% of the comfortable size, and [`PlotError::Drawing`]
/// when the backend fails.
pub fn cumulative_differences_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    cumulative: &CumulativeDifferences,
    style: &ChartStyle,
) -> Result<(), PlotError> {
    if let Some(&value) = cumulative.curve.iter().find(|d| !d.is_finite()) {
        return Err(PlotError::NotFinite {
            name: "cumulative difference",
            value,
        });
    }
    let metrics = Metrics::fit(style, area.dim_in_pixel(), CUMULATIVE_SIZE)?;
    let landmarks = cumulative.landmarks();
    let curve = &cumulative.curve;
    let legend = [
        LegendEntry::new(CURVE_MARK, "accuracy − confidence, summed"),
        LegendEntry::new(
            LegendMark::Line {
                colour: VERMILLION,
                width: MARK_WIDTH,
                dashed: false,
            },
            format!("KS error {:.4}", cumulative.ks_error()),
        ),
        LegendEntry::new(
            LegendMark::Line {
                colour: DARK_GREY,
                width: MARK_WIDTH,
                dashed: true,
            },
            format!("range (Kuiper) {:.4}", cumulative.range()),
        ),
    ];
    let rest = draw_legend(area, &legend, metrics.px(Y_LABEL_AREA), metrics)?;

    let high = curve[landmarks.highest].max(0.0);
    let low = curve[landmarks.lowest].min(0.0);
    let middle = 0.5 * (high + low);
    let half = 0.5 * (Y_HEADROOM * (high - low)).max(MIN_DIFFERENCE_SPAN);
    let mut chart = build_chart(
        &rest,
        0.0..1.0,
        (middle - half)..(middle + half),
        FULL_LAYOUT,
        metrics,
    )?;
    let decimals = tick_decimals(2.0 * half, HISTOGRAM_Y_TICK_LABELS) + 1;
    let format_difference = |y: &f64| format!("{:.decimals$}", y + 0.0);
    let format_share = |x: &f64| percent(*x, 0);
    draw_axes(
        &mut chart,
        &Axes {
            tick_font: TICK_FONT,
            tick_labels: (TICK_LABELS, HISTOGRAM_Y_TICK_LABELS),
            tick_mark: TICK_MARK,
            descriptions: (
                Some("share of images, by confidence"),
                Some("cumulative difference"),
            ),
            x_format: &format_share,
            y_format: &format_difference,
            grid: (true, true),
        },
        metrics,
    )?;
    let pixels = PlotPixels::new(&chart);
    let n = curve.len() as f64;
    let share = |k: usize| (k + 1) as f64 / n;
    let mark = |colour: RGBColor| colour.stroke_width(metrics.stroke(MARK_WIDTH));
    draw_line(
        &pixels.canvas,
        pixels.point(0.0, 0.0),
        pixels.point(1.0, 0.0),
        AXIS_GREY.stroke_width(metrics.stroke(1.0)),
        false,
        metrics,
    )?;
    for k in [landmarks.highest, landmarks.lowest] {
        draw_line(
            &pixels.canvas,
            pixels.point(0.0, curve[k]),
            pixels.point(1.0, curve[k]),
            mark(DARK_GREY),
            true,
            metrics,
        )?;
    }
    let points =
        std::iter::once((0.0, 0.0)).chain(curve.iter().enumerate().map(|(k, &d)| (share(k), d)));
    draw_polyline(&pixels, points, BLUE, metrics)?;
    let gap = landmarks.largest_gap;
    draw_line(
        &pixels.canvas,
        pixels.point(share(gap), 0.0),
        pixels.point(share(gap), curve[gap]),
        mark(VERMILLION),
        false,
        metrics,
    )?;
    Ok(())
}

#[cfg(test)]
#[path = "cumulative_tests.rs"]
mod tests;
