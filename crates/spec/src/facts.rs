//! What an opened target says about itself that a run spec is resolved
//! against: the binary opens the target first (which parses its URL, and
//! nothing else does), then builds the spec with these facts, so a bad
//! depth or a private database is refused before any connection is made.

/// The facts, plain data (the target crate fills them in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetFacts {
    /// The URL for output and reports, secrets masked.
    pub label: String,
    /// Connections a run opens when `--connections` is not given; `None`:
    /// one per client. Never more than the clients.
    pub default_connections: Option<u32>,
    /// Runtime threads a run drives the load with when `--threads` is not
    /// given and the workload has no default of its own; `None`: one per
    /// core.
    pub default_threads: Option<usize>,
    /// Whether several processes can share the target's data (a fresh
    /// temporary database is private to the process that made it).
    pub shared: bool,
    /// The most requests one connection may keep in flight.
    pub max_depth: usize,
}
