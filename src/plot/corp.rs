//! The CORP reliability diagram (Dimitriadis, Gneiting & Jordan, PNAS 2021): the isotonic
//! (PAV) regression of correctness on the top-label confidence, on the reliability diagram's
//! axes (`corp::corp` fits it). Its blocks are bins the data chose: the curve is flat across
//! each block's confidences at the share of its images right, and runs straight from one
//! block's highest confidence to the next block's lowest, where no image lies.

use super::calibration::on_reliability_axes;
use super::*;
use crate::corp::Corp;

/// Draws the CORP diagram of `corp` into `area`: PAV's curve in blue over the dashed diagonal,
/// with a legend naming the blocks and the Brier score's MCB and DSC. Comfortable from about
/// 240×220 CSS pixels, as the reliability diagram.
///
/// # Errors
/// [`PlotError::NotFinite`] for a block whose value or confidence is not finite,
/// [`PlotError::InvalidScale`], [`PlotError::AreaTooSmall`] below 40% of the comfortable size,
/// and [`PlotError::Drawing`] when the backend fails.
pub fn corp_reliability_diagram<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    corp: &Corp,
    style: &ChartStyle,
) -> Result<(), PlotError> {
    for block in &corp.blocks {
        for (name, value) in [
            ("PAV value", block.value),
            ("block confidence", block.lowest),
            ("block confidence", block.highest),
        ] {
            if !value.is_finite() {
                return Err(PlotError::NotFinite { name, value });
            }
        }
    }
    let blocks = corp.blocks.len();
    let legend = [
        LegendEntry::new(
            CURVE_MARK,
            format!(
                "share right, PAV ({blocks} block{})",
                if blocks == 1 { "" } else { "s" }
            ),
        ),
        LegendEntry::new(DIAGONAL_MARK, "perfect calibration"),
        LegendEntry::new(
            LegendMark::Bar(BAR_GREY),
            format!(
                "Brier MCB {:.4}, DSC {:.4}",
                corp.brier.miscalibration, corp.brier.discrimination
            ),
        ),
    ];
    on_reliability_axes(area, &legend, style, |chart, metrics| {
        let pixels = PlotPixels::new(chart);
        let points = corp
            .blocks
            .iter()
            .flat_map(|block| [(block.lowest, block.value), (block.highest, block.value)]);
        draw_polyline(&pixels, points, BLUE, metrics)?;
        draw_diagonal(&pixels, metrics)
    })
}

#[cfg(test)]
#[path = "corp_tests.rs"]
mod tests;
