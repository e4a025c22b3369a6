//! Targets: the systems loadrig drives. Each is described by a const
//! [`Descriptor`] in one list ([`TARGETS`]), gated by cargo features so the
//! core builds without their drivers, and implements the workload
//! capabilities it can ([`loadrig_workloads::voter::VoterBackend`], ...).
//! [`Target::open`] turns a `--target` URL into a target.

#[cfg(any(feature = "nats", feature = "mqtt"))]
mod broker;
#[cfg(feature = "mysql")]
mod mariadb;
#[cfg(feature = "memcache")]
mod memcache;
#[cfg(feature = "mqtt")]
mod mqtt;
#[cfg(feature = "nats")]
mod nats;
mod null;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
mod redis;
#[cfg(any(
    feature = "redis",
    feature = "voltdb",
    feature = "nats",
    feature = "mqtt",
    feature = "memcache"
))]
mod socket;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "voltdb")]
mod voltdb;

use loadrig_spec::SpecError;
use loadrig_workloads::TargetError;

#[cfg(feature = "mysql")]
pub use mariadb::MariadbTarget;
#[cfg(feature = "memcache")]
pub use memcache::{MemcacheConn, MemcacheTarget};
#[cfg(feature = "mqtt")]
pub use mqtt::{MqttConn, MqttTarget};
#[cfg(feature = "nats")]
pub use nats::{NatsConn, NatsTarget};
pub use null::{NullDelay, NullTarget};
#[cfg(feature = "postgres")]
pub use postgres::PostgresTarget;
#[cfg(feature = "redis")]
pub use redis::{RedisConn, RedisPubSubConn, RedisTarget};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteTarget;
#[cfg(feature = "voltdb")]
pub use voltdb::VoltTarget;

/// What `loadrig targets` lists: a target's name, URL schemes and workloads.
#[derive(Debug, Clone, Copy)]
pub struct Descriptor {
    pub name: &'static str,
    pub schemes: &'static [&'static str],
    pub workloads: &'static [&'static str],
    pub example: &'static str,
    pub about: &'static str,
}

/// Every target built into this binary.
pub const TARGETS: &[Descriptor] = &[
    #[cfg(feature = "sqlite")]
    sqlite::DESCRIPTOR,
    #[cfg(feature = "postgres")]
    postgres::DESCRIPTOR,
    #[cfg(feature = "mysql")]
    mariadb::DESCRIPTOR,
    #[cfg(feature = "voltdb")]
    voltdb::DESCRIPTOR,
    #[cfg(feature = "redis")]
    redis::DESCRIPTOR,
    #[cfg(feature = "nats")]
    nats::DESCRIPTOR,
    #[cfg(feature = "mqtt")]
    mqtt::DESCRIPTOR,
    #[cfg(feature = "memcache")]
    memcache::DESCRIPTOR,
    null::DESCRIPTOR,
];

/// The workloads loadrig knows, whether or not a built-in target runs them.
pub const WORKLOADS: &[(&str, &str)] = &[
    (
        "voter",
        "VoltDB's Voter: one vote is one server-side transaction with a per-caller limit",
    ),
    (
        "hello",
        "Erlvolt's hello world: the smallest procedure call (select, optional insert)",
    ),
    (
        "redis",
        "redis-benchmark's tests and flags (-t -c -n -P -d -r -q --csv), one test after the other",
    ),
    (
        "memcache",
        "memaslap's load: get/set mix, key and value sizes, window of keys per client, multiget, text or binary protocol",
    ),
    (
        "pubsub",
        "nats-bench's load: N publishers, M subscribers, end-to-end latency, losses, duplicates and reorders counted",
    ),
    (
        "chat",
        "Chut's social groups: G groups x CPG clients messaging random peers of their group, stress or realistic",
    ),
];

/// An opened target.
pub enum Target {
    #[cfg(feature = "sqlite")]
    Sqlite(SqliteTarget),
    #[cfg(feature = "postgres")]
    Postgres(PostgresTarget),
    #[cfg(feature = "mysql")]
    Mariadb(MariadbTarget),
    #[cfg(feature = "voltdb")]
    Voltdb(VoltTarget),
    #[cfg(feature = "redis")]
    Redis(RedisTarget),
    #[cfg(feature = "nats")]
    Nats(NatsTarget),
    #[cfg(feature = "mqtt")]
    Mqtt(MqttTarget),
    #[cfg(feature = "memcache")]
    Memcache(MemcacheTarget),
    Null(NullTarget),
}

impl Target {
    /// Open the target a URL names; no URL means a fresh embedded SQLite.
    /// A malformed URL is a usage error; an unreachable target is not.
    pub fn open(url: Option<&str>) -> Result<Target, OpenError> {
        let url = url.unwrap_or("sqlite://");
        let (scheme, rest) = match url.split_once("://") {
            Some((s, r)) => (s, r),
            None => (url, ""),
        };
        match scheme {
            #[cfg(feature = "sqlite")]
            "sqlite" => Ok(Target::Sqlite(SqliteTarget::open(rest)?)),
            #[cfg(feature = "postgres")]
            "postgres" | "postgresql" => {
                let at = ServerUrl::parse("postgres", rest, 5432)?;
                Ok(Target::Postgres(PostgresTarget::new(at)))
            }
            #[cfg(feature = "mysql")]
            "mysql" | "mariadb" => {
                let at = ServerUrl::parse(scheme, rest, 3306)?;
                Ok(Target::Mariadb(MariadbTarget::new(at)))
            }
            #[cfg(feature = "voltdb")]
            "voltdb" => Ok(Target::Voltdb(VoltTarget::new(voltdb::VoltUrl::parse(
                rest,
            )?))),
            #[cfg(feature = "redis")]
            "redis" => Ok(Target::Redis(RedisTarget::new(redis::RedisUrl::parse(
                rest,
            )?))),
            #[cfg(feature = "nats")]
            "nats" => Ok(Target::Nats(NatsTarget::new(nats::parse_url(rest)?))),
            #[cfg(feature = "mqtt")]
            "mqtt" => {
                let (at, qos) = mqtt::parse_url(rest)?;
                Ok(Target::Mqtt(MqttTarget::new(at, qos)))
            }
            #[cfg(feature = "memcache")]
            "memcache" => Ok(Target::Memcache(MemcacheTarget::new(
                memcache::McUrl::parse(rest)?,
            ))),
            "null" => Ok(Target::Null(NullTarget::parse(rest)?)),
            other => Err(OpenError::Spec(SpecError::new(
                "--target",
                format!("unknown target scheme '{other}' in '{url}' (see `loadrig targets`)"),
            ))),
        }
    }

    pub fn descriptor(&self) -> &'static Descriptor {
        match self {
            #[cfg(feature = "sqlite")]
            Target::Sqlite(_) => &sqlite::DESCRIPTOR,
            #[cfg(feature = "postgres")]
            Target::Postgres(_) => &postgres::DESCRIPTOR,
            #[cfg(feature = "mysql")]
            Target::Mariadb(_) => &mariadb::DESCRIPTOR,
            #[cfg(feature = "voltdb")]
            Target::Voltdb(_) => &voltdb::DESCRIPTOR,
            #[cfg(feature = "redis")]
            Target::Redis(_) => &redis::DESCRIPTOR,
            #[cfg(feature = "nats")]
            Target::Nats(_) => &nats::DESCRIPTOR,
            #[cfg(feature = "mqtt")]
            Target::Mqtt(_) => &mqtt::DESCRIPTOR,
            #[cfg(feature = "memcache")]
            Target::Memcache(_) => &memcache::DESCRIPTOR,
            Target::Null(_) => &null::DESCRIPTOR,
        }
    }
}

/// Connections a run opens when `--connections` is not given, from the
/// `--target` URL alone (before anything is opened): `None` means one per
/// client. Targets whose connections multiplex many calls (VoltDB) open
/// one per host, as their own clients do.
pub fn default_connections(url: Option<&str>) -> Option<u32> {
    let url = url?;
    let (scheme, rest) = url.split_once("://")?;
    match scheme {
        "voltdb" => {
            let hosts = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
            let hosts = hosts.split(['/', '?']).next().unwrap_or("");
            Some(hosts.split(',').filter(|h| !h.is_empty()).count().max(1) as u32)
        }
        _ => None,
    }
}

/// Why `--target` could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The URL is malformed (exit 2).
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// Well formed, but the target is not there (exit 3).
    #[error(transparent)]
    Target(#[from] TargetError),
}

/// Where a database server is, from `scheme://user:pass@host:port/db`.
/// The password never leaves through [`ServerUrl::label`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(not(any(feature = "postgres", feature = "mysql")), allow(dead_code))]
pub(crate) struct ServerUrl {
    pub scheme: &'static str,
    pub user: String,
    pub password: Option<String>,
    pub host: String,
    pub port: u16,
    pub database: String,
}

#[cfg_attr(not(any(feature = "postgres", feature = "mysql")), allow(dead_code))]
impl ServerUrl {
    /// Parse what follows `scheme://`. User and database are required (the
    /// run creates tables in that database); the port defaults per server.
    pub fn parse(scheme: &str, rest: &str, default_port: u16) -> Result<ServerUrl, SpecError> {
        let scheme: &'static str = match scheme {
            "postgres" | "postgresql" => "postgres",
            _ => "mysql",
        };
        let bad = |why: &str| {
            SpecError::new(
                "--target",
                format!("{why} in '{scheme}://{}' (expected {scheme}://USER:PASSWORD@HOST:PORT/DATABASE)", mask(rest)),
            )
        };
        let (authority, path) = rest.split_once('/').ok_or_else(|| bad("no database"))?;
        if let Some((_, q)) = path.split_once('?') {
            return Err(bad(&format!("unknown option '{q}'")));
        }
        let database = decode(path).ok_or_else(|| bad("bad %-escape"))?;
        let (userinfo, hostport) = authority.rsplit_once('@').ok_or_else(|| bad("no user"))?;
        let (user, password) = match userinfo.split_once(':') {
            Some((u, p)) => (u, Some(decode(p).ok_or_else(|| bad("bad %-escape"))?)),
            None => (userinfo, None),
        };
        let user = decode(user).ok_or_else(|| bad("bad %-escape"))?;
        let (host, port) =
            split_host_port(hostport, default_port).ok_or_else(|| bad("bad host or port"))?;
        if user.is_empty() || database.is_empty() || host.is_empty() {
            return Err(bad("user, host and database are all needed"));
        }
        Ok(ServerUrl {
            scheme,
            user,
            password,
            host,
            port,
            database,
        })
    }

    /// The URL for messages and reports: the password masked.
    pub fn label(&self) -> String {
        let pass = if self.password.is_some() { ":***" } else { "" };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!(
            "{}://{}{pass}@{host}:{}/{}",
            self.scheme, self.user, self.port, self.database
        )
    }
}

/// The servers of a URL with several (`h1:6379,6380,h2`): each entry a
/// host with an optional port, or a bare port that is another port on the
/// host before it. The error says which entry is wrong.
#[cfg_attr(
    not(any(
        feature = "redis",
        feature = "memcache",
        feature = "nats",
        feature = "mqtt"
    )),
    allow(dead_code)
)]
pub(crate) fn server_list(hosts: &str, default_port: u16) -> Result<Vec<(String, u16)>, String> {
    let mut servers: Vec<(String, u16)> = Vec::new();
    for entry in hosts.split(',') {
        if !entry.is_empty() && entry.bytes().all(|b| b.is_ascii_digit()) {
            let Some((host, _)) = servers.last().cloned() else {
                return Err(format!("port '{entry}' before any host"));
            };
            let port = entry
                .parse()
                .ok()
                .filter(|&p| p != 0)
                .ok_or_else(|| format!("bad port '{entry}'"))?;
            servers.push((host, port));
            continue;
        }
        let server = split_host_port(entry, default_port)
            .filter(|(host, _)| !host.is_empty())
            .ok_or_else(|| format!("bad host '{entry}'"))?;
        servers.push(server);
    }
    Ok(servers)
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`.
fn split_host_port(s: &str, default_port: u16) -> Option<(String, u16)> {
    let (host, port) = if let Some(v6) = s.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        match after {
            "" => (host, None),
            p => (host, Some(p.strip_prefix(':')?)),
        }
    } else {
        match s.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    let port = match port {
        Some(p) => p.parse().ok().filter(|&p| p != 0)?,
        None => default_port,
    };
    Some((host.to_string(), port))
}

/// Undo %-escapes (a password may hold `@`, `:` or `/` that way).
fn decode(s: &str) -> Option<String> {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let hex = [bytes.next()?, bytes.next()?];
            out.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
        } else {
            out.push(b);
        }
    }
    String::from_utf8(out).ok()
}

/// `user:secret@host/db` -> `user:***@host/db`, for error messages.
fn mask(rest: &str) -> String {
    let end = rest.find('/').unwrap_or(rest.len());
    match rest[..end].rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}{}", &rest[end..]),
            None => rest.to_string(),
        },
        None => rest.to_string(),
    }
}

/// Rows of constants as SQL `(1, 'a'), (2, 'b')`, for loading the Voter's
/// fixed data in one statement; quotes in text are doubled.
#[cfg_attr(not(any(feature = "postgres", feature = "mysql")), allow(dead_code))]
pub(crate) fn sql_rows<'a>(rows: impl Iterator<Item = (i64, &'a str)>) -> String {
    let rows: Vec<String> = rows
        .map(|(n, s)| format!("({n}, '{}')", s.replace('\'', "''")))
        .collect();
    rows.join(", ")
}

/// Parse `key=value&...` query parameters.
pub(crate) fn query_pairs(q: &str) -> impl Iterator<Item = (&str, &str)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
}

/// Parse a duration like `250us`, `2ms`, `1s` or a bare number of microseconds.
pub(crate) fn parse_duration(s: &str) -> Option<std::time::Duration> {
    use std::time::Duration;
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok()?;
    if !(v.is_finite() && v >= 0.0) {
        return None;
    }
    let secs = match unit {
        "" | "us" => v / 1e6,
        "ns" => v / 1e9,
        "ms" => v / 1e3,
        "s" => v,
        _ => return None,
    };
    Some(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_server_urls() {
        let u = ServerUrl::parse("postgresql", "bench:p%40ss@127.0.0.1/bench", 5432).unwrap();
        assert_eq!(u.user, "bench");
        assert_eq!(u.password.as_deref(), Some("p@ss"));
        assert_eq!((u.host.as_str(), u.port), ("127.0.0.1", 5432));
        assert_eq!(u.database, "bench");
        assert_eq!(u.label(), "postgres://bench:***@127.0.0.1:5432/bench");
        let u = ServerUrl::parse("mysql", "bench@[::1]:3307/db", 3306).unwrap();
        assert_eq!((u.host.as_str(), u.port, &u.password), ("::1", 3307, &None));
        assert_eq!(u.label(), "mysql://bench@[::1]:3307/db");
    }

    #[test]
    fn bad_server_urls_name_the_flag_and_hide_the_password() {
        for rest in [
            "bench:secret@127.0.0.1",
            "127.0.0.1/bench",
            "bench:secret@127.0.0.1:notaport/bench",
            "bench:secret@127.0.0.1:0/bench",
            "bench:secret@/bench",
            "bench:secret@127.0.0.1/bench?sslmode=require",
        ] {
            let e = ServerUrl::parse("postgres", rest, 5432).unwrap_err();
            assert_eq!(e.flag, "--target", "{rest}");
            assert!(!e.to_string().contains("secret"), "{e}");
        }
    }

    #[test]
    fn voltdb_opens_one_connection_per_host() {
        assert_eq!(
            default_connections(Some("voltdb://127.0.0.1:21212")),
            Some(1)
        );
        assert_eq!(
            default_connections(Some("voltdb://u:p@h1:21212,h2,h3:1")),
            Some(3)
        );
        assert_eq!(default_connections(Some("postgres://b@h/db")), None);
        assert_eq!(default_connections(None), None);
    }

    #[test]
    fn constant_rows_are_quoted() {
        let rows = sql_rows([(1, "O'Hara"), (2, "AK")].into_iter());
        assert_eq!(rows, "(1, 'O''Hara'), (2, 'AK')");
    }
}
