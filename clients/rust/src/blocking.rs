//! A blocking client, for programs without an async runtime (a CLI tool, a build script, a
//! test fixture): the same calls as [`Client`], each run to completion on a runtime of the
//! client's own, and a stream that is a [`std::io::Read`] and, as [`StreamRng`], an RNG.
//!
//! ```no_run
//! use std::io::Read;
//! use entropy_diode_client::blocking::BlockingClient;
//! use entropy_diode_client::ClientBuilder;
//!
//! let client = BlockingClient::connect(ClientBuilder::from_env())?;
//! let dice = client.get_integers(1, 6, 10)?;
//! let mut stream = client.stream(Some(1 << 20), 64 << 10);
//! let mut buf = vec![0u8; 1 << 20];
//! stream.read_exact(&mut buf)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Calling it from inside an async runtime would block that runtime's thread: the constructor
//! refuses there ([`Error::Config`]) instead; use [`Client`] in async code.

use std::io;
use std::sync::Arc;

use rand_core::{TryCryptoRng, TryRng};
use tokio::io::AsyncReadExt;
use tokio::runtime::Runtime;

use crate::client::{Client, ClientBuilder, Draw};
use crate::error::Error;
use crate::receipt_log::{AuditError, GatewayKey, ReceiptLog, ReceiptPage};
use crate::receipted::Receipted;
use crate::stream::RandomStream;
use entropy_proto::v1::{CheckQualityResponse, GetStatusResponse, GetUsageResponse};
use entropy_receipts::merkle::Hash;
use entropy_receipts::verify::AuditEntry;
use entropy_receipts::{KeyNameDigest, PublicKey, SignedTreeHead};

/// [`Client`] without async: each call blocks until it is answered (or its deadline passes).
/// Cheap to clone; clones share the connection and the runtime.
#[derive(Clone)]
pub struct BlockingClient {
    runtime: Arc<Runtime>,
    inner: Client,
}

impl std::fmt::Debug for BlockingClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockingClient").field("inner", &self.inner).finish_non_exhaustive()
    }
}

impl BlockingClient {
    /// A client built by `builder` (see [`ClientBuilder`]), on a current-thread runtime of its
    /// own. Refused inside an async runtime.
    pub fn connect(builder: ClientBuilder) -> Result<Self, Error> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(Error::Config(
                "BlockingClient inside an async runtime would block its thread: use Client".into(),
            ));
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Config(format!("cannot start the client's runtime: {e}")))?;
        let inner = runtime.block_on(builder.connect())?;
        Ok(Self { runtime: Arc::new(runtime), inner })
    }

    /// Exactly `n` random bytes (1..=1048576).
    pub fn get_bytes(&self, n: u32) -> Result<Vec<u8>, Error> {
        self.runtime.block_on(self.inner.get_bytes(n))
    }

    /// `n` random bytes with where they came from.
    pub fn draw(&self, n: u32) -> Result<Draw, Error> {
        self.runtime.block_on(self.inner.draw(n))
    }

    /// `count` integers, each uniform in `min..=max`.
    pub fn get_integers(&self, min: i64, max: i64, count: u32) -> Result<Vec<i64>, Error> {
        self.runtime.block_on(self.inner.get_integers(min, max, count))
    }

    /// `count` floats in [0, 1), 53 random bits each.
    pub fn get_floats(&self, count: u32) -> Result<Vec<f64>, Error> {
        self.runtime.block_on(self.inner.get_floats(count))
    }

    /// `count` random (version 4) UUIDs.
    pub fn get_uuids(&self, count: u32) -> Result<Vec<uuid::Uuid>, Error> {
        self.runtime.block_on(self.inner.get_uuids(count))
    }

    /// `n` random bytes with the draw's signed receipt (see [`Client::get_bytes_with_receipt`]).
    pub fn get_bytes_with_receipt(&self, n: u32) -> Result<Receipted<Vec<u8>>, Error> {
        self.runtime.block_on(self.inner.get_bytes_with_receipt(n))
    }

    /// `count` integers in `min..=max` with the draw's signed receipt.
    pub fn get_integers_with_receipt(
        &self,
        min: i64,
        max: i64,
        count: u32,
    ) -> Result<Receipted<Vec<i64>>, Error> {
        self.runtime.block_on(self.inner.get_integers_with_receipt(min, max, count))
    }

    /// `count` floats in [0, 1) with the draw's signed receipt.
    pub fn get_floats_with_receipt(&self, count: u32) -> Result<Receipted<Vec<f64>>, Error> {
        self.runtime.block_on(self.inner.get_floats_with_receipt(count))
    }

    /// `count` version 4 UUIDs with the draw's signed receipt.
    pub fn get_uuids_with_receipt(&self, count: u32) -> Result<Receipted<Vec<uuid::Uuid>>, Error> {
        self.runtime.block_on(self.inner.get_uuids_with_receipt(count))
    }

    /// The gateway's receipt log over this client's connection (see [`ReceiptLog`]).
    pub fn receipt_log(&self) -> BlockingReceiptLog {
        BlockingReceiptLog { runtime: self.runtime.clone(), inner: self.inner.receipt_log() }
    }

    /// The gateway's status.
    pub fn status(&self) -> Result<GetStatusResponse, Error> {
        self.runtime.block_on(self.inner.status())
    }

    /// The key's limits and what is left of each (see [`Client::usage`]).
    pub fn usage(&self) -> Result<GetUsageResponse, Error> {
        self.runtime.block_on(self.inner.usage())
    }

    /// A statistical check of `sample_bytes` drawn for it (see [`Client::check_quality`]).
    pub fn check_quality(&self, sample_bytes: u32) -> Result<CheckQualityResponse, Error> {
        self.runtime.block_on(self.inner.check_quality(sample_bytes))
    }

    /// A stream of `total` bytes (`None`: endless) in messages of `chunk_bytes`, as a
    /// [`std::io::Read`]; it reconnects by [`Client::stream`]'s rule.
    pub fn stream(&self, total: Option<u64>, chunk_bytes: u32) -> BlockingStream {
        let runtime = self.runtime.clone();
        let stream = runtime.block_on(async { self.inner.stream(total, chunk_bytes) });
        BlockingStream { runtime, stream }
    }

    /// An RNG on an endless stream of `chunk_bytes` messages: every value from gateway bytes,
    /// each used once.
    pub fn stream_rng(&self, chunk_bytes: u32) -> StreamRng {
        StreamRng { stream: self.stream(None, chunk_bytes) }
    }
}

/// [`ReceiptLog`] without async; each call blocks on the client's runtime.
#[derive(Debug, Clone)]
pub struct BlockingReceiptLog {
    runtime: Arc<Runtime>,
    inner: ReceiptLog,
}

impl BlockingReceiptLog {
    /// See [`ReceiptLog::public_key`].
    pub fn public_key(&self) -> Result<GatewayKey, Error> {
        self.runtime.block_on(self.inner.public_key())
    }

    /// See [`ReceiptLog::signed_tree_head`].
    pub fn signed_tree_head(&self) -> Result<SignedTreeHead, Error> {
        self.runtime.block_on(self.inner.signed_tree_head())
    }

    /// See [`ReceiptLog::wait_for_head`].
    pub fn wait_for_head(
        &self,
        serial: u64,
        within: std::time::Duration,
    ) -> Result<SignedTreeHead, Error> {
        self.runtime.block_on(self.inner.wait_for_head(serial, within))
    }

    /// See [`ReceiptLog::inclusion_proof`].
    pub fn inclusion_proof(&self, serial: u64, tree_size: u64) -> Result<Vec<Hash>, Error> {
        self.runtime.block_on(self.inner.inclusion_proof(serial, tree_size))
    }

    /// See [`ReceiptLog::consistency_proof`].
    pub fn consistency_proof(&self, old_size: u64, new_size: u64) -> Result<Vec<Hash>, Error> {
        self.runtime.block_on(self.inner.consistency_proof(old_size, new_size))
    }

    /// See [`ReceiptLog::list_receipts`].
    pub fn list_receipts(
        &self,
        start_serial: u64,
        max_receipts: u32,
    ) -> Result<ReceiptPage, Error> {
        self.runtime.block_on(self.inner.list_receipts(start_serial, max_receipts))
    }

    /// See [`ReceiptLog::all_receipts`].
    pub fn all_receipts(&self, tree_size: u64) -> Result<Vec<Vec<u8>>, Error> {
        self.runtime.block_on(self.inner.all_receipts(tree_size))
    }

    /// See [`ReceiptLog::audit`].
    pub fn audit(
        &self,
        dir: &std::path::Path,
        head: &SignedTreeHead,
        key: &PublicKey,
        key_name_digest: &KeyNameDigest,
        serials: std::ops::Range<u64>,
    ) -> Result<Vec<AuditEntry>, AuditError> {
        self.runtime.block_on(self.inner.audit(dir, head, key, key_name_digest, serials))
    }

    /// See [`ReceiptLog::audit_in_memory`].
    pub fn audit_in_memory(
        &self,
        head: &SignedTreeHead,
        key: &PublicKey,
        key_name_digest: &KeyNameDigest,
        serials: std::ops::Range<u64>,
    ) -> Result<Vec<AuditEntry>, AuditError> {
        self.runtime.block_on(self.inner.audit_in_memory(head, key, key_name_digest, serials))
    }
}

/// A [`RandomStream`] as a blocking [`std::io::Read`]: EOF after its total, errors as
/// `io::Error` wrapping the client's [`Error`].
pub struct BlockingStream {
    runtime: Arc<Runtime>,
    stream: RandomStream,
}

impl std::fmt::Debug for BlockingStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockingStream").field("stream", &self.stream).finish_non_exhaustive()
    }
}

impl BlockingStream {
    /// How many times the stream reconnected.
    pub fn reconnects(&self) -> u32 {
        self.stream.reconnects()
    }
}

impl io::Read for BlockingStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Self { runtime, stream } = self;
        runtime.block_on(stream.read(buf))
    }
}

/// A fallible RNG (`rand_core::TryRng`, and `TryCryptoRng`) on an endless gateway stream: it
/// fails when the stream does (its reconnect budget spent, a revoked key), never stretching
/// what it got. Wrap it in `rand_core::UnwrapErr` for `rand`'s infallible APIs.
#[derive(Debug)]
pub struct StreamRng {
    stream: BlockingStream,
}

impl TryRng for StreamRng {
    type Error = io::Error;

    fn try_next_u32(&mut self) -> Result<u32, io::Error> {
        let mut word = [0u8; 4];
        io::Read::read_exact(&mut self.stream, &mut word)?;
        Ok(u32::from_le_bytes(word))
    }

    fn try_next_u64(&mut self) -> Result<u64, io::Error> {
        let mut word = [0u8; 8];
        io::Read::read_exact(&mut self.stream, &mut word)?;
        Ok(u64::from_le_bytes(word))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), io::Error> {
        io::Read::read_exact(&mut self.stream, dst)
    }
}

impl TryCryptoRng for StreamRng {}
