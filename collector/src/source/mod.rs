//! Entropy sources behind one trait, each with a name and an honest kind.
//!
//! - [`quantis`]: an ID Quantique Quantis appliance over its REST API v2.0 (HTTPS).
//! - [`device`]: a character device or FIFO (`/dev/hwrng`, a Quantis PCIe/USB `/dev/qrandom0`).
//! - [`os`]: the kernel CSPRNG, labelled `os`, never quantum.

pub mod device;
pub mod os;
#[cfg(feature = "quantis")]
pub mod quantis;

use crate::config::{SourceConfig, SourceSpec};
use crate::provenance::SourceKind;

/// Why a source could not be set up from its config.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// A Quantis source whose client could not be made (its TLS trust, say).
    #[cfg(feature = "quantis")]
    #[error(transparent)]
    Quantis(#[from] quantis::SetupError),
    /// A Quantis source in a build without the `quantis` feature.
    #[cfg(not(feature = "quantis"))]
    #[error(
        "source {0:?}: this build has no Quantis support (built without the `quantis` feature)"
    )]
    QuantisNotBuilt(String),
}

/// The source a `[[source]]` table describes.
pub fn open(config: &SourceConfig) -> Result<Box<dyn Source>, OpenError> {
    Ok(match &config.spec {
        SourceSpec::Os => Box::new(os::OsSource::new(&config.name)),
        SourceSpec::Device { path, .. } => {
            Box::new(device::DeviceSource::new(&config.name, config.kind(), path.clone()))
        }
        #[cfg(not(feature = "quantis"))]
        SourceSpec::Quantis(_) => return Err(OpenError::QuantisNotBuilt(config.name.clone())),
        #[cfg(feature = "quantis")]
        SourceSpec::Quantis(q) => Box::new(quantis::QuantisSource::new(
            &config.name,
            quantis::QuantisOptions {
                base_url: q.url.clone(),
                trust: q.trust.clone(),
                allow_http: q.allow_http,
                request_timeout: std::time::Duration::from_millis(q.request_timeout_ms),
                attempts: q.attempts,
                initial_backoff: std::time::Duration::from_millis(100),
                max_backoff: std::time::Duration::from_secs(2),
            },
        )?),
    })
}

/// Why a source could not deliver bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    /// The source could not be reached or read (network, I/O); it may come back.
    #[error("{name} unreachable: {message}")]
    Unreachable {
        /// The source's name.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// The source answered, but with something that cannot be entropy (an HTML page, the
    /// wrong length, constant bytes). Treated like a failed health test: quarantine.
    #[error("{name} failed a sanity check: {check}")]
    Insane {
        /// The source's name.
        name: String,
        /// Which check failed.
        check: SanityCheck,
    },
}

/// Sanity checks on what a source returned, before the statistical health tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SanityCheck {
    /// Fewer or more bytes than asked for.
    WrongLength {
        /// Bytes asked for.
        wanted: usize,
        /// Bytes received.
        got: usize,
    },
    /// An HTML page (an error page from a proxy or the appliance) instead of bytes.
    Html,
    /// Every byte the same.
    Constant,
    /// A JSON body that is not an array of byte values.
    BadJson,
    /// An HTTP status other than 200.
    HttpStatus(u16),
}

impl SanityCheck {
    /// Every check's label, in the order of [`SanityCheck::index`].
    pub const LABELS: [&'static str; 5] =
        ["wrong_length", "html", "constant", "bad_json", "http_status"];

    /// Its position in [`SanityCheck::LABELS`].
    pub fn index(&self) -> usize {
        match self {
            Self::WrongLength { .. } => 0,
            Self::Html => 1,
            Self::Constant => 2,
            Self::BadJson => 3,
            Self::HttpStatus(_) => 4,
        }
    }

    /// A stable label for logs and metrics.
    pub fn label(&self) -> &'static str {
        Self::LABELS[self.index()]
    }
}

impl std::fmt::Display for SanityCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::WrongLength { wanted, got } => write!(f, "asked for {wanted} bytes, got {got}"),
            Self::Html => f.write_str("got an HTML page instead of bytes"),
            Self::Constant => f.write_str("every byte is the same"),
            Self::BadJson => f.write_str("JSON body is not an array of byte values"),
            Self::HttpStatus(code) => write!(f, "HTTP status {code}"),
        }
    }
}

/// A source of raw entropy.
#[tonic::async_trait]
pub trait Source: Send + Sync {
    /// Operator-given name, unique within the collector.
    fn name(&self) -> &str;
    /// What kind of source this is; reported with every chunk.
    fn kind(&self) -> SourceKind;
    /// Reads exactly `n` bytes.
    async fn read(&mut self, n: usize) -> Result<Vec<u8>, SourceError>;
}

/// Checks that apply to every source's output: exact length, not constant.
pub fn sanity(name: &str, wanted: usize, bytes: &[u8]) -> Result<(), SourceError> {
    let insane = |check| Err(SourceError::Insane { name: name.to_owned(), check });
    if bytes.len() != wanted {
        return insane(SanityCheck::WrongLength { wanted, got: bytes.len() });
    }
    if bytes.len() > 1 && bytes.iter().all(|b| *b == bytes[0]) {
        return insane(SanityCheck::Constant);
    }
    Ok(())
}
