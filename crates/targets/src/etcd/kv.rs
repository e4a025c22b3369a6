//! etcd's kv capability. A transaction is one `Txn` (its point reads, its
//! range and its writes in the success branch, no compare: they run as
//! one revision, atomically), except that a transaction of one read is
//! one `Range` and one of a single write one `Put` (what etcd's own
//! benchmark sends). A range read is a `Range` with `range_end` and a
//! limit. Reads are linearizable (etcd's default). The rows of a dataset
//! are the keys under `lrkv/DATASET/`; its marker is the key
//! `lrkv/DATASET.marker`, outside that prefix.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use loadrig_engine::CountsBytes;
use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_wire::etcd::request::{self, Range};
use loadrig_wire::etcd::response::{
    DeleteRangeResponse, PutResponse, RangeResponse, ResponseOp, TxnResponse,
};
use loadrig_workloads::kv::{Key, KvBackend, KvConn, Rows, Txn, TxnDone};
use loadrig_workloads::{Reply, TargetError};

use super::grpc::{Channel, Method};
use super::{op_error, EtcdTarget, ADMIN_TIMEOUT};
use crate::url::TargetUrl;

/// etcd refuses a transaction of more operations (`--max-txn-ops`).
const MAX_TXN_OPS: usize = 128;

/// What was sent under a tag, to read its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// One `Range` of one key.
    Point,
    /// One `Range` of a span.
    Span,
    /// One `Put`.
    Put,
    /// One `Txn`: `reads` point reads, then the range if any, then
    /// `writes` puts.
    Txn {
        reads: u32,
        range: bool,
        writes: u32,
    },
}

impl EtcdTarget {
    fn marker_key(&self) -> Vec<u8> {
        let mut k = self.prefix.to_vec();
        k.pop();
        k.extend_from_slice(b".marker");
        k
    }
}

fn framed(f: impl FnOnce(&mut BytesMut) -> Result<(), loadrig_wire::etcd::WireError>) -> Bytes {
    let mut b = BytesMut::new();
    // Only a message over 4 GiB fails to frame: none is built here.
    let _ = f(&mut b);
    b.freeze()
}

impl KvBackend for EtcdTarget {
    type Conn = EtcdConn;

    fn use_dataset(&mut self, name: &str) {
        self.prefix = Arc::from(format!("lrkv/{name}/").into_bytes());
    }

    fn transactions(&self) -> String {
        "one gRPC Txn per transaction (reads, range, writes in its success branch, no compare); \
         a lone read one Range, a lone write one Put; ranges: a Range with a limit; \
         linearizable reads; many calls in flight per HTTP/2 connection"
            .to_string()
    }

    async fn prepare(&self) -> Result<(), TargetError> {
        // No schema: only the member must answer (and its facts be known).
        self.ask()
            .await
            .map(|_| ())
            .ok_or_else(|| self.unreachable("no answer to Maintenance.Status"))
    }

    async fn marker(&self) -> Result<Option<String>, TargetError> {
        let key = self.marker_key();
        let body = framed(|b| request::encode_range(b, &Range::key(&key)));
        let m = self.call("marker", Method::Range, body).await?;
        let r = RangeResponse::decode(&m).map_err(|e| self.failed("marker", e))?;
        let kv = r
            .kvs()
            .next()
            .transpose()
            .map_err(|e| self.failed("marker", e))?;
        Ok(kv.map(|kv| String::from_utf8_lossy(kv.value).into_owned()))
    }

    async fn set_marker(&self, marker: &str) -> Result<(), TargetError> {
        let key = self.marker_key();
        let body = framed(|b| request::encode_put(b, &key, marker.as_bytes()));
        let m = self.call("marker", Method::Put, body).await?;
        PutResponse::decode(&m).map_err(|e| self.failed("marker", e))?;
        Ok(())
    }

    async fn clear(&self) -> Result<(), TargetError> {
        let end = request::prefix_end(&self.prefix);
        for (key, end) in [(self.prefix.to_vec(), end), (self.marker_key(), Vec::new())] {
            let body = framed(|b| request::encode_delete_range(b, &key, &end));
            let m = self.call("clear", Method::DeleteRange, body).await?;
            DeleteRangeResponse::decode(&m).map_err(|e| self.failed("clear", e))?;
        }
        Ok(())
    }

    async fn count(&self) -> Result<u64, TargetError> {
        let end = request::prefix_end(&self.prefix);
        let range = Range {
            count_only: true,
            ..Range::span(&self.prefix, &end, 0)
        };
        let body = framed(|b| request::encode_range(b, &range));
        let m = self.call("count", Method::Range, body).await?;
        let r = RangeResponse::decode(&m).map_err(|e| self.failed("count", e))?;
        Ok(u64::try_from(r.count).unwrap_or(0))
    }

    async fn teardown(&self) -> Result<(), TargetError> {
        self.clear().await
    }

    async fn connect(&self) -> Result<EtcdConn, TargetError> {
        let from = self.next.fetch_add(1, Ordering::Relaxed);
        let (chan, member) = self
            .open_from(from % self.at.servers.len().max(1))
            .await
            .map_err(|e| self.unreachable(e))?;
        Ok(EtcdConn {
            at: self.at.clone(),
            via: self.via.clone(),
            member,
            chan,
            prefix: self.prefix.clone(),
            wbuf: BytesMut::with_capacity(4096),
            a: Vec::with_capacity(64),
            b: Vec::with_capacity(64),
            failed: VecDeque::new(),
            label: self.at.label(),
        })
    }
}

/// One HTTP/2 connection to one member.
pub struct EtcdConn {
    at: Arc<TargetUrl>,
    via: Arc<crate::settings::Connector>,
    member: usize,
    chan: Channel<(Tag, Shape)>,
    prefix: Arc<[u8]>,
    wbuf: BytesMut,
    /// Scratch for a prefixed key (and a range's end), reused.
    a: Vec<u8>,
    b: Vec<u8>,
    /// Transactions that failed before they were sent.
    failed: VecDeque<(Tag, OpError)>,
    label: String,
}

/// `prefix + key` into `out`.
fn prefixed<'a>(out: &'a mut Vec<u8>, prefix: &[u8], key: &[u8]) -> &'a [u8] {
    out.clear();
    out.extend_from_slice(prefix);
    out.extend_from_slice(key);
    out
}

/// Whether write `i` of `rows` is overwritten by a later one in the same
/// rows: etcd refuses a key put twice in one transaction, and the later
/// write is the one that counts.
fn shadowed(rows: &Rows, i: usize) -> bool {
    let keys = rows.keys();
    keys.get(i)
        .is_some_and(|k| keys.get(i + 1..).unwrap_or_default().contains(k))
}

impl EtcdConn {
    /// Encode `txn` into the write buffer; its shape.
    fn encode(&mut self, txn: &Txn) -> Result<Shape, loadrig_wire::etcd::WireError> {
        let (reads, writes) = (txn.reads.len(), txn.writes.len());
        let p = &self.prefix;
        match (reads, txn.range, writes) {
            (1, None, 0) => {
                let key = prefixed(&mut self.a, p, &txn.reads[0]);
                request::encode_range(&mut self.wbuf, &Range::key(key))?;
                Ok(Shape::Point)
            }
            (0, Some(r), 0) => {
                let start = prefixed(&mut self.a, p, &r.start);
                let end = prefixed(&mut self.b, p, &r.end);
                request::encode_range(
                    &mut self.wbuf,
                    &Range::span(start, end, u64::from(r.limit)),
                )?;
                Ok(Shape::Span)
            }
            (0, None, 1) => {
                let (key, value) = txn.writes.get(0).unwrap_or((&[0; 16], &[]));
                let key = prefixed(&mut self.a, p, key);
                request::encode_put(&mut self.wbuf, key, value)?;
                Ok(Shape::Put)
            }
            _ => {
                let mut t = request::Txn::begin(&mut self.wbuf);
                for k in &txn.reads {
                    t.range(&Range::key(prefixed(&mut self.a, p, k)));
                }
                if let Some(r) = txn.range {
                    let start = prefixed(&mut self.a, p, &r.start);
                    let end = prefixed(&mut self.b, p, &r.end);
                    t.range(&Range::span(start, end, u64::from(r.limit)));
                }
                let mut puts = 0;
                for (i, (k, v)) in txn.writes.iter().enumerate() {
                    if !shadowed(&txn.writes, i) {
                        t.put(prefixed(&mut self.a, p, k), v);
                        puts += 1;
                    }
                }
                t.finish()?;
                Ok(Shape::Txn {
                    reads: reads as u32,
                    range: txn.range.is_some(),
                    writes: puts,
                })
            }
        }
    }

    /// Start a cold-path call.
    fn start_cold(&mut self, method: Method, body: Bytes, i: u32) {
        self.chan.start(method, body, (i, Shape::Put));
    }

    /// Wait for every cold-path call in flight; each answer by its index.
    async fn gather(&mut self, what: &str, n: usize) -> Result<Vec<Bytes>, TargetError> {
        let mut out = vec![Bytes::new(); n];
        for _ in 0..n {
            let done = tokio::time::timeout(ADMIN_TIMEOUT, self.chan.next())
                .await
                .map_err(|_| self.failed(what, "timed out"))?
                .map_err(|e| self.failed(what, e))?;
            let (i, _) = done.meta;
            let m = done.result.map_err(|e| self.failed(what, e))?;
            if let Some(slot) = out.get_mut(i as usize) {
                *slot = m;
            }
        }
        Ok(out)
    }

    fn failed(&self, what: &str, reason: impl std::fmt::Display) -> TargetError {
        TargetError::Prepare {
            target: self.label.clone(),
            reason: format!("{what}: {reason}"),
        }
    }
}

/// What a transaction read, from its answer.
fn done_of(shape: Shape, m: &[u8]) -> Result<TxnDone, OpError> {
    let bad = |_| OpError::new(ErrorKind::Protocol);
    let mut done = TxnDone::default();
    match shape {
        Shape::Point => done.found = u32::from(RangeResponse::decode(m).map_err(bad)?.returned > 0),
        Shape::Span => done.ranged = RangeResponse::decode(m).map_err(bad)?.returned as u32,
        Shape::Put => {
            PutResponse::decode(m).map_err(bad)?;
        }
        Shape::Txn {
            reads,
            range,
            writes,
        } => {
            let t = TxnResponse::decode(m).map_err(bad)?;
            let expected = reads as usize + usize::from(range) + writes as usize;
            if !t.succeeded || t.returned != expected {
                return Err(OpError::new(ErrorKind::Protocol));
            }
            for (i, op) in t.responses().enumerate() {
                match (op.map_err(bad)?, i < reads as usize) {
                    (ResponseOp::Range(r), true) => done.found += u32::from(r.returned > 0),
                    (ResponseOp::Range(r), false) => done.ranged = r.returned as u32,
                    (ResponseOp::Put(_), false) => {}
                    _ => return Err(OpError::new(ErrorKind::Protocol)),
                }
            }
        }
    }
    Ok(done)
}

impl KvConn for EtcdConn {
    fn submit(&mut self, txn: &Txn, tag: Tag) {
        match self.encode(txn) {
            Ok(shape) => {
                let body = self.wbuf.split().freeze();
                let method = match shape {
                    Shape::Point | Shape::Span => Method::Range,
                    Shape::Put => Method::Put,
                    Shape::Txn { .. } => Method::Txn,
                };
                self.chan.start(method, body, (tag, shape));
            }
            Err(_) => {
                self.wbuf.clear();
                self.failed
                    .push_back((tag, OpError::new(ErrorKind::Protocol)));
            }
        }
    }

    async fn recv(&mut self) -> Reply<TxnDone> {
        if let Some((tag, e)) = self.failed.pop_front() {
            return Reply::Done {
                tag,
                result: Err(e),
            };
        }
        match self.chan.next().await {
            Ok(done) => {
                let (tag, shape) = done.meta;
                let result = match &done.result {
                    Ok(m) => done_of(shape, m),
                    Err(e) => Err(op_error(e)),
                };
                Reply::Done { tag, result }
            }
            Err(_) => Reply::Broken(OpError::new(ErrorKind::Io)),
        }
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        // The next member first: the one this connection was on may be
        // the one that went away.
        let n = self.at.servers.len().max(1);
        for k in 1..=n {
            let i = (self.member + k) % n;
            let (host, port, _) = self.at.server(i);
            if let Ok(chan) = Channel::open(&self.via, &host, port).await {
                self.chan = chan;
                self.member = i;
                self.failed.clear();
                return Ok(());
            }
        }
        Err(OpError::new(ErrorKind::Connect))
    }

    async fn put_rows(&mut self, rows: &Rows) -> Result<(), TargetError> {
        // The transactions of one batch are in flight together and etcd
        // may apply them in any order: a key given twice is sent once,
        // with its later value, so the order cannot matter.
        let mut seen = std::collections::HashSet::with_capacity(rows.len());
        let mut latest: Vec<usize> = (0..rows.len())
            .rev()
            .filter(|&i| rows.keys().get(i).is_some_and(|k| seen.insert(*k)))
            .collect();
        latest.reverse();
        let mut calls = 0u32;
        for chunk in latest.chunks(MAX_TXN_OPS) {
            let mut t = request::Txn::begin(&mut self.wbuf);
            for (k, v) in chunk.iter().filter_map(|&i| rows.get(i)) {
                t.put(prefixed(&mut self.a, &self.prefix, k), v);
            }
            t.finish().map_err(|e| self.failed("load", e))?;
            let body = self.wbuf.split().freeze();
            self.start_cold(Method::Txn, body, calls);
            calls += 1;
        }
        for m in self.gather("load", calls as usize).await? {
            TxnResponse::decode(&m).map_err(|e| self.failed("load", e))?;
        }
        Ok(())
    }

    async fn get_rows(&mut self, keys: &[Key]) -> Result<Vec<Option<Vec<u8>>>, TargetError> {
        let chunks = keys.chunks(MAX_TXN_OPS);
        let n = chunks.len();
        for (i, chunk) in chunks.enumerate() {
            let mut t = request::Txn::begin(&mut self.wbuf);
            for k in chunk {
                t.range(&Range::key(prefixed(&mut self.a, &self.prefix, k)));
            }
            t.finish().map_err(|e| self.failed("read back", e))?;
            let body = self.wbuf.split().freeze();
            self.start_cold(Method::Txn, body, i as u32);
        }
        let mut out = Vec::with_capacity(keys.len());
        for (m, chunk) in self
            .gather("read back", n)
            .await?
            .iter()
            .zip(keys.chunks(MAX_TXN_OPS))
        {
            let t = TxnResponse::decode(m).map_err(|e| self.failed("read back", e))?;
            if t.returned != chunk.len() {
                return Err(self.failed("read back", "one response per key expected"));
            }
            for (op, key) in t.responses().zip(chunk) {
                let op = op.map_err(|e| self.failed("read back", e))?;
                let ResponseOp::Range(r) = op else {
                    return Err(self.failed("read back", "a range response expected"));
                };
                let kv = r
                    .kvs()
                    .next()
                    .transpose()
                    .map_err(|e| self.failed("read back", e))?;
                let want = prefixed(&mut self.a, &self.prefix, key);
                out.push(match kv {
                    Some(kv) if kv.key == want => Some(kv.value.to_vec()),
                    Some(_) => return Err(self.failed("read back", "another key came back")),
                    None => None,
                });
            }
        }
        Ok(out)
    }
}

impl CountsBytes for EtcdConn {
    fn take_bytes(&mut self) -> (u64, u64) {
        self.chan.take_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_write_shadows_an_earlier_one() {
        let mut rows = Rows::default();
        rows.push([1; 16], b"a");
        rows.push([2; 16], b"b");
        rows.push([1; 16], b"c");
        assert_eq!(
            (0..3).map(|i| shadowed(&rows, i)).collect::<Vec<_>>(),
            [true, false, false]
        );
    }
}
