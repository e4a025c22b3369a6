//! A TCP socket with its write and read buffers, shared by the
//! hand-written pipelined clients (VoltDB, Redis, memcached, NATS, MQTT,
//! HTTP), and the one byte stream over it ([`stream`]: all of them but
//! VoltDB). Requests are encoded
//! into `wbuf`; `fill` writes what is queued and waits until more bytes
//! are in `rbuf`. Only `try_*` calls touch the socket, after readiness, and
//! both buffers live here, so dropping `fill` (the engine serves a timer)
//! loses nothing. The buffers start at a few hundred bytes, grow with a burst
//! and shrink after it ([`fit`]), so thousands of mostly idle connections
//! hold little memory. A socket may speak TLS ([`Socket::start_tls`],
//! [`tls`]): its buffers stay plaintext. With `--io uring`, a plaintext
//! socket on an engine thread sends and receives through that thread's
//! io_uring ring ([`ring`]), the same buffers on either path.

use std::io;
use std::net::SocketAddr;
use std::task::{Context, Poll};

use bytes::{Buf, BytesMut};
use tokio::io::Interest;
use tokio::net::{TcpSocket, TcpStream};

use crate::settings::Connector;

mod fit;
use fit::Fit;
#[cfg(target_os = "linux")]
pub mod ring;
#[cfg(feature = "tls")]
mod tls;

#[cfg(feature = "stream")]
mod stream;
#[cfg(feature = "stream")]
pub(crate) use stream::op_error;
#[cfg(feature = "stream")]
pub use stream::{Dial, PlainDial, Stream};

pub struct Socket {
    io: Io,
    /// The TLS session, once [`Socket::start_tls`] shook hands.
    #[cfg(feature = "tls")]
    tls: tls::Tls,
    pub wbuf: BytesMut,
    pub rbuf: BytesMut,
    /// Buffer sizes that follow the connection's traffic.
    fit: Fit,
    sent: u64,
    received: u64,
    /// The most `rbuf` may hold (`--max-reply`).
    max_reply: usize,
    /// Whether the socket goes onto its engine thread's ring (`--io uring`).
    #[cfg(target_os = "linux")]
    uring: bool,
}

impl Socket {
    /// Connect within `via`'s handshake limit, Nagle off, from `via`'s
    /// next source address if any; the socket keeps `via`'s reply limit and
    /// I/O mode.
    pub(crate) async fn connect(
        via: &Connector,
        host: &str,
        port: u16,
        chunk: usize,
    ) -> io::Result<Socket> {
        let stream = tokio::time::timeout(via.handshake_limit(), dial(via, host, port))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connection timed out"))??;
        stream.set_nodelay(true)?;
        Ok(Socket {
            io: Io::Poll(stream),
            #[cfg(feature = "tls")]
            tls: None,
            wbuf: BytesMut::new(),
            rbuf: BytesMut::new(),
            fit: Fit::new(chunk),
            sent: 0,
            received: 0,
            max_reply: via.max_reply(),
            #[cfg(target_os = "linux")]
            uring: via.uring(),
        })
    }

    /// Write what is queued and wait until more bytes arrived. Cancel safe.
    pub async fn fill(&mut self) -> io::Result<()> {
        // Onto the ring or off it once per fill, not at every poll.
        #[cfg(target_os = "linux")]
        self.settle()?;
        std::future::poll_fn(|cx| self.poll_fill(cx)).await
    }

    /// [`Socket::fill`] as a poll: over TLS, on the ring, or on tokio's
    /// reactor. A poll, not a future, so that a connection's task holds
    /// none of its own for the wait (docs/explanations/client-cost.md). On the reactor it
    /// writes what is queued, then reads once the socket is readable,
    /// waiting through the socket's own reader and writer waker slots
    /// rather than a waiter queued on the socket at each wait.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Whoever reads this buffer has taken no whole frame from what it
        // holds: a reply past the limit breaks the link (a protocol error)
        // before it takes more memory.
        let limit = self.max_reply;
        if self.rbuf.len() >= limit {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a reply of more than {limit} bytes (--max-reply)"),
            )));
        }
        #[cfg(feature = "tls")]
        if self.tls.is_some() {
            return self.poll_fill_tls(cx);
        }
        #[cfg(target_os = "linux")]
        if matches!(self.io, Io::Ring(_)) {
            return self.poll_fill_ring(cx);
        }
        loop {
            self.flush()?;
            let stream = tcp(&self.io)?;
            // What the socket did not take waits for room as well as for
            // bytes: a server that reads nothing more until its answers
            // are read would otherwise hold both ends.
            if !self.wbuf.is_empty() && ready(stream.poll_write_ready(cx))? {
                continue;
            }
            if !ready(stream.poll_read_ready(cx))? {
                return Poll::Pending;
            }
            let step = self.fit.before_read(&mut self.rbuf);
            self.rbuf.reserve(step);
            let room = self.rbuf.capacity() - self.rbuf.len();
            // A short read took all the socket held: it is reported to
            // tokio as WouldBlock, which clears the readiness tokio saw
            // before the read, so the next wait does not begin with a
            // read that fails (one system call per reply saved). Bytes
            // that come after raise a newer readiness, which stays.
            let rbuf = &mut self.rbuf;
            let mut got = None;
            let r = stream.try_io(Interest::READABLE, || {
                let n = stream.try_read_buf(rbuf)?;
                got = Some(n);
                if n > 0 && n < room {
                    Err(io::ErrorKind::WouldBlock.into())
                } else {
                    Ok(())
                }
            });
            match (got, r) {
                (Some(0), _) => return Poll::Ready(Err(io::ErrorKind::UnexpectedEof.into())),
                (Some(n), _) => {
                    self.fit.after_read(n, room);
                    self.received += n as u64;
                    loadrig_metrics::count_received(n);
                    return Poll::Ready(Ok(()));
                }
                (None, Err(e)) if e.kind() != io::ErrorKind::WouldBlock => {
                    return Poll::Ready(Err(e))
                }
                (None, _) => {}
            }
        }
    }

    /// Write what the socket takes now.
    pub fn flush(&mut self) -> io::Result<()> {
        #[cfg(feature = "tls")]
        if self.tls.is_some() {
            return self.flush_tls();
        }
        #[cfg(target_os = "linux")]
        if matches!(self.io, Io::Ring(_)) {
            return self.flush_ring();
        }
        if self.wbuf.is_empty() {
            return Ok(());
        }
        self.fit.before_flush(self.wbuf.len());
        let stream = match &self.io {
            Io::Poll(s) => s,
            _ => return Err(closed()),
        };
        write_out(
            &mut self.wbuf,
            |b| stream.try_write(b),
            counter(&mut self.sent),
        )?;
        self.fit.after_flush(&mut self.wbuf);
        Ok(())
    }

    /// Bytes sent and received since the last call.
    pub fn take_bytes(&mut self) -> (u64, u64) {
        let out = (self.sent, self.received);
        self.sent = 0;
        self.received = 0;
        out
    }

    /// Wait until the socket takes more: writable on tokio's reactor, the
    /// send in flight completed on the ring.
    pub(crate) async fn writable(&mut self) -> io::Result<()> {
        match &mut self.io {
            Io::Poll(s) => s.writable().await,
            #[cfg(target_os = "linux")]
            Io::Ring(r) => {
                std::future::poll_fn(|cx| r.poll_sent(cx)).await;
                Ok(())
            }
            Io::Gone => Err(closed()),
        }
    }

    /// Whether a send of this socket is still on the ring.
    fn ring_sending(&self) -> bool {
        match &self.io {
            #[cfg(target_os = "linux")]
            Io::Ring(r) => r.sending(),
            _ => false,
        }
    }
}

/// How a socket moves its bytes.
enum Io {
    /// Readiness from tokio's reactor, then `send` and `recv`.
    Poll(TcpStream),
    /// Requests to its engine thread's io_uring ring.
    #[cfg(target_os = "linux")]
    Ring(ring::Ringed),
    /// Lost while moving between the two.
    Gone,
}

/// Bytes written, counted into the socket's `sent` and the process's
/// total: what [`write_out`] is told as it goes.
fn counter(sent: &mut u64) -> impl FnMut(usize) + '_ {
    move |n| {
        *sent += n as u64;
        loadrig_metrics::count_sent(n);
    }
}

/// Write `wbuf` with `write` until it is empty or the socket would block,
/// `sent` told each write's bytes as they go (a later write that fails
/// leaves them counted).
fn write_out(
    wbuf: &mut BytesMut,
    mut write: impl FnMut(&[u8]) -> io::Result<usize>,
    mut sent: impl FnMut(usize),
) -> io::Result<()> {
    while !wbuf.is_empty() {
        match write(wbuf) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                wbuf.advance(n);
                sent(n);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The TCP stream on tokio's reactor (TLS, the cold paths).
fn tcp(io: &Io) -> io::Result<&TcpStream> {
    match io {
        Io::Poll(s) => Ok(s),
        _ => Err(closed()),
    }
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "the socket is closed")
}

/// A readiness poll as whether the socket is ready now (`Pending`: the
/// task's waker is kept in the socket's slot for that direction).
fn ready(poll: Poll<io::Result<()>>) -> io::Result<bool> {
    match poll {
        Poll::Ready(Ok(())) => Ok(true),
        Poll::Ready(Err(e)) => Err(e),
        Poll::Pending => Ok(false),
    }
}

#[cfg(target_os = "linux")]
impl Socket {
    /// Onto this thread's ring while the engine's workers run on it (a
    /// plaintext socket), back onto tokio's reactor otherwise once nothing
    /// is in flight (a connection opened, or used, outside the load).
    fn settle(&mut self) -> io::Result<()> {
        #[cfg(feature = "tls")]
        if self.tls.is_some() {
            return Ok(());
        }
        let here = if self.uring { ring::here() } else { None };
        self.io = match (std::mem::replace(&mut self.io, Io::Gone), here) {
            (Io::Poll(s), Some(id)) => Io::Ring(ring::Ringed::new(s, id)?),
            (Io::Ring(r), here) if here != Some(r.ring()) && !r.busy() => Io::Poll(r.into_tokio()?),
            (io, _) => io,
        };
        Ok(())
    }

    /// [`Socket::fill`] on the ring: hand what is queued to the ring, then
    /// wait for the receive.
    fn poll_fill_ring(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Err(e) = self.flush_ring() {
            return Poll::Ready(Err(e));
        }
        let step = self.fit.before_read(&mut self.rbuf);
        let Io::Ring(r) = &mut self.io else {
            return Poll::Ready(Err(closed()));
        };
        match r.poll_recv(cx, &mut self.rbuf, step) {
            Poll::Ready(Ok(0)) => Poll::Ready(Err(io::ErrorKind::UnexpectedEof.into())),
            Poll::Ready(Ok(n)) => {
                self.fit.after_read(n, step);
                self.received += n as u64;
                loadrig_metrics::count_received(n);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    /// [`Socket::flush`] on the ring: what is queued goes to the ring when
    /// no send is in flight. Off the ring's thread (a socket handed to
    /// another thread after the load) it is written at once.
    fn flush_ring(&mut self) -> io::Result<()> {
        let Io::Ring(r) = &mut self.io else {
            return Err(closed());
        };
        let queued = self.wbuf.len();
        if queued > 0 {
            self.fit.before_flush(queued);
        }
        let mut count = counter(&mut self.sent);
        match r.flush(&mut self.wbuf) {
            Some(moved) => count(moved?),
            None => r.write_now(&mut self.wbuf, count)?,
        }
        if queued > 0 {
            self.fit.after_flush(&mut self.wbuf);
        }
        Ok(())
    }
}

/// Whether bytes wait to be written (TLS records too).
#[cfg(not(feature = "tls"))]
impl Socket {
    fn queued(&self) -> bool {
        !self.wbuf.is_empty() || self.ring_sending()
    }
}

/// An I/O error in the words a user needs; malformed bytes mean the other
/// end is not `product`.
pub(crate) fn said(e: &io::Error, product: &str) -> String {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
        io::ErrorKind::TimedOut => "timed out".to_string(),
        io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset => {
            "the server closed the connection".to_string()
        }
        io::ErrorKind::InvalidData => format!("not a {product} server ({e})"),
        _ => e.to_string(),
    }
}

/// Connect to `host:port`, from `via`'s next source address when `--bind`
/// gave some: the first of the host's addresses of the source's family.
/// (Also the etcd client's, whose HTTP/2 runs on a plain stream.)
pub(crate) async fn dial(via: &Connector, host: &str, port: u16) -> io::Result<TcpStream> {
    let Some(source) = via.next_source() else {
        return TcpStream::connect((host, port)).await;
    };
    let mut last = None;
    for addr in tokio::net::lookup_host((host, port)).await? {
        if addr.is_ipv4() != source.is_ipv4() {
            continue;
        }
        let sock = if addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        late_port(&sock);
        sock.bind(SocketAddr::new(source, 0))?;
        match sock.connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(
            io::ErrorKind::AddrNotAvailable,
            format!("{host} has no address of the family of --bind {source}"),
        )
    }))
}

/// Let the kernel pick the source port at connect, not at bind
/// (`IP_BIND_ADDRESS_NO_PORT`): a port picked at bind is kept from every
/// other connection of that address, so one source address would give
/// about 28,000 connections in all; picked at connect, it gives that many
/// per server address. Best effort: an older kernel refuses the option and
/// the bind picks the port.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn late_port(sock: &TcpSocket) {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: the descriptor is open (owned by `sock`), and the option
    // value is a c_int that lives through the call, with its size.
    let _ = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
}

#[cfg(not(target_os = "linux"))]
fn late_port(_: &TcpSocket) {}
