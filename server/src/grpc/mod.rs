//! The gRPC edge: wire types in, domain calls, wire types and statuses out.
//!
//! Nothing below this module knows tonic. Each file is one concern: requests converted from
//! their wire types once ([`requests`]), authentication ([`auth`]), deadlines ([`deadline`]),
//! error mapping ([`errors`]), per-call metrics and log lines ([`observe`]), delivery of drawn
//! bytes ([`delivery`]), one request message per unary call ([`one_message`]), the StreamRandom loop ([`stream_random`]), draws' provenance on the
//! wire ([`provenance`]), CheckQuality's report ([`quality`]), and the two services.

pub mod auth;
pub mod deadline;
pub mod delivery;
pub mod entropy_service;
pub mod errors;
pub mod ingest_service;
pub mod observe;
pub mod one_message;
pub mod provenance;
pub mod quality;
pub mod requests;
pub mod stream_random;
