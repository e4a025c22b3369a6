//! A TCP socket with its write and read buffers, shared by the
//! hand-written pipelined clients (VoltDB, Redis, memcached, NATS, MQTT,
//! HTTP), and the one [`ByteStream`] over it (Redis, memcached, HTTP). Requests are encoded
//! into `wbuf`; `fill` writes what is queued and waits until more bytes
//! are in `rbuf`. Only `try_*` calls touch the socket, after readiness, and
//! both buffers live here, so dropping `fill` (the engine serves a timer)
//! loses nothing.

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
    /// Read buffer growth step.
    chunk: usize,
    sent: u64,
    received: u64,
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
            wbuf: BytesMut::with_capacity(chunk),
            rbuf: BytesMut::with_capacity(chunk),
            chunk,
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
                self.rbuf.reserve(self.chunk);
                let room = self.rbuf.capacity() - self.rbuf.len();
                // A short read took all the socket held: it is reported to
                // tokio as WouldBlock, which clears the readiness tokio saw
                // before the read, so the next wait does not begin with a
                // read that fails (one system call per reply saved). Bytes
                // that come after raise a newer readiness, which stays.
                let (stream, rbuf) = (&self.stream, &mut self.rbuf);
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
                    (Some(0), _) => return Err(io::ErrorKind::UnexpectedEof.into()),
                    (Some(n), _) => {
                        self.received += n as u64;
                        return Ok(());
                    }
                    (None, Err(e)) if e.kind() != io::ErrorKind::WouldBlock => return Err(e),
                    (None, _) => {}
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
#[cfg_attr(
    not(any(feature = "redis", feature = "memcache", feature = "http")),
    allow(dead_code)
)]
pub trait Dial: Send + Sync + 'static {
    /// How many servers there are to turn to.
    fn servers(&self) -> usize;
    fn dial(&self, server: usize) -> impl Future<Output = Option<Socket>> + Send;
}

/// The one byte stream of the pipelined FIFO clients (Redis, memcached, HTTP):
/// a socket that moves bytes and reconnects, to the same server first,
/// then the next ones. It parses nothing; the workload does.
#[cfg_attr(
    not(any(feature = "redis", feature = "memcache", feature = "http")),
    allow(dead_code)
)]
pub struct Stream<D> {
    sock: Socket,
    dial: Arc<D>,
    server: usize,
    /// Bytes of sockets replaced since the last `take_bytes`.
    carried: (u64, u64),
}

#[cfg_attr(
    not(any(feature = "redis", feature = "memcache", feature = "http")),
    allow(dead_code)
)]
impl<D: Dial> Stream<D> {
    pub(crate) fn new(sock: Socket, dial: Arc<D>, server: usize) -> Self {
        Stream {
            sock,
            dial,
            server,
            carried: (0, 0),
        }
    }

    /// The server this stream is on now (a reconnect may move it).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn server(&self) -> usize {
        self.server
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
