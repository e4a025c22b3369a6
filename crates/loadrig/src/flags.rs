//! Command-line flags, in two stages (ripgrep's model): clap parses the
//! words into these structs, then [`RunArgs::spec`] checks them together
//! and builds the [`RunSpec`]. Help text lives in the doc comments.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory, Parser, Subcommand, ValueEnum};
use loadrig_spec::{
    Arrival, ChatMode, ChatSpec, Dispatch, HelloSpec, KeyPattern, LoadSpec, MemcacheSpec,
    MemtierSpec, Pacing, Preset, PubSubSpec, RedisSpec, RedisTest, RunSpec, Shard, SpecError, Stop,
    ValueSizes, VoterGenerator, VoterSpec, WorkloadSpec,
};

use crate::start::StartRule;

#[derive(Debug, Parser)]
#[command(
    name = "loadrig",
    version,
    about = "Drives real data stores and message brokers with load, honestly measured."
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
        workload: Workload,
    },
    /// List the targets and the workloads each can run
    Targets,
    /// List the workloads
    Workloads,
    /// Check a kept database against the counts in a report
    Verify(VerifyArgs),
    /// Join the reports of one run's processes or hosts (--shard i/N) into one
    Merge(MergeArgs),
}

#[derive(Debug, Subcommand)]
pub enum Workload {
    /// VoltDB's Voter: one vote is one server-side transaction
    #[command(after_help = PRESETS_HELP)]
    Voter {
        #[command(flatten)]
        run: RunArgs,
        #[command(flatten)]
        voter: VoterArgs,
    },
    /// Erlvolt's hello world: the smallest procedure call
    #[command(after_help = PRESETS_HELP)]
    Hello {
        #[command(flatten)]
        run: RunArgs,
        #[command(flatten)]
        hello: HelloArgs,
    },
    /// redis-benchmark's tests and flags, one test after the other
    #[command(
        after_help = REDIS_HELP,
        mut_arg("target", |a| a.short(None).help("Target URL [default: redis://127.0.0.1:6379]")),
        mut_arg("duration", |a| a.short(None).help("Measure each test for this long instead of -n (e.g. 10, 10s, 500ms)")),
        mut_arg("requests", |a| a.help("Requests per test, over all clients [default: 100000]")),
        mut_arg("clients", |a| a.help("Clients, each with its connection [default: 50]")),
        mut_arg("threads", |a| a.help("Threads driving the load [default: 1, as redis-benchmark]")),
        mut_arg("quiet", |a| a.help("No lap lines: one line per test, as redis-benchmark -q")),
        mut_arg("csv", |a| a.help("redis-benchmark's CSV on standard output (the rest goes to standard error)"))
    )]
    Redis {
        #[command(flatten)]
        run: RunArgs,
        #[command(flatten)]
        redis: RedisArgs,
    },
    /// nats-bench's load: publishers, subscribers, end-to-end latency, losses
    #[command(
        after_help = PUBSUB_HELP,
        mut_arg("target", |a| a.help("Target URL: nats://, mqtt://[?qos=1] or redis:// [default: nats://127.0.0.1:4222]")),
        mut_arg("requests", |a| a.help("Messages in total, over all publishers [default: 100000]")),
        mut_arg("clients", |a| a.hide(true)),
        mut_arg("connections", |a| a.hide(true)),
        mut_arg("pipeline", |a| a.default_value("1024").help("Messages each publisher keeps in flight (written but not yet flushed, or not yet acknowledged)"))
    )]
    Pubsub {
        #[command(flatten)]
        run: RunArgs,
        #[command(flatten)]
        pubsub: PubSubArgs,
    },
    /// Chut's chat: G groups x CPG clients messaging random peers of their group
    #[command(
        after_help = CHAT_HELP,
        mut_arg("target", |a| a.help("Target URL: nats://, mqtt://[?qos=1] or redis:// [default: nats://127.0.0.1:4222]")),
        mut_arg("duration", |a| a.help("How long clients send, Chut's T (e.g. 10, 10s, 2m) [default: 10s]")),
        mut_arg("requests", |a| a.help("Messages in total instead of --duration")),
        mut_arg("clients", |a| a.hide(true)),
        mut_arg("connections", |a| a.hide(true))
    )]
    Chat {
        #[command(flatten)]
        run: RunArgs,
        #[command(flatten)]
        chat: ChatArgs,
    },
    /// memaslap's load on memcached: gets and sets over a window of keys per client
    #[command(
        after_help = MEMCACHE_HELP,
        mut_arg("target", |a| a.help("Target URL [default: memcache://127.0.0.1:11211]")),
        mut_arg("clients", |a| a.help("Clients, each with its connection and window of keys [default: 16, memaslap's concurrency]")),
        mut_arg("threads", |a| a.help("Threads driving the load [default: 1, as memaslap]"))
    )]
    Memcache {
        #[command(flatten)]
        run: RunArgs,
        #[command(flatten)]
        memcache: MemcacheArgs,
    },
}

const PUBSUB_HELP: &str =
    "As nats-bench: --pubs (-np) publishers send -n messages of --size (-ms) bytes to one subject \
and each of --subs (-ns) subscribers should receive them all. Every message carries a 24-byte stamp \
(publisher, sequence, intended send time), so each subscriber measures end-to-end latency and \
counts losses, duplicates and reorders; the run fails (exit 1) if one subscriber missed a message. \
--rate paces the publishers (open loop, latency from the intended start). --request (NATS): \
request-reply, an operation is one round trip. One connection per client; subscribers go on \
receiving for --drain after the last publish.";

const CHAT_HELP: &str =
    "As Chut's benchmark: every client listens on its own inbox and sends to a random other member \
of its group. --mode stress sends as fast as the broker takes it; --mode realistic sends one \
message per --think (default 5 s) per client. After --duration (Chut's T), clients listen for \
--drain more, so every message is counted as received or lost. Prints Chut's lines, then losses; \
the deliver row of the latency table is delivery latency. One connection per client.";

const MEMCACHE_HELP: &str =
    "As memaslap: 16 clients (its concurrency), keys of 64 bytes, values of 1024, get:set 9:1, \
a window of 10k keys per client, one thread. Each client works on its own window: its sets fill \
the window in turn, its gets read keys its earlier sets wrote (--multiget N keys at a time). A \
value is a function of its key, so every value read is checked (its length always, its bytes for \
--verify-gets of them). After the run memcached's counters (cmd_set, get_hits, get_misses) are \
compared with the client's, which assumes no other client uses the servers meanwhile, and a \
sample of the keys written is read back; the run's keys are then deleted unless --keep.";

const REDIS_HELP: &str =
    "As redis-benchmark: -t picks tests, -c clients (50), -n requests per test (100000), \
-P requests in flight per client, -d value size, -r random keys, -q one line per test, --csv \
redis-benchmark's CSV on standard output; one runtime thread unless --threads. Here -t is not \
--target and -d is not --duration (give them long). Default target redis://127.0.0.1:6379; keys \
go to database --dbnum (9). Each test runs as its own phase over fresh connections; the report \
(--out) is one document with one operation kind per test, each with its own measured time.";

const PRESETS_HELP: &str =
    "Presets (--preset) are the Erlvolt bench's setups, from etc/bench/Makefile of \
voltdb-client-erlang: all -n 100000; the voter ones with --generator erlvolt. \
vsd: steady, direct, 200 clients. vsm: steady, managed, 200 clients, --queue 100000 --slots 200. \
vbm: bursts, managed, 100 clients, --burst 1 --burst-delay 1 --limit 1 --queue 10000 --slots 100. \
vbd: bursts, direct, 100 clients, --burst 1 --burst-delay 5 --limit 1. \
hsd (hello): steady, direct, 200 clients. --burst and --limit count per client, so 100 clients \
with --burst 1 issue Erlvolt's bursts of 100. Flags given explicitly win over the preset.";

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

const DB_DEFAULTS: Defaults = Defaults {
    clients: DEFAULT_CLIENTS,
    threads: None,
    target: "sqlite://",
    duration: None,
};

/// redis-benchmark's: 50 clients, one thread, the local server.
const REDIS_DEFAULTS: Defaults = Defaults {
    clients: 50,
    threads: Some(1),
    target: "redis://127.0.0.1:6379",
    duration: None,
};

/// The message brokers' (pubsub, chat): the local NATS server.
const BROKER_DEFAULTS: Defaults = Defaults {
    clients: 1,
    threads: None,
    target: "nats://127.0.0.1:4222",
    duration: None,
};

/// The machine's cores (2 when it does not say).
fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// Chut's T: 10 seconds.
const CHAT_SECONDS: f64 = 10.0;

/// pubsub and chat size their clients themselves (--pubs/--subs,
/// --groups/--per-group), each client with its own connection.
fn one_connection_per_client(run: &RunArgs) -> Result<(), SpecError> {
    if run.clients.is_some() {
        return Err(SpecError::new(
            "--clients",
            "this workload counts its clients itself (pubsub: --pubs and --subs; chat: --groups x --per-group)",
        ));
    }
    if run.connections.is_some() {
        return Err(SpecError::new(
            "--connections",
            "every pubsub or chat client has its own connection",
        ));
    }
    if run.processes.is_some_and(|k| k > 1) {
        return Err(SpecError::new(
            "--processes",
            "pubsub and chat run in one process (their subjects are private to it)",
        ));
    }
    Ok(())
}

/// memaslap's: 16 concurrencies, one thread, the local server.
const MEMCACHE_DEFAULTS: Defaults = Defaults {
    clients: 16,
    threads: Some(1),
    target: "memcache://127.0.0.1:11211",
    duration: None,
};

/// A workload's command line, taken apart.
pub struct Parts<'a> {
    pub run: &'a RunArgs,
    pub workload: WorkloadSpec,
    pub preset: Option<Preset>,
    pub defaults: Defaults,
}

impl Parts<'_> {
    /// The target URL as given, or the workload's default.
    pub fn target(&self) -> &str {
        self.run.target.as_deref().unwrap_or(self.defaults.target)
    }

    /// The run spec (see [`RunArgs::spec`]).
    pub fn spec(&self) -> Result<RunSpec, SpecError> {
        let conns = loadrig_targets::default_connections(Some(self.target()));
        let mut spec = self
            .run
            .spec(self.workload.clone(), self.preset, &self.defaults, conns)?;
        if let WorkloadSpec::Chat(chat) = &self.workload {
            if let ChatMode::Realistic { think_secs } = chat.mode {
                // Each client sends once per think time: the open loop
                // at clients / think, each client's sends a think apart.
                if self.run.rate.is_some() || self.run.burst.is_some() {
                    return Err(SpecError::new(
                        "--rate",
                        "--mode realistic paces each client by --think",
                    ));
                }
                spec.load.pacing = Pacing::Rate {
                    rate: f64::from(spec.load.clients) / think_secs,
                    arrival: Arrival::Regular,
                };
            }
        }
        Ok(spec)
    }
}

impl Workload {
    /// The shared flags, the workload's spec, the preset chosen and the
    /// workload's defaults.
    pub fn parts(&self) -> Result<Parts<'_>, SpecError> {
        Ok(match self {
            Workload::Voter { run, voter } => {
                let preset = voter.preset.map(VoterPresetArg::preset);
                Parts {
                    run,
                    workload: voter.spec(preset),
                    preset,
                    defaults: DB_DEFAULTS,
                }
            }
            Workload::Hello { run, hello } => {
                let preset = hello.preset.map(|HelloPresetArg::Hsd| Preset::Hsd);
                Parts {
                    run,
                    workload: hello.spec(),
                    preset,
                    defaults: DB_DEFAULTS,
                }
            }
            Workload::Redis { run, redis } => Parts {
                run,
                workload: redis.spec()?,
                preset: None,
                defaults: REDIS_DEFAULTS,
            },
            Workload::Pubsub { run, pubsub } => {
                one_connection_per_client(run)?;
                Parts {
                    run,
                    workload: pubsub.spec(),
                    preset: None,
                    defaults: Defaults {
                        clients: pubsub.pubs,
                        // No more runtime threads than connections: a
                        // lone publisher costs less on one.
                        threads: Some(
                            cores()
                                .min((pubsub.pubs as usize).saturating_add(pubsub.subs as usize)),
                        ),
                        ..BROKER_DEFAULTS
                    },
                }
            }
            Workload::Chat { run, chat } => {
                one_connection_per_client(run)?;
                let spec = chat.spec()?;
                Parts {
                    run,
                    defaults: Defaults {
                        clients: spec.clients(),
                        duration: Some(CHAT_SECONDS),
                        ..BROKER_DEFAULTS
                    },
                    workload: WorkloadSpec::Chat(spec),
                    preset: None,
                }
            }
            Workload::Memcache { run, memcache } => Parts {
                run,
                workload: memcache.spec()?,
                preset: None,
                defaults: MEMCACHE_DEFAULTS,
            },
        })
    }
}

/// The Voter's presets (the Erlvolt bench's `make bench-v..`).
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum VoterPresetArg {
    /// Voter, steady, direct: 200 clients (Erlvolt bench-vsd)
    Vsd,
    /// Voter, steady, managed: 200 clients, queue 100000, 200 slots (bench-vsm)
    Vsm,
    /// Voter, bursts, managed: 100 clients, bursts of 1 per client every 1 ms, limit 1, queue 10000, 100 slots (bench-vbm)
    Vbm,
    /// Voter, bursts, direct: 100 clients, bursts of 1 per client every 5 ms, limit 1 (bench-vbd)
    Vbd,
}

impl VoterPresetArg {
    fn preset(self) -> Preset {
        match self {
            VoterPresetArg::Vsd => Preset::Vsd,
            VoterPresetArg::Vsm => Preset::Vsm,
            VoterPresetArg::Vbm => Preset::Vbm,
            VoterPresetArg::Vbd => Preset::Vbd,
        }
    }
}

/// Hello's preset (the Erlvolt bench's `make bench-hsd`).
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum HelloPresetArg {
    /// Hello, steady, direct: 200 clients (Erlvolt bench-hsd)
    Hsd,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The report of the run to check
    pub report: PathBuf,
    /// The target, if not the one named in the report
    #[arg(long, short = 't')]
    pub target: Option<String>,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The reports, one per process or host
    #[arg(required = true, value_name = "REPORT")]
    pub reports: Vec<PathBuf>,
    /// Write the merged report (JSON, schema loadrig.report/1) to this file
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ArrivalArg {
    Regular,
    Poisson,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GeneratorArg {
    Voltdb,
    Erlvolt,
}

/// Flags every workload shares.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Target URL; without one, a fresh embedded SQLite database
    #[arg(long, short = 't', value_name = "URL")]
    pub target: Option<String>,
    /// Operations in total, over all clients [default: 100000]
    #[arg(
        short = 'n',
        long = "requests",
        value_name = "N",
        conflicts_with = "duration"
    )]
    pub requests: Option<u64>,
    /// Measure for this long instead (e.g. 10, 10s, 500ms, 2m)
    #[arg(long, short = 'd', value_name = "TIME", value_parser = seconds)]
    pub duration: Option<f64>,
    /// Run the load this long first, without counting it
    #[arg(long, value_name = "TIME", value_parser = seconds, default_value = "0")]
    pub warmup: f64,
    /// Clients (callers); in the closed loop each waits for its previous operation [default: 32]
    #[arg(long, short = 'c')]
    pub clients: Option<u32>,
    /// Connections the clients share [default: one per client]
    #[arg(long)]
    pub connections: Option<u32>,
    /// Requests each client keeps in flight
    #[arg(long, short = 'P', default_value_t = 1)]
    pub pipeline: u32,
    /// Open loop: operations per second in total, whatever the target does
    #[arg(long, short = 'R', value_name = "OPS", conflicts_with = "burst")]
    pub rate: Option<f64>,
    /// Open-loop inter-arrival times
    #[arg(long, value_enum, default_value_t = ArrivalArg::Regular, requires = "rate")]
    pub arrival: ArrivalArg,
    /// Bursts: this many operations at once per client
    #[arg(long, value_name = "B")]
    pub burst: Option<u32>,
    /// Bursts: sleep this many milliseconds between bursts [default: 1]
    #[arg(long, value_name = "MS")]
    pub burst_delay: Option<f64>,
    /// Bursts: wait until at most this many per client are pending [default: 0]
    #[arg(long, value_name = "L")]
    pub limit: Option<u32>,
    /// Managed mode: a queue of this many waiting operations before the connections
    #[arg(long, value_name = "Q")]
    pub queue: Option<u32>,
    /// Managed mode: at most this many operations in flight per connection
    #[arg(long, value_name = "S")]
    pub slots: Option<u32>,
    /// Open loop: an operation this late when it could start is dropped and counted
    #[arg(long, value_name = "TIME", value_parser = seconds, default_value = "10")]
    pub max_lag: f64,
    /// Seed of every random choice; the same seed issues the same operations
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// This process's part of a split run, i/N
    #[arg(long, value_name = "i/N")]
    pub shard: Option<String>,
    /// Run K local processes, each a shard, begun together and merged (clients count per process)
    #[arg(long, value_name = "K")]
    pub processes: Option<u32>,
    /// Begin the load at this wall-clock time (UNIX seconds), after connecting
    #[arg(long, value_name = "UNIX_TIME", value_parser = unix_time, conflicts_with = "start_delay")]
    pub start_at: Option<f64>,
    /// Begin the load at the next multiple of S seconds after now + S (Erlvolt's common start)
    #[arg(long, value_name = "S", value_parser = seconds)]
    pub start_delay: Option<f64>,
    /// Run as one of the processes of --processes (set by the parent)
    #[arg(long, hide = true)]
    pub child: bool,
    /// Seconds between lap lines
    #[arg(long, value_name = "TIME", value_parser = seconds, default_value = "1")]
    pub interval: f64,
    /// No lap lines (a progress bar on a terminal)
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Threads driving the load [default: the number of cores]
    #[arg(long)]
    pub threads: Option<usize>,
    /// An operation unanswered this long fails as a timeout
    #[arg(long, value_name = "TIME", value_parser = seconds, default_value = "10")]
    pub timeout: f64,
    /// Exit 1 when errors exceed this fraction of operations
    #[arg(long, value_name = "FRACTION")]
    pub max_error_rate: Option<f64>,
    /// Write the report (JSON, schema loadrig.report/1) to this file
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print the results table as CSV on standard output (the rest goes to standard error)
    #[arg(long)]
    pub csv: bool,
    /// Do not check the target's data afterwards (check later with `loadrig verify`)
    #[arg(long)]
    pub no_verify: bool,
    /// Keep the schema and data after the run
    #[arg(long)]
    pub keep: bool,
}

#[derive(Debug, Args)]
pub struct VoterArgs {
    /// Contestants, 1 to 12
    #[arg(long, default_value_t = 6)]
    pub contestants: u8,
    /// Votes one phone number may cast [default: 2; 20000 with --generator erlvolt]
    #[arg(long)]
    pub max_votes: Option<u32>,
    /// Whose caller mix: VoltDB's client (skewed, 1% invalid) or the Erlvolt bench (uniform) [default: voltdb; erlvolt with --preset]
    #[arg(long, value_enum)]
    pub generator: Option<GeneratorArg>,
    /// Callers come from only this many phone numbers (to make them collide)
    #[arg(long, value_name = "N")]
    pub phones: Option<u64>,
    /// An Erlvolt bench setup: sets the defaults above; flags given explicitly win
    #[arg(long, value_enum)]
    pub preset: Option<VoterPresetArg>,
}

#[derive(Debug, Args)]
pub struct HelloArgs {
    /// Fraction of operations that insert a new dialect (the rest select)
    #[arg(long, default_value_t = 0.0)]
    pub insert_ratio: f64,
    /// An Erlvolt bench setup: sets the defaults above; flags given explicitly win
    #[arg(long, value_enum)]
    pub preset: Option<HelloPresetArg>,
}

#[derive(Debug, Args)]
pub struct RedisArgs {
    /// Tests, comma separated, as redis-benchmark names them: ping (= ping_inline,ping_mbulk), set, get, incr, lpush, rpush, lpop, rpop, sadd, hset, spop, zadd, zpopmin, lrange (= lrange_100,lrange_300,lrange_500,lrange_600), mset, xadd [default: all]
    #[arg(short = 't', long = "tests", value_name = "TESTS")]
    pub tests: Option<String>,
    /// Bytes of each value written (SET, LPUSH, RPUSH, HSET, MSET, XADD)
    #[arg(
        short = 'd',
        long = "data-size",
        value_name = "BYTES",
        default_value_t = 3
    )]
    pub data_size: usize,
    /// Random keys: __rand_int__ in keys, members and scores becomes a 12-digit number below this, per command
    #[arg(short = 'r', long = "keyspace", value_name = "KEYSPACELEN")]
    pub keyspace: Option<u64>,
    /// The logical database the workload's keys live in (SELECT)
    #[arg(long, value_name = "DB", default_value_t = 9)]
    pub dbnum: u32,
    /// A command of your own instead of the tests, after --: __rand_int__ is drawn as with -r, __data__ is the -d bytes
    #[arg(last = true, value_name = "COMMAND", conflicts_with = "tests")]
    pub command: Vec<String>,
    /// memtier_benchmark's load instead of the tests: SETs and GETs in this ratio (e.g. 1:10), both in one run
    #[arg(long, value_name = "SETS:GETS", conflicts_with_all = ["tests", "command"])]
    pub ratio: Option<String>,
    /// With --ratio: keys drawn R (uniform), S (sequential), G (Gaussian) or Z (Zipf); SET:GET for each its own
    #[arg(long, value_name = "P[:P]", default_value = "R:R", requires = "ratio")]
    pub key_pattern: String,
    /// With --ratio: a key is this prefix and a number
    #[arg(
        long,
        value_name = "PREFIX",
        default_value = "memtier-",
        requires = "ratio"
    )]
    pub key_prefix: String,
    /// With --ratio: the smallest key number
    #[arg(long, value_name = "N", default_value_t = 0, requires = "ratio")]
    pub key_minimum: u64,
    /// With --ratio: the largest key number
    #[arg(
        long,
        value_name = "N",
        default_value_t = 10_000_000,
        requires = "ratio"
    )]
    pub key_maximum: u64,
    /// With --ratio: the exponent of the Zipf pattern (Z)
    #[arg(long, value_name = "EXP", default_value_t = 1.0, requires = "ratio")]
    pub key_zipf_exp: f64,
    /// With --ratio: value sizes uniform in this range, instead of -d
    #[arg(
        long,
        value_name = "MIN-MAX",
        requires = "ratio",
        conflicts_with = "data_size_list"
    )]
    pub data_size_range: Option<String>,
    /// With --ratio: value sizes from this weighted list, instead of -d
    #[arg(long, value_name = "SIZE:WEIGHT,...", requires = "ratio")]
    pub data_size_list: Option<String>,
}

#[derive(Debug, Args)]
pub struct PubSubArgs {
    /// Publishers, each with its connection (nats-bench -np)
    #[arg(
        long = "pubs",
        visible_alias = "np",
        value_name = "N",
        default_value_t = 1
    )]
    pub pubs: u32,
    /// Subscribers, each with its connection; each should receive every message (nats-bench -ns)
    #[arg(
        long = "subs",
        visible_alias = "ns",
        value_name = "N",
        default_value_t = 1
    )]
    pub subs: u32,
    /// Bytes per message, the 24-byte stamp included (nats-bench -ms)
    #[arg(
        long = "size",
        visible_alias = "ms",
        value_name = "BYTES",
        default_value_t = 128
    )]
    pub size: usize,
    /// Request-reply (NATS): each message carries a reply subject, subscribers answer, an operation is one round trip
    #[arg(long)]
    pub request: bool,
    /// After the last publish, subscribers go on receiving this long
    #[arg(long, value_name = "TIME", value_parser = seconds, default_value = "2")]
    pub drain: f64,
}

impl PubSubArgs {
    pub fn spec(&self) -> WorkloadSpec {
        WorkloadSpec::Pubsub(PubSubSpec {
            pubs: self.pubs,
            subs: self.subs,
            size: self.size,
            request: self.request,
            drain_secs: self.drain,
        })
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ChatModeArg {
    /// Every client sends as fast as the broker takes it
    Stress,
    /// Every client sends one message per --think
    Realistic,
}

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// Groups (Chut's G)
    #[arg(long, short = 'G', value_name = "G", default_value_t = 10)]
    pub groups: u32,
    /// Clients per group (Chut's CPG)
    #[arg(
        long = "per-group",
        visible_alias = "cpg",
        value_name = "CPG",
        default_value_t = 5
    )]
    pub per_group: u32,
    /// stress: as fast as possible; realistic: one message per --think per client
    #[arg(long, value_enum, default_value = "stress")]
    pub mode: ChatModeArg,
    /// Realistic mode: time between a client's messages
    #[arg(long, value_name = "TIME", value_parser = seconds, default_value = "5")]
    pub think: f64,
    /// Bytes per message, the 24-byte stamp included
    #[arg(long, value_name = "BYTES", default_value_t = 64)]
    pub size: usize,
    /// After the last send, clients go on listening this long
    #[arg(long, value_name = "TIME", value_parser = seconds, default_value = "2")]
    pub drain: f64,
    /// A pause after each message a client receives, before it reads the next (Chut's listener delay: slow readers)
    #[arg(long = "listener-delay", value_name = "TIME", value_parser = seconds, default_value = "0")]
    pub listener_delay: f64,
}

impl ChatArgs {
    pub fn spec(&self) -> Result<ChatSpec, SpecError> {
        let spec = ChatSpec {
            groups: self.groups,
            per_group: self.per_group,
            mode: match self.mode {
                ChatModeArg::Stress => ChatMode::Stress,
                ChatModeArg::Realistic => ChatMode::Realistic {
                    think_secs: self.think,
                },
            },
            size: self.size,
            drain_secs: self.drain,
            listener_delay_secs: self.listener_delay,
        };
        spec.validate()?;
        Ok(spec)
    }
}

impl RedisArgs {
    pub fn spec(&self) -> Result<WorkloadSpec, SpecError> {
        if let Some(ratio) = &self.ratio {
            let (sets, gets) = MemtierSpec::ratio(ratio)?;
            let (set_pattern, get_pattern) = KeyPattern::parse(&self.key_pattern)?;
            let sizes = match (&self.data_size_range, &self.data_size_list) {
                (Some(r), _) => ValueSizes::range(r)?,
                (None, Some(l)) => ValueSizes::list(l)?,
                (None, None) => ValueSizes::Fixed {
                    size: self.data_size,
                },
            };
            return Ok(WorkloadSpec::Redis(RedisSpec {
                tests: Vec::new(),
                data_size: sizes.bounds().1,
                keyspace: self.keyspace,
                dbnum: self.dbnum,
                command: Vec::new(),
                mix: Some(MemtierSpec {
                    sets,
                    gets,
                    set_pattern,
                    get_pattern,
                    key_prefix: self.key_prefix.clone(),
                    key_min: self.key_minimum,
                    key_max: self.key_maximum,
                    zipf_exp: self.key_zipf_exp,
                    sizes,
                }),
            }));
        }
        let tests = match &self.tests {
            _ if !self.command.is_empty() => vec![RedisTest::Command],
            Some(list) => RedisTest::select(list)?,
            None => RedisTest::ALL.to_vec(),
        };
        Ok(WorkloadSpec::Redis(RedisSpec {
            tests,
            data_size: self.data_size,
            keyspace: self.keyspace,
            dbnum: self.dbnum,
            command: self.command.clone(),
            mix: None,
        }))
    }
}

#[derive(Debug, Args)]
pub struct MemcacheArgs {
    /// The binary protocol (memaslap's -B); text otherwise
    #[arg(long)]
    pub binary: bool,
    /// Sets to gets, per window (memaslap's get:set 9:1 is 1:9)
    #[arg(long, value_name = "SETS:GETS", default_value = "1:9")]
    pub ratio: String,
    /// Bytes of every key, 16 to 250
    #[arg(long, value_name = "BYTES", default_value_t = 64)]
    pub key_size: usize,
    /// Bytes of every value, or MIN-MAX (each key's size fixed within the range)
    #[arg(long, value_name = "BYTES|MIN-MAX", default_value = "1024")]
    pub value_size: String,
    /// Keys per client (k = 1024, m = 1024*1024, as memaslap's --win_size)
    #[arg(long, value_name = "KEYS", default_value = "10k")]
    pub window: String,
    /// Keys per get request (memaslap's --division): text one get line, binary GetKQs and a Noop
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub multiget: u32,
    /// Fraction of gets whose values are compared byte for byte (the length is always checked)
    #[arg(long, value_name = "FRACTION", default_value_t = 1.0)]
    pub verify_gets: f64,
}

impl MemcacheArgs {
    pub fn spec(&self) -> Result<WorkloadSpec, SpecError> {
        let (sets, gets) = MemtierSpec::ratio(&self.ratio)?;
        let (value_min, value_max) = MemcacheSpec::value_sizes(&self.value_size)?;
        Ok(WorkloadSpec::Memcache(MemcacheSpec {
            binary: self.binary,
            sets,
            gets,
            key_size: self.key_size,
            value_min,
            value_max,
            window: MemcacheSpec::count("--window", &self.window)?,
            multiget: self.multiget,
            verify_gets: self.verify_gets,
        }))
    }
}

/// Default managed-mode sizes when only one of --queue/--slots is given.
const DEFAULT_QUEUE: u32 = 1_000;
const DEFAULT_SLOTS: u32 = 100;
pub const DEFAULT_REQUESTS: u64 = 100_000;
const DEFAULT_CLIENTS: u32 = 32;
const DEFAULT_BURST_DELAY_MS: f64 = 1.0;

impl RunArgs {
    /// Check the flags together and build the run spec. `default_connections`
    /// is what the target asks for when `--connections` is not given
    /// (`loadrig_targets::default_connections`; `None`: one per client);
    /// never more connections than clients.
    pub fn spec(
        &self,
        workload: WorkloadSpec,
        preset: Option<Preset>,
        workload_defaults: &Defaults,
        default_connections: Option<u32>,
    ) -> Result<RunSpec, SpecError> {
        let defaults = preset.map(Preset::defaults);
        let clients = self
            .clients
            .or(defaults.map(|d| d.clients))
            .unwrap_or(workload_defaults.clients);
        let target = self.target.as_deref().unwrap_or(workload_defaults.target);
        let pacing = self.pacing(defaults.map(|d| d.pacing))?;
        let dispatch = match (self.queue, self.slots, defaults.map(|d| d.dispatch)) {
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
        let stop = match (self.requests, self.duration, workload_defaults.duration) {
            (_, Some(d), _) => Stop::Seconds(d),
            (Some(n), None, _) => Stop::Count(n),
            (None, None, Some(d)) => Stop::Seconds(d),
            (None, None, None) => Stop::Count(defaults.map_or(DEFAULT_REQUESTS, |d| d.requests)),
        };
        let shard = match &self.shard {
            Some(s) => Shard::parse(s)?,
            None => Shard::WHOLE,
        };
        let processes = self.processes.unwrap_or(1);
        if processes > 1 && private_database(target) {
            return Err(SpecError::new(
                "--processes",
                "the processes need a target they share; the default SQLite database is \
                 private to one process (give --target sqlite:///path/to.db or a server)",
            ));
        }
        let spec = RunSpec {
            workload,
            target: mask_password(target),
            load: LoadSpec {
                clients,
                connections: self
                    .connections
                    .unwrap_or_else(|| default_connections.map_or(clients, |n| n.min(clients))),
                pipeline: self.pipeline,
                pacing,
                dispatch,
                stop,
                max_lag_secs: self.max_lag,
                shard,
            },
            seed: self.seed,
            warmup_secs: self.warmup,
            interval_secs: self.interval,
            threads: self
                .threads
                .or(workload_defaults.threads)
                .unwrap_or_else(cores),
            timeout_secs: self.timeout,
            max_error_rate: self.max_error_rate,
            verify: !self.no_verify,
            keep: self.keep,
            preset,
            processes,
        };
        spec.validate()?;
        Ok(spec)
    }

    /// Open loop, bursts (from the flags or the preset) or steady.
    fn pacing(&self, preset: Option<Pacing>) -> Result<Pacing, SpecError> {
        let burst = match (self.burst, preset) {
            (
                Some(size),
                Some(Pacing::Burst {
                    delay_ms, limit, ..
                }),
            ) => Some((size, delay_ms, limit)),
            (Some(size), _) => Some((size, DEFAULT_BURST_DELAY_MS, 0)),
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

    /// When the load begins, if not at once.
    pub fn start(&self) -> Option<StartRule> {
        match (self.start_at, self.start_delay) {
            (Some(t), _) => Some(StartRule::At(t)),
            (None, Some(s)) => Some(StartRule::Delay(s)),
            (None, None) => None,
        }
    }
}

/// `sqlite://` without a path: a temporary database that only the process
/// that made it can see.
fn private_database(url: &str) -> bool {
    let (scheme, rest) = url.split_once("://").unwrap_or((url, ""));
    scheme == "sqlite" && rest.split('?').next().unwrap_or("").is_empty()
}

/// Flags that the parent of `--processes` sets for each child itself.
const PARENT_ONLY: [&str; 8] = [
    "processes",
    "start_at",
    "start_delay",
    "out",
    "csv",
    "quiet",
    "shard",
    "child",
];

/// The command line of one child of `--processes`, less what the parent
/// adds per child (`--shard`, `--start-at`, `--out`): `run WORKLOAD` and
/// every flag the user gave, as given, except the parent's own.
pub fn child_args(matches: &ArgMatches) -> Vec<OsString> {
    let mut out: Vec<OsString> = vec!["run".into()];
    let Some(("run", run)) = matches.subcommand() else {
        return out;
    };
    let Some((name, given)) = run.subcommand() else {
        return out;
    };
    out.push(name.into());
    let cli = Cli::command();
    let Some(cmd) = cli
        .find_subcommand("run")
        .and_then(|r| r.find_subcommand(name))
    else {
        return out;
    };
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        let Some(long) = arg.get_long() else { continue };
        if PARENT_ONLY.contains(&id) || given.value_source(id) != Some(ValueSource::CommandLine) {
            continue;
        }
        if arg.get_action().takes_values() {
            for v in given.get_raw(id).into_iter().flatten() {
                let mut word = OsString::from(format!("--{long}="));
                word.push(v);
                out.push(word);
            }
        } else {
            out.push(format!("--{long}").into());
        }
    }
    out
}

impl VoterArgs {
    pub fn spec(&self, preset: Option<Preset>) -> WorkloadSpec {
        let erlvolt = preset.is_some_and(|p| p.defaults().erlvolt_generator);
        let generator = match self.generator {
            Some(GeneratorArg::Voltdb) => VoterGenerator::Voltdb,
            Some(GeneratorArg::Erlvolt) => VoterGenerator::Erlvolt,
            None if erlvolt => VoterGenerator::Erlvolt,
            None => VoterGenerator::Voltdb,
        };
        let default_max = match generator {
            VoterGenerator::Voltdb => 2,
            VoterGenerator::Erlvolt => 20_000,
        };
        WorkloadSpec::Voter(VoterSpec {
            contestants: self.contestants,
            max_votes: self.max_votes.unwrap_or(default_max),
            generator,
            phones: self.phones,
        })
    }
}

impl HelloArgs {
    pub fn spec(&self) -> WorkloadSpec {
        WorkloadSpec::Hello(HelloSpec {
            insert_ratio: self.insert_ratio,
        })
    }
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

/// A UNIX time in seconds, integer or fractional.
fn unix_time(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!(
            "'{s}' is not a UNIX time in seconds (e.g. 1795000000 or 1795000000.5)"
        )),
    }
}

/// `scheme://user:secret@host` -> `scheme://user:***@host`, for output and reports.
pub fn mask_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<RunSpec, String> {
        let mut all = vec!["loadrig", "run", "voter"];
        all.extend_from_slice(args);
        parse_all(&all)
    }

    fn parse_all(all: &[&str]) -> Result<RunSpec, String> {
        let cli = Cli::try_parse_from(all).map_err(|e| e.to_string())?;
        match cli.command {
            Command::Run { workload } => workload
                .parts()
                .and_then(|p| p.spec())
                .map_err(|e| e.to_string()),
            _ => Err("not run".into()),
        }
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
        let args: Vec<String> = child_args(&m)
            .into_iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "run",
                "voter",
                "--target=null://?delay=1ms",
                "--requests=3000",
                "--keep",
                "--preset=vsd"
            ]
        );
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

    #[test]
    fn passwords_are_masked() {
        assert_eq!(
            mask_password("postgres://bench:bench@127.0.0.1/bench"),
            "postgres://bench:***@127.0.0.1/bench"
        );
        assert_eq!(mask_password("sqlite:///tmp/x.db"), "sqlite:///tmp/x.db");
    }
}
