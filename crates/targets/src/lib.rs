//! Targets: the systems loadrig drives. Each is described by a const
//! [`Descriptor`] in one list ([`TARGETS`]), gated by cargo features so the
//! core builds without their drivers, and implements the workload
//! capabilities it can ([`loadrig_workloads::voter::VoterBackend`], ...).
//! [`Target::open`] turns a `--target` URL into a target.

mod null;
#[cfg(feature = "sqlite")]
mod sqlite;

use loadrig_spec::SpecError;
use loadrig_workloads::TargetError;

pub use null::{NullDelay, NullTarget};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteTarget;

/// What `loadrig targets` lists: a target's name, URL schemes and workloads.
#[derive(Debug, Clone, Copy)]
pub struct Descriptor {
    pub name: &'static str,
    pub schemes: &'static [&'static str],
    pub workloads: &'static [&'static str],
    pub example: &'static str,
    pub about: &'static str,
}

/// Every target built into this binary.
pub const TARGETS: &[Descriptor] = &[
    #[cfg(feature = "sqlite")]
    sqlite::DESCRIPTOR,
    null::DESCRIPTOR,
];

/// The workloads loadrig knows, whether or not a built-in target runs them.
pub const WORKLOADS: &[(&str, &str)] = &[
    (
        "voter",
        "VoltDB's Voter: one vote is one server-side transaction with a per-caller limit",
    ),
    (
        "hello",
        "Erlvolt's hello world: the smallest procedure call (select, optional insert)",
    ),
];

/// An opened target.
pub enum Target {
    #[cfg(feature = "sqlite")]
    Sqlite(SqliteTarget),
    Null(NullTarget),
}

impl Target {
    /// Open the target a URL names; no URL means a fresh embedded SQLite.
    /// A malformed URL is a usage error; an unreachable target is not.
    pub fn open(url: Option<&str>) -> Result<Target, OpenError> {
        let url = url.unwrap_or("sqlite://");
        let (scheme, rest) = match url.split_once("://") {
            Some((s, r)) => (s, r),
            None => (url, ""),
        };
        match scheme {
            #[cfg(feature = "sqlite")]
            "sqlite" => Ok(Target::Sqlite(SqliteTarget::open(rest)?)),
            "null" => Ok(Target::Null(NullTarget::parse(rest)?)),
            other => Err(OpenError::Spec(SpecError::new(
                "--target",
                format!("unknown target scheme '{other}' in '{url}' (see `loadrig targets`)"),
            ))),
        }
    }

    pub fn descriptor(&self) -> &'static Descriptor {
        match self {
            #[cfg(feature = "sqlite")]
            Target::Sqlite(_) => &sqlite::DESCRIPTOR,
            Target::Null(_) => &null::DESCRIPTOR,
        }
    }
}

/// Why `--target` could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The URL is malformed (exit 2).
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// Well formed, but the target is not there (exit 3).
    #[error(transparent)]
    Target(#[from] TargetError),
}

/// Parse `key=value&...` query parameters.
pub(crate) fn query_pairs(q: &str) -> impl Iterator<Item = (&str, &str)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
}

/// Parse a duration like `250us`, `2ms`, `1s` or a bare number of microseconds.
pub(crate) fn parse_duration(s: &str) -> Option<std::time::Duration> {
    use std::time::Duration;
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok()?;
    if !(v.is_finite() && v >= 0.0) {
        return None;
    }
    let secs = match unit {
        "" | "us" => v / 1e6,
        "ns" => v / 1e9,
        "ms" => v / 1e3,
        "s" => v,
        _ => return None,
    };
    Some(Duration::from_secs_f64(secs))
}
