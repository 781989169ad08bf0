//! Rust client for Entropy Diode: quantum random bytes, numbers and UUIDs over gRPC, each byte
//! served to you alone.
//!
//! ```no_run
//! # async fn demo() -> Result<(), entropy_client::Error> {
//! let client = entropy_client::Client::connect("http://127.0.0.1:50051", "my-key").await?;
//! let bytes = client.get_bytes(32).await?;
//! let dice = client.get_integers(1, 6, 10).await?;
//! let mut stream = client.stream(Some(1 << 20), 64 << 10); // an AsyncRead
//! # Ok(()) }
//! ```
//!
//! Layout: [`client`] (connection, unary calls), [`stream`] (an `AsyncRead` over StreamRandom
//! that reconnects without losing or repeating what it handed out), [`rng`] (rand_core
//! adapters), [`error`] (errors by gRPC status). The `entropy` binary is the CLI.

pub mod client;
pub mod error;
pub mod rng;
pub mod stream;

pub use client::{Client, ClientBuilder};
pub use entropy_proto::v1::GetStatusResponse as Status;
pub use error::Error;
pub use rng::PrefetchedRng;
pub use stream::RandomStream;
