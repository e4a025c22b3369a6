//! A TCP socket with its write and read buffers, shared by the
//! hand-written pipelined clients (VoltDB, Redis, memcached, NATS, MQTT),
//! and the one [`ByteStream`] over it (Redis, memcached). Requests are encoded
//! into `wbuf`; `fill` writes what is queued and waits until more bytes
//! are in `rbuf`. Only `try_*` calls touch the socket, after readiness, and
//! both buffers live here, so dropping `fill` (the engine serves a timer)
//! loses nothing. The buffers start at [`SMALL`] bytes, grow with a burst
//! and shrink after it ([`Fit`]), so thousands of mostly idle connections
//! hold little memory.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_workloads::stream::ByteStream;
use tokio::io::Interest;
use tokio::net::TcpStream;

pub struct Socket {
    stream: TcpStream,
    pub wbuf: BytesMut,
    pub rbuf: BytesMut,
    /// Buffer sizes that follow the connection's traffic.
    fit: Fit,
    sent: u64,
    received: u64,
}

/// The read step a connection starts with, and the least a buffer shrinks
/// back to: a request or reply of a couple of hundred bytes fits in one
/// read. The write buffer starts empty and grows as requests are queued.
pub const SMALL: usize = 256;
/// Reads and flushes per look at whether the buffers are larger than the
/// traffic needs.
const WINDOW: u32 = 64;

/// Buffers sized to their traffic (docs/scale.md): the read step doubles
/// when a read fills all the room it was given, up to the target's chunk,
/// and halves after a window of reads that used less than a quarter of it;
/// a buffer found empty and more than four times larger than what the last
/// window needed is given back. So a burst grows them at once and an idle
/// connection holds about [`SMALL`] bytes each, not the chunk.
#[derive(Debug, Clone)]
struct Fit {
    /// Largest read step (the target's chunk).
    chunk: usize,
    /// Room to offer the next read.
    step: usize,
    /// Reads in this window, and whether any of them was large.
    reads: u32,
    large_read: bool,
    /// Flushes in this window and the most queued at one.
    flushes: u32,
    most_queued: usize,
}

impl Fit {
    fn new(chunk: usize) -> Fit {
        Fit {
            chunk: chunk.max(SMALL),
            step: SMALL,
            reads: 0,
            large_read: false,
            flushes: 0,
            most_queued: 0,
        }
    }

    /// Before a read: the room to reserve, after giving back a read buffer
    /// that is empty and much larger than the traffic.
    fn before_read(&mut self, rbuf: &mut BytesMut) -> usize {
        if rbuf.is_empty() && rbuf.capacity() > 4 * self.step {
            *rbuf = BytesMut::new();
        }
        self.step
    }

    /// After a read of `n` bytes into `room`.
    fn after_read(&mut self, n: usize, room: usize) {
        if n >= room {
            self.step = (self.step * 2).min(self.chunk);
            self.reads = 0;
            self.large_read = false;
            return;
        }
        self.large_read |= n * 4 >= self.step;
        self.reads += 1;
        if self.reads >= WINDOW {
            if !self.large_read {
                self.step = (self.step / 2).max(SMALL);
            }
            self.reads = 0;
            self.large_read = false;
        }
    }

    /// Before a flush of `queued` bytes.
    fn before_flush(&mut self, queued: usize) {
        self.most_queued = self.most_queued.max(queued);
    }

    /// After a flush: give back a write buffer that is empty and much
    /// larger than the last window's largest flush.
    fn after_flush(&mut self, wbuf: &mut BytesMut) {
        self.flushes += 1;
        if self.flushes < WINDOW {
            return;
        }
        let need = self.most_queued.max(SMALL);
        if wbuf.is_empty() && wbuf.capacity() > 4 * need {
            *wbuf = BytesMut::with_capacity(need);
        }
        self.flushes = 0;
        self.most_queued = 0;
    }
}

impl Socket {
    /// Connect within `timeout`, Nagle off.
    pub async fn connect(
        host: &str,
        port: u16,
        timeout: Duration,
        chunk: usize,
    ) -> io::Result<Socket> {
        let stream = tokio::time::timeout(timeout, TcpStream::connect((host, port)))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connection timed out"))??;
        stream.set_nodelay(true)?;
        Ok(Socket {
            stream,
            wbuf: BytesMut::new(),
            rbuf: BytesMut::new(),
            fit: Fit::new(chunk),
            sent: 0,
            received: 0,
        })
    }

    /// Write what is queued and wait until more bytes arrived. Cancel safe.
    pub async fn fill(&mut self) -> io::Result<()> {
        loop {
            self.flush()?;
            let interest = if self.wbuf.is_empty() {
                Interest::READABLE
            } else {
                Interest::READABLE | Interest::WRITABLE
            };
            let ready = self.stream.ready(interest).await?;
            if ready.is_readable() {
                let step = self.fit.before_read(&mut self.rbuf);
                self.rbuf.reserve(step);
                let room = self.rbuf.capacity() - self.rbuf.len();
                match self.stream.try_read_buf(&mut self.rbuf) {
                    Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                    Ok(n) => {
                        self.fit.after_read(n, room);
                        self.received += n as u64;
                        return Ok(());
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }

    /// Write everything queued, waiting for the socket to take it. Cancel
    /// safe: what is not written yet stays in `wbuf`.
    #[cfg_attr(
        not(any(feature = "nats", feature = "mqtt", feature = "redis")),
        allow(dead_code)
    )]
    pub async fn flush_all(&mut self) -> io::Result<()> {
        loop {
            self.flush()?;
            if self.wbuf.is_empty() {
                return Ok(());
            }
            self.stream.writable().await?;
        }
    }

    /// Write what the socket takes now.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.wbuf.is_empty() {
            return Ok(());
        }
        self.fit.before_flush(self.wbuf.len());
        while !self.wbuf.is_empty() {
            match self.stream.try_write(&self.wbuf) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.wbuf.advance(n);
                    self.sent += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        self.fit.after_flush(&mut self.wbuf);
        Ok(())
    }

    /// Remove `n` bytes at offset `at` of the read buffer: a cold-path wait
    /// for one answer (a subscription confirmed) takes it out from among
    /// the messages that came before it, which stay for the hot path.
    #[cfg_attr(
        not(any(feature = "nats", feature = "mqtt", feature = "redis")),
        allow(dead_code)
    )]
    pub fn cut(&mut self, at: usize, n: usize) {
        let len = self.rbuf.len();
        let end = at.saturating_add(n).min(len);
        if at == 0 {
            self.rbuf.advance(end);
        } else if at < end {
            self.rbuf.copy_within(end.., at);
            self.rbuf.truncate(len - (end - at));
        }
    }

    /// Bytes sent and received since the last call.
    pub fn take_bytes(&mut self) -> (u64, u64) {
        let out = (self.sent, self.received);
        self.sent = 0;
        self.received = 0;
        out
    }
}

/// How a [`Stream`] opens its socket to server `i` of its target (TCP,
/// then whatever login the protocol needs).
#[cfg_attr(not(any(feature = "redis", feature = "memcache")), allow(dead_code))]
pub trait Dial: Send + Sync + 'static {
    /// How many servers there are to turn to.
    fn servers(&self) -> usize;
    fn dial(&self, server: usize) -> impl Future<Output = Option<Socket>> + Send;
}

/// The one byte stream of the pipelined FIFO clients (Redis, memcached):
/// a socket that moves bytes and reconnects, to the same server first,
/// then the next ones. It parses nothing; the workload does.
#[cfg_attr(not(any(feature = "redis", feature = "memcache")), allow(dead_code))]
pub struct Stream<D> {
    sock: Socket,
    dial: Arc<D>,
    server: usize,
    /// Bytes of sockets replaced since the last `take_bytes`.
    carried: (u64, u64),
}

#[cfg_attr(not(any(feature = "redis", feature = "memcache")), allow(dead_code))]
impl<D: Dial> Stream<D> {
    pub(crate) fn new(sock: Socket, dial: Arc<D>, server: usize) -> Self {
        Stream {
            sock,
            dial,
            server,
            carried: (0, 0),
        }
    }
}

impl<D: Dial> ByteStream for Stream<D> {
    #[inline]
    fn out(&mut self) -> &mut BytesMut {
        &mut self.sock.wbuf
    }

    #[inline]
    fn input(&mut self) -> &mut BytesMut {
        &mut self.sock.rbuf
    }

    async fn fill(&mut self) -> Result<(), OpError> {
        self.sock.fill().await.map_err(|e| match e.kind() {
            io::ErrorKind::InvalidData => OpError::new(ErrorKind::Protocol),
            _ => OpError::new(ErrorKind::Io),
        })
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        let n = self.dial.servers();
        for k in 0..n {
            let i = (self.server + k) % n;
            if let Some(sock) = self.dial.dial(i).await {
                // The old socket's bytes still count, in the next lap.
                let (sent, received) = self.sock.take_bytes();
                self.carried = (self.carried.0 + sent, self.carried.1 + received);
                self.sock = sock;
                self.server = i;
                return Ok(());
            }
        }
        Err(OpError::new(ErrorKind::Connect))
    }

    fn take_bytes(&mut self) -> (u64, u64) {
        let (sent, received) = self.sock.take_bytes();
        let (s, r) = std::mem::take(&mut self.carried);
        (sent + s, received + r)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A burst grows the read step to the chunk at once; a window of small
    /// reads halves it, and the empty, oversized buffer is given back.
    #[test]
    fn buffers_follow_the_traffic() {
        let mut fit = Fit::new(16 * 1024);
        let mut rbuf = BytesMut::new();
        let mut room = fit.before_read(&mut rbuf);
        assert_eq!(room, SMALL);
        for _ in 0..8 {
            fit.after_read(room, room);
            room = fit.before_read(&mut rbuf);
        }
        assert_eq!(room, 16 * 1024);
        rbuf.reserve(room);
        for _ in 0..(8 * WINDOW) {
            fit.after_read(10, room);
            room = fit.before_read(&mut rbuf);
        }
        assert_eq!(room, SMALL);
        assert!(rbuf.capacity() < 16 * 1024, "given back");

        let mut wbuf = BytesMut::with_capacity(64 * 1024);
        for _ in 0..WINDOW {
            fit.before_flush(100);
            fit.after_flush(&mut wbuf);
        }
        assert!(wbuf.capacity() <= 4 * SMALL, "{}", wbuf.capacity());
        // A large flush in the window keeps the buffer.
        let mut wbuf = BytesMut::with_capacity(64 * 1024);
        fit.before_flush(40_000);
        for _ in 0..WINDOW {
            fit.after_flush(&mut wbuf);
        }
        assert_eq!(wbuf.capacity(), 64 * 1024);
    }
}
