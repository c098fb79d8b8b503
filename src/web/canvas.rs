//! The page's one drawing backend: text measured by a canvas's 2D context, drawing on that
//! canvas or into an SVG text for a download.
//!
//! In the browser plotters measures text (for axis label layout and legends) by inserting a
//! `<span>` with an inline style into the page and reading its size: that forces a layout of
//! the whole page for every label (tens of milliseconds per chart on this page), and the page's
//! Content-Security-Policy (no inline styles) refuses the style, so the size is wrong.
//! `measureText` on a canvas's own 2D context gives the width without touching the page, so
//! [`Measured`] answers `estimate_text_size` that way. On the canvas it draws text itself
//! (setting only the settings that change) and gathers lines into paths ([`LineStyle`]); every
//! other drawing call passes through to its [`Target`].
//!
//! One type for both targets, not a generic wrapper: every figure's drawing code is generic
//! over the backend, and two backends would compile it twice into the page's module (about
//! 100 KB of its code).

use std::cell::RefCell;
use std::collections::HashMap;

use plotters::prelude::{DrawingBackend, SVGBackend};
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind, FontTransform,
};
use plotters_canvas::CanvasBackend;
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

/// Line height as a multiple of the font size, as browsers lay out a single line of text.
const LINE_HEIGHT: f64 = 1.15;
/// Widths kept at most in [`WIDTHS`] before it starts afresh.
const WIDTHS_KEPT: usize = 4096;

thread_local! {
    /// The width of each text measured so far, by font and text. A frame measures the labels
    /// the frame before it measured (ticks, legends, titles), and each measurement is a font
    /// change and a `measureText` call: on a slider frame these were about a sixth of the
    /// drawing's time. The page's fonts are the system's (`sans-serif`), so a width never
    /// changes once measured.
    static WIDTHS: RefCell<HashMap<(String, String), f64>> = RefCell::new(HashMap::new());
}

/// Where a [`Measured`] backend draws.
enum Target<'a> {
    /// The page's canvas.
    Canvas(CanvasBackend),
    /// An SVG document written into a string, for a download.
    Svg(SVGBackend<'a>),
}

/// A backend with text measured by a canvas's 2D context.
pub struct Measured<'a> {
    target: Target<'a>,
    context: CanvasRenderingContext2d,
    /// The text settings the canvas's context holds, as this backend last set them (measuring
    /// text sets the font too, from `&self`).
    text: RefCell<TextSettings>,
    /// The style of the path of lines begun on the canvas and not stroked yet, if one is.
    lines: Option<LineStyle>,
}

/// The stroke of a path of opaque lines: colour and width.
///
/// plotters draws a chart's grid, ticks and short series one line or polyline at a time, and
/// its canvas backend strokes each as a path of its own, setting the colour (a string made in
/// Rust and read by the browser) and the width each time: about 300 paths, and more than 1,500
/// calls into the browser, on each frame of the temperature slider with the reliability diagram
/// and the histogram on screen. Here consecutive lines and polylines of one stroke go into one
/// path, stroked when one of another stroke or any other drawing comes. Only opaque lines are
/// gathered: where translucent lines cross, one stroke would blend the crossing once and
/// separate strokes twice.
#[derive(Clone, Copy, PartialEq)]
struct LineStyle {
    rgb: (u8, u8, u8),
    width: u32,
}

impl LineStyle {
    /// The stroke of `style`, if its colour is opaque.
    fn opaque<S: BackendStyle>(style: &S) -> Option<Self> {
        let color = style.color();
        (color.alpha == 1.0).then(|| Self {
            rgb: color.rgb,
            width: style.stroke_width(),
        })
    }
}

/// The line from `from` to `to`, a horizontal or vertical one moved by half a pixel onto the
/// pixels' centres, as plotters' canvas backend moves them: a one-pixel line then covers one
/// row or column of pixels instead of two half-lit ones.
fn crisp(from: BackendCoord, to: BackendCoord) -> [(f64, f64); 2] {
    let (mut from, mut to) = (
        (f64::from(from.0), f64::from(from.1)),
        (f64::from(to.0), f64::from(to.1)),
    );
    if from.0 == to.0 {
        from.0 -= 0.5;
        to.0 -= 0.5;
    }
    if from.1 == to.1 {
        from.1 -= 0.5;
        to.1 -= 0.5;
    }
    [from, to]
}

/// A 2D context's text settings: font, alignment and baseline. plotters' canvas backend sets all
/// three and the colour, each a string made in Rust and read by the browser, for every label;
/// a chart's labels mostly share them, so only those that change are set (about a tenth of a
/// slider frame's time was these settings).
#[derive(Default)]
struct TextSettings {
    font: String,
    align: &'static str,
    baseline: &'static str,
}

/// A drawing error of either target, by its message.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DrawError(String);

/// `result` with the target's error replaced by its message.
fn lift<T, E: std::error::Error + Send + Sync>(
    result: Result<T, DrawingErrorKind<E>>,
) -> Result<T, DrawingErrorKind<DrawError>> {
    result.map_err(|e| match e {
        DrawingErrorKind::DrawingError(e) => {
            DrawingErrorKind::DrawingError(DrawError(e.to_string()))
        }
        DrawingErrorKind::FontError(e) => DrawingErrorKind::FontError(e),
    })
}

/// Calls the same method on whichever target `$self` draws on.
macro_rules! on_target {
    ($self:ident, $backend:ident => $call:expr) => {
        match &mut $self.target {
            Target::Canvas($backend) => lift($call),
            Target::Svg($backend) => lift($call),
        }
    };
}

/// The 2D context of `canvas`, if it has one.
fn context_of(canvas: &HtmlCanvasElement) -> Option<CanvasRenderingContext2d> {
    canvas.get_context("2d").ok()??.dyn_into().ok()
}

impl Measured<'static> {
    /// Draws on `canvas`; `None` when it has no 2D context.
    pub fn canvas(canvas: HtmlCanvasElement) -> Option<Self> {
        Some(Self {
            context: context_of(&canvas)?,
            target: Target::Canvas(CanvasBackend::with_canvas_object(canvas)?),
            text: RefCell::default(),
            lines: None,
        })
    }
}

impl<'a> Measured<'a> {
    /// Writes an SVG document of `size` into `text`, measuring text with the 2D context of
    /// `canvas` (`None` without one).
    pub fn svg(text: &'a mut String, size: (u32, u32), canvas: &HtmlCanvasElement) -> Option<Self> {
        Some(Self {
            context: context_of(canvas)?,
            target: Target::Svg(SVGBackend::with_string(text, size)),
            text: RefCell::default(),
            lines: None,
        })
    }
}

/// The CSS font of a text style, as plotters' canvas backend writes it.
fn css_font<S: BackendTextStyle>(style: &S) -> String {
    format!(
        "{} {}px {}",
        style.style().as_str(),
        style.size(),
        style.family().as_str(),
    )
}

impl Measured<'_> {
    /// Draws `text` on the canvas as plotters' canvas backend does (the same anchor, colour,
    /// font and rotation), setting only the text settings that differ from those the context
    /// holds. A rotated label is drawn between `save` and `restore`, which put the settings
    /// back as they were.
    fn fill_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        (x, y): BackendCoord,
    ) -> Result<(), DrawingErrorKind<DrawError>> {
        let colour = style.color();
        if colour.alpha == 0.0 {
            return Ok(());
        }
        let turns = match style.transform() {
            FontTransform::None => 0.0,
            FontTransform::Rotate90 => 0.25,
            FontTransform::Rotate180 => 0.5,
            FontTransform::Rotate270 => 0.75,
        };
        let wanted = TextSettings {
            font: css_font(style),
            align: match style.anchor().h_pos {
                HPos::Left => "start",
                HPos::Right => "end",
                HPos::Center => "center",
            },
            baseline: match style.anchor().v_pos {
                VPos::Top => "top",
                VPos::Center => "middle",
                VPos::Bottom => "bottom",
            },
        };
        let context = &self.context;
        let failed = |e: wasm_bindgen::JsValue| {
            DrawingErrorKind::DrawingError(DrawError(format!("cannot draw a label: {e:?}")))
        };
        let (x, y) = (f64::from(x), f64::from(y));
        let at = if turns == 0.0 {
            (x, y)
        } else {
            context.save();
            context.translate(x, y).map_err(failed)?;
            context
                .rotate(turns * std::f64::consts::TAU)
                .map_err(failed)?;
            (0.0, 0.0)
        };
        let held = self.text.borrow();
        if wanted.font != held.font {
            context.set_font(&wanted.font);
        }
        if wanted.align != held.align {
            context.set_text_align(wanted.align);
        }
        if wanted.baseline != held.baseline {
            context.set_text_baseline(wanted.baseline);
        }
        drop(held);
        let (r, g, b) = colour.rgb;
        context.set_fill_style_str(&format!("rgba({r},{g},{b},{})", colour.alpha));
        context.fill_text(text, at.0, at.1).map_err(failed)?;
        if turns == 0.0 {
            self.text.replace(wanted);
        } else {
            context.restore();
        }
        Ok(())
    }

    /// Adds the polyline through `points` to the path of lines of its stroke, first stroking
    /// the path of another stroke and beginning its own. Each polyline starts a subpath of its
    /// own, so nothing joins it to the one before.
    fn add_polyline(&mut self, points: impl IntoIterator<Item = (f64, f64)>, style: LineStyle) {
        if self.lines != Some(style) {
            self.stroke_lines();
            let (r, g, b) = style.rgb;
            self.context
                .set_stroke_style_str(&format!("rgba({r},{g},{b},1)"));
            self.context.set_line_width(f64::from(style.width));
            self.context.begin_path();
            self.lines = Some(style);
        }
        let mut points = points.into_iter();
        if let Some((x, y)) = points.next() {
            self.context.move_to(x, y);
            for (x, y) in points {
                self.context.line_to(x, y);
            }
        }
    }

    /// Strokes the path of lines begun, if one is: before any other drawing, and at the end.
    fn stroke_lines(&mut self) {
        if self.lines.take().is_some() {
            self.context.stroke();
        }
    }
}

impl Drop for Measured<'_> {
    fn drop(&mut self) {
        self.stroke_lines();
    }
}

impl DrawingBackend for Measured<'_> {
    type ErrorType = DrawError;

    fn get_size(&self) -> (u32, u32) {
        match &self.target {
            Target::Canvas(backend) => backend.get_size(),
            Target::Svg(backend) => backend.get_size(),
        }
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        on_target!(self, backend => backend.ensure_prepared())
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.stroke_lines();
        on_target!(self, backend => backend.present())
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.stroke_lines();
        on_target!(self, backend => backend.draw_pixel(point, color))
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        match (&self.target, LineStyle::opaque(style)) {
            (Target::Canvas(_), Some(stroke)) => {
                self.add_polyline(crisp(from, to), stroke);
                Ok(())
            }
            _ => {
                self.stroke_lines();
                on_target!(self, backend => backend.draw_line(from, to, style))
            }
        }
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.stroke_lines();
        on_target!(self, backend => backend.draw_rect(upper_left, bottom_right, style, fill))
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        match (&self.target, LineStyle::opaque(style)) {
            (Target::Canvas(_), Some(stroke)) => {
                let points = path.into_iter().map(|(x, y)| (f64::from(x), f64::from(y)));
                self.add_polyline(points, stroke);
                Ok(())
            }
            _ => {
                self.stroke_lines();
                on_target!(self, backend => backend.draw_path(path, style))
            }
        }
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.stroke_lines();
        on_target!(self, backend => backend.draw_circle(center, radius, style, fill))
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vertices: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.stroke_lines();
        on_target!(self, backend => backend.fill_polygon(vertices, style))
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.stroke_lines();
        match &mut self.target {
            Target::Canvas(_) => self.fill_text(text, style, pos),
            Target::Svg(backend) => lift(backend.draw_text(text, style, pos)),
        }
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let font = css_font(style);
        let width = WIDTHS.with_borrow_mut(|widths| {
            if let Some(&width) = widths.get(&(font.clone(), text.to_string())) {
                return width;
            }
            self.context.set_font(&font);
            self.text.borrow_mut().font.clone_from(&font);
            let width = self
                .context
                .measure_text(text)
                .map_or(0.0, |metrics| metrics.width());
            if widths.len() >= WIDTHS_KEPT {
                widths.clear();
            }
            widths.insert((font, text.to_string()), width);
            width
        });
        Ok((
            width.ceil() as u32,
            (style.size() * LINE_HEIGHT).ceil() as u32,
        ))
    }
}
