//! The engine: it issues operations through [`Driver`]s under the load model
//! of a [`LoadSpec`](loadrig_spec::LoadSpec) and measures them.
//!
//! One worker task per connection runs the single worker loop
//! ([`worker`]); what differs between closed loop, open loop and bursts is
//! only the source of start tokens ([`pace`]). Workers record into their own
//! snapshots and hand them to the collector ([`collect`]) at lap
//! boundaries, so nothing is shared on the hot path.

mod collect;
mod driver;
mod pace;
pub mod rng;
mod timer;
mod worker;

use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;
use std::time::Duration;

use loadrig_spec::LoadSpec;

pub use collect::LapView;
pub use driver::{Driver, Event, Tag};
pub use loadrig_metrics::{Lap, Outcome};
pub use timer::Timer;
/// The clock the engine schedules by (a driver's `send_at` is told its time).
pub use tokio::time::Instant;

/// Index base of warm-up operations: disjoint from measured indices, so a
/// warm-up never changes which operations the measured phase issues.
pub const WARMUP_INDEX_BASE: u64 = 1 << 62;

/// What the engine needs to know beyond the drivers.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub load: LoadSpec,
    pub seed: u64,
    pub warmup: Duration,
    pub interval: Duration,
    /// An operation unanswered this long fails as a timeout.
    pub timeout: Duration,
    /// Number of operation kinds and domain counters of the workload.
    pub kinds: usize,
    pub domains: usize,
    /// Drivers after the first `load.connections` that issue nothing and
    /// only listen (a pub/sub run's subscribers).
    pub listeners: usize,
    /// How long listening drivers keep receiving once every issuing
    /// driver is done, so messages in flight are counted, not guessed.
    pub drain: Duration,
}

/// Run the load: `drivers` are connected, one per connection; the first
/// operations start at `start`. `stop` ends the run early when set.
/// `on_lap` sees every lap as it closes.
pub async fn run<D: Driver>(
    cfg: &EngineConfig,
    drivers: Vec<D>,
    start: Instant,
    stop: Arc<AtomicBool>,
    on_lap: impl FnMut(&LapView<'_>),
) -> Outcome {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let workers = drivers.len();
    let issuing = workers.saturating_sub(cfg.listeners);
    let talking = Arc::new(AtomicUsize::new(issuing));
    let mut handles = Vec::with_capacity(workers);
    for (k, driver) in drivers.into_iter().enumerate() {
        let ends = worker::Ends {
            stop: stop.clone(),
            talking: talking.clone(),
            listener: k >= issuing,
        };
        let w = worker::Worker::new(cfg, k, driver, start, ends, tx.clone());
        handles.push(tokio::spawn(w.run()));
    }
    drop(tx);
    let mut out = collect::collect(cfg, rx, start, on_lap).await;
    for h in handles {
        // A worker that panicked is a bug in a driver; its measurements
        // up to its last lap are already merged.
        if h.await.is_err() {
            out.interrupted = true;
        }
    }
    out.interrupted |= stop.load(std::sync::atomic::Ordering::Relaxed);
    out
}
