//! VoltDB over its native client wire protocol (`loadrig_wire::volt` for the
//! bytes, tokio for the sockets): logins, many invocations in flight on
//! one connection matched by client handle, several hosts.
//!
//! [`VoltConn`] is one engine connection. `send` encodes an invocation
//! into a write buffer; `recv` hands back any whole response already
//! buffered, else flushes what was queued and waits for the socket. Both
//! buffers live in the connection and the socket calls are `try_*` after
//! readiness, so dropping a `recv` (the engine serves a timer) loses
//! nothing. The client handle is the engine's tag.
//!
//! Connections are dealt over the hosts of the URL round robin; the
//! engine's per-connection callers and managed queue give direct and
//! managed dispatch.

mod hello;
mod kv;
mod procs;
pub(crate) mod stats;
mod voter;

use std::io;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Buf;
use loadrig_engine::CountsBytes;
use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_spec::SpecError;
use loadrig_wire::volt as vw;
use loadrig_workloads::{Reply, TargetError, TargetInfo};

use crate::settings::Connector;
use crate::socket::{said, Socket};
use crate::url::TargetUrl;

const DEFAULT_PORT: u16 = 21212;

/// The most calls one connection keeps in flight: a bound on memory, far
/// above what the server's own per-connection back-pressure lets through.
const MAX_DEPTH: usize = 65_536;

/// How long a cold-path call (DDL, class loading, counts) may take.
const ADMIN_TIMEOUT: Duration = Duration::from_secs(120);

/// Read buffer growth step.
const READ_CHUNK: usize = 64 * 1024;

const EXPECTED: &str = "voltdb://[USER:PASSWORD@]HOST[:PORT][,PORT|,HOST[:PORT]...]";

/// Parse what follows `voltdb://`: the hosts and an optional login.
pub(crate) fn parse_url(rest: &str) -> Result<TargetUrl, SpecError> {
    let (url, options) = TargetUrl::parse("voltdb", rest, DEFAULT_PORT, EXPECTED)?;
    url.no_path("no database is taken")?;
    url.no_options(options)?;
    Ok(url)
}

/// A VoltDB cluster. Cheap: it connects per use.
pub struct VoltTarget {
    at: Arc<TargetUrl>,
    via: Arc<Connector>,
    /// The next host a connection goes to (round robin).
    next_host: AtomicUsize,
    /// The server's build string, from the first login.
    build: OnceLock<String>,
    /// What a commit promises, from the deployment; `durability()` is sync.
    durability: OnceLock<String>,
    /// The kv workload's dataset: its table and procedure.
    kv: Arc<kv::Names>,
}

impl VoltTarget {
    pub(crate) fn new(at: TargetUrl, via: Arc<Connector>) -> VoltTarget {
        VoltTarget {
            at: Arc::new(at),
            via,
            next_host: AtomicUsize::new(0),
            build: OnceLock::new(),
            durability: OnceLock::new(),
            kv: Arc::new(kv::Names::new("kv")),
        }
    }

    fn unreachable(&self, reason: String) -> TargetError {
        TargetError::Unreachable {
            target: self.at.label(),
            reason,
        }
    }

    fn failed(&self, reason: impl Into<String>) -> TargetError {
        TargetError::Prepare {
            target: self.at.label(),
            reason: reason.into(),
        }
    }

    /// A logged-in link to the next host.
    async fn link(&self) -> Result<(Link, usize), TargetError> {
        let host = self.next_host.fetch_add(1, Ordering::Relaxed) % self.at.servers.len();
        let (link, build) = Link::open(&self.at, &self.via, host)
            .await
            .map_err(|e| self.unreachable(e.to_string()))?;
        let _ = self.build.set(build);
        Ok((link, host))
    }

    /// A connection for cold-path calls, one at a time: to the next host,
    /// or failing that to any other, so that counts and teardown still
    /// reach a cluster that lost a node during the run. The error names
    /// the first host that failed.
    async fn admin(&self) -> Result<Admin<'_>, TargetError> {
        let mut first = None;
        for _ in 0..self.at.servers.len() {
            match self.link().await {
                Ok((link, _)) => return Ok(Admin { link, target: self }),
                Err(e) => {
                    first.get_or_insert(e);
                }
            }
        }
        Err(first.unwrap_or_else(|| self.unreachable("no host".into())))
    }

    /// One engine connection answering with `A`.
    async fn conn<A: Answer>(&self) -> Result<VoltConn<A>, TargetError> {
        let (link, host) = self.link().await?;
        Ok(VoltConn {
            at: self.at.clone(),
            via: self.via.clone(),
            host,
            link,
            pending: Vec::new(),
            _answer: PhantomData,
        })
    }
}

impl TargetInfo for VoltTarget {
    fn default_connections(&self) -> Option<u32> {
        Some(
            u32::try_from(self.at.servers.len())
                .unwrap_or(u32::MAX)
                .max(1),
        )
    }

    async fn server_version(&self) -> Option<String> {
        let mut a = self.admin().await.ok()?;
        if self.durability.get().is_none() {
            if let Ok(d) = a.durability().await {
                let _ = self.durability.set(d);
            }
        }
        // "9.3.2_voltdb-9.3.2-0-g6c6cf8d-local": the version is before '_'.
        let build = self.build.get()?;
        Some(format!(
            "VoltDB {}",
            build.split('_').next().unwrap_or(build)
        ))
    }

    fn durability(&self) -> Option<String> {
        self.durability.get().cloned()
    }

    fn max_depth(&self) -> usize {
        MAX_DEPTH
    }

    /// `@Statistics` on the first host, and its process when it runs here.
    fn server_stats(&self) -> Vec<Box<dyn loadrig_workloads::stats::StatsSource>> {
        let volt = Box::new(stats::VoltStatistics::new(
            self.at.clone(),
            self.via.clone(),
        )) as Box<dyn loadrig_workloads::stats::StatsSource>;
        std::iter::once(volt)
            .chain(crate::local::first_process(&self.at, &["java"]))
            .collect()
    }
}

/// Why a link could not be opened or went down.
#[derive(Debug, thiserror::Error)]
enum LinkError {
    #[error("{host}: {}", said(source, "VoltDB"))]
    Io {
        host: String,
        #[source]
        source: io::Error,
    },
    #[error("{host}: login refused: {why}")]
    Refused { host: String, why: &'static str },
    #[error("{host}: not a VoltDB server: {source}")]
    Wire {
        host: String,
        #[source]
        source: vw::WireError,
    },
}

/// One logged-in socket.
struct Link {
    sock: Socket,
}

impl Link {
    /// Connect to host `i` of `at` through `via` and log in; returns the
    /// server's build.
    async fn open(at: &TargetUrl, via: &Connector, i: usize) -> Result<(Link, String), LinkError> {
        let (host, port) = at.servers.get(i).cloned().unwrap_or_default();
        let name = format!("{host}:{port}");
        let io = |source| LinkError::Io {
            host: name.clone(),
            source,
        };
        let wire = |source| LinkError::Wire {
            host: name.clone(),
            source,
        };
        let sock = Socket::connect(via, &host, port, READ_CHUNK)
            .await
            .map_err(io)?;
        let mut link = Link { sock };
        vw::encode_login(
            &mut link.sock.wbuf,
            at.user.as_deref().unwrap_or_default(),
            at.password.as_deref().unwrap_or_default(),
            vw::LOGIN_VERSION,
        )
        .map_err(wire)?;
        let login = async {
            let n = link.next_frame().await?;
            Ok::<_, io::Error>(n)
        };
        let n = tokio::time::timeout(via.handshake_limit(), login)
            .await
            .map_err(|_| io(io::Error::new(io::ErrorKind::TimedOut, "login timed out")))?
            .map_err(io)?;
        let answer = vw::decode_login_response(link.sock.rbuf.get(..n).unwrap_or_default());
        link.sock.rbuf.advance(n);
        match answer.map_err(wire)? {
            vw::LoginResponse::Accepted(info) => Ok((link, info.build)),
            vw::LoginResponse::Rejected(why) => Err(LinkError::Refused {
                host: name,
                why: refusal(why),
            }),
        }
    }

    /// The length of the next whole frame at the front of `rbuf`, reading
    /// (and flushing what is queued) until there is one. Cancel safe.
    async fn next_frame(&mut self) -> io::Result<usize> {
        loop {
            match vw::frame_len(&self.sock.rbuf) {
                Ok(Some(n)) => return Ok(n),
                Ok(None) => self.sock.fill().await?,
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            }
        }
    }

    /// The next whole response, decoded in full (cold path).
    async fn response(&mut self) -> io::Result<vw::Response> {
        let n = self.next_frame().await?;
        let r = vw::decode_response(self.sock.rbuf.get(..n).unwrap_or_default());
        self.sock.rbuf.advance(n);
        r.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }
}

fn refusal(why: vw::AuthFailure) -> &'static str {
    match why {
        vw::AuthFailure::AuthenticationFailed => "bad user name or password",
        vw::AuthFailure::TooManyConnections => "too many connections",
        vw::AuthFailure::Timeout => "the server timed out waiting for the login",
        vw::AuthFailure::FormatError => "the server could not read the login",
        vw::AuthFailure::Rejoining => "the node is rejoining the cluster",
        vw::AuthFailure::ServiceDisabled => "service disabled",
        vw::AuthFailure::Other(_) => "unknown reason",
    }
}

/// A failed status as a static error class.
fn status_class(s: vw::Status) -> &'static str {
    match s {
        vw::Status::Success => "success",
        vw::Status::UserAbort => "user_abort",
        vw::Status::GracefulFailure => "graceful_failure",
        vw::Status::UnexpectedFailure => "unexpected_failure",
        vw::Status::ConnectionLost => "connection_lost",
        vw::Status::ServerUnavailable => "server_unavailable",
        vw::Status::ConnectionTimeout => "connection_timeout",
        vw::Status::ResponseUnknown => "response_unknown",
        vw::Status::TxnRestart => "txn_restart",
        vw::Status::OperationalFailure => "operational_failure",
        vw::Status::Other(_) => "other",
    }
}

/// A cold-path connection: one call at a time, whole responses.
struct Admin<'t> {
    link: Link,
    target: &'t VoltTarget,
}

impl Admin<'_> {
    /// Call a procedure; a failed status is an error naming the procedure.
    async fn call(
        &mut self,
        procedure: &str,
        params: &[vw::Value],
    ) -> Result<vw::Response, TargetError> {
        vw::encode_invocation(&mut self.link.sock.wbuf, procedure, 1, params)
            .map_err(|e| self.target.failed(format!("{procedure}: {e}")))?;
        let r = tokio::time::timeout(ADMIN_TIMEOUT, self.link.response())
            .await
            .map_err(|_| {
                self.target.failed(format!(
                    "{procedure}: no answer in {} s",
                    ADMIN_TIMEOUT.as_secs()
                ))
            })?
            .map_err(|e| self.target.failed(format!("{procedure}: {e}")))?;
        if !r.status.is_success() {
            let why = r.status_string.as_deref().unwrap_or(status_class(r.status));
            return Err(self.target.failed(format!("{procedure}: {why}")));
        }
        Ok(r)
    }

    /// Run SQL (DDL or a query) through `@AdHoc`.
    async fn sql(&mut self, sql: &str) -> Result<Vec<vw::VoltTable>, TargetError> {
        Ok(self
            .call("@AdHoc", &[vw::Value::String(sql.to_string())])
            .await?
            .tables)
    }

    /// The first cell of a one-number query.
    async fn scalar(&mut self, sql: &str) -> Result<i64, TargetError> {
        self.sql(sql)
            .await?
            .first()
            .and_then(vw::VoltTable::as_scalar_i64)
            .ok_or_else(|| self.target.failed(format!("no number from '{sql}'")))
    }

    /// Names of the user procedures and tables in the catalog, upper case.
    async fn catalog(&mut self, selector: &str, column: &str) -> Result<Vec<String>, TargetError> {
        let tables = self
            .call("@SystemCatalog", &[vw::Value::String(selector.to_string())])
            .await?
            .tables;
        let Some(t) = tables.first() else {
            return Ok(Vec::new());
        };
        let Some(c) = t.column_index(column) else {
            return Err(self
                .target
                .failed(format!("@SystemCatalog {selector}: no {column}")));
        };
        Ok((0..t.row_count())
            .filter_map(|r| t.get_str(r, c).map(str::to_ascii_uppercase))
            .collect())
    }

    /// The deployment's durability settings, in a sentence.
    async fn durability(&mut self) -> Result<String, TargetError> {
        let tables = self
            .call(
                "@SystemInformation",
                &[vw::Value::String("DEPLOYMENT".into())],
            )
            .await?
            .tables;
        let setting = |name: &str| {
            tables.first().and_then(|t| {
                (0..t.row_count())
                    .find(|&r| t.get_str(r, 0) == Some(name))
                    .and_then(|r| t.get_str(r, 1))
                    .map(str::to_string)
            })
        };
        let log = setting("commandlogenabled").unwrap_or_else(|| "false".into());
        let sync = setting("commandlogmode").unwrap_or_default();
        let k = setting("kfactor").unwrap_or_else(|| "0".into());
        let meaning = if log == "true" && sync == "sync" {
            "each commit is in the command log on disk before it is answered"
        } else if log == "true" {
            "commits are logged to disk in the background: a crash may lose the last few"
        } else {
            "a commit lives in memory only: a crash of the cluster loses what no snapshot holds"
        };
        Ok(format!(
            "commandlog={log}{}, kfactor={k}: {meaning}",
            if sync.is_empty() {
                String::new()
            } else {
                format!(" ({sync})")
            }
        ))
    }

    /// Run DDL statements one by one, so an error names its statement.
    async fn ddl(&mut self, script: &str) -> Result<(), TargetError> {
        for stmt in statements(script) {
            self.sql(&stmt).await?;
        }
        Ok(())
    }
}

/// The statements of a SQL script: comments dropped, split at `;`.
fn statements(script: &str) -> Vec<String> {
    let text: String = script
        .lines()
        .map(|l| l.split("--").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    text.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| format!("{s};"))
        .collect()
}

/// How a workload reads its procedure's answers.
pub trait Answer: Send + 'static {
    /// What the connection remembers about a call in flight.
    type Pending: Copy + Send + 'static;
    type Out: Send + 'static;
    /// The answer to the call, from its whole response frame.
    fn decode(pending: &Self::Pending, frame: &[u8]) -> Result<Self::Out, OpError>;
}

/// One engine connection: invocations in flight, matched by client handle.
pub struct VoltConn<A: Answer> {
    at: Arc<TargetUrl>,
    via: Arc<Connector>,
    host: usize,
    link: Link,
    /// Indexed by tag: the calls in flight.
    pending: Vec<Option<A::Pending>>,
    _answer: PhantomData<fn() -> A>,
}

impl<A: Answer> VoltConn<A> {
    /// Queue one invocation under `tag`; sent at the next `recv`.
    fn invoke<P: vw::ParamSet>(
        &mut self,
        procedure: &str,
        tag: Tag,
        params: P,
        pending: A::Pending,
    ) {
        let t = tag as usize;
        if t >= self.pending.len() {
            self.pending.resize(t + 1, None);
        }
        // Encoding fails only for values the wire cannot carry, which the
        // workloads never produce; such a call would never be answered.
        if vw::encode_invocation_with(&mut self.link.sock.wbuf, procedure, i64::from(tag), params)
            .is_ok()
        {
            self.pending[t] = Some(pending);
        }
    }

    /// The next answer. Cancel safe: a response leaves the buffer only
    /// together with its answer.
    async fn next(&mut self) -> Reply<A::Out> {
        let n = match self.link.next_frame().await {
            Ok(n) => n,
            Err(e) => return Reply::Broken(io_error(&e)),
        };
        let frame = self.link.sock.rbuf.get(..n).unwrap_or_default();
        let reply = match vw::peek_client_handle(frame) {
            Ok(handle) => {
                let slot = u32::try_from(handle)
                    .ok()
                    .and_then(|t| Some((t, self.pending.get_mut(t as usize)?.take()?)));
                match slot {
                    Some((tag, pending)) => Reply::Done {
                        tag,
                        result: A::decode(&pending, frame),
                    },
                    // An answer to nothing we asked: the stream is not ours.
                    None => Reply::Broken(OpError::new(ErrorKind::Protocol)),
                }
            }
            Err(_) => Reply::Broken(OpError::new(ErrorKind::Protocol)),
        };
        self.link.sock.rbuf.advance(n);
        reply
    }

    /// A fresh link, to the same host first, then the others; calls in
    /// flight are lost.
    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.pending.iter_mut().for_each(|p| *p = None);
        let hosts = self.at.servers.len();
        for k in 0..hosts {
            let i = (self.host + k) % hosts;
            if let Ok((link, _)) = Link::open(&self.at, &self.via, i).await {
                self.link = link;
                self.host = i;
                return Ok(());
            }
        }
        Err(OpError::new(ErrorKind::Connect))
    }
}

impl<A: Answer> CountsBytes for VoltConn<A> {
    fn take_bytes(&mut self) -> (u64, u64) {
        self.link.sock.take_bytes()
    }
}

fn io_error(e: &io::Error) -> OpError {
    match e.kind() {
        io::ErrorKind::InvalidData => OpError::new(ErrorKind::Protocol),
        _ => OpError::new(ErrorKind::Io),
    }
}

/// A failed status as the error it counts as. A cluster that loses a node
/// answers the calls the node was running with `RESPONSE_UNKNOWN` (or
/// `CONNECTION_LOST`): the server itself cannot say whether they
/// committed, so they count as calls lost in flight (`io`), in doubt for
/// the verification, as when the client's own link drops
/// (docs/guides/voltdb-cluster.md).
fn status_error(s: vw::Status) -> OpError {
    match s {
        vw::Status::ResponseUnknown | vw::Status::ConnectionLost => OpError {
            kind: ErrorKind::Io,
            class: status_class(s),
        },
        _ => OpError::server(status_class(s)),
    }
}

/// The answer of a procedure that returns one number, or its failure.
fn scalar_answer(frame: &[u8]) -> Result<Option<i64>, OpError> {
    let (h, v) = vw::decode_scalar_i64(frame).map_err(|_| OpError::new(ErrorKind::Protocol))?;
    if h.status.is_success() {
        Ok(v)
    } else {
        Err(status_error(h.status))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_voltdb_urls() {
        let u = parse_url("127.0.0.1").unwrap();
        assert_eq!(u.servers, vec![("127.0.0.1".to_string(), 21212)]);
        assert_eq!((&u.user, &u.password), (&None, &None));
        assert_eq!(u.label(), "voltdb://127.0.0.1:21212");
        let u = parse_url("admin:s%40cret@h1:1,h2,[::1]:3/").unwrap();
        assert_eq!(u.servers.len(), 3);
        assert_eq!(u.servers[1], ("h2".to_string(), 21212));
        assert_eq!(u.password.as_deref(), Some("s@cret"));
        assert_eq!(u.label(), "voltdb://admin:***@h1:1,h2:21212,[::1]:3");
        // The bare-port shorthand every server URL takes.
        let u = parse_url("h1:21212,21213").unwrap();
        assert_eq!(u.label(), "voltdb://h1:21212,h1:21213");
    }

    #[test]
    fn bad_voltdb_urls_name_the_flag_and_hide_the_password() {
        for rest in [
            "",
            "u:secret@h1,,h2",
            "u:secret@h:0",
            "h/db",
            "h?x=1",
            "u:secret@h:x",
        ] {
            let e = parse_url(rest).unwrap_err();
            assert_eq!(e.flag, "--target", "{rest}");
            assert!(!e.to_string().contains("secret"), "{e}");
        }
    }

    #[test]
    fn a_call_the_cluster_cannot_account_for_is_in_doubt() {
        for s in [vw::Status::ResponseUnknown, vw::Status::ConnectionLost] {
            let e = status_error(s);
            assert_eq!(e.kind, ErrorKind::Io, "{s:?}");
            assert!(e.kind.in_doubt(), "{s:?}");
        }
        // A refusal or an abort did not commit: a server error, not in doubt.
        for s in [
            vw::Status::GracefulFailure,
            vw::Status::UserAbort,
            vw::Status::ServerUnavailable,
        ] {
            let e = status_error(s);
            assert_eq!(e, OpError::server(status_class(s)), "{s:?}");
            assert!(!e.kind.in_doubt(), "{s:?}");
        }
    }

    #[test]
    fn scripts_split_into_statements() {
        let s = statements("-- a comment\nCREATE TABLE t (a INT);\n\nCREATE PROCEDURE p AS\n  SELECT a FROM t; -- why\n");
        assert_eq!(
            s,
            vec![
                "CREATE TABLE t (a INT);",
                "CREATE PROCEDURE p AS\n  SELECT a FROM t;"
            ]
        );
    }
}
