//! HTTP/1.1 connections, for gRPC-Web from browsers over plaintext (off unless
//! `grpc_web_enabled`): served by hyper, under the same allowances and delivery rule as HTTP/2.
//!
//! HTTP/1.1 sends one response after another, so a response's book in the ledger is its
//! number on the connection, which is also what the write path counts ([`super::written`]).
//! hyper takes body frames as its write buffer drains, so a frame is recorded in the ledger as
//! hyper takes it, cut to at most [`PIECE`] bytes. Request heads are bounded by hyper
//! (`max_buf_size`, a header read timeout); bodies are read within the request allowances as on
//! HTTP/2, and every request other than POST (gRPC-Web) or OPTIONS (its CORS preflight) is
//! answered 405 with no body, here, so the write path never meets a response without a body
//! whose head announces one.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use http_body::Frame;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use prost::bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

use super::budget::{Account, Holds};
use super::connection::{Activity, ConnectionInfo};
use super::dues::{Dues, MessageEnds};
use super::ledger::Due;
use super::request_body::RequestBody;

/// Largest body frame handed to hyper at once.
pub const PIECE: usize = 64 << 10;
/// How long a request head may take to arrive.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// hyper's read buffer: the largest request head.
pub const MAX_HEAD_BYTES: usize = 64 << 10;

/// Serves one HTTP/1.1 connection until it closes, or `shutdown`.
pub(super) async fn serve<IO, S, B>(
    io: IO,
    service: S,
    activity: Arc<Activity>,
    requests: Account,
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
    B: http_body::Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display + Send,
{
    let responses = Arc::new(AtomicU32::new(0));
    let service = hyper::service::service_fn(move |request: http::Request<Incoming>| {
        let number = responses.fetch_add(1, Ordering::AcqRel) + 1;
        let (activity, requests, service) = (activity.clone(), requests.clone(), service.clone());
        respond(number, activity, requests, service, request)
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .max_buf_size(MAX_HEAD_BYTES)
        .keep_alive(true);
    let connection = builder.serve_connection(TokioIo::new(io), service);
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(e) = result {
                tracing::debug!("HTTP/1.1 connection ended: {e}");
            }
            return;
        }
        () = shutdown.cancelled() => connection.as_mut().graceful_shutdown(),
    }
    let _ = connection.await;
}

/// Answers request `number` of the connection.
async fn respond<S, B>(
    number: u32,
    activity: Arc<Activity>,
    requests: Account,
    mut service: S,
    request: http::Request<Incoming>,
) -> Result<http::Response<Pieces<B>>, Infallible>
where
    S: tower::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<B>,
            Error = Infallible,
        >,
{
    let accounts = [activity.requests.clone(), requests];
    let pieces = |body, dues, ends| Pieces {
        body,
        number,
        activity: activity.clone(),
        dues,
        ends,
        accounts: accounts.clone(),
        rest: None,
        done: false,
    };
    if !matches!(*request.method(), http::Method::POST | http::Method::OPTIONS) {
        let mut response = http::Response::new(pieces(None, None, MessageEnds::default()));
        *response.status_mut() = http::StatusCode::METHOD_NOT_ALLOWED;
        response.headers_mut().insert(http::header::CONTENT_LENGTH, http::HeaderValue::from(0));
        return Ok(response);
    }
    let (mut parts, body) = request.into_parts();
    parts.extensions.insert(ConnectionInfo { activity: activity.clone() });
    let body = tonic::body::Body::new(RequestBody::new(Http1Request(body), accounts.to_vec()));
    let Ok(response) = service.call(http::Request::from_parts(parts, body)).await;
    let (mut parts, body) = response.into_parts();
    let dues = parts.extensions.remove::<Dues>();
    let ends = MessageEnds::new(parts.headers.get(http::header::CONTENT_TYPE));
    Ok(http::Response::from_parts(parts, pieces(Some(body), dues, ends)))
}

/// An HTTP/1.1 request body (HTTP/1.1 has no flow control to give back).
struct Http1Request(Incoming);

impl http_body::Body for Http1Request {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        Pin::new(&mut self.0).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }
}

impl super::request_body::Inbound for Http1Request {}

/// A response body handed to hyper in pieces, each recorded in the ledger as hyper takes it.
struct Pieces<B> {
    /// `None`: a response without a body.
    body: Option<B>,
    number: u32,
    activity: Arc<Activity>,
    dues: Option<Dues>,
    ends: MessageEnds,
    accounts: [Account; 2],
    /// What is left of the last frame.
    rest: Option<Bytes>,
    done: bool,
}

impl<B> Pieces<B> {
    /// Records `piece`, the next bytes of the body, in the ledger; `None` when it must wait
    /// for room on the request allowances (a response without entropy), which it registers.
    fn record(&mut self, piece: &Bytes, ends: &[u64]) -> Option<()> {
        let end = self.ends.offset();
        let mut due: Vec<Due> = Vec::new();
        match &self.dues {
            Some(dues) => {
                due.extend(ends.iter().filter_map(|&at| dues.next().map(|s| (at.min(end), s))));
            }
            None => {
                let mut holds = Holds::default();
                for account in &self.accounts {
                    holds.add(account.try_hold(piece.len())?);
                }
                due.push((end, Box::new(holds)));
            }
        }
        self.activity.ledger.sent(self.number, self.dues.is_some(), piece.len(), due).run();
        Some(())
    }
}

impl<B> http_body::Body for Pieces<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display + Send,
{
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = &mut *self;
        loop {
            if let Some(rest) = &mut this.rest {
                let piece = rest.split_to(rest.len().min(PIECE));
                if rest.is_empty() {
                    this.rest = None;
                }
                let ends = this.ends.frame(&piece);
                if this.record(&piece, &ends).is_none() {
                    // No room for an answer without entropy: the peer is not reading what it
                    // already asked for. Try again shortly (its connection's own answers free
                    // room as they are written).
                    tracing::debug!("HTTP/1.1 response waits for room on the request allowance");
                    let waker = cx.waker().clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        waker.wake();
                    });
                    this.rest = Some(match this.rest.take() {
                        Some(mut rest) => {
                            let mut whole = piece.to_vec();
                            whole.extend_from_slice(&rest.split_off(0));
                            Bytes::from(whole)
                        }
                        None => piece,
                    });
                    return Poll::Pending;
                }
                // hyper stops polling once the body says it has ended: settle now.
                if this.rest.is_none() && this.body.as_ref().is_none_or(|b| b.is_end_stream()) {
                    this.finish();
                }
                return Poll::Ready(Some(Ok(Frame::data(piece))));
            }
            let Some(body) = &mut this.body else {
                this.finish();
                return Poll::Ready(None);
            };
            match ready!(Pin::new(body).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => this.rest = Some(data),
                    Err(frame) => {
                        this.finish();
                        return Poll::Ready(Some(Ok(frame)));
                    }
                },
                Some(Err(e)) => {
                    return Poll::Ready(Some(Err(std::io::Error::other(e.to_string()))));
                }
                None => {
                    this.finish();
                    return Poll::Ready(None);
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_none() && self.body.as_ref().is_none_or(|b| b.is_end_stream())
    }
}

impl<B> Pieces<B> {
    fn finish(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        let ledger = &self.activity.ledger;
        if let Some(dues) = &self.dues {
            for settle in dues.rest() {
                ledger.attach(self.number, settle).run();
            }
        }
        ledger.finish(self.number).run();
    }
}

impl<B> Drop for Pieces<B> {
    fn drop(&mut self) {
        if !self.done {
            // The connection is ending before the response did.
            self.activity.ledger.reset(self.number).run();
            for settle in self.dues.iter().flat_map(Dues::rest) {
                settle.discarded();
            }
        }
    }
}
