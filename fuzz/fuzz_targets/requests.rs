//! Arbitrary bytes as each public EntropyService request, through the gateway's handlers.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| entropy_fuzz::requests::run(data));
