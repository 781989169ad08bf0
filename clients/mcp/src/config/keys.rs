//! Every MCP server config key, declared once: type, default, flag, unit and meaning. The
//! struct, its `Default`, the `--<key>` flags, [`KEYS`] and [`KEY_DOCS`] come from here
//! (`entropy_ops::config_keys!`).

use std::net::SocketAddr;
use std::path::PathBuf;

use entropy_ops::LogFormat;
use entropy_ops::config_keys::CommaList;

use super::Transport;

entropy_ops::config_keys! {
    /// Every setting of the MCP server. Field names are the config keys; see the README.
    #[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct McpConfig;
    /// `--<key>` flags, one per config key; only those given override the other layers.
    pub struct ConfigFlags;
    keys {
        /// How agents reach this server: "stdio" (a child process of a desktop agent) or "http"
        /// (Streamable HTTP, for remote agents).
        transport: Transport = Transport::Stdio,
            flag(Transport, "TRANSPORT"), unit("`stdio` or `http`"),
            help("stdio or http");
        /// The gateway, in the endpoint syntax every client shares (`host:port`, `http://`,
        /// `https://`; a bare remote host is TLS).
        gateway_endpoint: String = "127.0.0.1:50051".into(),
            flag(String, "ENDPOINT"), unit("endpoint"),
            help("Gateway gRPC endpoint (host:port, http:// or https://; a bare remote host is TLS)");
        /// File holding the gateway API key (one line). Unset: the key comes from
        /// ENTROPY_API_KEY.
        gateway_api_key_file: Option<PathBuf> = None,
            flag(PathBuf, "FILE"), unit("path"),
            help("File holding the gateway API key (else ENTROPY_API_KEY)");
        /// PEM CA certificates to trust for the gateway's TLS (default: the web PKI roots).
        gateway_ca_file: Option<PathBuf> = None,
            flag(PathBuf, "FILE"), unit("path"),
            help("CA (PEM) to trust for the gateway's TLS");
        /// Deadline of each gateway call, connecting included.
        gateway_timeout_ms: u64 = 10_000,
            flag(u64, "MS"), unit("milliseconds"),
            help("Deadline of each gateway call, connecting included, ms (1..=600000)");
        /// Address of the HTTP transport. Loopback by default; any other address needs TLS (or
        /// `http_allow_plaintext_non_loopback`) and its host names in `http_allowed_hosts`.
        http_listen_addr: SocketAddr = SocketAddr::from(([127, 0, 0, 1], 8787)),
            flag(SocketAddr, "ADDR"), unit("host:port"),
            help("HTTP transport address");
        /// TOML file of accepted bearer tokens, as SHA-256 digests. Required for "http".
        http_tokens_file: Option<PathBuf> = None,
            flag(PathBuf, "FILE"), unit("path"),
            help("Bearer tokens file (TOML, SHA-256 digests); required for http");
        /// `Host` header values accepted (names or name:port): DNS-rebinding protection.
        http_allowed_hosts: Vec<String> =
            vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            flag(CommaList, "HOSTS"), unit("list of host names"),
            help("Accepted Host names (DNS-rebinding protection), comma-separated; others get 403");
        /// Browser origins (`https://app.example:443`, `http://localhost:*`) allowed to call; a
        /// request with any other `Origin` header is refused. Requests without one (non-browser
        /// clients) are not affected.
        http_allowed_origins: Vec<String> = Vec::new(),
            flag(CommaList, "ORIGINS"), unit("list of origins"),
            help("Allowed browser origins, comma-separated (https://app.example, http://localhost:*, null); any other Origin gets 403");
        /// PEM certificate chain for TLS on the HTTP transport (with `http_tls_key_file`).
        http_tls_cert_file: Option<PathBuf> = None,
            flag(PathBuf, "FILE"), unit("path"),
            help("TLS certificate chain (PEM) for the HTTP transport");
        /// PEM private key for TLS on the HTTP transport.
        http_tls_key_file: Option<PathBuf> = None,
            flag(PathBuf, "FILE"), unit("path"),
            help("TLS private key (PEM) for the HTTP transport");
        /// Serve plain HTTP on a non-loopback address (behind a TLS-terminating proxy only).
        http_allow_plaintext_non_loopback: bool = false,
            flag(bool, "BOOL"), unit("boolean"),
            help("Plain HTTP on a non-loopback address (behind a TLS proxy)");
        /// Most HTTP connections open at once, counted from accept (before TLS); past it a new
        /// connection is closed at once. 256: each costs a descriptor and at most 0.5 MiB
        /// (docs/security.md, "Resource bounds"), so with the other caps the worst case fits
        /// a 1,024-descriptor limit and a 512 MiB host; a few agents need a few connections each.
        http_max_connections: usize = 256,
            flag(usize, "N"), unit("count"),
            help("Most open HTTP connections, counted from accept (before TLS); more are closed at once (1..=65536)");
        /// Time a connection has, from accept, to finish its TLS handshake and send a complete
        /// request head; on HTTP/1.1 also the time to send each next request head (hyper's
        /// header read timeout, which runs while a kept-alive connection waits). 10 s: the TLS
        /// handshake's old bound, and several round trips of a slow mobile or satellite link.
        http_header_timeout_ms: u64 = 10_000,
            flag(u64, "MS"), unit("milliseconds"),
            help("Time from accept to a complete request head, TLS handshake included; on HTTP/1.1 also per next request head, ms (100..=600000)");
        /// A connection without an authenticated request in progress for this long is closed.
        /// Refused requests, PINGs and trickled bytes are not activity; an SSE stream of a
        /// session is. 60 s: agents reconnect cheaply, and an idle slot frees within a minute.
        http_idle_timeout_ms: u64 = 60_000,
            flag(u64, "MS"), unit("milliseconds"),
            help("Close connections with no authenticated request in progress for this long, ms (1000..=86400000)");
        /// Most MCP sessions open at once; further `initialize` requests get 503.
        http_max_sessions: usize = 64,
            flag(usize, "N"), unit("count"),
            help("Most open MCP sessions; a further initialize gets 503 (1..=100000)");
        /// Most MCP sessions one token may hold; a further `initialize` with it gets 429 while
        /// other tokens still get sessions. Unset: a quarter of `http_max_sessions`, at least 1.
        http_max_sessions_per_token: Option<usize> = None,
            flag(usize, "N"), unit("count"),
            help("Most open MCP sessions per token; a further initialize with it gets 429 (1..=http_max_sessions; default a quarter of it, at least 1)");
        /// Most authenticated HTTP requests in progress at once; further requests get 503. A
        /// POST counts until its response ends (a tool call until its result), a GET only until
        /// its head. 16: each may hold up to 24 × `http_max_body_bytes` while its arguments are
        /// parsed and used, and an agent runs a few calls at a time.
        http_max_concurrent_requests: usize = 16,
            flag(usize, "N"), unit("count"),
            help("Most authenticated HTTP requests in progress (a POST until its response ends); further ones get 503 (1..=100000)");
        /// Largest request body; larger ones get 413. 256 KiB: the largest arguments (1,000
        /// items to shuffle or sample) at 250 bytes an item.
        http_max_body_bytes: usize = 256 << 10,
            flag(usize, "BYTES"), unit("bytes"),
            help("Largest request body; larger gets 413, bytes (1024..=16777216)");
        /// A session without any request for this long is closed.
        http_session_idle_timeout_ms: u64 = 300_000,
            flag(u64, "MS"), unit("milliseconds"),
            help("Close sessions idle this long, ms (1000..=86400000)");
        /// On SIGTERM/SIGINT, how long requests in progress get to finish.
        shutdown_grace_ms: u64 = 5_000,
            flag(u64, "MS"), unit("milliseconds"),
            help("Time requests in progress get on SIGTERM, ms (at most 600000)");
        /// Log line format: "text" or "json" (always on stderr: stdout is the stdio transport).
        log_format: LogFormat = LogFormat::Text,
            flag(LogFormat, "FORMAT"), unit("`text` or `json`"),
            help("Log format");
        /// Log filter in `tracing` EnvFilter syntax.
        log_filter: String = "info".into(),
            flag(String, "FILTER"), unit("EnvFilter directives"),
            help("Log filter (tracing EnvFilter syntax)");
    }
    other {}
}
