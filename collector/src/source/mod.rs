//! Entropy sources behind one trait, each with a name and an honest kind.

pub mod os;

use entropy_proto::v1::SourceKind;

/// Why a source could not deliver bytes.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The source failed to produce bytes.
    #[error("source {name} failed: {message}")]
    Failed {
        /// The source's name.
        name: String,
        /// What went wrong.
        message: String,
    },
}

/// A source of raw entropy.
#[tonic::async_trait]
pub trait Source: Send {
    /// Operator-given name, unique within the collector.
    fn name(&self) -> &str;
    /// What kind of source this is; reported with every chunk.
    fn kind(&self) -> SourceKind;
    /// Reads exactly `n` bytes.
    async fn read(&mut self, n: usize) -> Result<Vec<u8>, SourceError>;
}
