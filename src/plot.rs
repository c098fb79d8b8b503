//! Charts that show miscalibration: the reliability diagram, the confidence histogram under it,
//! and classwise reliability diagrams as small multiples.
//!
//! # What it draws
//! * **Reliability diagram** (DeGroot & Fienberg 1983; Niculescu-Mizil & Caruana, ICML 2005;
//!   laid out as in Guo et al., "On Calibration of Modern Neural Networks", ICML 2017, fig. 1):
//!   confidence on x, accuracy on y, both on `[0, 1]`. Each non-empty bin is a bar over
//!   `[lower, upper]` as tall as the bin's accuracy; the gap between the bar top and the bin's
//!   mean confidence is shaded, translucent and hatched, so it reads without colour. A
//!   perfectly calibrated model has `acc_b = conf_b`: its bars end on the dashed diagonal, and
//!   ECE is the count-weighted mean height of the gaps. Empty bins are drawn as empty (a faint
//!   dotted outline at the axis), never as zero-height bars (`shared/REFERENCE.md`).
//!   Equal-mass bins have data-dependent bounds and can be very narrow near confidence 1, so
//!   every bar is at least [`MIN_BAR_WIDTH`] CSS pixels wide.
//! * **Confidence histogram**: the share of examples per equal-width confidence bin, with the
//!   accuracy (solid) and the mean confidence (dashed) as vertical lines and the gap between
//!   them shaded like the diagram's gaps — an overconfident network has its mean confidence to
//!   the right of its accuracy.
//! * **Classwise reliability** (Kull et al., NeurIPS 2019): one small diagram per class, class
//!   `k` binned on its own probability `p_k` with "accuracy" the fraction of bin members
//!   labelled `k` (see `calibration::classwise_bins`).
//!
//! # Backends and scale
//! Every function is generic over plotters' [`DrawingBackend`]: the same code draws SVG
//! natively (tests, README figures) and on an `HtmlCanvasElement` through plotters-canvas in
//! the browser. Sizes are given in CSS pixels and multiplied by [`ChartStyle::scale`] (the
//! page's `devicePixelRatio`), so text and lines keep their size on screen and stay crisp.
//! When the drawing area is smaller than a chart's comfortable size at that scale, the scale
//! is reduced to fit; below [`MIN_FIT`] of that size the chart refuses with
//! [`PlotError::AreaTooSmall`].
//!
//! Colours are the colour-blind-safe palette of Okabe & Ito (2008), "Color Universal Design".

use std::f64::consts::SQRT_2;

use plotters::chart::{ChartBuilder, ChartContext};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::drawing::{DrawingArea, DrawingAreaErrorKind};
use plotters::element::{DashedPathElement, PathElement, Rectangle};
use plotters::prelude::{Cartesian2d, DrawingBackend};
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{
    Color, FontFamily, FontTransform, IntoFont, RGBColor, ShapeStyle, TextStyle, TRANSPARENT,
};
use thiserror::Error;

use crate::calibration::Bin;

/// Okabe–Ito blue `#0072B2`: reliability bars, the accuracy line.
pub const BLUE: RGBColor = RGBColor(0x00, 0x72, 0xB2);
/// Okabe–Ito orange `#E69F00`: the mean-confidence line.
pub const ORANGE: RGBColor = RGBColor(0xE6, 0x9F, 0x00);
/// Okabe–Ito sky blue `#56B4E9`.
pub const SKY_BLUE: RGBColor = RGBColor(0x56, 0xB4, 0xE9);
/// Okabe–Ito bluish green `#009E73`.
pub const GREEN: RGBColor = RGBColor(0x00, 0x9E, 0x73);
/// Okabe–Ito vermillion `#D55E00`: calibration gaps.
pub const VERMILLION: RGBColor = RGBColor(0xD5, 0x5E, 0x00);
/// Okabe–Ito reddish purple `#CC79A7`.
pub const PURPLE: RGBColor = RGBColor(0xCC, 0x79, 0xA7);
/// Okabe–Ito yellow `#F0E442`.
pub const YELLOW: RGBColor = RGBColor(0xF0, 0xE4, 0x42);
/// Text: titles, tick labels, axis descriptions, legends.
pub const TEXT_GREY: RGBColor = RGBColor(0x33, 0x33, 0x33);
/// The perfect-calibration diagonal and the outlines of bars.
pub const DARK_GREY: RGBColor = RGBColor(0x40, 0x40, 0x40);
/// Axis lines and tick marks.
pub const AXIS_GREY: RGBColor = RGBColor(0x66, 0x66, 0x66);
/// Histogram bars.
pub const BAR_GREY: RGBColor = RGBColor(0xBB, 0xBB, 0xBB);
/// The dotted outline of an empty bin.
pub const FAINT_GREY: RGBColor = RGBColor(0xA0, 0xA0, 0xA0);
/// Grid lines.
pub const GRID_GREY: RGBColor = RGBColor(0xE6, 0xE6, 0xE6);

/// Narrowest bar, in CSS pixels, so that a narrow equal-mass bin stays visible.
pub const MIN_BAR_WIDTH: f64 = 3.0;
/// Smallest fraction of a chart's comfortable size (in CSS pixels) it will draw in.
pub const MIN_FIT: f64 = 0.4;

/// Opacity of the gap shading.
const GAP_OPACITY: f64 = 0.3;
/// Distance between hatch lines, measured across them (CSS pixels).
const HATCH_SPACING: f64 = 5.0;
/// Height of the dotted outline marking an empty bin (CSS pixels).
const EMPTY_BIN_MARK_HEIGHT: f64 = 8.0;
/// Dash and space of the diagonal and the mean-confidence line (CSS pixels).
const DASH: (f64, f64) = (6.0, 4.0);
/// Dot and space of an empty bin's outline (CSS pixels).
const DOT: (f64, f64) = (1.5, 2.5);

/// Font sizes (CSS pixels).
const TICK_FONT: f64 = 12.0;
const DESCRIPTION_FONT: f64 = 13.0;
const LEGEND_FONT: f64 = 12.0;
const PANEL_TITLE_FONT: f64 = 11.0;
const PANEL_TICK_FONT: f64 = 9.0;

/// Chart layout (CSS pixels).
const MARGIN_TOP: f64 = 6.0;
const MARGIN_RIGHT: f64 = 14.0;
const X_LABEL_AREA: f64 = 40.0;
const Y_LABEL_AREA: f64 = 46.0;
const TICK_MARK: f64 = 4.0;
const PANEL_MARGIN: f64 = 3.0;
const PANEL_X_LABEL_AREA: f64 = 14.0;
const PANEL_Y_LABEL_AREA: f64 = 22.0;
const PANEL_TICK_MARK: f64 = 2.0;
/// Width or height of the strip holding a shared axis description of the small multiples.
const SHARED_DESCRIPTION_STRIP: f64 = 18.0;

/// Legend layout (CSS pixels).
const SWATCH_WIDTH: f64 = 18.0;
const SWATCH_HEIGHT: f64 = 10.0;
const SWATCH_TEXT_GAP: f64 = 4.0;
const LEGEND_ENTRY_GAP: f64 = 12.0;
const LEGEND_ROW_HEIGHT: f64 = 18.0;
const LEGEND_PADDING: f64 = 4.0;

/// Comfortable sizes (CSS pixels) of each chart; smaller areas scale the chart down.
const DIAGRAM_SIZE: (f64, f64) = (240.0, 220.0);
const HISTOGRAM_SIZE: (f64, f64) = (240.0, 160.0);
const PANEL_SIZE: (f64, f64) = (84.0, 84.0);
/// Height the legend of the small multiples may take at their comfortable size.
const CLASSWISE_LEGEND_ALLOWANCE: f64 = 40.0;

/// Most tick labels on the full-size axes (0, 0.2, …, 1), on the histogram's short y axis, and
/// on the small multiples (0, 0.5, 1).
const TICK_LABELS: usize = 6;
const HISTOGRAM_Y_TICK_LABELS: usize = 4;
const PANEL_TICK_LABELS: usize = 3;

/// How a chart is drawn on a device.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChartStyle {
    /// Device pixels per CSS pixel: the page sizes canvases at CSS size × `devicePixelRatio`
    /// and passes the ratio here, so that fonts and line widths scale and charts are crisp.
    pub scale: f64,
}

impl Default for ChartStyle {
    /// One device pixel per CSS pixel, as for SVG files.
    fn default() -> Self {
        Self { scale: 1.0 }
    }
}

/// Why a chart was not drawn.
#[derive(Debug, Error)]
pub enum PlotError {
    /// The backend failed (a canvas call, a write); the message is the backend's.
    #[error("drawing failed: {0}")]
    Drawing(String),
    /// [`ChartStyle::scale`] is zero, negative, NaN or infinite.
    #[error("the device-pixel scale must be a positive finite number, got {0}")]
    InvalidScale(f64),
    /// The drawing area is too small for the chart.
    #[error(
        "the drawing area is {width}x{height} px; this chart needs at least \
         {min_width}x{min_height} px"
    )]
    AreaTooSmall {
        width: u32,
        height: u32,
        min_width: u32,
        min_height: u32,
    },
    /// A bin has a bound, confidence or accuracy outside `[0, 1]` (or NaN), or `lower > upper`.
    #[error(
        "bin {index} is not a reliability bin (every value in [0, 1], lower <= upper): {bin:?}"
    )]
    InvalidBin { index: usize, bin: Bin },
    /// Like [`PlotError::InvalidBin`], for a bin of one class of the small multiples.
    #[error(
        "bin {index} of class {class} is not a reliability bin (every value in [0, 1], \
         lower <= upper): {bin:?}"
    )]
    InvalidClassBin {
        class: usize,
        index: usize,
        bin: Bin,
    },
    /// A summary value that must be a fraction is NaN or outside `[0, 1]`.
    #[error("the {name} must be a number in [0, 1], got {value}")]
    InvalidFraction { name: &'static str, value: f64 },
    /// The small multiples got a different number of bin lists and class names.
    #[error("{bins} classes of bins were given with {names} class names")]
    ClassCountMismatch { bins: usize, names: usize },
    /// The small multiples got no classes.
    #[error("there are no classes to draw")]
    NoClasses,
}

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for PlotError {
    fn from(error: DrawingAreaErrorKind<E>) -> Self {
        Self::Drawing(error.to_string())
    }
}

/// A chart on `[0, 1] × [0, y_max]` in data coordinates.
type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;
/// The plotting area of a [`Chart`].
type PlotArea<DB> = DrawingArea<DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Device-pixel sizes of one chart: CSS sizes times the scale actually used.
#[derive(Clone, Copy, Debug)]
struct Metrics {
    /// Device pixels per CSS pixel: the requested scale, reduced when the area is small.
    unit: f64,
}

impl Metrics {
    /// The metrics for drawing a chart whose comfortable size is `comfortable` CSS pixels in
    /// an area of `(width, height)` device pixels.
    fn fit(
        style: &ChartStyle,
        (width, height): (u32, u32),
        comfortable: (f64, f64),
    ) -> Result<Self, PlotError> {
        if !(style.scale.is_finite() && style.scale > 0.0) {
            return Err(PlotError::InvalidScale(style.scale));
        }
        let fit = (f64::from(width) / comfortable.0).min(f64::from(height) / comfortable.1);
        if fit < MIN_FIT {
            return Err(PlotError::AreaTooSmall {
                width,
                height,
                min_width: (comfortable.0 * MIN_FIT).ceil() as u32,
                min_height: (comfortable.1 * MIN_FIT).ceil() as u32,
            });
        }
        Ok(Self {
            unit: style.scale.min(fit),
        })
    }

    /// A length of `css` CSS pixels in whole device pixels.
    fn px(self, css: f64) -> i32 {
        (css * self.unit).round() as i32
    }

    /// Like [`Metrics::px`], at least 1.
    fn px_at_least_one(self, css: f64) -> i32 {
        self.px(css).max(1)
    }

    /// A line width of `css` CSS pixels, at least one device pixel.
    fn stroke(self, css: f64) -> u32 {
        (css * self.unit).round().max(1.0) as u32
    }

    /// A sans-serif text style of `css` CSS pixels.
    fn font(self, css: f64, colour: &'static RGBColor) -> TextStyle<'static> {
        (FontFamily::SansSerif, css * self.unit)
            .into_font()
            .color(colour)
    }
}

/// A rectangle in device pixels, relative to the area it is drawn on; `left <= right` and
/// `top <= bottom`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct PixelRect {
    left: i32,
    top: i32,
    right: i32,
    bottom: i32,
}

impl PixelRect {
    /// The rectangle with corners `a` and `b`, in any order.
    fn spanning(a: (i32, i32), b: (i32, i32)) -> Self {
        Self {
            left: a.0.min(b.0),
            top: a.1.min(b.1),
            right: a.0.max(b.0),
            bottom: a.1.max(b.1),
        }
    }

    /// The corners, clockwise from the top-left, and the top-left again.
    fn closed_outline(self) -> Vec<(i32, i32)> {
        vec![
            (self.left, self.top),
            (self.right, self.top),
            (self.right, self.bottom),
            (self.left, self.bottom),
            (self.left, self.top),
        ]
    }
}

/// Segments of 45° hatching (`/`) clipped to `rect`, `spacing` pixels apart across the lines.
/// The lines are `x + y = k·spacing·√2` on the area's pixel grid, so the hatching of
/// neighbouring rectangles lines up.
fn hatch_segments(rect: PixelRect, spacing: f64) -> Vec<[(i32, i32); 2]> {
    let step = spacing.max(1.0) * SQRT_2;
    let (left, top) = (f64::from(rect.left), f64::from(rect.top));
    let (right, bottom) = (f64::from(rect.right), f64::from(rect.bottom));
    let first = ((left + top) / step).ceil() as i64;
    let last = ((right + bottom) / step).floor() as i64;
    (first..=last)
        .filter_map(|k| {
            let sum = k as f64 * step;
            // On the line y = sum − x; clip x so that both x and y stay inside the rectangle.
            let start = left.max(sum - bottom);
            let end = right.min(sum - top);
            let from = (start.round() as i32, (sum - start).round() as i32);
            let to = (end.round() as i32, (sum - end).round() as i32);
            (to.0 > from.0).then_some([from, to])
        })
        .collect()
}

/// The line of gap hatching and outlines.
fn gap_line(metrics: Metrics) -> ShapeStyle {
    VERMILLION.stroke_width(metrics.stroke(0.75))
}

/// Shades a calibration gap: translucent vermillion, hatched.
fn shade_gap<DB: DrawingBackend>(
    canvas: &DrawingArea<DB, Shift>,
    rect: PixelRect,
    metrics: Metrics,
) -> Result<(), PlotError> {
    canvas.draw(&Rectangle::new(
        [(rect.left, rect.top), (rect.right, rect.bottom)],
        VERMILLION.mix(GAP_OPACITY).filled(),
    ))?;
    for segment in hatch_segments(rect, metrics.unit * HATCH_SPACING) {
        canvas.draw(&PathElement::new(segment.to_vec(), gap_line(metrics)))?;
    }
    Ok(())
}

/// Draws a calibration gap: shaded and outlined.
fn draw_gap<DB: DrawingBackend>(
    canvas: &DrawingArea<DB, Shift>,
    rect: PixelRect,
    metrics: Metrics,
) -> Result<(), PlotError> {
    shade_gap(canvas, rect, metrics)?;
    canvas.draw(&PathElement::new(rect.closed_outline(), gap_line(metrics)))?;
    Ok(())
}

/// Draws a bar: filled with `colour`, outlined in dark grey.
fn draw_bar<DB: DrawingBackend>(
    canvas: &DrawingArea<DB, Shift>,
    rect: PixelRect,
    colour: RGBColor,
    metrics: Metrics,
) -> Result<(), PlotError> {
    canvas.draw(&Rectangle::new(
        [(rect.left, rect.top), (rect.right, rect.bottom)],
        colour.filled(),
    ))?;
    canvas.draw(&PathElement::new(
        rect.closed_outline(),
        DARK_GREY.stroke_width(metrics.stroke(0.75)),
    ))?;
    Ok(())
}

/// Draws the dotted outline that marks an empty bin.
fn draw_empty_bin<DB: DrawingBackend>(
    canvas: &DrawingArea<DB, Shift>,
    rect: PixelRect,
    metrics: Metrics,
) -> Result<(), PlotError> {
    canvas.draw(&DashedPathElement::new(
        rect.closed_outline(),
        metrics.px_at_least_one(DOT.0),
        metrics.px_at_least_one(DOT.1),
        FAINT_GREY.stroke_width(metrics.stroke(1.0)),
    ))?;
    Ok(())
}

/// Draws a straight line from `from` to `to`, dashed or solid.
fn draw_line<DB: DrawingBackend>(
    canvas: &DrawingArea<DB, Shift>,
    from: (i32, i32),
    to: (i32, i32),
    style: ShapeStyle,
    dashed: bool,
    metrics: Metrics,
) -> Result<(), PlotError> {
    if dashed {
        canvas.draw(&DashedPathElement::new(
            vec![from, to],
            metrics.px_at_least_one(DASH.0),
            metrics.px_at_least_one(DASH.1),
            style,
        ))?;
    } else {
        canvas.draw(&PathElement::new(vec![from, to], style))?;
    }
    Ok(())
}

/// What a legend entry's swatch shows.
#[derive(Clone, Copy, Debug)]
enum LegendMark {
    /// A bar filled with the colour.
    Bar(RGBColor),
    /// A calibration gap.
    Gap,
    /// A line of the colour and width (CSS pixels), dashed or solid.
    Line {
        colour: RGBColor,
        width: f64,
        dashed: bool,
    },
    /// The outline of an empty bin.
    EmptyBin,
}

/// One entry of a legend.
#[derive(Clone, Debug)]
struct LegendEntry {
    mark: LegendMark,
    label: String,
}

impl LegendEntry {
    fn new(mark: LegendMark, label: impl Into<String>) -> Self {
        Self {
            mark,
            label: label.into(),
        }
    }
}

/// Draws a legend strip across the top of `area`, entries left to right from `inset` pixels
/// and wrapping onto new rows, and returns the area below it. The strip takes at most a
/// third of the area's height.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[LegendEntry],
    inset: i32,
    metrics: Metrics,
) -> Result<DrawingArea<DB, Shift>, PlotError> {
    let font = metrics.font(LEGEND_FONT, &TEXT_GREY);
    let (width, height) = area.dim_in_pixel();
    let (swatch_width, swatch_height) = (metrics.px(SWATCH_WIDTH), metrics.px(SWATCH_HEIGHT));
    let text_gap = metrics.px(SWATCH_TEXT_GAP);
    let entry_gap = metrics.px(LEGEND_ENTRY_GAP);
    let row_height = metrics.px(LEGEND_ROW_HEIGHT);
    let padding = metrics.px(LEGEND_PADDING);

    let mut positions = Vec::with_capacity(entries.len());
    let (mut x, mut row) = (inset, 0);
    for entry in entries {
        let (text_width, _) = area.estimate_text_size(&entry.label, &font)?;
        let entry_width = swatch_width + text_gap + text_width as i32;
        if x > inset && x + entry_width > width as i32 {
            row += 1;
            x = inset;
        }
        positions.push((x, row));
        x += entry_width + entry_gap;
    }
    let rows = positions.last().map_or(0, |&(_, row)| row + 1);
    let legend_height = (padding + rows * row_height).min(height as i32 / 3);
    let (legend, rest) = area.split_vertically(legend_height);

    let label_style = font.pos(Pos::new(HPos::Left, VPos::Center));
    for (entry, &(x, row)) in entries.iter().zip(&positions) {
        let centre = padding + row * row_height + row_height / 2;
        let swatch = PixelRect::spanning(
            (x, centre - swatch_height / 2),
            (x + swatch_width, centre + swatch_height / 2),
        );
        match entry.mark {
            LegendMark::Bar(colour) => draw_bar(&legend, swatch, colour, metrics)?,
            LegendMark::Gap => draw_gap(&legend, swatch, metrics)?,
            LegendMark::Line {
                colour,
                width,
                dashed,
            } => draw_line(
                &legend,
                (swatch.left, centre),
                (swatch.right, centre),
                colour.stroke_width(metrics.stroke(width)),
                dashed,
                metrics,
            )?,
            LegendMark::EmptyBin => draw_empty_bin(&legend, swatch, metrics)?,
        }
        legend.draw_text(
            &entry.label,
            &label_style,
            (x + swatch_width + text_gap, centre),
        )?;
    }
    Ok(rest)
}

/// Pixel positions inside a chart's plotting area.
struct PlotPixels<'a, DB: DrawingBackend> {
    plot: &'a PlotArea<DB>,
    /// The plotting area addressed in pixels from its top-left corner.
    canvas: DrawingArea<DB, Shift>,
}

impl<'a, DB: DrawingBackend> PlotPixels<'a, DB> {
    fn new(chart: &'a Chart<'_, DB>) -> Self {
        let plot = chart.plotting_area();
        Self {
            plot,
            canvas: plot.strip_coord_spec(),
        }
    }

    /// The pixel of data point `(x, y)`, relative to the plotting area.
    fn point(&self, x: f64, y: f64) -> (i32, i32) {
        let (px, py) = self.plot.map_coordinate(&(x, y));
        let (base_x, base_y) = self.plot.get_base_pixel();
        (px - base_x, py - base_y)
    }

    /// The pixel columns of `[lower, upper]`, widened about their centre to at least
    /// `min_width` pixels and kept inside the x range `[0, 1]`.
    fn column(&self, lower: f64, upper: f64, min_width: i32) -> (i32, i32) {
        let (mut left, _) = self.point(lower, 0.0);
        let (mut right, _) = self.point(upper, 0.0);
        if right - left < min_width {
            let (axis_left, _) = self.point(0.0, 0.0);
            let (axis_right, _) = self.point(1.0, 0.0);
            left = ((left + right) / 2 - min_width / 2).max(axis_left);
            right = (left + min_width).min(axis_right);
            left = (right - min_width).max(axis_left);
        }
        (left, right)
    }
}

/// Builds a chart on `[0, 1] × [0, y_max]` in `area` with the given label areas and margins.
fn build_chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    y_max: f64,
    layout: ChartLayout,
    metrics: Metrics,
) -> Result<Chart<'a, DB>, PlotError> {
    let mut builder = ChartBuilder::on(area);
    builder
        .margin_top(metrics.px(layout.margin_top))
        .margin_right(metrics.px(layout.margin_right))
        .x_label_area_size(metrics.px(layout.x_label_area))
        .y_label_area_size(metrics.px(layout.y_label_area));
    if let Some(title) = layout.title {
        builder.caption(title, metrics.font(PANEL_TITLE_FONT, &TEXT_GREY));
    }
    Ok(builder.build_cartesian_2d(0.0..1.0, 0.0..y_max)?)
}

/// Where a chart's plotting area sits inside its area (CSS pixels), and its title.
#[derive(Clone, Copy, Debug)]
struct ChartLayout<'a> {
    margin_top: f64,
    margin_right: f64,
    x_label_area: f64,
    y_label_area: f64,
    title: Option<&'a str>,
}

/// The layout of the full-size charts; the diagram and the histogram share it, so their x axes
/// line up when stacked.
const FULL_LAYOUT: ChartLayout<'static> = ChartLayout {
    margin_top: MARGIN_TOP,
    margin_right: MARGIN_RIGHT,
    x_label_area: X_LABEL_AREA,
    y_label_area: Y_LABEL_AREA,
    title: None,
};

/// How the axes of a chart are labelled.
struct Axes<'a> {
    /// Tick label size (CSS pixels), the most tick labels on x and on y, and the tick mark
    /// length (CSS pixels).
    tick_font: f64,
    tick_labels: (usize, usize),
    tick_mark: f64,
    /// Axis descriptions (x, y), if any.
    descriptions: Option<(&'a str, &'a str)>,
    y_format: &'a dyn Fn(&f64) -> String,
}

/// Draws grid, axes, tick labels and axis descriptions.
fn draw_axes<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    axes: &Axes,
    metrics: Metrics,
) -> Result<(), PlotError> {
    let format_x = |x: &f64| format!("{x:.1}");
    let mut mesh = chart.configure_mesh();
    mesh.x_labels(axes.tick_labels.0)
        .y_labels(axes.tick_labels.1)
        .x_label_formatter(&format_x)
        .y_label_formatter(axes.y_format)
        .label_style(metrics.font(axes.tick_font, &TEXT_GREY))
        .axis_desc_style(metrics.font(DESCRIPTION_FONT, &TEXT_GREY))
        .axis_style(AXIS_GREY.stroke_width(metrics.stroke(1.0)))
        .bold_line_style(GRID_GREY.stroke_width(metrics.stroke(1.0)))
        .light_line_style(TRANSPARENT)
        .set_all_tick_mark_size(metrics.px(axes.tick_mark));
    if let Some((x_description, y_description)) = axes.descriptions {
        mesh.x_desc(x_description).y_desc(y_description);
    }
    mesh.draw()?;
    Ok(())
}

/// The first bin that is not a reliability bin, if any.
fn first_invalid_bin(bins: &[Bin]) -> Option<(usize, &Bin)> {
    let unit = 0.0..=1.0;
    bins.iter().enumerate().find(|(_, bin)| {
        !(unit.contains(&bin.lower)
            && unit.contains(&bin.upper)
            && bin.lower <= bin.upper
            && unit.contains(&bin.confidence)
            && unit.contains(&bin.accuracy))
    })
}

fn check_fraction(name: &'static str, value: f64) -> Result<(), PlotError> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(PlotError::InvalidFraction { name, value })
    }
}

/// The legend of a reliability chart; "empty bin" only when some bin is empty.
fn reliability_legend(bar_label: &str, any_empty: bool) -> Vec<LegendEntry> {
    let mut entries = vec![
        LegendEntry::new(LegendMark::Bar(BLUE), bar_label),
        LegendEntry::new(LegendMark::Gap, "gap"),
        LegendEntry::new(
            LegendMark::Line {
                colour: DARK_GREY,
                width: 1.5,
                dashed: true,
            },
            "perfect calibration",
        ),
    ];
    if any_empty {
        entries.push(LegendEntry::new(LegendMark::EmptyBin, "empty bin"));
    }
    entries
}

/// Draws the bars, gaps, empty-bin marks and the diagonal of a reliability chart on `[0, 1]²`.
fn draw_reliability_bins<DB: DrawingBackend>(
    chart: &Chart<'_, DB>,
    bins: &[Bin],
    metrics: Metrics,
) -> Result<(), PlotError> {
    let pixels = PlotPixels::new(chart);
    let min_width = metrics.px_at_least_one(MIN_BAR_WIDTH);
    let columns: Vec<(i32, i32)> = bins
        .iter()
        .map(|bin| pixels.column(bin.lower, bin.upper, min_width))
        .collect();
    let (_, axis_y) = pixels.point(0.0, 0.0);
    let y_of = |value: f64| pixels.point(0.0, value).1;

    for (bin, &(left, right)) in bins.iter().zip(&columns) {
        if bin.count > 0 {
            let bar = PixelRect::spanning((left, axis_y), (right, y_of(bin.accuracy)));
            draw_bar(&pixels.canvas, bar, BLUE, metrics)?;
        }
    }
    // Gaps go over all bars, so that overlapping narrow bars do not hide them.
    for (bin, &(left, right)) in bins.iter().zip(&columns) {
        if bin.count > 0 && bin.accuracy != bin.confidence {
            let gap =
                PixelRect::spanning((left, y_of(bin.accuracy)), (right, y_of(bin.confidence)));
            draw_gap(&pixels.canvas, gap, metrics)?;
        }
    }
    let mark_top = axis_y - metrics.px_at_least_one(EMPTY_BIN_MARK_HEIGHT);
    for (bin, &(left, right)) in bins.iter().zip(&columns) {
        if bin.count == 0 {
            let mark = PixelRect::spanning((left, mark_top), (right, axis_y));
            draw_empty_bin(&pixels.canvas, mark, metrics)?;
        }
    }
    draw_line(
        &pixels.canvas,
        pixels.point(0.0, 0.0),
        pixels.point(1.0, 1.0),
        DARK_GREY.stroke_width(metrics.stroke(1.5)),
        true,
        metrics,
    )
}

/// Draws a reliability diagram of `bins` (top-label bins from
/// `calibration::reliability_bins` or a `CalibrationReport`) into `area`: a legend strip on
/// top, then confidence (x) against accuracy (y) with one blue bar per non-empty bin, the gap
/// to the bin's mean confidence shaded and hatched, a dotted mark for each empty bin and the
/// dashed perfect-calibration diagonal. Comfortable from about 240×220 CSS pixels; meant for
/// 360 to 560 CSS pixels wide.
///
/// # Errors
/// [`PlotError::InvalidScale`], [`PlotError::AreaTooSmall`] below 40% of the comfortable size,
/// [`PlotError::InvalidBin`] for the first bin with a value outside `[0, 1]` or
/// `lower > upper`, and [`PlotError::Drawing`] when the backend fails.
pub fn reliability_diagram<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    bins: &[Bin],
    style: &ChartStyle,
) -> Result<(), PlotError> {
    if let Some((index, bin)) = first_invalid_bin(bins) {
        return Err(PlotError::InvalidBin {
            index,
            bin: bin.clone(),
        });
    }
    let metrics = Metrics::fit(style, area.dim_in_pixel(), DIAGRAM_SIZE)?;
    let any_empty = bins.iter().any(|bin| bin.count == 0);
    let legend = reliability_legend("accuracy", any_empty);
    let rest = draw_legend(area, &legend, metrics.px(Y_LABEL_AREA), metrics)?;
    let mut chart = build_chart(&rest, 1.0, FULL_LAYOUT, metrics)?;
    let format_y = |y: &f64| format!("{y:.1}");
    let axes = Axes {
        tick_font: TICK_FONT,
        tick_labels: (TICK_LABELS, TICK_LABELS),
        tick_mark: TICK_MARK,
        descriptions: Some(("confidence", "accuracy")),
        y_format: &format_y,
    };
    draw_axes(&mut chart, &axes, metrics)?;
    draw_reliability_bins(&chart, bins, metrics)
}

/// Draws the histogram of top-label confidences into `area`: the share of examples in each of
/// the `counts.len()` equal-width bins on `[0, 1]` (counts from
/// `calibration::histogram_counts`) as grey bars, the accuracy as a solid blue line and the
/// mean confidence as a dashed orange line, the gap between them shaded like the reliability
/// diagram's gaps, and a legend with the three values. It shares the diagram's margins, so
/// stacked under it the x axes line up. No counts, or only zeros, draw empty axes.
///
/// # Errors
/// [`PlotError::InvalidFraction`] if `mean_confidence` or `accuracy` is NaN or outside
/// `[0, 1]`, [`PlotError::InvalidScale`], [`PlotError::AreaTooSmall`] below 40% of about
/// 240×160 CSS pixels, and [`PlotError::Drawing`] when the backend fails.
pub fn confidence_histogram<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    counts: &[usize],
    mean_confidence: f64,
    accuracy: f64,
    style: &ChartStyle,
) -> Result<(), PlotError> {
    check_fraction("mean confidence", mean_confidence)?;
    check_fraction("accuracy", accuracy)?;
    let metrics = Metrics::fit(style, area.dim_in_pixel(), HISTOGRAM_SIZE)?;
    let legend = [
        LegendEntry::new(
            LegendMark::Line {
                colour: BLUE,
                width: 2.0,
                dashed: false,
            },
            format!("accuracy {:.1}%", 100.0 * accuracy),
        ),
        LegendEntry::new(
            LegendMark::Line {
                colour: ORANGE,
                width: 2.0,
                dashed: true,
            },
            format!("mean confidence {:.1}%", 100.0 * mean_confidence),
        ),
        LegendEntry::new(
            LegendMark::Gap,
            format!("gap {:.1} pts", 100.0 * (mean_confidence - accuracy).abs()),
        ),
    ];
    let rest = draw_legend(area, &legend, metrics.px(Y_LABEL_AREA), metrics)?;

    let total = counts.iter().map(|&count| count as f64).sum::<f64>();
    let shares: Vec<f64> = counts
        .iter()
        .map(|&count| {
            if total > 0.0 {
                100.0 * count as f64 / total
            } else {
                0.0
            }
        })
        .collect();
    // Headroom above the tallest bar; 1% when every bin is empty.
    let y_max = (1.1 * shares.iter().copied().fold(0.0, f64::max)).max(1.0);
    let mut chart = build_chart(&rest, y_max, FULL_LAYOUT, metrics)?;
    let decimals = if y_max < 5.0 { 1 } else { 0 };
    let format_y = |y: &f64| format!("{y:.decimals$}%");
    let axes = Axes {
        tick_font: TICK_FONT,
        tick_labels: (TICK_LABELS, HISTOGRAM_Y_TICK_LABELS),
        tick_mark: TICK_MARK,
        descriptions: Some(("confidence", "% of examples")),
        y_format: &format_y,
    };
    draw_axes(&mut chart, &axes, metrics)?;

    let pixels = PlotPixels::new(&chart);
    // The gap band goes behind the bars; its edges are the two lines, drawn last.
    if mean_confidence != accuracy {
        let gap = PixelRect::spanning(
            pixels.point(accuracy, 0.0),
            pixels.point(mean_confidence, y_max),
        );
        shade_gap(&pixels.canvas, gap, metrics)?;
    }
    let num_bins = counts.len() as f64;
    for (index, (&count, &share)) in counts.iter().zip(&shares).enumerate() {
        if count > 0 {
            let bar = PixelRect::spanning(
                pixels.point(index as f64 / num_bins, 0.0),
                pixels.point((index + 1) as f64 / num_bins, share),
            );
            draw_bar(&pixels.canvas, bar, BAR_GREY, metrics)?;
        }
    }
    draw_line(
        &pixels.canvas,
        pixels.point(accuracy, 0.0),
        pixels.point(accuracy, y_max),
        BLUE.stroke_width(metrics.stroke(2.0)),
        false,
        metrics,
    )?;
    draw_line(
        &pixels.canvas,
        pixels.point(mean_confidence, 0.0),
        pixels.point(mean_confidence, y_max),
        ORANGE.stroke_width(metrics.stroke(2.0)),
        true,
        metrics,
    )
}

/// Rows and columns of the small multiples: two rows on a wide area, two columns on a tall one.
fn grid_shape(classes: usize, (width, height): (u32, u32)) -> (usize, usize) {
    let across = classes.clamp(1, 2);
    let along = classes.div_ceil(across);
    if width >= height {
        (across, along)
    } else {
        (along, across)
    }
}

/// Draws one small reliability diagram per class into `area`, titled with the class name: two
/// rows of panels when the area is at least as wide as tall (2 × 5 for ten classes), two
/// columns otherwise (5 × 2). Panels have compact axes (ticks at 0, 0.5 and 1) and share one
/// legend and one pair of axis descriptions. `per_class_bins[k]` holds class `k`'s bins from
/// `calibration::classwise_bins`.
///
/// # Errors
/// [`PlotError::ClassCountMismatch`] unless there is one name per class,
/// [`PlotError::NoClasses`] for none, [`PlotError::InvalidClassBin`] for the first invalid
/// bin, [`PlotError::InvalidScale`], [`PlotError::AreaTooSmall`] below 40% of about 84×84 CSS
/// pixels per panel, and [`PlotError::Drawing`] when the backend fails.
pub fn classwise_reliability<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    per_class_bins: &[Vec<Bin>],
    class_names: &[&str],
    style: &ChartStyle,
) -> Result<(), PlotError> {
    if per_class_bins.len() != class_names.len() {
        return Err(PlotError::ClassCountMismatch {
            bins: per_class_bins.len(),
            names: class_names.len(),
        });
    }
    if per_class_bins.is_empty() {
        return Err(PlotError::NoClasses);
    }
    for (class, bins) in per_class_bins.iter().enumerate() {
        if let Some((index, bin)) = first_invalid_bin(bins) {
            return Err(PlotError::InvalidClassBin {
                class,
                index,
                bin: bin.clone(),
            });
        }
    }
    let (rows, columns) = grid_shape(per_class_bins.len(), area.dim_in_pixel());
    let comfortable = (
        columns as f64 * PANEL_SIZE.0 + SHARED_DESCRIPTION_STRIP,
        rows as f64 * PANEL_SIZE.1 + SHARED_DESCRIPTION_STRIP + CLASSWISE_LEGEND_ALLOWANCE,
    );
    let metrics = Metrics::fit(style, area.dim_in_pixel(), comfortable)?;
    let any_empty = per_class_bins.iter().flatten().any(|bin| bin.count == 0);
    let legend = reliability_legend("observed frequency", any_empty);
    let strip = metrics.px(SHARED_DESCRIPTION_STRIP);
    let rest = draw_legend(area, &legend, strip, metrics)?;

    let (y_strip, right) = rest.split_horizontally(strip);
    let (_, right_height) = right.dim_in_pixel();
    let (grid, x_strip) = right.split_vertically(right_height as i32 - strip);
    let description = metrics.font(DESCRIPTION_FONT, &TEXT_GREY);
    let centred = Pos::new(HPos::Center, VPos::Center);
    let (grid_width, grid_height) = grid.dim_in_pixel();
    x_strip.draw_text(
        "predicted probability of the class",
        &description.pos(centred),
        (grid_width as i32 / 2, strip / 2),
    )?;
    y_strip.draw_text(
        "observed frequency",
        &description.transform(FontTransform::Rotate270).pos(centred),
        (strip / 2, grid_height as i32 / 2),
    )?;

    let format_y = |y: &f64| format!("{y:.1}");
    let axes = Axes {
        tick_font: PANEL_TICK_FONT,
        tick_labels: (PANEL_TICK_LABELS, PANEL_TICK_LABELS),
        tick_mark: PANEL_TICK_MARK,
        descriptions: None,
        y_format: &format_y,
    };
    let panels = grid.split_evenly((rows, columns));
    for ((panel, bins), &name) in panels.iter().zip(per_class_bins).zip(class_names) {
        let layout = ChartLayout {
            margin_top: PANEL_MARGIN,
            margin_right: PANEL_MARGIN,
            x_label_area: PANEL_X_LABEL_AREA,
            y_label_area: PANEL_Y_LABEL_AREA,
            title: Some(name),
        };
        let mut chart = build_chart(panel, 1.0, layout, metrics)?;
        draw_axes(&mut chart, &axes, metrics)?;
        draw_reliability_bins(&chart, bins, metrics)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibration::{reliability_bins, Binning};
    use crate::data::FASHION_MNIST_CLASSES;
    use plotters::prelude::{IntoDrawingArea, SVGBackend};

    /// Tolerance, in pixels, on positions compared after rounding to whole pixels.
    const PIXEL_TOLERANCE: i32 = 2;
    /// Legend swatches drawn as filled rectangles of the bar colour and of the gap colour.
    const LEGEND_BAR_SWATCHES: usize = 1;
    const LEGEND_GAP_SWATCHES: usize = 1;

    const BLUE_HEX: &str = "#0072B2";
    const VERMILLION_HEX: &str = "#D55E00";
    const ORANGE_HEX: &str = "#E69F00";
    const DARK_GREY_HEX: &str = "#404040";
    const FAINT_GREY_HEX: &str = "#A0A0A0";
    const BAR_GREY_HEX: &str = "#BBBBBB";

    /// Draws into an SVG string of `size` pixels.
    fn render(
        size: (u32, u32),
        draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), PlotError>,
    ) -> Result<String, PlotError> {
        let mut svg = String::new();
        {
            let area = SVGBackend::with_string(&mut svg, size).into_drawing_area();
            draw(&area)?;
            area.present()?;
        }
        Ok(svg)
    }

    /// The attributes of every `<tag …>` element, in document order.
    fn elements<'a>(svg: &'a str, tag: &str) -> Vec<Vec<(&'a str, &'a str)>> {
        let opening = format!("<{tag} ");
        svg.match_indices(&opening)
            .map(|(start, _)| {
                let rest = &svg[start + opening.len()..];
                let body = &rest[..rest.find('>').unwrap_or(rest.len())];
                body.split('"')
                    .collect::<Vec<_>>()
                    .chunks_exact(2)
                    .map(|pair| (pair[0].trim().trim_end_matches('='), pair[1]))
                    .collect()
            })
            .collect()
    }

    /// The attributes and the content of every `<text>` element, in document order.
    fn texts(svg: &str) -> impl Iterator<Item = (Vec<(&str, &str)>, &str)> {
        elements(svg, "text")
            .into_iter()
            .zip(svg.split("<text ").skip(1))
            .map(|(attributes, body)| {
                let content = body
                    .split_once('>')
                    .and_then(|(_, rest)| rest.split_once("</text>"))
                    .map_or("", |(content, _)| content.trim());
                (attributes, content)
            })
    }

    fn has_text(svg: &str, wanted: &str) -> bool {
        texts(svg).any(|(_, text)| text == wanted)
    }

    fn attribute<'a>(element: &[(&'a str, &'a str)], name: &str) -> Option<&'a str> {
        element
            .iter()
            .find(|(key, _)| *key == name)
            .map(|&(_, value)| value)
    }

    fn number(element: &[(&str, &str)], name: &str) -> i32 {
        attribute(element, name).unwrap().parse().unwrap()
    }

    /// The filled `<rect>` elements of colour `hex`.
    fn filled_rects<'a>(svg: &'a str, hex: &str) -> Vec<Vec<(&'a str, &'a str)>> {
        elements(svg, "rect")
            .into_iter()
            .filter(|rect| attribute(rect, "fill") == Some(hex))
            .collect()
    }

    /// The points of every `<polyline>` stroked in colour `hex`.
    fn polylines(svg: &str, hex: &str) -> Vec<Vec<(i32, i32)>> {
        elements(svg, "polyline")
            .into_iter()
            .filter(|line| attribute(line, "stroke") == Some(hex))
            .map(|line| {
                attribute(&line, "points")
                    .unwrap()
                    .split_whitespace()
                    .map(|point| {
                        let (x, y) = point.split_once(',').unwrap();
                        (x.parse().unwrap(), y.parse().unwrap())
                    })
                    .collect()
            })
            .collect()
    }

    /// The points of the diagonal's dashes: dark grey polylines whose ends differ in x and in
    /// y (bar outlines are closed, the legend's line is horizontal).
    fn diagonal_points(svg: &str) -> Vec<(i32, i32)> {
        polylines(svg, DARK_GREY_HEX)
            .into_iter()
            .filter(|points| {
                let (first, last) = (points[0], points[points.len() - 1]);
                first.0 != last.0 && first.1 != last.1
            })
            .flatten()
            .collect()
    }

    /// The x position of the x-axis tick labelled `label` (x tick labels are centred, y tick
    /// labels are not).
    fn x_tick(svg: &str, label: &str) -> i32 {
        texts(svg)
            .find(|(attributes, text)| {
                *text == label && attribute(attributes, "text-anchor") == Some("middle")
            })
            .map(|(attributes, _)| number(&attributes, "x"))
            .unwrap()
    }

    fn bin(lower: f64, upper: f64, count: usize, confidence: f64, accuracy: f64) -> Bin {
        Bin {
            lower,
            upper,
            count,
            confidence,
            accuracy,
        }
    }

    /// Ten equal-width bins; bins 0, 1 and 4 are empty, bins 5 and 9 perfectly calibrated.
    fn example_bins() -> Vec<Bin> {
        (0..10)
            .map(|b| {
                let (lower, upper) = (b as f64 / 10.0, (b + 1) as f64 / 10.0);
                let confidence = lower + 0.05;
                match b {
                    0 | 1 | 4 => bin(lower, upper, 0, 0.0, 0.0),
                    5 | 9 => bin(lower, upper, 10, confidence, confidence),
                    _ => bin(lower, upper, 10, confidence, confidence - 0.1),
                }
            })
            .collect()
    }

    fn diagram(size: (u32, u32), bins: &[Bin], scale: f64) -> Result<String, PlotError> {
        render(size, |area| {
            reliability_diagram(area, bins, &ChartStyle { scale })
        })
    }

    #[test]
    fn one_bar_per_non_empty_bin() {
        let bins = example_bins();
        let svg = diagram((560, 560), &bins, 1.0).unwrap();
        let non_empty = bins.iter().filter(|bin| bin.count > 0).count();
        assert_eq!(
            filled_rects(&svg, BLUE_HEX).len(),
            non_empty + LEGEND_BAR_SWATCHES
        );
        // Bars are as tall as the accuracy: bin 9 (accuracy 0.95) is 0.95/0.55 as tall as
        // bin 5 (accuracy 0.55).
        let bars = filled_rects(&svg, BLUE_HEX);
        let heights: Vec<i32> = bars[LEGEND_BAR_SWATCHES..]
            .iter()
            .map(|bar| number(bar, "height"))
            .collect();
        // Non-empty bins 2, 3, 5, 6, 7, 8, 9 in order.
        let (bin_5, bin_9) = (heights[2], heights[6]);
        assert!((f64::from(bin_9) / f64::from(bin_5) - 0.95 / 0.55).abs() < 0.02);
        // With equal-mass bins from data: n = 3 < B = 5 leaves two bins empty.
        let bins =
            reliability_bins(&[0.9, 0.6, 0.3], &[true, false, true], 5, Binning::Mass).unwrap();
        let svg = diagram((360, 400), &bins, 1.0).unwrap();
        assert_eq!(filled_rects(&svg, BLUE_HEX).len(), 3 + LEGEND_BAR_SWATCHES);
    }

    #[test]
    fn empty_bins_draw_no_bar_and_a_dotted_mark() {
        let bins: Vec<Bin> = (0..5)
            .map(|b| bin(b as f64 / 5.0, (b + 1) as f64 / 5.0, 0, 0.0, 0.0))
            .collect();
        let svg = diagram((560, 560), &bins, 1.0).unwrap();
        assert_eq!(filled_rects(&svg, BLUE_HEX).len(), LEGEND_BAR_SWATCHES);
        assert_eq!(
            filled_rects(&svg, VERMILLION_HEX).len(),
            LEGEND_GAP_SWATCHES
        );
        assert!(has_text(&svg, "empty bin"));
        // The dotted marks sit on the x axis and together span it from tick 0.0 to tick 1.0.
        let axis_y = diagonal_points(&svg).iter().map(|&(_, y)| y).max().unwrap();
        let mark_top = axis_y - EMPTY_BIN_MARK_HEIGHT as i32 - PIXEL_TOLERANCE;
        let marks: Vec<(i32, i32)> = polylines(&svg, FAINT_GREY_HEX)
            .into_iter()
            .flatten()
            .filter(|&(_, y)| y >= mark_top)
            .collect();
        assert!(marks.iter().all(|&(_, y)| y <= axis_y + PIXEL_TOLERANCE));
        let xs = marks.iter().map(|&(x, _)| x);
        let (marks_left, marks_right) = (xs.clone().min().unwrap(), xs.max().unwrap());
        assert!((marks_left - x_tick(&svg, "0.0")).abs() <= PIXEL_TOLERANCE);
        assert!((marks_right - x_tick(&svg, "1.0")).abs() <= PIXEL_TOLERANCE);
        // Without empty bins there is no mark and no legend entry for them.
        let full: Vec<Bin> = example_bins()
            .into_iter()
            .filter(|bin| bin.count > 0)
            .collect();
        let svg = diagram((560, 560), &full, 1.0).unwrap();
        assert!(polylines(&svg, FAINT_GREY_HEX).is_empty());
        assert!(!has_text(&svg, "empty bin"));
    }

    #[test]
    fn gaps_only_where_accuracy_differs_from_confidence() {
        let bins = example_bins();
        let svg = diagram((560, 560), &bins, 1.0).unwrap();
        let with_gap = bins
            .iter()
            .filter(|bin| bin.count > 0 && bin.accuracy != bin.confidence)
            .count();
        assert_eq!(with_gap, 5);
        let gaps = filled_rects(&svg, VERMILLION_HEX);
        assert_eq!(gaps.len(), with_gap + LEGEND_GAP_SWATCHES);
        // Every gap is 0.1 tall, translucent, and hatched.
        let heights: Vec<i32> = gaps[LEGEND_GAP_SWATCHES..]
            .iter()
            .map(|gap| number(gap, "height"))
            .collect();
        let bar_heights: Vec<i32> = filled_rects(&svg, BLUE_HEX)[LEGEND_BAR_SWATCHES..]
            .iter()
            .map(|bar| number(bar, "height"))
            .collect();
        // Bin 2 has accuracy 0.15: its bar is 1.5 gaps tall (each rounded to whole pixels).
        for &height in &heights {
            assert!((2 * bar_heights[0] - 3 * height).abs() <= 3 * PIXEL_TOLERANCE);
        }
        assert!(gaps
            .iter()
            .all(|gap| attribute(gap, "opacity") == Some("0.3")));
        let hatch_and_outlines = polylines(&svg, VERMILLION_HEX);
        assert!(hatch_and_outlines.len() > 2 * gaps.len());
        assert!(has_text(&svg, "gap"));
        // A perfectly calibrated diagram has no gap outside the legend.
        let calibrated: Vec<Bin> = (0..4)
            .map(|b| {
                let confidence = 0.25 * b as f64 + 0.1;
                bin(
                    0.25 * b as f64,
                    0.25 * (b + 1) as f64,
                    3,
                    confidence,
                    confidence,
                )
            })
            .collect();
        let svg = diagram((360, 360), &calibrated, 1.0).unwrap();
        assert_eq!(
            filled_rects(&svg, VERMILLION_HEX).len(),
            LEGEND_GAP_SWATCHES
        );
    }

    #[test]
    fn diagonal_runs_from_corner_to_corner() {
        let svg = diagram((560, 560), &example_bins(), 1.0).unwrap();
        let points = diagonal_points(&svg);
        assert!(points.len() >= 20, "{} points", points.len());
        let left = points.iter().min_by_key(|point| point.0).unwrap();
        let right = points.iter().max_by_key(|point| point.0).unwrap();
        // Up and to the right at 45° in data space: the plotting area is nearly square here.
        assert!(right.1 < left.1);
        let (run, rise) = (right.0 - left.0, left.1 - right.1);
        assert!(
            run > 300 && (run - rise).abs() < 100,
            "run {run}, rise {rise}"
        );
        // Every dash lies on the line through the two ends.
        for &(x, y) in &points {
            let expected =
                f64::from(left.1) - f64::from(rise) * f64::from(x - left.0) / f64::from(run);
            assert!((f64::from(y) - expected).abs() <= f64::from(PIXEL_TOLERANCE));
        }
        assert!(has_text(&svg, "perfect calibration"));
        assert!(has_text(&svg, "confidence"));
        assert!(has_text(&svg, "accuracy"));
    }

    #[test]
    fn narrow_bins_get_a_visible_width() {
        let bins = vec![
            bin(0.9999, 0.9999, 5, 0.9999, 0.8),
            bin(0.5, 0.5, 5, 0.5, 0.5),
        ];
        for scale in [1.0, 2.0] {
            let svg = diagram((560, 560), &bins, scale).unwrap();
            let bars = filled_rects(&svg, BLUE_HEX);
            assert_eq!(bars.len(), 2 + LEGEND_BAR_SWATCHES);
            for bar in &bars[LEGEND_BAR_SWATCHES..] {
                assert!(f64::from(number(bar, "width")) >= MIN_BAR_WIDTH * scale);
            }
        }
    }

    #[test]
    fn histogram_draws_bars_lines_and_gap() {
        let counts = [0, 0, 1, 3, 0, 6, 10, 20, 60, 900];
        let svg = render((560, 200), |area| {
            confidence_histogram(area, &counts, 0.95, 0.85, &ChartStyle::default())
        })
        .unwrap();
        let bars = filled_rects(&svg, BAR_GREY_HEX);
        assert_eq!(bars.len(), counts.iter().filter(|&&c| c > 0).count());
        // The accuracy line is one solid blue polyline, plus its legend swatch.
        let accuracy_lines = polylines(&svg, BLUE_HEX);
        assert_eq!(accuracy_lines.len(), 2);
        let vertical = &accuracy_lines[1];
        assert_eq!(vertical[0].0, vertical[1].0);
        // The mean-confidence line is dashed, to the right of the accuracy line.
        let dashes = polylines(&svg, ORANGE_HEX);
        assert!(dashes.len() > 5);
        let rightmost_dash = dashes.iter().flatten().map(|&(x, _)| x).max().unwrap();
        assert!(rightmost_dash > vertical[0].0);
        assert_eq!(
            filled_rects(&svg, VERMILLION_HEX).len(),
            1 + LEGEND_GAP_SWATCHES
        );
        for label in [
            "accuracy 85.0%",
            "mean confidence 95.0%",
            "gap 10.0 pts",
            "confidence",
            "% of examples",
        ] {
            assert!(has_text(&svg, label), "{label} missing");
        }
        // Equal summaries: no gap band.
        let svg = render((560, 200), |area| {
            confidence_histogram(area, &counts, 0.9, 0.9, &ChartStyle::default())
        })
        .unwrap();
        assert_eq!(
            filled_rects(&svg, VERMILLION_HEX).len(),
            LEGEND_GAP_SWATCHES
        );
    }

    fn classwise_example() -> Vec<Vec<Bin>> {
        (0..10)
            .map(|class| {
                let mut bins = example_bins();
                // Class k has k more empty bins among the last ones, so every panel differs.
                for bin in bins.iter_mut().rev().take(class / 3) {
                    bin.count = 0;
                }
                bins
            })
            .collect()
    }

    #[test]
    fn classwise_draws_ten_titled_panels() {
        let per_class = classwise_example();
        let non_empty: usize = per_class
            .iter()
            .flatten()
            .filter(|bin| bin.count > 0)
            .count();
        for size in [(900, 420), (360, 900)] {
            let svg = render(size, |area| {
                classwise_reliability(
                    area,
                    &per_class,
                    &FASHION_MNIST_CLASSES,
                    &ChartStyle::default(),
                )
            })
            .unwrap();
            for name in FASHION_MNIST_CLASSES {
                let titles = texts(&svg).filter(|(_, text)| *text == name).count();
                assert_eq!(titles, 1, "{name}");
            }
            assert_eq!(
                filled_rects(&svg, BLUE_HEX).len(),
                non_empty + LEGEND_BAR_SWATCHES
            );
            assert!(has_text(&svg, "predicted probability of the class"));
            // Panels run left to right, then top to bottom: 5 columns when wide, 2 when tall.
            let titles: Vec<(i32, i32)> = texts(&svg)
                .filter(|(_, text)| FASHION_MNIST_CLASSES.contains(text))
                .map(|(attributes, _)| (number(&attributes, "x"), number(&attributes, "y")))
                .collect();
            let rows = titles
                .iter()
                .map(|&(_, y)| y)
                .collect::<std::collections::BTreeSet<_>>()
                .len();
            assert_eq!(rows, if size.0 >= size.1 { 2 } else { 5 });
        }
    }

    #[test]
    fn charts_draw_at_every_scale_and_small_sizes() {
        let bins = example_bins();
        let per_class = classwise_example();
        let counts = [1, 0, 5, 7, 9, 30, 100];
        for scale in [1.0, 2.0, 3.0] {
            for size in [(320, 240), (240, 320), (360, 360), (560, 560), (1680, 1680)] {
                let style = ChartStyle { scale };
                diagram(size, &bins, scale).unwrap();
                render(size, |area| {
                    confidence_histogram(area, &counts, 0.9, 0.8, &style)
                })
                .unwrap();
                render(size, |area| {
                    classwise_reliability(area, &per_class, &FASHION_MNIST_CLASSES, &style)
                })
                .unwrap();
            }
        }
    }

    #[test]
    fn degenerate_inputs_draw_empty_charts() {
        let style = ChartStyle::default();
        let all_empty = vec![bin(0.0, 0.5, 0, 0.0, 0.0), bin(0.5, 1.0, 0, 0.0, 0.0)];
        for bins in [vec![], all_empty.clone()] {
            let svg = diagram((320, 240), &bins, 1.0).unwrap();
            assert_eq!(filled_rects(&svg, BLUE_HEX).len(), LEGEND_BAR_SWATCHES);
        }
        for counts in [vec![], vec![0; 15]] {
            let svg = render((320, 240), |area| {
                confidence_histogram(area, &counts, 0.0, 1.0, &style)
            })
            .unwrap();
            assert!(filled_rects(&svg, BAR_GREY_HEX).is_empty());
        }
        let per_class = vec![vec![], all_empty.clone(), all_empty];
        render((320, 240), |area| {
            classwise_reliability(area, &per_class, &["a", "b", "c"], &style)
        })
        .unwrap();
        render((320, 240), |area| {
            classwise_reliability(area, &[vec![]], &["only"], &style)
        })
        .unwrap();
    }

    #[test]
    fn invalid_input_is_refused_with_a_typed_error() {
        let bins = example_bins();
        for scale in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                diagram((560, 560), &bins, scale),
                Err(PlotError::InvalidScale(_))
            ));
        }
        for size in [(0, 0), (50, 400), (400, 30)] {
            assert!(matches!(
                diagram(size, &bins, 1.0),
                Err(PlotError::AreaTooSmall { .. })
            ));
        }
        let mut bad = bins.clone();
        bad[3].accuracy = f64::NAN;
        assert!(matches!(
            diagram((560, 560), &bad, 1.0),
            Err(PlotError::InvalidBin { index: 3, .. })
        ));
        bad[3] = bin(0.6, 0.4, 1, 0.5, 0.5);
        assert!(matches!(
            diagram((560, 560), &bad, 1.0),
            Err(PlotError::InvalidBin { index: 3, .. })
        ));
        let style = ChartStyle::default();
        assert!(matches!(
            render((560, 200), |area| confidence_histogram(
                area,
                &[1],
                f64::NAN,
                0.5,
                &style
            )),
            Err(PlotError::InvalidFraction {
                name: "mean confidence",
                ..
            })
        ));
        assert!(matches!(
            render((560, 200), |area| confidence_histogram(
                area,
                &[1],
                0.5,
                1.5,
                &style
            )),
            Err(PlotError::InvalidFraction {
                name: "accuracy",
                ..
            })
        ));
        assert!(matches!(
            render((900, 420), |area| classwise_reliability(
                area,
                std::slice::from_ref(&bins),
                &["a", "b"],
                &style
            )),
            Err(PlotError::ClassCountMismatch { bins: 1, names: 2 })
        ));
        assert!(matches!(
            render((900, 420), |area| classwise_reliability(
                area,
                &[],
                &[],
                &style
            )),
            Err(PlotError::NoClasses)
        ));
        assert!(matches!(
            render((900, 420), |area| classwise_reliability(
                area,
                &[bins, bad],
                &["a", "b"],
                &style
            )),
            Err(PlotError::InvalidClassBin {
                class: 1,
                index: 3,
                ..
            })
        ));
    }

    #[test]
    fn hatching_stays_inside_at_45_degrees() {
        let rect = PixelRect::spanning((10, 20), (47, 31));
        let segments = hatch_segments(rect, 5.0);
        // Lines x + y = k·5√2 for k = ceil(30/7.07) = 5 ..= floor(78/7.07) = 11; line 11 only
        // grazes the corner (x from 46.8 to 47) and rounds to a point, so it is left out.
        assert_eq!(segments.len(), 6);
        for [(x0, y0), (x1, y1)] in segments {
            for (x, y) in [(x0, y0), (x1, y1)] {
                assert!((rect.left..=rect.right).contains(&x));
                assert!((rect.top..=rect.bottom).contains(&y));
            }
            assert!(x1 > x0 && y1 < y0);
            assert!(((x1 - x0) - (y0 - y1)).abs() <= 1);
        }
        assert!(hatch_segments(PixelRect::spanning((5, 5), (5, 40)), 5.0).is_empty());
    }
}
