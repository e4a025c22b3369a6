//! Redis over RESP2, hand written on `loadrig_wire::kv` and tokio sockets:
//! one pipelined FIFO connection per engine connection, dealt over the
//! servers of the URL round robin.
//!
//! [`RedisConn`] is the shared byte stream (`socket::Stream`): it moves
//! bytes, and reconnects by logging in and selecting the database again.
//! The workload parses the replies where they lie and keeps the tags in
//! flight (`loadrig_workloads::redis::RespConn`): bytes that are not RESP,
//! or a reply nobody asked for, break the connection (a protocol error;
//! the engine reconnects), never the process.
//!
//! Logging in (`AUTH`, with `redis://[USER]:PASSWORD@...`) and `SELECT db`
//! are pipelined at connect time, and their replies checked.
//!
//! Pub/sub (`PUBLISH`, `SUBSCRIBE`) is in [`pubsub`].

mod cluster;
mod kv;
mod pubsub;
pub(crate) mod stats;

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Buf;
use loadrig_spec::SpecError;
use loadrig_wire::kv::resp::{self};

use crate::settings::Connector;
use crate::url::{hostport, TargetUrl};
use loadrig_workloads::redis::{cmd, Command, RedisBackend, RespAdmin, Value};
use loadrig_workloads::stats::StatsSource;
use loadrig_workloads::{TargetError, TargetInfo, ASIDE_TIMEOUT};

use crate::socket::{said, Dial, Socket, Stream};

pub use cluster::{ClusterStream, RedisClusterTarget};
pub use pubsub::RedisPubSubConn;

const DEFAULT_PORT: u16 = 6379;

/// The most commands one connection keeps in flight: a bound on memory.
const MAX_DEPTH: usize = 65_536;

/// How long a cold-path batch of commands may take.
const ADMIN_TIMEOUT: Duration = Duration::from_secs(120);

/// Read buffer growth step.
const READ_CHUNK: usize = 16 * 1024;

const EXPECTED: &str = "redis://[[USER]:PASSWORD@]HOST[:PORT][,PORT|,HOST[:PORT]...]";

pub(crate) use cluster::parse_url as parse_cluster_url;

/// Parse what follows `redis://`: servers and an optional login; the
/// database is `--dbnum`, not a path.
pub(crate) fn parse_url(rest: &str) -> Result<TargetUrl, SpecError> {
    // A lone `SECRET@` is a password without its colon: masked as one.
    let (url, options) = TargetUrl::parse("redis", rest, DEFAULT_PORT, EXPECTED)?;
    url.no_path("no database is taken (the database is --dbnum)")?;
    url.no_options(options)?;
    if url.user.is_some() && url.password.is_none() {
        return Err(url.bad("a login is :PASSWORD@ or USER:PASSWORD@"));
    }
    Ok(url)
}

/// One or more Redis servers. Cheap: it connects per use.
pub struct RedisTarget {
    at: Arc<TargetUrl>,
    via: Arc<Connector>,
    /// The server the next pub/sub or kv connection goes to (round robin;
    /// the redis workload's connections go by their worker number).
    next: AtomicU32,
    version: OnceLock<String>,
    durability: OnceLock<String>,
    /// What the server refused to say about itself (INFO, CONFIG GET).
    unread: OnceLock<Vec<String>>,
    /// The kv workload's dataset: its key prefix, index and marker.
    kv: Arc<kv::Names>,
}

impl RedisTarget {
    pub(crate) fn new(at: TargetUrl, via: Arc<Connector>) -> RedisTarget {
        RedisTarget {
            at: Arc::new(at),
            via,
            next: AtomicU32::new(0),
            version: OnceLock::new(),
            durability: OnceLock::new(),
            unread: OnceLock::new(),
            kv: Arc::new(kv::Names::new("kv")),
        }
    }

    /// The next number in the round robin of pub/sub and kv connections.
    fn round_robin(&self) -> u32 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    fn unreachable(&self, e: LinkError) -> TargetError {
        TargetError::Unreachable {
            target: self.at.label(),
            reason: e.to_string(),
        }
    }

    /// The first server's version and what a write promises there, from
    /// one connection: `INFO server` and `CONFIG GET` of the persistence
    /// settings, pipelined. A server that refuses CONFIG (renamed away)
    /// still says its version.
    async fn ask(&self) -> Option<()> {
        let mut a = self.admin(0, 0).await.ok()?;
        let config = |name: &str| cmd(&["CONFIG", "GET", name]);
        let replies = a
            .call(&[
                cmd(&["INFO", "server"]),
                config("appendonly"),
                config("appendfsync"),
                config("save"),
            ])
            .await
            .ok()?;
        let mut unread = Vec::new();
        match replies.first() {
            Some(Value::Bulk(Some(text))) => {
                let text = String::from_utf8_lossy(text);
                if let Some(v) = text.lines().find_map(|l| l.strip_prefix("redis_version:")) {
                    let _ = self.version.set(format!("Redis {}", v.trim()));
                }
            }
            Some(Value::Error(e)) => unread.push(format!("the version (INFO refused: {e})")),
            _ => unread.push("the version (INFO answered something else)".to_string()),
        }
        let setting = |i: usize| match replies.get(i) {
            Some(Value::Array(Some(kv))) => match kv.get(1) {
                Some(Value::Bulk(Some(b))) => Some(String::from_utf8_lossy(b).into_owned()),
                _ => None,
            },
            _ => None,
        };
        let aof = setting(1);
        if aof.is_none() {
            let why = match replies.get(1) {
                Some(Value::Error(e)) => format!("CONFIG GET refused: {e}"),
                _ => "CONFIG GET appendonly answered no value".to_string(),
            };
            unread.push(format!("the durability ({why})"));
        }
        let _ = self.unread.set(unread);
        let aof = aof?;
        let fsync = setting(2).unwrap_or_default();
        let save = setting(3).unwrap_or_default();
        let meaning = match (aof.as_str(), fsync.as_str()) {
            ("yes", "always") => "each write is fsynced to the append-only file before it is answered",
            ("yes", "everysec") => "writes reach the append-only file's disk once a second: a crash may lose the last second",
            ("yes", _) => "writes go to the append-only file, fsynced when the OS chooses",
            _ if !save.is_empty() => "writes live in memory, saved by snapshots: a crash loses what came after the last one",
            _ => "writes live in memory only: a restart loses them",
        };
        let _ = self.durability.set(format!(
            "appendonly={aof}, appendfsync={fsync}, save='{save}': {meaning}"
        ));
        Some(())
    }
}

impl TargetInfo for RedisTarget {
    async fn server_version(&self) -> Option<String> {
        // Nice to know, never worth waiting for: a server that does not
        // answer INFO or CONFIG is found out by the run itself.
        if self.version.get().is_none() {
            let _ = tokio::time::timeout(ASIDE_TIMEOUT, self.ask()).await;
        }
        self.version.get().cloned()
    }

    fn durability(&self) -> Option<String> {
        self.durability.get().cloned()
    }

    fn max_depth(&self) -> usize {
        MAX_DEPTH
    }

    fn server_stats(&self) -> Vec<Box<dyn StatsSource>> {
        let (host, port) = self.at.servers.first().cloned().unwrap_or_default();
        let info: Box<dyn StatsSource> =
            Box::new(stats::RedisInfo::new(self.at.clone(), self.via.clone()));
        std::iter::once(info)
            .chain(crate::local::process_on(&host, port, &["redis-server"]))
            .collect()
    }

    fn unread(&self) -> Vec<String> {
        self.unread.get().cloned().unwrap_or_default()
    }
}

impl RedisBackend for RedisTarget {
    type Conn = RedisConn;
    type Admin = Admin;

    fn servers(&self) -> usize {
        self.at.servers.len()
    }

    async fn connect(&self, db: u32, worker: u32) -> Result<RedisConn, TargetError> {
        let server = worker as usize % self.at.servers.len().max(1);
        let link = Link::open(&self.at, &self.via, server, db)
            .await
            .map_err(|e| self.unreachable(e))?;
        let dial = Arc::new(RedisDial {
            at: self.at.clone(),
            via: self.via.clone(),
            db,
        });
        Ok(Stream::new(link.sock, dial, server))
    }

    async fn admin(&self, server: usize, db: u32) -> Result<Admin, TargetError> {
        let link = Link::open(&self.at, &self.via, server, db)
            .await
            .map_err(|e| self.unreachable(e))?;
        Ok(Admin {
            link,
            label: self.at.label(),
        })
    }
}

/// Why a link could not be opened.
#[derive(Debug, thiserror::Error)]
enum LinkError {
    #[error("{server}: {}", said(source, "Redis"))]
    Io {
        server: String,
        #[source]
        source: io::Error,
    },
    #[error("{server}: {what} refused: {why}")]
    Refused {
        server: String,
        what: &'static str,
        why: String,
    },
}

/// One logged-in socket.
struct Link {
    sock: Socket,
}

impl Link {
    /// Connect to server `i` through `via`, log in, select `db`.
    async fn open(at: &TargetUrl, via: &Connector, i: usize, db: u32) -> Result<Link, LinkError> {
        let (host, port) = at.servers.get(i).cloned().unwrap_or_default();
        Link::dial(at, via, &host, port, db).await
    }

    /// Connect to `host:port` (one of `at`'s servers or a node a cluster
    /// named) through `via`, log in as `at` says, select `db`.
    async fn dial(
        at: &TargetUrl,
        via: &Connector,
        host: &str,
        port: u16,
        db: u32,
    ) -> Result<Link, LinkError> {
        let name = hostport(host, port);
        let io = |source| LinkError::Io {
            server: name.clone(),
            source,
        };
        let timed_out = || io::Error::new(io::ErrorKind::TimedOut, "timed out");
        let sock = Socket::open(via, host, port, READ_CHUNK, at.tls)
            .await
            .map_err(io)?;
        let mut link = Link { sock };
        let mut asked: Vec<&'static str> = Vec::new();
        if let Some(pass) = &at.password {
            match &at.user {
                Some(user) => {
                    resp::encode_cmd3(&mut link.sock.wbuf, b"AUTH", user.as_str(), pass.as_str())
                }
                None => resp::encode_cmd2(&mut link.sock.wbuf, b"AUTH", pass.as_str()),
            }
            asked.push("login");
        }
        if db != 0 {
            resp::encode_cmd2(&mut link.sock.wbuf, b"SELECT", db);
            asked.push("SELECT");
        }
        for what in asked {
            let reply = tokio::time::timeout(via.handshake_limit(), link.reply())
                .await
                .map_err(|_| io(timed_out()))?
                .map_err(io)?;
            match reply {
                Value::Simple(ok) if ok == b"OK" => {}
                Value::Error(why) => {
                    return Err(LinkError::Refused {
                        server: name,
                        what,
                        why,
                    })
                }
                other => {
                    return Err(io(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("{what} answered {other:?}"),
                    )))
                }
            }
        }
        Ok(link)
    }

    /// The next whole reply, owned (cold path).
    async fn reply(&mut self) -> io::Result<Value> {
        loop {
            match resp::parse_reply(&self.sock.rbuf) {
                Ok(Some((reply, n))) => {
                    let v = Value::of(reply);
                    self.sock.rbuf.advance(n);
                    return Ok(v);
                }
                Ok(None) => self.sock.fill().await?,
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            }
        }
    }
}

/// A cold-path connection.
pub struct Admin {
    link: Link,
    label: String,
}

impl Admin {
    /// The replies to the `n` commands just encoded into the write
    /// buffer, each handed to `f(i, reply)` where it lies. `what` names
    /// the commands in an error.
    pub(crate) async fn replies(
        &mut self,
        what: &[u8],
        n: usize,
        mut f: impl FnMut(usize, resp::Reply<'_>),
    ) -> Result<(), TargetError> {
        let link = &mut self.link;
        let replies = async {
            for i in 0..n {
                loop {
                    match resp::parse_reply(&link.sock.rbuf) {
                        Ok(Some((reply, len))) => {
                            f(i, reply);
                            link.sock.rbuf.advance(len);
                            break;
                        }
                        Ok(None) => link.sock.fill().await?,
                        Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
                    }
                }
            }
            Ok::<_, io::Error>(())
        };
        let what = String::from_utf8_lossy(what);
        match tokio::time::timeout(ADMIN_TIMEOUT, replies).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(TargetError::Prepare {
                target: self.label.clone(),
                reason: format!("{what}: {}", said(&e, "Redis")),
            }),
            Err(_) => Err(TargetError::Prepare {
                target: self.label.clone(),
                reason: format!("{what}: no answer in {} s", ADMIN_TIMEOUT.as_secs()),
            }),
        }
    }

    /// Encode `MGET keys` (borrowed, not copied into a command).
    pub(crate) fn encode_mget<'k>(&mut self, keys: impl ExactSizeIterator<Item = &'k [u8]>) {
        let mut parts: Vec<&[u8]> = Vec::with_capacity(keys.len() + 1);
        parts.push(b"MGET");
        parts.extend(keys);
        resp::encode_command(&mut self.link.sock.wbuf, &parts);
    }
}

/// The values of an MGET reply for `n` keys, each handed to
/// `seen(i, value)`; `Err` (the reply, owned) when it is not that.
pub(crate) fn mget_values(
    reply: resp::Reply<'_>,
    n: usize,
    mut seen: impl FnMut(usize, Option<&[u8]>),
) -> Result<(), Value> {
    match reply {
        resp::Reply::Array(Some(a)) if a.len() == n => {
            for (i, v) in a.iter().enumerate() {
                seen(i, v.as_bytes());
            }
            Ok(())
        }
        other => Err(Value::of(other)),
    }
}

impl RespAdmin for Admin {
    async fn call(&mut self, commands: &[Command]) -> Result<Vec<Value>, TargetError> {
        for c in commands {
            let parts: Vec<&[u8]> = c.iter().map(Vec::as_slice).collect();
            resp::encode_command(&mut self.link.sock.wbuf, &parts);
        }
        let what = commands
            .first()
            .and_then(|c| c.first())
            .map_or(&b""[..], |w| w);
        let mut out = Vec::with_capacity(commands.len());
        self.replies(what, commands.len(), |_, r| out.push(Value::of(r)))
            .await?;
        Ok(out)
    }

    async fn mget_each(
        &mut self,
        keys: &[Vec<u8>],
        seen: &mut impl FnMut(usize, Option<&[u8]>),
    ) -> Result<Result<(), Value>, TargetError> {
        self.encode_mget(keys.iter().map(Vec::as_slice));
        let mut got = Ok(());
        self.replies(b"MGET", 1, |_, r| {
            got = mget_values(r, keys.len(), &mut *seen)
        })
        .await?;
        Ok(got)
    }
}

/// One engine connection: a byte stream that logs in and selects its
/// database again when it reconnects; the workload parses the replies.
pub type RedisConn = Stream<RedisDial>;

/// How an engine connection (re)opens its link.
pub struct RedisDial {
    at: Arc<TargetUrl>,
    via: Arc<Connector>,
    db: u32,
}

impl Dial for RedisDial {
    fn servers(&self) -> usize {
        self.at.servers.len()
    }

    async fn dial(&self, server: usize) -> Option<Socket> {
        Link::open(&self.at, &self.via, server, self.db)
            .await
            .ok()
            .map(|l| l.sock)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadrig_metrics::ErrorKind;
    use loadrig_workloads::redis::RespConn;
    use loadrig_workloads::stream::ByteStream;

    #[test]
    fn parses_redis_urls() {
        let u = parse_url("127.0.0.1").unwrap();
        assert_eq!(u.servers, vec![("127.0.0.1".to_string(), 6379)]);
        assert_eq!((u.user.as_deref(), u.password.as_deref()), (None, None));
        assert_eq!(u.label(), "redis://127.0.0.1:6379");
        let u = parse_url("127.0.0.1:6379,6380,h2,[::1]:7000,7001/").unwrap();
        let ports: Vec<(&str, u16)> = u.servers.iter().map(|(h, p)| (h.as_str(), *p)).collect();
        assert_eq!(
            ports,
            [
                ("127.0.0.1", 6379),
                ("127.0.0.1", 6380),
                ("h2", 6379),
                ("::1", 7000),
                ("::1", 7001)
            ]
        );
        let u = parse_url(":s%40cret@h").unwrap();
        assert_eq!((u.user, u.password.as_deref()), (None, Some("s@cret")));
        let u = parse_url("bench:pw@h:1").unwrap();
        assert_eq!(u.user.as_deref(), Some("bench"));
        assert_eq!(u.label(), "redis://bench:***@h:1");
        assert_eq!(parse_url(":pw@h").unwrap().label(), "redis://:***@h:6379");
    }

    #[test]
    fn bad_redis_urls_name_the_flag_and_hide_the_password() {
        for rest in [
            "",
            ":secret@h,,h2",
            ":secret@h:0",
            ":secret@6380",
            "h/0",
            "h?db=1",
            "secret@h",
            ":secret@h,99999",
        ] {
            let e = parse_url(rest).unwrap_err();
            assert_eq!(e.flag, "--target", "{rest}");
            assert!(!e.to_string().contains("secret"), "{e}");
        }
    }

    /// A one-connection server on loopback: for each answer it reads
    /// once and writes the answer, then keeps the connection open a while.
    fn fake(answers: &'static [&'static [u8]]) -> RedisTarget {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 4096];
            for answer in answers {
                let _ = s.read(&mut buf);
                s.write_all(answer).unwrap();
            }
            std::thread::sleep(Duration::from_secs(2));
        });
        RedisTarget::new(
            parse_url(&format!(":pw@127.0.0.1:{port}")).unwrap(),
            Connector::new(&crate::ClientSettings::default()),
        )
    }

    #[tokio::test]
    async fn replies_answer_tags_in_order_until_garbage() {
        // AUTH and SELECT answered first, then the four commands.
        let t = fake(&[
            b"+OK\r\n+OK\r\n",
            b"+PONG\r\n:7\r\n-WRONGTYPE no\r\n?garbage\r\n",
        ]);
        // The workload's RESP reading over the target's byte stream.
        let mut c = RespConn::new(t.connect(3, 0).await.unwrap());
        for tag in [5, 2, 9, 4] {
            resp::encode_cmd1(c.out(), b"PING");
            c.queued(tag);
        }
        let mut got = Vec::new();
        let broken = loop {
            match c.next(|tag, r| (tag, Value::of(r))) {
                Some(Ok(x)) => got.push(x),
                Some(Err(e)) => break e,
                None => c.stream().fill().await.unwrap(),
            }
        };
        assert_eq!(
            got,
            [
                (5, Value::Simple(b"PONG".to_vec())),
                (2, Value::Integer(7)),
                (9, Value::Error("WRONGTYPE no".into()))
            ]
        );
        assert_eq!(broken.kind, ErrorKind::Protocol);
        let (sent, received) = c.take_bytes();
        assert!(sent > 0 && received > 0);
    }

    #[tokio::test]
    async fn a_refused_login_is_unreachable_and_says_why() {
        let t = fake(&[b"-WRONGPASS invalid username-password pair\r\n"]);
        let Err(e) = t.connect(0, 0).await else {
            panic!("a refused login connects")
        };
        let e = e.to_string();
        assert!(e.contains("login refused: WRONGPASS"), "{e}");
        assert!(e.contains("redis://:***@127.0.0.1:"), "{e}");
    }
}
