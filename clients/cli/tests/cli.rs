//! The `entropy` CLI against a real in-process dev-mode gateway.

// Test harness code panics on setup failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../rust/tests/support/mod.rs"]
#[allow(dead_code)] // the client's tests use all of it, these only some
mod support;

use support::{DevGateway, KEY, dev_gateway, dev_gateway_with_receipts};

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

    // Which key drew: the vector's draw 0 is the key named "lottery-operator".
    let file = dir.path().join("draw.json");
    std::fs::write(&file, good.to_string()).unwrap();
    let by = |name: &str| {
        offline(&[
            "receipt".as_ref(),
            "verify".as_ref(),
            file.as_os_str(),
            "--public-key".as_ref(),
            key.as_os_str(),
            "--key-name".as_ref(),
            name.as_ref(),
        ])
    };
    let (code, text, _) = by("lottery-operator");
    assert_eq!(code, Some(0));
    assert!(text.contains("key name:       ok"), "{text}");
    let (code, _, err) = by("someone-else");
    assert!(code == Some(4) && err.contains("refused: key name"), "{err}");
}

/// `entropy` against `gw` with the dev key: (exit code, stdout, stderr).
fn online(gw: &DevGateway, args: &[&std::ffi::OsStr]) -> (Option<i32>, Vec<u8>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_entropy"))
        .args(args)
        .env("ENTROPY_ENDPOINT", format!("http://{}", gw.addr))
        .env("ENTROPY_API_KEY", KEY)
        .output()
        .unwrap();
    (out.status.code(), out.stdout, String::from_utf8(out.stderr).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receipted_draw_verifies_proves_and_shows_up_in_the_audit_with_its_redraw() {
    let receipts = tempfile::tempdir().unwrap();
    let gw = dev_gateway_with_receipts(receipts.path()).await;
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    let run = |args: Vec<std::ffi::OsString>| {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        tokio::task::block_in_place(|| online(&gw, &args))
    };
    macro_rules! args {
        ($($a:expr),* $(,)?) => { vec![$(std::ffi::OsString::from($a)),*] };
    }
    let ok = |(code, out, err): (Option<i32>, Vec<u8>, String)| {
        assert_eq!(code, Some(0), "{err}");
        String::from_utf8(out).unwrap()
    };

    // The public key as served is the one the gateway wrote to its public key file.
    ok(run(args!["receipt", "public-key", "--out", p("gateway.pub")]));
    let served = std::fs::read_to_string(p("gateway.pub")).unwrap();
    assert_eq!(served, std::fs::read_to_string(receipts.path().join("public.key")).unwrap());

    // A draw with --receipt: the values on stdout and in the draw file.
    let text = ok(run(args![
        "int",
        "--min",
        "1",
        "--max",
        "49",
        "--count",
        "6",
        "--receipt",
        p("draw.json")
    ]));
    let printed: Vec<i64> = text.lines().map(|l| l.parse().unwrap()).collect();
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p("draw.json")).unwrap()).unwrap();
    assert_eq!(file["format"], "entropy-diode/draw/v1");
    assert_eq!(file["values"]["kind"], "integers");
    assert_eq!(file["values"]["values"], serde_json::json!(printed));
    // Never over an existing draw file, and then nothing is drawn.
    let (code, _, err) =
        run(args!["int", "--min", "1", "--max", "49", "--count", "6", "--receipt", p("draw.json")]);
    assert!(code == Some(1) && err.contains("never overwritten"), "{err}");

    let verify = |file: std::path::PathBuf, key: std::path::PathBuf| {
        run(args!["receipt", "verify", file, "--public-key", key])
    };
    let text = ok(verify(p("draw.json"), p("gateway.pub")));
    for line in
        ["key id:         ok", "signature:      ok", "commitment:     ok", "request:        ok"]
    {
        assert!(text.contains(line), "{text}");
    }
    assert!(text.contains("asked:          GetIntegers min=1 max=49 count=6"), "{text}");

    // Each tampering is refused, naming the check (exit 4).
    let refused = |doc: &serde_json::Value, key: &str, check: &str| {
        std::fs::write(p("tampered.json"), doc.to_string()).unwrap();
        let (code, _, err) = verify(p("tampered.json"), p(key));
        assert_eq!(code, Some(4), "{check}: {err}");
        assert!(err.contains(&format!("refused: {check}")), "{check}: {err}");
    };
    let mut value = file.clone();
    value["values"]["values"][0] = (printed[0] % 49 + 1).into();
    refused(&value, "gateway.pub", "commitment");
    let mut salt = file.clone();
    let mut s = hex::decode(file["receipt"]["salt"].as_str().unwrap()).unwrap();
    s[0] ^= 0x80;
    salt["receipt"]["salt"] = hex::encode(s).into();
    refused(&salt, "gateway.pub", "commitment");
    let mut byte = file.clone();
    let mut signed = hex::decode(file["receipt"]["signed_receipt"].as_str().unwrap()).unwrap();
    let at = signed.len() / 2;
    signed[at] ^= 0x01;
    byte["receipt"]["signed_receipt"] = hex::encode(&signed).into();
    refused(&byte, "gateway.pub", "signature");
    std::fs::write(
        p("other.pub"),
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a\n",
    )
    .unwrap();
    refused(&file, "other.pub", "key id");

    // Prove: the inclusion proof is added, and verifies offline.
    let text = ok(run(args!["receipt", "prove", p("draw.json"), "--public-key", p("gateway.pub")]));
    assert!(text.contains("inclusion:      ok (leaf"), "{text}");
    let text = ok(verify(p("draw.json"), p("gateway.pub")));
    assert!(text.contains("inclusion:      ok (leaf"), "{text}");
    ok(run(args!["receipt", "head", "--out", p("old.sth"), "--public-key", p("gateway.pub")]));

    // A redraw, and the other kinds, each kept and verified.
    ok(run(args![
        "int",
        "--min",
        "1",
        "--max",
        "49",
        "--count",
        "6",
        "--receipt",
        p("redraw.json")
    ]));
    ok(run(args!["bytes", "16", "--hex", "--receipt", p("bytes.json")]));
    ok(run(args!["float", "--count", "5", "--receipt", p("floats.json")]));
    ok(run(args!["uuid", "--count", "2", "--receipt", p("uuids.json")]));
    for name in ["redraw.json", "bytes.json", "floats.json", "uuids.json"] {
        ok(verify(p(name), p("gateway.pub")));
    }
    ok(run(args!["receipt", "prove", p("uuids.json")]));
    ok(run(args!["receipt", "head", "--out", p("new.sth")]));

    // The newer head extends the older one.
    let text = ok(run(args![
        "receipt",
        "consistency",
        p("old.sth"),
        p("new.sth"),
        "--public-key",
        p("gateway.pub")
    ]));
    assert!(text.contains("consistency:    ok"), "{text}");
    // Heads given in the wrong order: a usage mistake, said so.
    let (code, _, err) = run(args![
        "receipt",
        "consistency",
        p("new.sth"),
        p("old.sth"),
        "--public-key",
        p("gateway.pub")
    ]);
    assert!(code == Some(1) && err.contains("older head first"), "{err}");

    // The audit lists both integer draws (the draw and its redraw) of the dev key, and the
    // other kinds, in serial order, from the log the head commits to.
    let serial = |name: &str| {
        let f: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p(name)).unwrap()).unwrap();
        f["receipt"]["serial"].as_u64().unwrap()
    };
    let text = ok(run(args![
        "receipt",
        "audit",
        "--public-key",
        p("gateway.pub"),
        "--key-name",
        "dev",
        "--head",
        p("new.sth"),
        "--json"
    ]));
    let listed: Vec<serde_json::Value> =
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let serials: Vec<u64> = listed.iter().map(|e| e["serial"].as_u64().unwrap()).collect();
    let want: Vec<u64> = ["draw.json", "redraw.json", "bytes.json", "floats.json", "uuids.json"]
        .iter()
        .map(|n| serial(n))
        .collect();
    assert_eq!(serials, want, "{text}");
    for e in &listed[..2] {
        assert_eq!(e["rpc"], "GetIntegers");
        assert_eq!(e["params"], serde_json::json!({"min": 1, "max": 49, "count": 6}));
        assert_eq!(e["construction"], "RAW");
    }
    assert_eq!(listed[2]["params"], serde_json::json!({"num_bytes": 16}));
    // A range, as text, with the copy of the log kept.
    let (a, b) = (serial("redraw.json"), serial("bytes.json"));
    let text = ok(run(args![
        "receipt",
        "audit",
        "--public-key",
        p("gateway.pub"),
        "--key-name",
        "dev",
        "--from",
        a.to_string(),
        "--to",
        b.to_string(),
        "--log-copy",
        p("copy")
    ]));
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(
        text.contains("GetIntegers min=1 max=49 count=6")
            && text.contains("GetRandom num_bytes=16")
    );
    assert!(p("copy").join("receipts.log").exists());
    // Another key's name lists nothing; another public key refuses the head.
    let text = ok(run(args![
        "receipt",
        "audit",
        "--public-key",
        p("gateway.pub"),
        "--key-name",
        "someone-else"
    ]));
    assert_eq!(text, "");
    let (code, _, err) =
        run(args!["receipt", "audit", "--public-key", p("other.pub"), "--key-name", "dev"]);
    assert!(code == Some(4) && err.contains("refused: log"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_without_a_receipt_log_refuses_receipted_draws_naming_receipts_dir() {
    let gw = dev_gateway().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("draw.json");
    let (code, _, err) = tokio::task::block_in_place(|| {
        online(&gw, &["bytes".as_ref(), "8".as_ref(), "--receipt".as_ref(), file.as_os_str()])
    });
    assert!(code == Some(1) && err.contains("receipts_dir"), "{err}");
    assert!(!file.exists(), "the empty draw file is removed");
}
