//! Workload parameters, validated. The definitions of what each workload
//! does live in the workloads crate; these are only its knobs.

use serde::{Deserialize, Serialize};

use crate::{
    ChatSpec, HttpSpec, KvSpec, MemcacheSpec, PgbenchSpec, PubSubSpec, RedisSpec, SpecError,
};

/// The Voter's contestants, numbered 1..=N in this order.
pub const CONTESTANT_NAMES: [&str; 12] = [
    "Edwina Burnam",
    "Tabatha Gehling",
    "Kelly Clauss",
    "Jessie Alloway",
    "Alana Bregman",
    "Jessie Eichman",
    "Allie Rogalski",
    "Nita Coster",
    "Kurt Walser",
    "Ericka Dieter",
    "Loraine Nygren",
    "Tania Mattioli",
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "snake_case")]
pub enum WorkloadSpec {
    Voter(VoterSpec),
    Hello(HelloSpec),
    Redis(RedisSpec),
    Pubsub(PubSubSpec),
    Chat(ChatSpec),
    Memcache(MemcacheSpec),
    Http(HttpSpec),
    Kv(KvSpec),
    Pgbench(PgbenchSpec),
}

/// What a workload's output adds to the common table and overall line,
/// declared by the workload, so printers (a run's, `merge`'s, later ones)
/// read it from any report without knowing products.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputStyle {
    /// The rows `--csv` writes.
    pub csv: CsvDialect,
    /// memaslap's `Net_rate` line after the overall line.
    pub net_rate: bool,
    /// wrk's closing block (and, with `--latency`, its distribution and
    /// wrk2's percentile spectrum) after the overall line.
    pub wrk: bool,
    /// FoundationDB's guide's units after the overall line (reads/s,
    /// writes/s, operations/s, keys/s from the domain counters
    /// `keys_read`, `range_keys`, `keys_written`).
    pub guide_units: bool,
    /// pgbench's closing block (transaction type, scaling factor, ...,
    /// `tps = ...`) before the common table.
    pub pgbench: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CsvDialect {
    /// loadrig's own rows (docs/reference/csv.md).
    Loadrig,
    /// redis-benchmark's `--csv`: its header, one row per test.
    RedisBenchmark,
}

impl WorkloadSpec {
    /// How this workload's results are printed beyond the common parts.
    pub fn output(&self) -> OutputStyle {
        let plain = OutputStyle {
            csv: CsvDialect::Loadrig,
            net_rate: false,
            wrk: false,
            guide_units: false,
            pgbench: false,
        };
        match self {
            WorkloadSpec::Redis(_) => OutputStyle {
                csv: CsvDialect::RedisBenchmark,
                ..plain
            },
            WorkloadSpec::Memcache(_) => OutputStyle {
                net_rate: true,
                ..plain
            },
            WorkloadSpec::Http(_) => OutputStyle { wrk: true, ..plain },
            WorkloadSpec::Kv(_) => OutputStyle {
                guide_units: true,
                ..plain
            },
            WorkloadSpec::Pgbench(_) => OutputStyle {
                pgbench: true,
                ..plain
            },
            WorkloadSpec::Voter(_)
            | WorkloadSpec::Hello(_)
            | WorkloadSpec::Pubsub(_)
            | WorkloadSpec::Chat(_) => plain,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            WorkloadSpec::Voter(_) => "voter",
            WorkloadSpec::Hello(_) => "hello",
            WorkloadSpec::Redis(_) => "redis",
            WorkloadSpec::Pubsub(_) => "pubsub",
            WorkloadSpec::Chat(_) => "chat",
            WorkloadSpec::Memcache(_) => "memcache",
            WorkloadSpec::Http(_) => "http",
            WorkloadSpec::Kv(_) => "kv",
            WorkloadSpec::Pgbench(_) => "pgbench",
        }
    }

    pub fn validate(&self) -> Result<(), SpecError> {
        match self {
            WorkloadSpec::Voter(v) => v.validate(),
            WorkloadSpec::Hello(h) => h.validate(),
            WorkloadSpec::Redis(r) => r.validate(),
            WorkloadSpec::Pubsub(p) => p.validate(),
            WorkloadSpec::Chat(c) => c.validate(),
            WorkloadSpec::Memcache(m) => m.validate(),
            WorkloadSpec::Http(h) => h.validate(),
            WorkloadSpec::Kv(k) => k.validate(),
            WorkloadSpec::Pgbench(p) => p.validate(),
        }
    }
}

/// Which caller generator produces the votes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VoterGenerator {
    /// VoltDB's Voter client: skewed contestants, 1% invalid votes.
    Voltdb,
    /// The Erlvolt bench: contestant uniform 1..=6, no invalid votes.
    Erlvolt,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoterSpec {
    pub contestants: u8,
    pub max_votes: u32,
    pub generator: VoterGenerator,
    /// Draw phone numbers from this many distinct numbers only (so the
    /// same callers collide), instead of the whole North American space.
    pub phones: Option<u64>,
}

impl VoterSpec {
    fn validate(&self) -> Result<(), SpecError> {
        if !(1..=12).contains(&self.contestants) {
            return Err(SpecError::new("--contestants", "must be between 1 and 12"));
        }
        if self.max_votes == 0 {
            return Err(SpecError::new("--max-votes", "must be at least 1"));
        }
        if self.phones == Some(0) {
            return Err(SpecError::new("--phones", "must be at least 1"));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HelloSpec {
    /// Fraction of operations that insert a new dialect (the rest select).
    pub insert_ratio: f64,
}

impl HelloSpec {
    fn validate(&self) -> Result<(), SpecError> {
        if !(0.0..=1.0).contains(&self.insert_ratio) {
            return Err(SpecError::new("--insert-ratio", "must be between 0 and 1"));
        }
        Ok(())
    }
}
