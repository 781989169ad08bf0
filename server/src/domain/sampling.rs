//! Turning uniform random bytes into integers, floats and UUIDs without bias.
//!
//! Pure functions over bytes: the caller draws from the pool. Entropy is scarce (an appliance
//! gives ~80 KB/s), so integers use as few bytes as the range allows: a draw of `k` bytes, the
//! smallest with 256^k >= span, is accepted when below the largest multiple of the span that
//! fits in 256^k (rejection sampling), so every value is exactly equally likely.

use uuid::Uuid;

/// An inclusive range of `i64` to sample from, known to be non-empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntRange {
    min: i64,
    /// Number of values in the range minus one (so the full i64 range fits in a u64).
    span_minus_one: u64,
}

impl IntRange {
    /// The range `[min, max]`, or `None` when `min > max`.
    pub fn new(min: i64, max: i64) -> Option<Self> {
        (min <= max).then(|| Self { min, span_minus_one: max.abs_diff(min) })
    }

    /// The smallest value of the range (its only value when `bytes_per_draw` is 0).
    pub fn min(&self) -> i64 {
        self.min
    }

    /// Bytes per draw: the fewest whose values cover the span (0 when `min == max`: a
    /// constant costs no entropy).
    pub fn bytes_per_draw(&self) -> usize {
        let bits = u64::BITS - self.span_minus_one.leading_zeros();
        (bits as usize).div_ceil(8)
    }

    /// Maps one draw (`bytes_per_draw` big-endian bytes) to a value, or `None` when the draw
    /// falls in the rejected zone and must be replaced by a fresh one.
    pub fn sample(&self, draw: &[u8]) -> Option<i64> {
        debug_assert_eq!(draw.len(), self.bytes_per_draw());
        let x = draw.iter().fold(0u128, |acc, b| (acc << 8) | u128::from(*b));
        let draws = 1u128 << (8 * draw.len()); // 256^k values of a draw
        let span = u128::from(self.span_minus_one) + 1;
        let zone = draws - draws % span; // largest multiple of span <= 256^k
        if x >= zone {
            return None;
        }
        // offset < span <= 2^64, so it fits in u64; min + offset stays within [min, max].
        let offset = (x % span) as u64;
        Some(self.min.wrapping_add_unsigned(offset))
    }

    #[cfg(test)]
    /// Chance that one draw is rejected, for sizing how many bytes to ask for up front.
    pub(crate) fn rejection_probability(&self) -> f64 {
        let draws = 1u128 << (8 * self.bytes_per_draw());
        let span = u128::from(self.span_minus_one) + 1;
        (draws % span) as f64 / draws as f64
    }
}

/// Bytes per float: 8, of which 53 bits are used.
pub(crate) const FLOAT_BYTES: usize = 8;

/// A double in [0, 1): the top 53 bits of 8 bytes, times 2^-53. Every multiple of 2^-53 in
/// [0, 1) is equally likely.
pub(crate) fn float_from(bytes: &[u8; FLOAT_BYTES]) -> f64 {
    let bits = u64::from_be_bytes(*bytes) >> 11;
    bits as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Bytes per UUID.
pub(crate) const UUID_BYTES: usize = 16;

/// A version 4 (random) UUID, RFC 9562 section 5.4: version and variant bits set, the other
/// 122 bits from `bytes`.
pub(crate) fn uuid_v4_from(bytes: [u8; UUID_BYTES]) -> Uuid {
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn empty_range_is_refused() {
        assert_eq!(IntRange::new(5, 4), None);
        assert!(IntRange::new(4, 4).is_some());
    }

    #[test]
    fn byte_counts_follow_the_span() {
        let bytes = |min, max| IntRange::new(min, max).expect("range").bytes_per_draw();
        assert_eq!(bytes(7, 7), 0); // span 1: always 7, no entropy needed
        assert_eq!(bytes(1, 6), 1);
        assert_eq!(bytes(0, 255), 1);
        assert_eq!(bytes(0, 256), 2);
        assert_eq!(bytes(0, 65_535), 2);
        assert_eq!(bytes(0, 65_536), 3);
        assert_eq!(bytes(i64::MIN, i64::MAX), 8);
        assert_eq!(bytes(-1, u32::MAX as i64 - 1), 4);
    }

    #[test]
    fn dice_use_every_accepted_byte_equally() {
        // Over all 256 draws of one byte, each face of a die gets the same number of accepted
        // draws, and exactly the 4 draws at or above 252 are rejected.
        let die = IntRange::new(1, 6).expect("range");
        let mut counts = [0u32; 7];
        let mut rejected = 0;
        for b in 0..=255u8 {
            match die.sample(&[b]) {
                Some(v) => counts[v as usize] += 1,
                None => rejected += 1,
            }
        }
        assert_eq!(&counts[1..], &[42; 6]);
        assert_eq!(rejected, 4);
        assert!((die.rejection_probability() - 4.0 / 256.0).abs() < 1e-12);
    }

    #[test]
    fn exhaustive_uniformity_for_small_spans() {
        // For every span 1..=300 and every possible 1- or 2-byte draw, accepted draws map to
        // each value equally often: the sampler has no bias at all, not just a small one.
        for span in 1..=300i64 {
            let range = IntRange::new(-10, -10 + span - 1).expect("range");
            let k = range.bytes_per_draw();
            let mut counts = vec![0u32; span as usize];
            for x in 0..(1u32 << (8 * k)) {
                let draw = &x.to_be_bytes()[4 - k..];
                if let Some(v) = range.sample(draw) {
                    counts[(v + 10) as usize] += 1;
                }
            }
            assert!(counts.iter().all(|c| *c == counts[0]), "span {span}: {counts:?}");
        }
    }

    #[test]
    fn full_range_accepts_every_draw() {
        let full = IntRange::new(i64::MIN, i64::MAX).expect("range");
        assert_eq!(full.rejection_probability(), 0.0);
        assert_eq!(full.sample(&[0; 8]), Some(i64::MIN));
        assert_eq!(full.sample(&[0xFF; 8]), Some(i64::MAX));
        assert_eq!(full.sample(&[0x80, 0, 0, 0, 0, 0, 0, 0]), Some(0));
    }

    #[test]
    fn largest_non_full_span_rejects_about_half() {
        // span = 2^63 + 1 needs 8 bytes and accepts only draws below 2^63 + 1.
        let r = IntRange::new(0, i64::MAX).expect("range");
        // [0, i64::MAX] has 2^63 values: accepted always.
        assert_eq!(r.rejection_probability(), 0.0);
        let r = IntRange::new(-1, i64::MAX).expect("range");
        assert!((r.rejection_probability() - 0.5).abs() < 1e-9);
        assert_eq!(r.sample(&[0xFF; 8]), None);
    }

    #[test]
    fn floats_span_zero_to_just_below_one() {
        assert_eq!(float_from(&[0; 8]), 0.0);
        let top = float_from(&[0xFF; 8]);
        assert!(top < 1.0);
        assert_eq!(top, 1.0 - 2f64.powi(-53));
        // The low 11 bits do not matter.
        assert_eq!(float_from(&[0, 0, 0, 0, 0, 0, 0x07, 0xFF]), 0.0);
    }

    #[test]
    fn uuids_are_version_4_variant_rfc() {
        let u = uuid_v4_from([0xFF; 16]);
        assert_eq!(u.get_version_num(), 4);
        assert_eq!(u.get_variant(), uuid::Variant::RFC4122);
        assert_eq!(u.to_string(), "ffffffff-ffff-4fff-bfff-ffffffffffff");
    }

    proptest! {
        #[test]
        fn samples_stay_in_range(min in any::<i64>(), max in any::<i64>(), seed in any::<[u8; 8]>()) {
            let (min, max) = (min.min(max), min.max(max));
            let range = IntRange::new(min, max).expect("ordered");
            let k = range.bytes_per_draw();
            if let Some(v) = range.sample(&seed[..k]) {
                prop_assert!(min <= v && v <= max);
            }
        }
    }
}
