//! One HTTP/2 stream: its request read within allowances, the service called, and its response
//! sent only as fast as the peer's flow-control windows admit, each message settled when its
//! last byte leaves.
//!
//! **Request.** The request's header block and [`CALL_BYTES`] are held on the connection's and
//! the process's request allowances for as long as the call lasts, charged before a task is
//! spawned for it; when there is no room the call is refused (RESOURCE_EXHAUSTED, nothing read
//! or drawn: load shedding), at once or after a short wait ([`charge_now`]). Its body is read within
//! the same allowances ([`super::request_body`]).
//!
//! **Response.** A body frame goes to h2 once the stream's window admits a byte of it (a
//! peer that never opens its window gets nothing), and is recorded in the connection's ledger
//! before h2 takes it. A response carrying drawn bytes ([`Dues`] in its extensions) has each
//! message's settle placed at the offset where the message ends: its holds on the allowances
//! last until those bytes are written out, wherever they wait meanwhile (our queue, h2's
//! buffer, the socket's). A response without drawn bytes holds its unwritten bytes on the
//! request allowances instead (a peer without a key can ask for those).
//!
//! **Send timeout.** A response whose bytes wait `send_timeout` with none of them written (its
//! window stays shut) is reset (RST_STREAM CANCEL): what it held is discarded. When the whole
//! connection is stalled too, the connection is closed instead ([`super::connection`]).

use std::convert::Infallible;
use std::future::poll_fn;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use h2::server::SendResponse;
use h2::{Reason, RecvStream, SendStream};
use prost::bytes::Bytes;
use tokio::time::Instant;

use super::connection::{Activity, ChargeWait, ConnectionInfo};
use super::dues::{Dues, MessageEnds};
use super::ledger::{Due, Settle};
use super::request_body::{H2Request, RequestBody};
use crate::domain::allowance::{Account, Holds};

/// What a call in progress costs beyond its header block, at most: h2's state for the stream,
/// the task serving it, the handler's future and the decoder's buffer. Measured: 18.5 to 18.8
/// KiB a call, 16,000 to 64,000 partial calls held at once (docs/security.md).
pub(crate) const CALL_BYTES: usize = 20 << 10;
/// Request body bytes a call's charge covers: the decoder's first buffer holds them anyway,
/// so requests that small (every EntropyService and health request) hold nothing more.
pub(crate) const PREPAID_BODY_BYTES: usize = 8 << 10;
/// How long a call that finds the request allowance full waits for room, once the connection
/// holding the most of it without ever authenticating has been told to close.
pub(super) const RELIEF_WAIT: Duration = Duration::from_millis(100);

/// What every stream of a connection shares.
#[derive(Debug)]
pub(super) struct StreamContext<S> {
    pub(super) service: S,
    pub(super) activity: Arc<Activity>,
    /// The listener's admission, to relieve pressure on its request allowance.
    pub(super) admission: super::Admission,
    /// The process's account for this listener's requests (public requests, or ingest).
    pub(super) requests: Account,
    pub(super) send_timeout: Option<Duration>,
    pub(super) events: crate::metrics::ListenerEvents,
}

/// How a response ended other than with all its bytes sent.
#[derive(Debug)]
enum Cut {
    /// The client reset the stream, or the connection closed.
    Gone,
    /// Its bytes waited longer than the send timeout; reset by us.
    Stalled,
    /// The response body failed; reset by us.
    Failed,
}

/// Takes a stream h2 accepted: charges the call on the request allowances before anything is
/// spawned for it (a task and its future cost more than h2's state for the stream, so a peer
/// opening streams faster than they can be charged must not make the gateway hold a task for
/// each), then serves it on `tasks`, or sheds it here.
pub(super) fn accept<S, B>(
    ctx: &Arc<StreamContext<S>>,
    tasks: &tokio_util::task::TaskTracker,
    request: http::Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
) where
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
    let accounts = [ctx.activity.requests.clone(), ctx.requests.clone()];
    let charge = header_bytes(&request) + CALL_BYTES;
    let ctx = ctx.clone();
    match charge_now(&ctx.activity, &accounts, charge) {
        Charge::Held(call) => {
            tasks.spawn(serve(ctx, request, respond, call));
        }
        Charge::Wait(waiting) => {
            tasks.spawn(async move {
                match wait_for_room(&ctx.admission, &accounts, charge, waiting).await {
                    Some(call) => serve(ctx, request, respond, call).await,
                    None => {
                        ctx.events.shed();
                        shed(&mut respond, &accounts);
                    }
                }
            });
        }
        Charge::Shed => {
            ctx.events.shed();
            shed(&mut respond, &accounts);
        }
    }
}

/// Serves one stream whose call holds its charge (`_call`) until it ends.
async fn serve<S, B>(
    ctx: Arc<StreamContext<S>>,
    request: http::Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
    _call: Holds,
) where
    S: tower::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<B>,
            Error = Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::fmt::Display + Send,
{
    let id = respond.stream_id().as_u32();
    let accounts = [ctx.activity.requests.clone(), ctx.requests.clone()];
    let (mut parts, recv) = request.into_parts();
    parts.extensions.insert(ConnectionInfo { activity: ctx.activity.clone() });
    let body = RequestBody::new(H2Request(recv), accounts.clone(), PREPAID_BODY_BYTES);
    let body = tonic::body::Body::new(body);
    let request = http::Request::from_parts(parts, body);

    let mut service = ctx.service.clone();
    let call = service.call(request);
    let response = {
        let mut call = pin!(call);
        // A client that resets the stream before the answer cancels the call.
        let answered = poll_fn(|cx| {
            if respond.poll_reset(cx).is_ready() {
                return Poll::Ready(None);
            }
            call.as_mut().poll(cx).map(Some)
        })
        .await;
        match answered {
            Some(Ok(response)) => response,
            Some(Err(never)) => match never {},
            None => return,
        }
    };
    let (mut parts, body) = response.into_parts();
    let dues = parts.extensions.remove::<Dues>();
    let ends = MessageEnds::new(parts.headers.get(http::header::CONTENT_TYPE));
    let end_of_stream = body.is_end_stream();
    let Ok(send) = respond.send_response(http::Response::from_parts(parts, ()), end_of_stream)
    else {
        discard(dues);
        return;
    };
    if end_of_stream {
        discard(dues);
        return;
    }
    let mut pipe = Pipe { ctx: &ctx, id, send, dues, ends, accounts, due: Vec::new() };
    let ended = pipe.run(body).await;
    let ledger = &ctx.activity.ledger;
    match ended {
        Ok(()) => {
            if let Some(dues) = &pipe.dues {
                for settle in dues.rest() {
                    ledger.attach(id, settle).run();
                }
            }
            ledger.finish(id).run();
        }
        Err(cut) => {
            match cut {
                Cut::Stalled => {
                    ctx.events.stream_stalled();
                    pipe.send.send_reset(Reason::CANCEL);
                }
                Cut::Failed => pipe.send.send_reset(Reason::INTERNAL_ERROR),
                Cut::Gone => {}
            }
            ledger.reset(id).run();
            discard(pipe.dues.take());
        }
    }
}

/// Sends a response's body.
struct Pipe<'a, S> {
    ctx: &'a StreamContext<S>,
    id: u32,
    send: SendStream<Bytes>,
    dues: Option<Dues>,
    ends: MessageEnds,
    accounts: [Account; 2],
    /// Settles on their way to the ledger (kept to reuse its allocation).
    due: Vec<Due>,
}

impl<S> Pipe<'_, S> {
    async fn run<B>(&mut self, body: B) -> Result<(), Cut>
    where
        B: http_body::Body<Data = Bytes>,
        B::Error: std::fmt::Display + Send,
    {
        let mut body = pin!(body);
        loop {
            let frame = poll_fn(|cx| {
                if self.send.poll_reset(cx).is_ready() {
                    return Poll::Ready(Err(Cut::Gone));
                }
                body.as_mut().poll_frame(cx).map(Ok)
            })
            .await?;
            match frame {
                None => {
                    return self.send.send_data(Bytes::new(), true).map_err(|_| Cut::Gone);
                }
                Some(Err(e)) => {
                    tracing::debug!(stream = self.id, "response body failed: {e}");
                    return Err(Cut::Failed);
                }
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => self.send_data(data).await?,
                    Err(frame) => {
                        if let Ok(trailers) = frame.into_trailers() {
                            return self.send.send_trailers(trailers).map_err(|_| Cut::Gone);
                        }
                    }
                },
            }
        }
    }

    /// Sends `data` as the stream's capacity admits it. The settles of the messages ending in
    /// it go to the ledger with its first piece (a settle runs once its stream has written up to
    /// its offset, however far ahead of what is sent that is).
    async fn send_data(&mut self, mut data: Bytes) -> Result<(), Cut> {
        let ledger = &self.ctx.activity.ledger;
        let mut offset = self.ends.offset();
        if let Some(dues) = &self.dues {
            let due = &mut self.due;
            self.ends.frame(&data, |at| due.extend(dues.next().map(|settle| (at, settle))));
        } else {
            self.ends.skip(data.len());
        }
        while !data.is_empty() {
            // Once the window admits a byte, the whole frame goes to h2 (which keeps the rest
            // until the window admits it): fewer turns than sending what the window admits,
            // and every byte stays held on its allowances until written either way.
            self.capacity(data.len()).await?;
            let piece = std::mem::take(&mut data);
            let end = offset + piece.len() as u64;
            if self.dues.is_none() {
                // Bytes of a response without entropy are held on the request allowances until
                // written.
                let holds = self.hold(piece.len()).await?;
                self.due.push((end, Box::new(holds)));
            }
            ledger.sent(self.id, self.dues.is_some(), piece.len(), self.due.drain(..)).run();
            self.send.send_data(piece, false).map_err(|_| Cut::Gone)?;
            offset = end;
        }
        Ok(())
    }

    /// Waits until the stream's window admits at least one byte (of `want`); the send timeout
    /// runs while it waits.
    async fn capacity(&mut self, want: usize) -> Result<usize, Cut> {
        self.send.reserve_capacity(want);
        if self.send.capacity() > 0 {
            return Ok(self.send.capacity());
        }
        let since = Instant::now();
        let stalled = stalled(self.ctx, self.id, since);
        let mut stalled = pin!(stalled);
        poll_fn(|cx| {
            if self.send.poll_reset(cx).is_ready() {
                return Poll::Ready(Err(Cut::Gone));
            }
            loop {
                let room = self.send.capacity();
                if room > 0 {
                    return Poll::Ready(Ok(room));
                }
                match self.send.poll_capacity(cx) {
                    Poll::Ready(Some(Ok(_))) => continue,
                    Poll::Ready(Some(Err(_)) | None) => return Poll::Ready(Err(Cut::Gone)),
                    Poll::Pending => break,
                }
            }
            stalled.as_mut().poll(cx).map(|()| Err(Cut::Stalled))
        })
        .await
    }

    /// Holds `n` bytes on the request allowances; the send timeout runs while it waits.
    async fn hold(&mut self, n: usize) -> Result<Holds, Cut> {
        if let Some(holds) = hold_now(&self.accounts, n) {
            return Ok(holds);
        }
        let accounts = &self.accounts;
        let held = async {
            let mut holds = Holds::default();
            for account in accounts {
                if let Some(hold) = account.hold(n, None).await {
                    holds.add(hold);
                }
            }
            holds
        };
        let stalled = stalled(self.ctx, self.id, Instant::now());
        let (mut held, mut stalled) = (pin!(held), pin!(stalled));
        let send = &mut self.send;
        poll_fn(|cx| {
            if send.poll_reset(cx).is_ready() {
                return Poll::Ready(Err(Cut::Gone));
            }
            if let Poll::Ready(holds) = held.as_mut().poll(cx) {
                return Poll::Ready(Ok(holds));
            }
            stalled.as_mut().poll(cx).map(|()| Err(Cut::Stalled))
        })
        .await
    }
}

/// Completes once the stream has made no progress (none of its bytes written) for the send
/// timeout since `since`; never without a send timeout. When the whole connection has written
/// no entropy for as long, its connection is asked to close (as stalled) first, and the stream
/// is reset only if it is still open a timeout later.
async fn stalled<S>(ctx: &StreamContext<S>, id: u32, since: Instant) {
    let Some(timeout) = ctx.send_timeout else { return std::future::pending().await };
    let mut deadline = since + timeout;
    let mut asked = false;
    loop {
        tokio::time::sleep_until(deadline).await;
        let progress = ctx.activity.ledger.standing(id).map(|s| Instant::from_std(s.progress));
        let next = progress.map_or(since, |p| p.max(since)) + timeout;
        let now = Instant::now();
        if next > now {
            deadline = next;
            continue;
        }
        if asked || !ctx.activity.is_stalled(timeout) {
            return;
        }
        ctx.activity.check_stall();
        asked = true;
        deadline = now + timeout;
    }
}

/// What a call's charge on the request allowances (its connection's and the process's) comes
/// to when the call arrives.
pub(super) enum Charge {
    /// Held: the call holds it for as long as it lasts.
    Held(Holds),
    /// The process's allowance is full: the call may wait for room (the connection's one
    /// place to wait is its).
    Wait(ChargeWait),
    /// Refuse the call at once.
    Shed,
}

/// Charges a call of `charge` bytes (its header block and [`CALL_BYTES`]) on `accounts` now.
///
/// A call that finds no room on its own connection's allowance is shed at once: only the
/// connection's own calls could make room. When the process's allowance is full, the call may
/// wait ([`wait_for_room`]), one call per connection at a time: a waiting call holds its
/// headers and its task, which no allowance counts yet, so a connection's other calls are shed
/// instead of waiting beside it.
pub(super) fn charge_now(
    activity: &Arc<Activity>,
    accounts: &[Account; 2],
    charge: usize,
) -> Charge {
    if let Some(holds) = hold_now(accounts, charge) {
        return Charge::Held(holds);
    }
    let own = &accounts[0];
    if own.held() + charge > own.cap() {
        return Charge::Shed;
    }
    activity.wait_for_charge().map_or(Charge::Shed, Charge::Wait)
}

/// Waits for room for a call's charge on a full process allowance: the connection holding the
/// most of it is closed ([`super::Admission::relieve`]) and the call waits [`RELIEF_WAIT`];
/// `None` means shed the call.
pub(super) async fn wait_for_room(
    admission: &super::Admission,
    accounts: &[Account; 2],
    charge: usize,
    _waiting: ChargeWait,
) -> Option<Holds> {
    let global = &accounts[1];
    if global.held() + charge.min(global.cap()) > global.cap() {
        admission.relieve();
    }
    let deadline = Some(Instant::now() + RELIEF_WAIT);
    let mut holds = Holds::default();
    for account in accounts {
        holds.add(account.hold(charge, deadline).await?);
    }
    Some(holds)
}

/// Holds a call's charge (`header` bytes of header block and [`CALL_BYTES`]), as [`charge_now`]
/// and [`wait_for_room`] do; `None` means shed the call.
pub(super) async fn call_charge(
    admission: &super::Admission,
    activity: &Arc<Activity>,
    accounts: &[Account; 2],
    header: usize,
) -> Option<Holds> {
    let charge = header + CALL_BYTES;
    match charge_now(activity, accounts, charge) {
        Charge::Held(holds) => Some(holds),
        Charge::Wait(waiting) => wait_for_room(admission, accounts, charge, waiting).await,
        Charge::Shed => None,
    }
}

/// Holds `n` bytes on every one of `accounts` now, or on none.
fn hold_now(accounts: &[Account], n: usize) -> Option<Holds> {
    let mut holds = Holds::default();
    for account in accounts {
        holds.add(account.try_hold(n)?);
    }
    Some(holds)
}

/// Refuses a call whose headers found no room: a trailers-only RESOURCE_EXHAUSTED.
fn shed(respond: &mut SendResponse<Bytes>, accounts: &[Account; 2]) {
    // A trailers-only response: the status in the headers, which end the stream.
    let _ = respond.send_response(shed_status(accounts).into_http::<()>(), true);
}

/// The one status the transport decides itself: RESOURCE_EXHAUSTED for a call shed because a
/// request allowance (the connection's or the process's, named) had no room for it.
pub(super) fn shed_status(accounts: &[Account; 2]) -> tonic::Status {
    let over_half = |a: &Account| a.held() * 2 > a.cap();
    let [first, second] = accounts;
    let full = if !over_half(first) && over_half(second) { second } else { first };
    tonic::Status::resource_exhausted(format!(
        "the gateway is shedding load: {} ({} bytes) is full of requests in progress; nothing \
         was read or drawn, retry later",
        full.name(),
        full.cap()
    ))
}

/// Discards what a response was owed for messages it never sent.
fn discard(dues: Option<Dues>) {
    for settle in dues.iter().flat_map(Dues::rest) {
        settle.discarded();
    }
}

/// A header block's size as HTTP/2 counts it (RFC 9113 6.5.2: name, value and 32 bytes a field,
/// pseudo-headers included).
fn header_bytes<T>(request: &http::Request<T>) -> usize {
    let fields: usize =
        request.headers().iter().map(|(name, value)| name.as_str().len() + value.len() + 32).sum();
    let uri = request.uri();
    let pseudo = request.method().as_str().len()
        + uri.scheme_str().map_or(0, str::len)
        + uri.authority().map_or(0, |a| a.as_str().len())
        + uri.path_and_query().map_or(0, |p| p.as_str().len())
        + 4 * 32;
    fields + pseudo
}

/// Holds given back when the bytes they cover are written, or dropped.
impl Settle for Holds {
    fn delivered(self: Box<Self>) {}
    fn discarded(self: Box<Self>) {}
}
