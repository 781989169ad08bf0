//! A cap on open connections per listener.
//!
//! Each accepted connection carries a semaphore permit inside its IO wrapper, so the permit
//! returns exactly when hyper drops the connection. Past the cap a new connection is closed at
//! once, before any HTTP/2 exchange (grpc-go and grpcurl report UNAVAILABLE, tonic CANCELLED;
//! the client can retry or go to another gateway), and the refusal is logged at most once per
//! second. Memory per connection is bounded by HTTP/2 settings;
//! this bounds how many there are.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_util::{Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::transport::server::Connected;

/// A connection that counts against its listener's cap until dropped.
#[derive(Debug)]
pub struct Limited<T> {
    inner: T,
    _permit: OwnedSemaphorePermit,
}

impl<T: Connected> Connected for Limited<T> {
    type ConnectInfo = T::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.connect_info()
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Limited<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Limited<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Passes through at most `max` open connections from `incoming`; the rest are closed.
pub fn limit<S, T, E>(
    incoming: S,
    max: usize,
    listener: &'static str,
) -> impl Stream<Item = Result<Limited<T>, E>>
where
    S: Stream<Item = Result<T, E>>,
{
    let slots = Arc::new(Semaphore::new(max));
    let mut last_warning: Option<Instant> = None;
    incoming.filter_map(move |accepted| {
        let admitted = match accepted {
            Err(e) => Some(Err(e)),
            Ok(conn) => match slots.clone().try_acquire_owned() {
                Ok(permit) => Some(Ok(Limited { inner: conn, _permit: permit })),
                Err(_) => {
                    if last_warning.is_none_or(|t| t.elapsed() > Duration::from_secs(1)) {
                        tracing::warn!(
                            listener,
                            max,
                            "connection limit reached; closing new connections"
                        );
                        last_warning = Some(Instant::now());
                    }
                    None // dropping `conn` closes it
                }
            },
        };
        std::future::ready(admitted)
    })
}
