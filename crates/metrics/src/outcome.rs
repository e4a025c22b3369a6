//! What one engine run measured, as the engine hands it over and the
//! report keeps it: the warm-up's and the measured snapshots, the measured
//! time, and the laps.

use std::time::Duration;

use crate::{ClientLap, Snapshot};

/// What a run measured.
#[derive(Debug)]
pub struct Outcome {
    /// Operations of the warm-up (not in the figures, but they did write).
    pub warmup: Snapshot,
    pub measured: Snapshot,
    /// From the end of the warm-up to the last completion (or delivery).
    pub elapsed: Duration,
    pub laps: Vec<Lap>,
    /// Stopped early by the stop flag (Ctrl-C).
    pub interrupted: bool,
}

/// A lap as kept for the report: counts and the latency histogram of all
/// kinds, so laps of several runs merge by wall clock.
#[derive(Debug, Clone)]
pub struct Lap {
    pub elapsed: Duration,
    pub length: Duration,
    /// Wall clock at the end of the lap, in milliseconds since the epoch.
    pub unix_ms: u64,
    pub warmup: bool,
    pub ok: u64,
    pub errors: u64,
    /// Messages listeners received in this lap (not operations).
    pub delivered: u64,
    pub pending: u64,
    /// Latency of all kinds in this lap, HdrHistogram's compressed V2 form.
    pub latency: Vec<u8>,
    /// Latency of each kind in this lap, in the same form, when there is
    /// more than one kind (with one, it is `latency`): what a kind's
    /// confidence intervals are computed from.
    pub kinds: Vec<Vec<u8>>,
    /// The client's CPU, memory, bytes and connections in this lap.
    pub client: ClientLap,
}

/// A lap as it closes, for live output.
#[derive(Debug)]
pub struct LapView<'a> {
    /// Since the start of the load (warm-up included).
    pub elapsed: Duration,
    /// Length of this lap (shorter for the last one).
    pub length: Duration,
    pub warmup: bool,
    /// What completed in this lap (warm-up and measured together).
    pub lap: &'a Snapshot,
    /// Measured totals so far.
    pub total: &'a Snapshot,
    /// Measured time so far.
    pub measured: Duration,
    /// Measured time up to the latest completion, delivery or broken
    /// connection so far (at most the lap's end): a total's rate is over
    /// this, as the run's overall rate is over the time to its last event,
    /// so laps in which nothing arrives (a drain's tail) do not dilute it.
    pub active: Duration,
    pub pending: u64,
    /// The client's CPU, memory, bytes and connections in this lap.
    pub client: ClientLap,
}
