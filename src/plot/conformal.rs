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
/// Classes up to which the per-class chart fits the page's square canvas (at 40% of its
/// comfortable height, 0.4 × (80 + 14 × 20) = 144 px, on a 390 px phone's 358).
const PER_CLASS_SQUARE_CLASSES: usize = 20;

/// The CSS height the page gives the per-class chart's canvas for `classes` classes: `None`
/// (the page's square) up to 20, else the chart's comfortable height, one 14 px row a class,
/// which no square canvas holds at 100 classes.
pub fn per_class_height(classes: usize) -> Option<f64> {
    (classes > PER_CLASS_SQUARE_CLASSES)
        .then_some(PER_CLASS_BASE_HEIGHT + PER_CLASS_ROW * classes as f64)
}

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
/// Width of reference lines (`1 − α`, the current α), CSS pixels.
const REFERENCE_LINE_WIDTH: f64 = 1.5;
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
    let format_x =
        |x: &f64| category_index(*x, slots).map_or_else(String::new, |size| size.to_string());
    let x_axis = HistogramXAxis {
        range: category_range(slots),
        tick_labels: slots.min(SET_SIZE_TICK_LABELS),
        format: &format_x,
        description: "prediction set size",
        grid: false,
    };
    let chart = share_histogram_chart(&rest, x_axis, y_max, "% of images", metrics)?;

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
    draw_polyline(&top_pixels, coverage.iter().copied(), BLUE, metrics)?;

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
    draw_polyline(&bottom_pixels, sizes.iter().copied(), GREEN, metrics)?;

    let marker = VERMILLION.stroke_width(metrics.stroke(REFERENCE_LINE_WIDTH));
    for pixels in [&top_pixels, &bottom_pixels] {
        draw_vertical(pixels, current_alpha, marker, false, metrics)?;
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
/// "R = … splits", "Beta(k, n + 1 − k)". With `pac_density` samples (the law of the
/// training-conditional rank, `conformal::rank_coverage_density`), a purple curve too, its
/// tail below `target` shaded: the probability `≤ δ` that the PAC threshold's coverage falls
/// short (legend "PAC Beta(k′, n + 1 − k′), tail ≤ δ"). Density samples that are not finite or
/// fall outside the x axis are left out. No coverages draw the curves and the band alone.
/// Comfortable from about 240×160 CSS pixels.
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
    pac_density: &[(f64, f64)],
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
    for samples in [density, pac_density] {
        if let Some((index, &(_, value))) = samples
            .iter()
            .enumerate()
            .find(|(_, (_, value))| *value < 0.0)
        {
            return Err(PlotError::NegativeDensity { index, value });
        }
    }
    let metrics = Metrics::fit(style, area.dim_in_pixel(), EXPERIMENT_SIZE)?;
    let repetitions = coverages.len();
    let mut legend = vec![
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
    if !pac_density.is_empty() {
        legend.push(LegendEntry::new(
            LegendMark::Line {
                colour: PURPLE,
                width: CURVE_WIDTH,
                dashed: false,
            },
            "PAC Beta(k′, n + 1 − k′), tail ≤ δ",
        ));
    }
    let rest = draw_legend(area, &legend, metrics.px(Y_LABEL_AREA), metrics)?;

    // The PAC curve's bulk (above a twentieth of its peak) is kept on the axis.
    let pac_peak = pac_density
        .iter()
        .map(|&(_, y)| y)
        .filter(|y| y.is_finite())
        .fold(0.0, f64::max);
    let pac_bulk = pac_density
        .iter()
        .filter(|&&(x, y)| x.is_finite() && y.is_finite() && y >= 0.05 * pac_peak)
        .map(|&(x, _)| x);
    let data_extent = extent(
        coverages
            .iter()
            .copied()
            .chain([target, upper])
            .chain(pac_bulk),
    )
    .unwrap_or((target, upper));
    let bin_range = padded(data_extent, 0.0, EXPERIMENT_MIN_SPAN);
    let heights = density_histogram(coverages, EXPERIMENT_BINS, bin_range.start, bin_range.end);
    let bin_width = (bin_range.end - bin_range.start) / EXPERIMENT_BINS as f64;
    let x_range = (bin_range.start - bin_width)..(bin_range.end + bin_width);
    let on_axis = |samples: &[(f64, f64)]| -> Vec<(f64, f64)> {
        samples
            .iter()
            .copied()
            .filter(|&(x, y)| x.is_finite() && y.is_finite() && x_range.contains(&x))
            .collect()
    };
    let curve = on_axis(density);
    let pac_curve = on_axis(pac_density);
    let tallest = heights
        .iter()
        .chain(curve.iter().chain(&pac_curve).map(|(_, y)| y))
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
    draw_polyline(&pixels, curve.iter().copied(), ORANGE, metrics)?;
    let tail: Vec<(i32, i32)> = pac_curve
        .iter()
        .filter(|&&(x, _)| x <= target)
        .map(|&(x, y)| pixels.point(x, y))
        .collect();
    if let (Some(&(first, _)), Some(&(last, _))) = (tail.first(), tail.last()) {
        let baseline = pixels.point(target, 0.0).1;
        let outline: Vec<(i32, i32)> = std::iter::once((first, baseline))
            .chain(tail.iter().copied())
            .chain(std::iter::once((last, baseline)))
            .collect();
        pixels
            .canvas
            .draw(&Polygon::new(outline, PURPLE.mix(BAND_OPACITY).filled()))?;
    }
    draw_polyline(&pixels, pac_curve.iter().copied(), PURPLE, metrics)?;
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
#[path = "conformal_tests.rs"]
mod tests;
