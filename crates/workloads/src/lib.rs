//! Workloads speak to capabilities, not to products: the Voter needs a
//! [`voter::VoterBackend`], Hello a [`hello::HelloBackend`]; a target
//! implements the capabilities it can. Each workload turns its backend's
//! connections into engine drivers and wraps the whole run in a [`Bench`]:
//! prepare, connect, baseline, verify, summarise.

pub mod hello;
pub mod memcache;
pub mod pubsub;
pub mod redis;
pub mod voter;

use std::future::Future;

use loadrig_engine::{Driver, Tag};
use loadrig_metrics::{OpError, Snapshot};
use serde::{Deserialize, Serialize};

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

/// The outcome of checking the target's data after a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// `None`: nothing could be checked (the target keeps no data).
    pub passed: Option<bool>,
    /// One line for the live output, e.g. `ok (100 accepted = +100 rows)`.
    pub summary: String,
    pub checks: Vec<Check>,
}

/// One comparison between what the client counted and what the server holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub expected: i64,
    pub actual: i64,
    /// Writes in doubt: sent, then the connection failed or timed out before
    /// the answer, so each may or may not have committed. The check holds
    /// when `expected <= actual <= expected + in_doubt`; 0 means exactly.
    #[serde(default)]
    pub in_doubt: i64,
}

impl Check {
    pub fn new(name: impl Into<String>, expected: i64, actual: i64) -> Self {
        Check {
            name: name.into(),
            expected,
            actual,
            in_doubt: 0,
        }
    }

    /// The same check, allowing up to `n` writes in doubt.
    pub fn in_doubt(mut self, n: i64) -> Self {
        self.in_doubt = n.max(0);
        self
    }

    pub fn ok(&self) -> bool {
        (self.expected..=self.expected + self.in_doubt).contains(&self.actual)
    }

    fn expectation(&self) -> String {
        if self.in_doubt == 0 {
            self.expected.to_string()
        } else {
            format!("{} to {}", self.expected, self.expected + self.in_doubt)
        }
    }
}

impl Verdict {
    /// Passed when every check holds.
    pub fn from_checks(checks: Vec<Check>, ok_summary: String) -> Verdict {
        let failed: Vec<String> = checks
            .iter()
            .filter(|c| !c.ok())
            .map(|c| {
                format!(
                    "{}: expected {}, found {}",
                    c.name,
                    c.expectation(),
                    c.actual
                )
            })
            .collect();
        let passed = failed.is_empty();
        let summary = if passed {
            format!("ok ({ok_summary})")
        } else {
            format!("FAILED ({})", failed.join("; "))
        };
        Verdict {
            passed: Some(passed),
            summary,
            checks,
        }
    }

    pub fn skipped(why: &str) -> Verdict {
        Verdict {
            passed: None,
            summary: format!("skipped ({why})"),
            checks: Vec::new(),
        }
    }
}

/// What a target says about itself, whatever the workload: every
/// capability trait builds on it, so a target states these facts once.
pub trait TargetInfo {
    /// The server's own name and version, where the protocol says it.
    fn server_version(&self) -> impl Future<Output = Option<String>>;
    /// What a commit promises on this target (synchronous mode, fsync).
    fn durability(&self) -> Option<String>;
    /// The most requests one connection may keep in flight.
    fn max_depth(&self) -> usize;
    /// CPU used so far by the threads of a database running inside this
    /// process, each by name, always the same names in the same order;
    /// empty for a server elsewhere.
    fn embedded_cpu(&self) -> impl Future<Output = Vec<(&'static str, std::time::Duration)>> {
        async { Vec::new() }
    }
}

/// A titled table of results for the summary (the Voter's standings).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// Lines printed before the table, e.g. the tallies.
    pub lines: Vec<String>,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Printed after the table, e.g. the winner.
    pub footer: Vec<String>,
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
    /// Open one connection as an engine driver.
    fn connect(&self) -> impl Future<Output = Result<Self::Driver, TargetError>>;
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
}

/// Append `v` in decimal, without allocating (keys and subjects on the
/// hot path).
#[inline]
pub(crate) fn push_decimal(out: &mut Vec<u8>, v: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = v;
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// 1234567 -> "1,234,567": counts as people read them.
pub fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// [`group`] for signed counts.
pub fn group_i(n: i64) -> String {
    if n < 0 {
        format!("-{}", group(n.unsigned_abs()))
    } else {
        group(n as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1_000), "1,000");
        assert_eq!(group(1_234_567), "1,234,567");
        assert_eq!(group_i(-1_000), "-1,000");
    }
}
