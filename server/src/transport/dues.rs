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
//! gRPC-Web text responses are base64, one encoded piece per body frame; their frames are
//! decoded to find the framing, and a message ends, conservatively, where the frame holding its
//! last byte ends.

use std::sync::{Arc, Mutex};

use base64::Engine as _;

use super::framing::Framing;
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

/// Finds where messages end in a response body (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct MessageEnds {
    base64: bool,
    framing: Framing,
    /// Body bytes seen so far (as sent, encoded or not).
    offset: u64,
}

impl MessageEnds {
    /// For a response with `content_type`.
    pub(crate) fn new(content_type: Option<&http::HeaderValue>) -> Self {
        let base64 = content_type
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/grpc-web-text"));
        Self { base64, ..Self::default() }
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
        if self.base64 {
            let decoded = base64::engine::general_purpose::STANDARD.decode(bytes);
            let frame_end = self.offset;
            self.framing.feed(&decoded.unwrap_or_default(), |_, trailers| {
                if !trailers {
                    ended(frame_end);
                }
            });
            return;
        }
        self.framing.feed(bytes, |end, trailers| {
            if !trailers {
                ended(start + end as u64);
            }
        });
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
