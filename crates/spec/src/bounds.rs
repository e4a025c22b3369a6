//! The bounds every number a user gives is held to, in one place, so that
//! no value that parses can overflow a clock, allocate the machine away or
//! make a run that never ends. Each is stated in docs/reference/limits.md with its
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
/// (docs/reference/limits.md).
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

/// The memory a run plans to hold at once, by what holds it, over all its
/// processes. An estimate to refuse the impossible early, not a promise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Planned {
    pub connections: u64,
    /// Operations in flight.
    pub slots: u64,
    /// Operations waiting in the managed queue.
    pub queue: u64,
}

impl Planned {
    /// `connections`, `slots` and `queued` in each of `processes`.
    pub fn of(connections: u64, slots: u64, queued: u64, processes: u64) -> Planned {
        let each = |n: u64, bytes: u64| n.saturating_mul(bytes).saturating_mul(processes.max(1));
        Planned {
            connections: each(connections, BYTES_PER_CONNECTION),
            slots: each(slots, BYTES_PER_SLOT),
            queue: each(queued, BYTES_PER_QUEUED),
        }
    }

    pub fn total(&self) -> u64 {
        self.connections
            .saturating_add(self.slots)
            .saturating_add(self.queue)
    }
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
        assert_eq!(Planned::of(1, 0, 0, 1).total(), BYTES_PER_CONNECTION);
        assert_eq!(
            Planned::of(u64::MAX, u64::MAX, u64::MAX, 8).total(),
            u64::MAX
        );
        assert_eq!(Planned::of(0, 10, 0, 2).slots, 20 * BYTES_PER_SLOT);
    }
}
