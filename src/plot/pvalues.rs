//! The conformal p-values chart of the LogitNorm lab.
//!
//! * **Sorted p-values against the Benjamini–Hochberg line**: the batch's p-values in
//!   increasing order, `p_(i)` against `i/m`, each a dot coloured by whether its image is a
//!   test image or an OOD image; the dashed line `p = q·i/m`; BH declares OOD every image up
//!   to the last rank whose dot lies on or under the line, marked by a vertical line
//!   (Benjamini & Hochberg, 1995; on conformal p-values, Bates et al., 2023). The window is the
//!   smallest p-values, where BH decides (`lab::pvalues_view`).

use super::*;

/// Comfortable size of the chart (CSS pixels); smaller areas scale it down.
const PVALUES_SIZE: (f64, f64) = (240.0, 180.0);
/// Radius of a p-value's dot (CSS pixels).
const DOT_RADIUS: f64 = 2.0;
/// Width of the BH line and of the discoveries' marker (CSS pixels).
const LINE_WIDTH: f64 = 1.5;

/// What the chart names its two kinds of image.
#[derive(Clone, Copy, Debug)]
pub struct PvalueLabels<'a> {
    pub in_distribution: &'a str,
    pub out_of_distribution: &'a str,
}

/// Draws `points` `(rank/m, p-value, OOD)` into `area` over `[0, x_high] × [0, y_high]`, with
/// the dashed line `p = fdr_level·rank/m` and, with discoveries, a vermillion vertical line at
/// their share `discovered` of the batch. Comfortable from about 240×180 CSS pixels.
///
/// # Errors
/// [`PlotError::InvalidFraction`] for a level, window bound, share or point outside
/// `[0, 1]`, [`PlotError::InvalidScale`], [`PlotError::AreaTooSmall`] below 40% of the
/// comfortable size, and [`PlotError::Drawing`] when the backend fails.
pub fn pvalue_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    points: &[(f64, f64, bool)],
    (x_high, y_high): (f64, f64),
    fdr_level: f64,
    discovered: Option<f64>,
    labels: PvalueLabels,
    style: &ChartStyle,
) -> Result<(), PlotError> {
    check_fraction("FDR level", fdr_level)?;
    check_fraction("rank share", x_high)?;
    check_fraction("p-value", y_high)?;
    for &(share, pvalue, _) in points {
        check_fraction("rank share", share)?;
        check_fraction("p-value", pvalue)?;
    }
    if let Some(share) = discovered {
        check_fraction("share declared OOD", share)?;
    }
    let metrics = Metrics::fit(style, area.dim_in_pixel(), PVALUES_SIZE)?;
    let mut legend = vec![
        LegendEntry::new(LegendMark::Bar(BLUE), labels.in_distribution),
        LegendEntry::new(LegendMark::Bar(ORANGE), labels.out_of_distribution),
        LegendEntry::new(
            LegendMark::Line {
                colour: DARK_GREY,
                width: LINE_WIDTH,
                dashed: true,
            },
            format!("BH line, q = {}", percent(fdr_level, 0)),
        ),
    ];
    if discovered.is_some() {
        legend.push(LegendEntry::new(
            LegendMark::Line {
                colour: VERMILLION,
                width: LINE_WIDTH,
                dashed: false,
            },
            "declared OOD up to here",
        ));
    }
    let rest = draw_legend(area, &legend, metrics.px(Y_LABEL_AREA), metrics)?;
    let (x_high, y_high) = (x_high.max(f64::EPSILON), y_high.max(f64::EPSILON));
    let mut chart = build_chart(&rest, 0.0..x_high, 0.0..y_high, FULL_LAYOUT, metrics)?;
    let x_decimals = tick_decimals(100.0 * x_high, TICK_LABELS);
    // p-values are printed as they are, down to 2·q·5% = 0.001: the decimals of a tick step.
    let y_step = y_high / HISTOGRAM_Y_TICK_LABELS as f64;
    let y_decimals = (-y_step.log10()).ceil().clamp(1.0, 6.0) as usize;
    let format_rank = |x: &f64| percent(*x, x_decimals);
    let format_pvalue = |y: &f64| format!("{:.*}", y_decimals, y + 0.0);
    draw_axes(
        &mut chart,
        &Axes::gridded(
            ("rank ÷ batch size, smallest p first", "p-value"),
            &format_rank,
            &format_pvalue,
        ),
        metrics,
    )?;
    let pixels = PlotPixels::new(&chart);
    draw_line(
        &pixels.canvas,
        pixels.point(0.0, 0.0),
        pixels.point(x_high, fdr_level * x_high),
        DARK_GREY.stroke_width(metrics.stroke(LINE_WIDTH)),
        true,
        metrics,
    )?;
    if let Some(share) = discovered {
        draw_vertical(
            &pixels,
            share,
            VERMILLION.stroke_width(metrics.stroke(LINE_WIDTH)),
            false,
            metrics,
        )?;
    }
    let radius = metrics.px_at_least_one(DOT_RADIUS);
    for &(share, pvalue, out_of_distribution) in points {
        let colour = if out_of_distribution { ORANGE } else { BLUE };
        pixels.canvas.draw(&Circle::new(
            pixels.point(share, pvalue),
            radius,
            colour.filled(),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "pvalues_tests.rs"]
mod tests;
