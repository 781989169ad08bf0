//! The one rustls server set-up of the project, shared by every listener that speaks TLS: the
//! gateway's public and ingest listeners, the MCP server's HTTP transport and the appliance
//! simulator. rustls with the ring provider only (STACK.md); what differs between them (TLS
//! versions, a client CA to require, ALPN) is a [`ServerSettings`] field.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{VerifierBuilderError, WebPkiClientVerifier};

/// The ring crypto provider; the only one compiled in, so rustls never has two to choose from.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Which TLS versions a listener accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Versions {
    /// TLS 1.3 only.
    Tls13,
    /// TLS 1.3 and 1.2.
    Tls13And12,
}

/// What a listener asks of TLS beyond its certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerSettings<'a> {
    /// The versions it accepts.
    pub versions: Versions,
    /// PEM CA certificates; when given, clients must present a certificate chaining to one.
    pub client_ca: Option<&'a Path>,
    /// ALPN protocols, in order of preference (empty: no ALPN).
    pub alpn: &'a [&'a [u8]],
}

/// A certificate chain (leaf first) and its private key.
pub struct Identity {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    /// Where the key came from (its file, say), to name in an error about the pair.
    origin: String,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity").field("origin", &self.origin).finish_non_exhaustive()
    }
}

impl Identity {
    /// A chain and key made in memory (a self-signed certificate, say); `origin` names them
    /// in errors.
    pub fn new(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
        origin: impl Into<String>,
    ) -> Self {
        Self { chain, key, origin: origin.into() }
    }

    /// The chain in the PEM file `cert` (at least one certificate) and the key in the PEM
    /// file `key`.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<Self, TlsError> {
        let pem_error = |path: &Path| {
            let path = path.to_path_buf();
            move |source| TlsError::Pem { path, source }
        };
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
            .map_err(pem_error(cert))?
            .collect::<Result<_, _>>()
            .map_err(pem_error(cert))?;
        if chain.is_empty() {
            return Err(TlsError::NoCertificate { path: cert.to_path_buf() });
        }
        let private = PrivateKeyDer::from_pem_file(key).map_err(pem_error(key))?;
        Ok(Self::new(chain, private, key.display().to_string()))
    }
}

/// TLS could not be configured; each variant names the file (or what stands for it) at fault.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM file does not read, or an item in it does not parse.
    #[error("{}: {source}", path.display())]
    Pem {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        source: pem::Error,
    },
    /// A certificate file holds no certificate.
    #[error("{}: no certificate in the file", path.display())]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// A client CA file holds no CA certificate.
    #[error("{}: no CA certificate in the file", path.display())]
    NoCaCertificate {
        /// The file.
        path: PathBuf,
    },
    /// A client CA certificate cannot be a trust anchor.
    #[error("{}: {source}", path.display())]
    BadCaCertificate {
        /// The file.
        path: PathBuf,
        /// Why rustls refused it.
        source: rustls::Error,
    },
    /// No client certificate verifier could be made from the client CA file.
    #[error("{}: {source}", path.display())]
    ClientVerifier {
        /// The file.
        path: PathBuf,
        /// Why.
        source: VerifierBuilderError,
    },
    /// rustls refused the identity (a key that does not match the certificate, or of a type
    /// it cannot sign with) or the versions.
    #[error("{origin}: {source}")]
    Refused {
        /// Where the identity's key came from.
        origin: String,
        /// Why.
        source: rustls::Error,
    },
}

/// A rustls server config presenting `identity`, as `settings` say.
pub fn server_config(
    identity: Identity,
    settings: &ServerSettings<'_>,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let Identity { chain, key, origin } = identity;
    let refused = |source| TlsError::Refused { origin: origin.clone(), source };
    let versions: &[&rustls::SupportedProtocolVersion] = match settings.versions {
        Versions::Tls13 => &[&rustls::version::TLS13],
        Versions::Tls13And12 => &[&rustls::version::TLS13, &rustls::version::TLS12],
    };
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(versions)
        .map_err(refused)?;
    let builder = match settings.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => builder.with_client_cert_verifier(client_verifier(ca)?),
    };
    let mut config = builder.with_single_cert(chain, key).map_err(refused)?;
    config.alpn_protocols = settings.alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// A verifier requiring a client certificate chaining to a CA in the PEM file `ca`.
fn client_verifier(
    ca: &Path,
) -> Result<Arc<dyn rustls::server::danger::ClientCertVerifier>, TlsError> {
    let path = || ca.to_path_buf();
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca)
        .map_err(|source| TlsError::Pem { path: path(), source })?
    {
        let cert = cert.map_err(|source| TlsError::Pem { path: path(), source })?;
        roots.add(cert).map_err(|source| TlsError::BadCaCertificate { path: path(), source })?;
    }
    if roots.is_empty() {
        return Err(TlsError::NoCaCertificate { path: path() });
    }
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
        .build()
        .map_err(|source| TlsError::ClientVerifier { path: path(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-signed certificate for localhost, written as PEM into `dir`: (cert, key).
    fn self_signed(dir: &Path) -> (PathBuf, PathBuf) {
        let rcgen::CertifiedKey { cert, signing_key } =
            rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("rcgen");
        let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert_path, cert.pem()).expect("write cert");
        std::fs::write(&key_path, signing_key.serialize_pem()).expect("write key");
        (cert_path, key_path)
    }

    const H2: ServerSettings<'static> =
        ServerSettings { versions: Versions::Tls13, client_ca: None, alpn: &[b"h2"] };

    #[test]
    fn pem_files_make_a_config_with_the_asked_alpn() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (cert, key) = self_signed(dir.path());
        let settings = ServerSettings { alpn: &[b"h2", b"http/1.1"], ..H2 };
        let identity = Identity::from_pem_files(&cert, &key).expect("identity");
        let config = server_config(identity, &settings).expect("config");
        assert_eq!(config.alpn_protocols, [b"h2".to_vec(), b"http/1.1".to_vec()]);
        // The client CA may be the self-signed certificate itself.
        let settings = ServerSettings { client_ca: Some(&cert), ..H2 };
        let identity = Identity::from_pem_files(&cert, &key).expect("identity");
        server_config(identity, &settings).expect("config with a client CA");
    }

    #[test]
    fn errors_name_the_file_at_fault() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (cert, key) = self_signed(dir.path());
        let missing = dir.path().join("missing.pem");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "").expect("write");

        let e = Identity::from_pem_files(&missing, &key).expect_err("no cert file");
        assert!(matches!(&e, TlsError::Pem { path, .. } if *path == missing), "{e}");
        assert!(e.to_string().starts_with(&missing.display().to_string()), "{e}");
        let e = Identity::from_pem_files(&empty, &key).expect_err("empty cert file");
        assert_eq!(e.to_string(), format!("{}: no certificate in the file", empty.display()));
        let e = Identity::from_pem_files(&cert, &empty).expect_err("no key");
        assert!(matches!(&e, TlsError::Pem { path, .. } if *path == empty), "{e}");

        // A key that is not the certificate's.
        let other = tempfile::tempdir().expect("tempdir");
        let (_, other_key) = self_signed(other.path());
        let identity = Identity::from_pem_files(&cert, &other_key).expect("both parse");
        let e = server_config(identity, &H2).expect_err("mismatched key");
        assert!(
            matches!(&e, TlsError::Refused { origin, .. } if *origin == other_key.display().to_string()),
            "{e}"
        );

        let identity = Identity::from_pem_files(&cert, &key).expect("identity");
        let e = server_config(identity, &ServerSettings { client_ca: Some(&empty), ..H2 })
            .expect_err("empty CA file");
        assert_eq!(e.to_string(), format!("{}: no CA certificate in the file", empty.display()));
    }
}
