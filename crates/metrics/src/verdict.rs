//! What a run's checks concluded, as stored in every report: the
//! comparisons between what the client counted and what the server holds
//! ([`Check`], [`Verdict`]), the workload's own result table
//! ([`Results`]), and the one rule for operations in doubt.

use serde::{Deserialize, Serialize};

use crate::{ErrorKind, Snapshot};

impl ErrorKind {
    /// Whether an operation that failed this way may still have taken
    /// effect on the server: it was sent, then the link failed, the answer
    /// did not come in time, or it came garbled. Such writes are "in
    /// doubt": verification allows them either way, never a false failure.
    pub fn in_doubt(self) -> bool {
        matches!(
            self,
            ErrorKind::Io | ErrorKind::Timeout | ErrorKind::Protocol
        )
    }
}

impl Snapshot {
    /// Operations of every kind that failed in doubt (see
    /// [`ErrorKind::in_doubt`]).
    pub fn in_doubt(&self) -> u64 {
        (0..self.kinds.len()).map(|k| self.in_doubt_of(k)).sum()
    }

    /// Operations of kind `kind` that failed in doubt.
    pub fn in_doubt_of(&self, kind: usize) -> u64 {
        self.kinds.get(kind).map_or(0, |k| {
            ErrorKind::ALL
                .iter()
                .filter(|e| e.in_doubt())
                .map(|&e| k.errors.get(e))
                .sum()
        })
    }
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
