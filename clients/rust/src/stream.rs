//! An `AsyncRead` over StreamRandom that survives transport errors.
//!
//! When the connection breaks mid-stream, the reader opens a new stream for the bytes still
//! owed and carries on. Nothing it already received is lost (it stays buffered until read),
//! and nothing is repeated: the gateway never serves a byte twice, so a new stream brings only
//! new bytes. Bytes that were in flight when the connection broke are simply gone, never
//! replayed. Errors that a retry cannot fix (a bad key, a bad argument, your own deadline)
//! end the stream with that error.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use entropy_proto::v1::{StreamRandomRequest, StreamRandomResponse};
use futures_util::stream::{self, BoxStream, StreamExt};
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::io::StreamReader;
use tonic::{Code, Streaming};

use crate::client::Inner;
use crate::error::Error;

/// Consecutive failed attempts (without a byte received in between) before giving up.
pub const MAX_CONSECUTIVE_FAILURES: u32 = 5;

/// Random bytes as an `AsyncRead`. Ends (EOF) after `total` bytes, or never when unbounded.
pub struct RandomStream {
    reader: StreamReader<BoxStream<'static, io::Result<Bytes>>, Bytes>,
    reconnects: Arc<AtomicU32>,
}

impl std::fmt::Debug for RandomStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RandomStream")
            .field("reconnects", &self.reconnects())
            .finish_non_exhaustive()
    }
}

struct State {
    inner: Inner,
    chunk_bytes: u32,
    /// Bytes still owed; `None` for an endless stream.
    remaining: Option<u64>,
    current: Option<Streaming<StreamRandomResponse>>,
    failures: u32,
    reconnects: Arc<AtomicU32>,
    done: bool,
}

impl RandomStream {
    pub(crate) fn new(inner: Inner, total: Option<u64>, chunk_bytes: u32) -> Self {
        let reconnects = Arc::new(AtomicU32::new(0));
        let state = State {
            inner,
            chunk_bytes,
            remaining: total,
            current: None,
            failures: 0,
            reconnects: reconnects.clone(),
            done: false,
        };
        let chunks = stream::unfold(state, next_chunk).boxed();
        Self { reader: StreamReader::new(chunks), reconnects }
    }

    /// How many times the stream was reopened after a transport error.
    pub fn reconnects(&self) -> u32 {
        self.reconnects.load(Ordering::Relaxed)
    }
}

impl AsyncRead for RandomStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.reader).poll_read(cx, buf)
    }
}

/// Codes after which reopening the stream can help: the connection or server went away.
fn transient(code: Code) -> bool {
    matches!(
        code,
        Code::Unavailable | Code::Unknown | Code::Internal | Code::Cancelled | Code::Aborted
    )
}

fn io_error(status: tonic::Status) -> io::Error {
    io::Error::other(Error::from(status))
}

async fn next_chunk(mut s: State) -> Option<(io::Result<Bytes>, State)> {
    loop {
        if s.done || s.remaining == Some(0) {
            return None;
        }
        let failure = match s.current.as_mut() {
            None => {
                let request = StreamRandomRequest {
                    chunk_bytes: s.chunk_bytes,
                    total_bytes: s.remaining.unwrap_or(0),
                };
                match s.inner.stream_random(request).await {
                    Ok(response) => {
                        s.current = Some(response.into_inner());
                        continue;
                    }
                    Err(status) => status,
                }
            }
            Some(current) => match current.message().await {
                Ok(Some(message)) => {
                    s.failures = 0;
                    let len = message.data.len() as u64;
                    if let Some(r) = s.remaining.as_mut() {
                        *r = r.saturating_sub(len);
                    }
                    return Some((Ok(Bytes::from(message.data)), s));
                }
                // The server ended the stream early (it should not): ask for the rest.
                Ok(None) => tonic::Status::unavailable("stream ended before all bytes arrived"),
                Err(status) => status,
            },
        };
        s.current = None;
        s.failures += 1;
        if !transient(failure.code()) || s.failures > MAX_CONSECUTIVE_FAILURES {
            s.done = true;
            return Some((Err(io_error(failure)), s));
        }
        s.reconnects.fetch_add(1, Ordering::Relaxed);
        let backoff = Duration::from_millis(100 << (s.failures - 1).min(4));
        tokio::time::sleep(backoff).await;
    }
}
