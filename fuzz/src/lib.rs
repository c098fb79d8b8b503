//! What each fuzz target checks of one input, shared by the targets in `fuzz_targets/` and by
//! the native test `tests/fuzz_corpus.rs`, which runs every committed corpus file through them.
//! Every parser must give a value or an error for any bytes, never a panic, and what it accepts
//! must be well formed.

use std::path::Path;

use calibra::data::NUM_CLASSES;
use calibra::data::{parse_idx_images, parse_idx_labels, IMAGE_PIXELS};
use calibra::input::{parse_labels, parse_logits, Format};
use calibra::model::Classifier;
use calibra::page::PageState;

/// IDX images and labels, plain or gzipped, as the page and the CLI read them: accepted
/// images are whole 28×28 images.
pub fn idx(bytes: &[u8]) {
    if let Ok(images) = parse_idx_images(bytes, "fuzz") {
        assert_eq!(images.pixels().len(), images.len() * IMAGE_PIXELS);
    }
    let _ = parse_idx_labels(bytes, "fuzz");
}

/// `.npy` logits and labels, as `calibra` reads them (see [`tables`]).
pub fn npy(bytes: &[u8]) {
    tables(bytes, Format::Npy, Path::new("fuzz.npy"));
}

/// CSV or whitespace-separated text logits and labels, as `calibra` reads them (see
/// [`tables`]).
pub fn text(bytes: &[u8]) {
    tables(bytes, Format::Text, Path::new("fuzz.csv"));
}

/// Accepted logits are whole rows of finite values over at least two classes; accepted labels
/// are not empty.
fn tables(bytes: &[u8], format: Format, path: &Path) {
    if let Ok(table) = parse_logits(bytes, format, path) {
        assert!(table.num_classes >= 2);
        assert_eq!(table.values.len() % table.num_classes, 0);
        assert!(table.values.iter().all(|v| v.is_finite()));
    }
    if let Ok(labels) = parse_labels(bytes, format, path) {
        assert!(!labels.is_empty());
    }
}

/// Network weights, as the page's worker and the CLI load them: a network that loads runs one
/// image to ten logits.
pub fn safetensors(bytes: &[u8]) {
    if let Ok(classifier) = Classifier::from_safetensors(bytes.to_vec()) {
        let logits = classifier.logits(&[128; IMAGE_PIXELS]);
        assert_eq!(logits.map(|l| l.len()).ok(), Some(NUM_CLASSES));
    }
}

/// The page's URL hash: any text gives a state (unknown or invalid entries reported), and the
/// hash that state writes reads back to the same state with nothing rejected.
pub fn hash(bytes: &[u8]) {
    let Ok(hash) = std::str::from_utf8(bytes) else {
        return;
    };
    let (state, _rejected) = PageState::from_hash(hash);
    let (again, rejected) = PageState::from_hash(&state.to_hash());
    assert!(rejected.is_empty(), "{rejected:?}");
    assert_eq!(again, state);
}
