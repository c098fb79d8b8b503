//! The page's state: one typed value whose field names are the URL hash's keys, with every
//! default and every range defined here and nowhere else.
//!
//! The page's facade (`web::Page`) holds the state [`PageState::from_hash`] reads from a link;
//! a control's move goes through [`PageState::set_control`], which validates it and maps a
//! slider position to its value, and [`PageState::to_hash`] writes the link back. So a view is
//! a shareable link, and JavaScript never holds the state, a default, a range or a validation.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::figure::{Embed, FIGURES};
use crate::calibration::{Binning, DEFAULT_NUM_BINS, MAX_TEMPERATURE, MIN_TEMPERATURE};
use crate::conformal;
use crate::data::DEFAULT_SPLIT_SEED;
use crate::estimator_cases::EstimatorCase;
use crate::lab::ood_view::ScoreKind as OodScore;
use crate::lab::{ConformalSettings, GalleryFilter, OodSet, ScoreKind, MISTAKES};
use crate::shift::{Corruption, MAX_SEVERITY};
use crate::temperature_anatomy::FitMistake;
use crate::text::serde_name;

/// The bundled networks, in the order the lab stores their logits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKey {
    /// Trained with cross-entropy.
    Ce,
    /// Trained with the LogitNorm loss at τ = 0.04.
    Logitnorm,
}

/// Where a bundled network's weights are, and what the page calls it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ModelInfo {
    /// The network in the τ lab.
    pub network: Network,
    /// The training seed its card records: 0 for the network every lab shows; the others are
    /// the same recipe trained again, for the τ lab's spread over seeds.
    pub seed: u32,
    /// Relative to the page.
    pub url: &'static str,
    /// As the progress line names it.
    pub title: &'static str,
}

/// Every network the page can show; a model's index in the lab is its position here. Only
/// trained networks are listed: their weights and cards are in `assets/models/`. Seed 0 of
/// each network first, then the other seeds, which only the τ lab's spread over seeds loads.
pub const MODELS: [ModelInfo; 13] = [
    ModelInfo {
        network: Network::Ce,
        seed: 0,
        url: "assets/models/fmnist-ce.safetensors",
        title: "cross-entropy",
    },
    ModelInfo {
        network: Network::Tau004,
        seed: 0,
        url: "assets/models/fmnist-logitnorm.safetensors",
        title: "LogitNorm (τ = 0.04)",
    },
    ModelInfo {
        network: Network::Tau1,
        seed: 0,
        url: "assets/models/fmnist-logitnorm-tau1.0.safetensors",
        title: "LogitNorm (τ = 1)",
    },
    ModelInfo {
        network: Network::Tau001,
        seed: 0,
        url: "assets/models/fmnist-logitnorm-tau0.01.safetensors",
        title: "LogitNorm (τ = 0.01)",
    },
    ModelInfo {
        network: Network::Tau01,
        seed: 0,
        url: "assets/models/fmnist-logitnorm-tau0.1.safetensors",
        title: "LogitNorm (τ = 0.1)",
    },
    ModelInfo {
        network: Network::Tau002,
        seed: 0,
        url: "assets/models/fmnist-logitnorm-tau0.02.safetensors",
        title: "LogitNorm (τ = 0.02)",
    },
    ModelInfo {
        network: Network::Tau03,
        seed: 0,
        url: "assets/models/fmnist-logitnorm-tau0.3.safetensors",
        title: "LogitNorm (τ = 0.3)",
    },
    ModelInfo {
        network: Network::Ce,
        seed: 1,
        url: "assets/models/fmnist-ce-seed1.safetensors",
        title: "cross-entropy (seed 1)",
    },
    ModelInfo {
        network: Network::Ce,
        seed: 2,
        url: "assets/models/fmnist-ce-seed2.safetensors",
        title: "cross-entropy (seed 2)",
    },
    ModelInfo {
        network: Network::Tau004,
        seed: 1,
        url: "assets/models/fmnist-logitnorm-tau0.04-seed1.safetensors",
        title: "LogitNorm (τ = 0.04, seed 1)",
    },
    ModelInfo {
        network: Network::Tau1,
        seed: 1,
        url: "assets/models/fmnist-logitnorm-tau1.0-seed1.safetensors",
        title: "LogitNorm (τ = 1, seed 1)",
    },
    ModelInfo {
        network: Network::Tau004,
        seed: 2,
        url: "assets/models/fmnist-logitnorm-tau0.04-seed2.safetensors",
        title: "LogitNorm (τ = 0.04, seed 2)",
    },
    ModelInfo {
        network: Network::Tau1,
        seed: 2,
        url: "assets/models/fmnist-logitnorm-tau1.0-seed2.safetensors",
        title: "LogitNorm (τ = 1, seed 2)",
    },
];

impl ModelKey {
    /// The model's index in [`MODELS`] (and in the lab).
    pub fn index(self) -> usize {
        match self {
            Self::Ce => Network::Ce,
            Self::Logitnorm => Network::Tau004,
        }
        .index()
        .unwrap_or(0)
    }
}

/// A network of the τ lab: cross-entropy, or LogitNorm at one τ (serde: `"ce"`, `"0.04"`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Network {
    #[serde(rename = "0.01")]
    Tau001,
    #[serde(rename = "0.02")]
    Tau002,
    #[serde(rename = "0.04")]
    Tau004,
    #[serde(rename = "0.1")]
    Tau01,
    #[serde(rename = "0.3")]
    Tau03,
    #[serde(rename = "1")]
    Tau1,
    #[serde(rename = "ce")]
    Ce,
}

impl Network {
    /// In the τ slider's order: increasing τ, then cross-entropy.
    pub const ALL: [Network; 7] = [
        Self::Tau001,
        Self::Tau002,
        Self::Tau004,
        Self::Tau01,
        Self::Tau03,
        Self::Tau1,
        Self::Ce,
    ];

    /// LogitNorm's τ; `None` for cross-entropy.
    pub fn tau(self) -> Option<f64> {
        match self {
            Self::Tau001 => Some(0.01),
            Self::Tau002 => Some(0.02),
            Self::Tau004 => Some(0.04),
            Self::Tau01 => Some(0.1),
            Self::Tau03 => Some(0.3),
            Self::Tau1 => Some(1.0),
            Self::Ce => None,
        }
    }

    /// The index in [`MODELS`] of the network's seed 0 (the one every lab shows), if it is
    /// trained.
    pub fn index(self) -> Option<usize> {
        MODELS.iter().position(|m| m.network == self && m.seed == 0)
    }

    /// The indices in [`MODELS`] of every trained seed of the network, seed 0 first.
    pub fn seed_models(self) -> Vec<usize> {
        let mut models: Vec<usize> = (0..MODELS.len())
            .filter(|&m| MODELS[m].network == self)
            .collect();
        models.sort_by_key(|&m| MODELS[m].seed);
        models
    }

    /// The trained networks, in the τ slider's order.
    pub fn trained() -> Vec<Network> {
        Self::ALL
            .into_iter()
            .filter(|n| n.index().is_some())
            .collect()
    }

    /// "LogitNorm τ = 0.04" or "cross-entropy".
    pub fn title(self) -> String {
        match self.tau() {
            Some(tau) => format!("LogitNorm τ = {tau}"),
            None => "cross-entropy".to_string(),
        }
    }

    /// The serde name (the hash's value).
    pub fn name(self) -> String {
        serde_name(self)
    }
}

/// What the conformal lab's gallery shows: a filter of the evaluation images, or the most and
/// least conformal calibration images.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GalleryChoice {
    All,
    Misses,
    Large,
    Empty,
    Extremes,
}

impl GalleryChoice {
    /// The evaluation-image filter, or `None` for the extremes.
    pub fn filter(self) -> Option<GalleryFilter> {
        match self {
            Self::All => Some(GalleryFilter::All),
            Self::Misses => Some(GalleryFilter::Misses),
            Self::Large => Some(GalleryFilter::Large),
            Self::Empty => Some(GalleryFilter::Empty),
            Self::Extremes => None,
        }
    }
}

/// Everything the reader can set; the field names are the hash's keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageState {
    pub model: ModelKey,
    /// The temperature of both labs.
    pub t: f64,
    pub bins: usize,
    pub binning: Binning,
    /// Seed of the calibration/evaluation split.
    pub split: u32,
    pub alpha: f64,
    pub score: ScoreKind,
    pub randomized: bool,
    pub raps_lambda: f64,
    pub k_reg: usize,
    pub saps_lambda: f64,
    pub mondrian: bool,
    pub gallery: GalleryChoice,
    /// The τ lab's network.
    pub tau: Network,
    /// The τ lab's out-of-distribution set.
    pub ood: OodSet,
    /// The score whose histogram, threshold and ROC curves the τ lab draws.
    pub ood_score: OodScore,
    /// The shift lab's corruption of the test images.
    pub shift: Corruption,
    /// Its severity: 0 is the clean images, at most [`Corruption::max_severity`].
    pub severity: u8,
    /// The shift lab refits T and q̂ on the corrupted calibration half.
    pub recalibrate: bool,
    /// The LogitNorm lab shows the paper's protocol beside its own settings.
    pub paper: bool,
    /// The whole page, or one figure alone (the embed view).
    pub embed: Embed,
    /// Presentation mode: the embed view in large type, one figure a screen, the keyboard
    /// moving from figure to figure.
    pub present: bool,

    /// The conformal lab's training-conditional (PAC) threshold: coverage `≥ 1 − α` for the
    /// calibration set with probability `≥ 1 − delta`.
    pub delta: f64,

    /// The conformal lab's selective classification: the share of images answered wrongly
    /// that conformal risk control allows.
    pub risk: f64,
    /// The anatomy chart shows T fitted on the evaluation half itself.
    pub mistake_evaluation_half: bool,
    /// The anatomy chart shows T fitted by dividing probabilities instead of logits.
    pub mistake_probabilities: bool,
    /// The anatomy chart shows T fitted by the least ECE instead of the least NLL.
    pub mistake_minimise_ece: bool,

    /// The shift lab's adaptive conformal inference: the step γ by which `α_t` moves after
    /// each image of the stream.
    pub aci_gamma: f64,

    /// The LogitNorm lab's conformal p-values: Benjamini–Hochberg's false discovery rate level.
    pub fdr: f64,
    /// The share of OOD images mixed into the tested test images.
    pub ood_share: f64,

    /// What the first lab's estimators table is computed on: the network's own logits, or
    /// one of its edge cases.
    pub case: EstimatorCase,
}

impl Default for PageState {
    fn default() -> Self {
        Self {
            model: ModelKey::Ce,
            t: 1.0,
            bins: DEFAULT_NUM_BINS,
            binning: Binning::default(),
            split: DEFAULT_SPLIT_SEED,
            alpha: conformal::DEFAULT_ALPHA,
            score: ScoreKind::default(),
            randomized: conformal::DEFAULT_RANDOMIZED,
            raps_lambda: conformal::DEFAULT_RAPS_LAMBDA,
            k_reg: conformal::DEFAULT_RAPS_K_REG,
            saps_lambda: conformal::DEFAULT_SAPS_LAMBDA,
            mondrian: false,
            gallery: GalleryChoice::All,
            tau: Network::Tau004,
            ood: OodSet::Mnist,
            ood_score: OodScore::Energy,
            shift: Corruption::Rotation,
            severity: 3,
            recalibrate: false,
            paper: false,
            embed: Embed::None,
            present: false,
            delta: conformal::pac::DEFAULT_DELTA,
            risk: crate::lab::DEFAULT_RISK_LEVEL,
            mistake_evaluation_half: false,
            mistake_probabilities: false,
            mistake_minimise_ece: false,
            aci_gamma: crate::lab::DEFAULT_ACI_GAMMA,
            fdr: crate::lab::DEFAULT_FDR_LEVEL,
            ood_share: crate::lab::DEFAULT_OOD_SHARE,
            case: EstimatorCase::Network,
        }
    }
}

/// How a numeric field's control moves.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "scale", rename_all = "lowercase")]
pub enum Slider {
    /// The control's value is the field's value, in steps of `step`.
    Linear { step: f64 },
    /// The control runs over `0..=positions`, spaced evenly in log(value).
    Log { positions: u32 },
    /// Not a slider (the split seed, set by a button or a link).
    None,
}

/// A numeric field's range.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NumberRange {
    pub min: f64,
    pub max: f64,
    /// Whole numbers only.
    pub integer: bool,
    pub slider: Slider,
}

/// The kind of value a field holds, and so how its hash entry and its control are read.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum FieldKind {
    /// One of an enum's serde names; serde itself checks it.
    Choice,
    /// `1` or `0` in the hash, a checkbox on the page.
    Flag,
    /// A choice among [`Field::steps`], set by a slider's position.
    Steps,
    Number(NumberRange),
}

/// A slider's range, as its element's `min`, `max` and `step` attributes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SliderRange {
    /// The id of the slider's element.
    pub control: &'static str,
    pub min: f64,
    pub max: f64,
    pub step: f64,
}

/// One field of [`PageState`]: its hash key, the id of the control that sets it, and its kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Field {
    pub key: &'static str,
    /// What a message calls it.
    pub label: &'static str,
    pub control: Option<&'static str>,
    #[serde(flatten)]
    pub kind: FieldKind,
}

const fn number(min: f64, max: f64, integer: bool, slider: Slider) -> FieldKind {
    FieldKind::Number(NumberRange {
        min,
        max,
        integer,
        slider,
    })
}

/// The charts' type and line scale in presentation mode.
const PRESENTATION_TEXT_SCALE: f64 = 1.6;

/// Positions of the temperature slider (log scale over `[0.05, 20]`).
const TEMPERATURE_POSITIONS: u32 = 1000;
/// Significant digits of a temperature set by the slider: enough to tell its positions apart,
/// few enough for a readable link.
const TEMPERATURE_DIGITS: usize = 6;

/// The fields in the hash's order.
pub const FIELDS: [Field; 31] = [
    Field {
        key: "model",
        label: "model",
        control: Some("model"),
        kind: FieldKind::Choice,
    },
    Field {
        key: "t",
        label: "temperature",
        control: Some("temperature"),
        kind: number(
            MIN_TEMPERATURE,
            MAX_TEMPERATURE,
            false,
            Slider::Log {
                positions: TEMPERATURE_POSITIONS,
            },
        ),
    },
    Field {
        key: "bins",
        label: "bins",
        control: Some("bins"),
        kind: number(5.0, 30.0, true, Slider::Linear { step: 1.0 }),
    },
    Field {
        key: "binning",
        label: "binning",
        control: Some("binning"),
        kind: FieldKind::Choice,
    },
    Field {
        key: "split",
        label: "split",
        control: None,
        kind: number(0.0, u32::MAX as f64, true, Slider::None),
    },
    Field {
        key: "alpha",
        label: "α",
        control: Some("alpha"),
        kind: number(0.01, 0.30, false, Slider::Linear { step: 0.01 }),
    },
    Field {
        key: "score",
        label: "score",
        control: Some("score"),
        kind: FieldKind::Choice,
    },
    Field {
        key: "randomized",
        label: "randomized",
        control: Some("randomized"),
        kind: FieldKind::Flag,
    },
    Field {
        key: "raps_lambda",
        label: "RAPS λ",
        control: Some("raps-lambda"),
        kind: number(0.0, 0.5, false, Slider::Linear { step: 0.01 }),
    },
    Field {
        key: "k_reg",
        label: "RAPS k_reg",
        control: Some("k-reg"),
        kind: number(1.0, 10.0, true, Slider::Linear { step: 1.0 }),
    },
    Field {
        key: "saps_lambda",
        label: "SAPS λ",
        control: Some("saps-lambda"),
        kind: number(0.0, 1.0, false, Slider::Linear { step: 0.01 }),
    },
    Field {
        key: "mondrian",
        label: "Mondrian",
        control: Some("mondrian"),
        kind: FieldKind::Flag,
    },
    Field {
        key: "gallery",
        label: "gallery",
        control: Some("gallery-filter"),
        kind: FieldKind::Choice,
    },
    Field {
        key: "tau",
        label: "τ",
        control: Some("tau"),
        kind: FieldKind::Steps,
    },
    Field {
        key: "ood",
        label: "OOD set",
        control: Some("ood-set"),
        kind: FieldKind::Choice,
    },
    Field {
        key: "ood_score",
        label: "OOD score",
        control: Some("ood-score"),
        kind: FieldKind::Choice,
    },
    Field {
        key: "shift",
        label: "corruption",
        control: Some("shift-corruption"),
        kind: FieldKind::Choice,
    },
    Field {
        key: "severity",
        label: "severity",
        control: Some("severity"),
        kind: number(0.0, MAX_SEVERITY as f64, true, Slider::Linear { step: 1.0 }),
    },
    Field {
        key: "recalibrate",
        label: "recalibrate on shifted data",
        control: Some("recalibrate"),
        kind: FieldKind::Flag,
    },
    Field {
        key: "paper",
        label: "paper protocol",
        control: Some("paper-protocol"),
        kind: FieldKind::Flag,
    },
    Field {
        key: "embed",
        label: "embed",
        control: None,
        kind: FieldKind::Choice,
    },
    Field {
        key: "present",
        label: "presentation mode",
        control: None,
        kind: FieldKind::Flag,
    },
    Field {
        key: "delta",
        label: "δ",
        control: Some("pac-delta"),
        kind: number(0.01, 0.5, false, Slider::Linear { step: 0.01 }),
    },
    Field {
        key: "risk",
        label: "risk level",
        control: Some("selective-risk"),
        kind: number(0.01, 0.2, false, Slider::Linear { step: 0.01 }),
    },
    Field {
        key: "mistake_evaluation_half",
        label: "fit on the evaluation half",
        control: Some("mistake-evaluation-half"),
        kind: FieldKind::Flag,
    },
    Field {
        key: "mistake_probabilities",
        label: "fit on probabilities",
        control: Some("mistake-probabilities"),
        kind: FieldKind::Flag,
    },
    Field {
        key: "mistake_minimise_ece",
        label: "fit by least ECE",
        control: Some("mistake-minimise-ece"),
        kind: FieldKind::Flag,
    },
    Field {
        key: "aci_gamma",
        label: "γ",
        control: Some("aci-gamma"),
        kind: number(0.001, 0.05, false, Slider::Linear { step: 0.001 }),
    },
    Field {
        key: "fdr",
        label: "FDR level",
        control: Some("ood-fdr"),
        kind: number(0.01, 0.5, false, Slider::Linear { step: 0.01 }),
    },
    Field {
        key: "ood_share",
        label: "OOD share",
        control: Some("ood-share"),
        kind: number(0.01, 0.5, false, Slider::Linear { step: 0.01 }),
    },
    Field {
        key: "case",
        label: "estimators' case",
        control: Some("estimator-case"),
        kind: FieldKind::Choice,
    },
];

/// A hash entry or a control value that was not taken, and why.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("{label} \"{value}\" {reason}")]
pub struct Rejected {
    /// The hash key, or the control's id.
    pub key: String,
    pub label: String,
    pub value: String,
    pub reason: String,
}

/// The "Try this" buttons and the links in the text: each shows the state its line describes,
/// the entries it names on the defaults, so that no earlier choice (α, Mondrian, bins) makes the
/// line describe a state that is not shown; only the split and the view (embed, presentation)
/// are kept. (The fitted temperature is the `fit` action, not a preset.)
const PRESETS: [(&str, &[(&str, &str)]); 6] = [
    ("overconfident", &[("model", "ce"), ("t", "1")]),
    ("too_cold", &[("model", "ce"), ("t", "0.3")]),
    ("logitnorm_raw", &[("model", "logitnorm"), ("t", "1")]),
    (
        "aps_raw_t1",
        &[
            ("model", "ce"),
            ("score", "aps"),
            ("randomized", "0"),
            ("t", "1"),
        ],
    ),
    (
        "aps_raw_cold",
        &[
            ("model", "ce"),
            ("score", "aps"),
            ("randomized", "0"),
            ("t", "0.3"),
        ],
    ),
    (
        "mondrian",
        &[("score", "aps"), ("randomized", "1"), ("mondrian", "1")],
    ),
];

impl PageState {
    /// The state a hash describes, starting from the defaults: an entry that is unknown or
    /// invalid is ignored and reported, the others are kept.
    pub fn from_hash(hash: &str) -> (Self, Vec<Rejected>) {
        let mut fields = self::fields_of(&Self::default());
        let mut rejected = Vec::new();
        let hash = hash.strip_prefix('#').unwrap_or(hash);
        for (key, raw) in form_urlencoded::parse(hash.as_bytes()) {
            let Some(field) = FIELDS.iter().find(|f| f.key == key) else {
                rejected.push(Rejected {
                    key: key.to_string(),
                    label: key.to_string(),
                    value: raw.to_string(),
                    reason: "is not a setting of this page".to_string(),
                });
                continue;
            };
            match set_field(&mut fields, field, field.parse_hash(&raw)) {
                Ok(()) => {}
                Err(reason) => rejected.push(field.rejected(&raw, reason)),
            }
        }
        let state = state_of(fields).unwrap_or_default();
        (state, rejected)
    }

    /// The hash that describes this state: the fields that differ from the defaults, in
    /// [`FIELDS`] order. A field at its default is left out, as [`PageState::from_hash`] starts
    /// from the defaults: a link carries only the reader's choices, and the default view's link
    /// is the page's address alone.
    pub fn to_hash(&self) -> String {
        let defaults = Self::default().hash_entries();
        let mut out = form_urlencoded::Serializer::new(String::new());
        for ((key, text), (_, default)) in self.hash_entries().into_iter().zip(defaults) {
            if text != default {
                out.append_pair(key, &text);
            }
        }
        out.finish()
    }

    /// Every field's entry as a hash writes it (a flag as `1` or `0`, a choice by its name, a
    /// number as the shortest text that reads back as it), in [`FIELDS`] order.
    pub(crate) fn hash_entries(&self) -> Vec<(&'static str, String)> {
        let fields = fields_of(self);
        FIELDS
            .iter()
            .map(|field| {
                let text = match (&fields[field.key], field.kind) {
                    (Value::Bool(flag), _) => (if *flag { "1" } else { "0" }).to_string(),
                    (Value::String(s), _) => s.clone(),
                    (Value::Number(n), FieldKind::Number(range)) if range.integer => n.to_string(),
                    (Value::Number(n), _) => number_text(n.as_f64().unwrap_or(f64::NAN)),
                    (other, _) => other.to_string(),
                };
                (field.key, text)
            })
            .collect()
    }

    /// The state after the control `control` (an element id) took the value `raw`: a slider's
    /// position, a select's value, or `"true"`/`"false"` for a checkbox. Another network puts
    /// T back at 1.
    ///
    /// # Errors
    /// [`Rejected`] for an unknown control or a value it cannot take; the state is unchanged.
    pub fn set_control(&self, control: &str, raw: &str) -> Result<Self, Rejected> {
        let field = FIELDS
            .iter()
            .find(|f| f.control == Some(control))
            .ok_or_else(|| Rejected {
                key: control.to_string(),
                label: control.to_string(),
                value: raw.to_string(),
                reason: "is not a control of this page".to_string(),
            })?;
        let next = self.with(field, field.parse_control(raw), raw)?;
        // Switching the network shows it as trained: T back at 1, never a T fitted to the
        // other network (the page states this rule beside the choice).
        if next.model != self.model {
            return Ok(Self { t: 1.0, ..next });
        }
        Ok(next)
    }

    /// The state with field `key` set to `value` (as a hash writes it).
    ///
    /// # Errors
    /// [`Rejected`] for an unknown key or an invalid value; the state is unchanged.
    pub fn set(&self, key: &str, value: &str) -> Result<Self, Rejected> {
        let field = FIELDS
            .iter()
            .find(|f| f.key == key)
            .ok_or_else(|| Rejected {
                key: key.to_string(),
                label: key.to_string(),
                value: value.to_string(),
                reason: "is not a setting of this page".to_string(),
            })?;
        self.with(field, field.parse_hash(value), value)
    }

    /// The state a preset button shows.
    ///
    /// # Errors
    /// [`Rejected`] for an unknown preset.
    pub fn preset(&self, name: &str) -> Result<Self, Rejected> {
        let (_, entries) = PRESETS
            .iter()
            .find(|(preset, _)| *preset == name)
            .ok_or_else(|| Rejected {
                key: "preset".to_string(),
                label: "preset".to_string(),
                value: name.to_string(),
                reason: "is not a preset of this page".to_string(),
            })?;
        let start = Self {
            split: self.split,
            embed: self.embed,
            present: self.present,
            ..Self::default()
        };
        entries
            .iter()
            .try_fold(start, |state, (key, value)| state.set(key, value))
    }

    /// The state after a button or key: `fit` (T fitted on the calibration half, once known),
    /// `reset-temperature` (T = 1), `new-split` (the next split seed), `present` (presentation
    /// mode from the first figure), `end-presentation`, `next-figure` and `previous-figure`
    /// (the embedded figure's neighbours in [`FIGURES`]), or a preset's name.
    ///
    /// # Errors
    /// [`Rejected`] for an unknown action, or `fit` before the fitted T is known.
    pub fn act(&self, action: &str, fitted_temperature: Option<f64>) -> Result<Self, Rejected> {
        let rejected = |reason: &str| Rejected {
            key: "action".to_string(),
            label: "action".to_string(),
            value: action.to_string(),
            reason: reason.to_string(),
        };
        match action {
            "fit" => {
                // Exactly the fitted value (its link writes every digit), so that the metrics
                // at T equal the "fitted T" column.
                let t = fitted_temperature.ok_or_else(|| {
                    rejected("cannot run yet: T is fitted once inference has reached both halves of the split")
                })?;
                self.set("t", &number_text(t))
            }
            "reset-temperature" => self.set("t", "1"),
            "new-split" => Ok(Self {
                split: self.split.wrapping_add(1),
                ..self.clone()
            }),
            "present" => Ok(Self {
                present: true,
                embed: Embed::Figure(FIGURES[0].id),
                ..self.clone()
            }),
            "end-presentation" => Ok(Self {
                present: false,
                embed: Embed::None,
                ..self.clone()
            }),
            "next-figure" => Ok(self.step_figure(1)),
            "previous-figure" => Ok(self.step_figure(FIGURES.len() - 1)),
            _ => self
                .preset(action)
                .map_err(|_| rejected("is not a button of this page")),
        }
    }

    /// The state showing the figure `steps` after the embedded one in [`FIGURES`], round the
    /// end (the first figure when none is embedded).
    fn step_figure(&self, steps: usize) -> Self {
        let next = match self.embed {
            Embed::None => 0,
            Embed::Figure(figure) => {
                let index = FIGURES.iter().position(|f| f.id == figure).unwrap_or(0);
                (index + steps) % FIGURES.len()
            }
        };
        Self {
            embed: Embed::Figure(FIGURES[next].id),
            ..self.clone()
        }
    }

    fn with(
        &self,
        field: &Field,
        value: Result<Value, String>,
        raw: &str,
    ) -> Result<Self, Rejected> {
        let mut fields = fields_of(self);
        set_field(&mut fields, field, value).map_err(|reason| field.rejected(raw, reason))?;
        state_of(fields).map_err(|reason| field.rejected(raw, reason))
    }

    /// How much larger the charts' type and lines are drawn than on the article: presentation
    /// mode is read from the back of a room.
    pub fn text_scale(&self) -> f64 {
        if self.present {
            PRESENTATION_TEXT_SCALE
        } else {
            1.0
        }
    }

    /// The state's fields as its hash writes them, for reading many controls' values from one
    /// serialisation: a frame writes every control, and the state is serialised whole.
    pub fn fields(&self) -> StateFields {
        StateFields(fields_of(self))
    }

    /// The mistaken fits the anatomy chart shows, in the order of their switches.
    pub fn fit_mistakes(&self) -> Vec<FitMistake> {
        let switches = [
            self.mistake_evaluation_half,
            self.mistake_probabilities,
            self.mistake_minimise_ece,
        ];
        MISTAKES
            .into_iter()
            .zip(switches)
            .filter_map(|(mistake, on)| on.then_some(mistake))
            .collect()
    }

    /// What the conformal lab computes for this state.
    pub fn conformal_settings(&self) -> ConformalSettings {
        ConformalSettings {
            temperature: self.t,
            alpha: self.alpha,
            score: self.score,
            randomized: self.randomized,
            raps_lambda: self.raps_lambda,
            raps_k_reg: self.k_reg,
            saps_lambda: self.saps_lambda,
            class_conditional: self.mondrian,
        }
    }
}

impl Field {
    /// A hash entry's value, checked against the field's kind and range.
    fn parse_hash(&self, raw: &str) -> Result<Value, String> {
        match self.kind {
            FieldKind::Choice => {
                check_choice(self.key, raw).map(|()| Value::String(raw.to_string()))
            }
            FieldKind::Steps if self.steps().iter().any(|s| s == raw) => {
                Ok(Value::String(raw.to_string()))
            }
            FieldKind::Steps => Err(format!("is not one of {}", self.steps().join(", "))),
            FieldKind::Flag => match raw {
                "1" => Ok(Value::Bool(true)),
                "0" => Ok(Value::Bool(false)),
                _ => Err("is not 0 or 1".to_string()),
            },
            FieldKind::Number(range) => {
                let value: f64 = raw.trim().parse().map_err(|_| range.describe())?;
                range.check(value)
            }
        }
    }

    /// The values of a [`FieldKind::Steps`] field, in slider order: the trained networks.
    pub fn steps(&self) -> Vec<String> {
        match self.kind {
            FieldKind::Steps => Network::trained().into_iter().map(Network::name).collect(),
            _ => Vec::new(),
        }
    }

    /// The range of the slider that sets this field (`<input type="range">`'s min, max and
    /// step), or `None` for a field no slider sets. Every position in it is one the control
    /// accepts ([`PageState::control`]), and no other: the page takes its sliders' ranges
    /// from here, so a pointer, a touch or a key (Home, End, Page Up and Down) can reach
    /// every value and none past them.
    pub fn slider_range(&self) -> Option<SliderRange> {
        let control = self.control?;
        let (min, max, step) = match self.kind {
            FieldKind::Steps => (0.0, (self.steps().len() - 1) as f64, 1.0),
            FieldKind::Number(NumberRange {
                slider: Slider::Log { positions },
                ..
            }) => (0.0, f64::from(positions), 1.0),
            FieldKind::Number(NumberRange {
                min,
                max,
                slider: Slider::Linear { step },
                ..
            }) => (min, max, step),
            FieldKind::Number(NumberRange {
                slider: Slider::None,
                ..
            })
            | FieldKind::Choice
            | FieldKind::Flag => return None,
        };
        Some(SliderRange {
            control,
            min,
            max,
            step,
        })
    }

    /// A control's value: a slider position, a select's value or a checkbox's state.
    fn parse_control(&self, raw: &str) -> Result<Value, String> {
        match self.kind {
            FieldKind::Steps => {
                let steps = self.steps();
                let wrong = || format!("is not a slider position from 0 to {}", steps.len() - 1);
                let position: usize = raw.trim().parse().map_err(|_| wrong())?;
                steps
                    .get(position)
                    .map(|s| Value::String(s.clone()))
                    .ok_or_else(wrong)
            }
            FieldKind::Flag => match raw {
                "true" => Ok(Value::Bool(true)),
                "false" => Ok(Value::Bool(false)),
                _ => Err("is not true or false".to_string()),
            },
            FieldKind::Number(NumberRange {
                min,
                max,
                slider: Slider::Log { positions },
                ..
            }) => {
                let position: f64 = raw
                    .trim()
                    .parse()
                    .map_err(|_| format!("is not a slider position from 0 to {positions}"))?;
                if !(0.0..=f64::from(positions)).contains(&position) {
                    return Err(format!("is not a slider position from 0 to {positions}"));
                }
                let value = min * (max / min).powf(position / f64::from(positions));
                let value = round_significant(value, TEMPERATURE_DIGITS).clamp(min, max);
                Ok(Value::from(value))
            }
            _ => self.parse_hash(raw),
        }
    }

    fn rejected(&self, raw: &str, reason: String) -> Rejected {
        Rejected {
            key: self.key.to_string(),
            label: self.label.to_string(),
            value: raw.to_string(),
            reason,
        }
    }
}

impl NumberRange {
    fn describe(&self) -> String {
        let kind = if self.integer {
            "a whole number"
        } else {
            "a number"
        };
        format!(
            "is not {kind} from {} to {}",
            number_text(self.min),
            number_text(self.max)
        )
    }

    fn check(&self, value: f64) -> Result<Value, String> {
        let whole = !self.integer || value.fract() == 0.0;
        if !(value.is_finite() && (self.min..=self.max).contains(&value) && whole) {
            return Err(self.describe());
        }
        Ok(if self.integer {
            Value::from(value as u64)
        } else {
            Value::from(value)
        })
    }
}

/// Where `t` sits on the temperature slider's log scale, from 0 (T = 0.05) to 1 (T = 20).
pub fn temperature_fraction(t: f64) -> f64 {
    let fraction = (t / MIN_TEMPERATURE).ln() / (MAX_TEMPERATURE / MIN_TEMPERATURE).ln();
    fraction.clamp(0.0, 1.0)
}

/// The state's fields as a JSON map (the serde names are the hash keys).
pub(super) fn fields_of(state: &PageState) -> Map<String, Value> {
    match serde_json::to_value(state) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// A state's fields by hash key ([`PageState::fields`]).
pub struct StateFields(Map<String, Value>);

impl StateFields {
    /// The value of field `key` as the hash writes it.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// The position of the slider `control`, as its element's `value`: the inverse of
    /// [`PageState::control`] for every slider of [`FIELDS`], so that no slider's position is
    /// written by hand. `None` for a control that is not a slider.
    pub fn slider_position(&self, control: &str) -> Option<String> {
        let field = FIELDS.iter().find(|f| f.control == Some(control))?;
        field.slider_range()?;
        match (field.kind, self.get(field.key)?) {
            (FieldKind::Steps, Value::String(name)) => field
                .steps()
                .iter()
                .position(|step| step == name)
                .map(|position| position.to_string()),
            (
                FieldKind::Number(NumberRange {
                    min,
                    max,
                    slider: Slider::Log { positions },
                    ..
                }),
                Value::Number(number),
            ) => {
                let fraction = (number.as_f64()? / min).ln() / (max / min).ln();
                Some(((f64::from(positions) * fraction.clamp(0.0, 1.0)).round() as u32).to_string())
            }
            (FieldKind::Number(_), Value::Number(number)) => Some(format!("{}", number.as_f64()?)),
            _ => None,
        }
    }
}

/// The state a map describes; serde's message when a choice is not one of its enum's names. A
/// severity above the corruption's maximum becomes that maximum (inversion is on or off), so
/// that choosing inversion after a rotation of severity 3 shows inversion on.
fn state_of(fields: Map<String, Value>) -> Result<PageState, String> {
    let mut state: PageState =
        serde_json::from_value(Value::Object(fields)).map_err(|e| format!("is not valid: {e}"))?;
    state.severity = state.severity.min(state.shift.max_severity());
    Ok(state)
}

/// A choice's refusal in the reader's words, made from serde's own list of the names a field
/// takes (never serde's message, which quotes names in backticks).
#[derive(Debug)]
struct ChoiceError(String);

impl std::fmt::Display for ChoiceError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl std::error::Error for ChoiceError {}

impl serde::de::Error for ChoiceError {
    fn custom<T: std::fmt::Display>(message: T) -> Self {
        Self(message.to_string())
    }

    fn unknown_variant(_: &str, expected: &'static [&'static str]) -> Self {
        let names = match expected {
            [] => String::new(),
            [one] => (*one).to_string(),
            [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
        };
        Self(format!("is not one of {names}"))
    }
}

/// Checks `raw` against the names the choice field `key` takes.
fn check_choice(key: &str, raw: &str) -> Result<(), String> {
    fn names<'de, T: Deserialize<'de>>(raw: &'de str) -> Result<(), String> {
        T::deserialize(serde::de::value::StrDeserializer::<ChoiceError>::new(raw))
            .map(|_| ())
            .map_err(|error| error.0)
    }
    match key {
        "model" => names::<ModelKey>(raw),
        "binning" => names::<Binning>(raw),
        "score" => names::<ScoreKind>(raw),
        "gallery" => names::<GalleryChoice>(raw),
        "ood" => names::<OodSet>(raw),
        "ood_score" => names::<OodScore>(raw),
        "shift" => names::<Corruption>(raw),
        "embed" => names::<Embed>(raw),
        "case" => names::<EstimatorCase>(raw),
        // Every choice field is listed above (a test reads each field's refusal).
        _ => Ok(()),
    }
}

/// Sets one field in the map if the whole state still parses; the map is unchanged otherwise.
fn set_field(
    fields: &mut Map<String, Value>,
    field: &Field,
    value: Result<Value, String>,
) -> Result<(), String> {
    let mut candidate = fields.clone();
    candidate.insert(field.key.to_string(), value?);
    state_of(candidate.clone())?;
    *fields = candidate;
    Ok(())
}

/// `value` rounded to `digits` significant digits.
fn round_significant(value: f64, digits: usize) -> f64 {
    format!("{value:.*e}", digits.saturating_sub(1))
        .parse()
        .unwrap_or(value)
}

/// The shortest text that reads back as `value` (`0.1`, `2.5`, `20`).
fn number_text(value: f64) -> String {
    format!("{value}")
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
