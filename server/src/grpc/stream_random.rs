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
//! someone else. A queued message becomes a response only when the transport takes it from the
//! queue ([`Outbox`]): then its provenance (and the age of its bytes) is as of that moment,
//! bytes older than `max_byte_age_ms` are wiped instead of sent, and once the client's deadline
//! has passed what is queued goes back to the pool. A message counts as served when its last
//! byte has been written to the socket ([`super::delivery`]); those still queued when the
//! stream is dropped are wiped and counted as discarded, never as served to anyone.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use entropy_proto::v1::{StreamRandomRequest, StreamRandomResponse};
use futures_util::Stream;
use futures_util::StreamExt;
use futures_util::stream::FuturesOrdered;
use tokio::sync::{Notify, mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tonic::{Code, Status};

use super::delivery::{self, Generated, Refused, Source, StreamDrbg, Undelivered};
use super::errors::{self, out_of_range, stream_take_failed};
use super::observe::Call;
use super::provenance;
use super::requests::{accept_kinds, construction};
use crate::domain::allowance::Account;
use crate::domain::drbg::Construction;
use crate::domain::pool::{Drawn, Kinds, Pool, QUANTUM, Tenant};
use crate::domain::quota::{KeyQuota, StreamSlot};
use crate::domain::served::Totals;
use crate::transport::{ConnectionInfo, Dues};

/// Default `StreamRandomRequest.chunk_bytes`.
pub const DEFAULT_STREAM_CHUNK_BYTES: usize = 16 << 10;
/// Largest `StreamRandomRequest.chunk_bytes`.
pub(crate) const MAX_STREAM_CHUNK_BYTES: usize = 1 << 20;
/// Most messages a stream draws ahead of its client.
pub(crate) const MAX_STREAM_DEPTH: usize = 32;
/// Bytes of messages a stream may have drawn or be drawing ahead of its client (at least one
/// message), in its queue; one more message may wait in its pipe for the client's window.
/// Every drawn message holds its room on the key's, the connection's and the process's
/// allowances until its bytes are written out, so a slow or stalled reader pins at most this
/// much plus one message per stream, and draws no more until it reads.
pub const STREAM_BUFFER_BYTES: usize = 256 << 10;

/// How many messages of `chunk` bytes a stream draws ahead.
pub(crate) fn stream_depth(chunk: usize) -> usize {
    (STREAM_BUFFER_BYTES / chunk.max(1)).clamp(1, MAX_STREAM_DEPTH)
}

/// A StreamRandom request, checked.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamPlan {
    /// Bytes per message.
    pub chunk: usize,
    /// Bytes in all (0: until the client leaves).
    pub total: u64,
    /// The source kinds accepted.
    pub accept: Kinds,
    /// Pool bytes or DRBG output.
    pub construction: Construction,
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
        Ok(Self {
            chunk,
            total: request.total_bytes,
            accept: accept_kinds(&request.accept_kinds)?,
            construction: construction(request.construction)?,
        })
    }
}

/// Everything a stream's task needs.
#[derive(Debug)]
pub(crate) struct Producer {
    /// What to send.
    pub plan: StreamPlan,
    /// Where bytes come from.
    pub pool: Arc<Pool>,
    /// Whose fair share the draws count against.
    pub tenant: Tenant,
    /// The key's byte metering and undelivered allowance.
    pub quota: Arc<KeyQuota>,
    /// The process's allowance for response bytes.
    pub responses: Account,
    /// Where served and discarded bytes are counted.
    pub totals: Arc<Totals>,
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
    /// The stream's DRBG, for a DRBG construction (one instance for the whole stream).
    pub drbg: Option<Arc<StreamDrbg>>,
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

/// A message drawn and not yet queued: pool bytes (given back if dropped) or DRBG output.
enum Piece {
    Pool(Unsent),
    Drbg(Generated),
}

/// A drawn message not yet in the queue: goes back to the pool if dropped.
struct Unsent {
    pool: Arc<Pool>,
    bytes: Option<Drawn>,
}

impl Unsent {
    fn len(&self) -> usize {
        self.bytes.as_ref().map_or(0, |bytes| bytes.len())
    }

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

/// A message in the stream's queue: drawn bytes and their holds, or the stream's final status.
#[derive(Debug)]
pub(crate) enum Queued {
    /// Drawn bytes, still in the process.
    Bytes(Drawn, Undelivered),
    /// DRBG output, still in the process.
    Generated(Generated, Undelivered),
    /// The stream ends with this status.
    End(Status),
}

/// What the outbox tells the producer: bytes it wiped for their age (to be drawn again, so a
/// stream still sends exactly its `total_bytes`), and each message it took.
#[derive(Debug, Default)]
struct Aged {
    bytes: AtomicU64,
    taken: Notify,
}

impl Producer {
    /// Starts the stream's task on `spawn` and returns the stream for tonic, and the [`Dues`]
    /// to put in the response's extensions.
    pub(crate) fn start(
        self,
        spawn: impl FnOnce(futures_util::future::BoxFuture<'static, ()>),
    ) -> (Outbox, Dues) {
        let (tx, rx) = mpsc::channel(stream_depth(self.plan.chunk));
        let dues = Dues::default();
        let aged = Arc::new(Aged::default());
        let outbox = Outbox {
            rx,
            pool: self.pool.clone(),
            dues: dues.clone(),
            deadline: self.client_deadline,
            ended: false,
            aged: aged.clone(),
        };
        spawn(Box::pin(self.run(tx, aged)));
        (outbox, dues)
    }

    async fn run(mut self, tx: mpsc::Sender<Queued>, aged: Arc<Aged>) {
        let depth = stream_depth(self.plan.chunk);
        let mut in_flight = FuturesOrdered::new();
        let mut planned: u64 = 0;
        // Each draw's turn: the order its DRBG output (if any) is generated in.
        let mut turns: u64 = 0;
        // When the stream last queued a message: its draws wait from there (see `draw`).
        let progress = watch::Sender::new(Instant::now());
        let outcome: (Code, String) = loop {
            // What the outbox wiped for age is planned again.
            planned -= aged.bytes.swap(0, Ordering::AcqRel);
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
                in_flight.push_back(self.draw(tx.clone(), (n, turns), progress.subscribe()));
                turns += 1;
            }
            if in_flight.is_empty() {
                // Everything is queued; until the outbox has taken it all, some may still age
                // out and need drawing again.
                if aged.bytes.load(Ordering::Acquire) > 0 {
                    continue;
                }
                if tx.capacity() == tx.max_capacity() {
                    break (Code::Ok, String::new()); // all of total_bytes sent
                }
                tokio::select! {
                    () = tx.closed() => break (Code::Cancelled, "client left".into()),
                    () = aged.taken.notified() => continue,
                }
            }
            let next = tokio::select! {
                biased;
                () = self.shutdown.cancelled() => {
                    self.cuts.0.fetch_add(1, Ordering::Relaxed);
                    Err(Ended::Failed(errors::shutting_down()))
                }
                () = tx.closed() => Err(Ended::ClientLeft),
                () = sleep_until(self.client_deadline) => {
                    Err(Ended::Failed(errors::stream_deadline()))
                }
                next = in_flight.next() => next.unwrap_or(Err(Ended::ClientLeft)),
            };
            match next {
                // Drawn after the client's deadline: back to the pool, never sent.
                Ok(_) if self.client_deadline.is_some_and(|d| Instant::now() >= d) => {
                    drop(in_flight);
                    let status = errors::stream_deadline();
                    let outcome = (status.code(), status.message().to_owned());
                    self.send_last(&tx, status).await;
                    break outcome;
                }
                Ok((place, piece, held, asked)) => {
                    let n = match &piece {
                        Piece::Pool(unsent) => unsent.len(),
                        Piece::Drbg(generated) => generated.bytes.len(),
                    };
                    planned -= (asked - n) as u64; // what a short draw left is planned again
                    let undelivered = Undelivered::new(
                        n,
                        held,
                        self.call.meter(),
                        self.totals.clone(),
                        self.connection.as_ref(),
                    );
                    place.send(match piece {
                        Piece::Pool(unsent) => Queued::Bytes(unsent.into_bytes(), undelivered),
                        Piece::Drbg(generated) => {
                            Queued::Generated(generated, undelivered.of_drbg())
                        }
                    });
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
        (n, turn): (usize, u64),
        progress: watch::Receiver<Instant>,
    ) -> impl Future<
        Output = Result<(mpsc::OwnedPermit<Queued>, Piece, delivery::Held, usize), Ended>,
    > + use<> {
        let (pool, quota, tenant, max_wait, accept) =
            (self.pool.clone(), self.quota.clone(), self.tenant, self.max_wait, self.plan.accept);
        let (connection, responses) = (self.connection.clone(), self.responses.clone());
        let (drbg, totals) = (self.drbg.clone(), self.totals.clone());
        async move {
            // A place in the queue first (the client reads what it holds), then the draw:
            // the key's byte tokens (metered as it flows), room in the allowances (other
            // streams of the key may hold them), the bytes.
            let place = tx.reserve_owned().await.map_err(|_| Ended::ClientLeft)?;
            let from = Source {
                pool: &pool,
                quota: &quota,
                tenant,
                connection: connection.as_ref(),
                responses: &responses,
            };
            if let Some(drbg) = drbg {
                // DRBG output: never short, its only wait is for its seeds.
                let (generated, held) = delivery::take_drbg_message(
                    &from,
                    (&drbg, turn),
                    (n, accept),
                    max_wait,
                    &totals,
                )
                .await
                .map_err(|refused| {
                    Ended::Failed(match refused {
                        Refused::Full(full) => full.into(),
                        Refused::Take(e) => stream_take_failed(e, n.min(QUANTUM), max_wait),
                        Refused::Quota(e) => errors::quota_exceeded(e),
                    })
                })?;
                return Ok((place, Piece::Drbg(generated), held, n));
            }
            let least = n.min(QUANTUM);
            let (bytes, held) = delivery::take_message(
                &from,
                (least, n, accept),
                max_wait,
                stalled(progress, max_wait),
            )
            .await
            .map_err(|refused| {
                Ended::Failed(match refused {
                    Refused::Full(full) => full.into(),
                    Refused::Take(e) => stream_take_failed(e, least, max_wait),
                    // A stream's byte tokens are waited for, never refused.
                    Refused::Quota(e) => errors::quota_exceeded(e),
                })
            })?;
            Ok((place, Piece::Pool(Unsent { pool, bytes: Some(bytes) }), held, n))
        }
    }

    /// Queues the stream's final status, unless the client leaves or stops reading for
    /// `max_wait` first.
    async fn send_last(&self, tx: &mpsc::Sender<Queued>, status: Status) {
        tokio::select! {
            _ = tx.send(Queued::End(status)) => {}
            () = tokio::time::sleep(self.max_wait) => {}
        }
    }
}

/// A stream's queue as tonic sees it. A message becomes a response when the transport takes
/// it: provenance as of then, too-old bytes wiped, and after the client's deadline nothing
/// more is sent (what is queued goes back to the pool).
#[derive(Debug)]
pub struct Outbox {
    rx: mpsc::Receiver<Queued>,
    pool: Arc<Pool>,
    /// The settles of the messages taken, for the transport.
    dues: Dues,
    deadline: Option<Instant>,
    ended: bool,
    aged: Arc<Aged>,
}

impl Outbox {
    /// Gives back every queued message (none has left the process) and closes the queue.
    fn give_back_queued(&mut self) {
        self.rx.close();
        while let Ok(queued) = self.rx.try_recv() {
            if let Queued::Bytes(bytes, undelivered) = queued {
                undelivered.abandon();
                self.pool.give_back(bytes);
            }
        }
    }
}

impl Stream for Outbox {
    type Item = Message;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Message>> {
        use std::task::Poll;
        loop {
            if self.ended {
                return Poll::Ready(None);
            }
            let now = Instant::now();
            if self.deadline.is_some_and(|d| now >= d) {
                self.give_back_queued();
                self.ended = true;
                return Poll::Ready(Some(Err(errors::stream_deadline())));
            }
            let Some(queued) = std::task::ready!(self.rx.poll_recv(cx)) else {
                return Poll::Ready(None);
            };
            self.aged.taken.notify_one();
            let (bytes, undelivered) = match queued {
                Queued::End(status) => {
                    self.ended = true;
                    return Poll::Ready(Some(Err(status)));
                }
                Queued::Bytes(bytes, undelivered) => (bytes, undelivered),
                // DRBG output: no pool bytes, so no age to hold it to.
                Queued::Generated(generated, undelivered) => {
                    let provenance = Some(provenance::of_drbg(&generated.label, &generated.seeds));
                    self.dues.push(Box::new(undelivered));
                    return Poll::Ready(Some(Ok(StreamRandomResponse {
                        data: generated.bytes.into_vec(),
                        provenance,
                    })));
                }
            };
            // Bytes that aged past the limit while queued are wiped, not sent.
            if let Some(max_age) = self.pool.limits().max_byte_age
                && bytes.provenance(now).is_some_and(|p| p.oldest_age >= max_age)
            {
                undelivered.abandon();
                self.pool.count_expired(bytes.len());
                self.aged.bytes.fetch_add(bytes.len() as u64, Ordering::AcqRel);
                self.aged.taken.notify_one();
                continue;
            }
            let provenance = provenance::of_segments(bytes.segments(), now);
            self.dues.push(Box::new(undelivered));
            return Poll::Ready(Some(Ok(StreamRandomResponse {
                data: bytes.into_vec(),
                provenance,
            })));
        }
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        // Messages still queued were drawn for a client that left: wiped as they drop, counted
        // as discarded by their `Undelivered`.
        self.rx.close();
        while self.rx.try_recv().is_ok() {}
    }
}

/// Resolves when the stream has gone `max_wait` without a message (by `progress`): a draw
/// waiting for bytes then gives up, consuming nothing ([`delivery::take_message`]).
///
/// Timed from the stream's last message, not from the draw's start: under scarcity a stream's
/// draws are served one after another (its key's turns go to its oldest draw first), so the
/// last of its draws ahead waits for all the others. Timed from its own start, that draw
/// could end a stream whose messages were still arriving.
async fn stalled(mut progress: watch::Receiver<Instant>, max_wait: Duration) {
    let started = Instant::now();
    loop {
        let deadline = (*progress.borrow_and_update()).max(started) + max_wait;
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => return,
            // A message went out: wait on, from it. (An error: the stream ended; this
            // branch is off and the draw is about to be dropped.)
            Ok(()) = progress.changed() => {}
        }
    }
}

/// Sleeps until `deadline`, or forever when there is none.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
