//! The `entropy.v1` contract as Rust: the generated message types and tonic stubs, the encoded
//! file descriptor set (for server reflection), and the canonical chunk MAC encoding that every
//! collector signs and every gateway verifies.
//!
//! Layout:
//! - [`v1`]: generated from `proto/entropy/v1/*.proto` at build time (protox, no protoc).
//!   With the `json` feature, every message also implements serde's `Serialize` and
//!   `Deserialize` in the proto3 JSON mapping (pbjson: camelCase names out, either spelling in,
//!   64-bit integers as strings, bytes as base64, enums by name).
//! - [`FILE_DESCRIPTOR_SET`]: the encoded descriptors, imports included.
//! - [`signing`]: the canonical encoding and HMAC-SHA256 over it, as documented on
//!   `PublishRequest`.

pub mod signing;

/// Generated types and services of package `entropy.v1`.
#[allow(missing_docs, clippy::all)]
pub mod v1 {
    tonic::include_proto!("entropy.v1");
    #[cfg(feature = "json")]
    include!(concat!(env!("OUT_DIR"), "/entropy.v1.serde.rs"));
}

/// Encoded `FileDescriptorSet` of the contract (with its imports), for `tonic-reflection`.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/entropy_descriptor.bin"));
