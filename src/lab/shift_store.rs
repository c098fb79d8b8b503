//! The shift lab's data: each network's logits on corrupted copies of the test images, one
//! copy per corruption and severity ([`ShiftedSet`]), as inference streams them in.
//!
//! A copy holds every test image, corrupted by [`crate::shift::corrupt`] with [`SHIFT_SEED`],
//! so that the page's split cuts it into the same calibration and evaluation halves as the
//! clean images: the evaluation half is where every metric is measured, the calibration half
//! is where "recalibrate on shifted data" fits T and q̂ again.

use std::collections::HashMap;

use std::rc::Rc;

use super::adaptive_view::{ScoredStream, ScoresKey, StreamKey};
use super::shift_view::ViewKey;
use super::weighted_view::{DomainKey, DomainWeights, WeightedKey};
use super::{AdaptiveView, LabError, ShiftView, Streamed, WeightedView};
use crate::calibration::Logits;
use crate::shift::{Corruption, ShiftError};

/// The seed of every corrupted copy's random draws (rotation signs, noise, directions).
pub const SHIFT_SEED: u64 = 2019;

/// A corrupted copy of the test images: a corruption at a severity from 1 to its maximum.
/// Its name, `shift-<corruption>-<severity>` (`shift-rotation-3`), is how the page's script and
/// its workers address it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShiftedSet {
    pub corruption: Corruption,
    pub severity: u8,
}

/// A name that is not a corrupted copy's.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("\"{0}\" is not a corrupted copy of the test images (shift-<corruption>-<severity>)")]
pub struct UnknownShiftedSet(pub String);

impl ShiftedSet {
    /// The copy of `corruption` at `severity`.
    ///
    /// # Errors
    /// [`ShiftError`] for severity 0 (the clean images are not a copy) or above the maximum.
    pub fn new(corruption: Corruption, severity: u8) -> Result<Self, ShiftError> {
        if severity == 0 || severity > corruption.max_severity() {
            return Err(ShiftError::SeverityOutOfRange {
                corruption,
                severity,
                max: corruption.max_severity(),
            });
        }
        Ok(Self {
            corruption,
            severity,
        })
    }

    /// `shift-<corruption>-<severity>`.
    pub fn name(self) -> String {
        format!(
            "shift-{}-{}",
            crate::text::serde_name(self.corruption),
            self.severity
        )
    }

    /// The copy a name written by [`ShiftedSet::name`] addresses.
    ///
    /// # Errors
    /// [`UnknownShiftedSet`] for any other text.
    pub fn parse(name: &str) -> Result<Self, UnknownShiftedSet> {
        let unknown = || UnknownShiftedSet(name.to_string());
        let rest = name.strip_prefix("shift-").ok_or_else(unknown)?;
        let (corruption, severity) = rest.rsplit_once('-').ok_or_else(unknown)?;
        let corruption = Corruption::ALL
            .into_iter()
            .find(|c| crate::text::serde_name(*c) == corruption)
            .ok_or_else(unknown)?;
        let severity: u8 = severity.parse().map_err(|_| unknown())?;
        Self::new(corruption, severity).map_err(|_| unknown())
    }

    /// The corrupted pixels of `test_pixels` (`[n, 28, 28]`).
    ///
    /// # Errors
    /// [`ShiftError`] for pixels that are not whole images.
    pub fn pixels(self, test_pixels: &[u8]) -> Result<Vec<u8>, ShiftError> {
        self.pixels_from(test_pixels, 0)
    }

    /// The corrupted pixels of test images `first_row..`, given as `pixels`: the copy made a
    /// part at a time.
    ///
    /// # Errors
    /// [`ShiftError`] for pixels that are not whole images.
    pub fn pixels_from(self, pixels: &[u8], first_row: usize) -> Result<Vec<u8>, ShiftError> {
        crate::shift::corrupt_from(
            pixels,
            first_row,
            self.corruption,
            self.severity,
            SHIFT_SEED,
        )
    }

    /// Test images `rows` of `test_pixels`, as they are in the corrupted copy.
    ///
    /// # Errors
    /// [`ShiftError`] for pixels that are not whole images or a row past the last.
    pub fn rows_pixels(self, test_pixels: &[u8], rows: &[usize]) -> Result<Vec<u8>, ShiftError> {
        crate::shift::corrupt_rows(
            test_pixels,
            rows,
            self.corruption,
            self.severity,
            SHIFT_SEED,
        )
    }
}

/// The last value a lab computed and what it computed it from: a frame shows it again while
/// its inputs stay, and a new key replaces it.
#[derive(Debug, Clone)]
pub(super) struct LastComputed<K, V>(Option<(K, V)>);

impl<K, V> Default for LastComputed<K, V> {
    fn default() -> Self {
        Self(None)
    }
}

impl<K: PartialEq, V> LastComputed<K, V> {
    /// The value computed from `key`, if it is the one kept.
    pub(super) fn get(&self, key: &K) -> Option<&V> {
        self.0
            .as_ref()
            .filter(|(kept, _)| kept == key)
            .map(|(_, value)| value)
    }

    /// Keeps the value computed from `key`, in place of the one kept before.
    pub(super) fn keep(&mut self, key: K, value: V) {
        self.0 = Some((key, value));
    }
}

/// Each network's logits on each corrupted copy it was asked for.
#[derive(Debug, Clone)]
pub struct ShiftStore {
    num_classes: usize,
    models: usize,
    rows: usize,
    logits: HashMap<(usize, ShiftedSet), Streamed<f32>>,
    /// The T fitted on each complete copy's calibration half, by network, copy and split seed:
    /// the lab's frames measure every severity again, and the fit is most of their cost.
    fits: HashMap<(usize, ShiftedSet, u64), f64>,
    /// The last shift view and what it was computed from: a frame shows it again until the
    /// network, the split, the corruption, the severity shown, the conformal lab's settings,
    /// the bins or the severities in change (γ moves none of them).
    pub(super) view: LastComputed<ViewKey, ShiftView>,
    /// The last ACI stream scored and what it was scored from: γ and α replay it.
    pub(super) scored_stream: LastComputed<ScoresKey, Rc<ScoredStream>>,
    /// The last ACI stream replayed and what it was computed from: a frame shows it again
    /// until γ, the score, α, the split or the severities in change.
    pub(super) adaptive: LastComputed<StreamKey, AdaptiveView>,
    /// The domain classifier's weights, by network, split, corruption and severity: fitted
    /// once each, whatever the score, α or T.
    domain_weights: HashMap<DomainKey, Rc<DomainWeights>>,
    /// The last weighted conformal sets and what they were computed from.
    pub(super) weighted: LastComputed<WeightedKey, WeightedView>,
}

impl ShiftStore {
    /// Room for `models` networks of `num_classes` on copies of `rows` test images.
    pub fn new(num_classes: usize, models: usize, rows: usize) -> Self {
        Self {
            num_classes,
            models,
            rows,
            logits: HashMap::new(),
            fits: HashMap::new(),
            view: LastComputed::default(),
            scored_stream: LastComputed::default(),
            adaptive: LastComputed::default(),
            domain_weights: HashMap::new(),
            weighted: LastComputed::default(),
        }
    }

    /// Stores a batch of `model`'s logits on `set`, rows `start..`; returns the rows of that
    /// copy that have arrived.
    ///
    /// # Errors
    /// [`LabError::UnknownModel`], [`LabError::BatchOutOfRange`], and the non-finite-logit
    /// error of [`Logits::new`].
    pub fn add_logits(
        &mut self,
        model: usize,
        set: ShiftedSet,
        start: usize,
        logits: &[f32],
    ) -> Result<usize, LabError> {
        if model >= self.models {
            return Err(LabError::UnknownModel {
                index: model,
                count: self.models,
            });
        }
        let (rows, width) = (self.rows, self.num_classes);
        let streamed = self
            .logits
            .entry((model, set))
            .or_insert_with(|| Streamed::new(rows, width));
        streamed.check_batch(start, logits.len())?;
        Logits::new(logits, width)?;
        streamed.add(start, logits)?;
        Ok(streamed.arrived())
    }

    /// `model`'s logits on `set` once every row has arrived (`[rows, K]`).
    pub fn complete_logits(&self, model: usize, set: ShiftedSet) -> Option<&[f32]> {
        self.logits
            .get(&(model, set))
            .filter(|logits| logits.is_complete())
            .map(Streamed::values)
    }

    /// The T fitted on the calibration half of split `split` of `model`'s complete logits on
    /// `set`, once [`ShiftStore::keep_fit`] kept it.
    pub fn fitted(&self, model: usize, set: ShiftedSet, split: u64) -> Option<f64> {
        self.fits.get(&(model, set, split)).copied()
    }

    /// Keeps the T fitted on the calibration half of split `split` of `model`'s complete logits
    /// on `set`.
    pub fn keep_fit(&mut self, model: usize, set: ShiftedSet, split: u64, temperature: f64) {
        self.fits.insert((model, set, split), temperature);
    }

    /// Rows of `model`'s logits on `set` that have arrived.
    pub fn arrived(&self, model: usize, set: ShiftedSet) -> usize {
        self.logits.get(&(model, set)).map_or(0, Streamed::arrived)
    }

    /// The domain classifier's weights fitted on `key`, if kept.
    pub(super) fn domain_weights(&self, key: &DomainKey) -> Option<Rc<DomainWeights>> {
        self.domain_weights.get(key).cloned()
    }

    /// Keeps the domain classifier's weights fitted on `key`.
    pub(super) fn keep_domain_weights(&mut self, key: DomainKey, weights: Rc<DomainWeights>) {
        self.domain_weights.insert(key, weights);
    }
}
