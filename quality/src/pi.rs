//! The Monte Carlo estimate of pi, as `ent` computes it: each successive group of 6 bytes is a
//! point (x, y) of two 24-bit big-endian coordinates in a square of side 2²⁴ − 1; the fraction
//! of points inside the quarter circle of that radius, times 4, estimates pi. Trailing bytes
//! that do not fill a group are not used, as in `ent`.
//!
//! For uniformly random data each point is inside with probability π/4, so the number inside is
//! binomial and the estimate has standard error `4·√(p(1−p)/n)` with p = π/4, which
//! [`MonteCarloPi::standard_error`] reports for the verdict's sigma bound. (The grid of 2²⁴
//! values per axis moves that probability by about 10⁻⁷, far below any standard error here.)

use std::f64::consts::PI;

/// Bytes per point: 3 for x, then 3 for y.
pub const GROUP_BYTES: usize = 6;

/// The circle's radius squared: `ent`'s `(256³ − 1)²`, exact in a u64.
const RADIUS_SQUARED: u64 = ((1 << 24) - 1) * ((1 << 24) - 1);

/// The probability that a uniformly random point lies inside the circle.
const P_INSIDE: f64 = PI / 4.0;

/// The Monte Carlo pi test of one sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MonteCarloPi {
    /// Points drawn: whole 6-byte groups in the sample.
    pub points: u64,
    /// Points inside the circle.
    pub inside: u64,
    /// `4 · inside / points` (NaN without a point).
    pub estimate: f64,
    /// `|estimate − π|`.
    pub error: f64,
    /// `100 · |estimate − π| / π`, as `ent` prints it.
    pub error_percent: f64,
    /// The standard error of the estimate for this many points of uniformly random data.
    pub standard_error: f64,
}

impl MonteCarloPi {
    /// The test on a whole sample.
    pub fn of(sample: &[u8]) -> Self {
        let mut points = PiPoints::default();
        points.add(sample);
        points.finish()
    }

    /// The result for `inside` of `points` points.
    fn from_counts(points: u64, inside: u64) -> Self {
        let n = points as f64;
        let estimate = 4.0 * inside as f64 / n;
        let error = (estimate - PI).abs();
        Self {
            points,
            inside,
            estimate,
            error,
            error_percent: 100.0 * error / PI,
            standard_error: 4.0 * (P_INSIDE * (1.0 - P_INSIDE) / n).sqrt(),
        }
    }

    /// How many standard errors the estimate is away from π.
    pub fn standard_errors_off(&self) -> f64 {
        self.error / self.standard_error
    }
}

/// Counts points as bytes arrive in pieces of any length; a group split across two pieces is
/// completed from the next one.
#[derive(Debug, Default, Clone)]
pub(crate) struct PiPoints {
    pending: [u8; GROUP_BYTES],
    pending_len: usize,
    points: u64,
    inside: u64,
}

impl PiPoints {
    pub(crate) fn add(&mut self, mut bytes: &[u8]) {
        if self.pending_len > 0 {
            let take = (GROUP_BYTES - self.pending_len).min(bytes.len());
            self.pending[self.pending_len..self.pending_len + take].copy_from_slice(&bytes[..take]);
            self.pending_len += take;
            bytes = &bytes[take..];
            if self.pending_len < GROUP_BYTES {
                return;
            }
            let group = self.pending;
            self.count(&group);
            self.pending_len = 0;
        }
        let (groups, rest) = bytes.as_chunks::<GROUP_BYTES>();
        for group in groups {
            self.count(group);
        }
        self.pending[..rest.len()].copy_from_slice(rest);
        self.pending_len = rest.len();
    }

    fn count(&mut self, group: &[u8; GROUP_BYTES]) {
        let [x0, x1, x2, y0, y1, y2] = group.map(u64::from);
        let x = (x0 << 16) | (x1 << 8) | x2;
        let y = (y0 << 16) | (y1 << 8) | y2;
        self.points += 1;
        self.inside += u64::from(x * x + y * y <= RADIUS_SQUARED);
    }

    pub(crate) fn finish(&self) -> MonteCarloPi {
        MonteCarloPi::from_counts(self.points, self.inside)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corners_of_the_square() {
        // (0, 0) is inside; (max, max) is outside; (max, 0) lies on the circle, which counts as
        // inside (`ent` tests `<=`).
        let sample = [0, 0, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255, 255, 0, 0, 0];
        let pi = MonteCarloPi::of(&sample);
        assert_eq!((pi.points, pi.inside), (3, 2));
        assert!((pi.estimate - 8.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn trailing_bytes_are_ignored() {
        let pi = MonteCarloPi::of(&[0; 17]);
        assert_eq!((pi.points, pi.inside), (2, 2));
        assert_eq!(pi.estimate, 4.0);
        assert!((pi.error_percent - 100.0 * (4.0 - PI) / PI).abs() < 1e-12);
    }

    #[test]
    fn pieces_of_any_length_count_the_same_points() {
        let sample: Vec<u8> =
            (0u32..6000).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let whole = MonteCarloPi::of(&sample);
        for piece in [1, 5, 7, 13, 2500] {
            let mut points = PiPoints::default();
            for part in sample.chunks(piece) {
                points.add(part);
            }
            assert_eq!(points.finish(), whole, "pieces of {piece}");
        }
    }

    #[test]
    fn standard_error_shrinks_with_the_square_root_of_the_points() {
        let few = MonteCarloPi::from_counts(100, 78);
        let many = MonteCarloPi::from_counts(10_000, 7854);
        assert!((few.standard_error / many.standard_error - 10.0).abs() < 1e-9);
        // 4·√(π/4·(1 − π/4)/100) = 0.16422...
        assert!((few.standard_error - 0.164_22).abs() < 1e-4);
    }
}
