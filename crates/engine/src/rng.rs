//! Deterministic randomness: every operation draws from a generator seeded
//! by (run seed, operation index), so an operation is a pure function of its
//! index and a run can be split across processes by index range.

/// SplitMix64's finaliser: a strong 64-bit mix.
#[inline]
pub const fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A small fast generator (SplitMix64 stream).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// The generator of operation `index` in a run seeded with `seed`.
    #[inline]
    pub fn for_op(seed: u64, index: u64) -> Rng {
        Rng(mix64(
            seed ^ mix64(index.wrapping_add(0x9e37_79b9_7f4a_7c15)),
        ))
    }

    /// A generator for a named stream of the run (e.g. a worker's arrivals).
    pub fn stream(seed: u64, stream: u64) -> Rng {
        Rng(mix64(
            mix64(seed) ^ stream.wrapping_mul(0xd1b5_4a32_d192_ed03),
        ))
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.0)
    }

    /// Uniform in `0..n` (n > 0), by Lemire's multiply-shift.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_and_index_give_the_same_draws() {
        let a: Vec<u64> = (0..5).map(|_| Rng::for_op(7, 99).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(
            Rng::for_op(7, 99).next_u64(),
            Rng::for_op(7, 100).next_u64()
        );
        assert_ne!(Rng::for_op(7, 99).next_u64(), Rng::for_op(8, 99).next_u64());
    }

    #[test]
    fn below_is_roughly_uniform() {
        let mut r = Rng::stream(1, 2);
        let mut counts = [0u32; 10];
        for _ in 0..100_000 {
            counts[r.below(10) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_000..11_000).contains(&c)),
            "{counts:?}"
        );
    }
}
