//! Signing: bytes and provenance in, a `PublishRequest` with CRC32C and MAC out.
//!
//! One signer per collector process. Its epoch is drawn at random when it is created and its
//! sequence only goes up, so no two chunks it prepares share an identity.
//!
//! A chunk is *prepared* once (sequence, provenance, CRC32C) when a round produces it, and
//! *sealed* (destination gateway, timestamp, MAC) by the publisher of the gateway that takes
//! it, just before it is sent: the MAC binds the chunk to that gateway, and a chunk that waited
//! in the queue is not already stale when it leaves. A publisher may seal the same chunk again
//! (same sequence, fresh timestamp) only while every answer it got for it said "not stored"
//! (see `publisher`), so a chunk that may have been stored is never re-dated.
//!
//! Preparing is where the provenance leaves the collector's own words ([`crate::provenance`])
//! for the wire's. [`ChunkSigner::sign`] takes the wire's words as they are, so that tests and
//! tools can send a gateway what a collector never would.

use std::sync::Arc;

use entropy_ops::clock::unix_ms_now;
use entropy_proto::signing::chunk_mac;
use entropy_proto::v1::{self as pb, PublishRequest};
use zeroize::Zeroizing;

use crate::provenance::{Mixing, SourceReport};

/// Prepares chunks for one collector process.
pub struct ChunkSigner {
    collector_id: String,
    epoch: u64,
    next_sequence: u64,
    key_id: String,
    sealer: Sealer,
    /// The gateway [`ChunkSigner::sign`] seals for.
    gateway_id: String,
}

impl std::fmt::Debug for ChunkSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkSigner")
            .field("collector_id", &self.collector_id)
            .field("epoch", &self.epoch)
            .field("next_sequence", &self.next_sequence)
            .field("key_id", &self.key_id)
            .field("gateway_id", &self.gateway_id)
            .finish_non_exhaustive()
    }
}

/// Seals prepared chunks for a gateway: the MAC key, shared by a collector's publishers.
#[derive(Clone)]
pub struct Sealer {
    key: Arc<Zeroizing<Vec<u8>>>,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(..)")
    }
}

/// The epoch could not be drawn (the OS RNG failed).
#[derive(Debug, thiserror::Error)]
#[error("cannot draw a random epoch: {0}")]
pub struct EpochError(getrandom::Error);

impl Sealer {
    /// Addresses `chunk` to `gateway_id`, dates it now and computes its MAC.
    pub fn seal(&self, chunk: &mut PublishRequest, gateway_id: &str) {
        self.seal_at(chunk, gateway_id, unix_ms_now());
    }

    /// [`Sealer::seal`] with an explicit timestamp (tests of the freshness rules).
    pub fn seal_at(&self, chunk: &mut PublishRequest, gateway_id: &str, timestamp_unix_ms: i64) {
        if chunk.gateway_id != gateway_id {
            chunk.gateway_id = gateway_id.to_owned();
        }
        chunk.timestamp_unix_ms = timestamp_unix_ms;
        chunk.mac = chunk_mac(&self.key, chunk).to_vec();
    }
}

impl ChunkSigner {
    /// A signer for `collector_id` using MAC key `key_id` with secret `key`, with a fresh
    /// random epoch.
    pub fn new(collector_id: &str, key_id: &str, key: Vec<u8>) -> Result<Self, EpochError> {
        let mut epoch = [0u8; 8];
        getrandom::fill(&mut epoch).map_err(EpochError)?;
        Ok(Self {
            collector_id: collector_id.to_owned(),
            epoch: u64::from_be_bytes(epoch),
            next_sequence: 0,
            key_id: key_id.to_owned(),
            sealer: Sealer { key: Arc::new(Zeroizing::new(key)) },
            gateway_id: String::new(),
        })
    }

    /// Seals what [`ChunkSigner::sign`] returns for `gateway_id` (tests, tools).
    pub fn for_gateway(mut self, gateway_id: &str) -> Self {
        self.gateway_id = gateway_id.to_owned();
        self
    }

    /// This process's epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The sealer publishers use for this signer's chunks.
    pub fn sealer(&self) -> Sealer {
        self.sealer.clone()
    }

    /// The next chunk, with a fresh sequence, CRC32C and provenance; not yet sealed.
    pub fn prepare(
        &mut self,
        data: Vec<u8>,
        mixing: Mixing,
        sources: Vec<SourceReport>,
    ) -> PublishRequest {
        let sources = sources.into_iter().map(pb::SourceReport::from).collect();
        self.next_chunk(data, mixing.into(), sources)
    }

    fn next_chunk(
        &mut self,
        data: Vec<u8>,
        mixing: pb::Mixing,
        sources: Vec<pb::SourceReport>,
    ) -> PublishRequest {
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        PublishRequest {
            collector_id: self.collector_id.clone(),
            gateway_id: String::new(),
            epoch: self.epoch,
            sequence,
            timestamp_unix_ms: 0,
            mixing: mixing as i32,
            sources,
            crc32c: crc32c::crc32c(&data),
            data,
            key_id: self.key_id.clone(),
            mac: Vec::new(),
        }
    }

    /// Prepares and seals the next chunk for this signer's gateway, dated now, with the
    /// provenance as given on the wire (tests, tools).
    pub fn sign(
        &mut self,
        data: Vec<u8>,
        mixing: pb::Mixing,
        sources: Vec<pb::SourceReport>,
    ) -> PublishRequest {
        self.sign_at(data, mixing, sources, unix_ms_now())
    }

    /// [`ChunkSigner::sign`] with an explicit timestamp (tests of the freshness rules).
    pub fn sign_at(
        &mut self,
        data: Vec<u8>,
        mixing: pb::Mixing,
        sources: Vec<pb::SourceReport>,
        timestamp_unix_ms: i64,
    ) -> PublishRequest {
        let mut chunk = self.next_chunk(data, mixing, sources);
        self.sealer.seal_at(&mut chunk, &self.gateway_id, timestamp_unix_ms);
        chunk
    }
}

#[cfg(test)]
mod tests {
    use entropy_proto::signing::verify_chunk_mac;

    use super::*;

    #[test]
    fn sequences_rise_and_macs_verify() {
        let key = vec![3u8; 32];
        let mut signer = ChunkSigner::new("c", "k", key.clone()).expect("signer").for_gateway("g");
        let a = signer.sign(vec![1, 2, 3], pb::Mixing::None, Vec::new());
        let b = signer.sign(vec![1, 2, 3], pb::Mixing::None, Vec::new());
        assert_eq!((a.sequence, b.sequence), (0, 1));
        assert_eq!(a.epoch, b.epoch);
        assert_eq!(a.gateway_id, "g");
        assert!(verify_chunk_mac(&key, &a) && verify_chunk_mac(&key, &b));
        assert_ne!(a.mac, b.mac);
        assert_eq!(a.crc32c, crc32c::crc32c(&[1, 2, 3]));
    }

    #[test]
    fn sealing_again_keeps_the_identity_and_binds_the_gateway() {
        let key = vec![3u8; 32];
        let mut signer = ChunkSigner::new("c", "k", key.clone()).expect("signer");
        let mut chunk = signer.prepare(vec![9; 8], Mixing::None, Vec::new());
        assert_eq!(chunk.mixing, pb::Mixing::None as i32);
        let sealer = signer.sealer();
        sealer.seal_at(&mut chunk, "gw-a", 1_000);
        let first = chunk.clone();
        sealer.seal_at(&mut chunk, "gw-a", 2_000);
        assert_eq!((chunk.epoch, chunk.sequence), (first.epoch, first.sequence));
        assert!(verify_chunk_mac(&key, &first) && verify_chunk_mac(&key, &chunk));
        // Readdressed without a new MAC, the chunk no longer verifies.
        let mut moved = chunk.clone();
        moved.gateway_id = "gw-b".into();
        assert!(!verify_chunk_mac(&key, &moved));
    }

    #[test]
    fn each_process_draws_its_own_epoch() {
        let a = ChunkSigner::new("c", "k", vec![0; 32]).expect("signer");
        let b = ChunkSigner::new("c", "k", vec![0; 32]).expect("signer");
        assert_ne!(a.epoch(), b.epoch());
    }
}
