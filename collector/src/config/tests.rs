//! Tests of loading, layering and validating the collector config.

use std::path::Path;

use serde::Serialize;

use super::*;
use crate::provenance::SourceKind;
use crate::tls::TrustAnchor;

const GOOD: &str = r#"
collector_id = "c1"
key_id = "k1"
key_file = "/run/secrets/k1.key"
mixing = "xor"
min_sources = 1

[[gateway]]
id = "gw-1"
endpoint = "http://127.0.0.1:50052"

[[source]]
name = "quantis-a"
type = "quantis"
url = "https://10.0.0.5"
pinned_cert_sha256 = "0000000000000000000000000000000000000000000000000000000000000000"

[[source]]
name = "hwrng"
type = "device"
path = "/dev/hwrng"
kind = "hardware"
"#;

fn parse(text: &str) -> Result<CollectorConfig, ConfigError> {
    CollectorConfig::from_toml(text)
}

#[test]
fn a_good_config_parses_with_defaults() {
    let c = parse(GOOD).expect("valid");
    assert_eq!((c.chunk_bytes, c.buffer_chunks, c.alpha_log2), (65536, 16, 40));
    assert_eq!(c.metrics_addr(), Some(([0, 0, 0, 0], 9464).into()));
    let SourceSpec::Quantis(quantis) = &c.source[0].spec else { panic!("a quantis source") };
    assert_eq!(quantis.trust, TrustAnchor::Pinned([0; 32]));
    assert_eq!(c.source[1].kind(), SourceKind::Hardware);
}

#[test]
fn bad_values_name_their_key() {
    let cases = [
        (GOOD.replace("min_sources = 1", "min_sources = 3"), "min_sources"),
        (GOOD.replace("mixing = \"xor\"", "mixing = \"none\""), "mixing"),
        (GOOD.replace("url = \"https://10.0.0.5\"", ""), "source[0].url"),
        (GOOD.replace("kind = \"hardware\"", ""), "source[1].kind"),
        (GOOD.replace("\"hwrng\"", "\"quantis-a\""), "source[1].name"),
        (
            GOOD.replace(
                "000000000000000000000000000000000000000000000000000000000000000\"",
                "zz\"",
            ),
            "source[0].pinned_cert_sha256",
        ),
        (GOOD.replace("http://127.0.0.1:50052", "not a url"), "gateway[0].endpoint"),
        (
            GOOD.replace("min_sources = 1", "min_sources = 1\nmetrics_listen_addr = \"9464\""),
            "metrics_listen_addr",
        ),
    ];
    for (text, key) in cases {
        let err = parse(&text).expect_err(key);
        assert_eq!(err.key, key, "{err}");
    }
}

#[test]
fn the_example_config_is_valid() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/collector.example.toml"))
            .expect("example config");
    parse(&text).expect("example is valid");
}

fn table_keys<T: Serialize>(value: &T) -> Vec<String> {
    let table = toml::Table::try_from(value).expect("serializes to a table");
    let mut keys: Vec<String> = table.keys().cloned().collect();
    keys.sort();
    keys
}

#[test]
fn every_scalar_key_has_an_environment_variable_and_a_flag() {
    let config = parse(GOOD).expect("valid");
    let mut scalars: Vec<String> = table_keys(&config);
    scalars.retain(|k| k != "gateway" && k != "source");
    let mut env: Vec<String> = KEYS.iter().map(|k| k.to_string()).collect();
    env.sort();
    assert_eq!(env, scalars, "KEYS lists every scalar key");
    let flags = ConfigFlags {
        collector_id: Some("c".into()),
        chunk_bytes: Some(1),
        mixing: Some("xor".into()),
        min_sources: Some(1),
        buffer_chunks: Some(1),
        alpha_log2: Some(1),
        read_timeout_ms: Some(1),
        key_id: Some("k".into()),
        key_file: Some("f".into()),
        shutdown_grace_ms: Some(1),
        metrics_listen_addr: Some(String::new()),
        log_format: Some(LogFormat::Json),
        log_filter: Some("x".into()),
    };
    assert_eq!(table_keys(&flags), scalars, "every scalar key has a flag");
}

#[test]
#[allow(clippy::result_large_err)] // figment's Jail API fixes the closure's error type
fn flags_override_the_environment_which_overrides_the_file() {
    figment::Jail::expect_with(|jail| {
        jail.create_file("c.toml", &GOOD.replace("min_sources = 1", "buffer_chunks = 3"))?;
        jail.set_env("ENTROPY_BUFFER_CHUNKS", "5");
        jail.set_env("ENTROPY_ALPHA_LOG2", "30");
        let flags = ConfigFlags { buffer_chunks: Some(7), ..ConfigFlags::default() };
        let c = CollectorConfig::load(Path::new("c.toml"), &flags).expect("valid");
        assert_eq!((c.buffer_chunks, c.alpha_log2), (7, 30));
        let bad = ConfigFlags { chunk_bytes: Some(0), ..ConfigFlags::default() };
        let err = CollectorConfig::load(Path::new("c.toml"), &bad).expect_err("0 bytes");
        assert_eq!(err.key, "chunk_bytes");
        Ok(())
    });
}

#[test]
fn printing_redacts_credentials_and_queries_in_urls() {
    let text = GOOD
        .replace("https://10.0.0.5", "https://admin:hunter2@10.0.0.5/api?token=s3cret")
        .replace("http://127.0.0.1:50052", "https://user@gw.internal:50052");
    let config = parse(&text).expect("valid");
    let printed = toml::to_string(&config.redacted()).expect("prints");
    for secret in ["hunter2", "admin", "s3cret", "user@"] {
        assert!(!printed.contains(secret), "{secret} leaked:\n{printed}");
    }
    assert!(printed.contains("https://REDACTED:REDACTED@10.0.0.5/api?REDACTED"), "{printed}");
    assert!(printed.contains("\"https://REDACTED@gw.internal:50052/\""), "{printed}");
    // Nothing else changes.
    assert_eq!(config.redacted().source[1], config.source[1]);
    // A URL the parser refuses keeps nothing that could be a credential or a query.
    for odd in ["https://a:p@ss@10.0.0.5", "https://10.0.0.5/a b?token=s3cret", "not a url@x"] {
        let text = GOOD.replace("https://10.0.0.5", odd);
        let Ok(config) = parse(&text) else { continue };
        let printed = toml::to_string(&config.redacted()).expect("prints");
        assert!(!printed.contains("p@ss") && !printed.contains("s3cret"), "{printed}");
    }
}

#[test]
fn sources_are_parsed_into_what_their_type_needs() {
    let c = parse(GOOD).expect("valid");
    let SourceSpec::Quantis(q) = &c.source[0].spec else { panic!("quantis") };
    assert_eq!((q.url.as_str(), q.attempts, q.request_timeout_ms), ("https://10.0.0.5", 3, 5_000));
    assert_eq!(
        c.source[1].spec,
        SourceSpec::Device { path: "/dev/hwrng".into(), kind: DeviceKind::Hardware }
    );
    let os = GOOD
        .replace("type = \"device\"\npath = \"/dev/hwrng\"\nkind = \"hardware\"", "type = \"os\"");
    assert_eq!(parse(&os).expect("valid").source[1].spec, SourceSpec::Os);

    let cases = [
        (GOOD.replace("type = \"device\"", "type = \"lava-lamp\""), "source[1].type"),
        (GOOD.replace("kind = \"hardware\"", "kind = \"hardware\"\nurl = \"x\""), "source[1].url"),
        (
            GOOD.replace("type = \"quantis\"", "type = \"quantis\"\nattempts = 0"),
            "source[0].attempts",
        ),
        (os.replace("type = \"os\"", "type = \"os\"\npath = \"/dev/x\""), "source[1].path"),
    ];
    for (text, key) in cases {
        let err = parse(&text).expect_err(key);
        assert!(err.key.starts_with(key), "{key}: {err}");
    }
}

#[test]
fn an_empty_metrics_address_turns_the_endpoint_off_and_printing_round_trips() {
    let off = GOOD.replace("min_sources = 1", "min_sources = 1\nmetrics_listen_addr = \"\"");
    let c = parse(&off).expect("valid");
    assert_eq!(c.metrics_addr(), None);
    let printed = toml::to_string(&c).expect("prints");
    assert!(printed.contains("metrics_listen_addr = \"\""), "{printed}");
    assert_eq!(parse(&printed).expect("what --print-config prints loads back"), c);
    let full = parse(GOOD).expect("valid");
    assert_eq!(parse(&toml::to_string(&full).expect("prints")).expect("loads back"), full);
}
