//! Connect's envelope: the framing of a streaming request's and response's messages, which is
//! gRPC's length-prefixed framing (a flag byte, a big-endian 4-byte length, the message) with
//! its own flags: 0x01 a compressed message, 0x02 the end-of-stream message that closes a
//! response (its status and trailers as JSON).
//!
//! So the translation rewrites no framing for binary streams: a gRPC message frame (flag 0) is
//! a Connect message envelope as it is. [`Frames`] finds the messages of a body cut anywhere.

use prost::bytes::{Buf as _, Bytes, BytesMut};

/// The prefix's length.
pub(super) const PREFIX: usize = 5;
/// Flag of a compressed message (never sent by this gateway; refused in requests).
pub(super) const COMPRESSED: u8 = 0x01;
/// Flag of a streaming response's end-of-stream message.
pub(super) const END_STREAM: u8 = 0x02;

/// `payload` in an envelope with `flags`.
pub(super) fn envelope(flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(PREFIX + payload.len());
    push(&mut out, flags, payload);
    out
}

/// Appends `payload` in an envelope with `flags` to `out`.
pub(super) fn push(out: &mut Vec<u8>, flags: u8, payload: &[u8]) {
    // Every payload here is a message of this gateway or its end-of-stream JSON: a few MiB at
    // most (a 1 MiB draw as base64 JSON), far below the 4 GiB the length can say.
    let len = payload.len() as u32;
    out.push(flags);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(payload);
}

/// Why a body did not hold exactly one envelope.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum OneError {
    /// Fewer bytes than a prefix, or than the length it gives.
    Truncated,
    /// Bytes after the first envelope.
    Trailing,
}

/// The one envelope a whole body holds: its flags and payload.
pub(super) fn one(mut body: Bytes) -> Result<(u8, Bytes), OneError> {
    if body.len() < PREFIX {
        return Err(OneError::Truncated);
    }
    let flags = body.get_u8();
    let len = body.get_u32() as usize;
    match body.len().cmp(&len) {
        std::cmp::Ordering::Less => Err(OneError::Truncated),
        std::cmp::Ordering::Greater => Err(OneError::Trailing),
        std::cmp::Ordering::Equal => Ok((flags, body)),
    }
}

/// The messages of a length-prefixed body fed piece by piece.
#[derive(Debug, Default)]
pub(super) struct Frames {
    buffer: BytesMut,
}

impl Frames {
    /// Feeds the next piece of the body.
    pub(super) fn feed(&mut self, piece: &[u8]) {
        self.buffer.extend_from_slice(piece);
    }

    /// The next whole message, with its flags, if the body so far holds one.
    pub(super) fn next(&mut self) -> Option<(u8, Bytes)> {
        if self.buffer.len() < PREFIX {
            return None;
        }
        let len =
            u32::from_be_bytes([self.buffer[1], self.buffer[2], self.buffer[3], self.buffer[4]]);
        let len = len as usize;
        if self.buffer.len() < PREFIX + len {
            return None;
        }
        let flags = self.buffer[0];
        self.buffer.advance(PREFIX);
        Some((flags, self.buffer.split_to(len).freeze()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_found_however_the_body_is_cut() {
        let mut body = envelope(0, b"hello");
        body.extend(envelope(0, b""));
        body.extend(envelope(END_STREAM, b"{}"));
        for cut in 0..=body.len() {
            let mut frames = Frames::default();
            let mut found = Vec::new();
            for piece in [&body[..cut], &body[cut..]] {
                frames.feed(piece);
                while let Some((flags, message)) = frames.next() {
                    found.push((flags, message.to_vec()));
                }
            }
            let want = [(0, b"hello".to_vec()), (0, Vec::new()), (END_STREAM, b"{}".to_vec())];
            assert_eq!(found, want, "cut at {cut}");
        }
    }

    #[test]
    fn a_request_body_holds_exactly_one_envelope() {
        assert_eq!(one(Bytes::from(envelope(0, b"abc"))), Ok((0, Bytes::from_static(b"abc"))));
        assert_eq!(one(Bytes::from_static(&[0, 0, 0])), Err(OneError::Truncated));
        assert_eq!(one(Bytes::from_static(&[0, 0, 0, 0, 4, 1])), Err(OneError::Truncated));
        let mut two = envelope(0, b"a");
        two.extend(envelope(0, b"b"));
        assert_eq!(one(Bytes::from(two)), Err(OneError::Trailing));
    }
}
