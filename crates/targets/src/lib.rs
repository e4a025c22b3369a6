//! Targets: the systems loadrig drives. Each is described by a const
//! [`Descriptor`] in one list ([`TARGETS`]), gated by cargo features so the
//! core builds without their drivers, and implements the workload
//! capabilities it can ([`loadrig_workloads::voter::VoterBackend`], ...).
//! [`Target::open`] turns a `--target` URL and the [`ClientSettings`] its
//! connections take into a target.
//!
//! A target's feature turns on the internal features of what it shares with
//! others (`socket`, `stream`, `local`, `scrape`, `sql`, `tls`; see
//! Cargo.toml), and those gate the shared modules here, so no list of
//! targets is repeated in a `cfg`.

// A build with only some targets (`--no-default-features --features X`)
// leaves parts of the shared modules, and re-exports for the others, unused:
// those are looked for in the build of every target, the default one, which
// clippy checks.
#![cfg_attr(not(feature = "default"), allow(dead_code, unused_imports))]

#[cfg(feature = "etcd")]
mod etcd;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "local")]
mod local;
#[cfg(feature = "mysql")]
mod mariadb;
#[cfg(feature = "memcache")]
mod memcache;
#[cfg(feature = "mqtt")]
mod mqtt;
#[cfg(feature = "nats")]
mod nats;
/// `--io uring` in a build without the hand-written socket: no connection
/// could go through a ring, so it changes nothing (as TLS trust does
/// without TLS).
#[cfg(all(target_os = "linux", not(feature = "socket")))]
mod no_ring {
    pub fn check() -> std::io::Result<()> {
        Ok(())
    }
    pub fn start() {}
    pub fn stop() {}
    pub fn park() {}
}
mod hint;
mod null;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "scrape")]
mod scrape;
mod settings;
#[cfg(feature = "socket")]
mod socket;
mod source;
#[cfg(feature = "sql")]
mod sql;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "tls")]
mod tls;
mod url;
pub use url::sqlite_file;
#[cfg(feature = "voltdb")]
mod voltdb;

use loadrig_spec::secret::mask_text;
use std::sync::Arc;

use loadrig_spec::{SpecError, TargetFacts};
use loadrig_workloads::{Capabilities, TargetError, TargetInfo};
use settings::Connector;

#[cfg(feature = "etcd")]
pub use etcd::{EtcdConn, EtcdTarget};
#[cfg(feature = "http")]
pub use http::{HttpConn, HttpTarget};
#[cfg(feature = "mysql")]
pub use mariadb::MariadbTarget;
#[cfg(feature = "memcache")]
pub use memcache::{MemcacheConn, MemcacheTarget};
#[cfg(feature = "mqtt")]
pub use mqtt::{MqttConn, MqttTarget};
#[cfg(feature = "nats")]
pub use nats::{NatsConn, NatsTarget};
#[cfg(all(target_os = "linux", not(feature = "socket")))]
pub use no_ring::{
    check as check_uring, park as uring_park, start as uring_start, stop as uring_stop,
};
pub use null::{NullDelay, NullTarget};
#[cfg(feature = "postgres")]
pub use postgres::PostgresTarget;
#[cfg(feature = "redis")]
pub use redis::{ClusterStream, RedisClusterTarget, RedisConn, RedisPubSubConn, RedisTarget};
pub use settings::{ClientSettings, IoMode, TlsTrust};
#[cfg(all(target_os = "linux", feature = "socket"))]
pub use socket::ring::{
    check as check_uring, park as uring_park, start as uring_start, stop as uring_stop,
};
pub use source::{check_sources, parse_sources};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteTarget;
#[cfg(feature = "voltdb")]
pub use voltdb::VoltTarget;

/// What `loadrig targets` lists about a target: its name, URL schemes and
/// capabilities (the workloads follow from them), one example URL and one
/// line about it.
#[derive(Debug, Clone, Copy)]
pub struct Descriptor {
    pub name: &'static str,
    pub schemes: &'static [&'static str],
    pub capabilities: &'static [&'static str],
    pub example: &'static str,
    pub about: &'static str,
    /// The server's own statistics it samples per lap: what it asks
    /// (`INFO`) and the series' names (docs/explanations/resources.md); empty for none.
    /// A server on this machine also gives `process.cpu_secs` and
    /// `process.rss_bytes`, whatever the target.
    pub stats_from: &'static str,
    pub stats: &'static [loadrig_workloads::stats::Series],
}

impl Descriptor {
    /// The workloads this target runs, from its capabilities.
    pub fn workloads(&self) -> impl Iterator<Item = &'static str> + '_ {
        loadrig_workloads::workloads_of(self.capabilities)
    }

    pub fn runs(&self, workload: &str) -> bool {
        self.workloads().any(|w| w == workload)
    }
}

/// A target type's row of the registry, as a constant.
trait Described {
    const DESCRIPTOR: Descriptor;
}

/// Something to do with whichever target was opened: [`Target::visit`]
/// calls it with the concrete type, which then offers its capabilities.
pub trait Visitor {
    type Output;
    fn visit<T: Capabilities>(self, target: T) -> Self::Output;
}

/// The one table of targets. Each row names a target's enum variant and
/// type, the cargo feature that builds it, its URL schemes, its
/// capabilities, how it opens from the text after `scheme://` and the
/// settings its connections share ([`Connector`]), and what
/// `loadrig targets` says of it. From it come the [`Target`] enum, opening
/// by scheme, [`TARGETS`] and each type's [`Capabilities`]: a row that
/// claims a capability its type does not implement does not compile.
macro_rules! registry {
    (@or $given:expr, $default:expr) => { $given };
    (@or , $default:expr) => { $default };
    ($(
        $(#[cfg($cfg:meta)])?
        $variant:ident($ty:ty) {
            name: $name:literal,
            schemes: [$($scheme:literal),+],
            capabilities: [$($cap:ident),+],
            open: $open:expr,
            example: $example:literal,
            about: $about:literal
            $(, stats: ($stats_from:literal, $stats:expr))? $(,)?
        }
    ),+ $(,)?) => {
        /// The opened target, by type ([`Target::into_opened`]).
        pub enum Opened {
            $($(#[cfg($cfg)])? $variant($ty),)+
        }

        $(
            $(#[cfg($cfg)])?
            impl Described for $ty {
                const DESCRIPTOR: Descriptor = Descriptor {
                    name: $name,
                    schemes: &[$($scheme),+],
                    capabilities: &[$(stringify!($cap)),+],
                    example: $example,
                    about: $about,
                    stats_from: registry!(@or $($stats_from)?, ""),
                    stats: registry!(@or $($stats)?, &[]),
                };
            }
        )+

        /// Every target built into this binary.
        pub const TARGETS: &[Descriptor] = &[
            $($(#[cfg($cfg)])? <$ty as Described>::DESCRIPTOR,)+
        ];

        impl Target {
            /// Open the target of a scheme, from what follows `scheme://`.
            fn open_scheme(
                scheme: &str,
                rest: &str,
                via: &Arc<Connector>,
            ) -> Option<Result<Opened, OpenError>> {
                $($(#[cfg($cfg)])? {
                    if [$($scheme),+].contains(&scheme) {
                        let open: fn(&str, &str, &Arc<Connector>) -> Result<$ty, OpenError> = $open;
                        return Some(open(scheme, rest, via).map(Opened::$variant));
                    }
                })+
                None
            }

            pub fn descriptor(&self) -> &'static Descriptor {
                match &self.opened {
                    $($(#[cfg($cfg)])? Opened::$variant(_) => &<$ty as Described>::DESCRIPTOR,)+
                }
            }

            /// What the target says about itself, for resolving the run
            /// spec.
            pub fn facts(&self) -> TargetFacts {
                match &self.opened {
                    $($(#[cfg($cfg)])? Opened::$variant(t) => facts_of(t, &self.label),)+
                }
            }

            /// Hand the concrete target to `visitor`.
            pub fn visit<V: Visitor>(self, visitor: V) -> V::Output {
                match self.opened {
                    $($(#[cfg($cfg)])? Opened::$variant(t) => visitor.visit(t),)+
                }
            }
        }

        $(
            $(#[cfg($cfg)])?
            impl Capabilities for $ty {
                $(
                    fn $cap<V: loadrig_workloads::$cap::Visit>(self, visit: V) -> Option<V::Output> {
                        Some(visit.visit(self))
                    }
                )+
            }
        )+
    };
}

registry! {
    #[cfg(feature = "sqlite")]
    Sqlite(SqliteTarget) {
        name: "sqlite",
        schemes: ["sqlite"],
        capabilities: [voter, hello, kv],
        open: |_, rest, _| SqliteTarget::open(rest),
        example: "sqlite:///tmp/bench.db?sync=full  (no --target: a fresh temporary database)",
        about: "embedded SQLite (bundled); one database thread, group commit, WAL",
    },
    #[cfg(feature = "postgres")]
    Postgres(PostgresTarget) {
        name: "postgres",
        schemes: ["postgres", "postgresql"],
        capabilities: [voter, hello, kv, pgbench],
        open: |_, rest, via| {
            let (at, mode, path) = postgres::parse_url(rest)?;
            Ok(PostgresTarget::new(at, mode, path, via.clone()))
        },
        example: "postgres://bench:bench@127.0.0.1:5432/bench  (TLS: ?sslmode=require)",
        about: "PostgreSQL (own protocol v3 client, TLS by rustls); server-side functions, pipelined calls",
        stats: ("pg_stat_database", postgres::stats::SERIES),
    },
    #[cfg(feature = "mysql")]
    Mariadb(MariadbTarget) {
        name: "mariadb",
        schemes: ["mysql", "mariadb"],
        capabilities: [voter, hello, kv],
        open: |_, rest, via| Ok(MariadbTarget::new(mariadb::parse_url(rest)?, via.clone())),
        example: "mysql://bench:bench@127.0.0.1:3306/bench",
        about: "MariaDB or MySQL (own protocol client, no TLS; mysql_async to set up and check); stored procedures, 64 calls in flight per connection",
        stats: ("SHOW GLOBAL STATUS", mariadb::stats::SERIES),
    },
    #[cfg(feature = "voltdb")]
    Voltdb(VoltTarget) {
        name: "voltdb",
        schemes: ["voltdb"],
        capabilities: [voter, hello, kv],
        open: |_, rest, via| Ok(VoltTarget::new(voltdb::parse_url(rest)?, via.clone())),
        example: "voltdb://127.0.0.1:21212  (several hosts: voltdb://h1:21212,h2:21212)",
        about: "VoltDB (own client of the native wire protocol): Java procedures, calls in flight matched by handle",
        stats: ("@Statistics MEMORY and PROCEDUREPROFILE", voltdb::stats::SERIES),
    },
    #[cfg(feature = "redis")]
    Redis(RedisTarget) {
        name: "redis",
        schemes: ["redis", "rediss"],
        capabilities: [redis, pubsub, kv],
        open: |scheme, rest, via| Ok(RedisTarget::new(redis::parse_url(rest)?.tls_if(scheme, "rediss"), via.clone())),
        example: "redis://127.0.0.1:6379  (several ports or servers: redis://127.0.0.1:6379,6380,h2:6379; TLS: rediss://)",
        about: "Redis (own RESP2 client): pipelined connections dealt over the servers round robin; pub/sub",
        stats: ("INFO", redis::stats::SERIES),
    },
    #[cfg(feature = "redis")]
    RedisCluster(RedisClusterTarget) {
        name: "redis-cluster",
        schemes: ["redis+cluster"],
        capabilities: [redis],
        open: |_, rest, via| Ok(RedisClusterTarget::new(redis::parse_cluster_url(rest)?, via.clone())),
        example: "redis+cluster://127.0.0.1:7001,7002,7003  (seed nodes; or run redis --cluster)",
        about: "Redis Cluster: keys routed by hash slot, a pipelined connection per master, MOVED and ASK followed",
    },
    #[cfg(feature = "nats")]
    Nats(NatsTarget) {
        name: "nats",
        schemes: ["nats", "tls"],
        capabilities: [pubsub],
        open: |scheme, rest, via| {
            let (at, monitor) = nats::parse_url(rest)?;
            Ok(NatsTarget::new(at.tls_if(scheme, "tls"), monitor, via.clone()))
        },
        example: "nats://127.0.0.1:4222  (several servers: nats://h1:4222,h2; a login: nats://USER:PASSWORD@h or nats://TOKEN@h; ?monitor=PORT|off; TLS: tls://)",
        about: "NATS core (own client of the text protocol): publishes pipelined, no acknowledgement; request-reply",
        stats: ("the monitoring port's /varz (8222)", nats::stats::SERIES),
    },
    #[cfg(feature = "mqtt")]
    Mqtt(MqttTarget) {
        name: "mqtt",
        schemes: ["mqtt", "mqtts"],
        capabilities: [pubsub],
        open: |scheme, rest, via| {
            let (at, qos) = mqtt::parse_url(rest)?;
            Ok(MqttTarget::new(at.tls_if(scheme, "mqtts"), qos, via.clone()))
        },
        example: "mqtt://127.0.0.1:1883?qos=1  (QoS 0 by default; several servers: mqtt://h1,h2:1884; a login: mqtt://USER:PASSWORD@h; TLS: mqtts://)",
        about: "MQTT 3.1.1 (own client; Mosquitto, EMQX, ...): QoS 0 or 1, publishes pipelined, PUBACKs matched by packet id",
        stats: ("Mosquitto's $SYS/broker/ topics (every sys_interval, 10 s by default)", mqtt::stats::SERIES),
    },
    #[cfg(feature = "memcache")]
    Memcache(MemcacheTarget) {
        name: "memcached",
        schemes: ["memcache", "memcached"],
        capabilities: [memcache],
        open: |_, rest, via| Ok(MemcacheTarget::new(memcache::parse_url(rest)?, via.clone())),
        example: "memcache://127.0.0.1:11211  (several ports or servers: memcache://127.0.0.1:11211,11212,h2)",
        about: "memcached (own client, text or binary protocol): pipelined connections dealt over the servers round robin",
        stats: ("stats", memcache::stats::SERIES),
    },
    #[cfg(feature = "http")]
    Http(HttpTarget) {
        name: "http",
        schemes: ["http", "https"],
        capabilities: [http],
        open: |scheme, rest, via| Ok(HttpTarget::new(http::parse_url(scheme, rest)?, via.clone())),
        example: "http://127.0.0.1:8088/  (several ports or servers: http://127.0.0.1:8088,8089,h2:80/index.html; TLS: https://)",
        about: "HTTP/1.1 servers (own client on httparse, TLS by rustls): keep-alive connections dealt over the servers round robin, pipelined",
    },
    #[cfg(feature = "etcd")]
    Etcd(EtcdTarget) {
        name: "etcd",
        schemes: ["etcd"],
        capabilities: [kv],
        open: |_, rest, via| Ok(EtcdTarget::new(etcd::parse_url(rest)?, via.clone())),
        example: "etcd://127.0.0.1:2379  (a cluster's members: etcd://127.0.0.1:23791,23792,23793)",
        about: "etcd v3 (own gRPC client over HTTP/2): a transaction is one Txn, many in flight per connection; members round robin",
        stats: ("the first member's /metrics", etcd::stats::SERIES),
    },
    Null(NullTarget) {
        name: "null",
        schemes: ["null"],
        capabilities: [voter, hello],
        open: |_, rest, _| Ok(NullTarget::parse(rest)?),
        example: "null://?delay=100us  or  null://?delay=50us-200us",
        about: "completes every operation in process (after an optional delay); stores nothing",
    },
}

fn facts_of<T: TargetInfo>(t: &T, label: &str) -> TargetFacts {
    TargetFacts {
        label: label.to_string(),
        default_connections: t.default_connections(),
        default_threads: t.default_threads(),
        shared: t.shared(),
        max_depth: t.max_depth(),
    }
}

/// An opened target: the concrete one, and the URL it was opened from as
/// output and reports show it (its password masked).
pub struct Target {
    opened: Opened,
    label: String,
}

impl Target {
    /// Open the target a URL names; no URL means a fresh embedded SQLite.
    /// Its connections take `settings`. A malformed URL is a usage error;
    /// an unreachable target is not.
    pub fn open(url: Option<&str>, settings: &ClientSettings) -> Result<Target, OpenError> {
        Target::open_for(None, url, settings)
    }

    /// [`Target::open`] for `workload`, whose name helps guess what a URL
    /// with no scheme meant.
    pub fn open_for(
        workload: Option<&str>,
        url: Option<&str>,
        settings: &ClientSettings,
    ) -> Result<Target, OpenError> {
        let url = url.unwrap_or("sqlite://");
        let (scheme, rest) = url.split_once("://").unwrap_or((url, ""));
        let via = Connector::new(settings);
        let opened = Target::open_scheme(scheme, rest, &via).unwrap_or_else(|| {
            let hint = hint::scheme_hint(&mask_text(url), workload)
                .map_or(String::new(), |h| format!(": {h}"));
            Err(OpenError::Spec(SpecError::new(
                "--target",
                format!(
                    "unknown target scheme '{}' in '{}'{} (see `loadrig targets`)",
                    loadrig_spec::printable(scheme),
                    mask_text(url),
                    loadrig_spec::printable(&hint),
                ),
            )))
        })?;
        Ok(Target {
            opened,
            label: mask_text(url),
        })
    }

    /// The URL it was opened from, its password masked.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The concrete target, for a caller that knows which it opened.
    pub fn into_opened(self) -> Opened {
        self.opened
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

/// Parse `key=value&...` query parameters.
pub(crate) fn query_pairs(q: &str) -> impl Iterator<Item = (&str, &str)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
}

/// Parse a duration like `250us`, `2ms`, `1s` or a bare number of
/// microseconds, at most [`loadrig_spec::bounds::MAX_SECS`].
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
    if secs > loadrig_spec::bounds::MAX_SECS {
        return None;
    }
    Some(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_masked() {
        assert_eq!(
            mask_text("postgres://bench:bench@127.0.0.1/bench"),
            "postgres://bench:***@127.0.0.1/bench"
        );
        assert_eq!(mask_text("sqlite:///tmp/x.db"), "sqlite:///tmp/x.db");
    }

    /// What a row's line says about calls in flight is what its type does
    /// (`loadrig targets` prints the line; the type's depth is the code).
    #[test]
    fn each_row_says_the_depth_its_target_has() {
        let settings = ClientSettings::default();
        for d in TARGETS {
            let url = d.example.split_whitespace().next().unwrap_or("");
            let Ok(t) = Target::open(Some(url), &settings) else {
                panic!("{}: its example {url} does not open", d.name);
            };
            let depth = t.facts().max_depth;
            if d.about.contains("one call per connection") {
                assert_eq!(depth, 1, "{}: {}", d.name, d.about);
            }
            if d.about.contains("pipelined") {
                assert!(depth > 1, "{}: {}", d.name, d.about);
            }
            let said = d
                .about
                .split_once(" calls in flight")
                .and_then(|(before, _)| {
                    before
                        .rsplit(' ')
                        .next()
                        .and_then(|n| n.parse::<usize>().ok())
                });
            if let Some(n) = said {
                assert_eq!(n, depth, "{}: {}", d.name, d.about);
            }
        }
    }
}
