//! Drawing backends that measure text with a canvas's 2D context.
//!
//! In the browser plotters measures text (for axis label layout and legends) by inserting a
//! `<span>` with an inline style into the page and reading its size: that forces a layout of
//! the whole page for every label (tens of milliseconds per chart on this page), and the page's
//! Content-Security-Policy (no inline styles) refuses the style, so the size is wrong.
//! `measureText` on a canvas's own 2D context gives the width without touching the page, so
//! [`Measured`] answers `estimate_text_size` that way and passes every drawing call through to
//! the backend it wraps: [`CanvasBackend`] on the page, plotters' SVG backend for a download.

use plotters::prelude::DrawingBackend;
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
};
use plotters_canvas::CanvasBackend;
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

/// Line height as a multiple of the font size, as browsers lay out a single line of text.
const LINE_HEIGHT: f64 = 1.15;

/// A backend with text measured by a canvas's 2D context.
pub struct Measured<B> {
    inner: B,
    context: CanvasRenderingContext2d,
}

/// The 2D context of `canvas`, if it has one.
fn context_of(canvas: &HtmlCanvasElement) -> Option<CanvasRenderingContext2d> {
    canvas.get_context("2d").ok()??.dyn_into().ok()
}

impl Measured<CanvasBackend> {
    /// Draws on `canvas`; `None` when it has no 2D context.
    pub fn canvas(canvas: HtmlCanvasElement) -> Option<Self> {
        Some(Self {
            context: context_of(&canvas)?,
            inner: CanvasBackend::with_canvas_object(canvas)?,
        })
    }
}

impl<B> Measured<B> {
    /// Draws on `inner`, measuring text with the 2D context of `canvas` (`None` without one).
    pub fn with(inner: B, canvas: &HtmlCanvasElement) -> Option<Self> {
        Some(Self {
            context: context_of(canvas)?,
            inner,
        })
    }
}

impl<B: DrawingBackend> DrawingBackend for Measured<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vertices: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.fill_polygon(vertices, style)
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_text(text, style, pos)
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        // The same font string CanvasBackend::draw_text sets.
        self.context.set_font(&format!(
            "{} {}px {}",
            style.style().as_str(),
            style.size(),
            style.family().as_str(),
        ));
        let width = self
            .context
            .measure_text(text)
            .map_or(0.0, |metrics| metrics.width());
        Ok((
            width.ceil() as u32,
            (style.size() * LINE_HEIGHT).ceil() as u32,
        ))
    }
}
