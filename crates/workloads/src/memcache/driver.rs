//! The memcache workload's run: one driver per connection, encoding each
//! operation with `loadrig_wire::kv` into the connection's write buffer and
//! parsing each response where it lies in the read buffer.
//!
//! Responses come back in request order on both protocols, so the driver
//! keeps the operations in flight in a FIFO and answers the oldest with
//! each whole response. A binary request carries its tag as opaque, which
//! the response must echo. A binary multiget is one quiet GetKQ per key and
//! a Noop: hits answer as they come, misses not at all, and the Noop's
//! answer ends the request (its hits so far are kept between reads).
//! Anything else (bytes that do not parse, a response nobody asked for, a
//! wrong opaque) means the stream is out of step: the connection is
//! broken, a protocol error, and the engine reconnects.

use std::future::Future;
use std::sync::Arc;

use bytes::Buf;
use loadrig_engine::{Driver, Event, Tag};
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_spec::MAX_MULTIGET;
use loadrig_wire::kv::memcache::binary::{self, GetKind, Opcode, SetOpts, Status};
use loadrig_wire::kv::memcache::text::{self, Response, StoreCmd, StoreOpts};

use super::load::{Load, Op, GET, GET_HITS, GET_MISSES, SET};
use crate::stream::{self, ByteStream, InFlight, StreamDriver};

const PROTOCOL: OpError = OpError::new(ErrorKind::Protocol);
const WRONG: OpError = OpError::new(ErrorKind::Verification);

/// An operation in flight.
#[derive(Debug, Clone, Copy)]
struct Pending {
    tag: Tag,
    op: Op,
}

/// One engine connection.
pub struct MemcacheDriver<C> {
    conn: C,
    load: Arc<Load>,
    /// Requests in flight, and whether the stream is out of step.
    pending: InFlight<Pending>,
    /// Keys of the request being written, `multiget` of them end to end.
    keys: Vec<u8>,
    /// Hits and misses since the engine last took them.
    counts: [u64; 2],
    /// A binary multiget answered in part: its hits so far, and the first
    /// error status among them.
    hits: u32,
    failed: Option<OpError>,
}

impl<C: ByteStream> MemcacheDriver<C> {
    pub(super) fn new(conn: C, load: Arc<Load>) -> Self {
        let keys = load.key_buffer().repeat(load.spec.multiget as usize);
        MemcacheDriver {
            conn,
            load,
            pending: InFlight::new(),
            keys,
            counts: [0; 2],
            hits: 0,
            failed: None,
        }
    }

    /// Append `op`'s request. Keys are this workload's own, always valid,
    /// so the encoders cannot fail; were one to, the request is answered
    /// by a protocol error rather than sent half written.
    #[inline]
    fn write(&mut self, op: &Op, tag: Tag) -> Result<(), ()> {
        let load = &*self.load;
        let ks = load.spec.key_size;
        let out = self.conn.out();
        if op.kind == SET {
            let key = &mut self.keys[..ks];
            load.key(op.window, op.slot, key);
            let value = load.value(op.window, op.slot);
            let r = if load.spec.binary {
                binary::encode_set(out, key, value, SetOpts::default(), tag)
            } else {
                text::encode_store(out, StoreCmd::Set, key, value, StoreOpts::default())
            };
            return r.map_err(drop);
        }
        let n = load.spec.multiget;
        for k in 0..n {
            let at = k as usize * ks;
            load.key(op.window, op.nth(k), &mut self.keys[at..at + ks]);
        }
        if n == 1 {
            let key = &self.keys[..ks];
            return if load.spec.binary {
                binary::encode_get(out, GetKind::Get, key, tag)
            } else {
                text::encode_get(out, key)
            }
            .map_err(drop);
        }
        if load.spec.binary {
            for key in self.keys.chunks_exact(ks) {
                binary::encode_get(out, GetKind::GetKQ, key, tag).map_err(drop)?;
            }
            binary::encode_noop(out, tag);
            return Ok(());
        }
        let mut refs: [&[u8]; MAX_MULTIGET as usize] = [&[]; MAX_MULTIGET as usize];
        for (r, key) in refs.iter_mut().zip(self.keys.chunks_exact(ks)) {
            *r = key;
        }
        text::encode_get_multi(out, &refs[..n as usize]).map_err(drop)
    }

    /// The text response at the front of the read buffer, for the oldest
    /// operation.
    #[inline]
    fn text(&mut self, p: Pending) -> Option<Event> {
        let load = &*self.load;
        let buf = self.conn.input();
        let (resp, used) = match text::parse_response(buf) {
            Ok(Some(r)) => r,
            Ok(None) => return None,
            Err(_) => return Some(Event::Broken(PROTOCOL)),
        };
        let result = match (p.op.kind, resp) {
            (SET, Response::Stored) => Ok(None),
            (GET, Response::Values(items)) => {
                let n = load.spec.multiget;
                let found = items.len() as u64;
                if found > u64::from(n) {
                    Err(PROTOCOL)
                } else {
                    self.counts[GET_HITS] += found;
                    self.counts[GET_MISSES] += u64::from(n) - found;
                    let wrong = items
                        .iter()
                        .any(|item| !right(load, &p.op, item.key, item.value));
                    if wrong {
                        Err(WRONG)
                    } else {
                        Ok(None)
                    }
                }
            }
            (_, resp) => Err(text_error(resp)),
        };
        buf.advance(used);
        self.pending.pop();
        Some(Event::Done { tag: p.tag, result })
    }

    /// The binary responses at the front of the read buffer, for the
    /// oldest operation: one, or for a multiget its hits and the Noop.
    #[inline]
    fn binary(&mut self, p: Pending) -> Option<Event> {
        let load = &*self.load;
        let buf = self.conn.input();
        loop {
            let (resp, used) = match binary::parse_response(buf) {
                Ok(Some(r)) => r,
                Ok(None) => return None,
                Err(_) => return Some(Event::Broken(PROTOCOL)),
            };
            if resp.opaque != p.tag {
                return Some(Event::Broken(PROTOCOL));
            }
            let single = load.spec.multiget == 1;
            let result = match (Opcode::from_code(resp.opcode), p.op.kind) {
                (Some(Opcode::Set), SET) => match resp.status {
                    Status::NO_ERROR => Ok(None),
                    s => Err(status_error(s)),
                },
                (Some(Opcode::Get), GET) if single => match resp.status {
                    Status::NO_ERROR => {
                        self.counts[GET_HITS] += 1;
                        let value = load.value(p.op.window, p.op.slot);
                        if resp.value.len() != value.len() || (p.op.check && resp.value != value) {
                            Err(WRONG)
                        } else {
                            Ok(None)
                        }
                    }
                    Status::KEY_NOT_FOUND => {
                        self.counts[GET_MISSES] += 1;
                        Ok(None)
                    }
                    s => Err(status_error(s)),
                },
                (Some(Opcode::GetKQ), GET) if !single => {
                    match resp.status {
                        Status::NO_ERROR if self.hits < load.spec.multiget => {
                            self.hits += 1;
                            if !right(load, &p.op, resp.key, resp.value) {
                                self.failed.get_or_insert(WRONG);
                            }
                        }
                        Status::NO_ERROR => {
                            self.failed.get_or_insert(PROTOCOL);
                        }
                        s => {
                            self.failed.get_or_insert(status_error(s));
                        }
                    }
                    buf.advance(used);
                    continue;
                }
                (Some(Opcode::Noop), GET) if !single => {
                    let hits = std::mem::take(&mut self.hits);
                    self.counts[GET_HITS] += u64::from(hits);
                    self.counts[GET_MISSES] += u64::from(load.spec.multiget - hits);
                    self.failed.take().map_or(Ok(None), Err)
                }
                _ => return Some(Event::Broken(PROTOCOL)),
            };
            buf.advance(used);
            self.pending.pop();
            return Some(Event::Done { tag: p.tag, result });
        }
    }
}

/// Whether a get's item is one it asked for, holding the value its key
/// has (the length always; the bytes when the get is checked).
#[inline]
fn right(load: &Load, op: &Op, key: &[u8], value: &[u8]) -> bool {
    let Some((w, slot)) = load.parse_key(key) else {
        return false;
    };
    let expected = load.value(w, slot);
    op.asked(load.spec.multiget, w, slot)
        && value.len() == expected.len()
        && (!op.check || value == expected)
}

/// A text response that is not the one asked for, by class.
fn text_error(r: Response<'_>) -> OpError {
    match r {
        Response::NotStored => OpError::server("NOT_STORED"),
        Response::Error => OpError::server("ERROR"),
        Response::ClientError(_) => OpError::server("CLIENT_ERROR"),
        Response::ServerError(_) => OpError::server("SERVER_ERROR"),
        _ => PROTOCOL,
    }
}

/// A binary error status, by class.
fn status_error(s: Status) -> OpError {
    OpError::server(match s {
        Status::KEY_NOT_FOUND => "KEY_NOT_FOUND",
        Status::KEY_EXISTS => "KEY_EXISTS",
        Status::VALUE_TOO_LARGE => "VALUE_TOO_LARGE",
        Status::INVALID_ARGUMENTS => "INVALID_ARGUMENTS",
        Status::ITEM_NOT_STORED => "NOT_STORED",
        Status::UNKNOWN_COMMAND => "UNKNOWN_COMMAND",
        Status::OUT_OF_MEMORY => "OUT_OF_MEMORY",
        _ => "STATUS",
    })
}

impl<C: ByteStream> StreamDriver for MemcacheDriver<C> {
    type Stream = C;

    #[inline]
    fn stream(&mut self) -> &mut C {
        &mut self.conn
    }
}

impl<C: ByteStream> Driver for MemcacheDriver<C> {
    #[inline]
    fn kind_of(&self, index: u64) -> usize {
        self.load.kind(index)
    }

    #[inline]
    fn send(&mut self, index: u64, tag: Tag) -> usize {
        let op = self.load.op(index);
        if self.write(&op, tag).is_err() {
            // Nothing was written for it; say so in turn.
            self.pending.mark_stray();
        }
        let input = self.conn.input();
        self.pending.push(Pending { tag, op }, input);
        op.kind
    }

    async fn recv(&mut self) -> Event {
        stream::recv(self).await
    }

    #[inline]
    fn try_recv(&mut self) -> Option<Event> {
        if self.pending.stray() {
            return Some(Event::Broken(PROTOCOL));
        }
        let Some(&p) = self.pending.front() else {
            // Bytes nobody asked for.
            return (!self.conn.input().is_empty()).then_some(Event::Broken(PROTOCOL));
        };
        if self.load.spec.binary {
            self.binary(p)
        } else {
            self.text(p)
        }
    }

    fn idle(&mut self) -> impl Future<Output = Result<(), OpError>> + Send {
        crate::stream::idle(self.stream())
    }

    fn reconnect(&mut self) -> impl Future<Output = Result<(), OpError>> + Send {
        self.pending.clear();
        self.hits = 0;
        self.failed = None;
        self.conn.reconnect()
    }

    fn take_bytes(&mut self) -> (u64, u64) {
        self.conn.take_bytes()
    }

    fn take_counts(&mut self, domains: &mut [u64]) {
        for (d, c) in domains.iter_mut().zip(&mut self.counts) {
            *d += std::mem::take(c);
        }
    }
}
