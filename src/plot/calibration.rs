//! Charts that show miscalibration: the reliability diagram, the confidence histogram under it,
//! and classwise reliability diagrams as small multiples.
//!
//! # What it draws
//! * **Reliability diagram** (DeGroot & Fienberg 1983; Niculescu-Mizil & Caruana, ICML 2005;
//!   laid out as in Guo et al., "On Calibration of Modern Neural Networks", ICML 2017, fig. 1):
//!   confidence on x, accuracy on y, both on `[0, 1]`. Each non-empty bin is a bar over
//!   `[lower, upper]` as tall as the bin's accuracy; the gap between the bar top and the bin's
//!   mean confidence is shaded and hatched, so it reads without colour: an overconfident gap
//!   (above the bar) in translucent vermillion, an underconfident one (inside the bar) in a
//!   colour of its own, nearly opaque yellow, each with its legend entry when drawn. A
//!   perfectly calibrated model has `acc_b = conf_b`: its bars end on the dashed diagonal, and
//!   ECE is the count-weighted mean height of the gaps. Empty bins are drawn as empty (a faint
//!   dotted outline at the axis), never as zero-height bars (docs/definitions.md).
//!   Equal-mass bins have data-dependent bounds and can be very narrow near confidence 1, so
//!   every bar is at least [`MIN_BAR_WIDTH`] CSS pixels wide.
//! * **Confidence histogram**: the share of examples per equal-width confidence bin, with the
//!   accuracy (solid) and the mean confidence (dashed) as vertical lines and the gap between
//!   them shaded like the diagram's gaps — an overconfident network has its mean confidence to
//!   the right of its accuracy.
//! * **Classwise reliability** (Kull et al., NeurIPS 2019): one small diagram per class, class
//!   `k` binned on its own probability `p_k` with "accuracy" the fraction of bin members
//!   labelled `k` (see `calibration::classwise_bins`).

use super::*;
use crate::calibration::Bin;

/// A tick label with one decimal: `0.0`, `0.2`, …, `1.0`.
fn one_decimal(value: &f64) -> String {
    format!("{value:.1}")
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

/// The legend of a reliability chart: a gap of each direction drawn, and "empty bin" only when
/// some bin is empty.
fn reliability_legend<'a>(
    bar_label: &str,
    bins: impl Iterator<Item = &'a Bin>,
) -> Vec<LegendEntry> {
    let (mut any_empty, mut over, mut under) = (false, false, false);
    for bin in bins {
        if bin.count == 0 {
            any_empty = true;
        } else if bin.accuracy != bin.confidence {
            match Gap::of(bin.accuracy, bin.confidence) {
                Gap::Over => over = true,
                Gap::Under => under = true,
            }
        }
    }
    let mut entries = vec![LegendEntry::new(LegendMark::Bar(BLUE), bar_label)];
    for (present, gap) in [(over, Gap::Over), (under, Gap::Under)] {
        if present {
            entries.push(LegendEntry::new(LegendMark::Gap(gap), gap.label()));
        }
    }
    entries.extend([LegendEntry::new(
        LegendMark::Line {
            colour: DARK_GREY,
            width: 1.5,
            dashed: true,
        },
        "perfect calibration",
    )]);
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
            draw_gap(
                &pixels.canvas,
                gap,
                Gap::of(bin.accuracy, bin.confidence),
                metrics,
            )?;
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
    let legend = reliability_legend("accuracy", bins.iter());
    let rest = draw_legend(area, &legend, metrics.px(Y_LABEL_AREA), metrics)?;
    let mut chart = build_chart(&rest, 0.0..1.0, 0.0..1.0, FULL_LAYOUT, metrics)?;
    let axes = Axes {
        tick_font: TICK_FONT,
        tick_labels: (TICK_LABELS, TICK_LABELS),
        tick_mark: TICK_MARK,
        descriptions: (Some("confidence"), Some("accuracy")),
        x_format: &one_decimal,
        y_format: &one_decimal,
        grid: (true, true),
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
    let mut legend = vec![
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
    ];
    if mean_confidence != accuracy {
        let gap = Gap::of(accuracy, mean_confidence);
        legend.push(LegendEntry::new(
            LegendMark::Gap(gap),
            format!(
                "{} {:.1} pts",
                gap.label(),
                100.0 * (mean_confidence - accuracy).abs()
            ),
        ));
    }
    let rest = draw_legend(area, &legend, metrics.px(Y_LABEL_AREA), metrics)?;

    let shares = percent_shares(counts);
    // Headroom above the tallest bar; 1% when every bin is empty.
    let y_max = (1.1 * shares.iter().copied().fold(0.0, f64::max)).max(1.0);
    let mut chart = build_chart(&rest, 0.0..1.0, 0.0..y_max, FULL_LAYOUT, metrics)?;
    let decimals = if y_max < 5.0 { 1 } else { 0 };
    let format_y = |y: &f64| format!("{y:.decimals$}%");
    let axes = Axes {
        tick_font: TICK_FONT,
        tick_labels: (TICK_LABELS, HISTOGRAM_Y_TICK_LABELS),
        tick_mark: TICK_MARK,
        descriptions: (Some("confidence"), Some("% of examples")),
        x_format: &one_decimal,
        y_format: &format_y,
        grid: (true, true),
    };
    draw_axes(&mut chart, &axes, metrics)?;

    let pixels = PlotPixels::new(&chart);
    // The gap band goes behind the bars; its edges are the two lines, drawn last.
    if mean_confidence != accuracy {
        let gap = PixelRect::spanning(
            pixels.point(accuracy, 0.0),
            pixels.point(mean_confidence, y_max),
        );
        shade_gap(
            &pixels.canvas,
            gap,
            Gap::of(accuracy, mean_confidence),
            metrics,
        )?;
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
    let legend = reliability_legend("observed frequency", per_class_bins.iter().flatten());
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

    let axes = Axes {
        tick_font: PANEL_TICK_FONT,
        tick_labels: (PANEL_TICK_LABELS, PANEL_TICK_LABELS),
        tick_mark: PANEL_TICK_MARK,
        descriptions: (None, None),
        x_format: &one_decimal,
        y_format: &one_decimal,
        grid: (true, true),
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
        let mut chart = build_chart(panel, 0.0..1.0, 0.0..1.0, layout, metrics)?;
        draw_axes(&mut chart, &axes, metrics)?;
        draw_reliability_bins(&chart, bins, metrics)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::calibration::{reliability_bins, Binning};
    use crate::data::FASHION_MNIST_CLASSES;

    /// Legend swatches drawn as filled rectangles of the bar colour and of the gap colour.
    const LEGEND_BAR_SWATCHES: usize = 1;
    const LEGEND_GAP_SWATCHES: usize = 1;

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
        // No gap is drawn, so the legend has none either.
        assert!(filled_rects(&svg, VERMILLION_HEX).is_empty());
        assert!(!has_text(&svg, "overconfident gap"));
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
        assert!(has_text(&svg, "overconfident gap"));
        assert!(!has_text(&svg, "underconfident gap"));
        assert!(filled_rects(&svg, YELLOW_HEX).is_empty());
        // An underconfident bin (accuracy above confidence) gets its own yellow gap, nearly
        // opaque over the bar, and its own legend entry.
        let mut mixed = bins.clone();
        mixed[2].accuracy = mixed[2].confidence + 0.1;
        let svg = diagram((560, 560), &mixed, 1.0).unwrap();
        let under = filled_rects(&svg, YELLOW_HEX);
        assert_eq!(under.len(), 1 + LEGEND_GAP_SWATCHES);
        assert!(under
            .iter()
            .all(|gap| attribute(gap, "opacity") == Some("0.85")));
        assert_eq!(
            filled_rects(&svg, VERMILLION_HEX).len(),
            with_gap - 1 + LEGEND_GAP_SWATCHES
        );
        assert!(has_text(&svg, "underconfident gap") && has_text(&svg, "overconfident gap"));
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
        assert!(filled_rects(&svg, VERMILLION_HEX).is_empty());
        assert!(filled_rects(&svg, YELLOW_HEX).is_empty());
        assert!(!has_text(&svg, "overconfident gap") && !has_text(&svg, "underconfident gap"));
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
            "overconfident gap 10.0 pts",
            "confidence",
            "% of examples",
        ] {
            assert!(has_text(&svg, label), "{label} missing");
        }
        // Equal summaries: no gap band and no gap in the legend.
        let svg = render((560, 200), |area| {
            confidence_histogram(area, &counts, 0.9, 0.9, &ChartStyle::default())
        })
        .unwrap();
        assert!(filled_rects(&svg, VERMILLION_HEX).is_empty());
        assert!(filled_rects(&svg, YELLOW_HEX).is_empty());
        // Accuracy above mean confidence: an underconfident band.
        let svg = render((560, 200), |area| {
            confidence_histogram(area, &counts, 0.2, 0.9, &ChartStyle::default())
        })
        .unwrap();
        assert_eq!(
            filled_rects(&svg, YELLOW_HEX).len(),
            1 + LEGEND_GAP_SWATCHES
        );
        assert!(has_text(&svg, "underconfident gap 70.0 pts"));
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
}
