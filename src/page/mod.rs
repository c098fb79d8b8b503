//! The page without its web types: the state the reader sets ([`PageState`], the URL hash),
//! the page's constants ([`Limits`]), and what one frame puts into the DOM ([`Readouts`]).
//!
//! One frame is one call: [`render`] applies the state to the [`Lab`] (model, split), computes
//! the views of the labs on screen, and returns their readouts as a list of [`Patch`]es, each
//! a text, a number or a control's value for one element, with every number formatted here.
//! The web facade draws the charts from the same views ([`figure`]); JavaScript applies the
//! patches.

mod adaptive;
pub mod block;
mod clustered;
mod estimator_cases;
pub mod figure;
mod normalized_temperature;
mod ood;
pub mod own_image;
pub mod own_logits;
mod pac;
mod paper_protocol;
mod pvalues;
mod readouts;
mod selective;
mod shift;
mod state;
mod worst_slab;

use serde::Serialize;

use crate::data::{
    DataError, Images, FASHION_MNIST_CLASSES, IDX_IMAGES_HEADER, IMAGE_SIDE, NUM_CLASSES,
};
use crate::lab::AdaptiveView;
use crate::lab::NormalizedRequest;
use crate::lab::{
    AnatomyRequest, AnatomyView, ConformalView, DifferenceRequest, Explanation, FeatureRequest,
    IntervalRequest, Lab, LabError, OodSet, OodStore, RankingRequest, RivalsRequest, SelectiveView,
    ShiftStore, ShiftView, TemperatureView,
};
use crate::text::serde_name;

pub use block::{Block, BlockInfo, BLOCKS};
pub use figure::{
    frame_figures, ExperimentRun, Figure, FigureError, FigureInfo, FrameDrawing, Sources, FIGURES,
};
pub use ood::{
    difference_scores, ranking_scores, score_name as ood_score_name, Job, OodCharts, OodGallery,
    OodTile,
};
pub use pvalues::PvalueFrame;
pub use readouts::{
    control_patches, experiment_readouts, BarRow, ExperimentReadouts, GallerySection, MetricItem,
    Patch, SentPatches, TableCell, TableRow,
};
pub use shift::{ShiftJob, ShiftThumbnails};
pub use state::{
    Field, FieldKind, GalleryChoice, ModelInfo, ModelKey, Network, NumberRange, PageState,
    Rejected, Slider, SliderRange, FIELDS, MODELS,
};
pub use worst_slab::worst_slab_readouts;

/// Images per inference batch: small enough for progress to move every few hundred
/// milliseconds, large enough for the matrix kernels.
pub const INFERENCE_BATCH: usize = 250;
/// Images in the first batch of each image set: a fifth of a batch, so that the first chart
/// waits for 50 images rather than 250, while the worker's code is still in WebAssembly's
/// baseline tier.
pub const FIRST_BATCH: usize = 50;
/// Least time between two redraws that arriving batches ask for: a network's 10,000 test
/// images come in about forty batches, and a redraw of the temperature lab after each one took
/// a core's third from the inference workers during a switch on a 2-core machine. Four redraws a second still show the chart filling in; the
/// shown network's first batch, the batch that completes a set, and any redraw a reader asks
/// for are drawn at once.
pub const STREAMING_REDRAW_MS: f64 = 250.0;
/// Images the gallery shows at most.
pub const GALLERY_LIMIT: usize = 48;
/// Images in each half of the "most and least conformal" gallery.
pub const EXTREMES: usize = 8;
/// Images in each OOD set: the MNIST digits `scripts/mnist-ood.mjs` writes, and as many of
/// each generated noise set, so every OOD set weighs the same.
pub const OOD_IMAGES: usize = 2000;
const NOISE_SEEDS: [(OodSet, u64); 2] = [(OodSet::Gaussian, 1), (OodSet::Uniform, 2)];

/// The pixels of a generated noise set, `[OOD_IMAGES, 28, 28]`; `None` for MNIST, which the
/// page fetches.
pub fn noise_pixels(set: OodSet) -> Option<Vec<u8>> {
    let (kind, seed) = (set.noise()?, NOISE_SEEDS.iter().find(|(s, _)| *s == set)?.1);
    Some(
        crate::data::noise_images(kind, OOD_IMAGES, seed)
            .pixels()
            .to_vec(),
    )
}

/// The pixels of the MNIST digits, `[OOD_IMAGES, 28, 28]`, from their IDX file's `images`.
///
/// # Errors
/// [`DataError::WrongImageCount`] when they are another number of images than the page's store
/// has room for.
pub fn mnist_pixels(images: Images, source_name: &str) -> Result<Vec<u8>, DataError> {
    if images.len() != OOD_IMAGES {
        return Err(DataError::WrongImageCount {
            source_name: source_name.to_string(),
            expected: OOD_IMAGES,
            found: images.len(),
        });
    }
    Ok(images.pixels().to_vec())
}

/// Random splits of the coverage experiment: the range of its input and the default.
pub const REPETITIONS: (usize, usize, usize) = (10, 10_000, 1000);

/// Every constant the page's script needs.
#[derive(Debug, Clone, Serialize)]
pub struct Limits {
    pub fields: &'static [Field],
    pub models: &'static [ModelInfo],
    /// The τ slider's values, in order.
    pub tau_steps: Vec<String>,
    /// Every slider's range (each field a slider sets, by [`Field::slider_range`]).
    pub sliders: Vec<SliderRange>,
    /// The lab's index of each `model` value (`{"ce": 0, "logitnorm": 1}`).
    pub model_index: std::collections::BTreeMap<String, usize>,
    pub defaults: PageState,
    pub image_side: usize,
    /// Bytes of the test images' IDX header ([`crate::data::idx_image_count`] reads it).
    pub images_header: usize,
    pub classes: usize,
    pub class_names: &'static [&'static str],
    pub batch: usize,
    pub first_batch: usize,
    pub streaming_redraw_ms: f64,
    pub repetitions: Repetitions,
    /// The figures, each with its canvas and the stem of its downloads.
    pub figures: &'static [FigureInfo],
    /// The blocks of readouts a frame computes only while they are on screen.
    pub blocks: &'static [BlockInfo],
}

/// The coverage experiment's input.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Repetitions {
    pub min: usize,
    pub max: usize,
    pub default: usize,
}

/// The page's constants.
pub fn limits() -> Limits {
    Limits {
        fields: &FIELDS,
        models: &MODELS,
        tau_steps: Network::trained().into_iter().map(Network::name).collect(),
        sliders: FIELDS.iter().filter_map(Field::slider_range).collect(),
        model_index: [ModelKey::Ce, ModelKey::Logitnorm]
            .into_iter()
            .map(|key| (serde_name(key), key.index()))
            .collect(),
        defaults: PageState::default(),
        image_side: IMAGE_SIDE,
        images_header: IDX_IMAGES_HEADER,
        classes: NUM_CLASSES,
        class_names: &FASHION_MNIST_CLASSES,
        batch: INFERENCE_BATCH,
        first_batch: FIRST_BATCH,
        streaming_redraw_ms: STREAMING_REDRAW_MS,
        repetitions: Repetitions {
            min: REPETITIONS.0,
            max: REPETITIONS.1,
            default: REPETITIONS.2,
        },
        figures: &FIGURES,
        blocks: &BLOCKS,
    }
}

/// Which parts of the page are on screen (and so recomputed this frame).
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Visible {
    pub temperature: bool,
    pub conformal: bool,
    pub gallery: bool,
    /// The τ lab.
    pub ood: bool,
    /// The shift lab.
    pub shift: bool,
    /// The "your own image" section.
    pub own_image: bool,
    /// The test image whose explanation is open, if one is.
    pub explain: Option<usize>,
    /// The figures on screen: the page draws only these, and computes the smooth diagram's
    /// bootstrap band only when that diagram is among them.
    pub figures: Vec<Figure>,
    /// The blocks of readouts on screen: the page computes only these ([`block`]).
    pub blocks: Vec<Block>,
}

/// What one frame puts into the DOM.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Readouts {
    /// Texts, numbers and control values, one element each.
    pub patches: Vec<Patch>,
    /// The labs recomputed this frame.
    pub drawn: Vec<&'static str>,
    /// Rows of the chosen model whose logits have arrived; the labs wait for both halves of
    /// the split to have some (`waiting`), which is a state of the page, not an error.
    pub arrived: usize,
    /// Whether every row of the shown data is in: the figures and blocks a frame computes
    /// before then show part of the rows, and the page's script has them computed again once
    /// this is true, on screen or not (`www/frame.js`).
    pub complete: bool,
    pub waiting: bool,
    /// The T the fit button applies, once known.
    pub fitted_temperature: Option<f64>,
    /// The gallery, when it is on screen.
    pub gallery: Option<Vec<GallerySection>>,
    /// The open explanation, when there is one.
    pub explanation: Option<Explanation>,
    /// Logits the τ lab needs and has not got: `[{model, set}]`.
    pub needs: Vec<Job>,
    /// The ODIN scores the τ lab's button would compute.
    pub odin_needs: Vec<Job>,
    /// Each shown network's surest OOD images, when the τ lab is on screen.
    pub ood_galleries: Vec<OodGallery>,
    /// Bootstrap intervals the temperature lab shows and a worker has not computed yet.
    pub interval_requests: Vec<IntervalRequest>,
    /// The rivals the temperature lab shows, when a worker has not computed them yet.
    pub rivals_request: Option<RivalsRequest>,
    /// The τ lab's paired difference to ask the bootstrap worker for.
    pub difference_request: Option<DifferenceRequest>,
    /// The feature scores the τ lab waits for, to ask the bootstrap worker for.
    pub feature_requests: Vec<FeatureRequest>,
    /// The τ lab's ranking of every score, to ask the bootstrap worker for.
    pub ranking_request: Option<RankingRequest>,
    /// The "your own image" section, when it is on screen and holds a picture.
    pub own_image: Option<own_image::OwnImageReadouts>,
    /// The next corrupted copy the shift lab needs, if any: the shown severity first.
    pub shift_needs: Vec<ShiftJob>,
    /// The shift lab's thumbnails, once it is drawn.
    pub shift_thumbnails: Option<ShiftThumbnails>,
    /// The anatomy chart's curves, when it is on screen and a worker has not computed them yet.
    pub anatomy_request: Option<AnatomyRequest>,
    /// The τ lab's comparisons of one T with normalised temperature scaling, one per network,
    /// to ask the bootstrap worker for.
    pub normalized_requests: Vec<NormalizedRequest>,
}

/// The views one frame draws, with its readouts.
#[derive(Debug, Clone, Default)]
pub struct Frame {
    /// What the charts call each class.
    pub class_names: Vec<String>,
    pub temperature: Option<TemperatureView>,
    /// The anatomy of the fit, when its chart is on screen and every row is in.
    pub anatomy: Option<AnatomyView>,
    pub conformal: Option<ConformalView>,
    pub ood: Option<OodCharts>,
    pub shift: Option<ShiftView>,
    /// Whether the shift lab's reliability diagram shows T refitted on the corrupted images.
    pub recalibrate: bool,
    pub readouts: Readouts,
    /// The conformal lab's selective classification block.
    pub selective: Option<SelectiveView>,
    /// The shift lab's ACI stream, when its chart is on screen and the clean logits are in.
    pub adaptive: Option<AdaptiveView>,
    /// The LogitNorm lab's conformal p-values, once its logits and score are in.
    pub pvalues: Option<PvalueFrame>,
}

/// The data the labs show.
pub enum LabData<'a> {
    /// The bundled networks on the test images, with their OOD logits and their logits on
    /// corrupted copies: every lab.
    Bundled {
        lab: &'a mut Lab,
        store: &'a mut OodStore,
        shifts: &'a mut ShiftStore,
    },
    /// The reader's own logits and labels (one "model", no images): the temperature and
    /// conformal labs only.
    Own(&'a mut Lab),
}

/// One frame: applies `state` to the lab of `data` (model, split), computes the views of the
/// `visible` labs and their readouts. The controls' patches are always there; the labs' only
/// once the chosen model's logits reach both halves of the split. With the reader's own data
/// the OOD lab, the gallery and the explanations are not computed: they need the test images.
///
/// # Errors
/// [`LabError`] for a state the lab cannot compute (which [`PageState`]'s ranges rule out).
pub fn render(data: LabData, state: &PageState, visible: &Visible) -> Result<Frame, LabError> {
    let (lab, mut store, shifts, model) = match data {
        LabData::Bundled { lab, store, shifts } => {
            (lab, Some(store), Some(shifts), state.model.index())
        }
        LabData::Own(lab) => (lab, None, None, 0),
    };
    lab.select_model(model)?;
    if lab.split_seed() != u64::from(state.split) {
        lab.set_split(u64::from(state.split));
    }
    let mut frame = Frame {
        class_names: lab.class_names().to_vec(),
        ..Frame::default()
    };
    frame.readouts.patches = control_patches(state);
    frame.readouts.arrived = lab.arrived(model)?;
    frame.readouts.complete = frame.readouts.arrived == lab.rows();
    if let (true, Some(store)) = (visible.ood, store.as_deref_mut()) {
        let ood = ood::render(lab, store, state, &visible.figures)?;
        frame.readouts.patches.extend(ood.patches);
        frame.readouts.needs = ood.needs;
        frame.readouts.odin_needs = ood.odin_needs;
        frame.readouts.ood_galleries = ood.galleries;
        frame.readouts.difference_request = ood.difference_request;
        frame.readouts.feature_requests = ood.feature_requests;
        frame.readouts.ranking_request = ood.ranking_request;
        if ood.charts.is_some() {
            frame.readouts.drawn.push("ood");
        }
        frame.ood = ood.charts;
        let normalized = normalized_temperature::render(lab, store, state)?;
        frame.readouts.patches.extend(normalized.patches);
        frame.readouts.normalized_requests = normalized.requests;
        let (patches, pvalues) = pvalues::render(lab, store, state)?;
        frame.readouts.patches.extend(patches);
        frame.pvalues = pvalues;
        let paper = paper_protocol::render(lab, store, state)?;
        frame.readouts.patches.extend(paper.patches);
        for job in paper.needs {
            if !frame.readouts.needs.contains(&job) {
                frame.readouts.needs.push(job);
            }
        }
    }
    if let (true, Some(shifts)) = (visible.shift, shifts) {
        let shift = shift::render(lab, shifts, state)?;
        frame.readouts.patches.extend(shift.patches);
        frame.readouts.shift_needs = shift.needs;
        frame.readouts.shift_thumbnails = shift.thumbnails;
        if shift.view.is_some() {
            frame.readouts.drawn.push("shift");
        }
        frame.shift = shift.view;
        frame.recalibrate = state.recalibrate;
        // The stream is replayed when its chart comes on screen, and kept until γ or what it
        // is built from changes.
        if visible.figures.contains(&Figure::AciStream) {
            let view = match lab.adaptive_view(
                shifts,
                state.shift,
                &state.conformal_settings(),
                state.aci_gamma,
            ) {
                Ok(view) => Some(view),
                Err(LabError::NotReady) => None,
                Err(e) => return Err(e),
            };
            frame
                .readouts
                .patches
                .extend(adaptive::readouts(view.as_ref()));
            frame.adaptive = view;
        }
    }
    match lab.fitted_temperature() {
        Ok(fit) => frame.readouts.fitted_temperature = Some(fit.temperature),
        Err(LabError::NotReady) => {
            frame.readouts.waiting = true;
            return Ok(frame);
        }
        Err(e) => return Err(e),
    }
    if visible.temperature {
        let view = lab.temperature_view_of_case(
            state.t,
            state.bins,
            state.binning,
            block::temperature_parts(visible),
            state.case,
        )?;
        frame.readouts.patches.extend(readouts::temperature(&view));
        frame.readouts.patches.extend(estimator_cases::readouts(
            &view,
            &frame.class_names,
            state.binning,
        ));
        frame
            .readouts
            .patches
            .extend(readouts::temperature_chart_summaries(
                &view,
                &frame.class_names,
            ));
        frame.readouts.interval_requests = view.interval_requests.clone();
        frame.readouts.rivals_request = view.rivals_request;
        frame.readouts.drawn.push("temperature");
        frame.temperature = Some(view);
        if visible.figures.contains(&Figure::TemperatureAnatomy) {
            let mistakes = state.fit_mistakes();
            let anatomy = lab.anatomy_view(state.t, state.bins, state.binning, &mistakes)?;
            frame
                .readouts
                .patches
                .extend(readouts::anatomy(anatomy.as_ref(), &mistakes));
            match anatomy {
                Ok(view) => frame.anatomy = Some(view),
                Err(request) => frame.readouts.anatomy_request = request,
            }
        }
    }
    let settings = state.conformal_settings();
    if visible.conformal {
        let view = lab.conformal_view(&settings, block::conformal_parts(visible))?;
        frame
            .readouts
            .patches
            .extend(readouts::conformal(&view, state.score, &frame.class_names));
        if let Some(methods) = &view.threshold_methods {
            frame
                .readouts
                .patches
                .extend(clustered::readouts(methods, &frame.class_names));
        }
        frame.readouts.drawn.push("conformal");
        frame.conformal = Some(view);
        let pac = lab.pac_view(&settings, state.delta)?;
        frame.readouts.patches.extend(pac::readouts(&pac));
        let selective = lab.selective_view(state.t, state.risk)?;
        frame
            .readouts
            .patches
            .extend(selective::readouts(&selective));
        frame.selective = Some(selective);
    }
    if visible.gallery && store.is_some() {
        let sections = gallery(lab, state)?;
        frame
            .readouts
            .patches
            .push(readouts::gallery_count(&sections, state.gallery));
        frame.readouts.gallery = Some(sections);
    }
    if let (Some(row), true) = (visible.explain, store.is_some()) {
        frame.readouts.explanation = Some(lab.explain(&settings, row)?);
    }
    let what = if store.is_some() {
        "test images"
    } else {
        "rows of your files"
    };
    let provisional = readouts::provisional(
        frame.readouts.arrived,
        lab.rows(),
        what,
        &frame.readouts.drawn,
    );
    frame.readouts.patches.extend(provisional);
    Ok(frame)
}

/// The gallery's sections for the state's choice.
fn gallery(lab: &mut Lab, state: &PageState) -> Result<Vec<GallerySection>, LabError> {
    let settings = state.conformal_settings();
    Ok(match state.gallery.filter() {
        Some(filter) => {
            let items = lab.gallery(&settings, filter, GALLERY_LIMIT)?;
            vec![GallerySection { title: None, items }]
        }
        None => {
            let (most, least) = lab.conformity_extremes(&settings, EXTREMES)?;
            vec![
                GallerySection {
                    title: Some("Most conformal calibration images (lowest true-label score)"),
                    items: most,
                },
                GallerySection {
                    title: Some("Least conformal calibration images (highest true-label score)"),
                    items: least,
                },
            ]
        }
    })
}

#[cfg(test)]
mod tests;
