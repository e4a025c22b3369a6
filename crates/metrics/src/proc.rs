//! A process's CPU and resident memory from `/proc/PID/stat`: this
//! process's own once per lap (the client's series), and a local server's
//! found by its listening port (the server's). Read on the cold path only,
//! once per lap, never per operation.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// CPU time a process has used since it started and its resident memory
/// now, as `/proc/PID/stat` says (CPU in clock ticks, usually 10 ms).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcSample {
    /// Its parent process.
    pub ppid: u32,
    pub user: Duration,
    pub system: Duration,
    pub rss_bytes: u64,
}

impl ProcSample {
    /// This process, `None` where there is no `/proc`.
    pub fn own() -> Option<ProcSample> {
        Self::parse(&std::fs::read_to_string("/proc/self/stat").ok()?)
    }

    /// Process `pid`; `None` when it is gone or not readable.
    pub fn of(pid: u32) -> Option<ProcSample> {
        Self::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    /// A `stat` line: the command name is in parentheses and may hold
    /// spaces and parentheses itself, so fields are counted from the last
    /// `)`. After it: state (3), ..., utime (14), stime (15), ..., rss (24,
    /// in pages).
    fn parse(stat: &str) -> Option<ProcSample> {
        let rest = stat.get(stat.rfind(')')? + 1..)?;
        let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
        let field = |n: usize| -> Option<u64> { fields.get(n - 3)?.parse().ok() };
        let tick = clock_tick();
        Some(ProcSample {
            ppid: u32::try_from(field(4)?).unwrap_or(0),
            user: tick * u32::try_from(field(14)?).unwrap_or(u32::MAX),
            system: tick * u32::try_from(field(15)?).unwrap_or(u32::MAX),
            rss_bytes: field(24)?.saturating_mul(page_size()),
        })
    }

    /// The CPU used from `earlier` to `self`.
    pub fn cpu_since(&self, earlier: &ProcSample) -> (Duration, Duration) {
        (
            self.user.saturating_sub(earlier.user),
            self.system.saturating_sub(earlier.system),
        )
    }
}

/// The client's own resources in one lap: what the lap report keeps. All
/// of it adds up across the processes of a merged run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientLap {
    /// CPU the process used in the lap, user and system.
    pub cpu_user: Duration,
    pub cpu_system: Duration,
    /// Resident memory at the end of the lap.
    pub rss_bytes: u64,
    /// Bytes the connections wrote and read in the lap (only targets whose
    /// client counts bytes: the hand-written byte streams).
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Connections up at the end of the lap, as each worker last saw its own.
    pub connections: u64,
    /// Connections re-established in the lap.
    pub reconnects: u64,
}

#[allow(unsafe_code)]
fn clock_tick() -> Duration {
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    Duration::from_nanos(1_000_000_000 / u64::try_from(hz).unwrap_or(100).max(1))
}

#[allow(unsafe_code)]
fn page_size() -> u64 {
    // SAFETY: sysconf only reads a configuration value.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).unwrap_or(4096).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_with_spaces_and_parentheses_is_skipped() {
        let line = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 1 0 123 1000000 300 18446744073709551615";
        let s = ProcSample::parse(line).expect("parsed");
        assert_eq!(s.user, clock_tick() * 250);
        assert_eq!(s.system, clock_tick() * 75);
        assert_eq!(s.rss_bytes, 300 * page_size());
        assert_eq!(s.ppid, 1);
    }

    #[test]
    fn a_short_line_is_none() {
        assert_eq!(ProcSample::parse("1 (x) S 1 2 3"), None);
        assert_eq!(ProcSample::parse("garbage"), None);
    }

    #[test]
    fn this_process_has_memory_and_its_cpu_moves_forward() {
        // Spin until 20 ms of CPU are counted, or 10 s of wall clock (a
        // busy machine gives this thread less than its wall clock).
        let a = ProcSample::own().expect("Linux has /proc/self/stat");
        let t = std::time::Instant::now();
        let mut x = 0u64;
        let mut b = ProcSample::of(std::process::id()).expect("own pid");
        let spent = |b: &ProcSample| {
            let (user, system) = b.cpu_since(&a);
            user + system
        };
        while spent(&b) < Duration::from_millis(20) && t.elapsed() < Duration::from_secs(10) {
            for _ in 0..100_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            b = ProcSample::of(std::process::id()).expect("own pid");
        }
        std::hint::black_box(x);
        assert!(spent(&b) >= Duration::from_millis(20), "{a:?} {b:?}");
        assert!(b.rss_bytes > 1 << 20, "{b:?}");
    }
}
