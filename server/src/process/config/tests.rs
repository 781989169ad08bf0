//! Tests of loading, layering and validating the gateway config.

use std::net::SocketAddr;

use figment::providers::Env;
use serde::Serialize;

use super::*;
use crate::metrics::KeyLabel;

fn keys_of<T: Serialize>(value: &T) -> Vec<String> {
    let toml = toml::Value::try_from(value).expect("serializes");
    let mut keys: Vec<_> = toml.as_table().expect("table").keys().cloned().collect();
    keys.sort();
    keys
}

#[test]
fn keys_flags_and_struct_agree() {
    // Options that are None do not serialize, so fill them for the comparison.
    let full = GatewayConfig {
        api_keys_file: Some("k".into()),
        ingest_keys_dir: Some("d".into()),
        tls_cert_file: Some("c".into()),
        tls_key_file: Some("k".into()),
        ingest_tls_cert_file: Some("c".into()),
        ingest_tls_key_file: Some("k".into()),
        ingest_client_ca_file: Some("ca".into()),
        receipts_dir: Some("r".into()),
        receipts_key_file: Some("r/k".into()),
        receipts_public_key_file: Some("r/p".into()),
        ..GatewayConfig::default()
    };
    let mut listed: Vec<String> = KEYS.iter().map(|k| k.to_string()).collect();
    listed.sort();
    assert_eq!(keys_of(&full), listed, "KEYS lists every config field");

    let flags = ConfigFlags {
        listen_addr: Some(full.listen_addr),
        ingest_listen_addr: Some(full.ingest_listen_addr),
        api_keys_file: full.api_keys_file.clone(),
        ingest_keys_dir: full.ingest_keys_dir.clone(),
        state_dir: full.state_dir.clone(),
        tls_cert_file: full.tls_cert_file.clone(),
        tls_key_file: full.tls_key_file.clone(),
        tls_allow_tls12: Some(true),
        ingest_tls_cert_file: full.ingest_tls_cert_file.clone(),
        ingest_tls_key_file: full.ingest_tls_key_file.clone(),
        ingest_client_ca_file: full.ingest_client_ca_file.clone(),
        pool_capacity_bytes: Some(1),
        pool_low_watermark_bytes: Some(1),
        max_byte_age_ms: Some(1),
        max_wait_ms: Some(1),
        stream_max_wait_ms: Some(1),
        drbg_reseed_interval_bytes: Some(1),
        drbg_reseed_interval_ms: Some(1),
        receipts_dir: full.receipts_dir.clone(),
        receipts_key_file: full.receipts_key_file.clone(),
        receipts_public_key_file: full.receipts_public_key_file.clone(),
        receipts_sync: Some(crate::domain::receipts::ReceiptSync::EveryAppend),
        receipts_head_interval_ms: Some(1),
        freshness_window_ms: Some(1),
        gateway_id: Some("g".into()),
        max_future_skew_ms: Some(1),
        max_chunk_bytes: Some(1),
        replay_max_streams: Some(1),
        max_buffered_bytes: Some(1),
        max_buffered_request_bytes: Some(1),
        max_buffered_request_bytes_per_connection: Some(1),
        ingest_max_buffered_bytes: Some(1),
        ingest_max_connections: Some(1),
        shutdown_grace_ms: Some(1),
        shutdown_drain_ms: Some(1),
        max_connections: Some(1),
        max_streams_per_connection: Some(1),
        idle_timeout_ms: Some(1),
        metrics_listen_addr: Some(String::new()),
        metrics_key_label: Some(KeyLabel::Digest),
        send_timeout_ms: Some(1),
        max_undelivered_bytes_per_connection: Some(1),
        ingest_stale_after_ms: Some(1),
        log_format: Some(LogFormat::Json),
        log_filter: Some("x".into()),
        grpc_web_enabled: Some(true),
        grpc_web_allowed_origins: Some(entropy_ops::config_keys::CommaList::default()),
        connect_enabled: Some(true),
        rest_enabled: Some(true),
    };
    assert_eq!(keys_of(&flags), listed, "every config key has a flag");
}

/// An environment layer that reads nothing.
fn no_env() -> Env {
    Env::prefixed("ENTROPY_TEST_UNUSED_").only(&[])
}

#[test]
#[allow(clippy::result_large_err)] // figment's Jail API fixes the closure's error type
fn environment_overrides_file_and_ignores_unrelated_entropy_vars() {
    figment::Jail::expect_with(|jail| {
        jail.create_file("g.toml", "max_wait_ms = 500\nmax_chunk_bytes = 4096\n")?;
        jail.set_env("ENTROPY_MAX_WAIT_MS", "900");
        // Variables of other programs (the CLI, dev mode) must not trip unknown-key errors.
        jail.set_env("ENTROPY_API_KEY", "not-a-gateway-key");
        jail.set_env("ENTROPY_DEV_API_KEY", "x");
        let flags = ConfigFlags::default();
        let c = load(Some(std::path::Path::new("g.toml")), Mode::DEV, &flags).expect("valid");
        assert_eq!((c.max_wait_ms, c.max_chunk_bytes), (900, 4096));

        jail.set_env("ENTROPY_POOL_CAPACITY_BYTES", "many");
        let err = load(None, Mode::DEV, &flags).expect_err("bad env value");
        assert_eq!(err.key, "pool_capacity_bytes");
        assert!(err.problem.contains("ENTROPY_POOL_CAPACITY_BYTES"), "{err}");
        Ok(())
    });
}

#[test]
fn layers_apply_in_order_and_errors_name_the_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("gateway.toml");
    std::fs::write(&file, "pool_capacity_bytes = 2097152\nmax_wait_ms = 500\n").expect("w");
    let flags = ConfigFlags { max_wait_ms: Some(700), ..ConfigFlags::default() };
    let c = load_with_env(Some(&file), Mode::DEV, &flags, no_env()).expect("valid");
    assert_eq!(c.pool_capacity_bytes, 2 << 20, "file overrides default");
    assert_eq!(c.max_wait_ms, 700, "flag overrides file");
    assert_eq!(c.listen_addr, SocketAddr::from(([127, 0, 0, 1], 50051)), "dev default");

    std::fs::write(&file, "pool_capacity_bytes = \"lots\"\n").expect("w");
    let err = load_with_env(Some(&file), Mode::DEV, &ConfigFlags::default(), no_env())
        .expect_err("bad type");
    assert_eq!(err.key, "pool_capacity_bytes", "{err}");

    std::fs::write(&file, "pool_capacity = 5\n").expect("w");
    let err = load_with_env(Some(&file), Mode::DEV, &ConfigFlags::default(), no_env())
        .expect_err("unknown key");
    assert!(err.to_string().contains("pool_capacity"), "{err}");
}

#[test]
fn the_example_config_lists_every_key_and_loads() {
    let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/gateway.example.toml"));
    let text = std::fs::read_to_string(path).expect("example config");
    let table: toml::Table = text.parse().expect("toml");
    let mut keys: Vec<_> = table.keys().cloned().collect();
    keys.sort();
    let mut listed: Vec<String> = KEYS.iter().map(|k| k.to_string()).collect();
    listed.sort();
    assert_eq!(keys, listed, "the example shows every key");
    let c =
        load_with_env(Some(path), Mode::Service, &ConfigFlags::default(), no_env()).expect("valid");
    assert!(c.tls_cert_file.is_some() && c.ingest_client_ca_file.is_some(), "TLS is shown set");
    assert_eq!(
        GatewayConfig {
            api_keys_file: None,
            ingest_keys_dir: None,
            tls_cert_file: None,
            tls_key_file: None,
            ingest_tls_cert_file: None,
            ingest_tls_key_file: None,
            ingest_client_ca_file: None,
            receipts_dir: None,
            receipts_key_file: None,
            receipts_public_key_file: None,
            gateway_id: String::new(),
            ..c
        },
        GatewayConfig::default(),
        "the example shows the defaults"
    );
}

#[test]
fn validation_names_the_key_and_bound() {
    let flags = ConfigFlags { pool_capacity_bytes: Some(1000), ..ConfigFlags::default() };
    let err = load_with_env(None, Mode::DEV, &flags, no_env()).expect_err("too small");
    assert_eq!(err.key, "pool_capacity_bytes");
    assert!(err.problem.contains("1048576"), "{err}");

    let err = load_with_env(None, Mode::Service, &ConfigFlags::default(), no_env())
        .expect_err("a gateway id is required outside dev");
    assert_eq!(err.key, "gateway_id");
    let named = ConfigFlags { gateway_id: Some("gw-1".into()), ..ConfigFlags::default() };
    let err = load_with_env(None, Mode::Service, &named, no_env())
        .expect_err("keys required outside dev");
    assert_eq!(err.key, "api_keys_file");
    let bad = ConfigFlags { gateway_id: Some("gw 1".into()), ..ConfigFlags::default() };
    let err =
        load_with_env(None, Mode::Service, &bad, no_env()).expect_err("a space is not allowed");
    assert_eq!(err.key, "gateway_id");

    let keyed = ConfigFlags {
        api_keys_file: Some("keys.toml".into()),
        ingest_keys_dir: Some("mac".into()),
        ..named
    };
    let c = load_with_env(None, Mode::Service, &keyed, no_env()).expect("the default state_dir");
    assert_eq!(c.state_dir, Some("/var/lib/entropy-gateway".into()));
    let blank = ConfigFlags { state_dir: Some("".into()), ..keyed };
    let err = load_with_env(None, Mode::Service, &blank, no_env()).expect_err("an empty state_dir");
    assert_eq!(err.key, "state_dir");
    assert_eq!(
        load_with_env(None, Mode::DEV, &ConfigFlags::default(), no_env()).expect("dev").state_dir,
        None,
        "dev mode keeps its lease in memory"
    );
}

#[test]
fn dev_mode_serves_loopback_unless_told_to_listen_anywhere() {
    let any = ConfigFlags {
        listen_addr: Some("0.0.0.0:50051".parse().expect("addr")),
        ..ConfigFlags::default()
    };
    let err = load_with_env(None, Mode::DEV, &any, no_env())
        .expect_err("plaintext dev on every interface");
    assert_eq!(err.key, "listen_addr");
    assert!(err.problem.contains("--dev-listen-any"), "{err}");
    let c = load_with_env(None, Mode::Dev { listen_any: true }, &any, no_env())
        .expect("--dev-listen-any admits it");
    assert!(!c.listen_addr.ip().is_loopback());
    let v6 = ConfigFlags {
        listen_addr: Some("[::1]:50051".parse().expect("addr")),
        ..ConfigFlags::default()
    };
    load_with_env(None, Mode::DEV, &v6, no_env()).expect("IPv6 loopback is loopback");
}
