//! Rust client for Entropy Diode: quantum random bytes, numbers and UUIDs over gRPC, each byte
//! served to you alone.
//!
//! ```no_run
//! # async fn demo() -> Result<(), entropy_diode_client::Error> {
//! // ENTROPY_ENDPOINT, ENTROPY_API_KEY and ENTROPY_CA_FILE (clients/README.md):
//! let client = entropy_diode_client::ClientBuilder::from_env().connect().await?;
//! let bytes = client.get_bytes(32).await?;
//! let dice = client.get_integers(1, 6, 10).await?;
//! let mut stream = client.stream(Some(1 << 20), 64 << 10); // an AsyncRead
//! # Ok(()) }
//! ```
//!
//! Layout: [`client`] (connection, unary calls), [`endpoint`] (the endpoint syntax),
//! [`api_key`] (key checks), [`stream`] (an `AsyncRead` over StreamRandom that reconnects
//! without losing or repeating what it handed out), [`reconnect`] (the rule it follows),
//! [`rng`] (rand_core adapters), [`blocking`] (the same without async: a client, a
//! `std::io::Read` stream and a stream-backed RNG), [`error`] (errors by gRPC status). The
//! `entropy` CLI is the `entropy-diode-cli` crate.
//!
//! Receipts (docs/receipts.md): [`receipted`] (`Client::get_*_with_receipt` return the values
//! with their signed receipt, and the checks of one draw), [`draw_file`] (the JSON a draw is
//! kept and handed over in), [`receipt_log`] (the gateway's log: public key, signed heads,
//! proofs, the listing and an auditor's check of it), and [`receipts`], the verifier crate
//! `entropy-receipts` itself.

pub mod api_key;
pub mod blocking;
pub mod client;
pub mod draw_file;
pub mod endpoint;
pub mod error;
pub mod receipt_log;
pub mod receipted;
pub mod reconnect;
pub mod rng;
pub mod stream;

pub use client::{Client, ClientBuilder, DEFAULT_STREAM_WINDOW, DEFAULT_TIMEOUT, Draw};
pub use draw_file::DrawFile;
pub use endpoint::Endpoint;
pub use entropy_proto::v1 as proto;
pub use entropy_proto::v1::GetStatusResponse as Status;
pub use entropy_proto::v1::GetUsageResponse as Usage;
pub use entropy_proto::v1::{
    CheckQualityResponse as QualityReport, Construction, DrawProvenance, DrbgLabel, SourceKind,
};
/// The receipt verifier (`entropy-receipts`): receipts, signed heads, proofs and their checks.
pub use entropy_receipts as receipts;
pub use error::Error;
pub use receipt_log::ReceiptLog;
pub use receipted::{Check, DrawReceipt, Receipted, Refused, Values};
pub use reconnect::StreamOptions;
pub use rng::PrefetchedRng;
pub use stream::RandomStream;
