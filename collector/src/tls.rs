//! TLS client settings for appliances (rustls with the ring provider of
//! [`entropy_ops::tls::provider`]).
//!
//! An appliance is trusted through a CA file (its issuing CA, or its self-signed certificate
//! used as a CA), through one pinned certificate (SHA-256 of its DER encoding), or through the
//! public web PKI roots. There is deliberately no "accept any certificate" option.

use std::path::PathBuf;
use std::sync::Arc;

use entropy_ops::tls::provider;
use rustls::DigitallySignedStruct;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// How a server certificate is trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustAnchor {
    /// Certificates chaining to the CA certificates in this PEM file.
    CaFile(PathBuf),
    /// Exactly this certificate: SHA-256 of its DER encoding.
    Pinned([u8; 32]),
    /// The Mozilla root program (for appliances behind a publicly trusted name).
    WebPki,
}

/// TLS could not be configured.
#[derive(Debug, thiserror::Error)]
#[error("tls: {0}")]
pub struct TlsError(String);

/// A rustls client config trusting `anchor`.
pub fn client_config(anchor: &TrustAnchor) -> Result<rustls::ClientConfig, TlsError> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError(e.to_string()))?;
    let config = match anchor {
        TrustAnchor::CaFile(path) => {
            let mut roots = rustls::RootCertStore::empty();
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| TlsError(format!("{}: {e}", path.display())))?;
            for cert in certs {
                let cert = cert.map_err(|e| TlsError(format!("{}: {e}", path.display())))?;
                roots.add(cert).map_err(|e| TlsError(format!("{}: {e}", path.display())))?;
            }
            if roots.is_empty() {
                return Err(TlsError(format!("{}: no certificate", path.display())));
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        TrustAnchor::Pinned(sha256) => builder
            .dangerous() // a verifier of our own; it is stricter than a CA, not looser
            .with_custom_certificate_verifier(Arc::new(PinnedCert {
                sha256: *sha256,
                provider: provider(),
            }))
            .with_no_client_auth(),
        TrustAnchor::WebPki => {
            let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
            builder.with_root_certificates(roots).with_no_client_auth()
        }
    };
    Ok(config)
}

/// SHA-256 of a certificate's DER encoding, as pinned.
pub fn cert_sha256(der: &[u8]) -> [u8; 32] {
    Sha256::digest(der).into()
}

/// Accepts exactly one certificate, and checks the handshake signatures made with its key.
#[derive(Debug)]
struct PinnedCert {
    sha256: [u8; 32],
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for PinnedCert {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if bool::from(cert_sha256(end_entity).ct_eq(&self.sha256)) {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}
