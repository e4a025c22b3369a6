//! Command-line flags, in two stages (ripgrep's model): clap parses the
//! words into these structs, then [`RunArgs::spec`] checks them together
//! and builds the [`RunSpec`]. Help text lives in the doc comments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use loadrig_spec::{
    Arrival, Dispatch, HelloSpec, LoadSpec, Pacing, RunSpec, Shard, SpecError, Stop,
    VoterGenerator, VoterSpec, WorkloadSpec,
};

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
}

#[derive(Debug, Subcommand)]
pub enum Workload {
    /// VoltDB's Voter: one vote is one server-side transaction
    Voter {
        #[command(flatten)]
        run: RunArgs,
        #[command(flatten)]
        voter: VoterArgs,
    },
    /// Erlvolt's hello world: the smallest procedure call
    Hello {
        #[command(flatten)]
        run: RunArgs,
        #[command(flatten)]
        hello: HelloArgs,
    },
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The report of the run to check
    pub report: PathBuf,
    /// The target, if not the one named in the report
    #[arg(long, short = 't')]
    pub target: Option<String>,
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
    /// Clients (callers); in the closed loop each waits for its previous operation
    #[arg(long, short = 'c', default_value_t = 32)]
    pub clients: u32,
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
    /// Bursts: sleep this many milliseconds between bursts
    #[arg(long, value_name = "MS", default_value_t = 1.0, requires = "burst")]
    pub burst_delay: f64,
    /// Bursts: wait until at most this many per client are pending
    #[arg(long, value_name = "L", default_value_t = 0, requires = "burst")]
    pub limit: u32,
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
    /// Whose caller mix: VoltDB's client (skewed, 1% invalid) or the Erlvolt bench (uniform)
    #[arg(long, value_enum, default_value_t = GeneratorArg::Voltdb)]
    pub generator: GeneratorArg,
    /// Callers come from only this many phone numbers (to make them collide)
    #[arg(long, value_name = "N")]
    pub phones: Option<u64>,
}

#[derive(Debug, Args)]
pub struct HelloArgs {
    /// Fraction of operations that insert a new dialect (the rest select)
    #[arg(long, default_value_t = 0.0)]
    pub insert_ratio: f64,
}

/// Default managed-mode sizes when only one of --queue/--slots is given.
const DEFAULT_QUEUE: u32 = 1_000;
const DEFAULT_SLOTS: u32 = 100;
pub const DEFAULT_REQUESTS: u64 = 100_000;

impl RunArgs {
    /// Check the flags together and build the run spec. `default_connections`
    /// is what the target asks for when `--connections` is not given
    /// (`loadrig_targets::default_connections`; `None`: one per client);
    /// never more connections than clients.
    pub fn spec(
        &self,
        workload: WorkloadSpec,
        default_connections: Option<u32>,
    ) -> Result<RunSpec, SpecError> {
        let pacing = match (self.rate, self.burst) {
            (Some(rate), _) => Pacing::Rate {
                rate,
                arrival: match self.arrival {
                    ArrivalArg::Regular => Arrival::Regular,
                    ArrivalArg::Poisson => Arrival::Poisson,
                },
            },
            (None, Some(size)) => Pacing::Burst {
                size,
                delay_ms: self.burst_delay,
                limit: self.limit,
            },
            (None, None) => Pacing::Steady,
        };
        let dispatch = match (self.queue, self.slots) {
            (None, None) => Dispatch::Direct,
            (q, s) => Dispatch::Managed {
                queue: q.unwrap_or(DEFAULT_QUEUE),
                slots: s.unwrap_or(DEFAULT_SLOTS),
            },
        };
        if dispatch != Dispatch::Direct && self.pipeline != 1 {
            return Err(SpecError::new(
                "--pipeline",
                "cannot be used with --queue/--slots (managed mode sets in-flight calls with --slots)",
            ));
        }
        let stop = match (self.requests, self.duration) {
            (_, Some(d)) => Stop::Seconds(d),
            (Some(n), None) => Stop::Count(n),
            (None, None) => Stop::Count(DEFAULT_REQUESTS),
        };
        let shard = match &self.shard {
            Some(s) => Shard::parse(s)?,
            None => Shard::WHOLE,
        };
        let spec = RunSpec {
            workload,
            target: mask_password(self.target.as_deref().unwrap_or("sqlite://")),
            load: LoadSpec {
                clients: self.clients,
                connections: self.connections.unwrap_or_else(|| {
                    default_connections.map_or(self.clients, |n| n.min(self.clients))
                }),
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
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get())),
            timeout_secs: self.timeout,
            max_error_rate: self.max_error_rate,
            verify: !self.no_verify,
            keep: self.keep,
        };
        spec.validate()?;
        Ok(spec)
    }
}

impl VoterArgs {
    pub fn spec(&self) -> WorkloadSpec {
        let generator = match self.generator {
            GeneratorArg::Voltdb => VoterGenerator::Voltdb,
            GeneratorArg::Erlvolt => VoterGenerator::Erlvolt,
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
        let cli = Cli::try_parse_from(all).map_err(|e| e.to_string())?;
        match cli.command {
            Command::Run {
                workload: Workload::Voter { run, voter },
            } => {
                let conns = loadrig_targets::default_connections(run.target.as_deref());
                run.spec(voter.spec(), conns).map_err(|e| e.to_string())
            }
            _ => Err("not voter".into()),
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
