//! TLS for the gateway's listeners: rustls with the ring provider only (STACK.md), set up by
//! [`entropy_ops::tls`] as every TLS listener of the project is.
//!
//! TLS 1.3 only by default; TLS 1.2 when the operator opts in. With a client CA, a client
//! certificate chaining to it is required (mTLS), as on the ingest listener where collectors
//! authenticate with their certificate.
//!
//! The listeners run each handshake in the connection's own task, within
//! [`HANDSHAKE_TIMEOUT`], so a slow or silent client never holds up accepting others
//! ([`super::serve`]).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub use entropy_ops::tls::TlsError;
use entropy_ops::tls::{Identity, ServerSettings, Versions};

/// Longest a TLS handshake may take before the connection is dropped.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// TLS settings of one listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles<'a> {
    /// PEM certificate chain, leaf first.
    pub cert: &'a Path,
    /// PEM private key.
    pub key: &'a Path,
    /// PEM CA certificates; when given, clients must present a certificate chaining to one.
    pub client_ca: Option<&'a Path>,
    /// Accept TLS 1.2 as well as 1.3.
    pub allow_tls12: bool,
}

/// A rustls server config for `files`, speaking HTTP/2 (ALPN `h2`); the set-up is
/// [`entropy_ops::tls`]'s.
pub fn server_config(files: &TlsFiles<'_>) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let identity = Identity::from_pem_files(files.cert, files.key)?;
    let versions = if files.allow_tls12 { Versions::Tls13And12 } else { Versions::Tls13 };
    entropy_ops::tls::server_config(
        identity,
        &ServerSettings { versions, client_ca: files.client_ca, alpn: &[b"h2"] },
    )
}

/// `config` offering HTTP/1.1 as well as HTTP/2 by ALPN (HTTP/2 preferred), for a listener
/// that serves both ([`super::Listener::http1`]).
pub(crate) fn with_http1(config: &Arc<rustls::ServerConfig>) -> Arc<rustls::ServerConfig> {
    let mut config = rustls::ServerConfig::clone(config);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Arc::new(config)
}
