//! Running the server on either transport until shutdown.
//!
//! stdio: one session over stdin/stdout, ending when the agent closes stdin or on shutdown.
//! HTTP: [`crate::listener`]'s accept loop (TLS handshakes in each connection's task, within
//! the header timeout, so a silent client never holds up others) serving
//! [`crate::http::router`]; on shutdown it stops accepting, ends the sessions, and gives
//! connections `grace` to finish.

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use entropy_ops::tls::{Identity, ServerSettings, TlsError, Versions};
use rmcp::ServiceExt as _;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::http::{HttpLimits, router};
use crate::listener::Connections;
use crate::refusal::Refusals;
use crate::tools::EntropyServer;

/// Serves one MCP session on stdin/stdout until the agent closes it or `shutdown`.
pub async fn stdio(server: EntropyServer, shutdown: CancellationToken) -> anyhow::Result<()> {
    let running = server.serve_with_ct(rmcp::transport::stdio(), shutdown).await?;
    running.waiting().await?;
    Ok(())
}

/// A rustls server config (TLS 1.3 and 1.2, ALPN h2 and http/1.1) from PEM files, set up by
/// [`entropy_ops::tls`]; the error names the file.
pub fn tls_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let settings = ServerSettings {
        versions: Versions::Tls13And12,
        client_ca: None,
        alpn: &[b"h2", b"http/1.1"],
    };
    entropy_ops::tls::server_config(Identity::from_pem_files(cert, key)?, &settings)
}

/// Serves MCP over HTTP (TLS when `tls` is given) on `listener` within `limits` until
/// `shutdown`, then waits up to `grace` for connections to finish.
pub async fn http(
    server: EntropyServer,
    listener: TcpListener,
    limits: &HttpLimits,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: CancellationToken,
    grace: Duration,
) -> io::Result<()> {
    let refusals = Arc::new(Refusals::default());
    let app = router(server, limits, refusals.clone(), shutdown.child_token());
    Connections::new(app, tls, limits.connections, refusals).serve(listener, shutdown, grace).await
}

/// Binds the HTTP address; the error names the config key.
pub async fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot bind http_listen_addr {addr}: {e}"))
}
