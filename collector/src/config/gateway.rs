//! `[[gateway]]` tables: the gateways a collector publishes to, and the tonic endpoint (with
//! TLS and an mTLS identity for https://) each becomes.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// One gateway's ingest endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayConfig {
    /// The gateway's `gateway_id` (its config): chunks are sealed for it, and no other gateway
    /// accepts them. 1..=64 characters of [A-Za-z0-9._-].
    pub id: String,
    /// `http://host:50052`, or `https://host:50052` for TLS.
    pub endpoint: String,
    /// https: PEM CA certificate(s) to trust for the gateway (default: web PKI roots).
    pub ca_file: Option<PathBuf>,
    /// https: PEM client certificate to present (mTLS), with `client_key_file`.
    pub client_cert_file: Option<PathBuf>,
    /// https: PEM private key of the client certificate.
    pub client_key_file: Option<PathBuf>,
}

impl GatewayConfig {
    /// The tonic endpoint, with TLS (and a client identity for mTLS) for https:// URLs.
    pub fn endpoint(&self) -> Result<tonic::transport::Endpoint, ConfigError> {
        let bad = |problem: String| ConfigError::new("gateway.endpoint", problem);
        let endpoint = tonic::transport::Endpoint::from_shared(self.endpoint.clone())
            .map_err(|e| bad(format!("{:?}: {e}", self.endpoint)))?;
        if !self.endpoint.starts_with("https://") {
            return Ok(endpoint);
        }
        let read =
            |path: &Path| std::fs::read(path).map_err(|e| bad(format!("{}: {e}", path.display())));
        let mut tls = tonic::transport::ClientTlsConfig::new();
        tls = match &self.ca_file {
            Some(ca) => tls.ca_certificate(tonic::transport::Certificate::from_pem(read(ca)?)),
            None => tls.with_webpki_roots(),
        };
        if let (Some(cert), Some(key)) = (&self.client_cert_file, &self.client_key_file) {
            tls = tls.identity(tonic::transport::Identity::from_pem(read(cert)?, read(key)?));
        }
        endpoint.tls_config(tls).map_err(|e| bad(e.to_string()))
    }
}
