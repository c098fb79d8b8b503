//! The Venn–Abers interval of each gallery image: the inductive Venn–Abers predictor
//! (`crate::recalibration::venn_abers`) fitted on the calibration half's top-label confidences
//! `max_k softmax(z/T)_k` at the lab's T, read at the image's own confidence at that T.
//!
//! `p0` and `p1` are the isotonic fits at that confidence with the image added as wrong and as
//! right: their distance is how far one more image moves the fit there, small where the
//! calibration half has many images near that confidence and large where it has few. A
//! calibration image gets none: it is one of the rows the predictor is fitted on. The fit is
//! kept for the temperature it was made at (the gallery redraws as α or the filter moves).
//! Definitions: docs/definitions.md.

use serde::Serialize;

use super::{GalleryItem, Lab, LabError};
use crate::calibration::{confidences, Logits};
use crate::recalibration::venn_abers::{fit_venn_abers, VennAbers};
use crate::sentences;

/// One image's Venn–Abers interval, with its text.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GalleryInterval {
    pub p0: f64,
    pub p1: f64,
    /// As the card shows it: "Venn–Abers: 0.91–0.97".
    pub text: String,
    /// As a screen reader says it: "Venn–Abers interval 0.91 to 0.97".
    pub spoken: String,
}

/// The Venn–Abers predictor of the calibration half at one temperature.
#[derive(Debug, Clone)]
pub(super) struct KeptVennAbers {
    temperature: f64,
    fit: VennAbers,
}

impl Lab {
    /// The gallery's items of the evaluation half, each paired with its index in the half,
    /// given their Venn–Abers intervals at `temperature`.
    ///
    /// # Errors
    /// [`LabError::NotReady`] before both halves have rows, and the calibration module's
    /// errors for confidences it cannot take.
    pub(super) fn with_venn_abers(
        &mut self,
        temperature: f64,
        items: Vec<(usize, GalleryItem)>,
    ) -> Result<Vec<GalleryItem>, LabError> {
        let k = self.num_classes;
        let cache = self.prepared()?;
        let fit = match &mut cache.venn_abers {
            Some(kept) if kept.temperature == temperature => &kept.fit,
            kept => {
                let calibration = &cache.calibration;
                let (confidence, correct) = confidences(
                    &Logits::new(&calibration.logits, k)?,
                    &calibration.labels,
                    temperature,
                )?;
                &kept
                    .insert(KeptVennAbers {
                        temperature,
                        fit: fit_venn_abers(&confidence, &correct)?,
                    })
                    .fit
            }
        };
        let evaluation = &cache.evaluation;
        items
            .into_iter()
            .map(|(index, mut item)| {
                let (confidence, _) = confidences(
                    &Logits::new(&evaluation.logits[index * k..(index + 1) * k], k)?,
                    &evaluation.labels[index..=index],
                    temperature,
                )?;
                let interval = fit.interval(confidence[0]);
                let (text, spoken) = sentences::venn_abers_interval_text(interval.p0, interval.p1);
                item.venn_abers = Some(GalleryInterval {
                    p0: interval.p0,
                    p1: interval.p1,
                    text,
                    spoken,
                });
                Ok(item)
            })
            .collect()
    }
}
