//! Test groups and the shared harness.

mod entropy;
mod ingest;
mod lifecycle;
mod support;
