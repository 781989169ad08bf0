//! One HTTP/2 connection, served with h2: its settings, its streams, keepalive and shutdown.
//!
//! The gateway drives h2 itself rather than through hyper's server, because delivery depends
//! on what hyper does not give a service: each response's stream id, so the bytes the write
//! path sees leave can be matched to the response they belong to ([`super::ledger`]), and the
//! stream's reset, so what h2 drops is known to be dropped. (hyper also takes a body frame
//! before the peer's window admits any of it: a peer that never reads would hold one frame per
//! stream outside any account.) The rest is what hyper's h2 server does, kept short: a task
//! per stream ([`super::stream`]), PINGs to drop dead peers, GOAWAY on shutdown.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use h2::Reason;
use prost::bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::stream::{self, StreamContext};

/// How long a connection told to close (a keepalive timeout) may take to say so before its
/// socket is dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// The HTTP/2 settings of one listener.
#[derive(Debug, Clone, Copy)]
pub struct Http2Settings {
    /// SETTINGS_INITIAL_WINDOW_SIZE: request bytes a stream may send before we read them.
    pub stream_window: u32,
    /// The connection's receive window.
    pub connection_window: u32,
    /// SETTINGS_MAX_FRAME_SIZE: the largest frame a peer may send.
    pub max_frame: u32,
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub max_streams: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE: the largest request header block.
    pub max_header_list: u32,
    /// Most bytes h2 buffers for one stream (within what its window admits).
    pub max_send_buffer: usize,
    /// PING the peer this often; close when the answer takes longer than `keepalive_timeout`.
    pub keepalive_interval: Option<Duration>,
    /// See `keepalive_interval`.
    pub keepalive_timeout: Duration,
}

/// Serves one connection until it closes, or until `shutdown`, then lets its streams finish
/// (GOAWAY).
pub(super) async fn serve<IO, S, B>(
    io: IO,
    settings: Http2Settings,
    ctx: Arc<StreamContext<S>>,
    shutdown: CancellationToken,
) where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: tower::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<B>,
            Error = Infallible,
        > + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::fmt::Display + Send,
{
    let mut builder = h2::server::Builder::new();
    builder
        .initial_window_size(settings.stream_window)
        .initial_connection_window_size(settings.connection_window)
        .max_frame_size(settings.max_frame)
        .max_concurrent_streams(settings.max_streams)
        .max_header_list_size(settings.max_header_list)
        .max_send_buffer_size(settings.max_send_buffer)
        // h2 closes a connection whose small DATA frames (under 256 bytes each) sit unread past
        // a budget, by default half the connection window: with the public listener's small
        // window, a client's burst of one-frame requests on every stream would trip it. Room for
        // two small frames on every stream instead; the bytes are within the window anyway.
        .data_frame_budget(small_frames_budget(settings.max_streams));
    // A peer that never sends its preface is closed by the idle timer or evicted (Conn).
    let mut connection = match builder.handshake::<_, Bytes>(io).await {
        Ok(connection) => connection,
        Err(e) => {
            tracing::debug!("HTTP/2 handshake failed: {e}");
            return;
        }
    };
    let keepalive = keepalive(connection.ping_pong(), settings);
    let mut keepalive = std::pin::pin!(keepalive);
    let streams = TaskTracker::new();
    let mut draining = false;
    let mut closing: Option<tokio::time::Instant> = None;
    loop {
        let give_up = async {
            match closing {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            accepted = connection.accept() => match accepted {
                Some(Ok((request, respond))) => stream::accept(&ctx, &streams, request, respond),
                Some(Err(e)) => {
                    tracing::debug!("HTTP/2 connection ended: {e}");
                    break;
                }
                None => break,
            },
            () = shutdown.cancelled(), if !draining => {
                draining = true;
                connection.graceful_shutdown();
            }
            () = &mut keepalive, if closing.is_none() => {
                tracing::debug!("keepalive PING unanswered; closing the connection");
                connection.abrupt_shutdown(Reason::NO_ERROR);
                closing = Some(tokio::time::Instant::now() + CLOSE_GRACE);
            }
            () = give_up => break,
        }
    }
    // Dropping the connection fails what its streams still send; they end on their own.
    drop(connection);
    streams.close();
    streams.wait().await;
}

/// h2's threshold below which a DATA frame counts against its small-frames budget.
const SMALL_FRAME: usize = 256;

/// The small-frames budget for `max_streams` streams (see [`serve`]).
pub(crate) fn small_frames_budget(max_streams: u32) -> usize {
    2 * SMALL_FRAME * max_streams as usize
}

/// Completes when a keepalive PING goes unanswered; never without keepalive.
async fn keepalive(pings: Option<h2::PingPong>, settings: Http2Settings) {
    let (Some(mut pings), Some(interval)) = (pings, settings.keepalive_interval) else {
        return std::future::pending().await;
    };
    loop {
        tokio::time::sleep(interval).await;
        let pong = tokio::time::timeout(settings.keepalive_timeout, pings.ping(h2::Ping::opaque()));
        match pong.await {
            Ok(Ok(_)) => {}
            // Timed out, or the connection failed (the accept loop sees that too).
            _ => return,
        }
    }
}
