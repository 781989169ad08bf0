//! The gRPC length-prefixed framing, followed incrementally: where each message ends.
//!
//! Every gRPC message on the wire (and every gRPC-Web frame) is a 5-byte prefix, a flag byte
//! and a big-endian 4-byte length, then that many bytes. Requests are read and responses are
//! sent in pieces cut anywhere, so [`Framing`] keeps its place across pieces.

/// The prefix's length.
const PREFIX: usize = 5;
/// The prefix flag of a gRPC-Web trailers frame.
pub(super) const GRPC_WEB_TRAILERS_FLAG: u8 = 0x80;
/// The prefix flag of a Connect streaming response's end-of-stream message (its status and
/// trailers as JSON).
pub(super) const CONNECT_END_STREAM_FLAG: u8 = 0x02;

/// Where a byte stream's framing stands.
#[derive(Debug, Default)]
pub(super) struct Framing {
    prefix: [u8; PREFIX],
    have: usize,
    /// Bytes of the current message still to come after its prefix.
    left: u64,
}

impl Framing {
    /// Feeds the next `bytes`; calls `ended(offset, flags)` with the offset within `bytes` just
    /// after each message that ends in them, and its prefix's flag byte.
    pub(super) fn feed(&mut self, bytes: &[u8], mut ended: impl FnMut(usize, u8)) {
        let mut at = 0;
        while at < bytes.len() {
            if self.have < PREFIX {
                let take = (PREFIX - self.have).min(bytes.len() - at);
                self.prefix[self.have..self.have + take].copy_from_slice(&bytes[at..at + take]);
                self.have += take;
                at += take;
                if self.have < PREFIX {
                    break;
                }
                let p = self.prefix;
                self.left = u64::from(u32::from_be_bytes([p[1], p[2], p[3], p[4]]));
            } else {
                let take = self.left.min((bytes.len() - at) as u64) as usize;
                self.left -= take as u64;
                at += take;
            }
            if self.have == PREFIX && self.left == 0 {
                ended(at, self.prefix[0]);
                self.have = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(flag: u8, len: usize) -> Vec<u8> {
        let mut out = vec![flag];
        out.extend((len as u32).to_be_bytes());
        out.extend(std::iter::repeat_n(7u8, len));
        out
    }

    #[test]
    fn ends_are_found_however_the_bytes_are_cut() {
        let mut bytes = message(0, 10);
        bytes.extend(message(0, 0));
        bytes.extend(message(GRPC_WEB_TRAILERS_FLAG, 3));
        for cut in 0..=bytes.len() {
            let mut framing = Framing::default();
            let mut ends = Vec::new();
            framing.feed(&bytes[..cut], |end, t| ends.push((end, t)));
            framing.feed(&bytes[cut..], |end, t| ends.push((end + cut, t)));
            assert_eq!(ends, [(15, 0), (20, 0), (28, 0x80)], "cut at {cut}");
        }
    }
}
