//! An `AsyncRead` over StreamRandom that survives transport errors.
//!
//! When the connection breaks mid-stream (the gateway restarted, a proxy cut it, it stopped
//! answering), the reader follows the reconnect rule of [`StreamOptions`]: it opens a new
//! stream for the bytes still owed and carries on. Nothing it already received is lost (it
//! stays buffered until read), and nothing is repeated: the gateway never serves a byte twice,
//! so a new stream brings only new bytes. Errors that a retry cannot fix (a bad key, a bad
//! argument, a quota) end the stream with that error at once.

use std::hash::{BuildHasher, RandomState};
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
use tokio::time::{Instant, timeout_at};
use tokio_util::io::StreamReader;
use tonic::{Code, Status, Streaming};

use crate::client::{Inner, Want};
use crate::error::Error;
use crate::reconnect::{Next, Outage, StreamOptions};

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

/// One open StreamRandom call.
struct Attempt {
    replies: Streaming<StreamRandomResponse>,
    /// When the first message must have arrived by (the attempt timeout), until it has.
    first_by: Option<Instant>,
    /// How long it was given for that: the attempt timeout, or what was left of the budget.
    limit: Duration,
}

/// Why an attempt ended without a message.
struct Failure {
    status: Status,
    /// How long the attempt had waited when it ended because its first message did not come in
    /// time; `None` for any other ending (an answer, a stall).
    timed_out_after: Option<Duration>,
}

impl From<Status> for Failure {
    fn from(status: Status) -> Self {
        Self { status, timed_out_after: None }
    }
}

struct State {
    inner: Inner,
    /// Where the client connects, named in errors of the transport.
    target: Arc<str>,
    options: StreamOptions,
    /// Sent on every attempt: the source kinds the caller accepts, and its construction.
    want: Want,
    /// Bytes still owed; `None` for an endless stream.
    remaining: Option<u64>,
    received: u64,
    current: Option<Attempt>,
    outage: Option<Outage<Status>>,
    reconnects: Arc<AtomicU32>,
    done: bool,
}

impl RandomStream {
    pub(crate) fn new(
        (inner, target): (Inner, Arc<str>),
        total: Option<u64>,
        options: StreamOptions,
        want: Want,
    ) -> Self {
        let reconnects = Arc::new(AtomicU32::new(0));
        let chunks = match options.check() {
            Err(e) => stream::once(async move { Err(io::Error::other(e)) }).boxed(),
            Ok(()) => {
                let state = State {
                    inner,
                    target,
                    options,
                    want,
                    remaining: total,
                    received: 0,
                    current: None,
                    outage: None,
                    reconnects: reconnects.clone(),
                    done: false,
                };
                stream::unfold(state, next_chunk).boxed()
            }
        };
        Self { reader: StreamReader::new(chunks), reconnects }
    }

    /// How many times the stream was reopened after a failure.
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

/// Codes after which reopening the stream can help: the connection or the server went away
/// (tonic reports a reset or a dead connection as UNKNOWN, INTERNAL or CANCELLED), or an
/// attempt or a flowing stream timed out.
fn transient(code: Code) -> bool {
    matches!(
        code,
        Code::Unavailable
            | Code::Unknown
            | Code::Internal
            | Code::Cancelled
            | Code::Aborted
            | Code::DeadlineExceeded
    )
}

/// A number in [0, 1] for backoff jitter (not for anything secret).
fn jitter() -> f64 {
    (RandomState::new().hash_one(Instant::now()) >> 11) as f64 / (1u64 << 53) as f64
}

impl State {
    /// Opens a stream for the bytes still owed, bounded by the attempt timeout.
    async fn open(&mut self) -> Result<(), Failure> {
        let now = Instant::now();
        let limit = match &self.outage {
            Some(outage) => outage.attempt_timeout(&self.options, now),
            None => self.options.attempt_timeout,
        };
        let first_by = now + limit;
        let request = StreamRandomRequest {
            chunk_bytes: self.options.chunk_bytes,
            total_bytes: self.remaining.unwrap_or(0),
            accept_kinds: self.want.accept_kinds.clone(),
            construction: self.want.construction,
            receipt: false,
        };
        let replies = timeout_at(first_by, self.inner.stream_random(request))
            .await
            .map_err(|_| Failure {
                status: Status::deadline_exceeded(format!("no answer within {limit:?}")),
                timed_out_after: Some(limit),
            })??
            .into_inner();
        self.current = Some(Attempt { replies, first_by: Some(first_by), limit });
        Ok(())
    }

    /// The next message of the open stream, bounded by the attempt or the stall timeout.
    async fn message(&mut self) -> Result<Bytes, Failure> {
        let stall = self.options.stall_timeout;
        let Some(attempt) = self.current.as_mut() else {
            return Err(Status::internal("no stream open").into());
        };
        let by = attempt.first_by.unwrap_or_else(|| Instant::now() + stall);
        let first = attempt.first_by.is_some();
        let what = if first { "no first message" } else { "no message" };
        match timeout_at(by, attempt.replies.message()).await {
            Err(_) => Err(Failure {
                status: Status::deadline_exceeded(format!("{what} in time")),
                timed_out_after: first.then_some(attempt.limit),
            }),
            Ok(Err(status)) => Err(status.into()),
            // The server ended the stream early (shutting down): ask for the rest.
            Ok(Ok(None)) => Err(Status::unavailable(format!(
                "the stream ended after {} bytes, before all had arrived",
                self.received
            ))
            .into()),
            Ok(Ok(Some(message))) => {
                attempt.first_by = None;
                Ok(Bytes::from(message.data))
            }
        }
    }

    /// After `failure`: sleeps the backoff and returns `None` to try again, or the error to
    /// end the stream with.
    async fn failed(&mut self, failure: Failure) -> Option<Error> {
        self.current = None;
        let Failure { status, timed_out_after } = failure;
        let status = crate::error::locate(status, &self.target);
        if !transient(status.code()) {
            return Some(status.into());
        }
        let now = Instant::now();
        let outage = self.outage.get_or_insert_with(|| Outage::begin(now));
        match outage.failed(&self.options, now, jitter(), status, timed_out_after) {
            Next::RetryAfter(delay) => {
                tokio::time::sleep(delay).await;
                self.reconnects.fetch_add(1, Ordering::Relaxed);
                None
            }
            // `last`: the last failure, never a timeout the budget cut short after an earlier one.
            Next::GiveUp { tried, failures, last } => Some(
                Status::new(
                    last.code(),
                    format!(
                        "gave up reconnecting after {} ms ({failures} failed attempts; \
                         reconnect budget {} ms), {} bytes received: {}",
                        tried.as_millis(),
                        self.options.reconnect_budget.as_millis(),
                        self.received,
                        last.message()
                    ),
                )
                .into(),
            ),
        }
    }
}

async fn next_chunk(mut s: State) -> Option<(io::Result<Bytes>, State)> {
    loop {
        if s.done || s.remaining == Some(0) {
            return None;
        }
        let step = if s.current.is_none() {
            s.open().await.map(|()| None)
        } else {
            s.message().await.map(Some)
        };
        match step {
            Ok(None) => {}
            Ok(Some(data)) => {
                if data.is_empty() {
                    continue;
                }
                let len = data.len() as u64;
                if let Some(r) = s.remaining.as_mut() {
                    if len > *r {
                        s.done = true;
                        let e = Error::Other {
                            code: Code::Internal,
                            message: format!("gateway sent {len} bytes with {r} owed"),
                        };
                        return Some((Err(io::Error::other(e)), s));
                    }
                    *r -= len;
                }
                s.received += len;
                s.outage = None;
                return Some((Ok(data), s));
            }
            Err(failure) => {
                if let Some(error) = s.failed(failure).await {
                    s.done = true;
                    return Some((Err(io::Error::other(error)), s));
                }
            }
        }
    }
}
