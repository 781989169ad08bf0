//! Tests of the config layers, validation and the gateway key sources.

use super::*;
use entropy_ops::config_keys::CommaList;

fn keys_of<T: Serialize>(value: &T) -> Vec<String> {
    let toml = toml::Value::try_from(value).expect("serializes");
    let mut keys: Vec<_> = toml.as_table().expect("table").keys().cloned().collect();
    keys.sort();
    keys
}

fn listed() -> Vec<String> {
    let mut listed: Vec<String> = KEYS.iter().map(|k| k.to_string()).collect();
    listed.sort();
    listed
}

/// Environment layers that read nothing.
fn no_env() -> [Env; 2] {
    let nothing = || Env::prefixed("ENTROPY_TEST_UNUSED_").only(&[]);
    [nothing(), nothing()]
}

fn http_flags(tokens: &str) -> ConfigFlags {
    ConfigFlags {
        transport: Some(Transport::Http),
        http_tokens_file: Some(tokens.into()),
        ..ConfigFlags::default()
    }
}

#[test]
fn keys_flags_and_struct_agree() {
    let full = McpConfig {
        gateway_api_key_file: Some("k".into()),
        gateway_ca_file: Some("ca".into()),
        http_tokens_file: Some("t".into()),
        http_tls_cert_file: Some("c".into()),
        http_tls_key_file: Some("k".into()),
        http_max_sessions_per_token: Some(1),
        ..McpConfig::default()
    };
    assert_eq!(keys_of(&full), listed(), "KEYS lists every config field");
    let flags = ConfigFlags {
        transport: Some(Transport::Http),
        gateway_endpoint: Some(String::new()),
        gateway_api_key_file: Some("k".into()),
        gateway_ca_file: Some("ca".into()),
        gateway_timeout_ms: Some(1),
        http_listen_addr: Some(full.http_listen_addr),
        http_tokens_file: Some("t".into()),
        http_allowed_hosts: Some(CommaList(vec![])),
        http_allowed_origins: Some(CommaList(vec![])),
        http_tls_cert_file: Some("c".into()),
        http_tls_key_file: Some("k".into()),
        http_allow_plaintext_non_loopback: Some(true),
        http_max_connections: Some(1),
        http_header_timeout_ms: Some(1),
        http_idle_timeout_ms: Some(1),
        http_max_sessions: Some(1),
        http_max_sessions_per_token: Some(1),
        http_max_concurrent_requests: Some(1),
        http_max_body_bytes: Some(1),
        http_session_idle_timeout_ms: Some(1),
        shutdown_grace_ms: Some(1),
        log_format: Some(LogFormat::Json),
        log_filter: Some("x".into()),
    };
    assert_eq!(keys_of(&flags), listed(), "every config key has a flag");
}

#[test]
fn layers_apply_in_order_and_errors_name_the_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("mcp.toml");
    std::fs::write(&file, "gateway_timeout_ms = 500\nhttp_max_sessions = 3\n").expect("w");
    let flags = ConfigFlags { gateway_timeout_ms: Some(700), ..ConfigFlags::default() };
    let c = load_with_env(Some(&file), &flags, no_env()).expect("valid");
    assert_eq!(c.http_max_sessions, 3, "file overrides default");
    assert_eq!(c.gateway_timeout_ms, 700, "flag overrides file");
    assert_eq!(c.transport, Transport::Stdio, "default");

    std::fs::write(&file, "http_max_sessions = \"lots\"\n").expect("w");
    let err = load_with_env(Some(&file), &ConfigFlags::default(), no_env()).expect_err("type");
    assert_eq!(err.key, "http_max_sessions", "{err}");

    std::fs::write(&file, "max_sessions = 5\n").expect("w");
    let err = load_with_env(Some(&file), &ConfigFlags::default(), no_env()).expect_err("unknown");
    assert!(err.to_string().contains("max_sessions"), "{err}");

    let missing = dir.path().join("absent.toml");
    let err = load_with_env(Some(&missing), &ConfigFlags::default(), no_env()).expect_err("file");
    assert_eq!(err.key, "--config");
}

#[test]
#[allow(clippy::result_large_err)] // figment's Jail API fixes the closure's error type
fn environment_overrides_the_file_and_bad_values_name_the_variable() {
    figment::Jail::expect_with(|jail| {
        jail.create_file("m.toml", "gateway_timeout_ms = 500\n")?;
        jail.set_env("ENTROPY_GATEWAY_TIMEOUT_MS", "900");
        jail.set_env("ENTROPY_HTTP_ALLOWED_HOSTS", "[\"mcp.example\", \"localhost\"]");
        // The key itself and variables of other programs are not config keys.
        jail.set_env("ENTROPY_API_KEY", "secret");
        jail.set_env("ENTROPY_MAX_WAIT_MS", "1");
        let c = load(Some(Path::new("m.toml")), &ConfigFlags::default()).expect("valid");
        assert_eq!(c.gateway_timeout_ms, 900);
        assert_eq!(c.http_allowed_hosts, ["mcp.example", "localhost"]);

        jail.set_env("ENTROPY_HTTP_MAX_BODY_BYTES", "big");
        let err = load(None, &ConfigFlags::default()).expect_err("bad env value");
        assert_eq!(err.key, "http_max_body_bytes");
        assert!(err.problem.contains("ENTROPY_HTTP_MAX_BODY_BYTES"), "{err}");
        Ok(())
    });
}

#[test]
#[allow(clippy::result_large_err)] // figment's Jail API fixes the closure's error type
fn the_client_libraries_variables_name_the_gateway_and_the_servers_own_win() {
    figment::Jail::expect_with(|jail| {
        jail.set_env("ENTROPY_ENDPOINT", "https://gateway.example:50051");
        jail.set_env("ENTROPY_CA_FILE", "/etc/entropy/ca.pem");
        let c = load(None, &ConfigFlags::default()).expect("valid");
        assert_eq!(c.gateway_endpoint, "https://gateway.example:50051");
        assert_eq!(c.gateway_ca_file.as_deref(), Some(Path::new("/etc/entropy/ca.pem")));

        jail.set_env("ENTROPY_GATEWAY_ENDPOINT", "https://other.example:50051");
        let c = load(None, &ConfigFlags::default()).expect("valid");
        assert_eq!(c.gateway_endpoint, "https://other.example:50051");
        Ok(())
    });
}

#[test]
fn validation_names_the_key_and_bound() {
    let check = |flags: ConfigFlags| load_with_env(None, &flags, no_env()).expect_err("invalid");
    let err = check(ConfigFlags { gateway_timeout_ms: Some(0), ..ConfigFlags::default() });
    assert_eq!(
        (err.key.as_str(), err.problem.contains("1..=600000")),
        ("gateway_timeout_ms", true)
    );
    let err = check(ConfigFlags { http_max_body_bytes: Some(10), ..ConfigFlags::default() });
    assert_eq!(err.key, "http_max_body_bytes");
    assert!(err.problem.contains("1024..=16777216"), "{err}");
    let err = check(ConfigFlags { http_max_sessions: Some(0), ..ConfigFlags::default() });
    assert_eq!(err.key, "http_max_sessions");
    let err = check(ConfigFlags {
        gateway_endpoint: Some("grpc://gw:50051".into()),
        ..ConfigFlags::default()
    });
    assert_eq!(err.key, "gateway_endpoint");
    for leaky in ["http://user:pw@gw:50051", "https://gw:50051/?key=x"] {
        let err =
            check(ConfigFlags { gateway_endpoint: Some(leaky.into()), ..ConfigFlags::default() });
        assert!(err.problem.contains("must not carry credentials"), "{err}");
    }
    // The endpoint syntax every client shares: a CA file makes a bare endpoint TLS, and
    // contradicts an explicit http://.
    let err = check(ConfigFlags {
        gateway_ca_file: Some("ca.pem".into()),
        gateway_endpoint: Some("http://127.0.0.1:50051".into()),
        ..ConfigFlags::default()
    });
    assert_eq!((err.key.as_str(), err.problem.contains("CA file")), ("gateway_endpoint", true));
    let err = check(ConfigFlags { gateway_endpoint: Some("gw:port".into()), ..Default::default() });
    assert_eq!((err.key.as_str(), err.problem.contains("1..=65535")), ("gateway_endpoint", true));
    let err = check(ConfigFlags {
        http_allowed_origins: Some(CommaList(vec!["example.com".into()])),
        ..ConfigFlags::default()
    });
    assert_eq!(err.key, "http_allowed_origins");
    let err = check(ConfigFlags { log_filter: Some("=[".into()), ..ConfigFlags::default() });
    assert_eq!(err.key, "log_filter");
}

#[test]
fn connection_limits_are_bounded_and_the_session_share_is_below_the_cap() {
    let check = |flags: ConfigFlags| load_with_env(None, &flags, no_env()).expect_err("invalid");
    let cases = [
        (ConfigFlags { http_max_connections: Some(0), ..Default::default() }, "1..=65536"),
        (ConfigFlags { http_max_connections: Some(65_537), ..Default::default() }, "1..=65536"),
        (ConfigFlags { http_header_timeout_ms: Some(99), ..Default::default() }, "100..=600000"),
        (ConfigFlags { http_idle_timeout_ms: Some(999), ..Default::default() }, "1000..=86400000"),
        (
            ConfigFlags { http_session_idle_timeout_ms: Some(0), ..Default::default() },
            "1000..=86400000",
        ),
        (ConfigFlags { http_max_sessions_per_token: Some(0), ..Default::default() }, "1..="),
        (
            ConfigFlags {
                http_max_sessions: Some(8),
                http_max_sessions_per_token: Some(9),
                ..Default::default()
            },
            "1..=http_max_sessions (8)",
        ),
    ];
    for (flags, bound) in cases {
        let key = toml::Table::try_from(&flags).expect("flags").keys().next_back().cloned();
        let err = check(flags);
        assert_eq!(Some(err.key.clone()), key, "{err}");
        assert!(err.problem.contains(bound), "{err}");
    }
    let c = load_with_env(None, &ConfigFlags::default(), no_env()).expect("defaults");
    assert_eq!((c.http_max_sessions, c.sessions_per_token()), (64, 16), "a quarter by default");
    let one = ConfigFlags { http_max_sessions: Some(3), ..Default::default() };
    assert_eq!(load_with_env(None, &one, no_env()).expect("valid").sessions_per_token(), 1);
    let set = ConfigFlags { http_max_sessions_per_token: Some(64), ..Default::default() };
    assert_eq!(load_with_env(None, &set, no_env()).expect("valid").sessions_per_token(), 64);
}

#[test]
fn http_needs_tokens_and_stays_on_loopback_unless_secured() {
    let err = load_with_env(
        None,
        &ConfigFlags { transport: Some(Transport::Http), ..ConfigFlags::default() },
        no_env(),
    )
    .expect_err("no tokens");
    assert_eq!(err.key, "http_tokens_file");
    let c = load_with_env(None, &http_flags("t.toml"), no_env()).expect("loopback is fine");
    assert!(c.http_listen_addr.ip().is_loopback());

    let public = ConfigFlags {
        http_listen_addr: Some("0.0.0.0:8787".parse().expect("addr")),
        ..http_flags("t.toml")
    };
    let err = load_with_env(None, &public, no_env()).expect_err("plaintext on the network");
    assert_eq!(err.key, "http_listen_addr");
    assert!(err.problem.contains("http_tls_cert_file"), "{err}");
    let tls = ConfigFlags {
        http_tls_cert_file: Some("c.pem".into()),
        http_tls_key_file: Some("k.pem".into()),
        ..public.clone()
    };
    let err = load_with_env(None, &tls, no_env()).expect_err("hosts");
    assert_eq!(err.key, "http_allowed_hosts");
    let named =
        ConfigFlags { http_allowed_hosts: Some(CommaList(vec!["mcp.example".into()])), ..tls };
    load_with_env(None, &named, no_env()).expect("TLS and a host name");
    let err = load_with_env(None, &ConfigFlags { http_tls_key_file: None, ..named }, no_env())
        .expect_err("cert without key");
    assert_eq!(err.key, "http_tls_key_file");
}

#[test]
fn the_gateway_key_comes_from_one_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("key");
    std::fs::write(&file, "from-file\n").expect("w");
    let plain = McpConfig::default();
    let with_file = McpConfig { gateway_api_key_file: Some(file.clone()), ..McpConfig::default() };
    assert_eq!(gateway_key(&plain, Some("from-env".into())), Ok("from-env".into()));
    assert_eq!(gateway_key(&with_file, None), Ok("from-file".into()));
    let err = gateway_key(&with_file, Some("from-env".into())).expect_err("both");
    assert!(err.problem.contains("use one"), "{err}");
    let err = gateway_key(&plain, None).expect_err("neither");
    assert!(err.problem.contains(API_KEY_ENV), "{err}");
    let err = gateway_key(&plain, Some("has space".into())).expect_err("not printable");
    assert_eq!(err.key, API_KEY_ENV);
    let absent = McpConfig { gateway_api_key_file: Some(dir.path().join("no")), ..plain };
    assert_eq!(gateway_key(&absent, None).expect_err("missing").key, "gateway_api_key_file");
}

#[test]
fn printing_shows_no_secret() {
    let c =
        McpConfig { gateway_api_key_file: Some("/run/secrets/gw".into()), ..McpConfig::default() };
    let printed = toml::to_string(&c).expect("prints");
    assert!(printed.contains("/run/secrets/gw") && !printed.to_lowercase().contains("api_key ="));
}

#[test]
fn the_example_config_lists_every_key_and_loads() {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/mcp.example.toml"));
    let text = std::fs::read_to_string(path).expect("example config");
    let table: toml::Table = text.parse().expect("toml");
    let mut keys: Vec<_> = table.keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, listed(), "the example shows every key");
    let c = load_with_env(Some(path), &ConfigFlags::default(), no_env()).expect("valid");
    assert_eq!(
        McpConfig {
            transport: Transport::Stdio,
            gateway_api_key_file: None,
            gateway_ca_file: None,
            gateway_endpoint: McpConfig::default().gateway_endpoint,
            http_tokens_file: None,
            http_tls_cert_file: None,
            http_tls_key_file: None,
            http_max_sessions_per_token: None,
            ..c
        },
        McpConfig::default(),
        "the example shows the defaults"
    );
}
