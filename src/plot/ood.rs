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
use crate::lab::ood_view::{LogitNormMeans, PairedHistogram, RocPoint};

/// Comfortable sizes (CSS pixels) of the charts; smaller areas scale a chart down.
const OOD_HISTOGRAM_SIZE: (f64, f64) = (240.0, 180.0);
const ROC_SIZE: (f64, f64) = (240.0, 240.0);
const TAU_CHART_SIZE: (f64, f64) = (260.0, 220.0);

/// Width of the threshold and mean lines (CSS pixels).
const REFERENCE_LINE_WIDTH: f64 = 2.0;
/// Radius of a point of the τ chart (CSS pixels).
const MARKER_RADIUS: f64 = 3.5;
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

/// One evaluated network (one τ, one training seed) on the τ chart; every value is a
/// fraction in `[0, 1]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TauPoint {
    /// LogitNorm's temperature `τ`; `None` for the cross-entropy network.
    pub tau: Option<f64>,
    /// The training seed.
    pub seed: u32,
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
    let x_decimals = tick_decimals(x_high - x_low, TICK_LABELS);
    let format_x = |x: &f64| format!("{:.x_decimals$}", x + 0.0);
    let x_axis = HistogramXAxis {
        range: x_low..x_high,
        tick_labels: TICK_LABELS,
        format: &format_x,
        description: value_description,
        grid: true,
    };
    let chart = share_histogram_chart(area, x_axis, y_max, "% of set", metrics)?;
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
    draw_vertical(
        &pixels,
        threshold,
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
    legend.push(LegendEntry::new(DIAGONAL_MARK, "chance"));
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
    draw_diagonal(&pixels, metrics)?;
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
/// `log10 τ` — the mean over its seeds, each seed a ring beside it when it has several —, lines
/// joining the LogitNorm networks' means in increasing `τ`, and the cross-entropy network at
/// the "CE" position right of the τ axis. The axis spans at least
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

    let groups = seed_groups(points);
    // LogitNorm networks by increasing τ, at log10 τ, each the mean over its seeds.
    let logit_norm: Vec<(f64, &TauPoint)> = groups
        .iter()
        .filter_map(|(mean, _)| mean.tau.map(|tau| (tau.log10(), mean)))
        .collect();
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
    let x_of = |point: &TauPoint| point.tau.map_or(cross_entropy_x, f64::log10);
    for &(_, colour, value) in &TAU_SERIES {
        if logit_norm.len() >= 2 {
            let line = logit_norm.iter().map(|&(x, point)| (x, value(point)));
            draw_polyline(&pixels, line, colour, metrics)?;
        }
        for (mean, seeds) in &groups {
            pixels.canvas.draw(&Circle::new(
                pixels.point(x_of(mean), value(mean)),
                radius,
                colour.filled(),
            ))?;
            // Each seed as a ring around the mean's column, when there is more than one.
            if seeds.len() > 1 {
                for seed in seeds {
                    pixels.canvas.draw(&Circle::new(
                        pixels.point(x_of(seed), value(seed)),
                        radius,
                        colour.stroke_width(metrics.stroke(1.0)),
                    ))?;
                }
            }
        }
    }
    Ok(())
}

/// The points grouped by τ (in increasing τ, cross-entropy last): the mean of the group's
/// values (its `seed` set to 0), and the group's points by seed.
fn seed_groups(points: &[TauPoint]) -> Vec<(TauPoint, Vec<TauPoint>)> {
    let mut sorted = points.to_vec();
    let key = |point: &TauPoint| point.tau.unwrap_or(f64::INFINITY);
    sorted.sort_by(|a, b| key(a).total_cmp(&key(b)).then(a.seed.cmp(&b.seed)));
    let mut groups: Vec<(TauPoint, Vec<TauPoint>)> = Vec::new();
    for point in sorted {
        match groups.last_mut() {
            Some((_, seeds)) if seeds[0].tau == point.tau => seeds.push(point),
            _ => groups.push((point, vec![point])),
        }
    }
    for (mean, seeds) in &mut groups {
        let count = seeds.len() as f64;
        let average = |value: fn(&TauPoint) -> f64| seeds.iter().map(value).sum::<f64>() / count;
        *mean = TauPoint {
            tau: seeds[0].tau,
            seed: 0,
            accuracy: average(|p| p.accuracy),
            ece_raw: average(|p| p.ece_raw),
            ece_fitted: average(|p| p.ece_fitted),
            fpr95: average(|p| p.fpr95),
            auroc: average(|p| p.auroc),
        };
    }
    groups
}

#[cfg(test)]
#[path = "ood_tests.rs"]
mod tests;
