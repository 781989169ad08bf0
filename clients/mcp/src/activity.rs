//! What keeps an HTTP connection open: a request head within the header timeout, then an
//! authenticated request in progress at least once every idle timeout.
//!
//! Each connection has an [`Activity`], found by the gate in the request's extensions. Every
//! request head counts as a head ([`Activity::head_arrived`]), refused ones too: a connection
//! that sends none within `http_header_timeout_ms` of accept (a half-open TLS handshake, an
//! HTTP/2 preface followed only by SETTINGS and PINGs, a first head trickled byte by byte) is
//! closed. Only requests that presented a valid token are *in progress* ([`Activity::request`]):
//! from the moment their body has fully arrived to the moment their response body is dropped, so
//! a long SSE stream of a session in use keeps its connection, while a body trickled forever
//! does not. A connection without one for `http_idle_timeout_ms` is closed, however often it
//! sends refused requests, PINGs or stray bytes: none of them is activity.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::body::Bytes;
use http_body::{Frame, SizeHint};
use tokio::time::Instant;

/// Heads seen and requests in progress on one connection.
#[derive(Debug)]
pub struct Activity {
    opened: Instant,
    heads: AtomicU64,
    in_progress: AtomicUsize,
    /// Milliseconds after `opened` when the last request in progress ended (0: none yet).
    idle_since_ms: AtomicU64,
}

impl Activity {
    /// A connection accepted now.
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            opened: Instant::now(),
            heads: AtomicU64::new(0),
            in_progress: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(0),
        })
    }

    /// A request head arrived (whatever becomes of the request).
    pub fn head_arrived(&self) {
        self.heads.fetch_add(1, Ordering::AcqRel);
    }

    /// When the connection is to be closed if nothing changes: `header` after accept while no
    /// head has arrived, `idle` after the last request in progress ended (or accept); `None`
    /// while a request is in progress.
    pub fn deadline(&self, header: Duration, idle: Duration) -> Option<Instant> {
        if self.in_progress.load(Ordering::Acquire) > 0 {
            return None;
        }
        let since = Duration::from_millis(self.idle_since_ms.load(Ordering::Acquire));
        let idle = self.opened + since + idle;
        if self.heads.load(Ordering::Acquire) == 0 {
            return Some(idle.min(self.opened + header));
        }
        Some(idle)
    }

    /// An authenticated request on this connection: it is in progress once `body` has fully
    /// arrived, until the response body the returned [`InProgress`] is put in is dropped.
    pub fn request(self: &Arc<Self>, body: Body) -> (Body, InProgress) {
        let slot = Arc::new(Slot { activity: self.clone(), state: Mutex::new(SlotState::Waiting) });
        let body = if http_body::Body::is_end_stream(&body) {
            slot.start();
            body
        } else {
            Body::new(Arriving { body, slot: Some(slot.clone()) })
        };
        (body, InProgress(slot))
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

#[derive(Debug)]
enum SlotState {
    Waiting,
    Active,
    Over,
}

/// One request's place in its connection's count, shared by the request body (which starts it)
/// and the response body (which ends it).
#[derive(Debug)]
struct Slot {
    activity: Arc<Activity>,
    state: Mutex<SlotState>,
}

impl Slot {
    fn start(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if matches!(*state, SlotState::Waiting) {
            self.activity.in_progress.fetch_add(1, Ordering::AcqRel);
            *state = SlotState::Active;
        }
    }

    fn end(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if matches!(*state, SlotState::Active) {
            // Stamp before the count can reach zero, so a deadline never pairs a zero count
            // with a stale stamp.
            self.activity.idle_since_ms.fetch_max(self.activity.now_ms(), Ordering::AcqRel);
            self.activity.in_progress.fetch_sub(1, Ordering::AcqRel);
        }
        *state = SlotState::Over;
    }
}

/// A request in progress; dropping it ends the request (keep it in the response body with
/// [`hold`]).
#[derive(Debug)]
pub struct InProgress(Arc<Slot>);

impl Drop for InProgress {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// `body` holding `held` (a request in progress, a permit) until it is dropped.
pub fn hold<T: Send + Unpin + 'static>(body: Body, held: T) -> Body {
    Body::new(Holding { body, _held: held })
}

/// A request body that starts its request once it has fully arrived.
struct Arriving {
    body: Body,
    slot: Option<Arc<Slot>>,
}

impl http_body::Body for Arriving {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let frame = Pin::new(&mut self.body).poll_frame(cx);
        if (matches!(frame, Poll::Ready(None)) || self.body.is_end_stream())
            && let Some(slot) = self.slot.take()
        {
            slot.start();
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A response body that holds something until it is dropped.
struct Holding<T> {
    body: Body,
    _held: T,
}

impl<T: Send + Unpin + 'static> http_body::Body for Holding<T> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: Duration = Duration::from_secs(5);
    const IDLE: Duration = Duration::from_secs(60);

    #[tokio::test(start_paused = true)]
    async fn no_head_closes_at_the_header_timeout_then_only_requests_keep_it() {
        let activity = Activity::new();
        let opened = Instant::now();
        assert_eq!(activity.deadline(HEADER, IDLE), Some(opened + HEADER));
        // A refused request: a head, but nothing in progress.
        activity.head_arrived();
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(activity.deadline(HEADER, IDLE), Some(opened + IDLE), "refusals do not count");
        let (_body, request) = activity.request(Body::empty());
        assert_eq!(activity.deadline(HEADER, IDLE), None, "an empty body has arrived at once");
        tokio::time::advance(Duration::from_secs(100)).await;
        drop(request);
        let ended = Instant::now();
        assert_eq!(activity.deadline(HEADER, IDLE), Some(ended + IDLE));
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_counts_once_its_body_has_arrived_until_its_response_is_dropped() {
        let activity = Activity::new();
        activity.head_arrived();
        let (tx, rx) = tokio::sync::mpsc::channel::<()>(1);
        let chunks = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|()| (Ok::<_, std::io::Error>(Bytes::new()), rx))
        });
        let (body, request) = activity.request(Body::from_stream(chunks));
        assert!(activity.deadline(HEADER, IDLE).is_some(), "still arriving: not in progress");
        drop(tx);
        let bytes = axum::body::to_bytes(body, 1024).await.expect("empty body");
        assert!(bytes.is_empty());
        assert_eq!(activity.deadline(HEADER, IDLE), None, "arrived: in progress");
        let response = hold(Body::from("sse"), request);
        assert_eq!(activity.deadline(HEADER, IDLE), None, "the response holds it");
        drop(response);
        assert!(activity.deadline(HEADER, IDLE).is_some());
    }
}
