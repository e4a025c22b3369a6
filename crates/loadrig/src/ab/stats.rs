//! The A/B statistics, with no I/O: paired ratios B/A, a 95% t interval
//! on their logarithms, and the verdict against a threshold.
//!
//! Why a t interval on log ratios and not a bootstrap: an A/B has few
//! rounds (6 by default, each two whole runs), and with under about 20
//! pairs a percentile bootstrap's interval is too narrow (it cannot be
//! wider than the pairs seen, and with 6 pairs it takes few distinct
//! values), so it claims confidence it does not have; the t interval
//! widens honestly with few rounds (t = 2.57 at 5 degrees of freedom).
//! Logarithms because a ratio is symmetric on that scale (0.9 and 1/0.9
//! are equally far from 1) and a product of many small effects is close
//! to log-normal. The pairing removes what drifts between rounds (the
//! machine's other load), and alternating which runs first removes an
//! order effect (a warm cache, a cooling CPU) from the mean.

/// What the rounds show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// B is not worse than A by more than the threshold (95% confidence).
    Pass,
    /// B is worse than A by more than the threshold (95% confidence).
    Fail,
    /// The interval straddles the threshold.
    Inconclusive,
}

/// The ratio B/A: its geometric mean over the rounds and 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ratio {
    pub mean: f64,
    pub low: f64,
    pub high: f64,
}

/// Student's t quantile, the one the run's intervals use.
pub use loadrig_report::confidence::t975;

/// The ratio B/A from paired figures `(a, b)`; `None` with fewer than two
/// pairs or a figure not above 0.
pub fn ratio(pairs: &[(f64, f64)]) -> Option<Ratio> {
    if pairs.len() < 2 || pairs.iter().any(|&(a, b)| !(a > 0.0 && b > 0.0)) {
        return None;
    }
    let logs: Vec<f64> = pairs.iter().map(|&(a, b)| (b / a).ln()).collect();
    let n = logs.len() as f64;
    let mean = logs.iter().sum::<f64>() / n;
    let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let half = t975(logs.len() - 1) * (var / n).sqrt();
    Some(Ratio {
        mean: mean.exp(),
        low: (mean - half).exp(),
        high: (mean + half).exp(),
    })
}

/// The verdict on `r` when a higher figure is better (`higher_better`:
/// throughput) or worse (latency, CPU), and `threshold` a fraction (0.05).
/// B is worse by the factor A/B for the first, B/A for the second.
pub fn verdict(r: &Ratio, higher_better: bool, threshold: f64) -> Verdict {
    // The interval on "how much worse B is", as a factor.
    let (best, worst) = match higher_better {
        true => (1.0 / r.high, 1.0 / r.low),
        false => (r.low, r.high),
    };
    let limit = 1.0 + threshold;
    if best > limit {
        Verdict::Fail
    } else if worst < limit {
        Verdict::Pass
    } else {
        Verdict::Inconclusive
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_table_and_the_normal_far_out() {
        assert_eq!(t975(5), 2.571);
        assert!((t975(31) - 2.040).abs() < 0.001, "{}", t975(31));
        assert!((t975(120) - 1.980).abs() < 0.001, "{}", t975(120));
        assert!((t975(100_000) - 1.960).abs() < 0.001);
    }

    #[test]
    fn equal_runs_pass_and_a_tenth_slower_fails() {
        let same = [(100.0, 101.0), (100.0, 99.0), (102.0, 101.0), (99.0, 100.0)];
        let r = ratio(&same).unwrap();
        assert!(r.low < 1.0 && r.high > 1.0, "{r:?}");
        assert_eq!(verdict(&r, true, 0.05), Verdict::Pass);
        let slower = [(100.0, 91.0), (100.0, 90.5), (101.0, 91.5), (99.0, 90.0)];
        let r = ratio(&slower).unwrap();
        assert_eq!(verdict(&r, true, 0.05), Verdict::Fail, "{r:?}");
        // The same figures as latencies: B is lower, so better.
        assert_eq!(verdict(&r, false, 0.05), Verdict::Pass, "{r:?}");
    }

    #[test]
    fn noisy_rounds_are_inconclusive() {
        let noisy = [(100.0, 80.0), (100.0, 110.0), (100.0, 95.0)];
        let r = ratio(&noisy).unwrap();
        assert_eq!(verdict(&r, true, 0.05), Verdict::Inconclusive, "{r:?}");
        assert!(ratio(&[(1.0, 1.0)]).is_none());
        assert!(ratio(&[(1.0, 0.0), (1.0, 1.0)]).is_none());
    }
}
