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
        (0..self.kinds.len())
            .map(|k| self.in_doubt_of(k))
            .fold(0, u64::saturating_add)
    }

    /// Operations of kind `kind` that failed in doubt.
    pub fn in_doubt_of(&self, kind: usize) -> u64 {
        self.kinds.get(kind).map_or(0, |k| {
            ErrorKind::ALL
                .iter()
                .filter(|e| e.in_doubt())
                .map(|&e| k.errors.get(e))
                .fold(0, u64::saturating_add)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OpError;

    #[test]
    fn a_check_holds_within_its_writes_in_doubt_and_says_why_not() {
        let exact = Check::new("rows", 10, 10);
        assert!(exact.ok());
        assert!(!Check::new("rows", 10, 9).ok());
        assert!(!Check::new("rows", 10, 11).ok());
        let doubt = Check::new("rows", 10, 12).in_doubt(2);
        assert!(doubt.ok());
        assert!(Check::new("rows", 10, 10).in_doubt(2).ok());
        assert!(!Check::new("rows", 10, 13).in_doubt(2).ok());
        assert!(!Check::new("rows", 10, 9).in_doubt(2).ok());
        assert_eq!(Check::new("x", 1, 1).in_doubt(-5).in_doubt, 0);
        let v = Verdict::from_checks(
            vec![
                exact,
                Check::new("lost", 0, 3),
                Check::new("rows", 10, 15).in_doubt(2),
            ],
            "fine".into(),
        );
        assert_eq!(v.passed, Some(false));
        assert_eq!(
            v.summary,
            "FAILED (lost: expected 0, found 3; rows: expected 10 to 12, found 15)"
        );
        let ok = Verdict::from_checks(vec![doubt], "fine".into());
        assert_eq!((ok.passed, ok.summary.as_str()), (Some(true), "ok (fine)"));
        assert_eq!(Verdict::skipped("why").passed, None);
    }

    #[test]
    fn in_doubt_counts_io_timeout_and_protocol_only() {
        let kinds = [ErrorKind::Io, ErrorKind::Timeout, ErrorKind::Protocol];
        for k in ErrorKind::ALL {
            assert_eq!(k.in_doubt(), kinds.contains(&k), "{k:?}");
        }
        let mut s = Snapshot::new(2, 0);
        s.failed(0, OpError::new(ErrorKind::Io), None);
        s.failed(0, OpError::new(ErrorKind::Timeout), None);
        s.failed(0, OpError::server("x"), None);
        s.failed(1, OpError::new(ErrorKind::Protocol), None);
        s.failed(1, OpError::new(ErrorKind::Connect), None);
        assert_eq!(
            (s.in_doubt_of(0), s.in_doubt_of(1), s.in_doubt_of(2)),
            (2, 1, 0)
        );
        assert_eq!(s.in_doubt(), 3);
    }
}
