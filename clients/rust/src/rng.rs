//! `rand_core` adapters: seed a local PRNG from the service, or use fetched entropy as an RNG.
//!
//! [`PrefetchedRng`] is a `TryRng` + `TryCryptoRng` over bytes fetched in one call. It never
//! stretches them: when they are used up it returns [`Exhausted`] rather than falling back to
//! anything else. Wrap it in `rand_core::UnwrapErr` to use `rand`'s infallible APIs (a panic
//! then marks the end of the fetched bytes).

use rand_core::{SeedableRng, TryCryptoRng, TryRng};
use zeroize::Zeroizing;

use crate::client::Client;
use crate::error::Error;

/// The prefetched entropy is used up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the prefetched entropy is used up")]
pub struct Exhausted;

/// An RNG that hands out bytes fetched from the gateway, each once.
pub struct PrefetchedRng {
    bytes: Zeroizing<Vec<u8>>,
    pos: usize,
}

impl std::fmt::Debug for PrefetchedRng {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrefetchedRng")
            .field("remaining", &self.remaining())
            .finish_non_exhaustive()
    }
}

impl PrefetchedRng {
    /// An RNG over `bytes`.
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        Self { bytes: Zeroizing::new(bytes), pos: 0 }
    }

    /// Bytes not yet handed out.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The next `n` bytes, all or none.
    fn take(&mut self, n: usize) -> Result<&[u8], Exhausted> {
        if self.remaining() < n {
            return Err(Exhausted);
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }
}

impl TryRng for PrefetchedRng {
    type Error = Exhausted;

    fn try_next_u32(&mut self) -> Result<u32, Exhausted> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn try_next_u64(&mut self) -> Result<u64, Exhausted> {
        let b = self.take(8)?;
        let mut word = [0u8; 8];
        word.copy_from_slice(b);
        Ok(u64::from_le_bytes(word))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Exhausted> {
        let b = self.take(dst.len())?;
        dst.copy_from_slice(b);
        Ok(())
    }
}

impl TryCryptoRng for PrefetchedRng {}

impl Client {
    /// Fetches `n` bytes (1..=1048576) into a [`PrefetchedRng`].
    pub async fn prefetched_rng(&self, n: u32) -> Result<PrefetchedRng, Error> {
        Ok(PrefetchedRng::from_bytes(self.get_bytes(n).await?))
    }

    /// A local PRNG `R` seeded with a full seed of fresh bytes from the gateway.
    pub async fn seed<R: SeedableRng>(&self) -> Result<R, Error> {
        let mut seed = R::Seed::default();
        let len = seed.as_ref().len();
        let n = u32::try_from(len).map_err(|_| Error::Config(format!("seed of {len} bytes")))?;
        seed.as_mut().copy_from_slice(&self.get_bytes(n).await?);
        Ok(R::from_seed(seed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_out_each_byte_once_then_reports_exhaustion() {
        let mut rng = PrefetchedRng::from_bytes((0u8..16).collect());
        assert_eq!(rng.try_next_u32(), Ok(u32::from_le_bytes([0, 1, 2, 3])));
        assert_eq!(rng.try_next_u64(), Ok(u64::from_le_bytes([4, 5, 6, 7, 8, 9, 10, 11])));
        let mut five = [0u8; 5];
        assert_eq!(rng.try_fill_bytes(&mut five), Err(Exhausted), "all or nothing");
        assert_eq!(rng.remaining(), 4);
        assert_eq!(rng.try_next_u32(), Ok(u32::from_le_bytes([12, 13, 14, 15])));
        assert_eq!(rng.try_next_u32(), Err(Exhausted));
    }
}
