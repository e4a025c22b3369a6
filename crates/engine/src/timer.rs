//! A wake-up at an instant, to within tens of microseconds.
//!
//! tokio's timer wheel counts whole milliseconds and its reactor waits in
//! whole milliseconds, so `sleep_until(t)` returns up to a millisecond
//! after `t`. In the open loop that lateness would be counted as the
//! server's latency, and a 100 us delay of the null target would last a
//! millisecond. [`Timer`] races tokio's sleep with a Linux `timerfd`
//! armed for the same instant: the kernel's high-resolution timer wakes
//! the task tens of microseconds after `t`, at the cost of one
//! `timerfd_settime` per new deadline and one `read` per wake (no
//! spinning, so an idle worker costs nothing). tokio's sleep stays in the
//! race because it is the clock the engine schedules by: under tokio's
//! paused test clock it fires exactly at `t` (the first timerfd wake-up
//! that finds that clock behind the kernel's turns the timerfd off), and
//! on a system without timerfd it is the fallback. The timerfd is made on the first wait, so
//! a closed-loop worker never opens one.

use tokio::time::{Instant, Sleep};

/// A reusable wake-up: [`Timer::sleep_until`] is cancel safe and may be
/// called again with the same or another instant.
#[derive(Default)]
pub struct Timer {
    /// Made on the first wait (a `Sleep` needs a runtime; a `Timer` may
    /// be made outside one).
    coarse: Option<std::pin::Pin<Box<Sleep>>>,
    fine: fine::Fine,
}

impl Timer {
    pub fn new() -> Timer {
        Timer::default()
    }

    /// Return at `at` or within tens of microseconds after it (to the
    /// millisecond where no timerfd can be made). Cancel safe.
    pub async fn sleep_until(&mut self, at: Instant) {
        loop {
            if Instant::now() >= at {
                return;
            }
            let coarse = self
                .coarse
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
            if coarse.deadline() != at {
                coarse.as_mut().reset(at);
            }
            self.fine.arm(at);
            tokio::select! {
                biased;
                () = coarse.as_mut() => return,
                () = self.fine.fired() => {}
            }
        }
    }

    /// Arm the precise wake-up for `at` without waiting: [`Timer::fired`]
    /// then resolves at `at` (or soon after). For a caller that races the
    /// wake-up with other events and keeps its own tokio sleep (the
    /// worker loop), so it needs only the precise half.
    pub fn arm(&mut self, at: Instant) {
        self.fine.arm(at);
    }

    /// Resolves when the armed instant has passed (or spuriously, early:
    /// the caller reads the clock). Pending forever when nothing is armed
    /// or there is no timerfd. Cancel safe.
    pub async fn fired(&mut self) {
        self.fine.fired().await;
    }

    /// Whether a precise wake-up can be armed (Linux, a timerfd made).
    pub fn is_armed(&self) -> bool {
        self.fine.is_armed()
    }
}

// The timerfd calls are three system calls with no safe wrapper in the
// crates we already depend on; each is checked and commented.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod fine {
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::time::Duration;

    use tokio::io::unix::AsyncFd;
    use tokio::time::Instant;

    /// A timerfd registered with the reactor, made on first use.
    #[derive(Default)]
    pub(super) struct Fine {
        fd: Option<AsyncFd<OwnedFd>>,
        /// The instant armed; `None` when disarmed or fired.
        armed: Option<Instant>,
        /// Making a timerfd failed once, or the clock is not real time (no
        /// more tries).
        broken: bool,
    }

    impl Fine {
        pub(super) fn is_armed(&self) -> bool {
            self.armed.is_some()
        }

        pub(super) fn arm(&mut self, at: Instant) {
            if self.armed == Some(at) || self.broken {
                return;
            }
            if self.fd.is_none() {
                match make() {
                    Ok(fd) => self.fd = Some(fd),
                    Err(_) => {
                        // Without a timerfd the caller's tokio sleep still
                        // fires, to the millisecond.
                        self.broken = true;
                        return;
                    }
                }
            }
            let Some(fd) = &self.fd else { return };
            // Relative to a clock read made before the call, so the
            // kernel's deadline is never earlier than `at`.
            let left = at.saturating_duration_since(Instant::now());
            // A zero value would disarm the timer: one nanosecond is "now".
            let left = left.max(Duration::from_nanos(1));
            if settime(fd.as_raw_fd(), left).is_ok() {
                self.armed = Some(at);
            }
        }

        pub(super) async fn fired(&mut self) {
            let (Some(fd), Some(_)) = (&self.fd, self.armed) else {
                return std::future::pending().await;
            };
            loop {
                let Ok(mut ready) = fd.readable().await else {
                    return std::future::pending().await;
                };
                let mut expirations = [0u8; 8];
                // SAFETY: reading 8 bytes into an 8-byte buffer from a
                // file descriptor we own.
                let n = unsafe {
                    libc::read(
                        fd.as_raw_fd(),
                        expirations.as_mut_ptr().cast(),
                        expirations.len(),
                    )
                };
                // The timer is one-shot and re-armed only by us, so the
                // readiness can be cleared after a read, successful or not
                // (EAGAIN: a stale readiness, re-armed since; wait again).
                ready.clear_ready();
                if n == 8 {
                    let at = self.armed.take();
                    if at.is_some_and(|at| Instant::now() < at) {
                        // The kernel's clock passed the instant and the
                        // engine's did not: it is tokio's paused test
                        // clock, which only moves when every task
                        // waits. A timer on real time would keep waking
                        // the task and stop that clock from moving, so
                        // it is turned off for good.
                        self.fd = None;
                        self.broken = true;
                    }
                    return;
                }
            }
        }
    }

    fn make() -> io::Result<AsyncFd<OwnedFd>> {
        // SAFETY: plain system call; the result is checked.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a file descriptor we just made and own alone.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: an `OwnedFd` keeps its descriptor open and the same
        // until it is dropped, which the `AsyncFd` owning it outlives not.
        unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
            .map_err(io::Error::from)
    }

    fn settime(fd: RawFd, after: Duration) -> io::Result<()> {
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: `spec` is a valid itimerspec; the old value is not asked for.
        let rc = unsafe { libc::timerfd_settime(fd, 0, &spec, std::ptr::null_mut()) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(not(target_os = "linux"))]
mod fine {
    use tokio::time::Instant;

    /// No timerfd: the caller's tokio sleep does the waking.
    #[derive(Default)]
    pub(super) struct Fine;

    impl Fine {
        pub(super) fn is_armed(&self) -> bool {
            false
        }

        pub(super) fn arm(&mut self, _at: Instant) {}

        pub(super) async fn fired(&mut self) {
            std::future::pending().await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Real time, not the paused clock: what the timerfd is for. A loose
    /// bound (a shared machine can be late by more than tens of us); the
    /// point is that it is well under tokio's millisecond.
    #[tokio::test]
    async fn wakes_well_inside_a_millisecond() {
        let mut t = Timer::new();
        let mut lates = Vec::new();
        for _ in 0..50 {
            let at = Instant::now() + Duration::from_micros(300);
            t.sleep_until(at).await;
            lates.push(Instant::now() - at);
        }
        lates.sort();
        let median = lates[lates.len() / 2];
        assert!(
            median < Duration::from_micros(500),
            "median late {median:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn exact_under_the_paused_clock() {
        let mut t = Timer::new();
        let at = Instant::now() + Duration::from_millis(7);
        t.sleep_until(at).await;
        assert_eq!(Instant::now(), at);
    }
}
