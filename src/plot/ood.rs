//! Charts of out-of-distribution (OOD) detection and of LogitNorm (docs/definitions.md,
//! "Out-of-distribution scores" and "LogitNorm"); the numbers come from `ood_view.rs`.
//!
//! # What it draws
//! * **Score histogram**: the share of in-distribution (ID, blue) and OOD (orange) inputs per
//!   score bin, side by side in each bin, with the threshold `t` that keeps 95% of the ID inputs
//!   (the `⌈0.95·n_in⌉`-th largest ID score) as a vertical vermillion line. Scores `≥ t` are
//!   taken for ID: that side is shaded, and the OOD bars there are hatched: their share is
//!   FPR95 (Hendrycks & Gimpel, ICLR 2017; Liu et al., NeurIPS 2020).
//! * **ROC curves** of several networks on one plot, ID as the positive class: true positive
//!   rate (ID kept) against false positive rate (OOD let through), with the dashed diagonal of
//!   a score that cannot tell the sets apart (Fawcett, Pattern Recognition Letters, 2006).
//! * **Logit-norm histogram**: `‖z‖₂` of ID and OOD inputs, with each set's mean as a vertical
//!   line. LogitNorm (Wei et al., "Mitigating Neural Network Overconfidence with Logit
//!   Normalization", ICML 2022) trains on `z/(τ‖z‖)`, so the loss stops rewarding large norms.
//! * **τ chart**: accuracy, raw ECE, ECE after temperature scaling, FPR95 and AUROC (all in
//!   `[0, 1]`) of each network evaluated so far, against LogitNorm's `τ` on a log axis; the
//!   cross-entropy network, which has no `τ`, is a separate point labelled "CE" right of the
//!   axis. Lines join consecutive LogitNorm points.
//!
//! Empty inputs draw empty axes; values that are not fractions, bin edges that do not
//! increase, and non-positive `τ` are refused with a typed [`PlotError`].

use plotters::element::Circle;

use super::*;
use crate::ood_view::{LogitNormMeans, PairedHistogram, RocPoint};

/// Comfortable sizes (CSS pixels) of the charts; smaller areas scale a chart down.
const OOD_HISTOGRAM_SIZE: (f64, f64) = (240.0, 180.0);
const ROC_SIZE: (f64, f64) = (240.0, 240.0);
const TAU_CHART_SIZE: (f64, f64) = (260.0, 220.0);

/// Width of the threshold and mean lines, and of curves (CSS pixels).
const REFERENCE_LINE_WIDTH: f64 = 2.0;
const CURVE_WIDTH: f64 = 2.0;
/// Radius of a point of the τ chart (CSS pixels).
const MARKER_RADIUS: f64 = 3.5;
/// Headroom above the tallest bar, as a factor.
const Y_HEADROOM: f64 = 1.1;
/// The τ chart's axis spans at least `τ ∈ [0.01, 1]` (log10: −2 to 0), the range of the
/// bundled networks, so that it does not move as networks are evaluated.
const TAU_LOG_RANGE: (f64, f64) = (-2.0, 0.0);
/// Distance, in decades, from the largest `τ` to the cross-entropy point, and padding at
/// both ends of the axis.
const CROSS_ENTROPY_GAP: f64 = 0.6;
const TAU_AXIS_PADDING: f64 = 0.25;
/// Label of the cross-entropy point on the τ axis.
const CROSS_ENTROPY_LABEL: &str = "CE";
/// Gap between the x axis and its manually drawn tick labels (CSS pixels).
const TICK_LABEL_GAP: f64 = 2.0;
/// Colours of the ROC curves, in order (then repeated).
const CURVE_COLOURS: [RGBColor; 5] = [BLUE, ORANGE, GREEN, PURPLE, SKY_BLUE];

/// The words on a histogram of ID against OOD values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HistogramLabels<'a> {
    /// The ID set's name in the legend, e.g. "Fashion-MNIST".
    pub in_distribution: &'a str,
    /// The OOD set's name in the legend, e.g. "MNIST digits".
    pub out_of_distribution: &'a str,
    /// The x axis description: the score, e.g. "MSP at T = 1.00", or "‖z‖₂".
    pub value: &'a str,
}

/// One network's ROC curve and its legend label (e.g. "LogitNorm τ = 0.04, AUROC 0.97").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RocCurve<'a> {
    pub label: &'a str,
    /// Points in increasing rates, e.g. `ood_view::thin_roc_curve` of the exact curve.
    pub points: &'a [RocPoint],
}

/// One evaluated network on the τ chart; every value is a fraction in `[0, 1]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TauPoint {
    /// LogitNorm's temperature `τ`; `None` for the cross-entropy network.
    pub tau: Option<f64>,
    pub accuracy: f64,
    /// ECE at `T = 1`.
    pub ece_raw: f64,
    /// ECE at the fitted temperature.
    pub ece_fitted: f64,
    pub fpr95: f64,
    pub auroc: f64,
}

/// One series of the τ chart: legend label, colour, and the value it reads from a point.
type TauSeries = (&'static str, RGBColor, fn(&TauPoint) -> f64);

/// The series of the τ chart.
const TAU_SERIES: [TauSeries; 5] = [
    ("accuracy", BLUE, |point| point.accuracy),
    ("ECE (raw)", VERMILLION, |point| point.ece_raw),
    ("ECE (after T)", ORANGE, |point| point.ece_fitted),
    ("FPR95", PURPLE, |point| point.fpr95),
    ("AUROC", GREEN, |point| point.auroc),
];

/// Decimals needed to tell apart at most `max_ticks` ticks over `span`.
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

/// Checks that a histogram has one more edge than bins, finite increasing edges and shares in
/// `[0, 1]`.
fn check_histogram(histogram: &PairedHistogram) -> Result<(), PlotError> {
    let bins = histogram.in_distribution.len();
    if histogram.out_of_distribution.len() != bins || histogram.edges.len() != bins + 1 {
        return Err(PlotError::HistogramShape {
            edges: histogram.edges.len(),
            in_distribution: bins,
            out_of_distribution: histogram.out_of_distribution.len(),
        });
    }
    for pair in histogram.edges.windows(2) {
        if !(pair[0] < pair[1] && (pair[1] - pair[0]).is_finite()) {
            return Err(PlotError::InvalidAxisRange {
                start: pair[0],
                end: pair[1],
            });
        }
    }
    for &share in &histogram.in_distribution {
        check_fraction("share of in-distribution values", share)?;
    }
    for &share in &histogram.out_of_distribution {
        check_fraction("share of out-of-distribution values", share)?;
    }
    Ok(())
}

fn check_finite(name: &'static str, value: f64) -> Result<(), PlotError> {
    if value.is_finite() {
        Ok(())
    } else {
        Err(PlotError::NotFinite { name, value })
    }
}

/// A histogram chart of ID against OOD values, drawn up to its axes.
struct HistogramChart<'a, DB: DrawingBackend> {
    chart: Chart<'a, DB>,
    /// Top of the y axis, in percent.
    y_max: f64,
}

/// Builds the chart of a paired histogram on `area` (legend already drawn), with x spanning
/// the edges and `also_shown`, and y the shares in percent.
fn histogram_chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    histogram: &PairedHistogram,
    also_shown: &[f64],
    value_description: &str,
    metrics: Metrics,
) -> Result<HistogramChart<'a, DB>, PlotError> {
    let edges = &histogram.edges;
    let (x_low, x_high) = also_shown
        .iter()
        .fold((edges[0], edges[edges.len() - 1]), |(low, high), &value| {
            (low.min(value), high.max(value))
        });
    let tallest = histogram
        .in_distribution
        .iter()
        .chain(&histogram.out_of_distribution)
        .fold(0.0, |tallest: f64, &share| tallest.max(100.0 * share));
    let y_max = (Y_HEADROOM * tallest).max(1.0);
    let mut chart = build_chart(area, x_low..x_high, 0.0..y_max, FULL_LAYOUT, metrics)?;
    let x_decimals = tick_decimals(x_high - x_low, TICK_LABELS);
    let format_x = |x: &f64| format!("{:.x_decimals$}", x + 0.0);
    let y_decimals = if y_max < 5.0 { 1 } else { 0 };
    let format_y = |y: &f64| format!("{y:.y_decimals$}%");
    let axes = Axes {
        tick_font: TICK_FONT,
        tick_labels: (TICK_LABELS, HISTOGRAM_Y_TICK_LABELS),
        tick_mark: TICK_MARK,
        descriptions: (Some(value_description), Some("% of set")),
        x_format: &format_x,
        y_format: &format_y,
        grid: (true, true),
    };
    draw_axes(&mut chart, &axes, metrics)?;
    Ok(HistogramChart { chart, y_max })
}

/// Draws the bars of a paired histogram: in each bin, the ID share as a blue bar on the left
/// half and the OOD share as an orange bar on the right half; the part of an OOD bar at or
/// above `hatch_from` (if any) is hatched. Empty shares draw nothing.
fn draw_paired_bars<DB: DrawingBackend>(
    pixels: &PlotPixels<'_, DB>,
    histogram: &PairedHistogram,
    hatch_from: Option<f64>,
    metrics: Metrics,
) -> Result<(), PlotError> {
    let bins = histogram
        .edges
        .windows(2)
        .zip(&histogram.in_distribution)
        .zip(&histogram.out_of_distribution);
    for ((edges, &in_share), &out_share) in bins {
        let (left, right) = (edges[0], edges[1]);
        let middle = (left + right) / 2.0;
        if in_share > 0.0 {
            let bar = PixelRect::spanning(
                pixels.point(left, 0.0),
                pixels.point(middle, 100.0 * in_share),
            );
            draw_bar(&pixels.canvas, bar, BLUE, metrics)?;
        }
        if out_share > 0.0 {
            let top = 100.0 * out_share;
            let split = hatch_from.map_or(right, |from| from.clamp(middle, right));
            if split > middle {
                let plain =
                    PixelRect::spanning(pixels.point(middle, 0.0), pixels.point(split, top));
                draw_bar(&pixels.canvas, plain, ORANGE, metrics)?;
            }
            if split < right {
                let hatched =
                    PixelRect::spanning(pixels.point(split, 0.0), pixels.point(right, top));
                draw_hatched_bar(&pixels.canvas, hatched, ORANGE, metrics)?;
            }
        }
    }
    Ok(())
}

/// Draws the histogram of a score for ID and OOD inputs into `area` (from
/// `OodView::score_histogram`): blue ID and orange OOD bars side by side in each bin, the
/// 95%-TPR `threshold` as a vertical vermillion line, the side at or above it shaded and the
/// OOD bars there hatched, and a legend giving `out_of_distribution_above` (the OOD share at or
/// above the threshold, FPR95) in percent. Comfortable from about 240×180 CSS pixels.
///
/// # Errors
/// [`PlotError::HistogramShape`] or [`PlotError::InvalidAxisRange`] for a histogram whose
/// edges do not match its bins or do not increase, [`PlotError::InvalidFraction`] for a share
/// (or `out_of_distribution_above`) that is NaN or outside `[0, 1]`, [`PlotError::NotFinite`]
/// for a NaN or infinite threshold, [`PlotError::InvalidScale`], [`PlotError::AreaTooSmall`]
/// below 40% of the comfortable size, and [`PlotError::Drawing`] when the backend fails.
pub fn score_histogram<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    histogram: &PairedHistogram,
    threshold: f64,
    out_of_distribution_above: f64,
    labels: &HistogramLabels,
    style: &ChartStyle,
) -> Result<(), PlotError> {
    check_histogram(histogram)?;
    check_finite("threshold", threshold)?;
    check_fraction(
        "OOD share at or above the threshold",
        out_of_distribution_above,
    )?;
    let metrics = Metrics::fit(style, area.dim_in_pixel(), OOD_HISTOGRAM_SIZE)?;
    let legend = [
        LegendEntry::new(LegendMark::Bar(BLUE), labels.in_distribution),
        LegendEntry::new(LegendMark::Bar(ORANGE), labels.out_of_distribution),
        LegendEntry::new(
            LegendMark::Line {
                colour: VERMILLION,
                width: REFERENCE_LINE_WIDTH,
                dashed: false,
            },
            "threshold: 95% of ID at or above",
        ),
        LegendEntry::new(
            LegendMark::HatchedBar(ORANGE),
            format!(
                "{} at or above: {:.1}%",
                labels.out_of_distribution,
                100.0 * out_of_distribution_above
            ),
        ),
    ];
    let rest = draw_legend(area, &legend, metrics.px(Y_LABEL_AREA), metrics)?;
    let HistogramChart { chart, y_max } =
        histogram_chart(&rest, histogram, &[threshold], labels.value, metrics)?;
    let pixels = PlotPixels::new(&chart);
    let x_high = chart.plotting_area().get_x_range().end;
    // The shading goes behind the bars, the line over them.
    let taken_for_in_distribution =
        PixelRect::spanning(pixels.point(threshold, 0.0), pixels.point(x_high, y_max));
    shade_band(&pixels.canvas, taken_for_in_distribution, VERMILLION)?;
    draw_paired_bars(&pixels, histogram, Some(threshold), metrics)?;
    draw_line(
        &pixels.canvas,
        pixels.point(threshold, 0.0),
        pixels.point(threshold, y_max),
        VERMILLION.stroke_width(metrics.stroke(REFERENCE_LINE_WIDTH)),
        false,
        metrics,
    )
}

/// Draws the histogram of the logit norms `‖z‖₂` of ID and OOD inputs into `area` (from
/// `OodView::logit_norm_histogram`): blue ID and orange OOD bars side by side in each bin, and
/// each set's mean as a vertical dark grey line, solid for ID and dashed for OOD, with the
/// means in the legend. Comfortable from about 240×180 CSS pixels.
///
/// # Errors
/// [`PlotError::HistogramShape`], [`PlotError::InvalidAxisRange`] and
/// [`PlotError::InvalidFraction`] as [`score_histogram`], [`PlotError::NotFinite`] for a NaN or
/// infinite mean, [`PlotError::InvalidScale`], [`PlotError::AreaTooSmall`] below 40% of the
/// comfortable size, and [`PlotError::Drawing`] when the backend fails.
pub fn logit_norm_histogram<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    histogram: &PairedHistogram,
    means: &LogitNormMeans,
    labels: &HistogramLabels,
    style: &ChartStyle,
) -> Result<(), PlotError> {
    check_histogram(histogram)?;
    check_finite("mean in-distribution logit norm", means.in_distribution)?;
    check_finite(
        "mean out-of-distribution logit norm",
        means.out_of_distribution,
    )?;
    let metrics = Metrics::fit(style, area.dim_in_pixel(), OOD_HISTOGRAM_SIZE)?;
    let mean_mark = |dashed| LegendMark::Line {
        colour: DARK_GREY,
        width: REFERENCE_LINE_WIDTH,
        dashed,
    };
    let legend = [
        LegendEntry::new(LegendMark::Bar(BLUE), labels.in_distribution),
        LegendEntry::new(LegendMark::Bar(ORANGE), labels.out_of_distribution),
        LegendEntry::new(
            mean_mark(false),
            format!(
                "mean {}: {:.2}",
                labels.in_distribution, means.in_distribution
            ),
        ),
        LegendEntry::new(
            mean_mark(true),
            format!(
                "mean {}: {:.2}",
                labels.out_of_distribution, means.out_of_distribution
            ),
        ),
    ];
    let rest = draw_legend(area, &legend, metrics.px(Y_LABEL_AREA), metrics)?;
    let shown = [means.in_distribution, means.out_of_distribution];
    let HistogramChart { chart, y_max } =
        histogram_chart(&rest, histogram, &shown, labels.value, metrics)?;
    let pixels = PlotPixels::new(&chart);
    draw_paired_bars(&pixels, histogram, None, metrics)?;
    for (mean, dashed) in [
        (means.in_distribution, false),
        (means.out_of_distribution, true),
    ] {
        draw_line(
            &pixels.canvas,
            pixels.point(mean, 0.0),
            pixels.point(mean, y_max),
            DARK_GREY.stroke_width(metrics.stroke(REFERENCE_LINE_WIDTH)),
            dashed,
            metrics,
        )?;
    }
    Ok(())
}

/// Draws `points` (data coordinates) as one solid polyline of `colour`, or a dot for a single
/// point.
fn draw_polyline<DB: DrawingBackend>(
    pixels: &PlotPixels<'_, DB>,
    points: impl Iterator<Item = (f64, f64)>,
    colour: RGBColor,
    metrics: Metrics,
) -> Result<(), PlotError> {
    let points: Vec<(i32, i32)> = points.map(|(x, y)| pixels.point(x, y)).collect();
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

/// Draws the ROC curves of several networks into `area`: each curve as a solid line (blue,
/// orange, green, purple, sky blue, in order) through its points, false positive rate on x and
/// true positive rate on y, both on `[0, 1]`, with the dashed chance diagonal and a legend of
/// the curves' labels. Comfortable from about 240×240 CSS pixels.
///
/// # Errors
/// [`PlotError::InvalidFraction`] for a rate that is NaN or outside `[0, 1]`,
/// [`PlotError::InvalidScale`], [`PlotError::AreaTooSmall`] below 40% of the comfortable size,
/// and [`PlotError::Drawing`] when the backend fails.
pub fn roc_curves<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    curves: &[RocCurve],
    style: &ChartStyle,
) -> Result<(), PlotError> {
    for point in curves.iter().flat_map(|curve| curve.points) {
        check_fraction("false positive rate", point.false_positive_rate)?;
        check_fraction("true positive rate", point.true_positive_rate)?;
    }
    let metrics = Metrics::fit(style, area.dim_in_pixel(), ROC_SIZE)?;
    let colours = CURVE_COLOURS.iter().cycle();
    let mut legend: Vec<LegendEntry> = curves
        .iter()
        .zip(colours.clone())
        .map(|(curve, &colour)| {
            LegendEntry::new(
                LegendMark::Line {
                    colour,
                    width: CURVE_WIDTH,
                    dashed: false,
                },
                curve.label,
            )
        })
        .collect();
    legend.push(LegendEntry::new(
        LegendMark::Line {
            colour: DARK_GREY,
            width: 1.5,
            dashed: true,
        },
        "chance",
    ));
    let rest = draw_legend(area, &legend, metrics.px(Y_LABEL_AREA), metrics)?;
    let mut chart = build_chart(&rest, 0.0..1.0, 0.0..1.0, FULL_LAYOUT, metrics)?;
    let one_decimal = |value: &f64| format!("{value:.1}");
    let axes = Axes {
        tick_font: TICK_FONT,
        tick_labels: (TICK_LABELS, TICK_LABELS),
        tick_mark: TICK_MARK,
        descriptions: (
            Some("false positive rate (OOD let through)"),
            Some("true positive rate (ID kept)"),
        ),
        x_format: &one_decimal,
        y_format: &one_decimal,
        grid: (true, true),
    };
    draw_axes(&mut chart, &axes, metrics)?;
    let pixels = PlotPixels::new(&chart);
    draw_line(
        &pixels.canvas,
        pixels.point(0.0, 0.0),
        pixels.point(1.0, 1.0),
        DARK_GREY.stroke_width(metrics.stroke(1.5)),
        true,
        metrics,
    )?;
    for (curve, &colour) in curves.iter().zip(colours) {
        let points = curve
            .points
            .iter()
            .map(|point| (point.false_positive_rate, point.true_positive_rate));
        draw_polyline(&pixels, points, colour, metrics)?;
    }
    Ok(())
}

/// Draws the τ chart into `area` (module documentation): for each series (accuracy blue, raw
/// ECE vermillion, ECE after T orange, FPR95 purple, AUROC green) one dot per network at
/// `log10 τ`, lines joining the LogitNorm networks in increasing `τ`, and the cross-entropy
/// network's dots at the "CE" position right of the τ axis. The axis spans at least
/// `τ ∈ [0.01, 1]`, labelled at the powers of ten. Comfortable from about 260×220 CSS pixels.
///
/// # Errors
/// [`PlotError::InvalidTau`] for a `τ` that is not positive and finite,
/// [`PlotError::InvalidFraction`] for a value that is NaN or outside `[0, 1]`,
/// [`PlotError::InvalidScale`], [`PlotError::AreaTooSmall`] below 40% of the comfortable size,
/// and [`PlotError::Drawing`] when the backend fails.
pub fn tau_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    points: &[TauPoint],
    style: &ChartStyle,
) -> Result<(), PlotError> {
    for point in points {
        if let Some(tau) = point.tau {
            if !(tau > 0.0 && tau.is_finite()) {
                return Err(PlotError::InvalidTau(tau));
            }
        }
        check_fraction("accuracy", point.accuracy)?;
        check_fraction("raw ECE", point.ece_raw)?;
        check_fraction("ECE after temperature scaling", point.ece_fitted)?;
        check_fraction("FPR95", point.fpr95)?;
        check_fraction("AUROC", point.auroc)?;
    }
    let metrics = Metrics::fit(style, area.dim_in_pixel(), TAU_CHART_SIZE)?;
    let legend: Vec<LegendEntry> = TAU_SERIES
        .iter()
        .map(|&(label, colour, _)| {
            LegendEntry::new(
                LegendMark::Line {
                    colour,
                    width: CURVE_WIDTH,
                    dashed: false,
                },
                label,
            )
        })
        .collect();
    let rest = draw_legend(area, &legend, metrics.px(Y_LABEL_AREA), metrics)?;

    // LogitNorm networks by increasing τ, at log10 τ.
    let mut logit_norm: Vec<(f64, &TauPoint)> = points
        .iter()
        .filter_map(|point| point.tau.map(|tau| (tau.log10(), point)))
        .collect();
    logit_norm.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (log_low, log_high) = logit_norm
        .iter()
        .fold(TAU_LOG_RANGE, |(low, high), &(x, _)| {
            (low.min(x), high.max(x))
        });
    let cross_entropy_x = log_high + CROSS_ENTROPY_GAP;
    let x_range = (log_low - TAU_AXIS_PADDING)..(cross_entropy_x + TAU_AXIS_PADDING);
    let mut chart = build_chart(&rest, x_range, 0.0..1.0, FULL_LAYOUT, metrics)?;
    let one_decimal = |value: &f64| format!("{value:.1}");
    let no_label = |_: &f64| String::new();
    let axes = Axes {
        tick_font: TICK_FONT,
        tick_labels: (0, TICK_LABELS),
        tick_mark: TICK_MARK,
        descriptions: (Some("LogitNorm τ (log scale); CE = cross-entropy"), None),
        x_format: &no_label,
        y_format: &one_decimal,
        grid: (false, true),
    };
    draw_axes(&mut chart, &axes, metrics)?;
    let pixels = PlotPixels::new(&chart);

    // x ticks: the powers of ten inside the τ range, and "CE".
    let decades = (log_low.ceil() as i32..=log_high.floor() as i32).map(|exponent| {
        let tau = 10_f64.powi(exponent);
        let decimals = (-exponent).max(0) as usize;
        (f64::from(exponent), format!("{tau:.decimals$}"))
    });
    let ticks: Vec<(f64, String)> = decades
        .chain([(cross_entropy_x, CROSS_ENTROPY_LABEL.to_string())])
        .collect();
    let (offset_x, offset_y) = pixels.offset_in(&rest);
    let tick_style = AXIS_GREY.stroke_width(metrics.stroke(1.0));
    let label_style = metrics
        .font(TICK_FONT, &TEXT_GREY)
        .pos(Pos::new(HPos::Center, VPos::Top));
    for (x, label) in &ticks {
        let (tick_x, axis_y) = pixels.point(*x, 0.0);
        let bottom = axis_y + metrics.px(TICK_MARK);
        draw_line(
            &rest,
            (offset_x + tick_x, offset_y + axis_y),
            (offset_x + tick_x, offset_y + bottom),
            tick_style,
            false,
            metrics,
        )?;
        rest.draw_text(
            label,
            &label_style,
            (
                offset_x + tick_x,
                offset_y + bottom + metrics.px(TICK_LABEL_GAP),
            ),
        )?;
    }
    // The cross-entropy point stands apart: a faint dashed separator before it.
    let separator_x = log_high + CROSS_ENTROPY_GAP / 2.0;
    draw_line(
        &pixels.canvas,
        pixels.point(separator_x, 0.0),
        pixels.point(separator_x, 1.0),
        FAINT_GREY.stroke_width(metrics.stroke(1.0)),
        true,
        metrics,
    )?;

    let radius = metrics.px_at_least_one(MARKER_RADIUS);
    for &(_, colour, value) in &TAU_SERIES {
        if logit_norm.len() >= 2 {
            let line = logit_norm.iter().map(|&(x, point)| (x, value(point)));
            draw_polyline(&pixels, line, colour, metrics)?;
        }
        let markers = points.iter().map(|point| {
            let x = point.tau.map_or(cross_entropy_x, f64::log10);
            pixels.point(x, value(point))
        });
        for centre in markers {
            pixels
                .canvas
                .draw(&Circle::new(centre, radius, colour.filled()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::ood_view::{paired_histogram, roc_curve, thin_roc_curve};

    const GREEN_HEX: &str = "#009E73";
    const PURPLE_HEX: &str = "#CC79A7";

    const LABELS: HistogramLabels<'static> = HistogramLabels {
        in_distribution: "Fashion-MNIST",
        out_of_distribution: "MNIST",
        value: "MSP",
    };

    /// Legend swatches drawn as filled rectangles: one blue (ID) and two orange (OOD, and the
    /// hatched OOD at or above the threshold).
    const LEGEND_BLUE_SWATCHES: usize = 1;

    fn style() -> ChartStyle {
        ChartStyle::default()
    }

    /// Ten bins on [0, 1]: ID values from 0.5 to 1 fill bins 5–9, OOD values from 0 to 0.684
    /// fill bins 0–6.
    fn example_histogram() -> PairedHistogram {
        let in_distribution: Vec<f64> = (0..40).map(|i| 0.5 + f64::from(i) / 78.0).collect();
        let out_of_distribution: Vec<f64> = (0..40).map(|i| f64::from(i) / 57.0).collect();
        paired_histogram(&in_distribution, &out_of_distribution, 10).unwrap()
    }

    /// The x pixel of data value `x` from the pixels of the ticks labelled `a` at `value_a` and
    /// `b` at `value_b`.
    fn x_pixel(svg: &str, (a, value_a): (&str, f64), (b, value_b): (&str, f64), x: f64) -> f64 {
        let (pixel_a, pixel_b) = (f64::from(x_tick(svg, a)), f64::from(x_tick(svg, b)));
        pixel_a + (pixel_b - pixel_a) * (x - value_a) / (value_b - value_a)
    }

    /// Vertical polylines (two points, same x) stroked in `hex`, as (x, top, bottom).
    fn vertical_lines(svg: &str, hex: &str) -> Vec<(i32, i32, i32)> {
        polylines(svg, hex)
            .into_iter()
            .filter(|points| points.len() == 2 && points[0].0 == points[1].0)
            .map(|points| {
                let (top, bottom) = (points[0].1.min(points[1].1), points[0].1.max(points[1].1));
                (points[0].0, top, bottom)
            })
            .collect()
    }

    #[test]
    fn score_histogram_draws_the_threshold_at_its_value() {
        let histogram = example_histogram();
        let threshold = 0.55;
        let svg = render((560, 360), |area| {
            score_histogram(area, &histogram, threshold, 0.125, &LABELS, &style())
        })
        .unwrap();
        // One vermillion vertical line (the legend's swatch is horizontal), at x = 0.55.
        let lines = vertical_lines(&svg, VERMILLION_HEX);
        assert_eq!(lines.len(), 1);
        let expected = x_pixel(&svg, ("0.0", 0.0), ("1.0", 1.0), threshold);
        assert!((f64::from(lines[0].0) - expected).abs() <= f64::from(PIXEL_TOLERANCE));
        // One blue bar per bin with ID values; the shaded side starts at the line.
        let bins_with_in = histogram
            .in_distribution
            .iter()
            .filter(|&&s| s > 0.0)
            .count();
        assert_eq!(bins_with_in, 5);
        assert_eq!(
            filled_rects(&svg, BLUE_HEX).len(),
            bins_with_in + LEGEND_BLUE_SWATCHES
        );
        let band: Vec<_> = filled_rects(&svg, VERMILLION_HEX)
            .into_iter()
            .filter(|rect| attribute(rect, "opacity") == Some("0.2"))
            .collect();
        assert_eq!(band.len(), 1);
        assert!((number(&band[0], "x") - lines[0].0).abs() <= PIXEL_TOLERANCE);
        // OOD bars: the values i/57 fill bins 0–6. The OOD halves of bins 5 and 6 ([0.55,
        // 0.6] and [0.65, 0.7]) lie at or above 0.55 and are hatched; bins 0–4 are plain:
        // 7 bar pieces, plus the two orange legend swatches.
        let orange = filled_rects(&svg, ORANGE_HEX);
        let bins_with_out = histogram
            .out_of_distribution
            .iter()
            .filter(|&&s| s > 0.0)
            .count();
        assert_eq!(bins_with_out, 7);
        assert_eq!(orange.len(), bins_with_out + 2);
        for label in [
            "Fashion-MNIST",
            "MNIST",
            "threshold: 95% of ID at or above",
            "MNIST at or above: 12.5%",
            "MSP",
            "% of set",
        ] {
            assert!(has_text(&svg, label), "{label} missing");
        }
    }

    #[test]
    fn a_threshold_inside_an_ood_bar_splits_it() {
        // One bin [0, 1] with both sets; the threshold at 0.75 splits the OOD half [0.5, 1].
        let histogram = PairedHistogram {
            edges: vec![0.0, 1.0],
            in_distribution: vec![1.0],
            out_of_distribution: vec![1.0],
        };
        let svg = render((480, 360), |area| {
            score_histogram(area, &histogram, 0.75, 0.5, &LABELS, &style())
        })
        .unwrap();
        let orange = filled_rects(&svg, ORANGE_HEX);
        // Legend: two swatches; chart: the plain piece [0.5, 0.75] and the hatched [0.75, 1].
        assert_eq!(orange.len(), 4);
        let (plain, hatched) = (&orange[2], &orange[3]);
        let threshold_x = vertical_lines(&svg, VERMILLION_HEX)[0].0;
        assert!(
            (number(plain, "x") + number(plain, "width") - threshold_x).abs() <= PIXEL_TOLERANCE
        );
        assert!((number(hatched, "x") - threshold_x).abs() <= PIXEL_TOLERANCE);
        assert!((number(plain, "width") - number(hatched, "width")).abs() <= PIXEL_TOLERANCE);
    }

    #[test]
    fn roc_curves_draw_every_point_and_the_diagonal() {
        let in_distribution: Vec<f64> = (0..300).map(|i| f64::from(i % 97) / 50.0).collect();
        let out_of_distribution: Vec<f64> = (0..200).map(|i| f64::from(i % 89) / 60.0).collect();
        let full = roc_curve(&in_distribution, &out_of_distribution).unwrap();
        let thinned = thin_roc_curve(&full, 40);
        let other = [
            RocPoint {
                false_positive_rate: 0.0,
                true_positive_rate: 0.0,
            },
            RocPoint {
                false_positive_rate: 0.1,
                true_positive_rate: 0.8,
            },
            RocPoint {
                false_positive_rate: 1.0,
                true_positive_rate: 1.0,
            },
        ];
        let curves = [
            RocCurve {
                label: "cross-entropy",
                points: &thinned,
            },
            RocCurve {
                label: "LogitNorm τ = 0.04",
                points: &other,
            },
        ];
        let svg = render((480, 520), |area| roc_curves(area, &curves, &style())).unwrap();
        for (hex, expected) in [(BLUE_HEX, thinned.len()), (ORANGE_HEX, other.len())] {
            let lines: Vec<Vec<(i32, i32)>> = polylines(&svg, hex)
                .into_iter()
                .filter(|points| points.len() > 2)
                .collect();
            assert_eq!(lines.len(), 1, "{hex}");
            assert_eq!(lines[0].len(), expected, "{hex}");
        }
        // The second curve runs from corner to corner through (0.1, 0.8).
        let orange = polylines(&svg, ORANGE_HEX)
            .into_iter()
            .find(|points| points.len() == 3)
            .unwrap();
        let x_of = |fpr: f64| x_pixel(&svg, ("0.0", 0.0), ("1.0", 1.0), fpr);
        let (bottom, top) = (f64::from(orange[0].1), f64::from(orange[2].1));
        assert!((f64::from(orange[0].0) - x_of(0.0)).abs() <= f64::from(PIXEL_TOLERANCE));
        assert!((f64::from(orange[1].0) - x_of(0.1)).abs() <= f64::from(PIXEL_TOLERANCE));
        assert!((f64::from(orange[2].0) - x_of(1.0)).abs() <= f64::from(PIXEL_TOLERANCE));
        let expected_y = bottom + 0.8 * (top - bottom);
        assert!((f64::from(orange[1].1) - expected_y).abs() <= f64::from(PIXEL_TOLERANCE));
        // The chance diagonal runs from corner to corner.
        let diagonal = diagonal_points(&svg);
        assert!(diagonal.len() >= 20);
        for label in ["cross-entropy", "LogitNorm τ = 0.04", "chance"] {
            assert!(has_text(&svg, label), "{label} missing");
        }
    }

    #[test]
    fn logit_norm_histogram_draws_bars_and_both_means() {
        let in_norms: Vec<f64> = (0..50).map(|i| 10.0 + f64::from(i) / 5.0).collect();
        let out_norms: Vec<f64> = (0..30).map(|i| 2.0 + f64::from(i) / 3.0).collect();
        let histogram = paired_histogram(&in_norms, &out_norms, 12).unwrap();
        let means = LogitNormMeans {
            in_distribution: 14.9,
            out_of_distribution: 6.833,
        };
        let labels = HistogramLabels {
            value: "logit norm ‖z‖₂",
            ..LABELS
        };
        let svg = render((560, 360), |area| {
            logit_norm_histogram(area, &histogram, &means, &labels, &style())
        })
        .unwrap();
        let blue_bins = histogram
            .in_distribution
            .iter()
            .filter(|&&s| s > 0.0)
            .count();
        let orange_bins = histogram
            .out_of_distribution
            .iter()
            .filter(|&&s| s > 0.0)
            .count();
        assert_eq!(filled_rects(&svg, BLUE_HEX).len(), blue_bins + 1);
        assert_eq!(filled_rects(&svg, ORANGE_HEX).len(), orange_bins + 1);
        // The solid ID mean line is right of every dash of the OOD mean line.
        let solid: Vec<(i32, i32, i32)> = vertical_lines(&svg, DARK_GREY_HEX)
            .into_iter()
            .filter(|&(_, top, bottom)| bottom - top > 100)
            .collect();
        assert_eq!(solid.len(), 1);
        let dashes: Vec<(i32, i32, i32)> = vertical_lines(&svg, DARK_GREY_HEX)
            .into_iter()
            .filter(|&(_, top, bottom)| bottom - top <= 10)
            .collect();
        assert!(dashes.len() > 5);
        assert!(dashes.iter().all(|&(x, _, _)| x < solid[0].0 - 50));
        for label in [
            "mean Fashion-MNIST: 14.90",
            "mean MNIST: 6.83",
            "logit norm ‖z‖₂",
        ] {
            assert!(has_text(&svg, label), "{label} missing");
        }
    }

    fn tau_point(tau: Option<f64>, base: f64) -> TauPoint {
        TauPoint {
            tau,
            accuracy: 0.9,
            ece_raw: base,
            ece_fitted: base / 4.0,
            fpr95: 0.5 + base,
            auroc: 0.95 - base,
        }
    }

    #[test]
    fn tau_chart_draws_one_marker_per_point_and_series() {
        // Evaluated so far: τ = 0.1, 0.01, 1 (out of order), 0.04, and cross-entropy.
        let points = [
            tau_point(Some(0.1), 0.05),
            tau_point(Some(0.01), 0.2),
            tau_point(None, 0.1),
            tau_point(Some(1.0), 0.02),
            tau_point(Some(0.04), 0.15),
        ];
        let svg = render((560, 420), |area| tau_chart(area, &points, &style())).unwrap();
        let circles = elements(&svg, "circle");
        for hex in [BLUE_HEX, VERMILLION_HEX, ORANGE_HEX, PURPLE_HEX, GREEN_HEX] {
            let markers: Vec<(i32, i32)> = circles
                .iter()
                .filter(|circle| attribute(circle, "fill") == Some(hex))
                .map(|circle| (number(circle, "cx"), number(circle, "cy")))
                .collect();
            assert_eq!(markers.len(), points.len(), "{hex}");
            // The line joins the four LogitNorm points in increasing τ.
            let lines: Vec<Vec<(i32, i32)>> = polylines(&svg, hex)
                .into_iter()
                .filter(|line| line.len() == 4)
                .collect();
            assert_eq!(lines.len(), 1, "{hex}");
            assert!(lines[0].windows(2).all(|pair| pair[0].0 < pair[1].0));
        }
        // Markers sit at log10 τ between the decade ticks; CE right of τ = 1.
        let accuracy_markers: Vec<i32> = circles
            .iter()
            .filter(|circle| attribute(circle, "fill") == Some(BLUE_HEX))
            .map(|circle| number(circle, "cx"))
            .collect();
        let tick = |label| f64::from(x_tick(&svg, label));
        let at = |tau: f64| tick("0.01") + (tick("1") - tick("0.01")) * (tau.log10() + 2.0) / 2.0;
        for (marker, point) in accuracy_markers.iter().zip(&points) {
            let expected = match point.tau {
                Some(tau) => at(tau),
                None => tick("CE"),
            };
            assert!((f64::from(*marker) - expected).abs() <= f64::from(PIXEL_TOLERANCE));
        }
        assert!(tick("0.1") > tick("0.01") && tick("1") > tick("0.1") && tick("CE") > tick("1"));
        // All accuracies are 0.9: every accuracy marker is on one row.
        let rows: std::collections::BTreeSet<i32> = circles
            .iter()
            .filter(|circle| attribute(circle, "fill") == Some(BLUE_HEX))
            .map(|circle| number(circle, "cy"))
            .collect();
        assert_eq!(rows.len(), 1);
        for label in ["accuracy", "ECE (raw)", "ECE (after T)", "FPR95", "AUROC"] {
            assert!(has_text(&svg, label), "{label} missing");
        }
    }

    #[test]
    fn tau_chart_with_few_points() {
        // Only cross-entropy: markers, no lines; no points: empty axes with the ticks.
        let svg = render((560, 420), |area| {
            tau_chart(area, &[tau_point(None, 0.1)], &style())
        })
        .unwrap();
        assert_eq!(elements(&svg, "circle").len(), TAU_SERIES.len());
        assert!(polylines(&svg, GREEN_HEX)
            .iter()
            .all(|line| line.len() == 2));
        let svg = render((560, 420), |area| tau_chart(area, &[], &style())).unwrap();
        assert!(elements(&svg, "circle").is_empty());
        assert!(has_text(&svg, "CE") && has_text(&svg, "0.01"));
        // A τ outside [0.01, 1] widens the axis.
        let svg = render((560, 420), |area| {
            tau_chart(area, &[tau_point(Some(0.001), 0.1)], &style())
        })
        .unwrap();
        assert!(has_text(&svg, "0.001"));
    }

    #[test]
    fn charts_draw_at_every_scale_and_small_sizes() {
        let histogram = example_histogram();
        let curve = [
            RocPoint {
                false_positive_rate: 0.0,
                true_positive_rate: 0.0,
            },
            RocPoint {
                false_positive_rate: 1.0,
                true_positive_rate: 1.0,
            },
        ];
        let curves = [RocCurve {
            label: "one",
            points: &curve,
        }];
        let means = LogitNormMeans {
            in_distribution: 0.8,
            out_of_distribution: 0.3,
        };
        let points = [tau_point(Some(0.02), 0.1), tau_point(None, 0.2)];
        for scale in [1.0, 2.0, 3.0] {
            let style = ChartStyle { scale };
            for size in [(320, 240), (240, 320), (560, 560), (1680, 1680)] {
                render(size, |area| {
                    score_histogram(area, &histogram, 0.6, 0.1, &LABELS, &style)
                })
                .unwrap();
                render(size, |area| {
                    logit_norm_histogram(area, &histogram, &means, &LABELS, &style)
                })
                .unwrap();
                render(size, |area| roc_curves(area, &curves, &style)).unwrap();
                render(size, |area| tau_chart(area, &points, &style)).unwrap();
            }
        }
        // Empty curves and a single point.
        render((400, 400), |area| roc_curves(area, &[], &style())).unwrap();
        let single = [RocCurve {
            label: "dot",
            points: &curve[..1],
        }];
        let svg = render((400, 400), |area| roc_curves(area, &single, &style())).unwrap();
        assert_eq!(elements(&svg, "circle").len(), 1);
    }

    #[test]
    fn invalid_input_is_refused_with_a_typed_error() {
        let histogram = example_histogram();
        let draw_histogram = |histogram: &PairedHistogram, threshold: f64, share: f64| {
            render((560, 360), |area| {
                score_histogram(area, histogram, threshold, share, &LABELS, &style())
            })
        };
        assert!(matches!(
            draw_histogram(&histogram, f64::NAN, 0.1),
            Err(PlotError::NotFinite {
                name: "threshold",
                ..
            })
        ));
        assert!(matches!(
            draw_histogram(&histogram, 0.5, 1.5),
            Err(PlotError::InvalidFraction { .. })
        ));
        let mut short = histogram.clone();
        short.edges.pop();
        assert!(matches!(
            draw_histogram(&short, 0.5, 0.1),
            Err(PlotError::HistogramShape { edges: 10, .. })
        ));
        let mut unordered = histogram.clone();
        unordered.edges.swap(2, 3);
        assert!(matches!(
            draw_histogram(&unordered, 0.5, 0.1),
            Err(PlotError::InvalidAxisRange { .. })
        ));
        let mut bad_share = histogram.clone();
        bad_share.out_of_distribution[0] = f64::NAN;
        assert!(matches!(
            draw_histogram(&bad_share, 0.5, 0.1),
            Err(PlotError::InvalidFraction { .. })
        ));
        let means = LogitNormMeans {
            in_distribution: f64::INFINITY,
            out_of_distribution: 0.3,
        };
        assert!(matches!(
            render((560, 360), |area| logit_norm_histogram(
                area,
                &histogram,
                &means,
                &LABELS,
                &style()
            )),
            Err(PlotError::NotFinite { .. })
        ));
        let outside = [RocPoint {
            false_positive_rate: 0.5,
            true_positive_rate: -0.1,
        }];
        let curves = [RocCurve {
            label: "bad",
            points: &outside,
        }];
        assert!(matches!(
            render((400, 400), |area| roc_curves(area, &curves, &style())),
            Err(PlotError::InvalidFraction {
                name: "true positive rate",
                ..
            })
        ));
        for tau in [0.0, -0.1, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                render((560, 420), |area| tau_chart(
                    area,
                    &[tau_point(Some(tau), 0.1)],
                    &style()
                )),
                Err(PlotError::InvalidTau(_))
            ));
        }
        let mut bad = tau_point(None, 0.1);
        bad.fpr95 = 1.2;
        assert!(matches!(
            render((560, 420), |area| tau_chart(area, &[bad], &style())),
            Err(PlotError::InvalidFraction { name: "FPR95", .. })
        ));
        assert!(matches!(
            render((50, 50), |area| tau_chart(area, &[], &style())),
            Err(PlotError::AreaTooSmall { .. })
        ));
    }
}
