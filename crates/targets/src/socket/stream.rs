//! The one [`ByteStream`] over a [`Socket`], for every hand-written client
//! but VoltDB's (Redis, memcached, the pub/sub links, HTTP): a target says only
//! how it dials and logs in ([`Dial`]).

use std::future::Future;
use std::io;
use std::sync::Arc;

use bytes::BytesMut;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_workloads::stream::ByteStream;

use super::Socket;

/// How a [`Stream`] opens its socket to server `i` of its target (TCP,
/// then whatever login the protocol needs).
pub trait Dial: Send + Sync + 'static {
    /// How many servers there are to turn to.
    fn servers(&self) -> usize;
    fn dial(&self, server: usize) -> impl Future<Output = Option<Socket>> + Send;
}

/// The one byte stream of the pipelined clients: a socket that moves bytes and reconnects, to the same server first,
/// then the next ones. It parses nothing; the workload does.
pub struct Stream<D> {
    sock: Socket,
    dial: Arc<D>,
    server: usize,
    /// Bytes of sockets replaced since the last `take_bytes`.
    carried: (u64, u64),
}

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
    pub(crate) fn server(&self) -> usize {
        self.server
    }

    /// Whether the socket's TLS handshake resumed a session.
    #[cfg(feature = "tls")]
    pub(crate) fn resumed(&self) -> bool {
        self.sock.resumed()
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
        self.sock.fill().await.map_err(op_error)
    }

    #[inline]
    fn unwritten(&self) -> usize {
        self.sock.wbuf.len()
    }

    async fn flush(&mut self) -> Result<(), OpError> {
        self.sock.flush_all().await.map_err(op_error)
    }

    async fn sibling(&self) -> Result<Self, OpError> {
        match self.dial.dial(self.server).await {
            Some(sock) => Ok(Stream::new(sock, self.dial.clone(), self.server)),
            None => Err(OpError::new(ErrorKind::Connect)),
        }
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

impl Socket {
    /// Write everything queued, waiting for the socket to take it. Cancel
    /// safe: what is not written yet stays in `wbuf`.
    pub(crate) async fn flush_all(&mut self) -> io::Result<()> {
        loop {
            self.flush()?;
            if !self.queued() {
                return Ok(());
            }
            self.writable().await?;
        }
    }
}

/// A failed link is an I/O error; bytes that cannot be the protocol, a
/// protocol error.
pub(crate) fn op_error(e: io::Error) -> OpError {
    match e.kind() {
        io::ErrorKind::InvalidData => OpError::new(ErrorKind::Protocol),
        _ => OpError::new(ErrorKind::Io),
    }
}

/// A server reached by TCP, or TLS over it, with no login (memcached,
/// HTTP, HTTPS): the [`Dial`] of those targets, and how they connect
/// outside a stream.
pub struct PlainDial {
    at: Arc<crate::url::TargetUrl>,
    via: Arc<crate::settings::Connector>,
    /// The protocol's read chunk (the socket's largest read step).
    chunk: usize,
    /// The product named in a connect error ("memcached", "HTTP").
    product: &'static str,
    /// TLS, offering these protocols by ALPN (`https://`); none: TCP.
    #[cfg(feature = "tls")]
    tls: Option<crate::tls::Alpn>,
}

impl PlainDial {
    pub(crate) fn new(
        at: Arc<crate::url::TargetUrl>,
        via: Arc<crate::settings::Connector>,
        chunk: usize,
        product: &'static str,
    ) -> PlainDial {
        PlainDial {
            at,
            via,
            chunk,
            product,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }

    /// The same dial over TLS, offering `protocols` by ALPN.
    #[cfg(feature = "tls")]
    pub(crate) fn over_tls(mut self, protocols: crate::tls::Alpn) -> PlainDial {
        self.tls = Some(protocols);
        self
    }

    /// Connect to server `i`, or say why not in plain words.
    pub(crate) async fn open(&self, i: usize) -> Result<Socket, String> {
        let (host, port) = self.at.servers.get(i).cloned().unwrap_or_default();
        self.connect(&host, port).await.map_err(|e: io::Error| {
            format!(
                "{}: {}",
                crate::url::hostport(&host, port),
                super::said(&e, self.product)
            )
        })
    }

    /// TCP to `host:port`, then the TLS handshake if the dial is over TLS:
    /// both are the connection's opening, timed as connect time, each
    /// within the handshake limit.
    async fn connect(&self, host: &str, port: u16) -> io::Result<Socket> {
        #[allow(unused_mut)]
        let mut sock = Socket::connect(&self.via, host, port, self.chunk).await?;
        #[cfg(feature = "tls")]
        if let Some(protocols) = self.tls {
            let limit = self.via.handshake_limit();
            tokio::time::timeout(limit, sock.start_tls_offering(&self.via, host, protocols))
                .await
                .map_err(|_| {
                    io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out")
                })??;
        }
        Ok(sock)
    }

    /// Server `i`'s stream.
    pub(crate) async fn stream(self: &Arc<Self>, i: usize) -> Result<Stream<PlainDial>, String> {
        Ok(Stream::new(self.open(i).await?, self.clone(), i))
    }
}

impl Dial for PlainDial {
    fn servers(&self) -> usize {
        self.at.servers.len()
    }

    async fn dial(&self, server: usize) -> Option<Socket> {
        self.open(server).await.ok()
    }
}
