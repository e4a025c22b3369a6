//! 95% confidence intervals on a run's figures: throughput, and p50, p90,
//! p99 and p99.9 of each kind (docs/explanations/intervals.md). Pure arithmetic, no
//! I/O: what a report stores, what `merge` recomputes from the merged
//! laps, and what `--until` asks of the laps so far.
//!
//! The method is *sectioning* over the measured laps (Asmussen and Glynn,
//! Stochastic Simulation, III.5a): each lap is a batch; the figure's own
//! estimate (the run's throughput, a percentile of the run's histogram)
//! is the centre, and the spread of the laps' estimates around it, each
//! weighted by its size (seconds for a rate, values for a percentile),
//! gives the width with Student's t on `laps - 1` degrees of freedom.
//! Laps are long against the correlation time of a load, so their
//! estimates are close to independent where single operations are not
//! (a queue makes neighbours alike). Below [`MIN_LAPS`] laps there is no
//! interval: with so few batches the variance estimate is not worth one.

use loadrig_metrics::Histo;
use serde::{Deserialize, Serialize};

use crate::{decode_hdr, LapReport, Measured};

/// The fewest laps (batches) an interval is computed from.
pub const MIN_LAPS: usize = 10;

/// The percentiles that get an interval, as the table names them.
pub const PERCENTILES: [(&str, f64); 4] =
    [("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p99.9", 99.9)];

/// A two-sided 95% interval around a figure, in the figure's unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// The figure itself (the run's, not a mean of laps).
    pub point: f64,
    pub low: f64,
    pub high: f64,
}

impl Interval {
    /// Half the width over the figure: 0.04 for `±4%`; `None` for a
    /// figure of 0.
    pub fn relative(&self) -> Option<f64> {
        (self.point > 0.0).then(|| (self.high - self.low) / 2.0 / self.point)
    }

    pub fn contains(&self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }
}

/// The intervals of one run (a report's `intervals`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Intervals {
    /// Measured laps the throughput's interval is over.
    pub laps: usize,
    /// Successful operations per second; absent below [`MIN_LAPS`] laps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<Interval>,
    /// One per kind, in the report's order.
    pub kinds: Vec<KindIntervals>,
}

/// A kind's latency percentiles with their intervals, in microseconds;
/// each absent below [`MIN_LAPS`] laps in which the kind completed
/// operations (or when the report kept no per-kind laps).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KindIntervals {
    pub name: String,
    /// Measured laps in which the kind recorded latencies.
    pub laps: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_us: Option<Interval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90_us: Option<Interval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_us: Option<Interval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_9_us: Option<Interval>,
}

impl KindIntervals {
    /// The intervals in [`PERCENTILES`]' order.
    pub fn all(&self) -> [Option<Interval>; 4] {
        [self.p50_us, self.p90_us, self.p99_us, self.p99_9_us]
    }

    /// The interval of the percentile named as the table names it.
    pub fn get(&self, name: &str) -> Option<Interval> {
        let i = PERCENTILES.iter().position(|(n, _)| *n == name)?;
        self.all()[i]
    }
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom:
/// a table to 30, then the Cornish-Fisher expansion (within 1e-4 there).
pub fn t975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df - 1],
        _ => {
            let (z, n) = (1.959_964_f64, df as f64);
            z + (z.powi(3) + z) / (4.0 * n)
                + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * n * n)
        }
    }
}

/// The 95% interval around `point` from batches `(estimate, weight)`:
/// the weighted spread of the estimates around `point`, over the total
/// weight, is the variance of `point` (a batch's variance goes as one
/// over its weight). With equal weights this is the textbook
/// `t * sqrt(sum (b_i - point)^2 / (n (n - 1)))`. `None` below
/// [`MIN_LAPS`] batches of positive weight.
pub fn sectioned(point: f64, batches: &[(f64, f64)]) -> Option<Interval> {
    let used: Vec<(f64, f64)> = batches
        .iter()
        .copied()
        .filter(|(b, w)| *w > 0.0 && b.is_finite())
        .collect();
    let n = used.len();
    if n < MIN_LAPS || !point.is_finite() {
        return None;
    }
    let total: f64 = used.iter().map(|(_, w)| w).sum();
    let spread: f64 = used
        .iter()
        .map(|(b, w)| w * (b - point).powi(2))
        .sum::<f64>()
        / (n - 1) as f64;
    let half = t975(n - 1) * (spread / total).sqrt();
    Some(Interval {
        point,
        low: point - half,
        high: point + half,
    })
}

/// A kind's percentiles (`points`, the run's, µs) with intervals from
/// each lap's percentiles and value counts (`laps`, empty laps skipped).
pub fn kind_intervals(name: &str, points: [f64; 4], laps: &[([f64; 4], u64)]) -> KindIntervals {
    let laps: Vec<&([f64; 4], u64)> = laps.iter().filter(|(_, n)| *n > 0).collect();
    let at = |i: usize| {
        let batches: Vec<(f64, f64)> = laps.iter().map(|(p, n)| (p[i], *n as f64)).collect();
        sectioned(points[i], &batches)
    };
    KindIntervals {
        name: name.to_string(),
        laps: laps.len(),
        p50_us: at(0),
        p90_us: at(1),
        p99_us: at(2),
        p99_9_us: at(3),
    }
}

/// A histogram's [`PERCENTILES`] in microseconds, and its count.
pub fn lap_percentiles(h: &Histo) -> ([f64; 4], u64) {
    let us = |p: f64| h.percentile(p).as_nanos() as f64 / 1e3;
    (PERCENTILES.map(|(_, p)| us(p)), h.len())
}

/// The throughput's interval: `point` the run's rate, `laps` each lap's
/// `(successful operations, seconds)`.
pub fn throughput(point: f64, laps: &[(u64, f64)]) -> Option<Interval> {
    let batches: Vec<(f64, f64)> = laps
        .iter()
        .filter(|(_, secs)| *secs > 0.0)
        .map(|(ok, secs)| (*ok as f64 / secs, *secs))
        .collect();
    sectioned(point, &batches)
}

impl Intervals {
    /// The intervals of a run from its measured laps and its totals. A
    /// lap's per-kind histograms are `kinds_hdr` (or, with one kind,
    /// `latency_hdr`); a report that kept none has no kind intervals.
    pub fn of(laps: &[LapReport], m: &Measured) -> Result<Intervals, String> {
        let measured: Vec<&LapReport> = laps.iter().filter(|l| !l.warmup).collect();
        let rates: Vec<(u64, f64)> = measured.iter().map(|l| (l.ok, l.length_secs)).collect();
        let one = m.kinds.len() == 1;
        let mut kinds = Vec::with_capacity(m.kinds.len());
        for (i, k) in m.kinds.iter().enumerate() {
            let mut per_lap = Vec::with_capacity(measured.len());
            for l in &measured {
                let hdr = if one {
                    Some(&l.latency_hdr)
                } else {
                    l.kinds_hdr.get(i)
                };
                if let Some(hdr) = hdr {
                    per_lap.push(lap_percentiles(&decode_hdr(hdr)?));
                }
            }
            let s = &k.latency;
            let points = [s.p50_us, s.p90_us, s.p99_us, s.p99_9_us];
            kinds.push(kind_intervals(&k.name, points, &per_lap));
        }
        Ok(Intervals {
            laps: rates.len(),
            throughput: throughput(m.throughput, &rates),
            kinds,
        })
    }

    /// The widest relative half-width of `figure` (`throughput` or a
    /// percentile's name) over the kinds that ran; `None` when one of
    /// them has no interval yet.
    pub fn widest(&self, figure: &str) -> Option<f64> {
        if figure == "throughput" {
            return self.throughput.and_then(|i| i.relative());
        }
        let mut widest: Option<f64> = None;
        for k in self.kinds.iter().filter(|k| k.laps > 0) {
            let r = k.get(figure)?.relative()?;
            widest = Some(widest.map_or(r, |w| w.max(r)));
        }
        widest
    }
}

/// `±4%`, `±0.8%`: a relative half-width as the summary shows it.
pub fn plus_minus(relative: f64) -> String {
    let pct = 100.0 * relative;
    if pct < 10.0 {
        format!("±{pct:.1}%")
    } else {
        format!("±{pct:.0}%")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_tables() {
        assert_eq!(t975(9), 2.262);
        assert!((t975(40) - 2.021).abs() < 1e-3, "{}", t975(40));
        assert!((t975(120) - 1.980).abs() < 1e-3, "{}", t975(120));
        assert!((t975(100_000) - 1.960).abs() < 1e-3);
    }

    /// Ten equal batches: the textbook batch-means interval, by hand.
    #[test]
    fn equal_batches_give_the_textbook_interval() {
        let b: Vec<(f64, f64)> = [9.0, 11.0, 10.0, 12.0, 8.0, 10.0, 10.0, 11.0, 9.0, 10.0]
            .iter()
            .map(|x| (*x, 1.0))
            .collect();
        let i = sectioned(10.0, &b).unwrap();
        // sum of squares 12, n(n - 1) = 90: sd of the mean sqrt(12/90).
        let half = 2.262 * (12.0f64 / 90.0).sqrt();
        assert!((i.high - 10.0 - half).abs() < 1e-12, "{i:?}");
        assert!((10.0 - i.low - half).abs() < 1e-12, "{i:?}");
        assert!((i.relative().unwrap() - half / 10.0).abs() < 1e-12);
    }

    /// Weights scale out: ten batches of weight 5 give the same interval
    /// as of weight 1; a batch of no weight is not a batch.
    #[test]
    fn weights_are_sizes_and_empty_batches_do_not_count() {
        let mk = |w: f64| -> Vec<(f64, f64)> { (0..10).map(|i| (i as f64, w)).collect() };
        let a = sectioned(4.5, &mk(1.0)).unwrap();
        let b = sectioned(4.5, &mk(5.0)).unwrap();
        assert!((a.low - b.low).abs() < 1e-12 && (a.high - b.high).abs() < 1e-12);
        let mut nine = mk(1.0);
        nine[0].1 = 0.0;
        assert_eq!(sectioned(4.5, &nine), None, "nine batches are too few");
        // A big batch far off widens the interval more than a small one.
        let mut big = mk(1.0);
        big[9] = (20.0, 10.0);
        let mut small = mk(1.0);
        small[9] = (20.0, 0.1);
        let (wb, ws) = (
            sectioned(4.5, &big).unwrap(),
            sectioned(4.5, &small).unwrap(),
        );
        assert!(wb.high - wb.low > ws.high - ws.low);
    }

    /// Identical laps: an interval of no width, centred on the run's figure.
    #[test]
    fn identical_laps_give_no_width() {
        let laps: Vec<(u64, f64)> = vec![(1000, 1.0); 12];
        let i = throughput(1000.0, &laps).unwrap();
        assert_eq!((i.low, i.point, i.high), (1000.0, 1000.0, 1000.0));
        assert_eq!(throughput(1000.0, &laps[..9]), None);
    }

    /// Batches drawn around a known mean cover it about 95% of the time:
    /// 2,000 intervals of 20 normal-ish batches (sums of uniforms).
    #[test]
    fn the_interval_covers_about_95_percent() {
        let mut x: u64 = 7;
        let mut uniform = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut covered = 0;
        for _ in 0..2_000 {
            let b: Vec<(f64, f64)> = (0..20)
                .map(|_| ((0..12).map(|_| uniform()).sum::<f64>() - 6.0, 1.0))
                .collect();
            let mean = b.iter().map(|(v, _)| v).sum::<f64>() / 20.0;
            covered += usize::from(sectioned(mean, &b).unwrap().contains(0.0));
        }
        assert!((1_860..=1_940).contains(&covered), "{covered} of 2000");
    }

    #[test]
    fn kinds_skip_their_empty_laps_and_name_the_widest() {
        let lap = |p99: f64, n: u64| ([1.0, 2.0, p99, 4.0], n);
        let mut laps: Vec<([f64; 4], u64)> =
            (0..10).map(|i| lap(10.0 + f64::from(i % 2), 100)).collect();
        laps.push(lap(0.0, 0));
        let k = kind_intervals("get", [1.0, 2.0, 10.5, 4.0], &laps);
        assert_eq!(k.laps, 10);
        let p99 = k.get("p99").unwrap();
        assert!(
            p99.contains(10.5) && p99.low > 10.0 && p99.high < 11.0,
            "{p99:?}"
        );
        assert_eq!(k.get("p50").unwrap().relative(), Some(0.0));
        let all = Intervals {
            laps: 10,
            throughput: None,
            kinds: vec![k.clone()],
        };
        assert_eq!(all.widest("p99"), p99.relative());
        assert_eq!(all.widest("throughput"), None);
        let short = kind_intervals("set", [1.0; 4], &laps[..9]);
        let both = Intervals {
            laps: 10,
            throughput: None,
            kinds: vec![k, short],
        };
        assert_eq!(both.widest("p99"), None, "one kind without an interval");
    }

    #[test]
    fn plus_minus_is_short() {
        assert_eq!(plus_minus(0.0083), "±0.8%");
        assert_eq!(plus_minus(0.04), "±4.0%");
        assert_eq!(plus_minus(0.137), "±14%");
    }
}
