//! What the dashboard shows, kept between redraws: the series of the
//! last laps (rate, p50, p99), the latency of the run so far, the
//! errors by kind, the client's and the server's latest figures, the
//! progress and, once the run is over, its validity verdict. Bounded:
//! a run of hours keeps the last [`POINTS`] laps of each series.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use loadrig_metrics::Histo;

use crate::tick::Tick;

/// How many laps each series keeps (more than a wide terminal shows).
pub const POINTS: usize = 512;

/// What the run is to do, for the progress.
#[derive(Debug, Clone, PartialEq)]
pub enum Goal {
    /// Measured seconds.
    Secs(f64),
    /// Operations.
    Ops(u64),
}

/// What the dashboard knows before the first lap.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The run in a few words (workload, target, load).
    pub title: String,
    pub goal: Goal,
    /// Processes whose laps are summed (1: this one).
    pub processes: u32,
}

/// The state the screen is drawn from.
#[derive(Debug)]
pub struct Board {
    pub setup: Setup,
    /// Per lap: successful operations per second.
    pub rate: VecDeque<u64>,
    /// Per lap: p50 and p99 in microseconds.
    pub p50: VecDeque<u64>,
    pub p99: VecDeque<u64>,
    /// The latency of every measured operation so far.
    pub so_far: Histo,
    pub errors: BTreeMap<String, u64>,
    pub last: Option<Tick>,
    /// The server's latest sample, by name (`--server-stats on`).
    pub server: Vec<(String, f64)>,
    /// Set once a stop was asked for from the keyboard.
    pub stopping: bool,
    /// The validity verdict, once the run is over.
    pub verdict: Option<String>,
    pub ended: bool,
}

fn push(series: &mut VecDeque<u64>, v: u64) {
    if series.len() == POINTS {
        series.pop_front();
    }
    series.push_back(v);
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl Board {
    pub fn new(setup: Setup) -> Board {
        Board {
            setup,
            rate: VecDeque::new(),
            p50: VecDeque::new(),
            p99: VecDeque::new(),
            so_far: Histo::new(),
            errors: BTreeMap::new(),
            last: None,
            server: Vec::new(),
            stopping: false,
            verdict: None,
            ended: false,
        }
    }

    /// A lap closed (this process's, or the sum of the processes').
    pub fn tick(&mut self, t: Tick) {
        let secs = t.length.as_secs_f64();
        let rate = if secs > 0.0 { t.ok as f64 / secs } else { 0.0 };
        push(&mut self.rate, rate.round() as u64);
        push(&mut self.p50, micros(t.latency.percentile(50.0)));
        push(&mut self.p99, micros(t.latency.percentile(99.0)));
        if !t.warmup {
            self.so_far.add(&t.latency);
        }
        for (k, n) in &t.errors {
            *self.errors.entry(k.clone()).or_default() += n;
        }
        self.last = Some(t);
    }

    /// How far the run is, 0 to 1, and a line saying what is left.
    pub fn progress(&self) -> (f64, String) {
        let (measured, ops) = self
            .last
            .as_ref()
            .map_or((Duration::ZERO, 0), |t| (t.measured, t.measured_ops));
        match self.setup.goal {
            Goal::Secs(total) if total > 0.0 => {
                let done = measured.as_secs_f64();
                let left = (total - done).max(0.0);
                let ratio = (done / total).clamp(0.0, 1.0);
                (
                    ratio,
                    format!("{done:.0} s of {total:.0} s, {left:.0} s left"),
                )
            }
            Goal::Ops(total) if total > 0 => {
                let ratio = (ops as f64 / total as f64).clamp(0.0, 1.0);
                let left = total.saturating_sub(ops);
                (ratio, format!("{ops} of {total} operations, {left} left"))
            }
            _ => (0.0, String::new()),
        }
    }

    /// The run so far in `n` buckets, log-spaced from its least to its
    /// greatest latency: each bucket's upper bound (µs) and count.
    pub fn histogram(&self, n: usize) -> Vec<(u64, u64)> {
        let h = &self.so_far;
        if h.is_empty() || n == 0 {
            return Vec::new();
        }
        let lo = micros(h.min()).max(1) as f64;
        let hi = (micros(h.max()) as f64).max(lo + 1.0);
        let step = (hi / lo).powf(1.0 / n as f64);
        let mut edges: Vec<u64> = (1..=n)
            .map(|i| (lo * step.powi(i as i32)).ceil() as u64)
            .collect();
        edges.dedup();
        let mut counts = vec![0u64; edges.len()];
        for v in h.inner().iter_recorded() {
            let us = v.value_iterated_to() / 1_000;
            let i = edges.partition_point(|&e| e < us).min(edges.len() - 1);
            counts[i] += v.count_at_value();
        }
        edges.into_iter().zip(counts).collect()
    }
}

/// A duration in microseconds, in a few characters.
pub fn short_us(us: u64) -> String {
    match us {
        0..=999 => format!("{us}us"),
        1_000..=999_999 => format!("{:.2}ms", us as f64 / 1e3),
        _ => format!("{:.2}s", us as f64 / 1e6),
    }
}

/// A count with thousands separated, for rates.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        // Not `is_multiple_of`: the workspace builds on Rust 1.85.
        if i > 0 && matches!((s.len() - i) % 3, 0) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(goal: Goal) -> Board {
        Board::new(Setup {
            title: "t".into(),
            goal,
            processes: 1,
        })
    }

    #[test]
    fn progress_counts_time_or_operations_left() {
        let mut b = board(Goal::Secs(10.0));
        b.tick(Tick {
            measured: Duration::from_secs(4),
            ..Tick::default()
        });
        let (r, line) = b.progress();
        assert!((r - 0.4).abs() < 1e-9);
        assert_eq!(line, "4 s of 10 s, 6 s left");
        let mut b = board(Goal::Ops(1000));
        b.tick(Tick {
            measured_ops: 250,
            ..Tick::default()
        });
        assert_eq!(b.progress().1, "250 of 1000 operations, 750 left");
    }

    #[test]
    fn the_histogram_holds_every_measured_operation_and_no_warmup() {
        let mut b = board(Goal::Secs(1.0));
        let mut latency = Histo::new();
        for us in [100u64, 200, 400, 800, 1_600, 3_200, 6_400] {
            latency.record(Duration::from_micros(us));
        }
        b.tick(Tick {
            warmup: true,
            latency: latency.clone(),
            ..Tick::default()
        });
        assert!(b.histogram(8).is_empty());
        b.tick(Tick {
            latency,
            length: Duration::from_secs(1),
            ok: 7,
            ..Tick::default()
        });
        let h = b.histogram(8);
        assert_eq!(h.iter().map(|(_, n)| n).sum::<u64>(), 7);
        assert!(h.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(b.rate.back(), Some(&7));
    }

    #[test]
    fn figures_read_short() {
        assert_eq!(short_us(850), "850us");
        assert_eq!(short_us(1_500), "1.50ms");
        assert_eq!(short_us(2_000_000), "2.00s");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(12), "12");
    }
}
