//! Bytes moved by this thread's sockets, for the client's per-lap series.
//!
//! Counted where the byte streams count (`Socket::fill` and `flush` in
//! the targets crate), into two counters of the calling thread: an engine
//! thread serves only its own connections, so its recorder takes exactly
//! its own bytes when it hands its lap over, at the boundary, whichever
//! worker passes it first. A plain thread-local `Cell`: no atomic, no
//! lock, nothing shared on the hot path. (A driver's own `take_bytes` is
//! folded by each worker when it notices the lap, so it would put most of
//! a thread's bytes in the next lap; the run's totals still come from it.)

use std::cell::Cell;

thread_local! {
    static SENT: Cell<u64> = const { Cell::new(0) };
    static RECEIVED: Cell<u64> = const { Cell::new(0) };
}

/// `n` bytes written by a socket of this thread.
#[inline]
pub fn count_sent(n: usize) {
    SENT.with(|c| c.set(c.get().wrapping_add(n as u64)));
}

/// `n` bytes read by a socket of this thread.
#[inline]
pub fn count_received(n: usize) {
    RECEIVED.with(|c| c.set(c.get().wrapping_add(n as u64)));
}

/// This thread's bytes (sent, received) since the last call, and zeroed.
pub fn take_traffic() -> (u64, u64) {
    (SENT.with(|c| c.replace(0)), RECEIVED.with(|c| c.replace(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_thread_counts_its_own() {
        take_traffic();
        count_sent(10);
        count_received(3);
        let other = std::thread::spawn(|| {
            count_sent(7);
            take_traffic()
        })
        .join()
        .expect("thread");
        assert_eq!(other, (7, 0));
        assert_eq!(take_traffic(), (10, 3));
        assert_eq!(take_traffic(), (0, 0));
    }
}
