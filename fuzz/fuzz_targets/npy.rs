//! `.npy` logits and labels: see `calibra_fuzz::npy`.
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| calibra_fuzz::npy(bytes));
