//! Arbitrary bytes as an ingest `PublishRequest`, through the gateway's full verification path.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| entropy_fuzz::ingest::bytes(data));
