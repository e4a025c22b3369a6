//! The engine: it issues operations through [`Driver`]s under the load model
//! of a [`LoadSpec`](loadrig_spec::LoadSpec) and measures them.
//!
//! One worker task per connection runs the single worker loop
//! ([`worker`]); what differs between closed loop, open loop and bursts is
//! only the source of start tokens ([`pace`]). Workers are dealt round
//! robin to the engine's threads ([`lanes`]: thread-per-core, each a
//! current-thread runtime with a `LocalSet`); the workers of a thread
//! record into the thread's one recorder ([`record`]), which hands its
//! snapshots to the collector ([`collect`]) at lap boundaries. Nothing is
//! shared between threads on the hot path, and nothing measured is kept
//! per connection. Before the load, while a run waits for a common start,
//! [`serve_until`] keeps the connections served ([`idle`]).

mod collect;
mod curve;
mod driver;
mod idle;
mod lanes;
mod pace;
mod realtime;
mod record;
pub mod rng;
mod slots;
mod timer;
mod worker;

use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;
use std::time::Duration;

use loadrig_spec::LoadSpec;

pub use driver::{CountsBytes, Driver, Event, Tag};
pub use idle::{serve_until, Waited};
pub use lanes::{Homed, Threads};
pub use loadrig_metrics::LapView;
pub use loadrig_metrics::{Lap, Outcome};
pub use realtime::{Awake, Fifo};
pub use timer::Timer;

/// The clock the engine schedules by (a driver's `send_at` is told its time).
pub use tokio::time::Instant;

/// What the sockets need of each engine thread (`--io uring`: the
/// thread's ring): `start` as the thread's workers start, `stop` when they
/// have all ended, `park` each time the thread is about to sleep and
/// between the polls of a spin. Given to [`Threads::new`], which runs them
/// on its threads; the caller's own runtime (thread 0) takes `park` as its
/// `on_thread_park` ([`ThreadHooks::on_park`]).
#[derive(Debug, Clone, Copy)]
pub struct ThreadHooks {
    pub start: fn(),
    pub stop: fn(),
    pub park: fn(),
}

impl ThreadHooks {
    /// Have a runtime that runs workers call `hooks`' park hook, if any,
    /// each time its thread is about to sleep.
    pub fn on_park(
        hooks: Option<ThreadHooks>,
        builder: &mut tokio::runtime::Builder,
    ) -> &mut tokio::runtime::Builder {
        match hooks {
            Some(h) => builder.on_thread_park(h.park),
            None => builder,
        }
    }
}

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
    /// Paced loads: the last stretch before an intended start spent
    /// polling rather than asleep (`--spin`; 0: asleep to the end).
    pub spin: Duration,
    /// Which phase of the run this is, kept in the [`Span`]s of the
    /// indices its workers issue: 0, or in a run whose kinds run one after
    /// the other (redis-benchmark's tests) the kind this phase runs.
    ///
    /// [`Span`]: loadrig_metrics::Span
    pub phase: u32,
}

/// Run the load on the caller's thread alone ([`run_on`] with
/// [`Threads::one`]).
pub async fn run<D: Driver>(
    cfg: &EngineConfig,
    drivers: Vec<D>,
    start: Instant,
    stop: Arc<AtomicBool>,
    on_lap: impl FnMut(&LapView<'_>),
) -> Outcome {
    run_on(cfg, &Threads::one(), drivers, start, stop, on_lap).await
}

/// Run the load: `drivers` are connected, one per connection (driver `k`
/// opened through [`Threads::homed`]`(k, ..)` when `threads` has more
/// than one); the first operations start at `start`. Worker `k` runs on
/// thread `k mod N`; thread 0 is the caller's, which also collects.
/// `stop` ends the run early when set. `on_lap` sees every lap as it
/// closes.
pub async fn run_on<D: Driver>(
    cfg: &EngineConfig,
    threads: &Threads,
    drivers: Vec<D>,
    start: Instant,
    stop: Arc<AtomicBool>,
    on_lap: impl FnMut(&LapView<'_>),
) -> Outcome {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let issuing = drivers.len().saturating_sub(cfg.listeners);
    let talking = Arc::new(AtomicUsize::new(issuing));
    let n = threads.count();
    let each = drivers.len().div_ceil(n);
    let mut dealt: Vec<Vec<(usize, D)>> = (0..n).map(|_| Vec::with_capacity(each)).collect();
    for (k, driver) in drivers.into_iter().enumerate() {
        dealt[threads.of(k)].push((k, driver));
    }
    let busy = dealt.iter().filter(|d| !d.is_empty()).count();
    let job = |t: usize, part: Vec<(usize, D)>| Part {
        cfg: cfg.clone(),
        hooks: threads.hooks(),
        thread: t,
        drivers: part,
        start,
        issuing,
        stop: stop.clone(),
        talking: talking.clone(),
        tx: tx.clone(),
    };
    let mut dealt = dealt.into_iter().enumerate();
    let home = dealt.next().map(|(t, part)| job(t, part));
    let mut elsewhere = Vec::new();
    for (t, part) in dealt.filter(|(_, p)| !p.is_empty()) {
        let part = job(t, part);
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        let sent = threads.send(
            t,
            Box::new(move || {
                Box::pin(async move {
                    let _ = done_tx.send(part.run().await);
                })
            }),
        );
        // A thread that is gone cannot have run its workers: the
        // collector would wait for them forever, so the run is a bug.
        assert!(sent, "engine thread {t} is gone");
        elsewhere.push(done_rx);
    }
    drop(tx);
    let local = tokio::task::LocalSet::new();
    let home = async move {
        match home {
            Some(p) if !p.drivers.is_empty() => p.run().await,
            _ => false,
        }
    };
    let (mut out, panicked) = local
        .run_until(async { tokio::join!(collect::collect(cfg, rx, busy, start, on_lap), home) })
        .await;
    out.interrupted |= panicked;
    for done in elsewhere {
        // A worker that panicked is a bug in a driver; its measurements
        // up to then are already in its thread's recorder.
        out.interrupted |= done.await.unwrap_or(true);
    }
    out.interrupted |= stop.load(std::sync::atomic::Ordering::Relaxed);
    out
}

/// One thread's share of a run: its workers, spawned on its `LocalSet`
/// around one recorder.
struct Part<D> {
    cfg: EngineConfig,
    /// The threads' hooks, if any.
    hooks: Option<ThreadHooks>,
    thread: usize,
    drivers: Vec<(usize, D)>,
    start: Instant,
    issuing: usize,
    stop: Arc<AtomicBool>,
    talking: Arc<AtomicUsize>,
    tx: tokio::sync::mpsc::UnboundedSender<collect::Handover>,
}

impl<D: Driver> Part<D> {
    /// Run this thread's workers to the end; `true` when one panicked.
    async fn run(self) -> bool {
        if let Some(h) = self.hooks {
            (h.start)();
        }
        let shape = (self.cfg.kinds, self.cfg.domains);
        let rec = record::Recorder::shared(self.thread, self.drivers.len(), shape, self.tx);
        let mut handles = Vec::with_capacity(self.drivers.len());
        for (local, (k, driver)) in self.drivers.into_iter().enumerate() {
            let ends = worker::Ends {
                stop: self.stop.clone(),
                talking: self.talking.clone(),
                listener: k >= self.issuing,
                park: self.hooks.map(|h| h.park),
            };
            let w = worker::Worker::new(&self.cfg, k, driver, self.start, ends, rec.clone(), local);
            handles.push(tokio::task::spawn_local(w.run()));
        }
        let mut panicked = false;
        for h in handles {
            panicked |= h.await.is_err();
        }
        if let Some(h) = self.hooks {
            (h.stop)();
        }
        rec.borrow_mut().hand_over(true);
        panicked
    }
}
