//! A request body read within byte allowances: what a peer (with or without a key) can make
//! the gateway hold of its requests.
//!
//! h2 keeps the DATA a peer sends until we read it, up to the stream's and the connection's
//! flow-control windows (small on the public listener). Reading a frame hands it to the gRPC
//! decoder, which keeps a message's bytes until the message is complete, and gives the window
//! back so the peer may send more: that is where memory could grow. So a frame is handed on
//! only once its bytes are held on each of the body's accounts (the connection's request
//! allowance and the process's request or ingest budget). While there is no room the frame
//! waits and its window is not given back, so flow control stops the peer.
//!
//! A hold lasts as long as the decoder keeps the bytes: the body follows the gRPC framing (a
//! 5-byte prefix with the message length, then the message), and when the decoder asks for
//! more data it has taken every complete message out of its buffer (it decodes before it
//! reads), so the bytes of complete messages are given back then. What stays held is the
//! message still arriving. All of it goes when the body is dropped.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http_body::Frame;
use prost::bytes::Bytes;

use super::framing::Framing;
use crate::domain::allowance::{Account, Holds, Waiter};

/// Where a request body comes from: a body, and how to let its sender send more.
pub(crate) trait Inbound: http_body::Body<Data = Bytes> + Unpin {
    /// `n` bytes were handed on: give back that much flow-control window, if there is any.
    fn release(&mut self, _n: usize) {}
}

/// An HTTP/2 request body, whose window is given back only as its bytes are handed on.
#[derive(Debug)]
pub(crate) struct H2Request(pub h2::RecvStream);

impl http_body::Body for H2Request {
    type Data = Bytes;
    type Error = h2::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, h2::Error>>> {
        if !self.0.is_end_stream() {
            match ready!(self.0.poll_data(cx)) {
                Some(Ok(bytes)) => return Poll::Ready(Some(Ok(Frame::data(bytes)))),
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => {}
            }
        }
        match ready!(self.0.poll_trailers(cx)) {
            Ok(Some(trailers)) => Poll::Ready(Some(Ok(Frame::trailers(trailers)))),
            Ok(None) => Poll::Ready(None),
            Err(e) => Poll::Ready(Some(Err(e))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }
}

impl Inbound for H2Request {
    fn release(&mut self, n: usize) {
        // Fails only once the stream is gone, when there is no window left to give.
        let _ = self.0.flow_control().release_capacity(n);
    }
}

/// A request body read within allowances (see the module docs).
pub(crate) struct RequestBody<I> {
    inbound: I,
    waiter: Waiter,
    /// Bytes the call's own hold already covers (a typical request's whole body), so most
    /// requests hold nothing more here.
    prepaid: usize,
    /// A data frame read and not yet handed on (its bytes are not all held yet).
    pending: Option<Bytes>,
    /// What the bytes handed on hold beyond `prepaid`.
    held: Holds,
    /// Bytes handed on and still in the decoder's buffer.
    buffered: usize,
    /// Bytes handed on that belong to complete messages.
    complete: usize,
    /// Bytes handed on of the message still arriving.
    partial: usize,
    framing: Framing,
}

impl<I> std::fmt::Debug for RequestBody<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestBody").finish_non_exhaustive()
    }
}

impl<I: Inbound> RequestBody<I> {
    /// `inbound`, read within `accounts` (its connection's and the process's) beyond the first
    /// `prepaid` bytes buffered.
    pub(crate) fn new(inbound: I, accounts: [Account; 2], prepaid: usize) -> Self {
        Self {
            inbound,
            waiter: Waiter::new(accounts),
            prepaid,
            pending: None,
            held: Holds::default(),
            buffered: 0,
            complete: 0,
            partial: 0,
            framing: Framing::default(),
        }
    }
}

impl<I: Inbound> http_body::Body for RequestBody<I> {
    type Data = Bytes;
    type Error = I::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, I::Error>>> {
        let this = &mut *self;
        // The decoder asks for more: it has taken every complete message out of its buffer.
        if this.complete > 0 {
            this.buffered -= this.complete;
            this.complete = 0;
            this.held.keep_at_most(this.buffered.saturating_sub(this.prepaid));
        }
        loop {
            if let Some(bytes) = &this.pending {
                let need = (this.buffered + bytes.len()).saturating_sub(this.prepaid);
                if need > 0 {
                    ready!(this.waiter.poll_hold(cx, need, &mut this.held));
                }
                let Some(bytes) = this.pending.take() else { continue };
                this.inbound.release(bytes.len());
                this.buffered += bytes.len();
                let (mut at, partial, complete) = (0, &mut this.partial, &mut this.complete);
                this.framing.feed(&bytes, |end, _| {
                    *complete += *partial + end - at;
                    *partial = 0;
                    at = end;
                });
                *partial += bytes.len() - at;
                return Poll::Ready(Some(Ok(Frame::data(bytes))));
            }
            match ready!(Pin::new(&mut this.inbound).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(bytes) => this.pending = Some(bytes),
                    Err(frame) => return Poll::Ready(Some(Ok(frame))),
                },
                other => return Poll::Ready(other),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.pending.is_none() && self.inbound.is_end_stream()
    }
}
