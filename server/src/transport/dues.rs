//! What an entropy-bearing response is owed, message by message, and where its messages end.
//!
//! The gRPC layer knows what each message carries (drawn bytes, holds on allowances, the meter
//! that counts them as served); the transport knows when each message's last byte leaves. A
//! [`Dues`] queue joins the two: the producer pushes one [`Settle`] per message, in message
//! order (a unary response's one message, or each stream message as the transport takes it),
//! and the response's pipe finds where each message ends in the bytes it sends ([`MessageEnds`],
//! which reads the gRPC framing: a 5-byte prefix whose first byte flags gRPC-Web trailers and
//! whose next four give the length) and hands the settle to the ledger at that offset.
//!
//! The framing depends on the response's content type ([`Kind`]):
//! - gRPC and gRPC-Web: messages are length-prefixed; a gRPC-Web trailers frame (flag 0x80) is
//!   not a message;
//! - gRPC-Web text: base64, one encoded piece per body frame; the frames are decoded to find
//!   the framing, and a message ends, conservatively, where the frame holding its last byte
//!   ends;
//! - Connect streaming (`application/connect+…`): length-prefixed like gRPC; the end-of-stream
//!   message (flag 0x02, the status as JSON) is not a message;
//! - anything else (a Connect unary response, an HTTP/JSON answer): the whole body is the one
//!   message, which ends with the body; its settle is handed on when the response finishes,
//!   with every settle no framing claimed.

use std::sync::{Arc, Mutex};

use base64::Engine as _;

use super::framing::{CONNECT_END_STREAM_FLAG, Framing, GRPC_WEB_TRAILERS_FLAG};
use super::ledger::Settle;
use super::small_queue::SmallQueue;

/// A response's settles, one per message, in order (cloned into the response's extensions).
#[derive(Clone, Default)]
pub(crate) struct Dues(Arc<Mutex<SmallQueue<Box<dyn Settle>>>>);

impl std::fmt::Debug for Dues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Dues").field(&self.lock().len()).finish()
    }
}

impl Dues {
    fn lock(&self) -> std::sync::MutexGuard<'_, SmallQueue<Box<dyn Settle>>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The settle of the next message.
    pub(crate) fn push(&self, settle: Box<dyn Settle>) {
        self.lock().push_back(settle);
    }

    /// The settle of the oldest message not yet ended.
    pub(crate) fn next(&self) -> Option<Box<dyn Settle>> {
        self.lock().pop_front()
    }

    /// Every settle left.
    pub(crate) fn rest(&self) -> Vec<Box<dyn Settle>> {
        self.lock().drain().collect()
    }
}

/// How a response body frames its messages (see the module docs).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// gRPC, or binary gRPC-Web.
    #[default]
    Grpc,
    /// gRPC-Web text (base64).
    GrpcWebText,
    /// A Connect streaming response.
    ConnectStream,
    /// One message, the whole body.
    Whole,
}

impl Kind {
    /// The framing of a response with `content_type` (none: gRPC, as tonic's own answers).
    pub(crate) fn of(content_type: Option<&http::HeaderValue>) -> Self {
        let Some(content_type) = content_type else { return Self::Grpc };
        let Ok(content_type) = content_type.to_str() else { return Self::Whole };
        if content_type.starts_with("application/grpc-web-text") {
            Self::GrpcWebText
        } else if content_type.starts_with("application/grpc") {
            Self::Grpc
        } else if content_type.starts_with("application/connect+") {
            Self::ConnectStream
        } else {
            Self::Whole
        }
    }
}

/// Finds where messages end in a response body (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct MessageEnds {
    kind: Kind,
    framing: Framing,
    /// Body bytes seen so far (as sent, encoded or not).
    offset: u64,
}

impl MessageEnds {
    /// For a response with `content_type`.
    pub(crate) fn new(content_type: Option<&http::HeaderValue>) -> Self {
        Self { kind: Kind::of(content_type), ..Self::default() }
    }

    /// Body bytes seen so far.
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// Feeds the next body frame; calls `ended` with the offset (in the body as sent) at which
    /// each data message it completes ends, in order.
    pub(crate) fn frame(&mut self, bytes: &[u8], mut ended: impl FnMut(u64)) {
        let start = self.offset;
        self.offset += bytes.len() as u64;
        match self.kind {
            Kind::Whole => {}
            Kind::GrpcWebText => {
                let decoded = base64::engine::general_purpose::STANDARD.decode(bytes);
                let frame_end = self.offset;
                self.framing.feed(&decoded.unwrap_or_default(), |_, flags| {
                    if flags & GRPC_WEB_TRAILERS_FLAG == 0 {
                        ended(frame_end);
                    }
                });
            }
            Kind::Grpc => self.framing.feed(bytes, |end, flags| {
                if flags & GRPC_WEB_TRAILERS_FLAG == 0 {
                    ended(start + end as u64);
                }
            }),
            Kind::ConnectStream => self.framing.feed(bytes, |end, flags| {
                if flags & CONNECT_END_STREAM_FLAG == 0 {
                    ended(start + end as u64);
                }
            }),
        }
    }

    /// Counts `n` more body bytes of a response whose messages need no settling.
    pub(crate) fn skip(&mut self, n: usize) {
        self.offset += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(flag: u8, len: usize) -> Vec<u8> {
        let mut out = vec![flag];
        out.extend((len as u32).to_be_bytes());
        out.extend(std::iter::repeat_n(1u8, len));
        out
    }

    #[test]
    fn ends_are_found_across_frames_and_trailers_frames_are_not_messages() {
        let mut body = message(0, 10);
        body.extend(message(0, 0));
        body.extend(message(0x80, 20));
        body.extend(message(0, 3));
        for cut in 0..=body.len() {
            let mut ends = MessageEnds::new(None);
            let mut found = Vec::new();
            ends.frame(&body[..cut], |at| found.push(at));
            ends.frame(&body[cut..], |at| found.push(at));
            assert_eq!(found, [15, 20, 53], "cut at {cut}");
        }
    }

    #[test]
    fn kinds_follow_the_content_type() {
        let of = |v: &'static str| Kind::of(Some(&http::HeaderValue::from_static(v)));
        assert_eq!(Kind::of(None), Kind::Grpc);
        assert_eq!(of("application/grpc"), Kind::Grpc);
        assert_eq!(of("application/grpc+proto"), Kind::Grpc);
        assert_eq!(of("application/grpc-web+proto"), Kind::Grpc);
        assert_eq!(of("application/grpc-web-text"), Kind::GrpcWebText);
        assert_eq!(of("application/connect+json"), Kind::ConnectStream);
        assert_eq!(of("application/connect+proto"), Kind::ConnectStream);
        assert_eq!(of("application/json"), Kind::Whole);
        assert_eq!(of("application/proto"), Kind::Whole);
        assert_eq!(of("text/plain; charset=utf-8"), Kind::Whole);
    }

    #[test]
    fn connect_streams_end_messages_but_not_their_end_of_stream_message() {
        let connect = http::HeaderValue::from_static("application/connect+json");
        let mut body = message(0, 10);
        body.extend(message(0x02, 20));
        for cut in 0..=body.len() {
            let mut ends = MessageEnds::new(Some(&connect));
            let mut found = Vec::new();
            ends.frame(&body[..cut], |at| found.push(at));
            ends.frame(&body[cut..], |at| found.push(at));
            assert_eq!(found, [15], "cut at {cut}");
        }
    }

    #[test]
    fn a_whole_body_answer_ends_no_message_on_its_way() {
        // JSON whose first bytes would read as a gRPC prefix of a short message: never parsed.
        let json = http::HeaderValue::from_static("application/json");
        let mut ends = MessageEnds::new(Some(&json));
        let mut found = Vec::new();
        let body = b"{\0\0\0\x01x}{\"data\":\"00\"}";
        ends.frame(body, |at| found.push(at));
        assert!(found.is_empty());
        assert_eq!(ends.offset(), body.len() as u64);
    }

    #[test]
    fn text_frames_are_decoded_and_a_message_ends_with_its_frame() {
        let text = http::HeaderValue::from_static("application/grpc-web-text+proto");
        let mut ends = MessageEnds::new(Some(&text));
        let first = base64::engine::general_purpose::STANDARD.encode(&message(0, 4)[..7]);
        let second = base64::engine::general_purpose::STANDARD.encode(&message(0, 4)[7..]);
        let mut found = Vec::new();
        ends.frame(first.as_bytes(), |at| found.push(at));
        assert!(found.is_empty());
        ends.frame(second.as_bytes(), |at| found.push(at));
        assert_eq!(found, [(first.len() + second.len()) as u64]);
    }
}
