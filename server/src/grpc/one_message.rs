//! Methods that take one request message get exactly one: a second message, or none, is
//! refused with INVALID_ARGUMENT before the handler runs.
//!
//! tonic decodes the first message of a unary (or server-streaming) call and never looks at
//! the rest of the body, so a request carrying two messages was answered as if it carried one.
//! [`OneMessageLayer`] wraps such a service's request bodies: it follows the gRPC framing, and
//! holds back the last byte of the first message until the body has ended. Only then does the
//! decoder get the whole message; if more data came first, the body fails with
//! INVALID_ARGUMENT instead, and the handler never runs. Nothing is copied: the held byte is
//! split off the frame it came in.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http_body::Frame;
use prost::bytes::{Buf as _, Bytes};
use tonic::Status;
use tonic::body::Body;
use tonic::server::NamedService;

use super::errors;

/// The gRPC message prefix's length.
const PREFIX: usize = 5;

/// Wraps a service so its request bodies carry exactly one message.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct OneMessageLayer;

impl<S> tower::Layer<S> for OneMessageLayer {
    type Service = OneMessage<S>;

    fn layer(&self, inner: S) -> Self::Service {
        OneMessage(inner)
    }
}

/// The service [`OneMessageLayer`] makes.
#[derive(Debug, Clone)]
pub(crate) struct OneMessage<S>(S);

impl<S: NamedService> NamedService for OneMessage<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> tower::Service<http::Request<Body>> for OneMessage<S>
where
    S: tower::Service<http::Request<Body>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        self.0.call(request.map(|body| Body::new(Single::new(body))))
    }
}

/// A request body checked to carry exactly one message.
struct Single {
    body: Body,
    prefix: [u8; PREFIX],
    have: usize,
    /// Bytes of the first message still to come after its prefix.
    left: u64,
    /// The first message has been seen whole (but for `held`).
    complete: bool,
    /// Its last byte, handed on once the body has ended.
    held: Option<Bytes>,
    done: bool,
}

impl Single {
    fn new(body: Body) -> Self {
        Self {
            body,
            prefix: [0; PREFIX],
            have: 0,
            left: 0,
            complete: false,
            held: None,
            done: false,
        }
    }

    /// Follows `data`, part of the first message; returns what to hand on now, or an error
    /// when it runs past the first message.
    fn follow(&mut self, mut data: Bytes) -> Result<Bytes, Status> {
        if data.is_empty() {
            return Ok(data);
        }
        if self.complete {
            return Err(more_than_one());
        }
        let mut at = 0;
        while at < data.len() && !self.complete {
            if self.have < PREFIX {
                let take = (PREFIX - self.have).min(data.len() - at);
                self.prefix[self.have..self.have + take].copy_from_slice(&data[at..at + take]);
                self.have += take;
                at += take;
                if self.have == PREFIX {
                    let p = self.prefix;
                    self.left = u64::from(u32::from_be_bytes([p[1], p[2], p[3], p[4]]));
                    self.complete = self.left == 0;
                }
            } else {
                let take = self.left.min((data.len() - at) as u64) as usize;
                self.left -= take as u64;
                at += take;
                self.complete = self.left == 0;
            }
        }
        if at < data.len() {
            return Err(more_than_one());
        }
        if self.complete {
            // The message's last byte waits for the end of the body.
            self.held = Some(data.split_off(data.len() - 1));
        }
        Ok(data)
    }
}

fn more_than_one() -> Status {
    errors::invalid_request(
        "this method takes exactly one request message; the request carried more",
    )
}

impl http_body::Body for Single {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        loop {
            match ready!(Pin::new(&mut this.body).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(mut data) => {
                        let data = data.copy_to_bytes(data.remaining());
                        match this.follow(data) {
                            Ok(data) if data.is_empty() => continue,
                            Ok(data) => return Poll::Ready(Some(Ok(Frame::data(data)))),
                            Err(status) => {
                                this.done = true;
                                return Poll::Ready(Some(Err(status)));
                            }
                        }
                    }
                    // gRPC requests carry no trailers; pass them on for the decoder to judge.
                    Err(frame) => return Poll::Ready(Some(Ok(frame))),
                },
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => {
                    this.done = true;
                    return Poll::Ready(match this.held.take() {
                        Some(last) => Some(Ok(Frame::data(last))),
                        None => Some(Err(errors::invalid_request(if this.have == 0 {
                            "the request carried no message; this method takes exactly one"
                        } else {
                            "the request ended before its message was complete"
                        }))),
                    });
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.held.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(len: usize) -> Vec<u8> {
        let mut out = vec![0];
        out.extend((len as u32).to_be_bytes());
        out.extend(std::iter::repeat_n(3u8, len));
        out
    }

    /// Feeds `frames`, then the end; returns what was handed on, or the status.
    fn run(frames: &[&[u8]]) -> Result<Vec<u8>, Status> {
        let mut single = Single::new(Body::empty());
        let mut out = Vec::new();
        for frame in frames {
            out.extend_from_slice(&single.follow(Bytes::copy_from_slice(frame))?);
        }
        match single.held.take() {
            Some(last) => out.extend_from_slice(&last),
            None => return Err(errors::invalid_request("incomplete")),
        }
        Ok(out)
    }

    #[test]
    fn one_message_passes_whole_however_it_is_cut() {
        let one = message(10);
        for cut in 0..=one.len() {
            assert_eq!(run(&[&one[..cut], &one[cut..]]).expect("one message"), one, "cut {cut}");
        }
        assert_eq!(run(&[&message(0)]).expect("an empty message"), message(0));
    }

    #[test]
    fn a_second_message_is_refused_in_the_same_frame_or_a_later_one() {
        let mut two = message(4);
        two.extend(message(4));
        let err = run(&[&two]).expect_err("two in one frame");
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        let err = run(&[&message(4), &message(4)]).expect_err("two frames");
        assert!(err.message().contains("exactly one request message"), "{err:?}");
        let err = run(&[&message(4), &[0]]).expect_err("one stray byte");
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
    }
}
