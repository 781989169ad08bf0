//! Byte buffers holding entropy that must not outlive their use: wiped when dropped.
//!
//! `zeroize::Zeroizing<Vec<u8>>` wipes with one volatile store per byte, which the compiler may
//! not merge: for the MiB-sized chunks of the ingest path that was 7% of the gateway's CPU
//! (perf, `bench/README.md`). [`SecretBytes`] keeps zeroize's guarantee (volatile stores, then a
//! fence, so the wipe cannot be optimized away) but stores whole 8-byte words over the aligned
//! body of the buffer, and bytes only at its ends.

use std::ops::Deref;

use zeroize::Zeroize;

/// A `Vec<u8>` whose contents (and spare capacity) are wiped when it is dropped, unless they
/// are moved out with [`SecretBytes::into_vec`] (to be sent).
#[derive(Default, PartialEq, Eq)]
pub struct SecretBytes(Vec<u8>);

impl SecretBytes {
    /// Takes ownership of `bytes`; they are wiped when this is dropped.
    pub fn new(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }

    /// The bytes, to fill in place (a DRBG's output).
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.0
    }

    /// The bytes, no longer wiped: for a response that takes them out of the process.
    pub(crate) fn into_vec(mut self) -> Vec<u8> {
        std::mem::take(&mut self.0)
    }
}

impl Deref for SecretBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for SecretBytes {
    fn drop(&mut self) {
        wipe(&mut self.0);
    }
}

/// Not the bytes: their length only.
impl std::fmt::Debug for SecretBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretBytes({} bytes)", self.0.len())
    }
}

/// Overwrites every byte of `bytes`, its spare capacity included, with zeros, and empties it.
pub(crate) fn wipe(bytes: &mut Vec<u8>) {
    // The spare capacity can hold more than the data (a decoded field may keep its decode
    // buffer's allocation) and old bytes: make it part of the slice, so it is wiped by words too.
    bytes.resize(bytes.capacity(), 0);
    wipe_slice(bytes.as_mut_slice());
    bytes.clear();
}

/// Overwrites `bytes` with zeros: volatile 8-byte stores over the aligned body, byte stores at
/// the ends, then a fence (zeroize's guarantees).
fn wipe_slice(bytes: &mut [u8]) {
    let (head, words, tail) = bytemuck::pod_align_to_mut::<u8, u64>(bytes);
    head.zeroize();
    words.zeroize();
    tail.zeroize();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wipes_exactly_the_slice_whatever_its_alignment_and_length() {
        let mut backing = vec![0xA5u8; 4096 + 64];
        for offset in 0..9 {
            for len in [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 4096 + 3] {
                backing.fill(0xA5);
                wipe_slice(&mut backing[offset..offset + len]);
                let (before, rest) = backing.split_at(offset);
                let (wiped, after) = rest.split_at(len);
                assert!(
                    wiped.iter().all(|&b| b == 0),
                    "offset {offset} len {len}: a byte survived"
                );
                assert!(
                    before.iter().chain(after).all(|&b| b == 0xA5),
                    "offset {offset} len {len}: a byte outside the slice was written"
                );
            }
        }
    }

    #[test]
    fn wipe_empties_the_vec_and_keeps_its_allocation() {
        let mut v = Vec::with_capacity(100);
        v.extend_from_slice(&[7u8; 60]);
        wipe(&mut v);
        assert!(v.is_empty());
        assert!(v.capacity() >= 100, "wiped in place, not reallocated");
    }

    #[test]
    fn debug_shows_the_length_not_the_bytes() {
        let s = SecretBytes::new(vec![0x42; 3]);
        assert_eq!(format!("{s:?}"), "SecretBytes(3 bytes)");
        assert_eq!(&*s, &[0x42; 3]);
        assert_eq!(s.into_vec(), vec![0x42; 3], "moved out whole, not wiped");
    }
}
