//! Write coalescing under HTTP/2: the frames one turn of a connection produces leave in one
//! write instead of one write each.
//!
//! **Why.** h2 (0.4) buffers small frames in its own 16 KiB buffer, but a DATA frame of 256
//! bytes or more is "chained": h2 must flush (a `writev` of its buffer and that payload) before it
//! takes the next frame. A unary response of 1 KiB is such a frame, so every response cost its
//! own system call, and with TLS its own records: at 50 calls in flight the tonic echo server
//! answered 1 KiB calls 40% slower than 32 B ones on this machine (bench/README.md).
//!
//! **How.** [`Coalesce`] sits between hyper and the socket (above TLS). Writes are copied into a
//! buffer of [`CAPACITY`] bytes; a write that would overflow it goes out together with what is
//! buffered, in one vectored write. A flush with bytes buffered is deferred, not dropped: the
//! connection's task is woken, and the buffer is written at the start of its next turn (its
//! next read, which h2 always polls first), after the handlers woken meanwhile have added their
//! responses. A response waits at most one turn of the runtime; shutdown writes everything
//! first. HTTP/1.1 connections flush at once ([`Coalesce::flushing_at_once`]): hyper does not
//! read while pipelined requests wait in its buffer. The buffer exists only while it holds bytes: once written out it is wiped (it held
//! served entropy) and freed, so an idle connection holds none.
//!
//! **What left.** This is the last place the connection's bytes pass in the clear (TLS, when
//! there is any, is below), and the place they leave the process: every byte written to the
//! inner stream is shown, in order, to an [`Outbound`] (the connection's delivery ledger, which
//! counts a response delivered only once its bytes are here, [`super::ledger`]).

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use zeroize::Zeroize;

/// Bytes held before a write goes out at once: four maximum-size HTTP/2 frames.
pub(crate) const CAPACITY: usize = 64 * 1024;

/// Shown every byte a connection writes out, in order.
pub(crate) trait Outbound {
    /// `bytes` were written to the inner stream.
    fn wrote(&mut self, bytes: &[u8]);
}

/// Nothing to tell.
impl Outbound for () {
    fn wrote(&mut self, _: &[u8]) {}
}

/// An IO object whose writes are coalesced (see the module docs).
#[derive(Debug)]
pub(crate) struct Coalesce<T, O = ()> {
    inner: T,
    outbound: O,
    /// Bytes accepted and not yet written; `buf[sent..]` is what is left.
    buf: Vec<u8>,
    sent: usize,
    /// A flush was deferred: the buffer goes out at the next read.
    owed: bool,
    /// Whether a flush may wait for the next read (HTTP/2, which reads at the start of every
    /// turn); otherwise it writes the buffer out at once.
    defer: bool,
}

#[cfg(test)]
impl<T> Coalesce<T> {
    /// Wraps an accepted connection, showing nobody what it writes (tests).
    pub(crate) fn new(inner: T) -> Self {
        Coalesce::with_outbound(inner, ())
    }
}

impl<T, O: Outbound> Coalesce<T, O> {
    /// Wraps an accepted connection, showing `outbound` what it writes.
    pub(crate) fn with_outbound(inner: T, outbound: O) -> Self {
        Coalesce { inner, outbound, buf: Vec::new(), sent: 0, owed: false, defer: true }
    }

    /// Flushes write the buffer out at once instead of at the next read: for HTTP/1.1, where
    /// hyper does not read while a request is in flight and more are pipelined behind it (a
    /// deferred flush would wait for the whole pipeline, and the responses with it).
    pub(crate) fn flushing_at_once(mut self) -> Self {
        self.defer = false;
        self
    }

    /// The wrapped connection (tests).
    #[cfg(test)]
    pub(crate) fn get_ref(&self) -> &T {
        &self.inner
    }

    fn pending(&self) -> usize {
        self.buf.len() - self.sent
    }

    /// `n` more bytes of the buffer written. Once everything is, the buffer is wiped and freed:
    /// a connection holds one only while it has bytes waiting, so idle connections cost no more
    /// than before.
    fn consumed(&mut self, n: usize) {
        self.outbound.wrote(&self.buf[self.sent..self.sent + n]);
        self.sent += n;
        if self.sent == self.buf.len() {
            // A fresh allocation each time: its bytes past `len` were never written.
            self.buf.as_mut_slice().zeroize();
            self.buf = Vec::new();
            self.sent = 0;
        }
    }
}

impl<T: AsyncWrite + Unpin, O: Outbound> Coalesce<T, O> {
    /// Writes everything buffered; `Pending` (the write waker registered) if the socket is full.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.pending() > 0 {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.buf[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.consumed(n);
        }
        self.owed = false;
        Poll::Ready(Ok(()))
    }

    /// Writes what is buffered followed by `bufs` in one vectored write (as many as it takes
    /// until some of `bufs` is written); returns how many bytes of `bufs` went out.
    fn poll_write_through(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        loop {
            let pending = self.pending();
            if pending == 0 {
                let n = ready!(Pin::new(&mut self.inner).poll_write_vectored(cx, bufs))?;
                self.wrote_from(bufs, n);
                return Poll::Ready(Ok(n));
            }
            let mut slices = Vec::with_capacity(bufs.len() + 1);
            slices.push(IoSlice::new(&self.buf[self.sent..]));
            slices.extend(bufs.iter().map(|b| IoSlice::new(b)));
            let n = ready!(Pin::new(&mut self.inner).poll_write_vectored(cx, &slices))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            if n < pending {
                self.consumed(n);
                continue;
            }
            self.consumed(pending);
            self.owed = false;
            if n > pending {
                self.wrote_from(bufs, n - pending);
                return Poll::Ready(Ok(n - pending));
            }
        }
    }

    /// Shows the outbound the first `n` bytes of `bufs`, written straight through.
    fn wrote_from(&mut self, bufs: &[IoSlice<'_>], mut n: usize) {
        for buf in bufs {
            if n == 0 {
                break;
            }
            let take = n.min(buf.len());
            self.outbound.wrote(&buf[..take]);
            n -= take;
        }
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin, O: Outbound + Unpin> AsyncRead for Coalesce<T, O> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        // The start of a turn: what the last turn deferred goes out now. A full socket does
        // not stop the read (its waker is registered; the next turn tries again).
        if self.owed
            && let Poll::Ready(Err(e)) = self.poll_drain(cx)
        {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin, O: Outbound + Unpin> AsyncWrite for Coalesce<T, O> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if self.pending() + total > CAPACITY {
            return self.poll_write_through(cx, bufs);
        }
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(CAPACITY);
        }
        for b in bufs {
            self.buf.extend_from_slice(b);
        }
        Poll::Ready(Ok(total))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.pending() == 0 {
            return Pin::new(&mut self.inner).poll_flush(cx);
        }
        if !self.defer {
            ready!(self.poll_drain(cx))?;
            return Pin::new(&mut self.inner).poll_flush(cx);
        }
        if !self.owed {
            self.owed = true;
            cx.waker().wake_by_ref();
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(cx))?;
        ready!(Pin::new(&mut self.inner).poll_flush(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl<T, O> Drop for Coalesce<T, O> {
    fn drop(&mut self) {
        // Bytes never written out (the connection died with them).
        self.buf.as_mut_slice().zeroize();
    }
}

#[cfg(test)]
mod tests;
