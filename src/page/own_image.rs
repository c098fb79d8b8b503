//! The "your own image" section: a reader's picture as the networks see it (28×28, prepared by
//! [`crate::own_image::prepare`]), what every network on the page says of it, and the test
//! images closest to it.
//!
//! A network is on the page once its logits on all the test images have arrived: its
//! calibration half gives the conformal set's thresholds, and all its test images the OOD
//! threshold. For each, at the page's T (the temperature lab's slider, which the conformal and
//! τ labs use too) and at T = 1: the probabilities, the conformal set at the conformal lab's α
//! and score ([`Lab::own_image_set`]), and the τ lab's OOD score (energy in its place when that
//! is ODIN, which needs a backward pass per image) against the threshold that keeps 95% of the
//! test images, the τ lab's FPR95 threshold (`ood_view::threshold_at_95_tpr`).

use serde::Serialize;

use super::readouts::{score_name, BarRow, MetricItem, Patch, TableCell, TableRow};
use super::state::{PageState, MODELS};
use crate::calibration::{self, predicted_class, Logits};
use crate::data::{self, FASHION_MNIST_CLASSES};
use crate::lab::ood_view::{self, ScoreKind as OodScore};
use crate::lab::{Lab, LabError};
use crate::ood;
use crate::ood_pvalues;
use crate::own_image::{self, Invert, Neighbour, OwnImageError, Prepared};
use crate::sentences::{self, confidence_text, percent, score_against_threshold};
use crate::text::serde_name;

/// A reader's image and what the networks have answered so far.
#[derive(Debug, Clone)]
pub struct OwnImage {
    prepared: Prepared,
    neighbours: Vec<Neighbour>,
    /// Each model's logits on the image, `K` values, once computed.
    logits: Vec<Option<Vec<f32>>>,
}

/// Why the section refused an input.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum OwnImageViewError {
    #[error(transparent)]
    Image(#[from] OwnImageError),
    #[error(transparent)]
    Lab(#[from] LabError),
    #[error("unknown model index {0}")]
    UnknownModel(usize),
    #[error("the logits of one image must be {expected} finite numbers, got {found}")]
    BadLogits { expected: usize, found: usize },
    #[error(transparent)]
    Ood(#[from] ood::OodError),
}

/// The OOD levels computed so far: `(model, score, T, split)` → threshold and sorted
/// calibration scores. They depend on the test images only, so a new picture reuses them.
#[derive(Debug, Clone, Default)]
pub struct OodThresholds(Vec<((usize, OodScore, u64, u64), OodLevel)>);

/// What a picture's OOD score is measured against.
#[derive(Debug, Clone)]
struct OodLevel {
    /// The score that keeps 95% of the test images.
    threshold: f64,
    /// The calibration half's scores, increasing: the picture's conformal p-value counts them
    /// (`ood_pvalues`), as `calibra ood --pvalues --seed <split>` does for an OOD row.
    calibration: Vec<f64>,
}

/// One test image close to the reader's, for the section's strip of thumbnails.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NeighbourItem {
    pub row: usize,
    /// "Sneaker · distance 812".
    pub caption: String,
}

/// What the section puts on the page besides its patches.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OwnImageReadouts {
    /// Models whose logits on the reader's image the page should compute.
    pub needs: Vec<usize>,
    pub neighbours: Vec<NeighbourItem>,
}

impl OwnImage {
    /// A prepared picture, with its [`own_image::NEIGHBOURS`] closest images among
    /// `test_pixels` (`[n, 28, 28]`), for `models` networks.
    ///
    /// # Errors
    /// [`OwnImageError::RaggedImages`] for pixels that are not whole images.
    pub fn new(
        prepared: Prepared,
        test_pixels: &[u8],
        models: usize,
    ) -> Result<Self, OwnImageError> {
        let neighbours =
            own_image::nearest_images(test_pixels, &prepared.pixels, own_image::NEIGHBOURS)?;
        Ok(Self {
            prepared,
            neighbours,
            logits: vec![None; models],
        })
    }

    /// The 28×28 the networks read.
    pub fn pixels(&self) -> &[u8] {
        &self.prepared.pixels
    }

    /// The 28×28 as an IDX images file of one image, for `calibra logits`.
    pub fn idx_file(&self) -> Vec<u8> {
        data::idx_images_file(&self.prepared.pixels)
    }

    /// Keeps `model`'s logits on the image.
    ///
    /// # Errors
    /// [`OwnImageViewError::UnknownModel`], [`OwnImageViewError::BadLogits`] unless `logits`
    /// are `K` finite numbers.
    pub fn add_logits(&mut self, model: usize, logits: &[f32]) -> Result<(), OwnImageViewError> {
        let expected = FASHION_MNIST_CLASSES.len();
        let slot = self
            .logits
            .get_mut(model)
            .ok_or(OwnImageViewError::UnknownModel(model))?;
        if logits.len() != expected || !logits.iter().all(|z| z.is_finite()) {
            return Err(OwnImageViewError::BadLogits {
                expected,
                found: logits.len(),
            });
        }
        *slot = Some(logits.to_vec());
        Ok(())
    }
}

impl OodThresholds {
    /// The threshold that keeps 95% of `model`'s test images by `score` at `temperature`, and
    /// the scores of the calibration half (`lab`'s split) sorted.
    fn get(
        &mut self,
        model: usize,
        score: OodScore,
        temperature: f64,
        lab: &Lab,
    ) -> Result<&OodLevel, OwnImageViewError> {
        let key = (model, score, temperature.to_bits(), lab.split_seed());
        let found = self.0.iter().position(|(k, _)| *k == key);
        let index = match found {
            Some(index) => index,
            None => {
                let k = FASHION_MNIST_CLASSES.len();
                let test_logits = Logits::new(lab.complete_logits(model)?.unwrap_or_default(), k)
                    .map_err(LabError::from)?;
                let test_scores = scores(score, &test_logits, temperature)?;
                let mut calibration: Vec<f64> = test_scores
                    .iter()
                    .zip(lab.calibration_flags())
                    .filter_map(|(&s, &flag)| flag.then_some(s))
                    .collect();
                calibration.sort_by(f64::total_cmp);
                let level = OodLevel {
                    threshold: ood_view::threshold_at_95_tpr(&test_scores)?,
                    calibration,
                };
                // Levels at other temperatures or splits go stale as the sliders move.
                self.0
                    .retain(|((_, _, t, split), _)| (*t, *split) == (key.2, key.3));
                self.0.push((key, level));
                self.0.len() - 1
            }
        };
        Ok(&self.0[index].1)
    }
}

/// `score` of every row of `logits` at `temperature` (energy for ODIN and the feature scores).
fn scores(score: OodScore, logits: &Logits, temperature: f64) -> Result<Vec<f64>, ood::OodError> {
    match score {
        OodScore::Msp => ood::max_softmax_probability(logits, temperature),
        OodScore::MaxLogit => Ok(ood::max_logit(logits)),
        _ => ood::energy_score(logits, temperature),
    }
}

/// The models on the page, the temperature lab's first, then the others in the lab's order.
fn models_on_page(lab: &Lab, state: &PageState) -> Result<Vec<usize>, LabError> {
    let chosen = state.model.index();
    let mut models = vec![chosen];
    // One network per τ: the other seeds are only the τ lab's spread.
    models.extend((0..MODELS.len()).filter(|&m| m != chosen && MODELS[m].seed == 0));
    let mut complete = Vec::new();
    for model in models {
        if lab.complete_logits(model)?.is_some() {
            complete.push(model);
        }
    }
    Ok(complete)
}

/// The section without a picture: its answers hidden (a Clear, an undo of the last stroke or a
/// refused picture leaves nothing to answer about).
pub fn without_picture() -> Vec<Patch> {
    vec![Patch::Hidden {
        id: "own-results",
        hidden: true,
    }]
}

/// The section's patches and readouts for `image` in `state`: the networks table, the lab
/// network's probabilities, and the sentence, once that network's logits on the image are in.
/// `digits` are the lab network's logits on the MNIST digits (`[n, K]`), once the LogitNorm lab
/// has them: the sentence then says how many digits pass the same level, how often a pass is
/// wrong about an image of another kind.
///
/// # Errors
/// [`OwnImageViewError`] from the lab, the OOD scores or the conformal sets.
pub fn render(
    lab: &mut Lab,
    thresholds: &mut OodThresholds,
    state: &PageState,
    image: &OwnImage,
    digits: Option<&[f32]>,
) -> Result<(Vec<Patch>, OwnImageReadouts), OwnImageViewError> {
    let k = FASHION_MNIST_CLASSES.len();
    let t = state.t;
    let models = models_on_page(lab, state)?;
    let readouts = OwnImageReadouts {
        needs: models
            .iter()
            .copied()
            .filter(|&m| image.logits[m].is_none())
            .collect(),
        neighbours: image
            .neighbours
            .iter()
            .map(|n| NeighbourItem {
                row: n.index,
                caption: format!(
                    "{} · distance {:.0}",
                    lab.label(n.index)
                        .and_then(|l| FASHION_MNIST_CLASSES.get(l as usize))
                        .unwrap_or(&"?"),
                    n.distance
                ),
            })
            .collect(),
    };
    // ODIN and the feature detectors are not computed for a reader's picture: energy stands in.
    let ood_score = if state.ood_score.reads_logits_only() {
        state.ood_score
    } else {
        OodScore::Energy
    };
    let settings = state.conformal_settings();
    let mut rows = Vec::new();
    let mut patches = vec![
        Patch::Hidden {
            id: "own-results",
            hidden: false,
        },
        Patch::Metric {
            id: Some("own-inverted"),
            metric: "own_inverted".to_string(),
            value: Some(f64::from(u8::from(image.prepared.inverted))),
            text: match (image.prepared.choice, image.prepared.inverted) {
                (Invert::Auto, true) => "negated, since its border is light",
                (Invert::Auto, false) => "kept as it is, since its border is dark",
                (_, true) => "negated, as chosen",
                (_, false) => "kept as it is, as chosen",
            }
            .to_string(),
            title: None,
        },
        Patch::Text {
            id: "own-bars-t-header",
            text: format!("p at T = {t:.3}"),
        },
        Patch::Text {
            id: "own-probabilities-caption",
            text: format!(
                "What the {} network (the first lab's) gives each class for your image",
                MODELS[state.model.index()].title
            ),
        },
        Patch::Text {
            id: "own-score-header",
            text: match state.ood_score {
                OodScore::Odin => format!(
                    "{} (ODIN needs a backward pass)",
                    score_name_of(ood_score, t)
                ),
                kind if !kind.reads_logits_only() => format!(
                    "{} ({} reads features not kept for your picture)",
                    score_name_of(ood_score, t),
                    super::ood_score_name(kind)
                ),
                _ => score_name_of(ood_score, t),
            },
        },
        Patch::Text {
            id: "own-t-header",
            text: format!("p at T = {t:.3}"),
        },
        Patch::Text {
            id: "own-set-header",
            text: format!(
                "{} set ({}, α = {})",
                percent(1.0 - settings.alpha, 0),
                score_name(settings.score),
                settings.alpha
            ),
        },
    ];
    let mut sentence = None;
    let mut bars = None;
    for &model in &models {
        let Some(row) = image.logits[model].as_deref() else {
            continue;
        };
        let info = &MODELS[model];
        let key = serde_name(info.network);
        let (mut raw, mut scaled) = (vec![0.0; k], vec![0.0; k]);
        calibration::softmax_row(row, 1.0, &mut raw);
        calibration::softmax_row(row, t, &mut scaled);
        let top = predicted_class(&raw);
        let set = lab.own_image_set(model, &settings, row)?;
        let level = thresholds.get(model, ood_score, t, lab)?;
        let threshold = level.threshold;
        let own_score = scores(ood_score, &Logits::new(row, k).map_err(LabError::from)?, t)?[0];
        let pvalue = ood_pvalues::pvalue_among_sorted(&level.calibration, own_score);
        let calibration_images = level.calibration.len();
        let in_distribution = own_score >= threshold;
        let (score_text, threshold_text) = score_against_threshold(own_score, threshold);
        let set_names: Vec<&str> = set
            .labels
            .iter()
            .map(|&y| FASHION_MNIST_CLASSES[y])
            .collect();
        let set_text = if set_names.is_empty() {
            "∅ (empty)".to_string()
        } else {
            format!("{{{}}}", set_names.join(", "))
        };
        let metric = |name: &str, value: f64, text: String| TableCell {
            text,
            metric: Some(format!("own_{name}_{key}")),
            value: Some(value),
        };
        let verdict = if in_distribution {
            "passes as Fashion-MNIST"
        } else {
            "flagged as OOD"
        };
        rows.push(TableRow {
            current: model == state.model.index(),
            cells: vec![
                TableCell {
                    text: info.title.to_string(),
                    metric: None,
                    value: None,
                },
                metric("top", top as f64, FASHION_MNIST_CLASSES[top].to_string()),
                metric("p_raw", raw[top], confidence_text(raw[top])),
                metric("p_t", scaled[top], confidence_text(scaled[top])),
                metric("set", set.labels.len() as f64, set_text.clone()),
                metric("ood_score", own_score, score_text.clone()),
                metric("ood_threshold", threshold, threshold_text.clone()),
                metric(
                    "ood_in",
                    f64::from(u8::from(in_distribution)),
                    verdict.to_string(),
                ),
                metric("ood_pvalue", pvalue, format!("{pvalue:.4}")),
            ],
        });
        if model == state.model.index() {
            let digits_passing = match digits {
                Some(digits) => {
                    let digit_scores = scores(
                        ood_score,
                        &Logits::new(digits, k).map_err(LabError::from)?,
                        t,
                    )?;
                    let passing = digit_scores.iter().filter(|&&s| s >= threshold).count();
                    format!(
                        " Not every pass is proof: at this level, {} of the MNIST digits pass \
                         for Fashion-MNIST too (this network, this score).",
                        percent(passing as f64 / digit_scores.len() as f64, 1)
                    )
                }
                None => " How many MNIST digits pass the same level, the LogitNorm lab measures \
                         once it has run."
                    .to_string(),
            };
            sentence = Some(format!(
                "The {} network takes your image for a {} ({} at T = 1, {} at T = {t:.3}). Its {} set is {}: \
                 a promise about random test images (that share of their sets holds the label), not about \
                 this one picture. By its {} score it {}: {} is {} {}, the level that 95% of the test \
                 images reach. {}{digits_passing} A drawing is itself a shift from the \
                 photographed garments, so being flagged may only mean being drawn.",
                info.title,
                FASHION_MNIST_CLASSES[top],
                confidence_text(raw[top]),
                confidence_text(scaled[top]),
                percent(1.0 - settings.alpha, 0),
                set_text,
                score_name_of(ood_score, t),
                if in_distribution {
                    "passes for a Fashion-MNIST image"
                } else {
                    "is flagged as out-of-distribution"
                },
                score_text,
                if in_distribution { "at or above" } else { "below" },
                threshold_text,
                sentences::own_image_pvalue(pvalue, calibration_images),
            ));
            bars = Some((raw, scaled));
        }
    }
    patches.push(Patch::Rows {
        id: "own-networks",
        rows,
    });
    patches.push(Patch::Text {
        id: "own-sentence",
        text: sentence.unwrap_or_else(|| {
            if models.contains(&state.model.index()) {
                "Waiting for the first lab's network to classify your image…"
            } else {
                "Waiting for the first lab's network to classify the test images…"
            }
            .to_string()
        }),
    });
    if let Some((raw, scaled)) = bars {
        patches.push(Patch::Bars {
            id: "own-probabilities",
            rows: FASHION_MNIST_CLASSES
                .iter()
                .enumerate()
                .map(|(class, name)| BarRow {
                    label: (*name).to_string(),
                    bars: vec![
                        MetricItem {
                            metric: format!("own_probability_raw_{class}"),
                            value: Some(raw[class]),
                            text: percent(raw[class], 1),
                        },
                        MetricItem {
                            metric: format!("own_probability_t_{class}"),
                            value: Some(scaled[class]),
                            text: percent(scaled[class], 1),
                        },
                    ],
                })
                .collect(),
        });
    }
    Ok((patches, readouts))
}

/// "energy at T = 1.759", "max-logit".
fn score_name_of(score: OodScore, temperature: f64) -> String {
    match score {
        OodScore::MaxLogit => super::ood_score_name(score).to_string(),
        _ => format!("{} at T = {temperature:.3}", super::ood_score_name(score)),
    }
}

#[cfg(test)]
#[path = "own_image_tests.rs"]
mod tests;
