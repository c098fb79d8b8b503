//! The page's URL hash: see `calibra_fuzz::hash`.
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| calibra_fuzz::hash(bytes));
