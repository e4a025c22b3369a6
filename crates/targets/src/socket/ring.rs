//! io_uring for the hand-written sockets (`--io uring`, docs/explanations/io-uring.md).
//!
//! Each engine thread gets one ring when its workers start ([`start`], a
//! hook the binary gives the engine with `--io uring`). A socket on that thread then hands its sends and receives
//! to the ring instead of calling `send` and `recv` itself ([`Ringed`]):
//! the requests queue in the ring's submission queue, and the thread
//! submits them all, and collects every completion, in one
//! `io_uring_enter` each time it is about to sleep ([`park`], tokio's
//! park hook). So the system calls of a batch of connections are one, not
//! two per connection.
//!
//! A socket's receive is asked for once and stays armed (a multishot
//! receive): each time bytes arrive, the kernel copies them into a buffer
//! it takes from the ring's pool ([`Pool`]) and posts a completion. The
//! ring copies them into the socket's inbox and gives the buffer back at
//! once. So a reply costs one completion, not a request, a poll armed in
//! the kernel and a completion.
//!
//! The ring is set up with deferred task running: the kernel completes a
//! request only when this thread enters it, so no completion interrupts
//! the thread while it works. An eventfd registered with the ring, and
//! with the thread's tokio reactor, wakes the thread when completions
//! wait.
//!
//! A send's buffer belongs to the ring's slot, not to the socket, so a
//! socket that is dropped (or a `fill` that is cancelled) while the kernel
//! still holds a request leaves nothing the kernel could read after it is
//! freed: the slot lives until its last completion arrives.
//!
//! What the ring serves is what a worker thread runs; connecting and
//! logging in, and everything before and after the load, stay on tokio's
//! epoll reactor, and so does TLS.

#![allow(unsafe_code)]

use std::alloc::Layout;
use std::cell::RefCell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};

use bytes::BytesMut;
use io_uring::{cqueue, opcode, types, IoUring};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// Submission queue entries per ring; the completion queue is twice as
/// deep. A full queue is submitted at once.
const ENTRIES: u32 = 1024;
/// Entries queued past which a socket submits at once rather than waiting
/// for the thread to go idle.
const EAGER: u32 = 256;
/// The user data of a cancel request: its completion is not a slot's.
const CANCEL: u64 = u64::MAX;
/// `IORING_ENTER_GETEVENTS`: run the deferred completions.
const GETEVENTS: u32 = 1;
/// Receive buffers in a ring's pool (a power of two), and the bytes of
/// each: 2 MiB per engine thread, touched as used. A reply of up to 2 KiB
/// (a memcached value of 1 KiB, nginx's page with its headers) takes one
/// buffer; a larger one takes several, each its own completion. A kernel
/// since 6.13 runs at most about 20 deferred completions per enter (each
/// takes at most 32 buffers), older ones all of them: a pool run dry ends
/// the receives that find it so, and they are armed again. The unit
/// tests' pool is small enough for one turn to run it dry.
const BUFS: u16 = if cfg!(test) { 64 } else { 1024 };
const BUF: usize = 2048;
/// The pool's buffer group id (one pool per ring).
const GROUP: u16 = 0;
/// Bytes received and not yet read past which a socket's receive is
/// cancelled until they are read: the kernel's socket buffer, not this
/// process, holds what a slow reader has not taken.
const INBOX_MAX: usize = 1 << 20;
/// Turns of 10 ms that [`stop`] waits, at most, for the cancelled
/// receives to end.
const DISARM_TURNS: u32 = 100;

/// Ring ids, so a socket knows whether the ring of the thread it is on is
/// the one holding its slots.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static RING: RefCell<Option<Ring>> = const { RefCell::new(None) };
}

/// Check that the kernel lets this process make a ring of the kind used
/// here, buffer pool included: what `--io uring` asks of it, checked by
/// the binary before anything connects.
pub fn check() -> io::Result<()> {
    let uring = build()?;
    let pool = Pool::new(&uring)?;
    // The ring first: the kernel lets go of the pool as it closes.
    drop(uring);
    drop(pool);
    Ok(())
}

/// As an engine thread's workers start: give the thread its ring, made
/// once, and let its sockets onto it (those of a target opened with
/// [`crate::IoMode::Uring`]). A thread that cannot have one keeps its
/// sockets on epoll.
pub fn start() {
    RING.with(|r| {
        let Ok(mut r) = r.try_borrow_mut() else {
            return;
        };
        if r.is_none() {
            *r = Ring::new().ok();
        }
        if let Some(r) = r.as_mut() {
            r.active = true;
        }
    });
}

/// As an engine thread's workers end: no socket moves onto the ring until
/// the next start (connections opened between two phases of a run, on
/// this thread for another, stay on epoll), and every armed receive is
/// cancelled, so the sockets on it go back to epoll at their next wait.
/// The ring goes on completing what is in flight.
pub fn stop() {
    with_own(|r| {
        r.active = false;
        r.disarm();
    });
}

/// As the thread is about to sleep: submit what is queued and collect what
/// completed, waking the sockets it completes.
pub fn park() {
    with_own(Ring::turn);
}

/// The id of this thread's ring while its workers run.
pub(super) fn here() -> Option<u64> {
    with_own(|r| r.active.then_some(r.id)).flatten()
}

fn build() -> io::Result<IoUring> {
    IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_taskrun_flag()
        .setup_cqsize(2 * ENTRIES)
        .build(ENTRIES)
}

/// An fd the reactor watches only so that the thread wakes when the ring
/// has completions to run.
struct Bell(OwnedFd);

impl AsRawFd for Bell {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// The receive buffers a ring's multishot receives draw from: a ring of
/// [`BUFS`] entries shared with the kernel (a provided-buffer ring), each
/// naming one buffer of [`BUF`] bytes. The kernel takes an entry for each
/// completion it posts with bytes; [`Pool::give`] puts the buffer back and
/// [`Pool::publish`] shows the kernel what was put back.
struct Pool {
    /// [`BUFS`] entries, page aligned, read by the kernel.
    entries: NonNull<types::BufRingEntry>,
    /// [`BUFS`] buffers of [`BUF`] bytes, written by the kernel.
    bufs: NonNull<u8>,
    /// The tail the kernel sees at the next publish.
    tail: u16,
    /// Left allocated when the pool drops: the kernel may still write.
    leak: bool,
}

impl Pool {
    fn entries_layout() -> Layout {
        Layout::from_size_align(
            usize::from(BUFS) * std::mem::size_of::<types::BufRingEntry>(),
            4096,
        )
        .unwrap_or_else(|_| Layout::new::<types::BufRingEntry>())
    }

    fn bufs_layout() -> Layout {
        Layout::from_size_align(usize::from(BUFS) * BUF, 4096)
            .unwrap_or_else(|_| Layout::new::<u8>())
    }

    /// Allocated, every buffer given, registered with `uring`.
    fn new(uring: &IoUring) -> io::Result<Pool> {
        // SAFETY: both layouts have a non-zero size.
        let (entries, bufs) = unsafe {
            (
                std::alloc::alloc_zeroed(Self::entries_layout()),
                std::alloc::alloc(Self::bufs_layout()),
            )
        };
        let (Some(entries), Some(bufs)) = (NonNull::new(entries.cast()), NonNull::new(bufs)) else {
            return Err(io::ErrorKind::OutOfMemory.into());
        };
        let mut pool = Pool {
            entries,
            bufs,
            tail: 0,
            leak: false,
        };
        for bid in 0..BUFS {
            pool.give(bid);
        }
        pool.publish();
        // SAFETY: the entries stay allocated, at this address, until the
        // ring is closed (the pool is dropped after the ring, or leaked).
        unsafe {
            uring.submitter().register_buf_ring_with_flags(
                pool.entries.as_ptr() as u64,
                BUFS,
                GROUP,
                0,
            )
        }?;
        Ok(pool)
    }

    /// The first `n` bytes of buffer `bid`, which a completion just handed
    /// over: the kernel does not write it again until it is given back.
    fn bytes(&self, bid: u16, n: usize) -> &[u8] {
        if bid >= BUFS {
            return &[];
        }
        // SAFETY: `bid` names one of the BUFS buffers of BUF bytes, and
        // the kernel holds no request that may write into it.
        unsafe {
            std::slice::from_raw_parts(self.bufs.as_ptr().add(usize::from(bid) * BUF), n.min(BUF))
        }
    }

    /// Put buffer `bid` back at the tail (seen by the kernel at the next
    /// [`Pool::publish`]).
    fn give(&mut self, bid: u16) {
        if bid >= BUFS {
            return;
        }
        let at = usize::from(self.tail & (BUFS - 1));
        // SAFETY: `at` is below BUFS; the kernel reads an entry only
        // between the head and the published tail, and this one lies past
        // the published tail.
        unsafe {
            let e = &mut *self.entries.as_ptr().add(at);
            e.set_addr(self.bufs.as_ptr().add(usize::from(bid) * BUF) as u64);
            e.set_len(BUF as u32);
            e.set_bid(bid);
        }
        self.tail = self.tail.wrapping_add(1);
    }

    /// Let the kernel see every buffer given back.
    fn publish(&self) {
        // SAFETY: the tail is a u16 inside the first entry, which lives as
        // long as the pool; the kernel reads it, so it is stored atomically
        // and after the entries it covers.
        unsafe {
            let tail = types::BufRingEntry::tail(self.entries.as_ptr()).cast_mut();
            AtomicU16::from_ptr(tail).store(self.tail, Ordering::Release);
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if self.leak {
            return;
        }
        // SAFETY: allocated in `Pool::new` with these layouts; the ring is
        // closed (it drops before the pool) and held no request.
        unsafe {
            std::alloc::dealloc(self.entries.as_ptr().cast(), Self::entries_layout());
            std::alloc::dealloc(self.bufs.as_ptr(), Self::bufs_layout());
        }
    }
}

struct Ring {
    /// Dropped before the pool: the kernel lets go of the pool first.
    uring: IoUring,
    pool: Pool,
    /// Registered with this thread's reactor; never read: its wake-ups
    /// end the reactor's sleep, and the park hook does the rest.
    _bell: AsyncFd<Bell>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Entries pushed and not yet submitted.
    queued: u32,
    /// Receives to arm again, and to cancel, once the completions in hand
    /// are handled.
    rearm: Vec<u32>,
    cancel: Vec<u32>,
    /// Within [`Ring::reap`]: a push that fills the queue submits, it
    /// does not reap again.
    reaping: bool,
    id: u64,
    /// Between [`start`] and [`stop`].
    active: bool,
    /// Receives armed again after they ended (a test checks that the pool
    /// ran dry and every byte still came).
    #[cfg(test)]
    rearmed: u64,
}

#[derive(Default)]
struct Slot {
    state: State,
    /// A send's: the bytes of the request in flight. A receive's: the
    /// bytes received and not yet read (its inbox).
    buf: Vec<u8>,
    /// How many bytes of a send's `buf` the request covers.
    len: usize,
    /// A send's result, or how a receive ended (0: the peer closed).
    result: i32,
    waker: Option<Waker>,
    /// A receive's slot, and its descriptor, to arm it again.
    recv: bool,
    fd: RawFd,
    /// A receive whose cancel was asked: its end is not an error.
    cancelling: bool,
}

#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// Not anyone's.
    #[default]
    Free,
    /// A socket's, with no request in the kernel.
    Idle,
    /// A request is queued or in the kernel (a receive: armed).
    Flight,
    /// The request completed with `result` (a receive: ended).
    Done,
    /// The socket is gone; the slot is freed when its request ends.
    Orphan,
}

/// Keep `cx`'s waker in `held`, cloning it only when it is another.
fn hold(held: &mut Option<Waker>, cx: &Context<'_>) {
    match held {
        Some(w) if w.will_wake(cx.waker()) => {}
        _ => *held = Some(cx.waker().clone()),
    }
}

impl Ring {
    fn new() -> io::Result<Ring> {
        let uring = build()?;
        let pool = Pool::new(&uring)?;
        // SAFETY: eventfd takes no pointers; a negative result is an error.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let bell = Bell(unsafe { OwnedFd::from_raw_fd(fd) });
        uring.submitter().register_eventfd(bell.as_raw_fd())?;
        // SAFETY: the eventfd is owned by `bell`, which the `AsyncFd` owns
        // for its whole life.
        let bell = unsafe { AsyncFd::register_with_interest(bell, Interest::READABLE) }
            .map_err(|e| io::Error::other(e.to_string()))?;
        Ok(Ring {
            uring,
            pool,
            _bell: bell,
            slots: Vec::new(),
            free: Vec::new(),
            queued: 0,
            rearm: Vec::new(),
            cancel: Vec::new(),
            reaping: false,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            active: false,
            #[cfg(test)]
            rearmed: 0,
        })
    }

    fn take_slot(&mut self) -> u32 {
        let k = match self.free.pop() {
            Some(k) => k,
            None => {
                self.slots.push(Slot::default());
                (self.slots.len() - 1) as u32
            }
        };
        if let Some(s) = self.slots.get_mut(k as usize) {
            *s = Slot {
                state: State::Idle,
                ..Slot::default()
            };
        }
        k
    }

    fn slot(&mut self, k: u32) -> Option<&mut Slot> {
        self.slots.get_mut(k as usize)
    }

    /// Queue slot `k`'s request `entry`. The slot is in flight before the
    /// push, which may turn the ring and complete it; idle again if the
    /// entry could not be queued.
    fn request(&mut self, k: u32, entry: &io_uring::squeue::Entry) -> io::Result<()> {
        if let Some(s) = self.slot(k) {
            s.state = State::Flight;
        }
        self.push(entry).inspect_err(|_| {
            if let Some(s) = self.slot(k) {
                s.state = State::Idle;
            }
        })
    }

    /// Arm receive slot `k`: a multishot receive on its descriptor.
    fn arm(&mut self, k: u32) -> io::Result<()> {
        let Some(s) = self.slot(k) else {
            return Err(io::Error::other("a receive slot is gone"));
        };
        let entry = opcode::RecvMulti::new(types::Fd(s.fd), GROUP)
            .build()
            .user_data(u64::from(k));
        self.request(k, &entry)
    }

    /// Queue `entry`; a full queue is submitted (and, outside a reap, its
    /// completions collected) first.
    fn push(&mut self, entry: &io_uring::squeue::Entry) -> io::Result<()> {
        for _ in 0..4 {
            // SAFETY: every buffer an entry points to is a slot's or the
            // pool's, and neither is moved nor freed while a request
            // using it is in flight (`State::Flight`, `State::Orphan`).
            if unsafe { self.uring.submission().push(entry) }.is_ok() {
                self.queued += 1;
                if self.queued >= EAGER {
                    self.turn();
                }
                return Ok(());
            }
            self.turn();
        }
        Err(io::Error::other("the io_uring submission queue stays full"))
    }

    /// One `io_uring_enter`: submit what is queued and run the completions
    /// the kernel deferred, waiting for one at most `wait` when given.
    fn submit(&mut self, wait: Option<std::time::Duration>) -> io::Result<()> {
        let n = self.uring.submission().len() as u32;
        let r = match wait {
            // SAFETY: no argument is passed; the ring is this thread's.
            None => unsafe {
                self.uring
                    .submitter()
                    .enter::<libc::sigset_t>(n, 0, GETEVENTS, None)
            },
            Some(wait) => {
                let ts = types::Timespec::from(wait);
                let args = types::SubmitArgs::new().timespec(&ts);
                self.uring.submitter().submit_with_args(1, &args)
            }
        };
        // What the kernel did not take stays queued for the next turn.
        self.queued = self.uring.submission().len() as u32;
        match r {
            Ok(_) => Ok(()),
            // Interrupted, the completion queue is full, or the wait ran
            // out: the entries not taken stay queued for the next turn.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EINTR | libc::EBUSY | libc::ETIME)
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Submit (when something is queued or the kernel has completions to
    /// run) and hand every completion to its slot.
    fn turn(&mut self) {
        if self.reaping {
            let _ = self.submit(None);
            return;
        }
        let pending = self.queued > 0 || self.uring.submission().taskrun();
        if pending {
            // An error here (none is expected) leaves the entries queued
            // for the next turn.
            let _ = self.submit(None);
        }
        self.reap();
    }

    /// Hand every completion to its slot: a send's result, a receive's
    /// bytes (into its inbox, the buffer given back), a receive's end. Then
    /// arm again the receives that ended for want of a buffer or with
    /// bytes, and cancel those whose inbox is full.
    fn reap(&mut self) {
        self.reaping = true;
        let mut given = false;
        for cqe in self.uring.completion() {
            let (data, result, flags) = (cqe.user_data(), cqe.result(), cqe.flags());
            let bid = cqueue::buffer_select(flags);
            let more = cqueue::more(flags);
            let bytes = bid.map(|b| self.pool.bytes(b, usize::try_from(result).unwrap_or(0)));
            let s = (data != CANCEL)
                .then(|| self.slots.get_mut(data as usize))
                .flatten();
            match s {
                Some(s) if s.state == State::Flight && s.recv => {
                    if let Some(b) = bytes {
                        s.buf.extend_from_slice(b);
                    }
                    if !more {
                        let again = result > 0 || result == -libc::ENOBUFS;
                        if s.cancelling {
                            s.cancelling = false;
                            s.state = State::Idle;
                        } else if again {
                            self.rearm.push(data as u32);
                        } else {
                            s.state = State::Done;
                            s.result = result;
                        }
                    } else if s.buf.len() > INBOX_MAX && !s.cancelling {
                        s.cancelling = true;
                        self.cancel.push(data as u32);
                    }
                    if let Some(w) = &s.waker {
                        w.wake_by_ref();
                    }
                }
                Some(s) if s.state == State::Flight => {
                    s.state = State::Done;
                    s.result = result;
                    if let Some(w) = &s.waker {
                        w.wake_by_ref();
                    }
                }
                Some(s) if s.state == State::Orphan && !more => {
                    *s = Slot::default();
                    self.free.push(data as u32);
                }
                _ => {}
            }
            if let Some(b) = bid {
                self.pool.give(b);
                given = true;
            }
        }
        if given {
            self.pool.publish();
        }
        #[cfg(test)]
        {
            self.rearmed += self.rearm.len() as u64;
        }
        for k in std::mem::take(&mut self.rearm) {
            // A receive that cannot be armed again ends as a closed one.
            if self.arm(k).is_err() {
                if let Some(s) = self.slot(k) {
                    s.state = State::Done;
                    s.result = -libc::EIO;
                }
            }
        }
        for k in std::mem::take(&mut self.cancel) {
            let entry = opcode::AsyncCancel::new(u64::from(k))
                .build()
                .user_data(CANCEL);
            let _ = self.push(&entry);
        }
        self.reaping = false;
    }

    /// Cancel every armed receive and wait, a second at most, until they
    /// have ended: after [`stop`], a socket leaves the ring at its next
    /// wait with what it received read first.
    fn disarm(&mut self) {
        let armed = |s: &Slot| s.recv && s.state == State::Flight;
        let mut asked = false;
        for k in 0..self.slots.len() as u32 {
            let Some(s) = self.slot(k) else { continue };
            if !armed(s) || s.cancelling {
                continue;
            }
            s.cancelling = true;
            let entry = opcode::AsyncCancel::new(u64::from(k))
                .build()
                .user_data(CANCEL);
            asked |= self.push(&entry).is_ok();
        }
        for _ in 0..DISARM_TURNS {
            if !asked || !self.slots.iter().any(armed) {
                return;
            }
            let _ = self.submit(Some(std::time::Duration::from_millis(10)));
            self.reap();
        }
    }
}

impl Drop for Ring {
    /// A ring is dropped as its thread ends. Requests still in the kernel
    /// then point into slots' buffers and the pool: those are left
    /// allocated rather than freed under the kernel, which cancels them as
    /// the ring closes.
    fn drop(&mut self) {
        let flying = self
            .slots
            .iter()
            .any(|s| matches!(s.state, State::Flight | State::Orphan));
        if flying {
            std::mem::forget(std::mem::take(&mut self.slots));
            self.pool.leak = true;
        }
    }
}

/// With this thread's ring: `f`, or `None` when the thread has none.
fn with_own<T>(f: impl FnOnce(&mut Ring) -> T) -> Option<T> {
    RING.with(|r| r.try_borrow_mut().ok()?.as_mut().map(f))
}

/// With this thread's ring: `f`, or `None` when the thread has no ring or
/// not the one `id` names.
fn with_ring<T>(id: u64, f: impl FnOnce(&mut Ring) -> T) -> Option<T> {
    with_own(|ring| (ring.id == id).then(|| f(ring))).flatten()
}

/// A connection served by its thread's ring: the descriptor, and the two
/// slots its send and its receive go through.
pub(super) struct Ringed {
    /// Taken out only by [`Ringed::into_tokio`].
    stream: Option<std::net::TcpStream>,
    ring: u64,
    send: u32,
    recv: u32,
}

impl Ringed {
    /// Take `stream` off tokio's reactor and onto this thread's ring.
    pub(super) fn new(stream: tokio::net::TcpStream, ring: u64) -> io::Result<Ringed> {
        let stream = stream.into_std()?;
        let fd = stream.as_raw_fd();
        let (send, recv) = with_ring(ring, |r| {
            let (send, recv) = (r.take_slot(), r.take_slot());
            if let Some(s) = r.slot(recv) {
                s.recv = true;
                s.fd = fd;
            }
            (send, recv)
        })
        .ok_or_else(|| io::Error::other("this thread's ring is gone"))?;
        Ok(Ringed {
            stream: Some(stream),
            ring,
            send,
            recv,
        })
    }

    /// The ring holding this socket's slots.
    pub(super) fn ring(&self) -> u64 {
        self.ring
    }

    /// Whether a request of this socket is still in the kernel, or bytes
    /// it received wait to be read.
    pub(super) fn busy(&self) -> bool {
        with_ring(self.ring, |r| {
            [self.send, self.recv].iter().any(|&k| {
                r.slot(k).is_some_and(|s| {
                    matches!(s.state, State::Flight | State::Done) || (s.recv && !s.buf.is_empty())
                })
            })
        })
        .unwrap_or(true)
    }

    /// Back on tokio's reactor (of the runtime this is called in), when no
    /// request is in flight.
    pub(super) fn into_tokio(mut self) -> io::Result<tokio::net::TcpStream> {
        let stream = self
            .stream
            .take()
            .ok_or_else(|| io::Error::other("a socket moved twice"))?;
        // Its slots go back to the ring as `self` drops.
        tokio::net::TcpStream::from_std(stream)
    }

    fn fd(&self) -> RawFd {
        self.stream.as_ref().map_or(-1, AsRawFd::as_raw_fd)
    }

    /// Hand `wbuf` to the ring when no send is in flight: the bytes of a
    /// send that completed since. Bytes a send left are sent again before
    /// anything newer. `None` off the thread of this socket's ring.
    pub(super) fn flush(&mut self, wbuf: &mut BytesMut) -> Option<io::Result<usize>> {
        let fd = self.fd();
        let k = self.send;
        with_ring(self.ring, |r| {
            let mut sent = 0;
            let Some(s) = r.slot(k) else {
                return Err(io::Error::other("a send slot is gone"));
            };
            if s.state == State::Flight {
                return Ok(sent);
            }
            if s.state == State::Done {
                let result = s.result;
                s.state = State::Idle;
                if result < 0 {
                    s.len = 0;
                    return Err(io::Error::from_raw_os_error(-result));
                }
                if result == 0 && s.len > 0 {
                    return Err(io::ErrorKind::WriteZero.into());
                }
                let n = (result as usize).min(s.len);
                sent = n;
                s.buf.drain(..n);
                s.len -= n;
            }
            if s.len == 0 {
                if wbuf.is_empty() {
                    return Ok(sent);
                }
                s.buf.clear();
                s.buf.extend_from_slice(wbuf);
                s.len = s.buf.len();
                wbuf.clear();
            }
            let entry = opcode::Send::new(types::Fd(fd), s.buf.as_ptr(), s.len as u32)
                .flags(libc::MSG_NOSIGNAL)
                .build()
                .user_data(u64::from(k));
            r.request(k, &entry)?;
            Ok(sent)
        })
    }

    /// Write `wbuf` now, without the ring (off the ring's thread): what the
    /// socket takes, `sent` told each write's bytes.
    pub(super) fn write_now(
        &mut self,
        wbuf: &mut BytesMut,
        sent: impl FnMut(usize),
    ) -> io::Result<()> {
        use std::io::Write;
        let Some(stream) = self.stream.as_mut() else {
            return Err(io::ErrorKind::NotConnected.into());
        };
        super::write_out(wbuf, |b| stream.write(b), sent)
    }

    /// Whether bytes wait to be sent (queued in the slot or in flight).
    pub(super) fn sending(&self) -> bool {
        with_ring(self.ring, |r| r.slot(self.send).is_some_and(|s| s.len > 0)).unwrap_or(false)
    }

    /// Receive into `rbuf`: ready with the count of what the socket's
    /// inbox held (`room`, the read step, sizes the inbox kept after a
    /// burst), or with 0 once the peer closed; pending, with this task
    /// woken when bytes arrive or the send in flight completes, after
    /// arming the receive if it is not.
    pub(super) fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        rbuf: &mut BytesMut,
        room: usize,
    ) -> Poll<io::Result<usize>> {
        let (ks, kr) = (self.send, self.recv);
        with_ring(self.ring, |r| {
            let Some(s) = r.slot(kr) else {
                return Poll::Ready(Err(io::Error::other("a receive slot is gone")));
            };
            if !s.buf.is_empty() {
                let n = s.buf.len();
                rbuf.extend_from_slice(&s.buf);
                s.buf.clear();
                if s.buf.capacity() > 4 * room.max(BUF) {
                    s.buf = Vec::new();
                }
                return Poll::Ready(Ok(n));
            }
            match s.state {
                State::Done => {
                    s.state = State::Idle;
                    let result = s.result;
                    if result < 0 {
                        return Poll::Ready(Err(io::Error::from_raw_os_error(-result)));
                    }
                    return Poll::Ready(Ok(0));
                }
                State::Idle => {
                    hold(&mut s.waker, cx);
                    if let Err(e) = r.arm(kr) {
                        return Poll::Ready(Err(e));
                    }
                }
                _ => hold(&mut s.waker, cx),
            }
            // The push may have turned the ring and brought bytes.
            if r.slot(kr)
                .is_some_and(|s| !s.buf.is_empty() || s.state == State::Done)
            {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            if let Some(s) = r.slot(ks) {
                match s.state {
                    State::Flight => hold(&mut s.waker, cx),
                    // A send completed: the caller flushes again.
                    State::Done => cx.waker().wake_by_ref(),
                    _ => {}
                }
            }
            Poll::Pending
        })
        .unwrap_or_else(|| Poll::Ready(Err(io::Error::other("this socket's ring is gone"))))
    }

    /// Pending until the send in flight completes.
    pub(super) fn poll_sent(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let k = self.send;
        with_ring(self.ring, |r| match r.slot(k) {
            Some(s) if s.state == State::Flight => {
                hold(&mut s.waker, cx);
                Poll::Pending
            }
            _ => Poll::Ready(()),
        })
        .unwrap_or(Poll::Ready(()))
    }
}

impl Drop for Ringed {
    /// Give the slots back; an armed receive is cancelled, a send is let
    /// finish (a goodbye a client wrote as it closes still goes out). The
    /// descriptor closes now; the kernel holds the socket until the last
    /// request on it completes.
    fn drop(&mut self) {
        let (ks, kr) = (self.send, self.recv);
        with_ring(self.ring, |r| {
            let mut flying = false;
            for k in [ks, kr] {
                let Some(s) = r.slot(k) else { continue };
                s.waker = None;
                if s.state == State::Flight {
                    flying = true;
                    s.state = State::Orphan;
                    if k == kr {
                        s.buf = Vec::new();
                        let cancel = opcode::AsyncCancel::new(u64::from(k))
                            .build()
                            .user_data(CANCEL);
                        let _ = r.push(&cancel);
                    }
                } else {
                    *s = Slot::default();
                    r.free.push(k);
                }
            }
            // Entries still queued name the descriptor by number: they
            // go to the kernel before it closes, so none can reach a
            // socket opened later under the same number.
            if flying {
                let _ = r.submit(None);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::{Read, Write};
    use std::time::Duration;

    use super::super::Socket;
    use super::*;

    /// An echo server for `n` connections, one thread each.
    fn echo(n: usize) -> u16 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for c in listener.incoming().take(n) {
                let mut c = c.unwrap();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    while let Ok(k) = c.read(&mut buf) {
                        if k == 0 || c.write_all(&buf[..k]).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        port
    }

    /// A current-thread runtime whose park turns its thread's ring, on a
    /// kernel that gives rings.
    fn ring_runtime() -> tokio::runtime::Runtime {
        check().unwrap();
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .on_thread_park(park)
            .build()
            .unwrap()
    }

    /// What a target opened with `--io uring` and a 5 s limit connects with.
    fn on_uring() -> std::sync::Arc<crate::settings::Connector> {
        crate::settings::Connector::new(&crate::ClientSettings {
            io: crate::IoMode::Uring,
            handshake_limit: Duration::from_secs(5),
            ..crate::ClientSettings::default()
        })
    }

    fn on_ring(sock: &Socket) -> bool {
        matches!(sock.io, super::super::Io::Ring(_))
    }

    /// A socket moves onto the ring at its first wait while the thread's
    /// workers run, and its bytes go and come back through it. One
    /// dropped with its goodbye still queued hands back slots that hold
    /// nothing of it: the next socket's first request is its own (a
    /// reused send slot once kept the old length and sent from a freed
    /// buffer: EFAULT). After `stop`, a socket returns to epoll.
    #[test]
    fn sockets_on_the_ring_echo_and_give_back_clean_slots() {
        let rt = ring_runtime();
        let port = echo(3);
        rt.block_on(async {
            let via = on_uring();
            let open = || Socket::connect(&via, "127.0.0.1", port, 4096);
            let mut before = open().await.unwrap();
            start();
            let mut a = open().await.unwrap();
            a.wbuf.extend_from_slice(b"hello");
            a.fill().await.unwrap();
            assert!(on_ring(&a));
            assert_eq!(&a.rbuf[..], b"hello");
            a.wbuf.extend_from_slice(b"bye");
            a.flush().unwrap();
            drop(a);
            let mut b = open().await.unwrap();
            b.wbuf.extend_from_slice(b"second");
            while b.rbuf.len() < 6 {
                b.fill().await.unwrap();
            }
            assert_eq!(&b.rbuf[..], b"second");
            assert_eq!(b.take_bytes(), (6, 6));
            stop();
            before.wbuf.extend_from_slice(b"after");
            before.fill().await.unwrap();
            assert!(!on_ring(&before));
            assert_eq!(&before.rbuf[..], b"after");
            b.wbuf.extend_from_slice(b"back");
            b.rbuf.clear();
            b.fill().await.unwrap();
            assert!(!on_ring(&b), "a socket stayed on a stopped ring");
            assert_eq!(&b.rbuf[..], b"back");
        });
    }

    /// A server that writes `sizes[i]` bytes of [`pattern`] to its `i`th
    /// connection, then closes it.
    fn flood(sizes: Vec<usize>) -> u16 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for (c, size) in listener.incoming().zip(sizes) {
                let mut c = c.unwrap();
                std::thread::spawn(move || {
                    let bytes: Vec<u8> = (0..size).map(pattern).collect();
                    let _ = c.write_all(&bytes);
                });
            }
        });
        port
    }

    fn pattern(i: usize) -> u8 {
        (i % 251) as u8
    }

    /// Read `sock` to its end: how many bytes came, each checked.
    async fn drain(sock: &mut Socket, mut at: usize) -> usize {
        loop {
            match sock.fill().await {
                Ok(()) => {
                    for &b in &sock.rbuf[..] {
                        assert_eq!(b, pattern(at), "byte {at} out of order");
                        at += 1;
                    }
                    sock.rbuf.clear();
                }
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return at,
                Err(e) => panic!("{e}"),
            }
        }
    }

    /// 80 connections whose floods all wait at one turn take more
    /// buffers than the pool holds: their receives end for want of one
    /// and are armed again, and every byte comes in order. A connection left unread
    /// meanwhile has its receive cancelled once its inbox passes
    /// `INBOX_MAX` (the kernel's socket buffer holds the rest), and read
    /// afterwards it gives every byte too.
    #[test]
    fn floods_run_the_pool_dry_and_fill_no_inbox_past_its_bound() {
        let rt = ring_runtime();
        const MANY: usize = 80;
        const EACH: usize = 256 << 10;
        const SLOW: usize = 8 << 20;
        let mut sizes = vec![SLOW];
        sizes.extend(std::iter::repeat_n(EACH, MANY));
        let port = flood(sizes);
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            let via = on_uring();
            let open = || Socket::connect(&via, "127.0.0.1", port, 4096);
            start();
            let mut slow = open().await.unwrap();
            slow.fill().await.unwrap();
            let first = slow.rbuf.len();
            assert!((0..first).all(|i| slow.rbuf[i] == pattern(i)));
            slow.rbuf.clear();
            let mut many = Vec::new();
            for _ in 0..MANY {
                let mut s = open().await.unwrap();
                many.push(tokio::task::spawn_local(
                    async move { drain(&mut s, 0).await },
                ));
            }
            // Every receive armed, then the thread kept busy while all
            // the floods arrive: the next turn finds them all at once.
            tokio::time::sleep(Duration::from_millis(20)).await;
            std::thread::sleep(Duration::from_millis(300));
            for t in many {
                assert_eq!(t.await.unwrap(), EACH);
            }
            let super::super::Io::Ring(r) = &slow.io else {
                panic!("the slow socket left the ring")
            };
            let held = with_own(|ring| ring.slots[r.recv as usize].buf.len()).unwrap();
            assert!(
                held <= INBOX_MAX + (512 << 10),
                "an unread socket's inbox holds {held} bytes"
            );
            assert_eq!(drain(&mut slow, first).await, SLOW);
            let rearmed = with_own(|ring| ring.rearmed).unwrap();
            assert!(rearmed > 0, "no receive ended for want of a buffer");
            stop();
        });
    }
}
