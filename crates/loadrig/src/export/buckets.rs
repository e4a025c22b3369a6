//! The bucket layout every exported latency histogram shares, and the
//! filling of it from an HDR histogram.
//!
//! | bucket `k` | upper bound (`le`) |
//! |---|---|
//! | 0 | 1 µs |
//! | k | 2^(k/8) µs: eight buckets per doubling |
//! | [`COUNT`] - 1 = 224 | 2^28 µs ≈ 268 s |
//! | +Inf | everything above, up to the one-hour clamp |
//!
//! Why eight per doubling: PromQL's `histogram_quantile` interpolates
//! linearly inside the bucket the quantile falls in, so its answer and
//! the true value lie in the same bucket `(b, b·2^(1/8)]` and differ by
//! at most 2^(1/8) − 1 = 9.05% of the true value ([`MAX_RELATIVE_ERROR`]);
//! the report's own percentiles are HDR's, within 0.1%. Finer buckets
//! would cost series (each one a series in Prometheus); 225 per kind and
//! histogram is what a 9% bound costs from 1 µs to minutes.

use loadrig_metrics::Histo;

/// Buckets per doubling.
pub const PER_OCTAVE: u32 = 8;
/// Finite buckets: 1 µs to 2^28 µs.
pub const COUNT: usize = 28 * PER_OCTAVE as usize + 1;
/// How far `histogram_quantile` over these buckets may land from the
/// true value, relative to it: 2^(1/8) − 1, rounded up.
#[cfg_attr(not(test), allow(dead_code))] // stated in the docs, held by the tests
pub const MAX_RELATIVE_ERROR: f64 = 0.091;

/// Bucket `k`'s upper bound in nanoseconds (exact for the powers of two,
/// rounded down to the nanosecond in between).
pub fn bound_nanos(k: usize) -> f64 {
    1_000.0 * 2f64.powf(k as f64 / f64::from(PER_OCTAVE))
}

/// Bucket `k`'s upper bound in seconds, as the `le` label shows it.
pub fn bound_secs(k: usize) -> f64 {
    bound_nanos(k) / 1e9
}

/// The bucket a value of `nanos` falls in (`COUNT` for +Inf).
pub fn bucket_of(nanos: u64) -> usize {
    let n = nanos as f64;
    if n <= 1_000.0 {
        return 0;
    }
    // A first guess from the logarithm, then corrected against the
    // bounds themselves so float rounding never moves a value across one.
    let guess = ((n / 1_000.0).log2() * f64::from(PER_OCTAVE)).ceil() as usize;
    let mut k = guess.min(COUNT);
    while k > 0 && k <= COUNT && bound_nanos(k - 1) >= n {
        k -= 1;
    }
    while k < COUNT && bound_nanos(k) < n {
        k += 1;
    }
    k
}

/// A histogram in this layout: per-bucket counts (not cumulative), the
/// +Inf bucket last, and the sum of the values in seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Buckets {
    pub counts: Vec<u64>,
    pub sum_secs: f64,
}

impl Buckets {
    /// `h`'s counts in this layout. Each HDR bucket goes whole to the
    /// bucket of its highest equivalent value, the value HDR reports for
    /// a percentile, so a quantile lands in the bucket of the report's.
    pub fn of(h: &Histo) -> Buckets {
        let mut counts = vec![0u64; COUNT + 1];
        let inner = h.inner();
        for v in inner.iter_recorded() {
            let value = inner.highest_equivalent(v.value_iterated_to());
            counts[bucket_of(value)] += v.count_at_value();
        }
        let sum_secs = inner.mean() * inner.len() as f64 / 1e9;
        Buckets { counts, sum_secs }
    }

    /// `other`'s counts added.
    pub fn add(&mut self, other: &Buckets) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.sum_secs += other.sum_secs;
    }

    /// Every value counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_bounds_double_every_eight_buckets() {
        assert_eq!(bound_nanos(0), 1_000.0);
        assert_eq!(bound_nanos(8), 2_000.0);
        assert_eq!(bound_nanos(COUNT - 1), 1_000.0 * (1u64 << 28) as f64);
        let ratio = bound_nanos(1) / bound_nanos(0);
        assert!(ratio - 1.0 <= MAX_RELATIVE_ERROR, "{ratio}");
    }

    #[test]
    fn a_value_falls_in_the_bucket_whose_bound_is_the_first_above_it() {
        for n in [
            1u64,
            999,
            1_000,
            1_001,
            1_090,
            1_091,
            2_000,
            2_001,
            123_456_789,
        ] {
            let k = bucket_of(n);
            assert!(bound_nanos(k) >= n as f64, "{n} in {k}");
            assert!(k == 0 || bound_nanos(k - 1) < n as f64, "{n} in {k}");
        }
        assert_eq!(bucket_of(2_000), 8);
        assert_eq!(bucket_of(3_600_000_000_000), COUNT);
    }

    /// A quantile taken from the buckets as `histogram_quantile` takes it
    /// lands within the stated error of HDR's.
    #[test]
    fn a_quantile_from_the_buckets_is_within_the_stated_error() {
        let mut h = Histo::new();
        for i in 0..100_000u64 {
            h.record(Duration::from_nanos(20_000 + (i * 7_919) % 3_000_000));
        }
        let b = Buckets::of(&h);
        assert_eq!(b.total(), 100_000);
        for q in [0.5, 0.9, 0.99, 0.999] {
            let truth = h.percentile(q * 100.0).as_nanos() as f64;
            let got = quantile(q, &b);
            let err = (got - truth).abs() / truth;
            assert!(err <= MAX_RELATIVE_ERROR, "q {q}: {got} vs {truth} ({err})");
        }
    }

    /// Prometheus's `histogram_quantile`, for the finite buckets.
    fn quantile(q: f64, b: &Buckets) -> f64 {
        let rank = q * b.total() as f64;
        let mut below = 0u64;
        for (k, &n) in b.counts.iter().enumerate() {
            if (below + n) as f64 >= rank && n > 0 {
                let lo = if k == 0 { 0.0 } else { bound_nanos(k - 1) };
                return lo + (bound_nanos(k) - lo) * (rank - below as f64) / n as f64;
            }
            below += n;
        }
        f64::NAN
    }
}
