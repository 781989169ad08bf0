//! What the feeder's consumers (the kernel feed, EGD clients) take bytes from.

use std::future::Future;

use zeroize::Zeroizing;

/// The supply has closed: the feeder is shutting down, or gave up on the gateway for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the entropy supply is closed")]
pub struct Closed;

/// Health-tested bytes, each handed out once. Bytes handed out are the caller's alone: no other
/// caller (kernel feed or EGD client) ever gets them.
pub trait Entropy: Send + Sync + 'static {
    /// Exactly `n` bytes, waiting for them as long as it takes (the caller bounds the wait).
    /// Cancel-safe: a `take` dropped before it returns hands out nothing and loses nothing.
    fn take(&self, n: usize) -> impl Future<Output = Result<Zeroizing<Vec<u8>>, Closed>> + Send;

    /// At most `max` bytes that are ready now, without waiting (possibly none).
    fn take_now(&self, max: usize) -> Zeroizing<Vec<u8>>;

    /// Bytes ready now (what `take_now` could hand out at once).
    fn available(&self) -> usize;
}
