//! SVG rendering and parsing shared by the chart tests.

use plotters::coord::Shift;
use plotters::drawing::DrawingArea;
use plotters::prelude::{IntoDrawingArea, SVGBackend};

use super::PlotError;

/// Tolerance, in pixels, on positions compared after rounding to whole pixels.
pub(super) const PIXEL_TOLERANCE: i32 = 2;

pub(super) const BLUE_HEX: &str = "#0072B2";
pub(super) const VERMILLION_HEX: &str = "#D55E00";
pub(super) const YELLOW_HEX: &str = "#F0E442";
pub(super) const ORANGE_HEX: &str = "#E69F00";
pub(super) const DARK_GREY_HEX: &str = "#404040";
pub(super) const FAINT_GREY_HEX: &str = "#A0A0A0";
pub(super) const BAR_GREY_HEX: &str = "#BBBBBB";

/// Draws into an SVG string of `size` pixels.
pub(super) fn render(
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
pub(super) fn elements<'a>(svg: &'a str, tag: &str) -> Vec<Vec<(&'a str, &'a str)>> {
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
pub(super) fn texts(svg: &str) -> impl Iterator<Item = (Vec<(&str, &str)>, &str)> {
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

pub(super) fn has_text(svg: &str, wanted: &str) -> bool {
    texts(svg).any(|(_, text)| text == wanted)
}

pub(super) fn attribute<'a>(element: &[(&'a str, &'a str)], name: &str) -> Option<&'a str> {
    element
        .iter()
        .find(|(key, _)| *key == name)
        .map(|&(_, value)| value)
}

pub(super) fn number(element: &[(&str, &str)], name: &str) -> i32 {
    attribute(element, name).unwrap().parse().unwrap()
}

/// The centres of the `<circle>` elements filled with colour `hex`, in document order.
pub(super) fn filled_circles(svg: &str, hex: &str) -> Vec<(i32, i32)> {
    elements(svg, "circle")
        .iter()
        .filter(|circle| attribute(circle, "fill") == Some(hex))
        .map(|circle| (number(circle, "cx"), number(circle, "cy")))
        .collect()
}

/// The filled `<rect>` elements of colour `hex`.
pub(super) fn filled_rects<'a>(svg: &'a str, hex: &str) -> Vec<Vec<(&'a str, &'a str)>> {
    elements(svg, "rect")
        .into_iter()
        .filter(|rect| attribute(rect, "fill") == Some(hex))
        .collect()
}

/// The points of every `<polyline>` stroked in colour `hex`.
pub(super) fn polylines(svg: &str, hex: &str) -> Vec<Vec<(i32, i32)>> {
    shapes_points(svg, "polyline", "stroke", hex)
}

/// The points of every `<polygon>` filled in colour `hex`.
pub(super) fn polygons(svg: &str, hex: &str) -> Vec<Vec<(i32, i32)>> {
    shapes_points(svg, "polygon", "fill", hex)
}

/// The `points` of every `<tag>` whose attribute `paint` is colour `hex`.
fn shapes_points(svg: &str, tag: &str, paint: &str, hex: &str) -> Vec<Vec<(i32, i32)>> {
    elements(svg, tag)
        .into_iter()
        .filter(|shape| attribute(shape, paint) == Some(hex))
        .map(|shape| {
            attribute(&shape, "points")
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
pub(super) fn diagonal_points(svg: &str) -> Vec<(i32, i32)> {
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
pub(super) fn x_tick(svg: &str, label: &str) -> i32 {
    texts(svg)
        .find(|(attributes, text)| {
            *text == label && attribute(attributes, "text-anchor") == Some("middle")
        })
        .map(|(attributes, _)| number(&attributes, "x"))
        .unwrap()
}

/// The y position of the y-axis tick labelled `label` (y tick labels are right-aligned).
pub(super) fn y_tick(svg: &str, label: &str) -> i32 {
    texts(svg)
        .find(|(attributes, text)| {
            *text == label && attribute(attributes, "text-anchor") == Some("end")
        })
        .map(|(attributes, _)| number(&attributes, "y"))
        .unwrap()
}
