//! IDX images and labels: see `calibra_fuzz::idx`.
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| calibra_fuzz::idx(bytes));
