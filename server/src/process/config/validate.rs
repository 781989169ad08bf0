//! The gateway config's rules that one key's type cannot express: ranges, and relations
//! between keys, in groups. Each error names the key and the bound.

use super::{ConfigError, GatewayConfig, MAX_GET_RANDOM_BYTES, Mode};
use crate::grpc::web::MAX_ORIGINS;

fn bad(key: &'static str, problem: String) -> Result<(), ConfigError> {
    Err(ConfigError { key: key.into(), problem })
}

impl GatewayConfig {
    /// Checks relations between keys that types alone cannot express, for a gateway run in
    /// `mode`.
    pub fn validate(&self, mode: Mode) -> Result<(), ConfigError> {
        self.check_pool()?;
        self.check_timing()?;
        self.check_ingest()?;
        self.check_buffers()?;
        self.check_listeners(mode)?;
        self.check_keys(mode)
    }

    /// The pool's size, its largest chunk, its watermark and its age limit.
    fn check_pool(&self) -> Result<(), ConfigError> {
        if self.pool_capacity_bytes < MAX_GET_RANDOM_BYTES {
            return bad(
                "pool_capacity_bytes",
                format!(
                    "{} is below {MAX_GET_RANDOM_BYTES}, the largest GetRandom request",
                    self.pool_capacity_bytes
                ),
            );
        }
        if self.pool_capacity_bytes > 1 << 34 {
            return bad("pool_capacity_bytes", "must be at most 17179869184 (16 GiB)".into());
        }
        if self.max_chunk_bytes == 0 || self.max_chunk_bytes > self.pool_capacity_bytes {
            return bad(
                "max_chunk_bytes",
                format!("{} must be 1..=pool_capacity_bytes", self.max_chunk_bytes),
            );
        }
        if self.max_chunk_bytes > 16 << 20 {
            return bad("max_chunk_bytes", "must be at most 16777216 (16 MiB)".into());
        }
        if self.pool_low_watermark_bytes > self.pool_capacity_bytes {
            return bad(
                "pool_low_watermark_bytes",
                format!("{} exceeds pool_capacity_bytes", self.pool_low_watermark_bytes),
            );
        }
        if self.max_byte_age_ms != 0 && !(100..=604_800_000).contains(&self.max_byte_age_ms) {
            return bad(
                "max_byte_age_ms",
                format!(
                    "{} must be 0 (no limit) or 100..=604800000 (a week)",
                    self.max_byte_age_ms
                ),
            );
        }
        Ok(())
    }

    /// Waits, timeouts and the shutdown's periods.
    fn check_timing(&self) -> Result<(), ConfigError> {
        if !(1..=600_000).contains(&self.max_wait_ms) {
            return bad("max_wait_ms", format!("{} must be 1..=600000", self.max_wait_ms));
        }
        if !(1..=3_600_000).contains(&self.stream_max_wait_ms) {
            return bad(
                "stream_max_wait_ms",
                format!("{} must be 1..=3600000", self.stream_max_wait_ms),
            );
        }
        if !(1..=86_400_000).contains(&self.drbg_reseed_interval_ms) {
            return bad(
                "drbg_reseed_interval_ms",
                format!("{} must be 1..=86400000 (a day)", self.drbg_reseed_interval_ms),
            );
        }
        if self.receipts_dir.is_none() {
            for (key, set) in [
                ("receipts_key_file", self.receipts_key_file.is_some()),
                ("receipts_public_key_file", self.receipts_public_key_file.is_some()),
            ] {
                if set {
                    return bad(key, "is set without receipts_dir, which turns receipts on".into());
                }
            }
        }
        if !(10..=3_600_000).contains(&self.receipts_head_interval_ms) {
            return bad(
                "receipts_head_interval_ms",
                format!("{} must be 10..=3600000 (an hour)", self.receipts_head_interval_ms),
            );
        }
        if !(1..=1 << 40).contains(&self.drbg_reseed_interval_bytes) {
            return bad(
                "drbg_reseed_interval_bytes",
                format!("{} must be 1..=1099511627776 (1 TiB)", self.drbg_reseed_interval_bytes),
            );
        }
        if self.send_timeout_ms > 3_600_000 {
            return bad("send_timeout_ms", format!("{} must be 0..=3600000", self.send_timeout_ms));
        }
        if self.shutdown_grace_ms > 600_000 {
            return bad("shutdown_grace_ms", "must be at most 600000".into());
        }
        if self.shutdown_drain_ms > 600_000 {
            return bad(
                "shutdown_drain_ms",
                format!("{} must be at most 600000", self.shutdown_drain_ms),
            );
        }
        Ok(())
    }

    /// The gateway's id, what ingest accepts, and how long it may go without a chunk.
    fn check_ingest(&self) -> Result<(), ConfigError> {
        let id_ok = (1..=64).contains(&self.gateway_id.len())
            && self.gateway_id.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        if !id_ok {
            return bad(
                "gateway_id",
                format!(
                    "{:?} must be 1..=64 characters of [A-Za-z0-9._-]: the name collectors seal \
                     chunks for (their [[gateway]] id)",
                    self.gateway_id
                ),
            );
        }
        if !(100..=60_000).contains(&self.max_future_skew_ms) {
            return bad(
                "max_future_skew_ms",
                format!("{} must be 100..=60000", self.max_future_skew_ms),
            );
        }
        if !(1_000..=3_600_000).contains(&self.freshness_window_ms) {
            return bad(
                "freshness_window_ms",
                format!("{} must be 1000..=3600000", self.freshness_window_ms),
            );
        }
        if !(1..=1_000_000).contains(&self.replay_max_streams) {
            return bad(
                "replay_max_streams",
                format!("{} must be 1..=1000000", self.replay_max_streams),
            );
        }
        if self.ingest_stale_after_ms > 86_400_000 {
            return bad(
                "ingest_stale_after_ms",
                "must be at most 86400000 (a day); 0 disables the check".into(),
            );
        }
        Ok(())
    }

    /// The byte allowances: each must fit the largest thing it holds.
    fn check_buffers(&self) -> Result<(), ConfigError> {
        if !(1 << 20..=1 << 32).contains(&self.max_undelivered_bytes_per_connection) {
            return bad(
                "max_undelivered_bytes_per_connection",
                format!(
                    "{} must be 1048576..=4294967296 (the largest draw must fit)",
                    self.max_undelivered_bytes_per_connection
                ),
            );
        }
        let one_publish = self.max_chunk_bytes + (64 << 10);
        if !(one_publish..=1 << 34).contains(&self.ingest_max_buffered_bytes) {
            return bad(
                "ingest_max_buffered_bytes",
                format!(
                    "{} must be {one_publish}..=17179869184 (one publish of max_chunk_bytes must fit)",
                    self.ingest_max_buffered_bytes
                ),
            );
        }
        // Responses get what the two parts leave: at least the largest response (1 MiB as hex)
        // must fit.
        let parts = self.ingest_max_buffered_bytes + self.max_buffered_request_bytes;
        let at_least = parts + (4 << 20);
        if !(at_least..=1 << 36).contains(&self.max_buffered_bytes) {
            return bad(
                "max_buffered_bytes",
                format!(
                    "{} must be {at_least}..=68719476736: ingest_max_buffered_bytes plus \
                     max_buffered_request_bytes plus 4 MiB for responses",
                    self.max_buffered_bytes
                ),
            );
        }
        // One call: the largest request, its header block, and what a call costs.
        let request = crate::process::server::MAX_PUBLIC_REQUEST_BYTES
            + crate::process::server::MAX_HEADER_LIST_BYTES as usize
            + crate::transport::CALL_BYTES;
        if !(request..=1 << 32).contains(&self.max_buffered_request_bytes_per_connection) {
            return bad(
                "max_buffered_request_bytes_per_connection",
                format!(
                    "{} must be {request}..=4294967296 (one request with its headers must fit)",
                    self.max_buffered_request_bytes_per_connection
                ),
            );
        }
        if self.max_buffered_request_bytes < self.max_buffered_request_bytes_per_connection {
            return bad(
                "max_buffered_request_bytes",
                format!(
                    "{} is below max_buffered_request_bytes_per_connection ({})",
                    self.max_buffered_request_bytes, self.max_buffered_request_bytes_per_connection
                ),
            );
        }
        Ok(())
    }

    /// Addresses, connection caps, TLS, gRPC-Web and the log filter.
    fn check_listeners(&self, mode: Mode) -> Result<(), ConfigError> {
        if let Mode::Dev { listen_any: false } = mode
            && !self.listen_addr.ip().is_loopback()
        {
            return bad(
                "listen_addr",
                format!(
                    "{}: --dev serves plaintext and prints its API key, so it listens on loopback \
                     only; add --dev-listen-any to serve it on {} anyway (throwaway machines \
                     only), or run without --dev, with TLS and a keys file",
                    self.listen_addr,
                    self.listen_addr.ip()
                ),
            );
        }
        if self.listen_addr == self.ingest_listen_addr && self.listen_addr.port() != 0 {
            return bad("ingest_listen_addr", "must differ from listen_addr".into());
        }
        if !(1..=100_000).contains(&self.ingest_max_connections) {
            return bad(
                "ingest_max_connections",
                format!("{} must be 1..=100000", self.ingest_max_connections),
            );
        }
        if self.max_connections > 1_000_000 {
            return bad("max_connections", format!("{} must be 0..=1000000", self.max_connections));
        }
        if !(1..=100_000).contains(&self.max_streams_per_connection) {
            return bad(
                "max_streams_per_connection",
                format!("{} must be 1..=100000", self.max_streams_per_connection),
            );
        }
        if self.tls_cert_file.is_some() != self.tls_key_file.is_some() {
            return bad("tls_key_file", "tls_cert_file and tls_key_file go together".into());
        }
        if self.ingest_tls_cert_file.is_some() != self.ingest_tls_key_file.is_some() {
            return bad(
                "ingest_tls_key_file",
                "ingest_tls_cert_file and ingest_tls_key_file go together".into(),
            );
        }
        if self.ingest_client_ca_file.is_some() && self.ingest_tls_cert_file.is_none() {
            return bad(
                "ingest_client_ca_file",
                "mTLS needs TLS on the ingest listener: set ingest_tls_cert_file and \
                 ingest_tls_key_file"
                    .into(),
            );
        }
        if mode.is_dev()
            && (self.ingest_tls_cert_file.is_some() || self.ingest_client_ca_file.is_some())
        {
            return bad(
                "ingest_tls_cert_file",
                "dev mode's ingest listener is in-process only; TLS applies to listen_addr".into(),
            );
        }
        entropy_ops::logging::check_filter(&self.log_filter)?;
        if !self.grpc_web_enabled && !self.grpc_web_allowed_origins.is_empty() {
            return bad(
                "grpc_web_allowed_origins",
                "origins are listed but grpc_web_enabled is false: set it to true".into(),
            );
        }
        if self.grpc_web_allowed_origins.len() > MAX_ORIGINS {
            return bad(
                "grpc_web_allowed_origins",
                format!("{} origins, at most {MAX_ORIGINS}", self.grpc_web_allowed_origins.len()),
            );
        }
        Ok(())
    }

    /// Where keys and state live: required outside dev mode.
    fn check_keys(&self, mode: Mode) -> Result<(), ConfigError> {
        if mode.is_dev() {
            return Ok(());
        }
        if self.api_keys_file.is_none() {
            return bad("api_keys_file", "required (or run with --dev)".into());
        }
        if self.ingest_keys_dir.is_none() {
            return bad("ingest_keys_dir", "required (or run with --dev)".into());
        }
        // Whether it can be created and written is checked when the lease is opened,
        // still before anything binds (`launch`).
        if self.state_dir.as_ref().is_none_or(|d| d.as_os_str().is_empty()) {
            return bad(
                "state_dir",
                "required: a directory kept across restarts (or run with --dev)".into(),
            );
        }
        Ok(())
    }
}
