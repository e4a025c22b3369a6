//! The load generator's own cost: CPU time (user + system) and peak
//! resident memory of this process, from getrusage(2).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// CPU used by this process since it started, and its peak memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessUsage {
    pub user: Duration,
    pub system: Duration,
    /// Peak resident set size in bytes.
    pub max_rss_bytes: u64,
}

/// CPU and memory used over a span of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// User plus system CPU time spent in the span.
    pub cpu: Duration,
    pub user: Duration,
    pub system: Duration,
    /// Peak resident set size of the process at the end of the span.
    pub max_rss_bytes: u64,
}

impl ProcessUsage {
    /// Read getrusage(RUSAGE_SELF) (or RUSAGE_CHILDREN with `children`).
    pub fn now() -> ProcessUsage {
        Self::read(libc::RUSAGE_SELF)
    }

    /// What the calling thread used (an embedded database's own thread).
    pub fn thread() -> ProcessUsage {
        Self::read(libc::RUSAGE_THREAD)
    }

    /// What finished child processes used (for runs that spawn peers).
    pub fn children() -> ProcessUsage {
        Self::read(libc::RUSAGE_CHILDREN)
    }

    #[allow(unsafe_code)]
    fn read(who: libc::c_int) -> ProcessUsage {
        // SAFETY: getrusage only writes into the struct we hand it, and an
        // all-zero rusage is a valid value of that plain C struct.
        let ru = unsafe {
            let mut ru: libc::rusage = std::mem::zeroed();
            if libc::getrusage(who, &mut ru) != 0 {
                return ProcessUsage::default();
            }
            ru
        };
        let tv = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec.max(0) as u64)
                + Duration::from_micros(t.tv_usec.max(0) as u64)
        };
        // Linux reports ru_maxrss in kilobytes. For this process it also
        // keeps the peak of whatever ran before `exec` (cargo, under
        // `cargo run`), so the process's own peak comes from VmHWM.
        let rusage_peak = (ru.ru_maxrss.max(0) as u64) * 1024;
        let own_peak = (who == libc::RUSAGE_SELF).then(vm_hwm).flatten();
        ProcessUsage {
            user: tv(ru.ru_utime),
            system: tv(ru.ru_stime),
            max_rss_bytes: own_peak.unwrap_or(rusage_peak),
        }
    }

    /// What was used between `start` and `self`.
    pub fn since(&self, start: &ProcessUsage) -> Usage {
        let user = self.user.saturating_sub(start.user);
        let system = self.system.saturating_sub(start.system);
        Usage {
            cpu: user + system,
            user,
            system,
            max_rss_bytes: self.max_rss_bytes,
        }
    }
}

/// This process's peak resident memory since it was exec'd (`VmHWM` in
/// /proc/self/status), in bytes; `None` where there is no such file.
fn vm_hwm() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// Raise this process's soft limit on open files to its hard limit, and
/// return the limit now in force: a run of thousands of connections needs
/// a descriptor each, and a shell's soft limit (often 1,024) is far below
/// the hard one. The hard limit is the host's decision; nothing asks for
/// more.
pub fn raise_open_files() -> std::io::Result<u64> {
    // SAFETY: getrlimit and setrlimit only read and write the struct
    // passed, which lives on this stack frame.
    #[allow(unsafe_code)]
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(lim.rlim_cur)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_moves_forward_when_we_spin() {
        // Spin until 10 ms of CPU are counted, or 10 s of wall clock: on a
        // machine busy with other tests, 30 ms of wall clock may hold less
        // than 10 ms of this thread's CPU.
        let a = ProcessUsage::now();
        let t = std::time::Instant::now();
        let mut x = 0u64;
        let mut u = ProcessUsage::now().since(&a);
        while u.cpu < Duration::from_millis(10) && t.elapsed() < Duration::from_secs(10) {
            for _ in 0..100_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            u = ProcessUsage::now().since(&a);
        }
        std::hint::black_box(x);
        assert!(u.cpu >= Duration::from_millis(10), "{u:?}");
        assert!(u.max_rss_bytes > 0);
    }

    #[test]
    fn open_files_are_raised_to_the_hard_limit() {
        let limit = raise_open_files().expect("getrlimit works");
        assert!(limit >= 64, "{limit}");
        assert_eq!(raise_open_files().expect("again"), limit);
    }

    #[test]
    fn own_peak_is_at_most_what_rusage_says() {
        let own = vm_hwm().expect("Linux has /proc/self/status");
        // SAFETY: as in `read`.
        #[allow(unsafe_code)]
        let ru = unsafe {
            let mut ru: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_SELF, &mut ru);
            ru
        };
        // At most rusage's figure (which also keeps the peak of the
        // image before exec, so it may be far above), give or take what
        // the kernel's per-CPU counters of resident pages have not yet
        // summed: rusage reads them approximately, /proc exactly.
        let theirs = (ru.ru_maxrss as u64) * 1024;
        assert!(
            own > 0 && own <= theirs + (2 << 20),
            "VmHWM {own} B, ru_maxrss {theirs} B"
        );
    }
}
