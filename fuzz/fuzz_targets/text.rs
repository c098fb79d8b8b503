//! Text (CSV) logits and labels: see `calibra_fuzz::text`.
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| calibra_fuzz::text(bytes));
