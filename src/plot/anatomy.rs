//! The anatomy chart of the temperature fit: NLL, ECE, smECE and Brier over the slider's range
//! of temperatures (a log axis), on the calibration half (orange) and the evaluation half
//! (blue), each curve's least point as a dot, the slider's T as a grey line and each mistaken
//! fit the reader switched on as a dashed line of its own colour.
//!
//! Four panels share the temperature axis. Each panel's y axis runs from 0 to a little above
//! the largest value its curves take within a factor of 4 of the fitted T, so that the
//! minima stay readable: far colder temperatures send the NLL to tens of nats, and the curves
//! are drawn clipped at the panel's top there.

use super::*;
use crate::temperature_anatomy::{curve_minimum, CurveMinimum, MetricCurves, TemperatureAnatomy};

/// Comfortable size (CSS pixels).
const ANATOMY_SIZE: (f64, f64) = (480.0, 400.0);
/// The temperatures, as a factor of the fitted T, over which each panel's y axis is scaled.
const Y_SCALE_WINDOW: f64 = 4.0;
/// Most tick labels on each panel's log temperature axis (0.1, 1, 10) and on its y axis.
const ANATOMY_TICK_LABELS: (usize, usize) = (3, 4);
/// Width of the slider's line and of the mistakes' lines (CSS pixels).
const MARKER_WIDTH: f64 = 1.5;
/// Radius of a curve's least point (CSS pixels).
const MINIMUM_RADIUS: f64 = 3.5;
/// Room for each panel's title above it, its tick labels and T under it, and its y tick
/// labels (CSS pixels).
const ANATOMY_LAYOUT: ChartLayout<'static> = ChartLayout {
    margin_top: MARGIN_TOP,
    margin_right: MARGIN_RIGHT,
    x_label_area: 34.0,
    y_label_area: 40.0,
    title: None,
};
/// The colours of the mistakes' lines, in the order of the page's switches.
pub const MISTAKE_COLOURS: [RGBColor; 3] = [VERMILLION, PURPLE, GREEN];

/// A vertical dashed line at a temperature, with its legend's label.
#[derive(Clone, Copy, Debug)]
pub struct TemperatureLine<'a> {
    pub temperature: f64,
    pub label: &'a str,
    pub colour: RGBColor,
}

/// The panels' titles, in [`MetricCurves::in_order`]'s order.
const PANEL_TITLES: [&str; 4] = ["NLL", "ECE", "smooth ECE", "Brier"];

/// Draws `anatomy`'s curves into `area` with the slider's `temperature` marked and the
/// `mistakes`' temperatures dashed.
///
/// # Errors
/// [`PlotError::NotFinite`] for a temperature or a curve value that is not a finite number
/// (or curves of another length than the grid), [`PlotError::InvalidScale`],
/// [`PlotError::AreaTooSmall`] below 40% of the comfortable size, and [`PlotError::Drawing`]
/// when the backend fails.
pub fn anatomy_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    anatomy: &TemperatureAnatomy,
    temperature: f64,
    mistakes: &[TemperatureLine],
    style: &ChartStyle,
) -> Result<(), PlotError> {
    let positive = |name: &'static str, value: f64| {
        if value.is_finite() && value > 0.0 {
            Ok(value.log10())
        } else {
            Err(PlotError::NotFinite { name, value })
        }
    };
    let grid: Vec<f64> = anatomy
        .grid
        .iter()
        .map(|&t| positive("temperature", t))
        .collect::<Result<_, _>>()?;
    let (Some(&first), Some(&last)) = (grid.first(), grid.last()) else {
        return Err(PlotError::NoPanels);
    };
    for half in [&anatomy.calibration, &anatomy.evaluation] {
        for values in half.in_order() {
            if values.len() != grid.len() {
                return Err(PlotError::NotFinite {
                    name: "curve length",
                    value: values.len() as f64,
                });
            }
            if let Some(&value) = values.iter().find(|v| !v.is_finite()) {
                return Err(PlotError::NotFinite {
                    name: "curve value",
                    value,
                });
            }
        }
    }
    let slider = positive("slider's temperature", temperature)?;
    let fitted = anatomy.fitted.temperature;
    let metrics = Metrics::fit(style, area.dim_in_pixel(), ANATOMY_SIZE)?;

    let line = |colour, width, dashed| LegendMark::Line {
        colour,
        width,
        dashed,
    };
    let mut legend = vec![
        LegendEntry::new(line(ORANGE, CURVE_WIDTH, false), "calibration half"),
        LegendEntry::new(line(BLUE, CURVE_WIDTH, false), "evaluation half"),
        LegendEntry::new(line(FAINT_GREY, MARKER_WIDTH, false), "this T"),
    ];
    legend.extend(
        mistakes
            .iter()
            .map(|m| LegendEntry::new(line(m.colour, MARKER_WIDTH, true), m.label)),
    );
    let rest = draw_legend(
        area,
        &legend,
        metrics.px(ANATOMY_LAYOUT.y_label_area),
        metrics,
    )?;

    let x_range = first..last;
    let temperature_label = |x: &f64| {
        let t = 10f64.powf(*x);
        format!("{}", (t * 100.0).round() / 100.0)
    };
    let window = (fitted / Y_SCALE_WINDOW)..=(fitted * Y_SCALE_WINDOW);
    let radius = metrics.px_at_least_one(MINIMUM_RADIUS);
    let [calibration, evaluation] =
        [&anatomy.calibration, &anatomy.evaluation].map(MetricCurves::in_order);
    for (metric, (panel, title)) in rest
        .split_evenly((2, 2))
        .iter()
        .zip(PANEL_TITLES)
        .enumerate()
    {
        let halves = [(calibration[metric], ORANGE), (evaluation[metric], BLUE)];
        let top = halves
            .iter()
            .flat_map(|(values, _)| {
                values
                    .iter()
                    .zip(&anatomy.grid)
                    .filter(|(_, t)| window.contains(*t))
                    .map(|(v, _)| *v)
            })
            .fold(0.0, f64::max);
        let y_max = if top > 0.0 { Y_HEADROOM * top } else { 1.0 };
        let layout = ChartLayout {
            title: Some(title),
            ..ANATOMY_LAYOUT
        };
        let mut chart = build_chart(panel, x_range.clone(), 0.0..y_max, layout, metrics)?;
        let decimals = tick_decimals(y_max, ANATOMY_TICK_LABELS.1);
        let y_label = |y: &f64| format!("{:.decimals$}", y + 0.0);
        draw_axes(
            &mut chart,
            &Axes {
                tick_font: PANEL_TICK_FONT,
                tick_labels: ANATOMY_TICK_LABELS,
                tick_mark: TICK_MARK,
                descriptions: (Some("T (log scale)"), None),
                x_format: &temperature_label,
                y_format: &y_label,
                grid: (true, true),
            },
            metrics,
        )?;
        let pixels = PlotPixels::new(&chart);
        let vertical = |x: f64, colour: RGBColor, dashed: bool| {
            let style = colour.stroke_width(metrics.stroke(MARKER_WIDTH));
            draw_vertical(&pixels, x, style, dashed, metrics)
        };
        vertical(slider, FAINT_GREY, false)?;
        for mistake in mistakes {
            vertical(
                positive("mistaken temperature", mistake.temperature)?,
                mistake.colour,
                true,
            )?;
        }
        for (values, colour) in halves {
            let points = grid.iter().zip(values).map(|(&x, &y)| (x, y.min(y_max)));
            draw_polyline(&pixels, points, colour, metrics)?;
            let CurveMinimum { temperature, value } = curve_minimum(&anatomy.grid, values);
            pixels.canvas.draw(&Circle::new(
                pixels.point(temperature.log10(), value.min(y_max)),
                radius,
                colour.filled(),
            ))?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "anatomy_tests.rs"]
mod tests;
