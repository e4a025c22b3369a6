//! How many bytes of replies one connection may hold before they are
//! taken: `--max-reply` (docs/limits.md). A reply that needs more (a bulk
//! string of 512 MiB, a memcached value of 1 GiB, a server sending
//! garbage that never completes a frame) breaks its connection as a
//! protocol error, counted, and the engine reconnects: the memory a run
//! takes stays the connections times this, whatever the servers send.
//! Set once per process before any target opens, like the handshake
//! limit ([`crate::limit_handshakes`]); 16 MiB without a call.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The default: far above any reply the workloads ask for.
const DEFAULT_MAX_REPLY: usize = 16 << 20;

static LIMIT: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_REPLY);

/// Bound what every later connection holds of its replies to `bytes`.
pub fn limit_replies(bytes: usize) {
    LIMIT.store(bytes.max(4096), Ordering::Relaxed);
}

/// The most one connection's read buffer may hold.
pub(crate) fn reply_limit() -> usize {
    LIMIT.load(Ordering::Relaxed)
}
