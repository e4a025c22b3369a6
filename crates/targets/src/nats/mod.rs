//! NATS core: its URL, and dialing on the shared byte [`Stream`]: one
//! connection per client, dealt over the servers of the URL round robin.
//! What a connection says after the handshake is the workload's
//! [`NatsLink`].
//!
//! Connecting reads the server's `INFO` (its version), sends `CONNECT`
//! (not verbose, not pedantic, echo on, named `loadrig`) and a `PING`, and
//! waits for the `PONG`: an `-ERR` before it (a refused login) makes the
//! target unreachable, in the server's words.

pub(crate) mod stats;

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Buf;
use loadrig_spec::SpecError;
use loadrig_wire::mq::nats::{self, Auth, Connect, ServerOp};
use loadrig_workloads::pubsub::nats::NatsLink;
use loadrig_workloads::pubsub::PubSubBackend;
use loadrig_workloads::{TargetError, TargetInfo, ASIDE_TIMEOUT};

use crate::settings::Connector;
use crate::socket::{said, Dial, Socket, Stream};
use crate::url::TargetUrl;

const DEFAULT_PORT: u16 = 4222;

const EXPECTED: &str =
    "nats://[USER:PASSWORD@|TOKEN@]HOST[:PORT][,PORT|,HOST[:PORT]...][?monitor=PORT|off]";

/// The most publishes one connection keeps in flight. Publishes are done
/// once written, so this only bounds what a workload queues.
const MAX_DEPTH: usize = 65_536;

/// Read buffer growth step.
const READ_CHUNK: usize = 64 * 1024;

const DURABILITY: &str =
    "at most once: core NATS keeps no messages; a subscriber that is slow or away loses them";

/// Parse what follows `nats://`. A lone user (`TOKEN@`) is a token.
/// `?monitor=PORT` names the first server's monitoring port, whose
/// `/varz` is sampled per lap (8222 by default; `off`: none).
pub(crate) fn parse_url(rest: &str) -> Result<(TargetUrl, Option<u16>), SpecError> {
    let (url, options) = TargetUrl::parse("nats", rest, DEFAULT_PORT, EXPECTED)?;
    url.no_path("no path is taken")?;
    let mut monitor = Some(stats::MONITOR_PORT);
    for (k, v) in crate::query_pairs(options.unwrap_or_default()) {
        monitor = match (k, v) {
            ("monitor", "off") => None,
            ("monitor", port) => match port.parse::<u16>() {
                Ok(p) if p > 0 => Some(p),
                _ => return Err(url.bad(format_args!("monitor '{port}' is not a port or off"))),
            },
            (other, _) => return Err(url.bad(format_args!("unknown option '{other}'"))),
        };
    }
    Ok((url, monitor))
}

/// One or more NATS servers. Cheap: it connects per use.
pub struct NatsTarget {
    at: Arc<TargetUrl>,
    via: Arc<Connector>,
    /// The server the next connection goes to (round robin).
    next: AtomicUsize,
    version: OnceLock<String>,
    /// The first server's monitoring port, if sampled.
    monitor: Option<u16>,
}

impl NatsTarget {
    pub(crate) fn new(at: TargetUrl, monitor: Option<u16>, via: Arc<Connector>) -> NatsTarget {
        NatsTarget {
            monitor,
            at: Arc::new(at),
            via,
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
            if let Ok(Ok((_, v))) =
                tokio::time::timeout(ASIDE_TIMEOUT, open(&self.at, &self.via, 0)).await
            {
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

    fn server_stats(&self) -> Vec<Box<dyn loadrig_workloads::stats::StatsSource>> {
        let (host, port) = self.at.servers.first().cloned().unwrap_or_default();
        let varz = self.monitor.map(|m| {
            Box::new(stats::varz(self.via.clone(), host.clone(), m))
                as Box<dyn loadrig_workloads::stats::StatsSource>
        });
        varz.into_iter()
            .chain(crate::local::process_on(&host, port, &["nats-server"]))
            .collect()
    }
}

impl PubSubBackend for NatsTarget {
    type Conn = NatsConn;

    /// NATS does not name clients beyond the connection's `name`, so
    /// `client` is unused.
    async fn connect(&self, _client: u64) -> Result<NatsConn, TargetError> {
        let server = self.next.fetch_add(1, Ordering::Relaxed) % self.at.servers.len();
        let (sock, version) = open(&self.at, &self.via, server)
            .await
            .map_err(|e| self.unreachable(e))?;
        self.remember(version);
        let dial = Arc::new(NatsDial {
            at: self.at.clone(),
            via: self.via.clone(),
        });
        Ok(NatsLink::new(Stream::new(sock, dial, server)))
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

/// Connect to server `i` through `via` and shake hands; returns the
/// socket and the server's version (`nats-server 2.9.10`).
async fn open(
    at: &TargetUrl,
    via: &Connector,
    i: usize,
) -> Result<(Socket, Option<String>), LinkError> {
    let (host, port, name) = at.server(i);
    let io = |source| LinkError::Io {
        server: name.clone(),
        source,
    };
    let mut sock = Socket::connect(via, &host, port, READ_CHUNK)
        .await
        .map_err(io)?;
    match tokio::time::timeout(via.handshake_limit(), handshake(&mut sock, at, via, &host)).await {
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

/// `INFO` in, TLS when the URL (`tls://`) or the server (`tls_required`)
/// asks for it, `CONNECT` and `PING` out, `PONG` in.
async fn handshake(
    sock: &mut Socket,
    at: &TargetUrl,
    via: &Connector,
    host: &str,
) -> Result<Option<String>, Handshake> {
    let version = loop {
        match nats::parse_server_op(&sock.rbuf) {
            Ok(Some((ServerOp::Info(info), n))) => {
                let v = info.version().map(|v| format!("nats-server {v}"));
                let required = info.bool_field("tls_required") == Some(true);
                let offered = required || info.bool_field("tls_available") == Some(true);
                sock.rbuf.advance(n);
                if at.tls && !offered {
                    return Err(Handshake::Refused("the server offers no TLS".to_string()));
                }
                if at.tls || required {
                    sock.start_tls(via, host).await?;
                }
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

/// One client's connection: the workload's NATS link on the shared stream.
pub type NatsConn = NatsLink<Stream<NatsDial>>;

/// How a connection (re)opens its socket: TCP, then the handshake.
pub struct NatsDial {
    at: Arc<TargetUrl>,
    via: Arc<Connector>,
}

impl Dial for NatsDial {
    fn servers(&self) -> usize {
        self.at.servers.len()
    }

    async fn dial(&self, server: usize) -> Option<Socket> {
        open(&self.at, &self.via, server)
            .await
            .ok()
            .map(|(sock, _)| sock)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nats_urls() {
        let (u, monitor) = parse_url("127.0.0.1").unwrap();
        assert_eq!(monitor, Some(8222));
        assert_eq!(parse_url("h?monitor=8333").unwrap().1, Some(8333));
        assert_eq!(parse_url("h?monitor=off").unwrap().1, None);
        assert!(parse_url("h?monitor=x").is_err());
        assert_eq!(u.servers, [("127.0.0.1".to_string(), 4222)]);
        assert_eq!(u.label(), "nats://127.0.0.1:4222");
        let (u, _) = parse_url("bench:s%3Acret@h1,h2:4223,4224/").unwrap();
        assert_eq!(u.servers.len(), 3);
        assert_eq!(u.servers[2], ("h2".to_string(), 4224));
        assert_eq!(u.password.as_deref(), Some("s:cret"));
        assert_eq!(u.label(), "nats://bench:***@h1:4222,h2:4223,h2:4224");
        let (u, _) = parse_url("t0ken@h").unwrap();
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
}
