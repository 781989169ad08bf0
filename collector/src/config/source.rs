//! `[[source]]` tables, parsed once into what each type of source needs: a Quantis appliance
//! has a URL and its trust, a device a path and a kind, the OS nothing more. The file format
//! is flat (`type = "..."` beside the fields); [`RawSource`] reads it, and the conversion into
//! [`SourceConfig`] is where each type's required fields and bounds are checked, so nothing
//! later looks at an `Option` that "validation said" is set.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::provenance::SourceKind;
use crate::tls::TrustAnchor;

/// One source: its name, claimed min-entropy, and what kind of source it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawSource", into = "RawSource")]
pub struct SourceConfig {
    /// Unique name (1..=64 characters of [A-Za-z0-9._-]).
    pub name: String,
    /// Claimed min-entropy per byte (0 < H <= 8); sets the health test cutoffs.
    pub min_entropy_per_byte: f64,
    /// What it is, with what that type needs.
    pub spec: SourceSpec,
}

/// The type of a source and what it needs.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceSpec {
    /// A Quantis appliance over HTTPS.
    Quantis(QuantisSpec),
    /// A device file.
    Device {
        /// Path of the device or FIFO.
        path: PathBuf,
        /// What it is labelled as.
        kind: DeviceKind,
    },
    /// The OS CSPRNG.
    Os,
}

/// How to reach a Quantis appliance.
#[derive(Debug, Clone, PartialEq)]
pub struct QuantisSpec {
    /// Base URL, e.g. "https://10.0.0.5".
    pub url: String,
    /// Which certificate to trust.
    pub trust: TrustAnchor,
    /// Allow plain http:// (simulators on loopback only).
    pub allow_http: bool,
    /// Timeout of one HTTP request, ms.
    pub request_timeout_ms: u64,
    /// Attempts per read (at least 1).
    pub attempts: u32,
}

/// Kind label of a device source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    /// A quantum device (Quantis PCIe/USB).
    Quantum,
    /// Any other hardware noise source.
    Hardware,
}

/// The `type` of a `[[source]]` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceType {
    /// A Quantis appliance over HTTPS.
    Quantis,
    /// A device file.
    Device,
    /// The OS CSPRNG.
    Os,
}

impl SourceConfig {
    /// The kind the source's bytes are labelled with.
    pub fn kind(&self) -> SourceKind {
        match &self.spec {
            SourceSpec::Quantis(_) | SourceSpec::Device { kind: DeviceKind::Quantum, .. } => {
                SourceKind::Quantum
            }
            SourceSpec::Device { kind: DeviceKind::Hardware, .. } => SourceKind::Hardware,
            SourceSpec::Os => SourceKind::Os,
        }
    }
}

/// A `[[source]]` table as written: every field of every type, the ones a type does not use
/// absent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSource {
    name: String,
    #[serde(rename = "type")]
    source_type: SourceType,
    #[serde(default = "default_min_entropy")]
    min_entropy_per_byte: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ca_file: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pinned_cert_sha256: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    allow_http: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_timeout_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    attempts: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<DeviceKind>,
}

fn default_min_entropy() -> f64 {
    7.0
}
fn default_request_timeout_ms() -> u64 {
    5_000
}
fn default_attempts() -> u32 {
    3
}

/// Why a `[[source]]` table is not a source: `field: problem` (the loader prefixes the
/// table's place, `source[N].`).
pub type SourceError = String;

impl TryFrom<RawSource> for SourceConfig {
    type Error = SourceError;

    fn try_from(raw: RawSource) -> Result<Self, SourceError> {
        if !(raw.min_entropy_per_byte > 0.0 && raw.min_entropy_per_byte <= 8.0) {
            return Err("min_entropy_per_byte: must be in (0, 8]".into());
        }
        let stray = |fields: &[(&str, bool)]| match fields.iter().find(|(_, set)| *set) {
            Some((field, _)) => {
                Err(format!("{field}: not a field of a {:?} source", raw.source_type))
            }
            None => Ok(()),
        };
        let quantis_fields = [
            ("url", raw.url.is_some()),
            ("ca_file", raw.ca_file.is_some()),
            ("pinned_cert_sha256", raw.pinned_cert_sha256.is_some()),
            ("allow_http", raw.allow_http.is_some()),
            ("request_timeout_ms", raw.request_timeout_ms.is_some()),
            ("attempts", raw.attempts.is_some()),
        ];
        let spec = match raw.source_type {
            SourceType::Quantis => {
                stray(&[("path", raw.path.is_some()), ("kind", raw.kind.is_some())])?;
                let url = raw.url.ok_or("url: required for a quantis source")?;
                let trust = match (raw.ca_file, raw.pinned_cert_sha256) {
                    (Some(_), Some(_)) => {
                        return Err(
                            "pinned_cert_sha256: give ca_file or pinned_cert_sha256, not both"
                                .into(),
                        );
                    }
                    (Some(ca), None) => TrustAnchor::CaFile(ca),
                    (None, Some(pin)) => TrustAnchor::Pinned(
                        parse_pin(&pin).ok_or("pinned_cert_sha256: must be 64 hex digits")?,
                    ),
                    (None, None) => TrustAnchor::WebPki,
                };
                let attempts = raw.attempts.unwrap_or_else(default_attempts);
                if attempts == 0 {
                    return Err("attempts: must be at least 1".into());
                }
                SourceSpec::Quantis(QuantisSpec {
                    url,
                    trust,
                    allow_http: raw.allow_http.unwrap_or(false),
                    request_timeout_ms: raw
                        .request_timeout_ms
                        .unwrap_or_else(default_request_timeout_ms),
                    attempts,
                })
            }
            SourceType::Device => {
                stray(&quantis_fields)?;
                SourceSpec::Device {
                    path: raw.path.ok_or("path: required for a device source")?,
                    kind: raw
                        .kind
                        .ok_or("kind: required for a device source: \"quantum\" or \"hardware\"")?,
                }
            }
            SourceType::Os => {
                stray(&quantis_fields)?;
                stray(&[("path", raw.path.is_some()), ("kind", raw.kind.is_some())])?;
                SourceSpec::Os
            }
        };
        Ok(Self { name: raw.name, min_entropy_per_byte: raw.min_entropy_per_byte, spec })
    }
}

impl From<SourceConfig> for RawSource {
    fn from(s: SourceConfig) -> Self {
        let mut raw = RawSource {
            name: s.name,
            source_type: SourceType::Os,
            min_entropy_per_byte: s.min_entropy_per_byte,
            url: None,
            ca_file: None,
            pinned_cert_sha256: None,
            allow_http: None,
            request_timeout_ms: None,
            attempts: None,
            path: None,
            kind: None,
        };
        match s.spec {
            SourceSpec::Quantis(q) => {
                raw.source_type = SourceType::Quantis;
                raw.url = Some(q.url);
                match q.trust {
                    TrustAnchor::CaFile(ca) => raw.ca_file = Some(ca),
                    TrustAnchor::Pinned(pin) => raw.pinned_cert_sha256 = Some(hex::encode(pin)),
                    TrustAnchor::WebPki => {}
                }
                raw.allow_http = Some(q.allow_http);
                raw.request_timeout_ms = Some(q.request_timeout_ms);
                raw.attempts = Some(q.attempts);
            }
            SourceSpec::Device { path, kind } => {
                raw.source_type = SourceType::Device;
                raw.path = Some(path);
                raw.kind = Some(kind);
            }
            SourceSpec::Os => {}
        }
        raw
    }
}

fn parse_pin(hex_text: &str) -> Option<[u8; 32]> {
    let cleaned: String = hex_text.chars().filter(|c| *c != ':').collect();
    hex::decode(cleaned).ok()?.try_into().ok()
}
