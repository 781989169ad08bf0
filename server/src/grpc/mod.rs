//! The gRPC edge: wire types in, domain calls, wire types and statuses out.
//!
//! Nothing below this module knows tonic. Each file is one concern: authentication
//! ([`auth`]), deadlines ([`deadline`]), error mapping ([`errors`]), per-call metrics and log
//! lines ([`observe`]), and the two services.

pub mod auth;
pub mod deadline;
pub mod delivery;
pub mod entropy_service;
pub mod errors;
pub mod ingest_service;
pub mod observe;
pub mod stream_random;
