//! docs/config.md's tables for entropy-collector: the scalar keys' table is generated from the
//! code (keys, defaults, flags and their help) and must match; the `[[gateway]]` and
//! `[[source]]` tables are written by hand, and their key columns must list exactly the
//! fields the config accepts. `UPDATE_CONFIG_REFERENCE=1 cargo test -p entropy-collector
//! --test config_reference` rewrites the generated table.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::Args;
use entropy_collector::config::{CollectorConfig, ConfigFlags, ENV_KEYS};
use entropy_collector::config_reference::{Reference, check_or_update};

/// Only the keys without a default.
const MINIMAL: &str = r#"
collector_id = "c1"
key_id = "k1"
key_file = "/run/secrets/k1.key"
[[gateway]]
id = "gw"
endpoint = "http://127.0.0.1:50052"
[[source]]
name = "os"
type = "os"
"#;

/// Every optional key of the two table kinds set.
const FULL_TABLES: &str = r#"
collector_id = "c1"
key_id = "k1"
key_file = "/run/secrets/k1.key"
[[gateway]]
id = "gw"
endpoint = "https://gw:50052"
ca_file = "ca.pem"
client_cert_file = "c.pem"
client_key_file = "c.key"
[[source]]
name = "q"
type = "quantis"
min_entropy_per_byte = 7.5
url = "https://10.0.0.5"
ca_file = "ca.pem"
pinned_cert_sha256 = "00"
allow_http = false
request_timeout_ms = 1
attempts = 1
path = "/dev/x"
kind = "quantum"
"#;

fn doc() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/config.md")
}

fn unit(key: &str) -> &'static str {
    match key {
        k if k.ends_with("_ms") => "milliseconds",
        k if k.ends_with("_bytes") => "bytes",
        k if k.ends_with("_file") => "path",
        k if k.ends_with("_addr") => "host:port",
        "min_sources" | "buffer_chunks" => "count",
        "alpha_log2" => "bits (false alarm 2^-N)",
        "collector_id" | "key_id" => "1..=64 of `[A-Za-z0-9._-]`",
        "mixing" => "`none`, `xor` or `hkdf`",
        "log_format" => "`text` or `json`",
        "log_filter" => "EnvFilter directives",
        _ => panic!("give config key {key} a unit"),
    }
}

#[test]
fn docs_config_md_matches_the_collector_config() {
    let minimal: toml::Table = toml::from_str(MINIMAL).expect("minimal config");
    let config: CollectorConfig = toml::from_str(MINIMAL).expect("minimal config parses");
    let mut defaults = toml::Table::try_from(&config).expect("serializes");
    // What the minimal file had to set has no default.
    defaults.retain(|k, _| !minimal.contains_key(k));
    let reference = Reference {
        command: ConfigFlags::augment_args(clap::Command::new("entropy-collector")),
        keys: ENV_KEYS,
        defaults,
        variant: None,
        unit,
    };
    let table =
        reference.table().unwrap_or_else(|e| panic!("{e}")).replace("| unset |", "| required |");
    check_or_update(&doc(), "entropy-collector", &table).unwrap_or_else(|e| panic!("{e}"));
}

/// The first-column keys of the table under `heading`.
fn documented_keys(text: &str, heading: &str) -> BTreeSet<String> {
    let start = text.find(heading).unwrap_or_else(|| panic!("no {heading:?} section"));
    text[start..]
        .lines()
        .skip(1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .filter_map(|l| l.split('|').nth(1))
        .map(|cell| cell.trim().trim_matches('`').to_owned())
        .collect()
}

fn fields(table: &toml::Value) -> BTreeSet<String> {
    table.as_array().expect("array of tables")[0]
        .as_table()
        .expect("table")
        .keys()
        .cloned()
        .collect()
}

#[test]
fn the_gateway_and_source_tables_list_every_field() {
    let config: CollectorConfig = toml::from_str(FULL_TABLES).expect("every field parses");
    let serialized = toml::Table::try_from(&config).expect("serializes");
    let text = std::fs::read_to_string(doc()).expect("docs/config.md");
    assert_eq!(documented_keys(&text, "### `[[gateway]]`"), fields(&serialized["gateway"]));
    assert_eq!(documented_keys(&text, "### `[[source]]`"), fields(&serialized["source"]));
}
