//! Charts of split conformal prediction (docs/definitions.md, "Split conformal prediction"):
//! with `k = ⌈(n + 1)(1 − α)⌉` and `q̂` the `k`-th smallest of `n` calibration scores, the sets
//! `C(x) = {y : s(x, y) ≤ q̂}` cover the true label with probability
//! `1 − α ≤ P(Y ∈ C(X)) ≤ 1 − α + 1/(n + 1)` (the upper bound when scores do not tie), and over
//! random calibration sets the coverage of a large test set follows `Beta(k, n + 1 − k)` (Vovk,
//! ACML 2012; the experiment as in Angelopoulos & Bates, "A Gentle Introduction to Conformal
//! Prediction and Distribution-Free Uncertainty Quantification", 2021).
//!
//! # What it draws
//! * **Set-size histogram**: the share of evaluation images per set size `0..=K`. Empty sets
//!   (vermillion, hatched) are the method saying "none of the labels"; singletons (green) are
//!   the useful answers; larger sets (blue) are hedges.
//! * **Per-class coverage**: one horizontal bar per class (names on the y axis read on a
//!   phone), the `1 − α` target as a dashed vertical line; classes below it are orange and
//!   hatched. Marginal conformal prediction promises `1 − α` on average, not per class.
//! * **Size-stratified coverage**: coverage among the images whose set size falls in each
//!   stratum (0–1, 2–3, 4–6, 7–10), with the stratum's count above its bar.
//! * **α sweep**: coverage (top panel, over the guarantee's lower edge `y = 1 − α`) and average
//!   set size (bottom panel) against α, with the current α marked in both.
//! * **Coverage experiment**: the density histogram of the coverages of `R` random
//!   calibration/evaluation splits, the `Beta(k, n + 1 − k)` density over it, and the
//!   guarantee band `[1 − α, 1 − α + 1/(n + 1)]` shaded between dashed lines.
//!
//! Empty data draw empty axes (the per-class chart, which needs classes, refuses with
//! [`PlotError::NoClasses`]); values that are not coverages are refused with a typed
//! [`PlotError`]; the α sweep skips non-finite values.

use plotters::element::Circle;
use plotters::style::WHITE;

use super::*;
use crate::conformal::{Stratum, SweepPoint};

/// Comfortable sizes (CSS pixels) of the charts; smaller areas scale a chart down.
const SET_SIZE_SIZE: (f64, f64) = (240.0, 160.0);
const STRATA_SIZE: (f64, f64) = (240.0, 160.0);
const SWEEP_SIZE: (f64, f64) = (240.0, 260.0);
const EXPERIMENT_SIZE: (f64, f64) = (240.0, 160.0);
/// The per-class chart: width, height without the class rows, and height per class.
const PER_CLASS_WIDTH: f64 = 240.0;
const PER_CLASS_BASE_HEIGHT: f64 = 80.0;
const PER_CLASS_ROW: f64 = 14.0;

/// Fraction of a category's slot its bar fills.
const BAR_FILL: f64 = 0.8;
/// Shortest bar, in CSS pixels, for a non-zero value, so that a rare set size stays visible.
const MIN_BAR_LENGTH: f64 = 2.0;
/// Font of values written on a chart: shares, counts, "no sets" (CSS pixels).
const VALUE_FONT: f64 = 11.0;
/// Gap between a bar or line and the text that labels it (CSS pixels).
const LABEL_GAP: f64 = 3.0;
/// Least space between the shares written over neighbouring set-size bars (CSS pixels).
const SHARE_LABEL_SPACING: f64 = 4.0;
/// Width of reference lines (`1 − α`, the current α) and of curves (CSS pixels).
const REFERENCE_LINE_WIDTH: f64 = 1.5;
const CURVE_WIDTH: f64 = 2.0;
/// Height of the strip above the per-class chart that holds the label of the target line.
const TARGET_LABEL_STRIP: f64 = 16.0;
/// Label of the target coverage line.
const TARGET_LABEL: &str = "1 − α";
/// Padding (CSS pixels) right of the class names on the per-class chart.
const CLASS_NAME_PADDING: f64 = 8.0;
/// Most of the width the class names may take.
const CLASS_NAME_MAX_SHARE: f64 = 0.45;
/// Most integer ticks on the set-size axis.
const SET_SIZE_TICK_LABELS: usize = 11;
/// Headroom above the tallest set-size bar, as a factor, for the share written on it.
const SET_SIZE_HEADROOM: f64 = 1.2;
/// Top of the stratified chart's y axis: room above coverage 1 for the counts, while the
/// ticks stop at 100%.
const STRATA_Y_MAX: f64 = 1.18;
/// Lower end of the per-class coverage axis, unless a class or the target is lower.
const PER_CLASS_AXIS_FLOOR: f64 = 0.5;
/// Space left of the lowest per-class coverage and of the target on that axis.
const PER_CLASS_AXIS_PADDING: f64 = 0.05;
/// Height of the α sweep's upper panel's strip below its plot (it has no tick labels).
const SWEEP_TOP_X_LABEL_AREA: f64 = 8.0;
/// Smallest α range of the sweep's x axis, and the padding of its y ranges.
const SWEEP_MIN_ALPHA_SPAN: f64 = 0.02;
const SWEEP_Y_PADDING: f64 = 0.05;
/// Bins of the coverage experiment's histogram.
const EXPERIMENT_BINS: usize = 36;
/// Smallest range of the experiment's histogram (coverage units).
const EXPERIMENT_MIN_SPAN: f64 = 0.01;
/// Headroom above the tallest bar or density, as a factor.
const Y_HEADROOM: f64 = 1.1;

/// The axis range of `categories` slots one unit wide, centred on `0, 1, …` (at least one).
fn category_range(categories: usize) -> Range<f64> {
    -0.5..(categories.max(1) as f64 - 0.5)
}

/// The category whose slot is centred on tick `value`, if it is one.
fn category_index(value: f64, categories: usize) -> Option<usize> {
    let rounded = value.round();
    ((value - rounded).abs() < 1e-6 && rounded >= 0.0 && rounded < categories as f64)
        .then_some(rounded as usize)
}

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

/// A share in percent written on its bar: one decimal below 10%.
fn share_label(share_percent: f64) -> String {
    if share_percent < 10.0 {
        format!("{share_percent:.1}%")
    } else {
        format!("{share_percent:.0}%")
    }
}

/// "0–1", "2–3", "4–6", "7–10"; a stratum of one size is that size.
fn stratum_label(stratum: &Stratum) -> String {
    if stratum.min_size == stratum.max_size {
        stratum.min_size.to_string()
    } else {
        format!("{}–{}", stratum.min_size, stratum.max_size)
    }
}

fn check_coverage(index: usize, value: f64) -> Result<(), PlotError> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(PlotError::InvalidCoverage { index, value })
    }
}

/// The rectangle of a bar from `base` to `end` (pixels along the value axis) across
/// `[across.0, across.1]`, lengthened away from the base to at least `min_length` pixels.
/// `vertical` bars run along y (pixel y grows downwards), horizontal ones along x.
fn bar_rect(across: (i32, i32), base: i32, end: i32, min_length: i32, vertical: bool) -> PixelRect {
    let end = if vertical {
        end.min(base - min_length)
    } else {
        end.max(base + min_length)
    };
    if vertical {
        PixelRect::spanning((across.0, base), (across.1, end))
    } else {
        PixelRect::spanning((base, across.0), (end, across.1))
    }
}

/// The legend of the coverage bars: at or above the target in blue, below it orange and
/// hatched, and the dashed target line when it is not labelled on the chart.
fn coverage_legend(with_target_line: bool) -> Vec<LegendEntry> {
    let mut entries = vec![
        LegendEntry::new(LegendMark::Bar(BLUE), "coverage ≥ 1 − α"),
        LegendEntry::new(LegendMark::HatchedBar(ORANGE), "below 1 − α"),
    ];
    if with_target_line {
        entries.push(LegendEntry::new(target_line_mark(), TARGET_LABEL));
    }
    entries
}

fn target_line_mark() -> LegendMark {
    LegendMark::Line {
        colour: DARK_GREY,
        width: REFERENCE_LINE_WIDTH,
        dashed: true,
    }
}

fn target_line_style(metrics: Metrics) -> ShapeStyle {
    DARK_GREY.stroke_width(metrics.stroke(REFERENCE_LINE_WIDTH))
}

/// Draws a coverage bar: blue at or above `target`, orange and hatched below it.
fn draw_coverage_bar<DB: DrawingBackend>(
    canvas: &DrawingArea<DB, Shift>,
    rect: PixelRect,
    coverage: f64,
    target: f64,
    metrics: Metrics,
) -> Result<(), PlotError> {
    if coverage < target {
        draw_hatched_bar(canvas, rect, ORANGE, metrics)
    } else {
        draw_bar(canvas, rect, BLUE, metrics)
    }
}

/// Draws the histogram of prediction-set sizes into `area`: for each size `s` in
/// `0..size_counts.len()` (`size_counts[s]` evaluation images have a set of `s` labels, so
/// `K + 1` entries for `K` classes) a bar as tall as the share of images, labelled with it when
/// the labels fit. Empty sets are vermillion and hatched, singletons green, larger sets blue;
/// a non-zero share is at least 2 CSS pixels tall. No counts, or only zeros, draw empty axes.
/// Comfortable from about 240×160 CSS pixels.
///
/// # Errors
/// [`PlotError::InvalidScale`], [`PlotError::AreaTooSmall`] below 40% of the comfortable size,
/// and [`PlotError::Drawing`] when the backend fails.
pub fn set_size_histogram<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    size_counts: &[usize],
    style: &ChartStyle,
) -> Result<(), PlotError> {
    let metrics = Metrics::fit(style, area.dim_in_pixel(), SET_SIZE_SIZE)?;
    let legend = [
        LegendEntry::new(LegendMark::HatchedBar(VERMILLION), "empty set"),
        LegendEntry::new(LegendMark::Bar(GREEN), "singleton"),
        LegendEntry::new(LegendMark::Bar(BLUE), "2 or more labels"),
    ];
    let rest = draw_legend(area, &legend, metrics.px(Y_LABEL_AREA), metrics)?;

    let shares = percent_shares(size_counts);
    let y_max = (SET_SIZE_HEADROOM * shares.iter().copied().fold(0.0, f64::max)).max(1.0);
    let slots = size_counts.len().max(1);
    let mut chart = build_chart(
        &rest,
        category_range(slots),
        0.0..y_max,
        FULL_LAYOUT,
        metrics,
    )?;
    let format_x =
        |x: &f64| category_index(*x, slots).map_or_else(String::new, |size| size.to_string());
    let decimals = if y_max < 5.0 { 1 } else { 0 };
    let format_y = |y: &f64| format!("{:.decimals$}%", y + 0.0);
    let axes = Axes {
        tick_font: TICK_FONT,
        tick_labels: (slots.min(SET_SIZE_TICK_LABELS), HISTOGRAM_Y_TICK_LABELS),
        tick_mark: TICK_MARK,
        descriptions: (Some("prediction set size"), Some("% of images")),
        x_format: &format_x,
        y_format: &format_y,
        grid: (false, true),
    };
    draw_axes(&mut chart, &axes, metrics)?;

    let pixels = PlotPixels::new(&chart);
    let value_font = metrics.font(VALUE_FONT, &TEXT_GREY);
    let labels: Vec<String> = shares.iter().map(|&share| share_label(share)).collect();
    let mut widest = 0;
    for (label, &count) in labels.iter().zip(size_counts) {
        if count > 0 {
            widest = widest.max(rest.estimate_text_size(label, &value_font)?.0 as i32);
        }
    }
    let slot_width = pixels.point(1.0, 0.0).0 - pixels.point(0.0, 0.0).0;
    let write_shares = widest + metrics.px(SHARE_LABEL_SPACING) <= slot_width;
    let value_style = value_font.pos(Pos::new(HPos::Center, VPos::Bottom));
    let min_length = metrics.px_at_least_one(MIN_BAR_LENGTH);
    for (size, ((&count, &share), label)) in
        size_counts.iter().zip(&shares).zip(&labels).enumerate()
    {
        if count == 0 {
            continue;
        }
        let centre = size as f64;
        let (left, base) = pixels.point(centre - BAR_FILL / 2.0, 0.0);
        let (right, top) = pixels.point(centre + BAR_FILL / 2.0, share);
        let bar = bar_rect((left, right), base, top, min_length, true);
        match size {
            0 => draw_hatched_bar(&pixels.canvas, bar, VERMILLION, metrics)?,
            1 => draw_bar(&pixels.canvas, bar, GREEN, metrics)?,
            _ => draw_bar(&pixels.canvas, bar, BLUE, metrics)?,
        }
        if write_shares {
            pixels.canvas.draw_text(
                label,
                &value_style,
                ((left + right) / 2, bar.top - metrics.px(LABEL_GAP)),
            )?;
        }
    }
    Ok(())
}

/// Draws each class's coverage into `area` as a horizontal bar, class 0 on top, named on the y
/// axis: blue at or above `target` (`1 − α`), orange and hatched below it, with `target` as a
/// dashed vertical line labelled "1 − α" above the chart. A class without evaluation images
/// (`None`) has no bar and is marked "no examples". The coverage axis runs from
/// `min(0.5, lowest coverage − 0.05, target − 0.05)` (at least 0) to 1. Comfortable from about
/// 240 × (80 + 14 per class) CSS pixels.
///
/// # Errors
/// [`PlotError::CoverageCountMismatch`] unless there is one name per class,
/// [`PlotError::NoClasses`] for none, [`PlotError::InvalidFraction`] if `target` is NaN or
/// outside `[0, 1]`, [`PlotError::InvalidCoverage`] for the first class whose coverage is,
/// [`PlotError::InvalidScale`], [`PlotError::AreaTooSmall`] below 40% of the comfortable size,
/// and [`PlotError::Drawing`] when the backend fails.
pub fn per_class_coverage<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    coverage: &[Option<f64>],
    class_names: &[&str],
    target: f64,
    style: &ChartStyle,
) -> Result<(), PlotError> {
    if coverage.len() != class_names.len() {
        return Err(PlotError::CoverageCountMismatch {
            coverages: coverage.len(),
            names: class_names.len(),
        });
    }
    if coverage.is_empty() {
        return Err(PlotError::NoClasses);
    }
    check_fraction("target coverage 1 − α", target)?;
    for (class, value) in coverage.iter().enumerate() {
        if let Some(value) = *value {
            check_coverage(class, value)?;
        }
    }
    let classes = coverage.len();
    let comfortable = (
        PER_CLASS_WIDTH,
        PER_CLASS_BASE_HEIGHT + PER_CLASS_ROW * classes as f64,
    );
    let metrics = Metrics::fit(style, area.dim_in_pixel(), comfortable)?;

    // The class names set the width of the y label area.
    let tick_font = metrics.font(TICK_FONT, &TEXT_GREY);
    let mut widest = 0;
    for name in class_names {
        widest = widest.max(area.estimate_text_size(name, &tick_font)?.0 as i32);
    }
    let (width, _) = area.dim_in_pixel();
    let name_area = f64::from(widest + metrics.px(TICK_MARK + CLASS_NAME_PADDING))
        .min(CLASS_NAME_MAX_SHARE * f64::from(width));
    let rest = draw_legend(area, &coverage_legend(false), name_area as i32, metrics)?;

    let layout = ChartLayout {
        margin_top: MARGIN_TOP + TARGET_LABEL_STRIP,
        margin_right: MARGIN_RIGHT,
        x_label_area: X_LABEL_AREA,
        y_label_area: name_area / metrics.unit,
        title: None,
    };
    let lowest = coverage.iter().flatten().copied().fold(1.0, f64::min);
    let x_min = PER_CLASS_AXIS_FLOOR
        .min(lowest - PER_CLASS_AXIS_PADDING)
        .min(target - PER_CLASS_AXIS_PADDING)
        .max(0.0);
    let mut chart = build_chart(&rest, x_min..1.0, category_range(classes), layout, metrics)?;
    // Row r (counted from the bottom) holds class `classes − 1 − r`, so class 0 is on top.
    let row_of = |class: usize| (classes - 1 - class) as f64;
    let format_y = |y: &f64| {
        category_index(*y, classes).map_or_else(String::new, |row| {
            class_names[classes - 1 - row].to_string()
        })
    };
    let decimals = tick_decimals(100.0 * (1.0 - x_min), TICK_LABELS);
    let format_x = |x: &f64| percent(*x, decimals);
    let axes = Axes {
        tick_font: TICK_FONT,
        tick_labels: (TICK_LABELS, classes),
        tick_mark: TICK_MARK,
        descriptions: (Some("coverage"), None),
        x_format: &format_x,
        y_format: &format_y,
        grid: (true, false),
    };
    draw_axes(&mut chart, &axes, metrics)?;

    let pixels = PlotPixels::new(&chart);
    let min_length = metrics.px_at_least_one(MIN_BAR_LENGTH);
    let note_style = metrics
        .font(VALUE_FONT, &TEXT_GREY)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (class, value) in coverage.iter().enumerate() {
        let row = row_of(class);
        let (base, top) = pixels.point(x_min, row + BAR_FILL / 2.0);
        match *value {
            Some(value) => {
                let (end, bottom) = pixels.point(value, row - BAR_FILL / 2.0);
                let bar = bar_rect((top, bottom), base, end, min_length, false);
                draw_coverage_bar(&pixels.canvas, bar, value, target, metrics)?;
            }
            None => {
                let (x, y) = pixels.point(x_min, row);
                pixels.canvas.draw_text(
                    "no examples",
                    &note_style,
                    (x + metrics.px(LABEL_GAP), y),
                )?;
            }
        }
    }
    let line_top = pixels.point(target, category_range(classes).end);
    let line_bottom = pixels.point(target, category_range(classes).start);
    draw_line(
        &pixels.canvas,
        line_top,
        line_bottom,
        target_line_style(metrics),
        true,
        metrics,
    )?;
    let (offset_x, offset_y) = pixels.offset_in(&rest);
    rest.draw_text(
        TARGET_LABEL,
        &metrics
            .font(TICK_FONT, &TEXT_GREY)
            .pos(Pos::new(HPos::Center, VPos::Bottom)),
        (
            offset_x + line_top.0,
            offset_y + line_top.1 - metrics.px(LABEL_GAP),
        ),
    )?;
    Ok(())
}

/// Draws the coverage of each set-size stratum into `area` (the strata of
/// `SetMetrics::size_stratified`, labelled "0–1", "2–3", "4–6", "7–10" from their sizes): a bar
/// as tall as the stratum's coverage with "n = count" above it, blue at or above `target`
/// (`1 − α`) and orange and hatched below, and `target` as a dashed horizontal line. An empty
/// stratum keeps its slot, marked "no sets". No strata draw empty axes. Comfortable from about
/// 240×160 CSS pixels.
///
/// # Errors
/// [`PlotError::InvalidFraction`] if `target` is NaN or outside `[0, 1]`,
/// [`PlotError::InvalidCoverage`] for the first stratum whose coverage is,
/// [`PlotError::InvalidScale`], [`PlotError::AreaTooSmall`] below 40% of the comfortable size,
/// and [`PlotError::Drawing`] when the backend fails.
pub fn stratified_coverage<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    strata: &[Stratum],
    target: f64,
    style: &ChartStyle,
) -> Result<(), PlotError> {
    check_fraction("target coverage 1 − α", target)?;
    for (index, stratum) in strata.iter().enumerate() {
        if let Some(value) = stratum.coverage {
            check_coverage(index, value)?;
        }
    }
    let metrics = Metrics::fit(style, area.dim_in_pixel(), STRATA_SIZE)?;
    let rest = draw_legend(
        area,
        &coverage_legend(true),
        metrics.px(Y_LABEL_AREA),
        metrics,
    )?;
    let slots = strata.len().max(1);
    let mut chart = build_chart(
        &rest,
        category_range(slots),
        0.0..STRATA_Y_MAX,
        FULL_LAYOUT,
        metrics,
    )?;
    let labels: Vec<String> = strata.iter().map(stratum_label).collect();
    let format_x = |x: &f64| {
        category_index(*x, strata.len()).map_or_else(String::new, |index| labels[index].clone())
    };
    let format_y = |y: &f64| {
        if *y <= 1.0 + 1e-9 {
            percent(*y, 0)
        } else {
            String::new()
        }
    };
    let axes = Axes {
        tick_font: TICK_FONT,
        tick_labels: (slots, TICK_LABELS),
        tick_mark: TICK_MARK,
        descriptions: (Some("prediction set size"), Some("coverage")),
        x_format: &format_x,
        y_format: &format_y,
        grid: (false, true),
    };
    draw_axes(&mut chart, &axes, metrics)?;

    let pixels = PlotPixels::new(&chart);
    let min_length = metrics.px_at_least_one(MIN_BAR_LENGTH);
    // Bars first, then the target line, then the labels on white so the line never crosses
    // them.
    let mut labels = Vec::with_capacity(strata.len());
    for (index, stratum) in strata.iter().enumerate() {
        let centre = index as f64;
        let (left, base) = pixels.point(centre - BAR_FILL / 2.0, 0.0);
        let x = pixels.point(centre, 0.0).0;
        match stratum.coverage.filter(|_| stratum.count > 0) {
            Some(value) => {
                let (right, top) = pixels.point(centre + BAR_FILL / 2.0, value);
                let bar = bar_rect((left, right), base, top, min_length, true);
                draw_coverage_bar(&pixels.canvas, bar, value, target, metrics)?;
                labels.push((format!("n = {}", stratum.count), (x, bar.top)));
            }
            None => labels.push(("no sets".to_string(), (x, base))),
        }
    }
    let range = category_range(slots);
    draw_line(
        &pixels.canvas,
        pixels.point(range.start, target),
        pixels.point(range.end, target),
        target_line_style(metrics),
        true,
        metrics,
    )?;
    for (text, (x, bottom)) in &labels {
        draw_label_above(
            &pixels.canvas,
            text,
            (*x, bottom - metrics.px(LABEL_GAP)),
            metrics,
        )?;
    }
    Ok(())
}

/// Writes `text` centred above `(x, bottom)` on a white box, so that lines behind it do not
/// cross it.
fn draw_label_above<DB: DrawingBackend>(
    canvas: &DrawingArea<DB, Shift>,
    text: &str,
    (x, bottom): (i32, i32),
    metrics: Metrics,
) -> Result<(), PlotError> {
    let font = metrics.font(VALUE_FONT, &TEXT_GREY);
    let (width, height) = canvas.estimate_text_size(text, &font)?;
    let (half_width, height) = (width as i32 / 2 + 1, height as i32);
    canvas.draw(&Rectangle::new(
        [(x - half_width, bottom - height), (x + half_width, bottom)],
        WHITE.filled(),
    ))?;
    canvas.draw_text(
        text,
        &font.pos(Pos::new(HPos::Center, VPos::Bottom)),
        (x, bottom),
    )?;
    Ok(())
}

/// The smallest and largest of `values`, or `None` for none.
fn extent(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    values.into_iter().fold(None, |extent, value| {
        Some(extent.map_or((value, value), |(low, high): (f64, f64)| {
            (low.min(value), high.max(value))
        }))
    })
}

/// `(low, high)` padded by `padding` of its span on both sides, widened about its centre to at
/// least `min_span`.
fn padded((low, high): (f64, f64), padding: f64, min_span: f64) -> Range<f64> {
    let (mut low, mut high) = (low, high);
    if high - low < min_span {
        let centre = (low + high) / 2.0;
        low = centre - min_span / 2.0;
        high = centre + min_span / 2.0;
    }
    let pad = padding * (high - low);
    (low - pad)..(high + pad)
}

/// Sweep values `(α, value)` with both finite, in increasing α.
fn finite_curve(points: &[SweepPoint], value: impl Fn(&SweepPoint) -> f64) -> Vec<(f64, f64)> {
    let mut curve: Vec<(f64, f64)> = points
        .iter()
        .map(|point| (point.alpha, value(point)))
        .filter(|(alpha, value)| alpha.is_finite() && value.is_finite())
        .collect();
    curve.sort_by(|a, b| a.0.total_cmp(&b.0));
    curve
}

/// Draws `curve` (data points) as one solid polyline of `colour`, or a dot for a single point.
fn draw_curve<DB: DrawingBackend>(
    pixels: &PlotPixels<'_, DB>,
    curve: &[(f64, f64)],
    colour: RGBColor,
    metrics: Metrics,
) -> Result<(), PlotError> {
    let points: Vec<(i32, i32)> = curve.iter().map(|&(x, y)| pixels.point(x, y)).collect();
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

/// Draws the α sweep into `area`: two panels sharing the α axis, coverage against α on top
/// with the guarantee's lower edge `y = 1 − α` dashed, and the average set size against α
/// below, with `current_alpha` marked by a vertical vermillion line in both. The α axis spans
/// the points and `current_alpha`; points whose α, coverage or size is not finite are left out
/// of that curve (a point with `q̂ = +∞` has coverage 1 and size `K`, and is drawn). No points
/// draw empty panels. Comfortable from about 240×260 CSS pixels.
///
/// # Errors
/// [`PlotError::InvalidFraction`] if `current_alpha` is NaN or outside `[0, 1]`,
/// [`PlotError::InvalidAxisRange`] for values too large to plot (near `f64::MAX`),
/// [`PlotError::InvalidScale`], [`PlotError::AreaTooSmall`] below 40% of the comfortable size,
/// and [`PlotError::Drawing`] when the backend fails.
pub fn alpha_sweep_curves<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    points: &[SweepPoint],
    current_alpha: f64,
    style: &ChartStyle,
) -> Result<(), PlotError> {
    check_fraction("current α", current_alpha)?;
    let metrics = Metrics::fit(style, area.dim_in_pixel(), SWEEP_SIZE)?;
    let curve_mark = |colour| LegendMark::Line {
        colour,
        width: CURVE_WIDTH,
        dashed: false,
    };
    let legend = [
        LegendEntry::new(curve_mark(BLUE), "coverage"),
        LegendEntry::new(target_line_mark(), "1 − α (guaranteed)"),
        LegendEntry::new(curve_mark(GREEN), "average set size"),
        LegendEntry::new(
            LegendMark::Line {
                colour: VERMILLION,
                width: REFERENCE_LINE_WIDTH,
                dashed: false,
            },
            format!("α = {current_alpha:.2}"),
        ),
    ];
    let rest = draw_legend(area, &legend, metrics.px(Y_LABEL_AREA), metrics)?;

    let coverage = finite_curve(points, |point| point.coverage);
    let sizes = finite_curve(points, |point| point.average_set_size);
    let alphas = coverage
        .iter()
        .chain(&sizes)
        .map(|&(alpha, _)| alpha)
        .chain([current_alpha]);
    let alpha_extent = extent(alphas).unwrap_or((current_alpha, current_alpha));
    let alpha_range = padded(alpha_extent, 0.0, SWEEP_MIN_ALPHA_SPAN);
    let (alpha_low, alpha_high) = (alpha_range.start, alpha_range.end);
    let lower_edge = [(alpha_low, 1.0 - alpha_low), (alpha_high, 1.0 - alpha_high)];
    let coverage_extent =
        extent(coverage.iter().chain(&lower_edge).map(|&(_, value)| value)).unwrap_or((0.0, 1.0));
    let coverage_range = padded(coverage_extent, SWEEP_Y_PADDING, SWEEP_MIN_ALPHA_SPAN);
    let (smallest_size, largest_size) =
        extent(sizes.iter().map(|&(_, size)| size).chain([0.0])).unwrap_or((0.0, 0.0));
    let size_range = smallest_size..(Y_HEADROOM * largest_size).max(1.0);

    // Split so that both plotting areas are equally tall.
    let (_, height) = rest.dim_in_pixel();
    let top_height =
        (height as i32 + metrics.px(SWEEP_TOP_X_LABEL_AREA) - metrics.px(X_LABEL_AREA)) / 2;
    let (top, bottom) = rest.split_vertically(top_height.max(0));

    let coverage_decimals = tick_decimals(
        100.0 * (coverage_range.end - coverage_range.start),
        HISTOGRAM_Y_TICK_LABELS,
    );
    let format_coverage = |y: &f64| percent(*y, coverage_decimals);
    let alpha_decimals = tick_decimals(alpha_high - alpha_low, TICK_LABELS);
    let format_alpha = |x: &f64| format!("{:.alpha_decimals$}", x + 0.0);
    let no_label = |_: &f64| String::new();
    let size_decimals = if size_range.end < 5.0 { 1 } else { 0 };
    let format_size = |y: &f64| format!("{:.size_decimals$}", y + 0.0);

    let top_layout = ChartLayout {
        x_label_area: SWEEP_TOP_X_LABEL_AREA,
        ..FULL_LAYOUT
    };
    let mut top_chart = build_chart(
        &top,
        alpha_range.clone(),
        coverage_range.clone(),
        top_layout,
        metrics,
    )?;
    let top_axes = Axes {
        tick_font: TICK_FONT,
        tick_labels: (TICK_LABELS, HISTOGRAM_Y_TICK_LABELS),
        tick_mark: TICK_MARK,
        descriptions: (None, Some("coverage")),
        x_format: &no_label,
        y_format: &format_coverage,
        grid: (true, true),
    };
    draw_axes(&mut top_chart, &top_axes, metrics)?;
    let top_pixels = PlotPixels::new(&top_chart);
    draw_line(
        &top_pixels.canvas,
        top_pixels.point(lower_edge[0].0, lower_edge[0].1),
        top_pixels.point(lower_edge[1].0, lower_edge[1].1),
        target_line_style(metrics),
        true,
        metrics,
    )?;
    draw_curve(&top_pixels, &coverage, BLUE, metrics)?;

    let mut bottom_chart = build_chart(
        &bottom,
        alpha_range,
        size_range.clone(),
        FULL_LAYOUT,
        metrics,
    )?;
    let bottom_axes = Axes {
        tick_font: TICK_FONT,
        tick_labels: (TICK_LABELS, HISTOGRAM_Y_TICK_LABELS),
        tick_mark: TICK_MARK,
        descriptions: (Some("α (target miscoverage)"), Some("set size")),
        x_format: &format_alpha,
        y_format: &format_size,
        grid: (true, true),
    };
    draw_axes(&mut bottom_chart, &bottom_axes, metrics)?;
    let bottom_pixels = PlotPixels::new(&bottom_chart);
    draw_curve(&bottom_pixels, &sizes, GREEN, metrics)?;

    let marker = VERMILLION.stroke_width(metrics.stroke(REFERENCE_LINE_WIDTH));
    for (pixels, range) in [(&top_pixels, coverage_range), (&bottom_pixels, size_range)] {
        draw_line(
            &pixels.canvas,
            pixels.point(current_alpha, range.start),
            pixels.point(current_alpha, range.end),
            marker,
            false,
            metrics,
        )?;
    }
    Ok(())
}

/// The density histogram of `values` over `bins` equal-width bins on `[lo, hi]`: bin `b` holds
/// the values in `[lo + b·w, lo + (b + 1)·w)` (the last bin also `hi`), `w = (hi − lo)/bins`,
/// and its height is `count_b / (N·w)` with `N = values.len()`, so that `Σ height·w` is the
/// fraction of the values inside `[lo, hi]` (1 when all are). Values outside `[lo, hi]` or NaN
/// are counted in `N` but in no bin. Empty when `bins = 0` or `[lo, hi]` is not a finite
/// interval with `lo < hi`; zeros when there are no values.
pub fn density_histogram(values: &[f64], bins: usize, lo: f64, hi: f64) -> Vec<f64> {
    let width = (hi - lo) / bins as f64;
    if bins == 0 || !(lo < hi && width.is_finite() && width > 0.0) {
        return Vec::new();
    }
    let mut counts = vec![0_usize; bins];
    for &value in values {
        if (lo..=hi).contains(&value) {
            let bin = (((value - lo) / width) as usize).min(bins - 1);
            counts[bin] += 1;
        }
    }
    if values.is_empty() {
        return vec![0.0; bins];
    }
    let scale = 1.0 / (values.len() as f64 * width);
    counts.iter().map(|&count| count as f64 * scale).collect()
}

/// Draws the coverage experiment into `area`: the [`density_histogram`] of `coverages` (one
/// per random calibration/evaluation split, from `conformal::coverage_experiment`) in 36 bins
/// over their range widened to include `target` (`1 − α`) and `upper` (`1 − α + 1/(n + 1)`),
/// the `density` samples `(x, pdf)` (from `conformal::coverage_beta_density`) as an orange
/// curve, the guarantee band `[target, upper]` lightly shaded between dashed lines, and a legend
/// "R = … splits", "Beta(k, n + 1 − k)". Density samples that are not finite or fall outside
/// the x axis are left out. No coverages draw the curve and the band alone. Comfortable from
/// about 240×160 CSS pixels.
///
/// # Errors
/// [`PlotError::InvalidFraction`] if `target` is NaN or outside `[0, 1]`,
/// [`PlotError::InvalidBand`] if `upper` is not finite or below `target`,
/// [`PlotError::InvalidCoverage`] for the first coverage that is NaN or outside `[0, 1]`,
/// [`PlotError::NegativeDensity`] for the first negative density sample,
/// [`PlotError::InvalidAxisRange`] for values too large to plot (near `f64::MAX`),
/// [`PlotError::InvalidScale`], [`PlotError::AreaTooSmall`] below 40% of the comfortable size,
/// and [`PlotError::Drawing`] when the backend fails.
pub fn coverage_experiment_histogram<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    coverages: &[f64],
    density: &[(f64, f64)],
    target: f64,
    upper: f64,
    style: &ChartStyle,
) -> Result<(), PlotError> {
    check_fraction("target coverage 1 − α", target)?;
    if !(upper.is_finite() && upper >= target) {
        return Err(PlotError::InvalidBand { target, upper });
    }
    for (index, &value) in coverages.iter().enumerate() {
        check_coverage(index, value)?;
    }
    if let Some((index, &(_, value))) = density
        .iter()
        .enumerate()
        .find(|(_, (_, value))| *value < 0.0)
    {
        return Err(PlotError::NegativeDensity { index, value });
    }
    let metrics = Metrics::fit(style, area.dim_in_pixel(), EXPERIMENT_SIZE)?;
    let repetitions = coverages.len();
    let legend = [
        LegendEntry::new(
            LegendMark::Bar(SKY_BLUE),
            format!(
                "R = {repetitions} split{}",
                if repetitions == 1 { "" } else { "s" }
            ),
        ),
        LegendEntry::new(
            LegendMark::Line {
                colour: ORANGE,
                width: CURVE_WIDTH,
                dashed: false,
            },
            "Beta(k, n + 1 − k)",
        ),
        LegendEntry::new(
            LegendMark::Band(GREEN),
            "guarantee [1 − α, 1 − α + 1/(n + 1)]",
        ),
    ];
    let rest = draw_legend(area, &legend, metrics.px(Y_LABEL_AREA), metrics)?;

    let data_extent =
        extent(coverages.iter().copied().chain([target, upper])).unwrap_or((target, upper));
    let bin_range = padded(data_extent, 0.0, EXPERIMENT_MIN_SPAN);
    let heights = density_histogram(coverages, EXPERIMENT_BINS, bin_range.start, bin_range.end);
    let bin_width = (bin_range.end - bin_range.start) / EXPERIMENT_BINS as f64;
    let x_range = (bin_range.start - bin_width)..(bin_range.end + bin_width);
    let curve: Vec<(f64, f64)> = density
        .iter()
        .copied()
        .filter(|&(x, y)| x.is_finite() && y.is_finite() && x_range.contains(&x))
        .collect();
    let tallest = heights
        .iter()
        .chain(curve.iter().map(|(_, y)| y))
        .copied()
        .fold(0.0, f64::max);
    let y_max = if tallest > 0.0 {
        Y_HEADROOM * tallest
    } else {
        1.0
    };
    let mut chart = build_chart(&rest, x_range.clone(), 0.0..y_max, FULL_LAYOUT, metrics)?;
    let x_decimals = tick_decimals(100.0 * (x_range.end - x_range.start), TICK_LABELS);
    let format_x = |x: &f64| percent(*x, x_decimals);
    let y_decimals = tick_decimals(y_max, HISTOGRAM_Y_TICK_LABELS);
    let format_y = |y: &f64| format!("{:.y_decimals$}", y + 0.0);
    let axes = Axes {
        tick_font: TICK_FONT,
        tick_labels: (TICK_LABELS, HISTOGRAM_Y_TICK_LABELS),
        tick_mark: TICK_MARK,
        descriptions: (Some("coverage of the evaluation split"), Some("density")),
        x_format: &format_x,
        y_format: &format_y,
        grid: (true, true),
    };
    draw_axes(&mut chart, &axes, metrics)?;

    let pixels = PlotPixels::new(&chart);
    let band = PixelRect::spanning(pixels.point(target, 0.0), pixels.point(upper, y_max));
    shade_band(&pixels.canvas, band, GREEN)?;
    for (bin, &height) in heights.iter().enumerate() {
        if height > 0.0 {
            let left = bin_range.start + bin as f64 * bin_width;
            let bar = PixelRect::spanning(
                pixels.point(left, 0.0),
                pixels.point(left + bin_width, height),
            );
            draw_bar(&pixels.canvas, bar, SKY_BLUE, metrics)?;
        }
    }
    draw_curve(&pixels, &curve, ORANGE, metrics)?;
    for edge in [target, upper] {
        draw_line(
            &pixels.canvas,
            pixels.point(edge, 0.0),
            pixels.point(edge, y_max),
            target_line_style(metrics),
            true,
            metrics,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::conformal::{coverage_beta_density, coverage_experiment};
    use crate::data::FASHION_MNIST_CLASSES;
    use plotters::prelude::SVGBackend;
    use proptest::prelude::*;

    /// Every colour that marks bars has one legend swatch, drawn first.
    const LEGEND_SWATCHES: usize = 1;
    /// Tolerance on the integral of a density histogram: exact arithmetic, and after rounding
    /// bar edges to whole pixels.
    const INTEGRAL_TOLERANCE: f64 = 1e-12;
    const PIXEL_INTEGRAL_TOLERANCE: f64 = 0.03;

    const GREEN_HEX: &str = "#009E73";
    const SKY_BLUE_HEX: &str = "#56B4E9";

    /// A filled rectangle in pixels.
    #[derive(Clone, Copy, Debug)]
    struct Bar {
        x: i32,
        y: i32,
        width: i32,
        height: i32,
    }

    impl Bar {
        fn centre(self) -> (i32, i32) {
            (self.x + self.width / 2, self.y + self.height / 2)
        }
    }

    /// The bars filled with `hex`, without the legend swatch.
    fn bars(svg: &str, hex: &str) -> Vec<Bar> {
        filled_rects(svg, hex)
            .iter()
            .skip(LEGEND_SWATCHES)
            .map(|rect| Bar {
                x: number(rect, "x"),
                y: number(rect, "y"),
                width: number(rect, "width"),
                height: number(rect, "height"),
            })
            .collect()
    }

    /// Two-point polylines of `hex` whose ends share their x (vertical dashes and lines).
    fn vertical_segments(svg: &str, hex: &str) -> Vec<[(i32, i32); 2]> {
        polylines(svg, hex)
            .into_iter()
            .filter(|points| points.len() == 2 && points[0].0 == points[1].0)
            .map(|points| [points[0], points[1]])
            .collect()
    }

    /// The pixel position of value `v` on an axis from the positions of two tick labels
    /// `(value, position)`.
    fn interpolate(a: (f64, i32), b: (f64, i32), v: f64) -> f64 {
        f64::from(a.1) + (v - a.0) * f64::from(b.1 - a.1) / (b.0 - a.0)
    }

    fn close(actual: f64, expected: f64) -> bool {
        (actual - expected).abs() <= f64::from(PIXEL_TOLERANCE)
    }

    fn style() -> ChartStyle {
        ChartStyle::default()
    }

    const SIZE_COUNTS: [usize; 11] = [30, 640, 180, 0, 40, 0, 0, 0, 0, 0, 1];

    #[test]
    fn set_size_bars_one_per_non_empty_size_coloured_by_size() {
        let svg = render((560, 320), |area| {
            set_size_histogram(area, &SIZE_COUNTS, &style())
        })
        .unwrap();
        let (empty, singletons, larger) = (
            bars(&svg, VERMILLION_HEX),
            bars(&svg, GREEN_HEX),
            bars(&svg, BLUE_HEX),
        );
        let non_zero = SIZE_COUNTS.iter().filter(|&&count| count > 0).count();
        assert_eq!(empty.len() + singletons.len() + larger.len(), non_zero);
        assert_eq!((empty.len(), singletons.len(), larger.len()), (1, 1, 3));
        // Each bar stands on its integer tick.
        let centred_on =
            |bar: Bar, label: &str| close(bar.centre().0.into(), x_tick(&svg, label).into());
        assert!(centred_on(empty[0], "0"));
        assert!(centred_on(singletons[0], "1"));
        for (bar, label) in larger.iter().zip(["2", "4", "10"]) {
            assert!(centred_on(*bar, label), "{bar:?} not at {label}");
        }
        // Heights are shares: 640 singletons against 180 sets of two.
        let ratio = f64::from(singletons[0].height) / f64::from(larger[0].height);
        assert!((ratio - 640.0 / 180.0).abs() < 0.05, "ratio {ratio}");
        // One image in 891 still gets a visible bar.
        assert!(f64::from(larger[2].height) >= MIN_BAR_LENGTH);
        // The empty-set bar is hatched: dark diagonal segments inside it.
        let inside = |(x, y): (i32, i32)| {
            (empty[0].x..=empty[0].x + empty[0].width).contains(&x)
                && (empty[0].y..=empty[0].y + empty[0].height).contains(&y)
        };
        let hatch = polylines(&svg, DARK_GREY_HEX)
            .into_iter()
            .filter(|line| line.len() == 2 && line[0].0 != line[1].0 && line[0].1 != line[1].1)
            .filter(|line| line.iter().all(|&point| inside(point)))
            .count();
        assert!(hatch >= 2, "{hatch} hatch lines");
        for label in [
            "3.4%",
            "72%",
            "20%",
            "4.5%",
            "0.1%",
            "empty set",
            "singleton",
        ] {
            assert!(has_text(&svg, label), "{label} missing");
        }
        // Without empty sets only the legend is vermillion.
        let svg = render((560, 320), |area| {
            set_size_histogram(area, &[0, 5, 5], &style())
        })
        .unwrap();
        assert!(bars(&svg, VERMILLION_HEX).is_empty());
        assert_eq!(bars(&svg, GREEN_HEX).len() + bars(&svg, BLUE_HEX).len(), 2);
    }

    /// Fashion-MNIST-like per-class coverage: Pullover, Coat and Shirt below 0.9, Sandal
    /// without examples, Ankle boot exactly on target.
    fn class_coverage() -> Vec<Option<f64>> {
        vec![
            Some(0.95),
            Some(0.97),
            Some(0.86),
            Some(0.91),
            Some(0.84),
            None,
            Some(0.72),
            Some(0.96),
            Some(0.99),
            Some(0.9),
        ]
    }

    #[test]
    fn per_class_bars_orange_below_target_and_a_dashed_target_line() {
        let coverage = class_coverage();
        let draw = |target: f64| {
            render((360, 420), |area| {
                per_class_coverage(area, &coverage, &FASHION_MNIST_CLASSES, target, &style())
            })
            .unwrap()
        };
        let svg = draw(0.9);
        let (above, below) = (bars(&svg, BLUE_HEX), bars(&svg, ORANGE_HEX));
        let with_examples = coverage.iter().flatten().count();
        assert_eq!(above.len() + below.len(), with_examples);
        assert_eq!(below.len(), 3);
        // Each orange bar is on the row of a class below target.
        let row_of = |bar: Bar| {
            FASHION_MNIST_CLASSES
                .iter()
                .position(|name| (y_tick(&svg, name) - bar.centre().1).abs() <= PIXEL_TOLERANCE)
                .unwrap()
        };
        let mut low: Vec<&str> = below
            .iter()
            .map(|&bar| FASHION_MNIST_CLASSES[row_of(bar)])
            .collect();
        low.sort_unstable();
        assert_eq!(low, ["Coat", "Pullover", "Shirt"]);
        // Bars end at their coverage on the axis from 50% to 100%.
        let axis = |label: &str, value: f64| (value, x_tick(&svg, label));
        let x_of = |value| interpolate(axis("50%", 0.5), axis("100%", 1.0), value);
        for bar in above.iter().chain(&below) {
            let value = coverage[row_of(*bar)].unwrap();
            assert!(close(f64::from(bar.x + bar.width), x_of(value)), "{bar:?}");
        }
        // The dashed line stands at the target, labelled above the plot.
        let dashes = vertical_segments(&svg, DARK_GREY_HEX);
        assert!(dashes.len() > 10, "{} dashes", dashes.len());
        assert!(dashes.iter().all(|dash| close(dash[0].0.into(), x_of(0.9))));
        let label = texts(&svg)
            .find(|(_, text)| *text == "1 − α")
            .map(|(attributes, _)| number(&attributes, "x"))
            .unwrap();
        assert!(close(label.into(), x_of(0.9)));
        assert!(has_text(&svg, "no examples"));
        // Between ticks: 0.85 is halfway from 80% to 90%; Pullover (0.86) is then above.
        let svg = draw(0.85);
        let x_of = |value| {
            interpolate(
                (0.8, x_tick(&svg, "80%")),
                (0.9, x_tick(&svg, "90%")),
                value,
            )
        };
        let dashes = vertical_segments(&svg, DARK_GREY_HEX);
        assert!(dashes
            .iter()
            .all(|dash| close(dash[0].0.into(), x_of(0.85))));
        assert_eq!(bars(&svg, ORANGE_HEX).len(), 2);
    }

    #[test]
    fn per_class_axis_reaches_down_to_the_lowest_class() {
        let mut coverage = class_coverage();
        coverage[6] = Some(0.3);
        let svg = render((360, 420), |area| {
            per_class_coverage(area, &coverage, &FASHION_MNIST_CLASSES, 0.9, &style())
        })
        .unwrap();
        let x_of = |value| {
            interpolate(
                (0.4, x_tick(&svg, "40%")),
                (1.0, x_tick(&svg, "100%")),
                value,
            )
        };
        let shirt = bars(&svg, ORANGE_HEX)
            .into_iter()
            .find(|bar| (y_tick(&svg, "Shirt") - bar.centre().1).abs() <= PIXEL_TOLERANCE)
            .unwrap();
        assert!(close(f64::from(shirt.x + shirt.width), x_of(0.3)));
        // The axis starts 0.05 below it.
        assert!(close(f64::from(shirt.x), x_of(0.25)));
    }

    fn stratum(min_size: u32, max_size: u32, count: usize, coverage: Option<f64>) -> Stratum {
        Stratum {
            min_size,
            max_size,
            count,
            coverage,
        }
    }

    fn example_strata() -> Vec<Stratum> {
        vec![
            stratum(0, 1, 500, Some(0.93)),
            stratum(2, 3, 120, Some(0.85)),
            stratum(4, 6, 0, None),
            stratum(7, 10, 3, Some(1.0)),
        ]
    }

    #[test]
    fn strata_bars_with_counts_and_target_line() {
        let strata = example_strata();
        let svg = render((560, 320), |area| {
            stratified_coverage(area, &strata, 0.9, &style())
        })
        .unwrap();
        let (above, below) = (bars(&svg, BLUE_HEX), bars(&svg, ORANGE_HEX));
        let non_empty = strata.iter().filter(|s| s.count > 0).count();
        assert_eq!(above.len() + below.len(), non_empty);
        assert_eq!(below.len(), 1);
        assert!(close(
            below[0].centre().0.into(),
            x_tick(&svg, "2–3").into()
        ));
        assert!(close(
            above[0].centre().0.into(),
            x_tick(&svg, "0–1").into()
        ));
        assert!(close(
            above[1].centre().0.into(),
            x_tick(&svg, "7–10").into()
        ));
        let ratio = f64::from(above[1].height) / f64::from(above[0].height);
        assert!((ratio - 1.0 / 0.93).abs() < 0.02, "ratio {ratio}");
        // Counts above the bars, "no sets" in the empty slot.
        let text_at = |wanted: &str| {
            texts(&svg)
                .find(|(_, text)| *text == wanted)
                .map(|(attributes, _)| (number(&attributes, "x"), number(&attributes, "y")))
                .unwrap()
        };
        for (label, bar) in [
            ("n = 500", above[0]),
            ("n = 120", below[0]),
            ("n = 3", above[1]),
        ] {
            let (x, y) = text_at(label);
            assert!(close(x.into(), bar.centre().0.into()));
            assert!(y < bar.y, "{label} is not above its bar");
        }
        assert!(close(
            text_at("no sets").0.into(),
            x_tick(&svg, "4–6").into()
        ));
        assert!(!has_text(&svg, "n = 0"));
        // The dashed line at 90%, halfway between the ticks 80% and 100%, across all slots.
        let y_of = |value| {
            interpolate(
                (0.8, y_tick(&svg, "80%")),
                (1.0, y_tick(&svg, "100%")),
                value,
            )
        };
        let plot_top = y_tick(&svg, "100%") - 20;
        let dashes: Vec<(i32, i32)> = polylines(&svg, DARK_GREY_HEX)
            .into_iter()
            .filter(|line| line.len() == 2 && line[0].1 == line[1].1 && line[0].1 > plot_top)
            .flatten()
            .collect();
        assert!(dashes.iter().all(|&(_, y)| close(y.into(), y_of(0.9))));
        let xs = dashes.iter().map(|&(x, _)| x);
        assert!(xs.clone().min().unwrap() < x_tick(&svg, "0–1"));
        assert!(xs.max().unwrap() > x_tick(&svg, "7–10"));
    }

    /// α = 0.01, …, 0.30 with coverage just above 1 − α, one point with `q̂ = +∞` (coverage 1,
    /// size K), one with a NaN coverage and one with a NaN α.
    fn sweep_points() -> Vec<SweepPoint> {
        let mut points: Vec<SweepPoint> = (1..=30)
            .map(|i| {
                let alpha = f64::from(i) / 100.0;
                SweepPoint {
                    alpha,
                    qhat: 0.5,
                    coverage: 1.0 - alpha + 0.01,
                    average_set_size: 1.0 + 10.0 * (0.3 - alpha),
                }
            })
            .collect();
        points.push(SweepPoint {
            alpha: 0.005,
            qhat: f64::INFINITY,
            coverage: 1.0,
            average_set_size: 10.0,
        });
        points.push(SweepPoint {
            alpha: 0.155,
            qhat: 0.5,
            coverage: f64::NAN,
            average_set_size: 2.0,
        });
        points.push(SweepPoint {
            alpha: f64::NAN,
            qhat: 0.5,
            coverage: 0.5,
            average_set_size: 2.0,
        });
        points
    }

    #[test]
    fn sweep_draws_two_curves_and_the_current_alpha_in_both_panels() {
        let points = sweep_points();
        let svg = render((560, 480), |area| {
            alpha_sweep_curves(area, &points, 0.1, &style())
        })
        .unwrap();
        let coverage_lines = polylines(&svg, BLUE_HEX);
        let size_lines = polylines(&svg, GREEN_HEX);
        assert_eq!((coverage_lines.len(), size_lines.len()), (2, 2));
        let (coverage, sizes) = (&coverage_lines[1], &size_lines[1]);
        let finite = |value: fn(&SweepPoint) -> f64| {
            points
                .iter()
                .filter(|p| p.alpha.is_finite() && value(p).is_finite())
                .count()
        };
        assert_eq!(coverage.len(), finite(|p| p.coverage));
        assert_eq!(sizes.len(), finite(|p| p.average_set_size));
        assert_eq!((coverage.len(), sizes.len()), (31, 32));
        // Coverage on top, set size below.
        let lowest_coverage = coverage.iter().map(|&(_, y)| y).max().unwrap();
        let highest_size = sizes.iter().map(|&(_, y)| y).min().unwrap();
        assert!(lowest_coverage < highest_size);
        // The current α: one vertical line per panel at α = 0.1.
        let markers = vertical_segments(&svg, VERMILLION_HEX);
        assert_eq!(markers.len(), 2);
        let x = f64::from(x_tick(&svg, "0.10"));
        assert!(markers.iter().all(|marker| close(marker[0].0.into(), x)));
        let ends =
            |marker: [(i32, i32); 2]| (marker[0].1.min(marker[1].1), marker[0].1.max(marker[1].1));
        assert!(ends(markers[0]).1 < ends(markers[1]).0);
        assert!(has_text(&svg, "α = 0.10"));
        // The dashed line y = 1 − α slopes down, and the coverage curve stays above it.
        let edge: Vec<(i32, i32)> = polylines(&svg, DARK_GREY_HEX)
            .into_iter()
            .filter(|line| line.len() == 2 && line[0].0 != line[1].0 && line[0].1 != line[1].1)
            .flatten()
            .collect();
        let left = *edge.iter().min().unwrap();
        let right = *edge.iter().max().unwrap();
        assert!(right.1 > left.1);
        let edge_y =
            |x: i32| interpolate((left.0.into(), left.1), (right.0.into(), right.1), x.into());
        assert!(coverage
            .iter()
            .all(|&(x, y)| f64::from(y) <= edge_y(x) + 1.0));
        // The point with q̂ = +∞ is the first, at coverage 1: the top of the curve.
        assert_eq!(
            coverage[0].1,
            coverage.iter().map(|&(_, y)| y).min().unwrap()
        );
    }

    #[test]
    fn density_histogram_integrates_to_the_share_in_range() {
        let values = [0.1, 0.2, 0.25, 0.9, 1.0];
        let heights = density_histogram(&values, 4, 0.0, 1.0);
        assert_eq!(heights, [1.6, 0.8, 0.0, 1.6]);
        let integral = |heights: &[f64], width: f64| heights.iter().sum::<f64>() * width;
        assert!((integral(&heights, 0.25) - 1.0).abs() < INTEGRAL_TOLERANCE);
        // Out of range and NaN count in N but in no bin.
        let heights = density_histogram(&[0.1, 0.2, 0.25, 0.9, 1.0, 1.5, f64::NAN], 4, 0.0, 1.0);
        assert!((integral(&heights, 0.25) - 5.0 / 7.0).abs() < INTEGRAL_TOLERANCE);
        // Many values, 36 bins on their range.
        let values: Vec<f64> = (0..1000)
            .map(|i| 0.85 + 0.1 * ((i * 37 % 1000) as f64 / 999.0))
            .collect();
        let heights = density_histogram(&values, 36, 0.85, 0.95);
        assert_eq!(heights.len(), 36);
        assert!((integral(&heights, 0.1 / 36.0) - 1.0).abs() < INTEGRAL_TOLERANCE);
        assert_eq!(density_histogram(&[], 3, 0.0, 1.0), [0.0; 3]);
        for (bins, lo, hi) in [
            (0, 0.0, 1.0),
            (3, 1.0, 1.0),
            (3, 1.0, 0.0),
            (3, f64::NAN, 1.0),
            (3, 0.0, f64::INFINITY),
        ] {
            assert!(density_histogram(&values, bins, lo, hi).is_empty());
        }
    }

    /// Coverages of `R = 400` random splits of 4000 distinct scores (1000 calibration rows,
    /// α = 0.1) and the Beta density they follow.
    fn experiment() -> (Vec<f64>, Vec<(f64, f64)>, f64, f64) {
        let scores: Vec<f64> = (0..4000)
            .map(|i| f64::from((i * 7919) % 4000) / 4000.0)
            .collect();
        let coverages = coverage_experiment(&scores, 1000, 0.1, 400, 7).unwrap();
        let density = (0..=400)
            .map(|i| {
                let x = 0.8 + 0.2 * f64::from(i) / 400.0;
                (x, coverage_beta_density(1000, 0.1, x).unwrap())
            })
            .collect();
        (coverages, density, 0.9, 0.9 + 1.0 / 1001.0)
    }

    #[test]
    fn experiment_bars_integrate_to_one_under_the_beta_curve() {
        let (coverages, density, target, upper) = experiment();
        let svg = render((1120, 720), |area| {
            coverage_experiment_histogram(area, &coverages, &density, target, upper, &style())
        })
        .unwrap();
        let histogram_bars = bars(&svg, SKY_BLUE_HEX);
        let lo = coverages.iter().copied().fold(target, f64::min);
        let hi = coverages.iter().copied().fold(upper, f64::max);
        let heights = density_histogram(&coverages, EXPERIMENT_BINS, lo, hi);
        assert_eq!(
            histogram_bars.len(),
            heights.iter().filter(|&&h| h > 0.0).count()
        );
        // Σ height × width in data units, from the pixel transform of two ticks per axis.
        let ticks = |anchor: &str, coordinate: &str| -> Vec<(f64, i32)> {
            texts(&svg)
                .filter(|(attributes, _)| attribute(attributes, "text-anchor") == Some(anchor))
                .filter_map(|(attributes, text)| {
                    let value: f64 = text.trim_end_matches('%').parse().ok()?;
                    Some((value, number(&attributes, coordinate)))
                })
                .collect()
        };
        let (x_ticks, y_ticks) = (ticks("middle", "x"), ticks("end", "y"));
        let x_scale =
            f64::from(x_ticks[1].1 - x_ticks[0].1) / ((x_ticks[1].0 - x_ticks[0].0) / 100.0);
        let y_scale = f64::from(y_ticks[0].1 - y_ticks[1].1) / (y_ticks[1].0 - y_ticks[0].0);
        let area: f64 = histogram_bars
            .iter()
            .map(|bar| f64::from(bar.width) * f64::from(bar.height))
            .sum();
        let integral = area / (x_scale * y_scale);
        assert!(
            (integral - 1.0).abs() < PIXEL_INTEGRAL_TOLERANCE,
            "integral {integral}"
        );
        // Dashed lines at 1 − α and at the upper edge; the band between them is shaded.
        let x_of =
            |value: f64| f64::from(x_ticks[0].1) + (100.0 * value - x_ticks[0].0) / 100.0 * x_scale;
        let dashes = vertical_segments(&svg, DARK_GREY_HEX);
        let at = |value: f64| {
            dashes
                .iter()
                .filter(|dash| close(dash[0].0.into(), x_of(value)))
                .count()
        };
        assert!(at(target) > 5 && at(upper) > 5);
        assert_eq!(at(target) + at(upper), dashes.len());
        let band = filled_rects(&svg, GREEN_HEX);
        assert_eq!(band.len(), LEGEND_SWATCHES + 1);
        assert!(close(number(&band[1], "x").into(), x_of(target)));
        // The Beta curve: one orange polyline (and the legend's), peaking near its mean
        // k/(n + 1) = 901/1001.
        let curves = polylines(&svg, ORANGE_HEX);
        assert_eq!(curves.len(), 2);
        let peak = curves[1].iter().min_by_key(|&&(_, y)| y).unwrap();
        assert!((f64::from(peak.0) - x_of(901.0 / 1001.0)).abs() < 0.005 * x_scale);
        for label in ["R = 400 splits", "Beta(k, n + 1 − k)"] {
            assert!(has_text(&svg, label), "{label} missing");
        }
    }

    /// Draws every conformal chart on `size` at `scale`.
    fn draw_all(size: (u32, u32), scale: f64) -> Result<(), PlotError> {
        let style = ChartStyle { scale };
        let (coverages, density, target, upper) = experiment();
        render(size, |area| set_size_histogram(area, &SIZE_COUNTS, &style))?;
        render(size, |area| {
            per_class_coverage(area, &class_coverage(), &FASHION_MNIST_CLASSES, 0.9, &style)
        })?;
        render(size, |area| {
            stratified_coverage(area, &example_strata(), 0.9, &style)
        })?;
        render(size, |area| {
            alpha_sweep_curves(area, &sweep_points(), 0.1, &style)
        })?;
        render(size, |area| {
            coverage_experiment_histogram(area, &coverages, &density, target, upper, &style)
        })?;
        Ok(())
    }

    #[test]
    fn charts_draw_at_every_scale_and_small_sizes() {
        for scale in [1.0, 2.0, 3.0] {
            for size in [(320, 240), (240, 320), (360, 360), (560, 560), (1680, 1680)] {
                draw_all(size, scale).unwrap();
            }
        }
    }

    #[test]
    fn empty_inputs_draw_empty_charts() {
        for counts in [vec![], vec![0; 11]] {
            let svg = render((320, 240), |area| {
                set_size_histogram(area, &counts, &style())
            })
            .unwrap();
            for hex in [VERMILLION_HEX, GREEN_HEX, BLUE_HEX] {
                assert!(bars(&svg, hex).is_empty());
            }
        }
        let empty_strata = vec![stratum(0, 1, 0, None), stratum(2, 3, 0, None)];
        for strata in [vec![], empty_strata] {
            let svg = render((320, 240), |area| {
                stratified_coverage(area, &strata, 0.9, &style())
            })
            .unwrap();
            assert!(bars(&svg, BLUE_HEX).is_empty() && bars(&svg, ORANGE_HEX).is_empty());
        }
        let unusable = [SweepPoint {
            alpha: f64::NAN,
            qhat: f64::INFINITY,
            coverage: f64::INFINITY,
            average_set_size: f64::NAN,
        }];
        for points in [&[][..], &unusable] {
            let svg = render((320, 240), |area| {
                alpha_sweep_curves(area, points, 0.1, &style())
            })
            .unwrap();
            assert_eq!(polylines(&svg, BLUE_HEX).len(), LEGEND_SWATCHES);
            assert_eq!(vertical_segments(&svg, VERMILLION_HEX).len(), 2);
        }
        // Proptest's shrunk case: a set size far below the axis once overflowed the pixels.
        let far_off = [SweepPoint {
            alpha: 0.0,
            qhat: 0.0,
            coverage: 0.0,
            average_set_size: -6.758_430_276_577_353e264,
        }];
        render((320, 240), |area| {
            alpha_sweep_curves(area, &far_off, 0.0, &style())
        })
        .unwrap();
        let svg = render((320, 240), |area| {
            coverage_experiment_histogram(area, &[], &[], 0.9, 0.91, &style())
        })
        .unwrap();
        assert!(bars(&svg, SKY_BLUE_HEX).is_empty());
        // All splits equal, and the band of zero width.
        let svg = render((320, 240), |area| {
            coverage_experiment_histogram(area, &[0.9; 5], &[(0.9, f64::NAN)], 0.9, 0.9, &style())
        })
        .unwrap();
        assert_eq!(bars(&svg, SKY_BLUE_HEX).len(), 1);
        assert!(matches!(
            render((320, 240), |area| per_class_coverage(
                area,
                &[],
                &[],
                0.9,
                &style()
            )),
            Err(PlotError::NoClasses)
        ));
    }

    /// The error of drawing on a comfortable 560×560 area.
    fn refuse(
        draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), PlotError>,
    ) -> PlotError {
        render((560, 560), draw).unwrap_err()
    }

    #[test]
    fn invalid_input_is_refused_with_a_typed_error() {
        for scale in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                draw_all((560, 560), scale),
                Err(PlotError::InvalidScale(_))
            ));
        }
        for size in [(0, 0), (50, 400), (400, 30)] {
            assert!(matches!(
                draw_all(size, 1.0),
                Err(PlotError::AreaTooSmall { .. })
            ));
        }
        let coverage = class_coverage();
        assert!(matches!(
            refuse(|area| per_class_coverage(area, &coverage, &["a"], 0.9, &style())),
            PlotError::CoverageCountMismatch {
                coverages: 10,
                names: 1
            }
        ));
        assert!(matches!(
            refuse(|area| per_class_coverage(
                area,
                &[Some(0.9), Some(1.5)],
                &["a", "b"],
                0.9,
                &style()
            )),
            PlotError::InvalidCoverage { index: 1, .. }
        ));
        assert!(matches!(
            refuse(|area| per_class_coverage(
                area,
                &coverage,
                &FASHION_MNIST_CLASSES,
                f64::NAN,
                &style()
            )),
            PlotError::InvalidFraction { .. }
        ));
        let mut strata = example_strata();
        strata[2] = stratum(4, 6, 5, Some(f64::NAN));
        assert!(matches!(
            refuse(|area| stratified_coverage(area, &strata, 0.9, &style())),
            PlotError::InvalidCoverage { index: 2, .. }
        ));
        assert!(matches!(
            refuse(|area| stratified_coverage(area, &example_strata(), 1.1, &style())),
            PlotError::InvalidFraction { .. }
        ));
        for alpha in [f64::NAN, 1.5, -0.1] {
            assert!(matches!(
                refuse(|area| alpha_sweep_curves(area, &sweep_points(), alpha, &style())),
                PlotError::InvalidFraction {
                    name: "current α",
                    ..
                }
            ));
        }
        let experiment = |coverages: &[f64], density: &[(f64, f64)], upper: f64| {
            refuse(|area| {
                coverage_experiment_histogram(area, coverages, density, 0.9, upper, &style())
            })
        };
        let huge = [SweepPoint {
            alpha: 0.1,
            qhat: 0.5,
            coverage: 0.9,
            average_set_size: f64::MAX,
        }];
        assert!(matches!(
            refuse(|area| alpha_sweep_curves(area, &huge, 0.1, &style())),
            PlotError::InvalidAxisRange { .. }
        ));
        for upper in [0.89, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                experiment(&[0.9], &[], upper),
                PlotError::InvalidBand { .. }
            ));
        }
        assert!(matches!(
            experiment(&[0.9, 0.91, 0.92, -0.1], &[], 0.91),
            PlotError::InvalidCoverage { index: 3, .. }
        ));
        assert!(matches!(
            experiment(&[0.9], &[(0.9, 1.0), (0.91, -1.0)], 0.91),
            PlotError::NegativeDensity { index: 1, .. }
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn arbitrary_inputs_draw_or_refuse_without_panicking(
            counts in prop::collection::vec(0_usize..1_000_000, 0..30),
            coverage in prop::collection::vec(prop::option::of(prop::num::f64::ANY), 1..12),
            values in prop::collection::vec(prop::num::f64::ANY, 0..40),
            target in prop::num::f64::ANY,
            upper in prop::num::f64::ANY,
            alpha in prop::num::f64::ANY,
        ) {
            let style = style();
            let names: Vec<String> = (0..coverage.len()).map(|k| format!("class {k}")).collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let strata: Vec<Stratum> = values
                .iter()
                .zip(&counts)
                .zip(0_u32..)
                .map(|((&value, &count), size)| stratum(size, size + 1, count, Some(value)))
                .collect();
            let points: Vec<SweepPoint> = values
                .chunks_exact(3)
                .map(|chunk| SweepPoint {
                    alpha: chunk[0],
                    qhat: chunk[1],
                    coverage: chunk[1],
                    average_set_size: chunk[2],
                })
                .collect();
            let density: Vec<(f64, f64)> =
                values.chunks_exact(2).map(|chunk| (chunk[0], chunk[1])).collect();
            let fractions: Vec<f64> = values
                .iter()
                .map(|&value| if value.is_finite() { value.abs().fract() } else { 0.5 })
                .collect();
            let fraction = |value: f64| if value.is_finite() { value.abs().fract() } else { 0.9 };
            let size = (360, 300);
            // Only that nothing panics is checked: each call either draws or refuses.
            let _ = render(size, |area| set_size_histogram(area, &counts, &style));
            let _ = render(size, |area| per_class_coverage(area, &coverage, &names, target, &style));
            let _ = render(size, |area| stratified_coverage(area, &strata, target, &style));
            let _ = render(size, |area| alpha_sweep_curves(area, &points, alpha, &style));
            let _ = render(size, |area| alpha_sweep_curves(area, &points, fraction(alpha), &style));
            for (coverages, density) in [(&values, &density), (&fractions, &density)] {
                let _ = render(size, |area| {
                    coverage_experiment_histogram(area, coverages, density, target, upper, &style)
                });
            }
            let (low, high) = (fraction(target), fraction(target) + fraction(upper));
            let _ = render(size, |area| {
                coverage_experiment_histogram(area, &fractions, &density, low, high, &style)
            });
            let heights = density_histogram(&values, counts.len(), target, upper);
            prop_assert!(heights.is_empty() || heights.len() == counts.len());
        }
    }
}
