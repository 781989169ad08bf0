//! The StreamRandom producer: a task per stream that draws messages ahead of the client, up
//! to a bounded depth, and ends the stream with the documented status.
//!
//! The task keeps up to [`stream_depth`] draws in flight, each holding a place in the stream's
//! queue before it joins the pool's line, so the queue (and the memory behind it) never holds
//! more than [`STREAM_BUFFER_BYTES`] (or one message, when messages are larger). Drawing ahead
//! is what keeps a stream's share when entropy is scarce: the pool shares each arriving chunk
//! among the tenants with waiting draws, and a stream with a single draw in flight could take
//! only one message of each chunk.
//!
//! Messages are elastic: each draw asks the pool for `chunk` bytes but leaves with what has
//! reached it once that is at least [`QUANTUM`] ([`Pool::take_between`]). Under scarcity a
//! stream then sends shorter messages as bytes arrive, instead of waiting for whole messages
//! that the supply shared among many keys could take longer than `stream_max_wait_ms` to fill
//! (50 keys × 64 KiB at 80 KB/s is 40 s). It ends with UNAVAILABLE only when no message
//! reached it for `stream_max_wait_ms`, counted from its last message (not from each draw's
//! start: its draws ahead are served one after another). The bytes still add up to
//! `total_bytes` exactly, and only the last message is shorter than [`QUANTUM`] (or than
//! `chunk`, if smaller).
//!
//! Nothing drawn is lost or miscounted: a message drawn but not queued when the stream ends (its
//! client left, an earlier draw failed, shutdown) goes back to the pool, which serves it to
//! someone else. Messages count as served when the transport takes them from the queue
//! ([`Outbox`]); those still queued when the stream is dropped are wiped and counted as
//! discarded, never as served to anyone.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use entropy_proto::v1::{StreamRandomRequest, StreamRandomResponse};
use futures_util::Stream;
use futures_util::StreamExt;
use futures_util::stream::FuturesOrdered;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tonic::{Code, Status};

use super::deadline::Limit;
use super::delivery::{self, Holds};
use super::errors::{out_of_range, take_failed};
use super::observe::{Call, ServedMeter};
use super::provenance;
use super::requests::accept_kinds;
use crate::conn_limit::ConnectionInfo;
use crate::pool::{Drawn, Kinds, Pool, QUANTUM, TakeError, Tenant};
use crate::quota::{KeyQuota, StreamSlot};

/// Default `StreamRandomRequest.chunk_bytes`.
pub const DEFAULT_STREAM_CHUNK_BYTES: usize = 16 << 10;
/// Largest `StreamRandomRequest.chunk_bytes`.
pub const MAX_STREAM_CHUNK_BYTES: usize = 1 << 20;
/// Most messages a stream draws ahead of its client.
pub const MAX_STREAM_DEPTH: usize = 32;
/// Bytes of messages a stream may have drawn or be drawing ahead of its client (at least one
/// message). Below us, hyper buffers up to 400 KiB per stream that the client's HTTP/2 window
/// does not yet admit (not configurable through tonic). So a slow or stalled reader pins at
/// most max(256 KiB, chunk_bytes) + chunk_bytes + 400 KiB, and draws no more until it reads.
pub const STREAM_BUFFER_BYTES: usize = 256 << 10;

/// How many messages of `chunk` bytes a stream draws ahead.
pub fn stream_depth(chunk: usize) -> usize {
    (STREAM_BUFFER_BYTES / chunk.max(1)).clamp(1, MAX_STREAM_DEPTH)
}

/// A StreamRandom request, checked.
#[derive(Debug, Clone, Copy)]
pub struct StreamPlan {
    /// Bytes per message.
    pub chunk: usize,
    /// Bytes in all (0: until the client leaves).
    pub total: u64,
    /// The source kinds accepted.
    pub accept: Kinds,
}

impl TryFrom<&StreamRandomRequest> for StreamPlan {
    type Error = Status;

    /// Checks `request`'s bounds (the conversion at the edge, as in [`super::requests`]).
    fn try_from(request: &StreamRandomRequest) -> Result<Self, Status> {
        let chunk = match request.chunk_bytes as usize {
            0 => DEFAULT_STREAM_CHUNK_BYTES,
            n if n > MAX_STREAM_CHUNK_BYTES => {
                return Err(out_of_range(
                    "chunk_bytes",
                    n,
                    &format!(
                        "0 (default {DEFAULT_STREAM_CHUNK_BYTES}) or 1..={MAX_STREAM_CHUNK_BYTES}"
                    ),
                ));
            }
            n => n,
        };
        Ok(Self { chunk, total: request.total_bytes, accept: accept_kinds(&request.accept_kinds)? })
    }
}

/// Everything a stream's task needs.
#[derive(Debug)]
pub struct Producer {
    /// What to send.
    pub plan: StreamPlan,
    /// Where bytes come from.
    pub pool: Arc<Pool>,
    /// Whose fair share the draws count against.
    pub tenant: Tenant,
    /// The key's byte metering and undelivered allowance.
    pub quota: Arc<KeyQuota>,
    /// The connection the stream runs on (its undelivered allowance and send timeout).
    pub connection: Option<ConnectionInfo>,
    /// Holds the key's stream slot until the stream ends.
    pub slot: StreamSlot,
    /// Longest wait for entropy with no message going out.
    pub max_wait: Duration,
    /// The client's deadline, if it set one.
    pub client_deadline: Option<Instant>,
    /// The server's shutdown.
    pub shutdown: CancellationToken,
    /// Counts this stream if the shutdown ends it.
    pub cuts: ShutdownCuts,
    /// The call's metrics and log line.
    pub call: Call,
}

/// How many streams the server's shutdown ended (with UNAVAILABLE) while they still had
/// bytes to send. A stream that sent its `total_bytes` before the shutdown, even if its client
/// is still reading them, is not counted: nothing of it is left to resume elsewhere.
#[derive(Debug, Clone, Default)]
pub struct ShutdownCuts(Arc<AtomicUsize>);

impl ShutdownCuts {
    /// The streams cut so far.
    pub fn count(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// How a draw in flight ended other than with bytes.
enum Ended {
    ClientLeft,
    Failed(Status),
}

/// A drawn message not yet in the queue: goes back to the pool if dropped.
struct Unsent {
    pool: Arc<Pool>,
    bytes: Option<Drawn>,
}

impl Unsent {
    fn into_bytes(mut self) -> Drawn {
        self.bytes.take().unwrap_or_default()
    }
}

impl Drop for Unsent {
    fn drop(&mut self) {
        if let Some(bytes) = self.bytes.take() {
            self.pool.give_back(bytes);
        }
    }
}

type Message = Result<StreamRandomResponse, Status>;

/// A message in the stream's queue, with its hold on the key's undelivered allowance.
#[derive(Debug)]
pub struct Queued {
    message: Message,
    _holds: Holds,
}

impl Producer {
    /// Starts the stream's task on `spawn` and returns the stream for tonic.
    pub fn start(self, spawn: impl FnOnce(futures_util::future::BoxFuture<'static, ()>)) -> Outbox {
        let (tx, rx) = mpsc::channel(stream_depth(self.plan.chunk));
        let outbox = Outbox { rx, pool: self.pool.clone(), meter: self.call.meter() };
        spawn(Box::pin(self.run(tx)));
        outbox
    }

    async fn run(mut self, tx: mpsc::Sender<Queued>) {
        let depth = stream_depth(self.plan.chunk);
        let mut in_flight = FuturesOrdered::new();
        let mut planned: u64 = 0;
        // When the stream last queued a message: its draws wait from there (see `draw`).
        let progress = watch::Sender::new(Instant::now());
        let outcome: (Code, String) = loop {
            // Keep `depth` draws in flight; each first holds a place in the queue, so nothing
            // is drawn that the queue could not take.
            while in_flight.len() < depth {
                let n = match self.plan.total {
                    0 => self.plan.chunk,
                    total => self.plan.chunk.min((total - planned) as usize),
                };
                if n == 0 {
                    break;
                }
                // A draw too short to be elastic is the stream's last: plan it only once the
                // draws before it are in, for they may come back short and leave more to send.
                if n < QUANTUM.min(self.plan.chunk) && !in_flight.is_empty() {
                    break;
                }
                planned += n as u64;
                in_flight.push_back(self.draw(tx.clone(), n, progress.subscribe()));
            }
            if in_flight.is_empty() {
                break (Code::Ok, String::new()); // all of total_bytes sent
            }
            let next = tokio::select! {
                biased;
                () = self.shutdown.cancelled() => {
                    self.cuts.0.fetch_add(1, Ordering::Relaxed);
                    Err(Ended::Failed(Status::unavailable("server is shutting down")))
                }
                () = tx.closed() => Err(Ended::ClientLeft),
                () = sleep_until(self.client_deadline) => {
                    Err(Ended::Failed(Status::deadline_exceeded("stream deadline reached")))
                }
                next = in_flight.next() => next.unwrap_or(Err(Ended::ClientLeft)),
            };
            match next {
                Ok((place, unsent, hold, asked)) => {
                    let bytes = unsent.into_bytes();
                    let n = bytes.len();
                    planned -= (asked - n) as u64; // what a short draw left is planned again
                    let provenance = provenance::of_segments(bytes.segments(), Instant::now());
                    let message = Ok(StreamRandomResponse { data: bytes.into_vec(), provenance });
                    place.send(Queued { message, _holds: hold });
                    progress.send_replace(Instant::now());
                    self.call.drew(n);
                }
                Err(Ended::ClientLeft) => break (Code::Cancelled, "client left".into()),
                Err(Ended::Failed(status)) => {
                    // Draws still in flight give their reservations and bytes back first.
                    drop(in_flight);
                    let outcome = (status.code(), status.message().to_owned());
                    self.send_last(&tx, status).await;
                    break outcome;
                }
            }
        };
        let Producer { call, slot, .. } = self;
        drop(slot);
        call.end(outcome.0, &outcome.1);
    }

    /// One message of at most `n` bytes: a place in the queue, the key's byte tokens, then the
    /// bytes, and `n`. `progress` says when the stream last queued a message.
    fn draw(
        &self,
        tx: mpsc::Sender<Queued>,
        n: usize,
        progress: watch::Receiver<Instant>,
    ) -> impl Future<Output = Result<(mpsc::OwnedPermit<Queued>, Unsent, Holds, usize), Ended>> + use<>
    {
        let (pool, quota, tenant, max_wait, accept) =
            (self.pool.clone(), self.quota.clone(), self.tenant, self.max_wait, self.plan.accept);
        let connection = self.connection.clone();
        async move {
            let place = match tx.clone().try_reserve_owned() {
                Ok(place) => place,
                Err(mpsc::error::TrySendError::Closed(_)) => return Err(Ended::ClientLeft),
                Err(mpsc::error::TrySendError::Full(_)) => {
                    // The queue is full: the client is not reading as fast as we draw. While
                    // this waits, the connection's send timeout watches it.
                    let _sending = connection.as_ref().map(ConnectionInfo::sending);
                    tx.reserve_owned().await.map_err(|_| Ended::ClientLeft)?
                }
            };
            // Metered as it flows: wait for the key's byte tokens and room in its undelivered
            // allowance (other streams of the key may hold it), then draw.
            quota.wait_bytes(n).await;
            let deadline = Some(Instant::now() + max_wait);
            let mut hold = delivery::hold_undelivered(&quota, connection.as_ref(), n, deadline)
                .await
                .map_err(|full| Ended::Failed(full.status(n)))?;
            let least = n.min(QUANTUM);
            let take = pool.take_between(tenant, least..=n, accept, None);
            let bytes = unless_stalled(take, progress, max_wait)
                .await
                .map_err(|e| Ended::Failed(stream_take_failed(e, least, max_wait)))?;
            // Hold only what was drawn: a short message frees the rest of its allowances.
            for permit in &mut hold.0 {
                let excess = permit.num_permits().saturating_sub(bytes.len());
                drop(permit.split(excess));
            }
            Ok((place, Unsent { pool, bytes: Some(bytes) }, hold, n))
        }
    }

    /// Queues the stream's final status, unless the client leaves or stops reading for
    /// `max_wait` first.
    async fn send_last(&self, tx: &mpsc::Sender<Queued>, status: Status) {
        tokio::select! {
            _ = tx.send(Queued { message: Err(status), _holds: Holds::default() }) => {}
            () = tokio::time::sleep(self.max_wait) => {}
        }
    }
}

/// A stream's queue as tonic sees it: counts each message as served when the transport takes
/// it, and the messages left in it when it is dropped as discarded.
#[derive(Debug)]
pub struct Outbox {
    rx: mpsc::Receiver<Queued>,
    pool: Arc<Pool>,
    meter: ServedMeter,
}

impl Stream for Outbox {
    type Item = Message;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Message>> {
        // The transport takes the message: it is served, and its hold ends with `Queued`.
        self.rx.poll_recv(cx).map(|queued| {
            let message = queued?.message;
            if let Ok(message) = &message {
                self.meter.served(message.data.len());
            }
            Some(message)
        })
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        self.rx.close();
        while let Ok(queued) = self.rx.try_recv() {
            if let Ok(mut message) = queued.message {
                self.pool.count_undelivered(message.data.len());
                crate::secret::wipe(&mut message.data);
            }
        }
    }
}

/// Runs a stream's `take` until it ends, or until the stream has gone `max_wait` without a
/// message (by `progress`) while it waited: it then gives up, consuming nothing.
///
/// Timed from the stream's last message, not from the draw's start: under scarcity a stream's
/// draws are served one after another (its key's turns go to its oldest draw first), so the
/// last of its draws ahead waits for all the others. Timed from its own start, that draw
/// could end a stream whose messages were still arriving.
async fn unless_stalled(
    take: impl Future<Output = Result<Drawn, TakeError>>,
    mut progress: watch::Receiver<Instant>,
    max_wait: Duration,
) -> Result<Drawn, TakeError> {
    let started = Instant::now();
    let mut take = std::pin::pin!(take);
    loop {
        let deadline = (*progress.borrow_and_update()).max(started) + max_wait;
        tokio::select! {
            result = &mut take => return result,
            () = tokio::time::sleep_until(deadline) => return Err(TakeError::TimedOut),
            // A message went out: wait on, from it. (An error: the stream ended; this
            // branch is off and the draw is about to be dropped.)
            Ok(()) = progress.changed() => {}
        }
    }
}

/// The status that ends a stream whose next message (at least `n` bytes) could not be drawn.
fn stream_take_failed(e: TakeError, n: usize, max_wait: Duration) -> Status {
    match e {
        TakeError::TimedOut => Status::unavailable(format!(
            "no entropy reached this stream for {} ms (stream_max_wait_ms; its next message \
             needs at least {n} bytes); nothing consumed, reopen the stream later",
            max_wait.as_millis()
        )),
        other => take_failed(other, Limit::Server, n),
    }
}

/// Sleeps until `deadline`, or forever when there is none.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
