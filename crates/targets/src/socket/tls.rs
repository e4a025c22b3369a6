//! TLS on a [`Socket`]: a rustls connection between the TCP stream and the
//! socket's two buffers, driven by the same readiness as plain TCP (no
//! second task, no boxed stream). `wbuf` and `rbuf` stay plaintext, so the
//! protocols above do not know; rustls keeps the records on their way in
//! and out, inside the socket, so `fill` stays cancel safe. Bytes counted
//! are the protocol's (plaintext), as on a plain socket.

use std::io::{self, BufRead, Read, Write};
use std::task::{Context, Poll};

use bytes::Buf;
use rustls::ClientConnection;
use tokio::io::Interest;
use tokio::net::TcpStream;

use super::{ready, tcp, Socket};
use crate::settings::Connector;
use crate::tls::{self, Check};

/// The TLS state of a socket: boxed because it is large (a few KB of
/// record buffers) and most sockets of most runs have none.
pub(super) type Tls = Option<Box<ClientConnection>>;

impl Socket {
    /// [`Socket::connect`], then [`Socket::start_tls`] when `tls`, both
    /// within `via`'s handshake limit.
    pub(crate) async fn open(
        via: &Connector,
        host: &str,
        port: u16,
        chunk: usize,
        tls: bool,
    ) -> io::Result<Socket> {
        let mut sock = Socket::connect(via, host, port, chunk).await?;
        if tls {
            tokio::time::timeout(via.handshake_limit(), sock.start_tls(via, host))
                .await
                .map_err(|_| {
                    io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out")
                })??;
        }
        Ok(sock)
    }

    /// Turn this connected socket into a TLS one and shake hands, checking
    /// the certificate against `host` as `via` trusts (within the caller's
    /// timeout: this waits for the server). Bytes queued in `wbuf` go after
    /// the handshake.
    pub(crate) async fn start_tls(&mut self, via: &Connector, host: &str) -> io::Result<()> {
        self.start_tls_checked(via, host, Check::Full).await
    }

    /// [`Socket::start_tls`], checking as much of the certificate as
    /// `check` says (PostgreSQL's `sslmode=verify-ca` skips the host name).
    pub(crate) async fn start_tls_checked(
        &mut self,
        via: &Connector,
        host: &str,
        check: Check,
    ) -> io::Result<()> {
        self.handshake(via.tls_config(check), host).await
    }

    /// [`Socket::start_tls`] offering `protocols` by ALPN.
    pub(crate) async fn start_tls_offering(
        &mut self,
        via: &Connector,
        host: &str,
        protocols: tls::Alpn,
    ) -> io::Result<()> {
        self.handshake(via.tls_offering(protocols), host).await
    }

    /// Whether the handshake resumed an earlier session (no certificate
    /// sent, checked or signed again).
    pub(crate) fn resumed(&self) -> bool {
        self.tls
            .as_deref()
            .is_some_and(|c| c.handshake_kind() == Some(rustls::HandshakeKind::Resumed))
    }

    /// Shake hands as `config` says, the certificate checked against
    /// `host` (also sent as SNI when it is a name).
    async fn handshake(
        &mut self,
        config: std::sync::Arc<rustls::ClientConfig>,
        host: &str,
    ) -> io::Result<()> {
        let name = tls::server_name(host)?;
        let conn = ClientConnection::new(config, name).map_err(tls::io_error)?;
        self.tls = Some(Box::new(conn));
        while let Some(conn) = self.tls.as_deref_mut() {
            write_tls(tcp(&self.io)?, conn)?;
            if !conn.is_handshaking() {
                break;
            }
            let interest = if conn.wants_write() {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            if tcp(&self.io)?.ready(interest).await?.is_readable() {
                read_tls(tcp(&self.io)?, conn)?;
            }
        }
        Ok(())
    }

    /// Whether bytes wait to be written: queued plaintext, or records
    /// rustls holds.
    pub(super) fn queued(&self) -> bool {
        !self.wbuf.is_empty()
            || self.tls.as_ref().is_some_and(|c| c.wants_write())
            || self.ring_sending()
    }

    /// [`Socket::fill`] over TLS, a poll as the plaintext one is:
    /// plaintext already decrypted is taken first, then the socket is
    /// read, waiting through its own reader and writer waker slots.
    pub(super) fn poll_fill_tls(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            self.flush()?;
            if self.take_plaintext()? {
                return Poll::Ready(Ok(()));
            }
            let stream = tcp(&self.io)?;
            if self.queued() && ready(stream.poll_write_ready(cx))? {
                continue;
            }
            if !ready(stream.poll_read_ready(cx))? {
                return Poll::Pending;
            }
            if let Some(conn) = self.tls.as_deref_mut() {
                read_tls(stream, conn)?;
            }
            if self.take_plaintext()? {
                return Poll::Ready(Ok(()));
            }
        }
    }

    /// [`Socket::flush`] over TLS: hand rustls what it takes of `wbuf`,
    /// then write its records until the socket would block.
    pub(super) fn flush_tls(&mut self) -> io::Result<()> {
        let Some(conn) = self.tls.as_deref_mut() else {
            return Ok(());
        };
        if !self.wbuf.is_empty() {
            self.fit.before_flush(self.wbuf.len());
        }
        loop {
            if !self.wbuf.is_empty() {
                let n = conn.writer().write(&self.wbuf)?;
                self.wbuf.advance(n);
                self.sent += n as u64;
                loadrig_metrics::count_sent(n);
            }
            if !write_tls(tcp(&self.io)?, conn)? || self.wbuf.is_empty() {
                break;
            }
        }
        self.fit.after_flush(&mut self.wbuf);
        Ok(())
    }

    /// Move the plaintext rustls holds into `rbuf`; whether there was any.
    /// The peer's orderly close with nothing left is the end of the stream.
    fn take_plaintext(&mut self) -> io::Result<bool> {
        let Some(conn) = self.tls.as_deref_mut() else {
            return Ok(false);
        };
        let room = self.fit.before_read(&mut self.rbuf);
        self.rbuf.reserve(room);
        let mut got = 0;
        let mut reader = conn.reader();
        while got < room {
            match reader.fill_buf() {
                Ok([]) if got == 0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok([]) => break,
                Ok(plain) => {
                    let n = plain.len();
                    self.rbuf.extend_from_slice(plain);
                    reader.consume(n);
                    got += n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        if got > 0 {
            self.fit.after_read(got, room);
            self.received += got as u64;
            loadrig_metrics::count_received(got);
        }
        Ok(got > 0)
    }
}

/// Read what the socket holds into rustls and decrypt it. A closed socket
/// is the end of the stream; a TLS failure (a certificate refused, a bad
/// record) is sent to the peer as an alert when possible and returned.
fn read_tls(stream: &TcpStream, conn: &mut ClientConnection) -> io::Result<()> {
    match conn.read_tls(&mut Tcp(stream)) {
        Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
        Err(e) => return Err(e),
    }
    if let Err(e) = conn.process_new_packets() {
        let _ = write_tls(stream, conn);
        return Err(tls::io_error(e));
    }
    Ok(())
}

/// Write rustls's records until it has none or the socket would block;
/// whether it has none left.
fn write_tls(stream: &TcpStream, conn: &mut ClientConnection) -> io::Result<bool> {
    while conn.wants_write() {
        match conn.write_tls(&mut Tcp(stream)) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// The TCP stream as rustls's `Read` and `Write`, through tokio's
/// non-blocking `try_` calls: `WouldBlock` clears the readiness tokio saw.
struct Tcp<'a>(&'a TcpStream);

impl Read for Tcp<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_read(buf)
    }
}

impl Write for Tcp<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
