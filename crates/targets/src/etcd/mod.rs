//! etcd (v3 API, gRPC), hand written on `loadrig_wire::etcd` and the `h2`
//! crate: `etcd://HOST[:PORT][,PORT|,HOST[:PORT]...]`, the members of one
//! cluster. Engine connections are dealt over the members round robin,
//! one HTTP/2 connection each, many calls in flight on it ([`grpc`]). A
//! connection that breaks (a member killed) reconnects to the next member
//! that answers.
//!
//! What the target says about itself comes from the first member that
//! answers: `Maintenance.Status` (the version) and `Cluster.MemberList`
//! (the replication). etcd has one durability: a write is answered once
//! a majority of the members have it in their write-ahead logs, fsynced.
//!
//! The kv capability is in [`kv`]; the server's statistics per lap in
//! [`stats`].

mod grpc;
mod kv;
pub(crate) mod stats;

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use loadrig_spec::SpecError;
use loadrig_wire::etcd::request;
use loadrig_wire::etcd::response::{MemberList, StatusResponse};
use loadrig_workloads::{TargetError, TargetInfo, ASIDE_TIMEOUT};

use crate::settings::Connector;
use crate::url::TargetUrl;
use grpc::{CallError, Channel, Method};

pub use kv::EtcdConn;

const DEFAULT_PORT: u16 = 2379;

/// Calls one connection keeps in flight at most: HTTP/2 streams, each a
/// few hundred bytes of state here and at the member.
const MAX_DEPTH: usize = 4096;

/// How long a cold-path call may take (a delete of a million keys is one
/// Raft entry the member applies at once).
const ADMIN_TIMEOUT: Duration = Duration::from_secs(300);

const EXPECTED: &str = "etcd://HOST[:PORT][,PORT|,HOST[:PORT]...]";

/// Parse what follows `etcd://`: the members; no login (etcd's
/// authentication is not spoken), no path, no options.
pub(crate) fn parse_url(rest: &str) -> Result<TargetUrl, SpecError> {
    let (url, options) = TargetUrl::parse("etcd", rest, DEFAULT_PORT, EXPECTED)?;
    url.no_path("no path is taken (the dataset is a key prefix)")?;
    url.no_options(options)?;
    if url.user.is_some() || url.password.is_some() {
        return Err(url.bad("no login is taken (etcd's authentication is not supported)"));
    }
    Ok(url)
}

/// What the first member that answered said about the cluster.
#[derive(Debug, Clone)]
struct Facts {
    version: String,
    members: usize,
}

/// The members of one etcd cluster. Cheap: it connects per use.
pub struct EtcdTarget {
    at: Arc<TargetUrl>,
    via: Arc<Connector>,
    /// The member the next engine connection goes to (round robin).
    next: AtomicUsize,
    /// Every row's key starts with it: `lrkv/DATASET/`.
    prefix: Arc<[u8]>,
    facts: OnceLock<Facts>,
}

impl EtcdTarget {
    pub(crate) fn new(at: TargetUrl, via: Arc<Connector>) -> EtcdTarget {
        EtcdTarget {
            at: Arc::new(at),
            via,
            next: AtomicUsize::new(0),
            prefix: Arc::from(&b"lrkv/kv/"[..]),
            facts: OnceLock::new(),
        }
    }

    fn unreachable(&self, reason: impl std::fmt::Display) -> TargetError {
        TargetError::Unreachable {
            target: self.at.label(),
            reason: reason.to_string(),
        }
    }

    fn failed(&self, what: &str, reason: impl std::fmt::Display) -> TargetError {
        TargetError::Prepare {
            target: self.at.label(),
            reason: format!("{what}: {reason}"),
        }
    }

    /// A connection to the first member that answers, from member `from`
    /// on; its index, or every member's reason.
    async fn open_from<M: Unpin>(&self, from: usize) -> Result<(Channel<M>, usize), String> {
        let n = self.at.servers.len();
        let mut why = Vec::new();
        for k in 0..n {
            let i = (from + k) % n;
            let (host, port, name) = self.at.server(i);
            match Channel::open(&self.via, &host, port).await {
                Ok(c) => return Ok((c, i)),
                Err(e) => why.push(format!("{name}: {e}")),
            }
        }
        Err(why.join("; "))
    }

    /// One cold-path call on a connection of its own: the response
    /// message.
    async fn call(&self, what: &str, method: Method, body: Bytes) -> Result<Bytes, TargetError> {
        let (mut chan, _) = self
            .open_from::<()>(0)
            .await
            .map_err(|e| self.unreachable(e))?;
        chan.start(method, body, ());
        let done = tokio::time::timeout(ADMIN_TIMEOUT, chan.next())
            .await
            .map_err(|_| self.failed(what, "timed out"))?
            .map_err(|e| self.failed(what, e))?;
        done.result.map_err(|e| self.failed(what, e))
    }

    /// The version and the member count, asked once.
    async fn ask(&self) -> Option<Facts> {
        if let Some(f) = self.facts.get() {
            return Some(f.clone());
        }
        let mut b = BytesMut::new();
        request::encode_empty(&mut b);
        let body = b.split().freeze();
        let status = self
            .call("status", Method::Status, body.clone())
            .await
            .ok()?;
        let version = StatusResponse::decode(&status).ok()?.version.to_string();
        let list = self
            .call("member list", Method::MemberList, body)
            .await
            .ok()?;
        let members = MemberList::decode(&list).ok()?.len;
        let facts = Facts { version, members };
        let _ = self.facts.set(facts.clone());
        Some(facts)
    }
}

impl TargetInfo for EtcdTarget {
    async fn server_version(&self) -> Option<String> {
        let f = tokio::time::timeout(ASIDE_TIMEOUT, self.ask())
            .await
            .ok()??;
        Some(format!("etcd {}", f.version))
    }

    /// Before the member list is known (the run's header is printed
    /// before connecting) the one promise that holds for any cluster;
    /// after, with the member count (the report's).
    fn durability(&self) -> Option<String> {
        let fsync = "each commit is fsynced to the write-ahead log before it is answered (etcd has no other mode)";
        let Some(f) = self.facts.get() else {
            // True of one member and of a cluster, so the line after the
            // member list is read (one member, or n) does not contradict it.
            return Some(format!(
                "{fsync}; with several members, on a majority of them first"
            ));
        };
        let replication = match f.members {
            1 => "one member, no replication".to_string(),
            n => format!(
                "replicated to {n} members, answered once a majority ({}) has it",
                n / 2 + 1
            ),
        };
        Some(format!("{fsync}; {replication}"))
    }

    fn max_depth(&self) -> usize {
        MAX_DEPTH
    }

    /// One connection per member, as etcd's own client opens: a
    /// connection multiplexes every call in flight.
    fn default_connections(&self) -> Option<u32> {
        u32::try_from(self.at.servers.len()).ok()
    }

    /// `/metrics` on the first member's client port, and its process
    /// when it runs here.
    fn server_stats(&self) -> Vec<Box<dyn loadrig_workloads::stats::StatsSource>> {
        let (host, port) = self.at.servers.first().cloned().unwrap_or_default();
        let metrics = Box::new(stats::metrics(self.via.clone(), host.clone(), port))
            as Box<dyn loadrig_workloads::stats::StatsSource>;
        std::iter::once(metrics)
            .chain(crate::local::process_on(&host, port, &["etcd"]))
            .collect()
    }
}

/// A failed call as an operation's error: a status that may hide an
/// applied write (the member lost its leader, timed out, is stopping) is
/// in doubt, like a broken stream; the others are the member's refusal.
fn op_error(e: &CallError) -> loadrig_metrics::OpError {
    use loadrig_metrics::{ErrorKind, OpError};
    use loadrig_wire::etcd::frame::Code;
    match e {
        CallError::Stream(_) => OpError::new(ErrorKind::Io),
        CallError::Malformed(_) => OpError::new(ErrorKind::Protocol),
        CallError::Status { code, .. } => match code {
            Code::Unavailable => OpError {
                kind: ErrorKind::Io,
                class: "unavailable",
            },
            Code::DeadlineExceeded => OpError::new(ErrorKind::Timeout),
            Code::Cancelled => OpError {
                kind: ErrorKind::Io,
                class: "cancelled",
            },
            Code::Unknown => OpError::server("unknown"),
            Code::InvalidArgument => OpError::server("invalid_argument"),
            Code::ResourceExhausted => OpError::server("resource_exhausted"),
            Code::FailedPrecondition => OpError::server("failed_precondition"),
            Code::Internal => OpError::server("internal"),
            Code::Unauthenticated => OpError::server("unauthenticated"),
            _ => OpError::server("other"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_members_and_refuse_the_rest() {
        let u = parse_url("127.0.0.1:23791,23792,23793").unwrap();
        assert_eq!(u.servers.len(), 3);
        assert_eq!(
            u.label(),
            "etcd://127.0.0.1:23791,127.0.0.1:23792,127.0.0.1:23793"
        );
        assert_eq!(parse_url("h").unwrap().servers, [("h".to_string(), 2379)]);
        for bad in ["", "h/x", "h?x=1", "u:p@h", "h:0"] {
            let e = parse_url(bad).unwrap_err();
            assert_eq!(e.flag, "--target", "{bad}");
        }
    }
}
