//! An ID Quantique Quantis appliance, through its REST API v2.0:
//! `GET {base}/api/2.0/streambytes?size=N` answers N raw bytes. A body whose Content-Type is
//! JSON, holding an array of byte values (or `{"data": [...]}`), is accepted too.
//!
//! HTTPS only, trusting either a CA file or one pinned certificate, never "any certificate"
//! (plain HTTP only when the operator sets `allow_http`, for a simulator on loopback). Each
//! read has a timeout; a failed read is retried with exponential backoff and full jitter; an
//! answer that cannot be entropy (an HTML error page, the wrong length, constant bytes) is
//! reported as a sanity failure, which quarantines the source.

use std::time::Duration;

use reqwest::header::CONTENT_TYPE;

use super::{SanityCheck, Source, SourceError, sanity};
use crate::provenance::SourceKind;
use crate::tls::TrustAnchor;

/// Connection and retry settings of one appliance.
#[derive(Debug, Clone)]
pub struct QuantisOptions {
    /// Base URL, e.g. `https://10.0.0.5`.
    pub base_url: String,
    /// How the appliance's certificate is trusted.
    pub trust: TrustAnchor,
    /// Allow `http://` URLs (a simulator on loopback; never a real appliance).
    pub allow_http: bool,
    /// Timeout of one HTTP request.
    pub request_timeout: Duration,
    /// Attempts per read (1 = no retry).
    pub attempts: u32,
    /// First backoff; doubles per attempt up to `max_backoff`, with full jitter.
    pub initial_backoff: Duration,
    /// Longest backoff.
    pub max_backoff: Duration,
}

/// Reads a Quantis appliance.
#[derive(Debug)]
pub struct QuantisSource {
    name: String,
    url: String,
    client: reqwest::Client,
    options: QuantisOptions,
}

/// The source could not be set up (bad URL, unreadable CA or pin).
#[derive(Debug, thiserror::Error)]
#[error("source {name}: {message}")]
pub struct SetupError {
    /// The source's name.
    pub name: String,
    /// What is wrong.
    pub message: String,
}

impl QuantisSource {
    /// A source for the appliance described by `options`.
    pub fn new(name: impl Into<String>, options: QuantisOptions) -> Result<Self, SetupError> {
        let name = name.into();
        let setup = |message: String| SetupError { name: name.clone(), message };
        let base = options.base_url.trim_end_matches('/');
        let url = reqwest::Url::parse(&format!("{base}/api/2.0/streambytes"))
            .map_err(|e| setup(format!("url {base:?}: {e}")))?;
        match url.scheme() {
            "https" => {}
            "http" if options.allow_http => {
                tracing::warn!(source = %name, "plain HTTP to the entropy source: for simulators only");
            }
            other => {
                return Err(setup(format!("url scheme {other:?}: use https (or set allow_http)")));
            }
        }
        let tls = crate::tls::client_config(&options.trust).map_err(|e| setup(e.to_string()))?;
        let client = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .timeout(options.request_timeout)
            .connect_timeout(options.request_timeout)
            .http1_only()
            .build()
            .map_err(|e| setup(e.to_string()))?;
        Ok(Self { name, url: url.to_string(), client, options })
    }

    async fn fetch(&self, n: usize) -> Result<Vec<u8>, SourceError> {
        let unreachable = |e: reqwest::Error| SourceError::Unreachable {
            name: self.name.clone(),
            message: e.to_string(),
        };
        let insane = |check| SourceError::Insane { name: self.name.clone(), check };
        let url = format!("{}?size={n}", self.url);
        let response = self.client.get(url).send().await.map_err(unreachable)?;
        let status = response.status();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let body = response.bytes().await.map_err(unreachable)?;
        // A 5xx is the appliance (or a proxy) saying "not now": retried, then unreachable.
        if status.is_server_error() {
            return Err(SourceError::Unreachable {
                name: self.name.clone(),
                message: format!("HTTP {}", status.as_u16()),
            });
        }
        if content_type.contains("html") || (content_type.is_empty() && looks_like_html(&body)) {
            return Err(insane(SanityCheck::Html));
        }
        if !status.is_success() {
            return Err(insane(SanityCheck::HttpStatus(status.as_u16())));
        }
        let bytes = if content_type.contains("json") {
            parse_json_bytes(&body).ok_or_else(|| insane(SanityCheck::BadJson))?
        } else {
            body.to_vec()
        };
        sanity(&self.name, n, &bytes)?;
        Ok(bytes)
    }
}

/// An HTML page without a Content-Type. Only a real document start counts: random bytes begin
/// with `<` one time in 256, so a looser test would quarantine healthy appliances.
fn looks_like_html(body: &[u8]) -> bool {
    let start = body.trim_ascii_start();
    let head = &start[..start.len().min(15)];
    [b"<!doctype html".as_slice(), b"<html"]
        .iter()
        .any(|p| head.len() >= p.len() && head[..p.len()].eq_ignore_ascii_case(p))
}

/// `[12, 255, 0, ...]`, or `{"data": [...]}`: byte values 0..=255.
fn parse_json_bytes(body: &[u8]) -> Option<Vec<u8>> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let array = match &value {
        serde_json::Value::Array(a) => a,
        serde_json::Value::Object(o) => o.get("data")?.as_array()?,
        _ => return None,
    };
    array.iter().map(|v| v.as_u64().and_then(|n| u8::try_from(n).ok())).collect()
}

#[tonic::async_trait]
impl Source for QuantisSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Quantum
    }

    async fn read(&mut self, n: usize) -> Result<Vec<u8>, SourceError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.fetch(n).await {
                Ok(bytes) => return Ok(bytes),
                // A sanity failure is the appliance misbehaving: no retry hides it.
                Err(e @ SourceError::Insane { .. }) => return Err(e),
                Err(e) if attempt >= self.options.attempts => return Err(e),
                Err(e) => {
                    let wait =
                        backoff(attempt, self.options.initial_backoff, self.options.max_backoff);
                    tracing::debug!(source = %self.name, attempt, ?wait, "read failed, retrying: {e}");
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }
}

/// Exponential backoff with full jitter: uniform in [0, min(max, initial · 2^(attempt-1))].
pub fn backoff(attempt: u32, initial: Duration, max: Duration) -> Duration {
    let ceiling = initial.saturating_mul(1 << attempt.saturating_sub(1).min(20)).min(max);
    let mut r = [0u8; 8];
    let fraction = match getrandom::fill(&mut r) {
        Ok(()) => (u64::from_le_bytes(r) >> 11) as f64 / (1u64 << 53) as f64,
        Err(_) => 0.5,
    };
    ceiling.mul_f64(fraction)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_forms_are_accepted_and_checked() {
        assert_eq!(parse_json_bytes(b"[1, 2, 255]"), Some(vec![1, 2, 255]));
        assert_eq!(parse_json_bytes(br#"{"data": [0, 7]}"#), Some(vec![0, 7]));
        assert_eq!(parse_json_bytes(b"[256]"), None);
        assert_eq!(parse_json_bytes(b"[-1]"), None);
        assert_eq!(parse_json_bytes(b"{\"x\": 1}"), None);
    }

    #[test]
    fn only_real_html_documents_count_as_html() {
        assert!(looks_like_html(b"  <!DOCTYPE html><html>"));
        assert!(looks_like_html(b"<HTML><body>502</body></HTML>"));
        assert!(!looks_like_html(b"<\x01\x02 random bytes that start with a bracket"));
        assert!(!looks_like_html(b"[1,2]"));
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let (i, m) = (Duration::from_millis(100), Duration::from_secs(2));
        for attempt in 1..=10 {
            let ceiling = (i * (1 << (attempt - 1))).min(m);
            for _ in 0..20 {
                assert!(backoff(attempt, i, m) <= ceiling);
            }
        }
        // Jitter: not always the same value.
        let samples: std::collections::HashSet<_> = (0..20).map(|_| backoff(5, i, m)).collect();
        assert!(samples.len() > 1);
    }

    #[test]
    fn plain_http_needs_an_explicit_opt_in() {
        let options = QuantisOptions {
            base_url: "http://127.0.0.1:1".into(),
            trust: TrustAnchor::WebPki,
            allow_http: false,
            request_timeout: Duration::from_secs(1),
            attempts: 1,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(1),
        };
        let err = QuantisSource::new("q", options.clone()).expect_err("http refused");
        assert!(err.to_string().contains("https"), "{err}");
        QuantisSource::new("q", QuantisOptions { allow_http: true, ..options }).expect("opted in");
    }
}
