//! NATS core over its text client protocol, hand written on
//! `loadrig-mqwire` and the shared buffered [`Socket`]: one connection per
//! client, dealt over the servers of the URL round robin.
//!
//! Connecting reads the server's `INFO` (its version), sends `CONNECT`
//! (not verbose, not pedantic, echo on, named `loadrig`) and a `PING`, and
//! waits for the `PONG`: an `-ERR` before it (a refused login) makes the
//! target unreachable, in the server's words. Publishes are pipelined
//! into the write buffer and confirmed by nothing (core NATS keeps no
//! messages). A subscription is confirmed by a `PING` answered after the
//! `SUB`; messages that come meanwhile stay in the read buffer for
//! [`PubSubConn::next`]. The server's `PING`s are answered with a `PONG`
//! queued inside `next`.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Buf;
use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_mqwire::nats::{self, Auth, Connect, ServerOp};
use loadrig_spec::SpecError;
use loadrig_workloads::pubsub::{Confirm, Incoming, PubSubBackend, PubSubConn};
use loadrig_workloads::{TargetError, TargetInfo};

use crate::socket::{said, Socket};
use crate::url::TargetUrl;

const DEFAULT_PORT: u16 = 4222;

const EXPECTED: &str = "nats://[USER:PASSWORD@|TOKEN@]HOST[:PORT][,PORT|,HOST[:PORT]...]";

/// The most publishes one connection keeps in flight. Publishes are done
/// once written, so this only bounds what a workload queues.
const MAX_DEPTH: usize = 65_536;

/// How long connecting (up to the handshake's `PONG`) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a subscription's confirmation may take.
const SUBSCRIBE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long asking the server's version may take.
const ASIDE_TIMEOUT: Duration = Duration::from_secs(5);

/// Read buffer growth step.
const READ_CHUNK: usize = 64 * 1024;

const DURABILITY: &str =
    "at most once: core NATS keeps no messages; a subscriber that is slow or away loses them";

const PROTOCOL: OpError = OpError::new(ErrorKind::Protocol);

/// A publish or subscription the codec refused: a subject that is empty or
/// holds whitespace, a payload over the protocol's bound.
const REFUSED: OpError = OpError {
    kind: ErrorKind::Protocol,
    class: "subject or payload refused by the codec",
};

/// Parse what follows `nats://`. A lone user (`TOKEN@`) is a token.
pub(crate) fn parse_url(rest: &str) -> Result<TargetUrl, SpecError> {
    let (url, options) = TargetUrl::parse("nats", rest, DEFAULT_PORT, EXPECTED, true)?;
    url.no_path("no path is taken")?;
    url.no_options(options)?;
    Ok(url)
}

/// One or more NATS servers. Cheap: it connects per use.
pub struct NatsTarget {
    at: Arc<TargetUrl>,
    /// The server the next connection goes to (round robin).
    next: AtomicUsize,
    version: OnceLock<String>,
}

impl NatsTarget {
    pub(crate) fn new(at: TargetUrl) -> NatsTarget {
        NatsTarget {
            at: Arc::new(at),
            next: AtomicUsize::new(0),
            version: OnceLock::new(),
        }
    }

    fn unreachable(&self, e: LinkError) -> TargetError {
        TargetError::Unreachable {
            target: self.at.label(),
            reason: e.to_string(),
        }
    }

    fn remember(&self, version: Option<String>) {
        if let Some(v) = version {
            let _ = self.version.set(v);
        }
    }
}

impl TargetInfo for NatsTarget {
    async fn server_version(&self) -> Option<String> {
        if self.version.get().is_none() {
            if let Ok(Ok((_, v))) = tokio::time::timeout(ASIDE_TIMEOUT, open(&self.at, 0)).await {
                self.remember(v);
            }
        }
        self.version.get().cloned()
    }

    fn durability(&self) -> Option<String> {
        Some(DURABILITY.to_string())
    }

    fn max_depth(&self) -> usize {
        MAX_DEPTH
    }
}

impl PubSubBackend for NatsTarget {
    type Conn = NatsConn;

    /// NATS does not name clients beyond the connection's `name`, so
    /// `client` is unused.
    async fn connect(&self, _client: u64) -> Result<NatsConn, TargetError> {
        let server = self.next.fetch_add(1, Ordering::Relaxed) % self.at.servers.len();
        let (sock, version) = open(&self.at, server)
            .await
            .map_err(|e| self.unreachable(e))?;
        self.remember(version);
        Ok(NatsConn {
            at: self.at.clone(),
            server,
            sock,
            subs: Vec::new(),
            pongs_owed: 0,
            refused: None,
        })
    }

    fn request_reply(&self) -> bool {
        true
    }

    fn label(&self) -> String {
        "NATS".to_string()
    }
}

/// Why a connection could not be opened.
#[derive(Debug, thiserror::Error)]
enum LinkError {
    #[error("{server}: {}", said(source, "NATS"))]
    Io {
        server: String,
        #[source]
        source: io::Error,
    },
    #[error("{server}: the server refused the connection: {why}")]
    Refused { server: String, why: String },
}

/// Connect to server `i` and shake hands; returns the socket and the
/// server's version (`nats-server 2.9.10`).
async fn open(at: &TargetUrl, i: usize) -> Result<(Socket, Option<String>), LinkError> {
    let (host, port, name) = at.server(i);
    let io = |source| LinkError::Io {
        server: name.clone(),
        source,
    };
    let mut sock = Socket::connect(&host, port, CONNECT_TIMEOUT, READ_CHUNK)
        .await
        .map_err(io)?;
    match tokio::time::timeout(CONNECT_TIMEOUT, handshake(&mut sock, at)).await {
        Err(_) => Err(io(io::Error::new(io::ErrorKind::TimedOut, "timed out"))),
        Ok(Err(Handshake::Io(e))) => Err(io(e)),
        Ok(Err(Handshake::Refused(why))) => Err(LinkError::Refused { server: name, why }),
        Ok(Ok(version)) => Ok((sock, version)),
    }
}

enum Handshake {
    Io(io::Error),
    Refused(String),
}

impl From<io::Error> for Handshake {
    fn from(e: io::Error) -> Self {
        Handshake::Io(e)
    }
}

fn invalid(what: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// `INFO` in, `CONNECT` and `PING` out, `PONG` in.
async fn handshake(sock: &mut Socket, at: &TargetUrl) -> Result<Option<String>, Handshake> {
    let version = loop {
        match nats::parse_server_op(&sock.rbuf) {
            Ok(Some((ServerOp::Info(info), n))) => {
                let v = info.version().map(|v| format!("nats-server {v}"));
                sock.rbuf.advance(n);
                break v;
            }
            Ok(Some(_)) => return Err(invalid("the first line is not INFO").into()),
            Ok(None) => sock.fill().await?,
            Err(e) => return Err(invalid(e).into()),
        }
    };
    let auth = match (&at.user, &at.password) {
        (None, None) => Auth::None,
        (Some(token), None) => Auth::Token(token),
        (user, Some(pass)) => Auth::UserPass {
            user: user.as_deref().unwrap_or_default(),
            pass,
        },
    };
    let connect = Connect {
        name: Some("loadrig"),
        auth,
        verbose: false,
        pedantic: false,
        echo: true,
    };
    nats::encode_connect(&mut sock.wbuf, &connect)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    nats::encode_ping(&mut sock.wbuf);
    loop {
        match nats::parse_server_op(&sock.rbuf) {
            Ok(Some((op, n))) => {
                match op {
                    ServerOp::Pong => {
                        sock.rbuf.advance(n);
                        return Ok(version);
                    }
                    ServerOp::Err(why) => {
                        return Err(Handshake::Refused(
                            String::from_utf8_lossy(why).into_owned(),
                        ))
                    }
                    ServerOp::Ping => nats::encode_pong(&mut sock.wbuf),
                    ServerOp::Info(_) | ServerOp::Ok => {}
                    ServerOp::Msg(_) => return Err(invalid("a message before any SUB").into()),
                }
                sock.rbuf.advance(n);
            }
            Ok(None) => sock.fill().await?,
            Err(e) => return Err(invalid(e).into()),
        }
    }
}

/// The static class of an `-ERR`, from its message: the server's words,
/// lower case, for the error counts.
fn error_class(message: &[u8]) -> &'static str {
    const KNOWN: &[(&[u8], &str)] = &[
        (
            b"slow consumer",
            "slow consumer: the server dropped messages this connection did not read in time",
        ),
        (b"maximum payload", "maximum payload violation"),
        (b"permissions violation", "permissions violation"),
        (b"authorization violation", "authorization violation"),
        (b"authentication timeout", "authentication timeout"),
        (b"stale connection", "stale connection"),
        (b"maximum connections", "maximum connections exceeded"),
        (b"maximum subscriptions", "maximum subscriptions exceeded"),
        (b"invalid subject", "invalid subject"),
        (b"unknown protocol", "unknown protocol operation"),
        (b"parser error", "parser error"),
    ];
    KNOWN
        .iter()
        .find(|(needle, _)| {
            message
                .windows(needle.len())
                .any(|w| w.eq_ignore_ascii_case(needle))
        })
        .map_or("other", |(_, class)| class)
}

fn op_error(e: io::Error) -> OpError {
    match e.kind() {
        io::ErrorKind::InvalidData => PROTOCOL,
        _ => OpError::new(ErrorKind::Io),
    }
}

/// One client's connection.
pub struct NatsConn {
    at: Arc<TargetUrl>,
    server: usize,
    sock: Socket,
    /// Subjects subscribed; the sid of `subs[i]` is `i + 1`.
    subs: Vec<Vec<u8>>,
    /// `PING`s sent whose `PONG` has not been read: a subscription is
    /// confirmed when none is owed (a `PONG` left by a dropped `subscribe`
    /// is counted, not taken for the next one's).
    pongs_owed: usize,
    /// A publish the codec refused, reported by the next `next`.
    refused: Option<OpError>,
}

impl NatsConn {
    /// Send a `PING` and wait until every `PING` owed is answered, leaving
    /// messages in the read buffer.
    async fn confirm(&mut self) -> Result<(), OpError> {
        nats::encode_ping(&mut self.sock.wbuf);
        self.pongs_owed += 1;
        tokio::time::timeout(SUBSCRIBE_TIMEOUT, self.await_pongs())
            .await
            .unwrap_or(Err(OpError::new(ErrorKind::Timeout)))
    }

    /// Cancel safe: what it takes out of the read buffer it has handled.
    async fn await_pongs(&mut self) -> Result<(), OpError> {
        loop {
            // Bytes before `pos` are messages and chatter kept for `next`.
            let mut pos = 0;
            loop {
                let rest = self.sock.rbuf.get(pos..).unwrap_or_default();
                let Some((op, n)) = nats::parse_server_op(rest).map_err(|_| PROTOCOL)? else {
                    break;
                };
                match op {
                    ServerOp::Pong => {
                        self.sock.cut(pos, n);
                        self.pongs_owed = self.pongs_owed.saturating_sub(1);
                        if self.pongs_owed == 0 {
                            return Ok(());
                        }
                    }
                    ServerOp::Err(why) => {
                        let class = error_class(why);
                        self.sock.cut(pos, n);
                        return Err(OpError::server(class));
                    }
                    ServerOp::Msg(_) | ServerOp::Ping | ServerOp::Info(_) | ServerOp::Ok => {
                        pos += n
                    }
                }
            }
            self.sock.fill().await.map_err(op_error)?;
        }
    }
}

impl PubSubConn for NatsConn {
    async fn subscribe(&mut self, subject: &[u8]) -> Result<(), OpError> {
        let sid = self.subs.len() as u64 + 1;
        nats::encode_sub(&mut self.sock.wbuf, subject, None, sid).map_err(|_| REFUSED)?;
        self.subs.push(subject.to_vec());
        self.confirm().await
    }

    #[inline]
    fn publish(
        &mut self,
        subject: &[u8],
        reply: Option<&[u8]>,
        payload: &[u8],
        _tag: Tag,
    ) -> Confirm {
        if nats::encode_pub(&mut self.sock.wbuf, subject, reply, payload).is_err() {
            self.refused = Some(REFUSED);
        }
        Confirm::Written
    }

    #[inline]
    fn next<R>(&mut self, f: impl FnOnce(Incoming<'_>) -> R) -> Option<Result<R, OpError>> {
        if let Some(e) = self.refused.take() {
            return Some(Err(e));
        }
        loop {
            let (op, n) = match nats::parse_server_op(&self.sock.rbuf) {
                Ok(Some(x)) => x,
                Ok(None) => return None,
                Err(_) => return Some(Err(PROTOCOL)),
            };
            match op {
                ServerOp::Msg(m) => {
                    let out = f(Incoming::Message {
                        subject: m.subject,
                        reply: m.reply_to,
                        payload: m.payload,
                    });
                    self.sock.rbuf.advance(n);
                    return Some(Ok(out));
                }
                ServerOp::Ping => nats::encode_pong(&mut self.sock.wbuf),
                ServerOp::Pong => self.pongs_owed = self.pongs_owed.saturating_sub(1),
                ServerOp::Ok | ServerOp::Info(_) => {}
                ServerOp::Err(why) => {
                    let class = error_class(why);
                    self.sock.rbuf.advance(n);
                    return Some(Err(OpError::server(class)));
                }
            }
            self.sock.rbuf.advance(n);
        }
    }

    fn unwritten(&self) -> usize {
        self.sock.wbuf.len()
    }

    async fn flush(&mut self) -> Result<(), OpError> {
        self.sock.flush_all().await.map_err(op_error)
    }

    async fn fill(&mut self) -> Result<(), OpError> {
        self.sock.fill().await.map_err(op_error)
    }

    /// A fresh connection, to the same server first, then the others, with
    /// every subscription made again (and confirmed).
    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.pongs_owed = 0;
        self.refused = None;
        let n = self.at.servers.len();
        for k in 0..n {
            let i = (self.server + k) % n;
            let Ok((sock, _)) = open(&self.at, i).await else {
                continue;
            };
            self.sock = sock;
            self.server = i;
            if self.subs.is_empty() {
                return Ok(());
            }
            for (sid, subject) in self.subs.iter().enumerate() {
                // Each was encoded once already, so none is refused now.
                let _ = nats::encode_sub(&mut self.sock.wbuf, subject, None, sid as u64 + 1);
            }
            return self.confirm().await;
        }
        Err(OpError::new(ErrorKind::Connect))
    }

    fn take_bytes(&mut self) -> (u64, u64) {
        self.sock.take_bytes()
    }

    /// Core NATS has no goodbye; what is queued goes out if the socket
    /// takes it now.
    async fn close(&mut self) {
        let _ = self.sock.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nats_urls() {
        let u = parse_url("127.0.0.1").unwrap();
        assert_eq!(u.servers, [("127.0.0.1".to_string(), 4222)]);
        assert_eq!(u.label(), "nats://127.0.0.1:4222");
        let u = parse_url("bench:s%3Acret@h1,h2:4223,4224/").unwrap();
        assert_eq!(u.servers.len(), 3);
        assert_eq!(u.servers[2], ("h2".to_string(), 4224));
        assert_eq!(u.password.as_deref(), Some("s:cret"));
        assert_eq!(u.label(), "nats://bench:***@h1:4222,h2:4223,h2:4224");
        let u = parse_url("t0ken@h").unwrap();
        assert_eq!(
            (u.user.as_deref(), u.password.as_deref()),
            (Some("t0ken"), None)
        );
        assert_eq!(u.label(), "nats://***@h:4222");
        for bad in ["", "secret@h?x=1", "h:0", "h,,h2", "h/subject"] {
            let e = parse_url(bad).unwrap_err();
            assert_eq!(e.flag, "--target");
            assert!(!e.to_string().contains("secret"), "{e}");
        }
    }

    #[test]
    fn server_errors_have_plain_classes() {
        assert!(error_class(b"Slow Consumer Detected").starts_with("slow consumer: "));
        assert_eq!(
            error_class(b"Permissions Violation for Publish to foo"),
            "permissions violation"
        );
        assert_eq!(
            error_class(b"Authorization Violation"),
            "authorization violation"
        );
        assert_eq!(error_class(b""), "other");
    }
}
