//! docs/config.md's tables for entropy-collector: the scalar keys' table is generated from the
//! code (the one declaration of each key in `collector/src/config/keys.rs`, and the defaults)
//! and must match; the `[[gateway]]` and
//! `[[source]]` tables are written by hand, and their key columns must list exactly the
//! fields the config accepts. `UPDATE_CONFIG_REFERENCE=1 cargo test -p entropy-collector
//! --test config_reference` rewrites the generated table.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use entropy_collector::config::{CollectorConfig, KEY_DOCS};
use entropy_testkit::config_reference::{Reference, check_or_update};

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

/// Every optional key of the two table kinds set (a source type's fields on a source of that
/// type).
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
allow_http = false
request_timeout_ms = 1
attempts = 1
[[source]]
name = "p"
type = "quantis"
url = "https://10.0.0.6"
pinned_cert_sha256 = "0000000000000000000000000000000000000000000000000000000000000000"
[[source]]
name = "d"
type = "device"
path = "/dev/x"
kind = "quantum"
"#;

fn doc() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/config.md")
}

#[test]
fn docs_config_md_matches_the_collector_config() {
    let minimal: toml::Table = toml::from_str(MINIMAL).expect("minimal config");
    let config = CollectorConfig::from_toml(MINIMAL).expect("minimal config parses");
    let mut defaults = toml::Table::try_from(&config).expect("serializes");
    // What the minimal file had to set has no default.
    defaults.retain(|k, _| !minimal.contains_key(k));
    let reference = Reference {
        keys: KEY_DOCS.iter().map(|k| (k.key, k.unit, k.help)).collect(),
        defaults,
        variant: None,
    };
    let table = reference.table().replace("| unset |", "| required |");
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

/// Every field any table of the list has.
fn fields(tables: &toml::Value) -> BTreeSet<String> {
    tables
        .as_array()
        .expect("array of tables")
        .iter()
        .flat_map(|t| t.as_table().expect("table").keys().cloned())
        .collect()
}

#[test]
fn the_gateway_and_source_tables_list_every_field() {
    let config = CollectorConfig::from_toml(FULL_TABLES).expect("every field parses");
    let serialized = toml::Table::try_from(&config).expect("serializes");
    let text = std::fs::read_to_string(doc()).expect("docs/config.md");
    assert_eq!(documented_keys(&text, "### `[[gateway]]`"), fields(&serialized["gateway"]));
    assert_eq!(documented_keys(&text, "### `[[source]]`"), fields(&serialized["source"]));
}
