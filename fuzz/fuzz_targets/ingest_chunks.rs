//! Mostly-valid signed chunks, mutated after signing, against one gateway ingest path.
#![no_main]

libfuzzer_sys::fuzz_target!(|scenario: entropy_fuzz::ingest::Scenario| {
    entropy_fuzz::ingest::chunks(&scenario);
});
