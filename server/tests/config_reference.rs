//! docs/config.md's table for entropy-gateway is generated from the code (the config keys, the
//! defaults, the flags and their help), so it cannot drift: this test fails when the file
//! differs, and `UPDATE_CONFIG_REFERENCE=1 cargo test -p entropy-gateway --test
//! config_reference` rewrites the table. It also checks that each flag's `[default: ...]` help
//! text tells the truth.

use std::path::Path;

use clap::Args;
use entropy_collector::config_reference::{Reference, check_or_update};
use entropy_gateway::config::{ConfigFlags, GatewayConfig, KEYS};

fn unit(key: &str) -> &'static str {
    match key {
        k if k.ends_with("_ms") => "milliseconds",
        k if k.ends_with("_bytes") || k.contains("_bytes_per_") => "bytes",
        k if k.ends_with("_file") || k.ends_with("_dir") => "path",
        k if k.ends_with("_addr") => "host:port",
        "max_connections"
        | "max_streams_per_connection"
        | "replay_max_streams"
        | "ingest_max_connections" => "count",
        "tls_allow_tls12" => "boolean",
        "gateway_id" => "name",
        "log_format" => "`text` or `json`",
        "metrics_key_label" => "`name`, `digest` or `none`",
        "log_filter" => "EnvFilter directives",
        _ => panic!("give config key {key} a unit"),
    }
}

#[test]
fn docs_config_md_matches_the_gateway_config() {
    let reference = Reference {
        command: ConfigFlags::augment_args(clap::Command::new("entropy-gateway")),
        keys: KEYS,
        defaults: toml::Table::try_from(GatewayConfig::default()).expect("defaults serialize"),
        variant: Some((
            "`--dev`",
            toml::Table::try_from(GatewayConfig::dev_defaults()).expect("dev serializes"),
        )),
        unit,
    };
    let table = reference.table().unwrap_or_else(|e| panic!("{e}"));
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/config.md");
    check_or_update(&doc, "entropy-gateway", &table).unwrap_or_else(|e| panic!("{e}"));
}
