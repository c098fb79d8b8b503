//! Each network's penultimate features (the [`FEATURE_WIDTH`] activations after the first
//! dense layer's ReLU, which the inference worker returns beside the logits) on the test
//! images and the OOD sets, and its last layer: what the feature-based OOD detectors
//! (`ood_features`) are fitted on and score.
//!
//! The page has no training images, so the detectors are fitted on the calibration half of
//! the test images with its labels and score the evaluation half and the OOD sets
//! ([`FeatureInputs`]), as `calibra ood --model --fit-images` does with the same images.
//!
//! A network's features take `16,000 × 128 × 4` bytes (about 8 MB) on the test images and the
//! three OOD sets, so a set's room is taken at its first batch, never for a network whose
//! features do not come.

use serde::{Deserialize, Serialize};

use super::ood_store::{ImageSet, OodSet};
use super::ood_view::ScoreKind;
use super::{LabError, Streamed};
use crate::ood_features::{FeatureScores, Features, FittedDetectors, LastLayer};

/// Penultimate features per image: the first dense layer's units.
pub const FEATURE_WIDTH: usize = 128;

/// Image sets with features: the test images, then the OOD sets.
const IMAGE_SETS: usize = 4;

/// Which feature scores a worker computes ([`FeatureInputs::scores`], about a second): one
/// network's on one split.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeatureRequest {
    pub model: usize,
    pub split: u64,
}

/// Each network's features on each image set, and its last layer.
#[derive(Debug, Clone)]
pub struct FeatureStore {
    /// Rows of each image set, in [`ImageSet::position`]'s order.
    rows: [usize; IMAGE_SETS],
    /// `[model][image set]`, `None` until the set's first batch.
    features: Vec<[Option<Streamed<f32>>; IMAGE_SETS]>,
    /// `[model]`: the weight `[K, 128]` row-major then the bias `[K]`, once a worker sent them.
    last_layers: Vec<Option<Vec<f32>>>,
    /// The scores workers computed, oldest first, at most two splits' worth.
    scores: Vec<(FeatureRequest, NetworkFeatureScores)>,
}

impl FeatureStore {
    /// Room for `model_count` networks on `test_rows` test images and the OOD sets'
    /// `set_rows` (in `OodSet::ALL`'s order).
    pub fn new(model_count: usize, test_rows: usize, set_rows: [usize; 3]) -> Self {
        Self {
            rows: [test_rows, set_rows[0], set_rows[1], set_rows[2]],
            features: vec![Default::default(); model_count],
            last_layers: vec![None; model_count],
            scores: Vec::new(),
        }
    }

    /// Keeps the scores a worker computed for `request` (beyond two splits' worth of every
    /// network, the oldest go).
    pub fn add_scores(&mut self, request: FeatureRequest, scores: NetworkFeatureScores) {
        self.scores.retain(|(kept, _)| kept != &request);
        if self.scores.len() == 2 * self.features.len() {
            self.scores.remove(0);
        }
        self.scores.push((request, scores));
    }

    /// The kept scores of `request`, if a worker has given them.
    pub fn scores(&self, request: &FeatureRequest) -> Option<&NetworkFeatureScores> {
        self.scores
            .iter()
            .find(|(kept, _)| kept == request)
            .map(|(_, scores)| scores)
    }

    fn check_model(&self, model: usize) -> Result<(), LabError> {
        if model < self.features.len() {
            Ok(())
        } else {
            Err(LabError::UnknownModel {
                index: model,
                count: self.features.len(),
            })
        }
    }

    /// Stores a batch of `model`'s features on `set`, rows `start..` (`[n, 128]` row-major);
    /// returns the rows of that set that have arrived.
    ///
    /// # Errors
    /// [`LabError::UnknownModel`], [`LabError::BatchOutOfRange`], and
    /// [`LabError::NonFiniteFeature`] for a NaN or infinite value.
    pub fn add_features(
        &mut self,
        model: usize,
        set: ImageSet,
        start: usize,
        features: &[f32],
    ) -> Result<usize, LabError> {
        self.check_model(model)?;
        let position = set.position();
        let rows = self.rows[position];
        let streamed = self.features[model][position]
            .get_or_insert_with(|| Streamed::new(rows, FEATURE_WIDTH));
        streamed.check_batch(start, features.len())?;
        if let Some(index) = features.iter().position(|v| !v.is_finite()) {
            return Err(LabError::NonFiniteFeature {
                row: start + index / FEATURE_WIDTH,
            });
        }
        streamed.add(start, features)?;
        Ok(streamed.arrived())
    }

    /// `model`'s features on `set` once every row has arrived (`[rows, 128]`).
    pub fn complete(&self, model: usize, set: ImageSet) -> Option<&[f32]> {
        let streamed = self.features.get(model)?[set.position()].as_ref()?;
        streamed.is_complete().then(|| streamed.values())
    }

    /// Whether `model`'s features on every image set and its last layer are in: what
    /// [`FeatureStore::inputs`] waits for.
    pub fn ready(&self, model: usize) -> bool {
        self.last_layers.get(model).is_some_and(Option::is_some)
            && std::iter::once(ImageSet::Test)
                .chain(OodSet::ALL.map(ImageSet::from))
                .all(|set| self.complete(model, set).is_some())
    }

    /// Keeps `model`'s last layer: the weight `[K, 128]` row-major, then the bias `[K]`.
    ///
    /// # Errors
    /// [`LabError::UnknownModel`], and [`LabError::Features`] unless the values are a weight
    /// and a bias of at least two classes reading [`FEATURE_WIDTH`] features.
    pub fn set_last_layer(&mut self, model: usize, values: &[f32]) -> Result<(), LabError> {
        self.check_model(model)?;
        let (weight, bias) = split_last_layer(values);
        LastLayer::new(weight, bias, FEATURE_WIDTH)?;
        self.last_layers[model] = Some(values.to_vec());
        Ok(())
    }

    /// What the detectors of `model` are fitted on and score, once its features on every set
    /// and its last layer are in: the rows of `is_calibration` (one flag a test row) with
    /// their `labels` fit, the others are the in-distribution set scored.
    pub fn inputs(
        &self,
        model: usize,
        is_calibration: &[bool],
        labels: &[u32],
    ) -> Option<FeatureInputs> {
        let last_layer = self.last_layers.get(model)?.clone()?;
        let test = self.complete(model, ImageSet::Test)?;
        let mut inputs = FeatureInputs {
            last_layer,
            ..FeatureInputs::default()
        };
        for ((row, &calibration), &label) in test
            .chunks_exact(FEATURE_WIDTH)
            .zip(is_calibration)
            .zip(labels)
        {
            if calibration {
                inputs.calibration.extend_from_slice(row);
                inputs.calibration_labels.push(label);
            } else {
                inputs.evaluation.extend_from_slice(row);
            }
        }
        for set in OodSet::ALL {
            inputs.out_of_distribution[set.index()] = self.complete(model, set.into())?.to_vec();
        }
        Some(inputs)
    }
}

/// The weight and the bias of a last layer sent as one array (the bias's `K` values last).
fn split_last_layer(values: &[f32]) -> (&[f32], &[f32]) {
    let classes = values.len() / (FEATURE_WIDTH + 1);
    values.split_at(values.len() - classes)
}

/// One network's features as the detectors need them, each `[n, 128]` row-major: the
/// calibration half with its labels (the fit), the evaluation half and the OOD sets (in
/// `OodSet::ALL`'s order), and the last layer (weight then bias).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FeatureInputs {
    pub calibration: Vec<f32>,
    pub calibration_labels: Vec<u32>,
    pub evaluation: Vec<f32>,
    pub out_of_distribution: [Vec<f32>; 3],
    pub last_layer: Vec<f32>,
}

/// Every detector's scores of the evaluation half and of each OOD set, and KNN's `k`.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkFeatureScores {
    pub knn_neighbours: usize,
    pub evaluation: FeatureScores,
    pub out_of_distribution: [FeatureScores; 3],
}

impl NetworkFeatureScores {
    /// Every score in one array, as a worker sends them: for each kind of
    /// [`ScoreKind::FEATURES`], the evaluation half's scores, then each OOD set's (in
    /// `OodSet::ALL`'s order).
    pub fn flat(&self) -> Vec<f64> {
        ScoreKind::FEATURES
            .iter()
            .flat_map(|&kind| {
                std::iter::once(&self.evaluation)
                    .chain(&self.out_of_distribution)
                    .flat_map(move |scores| of_kind(scores, kind))
                    .copied()
            })
            .collect()
    }

    /// The scores [`NetworkFeatureScores::flat`] laid out, for `evaluation_rows` evaluation
    /// images and the OOD sets' `set_rows`.
    ///
    /// # Errors
    /// [`LabError::BatchOutOfRange`] unless `values` holds exactly that many scores.
    pub fn from_flat(
        values: &[f64],
        knn_neighbours: usize,
        evaluation_rows: usize,
        set_rows: [usize; 3],
    ) -> Result<Self, LabError> {
        let per_kind = evaluation_rows + set_rows.iter().sum::<usize>();
        if values.len() != per_kind * ScoreKind::FEATURES.len() {
            return Err(LabError::BatchOutOfRange {
                start: 0,
                len: values.len(),
                rows: per_kind,
                num_classes: ScoreKind::FEATURES.len(),
            });
        }
        let rows = [evaluation_rows, set_rows[0], set_rows[1], set_rows[2]];
        // Kinds in ScoreKind::FEATURES's order, which is FeatureScores's.
        let set = |index: usize| {
            let start: usize = rows[..index].iter().sum();
            let take = |kind: usize| values[kind * per_kind + start..][..rows[index]].to_vec();
            FeatureScores {
                mahalanobis: take(0),
                knn: take(1),
                react: take(2),
                ash: take(3),
                vim: take(4),
                gradnorm: take(5),
            }
        };
        Ok(Self {
            knn_neighbours,
            evaluation: set(0),
            out_of_distribution: [set(1), set(2), set(3)],
        })
    }

    /// The scores of `kind` (a feature kind) on the evaluation half and on OOD set `set`.
    pub fn of(&self, kind: ScoreKind, set: OodSet) -> (&[f64], &[f64]) {
        (
            of_kind(&self.evaluation, kind),
            of_kind(&self.out_of_distribution[set.index()], kind),
        )
    }
}

/// One detector's scores; the logit kinds have none here.
fn of_kind(scores: &FeatureScores, kind: ScoreKind) -> &[f64] {
    match kind {
        ScoreKind::Mahalanobis => &scores.mahalanobis,
        ScoreKind::Knn => &scores.knn,
        ScoreKind::React => &scores.react,
        ScoreKind::Ash => &scores.ash,
        ScoreKind::Vim => &scores.vim,
        ScoreKind::GradNorm => &scores.gradnorm,
        ScoreKind::Msp | ScoreKind::MaxLogit | ScoreKind::Energy | ScoreKind::Odin => &[],
    }
}

impl FeatureInputs {
    /// Fits every detector on the calibration half at its paper's settings
    /// ([`FittedDetectors`]) and scores the evaluation half and the OOD sets: about a second
    /// in a browser (KNN's distances), so the page's bootstrap worker runs it.
    ///
    /// # Errors
    /// [`LabError::Features`] for features or labels the detectors refuse (ragged rows, a class
    /// without calibration rows, a last layer of the wrong shape).
    pub fn scores(&self) -> Result<NetworkFeatureScores, LabError> {
        let (weight, bias) = split_last_layer(&self.last_layer);
        let last_layer = LastLayer::new(weight, bias, FEATURE_WIDTH)?;
        let detectors = FittedDetectors::fit(
            &Features::new(&self.calibration, FEATURE_WIDTH)?,
            &self.calibration_labels,
            last_layer,
        )?;
        let score = |values: &[f32]| -> Result<FeatureScores, LabError> {
            Ok(detectors.scores(&Features::new(values, FEATURE_WIDTH)?)?)
        };
        let [mnist, gaussian, uniform] = &self.out_of_distribution;
        Ok(NetworkFeatureScores {
            knn_neighbours: detectors.knn_neighbours(),
            evaluation: score(&self.evaluation)?,
            out_of_distribution: [score(mnist)?, score(gaussian)?, score(uniform)?],
        })
    }
}

#[cfg(test)]
#[path = "feature_store_tests.rs"]
mod tests;
