//! Network weights from safetensors bytes: see `calibra_fuzz::safetensors`.
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| calibra_fuzz::safetensors(bytes));
