//! The fuzz harnesses, as plain functions: each target in `fuzz_targets/` is one line calling
//! into here, and `examples/gen_corpus.rs` writes the seed corpus from [`seeds`].
//!
//! Every harness drives the gateway's own code (the `entropy-gateway` library), not a copy, and
//! asserts invariants: a panic here is a finding.
//!
//! - [`ingest`]: chunk verification, replay refusal and storing (`Ingest::publish_at`), from raw
//!   protobuf bytes and from structured, mostly-valid signed chunks.
//! - [`requests`]: every public request message, decoded from raw bytes and run through the
//!   EntropyService handlers against a real pool.
//! - [`metadata`]: the API-key interceptor and the `grpc-timeout` parser, on arbitrary header
//!   values.

pub mod ingest;
pub mod metadata;
pub mod requests;
pub mod seeds;
