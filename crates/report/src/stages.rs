//! The figures of each stage of a `--stages` run (docs/guides/stages.md):
//! the measured laps whose middle falls in the stage, added up, their
//! latency histograms merged and the percentiles read from the merge
//! (never averaged). Laps line up with the stages when the stages' lengths
//! are multiples of the lap; a lap that straddles a boundary counts in
//! the stage that holds most of it, and the last lap, the operations in
//! flight at the end answered, in the last stage.

use loadrig_metrics::Histo;

use crate::{decode_hdr, Report};

/// One stage as it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct StageFigures {
    /// Seconds from the start of the measured load.
    pub start_secs: f64,
    pub end_secs: f64,
    /// The rate the schedule asked for at the stage's start and end.
    pub from_rate: f64,
    pub to_rate: f64,
    /// The laps counted in the stage, and the seconds of the stage the
    /// run went through.
    pub laps: usize,
    pub secs: f64,
    pub ok: u64,
    pub errors: u64,
    /// Latency over the stage's laps, all kinds (microseconds; 0 when
    /// nothing completed).
    pub p50_us: f64,
    pub p99_us: f64,
}

impl StageFigures {
    /// Successful operations per second over the stage.
    pub fn achieved(&self) -> f64 {
        if self.secs > 0.0 {
            self.ok as f64 / self.secs
        } else {
            0.0
        }
    }
}

/// Each stage's figures; empty for a run without stages.
pub fn per_stage(r: &Report) -> Vec<StageFigures> {
    let Some(stages) = &r.spec.load.stages else {
        return Vec::new();
    };
    let mut out: Vec<(StageFigures, Histo)> = stages
        .segments()
        .map(|(a, b, r0, r1)| {
            let f = StageFigures {
                start_secs: a,
                end_secs: b,
                from_rate: r0,
                to_rate: r1,
                laps: 0,
                secs: 0.0,
                ok: 0,
                errors: 0,
                p50_us: 0.0,
                p99_us: 0.0,
            };
            (f, Histo::new())
        })
        .collect();
    let warm: f64 = r
        .laps
        .iter()
        .filter(|l| l.warmup)
        .map(|l| l.length_secs)
        .sum();
    for lap in r.laps.iter().filter(|l| !l.warmup) {
        let mid = lap.elapsed_secs - warm - lap.length_secs / 2.0;
        // A lap past the last stage is its in-flight operations answered.
        let Some((f, h)) = out
            .iter_mut()
            .position(|(f, _)| mid < f.end_secs)
            .or(out.len().checked_sub(1))
            .and_then(|i| out.get_mut(i))
        else {
            continue;
        };
        f.laps += 1;
        f.ok += lap.ok;
        f.errors += lap.errors;
        if let Ok(lh) = decode_hdr(&lap.latency_hdr) {
            h.add(&lh);
        }
    }
    // A stage lasts as long as the schedule says, unless the run stopped
    // in it (a signal, an early stop): the rate is over the time it ran.
    let ran = if r.interrupted {
        r.measured.elapsed_secs
    } else {
        f64::INFINITY
    };
    for (f, _) in &mut out {
        f.secs = (f.end_secs.min(ran) - f.start_secs).max(0.0);
    }
    out.into_iter()
        .map(|(mut f, h)| {
            if !h.is_empty() {
                f.p50_us = h.percentile(50.0).as_secs_f64() * 1e6;
                f.p99_us = h.percentile(99.0).as_secs_f64() * 1e6;
            }
            f
        })
        .collect()
}
