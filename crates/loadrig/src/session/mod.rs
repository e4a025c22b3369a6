//! The session: one run as a pipeline of phases, each in a file of its
//! own and each a step of [`Session`], in this order:
//!
//! | phase | file |
//! |---|---|
//! | connect, prepare, record the baseline | `prepare.rs` |
//! | wait for the start, then load: the engine, once or per kind | `load.rs` |
//! | measure: the report built from what the load measured | `measure.rs` |
//! | the same two by K processes (`--processes`): start, gather, merge | `processes.rs` |
//! | verify against the server, read its results | `verify.rs` |
//! | judge: why the run failed, the exit code | `judge.rs` |
//! | emit: summary, CSV, JSON, report file, HDR log, HTML | `emit.rs` |
//! | teardown: drop what the run made, unless kept; then why it failed | `teardown.rs` |
//!
//! A process's part is a composition of them ([`drive`]), not a function
//! of its own: a single run goes through all; a child of `--processes`
//! and a shard of `--no-prepare` connect, load, measure and emit their
//! report; the parent prepares, has its children load, merges their
//! reports and goes on from verify. `loadrig prepare`, `teardown` and
//! `verify REPORT` are the one phase each (`commands.rs`). A sweep runs
//! each point as a process of its own (`crate::sweep`).
//!
//! What watches the load is a [`Sink`] registered on the session: the
//! console first (the lap lines), then the server's statistics
//! (`--server-stats`), then `--until`'s watch of the intervals
//! (`until.rs`), `--abort-after`'s watch of the thresholds lap by lap
//! (`abort.rs`), then the live dashboard (`dashboard.rs`, which the
//! parent of `--processes` feeds with its children's laps instead); a
//! metrics exporter would be one more. The validity verdict is one step
//! of `judge` (`judge_validity`). Stages (`--stages`) are the engine's
//! schedule of intended starts (`loadrig_engine::curve`), not a loop here.

mod abort;
mod commands;
mod dashboard;
mod deadline;
mod emit;
mod judge;
mod load;
mod measure;
mod prepare;
mod processes;
mod sampler;
mod teardown;
mod until;
mod verify;

pub use commands::{prepare_only, teardown_only, verify_report};
pub use deadline::Deadlines;
pub use processes::ChildLine;

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use loadrig_metrics::LapView;
use loadrig_present::print::Printer;
use loadrig_report::Report;
use loadrig_spec::RunSpec;
use loadrig_workloads::{Bench, TargetInfo};

use crate::exit;
use crate::signals::Watch;
use crate::start::StartRule;
use processes::Gathered;

/// Output choices and the process's part, none of them in the run spec.
#[derive(Default)]
pub struct Options {
    pub quiet: bool,
    /// `--resources`: the client's resources on each lap line.
    pub resources: bool,
    /// `--server-stats on`: sample the server's statistics per lap.
    pub server_stats: bool,
    pub csv: bool,
    /// `--json`: the summary as one JSON object on standard output.
    pub json: bool,
    pub out: Option<PathBuf>,
    /// `--hdr-log`: the laps as an HdrHistogram interval log.
    pub hdr_log: Option<PathBuf>,
    /// `--html`: the report as one self-contained page.
    pub html: Option<PathBuf>,
    /// When the load begins; `None`: as soon as the connections are open.
    pub start: Option<StartRule>,
    pub role: Role,
    /// What the engine's threads run for the sockets (`--io uring`).
    pub hooks: Option<loadrig_engine::ThreadHooks>,
    /// The CPU this process pinned itself to (`--pin`, `--cpus`), if it did.
    pub cpu: Option<usize>,
    /// The source addresses of `--bind`, as the report records them.
    pub sources: Vec<String>,
    /// `--strict`: a measurement judged INVALID fails the run (exit 4).
    pub strict: bool,
    /// `--dashboard`: the live terminal dashboard instead of lap lines.
    pub dashboard: bool,
    /// `--lap-feed`: each lap as a line on standard output, for the
    /// parent's dashboard.
    pub lap_feed: bool,
    /// `--metrics-listen` (already listening) and `--out NAME=URL`.
    pub export: Option<crate::export::Plan>,
}

impl Options {
    /// Standard output carries data (CSV, JSON, or the report with `--out -`),
    /// so the human text goes to standard error.
    pub fn data_on_stdout(&self) -> bool {
        self.csv
            || self.json
            || self.out.as_deref().is_some_and(|p| {
                p == std::path::Path::new("-") || p == std::path::Path::new("/dev/stdout")
            })
    }
}

/// This process's part in the run.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Role {
    /// The whole run in this process.
    #[default]
    Single,
    /// The parent of `--processes`: it prepares, starts the children with
    /// these arguments (plus each one's shard, start and report file),
    /// merges, verifies and tears down.
    /// `cpus`: `--pin`/`--cpus`, child k on the k-th.
    Parent {
        child: ChildLine,
        cpus: Option<Vec<usize>>,
    },
    /// One of the parent's children: connect, run, write the report.
    /// A shard of `--no-prepare` plays this part too.
    Child,
}

/// Something that watches the load as it goes: told when the load
/// begins and of each lap as it closes, and at the end given the report
/// to add what it kept. Called once per lap, off the hot path.
pub trait Sink {
    /// The load begins now (after the wait for the start).
    fn begin(&mut self, _at: Instant) {}
    /// A lap closed.
    fn lap(&mut self, _lap: &LapView<'_>) {}
    /// The load ended: what this sink kept goes into the report; a line
    /// to show after the summary, if it has one.
    fn end(&mut self, _report: &mut Report) -> Option<String> {
        None
    }
}

/// One run of one bench: the target's workload, the spec, the output
/// choices, the console, the deadlines of every wait, the stop flag and
/// the sinks. Each phase is a method, in its phase's file.
pub struct Session<'a, B: Bench> {
    bench: B,
    spec: &'a RunSpec,
    opts: &'a Options,
    console: Printer,
    deadlines: Deadlines,
    /// Set by the first signal; never set where none is caught.
    stop: Arc<AtomicBool>,
    /// Signals, passed on to the children of `--processes`.
    signals: Watch,
    /// After the console, which is told first.
    sinks: Vec<Box<dyn Sink>>,
    /// With `--until` or `--abort-after`: the engine's stop flag, set by a
    /// signal (passed on), by the `--until` sink once its interval is
    /// narrow enough, or by the `--abort-after` sink.
    enough: Option<Arc<AtomicBool>>,
}

impl<'a, B: Bench> Session<'a, B> {
    /// The session, its header printed. `signals`: the watch of a run
    /// (a signal stops it and it still reports), or the default one,
    /// never set (a signal ends the process as it comes).
    fn open(bench: B, spec: &'a RunSpec, opts: &'a Options, signals: Watch) -> Self {
        let mut console =
            Printer::new(spec, opts.quiet, opts.data_on_stdout()).with_resources(opts.resources);
        console.header(spec, bench.target().durability().as_deref());
        Session {
            bench,
            spec,
            opts,
            console,
            deadlines: Deadlines::of(spec),
            stop: signals.stop.clone(),
            signals,
            sinks: Vec::new(),
            enough: None,
        }
    }
}

/// One run, this process's part of it (see the module).
pub async fn drive<B: Bench>(bench: B, spec: &RunSpec, opts: &Options) -> anyhow::Result<i32> {
    // From here on a signal stops the run and still gets its report.
    let mut s = Session::open(bench, spec, opts, crate::signals::watch());
    match &opts.role {
        Role::Parent { child, cpus } => {
            let prepared = s.prepare().await?;
            let children = s.processes(child, cpus.as_deref()).await?;
            let end = match s.gather(children, prepared)? {
                Gathered::Merged(end) => *end,
                Gathered::Nothing { failed, code } => {
                    return s.nothing_gathered(failed, code).await
                }
            };
            let children_code = end.report.exit_code;
            let code = s.conclude(end).await?;
            // A child that could not reach the target says so above all.
            Ok(match children_code {
                exit::TARGET => exit::TARGET,
                _ => code,
            })
        }
        // A shard of `--no-prepare` neither prepares nor verifies nor drops.
        Role::Child => s.shard().await,
        Role::Single if !spec.prepare => s.shard().await,
        Role::Single => {
            let prepared = s.prepare().await?;
            let loaded = s.load().await?;
            let end = s.measure(loaded, prepared).await;
            s.conclude(end).await
        }
    }
}

impl<B: Bench> Session<'_, B> {
    /// After the load: verify, judge, emit, tear down.
    async fn conclude(&mut self, mut end: measure::End) -> anyhow::Result<i32> {
        // A run that keeps its data keeps its accounts with it, so that
        // `loadrig verify REPORT` later checks what this run does now.
        if self.spec.keep && end.report.share.is_none() {
            end.report.share = self.bench.share();
        }
        let mut checked = self.verify(end).await;
        self.judge(&mut checked);
        self.emit(&checked)?;
        self.teardown_after(&checked).await?;
        self.failed_lines(&checked.reasons);
        Ok(checked.report.exit_code)
    }

    /// A child's or a shard's part: connect, load, measure, emit.
    async fn shard(&mut self) -> anyhow::Result<i32> {
        let prepared = self.connect().await;
        let loaded = self.load().await?;
        let mut end = self.measure(loaded, prepared).await;
        // What the parent needs to verify this process's part (the
        // drivers, gone with the run, have left their accounts).
        end.report.share = self.bench.share();
        end.baseline = None;
        self.conclude(end).await
    }
}

/// `step`, unless a first signal came after the load: then `None` at
/// once. A run stopped during its load verifies what it issued (its
/// signal is behind it; a second one ends the process); a signal after
/// the load (a verification stuck on a server that stopped answering)
/// ends the step, and the report is still written.
async fn unless_stopped<T>(
    load_stopped: bool,
    stop: &AtomicBool,
    step: impl Future<Output = T>,
) -> Option<T> {
    if load_stopped {
        return Some(step.await);
    }
    let signalled = async {
        while !stop.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::select! {
        out = step => Some(out),
        () = signalled => None,
    }
}
