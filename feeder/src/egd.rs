//! The EGD server: the Entropy Gathering Daemon protocol on a Unix socket, so QEMU's `rng-egd`
//! backend gives a guest a virtio-rng that reads gateway bytes (and any other EGD client, such as
//! OpenSSL's `RAND_egd`, can read them too).
//!
//! # Protocol (as the EGD specifies it; every count is one byte, so at most 255)
//!
//! | command | request | reply |
//! |---|---|---|
//! | 0x00 entropy level | `00` | 4 bytes, big-endian: bits ready now (bytes ready × 8) |
//! | 0x01 read, non-blocking | `01 NN` | `MM` then MM bytes, MM <= NN: what is ready now |
//! | 0x02 read, blocking | `02 NN` | exactly NN bytes, once they are there (none for NN = 0) |
//! | 0x03 write entropy | `03 MM LL NN` + NN bytes | none: read, wiped, discarded |
//! | 0x04 report PID | `04` | `MM` then MM ASCII digits of this process's id |
//!
//! QEMU's `rng-egd` sends only 0x02, with NN <= 255 per request, several requests in a row
//! before it reads (one per 255 bytes the guest asks for); they wait in the socket until the
//! reply before them is written, and are answered in order.
//!
//! 0x03 is accepted (the protocol has no refusal for it, and a client that writes stays in step)
//! but what a client writes is never mixed into anything: the bytes are wiped from the input
//! buffer and nothing a guest writes ever reaches another consumer.
//!
//! # Bounds
//!
//! - At most `max_clients` connections: the next one is closed at once
//!   (`entropy_feeder_egd_refused_total{reason="max_clients"}`).
//! - A command byte the protocol does not define closes the connection
//!   (`refused_total{reason="bad_command"}`).
//! - A command begun but not finished within `idle_timeout`, or a reply the client does not take
//!   within `idle_timeout`, closes the connection (`refused_total{reason="idle_timeout"}`). A
//!   client idle between commands is kept: QEMU connects once and may ask for nothing for
//!   minutes, and it holds nothing but its place among `max_clients`.
//! - Memory per client: a 512-byte input buffer (the longest command is 259 bytes) and one reply
//!   of at most 256 bytes in flight; the next command is not read until that reply is written.
//!   The socket's send buffer is shrunk to a few KiB, so the bytes a client has been sent but
//!   has not read are few too.
//!
//! # Every byte to one client once
//!
//! Bytes are taken from the [`Entropy`] for one reply to one client and go nowhere else. A
//! blocking read waits in `take`, which is cancel-safe; while it waits the socket is still read,
//! so a client that hangs up is noticed and its `take` dropped: nothing was handed out, nothing is
//! lost. Bytes already taken for a client that is gone before they are written (the write fails,
//! times out, or the feeder shuts down) are wiped ([`Zeroizing`]) and never given to anyone else.
//!
//! # Metrics
//!
//! `entropy_feeder_egd_served_bytes_total` (entropy bytes written to clients),
//! `entropy_feeder_egd_clients` (gauge), `entropy_feeder_egd_refused_total{reason}`.
//!
//! # A guest on it
//!
//! ```text
//! qemu-system-x86_64 ... \
//!   -chardev socket,id=egd,path=/run/entropy-feeder/egd.sock,reconnect=1 \
//!   -object rng-egd,id=rng0,chardev=egd -device virtio-rng-pci,rng=rng0
//! ```
//!
//! (libvirt: `<rng model='virtio'><backend model='egd' type='unix'><source mode='connect'
//! path='...'/></backend></rng>`.) QEMU's user needs write access to the socket
//! (`egd_socket_mode`, group). `reconnect` lets QEMU reconnect after a feeder restart; without
//! it the guest's device gets nothing more once the connection drops. `scripts/lab/qemu_guest.py`
//! boots such a guest and checks what it reads.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use zeroize::{Zeroize, Zeroizing};

use crate::entropy::Entropy;

/// Bytes served to EGD clients (entropy only: not the length bytes, levels or PIDs).
pub const METRIC_SERVED_BYTES: &str = "entropy_feeder_egd_served_bytes_total";
/// Connected EGD clients.
pub const METRIC_CLIENTS: &str = "entropy_feeder_egd_clients";
/// Connections closed by the server, by `reason`: `max_clients`, `bad_command`, `idle_timeout`.
pub const METRIC_REFUSED: &str = "entropy_feeder_egd_refused_total";

/// The longest command: `03 MM LL NN` and 255 bytes.
const MAX_COMMAND_BYTES: usize = 4 + 255;
/// A client's input buffer: one longest command and then some.
const INPUT_BYTES: usize = 512;
/// The send buffer asked for on each connection (the kernel doubles it and applies its minimum):
/// what a client that does not read can be sent before the server notices.
const SEND_BUFFER_BYTES: usize = 4096;
/// Pause after an accept error that may pass (out of descriptors or memory).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The server's bounds (config keys `egd_max_clients`, `egd_idle_timeout_ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EgdLimits {
    /// Connections served at once; the next one is closed at once.
    pub max_clients: usize,
    /// How long a client may take to finish a command it began, or to read a reply.
    pub idle_timeout: Duration,
}

/// Registers the EGD metrics' descriptions with the installed recorder.
pub fn describe_metrics() {
    metrics::describe_counter!(
        METRIC_SERVED_BYTES,
        metrics::Unit::Bytes,
        "Entropy bytes written to EGD clients"
    );
    metrics::describe_gauge!(METRIC_CLIENTS, "EGD clients connected");
    metrics::describe_counter!(
        METRIC_REFUSED,
        "EGD connections closed by the server, by reason (max_clients, bad_command, idle_timeout)"
    );
}

/// Serves the EGD protocol on `listener` with bytes from `entropy` until `shutdown`: then stops
/// accepting, closes every client (bytes taken for them and not yet written are wiped) and
/// returns once all are closed.
///
/// Returns an error only if accepting fails for a reason that will not pass (descriptor and
/// memory shortages are waited out); the clients are closed first.
pub async fn serve<E: Entropy>(
    listener: UnixListener,
    entropy: Arc<E>,
    limits: EgdLimits,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_clients));
    let clients = TaskTracker::new();
    let stop_clients = shutdown.child_token();
    let result = loop {
        let accepted = tokio::select! {
            biased;
            () = shutdown.cancelled() => break Ok(()),
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => match Arc::clone(&slots).try_acquire_owned() {
                Ok(slot) => {
                    let entropy = Arc::clone(&entropy);
                    let stop = stop_clients.clone();
                    clients.spawn(async move {
                        client(stream, &*entropy, limits.idle_timeout, stop).await;
                        drop(slot);
                    });
                }
                Err(_) => {
                    tracing::debug!(max_clients = limits.max_clients, "EGD client refused");
                    metrics::counter!(METRIC_REFUSED, "reason" => "max_clients").increment(1);
                    drop(stream);
                }
            },
            Err(e) if accept_error_passes(&e) => {
                tracing::warn!(error = %e, "EGD accept failed; retrying");
                tokio::select! {
                    () = shutdown.cancelled() => break Ok(()),
                    () = tokio::time::sleep(ACCEPT_BACKOFF) => {}
                }
            }
            Err(e) => break Err(e),
        }
    };
    drop(listener);
    stop_clients.cancel();
    clients.close();
    clients.wait().await;
    result
}

/// Accept errors that a later accept may not see: a connection gone before it was accepted, or
/// descriptors or memory short for a while.
fn accept_error_passes(e: &io::Error) -> bool {
    // Linux errno values: EINTR, ENOMEM, ENFILE, EMFILE, EPROTO, ECONNABORTED, ENOBUFS.
    const PASSING: [i32; 7] = [4, 12, 23, 24, 71, 103, 105];
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted | io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
    ) || e.raw_os_error().is_some_and(|code| PASSING.contains(&code))
}

/// The clients gauge, counted down however a client ends.
struct Connected;

impl Connected {
    fn new() -> Self {
        metrics::gauge!(METRIC_CLIENTS).increment(1.0);
        Connected
    }
}

impl Drop for Connected {
    fn drop(&mut self) {
        metrics::gauge!(METRIC_CLIENTS).decrement(1.0);
    }
}

/// Why a connection ended.
#[derive(Debug)]
enum End {
    /// The client hung up.
    Hangup,
    /// A command byte the protocol does not define.
    BadCommand(u8),
    /// A command not finished, or a reply not read, within the idle timeout.
    Idle,
    /// The entropy supply closed (the feeder is stopping).
    SupplyClosed,
    /// The supply broke its contract (a bug): the connection cannot stay in step.
    ShortTake { asked: usize, got: usize },
    /// The socket failed.
    Io(io::Error),
    /// The server is shutting down.
    Shutdown,
}

async fn client<E: Entropy>(
    stream: UnixStream,
    entropy: &E,
    idle_timeout: Duration,
    shutdown: CancellationToken,
) {
    let _connected = Connected::new();
    if let Err(e) = socket2::SockRef::from(&stream).set_send_buffer_size(SEND_BUFFER_BYTES) {
        tracing::debug!(error = %e, "EGD client: cannot shrink the send buffer");
    }
    let mut conn = Conn { stream, entropy, idle_timeout, input: Input::new() };
    let end = tokio::select! {
        biased;
        () = shutdown.cancelled() => End::Shutdown,
        end = conn.run() => end,
    };
    match end {
        End::Hangup | End::Shutdown | End::SupplyClosed => {
            tracing::debug!(reason = ?end, "EGD client closed")
        }
        End::BadCommand(byte) => {
            tracing::info!(command = byte, "EGD client sent an unknown command; closed");
            metrics::counter!(METRIC_REFUSED, "reason" => "bad_command").increment(1);
        }
        End::Idle => {
            tracing::info!(
                timeout_ms = idle_timeout.as_millis(),
                "EGD client left a command unfinished or a reply unread; closed"
            );
            metrics::counter!(METRIC_REFUSED, "reason" => "idle_timeout").increment(1);
        }
        End::ShortTake { asked, got } => {
            tracing::error!(asked, got, "entropy supply handed out the wrong count (a bug)");
        }
        End::Io(e) => tracing::debug!(error = %e, "EGD client socket failed"),
    }
}

/// One EGD command, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Command {
    Level,
    ReadNow(u8),
    Read(u8),
    Write,
    Pid,
}

#[derive(Debug, PartialEq, Eq)]
enum Parsed {
    /// A command and the input bytes it took.
    Complete(Command, usize),
    /// The start of a command: more input needed.
    Incomplete,
    /// Not a command.
    Unknown(u8),
}

fn parse(input: &[u8]) -> Parsed {
    let Some(&op) = input.first() else {
        return Parsed::Incomplete;
    };
    let count = |at: usize| input.get(at).copied();
    match op {
        0x00 => Parsed::Complete(Command::Level, 1),
        0x01 | 0x02 => match count(1) {
            Some(n) if op == 0x01 => Parsed::Complete(Command::ReadNow(n), 2),
            Some(n) => Parsed::Complete(Command::Read(n), 2),
            None => Parsed::Incomplete,
        },
        // 03, entropy bits (2 bytes), count, count bytes of data.
        0x03 => match count(3) {
            Some(n) if input.len() >= 4 + usize::from(n) => {
                Parsed::Complete(Command::Write, 4 + usize::from(n))
            }
            _ => Parsed::Incomplete,
        },
        0x04 => Parsed::Complete(Command::Pid, 1),
        other => Parsed::Unknown(other),
    }
}

/// A client's unparsed input: fixed size, wiped as it is used and when dropped.
struct Input {
    buf: Zeroizing<[u8; INPUT_BYTES]>,
    len: usize,
}

impl Input {
    fn new() -> Self {
        Input { buf: Zeroizing::new([0; INPUT_BYTES]), len: 0 }
    }

    fn filled(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    fn room(&mut self) -> &mut [u8] {
        &mut self.buf[self.len..]
    }

    fn consume(&mut self, used: usize) {
        let used = used.min(self.len);
        self.buf.copy_within(used..self.len, 0);
        self.buf[self.len - used..self.len].zeroize();
        self.len -= used;
    }
}

struct Conn<'a, E> {
    stream: UnixStream,
    entropy: &'a E,
    idle_timeout: Duration,
    input: Input,
}

impl<E: Entropy> Conn<'_, E> {
    /// Answers commands in order until the connection ends.
    async fn run(&mut self) -> End {
        loop {
            let command = match self.next_command().await {
                Ok(command) => command,
                Err(end) => return end,
            };
            let sent = match command {
                Command::Level => {
                    let bits = self.entropy.available().saturating_mul(8);
                    let bits = u32::try_from(bits).unwrap_or(u32::MAX);
                    self.send(&bits.to_be_bytes(), 0).await
                }
                Command::ReadNow(n) => {
                    let got = self.entropy.take_now(usize::from(n));
                    let got = &got[..got.len().min(usize::from(n))];
                    let mut reply = Zeroizing::new(Vec::with_capacity(1 + got.len()));
                    // At most n <= 255: the min above.
                    reply.push(u8::try_from(got.len()).unwrap_or(n));
                    reply.extend_from_slice(got);
                    self.send(&reply, got.len()).await
                }
                Command::Read(0) => Ok(()),
                Command::Read(n) => match self.take_watching(usize::from(n)).await {
                    Ok(bytes) => self.send(&bytes, bytes.len()).await,
                    Err(end) => Err(end),
                },
                // Its bytes were wiped as they were consumed.
                Command::Write => {
                    tracing::debug!("EGD client wrote entropy; discarded");
                    Ok(())
                }
                Command::Pid => {
                    let pid = std::process::id().to_string();
                    let mut reply = Vec::with_capacity(1 + pid.len());
                    // A u32 has at most 10 digits.
                    reply.push(u8::try_from(pid.len()).unwrap_or(u8::MAX));
                    reply.extend_from_slice(pid.as_bytes());
                    self.send(&reply, 0).await
                }
            };
            if let Err(end) = sent {
                return end;
            }
        }
    }

    /// The next complete command. Waits without limit for its first byte; the rest must arrive
    /// within the idle timeout (counted from its first byte, or from now if it was already
    /// waiting in the input when the last reply went out).
    async fn next_command(&mut self) -> Result<Command, End> {
        let mut started = (self.input.len > 0).then(Instant::now);
        loop {
            match parse(self.input.filled()) {
                Parsed::Complete(command, used) => {
                    self.input.consume(used);
                    return Ok(command);
                }
                Parsed::Unknown(byte) => return Err(End::BadCommand(byte)),
                Parsed::Incomplete => {}
            }
            debug_assert!(self.input.len < MAX_COMMAND_BYTES);
            let read = self.stream.read(self.input.room());
            let read = match started {
                None => read.await,
                Some(at) => tokio::time::timeout_at(at + self.idle_timeout, read)
                    .await
                    .map_err(|_| End::Idle)?,
            };
            match read {
                Ok(0) => return Err(End::Hangup),
                Ok(k) => {
                    self.input.len += k;
                    started.get_or_insert_with(Instant::now);
                }
                Err(e) => return Err(End::Io(e)),
            }
        }
    }

    /// Exactly `n` bytes from the supply, however long they take, reading the socket meanwhile
    /// (into the input buffer, while it has room) so that a hangup drops the wait: the supply's
    /// `take` is cancel-safe, so a client gone before its bytes are there costs no byte.
    async fn take_watching(&mut self, n: usize) -> Result<Zeroizing<Vec<u8>>, End> {
        let take = self.entropy.take(n);
        tokio::pin!(take);
        loop {
            let has_room = self.input.len < INPUT_BYTES;
            tokio::select! {
                got = &mut take => {
                    let bytes = got.map_err(|_| End::SupplyClosed)?;
                    if bytes.len() != n {
                        return Err(End::ShortTake { asked: n, got: bytes.len() });
                    }
                    return Ok(bytes);
                }
                read = self.stream.read(self.input.room()), if has_room => match read {
                    Ok(0) => return Err(End::Hangup),
                    Ok(k) => self.input.len += k,
                    Err(e) => return Err(End::Io(e)),
                },
            }
        }
    }

    /// Writes one reply, which the client must take within the idle timeout; `entropy` of its
    /// bytes are entropy, counted as served once written. A reply not written is dropped by the
    /// caller, and wiped if it held entropy.
    async fn send(&mut self, reply: &[u8], entropy: usize) -> Result<(), End> {
        match tokio::time::timeout(self.idle_timeout, self.stream.write_all(reply)).await {
            Err(_) => Err(End::Idle),
            Ok(Err(e)) => Err(End::Io(e)),
            Ok(Ok(())) => {
                metrics::counter!(METRIC_SERVED_BYTES).increment(entropy as u64);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_command_and_needs_the_rest_of_a_partial_one() {
        assert_eq!(parse(&[]), Parsed::Incomplete);
        assert_eq!(parse(&[0x00, 0x02]), Parsed::Complete(Command::Level, 1));
        assert_eq!(parse(&[0x01]), Parsed::Incomplete);
        assert_eq!(parse(&[0x01, 7]), Parsed::Complete(Command::ReadNow(7), 2));
        assert_eq!(parse(&[0x02]), Parsed::Incomplete);
        assert_eq!(parse(&[0x02, 255, 0]), Parsed::Complete(Command::Read(255), 2));
        assert_eq!(parse(&[0x03, 0, 16]), Parsed::Incomplete);
        assert_eq!(parse(&[0x03, 0, 16, 2, 9]), Parsed::Incomplete);
        assert_eq!(parse(&[0x03, 0, 16, 2, 9, 9]), Parsed::Complete(Command::Write, 6));
        assert_eq!(parse(&[0x03, 0, 0, 0]), Parsed::Complete(Command::Write, 4));
        assert_eq!(parse(&[0x04]), Parsed::Complete(Command::Pid, 1));
        assert_eq!(parse(&[0x05, 1]), Parsed::Unknown(0x05));
        assert_eq!(parse(&[0xff]), Parsed::Unknown(0xff));
        let longest: Vec<u8> = [0x03, 0, 0, 255].into_iter().chain([1; 255]).collect();
        assert_eq!(longest.len(), MAX_COMMAND_BYTES);
        assert_eq!(parse(&longest), Parsed::Complete(Command::Write, MAX_COMMAND_BYTES));
    }

    #[test]
    fn consumed_input_is_wiped() {
        let mut input = Input::new();
        input.room()[..6].copy_from_slice(&[0x03, 0, 8, 1, 0xaa, 0x04]);
        input.len = 6;
        input.consume(5);
        assert_eq!(input.filled(), &[0x04]);
        assert!(input.buf[1..].iter().all(|&b| b == 0));
        input.consume(1);
        assert!(input.buf.iter().all(|&b| b == 0));
    }
}
