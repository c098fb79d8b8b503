//! The page's figures, each drawn by one function from a frame's views whatever the backend
//! (the page's canvases, the SVG a reader downloads), and each with the CSV of the numbers it
//! draws: so a downloaded figure and its data are the figure on screen.

use plotters::coord::Shift;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use super::{Frame, OodCharts, PvalueFrame};
use crate::bootstrap::{ReliabilityBand, SmoothDiagram};
use crate::calibration::Bin;
use crate::calibration_estimators::CumulativeDifferences;
use crate::corp::Corp;
use crate::lab::ood_view::PairedHistogram;
use crate::lab::CoverageExperiment;
use crate::lab::{AdaptiveView, COVERAGE_WINDOW};
use crate::lab::{
    AnatomyView, ConformalView, SelectiveView, ShiftMetrics, ShiftView, TemperatureView, MISTAKES,
};
use crate::plot::{self, ChartStyle, PlotError};

/// A figure of the page; its serde name is its canvas's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Figure {
    Reliability,
    Histogram,
    SmoothReliability,
    CorpReliability,
    Classwise,
    RivalsReliability,
    TemperatureAnatomy,
    SetSizes,
    PerClass,
    Stratified,
    Sweep,
    Experiment,
    RiskCoverage,
    ShiftReliability,
    ShiftSeverity,
    OodHistogram,
    OodRoc,
    OodNorms,
    TauChart,
    CumulativeDifferences,
    AciStream,
    OodPvalues,
}

/// What the page shows: the whole article, or one figure alone with its lab's controls (the
/// embed view, for an `<iframe>` in a blog post). The hash writes `none` or the figure's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Embed {
    #[default]
    None,
    Figure(Figure),
}

impl Serialize for Embed {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Embed::None => serializer.serialize_str("none"),
            Embed::Figure(figure) => figure.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Embed {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::{Error, IntoDeserializer};
        let name = String::deserialize(deserializer)?;
        if name == "none" {
            return Ok(Embed::None);
        }
        Figure::deserialize(name.as_str().into_deserializer())
            .map(Embed::Figure)
            .map_err(|_: serde::de::value::Error| {
                let names: Vec<String> = FIGURES.iter().map(|f| f.id.id()).collect();
                D::Error::custom(format!("is not none or a figure: {}", names.join(", ")))
            })
    }
}

/// Which lab a figure belongs to: the one whose view must be computed to draw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FigureLab {
    Temperature,
    Conformal,
    Shift,
    Ood,
}

/// What the page's script needs of a figure: its canvas, the stem of its files, its lab.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct FigureInfo {
    pub id: Figure,
    /// The start of its downloads' names, e.g. `calibra-reliability`.
    pub file_stem: &'static str,
    /// What it shows, for the buttons' accessible names.
    pub title: &'static str,
    pub lab: FigureLab,
}

/// Every figure, in the page's order.
pub const FIGURES: [FigureInfo; 22] = [
    info(
        Figure::Reliability,
        "calibra-reliability",
        "reliability diagram",
        FigureLab::Temperature,
    ),
    info(
        Figure::Histogram,
        "calibra-confidence-histogram",
        "confidence histogram",
        FigureLab::Temperature,
    ),
    info(
        Figure::SmoothReliability,
        "calibra-smooth-reliability",
        "smooth reliability diagram",
        FigureLab::Temperature,
    ),
    info(
        Figure::CorpReliability,
        "calibra-corp-reliability",
        "CORP reliability diagram",
        FigureLab::Temperature,
    ),
    info(
        Figure::CumulativeDifferences,
        "calibra-cumulative-differences",
        "cumulative differences",
        FigureLab::Temperature,
    ),
    info(
        Figure::Classwise,
        "calibra-classwise",
        "reliability diagram of each class",
        FigureLab::Temperature,
    ),
    info(
        Figure::RivalsReliability,
        "calibra-recalibration-methods",
        "reliability diagram of each method",
        FigureLab::Temperature,
    ),
    info(
        Figure::TemperatureAnatomy,
        "calibra-temperature-anatomy",
        "anatomy of the temperature fit",
        FigureLab::Temperature,
    ),
    info(
        Figure::SetSizes,
        "calibra-set-sizes",
        "set-size histogram",
        FigureLab::Conformal,
    ),
    info(
        Figure::PerClass,
        "calibra-coverage-per-class",
        "coverage per class",
        FigureLab::Conformal,
    ),
    info(
        Figure::Stratified,
        "calibra-coverage-by-size",
        "coverage by set size",
        FigureLab::Conformal,
    ),
    info(
        Figure::Sweep,
        "calibra-alpha-sweep",
        "coverage and set size over α",
        FigureLab::Conformal,
    ),
    info(
        Figure::Experiment,
        "calibra-coverage-experiment",
        "coverage over random splits",
        FigureLab::Conformal,
    ),
    info(
        Figure::RiskCoverage,
        "calibra-risk-coverage",
        "risk–coverage curve",
        FigureLab::Conformal,
    ),
    info(
        Figure::ShiftReliability,
        "calibra-shift-reliability",
        "reliability diagram of the corrupted images",
        FigureLab::Shift,
    ),
    info(
        Figure::ShiftSeverity,
        "calibra-shift-severity",
        "metrics over severity",
        FigureLab::Shift,
    ),
    info(
        Figure::AciStream,
        "calibra-aci-stream",
        "adaptive conformal stream chart",
        FigureLab::Shift,
    ),
    info(
        Figure::OodHistogram,
        "calibra-ood-scores",
        "OOD score histogram",
        FigureLab::Ood,
    ),
    info(
        Figure::OodRoc,
        "calibra-ood-roc",
        "ROC curves",
        FigureLab::Ood,
    ),
    info(
        Figure::OodNorms,
        "calibra-logit-norms",
        "logit-norm histogram",
        FigureLab::Ood,
    ),
    info(Figure::TauChart, "calibra-tau", "τ chart", FigureLab::Ood),
    info(
        Figure::OodPvalues,
        "calibra-ood-pvalues",
        "conformal p-values against the Benjamini–Hochberg line",
        FigureLab::Ood,
    ),
];

const fn info(
    id: Figure,
    file_stem: &'static str,
    title: &'static str,
    lab: FigureLab,
) -> FigureInfo {
    FigureInfo {
        id,
        file_stem,
        title,
        lab,
    }
}

impl Figure {
    pub fn info(self) -> &'static FigureInfo {
        FIGURES
            .iter()
            .find(|figure| figure.id == self)
            .expect("FIGURES lists every figure")
    }

    /// Its canvas's id.
    pub fn id(self) -> String {
        crate::text::serde_name(self)
    }
}

/// What a frame does with a figure on screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameDrawing {
    /// Draw it from the frame's view of its lab.
    Draw,
    /// Leave it blank: its lab is computed but the figure's own data is not in yet.
    Clear,
}

/// The figures a frame draws or clears, in [`FIGURES`]' order: each of `on_screen` whose lab
/// the frame computed is drawn, or left blank while it waits for data of its own (the rivals'
/// diagrams for a worker's fits, the OOD histogram for ODIN's scores, the shift lab's diagram
/// for the shown severity's logits). A figure off screen is left as it is: drawing is most of
/// a slider frame's time, and the temperature lab's five figures span several screens. The
/// coverage experiment is drawn by its run, never by a frame.
pub fn frame_figures(frame: &Frame, on_screen: &[Figure]) -> Vec<(Figure, FrameDrawing)> {
    FIGURES
        .iter()
        .filter(|info| on_screen.contains(&info.id) && info.id != Figure::Experiment)
        .filter_map(|info| {
            let figure = info.id;
            let computed = match info.lab {
                FigureLab::Temperature => frame.temperature.is_some(),
                FigureLab::Conformal => frame.conformal.is_some(),
                FigureLab::Ood => frame.ood.is_some(),
                FigureLab::Shift => frame.shift.is_some(),
            };
            let waiting = match figure {
                Figure::RivalsReliability => frame
                    .temperature
                    .as_ref()
                    .is_some_and(|view| view.rivals.is_none()),
                Figure::OodHistogram => frame
                    .ood
                    .as_ref()
                    .is_some_and(|charts| charts.score_histogram.is_none()),
                Figure::ShiftReliability => frame
                    .shift
                    .as_ref()
                    .is_some_and(|view| view.current().is_none()),
                Figure::TemperatureAnatomy => frame.anatomy.is_none(),
                Figure::AciStream => frame.adaptive.is_none(),
                Figure::OodPvalues => frame.pvalues.is_none(),
                _ => false,
            };
            let drawing = if waiting {
                FrameDrawing::Clear
            } else {
                FrameDrawing::Draw
            };
            computed.then_some((figure, drawing))
        })
        .collect()
}

impl super::Visible {
    /// What a frame computes to draw `figure` alone (a download of it): its lab, and it.
    pub fn figure_alone(figure: Figure) -> Self {
        let lab = figure.info().lab;
        Self {
            temperature: lab == FigureLab::Temperature,
            conformal: lab == FigureLab::Conformal,
            ood: lab == FigureLab::Ood,
            shift: lab == FigureLab::Shift,
            figures: vec![figure],
            ..Self::default()
        }
    }
}

/// The last coverage experiment, as its figure draws it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentRun {
    pub experiment: CoverageExperiment,
    /// `1 − α` and the guarantee's upper bound `1 − α + 1/(n + 1)`.
    pub target: f64,
    pub upper: f64,
}

/// What the figures are drawn from: a frame's views and the last coverage experiment.
#[derive(Debug, Clone, Copy)]
pub struct Sources<'a> {
    pub frame: &'a Frame,
    pub experiment: Option<&'a ExperimentRun>,
}

impl<'a> Sources<'a> {
    /// The names of the classes, as the plots take them.
    fn class_names(&self) -> Vec<&'a str> {
        self.frame.class_names.iter().map(String::as_str).collect()
    }

    /// The temperature lab's view, which `figure` needs.
    fn temperature(&self, figure: Figure) -> Result<&'a TemperatureView, FigureError> {
        self.frame
            .temperature
            .as_ref()
            .ok_or(FigureError::NotComputed(figure))
    }

    /// The smooth reliability diagram with its band, which `figure` needs: the band is computed
    /// only in a frame that shows or saves the figure.
    fn smooth(
        &self,
        figure: Figure,
    ) -> Result<(&'a SmoothDiagram, &'a ReliabilityBand), FigureError> {
        let smooth = self
            .temperature(figure)?
            .smooth
            .as_ref()
            .ok_or(FigureError::NotComputed(figure))?;
        let band = smooth
            .band
            .as_ref()
            .ok_or(FigureError::NotComputed(figure))?;
        Ok((smooth, band))
    }

    /// The CORP diagram at the slider's T, which `figure` needs: computed only in a frame that
    /// shows it or its decompositions' table.
    fn corp(&self, figure: Figure) -> Result<&'a Corp, FigureError> {
        self.temperature(figure)?
            .corp
            .as_ref()
            .map(|[at_slider, ..]| at_slider)
            .ok_or(FigureError::NotComputed(figure))
    }

    /// The cumulative differences, which `figure` needs: computed only in a frame that shows
    /// them or the estimators table.
    fn cumulative(&self, figure: Figure) -> Result<&'a CumulativeDifferences, FigureError> {
        self.temperature(figure)?
            .cumulative
            .as_ref()
            .ok_or(FigureError::NotComputed(figure))
    }

    /// The anatomy of the fit, which `figure` needs: computed once every row is in.
    fn anatomy(&self, figure: Figure) -> Result<&'a AnatomyView, FigureError> {
        self.frame
            .anatomy
            .as_ref()
            .ok_or(FigureError::NotComputed(figure))
    }

    /// The conformal lab's view, which `figure` needs.
    fn conformal(&self, figure: Figure) -> Result<&'a ConformalView, FigureError> {
        self.frame
            .conformal
            .as_ref()
            .ok_or(FigureError::NotComputed(figure))
    }

    /// The LogitNorm lab's p-values, which `figure` needs.
    fn pvalues(&self, figure: Figure) -> Result<&'a PvalueFrame, FigureError> {
        self.frame
            .pvalues
            .as_ref()
            .ok_or(FigureError::NotComputed(figure))
    }

    /// The selective classification block's view, which `figure` needs.
    fn selective(&self, figure: Figure) -> Result<&'a SelectiveView, FigureError> {
        self.frame
            .selective
            .as_ref()
            .ok_or(FigureError::NotComputed(figure))
    }

    /// The τ lab's charts, which `figure` needs.
    fn ood(&self, figure: Figure) -> Result<&'a OodCharts, FigureError> {
        self.frame
            .ood
            .as_ref()
            .ok_or(FigureError::NotComputed(figure))
    }

    /// The shift lab's view, which `figure` needs.
    fn shift(&self, figure: Figure) -> Result<&'a ShiftView, FigureError> {
        self.frame
            .shift
            .as_ref()
            .ok_or(FigureError::NotComputed(figure))
    }

    /// The shift lab's ACI stream, which `figure` needs.
    fn adaptive(&self, figure: Figure) -> Result<&'a AdaptiveView, FigureError> {
        self.frame
            .adaptive
            .as_ref()
            .ok_or(FigureError::NotComputed(figure))
    }

    /// The shown severity's metrics as the shift lab's diagram draws them: T and q̂ refitted
    /// on the corrupted images when the reader asks for it, kept from the clean ones otherwise.
    fn shift_metrics(&self, figure: Figure) -> Result<&'a ShiftMetrics, FigureError> {
        let point = self
            .shift(figure)?
            .current()
            .ok_or(FigureError::NotComputed(figure))?;
        Ok(if self.frame.recalibrate {
            &point.refit
        } else {
            &point.kept
        })
    }

    /// The last coverage experiment, which `figure` needs.
    fn experiment(&self, figure: Figure) -> Result<&'a ExperimentRun, FigureError> {
        self.experiment.ok_or(FigureError::NotComputed(figure))
    }
}

/// A figure that cannot be drawn or written.
#[derive(Debug, thiserror::Error)]
pub enum FigureError {
    #[error("the {} is not computed yet", .0.info().title)]
    NotComputed(Figure),
    #[error(transparent)]
    Plot(#[from] PlotError),
    /// Writing the CSV text failed (the `csv` crate's message).
    #[error("cannot write the CSV: {0}")]
    Csv(String),
}

/// Draws `figure` from `sources` on `area`.
///
/// # Errors
/// [`FigureError::NotComputed`] when its view is not in the frame (its lab is not shown, its
/// logits have not arrived, ODIN not computed, no experiment run), or the plot's error.
pub fn draw<DB: DrawingBackend>(
    figure: Figure,
    sources: &Sources,
    area: &DrawingArea<DB, Shift>,
    style: &ChartStyle,
) -> Result<(), FigureError> {
    match figure {
        Figure::Reliability => {
            plot::reliability_diagram(
                area,
                &sources.temperature(figure)?.at_temperature.bins,
                style,
            )?;
        }
        Figure::Histogram => {
            let view = sources.temperature(figure)?;
            plot::confidence_histogram(
                area,
                &view.confidence_counts,
                view.mean_confidence,
                view.at_temperature.accuracy,
                style,
            )?;
        }
        Figure::SmoothReliability => {
            let (smooth, band) = sources.smooth(figure)?;
            plot::smooth_reliability_diagram(area, &smooth.curve, Some(band), style)?;
        }
        Figure::CorpReliability => {
            plot::corp_reliability_diagram(area, sources.corp(figure)?, style)?;
        }
        Figure::Classwise => {
            let bins = &sources.temperature(figure)?.classwise_bins;
            plot::classwise_reliability(area, bins, &sources.class_names(), style)?;
        }
        Figure::RivalsReliability => {
            let methods: Vec<plot::MethodPanel> = sources
                .temperature(figure)?
                .rivals
                .as_ref()
                .ok_or(FigureError::NotComputed(figure))?
                .reports
                .iter()
                .map(|report| plot::MethodPanel {
                    title: report.method.title(),
                    bins: &report.bins,
                })
                .collect();
            plot::method_reliability(area, &methods, style)?;
        }
        Figure::SetSizes => {
            plot::set_size_histogram(area, &sources.conformal(figure)?.size_counts, style)?
        }
        Figure::PerClass => {
            let view = sources.conformal(figure)?;
            plot::per_class_coverage(
                area,
                &view.metrics.per_class_coverage,
                &sources.class_names(),
                1.0 - view.alpha,
                style,
            )?;
        }
        Figure::Stratified => {
            let view = sources.conformal(figure)?;
            plot::stratified_coverage(
                area,
                &view.metrics.size_stratified,
                1.0 - view.alpha,
                style,
            )?;
        }
        Figure::RiskCoverage => {
            let view = sources.selective(figure)?;
            let curve: Vec<(f64, f64)> = view.curve.iter().map(|p| (p.coverage, p.risk)).collect();
            let operating = view
                .report
                .as_ref()
                .and_then(|r| r.selective_risk.map(|risk| (r.coverage, risk)));
            plot::risk_coverage_chart(area, &curve, view.risk_level, operating, style)?;
        }
        Figure::Sweep => {
            let view = sources.conformal(figure)?;
            plot::alpha_sweep_curves(area, &view.sweep, view.alpha, style)?;
        }
        Figure::Experiment => {
            let run = sources.experiment(figure)?;
            plot::coverage_experiment_histogram(
                area,
                &run.experiment.coverages,
                &run.experiment.beta_density,
                run.experiment
                    .pac
                    .as_ref()
                    .map_or(&[][..], |pac| &pac.beta_density),
                run.target,
                run.upper,
                style,
            )?;
        }
        Figure::OodHistogram => {
            let charts = sources.ood(figure)?;
            let (scores, threshold, above) = charts
                .score_histogram
                .as_ref()
                .ok_or(FigureError::NotComputed(figure))?;
            let labels = ood_labels(charts, &charts.score_label);
            plot::score_histogram(area, scores, *threshold, *above, &labels, style)?;
        }
        Figure::OodRoc => {
            let curves: Vec<plot::RocCurve> = sources
                .ood(figure)?
                .roc
                .iter()
                .map(|(label, points)| plot::RocCurve { label, points })
                .collect();
            plot::roc_curves(area, &curves, style)?;
        }
        Figure::OodNorms => {
            let charts = sources.ood(figure)?;
            let labels = ood_labels(charts, "‖z‖₂");
            plot::logit_norm_histogram(area, &charts.norms, &charts.norm_means, &labels, style)?;
        }
        Figure::TauChart => plot::tau_chart(area, &sources.ood(figure)?.tau_points, style)?,
        Figure::CumulativeDifferences => {
            plot::cumulative_differences_chart(area, sources.cumulative(figure)?, style)?
        }
        Figure::OodPvalues => {
            let PvalueFrame { view, set } = sources.pvalues(figure)?;
            let window = view.chart_window(super::pvalues::CHART_POINTS);
            let discovered = (view.test.discoveries > 0)
                .then(|| view.test.discoveries as f64 / view.sorted.len() as f64);
            plot::pvalue_chart(
                area,
                &window.points,
                (window.x_high, window.y_high),
                view.test.fdr_level,
                discovered,
                plot::PvalueLabels {
                    in_distribution: "test image",
                    out_of_distribution: set.title(),
                },
                style,
            )?;
        }
        Figure::TemperatureAnatomy => {
            let view = sources.anatomy(figure)?;
            plot::anatomy_chart(
                area,
                &view.anatomy,
                view.temperature,
                &mistake_lines(view),
                style,
            )?;
        }
        Figure::ShiftReliability => {
            plot::reliability_diagram(area, &sources.shift_metrics(figure)?.bins, style)?;
        }
        Figure::ShiftSeverity => {
            let view = sources.shift(figure)?;
            plot::severity_chart(
                area,
                &severity_points(view),
                view.corruption.max_severity(),
                1.0 - view.alpha,
                view.severity,
                style,
            )?;
        }
        Figure::AciStream => {
            let view = sources.adaptive(figure)?;
            let levels: Vec<f64> = view.run.steps.iter().map(|step| step.alpha).collect();
            let block_starts: Vec<usize> = view.blocks.iter().skip(1).map(|b| b.start).collect();
            let series = plot::StreamSeries {
                window: &view.window_coverage,
                running: &view.running_coverage,
                fixed_window: &view.fixed_window_coverage,
                fixed_running: &view.fixed_running_coverage,
                levels: &levels,
                window_size: COVERAGE_WINDOW,
                alpha: view.alpha,
                block_starts: &block_starts,
            };
            plot::adaptive_stream_chart(area, &series, style)?;
        }
    }
    Ok(())
}

fn ood_labels<'a>(charts: &'a OodCharts, value: &'a str) -> plot::HistogramLabels<'a> {
    plot::HistogramLabels {
        in_distribution: "Fashion-MNIST",
        out_of_distribution: charts.set_title,
        value,
    }
}

/// Draws `figure` on the whole of `backend`: cleared to white, drawn, presented.
///
/// # Errors
/// As [`draw`], or the backend's.
pub fn render_on<DB: DrawingBackend>(
    figure: Figure,
    sources: &Sources,
    backend: DB,
    style: &ChartStyle,
) -> Result<(), FigureError> {
    let area = backend.into_drawing_area();
    area.fill(&WHITE)
        .map_err(|e| PlotError::Drawing(e.to_string()))?;
    draw(figure, sources, &area, style)?;
    area.present()
        .map_err(|e| PlotError::Drawing(e.to_string()))?;
    Ok(())
}

/// The numbers `figure` draws, as CSV with a header row: every value as Rust writes an `f64`
/// (the shortest text that reads back to the same number), an empty field where there is none.
///
/// # Errors
/// [`FigureError::NotComputed`] as for [`draw`], [`FigureError::Csv`] if writing fails.
pub fn csv(figure: Figure, sources: &Sources) -> Result<String, FigureError> {
    let mut table = Table::default();
    match figure {
        Figure::Reliability => {
            table.header(&BIN_COLUMNS);
            for bin in &sources.temperature(figure)?.at_temperature.bins {
                table.row(bin_fields(bin));
            }
        }
        Figure::Histogram => {
            let view = sources.temperature(figure)?;
            table.header(&["bin_lower", "bin_upper", "count"]);
            let bins = view.confidence_counts.len();
            for (index, count) in view.confidence_counts.iter().enumerate() {
                table.row([
                    number(index as f64 / bins as f64),
                    number((index + 1) as f64 / bins as f64),
                    count.to_string(),
                ]);
            }
        }
        Figure::SmoothReliability => {
            let (smooth, band) = sources.smooth(figure)?;
            // `shown` is 0 where the chart leaves the curve out (too few confidences within a
            // bandwidth to average): there the accuracy may even leave [0, 1].
            table.header(&[
                "confidence",
                "accuracy",
                "shown",
                "density",
                "band_lower",
                "band_upper",
            ]);
            let curve = &smooth.curve;
            for (index, &confidence) in curve.confidence.iter().enumerate() {
                let shown = plot::smooth_curve_shown(curve, curve.density[index]);
                table.row([
                    number(confidence),
                    number(curve.accuracy[index]),
                    u8::from(shown).to_string(),
                    number(curve.density[index]),
                    number(band.lower[index]),
                    number(band.upper[index]),
                ]);
            }
        }
        Figure::Classwise => {
            let bins = &sources.temperature(figure)?.classwise_bins;
            let classes = sources.frame.class_names.iter().cloned();
            grouped_bins(
                &mut table,
                "class",
                classes.zip(bins.iter().map(Vec::as_slice)),
            );
        }
        Figure::RivalsReliability => {
            let reports = &sources
                .temperature(figure)?
                .rivals
                .as_ref()
                .ok_or(FigureError::NotComputed(figure))?
                .reports;
            let methods = reports
                .iter()
                .map(|report| (report.method.title().to_string(), report.bins.as_slice()));
            grouped_bins(&mut table, "method", methods);
        }
        Figure::SetSizes => {
            table.header(&["set_size", "count"]);
            for (size, count) in sources.conformal(figure)?.size_counts.iter().enumerate() {
                table.row([size.to_string(), count.to_string()]);
            }
        }
        Figure::PerClass => {
            let view = sources.conformal(figure)?;
            table.header(&["class", "coverage", "target"]);
            let coverage = &view.metrics.per_class_coverage;
            for (class, value) in sources.frame.class_names.iter().zip(coverage) {
                table.row([
                    class.to_string(),
                    optional(*value),
                    number(1.0 - view.alpha),
                ]);
            }
        }
        Figure::Stratified => {
            let view = sources.conformal(figure)?;
            table.header(&["min_size", "max_size", "count", "coverage", "target"]);
            for stratum in &view.metrics.size_stratified {
                table.row([
                    stratum.min_size.to_string(),
                    stratum.max_size.to_string(),
                    stratum.count.to_string(),
                    optional(stratum.coverage),
                    number(1.0 - view.alpha),
                ]);
            }
        }
        Figure::RiskCoverage => {
            let view = sources.selective(figure)?;
            table.header(&[
                "confidence",
                "coverage",
                "selective_risk",
                "kept",
                "temperature",
            ]);
            for point in &view.curve {
                table.row([
                    number(point.confidence),
                    number(point.coverage),
                    number(point.risk),
                    point.kept.to_string(),
                    number(view.temperature),
                ]);
            }
        }
        Figure::Sweep => {
            table.header(&["alpha", "qhat", "coverage", "average_set_size"]);
            for point in &sources.conformal(figure)?.sweep {
                table.row([
                    number(point.alpha),
                    number(point.qhat),
                    number(point.coverage),
                    number(point.average_set_size),
                ]);
            }
        }
        Figure::Experiment => {
            let run = sources.experiment(figure)?;
            let pac = run.experiment.pac.as_ref();
            let risk_control = run.experiment.risk_control.as_ref();
            table.header(&[
                "split",
                "coverage",
                "target",
                "upper_bound",
                "pac_coverage",
                "pac_k",
                "pac_delta",
                "risk_control_answered_error_rate",
                "risk_level",
            ]);
            for (split, &coverage) in run.experiment.coverages.iter().enumerate() {
                let pac_coverage = pac.and_then(|pac| pac.coverages.get(split));
                let answered_error_rate =
                    risk_control.and_then(|run| run.answered_error_rates.get(split));
                table.row([
                    split.to_string(),
                    number(coverage),
                    number(run.target),
                    number(run.upper),
                    pac_coverage.map_or(String::new(), |&c| number(c)),
                    pac.map_or(String::new(), |pac| pac.k.to_string()),
                    pac.map_or(String::new(), |pac| number(pac.delta)),
                    answered_error_rate.map_or(String::new(), |&rate| number(rate)),
                    risk_control.map_or(String::new(), |run| number(run.figures.risk_level)),
                ]);
            }
        }
        Figure::OodHistogram => {
            let (scores, threshold, _) = sources
                .ood(figure)?
                .score_histogram
                .as_ref()
                .ok_or(FigureError::NotComputed(figure))?;
            histogram_table(&mut table, scores, Some(*threshold));
        }
        Figure::OodRoc => {
            table.header(&["curve", "false_positive_rate", "true_positive_rate"]);
            for (label, points) in &sources.ood(figure)?.roc {
                for point in points {
                    table.row([
                        label.clone(),
                        number(point.false_positive_rate),
                        number(point.true_positive_rate),
                    ]);
                }
            }
        }
        Figure::OodNorms => histogram_table(&mut table, &sources.ood(figure)?.norms, None),
        Figure::TauChart => {
            table.header(&["tau", "accuracy", "ece_t1", "ece_fitted", "fpr95", "auroc"]);
            for point in &sources.ood(figure)?.tau_points {
                table.row([
                    point
                        .tau
                        .map_or_else(|| "cross-entropy".to_string(), number),
                    number(point.accuracy),
                    number(point.ece_raw),
                    number(point.ece_fitted),
                    number(point.fpr95),
                    number(point.auroc),
                ]);
            }
        }
        Figure::CorpReliability => {
            table.header(&[
                "lowest_confidence",
                "highest_confidence",
                "rows",
                "right",
                "mean_confidence",
                "share_right",
            ]);
            for block in &sources.corp(figure)?.blocks {
                table.row([
                    number(block.lowest),
                    number(block.highest),
                    block.rows.to_string(),
                    block.right.to_string(),
                    number(block.mean_confidence),
                    number(block.value),
                ]);
            }
        }
        Figure::CumulativeDifferences => {
            let cumulative = sources.cumulative(figure)?;
            table.header(&["share_of_images", "confidence", "cumulative_difference"]);
            let n = cumulative.curve.len() as f64;
            for (k, (&confidence, &difference)) in cumulative
                .sorted_confidence
                .iter()
                .zip(&cumulative.curve)
                .enumerate()
            {
                table.row([
                    number((k + 1) as f64 / n),
                    number(confidence),
                    number(difference),
                ]);
            }
        }
        Figure::OodPvalues => {
            let PvalueFrame { view, .. } = sources.pvalues(figure)?;
            table.header(&[
                "rank",
                "pvalue",
                "out_of_distribution",
                "bh_line",
                "declared_ood",
            ]);
            let batch = view.sorted.len() as f64;
            for (index, point) in view.sorted.iter().enumerate() {
                let rank = index + 1;
                table.row([
                    rank.to_string(),
                    number(point.pvalue),
                    u8::from(point.out_of_distribution).to_string(),
                    number(rank as f64 / batch * view.test.fdr_level),
                    u8::from(point.rejected).to_string(),
                ]);
            }
        }
        Figure::ShiftReliability => {
            table.header(&BIN_COLUMNS);
            for bin in &sources.shift_metrics(figure)?.bins {
                table.row(bin_fields(bin));
            }
        }
        Figure::ShiftSeverity => {
            let view = sources.shift(figure)?;
            table.header(&[
                "severity",
                "accuracy",
                "ece_clean_fit",
                "nll_clean_fit",
                "brier_clean_fit",
                "coverage_clean_fit",
                "average_set_size_clean_fit",
                "coverage_refit",
                "average_set_size_refit",
                "target",
            ]);
            for point in &view.points {
                let (kept, refit) = (&point.kept, &point.refit);
                table.row(
                    std::iter::once(point.severity.to_string()).chain(
                        [
                            kept.accuracy,
                            kept.ece,
                            kept.nll,
                            kept.brier,
                            kept.coverage,
                            kept.average_set_size,
                            refit.coverage,
                            refit.average_set_size,
                            1.0 - view.alpha,
                        ]
                        .map(number),
                    ),
                );
            }
        }
        Figure::AciStream => {
            let view = sources.adaptive(figure)?;
            table.header(&[
                "step",
                "test_row",
                "severity",
                "alpha_t",
                "covered",
                "set_size",
                "fixed_covered",
                "fixed_set_size",
                "coverage_window",
                "coverage_since_start",
                "fixed_coverage_window",
                "fixed_coverage_since_start",
                "gamma",
                "temperature",
            ]);
            let flag = |value: bool| u8::from(value).to_string();
            for (index, (step, row)) in view.run.steps.iter().zip(&view.rows).enumerate() {
                table.row([
                    (index + 1).to_string(),
                    row.to_string(),
                    view.severity_at(index).unwrap_or_default().to_string(),
                    number(step.alpha),
                    flag(step.covered),
                    step.set_size.to_string(),
                    flag(step.fixed_covered),
                    step.fixed_set_size.to_string(),
                    number(view.window_coverage[index]),
                    number(view.running_coverage[index]),
                    number(view.fixed_window_coverage[index]),
                    number(view.fixed_running_coverage[index]),
                    number(view.gamma),
                    number(view.temperature),
                ]);
            }
        }
        Figure::TemperatureAnatomy => {
            let view = sources.anatomy(figure)?;
            table.header(&ANATOMY_COLUMNS);
            let anatomy = &view.anatomy;
            for (index, &t) in anatomy.grid.iter().enumerate() {
                let halves = [&anatomy.calibration, &anatomy.evaluation];
                let values = halves
                    .into_iter()
                    .flat_map(|half| half.in_order().map(|curve| curve[index]));
                table.row(std::iter::once(number(t)).chain(values.map(number)));
            }
        }
    }
    table.into_text()
}

/// The anatomy chart's CSV columns: the grid's temperature, then each metric of each half.
const ANATOMY_COLUMNS: [&str; 9] = [
    "temperature",
    "calibration_nll",
    "calibration_ece",
    "calibration_smece",
    "calibration_brier",
    "evaluation_nll",
    "evaluation_ece",
    "evaluation_smece",
    "evaluation_brier",
];

/// The mistaken fits the reader switched on, as the anatomy chart's dashed lines.
fn mistake_lines(view: &AnatomyView) -> Vec<plot::TemperatureLine<'static>> {
    view.mistakes
        .iter()
        .filter_map(|(fit, _)| {
            let index = MISTAKES.iter().position(|&m| m == fit.mistake)?;
            Some(plot::TemperatureLine {
                temperature: fit.temperature,
                label: MISTAKE_LABELS[index],
                colour: plot::MISTAKE_COLOURS[index],
            })
        })
        .collect()
}

/// What the anatomy chart's legend calls each mistaken fit, in [`MISTAKES`]' order.
const MISTAKE_LABELS: [&str; 3] = [
    "fitted on the evaluation half",
    "fitted on probabilities",
    "least ECE",
];

/// The shift view's severities as its chart draws them.
fn severity_points(view: &ShiftView) -> Vec<plot::SeverityPoint> {
    view.points
        .iter()
        .map(|point| plot::SeverityPoint {
            severity: point.severity,
            accuracy: point.kept.accuracy,
            ece: point.kept.ece,
            coverage_kept: point.kept.coverage,
            size_kept: point.kept.average_set_size,
            coverage_refit: point.refit.coverage,
            size_refit: point.refit.average_set_size,
        })
        .collect()
}

/// A paired histogram's bins, with the threshold in each row when there is one.
fn histogram_table(table: &mut Table, histogram: &PairedHistogram, threshold: Option<f64>) {
    let mut header = vec!["bin_lower", "bin_upper", "share_fashion_mnist", "share_ood"];
    if threshold.is_some() {
        header.push("threshold");
    }
    table.header(&header);
    for (index, edges) in histogram.edges.windows(2).enumerate() {
        let fields = [
            number(edges[0]),
            number(edges[1]),
            number(histogram.in_distribution[index]),
            number(histogram.out_of_distribution[index]),
        ];
        table.row(fields.into_iter().chain(threshold.map(number)));
    }
}

/// The bins of several reliability diagrams, each row led by its diagram's name in `column`.
fn grouped_bins<'a>(
    table: &mut Table,
    column: &str,
    diagrams: impl IntoIterator<Item = (String, &'a [Bin])>,
) {
    table.header(&[&[column][..], &BIN_COLUMNS[..]].concat());
    for (name, bins) in diagrams {
        for bin in bins {
            table.row(std::iter::once(name.clone()).chain(bin_fields(bin)));
        }
    }
}

/// The columns of a reliability bin ([`bin_fields`]).
const BIN_COLUMNS: [&str; 5] = [
    "bin_lower",
    "bin_upper",
    "count",
    "mean_confidence",
    "accuracy",
];

/// A bin's row; an empty bin has no mean confidence or accuracy, so those fields are empty.
fn bin_fields(bin: &Bin) -> [String; 5] {
    let mean = |value: f64| optional((bin.count > 0).then_some(value));
    [
        number(bin.lower),
        number(bin.upper),
        bin.count.to_string(),
        mean(bin.confidence),
        mean(bin.accuracy),
    ]
}

fn number(value: f64) -> String {
    value.to_string()
}

fn optional(value: Option<f64>) -> String {
    value.map(number).unwrap_or_default()
}

/// A CSV table's rows, header first, written by the `csv` crate (RFC 4180 quoting).
#[derive(Default)]
struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    fn header(&mut self, names: &[&str]) {
        self.row(names.iter().map(ToString::to_string));
    }

    fn row(&mut self, fields: impl IntoIterator<Item = String>) {
        self.rows.push(fields.into_iter().collect());
    }

    fn into_text(self) -> Result<String, FigureError> {
        let csv_error = |e: &dyn std::fmt::Display| FigureError::Csv(e.to_string());
        let mut writer = csv::Writer::from_writer(Vec::new());
        for row in &self.rows {
            writer.write_record(row).map_err(|e| csv_error(&e))?;
        }
        let bytes = writer.into_inner().map_err(|e| csv_error(&e))?;
        String::from_utf8(bytes).map_err(|e| csv_error(&e))
    }
}
