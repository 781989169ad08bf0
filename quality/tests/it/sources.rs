//! Samples for the tests: OS random bytes, and deterministic ones (good and broken) from a
//! seeded SplitMix64, so that a failure can be replayed.

/// `len` bytes from the operating system's CSPRNG, as the gateway's reference would be.
pub fn os_random(len: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; len];
    getrandom::fill(&mut bytes).expect("the OS random generator");
    bytes
}

/// SplitMix64 (Steele, Lea and Flood 2014): statistically good, tiny, and seeded.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut bytes: Vec<u8> = Vec::with_capacity(len + 8);
        while bytes.len() < len {
            bytes.extend_from_slice(&self.next_u64().to_le_bytes());
        }
        bytes.truncate(len);
        bytes
    }
}

/// `len` bytes whose bits are independently one with probability `p_one` (to 1/65536).
pub fn biased(seed: u64, len: usize, p_one: f64) -> Vec<u8> {
    let threshold = (p_one * 65536.0).round() as u64;
    let mut rng = SplitMix64::new(seed);
    let mut bits = std::iter::from_fn(|| {
        let word = rng.next_u64();
        Some((0..4).map(move |i| u8::from((word >> (16 * i)) & 0xffff < threshold)))
    })
    .flatten();
    (0..len).map(|_| bits.by_ref().take(8).fold(0u8, |byte, bit| (byte << 1) | bit)).collect()
}

/// `pattern` repeated to `len` bytes.
pub fn repeated(pattern: &[u8], len: usize) -> Vec<u8> {
    pattern.iter().copied().cycle().take(len).collect()
}
