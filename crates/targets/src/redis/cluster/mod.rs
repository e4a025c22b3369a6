//! Redis Cluster, `redis+cluster://HOST:PORT[,HOST:PORT...]` (or `run
//! redis --cluster`): the seeds' `CLUSTER SLOTS` gives the masters and the
//! slots each serves; every engine connection is a [`ClusterStream`] with
//! one pipelined socket per master ([`route`]), and the cold path is one
//! [`ClusterAdmin`] that routes each key to its master. docs/guides/redis-cluster.md.
//!
//! A cluster has database 0 only: `--dbnum` other than 0 is refused by the
//! nodes' SELECT, and the run stops before the load (exit 3).

mod route;

use std::sync::Arc;

use loadrig_spec::SpecError;
use loadrig_wire::kv::resp::slot::{key_slot, slot_tags, SLOTS};
use loadrig_workloads::redis::{cmd, Command, RedisBackend, RespAdmin, Value};
use loadrig_workloads::{TargetError, TargetInfo};

use super::{Admin, Link, RedisTarget, DEFAULT_PORT, MAX_DEPTH};
use crate::settings::Connector;
use crate::url::TargetUrl;

pub use route::ClusterStream;

const EXPECTED: &str = "redis+cluster://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]";

/// How many redirects one command follows before its last one is its
/// answer (a slot moving back and forth, a node that points elsewhere).
const MAX_HOPS: u8 = 5;

/// Parse what follows `redis+cluster://`: the seed nodes and a login.
pub(crate) fn parse_url(rest: &str) -> Result<TargetUrl, SpecError> {
    let (url, options) = TargetUrl::parse("redis+cluster", rest, DEFAULT_PORT, EXPECTED)?;
    url.no_path("no database is taken (a cluster has database 0 only)")?;
    url.no_options(options)?;
    if url.user.is_some() && url.password.is_none() {
        return Err(url.bad("a login is :PASSWORD@ or USER:PASSWORD@"));
    }
    Ok(url)
}

/// Which master serves each slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SlotMap {
    /// The masters, as the cluster names them.
    pub nodes: Vec<(String, u16)>,
    /// Per slot, an index into `nodes` (slots no master serves: 0, whose
    /// node answers with a redirect or CLUSTERDOWN).
    pub owner: Vec<u16>,
}

impl SlotMap {
    /// `CLUSTER SLOTS`'s reply: `[start, end, [host, port, id], replicas...]`
    /// per range; an empty host is the seed's.
    fn of(reply: &Value, seed: &str) -> Option<SlotMap> {
        let Value::Array(Some(ranges)) = reply else {
            return None;
        };
        let mut map = SlotMap {
            nodes: Vec::new(),
            owner: vec![0; SLOTS],
        };
        for r in ranges {
            let Value::Array(Some(r)) = r else {
                return None;
            };
            let (Some(start), Some(end), Some(Value::Array(Some(master)))) =
                (r.first(), r.get(1), r.get(2))
            else {
                return None;
            };
            let (start, end) = (start.integer()?, end.integer()?);
            let host = match master.first() {
                Some(Value::Bulk(Some(h))) if !h.is_empty() => String::from_utf8_lossy(h).into(),
                _ => seed.to_string(),
            };
            let port = u16::try_from(master.get(1)?.integer()?).ok()?;
            let node = map.node(&host, port);
            for s in usize::try_from(start).ok()?..=usize::try_from(end).ok()? {
                *map.owner.get_mut(s)? = node;
            }
        }
        (!map.nodes.is_empty()).then_some(map)
    }

    /// The index of the master at `host:port`, added if new.
    pub fn node(&mut self, host: &str, port: u16) -> u16 {
        if let Some(i) = self.nodes.iter().position(|(h, p)| h == host && *p == port) {
            return i as u16;
        }
        self.nodes.push((host.to_string(), port));
        (self.nodes.len() - 1) as u16
    }

    /// The master serving `key`.
    pub fn of_key(&self, key: &[u8]) -> usize {
        self.of_slot(usize::from(key_slot(key)))
    }

    /// The master serving `slot`.
    pub fn of_slot(&self, slot: usize) -> usize {
        usize::from(self.owner.get(slot).copied().unwrap_or(0))
    }

    /// The hash tags of the slots master `node` serves, in slot order:
    /// an engine connection on `node` tags its keys with one of them.
    pub fn tags(&self, node: usize) -> Vec<[u8; 3]> {
        self.owner
            .iter()
            .zip(slot_tags())
            .filter(|(o, _)| usize::from(**o) == node)
            .map(|(_, t)| *t)
            .collect()
    }

    /// `keys` grouped by slot, each group with its slot's master: the
    /// indices into `keys`, in their order within a slot. Groups come in
    /// slot order.
    fn by_slot(&self, keys: &[Vec<u8>]) -> Vec<(usize, Vec<usize>)> {
        let mut order: Vec<(u16, usize)> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (key_slot(k), i))
            .collect();
        order.sort_unstable();
        let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
        let mut last = None;
        for (slot, i) in order {
            match groups.last_mut() {
                Some((_, g)) if last == Some(slot) => g.push(i),
                _ => groups.push((self.of_slot(usize::from(slot)), vec![i])),
            }
            last = Some(slot);
        }
        groups
    }
}

/// A redirect a node answered instead: `MOVED` (the slot has a new owner)
/// or `ASK` (this once, during a migration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Redirect {
    pub ask: bool,
    pub slot: usize,
    pub host: String,
    pub port: u16,
}

impl Redirect {
    /// `MOVED 3999 127.0.0.1:6381` or `ASK ...` (the error's text, without
    /// `-`); an empty host is `seed`'s.
    pub fn parse(e: &[u8], seed: &str) -> Option<Redirect> {
        let e = std::str::from_utf8(e).ok()?;
        let mut words = e.split_ascii_whitespace();
        let ask = match words.next()? {
            "MOVED" => false,
            "ASK" => true,
            _ => return None,
        };
        let slot: usize = words.next()?.parse().ok()?;
        let (host, port) = words.next()?.rsplit_once(':')?;
        let host = if host.is_empty() { seed } else { host };
        let port = port.parse().ok()?;
        (slot < SLOTS).then(|| Redirect {
            ask,
            slot,
            host: host.to_string(),
            port,
        })
    }
}

/// Read the slot map from the first seed that answers.
async fn read_map(at: &TargetUrl, via: &Connector) -> Result<SlotMap, TargetError> {
    let mut why = String::from("no seed node");
    for (host, port) in &at.servers {
        let mut a = match Link::dial(at, via, host, *port, 0).await {
            Ok(link) => Admin {
                link,
                label: at.label(),
            },
            Err(e) => {
                why = e.to_string();
                continue;
            }
        };
        let reply = a.call(&[cmd(&["CLUSTER", "SLOTS"])]).await;
        match reply.ok().and_then(|mut r| r.pop()) {
            Some(v) => match SlotMap::of(&v, host) {
                Some(map) => return Ok(map),
                None => {
                    why = format!("{host}:{port}: CLUSTER SLOTS answered {v:?} (not a cluster?)")
                }
            },
            None => why = format!("{host}:{port}: no answer to CLUSTER SLOTS"),
        }
    }
    Err(TargetError::Unreachable {
        target: at.label(),
        reason: why,
    })
}

/// A Redis Cluster, found from its seeds. Cheap: it connects per use.
pub struct RedisClusterTarget {
    at: Arc<TargetUrl>,
    /// The seeds as plain servers: the version, the durability and what
    /// could not be read come from the first, as for one server.
    first: RedisTarget,
}

impl RedisClusterTarget {
    pub(crate) fn new(at: TargetUrl, via: Arc<Connector>) -> RedisClusterTarget {
        RedisClusterTarget {
            first: RedisTarget::new(at.clone(), via),
            at: Arc::new(at),
        }
    }
}

impl TargetInfo for RedisClusterTarget {
    async fn server_version(&self) -> Option<String> {
        self.first.server_version().await
    }

    fn durability(&self) -> Option<String> {
        self.first.durability()
    }

    fn max_depth(&self) -> usize {
        MAX_DEPTH
    }

    fn unread(&self) -> Vec<String> {
        self.first.unread()
    }
}

impl RedisBackend for RedisClusterTarget {
    type Conn = ClusterStream;
    type Admin = ClusterAdmin;

    /// One: the cold path's [`ClusterAdmin`] routes every key itself.
    fn servers(&self) -> usize {
        1
    }

    fn cluster(&self) -> bool {
        true
    }

    /// Worker `k`'s home (its keys' master) is master `k mod masters`.
    async fn connect(&self, db: u32, worker: u32) -> Result<ClusterStream, TargetError> {
        ClusterStream::open(self.at.clone(), self.first.via.clone(), db, worker as usize).await
    }

    async fn admin(&self, _server: usize, db: u32) -> Result<ClusterAdmin, TargetError> {
        let map = read_map(&self.at, &self.first.via).await?;
        Ok(ClusterAdmin {
            masters: map.nodes.len(),
            map,
            at: self.at.clone(),
            via: self.first.via.clone(),
            db,
            links: Vec::new(),
        })
    }
}

/// The cold path on a cluster: a command with a key goes to the key's
/// master (following MOVED and ASK); MGET is split into one MGET per
/// slot and a DEL of several keys into one DEL per key, sent pipelined
/// per master, and their answers put back together; SCAN walks every
/// master; the rest (INFO, CONFIG GET) goes to the first master.
pub struct ClusterAdmin {
    at: Arc<TargetUrl>,
    via: Arc<Connector>,
    db: u32,
    map: SlotMap,
    /// The masters as the map was read (redirects may add nodes to `map`).
    masters: usize,
    /// A link per master, opened when first used.
    links: Vec<Option<Admin>>,
}

impl ClusterAdmin {
    /// Commands pipelined to master `node`.
    async fn on(&mut self, node: usize, commands: &[Command]) -> Result<Vec<Value>, TargetError> {
        self.link(node).await?.call(commands).await
    }

    /// The link to master `node`, opened when first used.
    async fn link(&mut self, node: usize) -> Result<&mut Admin, TargetError> {
        if self.links.len() <= node {
            self.links.resize_with(node + 1, || None);
        }
        if self.links[node].is_none() {
            let (host, port) = self.map.nodes.get(node).cloned().unwrap_or_default();
            let link = Link::dial(&self.at, &self.via, &host, port, self.db)
                .await
                .map_err(|e| TargetError::Unreachable {
                    target: self.at.label(),
                    reason: e.to_string(),
                })?;
            self.links[node] = Some(Admin {
                link,
                label: self.at.label(),
            });
        }
        self.links[node]
            .as_mut()
            .ok_or_else(|| TargetError::Unreachable {
                target: self.at.label(),
                reason: format!("no link to node {node}"),
            })
    }

    /// Commands whose key is their second part, each sent to its key's
    /// master (pipelined per master), redirects followed.
    async fn routed(&mut self, commands: &[Command]) -> Result<Vec<Value>, TargetError> {
        let mut replies = vec![Value::Bulk(None); commands.len()];
        let mut by_node: Vec<Vec<usize>> = vec![Vec::new(); self.map.nodes.len()];
        for (i, c) in commands.iter().enumerate() {
            let node = c.get(1).map_or(0, |k| self.map.of_key(k));
            by_node[node].push(i);
        }
        for (node, which) in by_node.into_iter().enumerate() {
            if which.is_empty() {
                continue;
            }
            let batch: Vec<Command> = which.iter().map(|&i| commands[i].clone()).collect();
            for (i, v) in which.into_iter().zip(self.on(node, &batch).await?) {
                replies[i] = v;
            }
        }
        let seed = self
            .at
            .servers
            .first()
            .map(|s| s.0.clone())
            .unwrap_or_default();
        for (i, c) in commands.iter().enumerate() {
            for _ in 0..MAX_HOPS {
                let Value::Error(e) = &replies[i] else { break };
                let Some(r) = Redirect::parse(e.as_bytes(), &seed) else {
                    break;
                };
                let node = usize::from(self.map.node(&r.host, r.port));
                let answer = if r.ask {
                    self.on(node, &[cmd(&["ASKING"]), c.clone()]).await?.pop()
                } else {
                    if let Some(o) = self.map.owner.get_mut(r.slot) {
                        *o = node as u16;
                    }
                    self.on(node, std::slice::from_ref(c)).await?.pop()
                };
                replies[i] = answer.unwrap_or(Value::Bulk(None));
            }
        }
        Ok(replies)
    }

    /// SCAN over every master: all the keys, with cursor 0 (done).
    async fn scan(&mut self, c: &Command) -> Result<Value, TargetError> {
        let mut keys = Vec::new();
        for node in 0..self.map.nodes.len() {
            let mut cursor = b"0".to_vec();
            loop {
                let mut this = c.clone();
                if let Some(at) = this.get_mut(1) {
                    *at = cursor;
                }
                let reply = self.on(node, &[this]).await?.pop();
                let Some(Value::Array(Some(mut parts))) = reply else {
                    // Refused (or not an array): the caller sees it as is.
                    return Ok(reply.unwrap_or(Value::Bulk(None)));
                };
                let (Some(Value::Array(Some(batch))), Some(Value::Bulk(Some(next)))) =
                    (parts.pop(), parts.pop())
                else {
                    return Ok(Value::Error("SCAN: not [cursor, keys]".into()));
                };
                keys.extend(batch);
                if next == b"0" {
                    break;
                }
                cursor = next;
            }
        }
        Ok(Value::Array(Some(vec![
            Value::Bulk(Some(b"0".to_vec())),
            Value::Array(Some(keys)),
        ])))
    }

    /// MGET of keys in any slots, its reply put back together (see
    /// [`ClusterAdmin::mget_seen`]); the answer is the first error among
    /// the key-by-key reads, if any.
    async fn mget(&mut self, keys: &[Vec<u8>]) -> Result<Value, TargetError> {
        let mut values = vec![Value::Bulk(None); keys.len()];
        let read = self
            .mget_seen(keys, &mut |i, v| {
                values[i] = Value::Bulk(v.map(<[u8]>::to_vec))
            })
            .await?;
        Ok(match read {
            Ok(()) => Value::Array(Some(values)),
            Err(e) => e,
        })
    }

    /// MGET of keys in any slots, each value handed to `seen(i, value)`
    /// where the reply lies: one MGET per slot, pipelined per master, the
    /// keys encoded from where they are and no value copied. A slot's
    /// MGET answered otherwise (a redirect while the slot moves, TRYAGAIN,
    /// a server without MGET) is read again key by key, each GET
    /// following its redirects; `Err` is then the first error among
    /// those.
    async fn mget_seen(
        &mut self,
        keys: &[Vec<u8>],
        seen: &mut impl FnMut(usize, Option<&[u8]>),
    ) -> Result<Result<(), Value>, TargetError> {
        let groups = self.map.by_slot(keys);
        let mut again = Vec::new();
        for node in 0..self.map.nodes.len() {
            let mine: Vec<&Vec<usize>> = groups
                .iter()
                .filter(|(n, _)| *n == node)
                .map(|(_, g)| g)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let link = self.link(node).await?;
            for g in &mine {
                link.encode_mget(g.iter().map(|&i| keys[i].as_slice()));
            }
            link.replies(b"MGET", mine.len(), |j, reply| {
                let g = mine[j];
                if super::mget_values(reply, g.len(), |k, v| seen(g[k], v)).is_err() {
                    again.extend(g.iter().copied());
                }
            })
            .await?;
        }
        if !again.is_empty() {
            let gets: Vec<Command> = again
                .iter()
                .map(|&i| cmd(&[&b"GET"[..], &keys[i]]))
                .collect();
            let replies = self.routed(&gets).await?;
            if let Some(e) = replies.iter().find(|v| matches!(v, Value::Error(_))) {
                return Ok(Err(e.clone()));
            }
            for (i, v) in again.into_iter().zip(&replies) {
                seen(i, v.bytes());
            }
        }
        Ok(Ok(()))
    }

    async fn one(&mut self, c: &Command) -> Result<Value, TargetError> {
        let name = c
            .first()
            .map(|n| n.to_ascii_uppercase())
            .unwrap_or_default();
        let per_key = |verb: &str| -> Vec<Command> {
            c.iter()
                .skip(1)
                .map(|k| cmd(&[verb.as_bytes(), k]))
                .collect()
        };
        Ok(match name.as_slice() {
            b"SCAN" => self.scan(c).await?,
            b"MGET" => self.mget(c.get(1..).unwrap_or_default()).await?,
            b"DEL" if c.len() > 2 => {
                let counts = self.routed(&per_key("DEL")).await?;
                match counts.iter().find(|v| matches!(v, Value::Error(_))) {
                    Some(e) => e.clone(),
                    None => Value::Integer(counts.iter().filter_map(Value::integer).sum()),
                }
            }
            b"INFO" | b"CONFIG" | b"CLUSTER" | b"PING" => self
                .on(0, std::slice::from_ref(c))
                .await?
                .pop()
                .unwrap_or(Value::Bulk(None)),
            _ if c.len() >= 2 => self
                .routed(std::slice::from_ref(c))
                .await?
                .pop()
                .unwrap_or(Value::Bulk(None)),
            _ => self
                .on(0, std::slice::from_ref(c))
                .await?
                .pop()
                .unwrap_or(Value::Bulk(None)),
        })
    }
}

impl RespAdmin for ClusterAdmin {
    async fn call(&mut self, commands: &[Command]) -> Result<Vec<Value>, TargetError> {
        let mut out = Vec::with_capacity(commands.len());
        for c in commands {
            out.push(self.one(c).await?);
        }
        Ok(out)
    }

    async fn mget_each(
        &mut self,
        keys: &[Vec<u8>],
        seen: &mut impl FnMut(usize, Option<&[u8]>),
    ) -> Result<Result<(), Value>, TargetError> {
        self.mget_seen(keys, seen).await
    }

    fn master_tags(&self) -> Vec<Vec<[u8; 3]>> {
        (0..self.masters).map(|m| self.map.tags(m)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::Bulk(Some(s.as_bytes().to_vec()))
    }

    #[test]
    fn the_slot_map_from_cluster_slots() {
        let range = |a: i64, b: i64, host: &str, port: i64| {
            Value::Array(Some(vec![
                Value::Integer(a),
                Value::Integer(b),
                Value::Array(Some(vec![bulk(host), Value::Integer(port), bulk("id")])),
                Value::Array(Some(vec![bulk("10.0.0.9"), Value::Integer(1), bulk("r")])),
            ]))
        };
        let reply = Value::Array(Some(vec![
            range(0, 5460, "", 7001),
            range(5461, 10922, "h2", 7002),
            range(10923, 16383, "", 7003),
        ]));
        let m = SlotMap::of(&reply, "seed").unwrap();
        assert_eq!(
            m.nodes,
            [
                ("seed".to_string(), 7001),
                ("h2".to_string(), 7002),
                ("seed".to_string(), 7003)
            ]
        );
        assert_eq!((m.owner[0], m.owner[5461], m.owner[16383]), (0, 1, 2));
        // foo is slot 12182.
        assert_eq!(m.of_key(b"foo"), 2);
        assert_eq!(SlotMap::of(&Value::Error("ERR".into()), "s"), None);
        assert_eq!(SlotMap::of(&Value::Array(Some(vec![])), "s"), None);
    }

    #[test]
    fn tags_per_master_and_keys_grouped_by_slot() {
        let owner = (0..SLOTS).map(|s| u16::from(s >= 8192)).collect();
        let m = SlotMap {
            nodes: vec![("h".into(), 1), ("h".into(), 2)],
            owner,
        };
        let (t0, t1) = (m.tags(0), m.tags(1));
        assert_eq!((t0.len(), t1.len()), (8192, 8192));
        // In slot order: the first tag of master 1 is slot 8192's.
        assert_eq!(usize::from(key_slot(&t0[0])), 0);
        assert_eq!(usize::from(key_slot(&t1[0])), 8192);
        assert_eq!(usize::from(key_slot(&t1[8191])), 16383);
        // foo and x{foo}: slot 12182 (master 1); bar: slot 5061 (master 0).
        let keys = [&b"foo"[..], b"bar", b"x{foo}"].map(<[u8]>::to_vec);
        assert_eq!(m.by_slot(&keys), vec![(0, vec![1]), (1, vec![0, 2])]);
        assert!(m.by_slot(&[]).is_empty());
    }

    #[test]
    fn redirects_parse() {
        assert_eq!(
            Redirect::parse(b"MOVED 3999 127.0.0.1:6381", "s"),
            Some(Redirect {
                ask: false,
                slot: 3999,
                host: "127.0.0.1".into(),
                port: 6381
            })
        );
        let r = Redirect::parse(b"ASK 1 :7002", "seed").unwrap();
        assert!(r.ask && r.host == "seed" && r.port == 7002);
        for bad in [
            &b"MOVED"[..],
            b"MOVED 99999 h:1",
            b"ERR x",
            b"ASK 1 h",
            b"MOVED 1 h:x",
        ] {
            assert_eq!(Redirect::parse(bad, "s"), None);
        }
    }

    #[test]
    fn cluster_urls() {
        let u = parse_url("127.0.0.1:7001,7002,h:7003").unwrap();
        assert_eq!(u.servers.len(), 3);
        assert_eq!(
            u.label(),
            "redis+cluster://127.0.0.1:7001,127.0.0.1:7002,h:7003"
        );
        assert!(parse_url("h/3").is_err());
    }
}
