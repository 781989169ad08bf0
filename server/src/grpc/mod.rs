//! The gRPC edge: wire types in, domain calls, wire types and statuses out.
//!
//! The domain below knows nothing of tonic; [`crate::transport`] carries tonic's request and
//! response bodies between the sockets and these services, but decides no status of its own
//! except the shedding it does before a call reaches them. Each file is one concern: requests
//! converted from their wire types once ([`requests`]), authentication ([`auth`]), deadlines
//! ([`deadline`]), error mapping ([`errors`]), per-call metrics and log lines ([`observe`]),
//! delivery of drawn bytes ([`delivery`]), one request message per unary call
//! ([`one_message`]), the StreamRandom loop ([`stream_random`]), draws' provenance on the wire
//! ([`provenance`]), CheckQuality's report ([`quality`]), GetUsage's answer ([`usage`]), receipts on the draws ([`receipts`]) and
//! the receipt log's service ([`receipt_log`]),
//! readiness on `grpc.health.v1` ([`health`]), gRPC-Web for browsers ([`web`]), the Connect
//! protocol for JSON over HTTP ([`connect`]), the original QRNG-DD gateway's REST routes
//! ([`rest`]), and the two services.

pub mod auth;
pub(crate) mod connect;
pub mod deadline;
pub mod delivery;
pub mod entropy_service;
pub(crate) mod errors;
pub(crate) mod health;
pub(crate) mod ingest_service;
pub mod observe;
pub(crate) mod one_message;
pub(crate) mod provenance;
pub(crate) mod quality;
pub(crate) mod receipt_log;
pub(crate) mod receipts;
pub(crate) mod requests;
pub(crate) mod rest;
pub mod stream_random;
pub(crate) mod usage;
pub(crate) mod web;
