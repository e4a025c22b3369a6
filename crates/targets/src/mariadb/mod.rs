//! MariaDB and MySQL over mysql_async (no TLS, no compression): the
//! connection set-up shared by the Voter and Hello, how server errors
//! become counted [`OpError`]s, and [`MyConn`], a connection that keeps
//! its call in flight inside itself.
//!
//! The MySQL protocol answers one command at a time, so a connection
//! carries one call (`max_depth` 1). The call's future owns the
//! connection and hands it back with the answer; it lives in [`MyConn`],
//! not in `recv`, so the engine may drop a `recv` future (to serve a
//! timer) without losing the call or the connection.

mod hello;
mod kv;
pub(crate) mod stats;
mod voter;

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures_util::future::BoxFuture;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_workloads::TargetInfo;
use loadrig_workloads::{Reply, TargetError};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder, Row, Statement};

use loadrig_spec::SpecError;

use crate::sql::SqlAdmin;
use crate::url::TargetUrl;

/// How long opening a connection may take before the server counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const EXPECTED: &str = "mysql://USER[:PASSWORD]@HOST[:PORT]/DATABASE";

/// Parse what follows `mysql://`: a user, one server and the database
/// the run creates its tables in.
pub(crate) fn parse_url(rest: &str) -> Result<TargetUrl, SpecError> {
    let (url, options) = TargetUrl::parse("mysql", rest, 3306, EXPECTED)?;
    url.no_options(options)?;
    url.one_server()?;
    if url.user.is_none() || url.path.is_empty() {
        return Err(url.bad("user, host and database are all needed"));
    }
    Ok(url)
}

/// A MariaDB (or MySQL) server and database. Cheap: it connects per use.
pub struct MariadbTarget {
    at: TargetUrl,
    opts: Opts,
    /// Read from the server at the first connection; `durability()` is sync.
    durability: OnceLock<String>,
    /// The kv workload's dataset: its table and procedure.
    kv: Arc<kv::Names>,
}

impl MariadbTarget {
    pub(crate) fn new(at: TargetUrl) -> MariadbTarget {
        let (host, port, _) = at.server(0);
        let opts = OptsBuilder::default()
            .ip_or_hostname(host)
            .tcp_port(port)
            .user(at.user.clone())
            .pass(at.password.clone())
            .db_name(Some(at.path.clone()))
            // Measure the TCP path asked for, not a Unix socket found on the way.
            .prefer_socket(false)
            .tcp_nodelay(true);
        MariadbTarget {
            at,
            opts: opts.into(),
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

    fn failed(&self, e: mysql_async::Error) -> TargetError {
        TargetError::Prepare {
            target: self.at.label(),
            reason: reason(&e),
        }
    }

    /// A connection for cold-path work (set-up, counts); failing to open
    /// one means the server cannot be reached (exit 3).
    async fn admin(&self) -> Result<Conn, TargetError> {
        let mut conn = open(&self.opts)
            .await
            .map_err(|e| self.unreachable(reason(&e)))?;
        if self.durability.get().is_none() {
            if let Ok(d) = durability(&mut conn).await {
                let _ = self.durability.set(d);
            }
        }
        Ok(conn)
    }

    /// One connection for the engine, its statements prepared.
    async fn conn<R>(&self, sql: &[&str]) -> Result<MyConn<R>, TargetError> {
        let (conn, statements) = open_prepared(&self.opts, sql)
            .await
            .map_err(|e| self.unreachable(reason(&e)))?;
        Ok(MyConn {
            opts: self.opts.clone(),
            sql: sql.iter().map(|s| (*s).to_string()).collect(),
            statements: statements.into(),
            idle: Some(conn),
            busy: None,
            waiting: VecDeque::new(),
        })
    }

    async fn server_version(&self) -> Option<String> {
        let mut conn = self.admin().await.ok()?;
        let row: Row = conn.query_first("SELECT VERSION()").await.ok()??;
        let v = text(&row, 0)?;
        // "10.11.19-MariaDB-0+deb12u1": MariaDB says its name in the version.
        Some(match v.split_once("-MariaDB") {
            Some((number, _)) => format!("MariaDB {number}"),
            None => format!("MySQL {v}"),
        })
    }

    /// Run a script (schema, fixed data, teardown) as one multi-statement query.
    /// Rows of a query.
    async fn query_rows(&self, sql: &str) -> Result<Vec<Row>, TargetError> {
        let mut conn = self.admin().await?;
        conn.query(sql).await.map_err(|e| self.failed(e))
    }
}

impl SqlAdmin for MariadbTarget {
    async fn script(&self, sql: &str) -> Result<(), TargetError> {
        let mut conn = self.admin().await?;
        conn.query_drop(sql).await.map_err(|e| self.failed(e))
    }

    async fn int_rows(&self, sql: &str) -> Result<Vec<Vec<i64>>, TargetError> {
        self.query_rows(sql)
            .await?
            .iter()
            .map(|r| {
                (0..r.len())
                    .map(|i| int(r, i).ok_or_else(|| self.bad_row()))
                    .collect()
            })
            .collect()
    }

    async fn named_rows(&self, sql: &str) -> Result<Vec<(String, i64)>, TargetError> {
        self.query_rows(sql)
            .await?
            .iter()
            .map(|r| text(r, 0).zip(int(r, 1)).ok_or_else(|| self.bad_row()))
            .collect()
    }

    fn bad_row(&self) -> TargetError {
        TargetError::Prepare {
            target: self.at.label(),
            reason: "the server answered a row of an unexpected shape".to_string(),
        }
    }
}

async fn open(opts: &Opts) -> Result<Conn, mysql_async::Error> {
    match tokio::time::timeout(CONNECT_TIMEOUT, Conn::new(opts.clone())).await {
        Ok(r) => r,
        Err(_) => Err(mysql_async::Error::Io(mysql_async::IoError::Io(
            std::io::ErrorKind::TimedOut.into(),
        ))),
    }
}

async fn open_prepared(
    opts: &Opts,
    sql: &[&str],
) -> Result<(Conn, Vec<Statement>), mysql_async::Error> {
    let mut conn = open(opts).await?;
    let mut statements = Vec::with_capacity(sql.len());
    for s in sql {
        statements.push(conn.prep(*s).await?);
    }
    Ok((conn, statements))
}

/// The server's promise about commits, in a sentence.
async fn durability(conn: &mut Conn) -> Result<String, mysql_async::Error> {
    let row: Option<Row> = conn
        .query_first("SELECT @@innodb_flush_log_at_trx_commit")
        .await?;
    let flush = row.as_ref().and_then(|r| int(r, 0));
    let meaning = match flush {
        Some(1) => "the redo log is written and flushed to disk at every commit",
        Some(2) => "the redo log is written at every commit and flushed about once a second: a crash of the machine can lose the last second",
        Some(0) => "the redo log is written and flushed about once a second: a crash of the server can lose the last second",
        _ => "a setting this version of loadrig does not know",
    };
    let shown = flush.map_or("?".to_string(), |f| f.to_string());
    Ok(format!("innodb_flush_log_at_trx_commit={shown}: {meaning}"))
}

/// Column `i` as an integer, `None` when absent or not one.
fn int(row: &Row, i: usize) -> Option<i64> {
    row.get_opt::<i64, _>(i)?.ok()
}

/// Column `i` as text, `None` when absent, NULL or not text.
fn text(row: &Row, i: usize) -> Option<String> {
    row.get_opt::<String, _>(i)?.ok()
}

/// Why a connection could not be opened, in the words a user needs.
fn reason(e: &mysql_async::Error) -> String {
    match e {
        mysql_async::Error::Server(s) => s.message.clone(),
        mysql_async::Error::Io(mysql_async::IoError::Io(io)) => match io.kind() {
            std::io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
            std::io::ErrorKind::TimedOut => "connection timed out".to_string(),
            _ => io.to_string(),
        },
        other => other.to_string(),
    }
}

/// A failed call: a server error counts under its class and leaves the
/// connection usable; any other error means the connection is gone.
fn failure<R>(tag: loadrig_engine::Tag, e: &mysql_async::Error) -> Reply<R> {
    match e {
        mysql_async::Error::Server(s) => Reply::Done {
            tag,
            result: Err(OpError::server(error_class(s.code, &s.state))),
        },
        _ => Reply::Broken(OpError::new(ErrorKind::Io)),
    }
}

/// A server error as a static class: the errors a benchmark meets by
/// SQLSTATE where it is specific, by name where it is the generic HY000.
fn error_class(code: u16, state: &str) -> &'static str {
    match code {
        1213 => "40001",
        1062 => "23000",
        1205 => "ER_LOCK_WAIT_TIMEOUT",
        1040 => "ER_CON_COUNT_ERROR",
        1146 => "42S02",
        1305 => "ER_SP_DOES_NOT_EXIST",
        1317 => "70100",
        _ => match state.get(..2) {
            Some("08") => "08",
            Some("22") => "22",
            Some("23") => "23",
            Some("40") => "40",
            Some("42") => "42",
            _ => "other",
        },
    }
}

/// What a call's future gives back: the connection (unless it died) and the answer.
type Done<R> = (Option<Conn>, Reply<R>);
/// A call waiting for the connection: given it and the statements, run.
type Call<R> = Box<dyn FnOnce(Conn, Arc<[Statement]>) -> BoxFuture<'static, Done<R>> + Send>;

/// One connection, its prepared statements, the call running on it and
/// any calls queued behind it (only with a depth above one).
pub struct MyConn<R> {
    opts: Opts,
    sql: Arc<[String]>,
    statements: Arc<[Statement]>,
    idle: Option<Conn>,
    busy: Option<BoxFuture<'static, Done<R>>>,
    waiting: VecDeque<Call<R>>,
}

impl<R: Send + 'static> MyConn<R> {
    /// Start the call now if the connection is free, else queue it.
    fn submit(&mut self, call: Call<R>) {
        self.waiting.push_back(call);
        self.start_next();
    }

    fn start_next(&mut self) {
        if self.busy.is_some() || self.idle.is_none() {
            return;
        }
        if let Some(call) = self.waiting.pop_front() {
            if let Some(conn) = self.idle.take() {
                self.busy = Some(call(conn, self.statements.clone()));
            }
        }
    }

    async fn next(&mut self) -> Reply<R> {
        let Some(busy) = self.busy.as_mut() else {
            // No connection to run on: the last one died; reconnect comes next.
            return Reply::Broken(OpError::new(ErrorKind::Io));
        };
        // Cancel safe: the call stays in `busy` until it has answered.
        let (conn, reply) = busy.await;
        self.busy = None;
        self.idle = conn;
        self.start_next();
        reply
    }

    /// A fresh connection, statements prepared again; calls in flight are lost.
    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.busy = None;
        self.waiting.clear();
        self.idle = None;
        let sql: Vec<&str> = self.sql.iter().map(String::as_str).collect();
        let (conn, statements) = open_prepared(&self.opts, &sql)
            .await
            .map_err(|_| OpError::new(ErrorKind::Connect))?;
        self.idle = Some(conn);
        self.statements = statements.into();
        Ok(())
    }
}

impl TargetInfo for MariadbTarget {
    async fn server_version(&self) -> Option<String> {
        MariadbTarget::server_version(self).await
    }

    fn durability(&self) -> Option<String> {
        self.durability.get().cloned()
    }

    fn max_depth(&self) -> usize {
        1
    }

    fn server_stats(&self) -> Vec<Box<dyn loadrig_workloads::stats::StatsSource>> {
        let (host, port, _) = self.at.server(0);
        let own: Box<dyn loadrig_workloads::stats::StatsSource> =
            Box::new(stats::Status::new(self.opts.clone()));
        std::iter::once(own)
            .chain(crate::local::process_on(&host, port))
            .collect()
    }
}

crate::sql::sql_backends!(MariadbTarget, MyConn);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_errors_map_to_static_classes() {
        assert_eq!(error_class(1213, "40001"), "40001");
        assert_eq!(error_class(1205, "HY000"), "ER_LOCK_WAIT_TIMEOUT");
        assert_eq!(error_class(1064, "42000"), "42");
        assert_eq!(error_class(1644, "45000"), "other");
    }
}
