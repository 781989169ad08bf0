//! Combining several sources' outputs into one chunk.
//!
//! - `xor`: bytewise XOR of equal-length outputs. If the sources are independent, the result is
//!   at least as unpredictable as the best of them, so one good source suffices.
//! - `hkdf`: HKDF-SHA256 (RFC 5869). For each block, extract over the concatenation of every
//!   source's slice of that block, with a salt naming the scheme, then expand to at most what
//!   those slices can support: `min(block, Σ len·H/8)` bytes, never more than 255 × 32 per
//!   extract. Blocks of [`HKDF_BLOCK_BYTES`] keep every expand far inside that limit.
//!
//! A single healthy source passes through unmixed ([`Mixing::None`]) under `xor`: XOR with
//! nothing is the identity, and the chunk says so rather than claiming a mix.

use hkdf::Hkdf;
use sha2::Sha256;

use crate::provenance::Mixing;

/// Salt of the HKDF extract step: names the scheme and version.
pub const HKDF_SALT: &[u8] = b"entropy-diode/v1/mixing/hkdf-sha256";
/// Input bytes per source per HKDF block (output ≤ this per block).
pub const HKDF_BLOCK_BYTES: usize = 4096;
/// Largest HKDF-SHA256 expand per extract (RFC 5869: 255 × HashLen).
pub const HKDF_MAX_EXPAND: usize = 255 * 32;

/// How sources are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    /// One source, used as is.
    None,
    /// Bytewise XOR.
    Xor,
    /// HKDF-SHA256 extract and expand, block by block.
    Hkdf,
}

/// One source's output for a round, with its claimed min-entropy per byte.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The bytes (all inputs of a round have the same length).
    pub bytes: &'a [u8],
    /// Claimed min-entropy per byte, 0 < H ≤ 8.
    pub min_entropy: f64,
}

/// Mixes `inputs` (at least one) with `scheme`; returns the output and the mixing to report.
pub fn mix(scheme: Scheme, inputs: &[Input<'_>]) -> (Vec<u8>, Mixing) {
    match (scheme, inputs) {
        (_, []) => (Vec::new(), Mixing::None),
        (Scheme::None | Scheme::Xor, [only]) => (only.bytes.to_vec(), Mixing::None),
        (Scheme::None | Scheme::Xor, _) => (xor(inputs), Mixing::Xor),
        (Scheme::Hkdf, _) => (hkdf(inputs), Mixing::HkdfSha256),
    }
}

fn xor(inputs: &[Input<'_>]) -> Vec<u8> {
    let len = inputs.iter().map(|i| i.bytes.len()).min().unwrap_or(0);
    let mut out = inputs[0].bytes[..len].to_vec();
    for input in &inputs[1..] {
        for (o, b) in out.iter_mut().zip(input.bytes) {
            *o ^= b;
        }
    }
    out
}

fn hkdf(inputs: &[Input<'_>]) -> Vec<u8> {
    let len = inputs.iter().map(|i| i.bytes.len()).min().unwrap_or(0);
    let mut out = Vec::with_capacity(len);
    let mut ikm = Vec::with_capacity(HKDF_BLOCK_BYTES * inputs.len());
    let mut start = 0;
    let mut block_index: u64 = 0;
    while start < len {
        let end = (start + HKDF_BLOCK_BYTES).min(len);
        ikm.clear();
        let mut supported = 0.0;
        for input in inputs {
            ikm.extend_from_slice(&input.bytes[start..end]);
            supported += (end - start) as f64 * input.min_entropy.clamp(0.0, 8.0) / 8.0;
        }
        let n = ((end - start).min(supported.floor() as usize)).min(HKDF_MAX_EXPAND);
        let hk = Hkdf::<Sha256>::new(Some(HKDF_SALT), &ikm);
        let mut block = vec![0u8; n];
        // `n` ≤ 255 × HashLen, so expand cannot fail.
        if hk.expand(&block_index.to_be_bytes(), &mut block).is_ok() {
            out.extend_from_slice(&block);
        }
        start = end;
        block_index += 1;
    }
    zeroize::Zeroize::zeroize(&mut ikm);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(bytes: &[u8]) -> Input<'_> {
        Input { bytes, min_entropy: 7.0 }
    }

    #[test]
    fn xor_of_two_is_bytewise() {
        let (a, b) = ([0b1010u8, 0xFF, 0x00], [0b0110u8, 0x0F, 0x00]);
        let (out, mixing) = mix(Scheme::Xor, &[input(&a), input(&b)]);
        assert_eq!(out, vec![0b1100, 0xF0, 0x00]);
        assert_eq!(mixing, Mixing::Xor);
    }

    #[test]
    fn xor_with_an_independent_source_hides_a_bad_one() {
        let bad = vec![0u8; 1024];
        let mut good = vec![0u8; 1024];
        getrandom::fill(&mut good).expect("rng");
        let (out, _) = mix(Scheme::Xor, &[input(&bad), input(&good)]);
        assert_eq!(out, good);
    }

    #[test]
    fn one_source_passes_through_as_none() {
        let a = [1u8, 2, 3];
        assert_eq!(mix(Scheme::Xor, &[input(&a)]), (a.to_vec(), Mixing::None));
        assert_eq!(mix(Scheme::None, &[input(&a)]), (a.to_vec(), Mixing::None));
    }

    #[test]
    fn hkdf_output_is_bounded_by_input_entropy() {
        let a = vec![1u8; 10_000];
        let b = vec![2u8; 10_000];
        // Two sources at 7 bits/byte support their full length.
        let (two, mixing) = mix(Scheme::Hkdf, &[input(&a), input(&b)]);
        assert_eq!((two.len(), mixing), (10_000, Mixing::HkdfSha256));
        // One source at 7 bits/byte supports 7/8 of its length, block by block:
        // 4096 → 3584, 4096 → 3584, 1808 → 1582.
        let (one, _) = mix(Scheme::Hkdf, &[input(&a)]);
        assert_eq!(one.len(), 3584 + 3584 + 1582);
        // A source claiming 2 bits/byte supports a quarter.
        let (low, _) = mix(Scheme::Hkdf, &[Input { bytes: &a, min_entropy: 2.0 }]);
        assert_eq!(low.len(), 1024 + 1024 + 452);
    }

    #[test]
    fn hkdf_depends_on_every_input_and_block() {
        let a = vec![1u8; 8192];
        let b = vec![2u8; 8192];
        let (base, _) = mix(Scheme::Hkdf, &[input(&a), input(&b)]);
        let mut b2 = b.clone();
        b2[8000] ^= 1;
        let (changed, _) = mix(Scheme::Hkdf, &[input(&a), input(&b2)]);
        assert_eq!(base[..4096], changed[..4096], "first block untouched");
        assert_ne!(base[4096..], changed[4096..], "second block depends on its input");
        assert_ne!(base[..4096], base[4096..], "blocks differ (index in info)");
    }

    #[test]
    fn hkdf_matches_rfc5869_extract_then_expand() {
        // One block: the output equals a direct HKDF over the concatenation.
        let a = [7u8; 100];
        let b = [9u8; 100];
        let (out, _) = mix(Scheme::Hkdf, &[input(&a), input(&b)]);
        let ikm: Vec<u8> = a.iter().chain(&b).copied().collect();
        let mut expected = vec![0u8; 100];
        Hkdf::<Sha256>::new(Some(HKDF_SALT), &ikm)
            .expand(&0u64.to_be_bytes(), &mut expected)
            .unwrap();
        assert_eq!(out, expected);
    }
}
