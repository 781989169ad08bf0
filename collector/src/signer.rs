//! Signing: bytes and provenance in, a `PublishRequest` with CRC32C and MAC out.
//!
//! One signer per collector process. Its epoch is drawn at random when it is created and its
//! sequence only goes up, so no two chunks it signs share an identity, and a chunk is signed
//! exactly once: retries resend the signed chunk as is.

use std::time::{SystemTime, UNIX_EPOCH};

use entropy_proto::signing::chunk_mac;
use entropy_proto::v1::{Mixing, PublishRequest, SourceReport};
use zeroize::Zeroizing;

/// Signs chunks for one collector process.
pub struct ChunkSigner {
    collector_id: String,
    epoch: u64,
    next_sequence: u64,
    key_id: String,
    key: Zeroizing<Vec<u8>>,
}

impl std::fmt::Debug for ChunkSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkSigner")
            .field("collector_id", &self.collector_id)
            .field("epoch", &self.epoch)
            .field("next_sequence", &self.next_sequence)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

/// The epoch could not be drawn (the OS RNG failed).
#[derive(Debug, thiserror::Error)]
#[error("cannot draw a random epoch: {0}")]
pub struct EpochError(String);

impl ChunkSigner {
    /// A signer for `collector_id` using MAC key `key_id` with secret `key`, with a fresh
    /// random epoch.
    pub fn new(collector_id: &str, key_id: &str, key: Vec<u8>) -> Result<Self, EpochError> {
        let mut epoch = [0u8; 8];
        getrandom::fill(&mut epoch).map_err(|e| EpochError(e.to_string()))?;
        Ok(Self {
            collector_id: collector_id.to_owned(),
            epoch: u64::from_be_bytes(epoch),
            next_sequence: 0,
            key_id: key_id.to_owned(),
            key: Zeroizing::new(key),
        })
    }

    /// This process's epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Signs `data` as the next chunk, timestamped now.
    pub fn sign(
        &mut self,
        data: Vec<u8>,
        mixing: Mixing,
        sources: Vec<SourceReport>,
    ) -> PublishRequest {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        self.sign_at(data, mixing, sources, i64::try_from(now.as_millis()).unwrap_or(i64::MAX))
    }

    /// Signs `data` as the next chunk with the given timestamp (Unix ms).
    pub fn sign_at(
        &mut self,
        data: Vec<u8>,
        mixing: Mixing,
        sources: Vec<SourceReport>,
        timestamp_unix_ms: i64,
    ) -> PublishRequest {
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        let mut chunk = PublishRequest {
            collector_id: self.collector_id.clone(),
            epoch: self.epoch,
            sequence,
            timestamp_unix_ms,
            mixing: mixing as i32,
            sources,
            crc32c: crc32c::crc32c(&data),
            data,
            key_id: self.key_id.clone(),
            mac: Vec::new(),
        };
        chunk.mac = chunk_mac(&self.key, &chunk).to_vec();
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
        let mut signer = ChunkSigner::new("c", "k", key.clone()).expect("signer");
        let a = signer.sign(vec![1, 2, 3], Mixing::None, Vec::new());
        let b = signer.sign(vec![1, 2, 3], Mixing::None, Vec::new());
        assert_eq!((a.sequence, b.sequence), (0, 1));
        assert_eq!(a.epoch, b.epoch);
        assert!(verify_chunk_mac(&key, &a) && verify_chunk_mac(&key, &b));
        assert_ne!(a.mac, b.mac);
        assert_eq!(a.crc32c, crc32c::crc32c(&[1, 2, 3]));
    }

    #[test]
    fn each_process_draws_its_own_epoch() {
        let a = ChunkSigner::new("c", "k", vec![0; 32]).expect("signer");
        let b = ChunkSigner::new("c", "k", vec![0; 32]).expect("signer");
        assert_ne!(a.epoch(), b.epoch());
    }
}
