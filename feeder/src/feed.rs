//! Feeding the kernel: the daemon's loop, which writes only when the kernel asks (or once per
//! `refresh_interval_ms`, if set), and the one-shot boot mode, which writes a given amount
//! whether asked or not.
//!
//! Each write is `feed_bytes` taken from the supply (each byte handed out once: no other
//! consumer ever gets it) and credited `feed_bytes * credit_bits_per_byte` bits. The loop never
//! writes while the kernel does not ask, unless a refresh is due: on kernels from 5.18 on the
//! kernel asks only until its CRNG is ready (kernel/mod.rs), so without a refresh a running
//! system is fed once at boot and then left alone, which is what it wants.

use std::io;
use std::time::Duration;

use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use crate::entropy::{Closed, Entropy};
use crate::kernel::KernelRng;
use crate::metrics::Metrics;

/// How the kernel is fed (from the config).
#[derive(Debug, Clone, Copy)]
pub struct FeedOptions {
    /// Bytes per write, 1..=4096.
    pub feed_bytes: usize,
    /// Credit per byte, 0..=8 bits.
    pub credit_bits_per_byte: u32,
    /// Also write once per this interval, asked or not.
    pub refresh_interval: Option<Duration>,
}

impl FeedOptions {
    /// The credit of a write of `len` bytes.
    pub fn credit_bits(&self, len: usize) -> u32 {
        // len <= 4096 and the credit <= 8: at most 32768.
        len as u32 * self.credit_bits_per_byte
    }
}

/// The feed ended with a failure (the feeder exits 1).
#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    /// Polling or writing the random device failed (EPERM says it needs CAP_SYS_ADMIN).
    #[error("feeding the kernel: {0}")]
    Kernel(#[from] io::Error),
    /// The supply closed before the feed was done.
    #[error("the entropy supply closed")]
    Closed(#[from] Closed),
}

/// Feeds `kernel` from `entropy` whenever it asks (and on each refresh), until `shutdown`.
pub async fn run<K: KernelRng, E: Entropy>(
    kernel: &K,
    entropy: &E,
    options: FeedOptions,
    metrics: &Metrics,
    shutdown: &CancellationToken,
) -> Result<(), FeedError> {
    let mut refresh = options.refresh_interval.map(|every| {
        let mut tick = tokio::time::interval_at(Instant::now() + every, every);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        tick
    });
    loop {
        let refresh_due = async {
            match refresh.as_mut() {
                Some(tick) => {
                    tick.tick().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            asked = kernel.wait_until_asked() => {
                asked?;
                metrics.kernel_asks.increment(1);
            }
            () = refresh_due => {}
        }
        let bytes = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            taken = entropy.take(options.feed_bytes) => match taken {
                Ok(bytes) => bytes,
                // The supply closes only at shutdown.
                Err(Closed) => return Ok(()),
            },
        };
        write(kernel, &bytes, options, metrics)?;
        // A refresh write counts as this interval's: the next one is a whole interval away.
        if let Some(tick) = refresh.as_mut() {
            tick.reset();
        }
    }
}

fn write<K: KernelRng>(
    kernel: &K,
    bytes: &[u8],
    options: FeedOptions,
    metrics: &Metrics,
) -> io::Result<()> {
    let credit = options.credit_bits(bytes.len());
    kernel.add_entropy(bytes, credit)?;
    metrics.kernel_fed.increment(bytes.len() as u64);
    metrics.kernel_credited.increment(u64::from(credit));
    Ok(())
}

/// Boot mode: feeds `total` bytes in writes of `feed_bytes` (the last one shorter if need
/// be), asked or not, adding each write to `fed`. The caller bounds it in time (main:
/// `boot_timeout_ms`) and reads `fed` when the bound cuts it short; dropping it loses no byte
/// (the supply's take is cancel-safe).
pub async fn boot<K: KernelRng, E: Entropy>(
    kernel: &K,
    entropy: &E,
    total: u64,
    options: FeedOptions,
    metrics: &Metrics,
    fed: &mut u64,
) -> Result<(), FeedError> {
    while *fed < total {
        let len = (total - *fed).min(options.feed_bytes as u64) as usize;
        let bytes = entropy.take(len).await?;
        write(kernel, &bytes, options, metrics)?;
        *fed += len as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::sync::Semaphore;
    use zeroize::Zeroizing;

    use super::*;

    /// A kernel that asks once per permit the test adds, and records each write.
    struct FakeKernel {
        asks: Semaphore,
        writes: Mutex<Vec<(Vec<u8>, u32)>>,
    }

    impl KernelRng for FakeKernel {
        async fn wait_until_asked(&self) -> io::Result<()> {
            let permit = self.asks.acquire().await.map_err(io::Error::other)?;
            permit.forget();
            Ok(())
        }

        fn add_entropy(&self, bytes: &[u8], credit_bits: u32) -> io::Result<()> {
            self.writes
                .lock()
                .map_err(|_| io::Error::other("poisoned"))?
                .push((bytes.to_vec(), credit_bits));
            Ok(())
        }
    }

    impl Default for FakeKernel {
        fn default() -> Self {
            Self { asks: Semaphore::new(0), writes: Mutex::default() }
        }
    }

    impl FakeKernel {
        fn writes(&self) -> Vec<(Vec<u8>, u32)> {
            self.writes.lock().expect("writes").clone()
        }
    }

    /// Counting bytes 0, 1, 2, ...: each handed out once, in order.
    #[derive(Default)]
    struct Counting(AtomicUsize);

    impl Entropy for Counting {
        async fn take(&self, n: usize) -> Result<Zeroizing<Vec<u8>>, Closed> {
            Ok(self.take_now(n))
        }
        fn take_now(&self, max: usize) -> Zeroizing<Vec<u8>> {
            let start = self.0.fetch_add(max, Ordering::SeqCst);
            Zeroizing::new((start..start + max).map(|i| i as u8).collect())
        }
        fn available(&self) -> usize {
            usize::MAX
        }
    }

    fn options(refresh: Option<Duration>) -> FeedOptions {
        FeedOptions { feed_bytes: 64, credit_bits_per_byte: 2, refresh_interval: refresh }
    }

    #[tokio::test(start_paused = true)]
    async fn nothing_is_written_until_the_kernel_asks_then_one_write_per_ask() {
        let kernel = FakeKernel::default();
        let entropy = Counting::default();
        let shutdown = CancellationToken::new();
        let metrics = Metrics::detached();
        let feeding = run(&kernel, &entropy, options(None), &metrics, &shutdown);
        tokio::pin!(feeding);
        let idle = tokio::time::timeout(Duration::from_secs(3600), &mut feeding).await;
        assert!(idle.is_err(), "the loop ended by itself");
        assert!(kernel.writes().is_empty(), "wrote while the kernel did not ask");
        kernel.asks.add_permits(3);
        let _ = tokio::time::timeout(Duration::from_secs(3600), &mut feeding).await;
        let writes = kernel.writes();
        assert_eq!(writes.len(), 3, "one write per ask");
        for (i, (bytes, credit)) in writes.iter().enumerate() {
            assert_eq!(bytes.len(), 64);
            assert_eq!(*credit, 128, "64 bytes at 2 bits each");
            assert_eq!(bytes[0] as usize, (i * 64) % 256, "each byte once, in order");
        }
        shutdown.cancel();
        feeding.await.expect("clean stop");
    }

    #[tokio::test(start_paused = true)]
    async fn a_refresh_interval_writes_once_per_interval_unasked() {
        let kernel = FakeKernel::default();
        let entropy = Counting::default();
        let shutdown = CancellationToken::new();
        let metrics = Metrics::detached();
        let opts = options(Some(Duration::from_secs(10)));
        let feeding = run(&kernel, &entropy, opts, &metrics, &shutdown);
        tokio::pin!(feeding);
        let _ = tokio::time::timeout(Duration::from_millis(9_990), &mut feeding).await;
        assert!(kernel.writes().is_empty(), "a refresh before its interval");
        let _ = tokio::time::timeout(Duration::from_millis(45_000), &mut feeding).await;
        assert_eq!(kernel.writes().len(), 5, "one write per 10 s over 55 s");
        shutdown.cancel();
        feeding.await.expect("clean stop");
    }

    #[test]
    fn the_credit_is_bytes_times_bits_per_byte() {
        for (feed_bytes, bits, want) in [(64, 2, 128), (4096, 8, 32768), (1, 0, 0), (7, 3, 21)] {
            let o = FeedOptions { feed_bytes, credit_bits_per_byte: bits, refresh_interval: None };
            assert_eq!(o.credit_bits(feed_bytes), want);
        }
    }

    #[tokio::test]
    async fn boot_feeds_the_total_in_feed_sized_writes_without_asking() {
        let kernel = FakeKernel::default(); // never asks
        let entropy = Counting::default();
        let mut fed = 0;
        let metrics = Metrics::detached();
        boot(&kernel, &entropy, 200, options(None), &metrics, &mut fed).await.expect("boot");
        let sizes: Vec<usize> = kernel.writes().iter().map(|(b, _)| b.len()).collect();
        assert_eq!(sizes, [64, 64, 64, 8]);
        assert_eq!(kernel.writes()[3].1, 16);
        assert_eq!(fed, 200);
    }
}
