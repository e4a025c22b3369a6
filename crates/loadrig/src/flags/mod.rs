//! Command-line flags, in two stages (ripgrep's model): clap parses the
//! words into these structs, then [`RunArgs::spec`] checks them together
//! and builds the [`RunSpec`]. Help text lives in the doc comments.

mod capacity;
mod chat;
mod dashboard;
mod export;
pub mod files;
mod hello;
mod http;
mod kv;
mod memcache;
mod output;
mod pgbench;
mod pubsub;
mod redis;
mod run;
mod stages;
mod tls;
mod voter;

pub use capacity::*;
pub use chat::*;
pub use dashboard::*;
pub use export::*;
pub use hello::*;
pub use http::*;
pub use kv::*;
pub use memcache::*;
pub use output::*;
pub use pgbench::*;
pub use pubsub::*;
pub use redis::*;
pub use run::*;
pub use stages::*;
pub use tls::*;
pub use voter::*;

use std::ffi::OsString;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory, Parser, Subcommand};
use loadrig_spec::{Preset, RunSpec, SpecError, TargetFacts, WorkloadSpec};

pub use crate::session::ChildLine;

#[derive(Debug, Parser)]
#[command(
    name = "loadrig",
    version,
    about = "Drives real data stores and message brokers with load, honestly measured.",
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once at start-up: the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a workload against a target
    Run {
        #[command(subcommand)]
        workload: WorkloadArgs,
    },
    /// A many-host run's first step: create the schema and data once, record the baseline (--out)
    Prepare {
        #[command(subcommand)]
        workload: WorkloadArgs,
    },
    /// A many-host run's last step: drop what `loadrig prepare` created
    Teardown {
        #[command(subcommand)]
        workload: WorkloadArgs,
    },
    /// List the targets and the workloads each can run
    Targets,
    /// List the workloads
    Workloads,
    /// Check a kept database against the counts in a report
    Verify(VerifyArgs),
    /// Join the reports of one run's processes or hosts (--shard i/N) into one
    Merge(MergeArgs),
    /// Compare two reports side by side; exit 1 on a regression beyond --max-regression
    Compare(CompareArgs),
    /// Draw charts (SVG, HTML, PNG) from reports, sweep CSVs and redis-benchmark --csv files
    Plot(PlotArgs),
    /// Write reports as one self-contained HTML page
    Report(ReportArgs),
    /// Run one workload over a list or range of one parameter's values (docs/guides/sweep.md)
    Sweep(SweepArgs),
    /// Find the highest open-loop rate at which every SLO holds, verified (docs/guides/capacity.md)
    Capacity(CapacityArgs),
    /// Run two command lines in alternating rounds: PASS, FAIL or INCONCLUSIVE (docs/guides/capacity.md)
    Ab(AbArgs),
    /// Print a shell completion script (e.g. `loadrig completions bash > /etc/bash_completion.d/loadrig`)
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff; `loadrig man | man -l -`), or write one per subcommand to --dir
    Man {
        /// Write loadrig.1, loadrig-run.1, loadrig-run-redis.1, ... to this directory
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Print the command-line reference as Markdown (docs/reference/cli.md) instead
        #[arg(long, hide = true, conflicts_with = "dir")]
        markdown: bool,
    },
    /// redis-benchmark's command line, as its manual spells it (`--help` lists the flags)
    #[command(name = "redis-benchmark", disable_help_flag = true)]
    RedisBenchmark(PeerArgs),
    /// memtier_benchmark's command line, as its manual spells it
    #[command(name = "memtier_benchmark", disable_help_flag = true)]
    MemtierBenchmark(PeerArgs),
    /// memaslap's command line, as its manual spells it
    #[command(name = "memaslap", disable_help_flag = true)]
    Memaslap(PeerArgs),
    /// nats-bench's command line, as its manual spells it (`-np 2 -ns 3 ...`)
    #[command(name = "nats-bench", disable_help_flag = true)]
    NatsBench(PeerArgs),
    /// wrk's command line (and wrk2's -R), as its manual spells it
    #[command(name = "wrk", disable_help_flag = true)]
    Wrk(PeerArgs),
    /// pgbench's command line, as its manual spells it (`-i` makes the tables)
    #[command(name = "pgbench", disable_help_flag = true)]
    Pgbench(PeerArgs),
}

/// A peer tool's words, taken apart by `crate::peers`, not by clap.
#[derive(Debug, Args)]
pub struct PeerArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0.., value_name = "ARGS")]
    pub args: Vec<OsString>,
}

impl Command {
    /// The peer whose command line this is, and its words.
    pub fn peer(&self) -> Option<(crate::peers::Peer, &[OsString])> {
        use crate::peers::Peer;
        let (peer, args) = match self {
            Command::RedisBenchmark(a) => (Peer::RedisBenchmark, a),
            Command::MemtierBenchmark(a) => (Peer::MemtierBenchmark, a),
            Command::Memaslap(a) => (Peer::Memaslap, a),
            Command::NatsBench(a) => (Peer::NatsBench, a),
            Command::Wrk(a) => (Peer::Wrk, a),
            Command::Pgbench(a) => (Peer::Pgbench, a),
            _ => return None,
        };
        Some((peer, &args.args))
    }
}

#[derive(Debug, Subcommand)]
pub enum WorkloadArgs {
    /// VoltDB's Voter: one vote is one server-side transaction
    #[command(after_help = PRESETS_HELP, disable_help_flag = true)]
    Voter {
        #[command(flatten)]
        voter: VoterArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Erlvolt's hello world: the smallest procedure call
    #[command(after_help = PRESETS_HELP, disable_help_flag = true)]
    Hello {
        #[command(flatten)]
        hello: HelloArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// redis-benchmark's tests and flags, one test after the other
    #[command(
        after_help = REDIS_HELP, disable_help_flag = true,
        mut_arg("target", |a| a.help(with_default("Target URL", REDIS_DEFAULTS.target))),
        mut_arg("duration", |a| a.help("Measure each test for this long instead of -n (e.g. 10, 10s, 500ms)")),
        mut_arg("requests", |a| a.help(with_default("Requests per test, over all clients", DEFAULT_REQUESTS))),
        mut_arg("clients", |a| a.help(with_default("Clients, each with its connection", REDIS_DEFAULTS.clients))),
        mut_arg("threads", |a| a.help(with_default("Threads driving the load, as redis-benchmark", threads(REDIS_DEFAULTS)))),
        mut_arg("quiet", |a| a.help("One line per test on standard output, as redis-benchmark -q (the rest on standard error)")),
        mut_arg("csv", |a| a.help("redis-benchmark's CSV on standard output (the rest goes to standard error)"))
    )]
    Redis {
        #[command(flatten)]
        redis: RedisArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// nats-bench's load: publishers, subscribers, end-to-end latency, losses
    #[command(
        after_help = PUBSUB_HELP, disable_help_flag = true,
        mut_arg("target", |a| a.help(with_default("Target URL: nats://, mqtt://[?qos=1] or redis://", BROKER_DEFAULTS.target))),
        mut_arg("requests", |a| a.help(with_default("Messages in total, over all publishers", DEFAULT_REQUESTS))),
        mut_arg("clients", |a| a.hide(true)),
        mut_arg("connections", |a| a.hide(true)),
        mut_arg("processes", |a| a.help("Run in this many processes, each with --pubs and --subs of its own on one subject, merged and verified as one run")),
        mut_arg("keep", |a| a.hide(true)),
        mut_arg("queue", |a| a.hide(true)),
        mut_arg("slots", |a| a.hide(true)),
        mut_arg("pipeline", |a| a.default_value("1024").help("Messages each publisher keeps in flight (written but not yet flushed, or not yet acknowledged)"))
    )]
    Pubsub {
        #[command(flatten)]
        pubsub: PubSubArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Chut's chat: G groups x CPG clients messaging random peers of their group
    #[command(
        after_help = CHAT_HELP, disable_help_flag = true,
        mut_arg("target", |a| a.help(with_default("Target URL: nats://, mqtt://[?qos=1] or redis://", BROKER_DEFAULTS.target))),
        mut_arg("duration", |a| a.help(with_default("How long clients send, Chut's T (e.g. 10, 10s, 2m)", format_args!("{CHAT_SECONDS}s")))),
        mut_arg("requests", |a| a.help("Messages in total instead of --duration")),
        mut_arg("clients", |a| a.hide(true)),
        mut_arg("connections", |a| a.hide(true)),
        mut_arg("processes", |a| a.help("Run in this many processes, each with --groups groups of its own, merged and verified as one run")),
        mut_arg("keep", |a| a.hide(true))
    )]
    Chat {
        #[command(flatten)]
        chat: ChatArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// FoundationDB's key-value tests: write1, write10, read10, mix, range
    #[command(
        after_help = KV_HELP, disable_help_flag = true,
        mut_arg("target", |a| a.help(with_default("Target URL", KV_DEFAULTS.target))),
        mut_arg("clients", |a| a.help(with_default("Clients, each with its connection and one transaction in flight", KV_DEFAULTS.clients))),
        mut_arg("duration", |a| a.help(with_default("Run this long instead of -n (e.g. 10, 10s, 2m)", format_args!("{}s", KV_DEFAULTS.duration.unwrap_or(60.0))))),
        mut_arg("requests", |a| a.help("Transactions in total instead of --duration")),
        mut_arg("keep", |a| a.help("Leave the run's writes in the data (the loaded data is kept anyway, its rows put back; after --keep the next run loads again)"))
    )]
    Kv {
        #[command(flatten)]
        kv: KvArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// pgbench: its tables, builtin scripts and script language on PostgreSQL, the TPC-B balances verified
    #[command(
        disable_help_flag = true,
        mut_arg("target", |a| a.help(with_default("Target URL", PGBENCH_DEFAULTS.target))),
        mut_arg("clients", |a| a.help(with_default("Clients, each with its connection and one transaction in flight (pgbench -c)", PGBENCH_DEFAULTS.clients))),
        mut_arg("requests", |a| a.help("Transactions in total, over all clients (pgbench -t times -c)"))
    )]
    Pgbench {
        #[command(flatten)]
        pgbench: PgbenchArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// memaslap's load on memcached: gets and sets over a window of keys per client
    #[command(
        visible_alias = "memcached",
        after_help = MEMCACHE_HELP, disable_help_flag = true,
        mut_arg("target", |a| a.help(with_default("Target URL", MEMCACHE_DEFAULTS.target))),
        mut_arg("clients", |a| a.help(with_default("Clients, each with its connection and window of keys (memaslap's concurrency)", MEMCACHE_DEFAULTS.clients))),
        mut_arg("threads", |a| a.help(with_default("Threads driving the load, as memaslap", threads(MEMCACHE_DEFAULTS))))
    )]
    Memcache {
        #[command(flatten)]
        memcache: MemcacheArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// wrk's load and output on HTTP/1.1 servers (wrk2's open loop with -R)
    #[command(
        after_help = HTTP_HELP, disable_help_flag = true,
        mut_arg("target", |a| a.help(with_default("Target URL (or give it as the last word, as wrk)", HTTP_DEFAULTS.target))),
        mut_arg("threads", |a| a.help(with_default("Threads driving the load, as wrk's -t", threads(HTTP_DEFAULTS)))),
        mut_arg("clients", |a| a.help(with_default("Connections to keep open, as wrk's -c (each a client of the closed loop)", HTTP_DEFAULTS.clients))),
        mut_arg("duration", |a| a.help(with_default("Duration of the test, as wrk's -d (e.g. 10, 10s, 2m)", format_args!("{}s", HTTP_SECONDS)))),
        mut_arg("requests", |a| a.help("Requests in total instead of --duration")),
        mut_arg("pipeline", |a| a.help("Requests each connection keeps in flight (wrk's pipeline.lua)")),
        mut_arg("timeout", |a| a.default_value(HTTP_TIMEOUT).help("A request unanswered this long fails as a timeout, as wrk's --timeout"))
    )]
    Http {
        #[command(flatten)]
        http: HttpArgs,
        #[command(flatten)]
        run: RunArgs,
    },
}

/// What a workload assumes when a flag is not given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Defaults {
    pub clients: u32,
    /// Runtime threads; `None`: one per core.
    pub threads: Option<usize>,
    pub target: &'static str,
    /// Without `-n` or `--duration`: run this many seconds (`None`:
    /// `-n` 100000).
    pub duration: Option<f64>,
}

/// A flag's help with its default, written from the constant the code
/// uses, so the two cannot drift apart.
fn with_default(help: &str, default: impl std::fmt::Display) -> String {
    format!("{help} [default: {default}]")
}

/// A workload's default runtime threads, as help shows it.
fn threads(d: Defaults) -> String {
    d.threads
        .map_or_else(|| "the number of cores".to_string(), |n| n.to_string())
}

/// The machine's cores (2 when it does not say).
fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// A workload's command line, taken apart.
pub struct Parts<'a> {
    pub run: &'a RunArgs,
    /// The target given as the workload's own argument (wrk's URL), or
    /// made from `--target` by a workload's flag (redis `--cluster`), if any.
    pub url: Option<std::borrow::Cow<'a, str>>,
    pub workload: WorkloadSpec,
    pub preset: Option<Preset>,
    pub defaults: Defaults,
}

impl<'a> Parts<'a> {
    /// A workload with no URL of its own and no preset.
    fn plain(run: &'a RunArgs, workload: WorkloadSpec, defaults: Defaults) -> Parts<'a> {
        Parts {
            run,
            url: None,
            workload,
            preset: None,
            defaults,
        }
    }

    /// The target URL as given, or the workload's default.
    pub fn target(&self) -> &str {
        self.url
            .as_deref()
            .or(self.run.target.as_deref())
            .unwrap_or(self.defaults.target)
    }

    /// The run spec, resolved against what the opened target says of
    /// itself (see [`RunArgs::spec`]).
    pub fn spec(&self, facts: &TargetFacts) -> Result<RunSpec, SpecError> {
        self.run
            .spec(self.workload.clone(), self.preset, &self.defaults, facts)
    }
}

impl WorkloadArgs {
    /// The shared flags, the workload's spec, the preset chosen and the
    /// workload's defaults.
    pub fn parts(&self) -> Result<Parts<'_>, SpecError> {
        Ok(match self {
            WorkloadArgs::Voter { run, voter } => {
                let preset = voter.preset.map(VoterPresetArg::preset);
                Parts {
                    run,
                    url: None,
                    workload: voter.spec(preset),
                    preset,
                    defaults: DB_DEFAULTS,
                }
            }
            WorkloadArgs::Hello { run, hello } => {
                let preset = hello.preset.map(|HelloPresetArg::Hsd| Preset::Hsd);
                Parts {
                    run,
                    url: None,
                    workload: hello.spec(),
                    preset,
                    defaults: DB_DEFAULTS,
                }
            }
            WorkloadArgs::Redis { run, redis } => {
                tests_are_not_a_target(run)?;
                Parts {
                    run,
                    url: redis
                        .cluster_url(run.target.as_deref().unwrap_or(REDIS_DEFAULTS.target))?,
                    workload: redis.spec()?,
                    preset: None,
                    defaults: REDIS_DEFAULTS,
                }
            }
            WorkloadArgs::Pubsub { run, pubsub } => {
                one_connection_per_client(run)?;
                no_subject_across_hosts(run, pubsub)?;
                no_managed_mode(run)?;
                Parts::plain(run, pubsub.spec(run), pubsub.defaults())
            }
            WorkloadArgs::Chat { run, chat } => {
                one_connection_per_client(run)?;
                let spec = chat.spec()?;
                let defaults = Defaults {
                    clients: spec.clients(),
                    duration: Some(CHAT_SECONDS),
                    ..BROKER_DEFAULTS
                };
                Parts::plain(run, WorkloadSpec::Chat(spec), defaults)
            }
            WorkloadArgs::Http { run, http } => {
                http.url_given_once(run)?;
                Parts {
                    run,
                    url: http.url.as_deref().map(Into::into),
                    workload: http.spec()?,
                    preset: None,
                    defaults: HTTP_DEFAULTS,
                }
            }
            WorkloadArgs::Kv { run, kv } => Parts::plain(run, kv.spec()?, KV_DEFAULTS),
            WorkloadArgs::Pgbench { run, pgbench } => {
                Parts::plain(run, pgbench.spec()?, PGBENCH_DEFAULTS)
            }
            WorkloadArgs::Memcache { run, memcache } => {
                Parts::plain(run, memcache.spec()?, MEMCACHE_DEFAULTS)
            }
        })
    }
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The report of the run to check
    pub report: PathBuf,
    /// The target (or $LOADRIG_TARGET), if not the one named in the report (where a password is masked)
    #[arg(long, short = 't', env = TARGET_ENV, hide_env_values = true)]
    pub target: Option<String>,
    #[command(
        flatten,
        next_help_heading = "TLS (rediss://, tls://, mqtts://, ?sslmode=)"
    )]
    pub tls: TlsArgs,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The reports, one per process or host; - reads standard input, one report per line (other lines are skipped)
    #[arg(required = true, value_name = "REPORT")]
    pub reports: Vec<PathBuf>,
    /// The record of `loadrig prepare --out`: its baseline goes into the merged report, for `loadrig verify`
    #[arg(long, value_name = "FILE")]
    pub prepared: Option<PathBuf>,
    /// Write the merged report (JSON, schema loadrig.report/1) to this file
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Merge reports of different runs (different spec or seed) all the same
    #[arg(long)]
    pub force: bool,
}

/// Flags that the parent of `--processes` sets for each child itself.
const PARENT_ONLY: [&str; 15] = [
    "processes",
    "dashboard",
    "lap_feed",
    "hdr_log",
    "html",
    "start_at",
    "start_delay",
    "out",
    "csv",
    "json",
    "quiet",
    "shard",
    "child",
    "pin",
    "cpus",
];

/// Flags a child of `--processes` (or a sweep's point) receives in its
/// environment, never on its command line (where `ps` shows them to every
/// user): the target URL may hold a password, a header a token. A flag
/// given more than once goes as one variable, its values a line each.
pub(crate) const BY_ENV: [(&str, &str); 2] = [("target", TARGET_ENV), ("header", HEADERS_ENV)];

/// The environment variable `-H` is also read from (a header a line).
pub const HEADERS_ENV: &str = "LOADRIG_HEADERS";

/// The environment variable `--target` is also read from.
pub const TARGET_ENV: &str = "LOADRIG_TARGET";

/// The child's command line and environment from the parent's matches.
pub fn child_line(matches: &ArgMatches) -> ChildLine {
    let mut line = ChildLine {
        args: vec!["run".into()],
        env: Vec::new(),
    };
    let Some(("run", run)) = matches.subcommand() else {
        return line;
    };
    let Some((name, given)) = run.subcommand() else {
        return line;
    };
    line.args.push(name.into());
    let cli = Cli::command();
    let Some(cmd) = cli
        .find_subcommand("run")
        .and_then(|r| r.find_subcommand(name))
    else {
        return line;
    };
    let mut words = Vec::new();
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if arg.is_positional() && !arg.is_last_set() {
            // A workload's own argument (http's URL), after the flags.
            if given.value_source(id) == Some(ValueSource::CommandLine) {
                words.extend(given.get_raw(id).into_iter().flatten().map(OsString::from));
            }
            continue;
        }
        let Some(long) = arg.get_long() else { continue };
        if PARENT_ONLY.contains(&id) || given.value_source(id) != Some(ValueSource::CommandLine) {
            continue;
        }
        if let Some((_, var)) = BY_ENV.iter().find(|(flag, _)| *flag == id) {
            let values: Vec<&std::ffi::OsStr> = given.get_raw(id).into_iter().flatten().collect();
            if !values.is_empty() {
                line.env
                    .push((var, values.join(std::ffi::OsStr::new("\n"))));
            }
            continue;
        }
        if arg.get_action().takes_values() {
            for v in given.get_raw(id).into_iter().flatten() {
                let mut word = OsString::from(format!("--{long}="));
                word.push(v);
                line.args.push(word);
            }
        } else {
            line.args.push(format!("--{long}").into());
        }
    }
    line.args.extend(words);
    line
}

/// Parse a time: a number of seconds, or with a unit (ms, s, m, h).
fn seconds(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a time (e.g. 10, 10s, 500ms, 2m)"))?;
    let scale = match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" => 1e-6,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("'{s}': unknown unit '{unit}' (use ms, s, m or h)")),
    };
    Ok(v * scale)
}

/// A number as people write them: `100000`, `100_000`, `10k`, `1.5M`,
/// `2G` (thousands, millions, billions) or `1e5`.
fn amount(s: &str) -> Result<f64, String> {
    let t = s.trim().replace('_', "");
    let (num, scale) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1e3),
        Some((i, 'm' | 'M')) => (&t[..i], 1e6),
        Some((i, 'g' | 'G')) => (&t[..i], 1e9),
        _ => (t.as_str(), 1.0),
    };
    match num.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v * scale),
        _ => Err(format!("'{s}' is not a number (e.g. 5000, 5k, 1.5M, 1e5)")),
    }
}

/// Bytes: a whole number, or with `k`, `m` or `g` for 1024, 1024^2 and
/// 1024^3 (`64m`), from 4 KiB to 16 GiB.
fn byte_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (num, scale) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1u64 << 10),
        Some((i, 'm' | 'M')) => (&t[..i], 1 << 20),
        Some((i, 'g' | 'G')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size in bytes (e.g. 65536, 64k, 64m, 1g)"))?;
    match n.checked_mul(scale) {
        Some(b) if (4096..=16 << 30).contains(&b) => {
            usize::try_from(b).map_err(|_| format!("'{s}' is too large"))
        }
        _ => Err(format!("'{s}': give 4k to 16g")),
    }
}

/// A whole count, written as [`amount`] allows (`10k`, `1e5`).
fn count<T: TryFrom<u64>>(s: &str) -> Result<T, String> {
    let v = amount(s)?;
    if v.fract() != 0.0 || v > u64::MAX as f64 {
        return Err(format!("'{s}' is not a whole number"));
    }
    T::try_from(v as u64).map_err(|_| format!("'{s}' is too large"))
}

/// Milliseconds: a bare number is milliseconds (Erlvolt's burst delay),
/// or a time with its unit (`500us`, `2ms`, `1s`).
fn millis(s: &str) -> Result<f64, String> {
    let t = s.trim();
    if t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return t
            .parse::<f64>()
            .map_err(|_| format!("'{s}' is not a time in milliseconds"));
    }
    if let Some(us) = t.strip_suffix("us") {
        return us
            .parse::<f64>()
            .map(|v| v / 1e3)
            .map_err(|_| format!("'{s}' is not a time (e.g. 5, 500us, 2ms, 1s)"));
    }
    seconds(t).map(|v| v * 1e3)
}

/// A UNIX time in seconds, integer or fractional.
fn unix_time(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!(
            "'{s}' is not a UNIX time in seconds (e.g. 1795000000 or 1795000000.5)"
        )),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use loadrig_spec::{Dispatch, Pacing, Stop, VoterGenerator};

    /// `loadrig run voter ARGS` as the spec it makes (other modules'
    /// tests use it too).
    pub(crate) fn parse(args: &[&str]) -> Result<RunSpec, String> {
        let mut all = vec!["loadrig", "run", "voter"];
        all.extend_from_slice(args);
        parse_all(&all)
    }

    fn parse_all(all: &[&str]) -> Result<RunSpec, String> {
        let cli = Cli::try_parse_from(all).map_err(|e| e.to_string())?;
        match cli.command {
            Command::Run { workload } => {
                let parts = workload.parts().map_err(|e| e.to_string())?;
                let settings = loadrig_targets::ClientSettings::default();
                let target = loadrig_targets::Target::open(Some(parts.target()), &settings)
                    .map_err(|e| e.to_string())?;
                parts.spec(&target.facts()).map_err(|e| e.to_string())
            }
            _ => Err("not run".into()),
        }
    }

    #[test]
    fn counts_and_rates_take_suffixes() {
        assert_eq!(count::<u64>("10k"), Ok(10_000));
        assert_eq!(count::<u64>("1e5"), Ok(100_000));
        assert_eq!(count::<u32>("1.5M"), Ok(1_500_000));
        assert_eq!(count::<u64>("100_000"), Ok(100_000));
        assert!(count::<u32>("1.5").is_err());
        assert!(count::<u32>("5G").is_err(), "too large for u32");
        assert!(count::<u64>("-3").is_err());
        assert_eq!(amount("5k"), Ok(5000.0));
        assert_eq!(millis("5"), Ok(5.0));
        assert_eq!(millis("500us"), Ok(0.5));
        assert_eq!(millis("1s"), Ok(1000.0));
        let s = parse(&["-n", "10k", "--rate", "2k", "-t", "null://"]).unwrap();
        assert_eq!(s.load.stop, Stop::Count(10_000));
        assert!(matches!(s.load.pacing, Pacing::Rate { rate, .. } if rate == 2000.0));
    }

    #[test]
    fn defaults_are_a_steady_closed_loop() {
        let s = parse(&[]).unwrap();
        assert_eq!(s.load.pacing, Pacing::Steady);
        assert_eq!(s.load.stop, Stop::Count(DEFAULT_REQUESTS));
        assert_eq!(s.load.connections, s.load.clients);
        assert!(s.verify);
    }

    #[test]
    fn connections_default_from_the_target_never_above_clients() {
        let s = parse(&["--target", "voltdb://h1,h2,h3", "--clients", "8"]).unwrap();
        assert_eq!(s.load.connections, 3);
        let s = parse(&["--target", "voltdb://h1,h2,h3", "--clients", "2"]).unwrap();
        assert_eq!(s.load.connections, 2);
        let s = parse(&["--target", "voltdb://h1,h2", "--connections", "4"]).unwrap();
        assert_eq!(s.load.connections, 4);
        let s = parse(&["--target", "null://", "--clients", "5"]).unwrap();
        assert_eq!(s.load.connections, 5);
    }

    #[test]
    fn a_preset_sets_defaults_and_flags_given_win() {
        let s = parse(&["--preset", "vbm"]).unwrap();
        assert_eq!(s.preset, Some(Preset::Vbm));
        assert_eq!(s.load.clients, 100);
        assert_eq!(
            s.load.pacing,
            Pacing::Burst {
                size: 1,
                delay_ms: 1.0,
                limit: 1
            }
        );
        assert_eq!(
            s.load.dispatch,
            Dispatch::Managed {
                queue: 10_000,
                slots: 100
            }
        );
        assert_eq!(s.load.stop, Stop::Count(100_000));
        let WorkloadSpec::Voter(v) = &s.workload else {
            panic!("voter")
        };
        assert_eq!(v.generator, VoterGenerator::Erlvolt);
        assert_eq!(v.max_votes, 20_000);

        let s = parse(&["--clients", "7", "--preset", "vsd", "-d", "3"]).unwrap();
        assert_eq!(s.load.clients, 7);
        assert_eq!(s.load.stop, Stop::Seconds(3.0));
        let s = parse(&["--preset", "vbd", "--limit", "4"]).unwrap();
        assert!(matches!(
            s.load.pacing,
            Pacing::Burst {
                delay_ms: 5.0,
                limit: 4,
                ..
            }
        ));
        assert!(parse(&["--burst-delay", "2"])
            .unwrap_err()
            .starts_with("--burst-delay:"));
        let hello = parse_all(&["loadrig", "run", "hello", "--preset", "hsd"]).unwrap();
        assert_eq!(hello.load.clients, 200);
        assert!(parse_all(&["loadrig", "run", "hello", "--preset", "vsd"]).is_err());
    }

    #[test]
    fn children_get_the_flags_given_less_the_parents_own() {
        let words = [
            "loadrig",
            "run",
            "voter",
            "-t",
            "null://?delay=1ms",
            "-n",
            "3000",
            "--processes",
            "3",
            "-o",
            "r.json",
            "-q",
            "--start-delay",
            "2",
            "--keep",
            "--preset",
            "vsd",
            "--csv",
        ];
        let m = Cli::command().try_get_matches_from(words).unwrap();
        let line = child_line(&m);
        let args: Vec<String> = line
            .args
            .iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            ["run", "voter", "--preset=vsd", "--requests=3000", "--keep"]
        );
        assert_eq!(line.env, [(TARGET_ENV, "null://?delay=1ms".into())]);
    }

    #[test]
    fn processes_refuse_shards_and_a_private_database() {
        let e = parse(&["-t", "null://", "--processes", "2", "--shard", "0/2"]).unwrap_err();
        assert!(e.starts_with("--processes:"), "{e}");
        let e = parse(&["--processes", "2"]).unwrap_err();
        assert!(e.starts_with("--processes:"), "{e}");
        let e = parse(&["-t", "sqlite://?sync=full", "--processes", "2"]).unwrap_err();
        assert!(e.starts_with("--processes:"), "{e}");
        let s = parse(&["-t", "sqlite:///tmp/x.db", "--processes", "2"]).unwrap();
        assert_eq!(s.processes, 2);
    }

    #[test]
    fn sql_servers_are_driven_by_one_thread_unless_told() {
        let cores = super::cores();
        for (url, threads) in [
            ("postgres://u:p@127.0.0.1/db", 1),
            ("mysql://u:p@127.0.0.1/db", 1),
            ("sqlite:///tmp/x.db", cores),
            ("voltdb://127.0.0.1", cores),
        ] {
            assert_eq!(parse(&["-t", url]).unwrap().threads, threads, "{url}");
            assert_eq!(
                parse(&["-t", url, "--threads", "3"]).unwrap().threads,
                3,
                "{url}"
            );
        }
        let kv = parse_all(&["loadrig", "run", "kv", "-t", "mysql://u:p@h/db"]).unwrap();
        assert_eq!(kv.threads, 1);
    }

    #[test]
    fn memcache_defaults_are_memaslaps() {
        let s = parse_all(&["loadrig", "run", "memcache"]).unwrap();
        assert_eq!(s.target, "memcache://127.0.0.1:11211");
        assert_eq!((s.load.clients, s.threads), (16, 1));
        let WorkloadSpec::Memcache(m) = &s.workload else {
            panic!("memcache")
        };
        assert_eq!((m.sets, m.gets, m.key_size), (1, 9, 64));
        assert_eq!((m.value_min, m.value_max, m.window), (1024, 1024, 10_240));
        assert_eq!((m.multiget, m.binary), (1, false));
        for (flag, value) in [
            ("--key-size", "8"),
            ("--window", "ten"),
            ("--ratio", "9"),
            ("--value-size", "9-3"),
            ("--multiget", "0"),
            ("--verify-gets", "2"),
        ] {
            let e = parse_all(&["loadrig", "run", "memcache", flag, value]).unwrap_err();
            assert!(e.starts_with(&format!("{flag}:")), "{e}");
        }
    }

    #[test]
    fn http_defaults_are_wrks_and_the_url_is_the_last_word() {
        let s = parse_all(&["loadrig", "run", "http"]).unwrap();
        assert_eq!(s.target, "http://127.0.0.1:8088/");
        assert_eq!((s.load.clients, s.threads), (10, 2));
        assert_eq!((s.load.stop, s.timeout_secs), (Stop::Seconds(10.0), 2.0));
        let s = parse_all(&[
            "loadrig",
            "run",
            "http",
            "--threads",
            "3",
            "-c",
            "7",
            "-H",
            "X-A: 1",
            "-L",
            "http://127.0.0.1:8089,8090/x?y=1",
        ])
        .unwrap();
        assert_eq!(s.target, "http://127.0.0.1:8089,8090/x?y=1");
        assert_eq!((s.load.clients, s.threads), (7, 3));
        let WorkloadSpec::Http(h) = &s.workload else {
            panic!("http")
        };
        assert_eq!(
            (h.method.as_str(), &h.headers[..], h.latency),
            ("GET", &["X-A: 1".to_string()][..], true)
        );
        for (args, flag) in [
            (&["-H", "nocolon"][..], "--header"),
            (&["--method", "G T"][..], "--method"),
            (&["--body-file", "/no/such/file"][..], "--body-file"),
            (&["--target", "http://h/", "http://h/"][..], "--target"),
        ] {
            let mut all = vec!["loadrig", "run", "http"];
            all.extend_from_slice(args);
            let e = parse_all(&all).unwrap_err();
            assert!(e.starts_with(&format!("{flag}:")), "{e}");
        }
    }

    #[test]
    fn short_flags_mean_the_same_in_every_workload() {
        for (workload, url) in [
            ("voter", "null://"),
            ("redis", "redis://127.0.0.1:6390"),
            ("http", "http://127.0.0.1:8090/"),
            ("memcache", "memcache://127.0.0.1:11290"),
            ("pubsub", "nats://127.0.0.1:4290"),
        ] {
            let s = parse_all(&["loadrig", "run", workload, "-t", url, "-d", "3"]).unwrap();
            assert!(url.starts_with(&s.target), "{workload}: {}", s.target);
            assert_eq!(s.load.stop, Stop::Seconds(3.0), "{workload}");
        }
    }

    #[test]
    fn the_old_short_flags_get_a_hint() {
        let e = parse_all(&["loadrig", "run", "redis", "-t", "set,get"]).unwrap_err();
        assert!(
            e.starts_with("--target: 'set,get' is a list of tests"),
            "{e}"
        );
        let e =
            parse_all(&["loadrig", "run", "http", "-t2", "http://127.0.0.1:8088/"]).unwrap_err();
        assert!(e.contains("wrk's -t (threads) is --threads"), "{e}");
    }

    #[test]
    fn every_payload_is_value_size_and_old_names_still_work() {
        for (workload, old) in [
            ("redis", "--data-size"),
            ("http", "--put-size"),
            ("pubsub", "--size"),
            ("chat", "--size"),
            ("memcache", "--value-size"),
            ("kv", "--value-size"),
        ] {
            for flag in ["--value-size", old] {
                let s = parse_all(&["loadrig", "run", workload, flag, "100"]).unwrap();
                let size = match &s.workload {
                    WorkloadSpec::Redis(r) => r.data_size,
                    WorkloadSpec::Http(h) => h.put_size,
                    WorkloadSpec::Pubsub(p) => p.size,
                    WorkloadSpec::Chat(c) => c.size,
                    WorkloadSpec::Memcache(m) => m.value_max,
                    WorkloadSpec::Kv(k) => k.value_max as usize,
                    _ => unreachable!(),
                };
                assert_eq!(size, 100, "{workload} {flag}");
            }
        }
    }

    #[test]
    fn pubsub_and_chat_refuse_what_they_do_not_list() {
        for (args, flag) in [
            (&["pubsub", "--keep"][..], "--keep"),
            (&["chat", "--keep"][..], "--keep"),
            (&["pubsub", "--queue", "5"][..], "--queue"),
        ] {
            let mut all = vec!["loadrig", "run"];
            all.extend_from_slice(args);
            let e = parse_all(&all).unwrap_err();
            assert!(e.starts_with(&format!("{flag}:")), "{e}");
            let help = Cli::command()
                .find_subcommand_mut("run")
                .and_then(|r| r.find_subcommand_mut(args[0]))
                .map(|c| c.render_help().to_string())
                .unwrap();
            // Listed: a line of its own starts with it (another flag's
            // help may name it, as --pin's names --processes).
            let listed = help
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{flag} ")));
            assert!(!listed, "{}: {help}", args[0]);
        }
    }

    /// Every `run WORKLOAD --help` leads with the workload's own flags
    /// under its name, then the load, the output, the connections; every
    /// flag it shows says what it does.
    #[test]
    fn every_workload_help_leads_with_its_own_flags() {
        let cli = Cli::command();
        let run = cli.find_subcommand("run").unwrap();
        for w in run.get_subcommands() {
            for long in [false, true] {
                let mut cmd = w.clone().term_width(100);
                let help = match long {
                    false => cmd.render_help(),
                    true => cmd.render_long_help(),
                }
                .to_string();
                let headings: Vec<&str> = help
                    .lines()
                    .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
                    .collect();
                let name = w.get_name();
                assert!(
                    headings[0].to_lowercase() == format!("{name} workload:"),
                    "{name}: {headings:?}"
                );
                // The workload's own headings first, then the load, the
                // output and the connections in that order (the headings
                // of stages, the dashboard and export among them).
                let at = |h: &str| headings.iter().position(|x| *x == format!("{h}:"));
                let order = [LOAD, OUTPUT, CONNECTIONS].map(at);
                assert!(
                    order.iter().all(Option::is_some) && order.windows(2).all(|w| w[0] < w[1]),
                    "{name}: {headings:?}"
                );
                let own = &headings[..order[0].unwrap_or(0)];
                assert!(
                    own.iter()
                        .all(|h| h.to_lowercase().starts_with(&format!("{name} workload"))),
                    "{name}: {headings:?}"
                );
                assert!(!help.contains("\nOptions:"), "{name}: {help}");
            }
            for arg in w.get_arguments().filter(|a| !a.is_hide_set()) {
                let described = arg.get_help().is_some_and(|h| !h.to_string().is_empty());
                assert!(
                    described,
                    "{} --{:?}: no description",
                    w.get_name(),
                    arg.get_long()
                );
            }
        }
    }

    #[test]
    fn rate_zero_names_the_flag() {
        assert!(parse(&["--rate", "0"]).unwrap_err().starts_with("--rate:"));
    }

    #[test]
    fn rate_and_burst_conflict() {
        let e = parse(&["--rate", "10", "--burst", "5"]).unwrap_err();
        assert!(e.contains("--rate") && e.contains("--burst"), "{e}");
    }

    #[test]
    fn durations_take_units() {
        assert_eq!(seconds("500ms"), Ok(0.5));
        assert_eq!(seconds("2m"), Ok(120.0));
        assert!(seconds("fast").is_err());
    }
}
