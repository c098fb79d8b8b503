//! Charts for the page and the README figures: miscalibration (reliability diagram, confidence
//! histogram, classwise reliability; see `calibration.rs` in this directory) and split
//! conformal prediction (set sizes, per-class and size-stratified coverage, the α sweep and
//! the coverage experiment; see `conformal.rs`), calibration without bins (the cumulative
//! differences; see `cumulative.rs`; the CORP diagram, `corp.rs`), and out-of-distribution detection (score and
//! logit-norm histograms, ROC curves, the LogitNorm τ chart; see `ood.rs`).
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
//! Colours are the colour-blind-safe palette of Okabe & Ito (2008), "Color Universal Design";
//! whatever a colour singles out (an empty set, a class below its target, a calibration gap)
//! is also hatched, so it reads without colour.

mod adaptive;
mod anatomy;
mod calibration;
mod conformal;
mod corp;
mod cumulative;
mod ood;
mod pvalues;
mod selective;
mod shift;
#[cfg(test)]
mod test_support;

pub use adaptive::{adaptive_stream_chart, StreamSeries};
pub use anatomy::{anatomy_chart, TemperatureLine, MISTAKE_COLOURS};
pub use calibration::{
    classwise_reliability, confidence_histogram, method_reliability, reliability_diagram,
    smooth_curve_shown, smooth_reliability_diagram, MethodPanel,
};
pub use conformal::{
    alpha_sweep_curves, coverage_experiment_histogram, density_histogram, per_class_coverage,
    per_class_height, set_size_histogram, stratified_coverage,
};
pub use corp::corp_reliability_diagram;
pub use cumulative::cumulative_differences_chart;
pub use ood::{
    logit_norm_histogram, roc_curves, score_histogram, tau_chart, HistogramLabels, RocCurve,
    TauPoint,
};
pub use pvalues::{pvalue_chart, PvalueLabels};
pub use selective::risk_coverage_chart;
pub use shift::{severity_chart, SeverityPoint};

use std::f64::consts::SQRT_2;
use std::ops::Range;

use plotters::chart::{ChartBuilder, ChartContext};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::drawing::{DrawingArea, DrawingAreaErrorKind};
use plotters::element::{Circle, DashedPathElement, PathElement, Polygon, Rectangle};
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

/// Opacity of an overconfident gap's shading (it lies above the bar, over white).
const GAP_OPACITY: f64 = 0.3;
/// Opacity of an underconfident gap's shading: it lies over the bar, so it must cover it.
const UNDER_GAP_OPACITY: f64 = 0.85;

/// Which way a calibration gap points. Overconfident gaps (confidence above accuracy) lie above
/// the bar in translucent vermillion; underconfident ones lie inside the bar, so they get a
/// colour of their own, yellow, nearly opaque, with dark hatching.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Gap {
    Over,
    Under,
}

impl Gap {
    fn of(accuracy: f64, confidence: f64) -> Self {
        if confidence > accuracy {
            Self::Over
        } else {
            Self::Under
        }
    }

    fn fill(self) -> plotters::style::RGBAColor {
        match self {
            Self::Over => VERMILLION.mix(GAP_OPACITY),
            Self::Under => YELLOW.mix(UNDER_GAP_OPACITY),
        }
    }

    /// The line of its hatching and outline.
    fn line(self, metrics: Metrics) -> ShapeStyle {
        match self {
            Self::Over => VERMILLION.stroke_width(metrics.stroke(OUTLINE_WIDTH)),
            Self::Under => bar_line(metrics),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Over => "overconfident gap",
            Self::Under => "underconfident gap",
        }
    }
}

/// Width of the outlines and hatching of bars and gaps (CSS pixels).
const OUTLINE_WIDTH: f64 = 0.75;
/// Opacity of a shaded band of values.
const BAND_OPACITY: f64 = 0.2;
/// Distance between hatch lines, measured across them (CSS pixels).
const HATCH_SPACING: f64 = 5.0;
/// Height of the dotted outline marking an empty bin (CSS pixels).
const EMPTY_BIN_MARK_HEIGHT: f64 = 8.0;
/// Dash and space of the diagonal and the mean-confidence line (CSS pixels).
const DASH: (f64, f64) = (6.0, 4.0);
/// Dot and space of an empty bin's outline (CSS pixels).
const DOT: (f64, f64) = (1.5, 2.5);
/// Width of curves (CSS pixels).
const CURVE_WIDTH: f64 = 2.0;
/// Width of the dashed diagonal from `(0, 0)` to `(1, 1)` (CSS pixels).
const DIAGONAL_WIDTH: f64 = 1.5;
/// Headroom above the tallest bar or curve of a chart whose y axis has no natural top, as a
/// factor.
const Y_HEADROOM: f64 = 1.1;

/// Font sizes (CSS pixels).
const TICK_FONT: f64 = 12.0;
const DESCRIPTION_FONT: f64 = 13.0;
const LEGEND_FONT: f64 = 12.0;
const PANEL_TITLE_FONT: f64 = 11.0;
const PANEL_TICK_FONT: f64 = 11.0;
/// No chart text is smaller than this (CSS pixels), however far a small area scales the chart
/// down: below it, tick labels stop being readable on a phone.
const MIN_FONT: f64 = 11.0;

/// Chart layout (CSS pixels).
const MARGIN_TOP: f64 = 6.0;
const MARGIN_RIGHT: f64 = 14.0;
const X_LABEL_AREA: f64 = 40.0;
const Y_LABEL_AREA: f64 = 46.0;
const TICK_MARK: f64 = 4.0;
const PANEL_MARGIN: f64 = 3.0;
/// Room right of a small multiple for half of its last x tick label ("1.0"), which is centred
/// on the axis's end.
const PANEL_MARGIN_RIGHT: f64 = 10.0;
const PANEL_X_LABEL_AREA: f64 = 17.0;
const PANEL_Y_LABEL_AREA: f64 = 26.0;
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

/// Decimals needed to tell apart ticks at most `max_ticks` over `span` (in the printed unit).
fn tick_decimals(span: f64, max_ticks: usize) -> usize {
    let step = span / max_ticks.max(1) as f64;
    if step >= 0.9 {
        0
    } else if step >= 0.09 {
        1
    } else if step >= 0.009 {
        2
    } else {
        3
    }
}

/// `value` (a fraction) as a percentage with `decimals` decimals.
fn percent(value: f64, decimals: usize) -> String {
    format!("{:.decimals$}%", 100.0 * value + 0.0)
}

/// Each count as a percentage of their total (all zero when the total is zero), for the
/// histograms' "% of images" axes.
fn percent_shares(counts: &[usize]) -> Vec<f64> {
    let total = counts.iter().sum::<usize>() as f64;
    counts
        .iter()
        .map(|&count| {
            if total > 0.0 {
                100.0 * count as f64 / total
            } else {
                0.0
            }
        })
        .collect()
}

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
    /// Like [`PlotError::InvalidBin`], for a bin of one panel of the small multiples (a
    /// class, or a recalibration method).
    #[error(
        "bin {index} of panel {panel} is not a reliability bin (every value in [0, 1], \
         lower <= upper): {bin:?}"
    )]
    InvalidPanelBin {
        panel: usize,
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
    /// The reliability diagrams per method got no method.
    #[error("there are no methods to draw")]
    NoPanels,
    /// The per-class coverage chart got a different number of coverages and class names.
    #[error("{coverages} per-class coverages were given with {names} class names")]
    CoverageCountMismatch { coverages: usize, names: usize },
    /// A coverage (of a class, a size stratum or a random split; `index` counts from 0) is NaN
    /// or outside `[0, 1]`.
    #[error("coverage {index} must be a number in [0, 1], got {value}")]
    InvalidCoverage { index: usize, value: f64 },
    /// The upper edge of the coverage guarantee is NaN, infinite or below `1 − α`.
    #[error("the guarantee band [{target}, {upper}] must be finite with 1 − α <= upper")]
    InvalidBand { target: f64, upper: f64 },
    /// A smooth reliability curve whose confidences, accuracies and densities differ in length.
    #[error(
        "a smooth reliability curve has {confidences} confidences, {accuracies} accuracies and \
         {densities} densities"
    )]
    CurveLengthMismatch {
        confidences: usize,
        accuracies: usize,
        densities: usize,
    },
    /// A bootstrap band's bounds do not have one value per point of its curve.
    #[error("a bootstrap band has {lower} lower and {upper} upper bounds for {points} points")]
    BandLengthMismatch {
        points: usize,
        lower: usize,
        upper: usize,
    },
    /// A sample of the density curve is negative.
    #[error("density sample {index} is negative: {value}")]
    NegativeDensity { index: usize, value: f64 },
    /// The values are too large to plot: an axis would not be a finite increasing range.
    #[error("an axis cannot span [{start}, {end}]: the values are too large to plot")]
    InvalidAxisRange { start: f64, end: f64 },
    /// A value drawn as a position (a threshold, a mean) is NaN or infinite.
    #[error("the {name} must be a finite number, got {value}")]
    NotFinite { name: &'static str, value: f64 },
    /// A histogram does not have one more edge than bins in each set.
    #[error(
        "a histogram needs one more edge than bins: {edges} edges, {in_distribution} and \
         {out_of_distribution} bins"
    )]
    HistogramShape {
        edges: usize,
        in_distribution: usize,
        out_of_distribution: usize,
    },
    /// LogitNorm's τ is zero, negative, NaN or infinite.
    #[error("τ must be a positive finite number, got {0}")]
    InvalidTau(f64),
}

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for PlotError {
    fn from(error: DrawingAreaErrorKind<E>) -> Self {
        Self::Drawing(error.to_string())
    }
}

/// A chart on a rectangle of data coordinates.
type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;
/// The plotting area of a [`Chart`].
type PlotArea<DB> = DrawingArea<DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Device-pixel sizes of one chart: CSS sizes times the scale actually used.
#[derive(Clone, Copy, Debug)]
struct Metrics {
    /// Device pixels per CSS pixel: the requested scale, reduced when the area is small.
    unit: f64,
    /// The smallest font, in device pixels: [`MIN_FONT`] at the requested scale.
    font_floor: f64,
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
            font_floor: MIN_FONT * style.scale,
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

    /// A sans-serif text style of `css` CSS pixels, scaled as the chart, and never below
    /// [`MIN_FONT`].
    fn font(self, css: f64, colour: &'static RGBColor) -> TextStyle<'static> {
        (
            FontFamily::SansSerif,
            (css * self.unit).max(self.font_floor),
        )
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

    /// The top-left and the bottom-right corner.
    fn corners(self) -> [(i32, i32); 2] {
        [(self.left, self.top), (self.right, self.bottom)]
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

/// Draws `rect`: filled with `fill`, then hatched with `hatching` and outlined with `outline`
/// where given. Every bar and gap is drawn by this one function, so they stack the same way.
fn draw_rect<DB: DrawingBackend>(
    canvas: &DrawingArea<DB, Shift>,
    rect: PixelRect,
    fill: ShapeStyle,
    hatching: Option<ShapeStyle>,
    outline: Option<ShapeStyle>,
    metrics: Metrics,
) -> Result<(), PlotError> {
    canvas.draw(&Rectangle::new(rect.corners(), fill))?;
    if let Some(line) = hatching {
        for segment in hatch_segments(rect, metrics.unit * HATCH_SPACING) {
            canvas.draw(&PathElement::new(segment.to_vec(), line))?;
        }
    }
    if let Some(line) = outline {
        canvas.draw(&PathElement::new(rect.closed_outline(), line))?;
    }
    Ok(())
}

/// The dark grey line that outlines and hatches bars.
fn bar_line(metrics: Metrics) -> ShapeStyle {
    DARK_GREY.stroke_width(metrics.stroke(OUTLINE_WIDTH))
}

/// Draws a calibration gap: shaded and outlined.
fn draw_gap<DB: DrawingBackend>(
    canvas: &DrawingArea<DB, Shift>,
    rect: PixelRect,
    gap: Gap,
    metrics: Metrics,
) -> Result<(), PlotError> {
    let line = Some(gap.line(metrics));
    draw_rect(canvas, rect, gap.fill().filled(), line, line, metrics)
}

/// Draws a bar: filled with `colour`, outlined in dark grey.
fn draw_bar<DB: DrawingBackend>(
    canvas: &DrawingArea<DB, Shift>,
    rect: PixelRect,
    colour: RGBColor,
    metrics: Metrics,
) -> Result<(), PlotError> {
    let outline = Some(bar_line(metrics));
    draw_rect(canvas, rect, colour.filled(), None, outline, metrics)
}

/// Draws a bar that must stand out without colour: filled with `colour`, hatched and outlined
/// in dark grey.
fn draw_hatched_bar<DB: DrawingBackend>(
    canvas: &DrawingArea<DB, Shift>,
    rect: PixelRect,
    colour: RGBColor,
    metrics: Metrics,
) -> Result<(), PlotError> {
    let line = Some(bar_line(metrics));
    draw_rect(canvas, rect, colour.filled(), line, line, metrics)
}

/// Shades a band (a range of values): `colour` at [`BAND_OPACITY`], without outline.
fn shade_band<DB: DrawingBackend>(
    canvas: &DrawingArea<DB, Shift>,
    rect: PixelRect,
    colour: RGBColor,
) -> Result<(), PlotError> {
    canvas.draw(&Rectangle::new(
        rect.corners(),
        colour.mix(BAND_OPACITY).filled(),
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

/// Draws a vertical line at `x` (data coordinates) across the plotting area's y range, dashed
/// or solid: a threshold, a marked severity or temperature.
fn draw_vertical<DB: DrawingBackend>(
    pixels: &PlotPixels<'_, DB>,
    x: f64,
    style: ShapeStyle,
    dashed: bool,
    metrics: Metrics,
) -> Result<(), PlotError> {
    let y_range = pixels.plot.get_y_range();
    draw_line(
        &pixels.canvas,
        pixels.point(x, y_range.start),
        pixels.point(x, y_range.end),
        style,
        dashed,
        metrics,
    )
}

/// Draws `points` (data coordinates) as one solid polyline of `colour`, or a dot for a single
/// point.
fn draw_polyline<DB: DrawingBackend>(
    pixels: &PlotPixels<'_, DB>,
    points: impl IntoIterator<Item = (f64, f64)>,
    colour: RGBColor,
    metrics: Metrics,
) -> Result<(), PlotError> {
    let points: Vec<(i32, i32)> = points
        .into_iter()
        .map(|(x, y)| pixels.point(x, y))
        .collect();
    match points.as_slice() {
        [] => {}
        [point] => pixels.canvas.draw(&Circle::new(
            *point,
            metrics.px_at_least_one(CURVE_WIDTH),
            colour.filled(),
        ))?,
        _ => pixels.canvas.draw(&PathElement::new(
            points,
            colour.stroke_width(metrics.stroke(CURVE_WIDTH)),
        ))?,
    }
    Ok(())
}

/// Draws the dashed dark grey diagonal from `(0, 0)` to `(1, 1)`: perfect calibration on a
/// reliability diagram, chance on a ROC plot.
fn draw_diagonal<DB: DrawingBackend>(
    pixels: &PlotPixels<'_, DB>,
    metrics: Metrics,
) -> Result<(), PlotError> {
    draw_line(
        &pixels.canvas,
        pixels.point(0.0, 0.0),
        pixels.point(1.0, 1.0),
        DARK_GREY.stroke_width(metrics.stroke(DIAGONAL_WIDTH)),
        true,
        metrics,
    )
}

/// What a legend entry's swatch shows.
#[derive(Clone, Copy, Debug)]
enum LegendMark {
    /// A bar filled with the colour.
    Bar(RGBColor),
    /// A hatched bar filled with the colour.
    HatchedBar(RGBColor),
    /// A band shaded in the colour.
    Band(RGBColor),
    /// A calibration gap of one direction.
    Gap(Gap),
    /// A line of the colour and width (CSS pixels), dashed or solid.
    Line {
        colour: RGBColor,
        width: f64,
        dashed: bool,
    },
    /// The outline of an empty bin.
    EmptyBin,
}

/// The legend swatch of a chart's main curve: solid blue at [`CURVE_WIDTH`].
const CURVE_MARK: LegendMark = LegendMark::Line {
    colour: BLUE,
    width: CURVE_WIDTH,
    dashed: false,
};

/// The legend swatch of [`draw_diagonal`]'s line.
const DIAGONAL_MARK: LegendMark = LegendMark::Line {
    colour: DARK_GREY,
    width: DIAGONAL_WIDTH,
    dashed: true,
};

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
            LegendMark::HatchedBar(colour) => draw_hatched_bar(&legend, swatch, colour, metrics)?,
            LegendMark::Band(colour) => shade_band(&legend, swatch, colour)?,
            LegendMark::Gap(gap) => draw_gap(&legend, swatch, gap, metrics)?,
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

    /// The pixel of data point `(x, y)`, relative to the plotting area. A coordinate further
    /// than one axis length outside its axis is pulled in to that distance, so that far-off
    /// values cannot overflow the pixel arithmetic.
    fn point(&self, x: f64, y: f64) -> (i32, i32) {
        let near = |value: f64, axis: Range<f64>| {
            let length = axis.end - axis.start;
            value.clamp(axis.start - length, axis.end + length)
        };
        let x = near(x, self.plot.get_x_range());
        let y = near(y, self.plot.get_y_range());
        let (px, py) = self.plot.map_coordinate(&(x, y));
        let (base_x, base_y) = self.plot.get_base_pixel();
        (px - base_x, py - base_y)
    }

    /// The top-left corner of the plotting area, relative to `parent`, the area the chart was
    /// built on: add it to a [`PlotPixels::point`] to draw outside the plotting area.
    fn offset_in(&self, parent: &DrawingArea<DB, Shift>) -> (i32, i32) {
        let (plot_x, plot_y) = self.plot.get_base_pixel();
        let (parent_x, parent_y) = parent.get_base_pixel();
        (plot_x - parent_x, plot_y - parent_y)
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

/// Builds a chart on `x_range × y_range` in `area` with the given label areas and margins.
fn build_chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    x_range: Range<f64>,
    y_range: Range<f64>,
    layout: ChartLayout,
    metrics: Metrics,
) -> Result<Chart<'a, DB>, PlotError> {
    for range in [&x_range, &y_range] {
        if !(range.start < range.end && (range.end - range.start).is_finite()) {
            return Err(PlotError::InvalidAxisRange {
                start: range.start,
                end: range.end,
            });
        }
    }
    let mut builder = ChartBuilder::on(area);
    builder
        .margin_top(metrics.px(layout.margin_top))
        .margin_right(metrics.px(layout.margin_right))
        .x_label_area_size(metrics.px(layout.x_label_area))
        .y_label_area_size(metrics.px(layout.y_label_area));
    if let Some(title) = layout.title {
        builder.caption(title, metrics.font(PANEL_TITLE_FONT, &TEXT_GREY));
    }
    Ok(builder.build_cartesian_2d(x_range, y_range)?)
}

/// The x axis of a histogram of shares: its range, the most tick labels, how they read, its
/// description, and whether grid lines mark its ticks.
struct HistogramXAxis<'a> {
    range: Range<f64>,
    tick_labels: usize,
    format: &'a dyn Fn(&f64) -> String,
    description: &'a str,
    grid: bool,
}

/// Builds the chart of a histogram of shares on `area` and draws its axes: x as `x_axis` says,
/// y from 0 to `y_max` percent, described by `y_description`, with grid lines and one decimal
/// below 5%. The confidence, set-size and OOD histograms share it, so their y axes read alike.
fn share_histogram_chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    x_axis: HistogramXAxis,
    y_max: f64,
    y_description: &str,
    metrics: Metrics,
) -> Result<Chart<'a, DB>, PlotError> {
    let mut chart = build_chart(area, x_axis.range, 0.0..y_max, FULL_LAYOUT, metrics)?;
    let decimals = if y_max < 5.0 { 1 } else { 0 };
    let format_y = |y: &f64| format!("{:.decimals$}%", y + 0.0);
    let axes = Axes {
        tick_font: TICK_FONT,
        tick_labels: (x_axis.tick_labels, HISTOGRAM_Y_TICK_LABELS),
        tick_mark: TICK_MARK,
        descriptions: (Some(x_axis.description), Some(y_description)),
        x_format: x_axis.format,
        y_format: &format_y,
        grid: (x_axis.grid, true),
    };
    draw_axes(&mut chart, &axes, metrics)?;
    Ok(chart)
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
    /// Axis descriptions (x, y), each optional.
    descriptions: (Option<&'a str>, Option<&'a str>),
    x_format: &'a dyn Fn(&f64) -> String,
    y_format: &'a dyn Fn(&f64) -> String,
    /// Whether grid lines are drawn at the x ticks and at the y ticks.
    grid: (bool, bool),
}

impl<'a> Axes<'a> {
    /// The axes of a full-size chart with grid lines both ways, a histogram's few y ticks and
    /// both axes described.
    fn gridded(
        descriptions: (&'a str, &'a str),
        x_format: &'a dyn Fn(&f64) -> String,
        y_format: &'a dyn Fn(&f64) -> String,
    ) -> Self {
        Self {
            tick_font: TICK_FONT,
            tick_labels: (TICK_LABELS, HISTOGRAM_Y_TICK_LABELS),
            tick_mark: TICK_MARK,
            descriptions: (Some(descriptions.0), Some(descriptions.1)),
            x_format,
            y_format,
            grid: (true, true),
        }
    }
}

/// Draws grid, axes, tick labels and axis descriptions.
fn draw_axes<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    axes: &Axes,
    metrics: Metrics,
) -> Result<(), PlotError> {
    let mut mesh = chart.configure_mesh();
    mesh.x_labels(axes.tick_labels.0)
        .y_labels(axes.tick_labels.1)
        .x_label_formatter(axes.x_format)
        .y_label_formatter(axes.y_format)
        .label_style(metrics.font(axes.tick_font, &TEXT_GREY))
        .axis_desc_style(metrics.font(DESCRIPTION_FONT, &TEXT_GREY))
        .axis_style(AXIS_GREY.stroke_width(metrics.stroke(1.0)))
        .bold_line_style(GRID_GREY.stroke_width(metrics.stroke(1.0)))
        .light_line_style(TRANSPARENT)
        .set_all_tick_mark_size(metrics.px(axes.tick_mark));
    if let Some(description) = axes.descriptions.0 {
        mesh.x_desc(description);
    }
    if let Some(description) = axes.descriptions.1 {
        mesh.y_desc(description);
    }
    if !axes.grid.0 {
        mesh.disable_x_mesh();
    }
    if !axes.grid.1 {
        mesh.disable_y_mesh();
    }
    mesh.draw()?;
    Ok(())
}

/// Height of the strip between two stacked panels, which holds no tick labels (CSS pixels).
const STACKED_GAP: f64 = 8.0;

/// The x axis two stacked panels share: its range, the most tick labels, and its description
/// and tick labels, written under the lower panel only.
struct SharedXAxis<'a> {
    range: Range<f64>,
    tick_labels: usize,
    description: &'a str,
    format: &'a dyn Fn(&f64) -> String,
}

/// One of two stacked panels' y axis: its range, description and tick labels.
struct PanelYAxis<'a> {
    range: Range<f64>,
    description: &'a str,
    format: &'a dyn Fn(&f64) -> String,
}

/// `area` cut into an upper and a lower panel whose plotting areas are equally tall.
fn stacked_areas<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    metrics: Metrics,
) -> (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>) {
    let (_, height) = area.dim_in_pixel();
    let top_height = (height as i32 + metrics.px(STACKED_GAP) - metrics.px(X_LABEL_AREA)) / 2;
    area.split_vertically(top_height.max(0))
}

/// The charts of two stacked panels (the areas of [`stacked_areas`]) with their axes drawn,
/// grid lines at every tick: the shift lab's severity chart and its stream chart read alike.
fn stacked_charts<'a, DB: DrawingBackend>(
    (top, bottom): &'a (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>),
    x: &SharedXAxis,
    top_y: &PanelYAxis,
    bottom_y: &PanelYAxis,
    metrics: Metrics,
) -> Result<(Chart<'a, DB>, Chart<'a, DB>), PlotError> {
    let no_label = |_: &f64| String::new();
    let upper = SharedXAxis {
        range: x.range.clone(),
        tick_labels: x.tick_labels,
        description: "",
        format: &no_label,
    };
    let top_layout = ChartLayout {
        x_label_area: STACKED_GAP,
        ..FULL_LAYOUT
    };
    Ok((
        stacked_panel(top, &upper, top_y, top_layout, metrics)?,
        stacked_panel(bottom, x, bottom_y, FULL_LAYOUT, metrics)?,
    ))
}

/// One panel of [`stacked_charts`]; an empty x description is none.
fn stacked_panel<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    x: &SharedXAxis,
    y: &PanelYAxis,
    layout: ChartLayout,
    metrics: Metrics,
) -> Result<Chart<'a, DB>, PlotError> {
    let mut chart = build_chart(area, x.range.clone(), y.range.clone(), layout, metrics)?;
    draw_axes(
        &mut chart,
        &Axes {
            tick_font: TICK_FONT,
            tick_labels: (x.tick_labels, HISTOGRAM_Y_TICK_LABELS),
            tick_mark: TICK_MARK,
            descriptions: (
                (!x.description.is_empty()).then_some(x.description),
                Some(y.description),
            ),
            x_format: x.format,
            y_format: y.format,
            grid: (true, true),
        },
        metrics,
    )?;
    Ok(chart)
}

fn check_fraction(name: &'static str, value: f64) -> Result<(), PlotError> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(PlotError::InvalidFraction { name, value })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
