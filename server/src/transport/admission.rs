//! How many connections a listener holds, and who gives way when it is full.
//!
//! Each admitted TCP connection holds a place ([`Slot`]: a semaphore permit and its place in the
//! open-connection gauge) from accept, before any TLS handshake, until its socket is dropped.
//! When every place is taken, a new connection takes the place of the oldest connection that
//! has never made an authenticated call (*unproven*: it has shown no key, or on ingest no
//! verified chunk), which is closed at its next turn. On listeners that allow it (the public
//! one, where a key is all it takes to be proven), when every connection is proven, the one
//! that has been without a call in progress the longest gives way instead; when every one has a
//! call in progress, one of the key holding the most places gives way if that key holds more
//! than its share (the places over the keys present plus the newcomer's); when no key does (or
//! on ingest, when every connection is proven), the new connection is closed at once, before
//! any HTTP/2 exchange. So peers without a key cannot keep clients that have one out by
//! filling the listener (a flood of half-open connections, or health checks that never end), a
//! client with a key cannot either by opening connections it does not use, and the number of
//! sockets never exceeds the cap.
//!
//! When the listener's request allowance is full, [`Admission::relieve`] closes the connection
//! holding the most of it: one that never authenticated if any holds some, otherwise (on
//! listeners that ask for it: the public one, where a key is all it takes) any connection, so a
//! client with a key cannot keep other clients' calls out by leaving its own answers unread.
//!
//! Refusals and accept errors (out of descriptors, most often) are logged at most once a second
//! with a count; accept errors back off [`ACCEPT_BACKOFF`] instead of spinning.

use std::collections::{HashMap, VecDeque};

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use entropy_ops::Throttle;
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

use super::connection::{Activity, Conn, ConnectionLimits, Slot};
use crate::metrics::ConnectionMetrics;

/// How long to wait after an accept error before accepting again.
pub(crate) const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);
/// At most one connection is closed this often to relieve a full request allowance.
pub(crate) const RELIEF_INTERVAL: Duration = Duration::from_millis(10);

/// Admits connections to one listener.
#[derive(Debug, Clone)]
pub struct Admission {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    listener: &'static str,
    slots: Arc<Semaphore>,
    max: usize,
    limits: ConnectionLimits,
    metrics: ConnectionMetrics,
    /// Connections not known to be proven, oldest first (proven and closed ones are dropped
    /// from it as they are met).
    unproven: Mutex<VecDeque<Weak<Activity>>>,
    /// Every connection, when authenticated ones may be closed to relieve the request
    /// allowance (closed ones are dropped from it when it grows past twice the cap).
    everyone: Option<Mutex<Vec<Weak<Activity>>>>,
    /// When pressure was last relieved.
    relieved: Mutex<Option<std::time::Instant>>,
    log: Throttle,
}

impl Admission {
    /// At most `max` open connections on `listener`, each under `limits`, counted in `metrics`;
    /// with `authenticated_give_way`, a connection that authenticated may be closed to admit a
    /// new one when it has no call in progress, or to relieve the request allowance when none
    /// that never authenticated holds any of it.
    pub fn new(
        listener: &'static str,
        max: usize,
        limits: ConnectionLimits,
        metrics: ConnectionMetrics,
        authenticated_give_way: bool,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                listener,
                slots: Arc::new(Semaphore::new(max)),
                max,
                limits,
                metrics,
                unproven: Mutex::new(VecDeque::new()),
                everyone: authenticated_give_way.then(|| Mutex::new(Vec::new())),
                relieved: Mutex::new(None),
                log: Throttle::default(),
            }),
        }
    }

    /// The listener's name ("public", "ingest").
    pub fn listener(&self) -> &'static str {
        self.inner.listener
    }

    /// The per-connection limits.
    pub fn limits(&self) -> &ConnectionLimits {
        &self.inner.limits
    }

    /// `tcp`, admitted, or `None` (and `tcp` closed) when every place is held by a proven
    /// connection.
    pub(crate) fn admit(&self, tcp: TcpStream) -> Option<Conn<TcpStream>> {
        let inner = &self.inner;
        let slot = match inner.slots.clone().try_acquire_owned() {
            Ok(permit) => Slot { _permit: permit, _open: inner.metrics.open() },
            Err(_) => match self
                .evict_oldest_unproven()
                .or_else(|| self.evict_longest_idle())
                .or_else(|| self.evict_from_largest_key())
            {
                Some(slot) => {
                    inner.metrics.evicted();
                    slot
                }
                None => {
                    inner.metrics.refused();
                    if let Some(held_back) = inner.log.allow("full") {
                        tracing::warn!(
                            listener = inner.listener,
                            max = inner.max,
                            held_back,
                            "connection limit reached and every connection is authenticated; \
                             closing new connections"
                        );
                    }
                    return None; // dropping `tcp` closes it
                }
            },
        };
        let activity = Arc::new(Activity::new(slot, &inner.limits));
        let mut unproven = inner.unproven.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Forget connections that closed or proved themselves (a weak reference keeps a closed
        // connection's record allocated): from the front at every admission, all of them when
        // the queue holds far more than the listener can.
        while unproven.front().is_some_and(|w| w.upgrade().is_none_or(|a| a.is_proven())) {
            unproven.pop_front();
        }
        if unproven.len() > 2 * inner.max + 64 {
            unproven.retain(|w| w.upgrade().is_some_and(|a| !a.is_proven()));
        }
        unproven.push_back(Arc::downgrade(&activity));
        drop(unproven);
        if let Some(everyone) = &inner.everyone {
            let mut everyone = everyone.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if everyone.len() > 2 * inner.max + 64 {
                everyone.retain(|w| w.strong_count() > 0);
            }
            everyone.push(Arc::downgrade(&activity));
        }
        Some(Conn::new(tcp, activity, &inner.limits, inner.metrics.stalled()))
    }

    /// On listeners that allow it, takes the place of the connection that has been without a
    /// call in progress the longest, telling it to close.
    fn evict_longest_idle(&self) -> Option<Slot> {
        let everyone = self.inner.everyone.as_ref()?;
        let everyone = everyone.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let idlest = everyone
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|a| !a.is_evicted())
            .filter_map(|a| Some((a.idle_for()?, a)))
            .max_by_key(|(idle, _)| *idle)?
            .1;
        drop(everyone);
        let slot = idlest.evict()?;
        if let Some(held_back) = self.inner.log.allow("evicted idle") {
            tracing::info!(
                listener = self.inner.listener,
                held_back,
                "listener full of authenticated connections: closed the one without a call the \
                 longest to admit a new one"
            );
        }
        Some(slot)
    }

    /// On listeners that allow it, when every connection has a call in progress: takes the
    /// place of the oldest connection of the key holding the most places, if that is more than
    /// its share (the places over the keys present and the newcomer's), telling it to close.
    /// So one key cannot hold every place with busy connections while another key is refused.
    fn evict_from_largest_key(&self) -> Option<Slot> {
        let everyone = self.inner.everyone.as_ref()?;
        let everyone = everyone.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let live: Vec<Arc<Activity>> = everyone
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|a| !a.is_evicted() && a.key().is_some())
            .collect();
        drop(everyone);
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for activity in &live {
            *counts.entry(activity.key().unwrap_or_default()).or_default() += 1;
        }
        let (key, held) = counts.iter().max_by_key(|(_, n)| **n).map(|(k, n)| (*k, *n))?;
        if held <= self.inner.max.div_ceil(counts.len() + 1) {
            return None; // every key within its share: the newcomer is refused
        }
        let oldest = live.iter().find(|a| a.key() == Some(key))?;
        let slot = oldest.evict()?;
        if let Some(held_back) = self.inner.log.allow("evicted busy") {
            tracing::info!(
                listener = self.inner.listener,
                held_back,
                key,
                places = held,
                "listener full of busy connections: closed one of the key holding the most \
                 places to admit a new one"
            );
        }
        Some(slot)
    }

    /// Takes the place of the oldest live unproven connection, telling it to close.
    fn evict_oldest_unproven(&self) -> Option<Slot> {
        let mut unproven =
            self.inner.unproven.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        while let Some(weak) = unproven.pop_front() {
            let Some(activity) = weak.upgrade() else { continue };
            if activity.is_proven() {
                continue;
            }
            if let Some(slot) = activity.evict() {
                if let Some(held_back) = self.inner.log.allow("evicted") {
                    tracing::info!(
                        listener = self.inner.listener,
                        held_back,
                        "listener full: closed the oldest connection that never authenticated \
                         to admit a new one"
                    );
                }
                return Some(slot);
            }
        }
        None
    }

    /// Relieves pressure on the listener's request allowance: closes the connection that holds
    /// the most of it among those that never authenticated (a peer without a key keeping calls
    /// open), or when none holds any, on listeners that allow it, among all (a client with a key
    /// leaving its answers unread); at most once every [`RELIEF_INTERVAL`].
    pub(crate) fn relieve(&self) {
        let inner = &self.inner;
        {
            let mut last = inner.relieved.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if last.is_some_and(|t| t.elapsed() < RELIEF_INTERVAL) {
                return;
            }
            *last = Some(std::time::Instant::now());
        }
        let largest = |list: &mut dyn Iterator<Item = &Weak<Activity>>, proven: bool| {
            list.filter_map(Weak::upgrade)
                .filter(|a| (proven || !a.is_proven()) && !a.is_evicted())
                .max_by_key(|a| a.requests.held())
                .filter(|a| a.requests.held() > 0)
        };
        let unproven = inner.unproven.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut chosen = largest(&mut unproven.iter(), false).map(|a| (a, "never authenticated"));
        drop(unproven);
        if chosen.is_none()
            && let Some(everyone) = &inner.everyone
        {
            let everyone = everyone.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            chosen = largest(&mut everyone.iter(), true).map(|a| (a, "authenticated"));
        }
        if let Some((activity, which)) = chosen {
            drop(activity.evict()); // its place goes back to the listener
            inner.metrics.evicted();
            if let Some(held_back) = inner.log.allow("relieved") {
                tracing::info!(
                    listener = inner.listener,
                    held_back,
                    "request allowance full: closed the connection that held the most of it \
                     ({which})"
                );
            }
        }
    }

    /// Notes an accept error; says how long to back off.
    pub(crate) fn accept_failed(&self, error: &std::io::Error) -> Duration {
        if let Some(held_back) = self.inner.log.allow("accept") {
            tracing::warn!(
                held_back,
                "{}: accept failed; backing off: {error}",
                self.inner.listener
            );
        }
        ACCEPT_BACKOFF
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::GatewayMetrics;

    fn limits() -> ConnectionLimits {
        ConnectionLimits {
            idle_timeout: None,
            send_timeout: None,
            max_undelivered_bytes: 1 << 20,
            max_buffered_request_bytes: 1 << 16,
        }
    }

    async fn pair(listener: &tokio::net::TcpListener) -> TcpStream {
        let addr = listener.local_addr().expect("addr");
        let (client, _) = tokio::join!(TcpStream::connect(addr), listener.accept());
        client.expect("connect")
    }

    #[tokio::test]
    async fn a_full_listener_evicts_the_oldest_unproven_connection_and_never_a_proven_one() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let metrics = GatewayMetrics::new();
        let admission = Admission::new("test", 2, limits(), metrics.connections("public"), false);
        let proven = admission.admit(pair(&listener).await).expect("room");
        proven.activity().prove();
        let unproven = admission.admit(pair(&listener).await).expect("room");
        assert!(!unproven.activity().is_evicted());

        let newcomer = admission.admit(pair(&listener).await).expect("takes a place");
        assert!(unproven.activity().is_evicted(), "the unproven connection gave way");
        assert!(!proven.activity().is_evicted());
        newcomer.activity().prove();

        assert!(admission.admit(pair(&listener).await).is_none(), "all proven: refused");
        drop(proven);
        assert!(admission.admit(pair(&listener).await).is_some(), "a place came back");
    }

    #[tokio::test]
    async fn relief_closes_the_largest_unproven_holder_then_if_allowed_the_largest_of_all() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let metrics = GatewayMetrics::new();
        for authenticated_give_way in [false, true] {
            let admission = Admission::new(
                "test",
                8,
                limits(),
                metrics.connections("public"),
                authenticated_give_way,
            );
            let conns: Vec<_> = futures_util::future::join_all(
                (0..4).map(|_| async { admission.admit(pair(&listener).await).expect("room") }),
            )
            .await;
            // Two proven (holding 40 and 30 KiB), two not (20 KiB and nothing).
            let holds: Vec<_> = [40usize, 30, 20]
                .iter()
                .zip(&conns)
                .map(|(kib, c)| c.activity().requests.try_hold(kib << 10).expect("room"))
                .collect();
            conns[0].activity().prove();
            conns[1].activity().prove();
            let evicted = || conns.iter().map(|c| c.activity().is_evicted()).collect::<Vec<_>>();

            admission.relieve();
            assert_eq!(evicted(), [false, false, true, false], "the unproven holder goes first");
            tokio::time::sleep(RELIEF_INTERVAL * 2).await;
            admission.relieve();
            let proven_too = [authenticated_give_way, false, true, false];
            assert_eq!(evicted(), proven_too, "then the largest holder, where allowed");
            admission.relieve();
            assert_eq!(evicted(), proven_too, "at most once per interval");
            drop(holds);
        }
    }

    #[tokio::test]
    async fn where_allowed_a_full_listener_of_proven_connections_evicts_the_longest_idle() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let metrics = GatewayMetrics::new();
        let admission = Admission::new("test", 3, limits(), metrics.connections("public"), true);
        let busy = admission.admit(pair(&listener).await).expect("room");
        let idle_long = admission.admit(pair(&listener).await).expect("room");
        tokio::time::sleep(Duration::from_millis(20)).await;
        let idle_short = admission.admit(pair(&listener).await).expect("room");
        for conn in [&busy, &idle_long, &idle_short] {
            conn.activity().prove();
        }
        let call = busy.activity().call_started();
        // idle_long's last call ended before idle_short's.
        drop(idle_long.activity().call_started());
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(idle_short.activity().call_started());

        let newcomer = admission.admit(pair(&listener).await).expect("takes a place");
        assert!(idle_long.activity().is_evicted(), "the longest idle gave way");
        assert!(!busy.activity().is_evicted() && !idle_short.activity().is_evicted());
        newcomer.activity().prove();
        let _newcomer_call = newcomer.activity().call_started();
        let _short_call = idle_short.activity().call_started();
        assert!(
            admission.admit(pair(&listener).await).is_none(),
            "every connection has a call in progress: refused"
        );
        drop(call);
        assert!(admission.admit(pair(&listener).await).is_some(), "busy is idle now");
        assert!(busy.activity().is_evicted());
    }

    #[tokio::test]
    async fn where_allowed_a_listener_full_of_busy_connections_takes_places_from_the_largest_key() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let metrics = GatewayMetrics::new();
        let admission = Admission::new("test", 4, limits(), metrics.connections("public"), true);
        let mut conns = Vec::new();
        let mut calls = Vec::new();
        for key in ["a", "a", "a", "b"] {
            let conn = admission.admit(pair(&listener).await).expect("room");
            conn.activity().prove_as(key);
            calls.push(conn.activity().call_started());
            conns.push(conn);
        }
        // Key a holds 3 of 4 places, more than its share (4 over a, b and the newcomer: 2).
        let newcomer = admission.admit(pair(&listener).await).expect("a takes a place");
        assert!(conns[0].activity().is_evicted(), "a's oldest gave way");
        assert!(conns[1..].iter().all(|c| !c.activity().is_evicted()));
        newcomer.activity().prove_as("c");
        calls.push(newcomer.activity().call_started());
        // a 2, b 1, c 1: a's share is 1 now (4 over three keys and a newcomer).
        let fourth = admission.admit(pair(&listener).await).expect("a gives way again");
        assert!(conns[1].activity().is_evicted() && !conns[2].activity().is_evicted());
        fourth.activity().prove_as("d");
        calls.push(fourth.activity().call_started());
        // One place each: every key within its share, the next one is refused.
        assert!(admission.admit(pair(&listener).await).is_none(), "refused");
        assert!(!conns[2].activity().is_evicted() && !conns[3].activity().is_evicted());
        drop(calls);
    }
}
