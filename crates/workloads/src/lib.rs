//! Workloads speak to capabilities, not to products: the Voter needs a
//! [`voter::VoterBackend`], Hello a [`hello::HelloBackend`]; a target
//! implements the capabilities it can. Each workload turns its backend's
//! connections into engine drivers and wraps the whole run in a [`Bench`]:
//! prepare, connect, baseline, verify, summarise.

pub mod hello;
pub mod http;
pub mod kv;
pub mod memcache;
pub mod pgbench;
pub mod pubsub;
pub mod redis;
pub mod stats;
pub mod stream;
pub mod voter;

use std::future::Future;

use loadrig_engine::{Driver, Tag};
use loadrig_metrics::{OpError, Snapshot};
use serde_json::value::RawValue;

pub use loadrig_metrics::{Check, Results, Verdict};

/// A workload: its name (`loadrig run NAME`), the capability it needs of a
/// target, and one line for `loadrig workloads`.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    pub name: &'static str,
    pub capability: &'static str,
    pub about: &'static str,
}

/// Every workload loadrig knows, whether or not a built-in target runs it.
pub const WORKLOADS: &[Workload] = &[
    Workload {
        name: "voter",
        capability: "voter",
        about: "VoltDB's Voter: one vote is one server-side transaction with a per-caller limit",
    },
    Workload {
        name: "hello",
        capability: "hello",
        about: "Erlvolt's hello world: the smallest procedure call (select, optional insert)",
    },
    Workload {
        name: "kv",
        capability: "kv",
        about: "FoundationDB's key-value tests (write1, write10, read10, mix, range): transactions of reads, writes and range reads over a loaded dataset",
    },
    Workload {
        name: "pgbench",
        capability: "pgbench",
        about: "pgbench's tables, builtin scripts (--builtin) and script language (--file, with \\set, \\if, \\gset, \\sleep); the TPC-B balances checked afterwards",
    },
    Workload {
        name: "redis",
        capability: "redis",
        about: "redis-benchmark's tests (--tests, --value-size, -n per test, -P pipeline, -r keyspace, -q, --csv), one test after the other",
    },
    Workload {
        name: "memcache",
        capability: "memcache",
        about: "memaslap's load: get/set mix, key and value sizes, window of keys per client, multiget, text or binary protocol",
    },
    Workload {
        name: "pubsub",
        capability: "pubsub",
        about: "nats-bench's load: N publishers, M subscribers, end-to-end latency, losses, duplicates and reorders counted",
    },
    Workload {
        name: "chat",
        capability: "pubsub",
        about: "Chut's social groups: G groups x CPG clients messaging random peers of their group, stress or realistic",
    },
    Workload {
        name: "http",
        capability: "http",
        about: "wrk's load and output: keep-alive connections, pipelining, wrk2's open loop and percentile spectrum; statuses counted, bodies compared, PUTs read back",
    },
];

/// The workloads a target with these capabilities runs, in [`WORKLOADS`]'
/// order.
pub fn workloads_of<'a>(capabilities: &'a [&'a str]) -> impl Iterator<Item = &'static str> + 'a {
    WORKLOADS
        .iter()
        .filter(|w| capabilities.contains(&w.capability))
        .map(|w| w.name)
}

/// Which capabilities a target has. Each method hands the target, by value,
/// to a visitor typed for one capability and returns what the visitor
/// built; the default says the target lacks the capability. The target
/// registry (`loadrig_targets`) overrides exactly the capabilities a row
/// claims, with a body that needs the capability's trait, so a claim the
/// target does not back is a compile error, never a run-time "cannot run".
pub trait Capabilities: TargetInfo + Sized + 'static {
    fn voter<V: voter::Visit>(self, _visit: V) -> Option<V::Output> {
        None
    }
    fn hello<V: hello::Visit>(self, _visit: V) -> Option<V::Output> {
        None
    }
    fn kv<V: kv::Visit>(self, _visit: V) -> Option<V::Output> {
        None
    }
    fn redis<V: redis::Visit>(self, _visit: V) -> Option<V::Output> {
        None
    }
    fn memcache<V: memcache::Visit>(self, _visit: V) -> Option<V::Output> {
        None
    }
    fn pubsub<V: pubsub::Visit>(self, _visit: V) -> Option<V::Output> {
        None
    }
    fn http<V: http::Visit>(self, _visit: V) -> Option<V::Output> {
        None
    }
    fn pgbench<V: pgbench::Visit>(self, _visit: V) -> Option<V::Output> {
        None
    }
}

/// Why a target could not be used. Cold path only: per-operation failures
/// are [`OpError`] counts.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    /// Could not connect or log in (exit 3).
    #[error("cannot reach {target}: {reason}")]
    Unreachable { target: String, reason: String },
    /// Connected, but schema set-up or a baseline query failed (exit 3).
    #[error("cannot prepare {target}: {reason}")]
    Prepare { target: String, reason: String },
    /// The target cannot do what was asked (exit 2).
    #[error("{0}")]
    Unsupported(String),
}

/// A connection's answer, generic over the workload's result type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply<T> {
    Done {
        tag: Tag,
        result: Result<T, OpError>,
    },
    /// The connection failed; everything in flight on it is lost.
    Broken(OpError),
}

/// How long a target may take over what it asks the server about itself
/// on the side of the run ([`TargetInfo::server_version`]: the version,
/// durability settings, a cluster's members, the server's name): past
/// it, the run goes on without the answer. Only a broker that may stay
/// silent by design waits less (MQTT's `$SYS` version topic).
pub const ASIDE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// What a target says about itself, whatever the workload: every
/// capability trait builds on it, so a target states these facts once.
pub trait TargetInfo {
    /// The server's own name and version, where the protocol says it.
    fn server_version(&self) -> impl Future<Output = Option<String>>;
    /// What a commit promises on this target (synchronous mode, fsync).
    fn durability(&self) -> Option<String>;
    /// The most requests one connection may keep in flight.
    fn max_depth(&self) -> usize;
    /// What [`server_version`](TargetInfo::server_version) asked the
    /// server about itself and could not read, each with why (a
    /// Redis-compatible server that refuses INFO): said before the load
    /// and kept in the report.
    fn unread(&self) -> Vec<String> {
        Vec::new()
    }
    /// Connections a run opens when `--connections` is not given; `None`:
    /// one per client. Targets whose connections multiplex many calls
    /// (VoltDB) open one per host, as their own clients do.
    fn default_connections(&self) -> Option<u32> {
        None
    }
    /// Runtime threads when neither `--threads` nor the workload says;
    /// `None`: one per core. Where most calls cost the client a sleep and
    /// a wake-up (PostgreSQL, MariaDB: one call in flight per connection,
    /// the server's answer slower than the client's turn), one thread
    /// sleeps less often per call than two (docs/guides/mariadb.md).
    fn default_threads(&self) -> Option<usize> {
        None
    }
    /// Whether several processes can share this target's data.
    fn shared(&self) -> bool {
        true
    }
    /// Whether the run's data stays on the target when the run ends
    /// without `--keep` (a SQLite file the user named does: it is theirs);
    /// otherwise the run removes what it wrote.
    fn keeps_data(&self) -> bool {
        false
    }
    /// CPU used so far by the threads of a database running inside this
    /// process, each by name, always the same names in the same order;
    /// empty for a server elsewhere.
    fn embedded_cpu(&self) -> impl Future<Output = Vec<(&'static str, std::time::Duration)>> {
        async { Vec::new() }
    }
    /// Why the data the run wrote can no longer be read where it was
    /// written (an embedded database's file removed or replaced during
    /// the run), if it cannot: verification then fails, whatever the open
    /// connection still reads.
    fn lost(&self) -> Option<String> {
        None
    }
    /// The server's own statistics this target can sample beside the load
    /// (its protocol's, its local process's); none by default.
    fn server_stats(&self) -> Vec<Box<dyn stats::StatsSource>> {
        Vec::new()
    }
}

/// One workload on one target, from set-up to verdict. The binary drives
/// every run through this; only [`Bench::Driver`] is on the hot path.
pub trait Bench {
    type Driver: Driver;
    type Target: TargetInfo;

    /// The target, for what it says about itself.
    fn target(&self) -> &Self::Target;

    /// Names of the operation kinds, indexed as drivers report them.
    fn kinds(&self) -> Vec<&'static str>;
    /// Names of the domain counters, indexed as drivers report them.
    fn domains(&self) -> Vec<String>;

    /// Whether the kinds run one after the other instead of mixed: each
    /// kind is a phase of its own over fresh connections, stopping after
    /// `-n` operations (or `--duration`) like a whole run (redis-benchmark's
    /// tests). The report keeps each kind's own measured time.
    fn sequential(&self) -> bool {
        false
    }
    /// Sequential runs: the drivers `connect` makes from now on issue
    /// operations of kind `kind` only.
    fn enter(&mut self, _kind: usize) {}

    /// Drivers that issue nothing and only listen (a pub/sub run's
    /// subscribers): `connect` makes them after the run's connections.
    fn listeners(&self) -> usize {
        0
    }
    /// How long listening drivers go on receiving after the last
    /// operation, so that messages in flight are counted, not guessed.
    fn drain(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }

    /// Create the schema and initial data; idempotent.
    fn prepare(&mut self) -> impl Future<Output = Result<(), TargetError>>;
    /// Record what the server holds before the run, for verification.
    fn baseline(&mut self) -> impl Future<Output = Result<serde_json::Value, TargetError>>;
    /// Open connection `worker` (0-based; in a sequential run counted again
    /// from 0 in each phase) as an engine driver: the run's connections
    /// first, then its [`listeners`](Bench::listeners).
    fn connect(&self, worker: u32) -> impl Future<Output = Result<Self::Driver, TargetError>>;
    /// Compare what the server holds with what the run counted.
    fn verify(
        &mut self,
        baseline: &serde_json::Value,
        counted: &Snapshot,
    ) -> impl Future<Output = Result<Verdict, TargetError>>;
    /// The workload's own results (tallies, standings).
    fn results(&mut self, counted: &Snapshot)
        -> impl Future<Output = Result<Results, TargetError>>;
    /// Remove the schema and data unless kept.
    fn finish(&mut self, keep: bool) -> impl Future<Output = Result<(), TargetError>>;
    /// `loadrig teardown`: drop what `loadrig prepare` made, whatever a
    /// run would keep for the next one (kv's loaded dataset).
    fn teardown(&mut self) -> impl Future<Output = Result<(), TargetError>> {
        self.finish(false)
    }

    /// What a `--processes` child knows that verification needs and its
    /// counts do not carry (chat: its clients' tallies), as JSON kept in
    /// its report for the parent. `None` where the counts and the server
    /// say it all.
    fn share(&self) -> Option<Box<RawValue>> {
        None
    }
    /// The parent of `--processes`: the children's shares, by process
    /// (`None` for one that left none), before it verifies.
    fn gather(&mut self, _shares: Vec<Option<Box<RawValue>>>) -> Result<(), serde_json::Error> {
        Ok(())
    }
}

/// Append `v` in decimal, without allocating (keys and subjects on the
/// hot path).
#[inline]
pub(crate) fn push_decimal(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(loadrig_wire::step::Decimal::new(v).as_bytes());
}
