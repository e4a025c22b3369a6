//! MariaDB and MySQL (no TLS, no compression): the engine's connections
//! are hand written ([`conn`]: login, prepared statements, calls written
//! one after another and answered in order); the cold path (schema, load,
//! counts, verification, statistics) stays on mysql_async. Here: the
//! target, its cold-path connections, and how server errors become counted
//! [`OpError`]s.

mod conn;
mod hello;
mod kv;
pub(crate) mod stats;
mod voter;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use loadrig_workloads::TargetError;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder, Row};

pub use conn::MyConn;
use conn::{Account, Answer};

use loadrig_spec::SpecError;

use crate::settings::Connector;
use crate::sql::SqlAdmin;
use crate::url::TargetUrl;

/// Calls one connection may have in flight: the server reads commands one
/// after another, so they may be written before the answers come back.
const MAX_DEPTH: usize = 64;
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
    via: Arc<Connector>,
    opts: Opts,
    /// Read from the server at the first connection; `durability()` is sync.
    durability: OnceLock<String>,
    /// The kv workload's dataset: its table and procedure.
    kv: Arc<kv::Names>,
}

impl MariadbTarget {
    pub(crate) fn new(at: TargetUrl, via: Arc<Connector>) -> MariadbTarget {
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
            via,
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
        let mut conn = open(&self.opts, self.via.handshake_limit())
            .await
            .map_err(|e| self.unreachable(reason(&e)))?;
        if self.durability.get().is_none() {
            if let Ok(d) = durability(&mut conn).await {
                let _ = self.durability.set(d);
            }
        }
        Ok(conn)
    }

    /// Who the engine's connections log in as.
    fn account(&self) -> Account {
        let (host, port, _) = self.at.server(0);
        Account {
            host,
            port,
            user: self.at.user.clone().unwrap_or_default(),
            password: self.at.password.clone().unwrap_or_default(),
            database: self.at.path.clone(),
            via: self.via.clone(),
        }
    }

    /// One connection for the engine, the statements `sql` prepared.
    async fn conn<R: Answer>(&self, sql: &[&str]) -> Result<MyConn<R>, TargetError> {
        MyConn::open(self.account(), sql)
            .await
            .map_err(|e| self.unreachable(crate::socket::said(&e, "MariaDB")))
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

/// A mysql_async connection (the cold path), opened within `limit`.
async fn open(opts: &Opts, limit: Duration) -> Result<Conn, mysql_async::Error> {
    match tokio::time::timeout(limit, Conn::new(opts.clone())).await {
        Ok(r) => r,
        Err(_) => Err(mysql_async::Error::Io(mysql_async::IoError::Io(
            std::io::ErrorKind::TimedOut.into(),
        ))),
    }
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

crate::sql::sql_target_info!(
    MariadbTarget,
    max_depth: MAX_DEPTH,
    stats: |t| Box::new(stats::Status::new(t.opts.clone(), t.via.handshake_limit())),
    processes: ["mariadbd", "mysqld"],
);

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
