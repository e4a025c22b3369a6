//! One lap's figures as the dashboard shows them ([`Tick`]), their wire
//! form (one JSON line per lap, what a child of `--processes` sends its
//! parent), and the sum over processes ([`Sum`]): counts add, histograms
//! add, laps align by index.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use loadrig_metrics::Histo;
use serde::{Deserialize, Serialize};

/// The longest wire line read from a child: a lap's histogram, deflated,
/// is a few kilobytes; anything longer is not one of ours.
pub const MAX_LINE: usize = 1 << 20;

/// The prefix that marks a wire line among a child's other output.
const MARK: &str = "loadrig-lap ";

/// One lap of one process, or the sum of one lap over processes.
#[derive(Debug, Clone, Default)]
pub struct Tick {
    /// The lap's number from the start of the load (warm-up included).
    pub index: u64,
    /// Since the start of the load, at the lap's end.
    pub elapsed: Duration,
    /// The lap's length (the longest of the processes').
    pub length: Duration,
    pub warmup: bool,
    /// Successful operations in the lap.
    pub ok: u64,
    /// Failed operations in the lap, by kind.
    pub errors: BTreeMap<String, u64>,
    /// Operations in flight at the lap's end.
    pub in_flight: u64,
    /// Client CPU (user and system) used in the lap.
    pub cpu: Duration,
    /// Client resident memory at the lap's end.
    pub rss_bytes: u64,
    /// Latency of the lap's operations, every kind together.
    pub latency: Histo,
    /// Measured time so far, and operations measured so far (progress).
    pub measured: Duration,
    pub measured_ops: u64,
    /// How many processes this tick sums.
    pub processes: u32,
}

/// The wire form: numbers as numbers, the histogram in base64.
#[derive(Serialize, Deserialize)]
struct Wire {
    i: u64,
    el_us: u64,
    len_us: u64,
    w: bool,
    ok: u64,
    err: BTreeMap<String, u64>,
    fl: u64,
    cpu_us: u64,
    rss: u64,
    h: String,
    m_us: u64,
    m_ops: u64,
}

/// A wire line that is not a lap.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    #[error("not a lap line")]
    NotALap,
    #[error("lap line: {0}")]
    Json(#[from] serde_json::Error),
    #[error("lap line's histogram: {0}")]
    Histogram(String),
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl Tick {
    /// One line, newline not included, for a child's standard output.
    pub fn to_line(&self) -> String {
        let w = Wire {
            i: self.index,
            el_us: micros(self.elapsed),
            len_us: micros(self.length),
            w: self.warmup,
            ok: self.ok,
            err: self.errors.clone(),
            fl: self.in_flight,
            cpu_us: micros(self.cpu),
            rss: self.rss_bytes,
            h: base64::engine::general_purpose::STANDARD.encode(self.latency.encode()),
            m_us: micros(self.measured),
            m_ops: self.measured_ops,
        };
        // A struct of numbers, strings and a map of them always serialises.
        format!("{MARK}{}", serde_json::to_string(&w).unwrap_or_default())
    }

    /// Inverse of [`Tick::to_line`]; any other line is [`WireError::NotALap`].
    pub fn from_line(line: &str) -> Result<Tick, WireError> {
        let json = line
            .trim_end()
            .strip_prefix(MARK)
            .ok_or(WireError::NotALap)?;
        let w: Wire = serde_json::from_str(json)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(w.h.as_bytes())
            .map_err(|e| WireError::Histogram(e.to_string()))?;
        let latency = match bytes.is_empty() {
            true => Histo::new(),
            false => Histo::decode(&bytes).map_err(|e| WireError::Histogram(e.to_string()))?,
        };
        Ok(Tick {
            index: w.i,
            elapsed: Duration::from_micros(w.el_us),
            length: Duration::from_micros(w.len_us),
            warmup: w.w,
            ok: w.ok,
            errors: w.err,
            in_flight: w.fl,
            cpu: Duration::from_micros(w.cpu_us),
            rss_bytes: w.rss,
            latency,
            measured: Duration::from_micros(w.m_us),
            measured_ops: w.m_ops,
            processes: 1,
        })
    }

    /// Add another process's same lap: counts, CPU, memory and
    /// histograms add; times are the longest.
    pub fn absorb(&mut self, other: &Tick) {
        self.elapsed = self.elapsed.max(other.elapsed);
        self.length = self.length.max(other.length);
        self.warmup &= other.warmup;
        self.ok += other.ok;
        for (k, n) in &other.errors {
            *self.errors.entry(k.clone()).or_default() += n;
        }
        self.in_flight += other.in_flight;
        self.cpu += other.cpu;
        self.rss_bytes += other.rss_bytes;
        self.latency.add(&other.latency);
        self.measured = self.measured.max(other.measured);
        self.measured_ops += other.measured_ops;
        self.processes += other.processes;
    }
}

/// The laps of K processes, summed by index: a lap is complete once
/// every process still running has sent it. Bounded: a process that
/// falls more than [`Sum::BEHIND`] laps behind no longer holds the
/// others back (its late laps are dropped).
#[derive(Debug)]
pub struct Sum {
    running: u32,
    open: BTreeMap<u64, Tick>,
    /// Every lap below this has been handed out.
    done: u64,
}

impl Sum {
    /// How many laps may wait for a slow process.
    pub const BEHIND: usize = 8;

    pub fn new(processes: u32) -> Sum {
        Sum {
            running: processes,
            open: BTreeMap::new(),
            done: 0,
        }
    }

    /// A process's lap; the laps now complete, in order.
    pub fn add(&mut self, tick: Tick) -> Vec<Tick> {
        if tick.index < self.done {
            return Vec::new();
        }
        match self.open.get_mut(&tick.index) {
            Some(t) => t.absorb(&tick),
            None => {
                self.open.insert(tick.index, tick);
            }
        }
        self.complete()
    }

    /// A process ended: it sends no more laps.
    pub fn ended(&mut self) -> Vec<Tick> {
        self.running = self.running.saturating_sub(1);
        self.complete()
    }

    fn complete(&mut self) -> Vec<Tick> {
        let mut out = Vec::new();
        loop {
            let crowded = self.open.len() > Self::BEHIND;
            let Some(entry) = self.open.first_entry() else {
                break;
            };
            if entry.get().processes < self.running && !crowded {
                break;
            }
            let (i, t) = entry.remove_entry();
            self.done = i + 1;
            out.push(t);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tick(index: u64, ok: u64, ms: u64) -> Tick {
        let mut latency = Histo::new();
        for _ in 0..ok {
            latency.record(Duration::from_millis(ms));
        }
        Tick {
            index,
            ok,
            latency,
            errors: BTreeMap::from([("timeout".to_string(), 1)]),
            processes: 1,
            ..Tick::default()
        }
    }

    #[test]
    fn a_line_reads_back_as_the_tick() {
        let t = tick(3, 100, 2);
        let back = Tick::from_line(&t.to_line()).expect("a lap line");
        assert_eq!(back.index, 3);
        assert_eq!(back.ok, 100);
        assert_eq!(back.latency.len(), 100);
        assert_eq!(back.errors["timeout"], 1);
        assert!(matches!(Tick::from_line("hello"), Err(WireError::NotALap)));
        assert!(Tick::from_line("loadrig-lap {").is_err());
    }

    #[test]
    fn laps_are_summed_by_index_once_every_process_sent_them() {
        let mut s = Sum::new(2);
        assert!(s.add(tick(0, 10, 1)).is_empty());
        assert!(s.add(tick(1, 10, 1)).is_empty());
        let out = s.add(tick(0, 5, 9));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].ok, 15);
        assert_eq!(out[0].latency.len(), 15);
        assert_eq!(out[0].errors["timeout"], 2);
        // The second process ends: lap 1 is complete with the first's.
        let out = s.ended();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].ok, 10);
        // A late lap of a lap handed out is dropped.
        assert!(s.add(tick(0, 1, 1)).is_empty());
    }

    #[test]
    fn a_slow_process_holds_back_a_bounded_number_of_laps() {
        let mut s = Sum::new(2);
        let mut out = Vec::new();
        for i in 0..=Sum::BEHIND as u64 {
            out.extend(s.add(tick(i, 1, 1)));
        }
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].index, 0);
    }
}
