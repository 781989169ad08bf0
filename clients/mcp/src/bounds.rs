//! The most memory and descriptors entropy-mcp can hold over HTTP, as a formula of its config,
//! with and without a token; and the start-up check that the descriptors fit the process limit.
//!
//! docs/security.md ("Resource bounds: entropy-mcp over HTTP") writes the formula out with
//! the measurements behind the constants; this is its one implementation. `main` logs the
//! figure at start and the hostile sweep (`tests/sweep.py`) holds RSS and open descriptors
//! under it.
//!
//! The constants were measured with `clients/mcp/tests/measure.py`.
//!
//! ```text
//! descriptors ≤ C + RESERVE_DESCRIPTORS
//! memory      ≤ BASE + C·(CONNECTION + TLS·tls + buffers(token)) + token·(R·REQUEST(B) + S·SESSION)
//! ```
//!
//! C `http_max_connections`, R `http_max_concurrent_requests`, B `http_max_body_bytes`, S
//! `http_max_sessions`. A peer without a token reaches only the first two terms: its requests
//! are refused before any body is read, take no request slot and open no session.

use crate::http::HttpLimits;
use crate::listener::{
    H1_MAX_BUF_BYTES, H2_CONNECTION_WINDOW_BYTES, H2_MAX_HEADER_LIST_BYTES, H2_MAX_SEND_BUF_BYTES,
    H2_MAX_STREAMS,
};

/// Descriptors besides connections: the listener, stdio, the runtime's epoll and wakers, the
/// signal pipe, the gateway channel (it may reconnect), files read at start.
pub const RESERVE_DESCRIPTORS: u64 = 32;
/// RSS of the process serving HTTP with nothing open (measured 12.4 MiB), doubled for
/// allocator slack and the runtime's threads on larger machines.
pub const BASE_BYTES: u64 = 24 << 20;
/// One accepted connection, its buffers aside: its task, hyper's state, the service, the
/// socket (measured 6.1 KiB idle and 23.2 KiB after a refused HTTP/1.1 request, which includes
/// an 8 KiB read buffer also counted in [`protocol_buffers`]).
pub const CONNECTION_BYTES: u64 = 32 << 10;
/// rustls per connection: its state (measured 8.5 KiB after a handshake, the connection
/// aside) and its buffers, capped at 64 KiB to send, 16 KiB of received plaintext and one
/// record (18 KiB) being decrypted.
pub const TLS_BYTES: u64 = 160 << 10;
/// HPACK's dynamic table (its default size) per HTTP/2 connection.
const HPACK_BYTES: u64 = 4 << 10;
/// One open MCP session: rmcp's worker, channels and the session's service (measured 41 KiB
/// per idle session). Its request streams' replay caches live only while a request is in
/// progress (`completed_cache_ttl` is zero) and are counted there; this server sends no
/// notifications, so the common channel's cache stays empty.
pub const SESSION_BYTES: u64 = 96 << 10;
/// Memory one request in progress may take per byte of its body: the body, rmcp's parse of it
/// into JSON values, the tool's typed copy of its arguments and the result with its replay
/// cache. The worst shape, `[[],[],...]`, peaked at 11.0 to 14.9 bytes per body byte over five
/// runs of 16 such 1 MiB requests at once; 24 leaves room for the allocator's variance.
pub const REQUEST_BYTES_PER_BODY_BYTE: u64 = 24;

/// The worst case of one shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorstCase {
    /// Resident memory, bytes.
    pub memory_bytes: u64,
    /// Open descriptors.
    pub descriptors: u64,
}

/// What the protocols may buffer per connection: the larger of HTTP/1.1 (its read buffer,
/// and with a token its write buffer) and HTTP/2 (a header list being decoded, HPACK's table,
/// unread request bodies up to the connection window, and with a token a send buffer per
/// stream for a peer that does not read). Without a token every response is a refusal of a
/// few dozen bytes.
fn protocol_buffers(token: bool) -> u64 {
    let h1 = H1_MAX_BUF_BYTES as u64 * if token { 2 } else { 1 };
    let h2_send = if token { u64::from(H2_MAX_STREAMS) * H2_MAX_SEND_BUF_BYTES as u64 } else { 0 };
    let h2 = u64::from(H2_MAX_HEADER_LIST_BYTES)
        + HPACK_BYTES
        + u64::from(H2_CONNECTION_WINDOW_BYTES)
        + h2_send;
    h1.max(h2)
}

/// The worst case of `limits`, over TLS or not, for peers with a valid token (`token`) or
/// without one.
pub fn worst_case(limits: &HttpLimits, tls: bool, token: bool) -> WorstCase {
    let connections = limits.connections.max_connections as u64;
    let per_connection =
        CONNECTION_BYTES + if tls { TLS_BYTES } else { 0 } + protocol_buffers(token);
    let mut memory = BASE_BYTES + connections * per_connection;
    if token {
        let request = limits.max_body_bytes as u64 * REQUEST_BYTES_PER_BODY_BYTE;
        memory += limits.max_concurrent_requests as u64 * request;
        memory += limits.max_sessions as u64 * SESSION_BYTES;
    }
    WorstCase { memory_bytes: memory, descriptors: connections + RESERVE_DESCRIPTORS }
}

/// Why the descriptors `limits` needs do not fit the process; the message names the config key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DescriptorsError {
    /// The soft descriptor limit, raised as far as the hard one allows, is below what
    /// `http_max_connections` needs.
    #[error(
        "invalid config key http_max_connections: {connections} connections and \
         {RESERVE_DESCRIPTORS} other descriptors need {needed}, but the descriptor limit is \
         {soft} (raise it, or lower http_max_connections to at most {})",
        .soft.saturating_sub(RESERVE_DESCRIPTORS)
    )]
    TooFew {
        /// `http_max_connections`.
        connections: usize,
        /// Descriptors needed: the connections and [`RESERVE_DESCRIPTORS`].
        needed: u64,
        /// The soft descriptor limit.
        soft: u64,
    },
}

/// Raises the soft descriptor limit towards the hard one as far as `limits` needs, and fails
/// (naming `http_max_connections`) when it still does not fit.
pub fn check_descriptors(limits: &HttpLimits) -> Result<(), DescriptorsError> {
    let needed = worst_case(limits, false, true).descriptors;
    // Raising fails only on platforms without the limit; then nothing is checked.
    let _ = rlimit::increase_nofile_limit(needed);
    let Ok((soft, _)) = rlimit::getrlimit(rlimit::Resource::NOFILE) else { return Ok(()) };
    if needed > soft {
        return Err(DescriptorsError::TooFew {
            connections: limits.connections.max_connections,
            needed,
            soft,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{McpConfig, Transport};

    fn limits(config: &McpConfig) -> HttpLimits {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        std::fs::write(
            file.path(),
            "[[token]]\nname = \"t\"\nsha256 = \"".to_owned() + &"0".repeat(64) + "\"\n",
        )
        .expect("write");
        HttpLimits::from_config(
            config,
            crate::tokens::Tokens::load_file(file.path()).expect("tokens"),
        )
    }

    #[test]
    fn the_defaults_fit_a_small_host() {
        let config = McpConfig { transport: Transport::Http, ..McpConfig::default() };
        let limits = limits(&config);
        let anyone = worst_case(&limits, true, false);
        let holder = worst_case(&limits, true, true);
        // A small host: 512 MiB of memory and the common 1,024-descriptor limit.
        assert!(holder.memory_bytes <= 256 << 20, "{holder:?}");
        assert!(anyone.memory_bytes < holder.memory_bytes);
        assert!(holder.descriptors <= 1024 / 2, "{holder:?}");
    }

    #[test]
    fn each_cap_moves_the_bound() {
        let config = McpConfig::default();
        let base = worst_case(&limits(&config), false, true);
        for more in [
            McpConfig { http_max_connections: 512, ..config.clone() },
            McpConfig { http_max_sessions: 128, ..config.clone() },
            McpConfig { http_max_concurrent_requests: 128, ..config.clone() },
            McpConfig { http_max_body_bytes: 2 << 20, ..config.clone() },
        ] {
            assert!(worst_case(&limits(&more), false, true).memory_bytes > base.memory_bytes);
        }
        let tls = worst_case(&limits(&config), true, true);
        assert!(tls.memory_bytes > base.memory_bytes);
    }

    #[test]
    fn too_few_descriptors_names_the_key_and_the_most_connections_that_fit() {
        let err = DescriptorsError::TooFew { connections: 256, needed: 288, soft: 128 };
        assert_eq!(
            err.to_string(),
            "invalid config key http_max_connections: 256 connections and 32 other descriptors \
             need 288, but the descriptor limit is 128 (raise it, or lower http_max_connections \
             to at most 96)"
        );
        let tiny = DescriptorsError::TooFew { connections: 1, needed: 33, soft: 8 };
        assert!(tiny.to_string().ends_with("to at most 0)"), "{tiny}");
    }
}
