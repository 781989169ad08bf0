//! Test groups and the shared harness.

mod classes;
mod connect;
mod diode;
mod drbg;
mod entropy;
mod exposure;
mod fairness;
mod hostile;
mod ingest;
mod lifecycle;
mod limits;
mod metrics;
mod quality;
mod quota;
mod receipts;
mod receipts_kill9;
mod rest;
mod support;
mod surface;
mod tls;
mod undelivered;
mod web;
