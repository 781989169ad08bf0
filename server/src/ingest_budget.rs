//! Memory that unauthenticated ingest peers can make the gateway hold.
//!
//! A Publish request is authenticated by the MAC over its whole message, so its body must be
//! received before anything can be checked: on plaintext ingest, 2 connections × 256 partial
//! 1 MiB publishes once held 560 MB. [`IngestBudget`] wraps the IngestService: every request
//! body draws its bytes from one budget shared by all ingest requests
//! (`ingest_max_buffered_bytes`), a frame's worth before each read. When the budget is spent,
//! bodies stop being read; HTTP/2 flow control then stops the senders at their windows, which
//! are small on ingest (see `server.rs`). A request's share returns when its body is dropped
//! (decoded or abandoned). With the ingest connection cap this bounds what peers without a
//! key can pin: the budget, plus each connection's window.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::PollSemaphore;
use tonic::body::Body;
use tonic::server::NamedService;

/// Permits taken before reading a frame: the largest DATA frame a peer may send us (HTTP/2's
/// default SETTINGS_MAX_FRAME_SIZE, which the gateway keeps).
pub const FRAME_BYTES: usize = 16 << 10;

/// Wraps a service so its request bodies draw from a shared byte budget.
#[derive(Debug, Clone)]
pub struct IngestBudget<S> {
    inner: S,
    budget: Arc<Semaphore>,
}

impl<S> IngestBudget<S> {
    /// `inner` with request bodies limited to `bytes` in all.
    pub fn new(inner: S, bytes: usize) -> Self {
        Self { inner, budget: Arc::new(Semaphore::new(bytes.max(FRAME_BYTES))) }
    }

    /// Bytes of request bodies held now.
    pub fn held(&self, capacity: usize) -> usize {
        capacity.saturating_sub(self.budget.available_permits())
    }
}

impl<S: NamedService> NamedService for IngestBudget<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> tower::Service<http::Request<Body>> for IngestBudget<S>
where
    S: tower::Service<http::Request<Body>, Error = Infallible>,
{
    type Response = S::Response;
    type Error = Infallible;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let budget = PollSemaphore::new(self.budget.clone());
        self.inner
            .call(request.map(|body| Body::new(Budgeted { body, budget, held: None, ready: None })))
    }
}

/// A request body that takes a frame's worth of budget before each read.
struct Budgeted {
    body: Body,
    budget: PollSemaphore,
    /// What this body's frames hold; returned when it drops.
    held: Option<OwnedSemaphorePermit>,
    /// Taken for the next frame, not yet read.
    ready: Option<OwnedSemaphorePermit>,
}

impl http_body::Body for Budgeted {
    type Data = prost::bytes::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        if this.ready.is_none() && !this.body.is_end_stream() {
            let n = u32::try_from(FRAME_BYTES).unwrap_or(u32::MAX);
            // `None` only if the semaphore closed, which it never does.
            this.ready = ready!(this.budget.poll_acquire_many(cx, n));
        }
        let frame = ready!(Pin::new(&mut this.body).poll_frame(cx));
        if let Some(mut permit) = this.ready.take() {
            // Keep what the frame holds, give back the rest of the frame's worth.
            let len = match &frame {
                Some(Ok(f)) => f.data_ref().map_or(0, prost::bytes::Buf::remaining),
                _ => 0,
            };
            let kept = permit.split(len.min(FRAME_BYTES));
            drop(permit);
            match (&mut this.held, kept) {
                (Some(held), Some(kept)) => held.merge(kept),
                (held @ None, kept) => *held = kept,
                (Some(_), None) => {}
            }
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
