//! The load: open the connections, wait for the start, run the engine,
//! once, or (redis-benchmark's tests) once per kind over fresh
//! connections. Each lap goes to the console and every sink as it closes.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use loadrig_engine::{EngineConfig, Outcome, Threads, Waited};
use loadrig_metrics::{LapView, ProcessUsage};
use loadrig_workloads::{Bench, TargetInfo};

use super::abort::AbortSink;
use super::sampler::Sampler;
use super::until::UntilSink;
use super::Session;
use crate::exit;
use crate::export::push::Pusher;
use crate::export::{ExportSink, Exporter};
use crate::start::{self, start_line, waited_line, Begin};

/// What the load measured, and how it went.
pub struct Loaded {
    pub outcome: Outcome,
    pub begin: Begin,
    /// What the wait for the start did to the connections.
    pub waited: Waited,
    /// Each kind's measured time, when the kinds ran one after the other.
    pub kind_elapsed: Vec<Option<Duration>>,
    /// The process's usage and the embedded database's CPU when the load began.
    pub usage_before: ProcessUsage,
    pub db_cpu_before: Vec<(&'static str, Duration)>,
    /// Why a later phase could not run, if one could not.
    pub failed: Vec<String>,
    /// The exit code that calls for.
    pub code: i32,
}

/// How the first phase began: when, what the wait did, and the figures
/// the run's are taken against.
struct Started {
    begin: Begin,
    waited: Waited,
    usage: ProcessUsage,
    db_cpu: Vec<(&'static str, Duration)>,
}

/// The load so far: the first phase's start and totals once it ran.
#[derive(Default)]
struct SoFar {
    first: Option<Started>,
    total: Option<Outcome>,
    kind_elapsed: Vec<Option<Duration>>,
    failed: Vec<String>,
    code: i32,
}

impl<B: Bench> Session<'_, B> {
    pub(super) async fn load(&mut self) -> anyhow::Result<Loaded> {
        let mut cfg = self.engine_config();
        let kinds = self.bench.kinds();
        // One phase running every kind, or (redis-benchmark's tests) one
        // per kind, one after the other, each over fresh connections.
        let phases: Vec<Option<usize>> = match self.bench.sequential() {
            true => self.one_per_kind(kinds.len())?,
            false => vec![None],
        };
        // The engine's threads, started once and reused by every phase:
        // connection k is opened on the thread that will drive it.
        // --realtime: the threads started here inherit SCHED_FIFO from
        // this one, which gives it up again until its load begins.
        let threads = {
            let _fifo = self.realtime()?;
            Threads::new(self.spec.threads, self.opts.hooks)?
        };
        // A descriptor per connection: thousands need more than a shell's
        // soft limit. Failing to raise it is not an error of its own; a
        // connection that finds no descriptor is reported as it happens.
        let _ = loadrig_metrics::raise_open_files();
        let mut so_far = SoFar::default();
        for phase in phases {
            if let Some(k) = phase {
                self.bench.enter(k);
                cfg.phase = u32::try_from(k).unwrap_or(u32::MAX);
            }
            let mut drivers = match self.open_drivers(&cfg, &threads).await {
                Ok(d) => d,
                // Before any load, nothing was measured: the error is the
                // run's. After a phase ran, its measurements are kept.
                Err(e) if so_far.total.is_none() => return Err(e),
                Err(e) => {
                    let test = phase.and_then(|k| kinds.get(k)).copied().unwrap_or("next");
                    so_far.failed.push(format!(
                        "the {test} test could not connect: {}",
                        loadrig_present::one_line(&e)
                    ));
                    so_far.code = so_far.code.max(exit::code_of(&e));
                    break;
                }
            };
            let at = match &so_far.first {
                Some(_) => start::now(),
                None => {
                    let first = self.begin(&threads, &mut drivers, cfg.interval).await;
                    so_far.first.insert(first).begin
                }
            };
            let outcome = self.run_engine(&cfg, &threads, drivers, at).await?;
            if let Some(k) = phase {
                so_far.kind_elapsed.resize(kinds.len(), None);
                so_far.kind_elapsed[k] = Some(outcome.elapsed);
                self.console
                    .test_line(kinds[k], &outcome.measured, k, outcome.elapsed);
            }
            let interrupted = outcome.interrupted;
            let first_at = so_far.first.as_ref().map_or(at.at, |f| f.begin.at);
            match &mut so_far.total {
                None => so_far.total = Some(outcome),
                Some(t) => append(t, outcome, at.at.saturating_duration_since(first_at)),
            }
            if interrupted {
                break;
            }
        }
        let (Some(outcome), Some(first)) = (so_far.total, so_far.first) else {
            anyhow::bail!("nothing to run");
        };
        Ok(Loaded {
            outcome,
            begin: first.begin,
            waited: first.waited,
            kind_elapsed: so_far.kind_elapsed,
            usage_before: first.usage,
            db_cpu_before: first.db_cpu,
            failed: so_far.failed,
            code: so_far.code,
        })
    }

    /// A phase per kind; not with `--until`, whose stop would end them all.
    fn one_per_kind(&self, kinds: usize) -> anyhow::Result<Vec<Option<usize>>> {
        if self.spec.until.is_some() {
            anyhow::bail!(
                "--until: this workload's kinds run one after the other, each for --duration; \
                 give it to a workload whose kinds run together"
            );
        }
        Ok((0..kinds).map(Some).collect())
    }

    fn engine_config(&self) -> EngineConfig {
        let spec = self.spec;
        EngineConfig {
            load: spec.load.clone(),
            seed: spec.seed,
            warmup: Duration::from_secs_f64(spec.warmup_secs),
            interval: Duration::from_secs_f64(spec.interval_secs),
            timeout: Duration::from_secs_f64(spec.timeout_secs),
            kinds: self.bench.kinds().len(),
            domains: self.bench.domains().len(),
            listeners: self.bench.listeners(),
            drain: self.bench.drain(),
            spin: Duration::from_secs_f64(spec.spin_secs),
            phase: 0,
        }
    }

    /// One driver per connection (and listener), each opened on the
    /// engine thread that will drive it.
    async fn open_drivers(
        &self,
        cfg: &EngineConfig,
        threads: &Threads,
    ) -> anyhow::Result<Vec<B::Driver>> {
        let conns = self.spec.load.connections as usize + cfg.listeners;
        let mut drivers = Vec::with_capacity(conns);
        for worker in 0..conns {
            let id = u32::try_from(worker).unwrap_or(u32::MAX);
            let open = threads.homed(worker, self.bench.connect(id));
            drivers.push(self.deadlines.connect("a connection", open).await?);
        }
        Ok(drivers)
    }

    /// Before the first phase: the server-statistics sink, the wait for
    /// the start (serving the open connections meanwhile: a server that
    /// closes idle clients does not leave the load broken ones), then
    /// the figures the run's are taken against, and the sinks told.
    async fn begin(
        &mut self,
        threads: &Threads,
        drivers: &mut [B::Driver],
        interval: Duration,
    ) -> Started {
        let mut live = None;
        if self.opts.server_stats {
            let sources = self.bench.target().server_stats();
            if let Some(s) = Sampler::start(sources, interval).await {
                live = Some(s.live());
                self.sinks.push(Box::new(s));
            }
        }
        let (begin, waited) = match self.opts.start {
            Some(rule) => {
                let now = SystemTime::now();
                let at = rule.resolve(now);
                self.console.end_phases();
                self.console.line(&start_line(at, now));
                let wait = start::wait_for(at, &self.stop);
                let (b, w) = loadrig_engine::serve_until(threads, drivers, wait).await;
                if let Some(line) = waited_line(w.reopened, w.failed) {
                    self.console.line(&line);
                }
                (b, w)
            }
            None => (start::now(), Waited::default()),
        };
        if self.spec.until.is_some() || self.spec.abort_after_secs.is_some() {
            let enough = Arc::new(AtomicBool::new(false));
            if let Some(until) = &self.spec.until {
                self.sinks
                    .push(Box::new(UntilSink::new(until.clone(), enough.clone())));
            }
            if let Some(window) = self.spec.abort_after_secs {
                self.sinks.push(Box::new(AbortSink::new(
                    self.spec.thresholds.clone(),
                    self.bench.kinds(),
                    window,
                    enough.clone(),
                )));
            }
            self.enough = Some(enough);
        }
        if let Some(sink) = self.export_sink() {
            self.sinks.push(Box::new(sink));
        }
        self.console.phase("run");
        self.console.end_phases();
        self.watch_live(live);
        let db_cpu = self.bench.target().embedded_cpu().await;
        let usage = ProcessUsage::now();
        for s in &mut self.sinks {
            s.begin(begin.at.into_std());
        }
        Started {
            begin,
            waited,
            usage,
            db_cpu,
        }
    }

    /// The exporters' sink, if the run exports.
    fn export_sink(&mut self) -> Option<ExportSink> {
        let plan = self.opts.export.as_ref()?;
        let mut exporters: Vec<Box<dyn Exporter>> = Vec::new();
        if let Some(server) = &plan.server {
            exporters.push(Box::new(server.clone()));
        }
        for ep in &plan.pushes {
            match Pusher::start(ep.clone(), plan.labels.clone()) {
                Ok(p) => exporters.push(Box::new(p)),
                Err(e) => self
                    .console
                    .line(&format!("export {}: no thread ({e})", ep.url)),
            }
        }
        let clients = u64::from(self.spec.load.clients);
        Some(ExportSink::new(self.bench.kinds(), clients, exporters))
    }

    /// One engine phase from `at`, each lap to the console and the sinks.
    async fn run_engine(
        &mut self,
        cfg: &EngineConfig,
        threads: &Threads,
        drivers: Vec<B::Driver>,
        at: Begin,
    ) -> anyhow::Result<Outcome> {
        let fifo = self.realtime()?;
        let awake = (self.spec.awake)
            .then(loadrig_engine::Awake::enter)
            .transpose()?;
        // With --until the engine stops on its own flag, which a signal
        // sets too (passed on within 20ms).
        let (flag, forward) = match &self.enough {
            Some(enough) => (
                enough.clone(),
                Some(tokio::spawn(pass_on(self.stop.clone(), enough.clone()))),
            ),
            None => (self.stop.clone(), None),
        };
        let (console, sinks) = (&mut self.console, &mut self.sinks);
        let on_lap = |lap: &LapView<'_>| {
            console.lap(lap);
            for s in sinks.iter_mut() {
                s.lap(lap);
            }
        };
        let mut outcome = loadrig_engine::run_on(cfg, threads, drivers, at.at, flag, on_lap).await;
        if let Some(f) = forward {
            f.abort();
            // Stopped because the interval was narrow enough is not
            // interrupted; a signal is. (A worker's panic in a run --until
            // ended is not told apart here: the panic itself is printed.)
            outcome.interrupted = self.stop.load(Ordering::Relaxed);
        }
        drop((fifo, awake));
        self.console.end_laps();
        Ok(outcome)
    }

    /// With `--realtime`, the calling thread under SCHED_FIFO until the
    /// guard is dropped (checked before anything connected: `main`).
    fn realtime(&self) -> std::io::Result<Option<loadrig_engine::Fifo>> {
        self.spec
            .realtime
            .then(loadrig_engine::Fifo::enter)
            .transpose()
    }
}

/// Pass a signal's stop on to the run's own flag, until either is set.
async fn pass_on(signal: Arc<AtomicBool>, run: Arc<AtomicBool>) {
    while !run.load(Ordering::Relaxed) {
        if signal.load(Ordering::Relaxed) {
            run.store(true, Ordering::Relaxed);
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Add the outcome of a later phase that started `offset` after the
/// first: counts and histograms add, laps follow on (their times shifted
/// to count from the first phase's start), measured times add up.
fn append(total: &mut Outcome, next: Outcome, offset: Duration) {
    total.warmup.merge(&next.warmup);
    total.measured.merge(&next.measured);
    total.laps.extend(next.laps.into_iter().map(|mut l| {
        l.elapsed += offset;
        l
    }));
    total.elapsed += next.elapsed;
    total.interrupted |= next.interrupted;
}
