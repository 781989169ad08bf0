//! Which calls keep a connection busy for the idle timeout: a tower layer that counts a call
//! from the moment its request has fully arrived *and* proved a key (or, on ingest, a verified
//! chunk) to the end of its response body (see [`super::connection`] on idleness).
//!
//! The layer puts a [`CallSlot`] in each request's extensions; what authenticates the call
//! (the API-key interceptor, the ingest handler once a chunk verifies) calls [`authenticated`],
//! which also marks the connection proven ([`super::admission`]). A call that never does (a
//! health check, a watch, reflection, a refused call) never counts, however often it comes.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::connection::{Activity, CallGuard, ConnectionInfo};

/// Counts each call against its connection's [`Activity`], from the request until the
/// response body is dropped.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TrackCallsLayer;

impl<S> tower::Layer<S> for TrackCallsLayer {
    type Service = TrackCalls<S>;

    fn layer(&self, inner: S) -> Self::Service {
        TrackCalls { inner }
    }
}

/// The service [`TrackCallsLayer`] makes.
#[derive(Debug, Clone)]
pub(crate) struct TrackCalls<S> {
    inner: S,
}

impl<S, ResBody> tower::Service<http::Request<tonic::body::Body>> for TrackCalls<S>
where
    S: tower::Service<http::Request<tonic::body::Body>, Response = http::Response<ResBody>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<Tracked<ResBody>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<tonic::body::Body>) -> Self::Future {
        let call = ConnectionInfo::of(request.extensions()).map(|info| {
            Arc::new(CallSlot {
                activity: info.activity.clone(),
                state: std::sync::Mutex::new(SlotState::Waiting {
                    arrived: false,
                    authenticated: false,
                }),
            })
        });
        let request = match &call {
            // The call starts when the request body ends (see `Arriving`) if it authenticated.
            Some(slot) => {
                request.extensions_mut().insert(slot.clone());
                request
                    .map(|body| tonic::body::Body::new(Arriving { body, slot: Some(slot.clone()) }))
            }
            None => request,
        };
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await?;
            Ok(response.map(|body| Tracked { body, _call: call.map(CallEnd) }))
        })
    }
}

/// Where a call stands: not yet both arrived and authenticated, in progress, or over.
#[derive(Debug)]
enum SlotState {
    Waiting { arrived: bool, authenticated: bool },
    Active(#[allow(dead_code)] CallGuard),
    Over,
}

/// The call of one request, shared by its request body and whatever authenticates it (which
/// start it) and its response body (which ends it).
#[derive(Debug)]
pub(crate) struct CallSlot {
    activity: Arc<Activity>,
    state: std::sync::Mutex<SlotState>,
}

impl CallSlot {
    /// Marks the call authenticated (it counts as activity once its request has fully
    /// arrived) and its connection proven. Found in a request's extensions as `Arc<CallSlot>`.
    pub(crate) fn authenticated(&self) {
        self.activity.prove();
        self.started();
    }

    /// As [`Self::authenticated`], by a call with the API key named `key` (the listener counts
    /// each key's connections when it must choose one to close).
    pub(crate) fn authenticated_as(&self, key: &str) {
        self.activity.prove_as(key);
        self.started();
    }

    fn started(&self) {
        self.set(|state| match state {
            SlotState::Waiting { arrived: true, .. } => {
                Some(SlotState::Active(self.activity.call_started()))
            }
            SlotState::Waiting { arrived: false, .. } => {
                Some(SlotState::Waiting { arrived: false, authenticated: true })
            }
            _ => None,
        });
    }

    fn set(&self, next: impl FnOnce(&SlotState) -> Option<SlotState>) {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(next) = next(&state) {
            *state = next;
        }
    }
}

/// Ends the call when the response body is dropped.
#[derive(Debug)]
struct CallEnd(Arc<CallSlot>);

impl Drop for CallEnd {
    fn drop(&mut self) {
        self.0.set(|_| Some(SlotState::Over));
    }
}

/// A request body that starts its call once it has fully arrived.
struct Arriving {
    body: tonic::body::Body,
    slot: Option<Arc<CallSlot>>,
}

impl Arriving {
    fn arrived(&mut self) {
        if let Some(slot) = self.slot.take() {
            let activity = slot.activity.clone();
            slot.set(|state| match state {
                SlotState::Waiting { authenticated: true, .. } => {
                    Some(SlotState::Active(activity.call_started()))
                }
                SlotState::Waiting { authenticated: false, .. } => {
                    Some(SlotState::Waiting { arrived: true, authenticated: false })
                }
                _ => None,
            });
        }
    }
}

impl http_body::Body for Arriving {
    type Data = prost::bytes::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let frame = Pin::new(&mut self.body).poll_frame(cx);
        if matches!(frame, Poll::Ready(None)) || self.body.is_end_stream() {
            self.arrived();
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

/// A response body that holds its call open until dropped.
#[derive(Debug)]
pub(crate) struct Tracked<B> {
    body: B,
    _call: Option<CallEnd>,
}

impl<B: http_body::Body + Unpin> http_body::Body for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
