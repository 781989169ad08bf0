//! The `entropy.v1` contract as Rust: the generated message types and tonic stubs, the encoded
//! file descriptor set (for server reflection), and the canonical chunk MAC encoding that every
//! collector signs and every gateway verifies.
//!
//! Layout:
//! - [`v1`]: generated from `proto/entropy/v1/*.proto` at build time (protox, no protoc).
//! - [`FILE_DESCRIPTOR_SET`]: the encoded descriptors, imports included.
//! - [`signing`]: the canonical encoding and HMAC-SHA256 over it, as documented on
//!   `PublishRequest`.

pub mod signing;

/// Generated types and services of package `entropy.v1`.
#[allow(missing_docs, clippy::all)]
pub mod v1 {
    tonic::include_proto!("entropy.v1");
}

/// Encoded `FileDescriptorSet` of the contract (with its imports), for `tonic-reflection`.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/entropy_descriptor.bin"));
