//! The canonical binary encoding's primitives: every signed or hashed structure of this crate
//! (receipts, commitments, tree heads, key ids) is built from these, and only from these.
//!
//! The rules (docs/receipts.md, "Encoding"), chosen so that one value has exactly one encoding
//! and a decoder can refuse every other byte string:
//! - integers are fixed width, big-endian (`u8`, `u32`, `u64`; `i64` as two's complement);
//! - a domain tag is one length byte and its ASCII bytes;
//! - a string is a `u32` byte length and its UTF-8 bytes, with a bound per field;
//! - a fixed-size array (a digest, a key id) is its bytes, no length;
//! - a list is a `u32` element count and the elements;
//! - a boolean is one byte, 0 or 1; an enum is one byte from a closed set;
//! - fields come in one fixed order, and nothing follows the last one.
//!
//! [`Writer`] appends to a `Vec`; [`Reader`] parses a slice and names the field that broke a
//! rule. Hashing a value that is not stored (a draw's served values) does not use `Writer`: see
//! `commitment.rs`, which feeds the same primitives to SHA-256 piece by piece.

use crate::error::DecodeError;

/// Appends canonical primitives to a byte vector.
#[derive(Debug, Default)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// An empty writer.
    pub fn new() -> Self {
        Self::default()
    }

    /// The bytes written so far.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// A domain tag: one length byte, then the tag's ASCII bytes.
    pub fn tag(&mut self, tag: &str) {
        self.buf.extend_from_slice(&tag_prefix(tag));
        self.buf.extend_from_slice(tag.as_bytes());
    }

    /// One byte.
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    /// A boolean as one byte, 0 or 1.
    pub fn bool(&mut self, v: bool) {
        self.buf.push(u8::from(v));
    }

    /// A `u32`, big-endian.
    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    /// A `u64`, big-endian.
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    /// An `i64`, big-endian two's complement.
    pub fn i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    /// Fixed-size bytes, no length.
    pub fn array(&mut self, v: &[u8]) {
        self.buf.extend_from_slice(v);
    }

    /// A string: `u32` length, then its UTF-8 bytes. Callers hold strings within their field's
    /// bound (checked when the value is built), far below `u32::MAX`.
    pub fn str(&mut self, v: &str) {
        self.count(v.len());
        self.buf.extend_from_slice(v.as_bytes());
    }

    /// A list's element count as a `u32`.
    pub fn count(&mut self, n: usize) {
        // Every list and string of this crate has a bound far below u32::MAX (checked when the
        // value is built); saturating keeps this total, and a decoder refuses the result.
        self.u32(u32::try_from(n).unwrap_or(u32::MAX));
    }
}

/// The one length byte before a domain tag. Tags are short ASCII constants of this crate.
pub fn tag_prefix(tag: &str) -> [u8; 1] {
    [u8::try_from(tag.len()).unwrap_or(u8::MAX)]
}

/// Parses canonical primitives from a byte slice, front to back.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader over `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        self.buf
    }

    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], DecodeError> {
        if self.buf.len() < n {
            return Err(DecodeError::Truncated { field });
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    /// Expects exactly `tag` (length byte and bytes).
    pub fn tag(&mut self, tag: &'static str) -> Result<(), DecodeError> {
        let prefix = self.take(1, "domain tag")?;
        let got = self.take(usize::from(prefix[0]), "domain tag")?;
        if prefix != tag_prefix(tag) || got != tag.as_bytes() {
            return Err(DecodeError::WrongTag { expected: tag });
        }
        Ok(())
    }

    /// One byte.
    pub fn u8(&mut self, field: &'static str) -> Result<u8, DecodeError> {
        Ok(self.take(1, field)?[0])
    }

    /// A boolean: exactly 0 or 1.
    pub fn bool(&mut self, field: &'static str) -> Result<bool, DecodeError> {
        match self.u8(field)? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(DecodeError::BadValue { field, value: u64::from(other) }),
        }
    }

    /// A big-endian `u32`.
    pub fn u32(&mut self, field: &'static str) -> Result<u32, DecodeError> {
        let b = self.take(4, field)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A big-endian `u64`.
    pub fn u64(&mut self, field: &'static str) -> Result<u64, DecodeError> {
        Ok(u64::from_be_bytes(self.array::<8>(field)?))
    }

    /// A big-endian two's complement `i64`.
    pub fn i64(&mut self, field: &'static str) -> Result<i64, DecodeError> {
        Ok(i64::from_be_bytes(self.array::<8>(field)?))
    }

    /// `N` bytes.
    pub fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], DecodeError> {
        let b = self.take(N, field)?;
        let mut out = [0u8; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    /// A string of `min..=max` bytes of UTF-8.
    pub fn str(
        &mut self,
        field: &'static str,
        min: usize,
        max: usize,
    ) -> Result<String, DecodeError> {
        let len = self.count(field, max)?;
        if len < min {
            return Err(DecodeError::Length { field, len, min, max });
        }
        let b = self.take(len, field)?;
        let s = std::str::from_utf8(b).map_err(|_| DecodeError::NotUtf8 { field })?;
        Ok(s.to_owned())
    }

    /// A list's element count, at most `max`.
    pub fn count(&mut self, field: &'static str, max: usize) -> Result<usize, DecodeError> {
        let n = self.u32(field)?;
        let len = usize::try_from(n).unwrap_or(usize::MAX);
        if len > max {
            return Err(DecodeError::Length { field, len, min: 0, max });
        }
        Ok(len)
    }

    /// Succeeds only when every byte was read.
    pub fn finish(self) -> Result<(), DecodeError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(DecodeError::TrailingBytes { count: self.buf.len() })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primitives_round_trip_and_are_big_endian() {
        let mut w = Writer::new();
        w.tag("t/v1");
        w.u8(7);
        w.bool(true);
        w.u32(0x0102_0304);
        w.u64(5);
        w.i64(-2);
        w.str("é");
        w.array(&[9; 3]);
        let bytes = w.into_bytes();
        assert_eq!(&bytes[..5], b"\x04t/v1");
        assert_eq!(&bytes[7..11], &[1, 2, 3, 4]);
        assert_eq!(&bytes[19..27], &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe]);

        let mut r = Reader::new(&bytes);
        r.tag("t/v1").unwrap();
        assert_eq!(r.u8("a").unwrap(), 7);
        assert!(r.bool("b").unwrap());
        assert_eq!(r.u32("c").unwrap(), 0x0102_0304);
        assert_eq!(r.u64("d").unwrap(), 5);
        assert_eq!(r.i64("e").unwrap(), -2);
        assert_eq!(r.str("f", 1, 8).unwrap(), "é");
        assert_eq!(r.array::<3>("g").unwrap(), [9; 3]);
        r.finish().unwrap();
    }

    #[test]
    fn readers_refuse_what_no_writer_makes() {
        assert!(matches!(Reader::new(b"\x04t/v2").tag("t/v1"), Err(DecodeError::WrongTag { .. })));
        assert!(matches!(
            Reader::new(&[2]).bool("flag"),
            Err(DecodeError::BadValue { field: "flag", value: 2 })
        ));
        assert!(matches!(
            Reader::new(&[0, 0, 0, 2, 0xc3, 0x28]).str("name", 1, 8),
            Err(DecodeError::NotUtf8 { field: "name" })
        ));
        assert!(matches!(
            Reader::new(&[0, 0, 0, 9]).str("name", 1, 8),
            Err(DecodeError::Length { field: "name", len: 9, .. })
        ));
        assert!(matches!(
            Reader::new(&[0, 0, 0, 0]).str("name", 1, 8),
            Err(DecodeError::Length { field: "name", len: 0, .. })
        ));
        assert!(matches!(
            Reader::new(&[0, 0]).u32("n"),
            Err(DecodeError::Truncated { field: "n" })
        ));
        assert!(matches!(Reader::new(&[0]).finish(), Err(DecodeError::TrailingBytes { count: 1 })));
    }
}
