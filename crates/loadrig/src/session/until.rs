//! `--until 'p99 ±2%'` (docs/explanations/intervals.md): a sink that keeps, per
//! measured lap, its rate and each kind's percentiles (a few numbers, not
//! its histograms, so a run of hours costs little), and after each lap
//! computes the intervals as the report will, from the totals so far.
//! Once the one asked for is narrow enough it sets the run's stop flag:
//! the load ends as after a signal, in-flight operations answered.
//! Whether the run got there is read from the report's own intervals.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use loadrig_metrics::LapView;
use loadrig_report::confidence::{self, Intervals};
use loadrig_spec::Until;

use super::Sink;

pub struct UntilSink {
    until: Until,
    /// The engine's stop flag for this run.
    enough: Arc<AtomicBool>,
    /// Per measured lap: successful operations and seconds.
    rates: Vec<(u64, f64)>,
    /// Per kind, per measured lap: its percentiles and count.
    kinds: Vec<Vec<([f64; 4], u64)>>,
}

impl UntilSink {
    pub fn new(until: Until, enough: Arc<AtomicBool>) -> UntilSink {
        UntilSink {
            until,
            enough,
            rates: Vec::new(),
            kinds: Vec::new(),
        }
    }

    /// The intervals so far, from the measured totals in `lap`.
    fn so_far(&self, lap: &LapView<'_>) -> Intervals {
        let secs = lap.active.as_secs_f64();
        let point = if secs > 0.0 {
            lap.total.ok_ops() as f64 / secs
        } else {
            0.0
        };
        let kinds = lap
            .total
            .kinds
            .iter()
            .zip(&self.kinds)
            .map(|(k, laps)| {
                let (points, _) = confidence::lap_percentiles(&k.latency);
                confidence::kind_intervals("", points, laps)
            })
            .collect();
        Intervals {
            laps: self.rates.len(),
            throughput: confidence::throughput(point, &self.rates),
            kinds,
        }
    }
}

impl Sink for UntilSink {
    fn lap(&mut self, lap: &LapView<'_>) {
        if lap.warmup {
            return;
        }
        self.rates
            .push((lap.lap.ok_ops(), lap.length.as_secs_f64()));
        self.kinds.resize_with(lap.lap.kinds.len(), Vec::new);
        for (laps, k) in self.kinds.iter_mut().zip(&lap.lap.kinds) {
            laps.push(confidence::lap_percentiles(&k.latency));
        }
        if self.enough.load(Ordering::Relaxed) {
            return;
        }
        let widest = self.so_far(lap).widest(self.until.figure);
        if widest.is_some_and(|w| w <= self.until.within) {
            self.enough.store(true, Ordering::Relaxed);
        }
    }
}
