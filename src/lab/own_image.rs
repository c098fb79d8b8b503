//! The conformal set of a reader's own image, under any network whose test-set logits have
//! arrived, with the conformal lab's settings.
//!
//! The thresholds come from that network's calibration half exactly as the conformal lab's do
//! (the same rows in the same order, the same scores and quantile), so for the lab's network
//! the set uses the q̂ the lab shows. A randomized score needs one uniform draw for the new
//! image: it is the draw that would follow the test rows' in their seeded stream,
//! `conformal::uniforms(n + 1, split seed)[n]`, so the set does not change from frame to frame.

use serde::Serialize;

use super::conformal_view::{thresholds_of, true_label};
use super::{ConformalSettings, Lab, LabError};
use crate::calibration::{self, Logits};
use crate::conformal::{self, Score};

/// One network's calibration-half true-label scores for one score at one temperature, kept
/// while its key holds: the α slider reuses them.
#[derive(Debug, Clone)]
pub(super) struct CalibrationScores {
    split_seed: u64,
    arrived: usize,
    temperature: f64,
    score: Score,
    scores: Vec<f64>,
    labels: Vec<u32>,
}

/// Why each label of the reader's image is in its set or not.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OwnImageSet {
    /// The labels in the set, in label order.
    pub labels: Vec<usize>,
    /// `s(x, y)` per label, and the threshold each is compared with.
    pub scores: Vec<f64>,
    pub thresholds: Vec<f64>,
    /// The uniform draw of a randomized score (used only when the score is randomized).
    pub uniform: f64,
}

impl Lab {
    /// The conformal set of an image whose logits under `model` are `row` (`K` values), with
    /// thresholds from `model`'s calibration half at `settings`.
    ///
    /// # Errors
    /// [`LabError::UnknownModel`], [`LabError::TemperatureOutOfRange`], [`LabError::NotReady`]
    /// before any calibration row of `model` has arrived, the calibration module's error for a
    /// row that is not `K` finite logits, and the conformal module's for a bad α or parameter.
    pub fn own_image_set(
        &mut self,
        model: usize,
        settings: &ConformalSettings,
        row: &[f32],
    ) -> Result<OwnImageSet, LabError> {
        Self::check_temperature(settings.temperature)?;
        let k = self.num_classes;
        Logits::new(row, k)?;
        let score = settings.score_of(settings.score);
        score.validate()?;
        let arrived = self.arrived(model)?;
        let fresh = self.own_image_scores[model].as_ref().is_some_and(|c| {
            (c.split_seed, c.arrived, c.temperature, c.score)
                == (self.split_seed, arrived, settings.temperature, score)
        });
        if !fresh {
            let (calibration_part, _) = self.gather(model);
            if calibration_part.labels.is_empty() {
                return Err(LabError::NotReady);
            }
            let probabilities = calibration::softmax(
                &Logits::new(&calibration_part.logits, k)?,
                settings.temperature,
            )?;
            let all =
                conformal::all_label_scores(&probabilities, k, &score, &calibration_part.uniforms)?;
            self.own_image_scores[model] = Some(CalibrationScores {
                split_seed: self.split_seed,
                arrived,
                temperature: settings.temperature,
                score,
                scores: true_label(&all, &calibration_part.labels, k),
                labels: calibration_part.labels,
            });
        }
        let cached = self.own_image_scores[model]
            .as_ref()
            .ok_or(LabError::NotReady)?;
        let thresholds = thresholds_of(
            &cached.scores,
            &cached.labels,
            k,
            settings.alpha,
            settings.class_conditional,
        )?;
        let mut probabilities = vec![0.0; k];
        calibration::softmax_row(row, settings.temperature, &mut probabilities);
        let uniform = conformal::uniforms(self.rows() + 1, self.split_seed)[self.rows()];
        let scores = conformal::all_label_scores(&probabilities, k, &score, &[uniform])?;
        let thresholds: Vec<f64> = (0..k)
            .map(|y| thresholds.for_label(y).unwrap_or(f64::INFINITY))
            .collect();
        Ok(OwnImageSet {
            labels: (0..k).filter(|&y| scores[y] <= thresholds[y]).collect(),
            scores,
            thresholds,
            uniform,
        })
    }
}
