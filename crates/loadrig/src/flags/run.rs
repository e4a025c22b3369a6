//! The flags every workload shares (`RunArgs`) and the second stage:
//! checking them together and resolving them, with the workload's defaults
//! and the opened target's facts, into a [`RunSpec`].

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use loadrig_spec::{
    Arrival, Dispatch, LoadSpec, Pacing, Preset, RunSpec, Shard, SpecError, Stop, TargetFacts,
    Threshold, Until, WorkloadSpec,
};
use loadrig_targets::{ClientSettings, IoMode};

use crate::start::StartRule;

use super::{amount, byte_size, cores, count, millis, seconds, unix_time, with_default, Defaults};

/// A switch given as `on` or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ArrivalArg {
    Regular,
    Poisson,
}

/// The headings of `run WORKLOAD --help`, in the order they appear (after
/// the workload's own, which its struct names): clap orders headings by
/// their first flag, so the fields below are grouped in this order.
pub(super) const LOAD: &str = "Load";
pub(super) const OUTPUT: &str = "Output";
pub(super) const CONNECTIONS: &str = "Connections and TLS";
pub(super) const CHECKS: &str = "Checks and exit status";
pub(super) const PROCESSES: &str = "Processes and hosts";
pub(super) const TIMING: &str = "Timing precision";

/// Flags every workload shares, grouped by heading (see [`LOAD`]).
#[derive(Debug, Args)]
pub struct RunArgs {
    #[arg(
        help = with_default("Operations in total, over all clients", DEFAULT_REQUESTS),
        short = 'n',
        long = "requests",
        value_name = "N",
        value_parser = count::<u64>,
        conflicts_with = "duration",
        help_heading = LOAD
    )]
    pub requests: Option<u64>,
    /// Measure for this long instead (e.g. 10, 10s, 500ms, 2m)
    #[arg(long, short = 'd', value_name = "TIME", value_parser = seconds, help_heading = LOAD)]
    pub duration: Option<f64>,
    /// Run the load this long first, without counting it
    #[arg(long, value_name = "TIME", value_parser = seconds, default_value = "0", help_heading = LOAD)]
    pub warmup: f64,
    #[arg(
        long,
        short = 'c',
        value_parser = count::<u32>,
        help = with_default(
            "Clients (callers); in the closed loop each waits for its previous operation",
            DEFAULT_CLIENTS
        ),
        help_heading = LOAD
    )]
    pub clients: Option<u32>,
    /// Requests each client keeps in flight
    #[arg(long, short = 'P', value_parser = count::<u32>, default_value = "1", help_heading = LOAD)]
    pub pipeline: u32,
    /// Open loop: operations per second in total, whatever the target does
    #[arg(long, short = 'R', value_name = "OPS", value_parser = amount, conflicts_with = "burst", group = "open", help_heading = LOAD)]
    pub rate: Option<f64>,
    /// Open-loop inter-arrival times
    #[arg(long, value_enum, default_value_t = ArrivalArg::Regular, requires = "open", help_heading = LOAD)]
    pub arrival: ArrivalArg,
    /// Bursts: this many operations at once per client
    #[arg(long, value_name = "B", value_parser = count::<u32>, help_heading = LOAD)]
    pub burst: Option<u32>,
    #[arg(
        long,
        value_name = "MS",
        value_parser = millis,
        help = with_default("Bursts: sleep this long between bursts (milliseconds, or 500us, 1s)", DEFAULT_BURST_DELAY_MS),
        help_heading = LOAD
    )]
    pub burst_delay: Option<f64>,
    #[arg(
        long,
        value_name = "L",
        value_parser = count::<u32>,
        help = with_default("Bursts: wait until at most this many per client are pending", DEFAULT_BURST_LIMIT),
        help_heading = LOAD
    )]
    pub limit: Option<u32>,
    /// Managed mode: a queue of this many waiting operations before the connections
    #[arg(long, value_name = "Q", value_parser = count::<u32>, help_heading = LOAD)]
    pub queue: Option<u32>,
    /// Managed mode: at most this many operations in flight per connection
    #[arg(long, value_name = "S", value_parser = count::<u32>, help_heading = LOAD)]
    pub slots: Option<u32>,
    /// Open loop: an operation this late when it could start is dropped and counted
    #[arg(long, value_name = "TIME", value_parser = seconds, default_value = "10", help_heading = LOAD)]
    pub max_lag: f64,
    /// An operation unanswered this long fails as a timeout
    #[arg(long, value_name = "TIME", value_parser = seconds, default_value = "10", help_heading = LOAD)]
    pub timeout: f64,
    /// Threads driving the load [default: the number of cores; 1 on PostgreSQL and MariaDB, as pgbench -j]
    #[arg(long, value_parser = count::<usize>, help_heading = LOAD)]
    pub threads: Option<usize>,
    /// Seed of every random choice; the same seed issues the same operations
    #[arg(long, default_value_t = 42, help_heading = LOAD)]
    pub seed: u64,
    /// Go on until the 95% interval of a figure is this narrow, up to --duration: 'p99 ±2%', 'throughput ±1%'
    #[arg(long, value_name = "EXPR", help_heading = LOAD)]
    pub until: Option<String>,
    #[command(flatten)]
    pub stages: super::StagesArgs,
    /// Seconds between lap lines
    #[arg(long, value_name = "TIME", value_parser = seconds, default_value = "1", help_heading = OUTPUT)]
    pub interval: f64,
    /// No lap lines (a progress bar on a terminal)
    #[arg(long, short = 'q', help_heading = OUTPUT)]
    pub quiet: bool,
    /// Lap lines end with the client's CPU, memory, bytes and connections in the lap
    #[arg(long, help_heading = OUTPUT)]
    pub resources: bool,
    /// Sample the server's statistics once per lap, into the report
    ///
    /// Sample the server's own statistics (and its process, when local)
    /// once per lap, into the report.
    #[arg(long, value_enum, value_name = "on|off", default_value_t = OnOff::On, help_heading = OUTPUT)]
    pub server_stats: OnOff,
    /// Write the report (JSON) to this file; or push metrics to NAME=URL
    ///
    /// Write the report (JSON, schema loadrig.report/1) to this file; or,
    /// as influxdb=URL or prometheus=URL, push the metrics there while the
    /// run goes (docs/guides/export.md). Repeatable: one report file, any
    /// number of endpoints.
    #[arg(long, short = 'o', value_name = "FILE|NAME=URL", value_parser = super::out_arg, help_heading = OUTPUT)]
    pub out: Vec<super::OutArg>,
    /// Write the measured laps as an HdrHistogram interval log (.hlog) to this file
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub hdr_log: Option<PathBuf>,
    /// Write the report as one self-contained HTML page to this file
    ///
    /// Write the report as one self-contained HTML page (charts inline) to
    /// this file.
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub html: Option<PathBuf>,
    /// Print the results table as CSV on standard output (the rest on standard error)
    #[arg(long, help_heading = OUTPUT)]
    pub csv: bool,
    /// Print the run's summary as one JSON object on standard output
    ///
    /// Print the run's summary as one JSON object on standard output (the
    /// rest goes to standard error; docs/reference/json.md).
    #[arg(long, conflicts_with = "csv", help_heading = OUTPUT)]
    pub json: bool,
    /// Print help (see more with '--help')
    ///
    /// Print help (see a summary with '-h').
    #[arg(short = 'h', long = "help", action = clap::ArgAction::Help, help_heading = OUTPUT)]
    pub help: Option<bool>,
    #[command(flatten)]
    pub dashboard: super::DashboardArgs,
    #[command(flatten)]
    pub export: super::ExportArgs,
    /// Target URL (or $LOADRIG_TARGET); without one, a fresh embedded SQLite database
    #[arg(long, short = 't', value_name = "URL", env = super::TARGET_ENV, hide_env_values = true, help_heading = CONNECTIONS)]
    pub target: Option<String>,
    /// Connections the clients share [default: one per client]
    #[arg(long, value_parser = count::<u32>, help_heading = CONNECTIONS)]
    pub connections: Option<u32>,
    /// How the hand-written clients move their bytes: epoll or io_uring
    ///
    /// How the hand-written clients move their bytes during the load: epoll
    /// readiness, then a send and a receive per connection; or uring, every
    /// connection's requests of a turn handed to the thread's io_uring ring
    /// in one system call (plaintext TCP; docs/explanations/io-uring.md).
    #[arg(long, value_name = "HOW", value_parser = ["epoll", "uring"], default_value = "epoll", help_heading = CONNECTIONS)]
    pub io: String,
    /// Connect from these local addresses, dealt to connections in turn
    ///
    /// Connect from these local addresses, dealt to connections in turn
    /// (e.g. 127.0.0.2,127.0.0.3 or 127.0.0.2-127.0.0.9): past one address
    /// pair's ~28,000 ports (docs/explanations/client-cost.md).
    #[arg(long, value_name = "ADDR,...", help_heading = CONNECTIONS)]
    pub bind: Option<String>,
    /// Most bytes of replies one connection holds unread (k, m, g: 1024s)
    ///
    /// Most bytes of replies one connection holds unread: a larger reply is
    /// a protocol error (k, m, g: 1024s).
    #[arg(long, value_name = "BYTES", value_parser = byte_size, default_value = "16m", help_heading = CONNECTIONS)]
    pub max_reply: usize,
    #[command(flatten, next_help_heading = CONNECTIONS)]
    pub tls: super::TlsArgs,
    /// Exit 1 when failed or dropped operations exceed this fraction of all
    ///
    /// Exit 1 when failed or dropped operations exceed this fraction of all
    /// (1 turns the gate off).
    #[arg(long, value_name = "FRACTION", default_value_t = DEFAULT_MAX_ERROR_RATE, help_heading = CHECKS)]
    pub max_error_rate: f64,
    /// Exit 1 unless the run meets this: p99<5ms, vote:p99.9<20ms (repeatable)
    ///
    /// Exit 1 unless the run meets this: p99<5ms, vote:p99.9<20ms, avg<1ms,
    /// max<50ms, error_rate<0.01, throughput>10000 (repeatable).
    #[arg(long, value_name = "EXPR", help_heading = CHECKS)]
    pub threshold: Vec<String>,
    /// Exit 4 when the measurement is judged INVALID and nothing else failed
    ///
    /// Exit 4 when the measurement is judged INVALID and nothing else failed
    /// (docs/explanations/validity.md).
    #[arg(long, help_heading = CHECKS)]
    pub strict: bool,
    /// Do not check the target's data afterwards (check later with `loadrig verify`)
    #[arg(long, help_heading = CHECKS)]
    pub no_verify: bool,
    /// Keep the schema and data after the run
    #[arg(long, help_heading = CHECKS)]
    pub keep: bool,
    /// Run K local processes, each a shard, begun together and merged (clients count per process)
    #[arg(long, value_name = "K", value_parser = count::<u32>, help_heading = PROCESSES)]
    pub processes: Option<u32>,
    /// Pin each process to a CPU of its own
    ///
    /// Pin each process to a CPU of its own (process k of --processes to the
    /// k-th CPU it may run on).
    #[arg(long, help_heading = PROCESSES)]
    pub pin: bool,
    /// Pin to these CPUs, process k to the k-th (e.g. 0,2,4-7; as taskset -c)
    #[arg(long, value_name = "LIST", help_heading = PROCESSES)]
    pub cpus: Option<String>,
    /// This process's part of a split run, i/N
    #[arg(long, value_name = "i/N", help_heading = PROCESSES)]
    pub shard: Option<String>,
    /// This process's part is i/N, i from $JOB_COMPLETION_INDEX
    ///
    /// This process's part is i/N, i from $JOB_COMPLETION_INDEX (a Kubernetes
    /// Indexed Job).
    #[arg(long, value_name = "N", value_parser = count::<u32>, conflicts_with_all = ["shard", "processes"], help_heading = PROCESSES)]
    pub shards: Option<u32>,
    /// A shard of a many-host run: create nothing, drop nothing, verify nothing
    ///
    /// A shard of a many-host run: create nothing, drop nothing, verify
    /// nothing (`loadrig prepare`, `verify`, `teardown` do, once).
    #[arg(long, conflicts_with = "processes", help_heading = PROCESSES)]
    pub no_prepare: bool,
    /// Begin the load at this wall-clock time (UNIX seconds), after connecting
    #[arg(long, value_name = "UNIX_TIME", value_parser = unix_time, conflicts_with = "start_delay", help_heading = PROCESSES)]
    pub start_at: Option<f64>,
    /// Begin the load at the next multiple of S seconds after now + S
    ///
    /// Begin the load at the next multiple of S seconds after now + S
    /// (Erlvolt's common start).
    #[arg(long, value_name = "S", value_parser = seconds, help_heading = PROCESSES)]
    pub start_delay: Option<f64>,
    /// Run as one of the processes of --processes (set by the parent)
    #[arg(long, hide = true)]
    pub child: bool,
    /// Paced loads: run the load threads under SCHED_FIFO
    ///
    /// Paced loads: the load threads run under SCHED_FIFO, so operations
    /// leave on time on a busy machine (root or CAP_SYS_NICE;
    /// docs/explanations/measurement.md section 2).
    #[arg(long, help_heading = TIMING)]
    pub realtime: bool,
    /// Paced loads: poll, not sleep, for the last TIME before each start
    ///
    /// Paced loads: spend the last TIME before each intended start polling,
    /// not asleep, so the operation leaves on time (costs that much CPU per
    /// operation; e.g. 30us; docs/explanations/measurement.md section 2).
    #[arg(long, value_name = "TIME", value_parser = seconds, default_value = "0", help_heading = TIMING)]
    pub spin: f64,
    /// Keep the machine's CPUs out of their idle halt while the load runs
    ///
    /// Keep the machine's CPUs out of their idle halt while the load runs
    /// (machine-wide), so a sleeping thread wakes without the CPU's, or the
    /// VM's, wake-up delay; idle CPUs poll meanwhile (root;
    /// docs/explanations/measurement.md section 2).
    #[arg(long, help_heading = TIMING)]
    pub awake: bool,
}

/// Default managed-mode sizes when only one of --queue/--slots is given.
pub(super) const DEFAULT_QUEUE: u32 = 1_000;
pub(super) const DEFAULT_SLOTS: u32 = 100;
pub const DEFAULT_REQUESTS: u64 = 100_000;

/// Where `--shards N` reads this process's index: the variable Kubernetes
/// sets in each pod of an Indexed Job.
pub const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

/// The failure gate by default: a run where more than 1% of the operations
/// failed or were dropped exits 1, with its report (docs/reference/limits.md).
pub const DEFAULT_MAX_ERROR_RATE: f64 = 0.01;
pub(super) const DEFAULT_CLIENTS: u32 = 32;
pub(super) const DEFAULT_BURST_DELAY_MS: f64 = 1.0;
pub(super) const DEFAULT_BURST_LIMIT: u32 = 0;

impl RunArgs {
    /// What the target's connections take from these flags: TLS trust,
    /// source addresses, I/O mode and limits. Built before the target
    /// opens, and given to it.
    pub fn client_settings(&self) -> Result<ClientSettings, SpecError> {
        let defaults = ClientSettings::default();
        Ok(ClientSettings {
            trust: self.tls.trust()?,
            sources: self.sources()?,
            io: self.io_mode()?,
            handshake_limit: self.handshake_limit().unwrap_or(defaults.handshake_limit),
            max_reply: self.max_reply,
        })
    }

    /// The source addresses of the connections (`--bind`), each one an
    /// address of this host; none without `--bind`.
    pub fn sources(&self) -> Result<Vec<std::net::IpAddr>, SpecError> {
        let Some(list) = &self.bind else {
            return Ok(Vec::new());
        };
        let sources = loadrig_targets::parse_sources(list)?;
        loadrig_targets::check_sources(&sources)?;
        Ok(sources)
    }

    /// `--io`: with `uring`, after checking that this kernel gives the
    /// process a ring.
    pub fn io_mode(&self) -> Result<IoMode, SpecError> {
        if self.io != "uring" {
            return Ok(IoMode::Epoll);
        }
        loadrig_targets::check_uring().map_err(|e| {
            SpecError::new(
                "--io",
                format!("this kernel gives this process no io_uring ring ({e})"),
            )
        })?;
        Ok(IoMode::Uring)
    }

    /// How long opening a connection may take, handshake and login
    /// included: `--timeout` (docs/reference/limits.md). None for a timeout the spec
    /// will refuse.
    pub fn handshake_limit(&self) -> Option<std::time::Duration> {
        loadrig_spec::bounds::seconds("--timeout", self.timeout, false)
            .ok()
            .map(|_| std::time::Duration::from_secs_f64(self.timeout))
    }

    /// Check the flags together and build the run spec, resolved against
    /// the opened target's facts: its masked label, the connections it asks
    /// for when `--connections` is not given (never more than clients),
    /// whether processes can share it, the deepest pipeline it takes.
    pub fn spec(
        &self,
        workload: WorkloadSpec,
        preset: Option<Preset>,
        workload_defaults: &Defaults,
        facts: &TargetFacts,
    ) -> Result<RunSpec, SpecError> {
        let defaults = preset.map(Preset::defaults);
        let clients = self
            .clients
            .or(defaults.map(|d| d.clients))
            .unwrap_or(workload_defaults.clients);
        let mut pacing = self.pacing(defaults.map(|d| d.pacing))?;
        let dispatch = self.dispatch(defaults.map(|d| d.dispatch))?;
        let mut stop = match (self.requests, self.duration, workload_defaults.duration) {
            (_, Some(d), _) => Stop::Seconds(d),
            (Some(n), None, _) => Stop::Count(n),
            (None, None, Some(d)) => Stop::Seconds(d),
            (None, None, None) => Stop::Count(defaults.map_or(DEFAULT_REQUESTS, |d| d.requests)),
        };
        let stages = self.stages.stages(self.rate)?;
        if let Some(st) = &stages {
            pacing = super::StagesArgs::apply(st, pacing, &mut stop);
        }
        let shard = self.shard_of(std::env::var(INDEX_ENV).ok().as_deref())?;
        let processes = self.processes.unwrap_or(1);
        if processes > 1 && !facts.shared {
            return Err(SpecError::new(
                "--processes",
                "the processes need a target they share; the default SQLite database is \
                 private to one process (give --target sqlite:///path/to.db or a server)",
            ));
        }
        let mut spec = RunSpec {
            workload,
            target: facts.label.clone(),
            load: LoadSpec {
                clients,
                connections: self.connections.unwrap_or_else(|| {
                    facts
                        .default_connections
                        .map_or(clients, |n| n.min(clients))
                }),
                pipeline: self.pipeline,
                pacing,
                dispatch,
                stop,
                max_lag_secs: self.max_lag,
                shard,
                stages,
            },
            seed: self.seed,
            warmup_secs: self.warmup,
            interval_secs: self.interval,
            threads: self
                .threads
                .or(workload_defaults.threads)
                .or(facts.default_threads)
                .unwrap_or_else(cores),
            timeout_secs: self.timeout,
            max_error_rate: Some(self.max_error_rate),
            thresholds: self
                .threshold
                .iter()
                .map(|t| Threshold::parse(t))
                .collect::<Result<_, _>>()?,
            verify: !self.no_verify,
            keep: self.keep,
            preset,
            processes,
            prepare: !self.no_prepare,
            realtime: self.realtime,
            spin_secs: self.spin,
            awake: self.awake,
            io_uring: self.io == "uring",
            until: self.until.as_deref().map(Until::parse).transpose()?,
            abort_after_secs: self.stages.abort_after,
        };
        spec.apply_workload_rules()?;
        spec.validate()?;
        spec.load.check_depth(facts.max_depth)?;
        Ok(spec)
    }

    /// Direct, or managed (`--queue`, `--slots`), a preset's own when
    /// neither is given; managed mode sets the calls in flight itself, so
    /// it takes no `--pipeline`.
    fn dispatch(&self, preset: Option<Dispatch>) -> Result<Dispatch, SpecError> {
        let dispatch = match (self.queue, self.slots, preset) {
            (None, None, Some(d)) => d,
            (None, None, None) => Dispatch::Direct,
            (q, s, d) => {
                let (dq, ds) = match d {
                    Some(Dispatch::Managed { queue, slots }) => (queue, slots),
                    _ => (DEFAULT_QUEUE, DEFAULT_SLOTS),
                };
                Dispatch::Managed {
                    queue: q.unwrap_or(dq),
                    slots: s.unwrap_or(ds),
                }
            }
        };
        if dispatch != Dispatch::Direct && self.pipeline != 1 {
            return Err(SpecError::new(
                "--pipeline",
                "cannot be used with --queue/--slots (managed mode sets in-flight calls with --slots)",
            ));
        }
        Ok(dispatch)
    }

    /// Open loop, bursts (from the flags or the preset) or steady.
    pub(super) fn pacing(&self, preset: Option<Pacing>) -> Result<Pacing, SpecError> {
        let burst = match (self.burst, preset) {
            (
                Some(size),
                Some(Pacing::Burst {
                    delay_ms, limit, ..
                }),
            ) => Some((size, delay_ms, limit)),
            (Some(size), _) => Some((size, DEFAULT_BURST_DELAY_MS, DEFAULT_BURST_LIMIT)),
            (
                None,
                Some(Pacing::Burst {
                    size,
                    delay_ms,
                    limit,
                }),
            ) => Some((size, delay_ms, limit)),
            (None, _) => None,
        };
        let pacing = match (self.rate, burst) {
            (Some(rate), _) => Pacing::Rate {
                rate,
                arrival: match self.arrival {
                    ArrivalArg::Regular => Arrival::Regular,
                    ArrivalArg::Poisson => Arrival::Poisson,
                },
            },
            (None, Some((size, delay_ms, limit))) => Pacing::Burst {
                size,
                delay_ms: self.burst_delay.unwrap_or(delay_ms),
                limit: self.limit.unwrap_or(limit),
            },
            (None, None) => Pacing::Steady,
        };
        if !matches!(pacing, Pacing::Burst { .. }) {
            for (given, flag) in [
                (self.burst_delay.is_some(), "--burst-delay"),
                (self.limit.is_some(), "--limit"),
            ] {
                if given {
                    return Err(SpecError::new(flag, "needs --burst (or a bursts preset)"));
                }
            }
        }
        Ok(pacing)
    }

    /// `--shard i/N`, or `--shards N` with i from `index` (the value of
    /// [`INDEX_ENV`]), or the whole run.
    pub(super) fn shard_of(&self, index: Option<&str>) -> Result<Shard, SpecError> {
        match (&self.shard, self.shards) {
            (Some(s), _) => Shard::parse(s),
            (None, Some(n)) => {
                let i = index.ok_or_else(|| {
                    SpecError::new(
                        "--shards",
                        format!("needs ${INDEX_ENV} (set in a Kubernetes Indexed Job's pods) or --shard i/N"),
                    )
                })?;
                Shard::parse(&format!("{}/{n}", i.trim())).map_err(|_| {
                    SpecError::new(
                        "--shards",
                        format!("${INDEX_ENV} is '{i}', not an index below {n}"),
                    )
                })
            }
            (None, None) => Ok(Shard::WHOLE),
        }
    }

    /// When the load begins, if not at once.
    pub fn start(&self) -> Option<StartRule> {
        match (self.start_at, self.start_delay) {
            (Some(t), _) => Some(StartRule::At(t)),
            (None, Some(s)) => Some(StartRule::Delay(s)),
            (None, None) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use loadrig_spec::Shard;

    use crate::flags::{Cli, Command, WorkloadArgs};

    /// The shard of `loadrig run voter ARGS` with `index` as the value of
    /// `$JOB_COMPLETION_INDEX`.
    fn shard(args: &[&str], index: Option<&str>) -> Result<Shard, String> {
        let mut all = vec!["loadrig", "run", "voter"];
        all.extend_from_slice(args);
        let Command::Run {
            workload: WorkloadArgs::Voter { run, .. },
        } = Cli::try_parse_from(all).map_err(|e| e.to_string())?.command
        else {
            return Err("not run voter".into());
        };
        run.shard_of(index).map_err(|e| e.to_string())
    }

    #[test]
    fn shards_takes_its_index_from_the_environment_and_shard_wins_alone() {
        assert_eq!(
            shard(&["--shards", "4"], Some("3")),
            Ok(Shard { index: 3, count: 4 })
        );
        assert_eq!(
            shard(&["--shard", "1/2"], Some("3")),
            Ok(Shard { index: 1, count: 2 })
        );
        assert_eq!(
            shard(&[], Some("3")),
            Ok(Shard::WHOLE),
            "the variable alone does nothing"
        );
        let e = shard(&["--shards", "4"], None).unwrap_err();
        assert!(
            e.starts_with("--shards:") && e.contains("JOB_COMPLETION_INDEX"),
            "{e}"
        );
        for bad in ["4", "-1", "x", ""] {
            let e = shard(&["--shards", "4"], Some(bad)).unwrap_err();
            assert!(e.contains(&format!("'{bad}'")), "{e}");
        }
        assert!(shard(&["--shards", "2", "--shard", "0/2"], None).is_err());
        assert!(shard(&["--shards", "2", "--processes", "2"], None).is_err());
        assert!(shard(&["--no-prepare", "--processes", "2"], None).is_err());
    }
}
