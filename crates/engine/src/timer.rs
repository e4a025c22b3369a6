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
//! on a system without timerfd it is the fallback. A thread has one
//! timerfd, shared by every timer on it and armed for the earliest
//! instant any of them waits for (a connection costs a slot, not a file
//! descriptor); it is made when the first timer is armed, so a
//! closed-loop run never opens one, and closed with the last timer.

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
    use std::cell::RefCell;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::task::{Context, Poll, Waker};
    use std::thread::{self, ThreadId};
    use std::time::Duration;

    use tokio::io::unix::AsyncFd;
    use tokio::time::Instant;

    thread_local! {
        /// This thread's one timerfd and the instants armed on it; made
        /// when the first timer joins, dropped when the last one leaves.
        static SHARED: RefCell<Option<Shared>> = const { RefCell::new(None) };
    }

    /// One timerfd per thread, shared by every timer on it: a connection
    /// costs a slot here, not a file descriptor (15,000 chat clients held
    /// 15,000 timerfds and ran out of descriptors). The kernel is armed
    /// for the earliest instant; the task waiting for that instant is the
    /// one the reactor wakes, and it wakes every other task whose instant
    /// has passed ([`Shared::tend`]).
    struct Shared {
        fd: Option<AsyncFd<OwnedFd>>,
        /// Making the timerfd failed, or the clock is tokio's paused test
        /// clock: the timers' tokio sleeps do the waking.
        broken: bool,
        /// Timers joined.
        users: usize,
        entries: Vec<Entry>,
        free: Vec<usize>,
        /// `(instant, slot)`, earliest first; an entry whose slot holds
        /// another instant by now is stale and skipped.
        heap: BinaryHeap<Reverse<(Instant, usize)>>,
        /// What the timerfd is set to.
        kernel: Option<Instant>,
    }

    #[derive(Default)]
    struct Entry {
        at: Option<Instant>,
        /// The task waiting for `at`; `None` when none is.
        waker: Option<Waker>,
        /// The instant this slot has in the heap, so that a task that
        /// stops and starts waiting again (a reply came first) does not
        /// push it twice.
        queued: Option<Instant>,
    }

    impl Shared {
        fn new() -> Shared {
            let (fd, broken) = match make() {
                Ok(fd) => (Some(fd), false),
                Err(_) => (None, true),
            };
            Shared {
                fd,
                broken,
                users: 0,
                entries: Vec::new(),
                free: Vec::new(),
                heap: BinaryHeap::new(),
                kernel: None,
            }
        }

        /// The earliest instant a task waits for, and its slot.
        fn head(&mut self) -> Option<(Instant, usize)> {
            while let Some(&Reverse((at, k))) = self.heap.peek() {
                let e = self.entries.get_mut(k)?;
                if e.at == Some(at) && e.waker.is_some() {
                    return Some((at, k));
                }
                self.heap.pop();
                if e.queued == Some(at) {
                    e.queued = None;
                }
            }
            None
        }

        /// Task `waker` waits for slot `k`'s instant `at`.
        fn wait(&mut self, k: usize, at: Instant, waker: &Waker) {
            let Some(e) = self.entries.get_mut(k) else {
                return;
            };
            e.at = Some(at);
            if e.queued != Some(at) {
                e.queued = Some(at);
                self.heap.push(Reverse((at, k)));
            }
            match &mut e.waker {
                Some(w) if w.will_wake(waker) => {}
                w => *w = Some(waker.clone()),
            }
            if self.kernel.is_none_or(|kernel| at < kernel) {
                self.set_kernel(at);
            }
            self.tend();
        }

        /// Slot `k`'s task waits no more.
        fn leave(&mut self, k: usize) {
            if let Some(e) = self.entries.get_mut(k) {
                if e.waker.take().is_some() {
                    self.tend();
                }
            }
        }

        fn set_kernel(&mut self, at: Instant) {
            let Some(fd) = &self.fd else { return };
            // Relative to a clock read made before the call, so the
            // kernel's deadline is never earlier than `at`; a zero value
            // would disarm the timer, so one nanosecond is "now".
            let left = at
                .saturating_duration_since(Instant::now())
                .max(Duration::from_nanos(1));
            if settime(fd.as_raw_fd(), left).is_ok() {
                self.kernel = Some(at);
            }
        }

        /// Keep the reactor watching the timerfd for the task whose
        /// instant is earliest, and when the timerfd has fired, wake every
        /// task whose instant has passed and arm the kernel for the next.
        fn tend(&mut self) {
            loop {
                let Some((_, k)) = self.head() else { return };
                let Some(waker) = self.entries[k].waker.clone() else {
                    return;
                };
                let Some(fd) = &self.fd else { return };
                let mut ready = match fd.poll_read_ready(&mut Context::from_waker(&waker)) {
                    Poll::Pending => return,
                    Poll::Ready(Ok(ready)) => ready,
                    Poll::Ready(Err(_)) => return self.give_up(),
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
                // The timer is one-shot and re-armed only here, so the
                // readiness can be cleared after a read, successful or
                // not (EAGAIN: a stale readiness; watch again).
                ready.clear_ready();
                if n != 8 {
                    continue;
                }
                let now = Instant::now();
                if self.kernel.is_some_and(|at| now < at) {
                    // The kernel's clock passed the instant and the
                    // engine's did not: it is tokio's paused test clock,
                    // which only moves when every task waits. A timer on
                    // real time would keep waking tasks and stop that
                    // clock from moving, so it is turned off for good.
                    return self.give_up();
                }
                self.kernel = None;
                while let Some((at, k)) = self.head() {
                    if at > now {
                        self.set_kernel(at);
                        break;
                    }
                    self.heap.pop();
                    let e = &mut self.entries[k];
                    e.queued = None;
                    if let Some(w) = e.waker.take() {
                        w.wake();
                    }
                }
            }
        }

        /// No more timerfd on this thread: every waiting task is woken,
        /// and its tokio sleep does the waking from now on.
        fn give_up(&mut self) {
            self.broken = true;
            self.fd = None;
            self.kernel = None;
            self.heap.clear();
            for e in &mut self.entries {
                if let Some(w) = e.waker.take() {
                    w.wake();
                }
            }
        }
    }

    /// This thread's shared timer, if it has one that works.
    fn with<R>(f: impl FnOnce(&mut Shared) -> R) -> Option<R> {
        SHARED
            .try_with(|c| {
                let mut c = c.borrow_mut();
                let s = c.as_mut()?;
                (!s.broken).then(|| f(s))
            })
            .ok()
            .flatten()
    }

    /// A slot in this thread's shared timer (made on first use); `None`
    /// where no timerfd can be made.
    fn join() -> Option<usize> {
        SHARED
            .try_with(|c| {
                let mut c = c.borrow_mut();
                if c.as_ref().is_some_and(|s| s.broken && s.users == 0) {
                    // A fresh try once nobody uses the broken one.
                    *c = None;
                }
                let s = c.get_or_insert_with(Shared::new);
                if s.broken {
                    return None;
                }
                s.users += 1;
                Some(s.free.pop().unwrap_or_else(|| {
                    s.entries.push(Entry::default());
                    s.entries.len() - 1
                }))
            })
            .ok()
            .flatten()
    }

    /// Whether this thread has no shared timer now.
    #[cfg(test)]
    pub(super) fn shared_gone() -> bool {
        SHARED.with(|c| c.borrow().is_none())
    }

    /// One timer's part of its thread's timerfd.
    #[derive(Default)]
    pub(super) struct Fine {
        /// Its slot, and the thread whose timer holds it.
        slot: Option<(ThreadId, usize)>,
        /// The instant armed; `None` when disarmed or fired.
        armed: Option<Instant>,
        /// No timerfd could be had (no more tries).
        broken: bool,
    }

    impl Fine {
        pub(super) fn is_armed(&self) -> bool {
            self.armed.is_some()
        }

        pub(super) fn arm(&mut self, at: Instant) {
            if self.broken {
                return;
            }
            if self.slot.is_none() {
                match join() {
                    Some(k) => self.slot = Some((thread::current().id(), k)),
                    None => {
                        // Without a timerfd the caller's tokio sleep
                        // still fires, to the millisecond.
                        self.broken = true;
                        return;
                    }
                }
            }
            self.armed = Some(at);
        }

        /// Resolves when the armed instant has passed; pending forever
        /// when nothing is armed or there is no timerfd.
        pub(super) fn fired(&mut self) -> Fired<'_> {
            Fired { fine: self }
        }
    }

    /// Waiting for a [`Fine`]'s instant: while it is polled and not
    /// dropped, its task is among those the thread's timerfd wakes.
    pub(super) struct Fired<'a> {
        fine: &'a mut Fine,
    }

    impl std::future::Future for Fired<'_> {
        type Output = ();

        fn poll(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            let fine = &mut *self.get_mut().fine;
            let (Some(at), Some((_, k))) = (fine.armed, fine.slot) else {
                return Poll::Pending;
            };
            if Instant::now() < at {
                if with(|s| s.wait(k, at, cx.waker())).is_none() {
                    fine.broken = true;
                    return Poll::Pending;
                }
                if Instant::now() < at {
                    return Poll::Pending;
                }
            }
            fine.armed = None;
            Poll::Ready(())
        }
    }

    impl Drop for Fired<'_> {
        fn drop(&mut self) {
            if let Some((_, k)) = self.fine.slot {
                with(|s| s.leave(k));
            }
        }
    }

    impl Drop for Fine {
        fn drop(&mut self) {
            let Some((owner, k)) = self.slot else { return };
            if owner != thread::current().id() {
                // Never happens (a timer is used on one thread); its slot
                // is left rather than freeing another thread's.
                return;
            }
            let _ = SHARED.try_with(|c| {
                let mut c = c.borrow_mut();
                let Some(s) = c.as_mut() else { return };
                if let Some(e) = s.entries.get_mut(k) {
                    *e = Entry::default();
                    s.free.push(k);
                }
                s.users = s.users.saturating_sub(1);
                if s.users == 0 {
                    // The last timer: the timerfd goes with it, so it
                    // never outlives the runtime it is registered with.
                    *c = None;
                } else if !s.broken {
                    s.tend();
                }
            });
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

        pub(super) fn fired(&mut self) -> std::future::Pending<()> {
            std::future::pending()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Real time, not the paused clock: what the timerfd is for. A loose
    /// bound (a shared machine can be late by more than tens of us); the
    /// point is that it is well under tokio's millisecond. A timing test,
    /// run alone by scripts/test ([`many_timers_wake_on_time`]).
    #[tokio::test]
    #[ignore = "timing: run alone by scripts/test"]
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

    /// Timerfds this process holds now.
    #[cfg(target_os = "linux")]
    fn timerfds() -> usize {
        std::fs::read_dir("/proc/self/fd")
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().contains("timerfd"))
            })
            .count()
    }

    /// 2,000 timers on this thread, armed in an order unlike their
    /// instants (0, 7, 14, ... ms apart modulo 50 ms, a microsecond apart
    /// within): the timerfds held while all wait, each timer's lateness
    /// (`None`: it woke before its instant), and the timers.
    #[cfg(target_os = "linux")]
    async fn many_timers() -> (usize, Vec<Option<Duration>>, Vec<Timer>) {
        const N: u64 = 2_000;
        let start = Instant::now() + Duration::from_millis(20);
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..N {
            let at = start + Duration::from_micros((i * 7_000) % 50_000 + i);
            tasks.spawn(async move {
                let mut t = Timer::new();
                t.sleep_until(at).await;
                (Instant::now().checked_duration_since(at), t)
            });
        }
        tokio::time::sleep_until(start).await;
        // Every timer armed and waiting; other tests in this process may
        // hold a few timerfds of their own.
        let held = timerfds();
        let (mut lates, mut timers) = (Vec::new(), Vec::new());
        while let Some(r) = tasks.join_next().await {
            let (late, t) = r.unwrap();
            lates.push(late);
            timers.push(t);
        }
        (held, lates, timers)
    }

    /// Many timers on one thread wake each at or after its own instant, in
    /// whatever order they were armed, through one timerfd between them (a
    /// connection must not cost a file descriptor for its timer); and the
    /// timerfd goes when the last timer does. How late they wake is
    /// [`many_timers_wake_on_time`]'s, run alone.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn many_timers_share_one_timerfd() {
        let (held, lates, timers) = many_timers().await;
        assert!(held < 10, "{held} timerfds for {} timers", timers.len());
        let early = lates.iter().filter(|l| l.is_none()).count();
        assert_eq!(early, 0, "{early} timers woke before their instant");
        drop(timers);
        assert!(
            fine::shared_gone(),
            "the thread's timer outlived its last user"
        );
    }

    /// The same 2,000 timers wake well inside tokio's millisecond. A
    /// timing test: ignored in the suite's parallel run (a machine busy
    /// elsewhere, as the VoltDB cluster rejoining after the integration
    /// tests, delays any wake-up by milliseconds) and run alone by
    /// scripts/test, in release.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    #[ignore = "timing: run alone by scripts/test"]
    async fn many_timers_wake_on_time() {
        let (_, lates, _) = many_timers().await;
        let mut lates: Vec<Duration> = lates.into_iter().flatten().collect();
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
