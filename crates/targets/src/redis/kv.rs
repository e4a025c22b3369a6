//! The kv workload on Redis. Redis has no ordered keyspace, so a dataset
//! is its values under `kv:NAME:` + key and, beside them, a sorted set
//! `kv:NAME:index` holding every key with score 0: ZRANGEBYLEX walks it in
//! key order, which is how a range read finds its keys. The index is
//! written at load only (transactions update existing keys).
//!
//! A transaction with one part is one command, atomic on its own: point
//! reads are one MGET, writes one MSET, a range read one EVAL of a small
//! Lua script (ZRANGEBYLEX, then MGET of the keys found, counted on the
//! server). A transaction with several parts is MULTI, those commands,
//! EXEC. Everything is pipelined on the connection, answered in order;
//! durability is the server's appendfsync (in the header).

use std::sync::Arc;

use bytes::{Buf, BufMut, BytesMut};
use loadrig_engine::CountsBytes;
use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_wire::kv::resp::{self, Reply as Resp};
use loadrig_workloads::kv::{Key, KvBackend, KvConn, Rows, Txn, TxnDone};
use loadrig_workloads::redis::{cmd, Command, RedisBackend, RespAdmin, Value};
use loadrig_workloads::stream::{ByteStream, InFlight};
use loadrig_workloads::{Reply, TargetError};

use super::{Admin, Link, RedisConn, RedisTarget};
use crate::settings::Connector;
use crate::url::TargetUrl;

/// A range read: the keys from ARGV[1] (inclusive) to ARGV[2]
/// (exclusive), at most ARGV[3], read with MGET; the values found counted.
const RANGE_LUA: &str =
    "local ks = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[1], ARGV[2], 'LIMIT', 0, ARGV[3]) \
if #ks == 0 then return 0 end \
local vs = redis.call('MGET', unpack(ks)) \
local n = 0 for i = 1, #vs do if vs[i] then n = n + 1 end end \
return n";

/// A dataset's names.
#[derive(Debug)]
pub(crate) struct Names {
    /// `kv:NAME:`, before every key.
    prefix: Vec<u8>,
    index: Vec<u8>,
    marker: Vec<u8>,
}

impl Names {
    pub(crate) fn new(dataset: &str) -> Names {
        Names {
            prefix: format!("kv:{dataset}:").into_bytes(),
            index: format!("kv:{dataset}:index").into_bytes(),
            marker: format!("kv:{dataset}:marker").into_bytes(),
        }
    }

    fn key(&self, k: &Key) -> Vec<u8> {
        [&self.prefix[..], &k[..]].concat()
    }

    /// SCAN's pattern for the values' keys (the dataset name has no glob
    /// characters: the spec allows a-z, 0-9 and _).
    fn pattern(&self) -> Vec<u8> {
        [&self.prefix[..], b"k*"].concat()
    }
}

/// What the final reply of a transaction holds.
#[derive(Debug, Clone, Copy)]
enum Part {
    /// MULTI's +OK or a +QUEUED: nothing to count (an error there makes
    /// EXEC fail, which is counted).
    Skip,
    /// The transaction's one command, or its EXEC: the tag, and which
    /// parts it had (reads, range, writes), in that order.
    Last {
        tag: Tag,
        reads: bool,
        range: bool,
        writes: bool,
    },
}

/// One pipelined connection running transactions.
pub struct RedisKvConn {
    stream: RedisConn,
    parts: InFlight<Part>,
    names: Arc<Names>,
    at: Arc<TargetUrl>,
    via: Arc<Connector>,
    admin: Option<Admin>,
}

/// `n` in decimal, in `buf`'s last bytes.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

/// Append one bulk string: `$len\r\n` bytes `\r\n`, `prefix` first.
fn bulk(out: &mut BytesMut, prefix: &[u8], bytes: &[u8]) {
    out.put_u8(b'$');
    out.put_slice(decimal((prefix.len() + bytes.len()) as u64, &mut [0; 20]));
    out.put_slice(b"\r\n");
    out.put_slice(prefix);
    out.put_slice(bytes);
    out.put_slice(b"\r\n");
}

fn array(out: &mut BytesMut, n: usize) {
    out.put_u8(b'*');
    out.put_slice(decimal(n as u64, &mut [0; 20]));
    out.put_slice(b"\r\n");
}

/// The count a transaction's reply holds, by part.
fn count(reply: &Resp<'_>, reads: bool, range: bool, writes: bool) -> Result<TxnDone, OpError> {
    let mut done = TxnDone::default();
    let found = |r: &Resp<'_>| match r {
        Resp::Array(Some(a)) => Ok(a
            .iter()
            .filter(|v| matches!(v, Resp::Bulk(Some(_))))
            .count() as u32),
        _ => Err(unexpected(r)),
    };
    let ranged = |r: &Resp<'_>| match r.as_integer() {
        Some(n) => Ok(u32::try_from(n).unwrap_or(0)),
        None => Err(unexpected(r)),
    };
    let ok = |r: &Resp<'_>| match r {
        Resp::Simple(b"OK") => Ok(()),
        _ => Err(unexpected(r)),
    };
    let parts = usize::from(reads) + usize::from(range) + usize::from(writes);
    if parts == 1 {
        if reads {
            done.found = found(reply)?;
        } else if range {
            done.ranged = ranged(reply)?;
        } else {
            ok(reply)?;
        }
        return Ok(done);
    }
    let Resp::Array(Some(each)) = reply else {
        return Err(unexpected(reply));
    };
    let mut each = each.iter();
    let mut next = || each.next().ok_or(OpError::new(ErrorKind::Protocol));
    if reads {
        done.found = found(&next()?)?;
    }
    if range {
        done.ranged = ranged(&next()?)?;
    }
    if writes {
        ok(&next()?)?;
    }
    Ok(done)
}

/// A reply of the wrong shape: a server error by its code, else garbage.
fn unexpected(r: &Resp<'_>) -> OpError {
    match r {
        Resp::Error(e) => OpError::server(loadrig_workloads::redis::command::error_class(e)),
        _ => OpError::new(ErrorKind::Protocol),
    }
}

impl RedisKvConn {
    /// The next whole reply in the read buffer, as an answer if it ends a
    /// transaction. `None`: wait for more bytes.
    fn parse(&mut self) -> Option<Reply<TxnDone>> {
        loop {
            if self.parts.stray() {
                return Some(Reply::Broken(OpError::new(ErrorKind::Protocol)));
            }
            let (part, result, n) = match resp::parse_reply(self.stream.input()) {
                Ok(None) => return None,
                Err(_) => return Some(Reply::Broken(OpError::new(ErrorKind::Protocol))),
                Ok(Some((reply, n))) => {
                    let Some(part) = self.parts.pop() else {
                        return Some(Reply::Broken(OpError::new(ErrorKind::Protocol)));
                    };
                    let result = match part {
                        Part::Skip => None,
                        Part::Last {
                            reads,
                            range,
                            writes,
                            ..
                        } => Some(count(&reply, reads, range, writes)),
                    };
                    (part, result, n)
                }
            };
            self.stream.input().advance(n);
            if let (Part::Last { tag, .. }, Some(result)) = (part, result) {
                return Some(Reply::Done { tag, result });
            }
        }
    }

    /// A cold-path link, opened on first use.
    async fn admin(&mut self) -> Result<&mut Admin, TargetError> {
        if self.admin.is_none() {
            let link = Link::open(&self.at, &self.via, 0, 0).await.map_err(|e| {
                TargetError::Unreachable {
                    target: self.at.label(),
                    reason: e.to_string(),
                }
            })?;
            self.admin = Some(Admin {
                link,
                label: self.at.label(),
            });
        }
        self.admin
            .as_mut()
            .ok_or_else(|| TargetError::Unsupported("no link".into()))
    }
}

impl KvConn for RedisKvConn {
    fn submit(&mut self, txn: &Txn, tag: Tag) {
        let (reads, range, writes) = (
            !txn.reads.is_empty(),
            txn.range.is_some(),
            !txn.writes.is_empty(),
        );
        let multi = usize::from(reads) + usize::from(range) + usize::from(writes) > 1;
        let names = self.names.clone();
        let mut queued = 0;
        let out = self.stream.out();
        if multi {
            array(out, 1);
            bulk(out, b"", b"MULTI");
            queued += 1;
        }
        if reads {
            array(out, 1 + txn.reads.len());
            bulk(out, b"", b"MGET");
            for k in &txn.reads {
                bulk(out, &names.prefix, k);
            }
            queued += 1;
        }
        if let Some(g) = &txn.range {
            array(out, 7);
            bulk(out, b"", b"EVAL");
            bulk(out, b"", RANGE_LUA.as_bytes());
            bulk(out, b"", b"1");
            bulk(out, b"", &names.index);
            bulk(out, &[b"[".as_slice(), &names.prefix].concat(), &g.start);
            bulk(out, &[b"(".as_slice(), &names.prefix].concat(), &g.end);
            bulk(out, b"", decimal(u64::from(g.limit), &mut [0; 20]));
            queued += 1;
        }
        if writes {
            array(out, 1 + 2 * txn.writes.len());
            bulk(out, b"", b"MSET");
            for (k, v) in txn.writes.iter() {
                bulk(out, &names.prefix, k);
                bulk(out, b"", v);
            }
            queued += 1;
        }
        if multi {
            array(out, 1);
            bulk(out, b"", b"EXEC");
            queued += 1;
        }
        for i in 0..queued {
            let part = if i + 1 == queued {
                Part::Last {
                    tag,
                    reads,
                    range,
                    writes,
                }
            } else {
                Part::Skip
            };
            let input = self.stream.input();
            self.parts.push(part, input);
        }
    }

    async fn recv(&mut self) -> Reply<TxnDone> {
        loop {
            if let Some(r) = self.parse() {
                return r;
            }
            if let Err(e) = self.stream.fill().await {
                return Reply::Broken(e);
            }
        }
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.parts.clear();
        self.stream.reconnect().await
    }

    async fn put_rows(&mut self, rows: &Rows) -> Result<(), TargetError> {
        let names = self.names.clone();
        let mut mset: Command = vec![b"MSET".to_vec()];
        let mut zadd: Command = vec![b"ZADD".to_vec(), names.index.clone()];
        for (k, v) in rows.iter() {
            mset.push(names.key(k));
            mset.push(v.to_vec());
            zadd.push(b"0".to_vec());
            zadd.push(names.key(k));
        }
        let replies = self.admin().await?.call(&[mset, zadd]).await?;
        match replies.iter().find(|r| matches!(r, Value::Error(_))) {
            Some(Value::Error(e)) => Err(TargetError::Prepare {
                target: self.at.label(),
                reason: e.clone(),
            }),
            _ => Ok(()),
        }
    }

    async fn get_rows(&mut self, keys: &[Key]) -> Result<Vec<Option<Vec<u8>>>, TargetError> {
        let names = self.names.clone();
        let mut mget: Command = vec![b"MGET".to_vec()];
        mget.extend(keys.iter().map(|k| names.key(k)));
        let replies = self.admin().await?.call(&[mget]).await?;
        match replies.into_iter().next() {
            Some(Value::Array(Some(values))) => Ok(values
                .into_iter()
                .map(|v| match v {
                    Value::Bulk(b) => b,
                    _ => None,
                })
                .collect()),
            other => Err(TargetError::Prepare {
                target: self.at.label(),
                reason: format!("MGET answered {other:?}"),
            }),
        }
    }
}

impl CountsBytes for RedisKvConn {
    fn take_bytes(&mut self) -> (u64, u64) {
        self.stream.take_bytes()
    }
}

impl RedisTarget {
    async fn kv_admin(&self) -> Result<Admin, TargetError> {
        RedisBackend::admin(self, 0, 0).await
    }

    async fn one(&self, c: Command) -> Result<Value, TargetError> {
        let mut a = self.kv_admin().await?;
        let v = a.call(&[c]).await?.into_iter().next();
        match v {
            Some(Value::Error(e)) => Err(TargetError::Prepare {
                target: self.at.label(),
                reason: e,
            }),
            Some(v) => Ok(v),
            None => Err(TargetError::Prepare {
                target: self.at.label(),
                reason: "no reply".into(),
            }),
        }
    }

    /// Every key of the dataset's values, a SCAN page at a time, to `f`.
    async fn scan_keys(&self, mut f: impl AsyncPage) -> Result<(), TargetError> {
        let mut a = self.kv_admin().await?;
        let mut cursor = b"0".to_vec();
        loop {
            let page = a
                .call(&[cmd(&[
                    b"SCAN".as_slice(),
                    &cursor,
                    b"MATCH",
                    &self.kv.pattern(),
                    b"COUNT",
                    b"10000",
                ])])
                .await?;
            let Some(Value::Array(Some(parts))) = page.into_iter().next() else {
                return Err(TargetError::Prepare {
                    target: self.at.label(),
                    reason: "SCAN answered something else".into(),
                });
            };
            let mut parts = parts.into_iter();
            let (Some(Value::Bulk(Some(next))), Some(Value::Array(Some(keys)))) =
                (parts.next(), parts.next())
            else {
                return Err(TargetError::Prepare {
                    target: self.at.label(),
                    reason: "SCAN answered something else".into(),
                });
            };
            let keys: Vec<Vec<u8>> = keys
                .into_iter()
                .filter_map(|k| match k {
                    Value::Bulk(Some(k)) => Some(k),
                    _ => None,
                })
                .collect();
            f.page(&mut a, keys).await?;
            if next == b"0" {
                return Ok(());
            }
            cursor = next;
        }
    }
}

/// What to do with each page of keys SCAN returns.
trait AsyncPage {
    fn page(
        &mut self,
        admin: &mut Admin,
        keys: Vec<Vec<u8>>,
    ) -> impl std::future::Future<Output = Result<(), TargetError>>;
}

struct Count(u64);

impl AsyncPage for &mut Count {
    async fn page(&mut self, _admin: &mut Admin, keys: Vec<Vec<u8>>) -> Result<(), TargetError> {
        self.0 += keys.len() as u64;
        Ok(())
    }
}

struct Unlink;

impl AsyncPage for Unlink {
    async fn page(&mut self, admin: &mut Admin, keys: Vec<Vec<u8>>) -> Result<(), TargetError> {
        if keys.is_empty() {
            return Ok(());
        }
        let mut c: Command = vec![b"UNLINK".to_vec()];
        c.extend(keys);
        admin.call(&[c]).await.map(|_| ())
    }
}

impl KvBackend for RedisTarget {
    type Conn = RedisKvConn;

    fn use_dataset(&mut self, name: &str) {
        self.kv = Arc::new(Names::new(name));
    }

    fn transactions(&self) -> String {
        "point reads one MGET, writes one MSET, a range one EVAL (ZRANGEBYLEX on a sorted-set \
         index of the keys kept beside the values, then MGET); a transaction of several parts \
         is MULTI ... EXEC; pipelined"
            .to_string()
    }

    async fn prepare(&self) -> Result<(), TargetError> {
        if self.servers() > 1 {
            return Err(TargetError::Unsupported(
                "--target: the kv workload takes one Redis server (its index and values live together)"
                    .into(),
            ));
        }
        Ok(())
    }

    async fn marker(&self) -> Result<Option<String>, TargetError> {
        match self.one(cmd(&[b"GET".as_slice(), &self.kv.marker])).await? {
            Value::Bulk(Some(m)) => Ok(Some(String::from_utf8_lossy(&m).into_owned())),
            _ => Ok(None),
        }
    }

    async fn set_marker(&self, marker: &str) -> Result<(), TargetError> {
        self.one(cmd(&[
            b"SET".as_slice(),
            &self.kv.marker,
            marker.as_bytes(),
        ]))
        .await
        .map(|_| ())
    }

    async fn clear(&self) -> Result<(), TargetError> {
        self.scan_keys(Unlink).await?;
        self.one(cmd(&[
            b"UNLINK".as_slice(),
            &self.kv.index,
            &self.kv.marker,
        ]))
        .await
        .map(|_| ())
    }

    async fn count(&self) -> Result<u64, TargetError> {
        let mut c = Count(0);
        self.scan_keys(&mut c).await?;
        Ok(c.0)
    }

    async fn teardown(&self) -> Result<(), TargetError> {
        self.clear().await
    }

    async fn connect(&self) -> Result<Self::Conn, TargetError> {
        Ok(RedisKvConn {
            stream: RedisBackend::connect(self, 0, self.round_robin()).await?,
            parts: InFlight::new(),
            names: self.kv.clone(),
            at: self.at.clone(),
            via: self.via.clone(),
            admin: None,
        })
    }
}
