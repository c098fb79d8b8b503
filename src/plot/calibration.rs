//! Charts that show miscalibration: the reliability diagram, the confidence histogram under it,
//! and reliability diagrams as small multiples (per class, and per recalibration method).
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
//! * **Smooth reliability diagram** (Błasiok & Nakkiran, "Smooth ECE", ICLR 2024): the
//!   kernel-smoothed accuracy against confidence over the density of the confidences, from
//!   `smooth_calibration::smooth_reliability`; no bins to place.
//! * **Classwise reliability** (Kull et al., NeurIPS 2019): one small diagram per class, class
//!   `k` binned on its own probability `p_k` with "accuracy" the fraction of bin members
//!   labelled `k` (see `calibration::Evaluation::classwise_bins`).
//! * **Reliability per recalibration method**: the same small multiples, one top-label
//!   reliability diagram per method of `recalibration` (uncalibrated, temperature scaling,
//!   vector scaling, histogram binning, isotonic regression), side by side.

use super::*;
use crate::bootstrap::ReliabilityBand;
use crate::calibration::Bin;
use crate::smooth_calibration::SmoothReliability;

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
    entries.push(LegendEntry::new(DIAGONAL_MARK, "perfect calibration"));
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
    draw_diagonal(&pixels, metrics)
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
    let legend = reliability_legend("accuracy", bins.iter());
    on_reliability_axes(area, &legend, style, |chart, metrics| {
        draw_reliability_bins(chart, bins, metrics)
    })
}

/// Draws `legend` over confidence (x) against accuracy (y) axes on `[0, 1]²`, laid out as the
/// reliability diagram, then `draw` on that chart.
pub(super) fn on_reliability_axes<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    legend: &[LegendEntry],
    style: &ChartStyle,
    draw: impl FnOnce(&Chart<'_, DB>, Metrics) -> Result<(), PlotError>,
) -> Result<(), PlotError> {
    let metrics = Metrics::fit(style, area.dim_in_pixel(), DIAGRAM_SIZE)?;
    let rest = draw_legend(area, legend, metrics.px(Y_LABEL_AREA), metrics)?;
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
    draw(&chart, metrics)
}

/// Share of the chart's height the density band reaches at its tallest.
const DENSITY_BAND_HEIGHT: f64 = 0.25;
/// The smooth curve is drawn where about this many examples lie within one bandwidth of the
/// confidence (`n·δ̂(t)·2σ`): fewer, and the kernel regression averages far-away examples.
const SMOOTH_CURVE_MIN_EXAMPLES: f64 = 10.0;

/// Whether the smooth curve is drawn where the confidences' density is `density`: about
/// [`SMOOTH_CURVE_MIN_EXAMPLES`] examples or more lie within one bandwidth. The chart asks it of
/// each segment (its ends' mean density), the figure's CSV of each point.
pub fn smooth_curve_shown(curve: &SmoothReliability, density: f64) -> bool {
    density * curve.examples as f64 * 2.0 * curve.bandwidth >= SMOOTH_CURVE_MIN_EXAMPLES
}
/// The smooth curve's width, in curve widths: `a + b·share` of the peak density.
const SMOOTH_CURVE_WIDTH_RANGE: (f64, f64) = (0.5, 1.5);

/// Draws the smooth reliability diagram (Błasiok & Nakkiran, ICLR 2024) of `curve` into
/// `area`, with the reliability diagram's axes and margins: the density of the confidences as
/// a grey band along the bottom (its tallest point at a quarter of the height), the
/// kernel-smoothed accuracy as a blue line (clipped to `[0, 1]`), drawn only where about ten
/// examples or more lie within one bandwidth and thicker where the density is higher, the
/// bootstrap band of `band` (when given) shaded in light blue where the curve is drawn, and the
/// dashed diagonal. The legend names the bandwidth and the band's level. No bins, so nothing
/// moves with bin edges.
///
/// # Errors
/// [`PlotError::CurveLengthMismatch`] when the curve's vectors differ in length,
/// [`PlotError::BandLengthMismatch`] when the band's do not match them,
/// [`PlotError::NotFinite`] for a NaN or infinite accuracy, [`PlotError::NegativeDensity`],
/// [`PlotError::InvalidScale`], [`PlotError::AreaTooSmall`] below 40% of about 240×220 CSS
/// pixels, and [`PlotError::Drawing`] when the backend fails.
pub fn smooth_reliability_diagram<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    curve: &SmoothReliability,
    band: Option<&ReliabilityBand>,
    style: &ChartStyle,
) -> Result<(), PlotError> {
    let points = curve.confidence.len();
    if curve.accuracy.len() != points || curve.density.len() != points {
        return Err(PlotError::CurveLengthMismatch {
            confidences: points,
            accuracies: curve.accuracy.len(),
            densities: curve.density.len(),
        });
    }
    if let Some(b) = band.filter(|b| b.lower.len() != points || b.upper.len() != points) {
        return Err(PlotError::BandLengthMismatch {
            points,
            lower: b.lower.len(),
            upper: b.upper.len(),
        });
    }
    let band_values = band
        .into_iter()
        .flat_map(|b| b.lower.iter().chain(&b.upper));
    for (name, values) in [
        (
            "smoothed accuracy",
            curve.accuracy.iter().collect::<Vec<_>>(),
        ),
        ("bootstrap band", band_values.collect()),
    ] {
        if let Some(&&value) = values.iter().find(|a| !a.is_finite()) {
            return Err(PlotError::NotFinite { name, value });
        }
    }
    if let Some((index, &value)) = curve
        .density
        .iter()
        .enumerate()
        .find(|(_, &d)| d.is_nan() || d < 0.0)
    {
        return Err(PlotError::NegativeDensity { index, value });
    }
    let legend = [
        LegendEntry::new(
            CURVE_MARK,
            format!("accuracy, smoothed (σ = {:.3})", curve.bandwidth),
        ),
        LegendEntry::new(LegendMark::Bar(BAR_GREY), "density of confidences"),
        LegendEntry::new(DIAGONAL_MARK, "perfect calibration"),
    ];
    let legend: Vec<LegendEntry> = legend
        .into_iter()
        .chain(band.map(|b| {
            LegendEntry::new(
                LegendMark::Band(BLUE),
                format!("{:.0}% bootstrap band", 100.0 * b.level),
            )
        }))
        .collect();
    on_reliability_axes(area, &legend, style, |chart, metrics| {
        draw_smooth_curve(chart, curve, band, metrics)
    })
}

/// Draws the density band, the smoothed accuracy and the diagonal of a smooth reliability
/// diagram on `[0, 1]²`.
fn draw_smooth_curve<DB: DrawingBackend>(
    chart: &Chart<'_, DB>,
    curve: &SmoothReliability,
    band: Option<&ReliabilityBand>,
    metrics: Metrics,
) -> Result<(), PlotError> {
    let pixels = PlotPixels::new(chart);
    let tallest = curve.density.iter().copied().fold(0.0, f64::max);
    if tallest > 0.0 {
        let scale = DENSITY_BAND_HEIGHT / tallest;
        let mut outline: Vec<(i32, i32)> = curve
            .confidence
            .iter()
            .zip(&curve.density)
            .map(|(&t, &d)| pixels.point(t, d * scale))
            .collect();
        outline.push(pixels.point(1.0, 0.0));
        outline.push(pixels.point(0.0, 0.0));
        pixels
            .canvas
            .draw(&Polygon::new(outline, BAR_GREY.filled()))?;
    }
    // Where hardly any confidence lies, the kernel regression averages far-away examples: the
    // curve is drawn only where about ten lie within σ, and thicker where more lie (as relplot
    // draws it).
    let at = |p: usize, value: f64| pixels.point(curve.confidence[p], value.clamp(0.0, 1.0));
    let segment_density = |p: usize| 0.5 * (curve.density[p - 1] + curve.density[p]);
    let drawn = |p: usize| smooth_curve_shown(curve, segment_density(p));
    if let Some(band) = band {
        // One polygon per run of drawn segments: seams between polygons would show through
        // the band's transparency.
        let mut p = 1;
        while p < curve.confidence.len() {
            if !drawn(p) {
                p += 1;
                continue;
            }
            let start = p - 1;
            while p < curve.confidence.len() && drawn(p) {
                p += 1;
            }
            let outline: Vec<(i32, i32)> = (start..p)
                .map(|q| at(q, band.upper[q]))
                .chain((start..p).rev().map(|q| at(q, band.lower[q])))
                .collect();
            pixels
                .canvas
                .draw(&Polygon::new(outline, BLUE.mix(BAND_OPACITY).filled()))?;
        }
    }
    for p in (1..curve.confidence.len()).filter(|&p| drawn(p)) {
        let share = segment_density(p) / tallest;
        let width = CURVE_WIDTH * (SMOOTH_CURVE_WIDTH_RANGE.0 + SMOOTH_CURVE_WIDTH_RANGE.1 * share);
        pixels.canvas.draw(&PathElement::new(
            vec![at(p - 1, curve.accuracy[p - 1]), at(p, curve.accuracy[p])],
            BLUE.stroke_width(metrics.stroke(width)),
        ))?;
    }
    draw_diagonal(&pixels, metrics)
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
    let y_max = (Y_HEADROOM * shares.iter().copied().fold(0.0, f64::max)).max(1.0);
    let x_axis = HistogramXAxis {
        range: 0.0..1.0,
        tick_labels: TICK_LABELS,
        format: &one_decimal,
        description: "confidence",
        grid: true,
    };
    let chart = share_histogram_chart(&rest, x_axis, y_max, "% of examples", metrics)?;

    let pixels = PlotPixels::new(&chart);
    // The gap band goes behind the bars, hatched but not outlined: its edges are the two lines,
    // drawn last.
    if mean_confidence != accuracy {
        let band = PixelRect::spanning(
            pixels.point(accuracy, 0.0),
            pixels.point(mean_confidence, y_max),
        );
        let gap = Gap::of(accuracy, mean_confidence);
        let hatching = Some(gap.line(metrics));
        draw_rect(
            &pixels.canvas,
            band,
            gap.fill().filled(),
            hatching,
            None,
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
    for (x, colour, dashed) in [(accuracy, BLUE, false), (mean_confidence, ORANGE, true)] {
        draw_line(
            &pixels.canvas,
            pixels.point(x, 0.0),
            pixels.point(x, y_max),
            colour.stroke_width(metrics.stroke(2.0)),
            dashed,
            metrics,
        )?;
    }
    Ok(())
}

/// Rows and columns of small multiples: at most `max_rows` rows on a wide area (as many
/// columns as that takes), at most `max_rows` columns on a tall one.
fn grid_shape(panels: usize, max_rows: usize, (width, height): (u32, u32)) -> (usize, usize) {
    let across = panels.clamp(1, max_rows);
    let along = panels.div_ceil(across);
    if width >= height {
        (across, along)
    } else {
        (along, across)
    }
}

/// What a set of reliability small multiples says in its shared legend and axis descriptions.
struct PanelText<'a> {
    bar_label: &'a str,
    x_description: &'a str,
    y_description: &'a str,
    /// Rows on a wide area (columns on a tall one).
    max_rows: usize,
}

/// Checks the panels' bins: the first invalid one, by panel.
fn check_panels(panels: &[&[Bin]]) -> Result<(), PlotError> {
    for (panel, bins) in panels.iter().enumerate() {
        if let Some((index, bin)) = first_invalid_bin(bins) {
            return Err(PlotError::InvalidPanelBin {
                panel,
                index,
                bin: bin.clone(),
            });
        }
    }
    Ok(())
}

/// Draws one small reliability diagram per panel into `area`, titled, with compact axes
/// (ticks at 0, 0.5 and 1), one shared legend and one pair of axis descriptions. The panels'
/// bins must have been checked ([`check_panels`]).
fn reliability_panels<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panels: &[&[Bin]],
    titles: &[&str],
    text: &PanelText,
    style: &ChartStyle,
) -> Result<(), PlotError> {
    let (rows, columns) = grid_shape(panels.len(), text.max_rows, area.dim_in_pixel());
    let comfortable = (
        columns as f64 * PANEL_SIZE.0 + SHARED_DESCRIPTION_STRIP,
        rows as f64 * PANEL_SIZE.1 + SHARED_DESCRIPTION_STRIP + CLASSWISE_LEGEND_ALLOWANCE,
    );
    let metrics = Metrics::fit(style, area.dim_in_pixel(), comfortable)?;
    let legend = reliability_legend(text.bar_label, panels.iter().copied().flatten());
    let strip = metrics.px(SHARED_DESCRIPTION_STRIP);
    let rest = draw_legend(area, &legend, strip, metrics)?;

    let (y_strip, right) = rest.split_horizontally(strip);
    let (_, right_height) = right.dim_in_pixel();
    let (grid, x_strip) = right.split_vertically(right_height as i32 - strip);
    let description = metrics.font(DESCRIPTION_FONT, &TEXT_GREY);
    let centred = Pos::new(HPos::Center, VPos::Center);
    let (grid_width, grid_height) = grid.dim_in_pixel();
    x_strip.draw_text(
        text.x_description,
        &description.pos(centred),
        (grid_width as i32 / 2, strip / 2),
    )?;
    y_strip.draw_text(
        text.y_description,
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
    let areas = grid.split_evenly((rows, columns));
    for ((panel, bins), &title) in areas.iter().zip(panels).zip(titles) {
        let layout = ChartLayout {
            margin_top: PANEL_MARGIN,
            margin_right: PANEL_MARGIN_RIGHT,
            x_label_area: PANEL_X_LABEL_AREA,
            y_label_area: PANEL_Y_LABEL_AREA,
            title: Some(title),
        };
        let mut chart = build_chart(panel, 0.0..1.0, 0.0..1.0, layout, metrics)?;
        draw_axes(&mut chart, &axes, metrics)?;
        draw_reliability_bins(&chart, bins, metrics)?;
    }
    Ok(())
}

/// Draws one small reliability diagram per class into `area`, titled with the class name: two
/// rows of panels when the area is at least as wide as tall (2 × 5 for ten classes), two
/// columns otherwise (5 × 2); with many classes, about √(K × short side / long side) rows (or
/// columns), so that the panels stay about square. Panels have compact axes (ticks at 0, 0.5 and 1) and share one
/// legend and one pair of axis descriptions. `per_class_bins[k]` holds class `k`'s bins from
/// `calibration::Evaluation::classwise_bins`.
///
/// # Errors
/// [`PlotError::ClassCountMismatch`] unless there is one name per class,
/// [`PlotError::NoClasses`] for none, [`PlotError::InvalidPanelBin`] (the panel is the class)
/// for the first invalid bin, [`PlotError::InvalidScale`], [`PlotError::AreaTooSmall`] below
/// 40% of about 84×84 CSS pixels per panel, and [`PlotError::Drawing`] when the backend fails.
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
    let panels: Vec<&[Bin]> = per_class_bins.iter().map(Vec::as_slice).collect();
    check_panels(&panels)?;
    // Two rows (two columns on a tall area) for ten classes; more classes wrap into as many as
    // keep the panels about square.
    let (width, height) = area.dim_in_pixel();
    let aspect = f64::from(width.min(height).max(1)) / f64::from(width.max(height).max(1));
    let max_rows = ((panels.len() as f64 * aspect).sqrt().round() as usize).max(2);
    let text = PanelText {
        bar_label: "observed frequency",
        x_description: "predicted probability of the class",
        y_description: "observed frequency",
        max_rows,
    };
    reliability_panels(area, &panels, class_names, &text, style)
}

/// One panel of [`method_reliability`]: a recalibration method's title and its top-label
/// reliability bins.
#[derive(Clone, Copy, Debug)]
pub struct MethodPanel<'a> {
    pub title: &'a str,
    pub bins: &'a [Bin],
}

/// Draws the top-label reliability diagram of each recalibration method side by side (one row
/// when the area is at least as wide as tall, one column otherwise), laid out as the classwise
/// small multiples, with confidence against accuracy.
///
/// # Errors
/// [`PlotError::NoPanels`] for none, [`PlotError::InvalidPanelBin`] for the first invalid bin,
/// [`PlotError::InvalidScale`], [`PlotError::AreaTooSmall`] below 40% of about 84×84 CSS
/// pixels per panel, and [`PlotError::Drawing`] when the backend fails.
pub fn method_reliability<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    methods: &[MethodPanel],
    style: &ChartStyle,
) -> Result<(), PlotError> {
    if methods.is_empty() {
        return Err(PlotError::NoPanels);
    }
    let panels: Vec<&[Bin]> = methods.iter().map(|method| method.bins).collect();
    check_panels(&panels)?;
    let titles: Vec<&str> = methods.iter().map(|method| method.title).collect();
    let text = PanelText {
        bar_label: "accuracy",
        x_description: "confidence",
        y_description: "accuracy",
        max_rows: 1,
    };
    reliability_panels(area, &panels, &titles, &text, style)
}

#[cfg(test)]
#[path = "calibration_tests.rs"]
mod tests;
