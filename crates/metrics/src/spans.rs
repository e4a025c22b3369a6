//! Which operation indices a run issued. An operation is a pure function
//! of the seed and its index, and the engine hands each worker its indices
//! as an arithmetic sequence (`first`, `first + stride`, ...), taken in
//! order and each one accounted for (ok, failed, in doubt or dropped) once
//! taken. So one [`Span`] per worker and phase says exactly what the run
//! issued, whatever stopped it: a count, a duration, a signal. Verification
//! recomputes the writes from the spans, in every mode (a run by time, with
//! warm-up, over processes and shards), instead of knowing them only for a
//! run by count.

use serde::{Deserialize, Serialize};

/// The indices one worker issued in one engine phase: `count` of them,
/// from `first` by `stride`. Kept in reports as `[phase, first, stride,
/// count]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(from = "(u32, u64, u64, u64)", into = "(u32, u64, u64, u64)")]
pub struct Span {
    /// The engine phase: 0, or in a run whose kinds run one after the
    /// other (redis-benchmark's tests) the kind the phase ran.
    pub phase: u32,
    pub first: u64,
    pub stride: u64,
    pub count: u64,
}

impl From<(u32, u64, u64, u64)> for Span {
    fn from((phase, first, stride, count): (u32, u64, u64, u64)) -> Self {
        Span {
            phase,
            first,
            stride,
            count,
        }
    }
}

impl From<Span> for (u32, u64, u64, u64) {
    fn from(s: Span) -> Self {
        (s.phase, s.first, s.stride, s.count)
    }
}

impl Span {
    /// The `k`-th index of the span (`k < count`).
    #[inline]
    pub fn index(&self, k: u64) -> u64 {
        self.first.wrapping_add(k.wrapping_mul(self.stride))
    }

    /// Every index of the span, in the order issued.
    pub fn indices(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.count).map(|k| self.index(k))
    }
}

/// The indices issued in total by `spans` of phase `phase`.
pub fn issued(spans: &[Span], phase: u32) -> u64 {
    spans
        .iter()
        .filter(|s| s.phase == phase)
        .map(|s| s.count)
        .fold(0u64, u64::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_lists_its_indices_and_round_trips_as_a_tuple() {
        let s = Span {
            phase: 2,
            first: 3,
            stride: 8,
            count: 3,
        };
        assert_eq!(s.indices().collect::<Vec<_>>(), vec![3, 11, 19]);
        let text = serde_json::to_string(&s).unwrap();
        assert_eq!(text, "[2,3,8,3]");
        assert_eq!(serde_json::from_str::<Span>(&text).unwrap(), s);
        let other = Span { phase: 0, ..s };
        assert_eq!(issued(&[s, other, s], 2), 6);
    }
}
