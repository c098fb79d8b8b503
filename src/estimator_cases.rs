//! The estimators table's edge cases: the evaluation half's logits and labels replaced by data
//! on which the estimators of `calibration` and `calibration_estimators` are known to part.
//!
//! # The cases
//! Each case is built from one split's halves, once per network and split; `calibra report
//! --case` builds the same rows from the same halves, so the page's numbers and the CLI's are
//! computed on the same `f32` logits.
//!
//! * [`EstimatorCase::Network`]: the evaluation half as it is.
//! * [`EstimatorCase::ConfidenceOne`]: the fifth of the evaluation rows with the highest
//!   confidence at `T = 1` (`⌊n/5⌋` rows, at least one; ties in row order) get their top logit
//!   raised to [`CERTAIN_LEAD`] above the next one, so that their confidence is exactly `1.0`
//!   in `f64` at every temperature of the slider (`e^{−1000/20} · (K − 1) < 2^{−53}`). Libraries
//!   bin such rows differently (torchmetrics in a bin of its own after the `B` bins; calibra,
//!   netcal and MAPIE in the last bin: docs/definitions.md), and a wrong answer at confidence 1
//!   has no variance under calibration, so the tests of calibration treat it as impossible.
//! * [`EstimatorCase::EmptyBins`]: every row keeps its predicted class and its label, and its
//!   logits become `L` for that class and 0 for the others, `L` one of [`FEW_LEADS`] (1, 2, 4,
//!   8), the one whose confidence at `T = 1`, `e^L / (e^L + K − 1)`, is nearest the row's
//!   (the lower on a tie): four distinct confidences at every temperature, so most of the
//!   bins are empty.
//! * [`EstimatorCase::BaseRate`]: every row gets the logits `ln(count_k)` of the calibration
//!   half's label counts (a class it never shows gets [`ABSENT_CLASS_LOGIT`]), whose softmax at
//!   `T = 1` is the calibration half's share of each class: one answer for every image, the
//!   most frequent class (the lowest index on ties) at its base rate. Its estimators are
//!   taken at `T = 1` whatever the slider says: the shares are probabilities, not a network's
//!   logits, and dividing their logarithms by `T` would make another predictor.
//! * [`EstimatorCase::HundredImages`]: the first [`SMALL_SAMPLE`] rows of the evaluation half
//!   in test-set order (all of them if it has fewer): the noise floor of every estimator.
//!
//! # The extra bin
//! [`extra_bin_errors`] gives ECE, RMSCE and MCE with the rows at a confidence of exactly 1
//! moved out of the `B` bins into a bin of their own, as torchmetrics bins them
//! (`torch.bucketize(right = True)` on `B + 1` edges).

use serde::{Deserialize, Serialize};

use crate::calibration::{
    self, check_labels, expected_calibration_error, maximum_calibration_error, predicted_class,
    reliability_bins, root_mean_square_calibration_error, Bin, Binning, CalibrationError, Logits,
};

/// The lead of a certain row's top logit over the next one: its confidence is exactly 1.0 in
/// `f64` at every temperature up to 20.
pub const CERTAIN_LEAD: f32 = 1000.0;

/// One row in this many of the evaluation half is made certain.
pub const CERTAIN_SHARE_INVERSE: usize = 5;

/// The leads of the top logit over the others (all 0) that the empty-bins case allows.
pub const FEW_LEADS: [f32; 4] = [1.0, 2.0, 4.0, 8.0];

/// The logit of a class the calibration half never shows, in the base-rate case: a
/// probability of about `e^{−1000}`, 0 in `f64`, where `ln 0` would not be a number.
pub const ABSENT_CLASS_LOGIT: f32 = -1000.0;

/// The rows of the small-sample case.
pub const SMALL_SAMPLE: usize = 100;

/// What the estimators table is computed on (serde: the hash's values).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum EstimatorCase {
    /// The network's own logits on the evaluation half.
    #[default]
    Network,
    /// A fifth of the rows at a confidence of exactly 1.0.
    ConfidenceOne,
    /// Four distinct confidences: most bins empty.
    EmptyBins,
    /// One constant answer, the calibration half's base rates.
    BaseRate,
    /// The first 100 rows.
    HundredImages,
}

impl EstimatorCase {
    /// Every case, in the order the page offers them.
    pub const ALL: [EstimatorCase; 5] = [
        Self::Network,
        Self::ConfidenceOne,
        Self::EmptyBins,
        Self::BaseRate,
        Self::HundredImages,
    ];

    /// Whether most of the case's rows are the network's own rows unchanged, at the same
    /// indices (the confidence-one case keeps four fifths of them): its evaluation at the
    /// network's temperature is worth taking beside the network's
    /// (`calibration::evaluate_in_full_beside`).
    pub fn keeps_most_rows(self) -> bool {
        self == Self::ConfidenceOne
    }

    /// The temperature the case's estimators are taken at when the slider says `slider`:
    /// the slider's, but 1 for the base rates (probabilities, not a network's logits).
    pub fn temperature(self, slider: f64) -> f64 {
        match self {
            Self::BaseRate => 1.0,
            _ => slider,
        }
    }
}

/// A case's rows: `[n, classes]` row-major logits and their labels.
#[derive(Clone, Debug, PartialEq)]
pub struct CaseRows {
    pub logits: Vec<f32>,
    pub labels: Vec<u32>,
}

/// The rows of `case` built from one split: the calibration half's labels (for the base
/// rates) and the evaluation half's `[n, classes]` logits and labels.
///
/// # Errors
/// The calibration module's errors for ragged or non-finite logits and for labels of another
/// count or out of range.
pub fn case_rows(
    case: EstimatorCase,
    classes: usize,
    calibration_labels: &[u32],
    evaluation_logits: &[f32],
    evaluation_labels: &[u32],
) -> Result<CaseRows, CalibrationError> {
    let logits = Logits::new(evaluation_logits, classes)?;
    check_labels(&logits, evaluation_labels)?;
    let rows = evaluation_labels.len();
    let labels = evaluation_labels.to_vec();
    let built = match case {
        EstimatorCase::Network => CaseRows {
            logits: evaluation_logits.to_vec(),
            labels,
        },
        EstimatorCase::ConfidenceOne => {
            let (confidence, _) = calibration::confidences(&logits, evaluation_labels, 1.0)?;
            let mut order: Vec<usize> = (0..rows).collect();
            order.sort_by(|&a, &b| confidence[b].total_cmp(&confidence[a]));
            let mut values = evaluation_logits.to_vec();
            for &row in order.iter().take((rows / CERTAIN_SHARE_INVERSE).max(1)) {
                let row_values = &mut values[row * classes..(row + 1) * classes];
                let top = predicted_class(row_values);
                let next = row_values
                    .iter()
                    .enumerate()
                    .filter(|&(class, _)| class != top)
                    .map(|(_, &value)| value)
                    .fold(f32::NEG_INFINITY, f32::max);
                row_values[top] = next + CERTAIN_LEAD;
            }
            CaseRows {
                logits: values,
                labels,
            }
        }
        EstimatorCase::EmptyBins => {
            let (confidence, _) = calibration::confidences(&logits, evaluation_labels, 1.0)?;
            let others = (classes - 1) as f64;
            let levels = FEW_LEADS.map(|lead| {
                let e = f64::from(lead).exp();
                e / (e + others)
            });
            let mut values = vec![0.0; evaluation_logits.len()];
            for (index, (row, &c)) in logits.rows().zip(&confidence).enumerate() {
                let nearest = (0..FEW_LEADS.len()).fold(0, |best, level| {
                    if (levels[level] - c).abs() < (levels[best] - c).abs() {
                        level
                    } else {
                        best
                    }
                });
                values[index * classes + predicted_class(row)] = FEW_LEADS[nearest];
            }
            CaseRows {
                logits: values,
                labels,
            }
        }
        EstimatorCase::BaseRate => {
            let mut counts = vec![0usize; classes];
            for &label in calibration_labels {
                if let Some(count) = counts.get_mut(label as usize) {
                    *count += 1;
                }
            }
            let row: Vec<f32> = counts
                .iter()
                .map(|&count| {
                    if count == 0 {
                        ABSENT_CLASS_LOGIT
                    } else {
                        (count as f32).ln()
                    }
                })
                .collect();
            CaseRows {
                logits: row.repeat(rows),
                labels,
            }
        }
        EstimatorCase::HundredImages => {
            let kept = rows.min(SMALL_SAMPLE);
            CaseRows {
                logits: evaluation_logits[..kept * classes].to_vec(),
                labels: labels[..kept].to_vec(),
            }
        }
    };
    Ok(built)
}

/// ECE, RMSCE and MCE of one binning.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BinnedErrors {
    pub ece: f64,
    pub rmsce: f64,
    pub mce: f64,
}

impl BinnedErrors {
    /// The three errors of `bins`.
    pub fn of(bins: &[Bin]) -> Self {
        Self {
            ece: expected_calibration_error(bins),
            rmsce: root_mean_square_calibration_error(bins),
            mce: maximum_calibration_error(bins),
        }
    }
}

/// The rows at a confidence of exactly 1 and the binned errors with them in a bin of their
/// own (torchmetrics' rule); `None` when no row is at 1.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ExtraBin {
    /// Rows whose confidence is exactly 1.
    pub certain: usize,
    /// How many of them are wrong.
    pub certain_wrong: usize,
    /// ECE, RMSCE and MCE with those rows in an extra bin after the `B` bins.
    pub errors: BinnedErrors,
}

/// The binned errors with the rows at a confidence of exactly 1 in a bin of their own after
/// the `num_bins` bins of kind `binning` that hold the others; `None` when no row is at 1.
///
/// # Errors
/// The errors of [`reliability_bins`].
pub fn extra_bin_errors(
    confidence: &[f64],
    correct: &[bool],
    num_bins: usize,
    binning: Binning,
) -> Result<Option<ExtraBin>, CalibrationError> {
    calibration::check_confidences(confidence, correct)?;
    let (mut below, mut below_correct) = (Vec::new(), Vec::new());
    let (mut certain, mut certain_wrong) = (0, 0);
    for (&c, &y) in confidence.iter().zip(correct) {
        if c == 1.0 {
            certain += 1;
            certain_wrong += usize::from(!y);
        } else {
            below.push(c);
            below_correct.push(y);
        }
    }
    if certain == 0 {
        return Ok(None);
    }
    let mut bins = if below.is_empty() {
        Vec::new()
    } else {
        reliability_bins(&below, &below_correct, num_bins, binning)?
    };
    bins.push(Bin {
        lower: 1.0,
        upper: 1.0,
        count: certain,
        confidence: 1.0,
        accuracy: (certain - certain_wrong) as f64 / certain as f64,
    });
    Ok(Some(ExtraBin {
        certain,
        certain_wrong,
        errors: BinnedErrors::of(&bins),
    }))
}

/// Confidences closer than this are one: the softmax of the same logits in another order of
/// classes sums its terms in another order, and may differ in its last bits.
pub const SAME_CONFIDENCE: f64 = 1e-12;

/// How many distinct confidences `confidence` holds (within [`SAME_CONFIDENCE`] of each other
/// counting as one), and how many of `bins` are empty.
pub fn distinct_and_empty(confidence: &[f64], bins: &[Bin]) -> (usize, usize) {
    let mut sorted = confidence.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.dedup_by(|next, kept| *next - *kept <= SAME_CONFIDENCE);
    (
        sorted.len(),
        bins.iter().filter(|bin| bin.count == 0).count(),
    )
}

#[cfg(test)]
#[path = "estimator_cases_tests.rs"]
mod tests;
