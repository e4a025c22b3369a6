//! The closed set of ways an operation can fail. A failure is a counter
//! increment: the kind indexes an array, and a server error carries a
//! `&'static str` class (SQLSTATE class, VoltDB status name) instead of a
//! message, so the hot path never formats or allocates.

use serde::{Deserialize, Serialize};

/// Why an operation failed. The set is closed on purpose: reports from
/// different versions and hosts must add up kind by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Could not (re)connect to the target.
    Connect,
    /// No answer within the operation timeout.
    Timeout,
    /// The connection failed while the operation was in flight.
    Io,
    /// The target sent bytes that do not parse.
    Protocol,
    /// The target answered with an error; the class says which.
    Server,
    /// Managed mode: the queue in front of the connections was full.
    QueueFull,
    /// Open loop: the operation was too late to start (backlog bound).
    Dropped,
    /// The answer was well formed but wrong (a read-back mismatch).
    Verification,
}

impl ErrorKind {
    /// Every kind, in array order.
    pub const ALL: [ErrorKind; 8] = [
        ErrorKind::Connect,
        ErrorKind::Timeout,
        ErrorKind::Io,
        ErrorKind::Protocol,
        ErrorKind::Server,
        ErrorKind::QueueFull,
        ErrorKind::Dropped,
        ErrorKind::Verification,
    ];

    /// Index into per-kind arrays (`ALL[k.index()] == k`).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The name used in reports and output.
    pub const fn name(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Io => "io",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Server => "server",
            ErrorKind::QueueFull => "queue_full",
            ErrorKind::Dropped => "dropped",
            ErrorKind::Verification => "verification",
        }
    }
}

/// One failed operation: a kind and, for server errors, a static class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{} error{}{}", kind.name(), if class.is_empty() { "" } else { ": " }, class)]
pub struct OpError {
    pub kind: ErrorKind,
    /// Empty unless `kind` is `Server` (or a driver has a finer static name).
    pub class: &'static str,
}

impl OpError {
    pub const fn new(kind: ErrorKind) -> Self {
        OpError { kind, class: "" }
    }

    pub const fn server(class: &'static str) -> Self {
        OpError {
            kind: ErrorKind::Server,
            class,
        }
    }
}

impl From<ErrorKind> for OpError {
    fn from(kind: ErrorKind) -> Self {
        OpError::new(kind)
    }
}
