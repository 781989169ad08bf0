//! Test groups and the shared harness.

mod diode;
mod entropy;
mod ingest;
mod lifecycle;
mod support;
mod tls;
