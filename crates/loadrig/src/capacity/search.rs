//! The search for the highest passing rate, as a pure state machine: it
//! says which rate to probe next from the outcomes so far, and knows
//! nothing of processes or reports, so its every path is a unit test.
//!
//! Bracket, then bisect. From `from`, the rate doubles until a probe
//! fails (or `max` passes); then the geometric midpoint of the highest
//! passing rate and the lowest failing one is probed until they are
//! within `resolution` of each other. Bisection and not interpolation
//! (regula falsi on the latency, or a fitted queueing curve): latency
//! against rate is a hockey stick, flat then vertical, and noisy near the
//! knee, where interpolation creeps in from one side and a noisy probe
//! throws it far off; bisection needs log2(bracket / resolution) probes
//! (4 from a doubling to 5%) whatever the curve's shape. The midpoint is
//! geometric because the bracket is a ratio (r to 2r): each probe halves
//! the ratio, not the difference.

/// The outcome of the probes so far, and what to probe next.
#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    from: f64,
    max: f64,
    /// `hi / lo` at which the search stops: 1 + resolution.
    close: f64,
    /// The highest rate that passed.
    pub pass: Option<f64>,
    /// The lowest rate that failed.
    pub fail: Option<f64>,
}

impl Search {
    /// `resolution` is a fraction (0.05 for 5%).
    pub fn new(from: f64, max: f64, resolution: f64) -> Search {
        Search {
            from,
            max: max.max(from),
            close: 1.0 + resolution,
            pass: None,
            fail: None,
        }
    }

    /// The rate to probe next; `None`: the search is over.
    pub fn next(&self) -> Option<f64> {
        match (self.pass, self.fail) {
            (None, None) => Some(self.from),
            // Even the lowest rate fails.
            (None, Some(_)) => None,
            (Some(p), None) if p >= self.max => None,
            (Some(p), None) => Some(round((p * 2.0).min(self.max))),
            (Some(p), Some(f)) if f / p <= self.close => None,
            (Some(p), Some(f)) => {
                let mid = round((p * f).sqrt());
                // Rounding may land on a rate already probed: the two are
                // as close as rates can be written.
                (mid > p && mid < f).then_some(mid)
            }
        }
    }

    /// What a probe at `rate` showed.
    pub fn record(&mut self, rate: f64, passed: bool) {
        if passed {
            self.pass = Some(self.pass.map_or(rate, |p| p.max(rate)));
        } else {
            self.fail = Some(self.fail.map_or(rate, |f| f.min(rate)));
        }
    }
}

/// A rate as it is written on the probe's command line: whole numbers
/// from 10/s up, two decimals below.
pub fn round(rate: f64) -> f64 {
    if rate >= 10.0 {
        rate.round()
    } else {
        (rate * 100.0).round() / 100.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every probe the search makes when the capacity is `cap`.
    fn probes(s: &mut Search, cap: f64) -> Vec<f64> {
        let mut seen = Vec::new();
        while let Some(r) = s.next() {
            seen.push(r);
            s.record(r, r <= cap);
            assert!(seen.len() < 100, "no end: {seen:?}");
        }
        seen
    }

    #[test]
    fn brackets_by_doubling_then_bisects_to_the_resolution() {
        let mut s = Search::new(100.0, 1e7, 0.05);
        let seen = probes(&mut s, 1000.0);
        assert_eq!(&seen[..5], [100.0, 200.0, 400.0, 800.0, 1600.0]);
        let (p, f) = (s.pass.unwrap(), s.fail.unwrap());
        assert!(p <= 1000.0 && f > 1000.0 && f / p <= 1.05, "{p} {f}");
        // A doubling bracket to 5%: four halvings of the log ratio
        // (2^(1/16) is 1.044).
        assert_eq!(seen.len(), 5 + 4, "{seen:?}");
    }

    #[test]
    fn the_lowest_rate_failing_ends_the_search_with_no_pass() {
        let mut s = Search::new(100.0, 1e7, 0.05);
        assert_eq!(probes(&mut s, 50.0), [100.0]);
        assert_eq!((s.pass, s.fail), (None, Some(100.0)));
    }

    #[test]
    fn the_highest_rate_passing_ends_the_search_with_no_fail() {
        let mut s = Search::new(100.0, 1000.0, 0.05);
        assert_eq!(probes(&mut s, 1e9), [100.0, 200.0, 400.0, 800.0, 1000.0]);
        assert_eq!((s.pass, s.fail), (Some(1000.0), None));
    }

    #[test]
    fn rates_too_close_to_write_apart_end_the_search() {
        let mut s = Search::new(10.0, 1e7, 0.01);
        let seen = probes(&mut s, 10.4);
        let (p, f) = (s.pass.unwrap(), s.fail.unwrap());
        assert_eq!((p, f), (10.0, 11.0), "{seen:?}");
    }
}
