//! Every committed fuzz corpus file (`fuzz/corpus/<target>/`, grown by `scripts/fuzz`) through
//! the checks its fuzz target makes, so `cargo test` keeps what the fuzzers found covered
//! without a fuzzer: no parser panics on any of them, and what they accept is well formed.

use std::panic::{self, AssertUnwindSafe};
use std::path::Path;

#[path = "../fuzz/src/lib.rs"]
mod checks;

/// A fuzz target's name (its corpus folder) and its check of one input.
type Target = (&'static str, fn(&[u8]));

#[test]
fn every_corpus_file_passes_its_targets_checks() {
    let targets: [Target; 5] = [
        ("idx", checks::idx),
        ("npy", checks::npy),
        ("text", checks::text),
        ("safetensors", checks::safetensors),
        ("hash", checks::hash),
    ];
    let mut failures = Vec::new();
    for (target, check) in targets {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz/corpus")
            .join(target);
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let mut count = 0;
        for entry in entries {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            if panic::catch_unwind(AssertUnwindSafe(|| check(&bytes))).is_err() {
                failures.push(path.display().to_string());
            }
            count += 1;
        }
        // The hand-written seeds at least: an empty folder would test nothing.
        assert!(count >= 3, "{}: only {count} corpus files", dir.display());
    }
    assert!(
        failures.is_empty(),
        "inputs that fail their checks: {failures:#?}"
    );
}
