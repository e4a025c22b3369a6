//! Flags of the two commands that run this binary many times and judge
//! the runs together: `capacity` (the highest open-loop rate meeting an
//! SLO) and `ab` (two command lines in alternating rounds).
//! docs/guides/capacity.md.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

#[derive(Debug, Args)]
pub struct CapacityArgs {
    /// What every probe must meet, as --threshold takes it: p99<5ms, get:p99.9<20ms, error_rate<0.01 (repeatable; all must hold)
    #[arg(long, value_name = "EXPR", required = true)]
    pub slo: Vec<String>,
    /// The first rate tried, and the lowest: the search doubles from it until a probe fails
    #[arg(long, value_name = "OPS", value_parser = super::amount, default_value = "100")]
    pub from: f64,
    /// The highest rate tried: past it the answer is "at least"
    #[arg(long, value_name = "OPS", value_parser = super::amount, default_value = "10m")]
    pub max: f64,
    /// Stop when the last passing and first failing rates are this close
    #[arg(long, value_name = "PERCENT", value_parser = super::output::percent, default_value = "5%")]
    pub resolution: f64,
    /// How long each probe measures, after its warm-up
    #[arg(long, value_name = "TIME", value_parser = super::seconds, default_value = "5s")]
    pub probe_duration: f64,
    /// How long each probe loads the target at its rate before measuring
    #[arg(long, value_name = "TIME", value_parser = super::seconds, default_value = "2s")]
    pub warmup: f64,
    /// The seed every probe runs with: the same seed, the same operations at each rate
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// The folder every probe's report and log, the CSV, the curve (SVG) and the page go to
    #[arg(long, short = 'o', value_name = "DIR", default_value = "capacity")]
    pub dir: PathBuf,
    /// After `--`: the run, as `loadrig run` takes it, without --rate, --duration, --requests, --warmup or --seed
    #[arg(last = true, required = true, value_name = "RUN")]
    pub run: Vec<OsString>,
}

/// What `ab` compares between the two command lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AbMetric {
    /// Successful operations per second (higher is better)
    Throughput,
    /// Latency percentiles and mean over every kind (lower is better)
    P50,
    P90,
    P99,
    #[value(name = "p99.9")]
    P999,
    Avg,
    /// The client's CPU per operation (lower is better)
    Cpu,
}

#[derive(Debug, Args)]
pub struct AbArgs {
    /// Rounds: each runs A and B once, alternating which goes first
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..=1000), default_value = "6")]
    pub rounds: u32,
    /// The figure compared
    #[arg(long, value_enum, default_value_t = AbMetric::Throughput)]
    pub metric: AbMetric,
    /// A regression is B worse than A by more than this (e.g. 5%)
    #[arg(long, value_name = "PERCENT", value_parser = super::output::percent, default_value = "5%")]
    pub threshold: f64,
    /// The folder every round's reports and logs go to
    #[arg(long, short = 'o', value_name = "DIR", default_value = "ab")]
    pub dir: PathBuf,
    /// After `--`: command line A, then `-- run ...`: command line B (B starts at the first `--` followed by `run`)
    #[arg(last = true, required = true, value_name = "A -- B")]
    pub runs: Vec<OsString>,
}
