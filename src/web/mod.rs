//! The one `#[wasm_bindgen]` facade: thin wrappers over the core for the page and its worker.
//!
//! Bulk numbers cross as typed arrays (`Uint8Array` pixels `[n, 28, 28]`, `Float32Array`
//! logits `[n, 10]`, both row-major); the readouts cross as plain objects (see
//! [`crate::page`]). The page state stays in the page's `Page`, which the script holds as a
//! handle: a link, a control and a button change it there, and no export takes it as an
//! argument. Every export returns `Result<_, JsError>` so a bad input becomes a
//! JavaScript exception with a message, never a panic (a panic in WebAssembly kills the page).
//!
//! `scripts/build-site` builds five modules from it, so that each download carries only what
//! its thread runs: the page's (feature `page`: the page state, the labs and their drawing),
//! the bootstrap worker's (feature `bootstrap`: the fits it runs off the page's thread,
//! `Bootstrap` and three functions), the inference worker's (feature `inference`: candle and
//! the network, `Model`), its ODIN module (feature `odin`: the network with ODIN's backward pass,
//! fetched only for ODIN), and the files worker's (feature `own-logits`: the parsers of a
//! reader's logits files, `OwnLogitsFiles`, fetched only when a reader chooses files). Native
//! builds and the browser tests have them all.

#[cfg(feature = "bootstrap")]
mod bootstrap;
#[cfg(feature = "page")]
mod canvas;
#[cfg(feature = "own-logits")]
mod own_logits_files;
#[cfg(feature = "page")]
mod page;
#[cfg(feature = "inference")]
mod worker;

#[cfg(feature = "bootstrap")]
pub use bootstrap::*;
#[cfg(feature = "own-logits")]
pub use own_logits_files::OwnLogitsFiles;
#[cfg(feature = "page")]
pub use page::*;
#[cfg(feature = "inference")]
pub use worker::Model;

#[cfg(any(feature = "page", feature = "bootstrap", feature = "own-logits"))]
use serde::Serialize;
use wasm_bindgen::prelude::*;

/// Installs the panic hook once, when the module is instantiated, so that a bug still reports
/// its message in the console.
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}

/// A plain JavaScript object (not a `Map`) for a serde value.
#[cfg(any(feature = "page", feature = "bootstrap", feature = "own-logits"))]
fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    let serializer = serde_wasm_bindgen::Serializer::new().serialize_maps_as_objects(true);
    Ok(value.serialize(&serializer)?)
}

/// Sets `object[key] = value`; the message names `what` the object is.
#[cfg(any(feature = "page", feature = "bootstrap"))]
fn set_field(
    object: &js_sys::Object,
    key: &str,
    value: &JsValue,
    what: &str,
) -> Result<(), JsError> {
    js_sys::Reflect::set(object, &key.into(), value)
        .map(|_| ())
        .map_err(|_| JsError::new(&format!("cannot build the {what}' object")))
}

/// Reads `value`, a plain JavaScript object, as a `T`; the message names `what` and the field
/// at fault.
#[cfg(any(feature = "page", feature = "bootstrap"))]
fn from_js<T: serde::de::DeserializeOwned>(value: JsValue, what: &str) -> Result<T, JsError> {
    serde_wasm_bindgen::from_value(value).map_err(|e| JsError::new(&format!("bad {what}: {e}")))
}
