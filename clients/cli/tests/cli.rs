//! The `entropy` CLI against a real in-process dev-mode gateway.

// Test harness code panics on setup failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../rust/tests/support/mod.rs"]
#[allow(dead_code)] // the client's tests use all of it, these only some
mod support;

use support::{DevGateway, KEY, dev_gateway};

fn cli(gw: &DevGateway, key: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_entropy"))
        .args(args)
        .env("ENTROPY_ENDPOINT", format!("http://{}", gw.addr))
        .env("ENTROPY_API_KEY", key)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_does_what_its_help_says() {
    let gw = dev_gateway().await;
    let gw = &gw;
    let run = |key: &'static str, args: &'static [&'static str]| async move {
        tokio::task::block_in_place(|| cli(gw, key, args))
    };
    let out = run(KEY, &["bytes", "32", "--hex"]).await;
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success()
            && text.trim().len() == 64
            && text.trim().bytes().all(|b| b.is_ascii_hexdigit())
    );

    let out = run(KEY, &["int", "--min", "-3", "--max", "3", "--count", "50"]).await;
    let values: Vec<i64> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| l.parse().unwrap()).collect();
    assert!(values.len() == 50 && values.iter().all(|v| (-3..=3).contains(v)));

    let out = run(KEY, &["stream", "--total", "100KiB", "--chunk", "16KiB"]).await;
    assert!(out.status.success());
    assert_eq!(out.stdout.len(), 100 << 10);

    let out = run(KEY, &["uuid", "--count", "2"]).await;
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 2);
    let out = run(KEY, &["status"]).await;
    assert!(String::from_utf8(out.stdout).unwrap().contains("SOURCE_KIND_OS"));
    let out = run(KEY, &["usage"]).await;
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}");
    assert!(text.contains("key:            dev"), "{text}");
    assert!(text.contains("calls/s:        unlimited"), "{text}");
    assert!(text.contains("undelivered:    0 bytes held of 33554432 (33554432 left)"), "{text}");
    let out = run(KEY, &["usage", "--json"]).await;
    let usage: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(usage["key_name"], "dev");
    assert_eq!(usage["bytes"]["unlimited"], true);
    assert_eq!(usage["undelivered_bytes"]["limit"], 33554432);
    let out = run("wrong", &["usage"]).await;
    assert_eq!(out.status.code(), Some(1));

    let out = run("wrong", &["bytes", "8"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stderr).unwrap().contains("unauthenticated"));
    let out = run(KEY, &["bytes", "0"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stderr).unwrap().contains("num_bytes"));

    // Quality: a verdict on bytes drawn for it, as text and as JSON.
    let out = run(KEY, &["check", "--sample", "64KiB"]).await;
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.starts_with("verdict:        PASSED"), "{text}");
    assert!(text.contains("provenance:     OS from") && text.contains("dev-collector"), "{text}");
    assert!(
        text.contains("FIPS 140-2:     0 of 26 blocks failed") || text.contains("of 26 blocks")
    );
    let out = run(KEY, &["check", "--sample", "4096", "--json"]).await;
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (report["passed"].as_bool(), report["sample_bytes"].as_u64()),
        (Some(true), Some(4096))
    );
    assert_eq!(report["provenance"]["kinds"], serde_json::json!(["OS"]));
    assert_eq!(report["thresholds"].as_array().map(Vec::len), Some(5));
    let out = run(KEY, &["check", "--sample", "100"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8(out.stderr).unwrap().contains("sample_bytes is 100, must be 2500..=")
    );

    // A kind the dev gateway is not fed: refused, naming what its pool holds.
    let out = run(KEY, &["--accept", "quantum", "bytes", "8"]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("failed precondition") && err.contains("the pool holds OS:"), "{err}");
    let out = run(KEY, &["--accept", "quantum,os", "bytes", "8", "--hex"]).await;
    assert!(out.status.success());
    let out = run(KEY, &["status"]).await;
    assert!(String::from_utf8(out.stdout).unwrap().contains("class:          OS "));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_comes_from_the_environment_or_a_file_never_a_flag_value() {
    let gw = dev_gateway().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("key");
    std::fs::write(&file, format!("{KEY}\n")).unwrap();
    let run = |args: Vec<String>| {
        let addr = format!("http://{}", gw.addr);
        tokio::task::block_in_place(move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_entropy"))
                .args(args)
                .env("ENTROPY_ENDPOINT", addr)
                .env_remove("ENTROPY_API_KEY")
                .output()
                .unwrap()
        })
    };
    let from_file =
        run(vec!["--api-key-file".into(), file.display().to_string(), "bytes".into(), "8".into()]);
    assert!(from_file.status.success(), "{}", String::from_utf8_lossy(&from_file.stderr));

    let none = run(vec!["bytes".into(), "8".into()]);
    let err = String::from_utf8(none.stderr).unwrap();
    assert_eq!(none.status.code(), Some(1));
    assert!(err.contains("ENTROPY_API_KEY") && err.contains("--api-key-file"), "{err}");

    let missing = dir.path().join("absent");
    let out = run(vec![
        "--api-key-file".into(),
        missing.display().to_string(),
        "bytes".into(),
        "8".into(),
    ]);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.code() == Some(1) && err.contains("absent"), "{err}");

    // The key as a flag value is a usage error (exit 2), not a key.
    let flag = run(vec!["--api-key".into(), KEY.into(), "bytes".into(), "8".into()]);
    assert_eq!(flag.status.code(), Some(2));
}

#[test]
fn completions_and_the_man_page_need_no_gateway_and_cover_every_subcommand() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_entropy"))
            .args(args)
            .env_remove("ENTROPY_API_KEY")
            .env("ENTROPY_ENDPOINT", "127.0.0.1:1") // nothing listens: nothing may be called
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let subcommands =
        ["bytes", "stream", "int", "float", "uuid", "receipt", "status", "usage", "check"];
    let bash = run(&["completions", "bash"]);
    let parsed = std::process::Command::new("bash").args(["-n", "-c", &bash]).status().unwrap();
    assert!(parsed.success(), "bash cannot parse the completion script");
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let script = run(&["completions", shell]);
        assert!(subcommands.iter().all(|s| script.contains(s)), "{shell}: {script}");
    }
    assert!(subcommands.iter().all(|s| bash.contains(s)));
    // The receipt subcommands complete too.
    for sub in ["verify", "public-key", "head", "prove", "consistency", "audit"] {
        assert!(bash.contains(sub), "bash completes no {sub}");
    }
    let man = run(&["man"]);
    assert!(man.contains(".TH entropy 1"), "{man}");
    assert!(subcommands.iter().all(|s| man.contains(s)), "{man}");
    assert!(man.contains("api\\-key\\-file") || man.contains("api-key-file"), "{man}");
}

/// The spec's test vectors (receipts/testdata/vectors.json).
fn vectors() -> serde_json::Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../receipts/testdata/vectors.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `entropy` with `args` and no gateway, no key: (exit code, stdout, stderr).
fn offline(args: &[&std::ffi::OsStr]) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_entropy"))
        .args(args)
        .env_remove("ENTROPY_API_KEY")
        .env("ENTROPY_ENDPOINT", "127.0.0.1:1")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn a_draw_file_of_the_spec_vectors_verifies_offline_and_each_tampering_is_refused_by_name() {
    let v = vectors();
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("gateway.pub");
    std::fs::write(&key, format!("{}\n", v["public_key"].as_str().unwrap())).unwrap();
    let other_key = dir.path().join("other.pub");
    // RFC 8032's TEST 1 public key: a valid key, not the gateway's.
    std::fs::write(
        &other_key,
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a\n",
    )
    .unwrap();
    let d = &v["draws"][0];
    let head = v["tree_heads"].as_array().unwrap().iter().find(|h| h["size"] == 4).unwrap();
    let proof = v["inclusion_proofs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["serial"] == 0 && p["tree_size"] == 4)
        .unwrap();
    let good = serde_json::json!({
        "format": "entropy-diode/draw/v1",
        "receipt": {"signed_receipt": d["signed_receipt"], "salt": d["salt"], "serial": 0},
        "values": {"kind": "integers", "values": d["values"]["values"]},
        "inclusion": {"signed_tree_head": head["signed_tree_head"], "hashes": proof["proof"]},
    });
    let verify = |doc: &serde_json::Value, key: &std::path::Path| {
        let file = dir.path().join("draw.json");
        std::fs::write(&file, doc.to_string()).unwrap();
        offline(&[
            "receipt".as_ref(),
            "verify".as_ref(),
            file.as_os_str(),
            "--public-key".as_ref(),
            key.as_os_str(),
        ])
    };

    let (code, text, err) = verify(&good, &key);
    assert_eq!(code, Some(0), "{err}");
    for line in [
        "key id:         ok (e5e1094af77c3b6a8366e3b68aa81105f53663c56a0eafbfa241db6a333c9455)",
        "signature:      ok",
        "serial:         ok (0)",
        "commitment:     ok",
        "request:        ok",
        "inclusion:      ok (leaf 0 of the signed head of size 4",
        "asked:          GetIntegers min=1 max=49 count=6",
        "values:         3, 11, 19, 27, 38, 45",
    ] {
        assert!(text.contains(line), "no {line:?} in {text}");
    }
    let mut no_proof = good.clone();
    no_proof.as_object_mut().unwrap().remove("inclusion");
    let (code, text, _) = verify(&no_proof, &key);
    assert_eq!(code, Some(0));
    assert!(text.contains("inclusion:      not checked"), "{text}");

    let refused = |doc: &serde_json::Value, key: &std::path::Path, check: &str| {
        let (code, _, err) = verify(doc, key);
        assert_eq!(code, Some(4), "{check}: {err}");
        assert!(err.contains(&format!("refused: {check}")), "{check}: {err}");
    };
    let mut value = good.clone();
    value["values"]["values"][2] = 20.into();
    refused(&value, &key, "commitment");
    let mut salt = good.clone();
    salt["receipt"]["salt"] = d["salt"].as_str().unwrap().replace("00", "01").into();
    refused(&salt, &key, "commitment");
    let mut byte = good.clone();
    let mut signed = hex::decode(d["signed_receipt"].as_str().unwrap()).unwrap();
    signed[100] ^= 0x01;
    byte["receipt"]["signed_receipt"] = hex::encode(&signed).into();
    refused(&byte, &key, "signature");
    refused(&good, &other_key, "key id");
    let mut path = good.clone();
    path["inclusion"]["hashes"][1] = proof["proof"][0].clone();
    refused(&path, &key, "inclusion");
    let mut unknown = good.clone();
    unknown["values"]["note"] = "trust me".into();
    refused(&unknown, &key, "draw file");
}
