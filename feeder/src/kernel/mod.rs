//! The kernel's RNG as the feeder sees it: something that says when it wants entropy, and
//! takes bytes with a credit. A trait ([`KernelRng`]) so the feed loop's rules are tested
//! against a fake; [`LinuxRandom`] is the real one over the random device.
//!
//! # When the kernel asks
//!
//! The kernel asks by making `/dev/random` *writable-ready*: `poll(2)` reports `POLLOUT`.
//! What that means depends on the kernel:
//!
//! - **Linux 5.18 and later** (`random_poll` in `drivers/char/random.c`): `POLLOUT` exactly
//!   while the CRNG is **not yet initialised** (the early-boot window); once it is ready the
//!   device reports `POLLIN` and never `POLLOUT` again. The kernel then never asks: credit
//!   no longer changes what it outputs. A feeder that should still mix fresh bytes in
//!   periodically sets `refresh_interval_ms`.
//! - **Linux 4.x to 5.17**: `POLLOUT` while the input pool's entropy estimate is below
//!   `/proc/sys/kernel/random/write_wakeup_threshold`; each feed raises the estimate by its
//!   credit, so the kernel asks again as it drains.
//!
//! `poll` is level-triggered: asking it after a feed says whether the kernel still asks,
//! which edge-triggered readiness (epoll, tokio's `AsyncFd`) would not. So the wait is a
//! blocking `poll` on tokio's blocking pool, in slices of [`POLL_SLICE`] so that a dropped
//! wait (shutdown) leaves no thread parked for longer than that.
//!
//! # Feeding
//!
//! `RNDADDENTROPY` (`ioctl.rs`) mixes the bytes into the input pool and credits the given
//! number of bits; it needs `CAP_SYS_ADMIN`. A plain `write(2)` to the device would mix
//! without credit, which never ends the early-boot wait.

mod ioctl;

use std::fs::{File, OpenOptions};
use std::future::Future;
use std::io;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use ioctl::{MAX_FEED_BYTES, RNDADDENTROPY};

/// How long one blocking `poll` waits before the waiting task looks again.
pub const POLL_SLICE: Duration = Duration::from_millis(500);

/// The kernel's RNG: when it asks, and how it takes bytes.
pub trait KernelRng: Send + Sync + 'static {
    /// Returns once the kernel asks for entropy (at once if it is asking now). Cancel-safe.
    fn wait_until_asked(&self) -> impl Future<Output = io::Result<()>> + Send;

    /// Mixes `bytes` into the kernel's pool, crediting `credit_bits` (at most 8 per byte).
    fn add_entropy(&self, bytes: &[u8], credit_bits: u32) -> io::Result<()>;
}

/// The random device (`/dev/random`), opened for writing.
#[derive(Debug, Clone)]
pub struct LinuxRandom {
    file: Arc<File>,
    path: PathBuf,
}

impl LinuxRandom {
    /// Opens `path` (the config's `random_device`) for writing; the error names the path.
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new().write(true).open(path).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot open random_device {}: {e}", path.display()))
        })?;
        Ok(Self { file: Arc::new(file), path: path.to_owned() })
    }

    /// Checks that this process may feed the kernel (`CAP_SYS_ADMIN`) with an empty
    /// `RNDADDENTROPY`, which mixes nothing and credits nothing: so a feeder without the
    /// capability fails at start, not at the first ask (which on a running kernel from 5.18 on
    /// may never come).
    pub fn check_access(&self) -> io::Result<()> {
        ioctl::add_entropy(self.file.as_fd(), &[], 0)
    }

    /// True when the kernel asks now, after waiting at most `timeout` for it (blocking).
    pub fn asking_within(&self, timeout: Duration) -> io::Result<bool> {
        poll_out(&self.file, timeout)
            .map_err(|e| io::Error::new(e.kind(), format!("poll {}: {e}", self.path.display())))
    }
}

fn poll_out(file: &File, timeout: Duration) -> io::Result<bool> {
    use rustix::event::{PollFd, PollFlags, Timespec};

    let mut fds = [PollFd::new(file, PollFlags::OUT)];
    let timeout = Timespec::try_from(timeout).map_err(|_| io::Error::other("poll timeout"))?;
    loop {
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(0) => return Ok(false),
            Ok(_) => {
                let got = fds[0].revents();
                if got.intersects(PollFlags::ERR | PollFlags::NVAL) {
                    return Err(io::Error::other(format!("poll reported {got:?}")));
                }
                return Ok(got.contains(PollFlags::OUT));
            }
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

impl KernelRng for LinuxRandom {
    async fn wait_until_asked(&self) -> io::Result<()> {
        loop {
            let this = self.clone();
            let asked = tokio::task::spawn_blocking(move || this.asking_within(POLL_SLICE))
                .await
                .map_err(|e| io::Error::other(format!("the poll thread failed: {e}")))??;
            if asked {
                return Ok(());
            }
        }
    }

    fn add_entropy(&self, bytes: &[u8], credit_bits: u32) -> io::Result<()> {
        ioctl::add_entropy(self.file.as_fd(), bytes, credit_bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opening_a_missing_device_names_it() {
        let e = LinuxRandom::open(Path::new("/nonexistent/random")).expect_err("missing");
        assert!(e.to_string().contains("random_device /nonexistent/random"), "{e}");
    }
}
