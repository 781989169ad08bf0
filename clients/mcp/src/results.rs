//! Tool results: the structured content of each tool, whose doc comments become the output
//! schemas, and the status report built from the gateway's GetStatus.

use entropy_proto::v1::{Mixing, SourceHealth, SourceKind};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// Result of `random_bytes`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BytesResult {
    /// "hex" or "base64".
    pub encoding: String,
    /// The bytes, encoded.
    pub data: String,
    /// How many bytes `data` holds.
    pub bytes: usize,
    /// How they were made: "raw" (the pool's bytes) or "drbg" (DRBG output seeded from the
    /// pool), as the gateway labelled them.
    pub construction: String,
    /// For DRBG output: the DRBG instance's opaque id (one per call).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drbg_instance_id: Option<String>,
}

/// Result of `random_integers`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct IntegersResult {
    /// The lower bound asked for.
    pub min: i64,
    /// The upper bound asked for.
    pub max: i64,
    /// The integers, each uniform in [min, max].
    pub values: Vec<i64>,
}

/// Result of `random_floats`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FloatsResult {
    /// The numbers, each uniform in [0, 1).
    pub values: Vec<f64>,
}

/// Result of `random_uuids`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct UuidsResult {
    /// Version 4 UUIDs, lowercase, hyphenated.
    pub uuids: Vec<String>,
}

/// Result of `roll_dice`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DiceResult {
    /// The roll in canonical notation, e.g. "2d8+3".
    pub notation: String,
    /// Each die's face, in order.
    pub rolls: Vec<i64>,
    /// Added to the sum of the rolls.
    pub modifier: i64,
    /// Sum of the rolls plus the modifier.
    pub total: i64,
}

/// Result of `shuffle`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ShuffleResult {
    /// The items in their new order.
    pub items: Vec<Value>,
    /// Gateway bytes drawn for this shuffle.
    pub entropy_bytes_drawn: usize,
}

/// Result of `sample`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SampleResult {
    /// The k items picked, in the order they were picked.
    pub picked: Vec<Value>,
    /// Gateway bytes drawn for this pick.
    pub entropy_bytes_drawn: usize,
}

/// Result of `generate_password`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PasswordResult {
    /// The password.
    pub password: String,
    /// Its length in characters.
    pub length: usize,
    /// Characters it was drawn from.
    pub alphabet_size: usize,
    /// length × log2(alphabet_size): the guesses an attacker needs are 2 to this power.
    pub entropy_bits: f64,
    /// Gateway bytes drawn for it.
    pub entropy_bytes_drawn: usize,
}

/// Result of `generate_passphrase`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PassphraseResult {
    /// The words joined by the separator.
    pub passphrase: String,
    /// The words.
    pub words: Vec<String>,
    /// Size of the word list each word was drawn from.
    pub word_list_size: usize,
    /// words × log2(word_list_size).
    pub entropy_bits: f64,
    /// Gateway bytes drawn for it.
    pub entropy_bytes_drawn: usize,
}

/// The gateway's state (result of `gateway_status`, and the status resource).
#[derive(Debug, Serialize, JsonSchema)]
pub struct StatusReport {
    /// One sentence: is it serving, and are the bytes quantum.
    pub summary: String,
    /// True when the gateway serves entropy now.
    pub serving: bool,
    /// Why it does not serve, when it does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_serving_reason: Option<String>,
    /// Where the bytes served now come from: "quantum" (only quantum sources are healthy),
    /// "mixed" (quantum and other sources mixed together), "not_quantum" (no quantum source
    /// is healthy), or "unknown" (no healthy source reported yet).
    pub bytes_are: String,
    /// Bytes in the pool, ready to serve.
    pub pool_bytes: u64,
    /// The most the pool holds.
    pub pool_capacity_bytes: u64,
    /// Callers waiting for entropy now.
    pub waiters: u64,
    /// Bytes served to all callers since the gateway started.
    pub served_bytes_total: u64,
    /// Milliseconds since the gateway started.
    pub uptime_ms: u64,
    /// Milliseconds since the last chunk of entropy arrived, if one has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_chunk_age_ms: Option<u64>,
    /// Every source the gateway knows of.
    pub sources: Vec<SourceReport>,
}

/// One entropy source, as the gateway knows it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SourceReport {
    /// The collector that reads the source.
    pub collector_id: String,
    /// The source's name within that collector.
    pub name: String,
    /// "quantum", "hardware", "os" or "unspecified".
    pub kind: String,
    /// True only for quantum sources.
    pub quantum: bool,
    /// "healthy", "starting", "quarantined", "unreachable" or "unspecified".
    pub health: String,
    /// Bytes of accepted chunks it contributed to.
    pub contributed_bytes_total: u64,
    /// Milliseconds since a chunk last reported it.
    pub last_report_age_ms: u64,
    /// How its last chunk was mixed: "none", "xor", "hkdf_sha256" or "unspecified".
    pub mixing: String,
}

/// The lowercase tail of a proto enum name (`SOURCE_KIND_QUANTUM` → `quantum`).
fn short(name: &str, prefix: &str) -> String {
    name.strip_prefix(prefix).unwrap_or(name).to_ascii_lowercase()
}

impl From<entropy_diode_client::Status> for StatusReport {
    fn from(s: entropy_diode_client::Status) -> Self {
        let sources: Vec<SourceReport> = s
            .sources
            .iter()
            .map(|src| {
                let kind = SourceKind::try_from(src.kind).unwrap_or(SourceKind::Unspecified);
                let health =
                    SourceHealth::try_from(src.health).unwrap_or(SourceHealth::Unspecified);
                let mixing = Mixing::try_from(src.last_mixing).unwrap_or(Mixing::Unspecified);
                SourceReport {
                    collector_id: src.collector_id.clone(),
                    name: src.name.clone(),
                    kind: short(kind.as_str_name(), "SOURCE_KIND_"),
                    quantum: kind == SourceKind::Quantum,
                    health: short(health.as_str_name(), "SOURCE_HEALTH_"),
                    contributed_bytes_total: src.contributed_bytes_total,
                    last_report_age_ms: src.last_report_age_ms,
                    mixing: short(mixing.as_str_name(), "MIXING_"),
                }
            })
            .collect();
        let healthy: Vec<&SourceReport> =
            sources.iter().filter(|src| src.health == "healthy").collect();
        let quantum = healthy.iter().filter(|src| src.quantum).count();
        let bytes_are = match (quantum, healthy.len()) {
            (_, 0) => "unknown",
            (q, n) if q == n => "quantum",
            (0, _) => "not_quantum",
            _ => "mixed",
        };
        let names: Vec<String> =
            healthy.iter().map(|src| format!("{} ({})", src.name, src.kind)).collect();
        let origin = match bytes_are {
            "quantum" => format!("quantum: from {}", names.join(", ")),
            "mixed" => format!(
                "mixed from quantum and non-quantum sources ({}), at least as unpredictable \
                 as the quantum ones",
                names.join(", ")
            ),
            "not_quantum" => format!("not quantum: from {}", names.join(", ")),
            _ => "of unknown origin: no healthy source has reported yet".to_owned(),
        };
        let serving = if s.serving { "Serving" } else { "Not serving" };
        let summary = format!(
            "{serving}; {} of {} pool bytes ready; bytes are {origin}.",
            s.pool_bytes, s.pool_capacity_bytes
        );
        Self {
            summary,
            serving: s.serving,
            not_serving_reason: (!s.not_serving_reason.is_empty()).then_some(s.not_serving_reason),
            bytes_are: bytes_are.into(),
            pool_bytes: s.pool_bytes,
            pool_capacity_bytes: s.pool_capacity_bytes,
            waiters: s.waiters,
            served_bytes_total: s.served_bytes_total,
            uptime_ms: s.uptime_ms,
            last_chunk_age_ms: s.last_chunk_age_ms,
            sources,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use entropy_proto::v1::SourceStatus;

    fn source(name: &str, kind: SourceKind, health: SourceHealth) -> SourceStatus {
        SourceStatus {
            collector_id: "c1".into(),
            name: name.into(),
            kind: kind as i32,
            health: health as i32,
            contributed_bytes_total: 10,
            last_report_age_ms: 5,
            last_mixing: Mixing::Xor as i32,
        }
    }

    fn report(sources: Vec<SourceStatus>) -> StatusReport {
        StatusReport::from(entropy_diode_client::Status {
            serving: true,
            pool_bytes: 100,
            pool_capacity_bytes: 1000,
            sources,
            ..Default::default()
        })
    }

    #[test]
    fn provenance_says_whether_the_bytes_are_quantum() {
        use SourceHealth::{Healthy, Quarantined};
        use SourceKind::{Os, Quantum};
        let q = report(vec![source("quantis", Quantum, Healthy), source("os", Os, Quarantined)]);
        assert_eq!(q.bytes_are, "quantum");
        assert_eq!((q.sources[0].kind.as_str(), q.sources[0].quantum), ("quantum", true));
        assert_eq!(
            (q.sources[1].health.as_str(), q.sources[1].mixing.as_str()),
            ("quarantined", "xor")
        );
        assert!(q.summary.starts_with("Serving;") && q.summary.contains("quantum: from quantis"));
        let mixed = report(vec![source("quantis", Quantum, Healthy), source("os", Os, Healthy)]);
        assert_eq!(mixed.bytes_are, "mixed");
        assert_eq!(report(vec![source("os", Os, Healthy)]).bytes_are, "not_quantum");
        assert_eq!(report(vec![]).bytes_are, "unknown");
        assert!(report(vec![]).not_serving_reason.is_none());
    }
}
