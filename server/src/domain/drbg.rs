//! DRBG output seeded from the pool: the `CONSTRUCTION_DRBG` calls.
//!
//! A caller that asks for it gets the output of an SP 800-90A CTR_DRBG instance (AES-256, the
//! derivation function, 256-bit strength: [`entropy_drbg::CtrDrbg`], about 40 times faster than
//! its HMAC_DRBG, drbg/README.md) of its own instead of pool bytes: one instance per unary call, one per stream, never shared and never reused,
//! its state wiped when it drops ([`entropy_drbg`]). The instance is instantiated from
//! [`SEED_BYTES`] pool bytes and reseeded with [`RESEED_BYTES`] more, each drawn for the caller
//! like any draw (served once, the key's fair share, the call's accepted kinds), so a seed byte
//! never seeds two instances and a quantum-only call is seeded from quantum sources only.
//!
//! It reseeds before a generate request once it has produced `reseed_interval_bytes` or was
//! seeded `reseed_interval` ago, and before every request with prediction resistance. A request
//! is at most [`MAX_REQUEST`] bytes (the mechanism's limit), so a 1 MiB call is 16 requests.
//!
//! What the instance says about itself ([`Label`]) and where its seeds came from (a
//! [`Provenance`] merged over every seed) go out with every response.

use std::time::Duration;

use entropy_drbg::CtrDrbg;
use tokio::time::Instant;

use super::pool::Provenance;

/// Pool bytes an instance is instantiated from: 32 of entropy input (its 256-bit security
/// strength) and 16 of nonce.
pub(crate) const SEED_BYTES: usize = 48;
/// Pool bytes of one reseed: the entropy input at the instance's security strength.
pub(crate) const RESEED_BYTES: usize = 32;
/// The most bytes one generate request may produce (SP 800-90A: 2^19 bits).
pub(crate) const MAX_REQUEST: usize = 1 << 16;
/// The instance's security strength, in bits.
pub(crate) const SECURITY_STRENGTH_BITS: u32 = 256;

/// The default output between reseeds: 1 GiB. The mechanism allows 2^48 requests; a bound this
/// low limits what a state captured from memory would reveal to at most 1 GiB of output of one
/// stream, at a cost of 32 pool bytes per GiB.
pub(crate) const DEFAULT_RESEED_INTERVAL_BYTES: u64 = 1 << 30;
/// The default time between reseeds: 60 s. It bounds how long a stream's output depends on one
/// seeding whatever its rate, at a cost of 32 pool bytes per stream per minute (1,000 open
/// streams draw about 0.5 KB/s, under 1 % of one appliance's 80 KB/s).
pub(crate) const DEFAULT_RESEED_INTERVAL: Duration = Duration::from_secs(60);

/// When instances reseed (config keys `drbg_reseed_interval_bytes`, `drbg_reseed_interval_ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reseeding {
    /// Output after which an instance reseeds before its next request.
    pub interval_bytes: u64,
    /// Time after which an instance reseeds before its next request.
    pub interval: Duration,
}

impl Default for Reseeding {
    fn default() -> Self {
        Self { interval_bytes: DEFAULT_RESEED_INTERVAL_BYTES, interval: DEFAULT_RESEED_INTERVAL }
    }
}

/// A caller's construction: pool bytes, or the output of an instance of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Construction {
    /// Pool bytes, each to one caller once.
    #[default]
    Raw,
    /// DRBG output; with prediction resistance, reseeded before every request.
    Drbg {
        /// Reseed before every generate request.
        prediction_resistance: bool,
    },
}

/// What an instance says about itself as of a response (the wire's `DrbgLabel`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Label {
    /// 32 hex digits, random per instance.
    pub(crate) instance_id: String,
    /// Reseeds since instantiation.
    pub(crate) reseeds: u64,
    /// Output since the last seeding, before the response's bytes.
    pub(crate) bytes_since_reseed: u64,
    /// Pool bytes that seeded it so far.
    pub(crate) seed_bytes: u64,
    /// Reseeds before every request.
    pub(crate) prediction_resistance: bool,
}

/// A DRBG instance of one call or stream.
pub(crate) struct Instance {
    drbg: CtrDrbg,
    id: String,
    reseeds: u64,
    since_reseed: u64,
    seeded_at: Instant,
    seed_bytes: u64,
    /// Where every seed so far came from.
    seeds: Provenance,
    prediction_resistance: bool,
    reseeding: Reseeding,
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance")
            .field("id", &self.id)
            .field("reseeds", &self.reseeds)
            .field("since_reseed", &self.since_reseed)
            .finish_non_exhaustive()
    }
}

/// Seed bytes of the wrong length, or the mechanism refused them (never for pool bytes of the
/// right length).
#[derive(Debug, thiserror::Error)]
#[error("the DRBG refused its seed: {0}")]
pub(crate) struct SeedRefused(#[from] entropy_drbg::DrbgError);

impl Instance {
    /// An instance seeded with `seed` ([`SEED_BYTES`] pool bytes, which it wipes with the
    /// caller's copy when dropped) whose origin is `origin`, at `now`.
    pub(crate) fn instantiate(
        seed: &[u8],
        origin: Provenance,
        now: Instant,
        prediction_resistance: bool,
        reseeding: Reseeding,
    ) -> Result<Self, SeedRefused> {
        let (entropy, nonce) = seed.split_at(seed.len().min(RESEED_BYTES));
        let drbg = CtrDrbg::instantiate(entropy, nonce, b"entropy-diode gateway")?;
        Ok(Self {
            drbg,
            id: instance_id(),
            reseeds: 0,
            since_reseed: 0,
            seeded_at: now,
            seed_bytes: seed.len() as u64,
            seeds: origin,
            prediction_resistance,
            reseeding,
        })
    }

    /// Whether the instance must reseed before its next request, at `now`.
    pub(crate) fn needs_reseed(&self, now: Instant) -> bool {
        self.prediction_resistance
            || self.since_reseed >= self.reseeding.interval_bytes
            || now.saturating_duration_since(self.seeded_at) >= self.reseeding.interval
    }

    /// Reseeds with `seed` ([`RESEED_BYTES`] pool bytes) whose origin is `origin`, at `now`.
    pub(crate) fn reseed(
        &mut self,
        seed: &[u8],
        origin: &Provenance,
        now: Instant,
    ) -> Result<(), SeedRefused> {
        self.drbg.reseed(seed, &[])?;
        self.reseeds += 1;
        self.since_reseed = 0;
        self.seeded_at = now;
        self.seed_bytes += seed.len() as u64;
        self.seeds.merge(origin);
        Ok(())
    }

    /// Fills `out` (at most [`MAX_REQUEST`] bytes) with one generate request. The caller
    /// reseeds first when [`Self::needs_reseed`] says so.
    pub(crate) fn generate(&mut self, out: &mut [u8]) -> Result<(), SeedRefused> {
        self.drbg.generate(out, &[])?;
        self.since_reseed += out.len() as u64;
        Ok(())
    }

    /// The instance as of now (before the bytes it produces next).
    pub(crate) fn label(&self) -> Label {
        Label {
            instance_id: self.id.clone(),
            reseeds: self.reseeds,
            bytes_since_reseed: self.since_reseed,
            seed_bytes: self.seed_bytes,
            prediction_resistance: self.prediction_resistance,
        }
    }

    /// Where its seeds came from.
    pub(crate) fn seeds(&self) -> &Provenance {
        &self.seeds
    }
}

/// 16 random bytes as 32 hex digits: opaque, never derived from the seed or the state.
fn instance_id() -> String {
    let mut id = [0u8; 16];
    // The OS generator; should it ever fail, the id is still unique enough for a label
    // (the clock), and nothing secret depends on it.
    if getrandom::fill(&mut id).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        id = nanos.to_le_bytes();
    }
    hex::encode(id)
}
