//! calibra: see and fix an overconfident classifier.
//!
//! A pure numerical core (`data`, `model`, `calibration`, `smooth_calibration`,
//! `bootstrap`, `conformal`, `ood`, `own_image`, `shift`, `plot`, and `input` for the files of the CLI and of
//! a reader's own logits) that
//! compiles and is tested natively, plus one thin `#[wasm_bindgen]` facade (`web`) for the page.

pub mod bootstrap;
pub mod calibration;
pub mod calibration_estimators;
pub mod calibration_null;
pub mod conformal;
pub mod corp;
pub mod data;
pub mod domain_classifier;
pub mod estimator_cases;
pub mod input;
pub mod lab;
#[cfg(feature = "inference")]
pub mod model;
pub mod ood;
pub mod ood_difference;
pub mod ood_features;
pub mod ood_pvalues;
pub mod ood_ranking;
pub mod own_image;
pub mod page;
pub mod plot;
pub mod recalibration;
pub mod selective;
pub mod sentences;
pub mod shift;
pub mod smooth_calibration;
pub mod temperature_anatomy;
#[cfg(test)]
mod test_support;
pub mod text;
#[cfg(target_arch = "wasm32")]
pub mod web;
