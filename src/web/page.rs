//! The page's exports: its state, the labs and their drawing; no network (that is
//! [`super::model`]'s, in the inference worker's module) and no fits (the bootstrap worker's,
//! [`super::bootstrap`]).

use std::collections::HashMap;

use plotters::coord::Shift;
use plotters::prelude::*;
use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::HtmlCanvasElement;

use super::canvas::Measured;
use super::{from_js, set_field, to_js};
use crate::calibration;
use crate::data::{self, NUM_CLASSES};
use crate::lab::{self, ImageSet, OodSet, OodStore, ShiftStore, ShiftedSet};
use crate::own_image;
use crate::page::own_image::{OodThresholds, OwnImage};
use crate::page::{self, Figure, FrameDrawing, PageState, Visible};
use crate::plot::ChartStyle;

/// Unsigned-byte pixels `[n, 28, 28]` of an unzipped IDX images file: the page's module has
/// no gzip decoder, the browser unzips (`DecompressionStream`).
#[wasm_bindgen]
pub fn parse_images(bytes: &[u8], name: &str) -> Result<Vec<u8>, JsError> {
    let images = data::parse_unzipped_idx_images(bytes, name)?;
    Ok(images.pixels().to_vec())
}

/// The number of images an IDX images file declares, from its header (the first
/// `limits().images_header` bytes, unzipped): the page reads the test images as they arrive.
#[wasm_bindgen]
pub fn idx_image_count(header: &[u8], name: &str) -> Result<usize, JsError> {
    Ok(data::idx_image_count(header, name)?)
}

/// The pixels (`Uint8Array [n, 28, 28]`) of a generated noise set (`"gaussian"`, `"uniform"`).
#[wasm_bindgen]
pub fn noise_pixels(set: &str) -> Result<Vec<u8>, JsError> {
    let set: OodSet = parse_name("OOD set", set)?;
    page::noise_pixels(set).ok_or_else(|| JsError::new(&format!("{set:?} is not a noise set")))
}

/// Test images `first_row..` (`pixels`, `[n, 28, 28]`) as they are in the corrupted copy `set`
/// (`shift-rotation-3`): the page makes a copy a part at a time, between frames.
#[wasm_bindgen]
pub fn shifted_pixels(pixels: &[u8], first_row: usize, set: &str) -> Result<Vec<u8>, JsError> {
    Ok(ShiftedSet::parse(set)?.pixels_from(pixels, first_row)?)
}

/// Test images `rows` of `test_pixels` as they are in the corrupted copy `set`
/// (`Uint8Array [rows, 28, 28]`): the shift lab's thumbnails.
#[wasm_bindgen]
pub fn shifted_rows(test_pixels: &[u8], rows: &[u32], set: &str) -> Result<Vec<u8>, JsError> {
    let rows: Vec<usize> = rows.iter().map(|&row| row as usize).collect();
    Ok(ShiftedSet::parse(set)?.rows_pixels(test_pixels, &rows)?)
}

/// The pixels (`Uint8Array [n, 28, 28]`) of the MNIST digits' IDX file, unzipped, checked to
/// hold as many images as the page's OOD store.
#[wasm_bindgen]
pub fn parse_mnist(bytes: &[u8], name: &str) -> Result<Vec<u8>, JsError> {
    Ok(page::mnist_pixels(
        data::parse_unzipped_idx_images(bytes, name)?,
        name,
    )?)
}

/// The size `[width, height]` at which the page draws a picture of `width`×`height` before
/// [`Page::set_own_image`] ([`own_image::page_picture_size`]).
#[wasm_bindgen]
pub fn own_picture_size(width: u32, height: u32) -> Vec<u32> {
    let (width, height) = own_image::page_picture_size(width, height);
    vec![width, height]
}

/// Every constant the page's script needs ([`page::Limits`]).
#[wasm_bindgen]
pub fn limits() -> Result<JsValue, JsError> {
    to_js(&page::limits())
}

/// What the page shows after a link, a control or a button: the hash that writes the new
/// state, its controls' patches, and the state itself for the script to read (never to send
/// back). The page shows the controls at once, the labs at the next frame.
#[derive(Serialize)]
struct Next<'a> {
    state: &'a PageState,
    hash: String,
    /// The hash of the same state as the whole article, for the embed view's link back to it;
    /// `None` when the article is what is shown.
    article_hash: Option<String>,
    patches: Vec<page::Patch>,
    /// The hash entries that were ignored, each as a sentence.
    rejected: Vec<String>,
}

impl<'a> Next<'a> {
    fn of(state: &'a PageState, rejected: Vec<String>) -> Result<Self, JsError> {
        let article_hash = match state.embed {
            page::figure::Embed::None => None,
            page::figure::Embed::Figure(_) => Some(state.set("embed", "none")?.to_hash()),
        };
        Ok(Self {
            hash: state.to_hash(),
            article_hash,
            patches: page::control_patches(state),
            state,
            rejected,
        })
    }
}

/// The page's state (what the URL hash writes), the test set's labels, the logits of each
/// bundled network on the test images and on the OOD sets as inference streams them in, and
/// the page's one render call. The script holds this handle and never the state: a link, a
/// control and a button change the state here ([`Page::read_hash`], [`Page::control`],
/// [`Page::action`]), and every other export reads it here.
#[wasm_bindgen]
#[derive(Default)]
pub struct Page {
    state: PageState,
    /// The labs' data, once the test labels are in ([`Page::set_labels`]).
    data: Option<Data>,
    /// What the rivals' canvas shows: their diagrams do not depend on the slider's T, so a
    /// temperature frame redraws them only when these change.
    rivals_drawn: Option<RivalsDrawn>,
    /// What each element was last sent, so that a frame sends only what changes.
    sent: page::SentPatches,
    /// The last coverage experiment, which its figure shows until the next run.
    experiment: Option<page::ExperimentRun>,
    /// The reader's own picture, once they have drawn or chosen one.
    own_image: Option<OwnImage>,
    own_image_thresholds: OodThresholds,
    canvas_sizes: CanvasSizes,
}

/// The data the labs show.
struct Data {
    lab: lab::Lab,
    /// The reader's own logits and labels, which the temperature and conformal labs show
    /// instead of the test images while they are loaded.
    own_logits: Option<lab::Lab>,
    store: OodStore,
    /// Each network's logits on the corrupted copies of the test images.
    shifts: ShiftStore,
}

impl Data {
    /// The data the labs show: the reader's logits when loaded, else the bundled networks'.
    fn lab_data(&mut self) -> page::LabData<'_> {
        match &mut self.own_logits {
            Some(lab) => page::LabData::Own(lab),
            None => page::LabData::Bundled {
                lab: &mut self.lab,
                store: &mut self.store,
                shifts: &mut self.shifts,
            },
        }
    }

    /// The lab the temperature and conformal labs show: the reader's logits when loaded.
    fn shown_lab(&mut self) -> &mut lab::Lab {
        self.own_logits.as_mut().unwrap_or(&mut self.lab)
    }
}

/// The rivals' reliability bins as drawn, and the canvas's size in device pixels.
#[derive(PartialEq)]
struct RivalsDrawn {
    bins: Vec<Vec<calibration::Bin>>,
    size: (u32, u32),
    text_scale: f64,
}

#[wasm_bindgen]
impl Page {
    /// A page in the default state, without data: its state can be read from a link and
    /// shown before the test labels are in.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Page {
        Page::default()
    }

    /// Reads the test labels (an unzipped IDX labels file named `name`) and makes room for
    /// their logits and for [`page::OOD_IMAGES`] images of each OOD set.
    pub fn set_labels(&mut self, bytes: &[u8], name: &str) -> Result<(), JsError> {
        let labels: Vec<u32> = data::parse_unzipped_idx_labels(bytes, name)?
            .iter()
            .map(|&l| u32::from(l))
            .collect();
        let rows = labels.len();
        let models = page::MODELS.len();
        let ood = page::OOD_IMAGES;
        self.data = Some(Data {
            lab: lab::Lab::new(labels, NUM_CLASSES, models)?
                .with_class_names(data::fashion_mnist_class_names())?,
            own_logits: None,
            store: OodStore::new(NUM_CLASSES, models, rows, [ood; 3]),
            shifts: ShiftStore::new(NUM_CLASSES, models, rows),
        });
        Ok(())
    }

    /// Takes the state a URL hash describes: `{state, hash, article_hash, patches, rejected}`,
    /// with each ignored entry and why.
    pub fn read_hash(&mut self, hash: &str) -> Result<JsValue, JsError> {
        let (state, rejected) = PageState::from_hash(hash);
        self.state = state;
        self.next(rejected.iter().map(ToString::to_string).collect())
    }

    /// The hash of the state shown as `embed` (`"none"`: the whole page; a figure's id: that
    /// figure alone), for the embed code.
    pub fn view_hash(&self, embed: &str) -> Result<String, JsError> {
        Ok(self.state.set("embed", embed)?.to_hash())
    }

    /// Forgets the reader's picture (the pad emptied, or a picture refused): the section shows
    /// no answers until the next one.
    pub fn clear_own_image(&mut self) {
        self.own_image = None;
    }

    /// Keeps the content box (CSS pixels) of the canvas `id`, as the page's ResizeObserver
    /// reports it once a layout has placed it; frames draw the canvas at this size.
    pub fn canvas_resized(&mut self, id: &str, width: f64, height: f64) {
        self.canvas_sizes.0.insert(id.to_string(), (width, height));
    }

    /// Makes the reader's picture (`rgba`: `width`×`height` RGBA bytes, row-major) the 28×28
    /// the networks read, with `invert` (`"auto"`, `"on"`, `"off"`), finds its closest images
    /// among `test_pixels` (`[n, 28, 28]`), and returns the 28×28 (`Uint8Array`). The logits
    /// of the picture before are dropped; a picture refused leaves it as it was.
    pub fn set_own_image(
        &mut self,
        rgba: &[u8],
        width: usize,
        height: usize,
        invert: &str,
        test_pixels: &[u8],
    ) -> Result<Vec<u8>, JsError> {
        let invert: own_image::Invert = parse_name("invert", invert)?;
        let prepared = own_image::prepare(rgba, width, height, invert)?;
        let image = OwnImage::new(prepared, test_pixels, page::MODELS.len())?;
        let pixels = image.pixels().to_vec();
        self.own_image = Some(image);
        Ok(pixels)
    }

    /// Keeps the logits (`Float32Array [10]`) of `model` on the reader's picture `pixels` (the
    /// 28×28 they were computed from: logits of a picture since replaced are dropped).
    pub fn add_own_logits(
        &mut self,
        model: usize,
        pixels: &[u8],
        logits: &[f32],
    ) -> Result<(), JsError> {
        match &mut self.own_image {
            Some(image) if image.pixels() == pixels => Ok(image.add_logits(model, logits)?),
            _ => Ok(()),
        }
    }

    /// Shows the reader's logits (`Float32Array [n, K]`) and `labels` in the temperature and
    /// conformal labs, with `about` them ([`page::own_logits::OwnAbout`]): what the files
    /// worker's `OwnLogitsFiles` read (the files worker's module; not in this one). Data refused leaves the data shown before as it
    /// was; the message names the logits file.
    pub fn load_own_logits(
        &mut self,
        logits: Vec<f32>,
        labels: Vec<u32>,
        about: JsValue,
    ) -> Result<(), JsError> {
        let about = from_js(about, "description of the files")?;
        let table = page::own_logits::OwnTable {
            logits,
            labels,
            about,
        };
        self.data()?.own_logits = Some(page::own_logits::lab(table)?);
        self.data_changed();
        Ok(())
    }

    /// Shows the test images again in the temperature and conformal labs.
    pub fn show_test_images(&mut self) {
        if let Some(data) = &mut self.data {
            data.own_logits = None;
        }
        self.data_changed();
    }

    /// The reader's 28×28 as an IDX images file of one image (what `calibra logits` reads).
    pub fn own_image_idx(&self) -> Result<Vec<u8>, JsError> {
        self.own_image
            .as_ref()
            .map(OwnImage::idx_file)
            .ok_or_else(|| JsError::new("there is no picture yet: draw or choose one first"))
    }

    /// Stores a batch of logits of `model` on `set` (`"test"`, an OOD set's name or a corrupted
    /// copy's) for rows `start..`; returns how many rows of that model and set have arrived.
    pub fn add_logits(
        &mut self,
        model: usize,
        set: &str,
        start: usize,
        logits: &[f32],
    ) -> Result<usize, JsError> {
        let data = self.data()?;
        if let Ok(shifted) = ShiftedSet::parse(set) {
            return Ok(data.shifts.add_logits(model, shifted, start, logits)?);
        }
        let set: ImageSet = parse_name("image set", set)?;
        Ok(match set.ood() {
            None => {
                data.lab.add_logits(model, start, logits)?;
                data.lab.arrived(model)?
            }
            Some(ood) => data.store.add_logits(model, ood, start, logits)?,
        })
    }

    /// Stores a batch of ODIN scores of `model` on `set`; returns how many rows of that model
    /// and set have arrived.
    pub fn add_odin(
        &mut self,
        model: usize,
        set: &str,
        start: usize,
        scores: &[f64],
    ) -> Result<usize, JsError> {
        let set: ImageSet = parse_name("image set", set)?;
        Ok(self.data()?.store.add_odin(model, set, start, scores)?)
    }

    /// Stores a batch of penultimate features (`Float32Array [n, 128]`) of `model` on `set`
    /// (`"test"` or an OOD set's name) for rows `start..`; returns how many rows of that model
    /// and set have arrived. The corrupted copies' features are not kept (no lab reads them):
    /// 0.
    pub fn add_features(
        &mut self,
        model: usize,
        set: &str,
        start: usize,
        features: &[f32],
    ) -> Result<usize, JsError> {
        let data = self.data()?;
        if ShiftedSet::parse(set).is_ok() {
            return Ok(0);
        }
        let set: ImageSet = parse_name("image set", set)?;
        Ok(data
            .store
            .features_mut()
            .add_features(model, set, start, features)?)
    }

    /// Keeps `model`'s last layer (`Float32Array`: the weight `[10, 128]` row-major, then the
    /// bias `[10]`), which ReAct, ASH-S, ViM and GradNorm read.
    pub fn set_last_layer(&mut self, model: usize, values: &[f32]) -> Result<(), JsError> {
        Ok(self
            .data()?
            .store
            .features_mut()
            .set_last_layer(model, values)?)
    }

    /// The features of `model` on `set` (`Float32Array [n, 128]`), once all have arrived: what
    /// the logits cache keeps beside the logits.
    pub fn features(&self, model: usize, set: &str) -> Result<Vec<f32>, JsError> {
        let data = self.data.as_ref().ok_or_else(no_labels)?;
        let set: ImageSet = parse_name("image set", set)?;
        data.store
            .features()
            .complete(model, set)
            .map(<[f32]>::to_vec)
            .ok_or_else(|| JsError::new("these features have not all arrived yet"))
    }

    /// What a worker fits and scores the feature detectors of `request` (a
    /// [`lab::FeatureRequest`]) on: `{calibration, calibration_labels, evaluation, mnist,
    /// gaussian, uniform, last_layer}`, features as `Float32Array [n, 128]`, labels as
    /// `Uint32Array`, the last layer as [`Page::set_last_layer`] takes it.
    pub fn feature_inputs(&mut self, request: JsValue) -> Result<JsValue, JsError> {
        let request: lab::FeatureRequest = from_js(request, "feature request")?;
        let data = self.data()?;
        if data.lab.split_seed() != request.split {
            return Err(JsError::new("the split has changed since the request"));
        }
        let inputs = data
            .store
            .features()
            .inputs(
                request.model,
                data.lab.calibration_flags(),
                data.lab.labels(),
            )
            .ok_or_else(|| JsError::new("these features have not all arrived yet"))?;
        let [mnist, gaussian, uniform] = &inputs.out_of_distribution;
        let object = js_sys::Object::new();
        for (key, value) in [
            (
                "calibration",
                js_sys::Float32Array::from(&inputs.calibration[..]).into(),
            ),
            (
                "calibration_labels",
                js_sys::Uint32Array::from(&inputs.calibration_labels[..]).into(),
            ),
            (
                "evaluation",
                js_sys::Float32Array::from(&inputs.evaluation[..]).into(),
            ),
            ("mnist", js_sys::Float32Array::from(&mnist[..]).into()),
            ("gaussian", js_sys::Float32Array::from(&gaussian[..]).into()),
            ("uniform", js_sys::Float32Array::from(&uniform[..]).into()),
            (
                "last_layer",
                js_sys::Float32Array::from(&inputs.last_layer[..]).into(),
            ),
        ] {
            set_field(&object, key, &value, "feature inputs")?;
        }
        Ok(object.into())
    }

    /// The scores a worker ranks for `request` (a [`lab::RankingRequest`]):
    /// `{scores, rows_in, rows_out}`, each candidate's ID then OOD scores end to end in a
    /// `Float64Array`.
    pub fn ranking_scores(&mut self, request: JsValue) -> Result<JsValue, JsError> {
        let request: lab::RankingRequest = from_js(request, "ranking request")?;
        let data = self.data()?;
        let (scores, rows_in, rows_out) =
            page::ranking_scores(&data.lab, &mut data.store, &request)?;
        let object = js_sys::Object::new();
        set_field(
            &object,
            "scores",
            &js_sys::Float64Array::from(&scores[..]).into(),
            "ranking scores",
        )?;
        set_field(
            &object,
            "rows_in",
            &JsValue::from(rows_in),
            "ranking scores",
        )?;
        set_field(
            &object,
            "rows_out",
            &JsValue::from(rows_out),
            "ranking scores",
        )?;
        Ok(object.into())
    }

    /// Keeps the ranking a worker computed for `request` (a [`lab::RankingRequest`]).
    pub fn add_ranking(&mut self, request: JsValue, ranking: JsValue) -> Result<(), JsError> {
        let request = from_js(request, "ranking request")?;
        let ranking = from_js(ranking, "ranking")?;
        self.data()?.store.add_ranking(request, ranking);
        Ok(())
    }

    /// The test rows of the current split's calibration half, in increasing order
    /// (`Uint32Array`): the images the feature detectors are fitted on, for a check against the
    /// command-line tool.
    pub fn calibration_rows(&mut self) -> Result<Vec<u32>, JsError> {
        let flags = self.data()?.lab.calibration_flags();
        Ok((0..flags.len() as u32)
            .filter(|&row| flags[row as usize])
            .collect())
    }

    /// Keeps the feature scores a worker computed for `request` (a [`lab::FeatureRequest`]):
    /// KNN's `k` and every score as [`lab::NetworkFeatureScores::flat`] lays them out.
    pub fn add_feature_scores(
        &mut self,
        request: JsValue,
        knn_neighbours: usize,
        scores: &[f64],
    ) -> Result<(), JsError> {
        let request: lab::FeatureRequest = from_js(request, "feature request")?;
        let data = self.data()?;
        if data.lab.split_seed() != request.split {
            return Ok(());
        }
        let evaluation_rows = data
            .lab
            .calibration_flags()
            .iter()
            .filter(|&&calibration| !calibration)
            .count();
        let set_rows = OodSet::ALL.map(|set| data.store.logits_progress(request.model, set).1);
        let scores = lab::NetworkFeatureScores::from_flat(
            scores,
            knn_neighbours,
            evaluation_rows,
            set_rows,
        )?;
        data.store.features_mut().add_scores(request, scores);
        Ok(())
    }

    /// The logits of `model` on `set` (`Float32Array [n, 10]`), once all have arrived: what the
    /// page computed, for a download or a check against the command-line tool.
    pub fn logits(&self, model: usize, set: &str) -> Result<Vec<f32>, JsError> {
        let data = self.data.as_ref().ok_or_else(no_labels)?;
        if let Ok(shifted) = ShiftedSet::parse(set) {
            return data
                .shifts
                .complete_logits(model, shifted)
                .map(<[f32]>::to_vec)
                .ok_or_else(|| JsError::new("these logits have not all arrived yet"));
        }
        let set: ImageSet = parse_name("image set", set)?;
        let logits = match set.ood() {
            None => data.lab.complete_logits(model)?.map(<[f32]>::to_vec),
            Some(ood) => data.store.complete_logits(model, ood)?.map(<[f32]>::to_vec),
        };
        logits.ok_or_else(|| JsError::new("these logits have not all arrived yet"))
    }

    /// The shown lab's halves once all its rows have arrived, for the worker that
    /// computes the intervals and the rivals: `{model, split, classes, calibration_logits,
    /// calibration_labels, evaluation_logits, evaluation_labels}`, logits as `Float32Array`
    /// `[n, classes]`, labels as `Uint32Array` `[n]`.
    pub fn halves(&mut self) -> Result<JsValue, JsError> {
        let lab = self.data()?.shown_lab();
        // The lab's own, as its requests name them: with the reader's logits shown, the one
        // model whatever network the state names.
        let (model, split, classes) = (lab.shown_model(), lab.split_seed(), lab.num_classes());
        let (calibration, evaluation) = lab.complete_halves()?;
        halves_object(model, split, classes, calibration, evaluation)
    }

    /// The halves of any network for the worker that compares one temperature with normalised
    /// temperature scaling (`request`, a [`lab::NormalizedRequest`]), as [`Page::halves`] gives
    /// the shown one's.
    pub fn normalized_halves(&mut self, request: JsValue) -> Result<JsValue, JsError> {
        let request: lab::NormalizedRequest = from_js(request, "normalised temperature request")?;
        let lab = &self.data()?.lab;
        if lab.split_seed() != request.split {
            return Err(JsError::new("the split has changed since the request"));
        }
        let (calibration, evaluation) = lab.network_halves(request.model)?;
        halves_object(
            request.model,
            request.split,
            lab.num_classes(),
            &calibration,
            &evaluation,
        )
    }

    /// Keeps the comparison of one temperature with normalised temperature scaling a worker
    /// computed for `request` (a [`lab::NormalizedRequest`]).
    pub fn add_comparison(&mut self, request: JsValue, comparison: JsValue) -> Result<(), JsError> {
        let request = from_js(request, "normalised temperature request")?;
        let comparison = from_js(comparison, "normalised temperature comparison")?;
        self.data()?.store.add_comparison(request, comparison);
        Ok(())
    }

    /// Keeps the rivals a worker computed for `request` (a [`lab::RivalsRequest`]); they are
    /// dropped if the network or split changed since.
    pub fn add_rivals(&mut self, request: JsValue, rivals: JsValue) -> Result<(), JsError> {
        let request = from_js(request, "rivals request")?;
        let rivals = from_js(rivals, "rivals")?;
        self.data()?.shown_lab().add_rivals(request, rivals);
        Ok(())
    }

    /// Keeps the anatomy chart's curves a worker computed for `request` (a
    /// [`lab::AnatomyRequest`]); they are dropped if the network or split changed since.
    pub fn add_anatomy(&mut self, request: JsValue, curves: JsValue) -> Result<(), JsError> {
        let request = from_js(request, "anatomy request")?;
        let curves = from_js(curves, "anatomy curves")?;
        self.data()?.shown_lab().add_anatomy(request, curves);
        Ok(())
    }

    /// The scores a worker computes the paired difference of `request` (a
    /// [`lab::DifferenceRequest`]) on: `{chosen_in, chosen_out, reference_in, reference_out}`,
    /// each a `Float64Array`.
    pub fn difference_scores(&mut self, request: JsValue) -> Result<JsValue, JsError> {
        let request: lab::DifferenceRequest = from_js(request, "difference request")?;
        let data = self.data()?;
        let scores = page::difference_scores(&data.lab, &mut data.store, &request)?;
        let object = js_sys::Object::new();
        for (key, values) in ["chosen_in", "chosen_out", "reference_in", "reference_out"]
            .into_iter()
            .zip(scores)
        {
            js_sys::Reflect::set(
                &object,
                &key.into(),
                &js_sys::Float64Array::from(&values[..]),
            )
            .map_err(|_| JsError::new("cannot build the scores' object"))?;
        }
        Ok(object.into())
    }

    /// Keeps the paired difference a worker computed for `request` (a
    /// [`lab::DifferenceRequest`]).
    pub fn add_difference(&mut self, request: JsValue, difference: JsValue) -> Result<(), JsError> {
        let request = from_js(request, "difference request")?;
        let difference = from_js(difference, "paired difference")?;
        self.data()?.store.add_difference(request, difference);
        Ok(())
    }

    /// Keeps the bootstrap intervals a worker computed for `request` (an
    /// [`lab::IntervalRequest`]); they are dropped if the network or split changed since.
    pub fn add_intervals(&mut self, request: JsValue, intervals: JsValue) -> Result<(), JsError> {
        let request = from_js(request, "interval request")?;
        let intervals = from_js(intervals, "intervals")?;
        self.data()?.shown_lab().add_intervals(request, intervals);
        Ok(())
    }

    /// `{state, hash, article_hash, patches}` after control `id` took `value` (a slider's
    /// position, a select's value, a checkbox's `"true"`/`"false"`). A value refused leaves
    /// the state as it was.
    pub fn control(&mut self, id: &str, value: &str) -> Result<JsValue, JsError> {
        self.sent.forget(id);
        self.state = self.state.set_control(id, value)?;
        self.next(Vec::new())
    }

    /// `{state, hash, article_hash, patches}` after the button `action` (`fit`,
    /// `reset-temperature`, `new-split`, a preset's name, a presentation key's).
    pub fn action(&mut self, action: &str) -> Result<JsValue, JsError> {
        let fitted = self
            .data
            .as_mut()
            .and_then(|data| data.shown_lab().fitted_temperature().ok())
            .map(|f| f.temperature);
        self.state = self.state.act(action, fitted)?;
        self.next(Vec::new())
    }

    /// The frame's one call: recomputes the labs `visible` says are on screen (`{temperature,
    /// conformal, gallery, ood, explain, figures, blocks}`) in the page's state, redraws or clears
    /// those of their figures it names (canvas ids) as [`page::frame_figures`] says, and
    /// returns the readouts ([`page::Readouts`]).
    pub fn render(&mut self, visible: JsValue) -> Result<JsValue, JsError> {
        let visible: Visible = from_js(visible, "visibility object")?;
        let state = &self.state;
        let data = self.data.as_mut().ok_or_else(no_labels)?;
        let mut frame = page::render(data.lab_data(), state, &visible)?;
        match (visible.own_image, &self.own_image) {
            (true, Some(image)) => {
                let digits = data
                    .store
                    .complete_logits(state.model.index(), OodSet::Mnist)?;
                let (patches, readouts) = page::own_image::render(
                    &mut data.lab,
                    &mut self.own_image_thresholds,
                    state,
                    image,
                    digits,
                )?;
                frame.readouts.patches.extend(patches);
                frame.readouts.own_image = Some(readouts);
            }
            (true, None) => frame
                .readouts
                .patches
                .extend(page::own_image::without_picture()),
            (false, _) => {}
        }
        self.sent.drop_unchanged(&mut frame.readouts.patches);
        if frame.conformal.is_some() {
            // Sized before it is measured and drawn: a patch would arrive after this frame.
            fit_per_class_canvas(frame.class_names.len(), &mut self.canvas_sizes)?;
        }
        let sources = page::Sources {
            frame: &frame,
            experiment: self.experiment.as_ref(),
        };
        let text_scale = state.text_scale();
        for (figure, drawing) in page::frame_figures(&frame, &visible.figures) {
            let draw = match (figure, drawing) {
                // The rivals do not depend on T: redrawn only when their fits, bins or canvas
                // change, and cleared once when a worker starts fitting them anew.
                (Figure::RivalsReliability, FrameDrawing::Draw) => {
                    let drawn = RivalsDrawn {
                        bins: frame
                            .temperature
                            .iter()
                            .flat_map(|view| view.rivals.iter())
                            .flat_map(|rivals| rivals.reports.iter().map(|r| r.bins.clone()))
                            .collect(),
                        size: self
                            .canvas_sizes
                            .pixels(&figure.id(), device_pixel_ratio()?),
                        text_scale,
                    };
                    let changed = self.rivals_drawn.as_ref() != Some(&drawn);
                    self.rivals_drawn = Some(drawn);
                    changed
                }
                (Figure::RivalsReliability, FrameDrawing::Clear) => {
                    if self.rivals_drawn.take().is_some() {
                        self.canvas_sizes.chart(&figure.id(), text_scale)?;
                    }
                    false
                }
                (_, FrameDrawing::Draw) => true,
                (_, FrameDrawing::Clear) => {
                    self.canvas_sizes.chart(&figure.id(), text_scale)?;
                    false
                }
            };
            if draw {
                if let Some((area, style)) = self.canvas_sizes.chart(&figure.id(), text_scale)? {
                    page::figure::draw(figure, &sources, &area, &style)?;
                }
            }
        }
        to_js(&frame.readouts)
    }

    /// Draws `repetitions` (the input's text) random calibration/evaluation splits, plots
    /// their evaluation coverage against Beta(k, n + 1 − k), and returns the summary's patches.
    pub fn run_experiment(&mut self, repetitions: &str) -> Result<JsValue, JsError> {
        let state = &self.state;
        let (min, max, _) = page::REPETITIONS;
        let repetitions: usize = repetitions
            .trim()
            .parse()
            .ok()
            .filter(|r| (min..=max).contains(r))
            .ok_or_else(|| {
                JsError::new(&format!(
                    "Random splits R must be a whole number from {} to {}, not \"{repetitions}\".",
                    crate::text::grouped(min),
                    crate::text::grouped(max)
                ))
            })?;
        let settings = state.conformal_settings();
        let experiment = self
            .data
            .as_mut()
            .ok_or_else(no_labels)?
            .shown_lab()
            .coverage_experiment(
                &settings,
                state.delta,
                state.risk,
                repetitions,
                u64::from(state.split),
            )?;
        let target = 1.0 - settings.alpha;
        let readouts = page::experiment_readouts(state, &experiment);
        let run = self.experiment.insert(page::ExperimentRun {
            upper: target + 1.0 / (experiment.summary.n_calibration as f64 + 1.0),
            target,
            experiment,
        });
        let frame = page::Frame::default();
        let sources = page::Sources {
            frame: &frame,
            experiment: Some(run),
        };
        if let Some((area, style)) = self
            .canvas_sizes
            .chart(&Figure::Experiment.id(), state.text_scale())?
        {
            page::figure::draw(Figure::Experiment, &sources, &area, &style)?;
        }
        to_js(&readouts)
    }

    /// `figure` (a canvas's id) in the page's state as an SVG document the size of its canvas
    /// on screen, drawn by the code that draws the canvas.
    pub fn figure_svg(&mut self, figure: &str) -> Result<String, JsError> {
        let figure: Figure = parse_name("figure", figure)?;
        let canvas = canvas_element(&figure.id())?;
        let size = (
            canvas.client_width().max(1) as u32,
            canvas.client_height().max(1) as u32,
        );
        let frame = self.figure_frame(figure)?;
        let sources = page::Sources {
            frame: &frame,
            experiment: self.experiment.as_ref(),
        };
        let mut text = String::new();
        let backend = Measured::svg(&mut text, size, &canvas)
            .ok_or_else(|| JsError::new(&format!("canvas #{} has no 2D context", figure.id())))?;
        page::figure::render_on(figure, &sources, backend, &ChartStyle { scale: 1.0 })?;
        Ok(text)
    }

    /// The numbers `figure` (a canvas's id) draws in the page's state, as CSV.
    pub fn figure_csv(&mut self, figure: &str) -> Result<String, JsError> {
        let figure: Figure = parse_name("figure", figure)?;
        let frame = self.figure_frame(figure)?;
        let sources = page::Sources {
            frame: &frame,
            experiment: self.experiment.as_ref(),
        };
        Ok(page::figure::csv(figure, &sources)?)
    }

    /// Measures the worst-slab coverage of the conformal lab's sets at the state's settings,
    /// with its noise floor, and returns its patches.
    pub fn measure_worst_slab(&mut self) -> Result<JsValue, JsError> {
        let settings = self.state.conformal_settings();
        let view = self.data()?.shown_lab().worst_slab_view(&settings)?;
        to_js(&page::worst_slab_readouts(&view))
    }
}

impl Page {
    /// The [`Next`] of the page's state, without the patches that would change nothing.
    fn next(&mut self, rejected: Vec<String>) -> Result<JsValue, JsError> {
        let mut next = Next::of(&self.state, rejected)?;
        self.sent.drop_unchanged(&mut next.patches);
        to_js(&next)
    }

    /// A frame with the view of `figure`'s lab alone.
    fn figure_frame(&mut self, figure: Figure) -> Result<page::Frame, JsError> {
        let visible = Visible::figure_alone(figure);
        let data = self.data.as_mut().ok_or_else(no_labels)?;
        Ok(page::render(data.lab_data(), &self.state, &visible)?)
    }

    /// The labs' data, once the test labels are in.
    fn data(&mut self) -> Result<&mut Data, JsError> {
        self.data.as_mut().ok_or_else(no_labels)
    }

    /// Forgets what was drawn from the data shown before: the coverage experiment and the
    /// rivals' diagrams.
    fn data_changed(&mut self) {
        self.experiment = None;
        self.rivals_drawn = None;
    }
}

/// What an export that needs the labs' data says before the test labels are in.
fn no_labels() -> JsError {
    JsError::new("the test labels have not been read yet")
}

/// Reads a name the page gives by its serde name (`"mnist"`, `"test"`), naming the field.
fn parse_name<T: serde::de::DeserializeOwned>(field: &str, name: &str) -> Result<T, JsError> {
    use serde::de::IntoDeserializer;
    T::deserialize(name.into_deserializer())
        .map_err(|e: serde::de::value::Error| JsError::new(&format!("{field}: {e}")))
}

/// A cleared canvas to draw on, with the chart style for its pixel ratio.
type Chart = (DrawingArea<Measured<'static>, Shift>, ChartStyle);

/// The page's canvas with this id.
fn canvas_element(id: &str) -> Result<HtmlCanvasElement, JsError> {
    web_sys::window()
        .ok_or_else(|| JsError::new("no window"))?
        .document()
        .ok_or_else(|| JsError::new("no document"))?
        .get_element_by_id(id)
        .and_then(|e| e.dyn_into().ok())
        .ok_or_else(|| JsError::new(&format!("the page has no canvas #{id}")))
}

/// Gives the per-class chart's canvas the height `plot::per_class_height` asks for `classes`
/// (the stylesheet's `--chart-height`; `auto` keeps the square), when it changed; it is then
/// measured at once (the one layout a frame reads), so that this frame draws it at its new size.
fn fit_per_class_canvas(classes: usize, sizes: &mut CanvasSizes) -> Result<(), JsError> {
    let canvas = canvas_element(&Figure::PerClass.id())?;
    let height = crate::plot::per_class_height(classes)
        .map_or_else(|| "auto".to_string(), |css| format!("{css}px"));
    let style = canvas.style();
    if style.get_property_value("--chart-height").ok().as_deref() != Some(height.as_str()) {
        style
            .set_property("--chart-height", &height)
            .map_err(|_| JsError::new("cannot size the per-class canvas"))?;
        sizes.0.insert(
            Figure::PerClass.id(),
            (
                f64::from(canvas.client_width()),
                f64::from(canvas.client_height()),
            ),
        );
    }
    Ok(())
}

/// Each canvas's content box in CSS pixels, as the page's ResizeObserver last reported it
/// (`Page.canvas_resized`). A frame sizes its canvases from these and reads no layout: the
/// slider's readouts, written just before the frame, leave the layout dirty, and reading a
/// canvas's size then forced a layout of the article, a large part of a phone-class slider
/// frame.
#[derive(Debug, Default)]
struct CanvasSizes(HashMap<String, (f64, f64)>);

impl CanvasSizes {
    /// The canvas's size in device pixels at pixel `ratio`: zero while it is not laid out
    /// (hidden, as the embed view hides the figures it does not show) or not yet measured.
    fn pixels(&self, id: &str, ratio: f64) -> (u32, u32) {
        let (width, height) = self.0.get(id).copied().unwrap_or_default();
        let scaled = |css: f64| (css * ratio).round() as u32;
        (scaled(width), scaled(height))
    }

    /// The canvas with this id, sized to its CSS box times the device pixel ratio and
    /// cleared, with the chart style for that ratio times `text_scale` (larger type and
    /// lines); `None` for a canvas that is not laid out or not yet measured (its
    /// ResizeObserver report asks for a frame).
    fn chart(&self, id: &str, text_scale: f64) -> Result<Option<Chart>, JsError> {
        let ratio = device_pixel_ratio()?;
        let (width, height) = self.pixels(id, ratio);
        if width == 0 || height == 0 {
            return Ok(None);
        }
        let canvas = canvas_element(id)?;
        if canvas.width() != width || canvas.height() != height {
            canvas.set_width(width);
            canvas.set_height(height);
        }
        let backend = Measured::canvas(canvas)
            .ok_or_else(|| JsError::new(&format!("canvas #{id} has no 2D context")))?;
        let area = backend.into_drawing_area();
        area.fill(&WHITE)
            .map_err(|e| JsError::new(&format!("cannot clear canvas #{id}: {e}")))?;
        Ok(Some((
            area,
            ChartStyle {
                scale: ratio * text_scale,
            },
        )))
    }
}

/// The window's device pixel ratio.
fn device_pixel_ratio() -> Result<f64, JsError> {
    Ok(web_sys::window()
        .ok_or_else(|| JsError::new("no window"))?
        .device_pixel_ratio())
}

/// Two halves as the bootstrap worker takes them: `{model, split, classes,
/// calibration_logits, calibration_labels, evaluation_logits, evaluation_labels}`, logits as
/// `Float32Array` `[n, classes]`, labels as `Uint32Array` `[n]`.
fn halves_object(
    model: usize,
    split: u64,
    classes: usize,
    calibration: &lab::Part,
    evaluation: &lab::Part,
) -> Result<JsValue, JsError> {
    let object = js_sys::Object::new();
    for (key, value) in [
        ("model", JsValue::from(model)),
        ("classes", JsValue::from(classes)),
        // A number, as requests carry it (the seeds are the state's `u32`s), not a BigInt.
        ("split", JsValue::from_f64(split as f64)),
        (
            "calibration_logits",
            js_sys::Float32Array::from(&calibration.logits[..]).into(),
        ),
        (
            "calibration_labels",
            js_sys::Uint32Array::from(&calibration.labels[..]).into(),
        ),
        (
            "evaluation_logits",
            js_sys::Float32Array::from(&evaluation.logits[..]).into(),
        ),
        (
            "evaluation_labels",
            js_sys::Uint32Array::from(&evaluation.labels[..]).into(),
        ),
    ] {
        js_sys::Reflect::set(&object, &key.into(), &value)
            .map_err(|_| JsError::new("cannot build the halves' object"))?;
    }
    Ok(object.into())
}
