//! Which response body bytes a connection has written out, read from the bytes themselves.
//!
//! A response counts as delivered only once its bytes have left the process (see
//! [`super::ledger`]), and the only place that sees them leave is the connection's write path,
//! below h2's and hyper's buffers. So [`Written`] parses what they write and reports, for each
//! run of body bytes, the response it belongs to: on HTTP/2 the stream of each DATA frame (its
//! payload, less any padding, is body; every other frame is not: PINGs, SETTINGS,
//! WINDOW_UPDATEs, HEADERS and trailers move no body bytes); on an HTTP/1.1 connection
//! (gRPC-Web), which sends one response after another, the response's number on the
//! connection (1, 2, ...; informational 1xx heads are not responses), from the heads and their
//! `content-length` or chunked bodies.
//!
//! The protocol is told by the server's first byte: an HTTP/2 server opens with a SETTINGS
//! frame, whose length field starts with a zero byte; an HTTP/1.1 response starts with `H`.
//! The parsers are incremental: a write may end anywhere, inside a frame header or a chunk-size
//! line. Parsing is a walk over frame headers, so its cost does not grow with body sizes.

/// Counts the body bytes in a connection's output.
#[derive(Debug, Default)]
pub(crate) struct Written {
    state: Protocol,
}

#[derive(Debug, Default)]
enum Protocol {
    #[default]
    Unknown,
    Http2(Frames),
    Http1(Responses),
    /// The output stopped making sense (it cannot, from hyper): nothing more is counted.
    Lost,
}

impl Written {
    /// Feeds the next `bytes` written out, calling `body(response, n)` for each run of `n`
    /// body bytes of `response` (an HTTP/2 stream id, or an HTTP/1.1 response number).
    pub(crate) fn scan(&mut self, bytes: &[u8], mut body: impl FnMut(u32, usize)) {
        if bytes.is_empty() {
            return;
        }
        if let Protocol::Unknown = self.state {
            self.state = if bytes[0] == b'H' {
                Protocol::Http1(Responses::default())
            } else {
                Protocol::Http2(Frames::default())
            };
        }
        let parsed = match &mut self.state {
            Protocol::Http2(frames) => {
                frames.scan(bytes, &mut body);
                true
            }
            Protocol::Http1(responses) => responses.scan(bytes, &mut body).is_some(),
            Protocol::Unknown | Protocol::Lost => true,
        };
        if !parsed {
            tracing::warn!("unparseable response output; its body bytes are no longer counted");
            self.state = Protocol::Lost;
        }
    }
}

/// HTTP/2 frame type of DATA.
const DATA: u8 = 0x0;
/// HTTP/2 flag PADDED.
const PADDED: u8 = 0x8;
/// An HTTP/2 frame header's length.
const FRAME_HEADER: usize = 9;

/// Where the HTTP/2 parser stands.
#[derive(Debug, Default)]
struct Frames {
    /// Bytes of the frame header read so far.
    header: [u8; FRAME_HEADER],
    have: usize,
    /// Payload bytes of the current frame still to come.
    left: usize,
    /// The current frame is DATA.
    data: bool,
    /// A padded DATA frame whose pad length byte has not been seen yet.
    awaiting_pad_length: bool,
    /// Padding bytes at the end of the current DATA frame.
    padding: usize,
    /// The current frame's stream.
    stream: u32,
}

impl Frames {
    fn scan(&mut self, mut bytes: &[u8], body: &mut impl FnMut(u32, usize)) {
        while !bytes.is_empty() {
            if self.left == 0 && self.have < FRAME_HEADER {
                let take = (FRAME_HEADER - self.have).min(bytes.len());
                self.header[self.have..self.have + take].copy_from_slice(&bytes[..take]);
                self.have += take;
                bytes = &bytes[take..];
                if self.have < FRAME_HEADER {
                    break;
                }
                let h = self.header;
                self.left = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
                self.data = h[3] == DATA;
                self.awaiting_pad_length = self.data && h[4] & PADDED != 0;
                self.padding = 0;
                self.stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
                if self.left == 0 {
                    self.have = 0;
                }
                continue;
            }
            if self.awaiting_pad_length {
                self.padding = usize::from(bytes[0]);
                self.awaiting_pad_length = false;
                self.left -= 1;
                bytes = &bytes[1..];
            } else {
                let take = self.left.min(bytes.len());
                if self.data {
                    // The payload's last `padding` bytes are not body.
                    let n = take.min(self.left.saturating_sub(self.padding));
                    if n > 0 {
                        body(self.stream, n);
                    }
                }
                self.left -= take;
                bytes = &bytes[take..];
            }
            if self.left == 0 {
                self.have = 0;
            }
        }
    }
}

/// Longest response head accepted (hyper's are a few hundred bytes).
const MAX_HEAD: usize = 16 << 10;
/// Longest chunk-size line accepted (hex digits and extensions).
const MAX_LINE: usize = 1024;

/// Where the HTTP/1.1 parser stands, and how many responses it has seen begin.
#[derive(Debug, Default)]
struct Responses {
    at: Part,
    number: u32,
}

/// A place in an HTTP/1.1 response: its head, its body, or between chunks.
#[derive(Debug)]
enum Part {
    /// The head so far (status line and header fields).
    Head(Vec<u8>),
    /// A body of known length: this many bytes left.
    Body(u64),
    /// A chunk-size line so far.
    ChunkSize(Vec<u8>),
    /// Chunk data: this many bytes left, then CRLF.
    Chunk(u64),
    /// The CRLF after a chunk's data: this many bytes of it left.
    ChunkEnd(u8),
    /// Trailer fields after the last chunk, until an empty line: the current line so far.
    Trailers(Vec<u8>),
}

impl Default for Part {
    fn default() -> Self {
        Part::Head(Vec::new())
    }
}

impl Responses {
    /// `None` when the output is not HTTP/1.1 as hyper writes it.
    fn scan(&mut self, mut bytes: &[u8], body: &mut impl FnMut(u32, usize)) -> Option<()> {
        while !bytes.is_empty() {
            match &mut self.at {
                Part::Head(head) => {
                    let (line, rest, done) = take_until(head, bytes, b"\r\n\r\n", MAX_HEAD)?;
                    bytes = rest;
                    if done {
                        let (informational, next) = after_head(&line)?;
                        if !informational {
                            self.number += 1;
                        }
                        self.at = next;
                    }
                }
                Part::Body(left) => {
                    let take = (*left).min(bytes.len() as u64);
                    body(self.number, take as usize);
                    *left -= take;
                    bytes = &bytes[take as usize..];
                    if *left == 0 {
                        self.at = Part::default();
                    }
                }
                Part::ChunkSize(line) => {
                    let (line, rest, done) = take_until(line, bytes, b"\r\n", MAX_LINE)?;
                    bytes = rest;
                    if done {
                        let size = line.split(|&b| b == b';').next().unwrap_or_default();
                        let size = std::str::from_utf8(size).ok()?.trim();
                        let size = u64::from_str_radix(size, 16).ok()?;
                        self.at = match size {
                            0 => Part::Trailers(Vec::new()),
                            n => Part::Chunk(n),
                        };
                    }
                }
                Part::Chunk(left) => {
                    let take = (*left).min(bytes.len() as u64);
                    body(self.number, take as usize);
                    *left -= take;
                    bytes = &bytes[take as usize..];
                    if *left == 0 {
                        self.at = Part::ChunkEnd(2);
                    }
                }
                Part::ChunkEnd(left) => {
                    let expected: &[u8] = &b"\r\n"[2 - usize::from(*left)..];
                    if bytes[0] != expected[0] {
                        return None;
                    }
                    bytes = &bytes[1..];
                    *left -= 1;
                    if *left == 0 {
                        self.at = Part::ChunkSize(Vec::new());
                    }
                }
                Part::Trailers(line) => {
                    let (line, rest, done) = take_until(line, bytes, b"\r\n", MAX_HEAD)?;
                    bytes = rest;
                    if done {
                        self.at = if line.is_empty() {
                            Part::default()
                        } else {
                            Part::Trailers(Vec::new())
                        };
                    }
                }
            }
        }
        Some(())
    }
}

/// Appends `bytes` to `so_far` up to and including `end`; returns what came before `end`, the
/// bytes after it, and whether `end` was found. `None` past `max` bytes.
fn take_until<'a>(
    so_far: &mut Vec<u8>,
    bytes: &'a [u8],
    end: &[u8],
    max: usize,
) -> Option<(Vec<u8>, &'a [u8], bool)> {
    let start = so_far.len();
    // `end` may straddle the previous write and this one.
    let from = start.saturating_sub(end.len() - 1);
    so_far.extend_from_slice(bytes);
    if let Some(at) = so_far[from..].windows(end.len()).position(|w| w == end) {
        let cut = from + at;
        let consumed = cut + end.len() - start;
        so_far.truncate(cut);
        return Some((std::mem::take(so_far), &bytes[consumed..], true));
    }
    if so_far.len() > max {
        return None;
    }
    Some((Vec::new(), &[], false))
}

/// Whether a response head is informational (1xx), and what follows it: its body's framing.
fn after_head(head: &[u8]) -> Option<(bool, Part)> {
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.split("\r\n");
    let status: u16 = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let (mut length, mut chunked) = (None, false);
    for line in lines {
        let (name, value) = line.split_once(':')?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<u64>().ok()?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().ends_with("chunked");
        }
    }
    // 1xx, 204 and 304 have no body; the gateway answers every HTTP/1.1 request that is not
    // POST or OPTIONS itself with an empty 405, so there is no HEAD response to tell apart.
    let next = match (status, chunked, length) {
        (100..=199 | 204 | 304, _, _) | (_, false, None | Some(0)) => Part::default(),
        (_, true, _) => Part::ChunkSize(Vec::new()),
        (_, false, Some(n)) => Part::Body(n),
    };
    Some(((100..=199).contains(&status), next))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len();
        let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        out.extend_from_slice(&stream.to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    /// Body bytes per response.
    type Bodies = BTreeMap<u32, usize>;

    /// A server's output: SETTINGS, HEADERS, DATA (plain and padded) on two streams, PING,
    /// WINDOW_UPDATE, an empty END_STREAM DATA, trailers; and its body bytes per stream.
    fn http2_output() -> (Vec<u8>, Bodies) {
        let mut out = frame(0x4, 0, 0, &[0, 3, 0, 0, 0, 100]);
        out.extend(frame(0x1, 0x4, 1, &[0x88]));
        out.extend(frame(DATA, 0, 1, &[7; 1000]));
        // Padded: pad length 5, 20 body bytes, 5 padding bytes.
        let mut padded = vec![5];
        padded.extend([9; 20]);
        padded.extend([0; 5]);
        out.extend(frame(DATA, PADDED, 3, &padded));
        out.extend(frame(0x6, 0x1, 0, &[1; 8]));
        out.extend(frame(0x8, 0, 0, &[0, 0, 1, 0]));
        out.extend(frame(DATA, 0x1, 1, &[]));
        out.extend(frame(DATA, 0, 0x8000_0003, &[1; 30])); // the reserved bit is not the id
        out.extend(frame(0x1, 0x5, 3, &[0x40, 0x0b]));
        (out, BTreeMap::from([(1, 1000), (3, 50)]))
    }

    fn http1_output() -> (Vec<u8>, Bodies) {
        let mut out = b"HTTP/1.1 100 Continue\r\n\r\n".to_vec();
        out.extend(b"HTTP/1.1 200 OK\r\ncontent-type: application/grpc-web\r\n");
        out.extend(b"transfer-encoding: chunked\r\n\r\n");
        out.extend(b"10\r\n0123456789abcdef\r\n");
        out.extend(b"5;ext=1\r\nhello\r\n");
        out.extend(b"0\r\nx-trailer: 1\r\n\r\n");
        out.extend(b"HTTP/1.1 204 No Content\r\naccess-control-allow-origin: x\r\n\r\n");
        out.extend(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nhello world!");
        out.extend(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n");
        (out, BTreeMap::from([(1, 21), (3, 12)]))
    }

    fn scan_in_pieces(out: &[u8], cuts: &[usize]) -> Bodies {
        let mut written = Written::default();
        let mut bodies = Bodies::new();
        let mut at = 0;
        for &cut in cuts.iter().chain([&out.len()]) {
            written.scan(&out[at..cut], |stream, n| *bodies.entry(stream).or_default() += n);
            at = cut;
        }
        bodies
    }

    #[test]
    fn http2_counts_data_payloads_by_stream() {
        let (out, bodies) = http2_output();
        assert_eq!(scan_in_pieces(&out, &[]), bodies);
    }

    #[test]
    fn http1_counts_bodies_by_response() {
        let (out, bodies) = http1_output();
        assert_eq!(scan_in_pieces(&out, &[]), bodies);
    }

    #[test]
    fn malformed_http1_stops_counting() {
        let mut written = Written::default();
        let mut counted = 0;
        let head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n";
        written.scan(head, |_, n| counted += n);
        written.scan(b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabc", |_, n| counted += n);
        assert_eq!(counted, 0);
    }

    proptest! {
        /// However the output is cut into writes, the counts are the same.
        #[test]
        fn any_split_counts_the_same(cuts in proptest::collection::vec(0usize..2000, 0..20),
                                     http1 in any::<bool>()) {
            let (out, bodies) = if http1 { http1_output() } else { http2_output() };
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (out.len() + 1)).collect();
            cuts.sort_unstable();
            prop_assert_eq!(scan_in_pieces(&out, &cuts), bodies);
        }
    }
}
