//! The Entropy Diode collector: reads entropy sources, signs chunks, and publishes them one
//! way to gateways.
//!
//! Layout:
//! - [`source`]: where raw entropy comes from (one trait; the OS CSPRNG so far).
//! - [`signer`]: turns bytes plus provenance into a signed `PublishRequest`.
//! - [`publisher`]: delivers a signed chunk to a gateway, retrying the *same* chunk until it
//!   is stored, known stored, or refused for good.
//! - [`feed`]: the loop tying them together.
//!
//! The collector only ever dials out; it listens on nothing.

pub mod feed;
pub mod publisher;
pub mod signer;
pub mod source;
