//! io_uring for the hand-written sockets (`--io uring`, docs/io-uring.md).
//!
//! Each engine thread gets one ring when its workers start
//! ([`start`]). A socket on that thread then hands its sends and receives
//! to the ring instead of calling `send` and `recv` itself ([`Ringed`]):
//! the requests queue in the ring's submission queue, and the thread
//! submits them all, and collects every completion, in one
//! `io_uring_enter` each time it is about to sleep ([`park`], tokio's
//! park hook). So the system calls of a batch of connections are one, not
//! two per connection.
//!
//! The ring is set up with deferred task running: the kernel completes a
//! request only when this thread enters it, so no completion interrupts
//! the thread while it works. An eventfd registered with the ring, and
//! with the thread's tokio reactor, wakes the thread when completions
//! wait.
//!
//! A request's buffer belongs to the ring's slot, not to the socket, so a
//! socket that is dropped (or a `fill` that is cancelled) while the kernel
//! still holds a request leaves nothing the kernel could write into after
//! it is freed: the slot lives until its completion arrives.
//!
//! What the ring serves is what a worker thread runs; connecting and
//! logging in, and everything before and after the load, stay on tokio's
//! epoll reactor, and so does TLS.

#![allow(unsafe_code)]

use std::cell::RefCell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};

use bytes::BytesMut;
use io_uring::{opcode, types, IoUring};
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

/// Whether this process serves its sockets through io_uring.
static ON: AtomicBool = AtomicBool::new(false);
/// Ring ids, so a socket knows whether the ring of the thread it is on is
/// the one holding its slots.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static RING: RefCell<Option<Ring>> = const { RefCell::new(None) };
}

/// Serve this process's sockets through io_uring, after checking that the
/// kernel lets it make a ring of the kind used here. Set before the load
/// starts, by the binary.
pub fn enable() -> io::Result<()> {
    drop(build()?);
    ON.store(true, Ordering::Relaxed);
    Ok(())
}

/// Whether [`enable`] was called.
fn enabled() -> bool {
    ON.load(Ordering::Relaxed)
}

/// As an engine thread's workers start: give the thread its ring, made
/// once, and let its sockets onto it. A thread that cannot have one keeps
/// its sockets on epoll.
pub fn start() {
    if !enabled() {
        return;
    }
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
/// this thread for another, stay on epoll); those on it go back to epoll
/// at their next wait. The ring goes on completing what is in flight.
pub fn stop() {
    with_own(|r| r.active = false);
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

struct Ring {
    uring: IoUring,
    /// Registered with this thread's reactor; never read: its wake-ups
    /// end the reactor's sleep, and the park hook does the rest.
    _bell: AsyncFd<Bell>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Entries pushed and not yet submitted.
    queued: u32,
    id: u64,
    /// Between [`start`] and [`stop`].
    active: bool,
}

#[derive(Default)]
struct Slot {
    state: State,
    /// The bytes of the request in flight (a send's), or the room of a
    /// receive.
    buf: Vec<u8>,
    /// How many bytes of `buf` the request covers.
    len: usize,
    result: i32,
    waker: Option<Waker>,
}

#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// Not anyone's.
    #[default]
    Free,
    /// A socket's, with no request in the kernel.
    Idle,
    /// A request is queued or in the kernel.
    Flight,
    /// The request completed with `result`.
    Done,
    /// The socket is gone; the slot is freed when its request completes.
    Orphan,
}

impl Ring {
    fn new() -> io::Result<Ring> {
        let uring = build()?;
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
            _bell: bell,
            slots: Vec::new(),
            free: Vec::new(),
            queued: 0,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            active: false,
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

    /// Queue `entry`; a full queue is submitted, and its completions
    /// collected, first.
    fn push(&mut self, entry: &io_uring::squeue::Entry) -> io::Result<()> {
        for _ in 0..4 {
            // SAFETY: every buffer an entry points to is a slot's, and a
            // slot's buffer is neither moved nor freed while its request
            // is in flight (`State::Flight`, `State::Orphan`).
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
    /// the kernel deferred.
    fn submit(&mut self) -> io::Result<()> {
        let n = self.uring.submission().len() as u32;
        // SAFETY: no argument is passed; the ring is this thread's.
        let r = unsafe {
            self.uring
                .submitter()
                .enter::<libc::sigset_t>(n, 0, GETEVENTS, None)
        };
        // What the kernel did not take stays queued for the next turn.
        self.queued = self.uring.submission().len() as u32;
        match r {
            Ok(_) => Ok(()),
            // Interrupted, or the completion queue is full: the entries
            // not taken stay queued for the next turn.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EBUSY)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Submit (when something is queued or the kernel has completions to
    /// run) and hand every completion to its slot.
    fn turn(&mut self) {
        let pending = self.queued > 0 || self.uring.submission().taskrun();
        if pending {
            // An error here (none is expected) leaves the entries queued
            // for the next turn.
            let _ = self.submit();
        }
        for cqe in self.uring.completion() {
            let (data, result) = (cqe.user_data(), cqe.result());
            if data == CANCEL {
                continue;
            }
            let k = data as u32;
            let Some(s) = self.slots.get_mut(k as usize) else {
                continue;
            };
            match s.state {
                State::Flight => {
                    s.state = State::Done;
                    s.result = result;
                    if let Some(w) = s.waker.take() {
                        w.wake();
                    }
                }
                State::Orphan => {
                    *s = Slot::default();
                    self.free.push(k);
                }
                _ => {}
            }
        }
    }
}

impl Drop for Ring {
    /// A ring is dropped as its thread ends. Requests still in the kernel
    /// then point into slots' buffers: those are left allocated rather
    /// than freed under the kernel, which cancels them as the ring closes.
    fn drop(&mut self) {
        let flying = self
            .slots
            .iter()
            .any(|s| matches!(s.state, State::Flight | State::Orphan));
        if flying {
            std::mem::forget(std::mem::take(&mut self.slots));
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
        let (send, recv) = with_ring(ring, |r| (r.take_slot(), r.take_slot()))
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

    /// Whether a request of this socket is still in the kernel.
    pub(super) fn busy(&self) -> bool {
        with_ring(self.ring, |r| {
            [self.send, self.recv].iter().any(|&k| {
                r.slot(k)
                    .is_some_and(|s| matches!(s.state, State::Flight | State::Done))
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

    /// Receive into `rbuf` (at most `room` bytes): ready with the count, or
    /// pending with this task woken when the receive, or the send in
    /// flight, completes.
    pub(super) fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        rbuf: &mut BytesMut,
        room: usize,
    ) -> Poll<io::Result<usize>> {
        let fd = self.fd();
        let (ks, kr) = (self.send, self.recv);
        with_ring(self.ring, |r| {
            let Some(s) = r.slot(kr) else {
                return Poll::Ready(Err(io::Error::other("a receive slot is gone")));
            };
            match s.state {
                State::Done => {
                    s.state = State::Idle;
                    let result = s.result;
                    if result < 0 {
                        return Poll::Ready(Err(io::Error::from_raw_os_error(-result)));
                    }
                    let n = (result as usize).min(s.buf.len());
                    rbuf.extend_from_slice(s.buf.get(..n).unwrap_or_default());
                    return Poll::Ready(Ok(n));
                }
                State::Idle => {
                    if s.buf.len() < room || s.buf.capacity() > 4 * room {
                        s.buf = vec![0; room];
                    }
                    let room = s.buf.len();
                    let entry = opcode::Recv::new(types::Fd(fd), s.buf.as_mut_ptr(), room as u32)
                        .build()
                        .user_data(u64::from(kr));
                    s.waker = Some(cx.waker().clone());
                    if let Err(e) = r.request(kr, &entry) {
                        return Poll::Ready(Err(e));
                    }
                }
                _ => {
                    s.waker = Some(cx.waker().clone());
                }
            }
            // The push may have turned the ring and completed the receive.
            if r.slot(kr).is_some_and(|s| s.state == State::Done) {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            if let Some(s) = r.slot(ks) {
                match s.state {
                    State::Flight => s.waker = Some(cx.waker().clone()),
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
                s.waker = Some(cx.waker().clone());
                Poll::Pending
            }
            _ => Poll::Ready(()),
        })
        .unwrap_or(Poll::Ready(()))
    }
}

impl Drop for Ringed {
    /// Give the slots back; a receive in flight is cancelled, a send is let
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
                let _ = r.submit();
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
        enable().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .on_thread_park(park)
            .build()
            .unwrap();
        let port = echo(3);
        rt.block_on(async {
            let open = || Socket::connect("127.0.0.1", port, Duration::from_secs(5), 4096);
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
}
