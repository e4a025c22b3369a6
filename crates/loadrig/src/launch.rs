//! A workload's commands (`run`, `prepare`, `teardown`) and `verify`,
//! from their flags to the session: the flags taken apart once, the
//! target opened first (it parses its URL and states the facts the spec
//! is resolved against, before anything connects), the spec made and
//! validated against them, whole (nothing changes it after); then the
//! checks that need this machine, this process's part, and the session
//! on a runtime.

use anyhow::Context;
use clap::ArgMatches;
use loadrig_engine::ThreadHooks;
use loadrig_report::Report;
use loadrig_spec::{RunSpec, SpecError};
use loadrig_targets::{ClientSettings, IoMode, Target};

use crate::flags::{self, files, RunArgs, VerifyArgs, WorkloadArgs};
use crate::{export, machine, pin, plan, session, signals};

/// A workload's command line, taken apart and resolved once.
pub struct Launch<'a> {
    pub run: &'a RunArgs,
    pub target: Target,
    pub spec: RunSpec,
    /// What the target's connections take from the flags.
    pub settings: ClientSettings,
}

impl Launch<'_> {
    /// Stage 1 (the flags) and stage 2 (the target, then the spec).
    pub fn open(workload: &WorkloadArgs) -> anyhow::Result<Launch<'_>> {
        let parts = workload.parts()?;
        files::check_files(parts.run, parts.target())?;
        let settings = parts.run.client_settings()?;
        let target = plan::open(parts.workload.name(), Some(parts.target()), &settings)?;
        let spec = parts.spec(&target.facts())?;
        Ok(Launch {
            run: parts.run,
            target,
            spec,
            settings,
        })
    }

    /// `loadrig run`: this process's part of the run, and its exit code.
    /// `matches`: the flags as given, passed on to children as given.
    pub fn run(self, matches: &ArgMatches) -> anyhow::Result<i32> {
        let args = self.run;
        if !args.child {
            for note in crate::habits::notes(matches, &self.spec) {
                eprintln!("{}", loadrig_spec::printable(&note));
            }
        }
        self.admit()?;
        let hooks = thread_hooks(self.settings.io);
        let (role, cpu) = self.role(matches)?;
        let opts = session::Options {
            quiet: args.quiet,
            resources: args.resources,
            server_stats: args.server_stats == flags::OnOff::On,
            csv: args.csv,
            json: args.json,
            out: args.report_out()?.cloned(),
            hdr_log: args.hdr_log.clone(),
            html: args.html.clone(),
            start: args.start(),
            role,
            hooks,
            cpu,
            sources: self.settings.bound_sources(),
            strict: args.strict,
            dashboard: args.dashboard.dashboard,
            lap_feed: args.dashboard.lap_feed,
            export: self.export()?,
        };
        runtime(hooks)?.block_on(plan::run(&self.spec, self.target, &opts))
    }

    /// What the run exports: `--metrics-listen` bound and serving
    /// before anything connects (an address taken is a usage error:
    /// exit 2), and the endpoints `--out` pushes to; one process's
    /// metrics per address and series.
    fn export(&self) -> anyhow::Result<Option<export::Plan>> {
        let args = &self.run.export;
        let pushes: Vec<_> = self.run.pushes().cloned().collect();
        if args.metrics_listen.is_none() && pushes.is_empty() {
            return Ok(None);
        }
        if self.spec.processes > 1 {
            anyhow::bail!(SpecError::new(
                "--metrics-listen",
                "metric export is one process's: with --processes, run the processes as \
                 shards (--shards), each its own exporter"
            ));
        }
        let run = args.run_id.clone().unwrap_or_else(export::default_run_id);
        let labels = export::Labels::of(&self.spec, &run);
        let server = match &args.metrics_listen {
            Some(addr) => {
                let listener = export::serve::Listener::bind(addr).map_err(|e| {
                    SpecError::new("--metrics-listen", format!("cannot listen on {addr}: {e}"))
                })?;
                let linger = std::time::Duration::from_secs_f64(args.metrics_linger);
                Some(export::serve::Server::start(
                    listener,
                    labels.clone(),
                    linger,
                )?)
            }
            None => None,
        };
        Ok(Some(export::Plan {
            labels,
            server,
            pushes,
        }))
    }

    /// What this machine and process must allow, checked before anything
    /// connects: the memory the run plans, `--out`, the start, SCHED_FIFO
    /// and the CPUs kept awake (each tried and given up at once), and a
    /// child's parent.
    fn admit(&self) -> anyhow::Result<()> {
        let (args, spec) = (self.run, &self.spec);
        machine::admit(spec)?;
        if let Some(out) = args.report_out()? {
            files::check_out(out, args.csv)?;
        }
        if let Some(start) = args.start() {
            start.check(std::time::SystemTime::now())?;
        }
        if spec.realtime {
            loadrig_engine::Fifo::enter().map_err(|e| {
                SpecError::new(
                    "--realtime",
                    format!(
                        "this process may not use SCHED_FIFO ({e}): it needs root, \
                         CAP_SYS_NICE or a real-time priority limit (ulimit -r)"
                    ),
                )
            })?;
        }
        if spec.awake {
            loadrig_engine::Awake::enter().map_err(|e| {
                SpecError::new(
                    "--awake",
                    format!("cannot ask the kernel to keep the CPUs awake ({e}): it needs root"),
                )
            })?;
        }
        if args.child && !signals::die_with_parent() {
            anyhow::bail!("the parent of this --child process is gone");
        }
        Ok(())
    }

    /// This process's part, and the CPU it pinned itself to: each
    /// process on a CPU of its own, the parent handing them out, any
    /// other process pinning itself before its threads start.
    fn role(&self, matches: &ArgMatches) -> anyhow::Result<(session::Role, Option<usize>)> {
        let (args, spec) = (self.run, &self.spec);
        let cpus = args
            .cpus
            .as_deref()
            .map(pin::parse_list)
            .transpose()
            .map_err(|e| SpecError::new("--cpus", e))?;
        let parent = !args.child && spec.processes > 1;
        let k = if parent { spec.processes } else { 1 };
        let cpus = pin::plan(args.pin, cpus.as_deref(), k)?;
        if parent {
            let mut child = flags::child_line(matches);
            flags::subject_for_children(spec, &mut child);
            return Ok((session::Role::Parent { child, cpus }, None));
        }
        let pinned = match cpus.as_deref().and_then(<[usize]>::first) {
            Some(&cpu) => {
                pin::pin(cpu).with_context(|| format!("pinning this process to CPU {cpu}"))?;
                Some(cpu)
            }
            None => None,
        };
        let role = match args.child {
            true => session::Role::Child,
            false => session::Role::Single,
        };
        Ok((role, pinned))
    }

    /// `loadrig prepare`: prepare once and record the baseline.
    pub fn prepare(self) -> anyhow::Result<i32> {
        let out = self.run.report_out()?.map(std::path::PathBuf::as_path);
        if let Some(out) = out {
            files::check_out(out, false)?;
        }
        let quiet = self.run.quiet;
        runtime(None)?.block_on(plan::prepare(&self.spec, self.target, out, quiet))
    }

    /// `loadrig teardown`: drop what prepare made.
    pub fn teardown(self) -> anyhow::Result<i32> {
        runtime(None)?.block_on(plan::teardown(&self.spec, self.target, self.run.quiet))
    }
}

/// `loadrig verify REPORT`: the report's target (or `--target`) checked
/// against the counts the report recorded.
pub fn verify(v: &VerifyArgs) -> anyhow::Result<i32> {
    let settings = ClientSettings {
        trust: v.tls.trust()?,
        ..ClientSettings::default()
    };
    let report = Report::read(&v.report)?;
    let url = v
        .target
        .clone()
        .unwrap_or_else(|| report.spec.target.clone());
    // It opens what exists and creates nothing: a SQLite file that is not
    // there is refused, not made anew and found empty.
    if let Some(db) = files::sqlite_file(&url).filter(|db| !db.exists()) {
        anyhow::bail!(SpecError::new(
            "--target",
            format!("no SQLite database at {}: nothing to verify", db.display())
        ));
    }
    let target = plan::open(report.spec.workload.name(), Some(&url), &settings)?;
    runtime(None)?.block_on(plan::verify(&report, target))
}

/// What the engine's threads run for the sockets: with `--io uring`,
/// each thread's ring made as its workers start and turned as it parks.
fn thread_hooks(io: IoMode) -> Option<ThreadHooks> {
    (io == IoMode::Uring).then_some(ThreadHooks {
        start: loadrig_targets::uring_start,
        stop: loadrig_targets::uring_stop,
        park: loadrig_targets::uring_park,
    })
}

/// tokio's current-thread scheduler on the thread that runs `main`: it
/// connects, prepares, collects and prints, and is the engine's thread 0.
/// `--threads N` adds N - 1 engine threads of their own when the load
/// runs (`loadrig_engine::Threads`, thread-per-core), not a work-stealing
/// pool: a connection stays on one thread and records into that thread's
/// measurements. With `hooks`, it parks as the engine's threads do.
fn runtime(hooks: Option<ThreadHooks>) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_current_thread();
    Ok(ThreadHooks::on_park(hooks, builder.enable_all()).build()?)
}
