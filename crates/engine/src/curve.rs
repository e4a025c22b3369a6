//! The open loop's schedule as a curve: the cumulative count of operations
//! due by each instant, and its inverse. Operation `i` (over all workers
//! and shards) is due when the count reaches `i`; with random gaps a worker
//! walks the count axis by random steps of the same mean instead. A
//! constant rate is the straight line `count = rate * t`; `--stages`
//! (docs/guides/stages.md) is a chain of ramps, each a quadratic in `t`,
//! inverted in closed form. A worker's queries move forward, so a cursor
//! keeps the current stage and a lookup costs no search.

use std::sync::Arc;

use loadrig_spec::Stages;

/// One stage: from `t0` for `len` seconds, the rate going from `r0` to
/// `r1`, the count from `n0` to `n1`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seg {
    t0: f64,
    len: f64,
    r0: f64,
    r1: f64,
    n0: f64,
    n1: f64,
}

impl Seg {
    /// Seconds into the stage at which `d` more operations are due.
    fn invert(&self, d: f64) -> f64 {
        if d <= 0.0 {
            return 0.0;
        }
        let a = (self.r1 - self.r0) / (2.0 * self.len);
        let root = (self.r0 * self.r0 + 4.0 * a * d).max(0.0).sqrt();
        // 2d / (r0 + root) is the root of a*t^2 + r0*t = d without the
        // cancellation of (root - r0) / 2a, and holds when a is 0.
        (2.0 * d / (self.r0 + root)).min(self.len)
    }

    fn count(&self, t: f64) -> f64 {
        let tau = (t - self.t0).clamp(0.0, self.len);
        self.n0 + self.r0 * tau + (self.r1 - self.r0) * tau * tau / (2.0 * self.len)
    }
}

/// When the cumulative count reaches a value, and the count due by a time.
#[derive(Debug, Clone)]
pub(crate) enum Curve {
    Constant { rate: f64 },
    Stages { segs: Arc<[Seg]>, at: usize },
}

impl Curve {
    pub fn constant(rate: f64) -> Curve {
        Curve::Constant { rate }
    }

    pub fn stages(stages: &Stages) -> Curve {
        let mut n = 0.0;
        let segs: Vec<Seg> = stages
            .segments()
            .map(|(t0, t1, r0, r1)| {
                let len = t1 - t0;
                let n0 = n;
                n += (r0 + r1) / 2.0 * len;
                Seg {
                    t0,
                    len,
                    r0,
                    r1,
                    n0,
                    n1: n,
                }
            })
            .collect();
        Curve::Stages {
            segs: segs.into(),
            at: 0,
        }
    }

    /// Seconds after the origin at which the count reaches `u`; `None`
    /// when it never does (the schedule ends first).
    pub fn time_of(&mut self, u: f64) -> Option<f64> {
        match self {
            Curve::Constant { rate } => (*rate > 0.0).then(|| u / *rate),
            Curve::Stages { segs, at } => {
                if segs.get(*at).is_none_or(|s| u < s.n0) {
                    *at = 0;
                }
                while let Some(s) = segs.get(*at) {
                    if u < s.n1 {
                        return Some(s.t0 + s.invert(u - s.n0));
                    }
                    *at += 1;
                }
                None
            }
        }
    }

    /// Operations due in the first `t` seconds after the origin.
    pub fn count_at(&self, t: f64) -> f64 {
        match self {
            Curve::Constant { rate } => rate * t.max(0.0),
            Curve::Stages { segs, .. } => {
                let i = segs.partition_point(|s| s.t0 + s.len <= t);
                match segs.get(i) {
                    Some(s) => s.count(t),
                    None => segs.last().map_or(0.0, |s| s.n1),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn a_ramp_is_the_inverse_of_its_integral() {
        let st = Stages::parse("4s:5000,1s:=2000,2s:0", 1000.0).unwrap();
        let mut c = Curve::stages(&st);
        let total = st.total();
        let mut last = -1.0;
        for i in 0..total as u64 {
            let t = c.time_of(i as f64).unwrap();
            assert!(t > last, "op {i}: {t} after {last}");
            assert!(close(c.count_at(t), i as f64), "op {i} at {t}");
            assert!(
                close(st.count_at(t), i as f64),
                "op {i}: spec and engine agree"
            );
            last = t;
        }
        assert!(c.time_of(total + 1.0).is_none());
        // Going back resets the cursor.
        assert_eq!(c.time_of(0.0), Some(0.0));
    }

    #[test]
    fn each_second_of_a_ramp_holds_its_mean() {
        let st = Stages::parse("4s:5000", 1000.0).unwrap();
        let mut c = Curve::stages(&st);
        let mut per = [0u32; 4];
        let mut i = 0.0;
        while let Some(t) = c.time_of(i) {
            per[t as usize] += 1;
            i += 1.0;
        }
        assert_eq!(per, [1500, 2500, 3500, 4500]);
    }

    #[test]
    fn a_ramp_from_zero_starts_at_zero() {
        let st = Stages::parse("10s:100", 0.0).unwrap();
        let mut c = Curve::stages(&st);
        assert_eq!(c.time_of(0.0), Some(0.0));
        // 1 operation is due by sqrt(2 * 10 / 100) s.
        assert!(close(c.time_of(1.0).unwrap(), 0.2f64.sqrt()));
    }
}
