//! The OOD lab's data: each network's logits on each out-of-distribution set, and its ODIN
//! scores once the reader asks for them, as inference streams them in; and the views built from
//! them, cached per network, set and temperature; and the paired differences a worker computed
//! between a network and cross-entropy.

use serde::{Deserialize, Serialize};

use super::feature_store::{FeatureRequest, FeatureStore};
use super::normalized_view::{Comparisons, NormalizedRequest, TemperatureComparison};
use super::pvalues_view::{PvalueRequest, PvalueView};
use super::{LabError, Streamed};
use crate::bootstrap::BootstrapSettings;
use crate::calibration::Logits;
use crate::data::NoiseKind;
use crate::lab::ood_view::{OdinScores, OodView, ScoreKind};
use crate::ood_difference::PairedDifference;
use crate::ood_ranking::Ranking;

/// The paired bootstrap of a difference a lab states (the τ lab's lesson, Venn–Abers against
/// isotonic regression): 1,000 resamples, 95%. With 100 resamples (the metrics' intervals), a
/// 95% interval of a difference that is 0 in truth excluded 0 in 7.9% of 1,000 seeded trials
/// (with 1,000: 5.5%; `lab/rivals_tests.rs`).
pub const DIFFERENCE_BOOTSTRAP: BootstrapSettings = BootstrapSettings {
    resamples: 1000,
    level: 0.95,
    seed: 0,
};

/// Which paired difference (`ood_difference`): network `chosen` against network `reference` on
/// one OOD set, by one score at one temperature (the first lab's T; MSP and energy use it) on
/// one split (the feature scores' evaluation half). The page asks a worker for it, since 1,000
/// resamples take longer than a frame.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DifferenceRequest {
    pub chosen: usize,
    pub reference: usize,
    pub set: OodSet,
    pub score: ScoreKind,
    pub temperature: f64,
    pub split: u64,
}

/// Paired differences kept at once (each is a few numbers).
const KEPT_DIFFERENCES: usize = 64;

/// Which ranking of detectors (`ood_ranking`): every score computed for network `chosen` and
/// network `reference` on one OOD set, at one temperature, on one split's evaluation half (the
/// images every score, the feature scores included, is measured on). The page asks a worker
/// for it, since each candidate's intervals take 1,000 resamples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankingRequest {
    pub chosen: usize,
    pub reference: usize,
    pub set: OodSet,
    pub temperature: f64,
    pub split: u64,
    /// The candidates as (score, network), in the order the ranking's `candidate` indexes.
    pub candidates: Vec<(ScoreKind, usize)>,
}

/// Rankings kept at once.
const KEPT_RANKINGS: usize = 16;

/// An out-of-distribution set of the lab (serde: `"mnist"`, `"gaussian"`, `"uniform"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OodSet {
    /// Handwritten digits: images of the same kind, none of Fashion-MNIST's classes.
    Mnist,
    /// Gaussian noise images, clipped to `[0, 1]` ([`NoiseKind::Gaussian`]).
    Gaussian,
    /// Uniform noise images ([`NoiseKind::Uniform`]).
    Uniform,
}

impl OodSet {
    /// Every set, in the order the page lists them.
    pub const ALL: [OodSet; 3] = [Self::Mnist, Self::Gaussian, Self::Uniform];

    /// Position in [`OodSet::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// As the text names it.
    pub fn title(self) -> &'static str {
        match self {
            Self::Mnist => "MNIST digits",
            Self::Gaussian => "Gaussian noise",
            Self::Uniform => "uniform noise",
        }
    }

    /// The noise law of a noise set.
    pub fn noise(self) -> Option<NoiseKind> {
        match self {
            Self::Mnist => None,
            Self::Gaussian => Some(NoiseKind::Gaussian),
            Self::Uniform => Some(NoiseKind::Uniform),
        }
    }
}

/// The images a batch of logits or ODIN scores was computed on (serde: `"test"` or a set's
/// name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageSet {
    /// The Fashion-MNIST test images: in distribution.
    Test,
    Mnist,
    Gaussian,
    Uniform,
}

impl From<OodSet> for ImageSet {
    fn from(set: OodSet) -> Self {
        match set {
            OodSet::Mnist => Self::Mnist,
            OodSet::Gaussian => Self::Gaussian,
            OodSet::Uniform => Self::Uniform,
        }
    }
}

impl ImageSet {
    /// The OOD set, or `None` for the test images.
    pub fn ood(self) -> Option<OodSet> {
        match self {
            Self::Test => None,
            Self::Mnist => Some(OodSet::Mnist),
            Self::Gaussian => Some(OodSet::Gaussian),
            Self::Uniform => Some(OodSet::Uniform),
        }
    }

    /// Position of the set's ODIN scores and features: the test images first, then
    /// [`OodSet::ALL`].
    pub(super) fn position(self) -> usize {
        self.ood().map_or(0, |set| set.index() + 1)
    }
}

/// One cached view.
#[derive(Debug, Clone)]
struct CachedView {
    model: usize,
    set: OodSet,
    temperature: f64,
    with_odin: bool,
    /// The split whose feature scores the view holds, if any.
    features_split: Option<u64>,
    view: OodView,
}

/// Views kept at once: every network on one set at one temperature.
const CACHED_VIEWS: usize = 16;

/// Each network's logits and ODIN scores on the OOD sets (ODIN on the test images too).
#[derive(Debug, Clone)]
pub struct OodStore {
    num_classes: usize,
    /// `[model][set]`, sets in [`OodSet::ALL`]'s order.
    logits: Vec<Vec<Streamed<f32>>>,
    /// `[model][image set]`: the test images, then the OOD sets.
    odin: Vec<Vec<Streamed<f64>>>,
    views: Vec<CachedView>,
    /// Answers of the worker, oldest first.
    differences: Vec<(DifferenceRequest, PairedDifference)>,
    rankings: Vec<(RankingRequest, Ranking)>,
    /// Each network's penultimate features and last layer, and the feature scores computed
    /// from them.
    features: FeatureStore,
    /// Each network's temperature scaling against normalised temperature scaling.
    comparisons: Comparisons,
    /// The last conformal p-values the lab showed (`pvalues_view.rs`).
    pub(super) pvalues: Option<(PvalueRequest, PvalueView)>,
}

impl OodStore {
    /// Room for `model_count` networks of `num_classes` on `test_rows` test images and the OOD
    /// sets' `set_rows` (in [`OodSet::ALL`]'s order).
    pub fn new(
        num_classes: usize,
        model_count: usize,
        test_rows: usize,
        set_rows: [usize; 3],
    ) -> Self {
        let logits = set_rows
            .iter()
            .map(|&rows| Streamed::new(rows, num_classes))
            .collect();
        let odin = std::iter::once(test_rows)
            .chain(set_rows)
            .map(|rows| Streamed::new(rows, 1))
            .collect();
        Self {
            num_classes,
            logits: vec![logits; model_count],
            odin: vec![odin; model_count],
            views: Vec::new(),
            differences: Vec::new(),
            rankings: Vec::new(),
            features: FeatureStore::new(model_count, test_rows, set_rows),
            comparisons: Comparisons::default(),
            pvalues: None,
        }
    }

    /// The networks' features, last layers and feature scores.
    pub fn features(&self) -> &FeatureStore {
        &self.features
    }

    /// The same, to add to.
    pub fn features_mut(&mut self) -> &mut FeatureStore {
        &mut self.features
    }

    /// Keeps a paired difference a worker computed (beyond [`KEPT_DIFFERENCES`], the oldest
    /// goes).
    pub fn add_difference(&mut self, request: DifferenceRequest, difference: PairedDifference) {
        self.differences.retain(|(kept, _)| kept != &request);
        if self.differences.len() == KEPT_DIFFERENCES {
            self.differences.remove(0);
        }
        self.differences.push((request, difference));
    }

    /// The kept answer to `request`, if a worker has given one.
    pub fn difference(&self, request: &DifferenceRequest) -> Option<PairedDifference> {
        self.differences
            .iter()
            .find(|(kept, _)| kept == request)
            .map(|&(_, difference)| difference)
    }

    /// Keeps a ranking a worker computed (beyond [`KEPT_RANKINGS`], the oldest goes).
    pub fn add_ranking(&mut self, request: RankingRequest, ranking: Ranking) {
        self.rankings.retain(|(kept, _)| kept != &request);
        if self.rankings.len() == KEPT_RANKINGS {
            self.rankings.remove(0);
        }
        self.rankings.push((request, ranking));
    }

    /// The kept answer to `request`, if a worker has given one.
    pub fn ranking(&self, request: &RankingRequest) -> Option<&Ranking> {
        self.rankings
            .iter()
            .find(|(kept, _)| kept == request)
            .map(|(_, ranking)| ranking)
    }

    /// Keeps the comparison of the two temperatures a worker computed for `request`.
    pub fn add_comparison(
        &mut self,
        request: NormalizedRequest,
        comparison: TemperatureComparison,
    ) {
        self.comparisons.keep(request, comparison);
    }

    /// The kept answer to `request`, if a worker has given one.
    pub fn comparison(&self, request: &NormalizedRequest) -> Option<TemperatureComparison> {
        self.comparisons.get(request)
    }

    fn check_model(&self, model: usize) -> Result<(), LabError> {
        if model < self.logits.len() {
            Ok(())
        } else {
            Err(LabError::UnknownModel {
                index: model,
                count: self.logits.len(),
            })
        }
    }

    /// Stores a batch of `model`'s logits on `set`, rows `start..`; returns the rows of that
    /// set that have arrived.
    ///
    /// # Errors
    /// [`LabError::UnknownModel`], [`LabError::BatchOutOfRange`], and the non-finite-logit
    /// error of [`Logits::new`].
    pub fn add_logits(
        &mut self,
        model: usize,
        set: OodSet,
        start: usize,
        logits: &[f32],
    ) -> Result<usize, LabError> {
        self.check_model(model)?;
        let streamed = &mut self.logits[model][set.index()];
        streamed.check_batch(start, logits.len())?;
        Logits::new(logits, self.num_classes)?;
        streamed.add(start, logits)?;
        Ok(streamed.arrived())
    }

    /// Stores a batch of `model`'s ODIN scores on `set`, rows `start..`; returns the rows of
    /// that set that have arrived.
    ///
    /// # Errors
    /// [`LabError::UnknownModel`], [`LabError::BatchOutOfRange`], and
    /// [`LabError::NonFiniteScore`] for a NaN or infinite score.
    pub fn add_odin(
        &mut self,
        model: usize,
        set: ImageSet,
        start: usize,
        scores: &[f64],
    ) -> Result<usize, LabError> {
        self.check_model(model)?;
        let streamed = &mut self.odin[model][set.position()];
        streamed.check_batch(start, scores.len())?;
        if let Some(index) = scores.iter().position(|s| !s.is_finite()) {
            return Err(LabError::NonFiniteScore { row: start + index });
        }
        streamed.add(start, scores)?;
        Ok(streamed.arrived())
    }

    /// `model`'s logits on `set` once every row has arrived (`[rows, K]`).
    ///
    /// # Errors
    /// [`LabError::UnknownModel`].
    pub fn complete_logits(&self, model: usize, set: OodSet) -> Result<Option<&[f32]>, LabError> {
        self.check_model(model)?;
        let logits = &self.logits[model][set.index()];
        Ok(logits.is_complete().then(|| logits.values()))
    }

    /// Rows of `model`'s logits on `set` that have arrived, and the set's rows.
    pub fn logits_progress(&self, model: usize, set: OodSet) -> (usize, usize) {
        self.logits.get(model).map_or((0, 0), |sets| {
            (sets[set.index()].arrived(), sets[set.index()].rows())
        })
    }

    /// ODIN scores of `model` on `set` that have arrived, and the set's rows.
    pub fn odin_progress(&self, model: usize, set: ImageSet) -> (usize, usize) {
        self.odin.get(model).map_or((0, 0), |sets| {
            let scores = &sets[set.position()];
            (scores.arrived(), scores.rows())
        })
    }

    /// Whether `model`'s ODIN scores are complete on the test images and on `set`.
    pub fn has_odin(&self, model: usize, set: OodSet) -> bool {
        self.odin.get(model).is_some_and(|sets| {
            sets[0].is_complete() && sets[ImageSet::from(set).position()].is_complete()
        })
    }

    /// The OOD view of `model` on `set` at `temperature` (MSP and energy), with ODIN when its
    /// scores are complete, from the network's logits on every test image (`in_distribution`),
    /// and with the feature scores of split `split` once a worker computed them (on the
    /// evaluation half and the set).
    ///
    /// # Errors
    /// [`LabError::NotReady`] before the set's logits are complete, and the view's errors.
    pub fn view(
        &mut self,
        model: usize,
        set: OodSet,
        temperature: f64,
        in_distribution: &[f32],
        split: u64,
    ) -> Result<&OodView, LabError> {
        self.check_model(model)?;
        let with_odin = self.has_odin(model, set);
        let feature_request = FeatureRequest { model, split };
        let features_split = self.features.scores(&feature_request).map(|_| split);
        let found = self.views.iter().position(|v| {
            v.model == model
                && v.set == set
                && v.temperature == temperature
                && v.with_odin == with_odin
                && v.features_split == features_split
        });
        let index = match found {
            Some(index) => index,
            None => {
                let logits = &self.logits[model][set.index()];
                if !logits.is_complete() {
                    return Err(LabError::NotReady);
                }
                let odin = with_odin.then(|| OdinScores {
                    in_distribution: self.odin[model][0].values(),
                    out_of_distribution: self.odin[model][ImageSet::from(set).position()].values(),
                });
                let mut view = OodView::new(
                    &Logits::new(in_distribution, self.num_classes)?,
                    &Logits::new(logits.values(), self.num_classes)?,
                    temperature,
                    odin,
                )?;
                if let Some(scores) = self.features.scores(&feature_request) {
                    for kind in ScoreKind::FEATURES {
                        let (evaluation, out_of_distribution) = scores.of(kind, set);
                        view.add_scores(kind, evaluation.to_vec(), out_of_distribution.to_vec())?;
                    }
                }
                // Another temperature makes the others stale; beyond the cap, the oldest goes.
                self.views.retain(|v| v.temperature == temperature);
                if self.views.len() == CACHED_VIEWS {
                    self.views.remove(0);
                }
                self.views.push(CachedView {
                    model,
                    set,
                    temperature,
                    with_odin,
                    features_split,
                    view,
                });
                self.views.len() - 1
            }
        };
        Ok(&self.views[index].view)
    }
}

#[cfg(test)]
#[path = "ood_store_tests.rs"]
mod tests;
