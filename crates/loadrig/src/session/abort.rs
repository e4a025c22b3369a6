//! `--abort-after 10s` (docs/guides/stages.md, "Early stop"): a sink that
//! judges every `--threshold` on each measured lap's own figures and, once
//! one has been broken in every lap for the window, sets the run's stop
//! flag: the load ends as after a signal (in-flight operations answered,
//! what was issued verified), and the report says which threshold and
//! when. k6's `abortOnFail` with `delayAbortEval`, judged per lap rather
//! than on the running totals, so a breach is seen while it lasts.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use loadrig_metrics::LapView;
use loadrig_report::{holds_in_lap, Report, StoppedEarly};
use loadrig_spec::Threshold;

use super::Sink;

pub struct AbortSink {
    thresholds: Vec<Threshold>,
    kinds: Vec<&'static str>,
    window: f64,
    /// The engine's stop flag for this run.
    stop: Arc<AtomicBool>,
    /// Per threshold: measured seconds at the start of its current run of
    /// broken laps.
    broken_since: Vec<Option<f64>>,
    stopped: Option<StoppedEarly>,
}

impl AbortSink {
    pub fn new(
        thresholds: Vec<Threshold>,
        kinds: Vec<&'static str>,
        window: f64,
        stop: Arc<AtomicBool>,
    ) -> AbortSink {
        AbortSink {
            broken_since: vec![None; thresholds.len()],
            thresholds,
            kinds,
            window,
            stop,
            stopped: None,
        }
    }
}

impl Sink for AbortSink {
    fn lap(&mut self, lap: &LapView<'_>) {
        if lap.warmup || self.stopped.is_some() {
            return;
        }
        let end = lap.measured.as_secs_f64();
        let secs = lap.length.as_secs_f64();
        for (t, since) in self.thresholds.iter().zip(&mut self.broken_since) {
            if holds_in_lap(t, lap.lap, &self.kinds, secs, lap.pending) {
                *since = None;
                continue;
            }
            let from = *since.get_or_insert((end - secs).max(0.0));
            // A hair under the window counts: laps end a few microseconds
            // off their nominal times.
            if end - from >= self.window - 1e-3 {
                self.stopped = Some(StoppedEarly {
                    threshold: t.to_string(),
                    broken_since_secs: from,
                    stopped_at_secs: end,
                    window_secs: self.window,
                });
                self.stop.store(true, Ordering::Relaxed);
                return;
            }
        }
    }

    fn end(&mut self, report: &mut Report) -> Option<String> {
        let stopped = self.stopped.take()?;
        let line = stopped.line();
        report.stopped_early = Some(stopped);
        Some(line)
    }
}
