//! docs/config.md's table for entropy-mcp is generated from the code (the one declaration of
//! each key in `src/config/keys.rs`, and the defaults), so it cannot drift: this test fails when
//! the file differs, and `UPDATE_CONFIG_REFERENCE=1 cargo test -p entropy-mcp --test
//! config_reference` rewrites the table.

use std::path::Path;

use entropy_mcp::config::{KEY_DOCS, McpConfig};
use entropy_testkit::config_reference::{Reference, check_or_update};

#[test]
fn docs_config_md_matches_the_mcp_config() {
    let reference = Reference {
        keys: KEY_DOCS.iter().map(|k| (k.key, k.unit, k.help)).collect(),
        defaults: toml::Table::try_from(McpConfig::default()).expect("defaults serialize"),
        variant: None,
    };
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/config.md");
    check_or_update(&doc, "entropy-mcp", &reference.table()).unwrap_or_else(|e| panic!("{e}"));
}
