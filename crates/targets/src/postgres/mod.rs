//! PostgreSQL (TLS by rustls when `sslmode` asks): the target, its URL,
//! and how server errors become counted errors (by SQLSTATE class).
//!
//! Two clients, by path (docs/guides/postgres.md). The engine's connections
//! (the Voter, Hello and kv calls) are [`PgConn`]s, loadrig's own
//! pipelined client on its socket layer ([`conn`]): no task, no channel,
//! no boxed future per call. The cold paths (schema, load, counts,
//! verification, the server's statistics) stay on tokio-postgres, whose
//! row types they read.

mod conn;
mod hello;
mod kv;
mod pgbench;
pub(crate) mod stats;
mod voter;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use loadrig_workloads::TargetError;
use tokio_postgres::config::SslMode as PgSslMode;
use tokio_postgres::{Client, Config};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::settings::Connector;
use crate::tls::Check;

use loadrig_spec::SpecError;

use crate::sql::SqlAdmin;
use crate::url::TargetUrl;

/// The most calls one connection keeps in flight. tokio-postgres has no
/// limit of its own; this one keeps a runaway `-P` from queueing without bound.
const MAX_DEPTH: usize = 256;
const EXPECTED: &str = "postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE";

/// Parse what follows `postgres://`: a user, one server, the database
/// the run creates its tables in, `?sslmode=` (docs/guides/tls.md) and
/// `?search_path=SCHEMA` (the schema the run's tables are made in and
/// read from: a database of one's own without the right to create one).
pub(crate) fn parse_url(rest: &str) -> Result<(TargetUrl, SslMode, Option<String>), SpecError> {
    let (url, options) = TargetUrl::parse("postgres", rest, 5432, EXPECTED)?;
    url.one_server()?;
    if url.user.is_none() || url.path.is_empty() {
        return Err(url.bad("user, host and database are all needed"));
    }
    let mut mode = SslMode::Disable;
    let mut path = None;
    for (k, v) in crate::query_pairs(options.unwrap_or_default()) {
        if k == "search_path" {
            if v.is_empty() || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(url.bad("search_path must be one schema's name (letters, digits, _)"));
            }
            path = Some(v.to_string());
            continue;
        }
        mode = match (k, v) {
            ("sslmode", "disable") => SslMode::Disable,
            ("sslmode", "prefer") => SslMode::Prefer,
            ("sslmode", "require") => SslMode::Require,
            ("sslmode", "verify-ca") => SslMode::VerifyCa,
            ("sslmode", "verify-full") => SslMode::VerifyFull,
            ("sslmode", other) => {
                return Err(url.bad(format_args!(
                    "sslmode '{other}' is not disable, prefer, require, verify-ca or verify-full"
                )))
            }
            (other, _) => return Err(url.bad(format_args!("unknown option '{other}'"))),
        };
    }
    Ok((url, mode, path))
}

/// `?sslmode=`: whether TLS is used. The certificate is checked whatever
/// the mode (unlike libpq's `prefer` and `require`), host name included
/// but with `verify-ca`; `--insecure` skips the check. No `sslmode` is
/// `disable`, not libpq's `prefer`: a benchmark's transport does not
/// change with what the server happens to offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// How a connection opens: tokio-postgres's settings and the TLS
/// connector (used only when the mode asks for TLS).
pub(crate) struct Connect {
    pg: Config,
    tls: MakeRustlsConnect,
    /// How long opening a connection may take, login included.
    limit: Duration,
}

/// A PostgreSQL server and database. Cheap: it connects per use.
pub struct PostgresTarget {
    at: TargetUrl,
    config: Arc<Connect>,
    /// How the engine's connections log in.
    login: Arc<conn::Login>,
    /// Read from the server at the first connection; `durability()` is sync.
    durability: OnceLock<String>,
    /// The kv workload's dataset: its table, function and statements.
    kv: Arc<kv::Sql>,
}

impl PostgresTarget {
    pub(crate) fn new(
        at: TargetUrl,
        mode: SslMode,
        search_path: Option<String>,
        via: Arc<Connector>,
    ) -> PostgresTarget {
        let limit = via.handshake_limit();
        let (host, port, _) = at.server(0);
        let mut config = Config::new();
        config
            .host(&host)
            .port(port)
            .user(at.user.as_deref().unwrap_or_default())
            .dbname(&at.path)
            .application_name("loadrig")
            .connect_timeout(limit);
        if let Some(schema) = &search_path {
            config.options(format!("-c search_path={schema}"));
        }
        if let Some(p) = &at.password {
            config.password(p);
        }
        config.ssl_mode(match mode {
            SslMode::Disable => PgSslMode::Disable,
            SslMode::Prefer => PgSslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => PgSslMode::Require,
        });
        let check = match mode {
            SslMode::VerifyCa => Check::ChainOnly,
            _ => Check::Full,
        };
        let tls = MakeRustlsConnect::new((*via.tls_config(check)).clone());
        let login = Arc::new(conn::Login {
            host,
            port,
            user: at.user.clone().unwrap_or_default(),
            password: at.password.clone(),
            database: at.path.clone(),
            options: search_path.map(|s| format!("-c search_path={s}")),
            mode,
            via,
        });
        PostgresTarget {
            login,
            at,
            config: Arc::new(Connect {
                pg: config,
                tls,
                limit,
            }),
            durability: OnceLock::new(),
            kv: Arc::new(kv::Sql::new("kv")),
        }
    }

    /// A connection for cold-path work (set-up, counts); failing to open
    /// one means the server cannot be reached (exit 3).
    async fn admin(&self) -> Result<Client, TargetError> {
        let client = open(&self.config)
            .await
            .map_err(|e| TargetError::Unreachable {
                target: self.at.label(),
                reason: e.reason(),
            })?;
        if self.durability.get().is_none() {
            if let Ok(d) = durability(&client).await {
                let _ = self.durability.set(d);
            }
        }
        Ok(client)
    }

    fn failed(&self, e: tokio_postgres::Error) -> TargetError {
        TargetError::Prepare {
            target: self.at.label(),
            reason: reason(&e),
        }
    }

    /// One connection for the engine, its statements prepared.
    async fn conn<R>(&self, sql: &[&str]) -> Result<PgConn<R>, TargetError> {
        let sql: Arc<[String]> = sql.iter().map(|s| s.to_string()).collect();
        PgConn::open(self.login.clone(), sql)
            .await
            .map_err(|reason| TargetError::Unreachable {
                target: self.at.label(),
                reason,
            })
    }

    async fn server_version(&self) -> Option<String> {
        let client = self.admin().await.ok()?;
        let row = client.query_one("SHOW server_version", &[]).await.ok()?;
        let v: String = row.try_get(0).ok()?;
        // "15.18 (Debian 15.18-0+deb12u1)": the packager's note is not the version.
        Some(format!(
            "PostgreSQL {}",
            v.split_whitespace().next().unwrap_or(&v)
        ))
    }
}

impl SqlAdmin for PostgresTarget {
    /// Statements (schema, fixed data, teardown) in one round trip.
    async fn script(&self, sql: &str) -> Result<(), TargetError> {
        let client = self.admin().await?;
        client.batch_execute(sql).await.map_err(|e| self.failed(e))
    }

    async fn int_rows(&self, sql: &str) -> Result<Vec<Vec<i64>>, TargetError> {
        let client = self.admin().await?;
        let rows = client.query(sql, &[]).await.map_err(|e| self.failed(e))?;
        rows.iter()
            .map(|r| {
                (0..r.len())
                    .map(|i| {
                        r.try_get::<_, i64>(i)
                            .or_else(|_| r.try_get::<_, i32>(i).map(i64::from))
                            .map_err(|_| self.bad_row())
                    })
                    .collect()
            })
            .collect()
    }

    async fn named_rows(&self, sql: &str) -> Result<Vec<(String, i64)>, TargetError> {
        let client = self.admin().await?;
        let rows = client.query(sql, &[]).await.map_err(|e| self.failed(e))?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect::<Result<Vec<_>, tokio_postgres::Error>>()
            .map_err(|_| self.bad_row())
    }

    fn bad_row(&self) -> TargetError {
        TargetError::Prepare {
            target: self.at.label(),
            reason: "the server answered a row of an unexpected shape".to_string(),
        }
    }
}

/// Why a connection did not open.
#[derive(Debug)]
enum Unopened {
    Pg(tokio_postgres::Error),
    /// Connected, and the server did not finish the startup within this.
    Silent(Duration),
}

impl From<tokio_postgres::Error> for Unopened {
    fn from(e: tokio_postgres::Error) -> Self {
        Unopened::Pg(e)
    }
}

impl Unopened {
    fn reason(&self) -> String {
        match self {
            Unopened::Pg(e) => reason(e),
            Unopened::Silent(limit) => format!(
                "connected, but no startup answer within {}s",
                limit.as_secs_f64()
            ),
        }
    }
}

/// Connect and let a task drive the socket until the client is dropped.
/// Bounded, the startup and login exchange included: tokio-postgres's own
/// connect timeout bounds only the TCP connect, and a server that accepts
/// and then says nothing would hold the caller for ever.
async fn open(config: &Connect) -> Result<Client, Unopened> {
    let (client, connection) =
        tokio::time::timeout(config.limit, config.pg.connect(config.tls.clone()))
            .await
            .map_err(|_| Unopened::Silent(config.limit))??;
    tokio::spawn(async move {
        // The error, if any, reaches the calls in flight as a closed client.
        let _ = connection.await;
    });
    Ok(client)
}

/// The server's promise about commits, in a sentence.
async fn durability(client: &Client) -> Result<String, tokio_postgres::Error> {
    let row = client
        .query_one(
            "SELECT current_setting('synchronous_commit'), current_setting('fsync')",
            &[],
        )
        .await?;
    let (sync, fsync): (String, String) = (row.try_get(0)?, row.try_get(1)?);
    let meaning = if fsync == "off" {
        "no fsync at all: a crash of the machine can lose or corrupt committed data"
    } else if sync == "off" {
        "a commit returns before its WAL is flushed: a crash may lose the last commits, never corrupts"
    } else {
        "each commit waits for its WAL to be flushed to disk (concurrent commits share a flush)"
    };
    Ok(format!(
        "synchronous_commit={sync}, fsync={fsync}: {meaning}"
    ))
}

/// Why a connection could not be opened, in the words a user needs.
fn reason(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return db.message().to_string();
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            // tokio-rustls hands rustls's error (a certificate refused)
            // inside an I/O error: said as the other targets say it.
            if let Some(tls) = io.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>()) {
                return crate::tls::said(tls);
            }
            return match io.kind() {
                std::io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
                std::io::ErrorKind::TimedOut => "connection timed out".to_string(),
                _ => io.to_string(),
            };
        }
        source = s.source();
    }
    e.to_string()
}

/// A SQLSTATE as a static class: the codes a benchmark meets by name, the
/// rest by their two-character class.
fn sqlstate_class(code: &str) -> &'static str {
    match code {
        "40001" => "40001",
        "40P01" => "40P01",
        "23505" => "23505",
        "57014" => "57014",
        "55P03" => "55P03",
        "53300" => "53300",
        "57P01" => "57P01",
        "25P02" => "25P02",
        _ => match code.get(..2) {
            Some("08") => "08",
            Some("22") => "22",
            Some("23") => "23",
            Some("40") => "40",
            Some("42") => "42",
            Some("53") => "53",
            Some("57") => "57",
            Some("XX") => "XX",
            _ => "other",
        },
    }
}

/// One engine connection (the Voter's, Hello's): statements parsed once,
/// calls pipelined. `R` is the workload's result type.
pub type PgConn<R> = conn::Wire<R>;

crate::sql::sql_target_info!(
    PostgresTarget,
    max_depth: MAX_DEPTH,
    stats: |t| Box::new(stats::PgStats::new(t.config.clone())),
    processes: ["postgres", "postmaster"],
);

crate::sql::sql_backends!(PostgresTarget, PgConn);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_database_urls() {
        let (u, mode, _) = parse_url("bench:p%40ss@127.0.0.1/bench").unwrap();
        assert_eq!(mode, SslMode::Disable);
        assert_eq!(u.user.as_deref(), Some("bench"));
        assert_eq!(u.password.as_deref(), Some("p@ss"));
        assert_eq!(u.servers, [("127.0.0.1".to_string(), 5432)]);
        assert_eq!(u.path, "bench");
        assert_eq!(u.label(), "postgres://bench:***@127.0.0.1:5432/bench");
        // A '/' in a password does not end the host part.
        let (u, _, path) =
            parse_url("bench:a/b@[::1]:5433/db?sslmode=verify-ca&search_path=pgb_1").unwrap();
        assert_eq!(path.as_deref(), Some("pgb_1"));
        assert!(parse_url("bench:a@h/db?search_path=a;drop").is_err());
        assert_eq!(u.password.as_deref(), Some("a/b"));
        assert_eq!(u.label(), "postgres://bench:***@[::1]:5433/db");
    }

    #[test]
    fn bad_database_urls_name_the_flag_and_hide_the_password() {
        for rest in [
            "bench:secret@127.0.0.1",
            "127.0.0.1/bench",
            "bench:secret@127.0.0.1:notaport/bench",
            "bench:secret@127.0.0.1:0/bench",
            "bench:secret@/bench",
            "bench:secret@h1,h2/bench",
            "bench:secret@127.0.0.1/bench?sslmode=verify",
            "bench:se/cret@127.0.0.1/bench?x=1",
        ] {
            let e = parse_url(rest).unwrap_err();
            assert_eq!(e.flag, "--target", "{rest}");
            assert!(!e.to_string().contains("secret"), "{e}");
            assert!(!e.to_string().contains("cret"), "{e}");
        }
    }

    #[test]
    fn sqlstates_map_to_static_classes() {
        assert_eq!(sqlstate_class("40001"), "40001");
        assert_eq!(sqlstate_class("40P01"), "40P01");
        assert_eq!(sqlstate_class("08006"), "08");
        assert_eq!(sqlstate_class("42P01"), "42");
        assert_eq!(sqlstate_class("P0001"), "other");
        assert_eq!(sqlstate_class(""), "other");
    }
}
