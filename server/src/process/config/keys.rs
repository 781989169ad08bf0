//! Every gateway config key, declared once: type, default, flag, unit and meaning. The struct,
//! its `Default`, the `--<key>` flags, [`KEYS`] and [`KEY_DOCS`] (docs/config.md) come from
//! here (`entropy_ops::config_keys!`).

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::grpc::web::Origin;
use crate::metrics::KeyLabel;

use super::LogFormat;
use crate::domain::receipts::ReceiptSync;

entropy_ops::config_keys! {
    /// Every setting of the gateway. Field names are the config keys; see docs/config.md.
    #[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct GatewayConfig;
    /// `--<key>` flags, one per config key; only those given override the other layers.
    pub struct ConfigFlags;
    keys {
        /// Public gRPC address: EntropyService, health and reflection.
        listen_addr: SocketAddr = SocketAddr::from(([0, 0, 0, 0], 50051)),
            flag(SocketAddr, "ADDR"), unit("host:port"),
            help("Public gRPC address");
        /// Internal gRPC address for IngestService (collectors). Keep it off the public network.
        ingest_listen_addr: SocketAddr = SocketAddr::from(([127, 0, 0, 1], 50052)),
            flag(SocketAddr, "ADDR"), unit("host:port"),
            help("Internal ingest gRPC address");
        /// TOML file of client API keys (name + SHA-256 of the secret). Required outside dev mode.
        api_keys_file: Option<PathBuf> = None,
            flag(PathBuf, "FILE"), unit("path"),
            help("Client API keys file (TOML)");
        /// Directory of `<key_id>.key` files holding chunk MAC keys as hex. Required outside dev
        /// mode.
        ingest_keys_dir: Option<PathBuf> = None,
            flag(PathBuf, "DIR"), unit("path"),
            help("Directory of <key_id>.key chunk MAC keys");
        /// Directory of the gateway's ingest lease (`ingest-lease`): up to when the chunks it
        /// stored are dated, so that after a restart, whatever the config, none is stored
        /// again. Created if missing; must be writable, kept across restarts (a volume, not a
        /// container's own filesystem) and used by one gateway process at a time. The default
        /// is the FHS place for a program's state (systemd's `StateDirectory=entropy-gateway`).
        /// Ignored with `--dev`, which keeps the lease in memory.
        state_dir: Option<PathBuf> = Some(PathBuf::from("/var/lib/entropy-gateway")),
            flag(PathBuf, "DIR"), unit("path"),
            help("Directory of the ingest lease, kept across restarts (ignored with --dev)");
        /// PEM certificate chain for TLS on the public listener (with `tls_key_file`); plaintext
        /// when unset.
        tls_cert_file: Option<PathBuf> = None,
            flag(PathBuf, "FILE"), unit("path"),
            help("TLS certificate chain (PEM) for the public listener");
        /// PEM private key for TLS on the public listener.
        tls_key_file: Option<PathBuf> = None,
            flag(PathBuf, "FILE"), unit("path"),
            help("TLS private key (PEM) for the public listener");
        /// Accept TLS 1.2 as well as TLS 1.3 (both listeners).
        tls_allow_tls12: bool = false,
            flag(bool, "BOOL"), unit("boolean"),
            help("Accept TLS 1.2 as well as 1.3");
        /// PEM certificate chain for TLS on the ingest listener (with `ingest_tls_key_file`).
        ingest_tls_cert_file: Option<PathBuf> = None,
            flag(PathBuf, "FILE"), unit("path"),
            help("TLS certificate chain (PEM) for the ingest listener");
        /// PEM private key for TLS on the ingest listener.
        ingest_tls_key_file: Option<PathBuf> = None,
            flag(PathBuf, "FILE"), unit("path"),
            help("TLS private key (PEM) for the ingest listener");
        /// PEM CA certificates: when set, collectors must present a client certificate chaining
        /// to one (mTLS). Needs ingest TLS.
        ingest_client_ca_file: Option<PathBuf> = None,
            flag(PathBuf, "FILE"), unit("path"),
            help("CA (PEM) that collector client certificates must chain to (mTLS)");
        /// Most bytes the pool holds. The memory is committed at start (touched page by page), so
        /// the gateway's resident size is about this from the first second.
        pool_capacity_bytes: usize = 16 << 20,
            flag(usize, "BYTES"), unit("bytes"),
            help("Pool capacity in bytes, committed at start");
        /// Below this many pool bytes, grpc.health.v1 reports NOT_SERVING.
        pool_low_watermark_bytes: usize = 64 << 10,
            flag(usize, "BYTES"), unit("bytes"),
            help("NOT_SERVING below this many pool bytes");
        /// Longest a byte may stay in the pool: older bytes are wiped unserved and counted as
        /// expired (`entropy_gateway_pool_expired_bytes_total`, GetStatus). 0: no limit.
        max_byte_age_ms: u64 = 0,
            flag(u64, "MS"), unit("milliseconds"),
            help("Wipe pool bytes older than this, unserved, ms; 0: no limit");
        /// Longest a unary call waits for entropy before UNAVAILABLE (a shorter client deadline
        /// wins).
        max_wait_ms: u64 = 2_000,
            flag(u64, "MS"), unit("milliseconds"),
            help("Longest unary wait for entropy, ms");
        /// Longest a stream waits for entropy for its next message before it ends with
        /// UNAVAILABLE (nothing consumed; the client reopens it).
        stream_max_wait_ms: u64 = 30_000,
            flag(u64, "MS"), unit("milliseconds"),
            help("Longest a stream waits for entropy per message, ms");
        /// DRBG output (a call asking for a DRBG construction) between two reseeds of its
        /// instance from the pool: it reseeds before its next generate request once it has
        /// produced this many bytes. 1 GiB by default: what a state captured from memory could
        /// reveal stays bounded, at 32 pool bytes per GiB.
        drbg_reseed_interval_bytes: u64 = 1 << 30,
            flag(u64, "BYTES"), unit("bytes"),
            help("DRBG output between reseeds from the pool, bytes");
        /// Time between two reseeds of a DRBG instance: it reseeds before its next generate
        /// request once it was seeded this long ago. 60 s by default: a stream's output depends
        /// on one seeding for at most a minute, at 32 pool bytes per stream per minute.
        drbg_reseed_interval_ms: u64 = 60_000,
            flag(u64, "MS"), unit("milliseconds"),
            help("Time between DRBG reseeds from the pool, ms");
        /// Directory of the receipt log (docs/receipts.md): signed receipts of the draws that
        /// ask for one (`receipt = true`, or every draw of a key holding `entropy:receipts`),
        /// appended before the draw is answered. Unset: no receipts (such calls are refused
        /// with FAILED_PRECONDITION). Created if missing; keep it across restarts (it is the
        /// log an auditor checks) and give it to one gateway process at a time (locked).
        receipts_dir: Option<PathBuf> = None,
            flag(PathBuf, "DIR"), unit("path"),
            help("Directory of the receipt log; unset: no receipts");
        /// The Ed25519 signing key of receipts and tree heads: a file of exactly 32 raw bytes,
        /// readable by its owner only. Unset: `<receipts_dir>/signing.key`, made (mode 0600) at
        /// the first start.
        receipts_key_file: Option<PathBuf> = None,
            flag(PathBuf, "FILE"), unit("path"),
            help("Receipt signing key (32 raw bytes, mode 0600); default <receipts_dir>/signing.key");
        /// Where the gateway writes its receipt public key at start (64 hex digits and a
        /// newline), for the operator to publish. Unset: `<receipts_dir>/public.key`.
        receipts_public_key_file: Option<PathBuf> = None,
            flag(PathBuf, "FILE"), unit("path"),
            help("Receipt public key written at start; default <receipts_dir>/public.key");
        /// When a receipt is durable before its draw is answered: "group" (concurrent draws
        /// share one fdatasync) or "every_append" (one fdatasync per receipt). Both answer only
        /// after the receipt's fsync.
        receipts_sync: ReceiptSync = ReceiptSync::Group,
            flag(ReceiptSync, "POLICY"), unit("`group` or `every_append`"),
            help("Receipt log fsync policy");
        /// How often the gateway signs a tree head of its receipt log while the log grows
        /// (also written to `<receipts_dir>/head.sth`). A receipt is covered by a signed head
        /// at most this long after its draw.
        receipts_head_interval_ms: u64 = 1_000,
            flag(u64, "MS"), unit("milliseconds"),
            help("Interval between signed tree heads of the receipt log, ms");
        /// This gateway's name: collectors seal chunks for it (their `[[gateway]] id`) and it
        /// refuses chunks sealed for another, so a chunk cannot be stored by two gateways.
        /// 1..=64 characters of [A-Za-z0-9._-]; required (dev mode sets "dev").
        gateway_id: String = String::new(),
            flag(String, "ID"), unit("name"),
            help("This gateway's id, as collectors address it (required outside --dev)");
        /// How old a chunk's timestamp may be.
        freshness_window_ms: u64 = 60_000,
            flag(u64, "MS"), unit("milliseconds"),
            help("Chunk timestamp tolerance either way, ms");
        /// How far ahead of the gateway's clock a chunk's timestamp may be. Every chunk stored
        /// moves the ingest lease (`state_dir`) to its time, so a large value delays fresh
        /// chunks after a restart as long as a chunk dated that far ahead was stored; without
        /// a lease on disk the gateway accepts chunks dated from its start plus this on.
        max_future_skew_ms: u64 = 2_000,
            flag(u64, "MS"), unit("milliseconds"),
            help("Largest chunk timestamp ahead of the clock, ms");
        /// Largest chunk accepted by Publish.
        max_chunk_bytes: usize = 1 << 20,
            flag(usize, "BYTES"), unit("bytes"),
            help("Largest chunk accepted, bytes");
        /// Most (collector, epoch) pairs tracked for replay protection at once.
        replay_max_streams: usize = 4_096,
            flag(usize, "N"), unit("count"),
            help("Most collector epochs tracked for replay protection");
        /// The most bytes the gateway buffers for its peers, all listeners together: request
        /// headers and bodies not yet handled, and responses not yet written to their sockets
        /// (entropy drawn for callers included). It is split: `ingest_max_buffered_bytes` for
        /// Publish bodies, `max_buffered_request_bytes` for public requests, the rest for
        /// responses. Past a part, requests wait or are refused (RESOURCE_EXHAUSTED) and draws
        /// wait, then are refused. docs/security.md gives the worst case as a formula.
        max_buffered_bytes: usize = 128 << 20,
            flag(usize, "BYTES"), unit("bytes"),
            help("Process-wide ceiling on buffered request and response bytes");
        /// The part of `max_buffered_bytes` for public calls in progress (each holds its header
        /// block and 20 KiB, what a call costs, plus its body past 8 KiB) and answers without
        /// entropy (health, status, reflection) not yet written. When it is full, the connection
        /// that holds the most of it is closed (one that never authenticated first); a call
        /// that still finds no room within 100 ms is refused (RESOURCE_EXHAUSTED), and bodies
        /// wait.
        max_buffered_request_bytes: usize = 32 << 20,
            flag(usize, "BYTES"), unit("bytes"),
            help("Public request bytes held at once, bytes (part of max_buffered_bytes)");
        /// What one public connection may hold of `max_buffered_request_bytes`: every call in
        /// progress holds its header block and 20 KiB (what a call costs), plus its body past
        /// 8 KiB, so the default admits every one of `max_streams_per_connection` calls.
        max_buffered_request_bytes_per_connection: usize = 4 << 20,
            flag(usize, "BYTES"), unit("bytes"),
            help("Public request bytes one connection may hold, bytes");
        /// The part of `max_buffered_bytes` for Publish request bodies, all ingest connections
        /// together (a body is authenticated only once whole); past it, bodies wait and HTTP/2
        /// flow control stops their senders. Kept for collectors: public traffic cannot use it.
        /// At least max_chunk_bytes + 65536.
        ingest_max_buffered_bytes: usize = 32 << 20,
            flag(usize, "BYTES"), unit("bytes"),
            help("Publish bodies held at once, bytes (part of max_buffered_bytes)");
        /// Most open connections on the ingest listener (collectors are few).
        ingest_max_connections: usize = 64,
            flag(usize, "N"), unit("count"),
            help("Most open ingest connections");
        /// On SIGTERM/SIGINT, how long in-flight calls get to finish before the process exits.
        shutdown_grace_ms: u64 = 10_000,
            flag(u64, "MS"), unit("milliseconds"),
            help("Shutdown grace period, ms");
        /// On SIGTERM/SIGINT, how long to keep serving every call while health and `/readyz`
        /// already say NOT_SERVING, so a load balancer stops routing here before anything is
        /// refused; the grace period follows. Zero: stop at once.
        shutdown_drain_ms: u64 = 0,
            flag(u64, "MS"), unit("milliseconds"),
            help("On SIGTERM, serve this long while NOT_SERVING before draining, ms (at most 600000)");
        /// Most open connections on the public listener; past it a new connection takes the
        /// place of the oldest one that never authenticated, or is closed at once. It must fit
        /// the file-descriptor limit with the ingest listener's (checked at start, after raising
        /// the soft limit to the hard one); 0 picks the most that fit, at most 512 (so the
        /// default config's worst-case memory fits a small host: `--print-bounds`).
        max_connections: usize = 0,
            flag(usize, "N"), unit("count"),
            help("Most open public connections, 0 = what the fd limit allows, at most 512");
        /// Most concurrent calls (HTTP/2 streams) per connection, announced in SETTINGS: compliant
        /// clients queue further calls, and a stream opened past it is refused (REFUSED_STREAM).
        /// Each stream a peer holds open costs about 2 KiB whether or not its call is admitted,
        /// so this is a factor of every connection's worst case (`--print-bounds`).
        max_streams_per_connection: u32 = 100,
            flag(u32, "N"), unit("count"),
            help("Most concurrent calls per connection");
        /// A connection with no call in progress for this long is closed (0: never). PINGs and
        /// partial requests do not count as activity.
        idle_timeout_ms: u64 = 120_000,
            flag(u64, "MS"), unit("milliseconds"),
            help("Close connections without a call for this long, ms; 0 never");
        /// A response whose bytes wait this long with none of them written to the socket (its
        /// HTTP/2 window stays shut) is reset, and a connection that owes entropy and has written
        /// none for this long is closed; what they held is wiped and counted as discarded (0:
        /// never). Keepalive PINGs and answers without entropy do not count as progress.
        send_timeout_ms: u64 = 30_000,
            flag(u64, "MS"), unit("milliseconds"),
            help("Reset a response, close a connection, whose entropy waits this long unwritten, ms; 0 = never");
        /// Response bytes drawn for one connection's calls and not yet written to its socket;
        /// further draws on it wait for room (then RESOURCE_EXHAUSTED). Each key has its own cap
        /// too (`max_undelivered_bytes` in the keys file, default 32 MiB).
        max_undelivered_bytes_per_connection: usize = 16 << 20,
            flag(usize, "BYTES"), unit("bytes"),
            help("Drawn response bytes per connection not yet written, bytes");
        /// HTTP address of `/metrics`, `/healthz` and `/readyz`; "" turns the endpoint off. Loopback
        /// by default: the series name keys and count their use, so expose it deliberately.
        #[serde(with = "entropy_ops::config_keys::optional_addr")]
        metrics_listen_addr: Option<SocketAddr> = Some(SocketAddr::from(([127, 0, 0, 1], 9464))),
            flag(String, "ADDR"), unit("host:port"),
            help("Metrics/health HTTP address, \"\" for none");
        /// What the `key` label of per-key series shows: "name" (the keys file's names), "digest"
        /// (a hash of each name: per-key series without names) or "none" (one series for all).
        metrics_key_label: KeyLabel = KeyLabel::Name,
            flag(KeyLabel, "LABEL"), unit("`name`, `digest` or `none`"),
            help("Per-key series label: name, digest or none");
        /// Not ready (gRPC health NOT_SERVING, /readyz 503) when no chunk has arrived from any
        /// collector (stored, or deferred because the pool was full) for this long; 0 disables.
        ingest_stale_after_ms: u64 = 60_000,
            flag(u64, "MS"), unit("milliseconds"),
            help("Not ready after this long without a chunk from any collector, ms; 0 disables");
        /// Log line format: "text" or "json".
        log_format: LogFormat = LogFormat::Text,
            flag(LogFormat, "FORMAT"), unit("`text` or `json`"),
            help("Log format");
        /// Log filter in `tracing` EnvFilter syntax (e.g. "info", "entropy_gateway=debug").
        log_filter: String = "info".into(),
            flag(String, "FILTER"), unit("EnvFilter directives"),
            help("Log filter (tracing EnvFilter syntax)");
        /// Serve gRPC-Web (browsers) for EntropyService on the public listener, with the same
        /// keys, quotas and limits; over plaintext this also admits HTTP/1.1 there.
        grpc_web_enabled: bool = false,
            flag(bool, "BOOL"), unit("boolean"),
            help("Serve gRPC-Web for browsers on the public listener");
        /// Browser origins allowed to call over gRPC-Web (CORS), exactly as browsers send them
        /// (`https://app.example.com`); no wildcard. Needs `grpc_web_enabled`.
        grpc_web_allowed_origins: Vec<Origin> = Vec::new(),
            flag(entropy_ops::config_keys::CommaList, "ORIGINS"), unit("list of origins"),
            help("Origins allowed to call over gRPC-Web, comma-separated, exact (https://app.example.com)");
        /// Serve the Connect protocol (JSON or binary over plain HTTP POST: curl, `buf curl`,
        /// Connect clients) for EntropyService on the public listener, with the same keys,
        /// quotas and limits; this also admits HTTP/1.1 there (plaintext, and TLS by ALPN).
        connect_enabled: bool = false,
            flag(bool, "BOOL"), unit("boolean"),
            help("Serve the Connect protocol (JSON over HTTP) on the public listener");
        /// Serve the original QRNG-DD gateway's REST routes (`GET /api/random`, `/api/integers`,
        /// `/api/floats`, `/api/uuid`, `/api/status`, `/health`) on the public listener, each a
        /// call on EntropyService with the same keys (headers only), quotas and bounds; over
        /// plaintext this also admits HTTP/1.1 there.
        rest_enabled: bool = false,
            flag(bool, "BOOL"), unit("boolean"),
            help("Serve the original QRNG-DD REST routes (/api/random, ...) on the public listener");
    }
    other {}
}
