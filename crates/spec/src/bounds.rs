//! The bounds every number a user gives is held to, in one place, so that
//! no value that parses can overflow a clock, allocate the machine away or
//! make a run that never ends. Each is stated in docs/limits.md with its
//! reason; a value outside is exit 2 with one line naming the flag.

use crate::SpecError;

/// The longest time any flag takes (a duration, a timeout, a warm-up, a
/// drain, a think time, a delay): 30 days. A run meant to last longer is
/// several runs merged.
pub const MAX_SECS: f64 = 30.0 * 86_400.0;

/// The shortest lap (`--interval`): below a millisecond the lap hand-over
/// would cost more than the load.
pub const MIN_INTERVAL_SECS: f64 = 0.001;

/// The open loop's rate, operations per second over all clients: from one
/// an hour to a hundred million (no client on one machine schedules more).
pub const MIN_RATE: f64 = 1.0 / 3600.0;
pub const MAX_RATE: f64 = 1e8;

/// Callers in one process. A connection costs memory and a file; the
/// memory estimate below refuses far fewer on a small machine.
pub const MAX_CLIENTS: u32 = 1_000_000;

/// Requests in flight per caller or connection (`--pipeline`, `--slots`):
/// every protocol here answers in order, and no server takes more.
pub const MAX_DEPTH: u32 = 65_536;

/// Operations waiting in the managed queue (`--queue`).
pub const MAX_QUEUE: u64 = 10_000_000;

/// Operations in one burst (`--burst`), and the pending limit (`--limit`).
pub const MAX_BURST: u32 = 10_000_000;

/// Runtime threads (`--threads`).
pub const MAX_THREADS: usize = 1024;

/// Processes of one run (`--processes`).
pub const MAX_PROCESSES: u32 = 256;

/// What the memory estimate counts per connection (socket buffers, the
/// worker; the recorders are per thread) and per operation slot (in
/// flight or queued): bench/scale measured 3 to 11 KB per active
/// connection of the hand-written clients; the drivers' (PostgreSQL's,
/// etcd's HTTP/2) hold more, so the figure is a generous 64 KiB
/// (docs/limits.md).
pub const BYTES_PER_CONNECTION: u64 = 64 * 1024;
pub const BYTES_PER_SLOT: u64 = 64;
pub const BYTES_PER_QUEUED: u64 = 48;

/// A time value: finite, at most [`MAX_SECS`], and above zero unless
/// `zero` is allowed.
pub fn seconds(flag: &'static str, v: f64, zero: bool) -> Result<(), SpecError> {
    let low_ok = if zero { v >= 0.0 } else { v > 0.0 };
    if v.is_finite() && low_ok && v <= MAX_SECS {
        return Ok(());
    }
    let least = if zero { "0 or more" } else { "more than 0" };
    Err(SpecError::new(
        flag,
        format!("must be a time of {least}, at most 30 days"),
    ))
}

/// A count: at least `min`, at most `max`.
pub fn count(flag: &'static str, v: u64, min: u64, max: u64) -> Result<(), SpecError> {
    if (min..=max).contains(&v) {
        return Ok(());
    }
    Err(SpecError::new(
        flag,
        format!("must be from {min} to {max} (got {v})"),
    ))
}

/// The memory a run plans to hold at once in one process: connections,
/// operation slots, queue. An estimate to refuse the impossible early, not
/// a promise.
pub fn planned_bytes(connections: u64, slots: u64, queue: u64, processes: u64) -> u64 {
    let one = connections
        .saturating_mul(BYTES_PER_CONNECTION)
        .saturating_add(slots.saturating_mul(BYTES_PER_SLOT))
        .saturating_add(queue.saturating_mul(BYTES_PER_QUEUED));
    one.saturating_mul(processes.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_finite_and_at_most_30_days() {
        assert!(seconds("--duration", 10.0, false).is_ok());
        assert!(seconds("--warmup", 0.0, true).is_ok());
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1.8e19, MAX_SECS * 2.0] {
            let e = seconds("--duration", bad, false).unwrap_err();
            assert_eq!(e.flag, "--duration");
        }
        assert!(seconds("--warmup", -0.5, true).is_err());
    }

    #[test]
    fn counts_name_their_range() {
        assert!(count("--pipeline", 16, 1, u64::from(MAX_DEPTH)).is_ok());
        let e = count("--pipeline", 4_294_967_295, 1, u64::from(MAX_DEPTH)).unwrap_err();
        assert!(e.to_string().contains("1 to 65536"), "{e}");
    }

    #[test]
    fn the_estimate_saturates() {
        assert_eq!(planned_bytes(1, 0, 0, 1), BYTES_PER_CONNECTION);
        assert_eq!(planned_bytes(u64::MAX, u64::MAX, u64::MAX, 8), u64::MAX);
    }
}
