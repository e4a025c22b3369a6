//! How long opening a connection may take, its protocol's handshake and
//! login included: the run's `--timeout` (docs/limits.md). Set once per
//! process before any target opens, like the source addresses
//! ([`crate::bind_from`]); 10 s without a call.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The limit in microseconds.
static LIMIT_US: AtomicU64 = AtomicU64::new(10_000_000);

/// Bound every later connection's opening by `limit` (at least 1 ms).
pub fn limit_handshakes(limit: Duration) {
    let us = u64::try_from(limit.as_micros())
        .unwrap_or(u64::MAX)
        .max(1_000);
    LIMIT_US.store(us, Ordering::Relaxed);
}

/// How long opening one connection may take.
pub(crate) fn handshake_limit() -> Duration {
    Duration::from_micros(LIMIT_US.load(Ordering::Relaxed))
}
