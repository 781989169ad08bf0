//! HTTP/1.1 connections, for gRPC-Web from browsers, Connect and the REST routes' clients (off
//! unless `grpc_web_enabled` over plaintext, `connect_enabled` or `rest_enabled`:
//! `public_http1` in `process::server`): served by hyper, under the same allowances and
//! delivery rule as HTTP/2.
//!
//! HTTP/1.1 sends one response after another, so a response's book in the ledger is its
//! number on the connection, which is also what the write path counts ([`super::written`]).
//! hyper takes body frames as its write buffer drains, so a frame is recorded in the ledger as
//! hyper takes it, cut to at most [`PIECE`] bytes. Request heads are bounded by hyper
//! (`max_buf_size`, a header read timeout); bodies are read within the request allowances as on
//! HTTP/2, and every request other than POST (gRPC-Web, Connect) or OPTIONS (its CORS
//! preflight), or GET (the REST routes), each when its feature is on ([`super::Http1`]), is
//! answered 405 with no body, here, so the write path never meets a response without a body
//! whose head announces one (HEAD is never served).

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

use super::connection::{Activity, ConnectionInfo};
use super::dues::{Dues, MessageEnds};
use super::ledger::Due;
use super::request_body::RequestBody;
use crate::domain::allowance::{Account, Holds, Waiter};

/// Largest body frame handed to hyper at once.
pub(crate) const PIECE: usize = 64 << 10;
/// How long a request head may take to arrive.
pub(crate) const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// hyper's read buffer: the largest request head.
pub(crate) const MAX_HEAD_BYTES: usize = 64 << 10;

/// Serves one HTTP/1.1 connection until it closes, or `shutdown`.
pub(super) async fn serve<IO, S, B>(
    io: IO,
    service: S,
    (activity, methods): (Arc<Activity>, super::Http1),
    admission: super::Admission,
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
        respond(number, (activity, admission.clone(), requests, methods), service, request)
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
    (activity, admission, requests, methods): (
        Arc<Activity>,
        super::Admission,
        Account,
        super::Http1,
    ),
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
        waiter: Waiter::new(accounts.clone()),
        rest: None,
        sent: 0,
        due: Vec::new(),
        done: false,
        call: None,
    };
    if !methods.serves(request.method()) {
        let mut response = http::Response::new(pieces(None, None, MessageEnds::default()));
        *response.status_mut() = http::StatusCode::METHOD_NOT_ALLOWED;
        response.headers_mut().insert(http::header::CONTENT_LENGTH, http::HeaderValue::from(0));
        return Ok(response);
    }
    let header = request.headers().iter().map(|(n, v)| n.as_str().len() + v.len() + 32).sum();
    let Some(call) = super::stream::call_charge(&admission, &activity, &accounts, header).await
    else {
        let response = super::stream::shed_status(&accounts).into_http::<()>();
        let (parts, ()) = response.into_parts();
        return Ok(http::Response::from_parts(parts, pieces(None, None, MessageEnds::default())));
    };
    let (mut parts, body) = request.into_parts();
    parts.extensions.insert(ConnectionInfo { activity: activity.clone() });
    let body =
        RequestBody::new(Http1Request(body), accounts.clone(), super::stream::PREPAID_BODY_BYTES);
    let body = tonic::body::Body::new(body);
    let Ok(response) = service.call(http::Request::from_parts(parts, body)).await;
    let (mut parts, body) = response.into_parts();
    let dues = parts.extensions.remove::<Dues>();
    let ends = MessageEnds::new(parts.headers.get(http::header::CONTENT_TYPE));
    let mut pieces = pieces(Some(body), dues, ends);
    pieces.call = Some(call);
    Ok(http::Response::from_parts(parts, pieces))
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
    /// Holds, for a response without entropy, its bytes until they are written.
    waiter: Waiter,
    /// What is left of the last frame, and what its next piece holds so far.
    rest: Option<(Bytes, Holds)>,
    /// Body bytes handed to hyper so far.
    sent: u64,
    /// Settles of the messages ending in the frame being handed on.
    due: Vec<Due>,
    done: bool,
    /// The call's charge on the request allowances, until the response is done.
    call: Option<Holds>,
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
            if let Some((rest, holds)) = &mut this.rest {
                let len = rest.len().min(PIECE);
                if this.dues.is_none() {
                    // An answer without entropy: its bytes hold room on the request allowances
                    // until written (a peer that does not read them waits here).
                    ready!(this.waiter.poll_hold(cx, len, holds));
                    let holds = std::mem::take(holds);
                    this.due.push((this.sent + len as u64, Box::new(holds)));
                }
                let piece = rest.split_to(len);
                if rest.is_empty() {
                    this.rest = None;
                }
                this.sent += len as u64;
                let entropy = this.dues.is_some();
                this.activity.ledger.sent(this.number, entropy, len, this.due.drain(..)).run();
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
                    Ok(data) => {
                        // The settles of the messages ending in this frame go to the ledger
                        // with its first piece.
                        if let Some(dues) = &this.dues {
                            let due = &mut this.due;
                            this.ends.frame(&data, |end| due.extend(dues.next().map(|s| (end, s))));
                        }
                        this.rest = Some((data, Holds::default()));
                    }
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
