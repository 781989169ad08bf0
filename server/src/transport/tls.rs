//! TLS for the gateway's listeners: rustls with the ring provider only (STACK.md).
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

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;

/// Longest a TLS handshake may take before the connection is dropped.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

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

/// TLS could not be configured.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {problem}")]
pub struct TlsError {
    /// The file (or setting) at fault.
    pub file: String,
    /// What is wrong.
    pub problem: String,
}

fn tls_error(file: &Path, problem: impl std::fmt::Display) -> TlsError {
    TlsError { file: file.display().to_string(), problem: problem.to_string() }
}

/// The ring crypto provider; the only one compiled in.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A rustls server config for `files`, speaking HTTP/2 (ALPN `h2`).
pub fn server_config(files: &TlsFiles<'_>) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(files.cert)
        .map_err(|e| tls_error(files.cert, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| tls_error(files.cert, e))?;
    if certs.is_empty() {
        return Err(tls_error(files.cert, "no certificate in the file"));
    }
    let key = PrivateKeyDer::from_pem_file(files.key).map_err(|e| tls_error(files.key, e))?;
    let versions: &[&rustls::SupportedProtocolVersion] = if files.allow_tls12 {
        &[&rustls::version::TLS13, &rustls::version::TLS12]
    } else {
        &[&rustls::version::TLS13]
    };
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(versions)
        .map_err(|e| tls_error(files.cert, e))?;
    let builder = match files.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_file_iter(ca).map_err(|e| tls_error(ca, e))? {
                roots.add(cert.map_err(|e| tls_error(ca, e))?).map_err(|e| tls_error(ca, e))?;
            }
            if roots.is_empty() {
                return Err(tls_error(ca, "no CA certificate in the file"));
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .map_err(|e| tls_error(ca, e))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(certs, key).map_err(|e| tls_error(files.key, e))?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}
