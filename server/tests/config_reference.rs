//! docs/config.md's table for entropy-gateway is generated from the code (the one declaration
//! of each key in `server/src/process/config/keys.rs`, and the defaults), so it cannot drift: this test
//! fails when the file differs, and `UPDATE_CONFIG_REFERENCE=1 cargo test -p entropy-gateway
//! --test config_reference` rewrites the table.

use std::path::Path;

use entropy_gateway::process::config::{GatewayConfig, KEY_DOCS};
use entropy_testkit::config_reference::{Reference, check_or_update};

#[test]
fn docs_config_md_matches_the_gateway_config() {
    let reference = Reference {
        keys: KEY_DOCS.iter().map(|k| (k.key, k.unit, k.help)).collect(),
        defaults: toml::Table::try_from(GatewayConfig::default()).expect("defaults serialize"),
        variant: Some((
            "`--dev`",
            toml::Table::try_from(GatewayConfig::dev_defaults()).expect("dev serializes"),
        )),
    };
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/config.md");
    check_or_update(&doc, "entropy-gateway", &reference.table()).unwrap_or_else(|e| panic!("{e}"));
}
