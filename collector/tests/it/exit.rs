//! The binary's exit code on a config it cannot start with: 64 (EX_USAGE), as the gateway's,
//! whether the file does not validate, the key does not read, or a gateway or source named in
//! it cannot be set up.

use std::path::Path;
use std::process::Command;

/// A config with one OS source and one gateway whose table holds `gateway`.
fn config(key: &Path, gateway: &str) -> String {
    format!(
        r#"
collector_id = "c1"
key_id = "k1"
key_file = "{key}"
metrics_listen_addr = ""

[[gateway]]
id = "gw"
{gateway}

[[source]]
name = "os"
type = "os"
"#,
        key = key.display()
    )
}

#[test]
fn a_config_it_cannot_start_with_exits_64_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("k1.key");
    std::fs::write(&key, "ab".repeat(32)).unwrap();
    let missing = dir.path().join("missing.pem");
    let http = r#"endpoint = "http://127.0.0.1:9""#;
    let cases = [
        // Does not validate.
        ("invalid config key min_sources", format!("min_sources = 0\n{}", config(&key, http))),
        // Validates, but the key file does not read.
        ("invalid config key key_file", config(&dir.path().join("no.key"), http)),
        // Validates, but the gateway's CA file is not there: found when the collector is built.
        (
            "invalid config key gateway.endpoint",
            config(
                &key,
                &format!("endpoint = \"https://127.0.0.1:9\"\nca_file = \"{}\"", missing.display()),
            ),
        ),
    ];
    for (said, text) in cases {
        let path = dir.path().join("collector.toml");
        std::fs::write(&path, &text).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_entropy-collector"))
            .arg("--config")
            .arg(&path)
            .output()
            .expect("run the collector");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(64), "{said}: {stderr}");
        assert!(stderr.contains(said), "{said}: {stderr}");
    }
}
