//! The files worker's export: a reader's logits files, read and checked in a worker of their
//! own (`www/own-logits-worker.js`), so that the page's thread never parses them. Its module
//! (feature `own-logits`) carries the parsers and nothing else: neither the page's module nor
//! the inference worker's, which every visit downloads, carries them.

use wasm_bindgen::prelude::*;

use super::to_js;
use crate::page::own_logits::{self, OwnFile, OwnTable};

/// A reader's logits files, read and checked as the command-line tool reads them
/// ([`own_logits::read`]); the page shows them with `Page.load_own_logits`.
#[wasm_bindgen]
pub struct OwnLogitsFiles(OwnTable);

#[wasm_bindgen]
impl OwnLogitsFiles {
    /// Reads the `logits` and `labels` files and, if given, the class `names` (one a line),
    /// each with its file name, which tells its format as on the command line. The message of a
    /// refusal is the command-line tool's (which file, which line, what is wrong).
    #[wasm_bindgen(constructor)]
    pub fn new(
        logits: &[u8],
        logits_name: &str,
        labels: &[u8],
        labels_name: &str,
        names: Option<Vec<u8>>,
        names_name: Option<String>,
    ) -> Result<OwnLogitsFiles, JsError> {
        let file = |name, bytes| OwnFile { name, bytes };
        let names = match (&names, &names_name) {
            (Some(bytes), Some(name)) => Some(file(name.as_str(), bytes.as_slice())),
            _ => None,
        };
        Ok(OwnLogitsFiles(own_logits::read(
            file(logits_name, logits),
            file(labels_name, labels),
            names,
        )?))
    }

    /// The logits, `Float32Array [n, K]`, moved out: a second call returns none (at 200,000 ×
    /// 100 a copy kept here would be 80 MB).
    pub fn take_logits(&mut self) -> Vec<f32> {
        std::mem::take(&mut self.0.logits)
    }

    /// The labels, `Uint32Array [n]`, moved out as the logits are.
    pub fn take_labels(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.0.labels)
    }

    /// What the files are ([`own_logits::OwnAbout`]), as a plain object.
    pub fn about(&self) -> Result<JsValue, JsError> {
        to_js(&self.0.about)
    }
}
