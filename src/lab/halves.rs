//! One network's two halves of one split, as the page's worker holds them: what it needs to
//! compute, off the page's frame, the bootstrap intervals (`intervals.rs`) and the rivals
//! (`rivals.rs`) the page asks for. The page sends them once every row has arrived
//! ([`Lab::complete_halves`]).

use super::rivals::RivalFits;
use super::{Lab, LabError, Part};
use crate::calibration::{self, Logits};
use crate::recalibration::Labelled;

/// The calibration and evaluation halves' logits and labels, and the rivals last fitted on
/// them.
#[derive(Debug, Clone)]
pub struct Halves {
    pub(super) classes: usize,
    pub(super) calibration_logits: Vec<f32>,
    pub(super) calibration_labels: Vec<u32>,
    pub(super) evaluation_logits: Vec<f32>,
    pub(super) evaluation_labels: Vec<u32>,
    pub(super) rival_fits: Option<RivalFits>,
}

impl Halves {
    /// The halves: `[n, classes]` row-major logits and their labels, each.
    ///
    /// # Errors
    /// The calibration module's errors for ragged or non-finite logits, labels of another
    /// count or out of range, and [`LabError::TooSmall`] for an empty half.
    pub fn new(
        classes: usize,
        (calibration_logits, calibration_labels): (Vec<f32>, Vec<u32>),
        (evaluation_logits, evaluation_labels): (Vec<f32>, Vec<u32>),
    ) -> Result<Self, LabError> {
        for (logits, labels) in [
            (&calibration_logits, &calibration_labels),
            (&evaluation_logits, &evaluation_labels),
        ] {
            if labels.is_empty() {
                return Err(LabError::TooSmall);
            }
            calibration::check_labels(&Logits::new(logits, classes)?, labels)?;
        }
        Ok(Self {
            classes,
            calibration_logits,
            calibration_labels,
            evaluation_logits,
            evaluation_labels,
            rival_fits: None,
        })
    }

    /// The calibration and the evaluation half as the fitters take them.
    ///
    /// # Errors
    /// None for halves [`Halves::new`] checked; the calibration module's errors otherwise.
    pub(super) fn labelled(&self) -> Result<(Labelled<'_>, Labelled<'_>), LabError> {
        labelled(
            self.classes,
            (&self.calibration_logits, &self.calibration_labels),
            (&self.evaluation_logits, &self.evaluation_labels),
        )
    }
}

/// Two halves, each `[n, classes]` logits with their labels, as the fitters take them.
///
/// # Errors
/// The calibration module's errors for ragged or non-finite logits and bad labels.
pub(super) fn labelled<'a>(
    classes: usize,
    (calibration_logits, calibration_labels): (&'a [f32], &'a [u32]),
    (evaluation_logits, evaluation_labels): (&'a [f32], &'a [u32]),
) -> Result<(Labelled<'a>, Labelled<'a>), LabError> {
    Ok((
        Labelled::new(
            Logits::new(calibration_logits, classes)?,
            calibration_labels,
        )?,
        Labelled::new(Logits::new(evaluation_logits, classes)?, evaluation_labels)?,
    ))
}

impl Lab {
    /// The calibration and evaluation halves of the shown network, once all its rows have
    /// arrived: what a worker needs to answer interval and rivals requests.
    ///
    /// # Errors
    /// [`LabError::NotReady`] before every row has arrived.
    pub fn complete_halves(&mut self) -> Result<(&Part, &Part), LabError> {
        if !self.model(self.active)?.is_complete() {
            return Err(LabError::NotReady);
        }
        let cache = self.prepared()?;
        Ok((&cache.calibration, &cache.evaluation))
    }

    /// The calibration and evaluation halves of any network `model` (not only the shown one),
    /// once all its rows have arrived: what a worker needs to answer a
    /// [`super::NormalizedRequest`] for it.
    ///
    /// # Errors
    /// [`LabError::UnknownModel`], and [`LabError::NotReady`] before every row has arrived.
    pub fn network_halves(&self, model: usize) -> Result<(Part, Part), LabError> {
        if !self.model(model)?.is_complete() {
            return Err(LabError::NotReady);
        }
        Ok(self.gather(model))
    }

    /// A copy of [`Lab::complete_halves`] as a worker holds them, for answering requests in
    /// the same process (the command line's figures, the tests).
    ///
    /// # Errors
    /// [`LabError::NotReady`] before every row has arrived.
    pub fn worker_halves(&mut self) -> Result<Halves, LabError> {
        let classes = self.num_classes;
        let (calibration, evaluation) = self.complete_halves()?;
        Ok(Halves {
            classes,
            calibration_logits: calibration.logits.clone(),
            calibration_labels: calibration.labels.clone(),
            evaluation_logits: evaluation.logits.clone(),
            evaluation_labels: evaluation.labels.clone(),
            rival_fits: None,
        })
    }
}
