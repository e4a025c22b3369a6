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
//! [`tls`]): its buffers stay plaintext.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::Interest;
use tokio::net::{TcpSocket, TcpStream};

mod fit;
use fit::Fit;
#[cfg(feature = "tls")]
mod tls;

#[cfg(any(
    feature = "redis",
    feature = "memcache",
    feature = "nats",
    feature = "mqtt",
    feature = "http"
))]
mod stream;
#[cfg(feature = "redis")]
pub(crate) use stream::op_error;
#[cfg(any(feature = "memcache", feature = "http"))]
pub use stream::PlainDial;
#[cfg(any(
    feature = "redis",
    feature = "memcache",
    feature = "nats",
    feature = "mqtt",
    feature = "http"
))]
pub use stream::{Dial, Stream};

pub struct Socket {
    stream: TcpStream,
    /// The TLS session, once [`Socket::start_tls`] shook hands.
    #[cfg(feature = "tls")]
    tls: tls::Tls,
    pub wbuf: BytesMut,
    pub rbuf: BytesMut,
    /// Buffer sizes that follow the connection's traffic.
    fit: Fit,
    sent: u64,
    received: u64,
}

impl Socket {
    /// Connect within `timeout`, Nagle off, from the next `--bind`
    /// address if any ([`crate::source`]).
    pub async fn connect(
        host: &str,
        port: u16,
        timeout: Duration,
        chunk: usize,
    ) -> io::Result<Socket> {
        let stream = tokio::time::timeout(timeout, dial(host, port))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connection timed out"))??;
        stream.set_nodelay(true)?;
        Ok(Socket {
            stream,
            #[cfg(feature = "tls")]
            tls: None,
            wbuf: BytesMut::new(),
            rbuf: BytesMut::new(),
            fit: Fit::new(chunk),
            sent: 0,
            received: 0,
        })
    }

    /// Write what is queued and wait until more bytes arrived. Cancel safe.
    pub async fn fill(&mut self) -> io::Result<()> {
        #[cfg(feature = "tls")]
        if self.tls.is_some() {
            return self.fill_tls().await;
        }
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
                        self.fit.after_read(n, room);
                        self.received += n as u64;
                        loadrig_metrics::count_received(n);
                        return Ok(());
                    }
                    (None, Err(e)) if e.kind() != io::ErrorKind::WouldBlock => return Err(e),
                    (None, _) => {}
                }
            }
        }
    }

    /// Write what the socket takes now.
    pub fn flush(&mut self) -> io::Result<()> {
        #[cfg(feature = "tls")]
        if self.tls.is_some() {
            return self.flush_tls();
        }
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
                    loadrig_metrics::count_sent(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
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
}

/// Whether bytes wait to be written (TLS records too).
#[cfg(not(feature = "tls"))]
impl Socket {
    fn queued(&self) -> bool {
        !self.wbuf.is_empty()
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

/// Connect to `host:port`, from the next source address when `--bind` gave
/// some: the first of the host's addresses of the source's family.
async fn dial(host: &str, port: u16) -> io::Result<TcpStream> {
    let Some(source) = crate::source::next_source() else {
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
