//! Arbitrary `authorization`, `x-api-key` and `grpc-timeout` values through the API-key
//! interceptor and the deadline parser.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    entropy_fuzz::metadata::run(&entropy_fuzz::metadata::Headers::from_bytes(data));
});
