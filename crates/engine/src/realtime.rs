//! `--realtime`: the engine's threads under `SCHED_FIFO` while they drive
//! the load, so an intended start wakes its worker on time.
//!
//! Under the default scheduler a woken thread waits its turn behind
//! whatever else is runnable on its core: on this project's 2-core VM a
//! timerfd wake-up is 25 us late at the median but 150 us at p99 (a C
//! program that does nothing else, `bench/wakeup`; docs/explanations/measurement.md section
//! 2). A thread of the lowest real-time priority preempts every ordinary
//! one the moment it wakes: the same program's p99 falls to about 60 us,
//! and loadrig's send lag at 10,000/s to under 100 us in quiet minutes. The price is the other side of that:
//! a real-time thread that never sleeps keeps its core from ordinary
//! processes (the kernel's throttling leaves them 5%), so the flag is for
//! a paced load that leaves the client idle between operations, and the
//! spec refuses it in the closed loop.
//!
//! The policy is per thread. [`Fifo::enter`] sets it for the calling
//! thread and its guard puts back what was there; threads started while
//! it is held inherit it (the engine's lanes are started under it).
//!
//! `--awake` ([`Awake`]) removes the other half of a late wake-up: the
//! idle CPU's own. An idle CPU halts, and on a virtual machine a halted
//! virtual CPU is descheduled by the host, so the timer interrupt that
//! ends a sleep first waits for the host to run it again. A PM QoS request
//! for a wake-up latency of 0 (what `cyclictest` holds by default) makes
//! the kernel choose its polling idle state instead: idle CPUs spin, and a
//! wake-up costs no exit from a halt.

#![allow(unsafe_code)]

use std::io;

/// The lowest real-time priority: above every ordinary thread, below
/// the real-time threads the kernel runs (interrupt threads, migration).
const PRIORITY: libc::c_int = 1;

/// The calling thread under `SCHED_FIFO`; its scheduling before that is
/// put back on drop.
pub struct Fifo {
    policy: libc::c_int,
    priority: libc::c_int,
}

impl Fifo {
    /// Put the calling thread under `SCHED_FIFO` at the lowest real-time
    /// priority. Fails with `EPERM` without root, `CAP_SYS_NICE` or an
    /// `RLIMIT_RTPRIO` of at least 1 (`ulimit -r`).
    pub fn enter() -> io::Result<Fifo> {
        // SAFETY: pid 0 is the calling thread; `param` is a valid, fully
        // initialised sched_param that outlives each call.
        unsafe {
            let policy = libc::sched_getscheduler(0);
            if policy < 0 {
                return Err(io::Error::last_os_error());
            }
            let mut param: libc::sched_param = std::mem::zeroed();
            if libc::sched_getparam(0, &mut param) != 0 {
                return Err(io::Error::last_os_error());
            }
            let before = Fifo {
                policy,
                priority: param.sched_priority,
            };
            set(libc::SCHED_FIFO, PRIORITY)?;
            Ok(before)
        }
    }
}

impl Drop for Fifo {
    fn drop(&mut self) {
        // Going back to a lower policy needs no privilege; should it fail,
        // the thread stays real-time, which costs only fairness.
        let _ = set(self.policy, self.priority);
    }
}

/// The machine's CPUs kept out of their halting idle states while this
/// is held: a PM QoS request for a CPU wake-up latency of 0, which lasts
/// as long as the file it was written to stays open. It is machine-wide:
/// every idle CPU polls meanwhile, which burns that CPU's time (on a
/// virtual machine, the host's) but none of this process's.
pub struct Awake {
    _request: std::fs::File,
}

/// Where the kernel takes PM QoS requests for the CPUs' wake-up latency.
const CPU_LATENCY: &str = "/dev/cpu_dma_latency";

impl Awake {
    /// Ask for a wake-up latency of 0 microseconds. Fails without the
    /// right to open the file (root, by default) or without the file (a
    /// kernel without PM QoS).
    pub fn enter() -> io::Result<Awake> {
        use std::io::Write;
        let mut request = std::fs::OpenOptions::new().write(true).open(CPU_LATENCY)?;
        // The kernel reads a binary s32, in microseconds.
        request.write_all(&0i32.to_ne_bytes())?;
        Ok(Awake { _request: request })
    }
}

fn set(policy: libc::c_int, priority: libc::c_int) -> io::Result<()> {
    // SAFETY: as in `enter`.
    let rc = unsafe {
        let mut param: libc::sched_param = std::mem::zeroed();
        param.sched_priority = priority;
        libc::sched_setscheduler(0, policy, &param)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> libc::c_int {
        // SAFETY: pid 0 is the calling thread.
        unsafe { libc::sched_getscheduler(0) }
    }

    /// Under the guard the thread is real-time, and a thread started
    /// then inherits it; after it, the thread is back where it was. Where
    /// the process may not (no root, no CAP_SYS_NICE), `enter` says so
    /// and changes nothing.
    #[test]
    fn the_guard_sets_and_puts_back_the_policy() {
        let before = policy();
        match Fifo::enter() {
            Ok(fifo) => {
                assert_eq!(policy(), libc::SCHED_FIFO);
                let child = std::thread::spawn(policy).join().unwrap();
                assert_eq!(child, libc::SCHED_FIFO);
                drop(fifo);
            }
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EPERM), "{e}"),
        }
        assert_eq!(policy(), before);
    }

    /// The request holds while the guard lives: the kernel's aggregate is
    /// 0 then and back above it after (it reads the file's current value).
    /// Without root the open fails and nothing changes.
    #[test]
    fn the_request_lasts_as_long_as_the_guard() {
        let now = || {
            let mut v = [0u8; 4];
            std::io::Read::read_exact(&mut std::fs::File::open(CPU_LATENCY).unwrap(), &mut v)
                .unwrap();
            i32::from_ne_bytes(v)
        };
        match Awake::enter() {
            Ok(awake) => {
                assert_eq!(now(), 0);
                drop(awake);
                assert!(now() > 0, "{}", now());
            }
            Err(e) => assert!(
                matches!(
                    e.kind(),
                    io::ErrorKind::PermissionDenied | io::ErrorKind::NotFound
                ),
                "{e}"
            ),
        }
    }
}
