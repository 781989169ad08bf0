//! Delivery: drawn bytes count as served only once the transport has taken them, and hold
//! their key's undelivered allowance until then.
//!
//! A client that does not read its responses must not make the gateway hold entropy without
//! bound. Every draw first holds that many bytes of its key's `max_undelivered_bytes`
//! ([`crate::quota::KeyQuota::hold_undelivered`]); the hold ends when the response is
//! delivered: for a unary call when the transport has polled its response to the end (the
//! trailers come after the data, and hyper asks for them only once HTTP/2 flow control has
//! admitted the data), for a stream message when the transport takes it from the stream's
//! queue. A response dropped before that (the client reset the call, the connection closed)
//! counts its bytes as discarded, never as served; they were wiped where we held them.
//!
//! [`DeliveryLayer`] finds an [`Undelivered`] in a response's extensions (put there by
//! [`super::observe::Call::finish`]) and keeps it with the response body until the body ends.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;

use super::observe::ServedMeter;
use crate::conn_limit::{ConnectionInfo, Sending};
use crate::pool::Pool;
use crate::quota::KeyQuota;

/// Bytes drawn for one response and not yet delivered.
#[derive(Debug)]
pub struct Undelivered {
    n: usize,
    pool: Arc<Pool>,
    meter: ServedMeter,
    holds: Vec<OwnedSemaphorePermit>,
}

impl Undelivered {
    /// Nothing yet, for a response metered by `meter`.
    pub fn new(pool: Arc<Pool>, meter: ServedMeter) -> Self {
        Self { n: 0, pool, meter, holds: Vec::new() }
    }

    /// Adds `n` drawn bytes, holding `holds` (the key's and the connection's allowances).
    pub fn add(&mut self, n: usize, holds: Holds) {
        self.n += n;
        for hold in holds.0 {
            match self.holds.iter_mut().find(|h| Arc::ptr_eq(h.semaphore(), hold.semaphore())) {
                Some(held) => held.merge(hold),
                None => self.holds.push(hold),
            }
        }
    }

    /// Bytes drawn.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True when nothing was drawn.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The bytes went back to the pool (the call failed): nothing to count.
    pub fn abandon(mut self) {
        self.n = 0;
    }

    /// The transport took the bytes: count them as served.
    pub fn delivered(mut self) {
        self.meter.served(self.n);
        self.n = 0;
    }
}

impl Drop for Undelivered {
    fn drop(&mut self) {
        if self.n > 0 {
            self.pool.count_undelivered(self.n);
        }
    }
}

/// What one draw holds of the allowances it counts against (its key's, its connection's).
#[derive(Debug, Default)]
pub struct Holds(pub Vec<OwnedSemaphorePermit>);

/// Holds `n` bytes of the key's undelivered allowance and, when the request came over a
/// connection we track, of the connection's, waiting until `deadline`. The error names the
/// allowance that had no room.
pub async fn hold_undelivered(
    quota: &KeyQuota,
    connection: Option<&ConnectionInfo>,
    n: usize,
    deadline: Option<Instant>,
) -> Result<Holds, Full> {
    let mut holds = Holds::default();
    if let Some(connection) = connection {
        let hold = connection.hold_undelivered(n, deadline).await;
        let (held, cap) = connection.undelivered_bytes();
        holds.0.push(hold.ok_or(Full::Connection { held, cap })?);
    }
    let hold = quota.hold_undelivered(n, deadline).await;
    let (held, cap) = (quota.undelivered_bytes(), quota.limits().undelivered_cap());
    holds.0.push(hold.ok_or(Full::Key { held, cap })?);
    Ok(holds)
}

/// Which undelivered allowance had no room in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Full {
    /// The key's (`max_undelivered_bytes` in the keys file).
    #[error("the key's clients hold {held} bytes drawn and unread (max_undelivered_bytes {cap})")]
    Key {
        /// Held now.
        held: usize,
        /// The cap.
        cap: usize,
    },
    /// The connection's (`max_undelivered_bytes_per_connection`).
    #[error(
        "this connection holds {held} bytes drawn and unread \
         (max_undelivered_bytes_per_connection {cap})"
    )]
    Connection {
        /// Held now.
        held: usize,
        /// The cap.
        cap: usize,
    },
}

impl Full {
    /// RESOURCE_EXHAUSTED saying which allowance is full; nothing was drawn.
    pub fn status(self, wanted: usize) -> tonic::Status {
        tonic::Status::resource_exhausted(format!(
            "{self}, no room for {wanted} more; nothing consumed: read the responses already \
             sent, or retry later"
        ))
    }
}

/// An [`Undelivered`] riding in a response's extensions (which must be `Clone`).
#[derive(Debug, Clone)]
pub struct Ticket(Arc<Mutex<Option<Undelivered>>>);

impl Ticket {
    /// Wraps `undelivered` for the extensions.
    pub fn new(undelivered: Undelivered) -> Self {
        Self(Arc::new(Mutex::new(Some(undelivered))))
    }

    fn take(&self) -> Option<Undelivered> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
    }
}

/// Marks the bytes of `response` delivered, for callers that use the service in process,
/// with no transport to take them (tests, fuzzing, benchmarks).
pub fn delivered_in_process<T>(response: &mut tonic::Response<T>) {
    if let Some(pending) = response.extensions_mut().remove::<Ticket>().and_then(|t| t.take()) {
        pending.delivered();
    }
}

/// Keeps each response's [`Undelivered`] with its body until the body ends.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeliveryLayer;

impl<S> tower::Layer<S> for DeliveryLayer {
    type Service = Delivery<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Delivery { inner }
    }
}

/// The service [`DeliveryLayer`] makes.
#[derive(Debug, Clone)]
pub struct Delivery<S> {
    inner: S,
}

impl<S, ReqBody, ResBody> tower::Service<http::Request<ReqBody>> for Delivery<S>
where
    S: tower::Service<http::Request<ReqBody>, Response = http::Response<ResBody>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<Delivering<ResBody>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<ReqBody>) -> Self::Future {
        let connection = ConnectionInfo::of(request.extensions()).cloned();
        let response = self.inner.call(request);
        Box::pin(async move {
            let mut response = response.await?;
            let pending = response.extensions_mut().remove::<Ticket>().and_then(|t| t.take());
            // A response with entropy in it waits to be sent until it is delivered: the
            // connection's send timeout watches it.
            let sending = pending.as_ref().and(connection.as_ref()).map(ConnectionInfo::sending);
            Ok(response.map(|body| Delivering { body, pending, _sending: sending }))
        })
    }
}

/// A response body that holds its [`Undelivered`] until the body ends.
#[derive(Debug)]
pub struct Delivering<B> {
    body: B,
    pending: Option<Undelivered>,
    _sending: Option<Sending>,
}

impl<B: http_body::Body + Unpin> http_body::Body for Delivering<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let frame = Pin::new(&mut self.body).poll_frame(cx);
        // The end is the trailers, the end of the body, or a last frame after which the body
        // says it has ended: hyper's HTTP/1.1 writer (gRPC-Web, whose trailers travel in the
        // data) stops polling then, without asking for the `None`.
        let ended = match &frame {
            Poll::Ready(None) => true,
            Poll::Ready(Some(Ok(frame))) => frame.is_trailers() || self.body.is_end_stream(),
            _ => false,
        };
        if ended && let Some(pending) = self.pending.take() {
            pending.delivered();
            self._sending = None;
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
