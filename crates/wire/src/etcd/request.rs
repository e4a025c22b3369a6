//! Requests, each appended to a caller-owned buffer as one whole gRPC
//! message (prefix included), nothing allocated. Field numbers from
//! etcd's `rpc.proto`:
//!
//! | message | fields written |
//! |---|---|
//! | `RangeRequest` | key 1, range_end 2, limit 3, serializable 7, keys_only 8, count_only 9 |
//! | `PutRequest` | key 1, value 2 |
//! | `DeleteRangeRequest` | key 1, range_end 2 |
//! | `RequestOp` | request_range 1, request_put 2 (a oneof) |
//! | `TxnRequest` | success 2 (no compare: the success branch always runs) |
//! | `StatusRequest`, `MemberListRequest` | none |

use bytes::{BufMut, BytesMut};

use crate::etcd::frame::PREFIX;
use crate::etcd::pb;
use crate::etcd::WireError;

/// A `RangeRequest`: the key, or the keys in `[key, range_end)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Range<'a> {
    /// The first key.
    pub key: &'a [u8],
    /// The end of the range, exclusive; empty: the one key; `[0]`: every
    /// key from `key` on.
    pub range_end: &'a [u8],
    /// At most this many keys (0: no limit).
    pub limit: u64,
    /// Served by the member from its own store, without asking the
    /// leader (may be stale); false: linearizable.
    pub serializable: bool,
    /// Keys without their values.
    pub keys_only: bool,
    /// Only the count of keys in the range.
    pub count_only: bool,
}

impl<'a> Range<'a> {
    /// The one key `key`.
    pub fn key(key: &'a [u8]) -> Range<'a> {
        Range {
            key,
            ..Range::default()
        }
    }

    /// At most `limit` keys of `[key, range_end)`.
    pub fn span(key: &'a [u8], range_end: &'a [u8], limit: u64) -> Range<'a> {
        Range {
            key,
            range_end,
            limit,
            ..Range::default()
        }
    }

    fn body_len(&self) -> usize {
        [
            bytes_len(1, self.key),
            bytes_len(2, self.range_end),
            pb::varint_field_len(3, self.limit),
            pb::varint_field_len(7, u64::from(self.serializable)),
            pb::varint_field_len(8, u64::from(self.keys_only)),
            pb::varint_field_len(9, u64::from(self.count_only)),
        ]
        .into_iter()
        .fold(0, usize::saturating_add)
    }

    fn put_body(&self, out: &mut impl BufMut) {
        pb::put_bytes(out, 1, self.key);
        pb::put_bytes(out, 2, self.range_end);
        pb::put_uint(out, 3, self.limit);
        pb::put_uint(out, 7, u64::from(self.serializable));
        pb::put_uint(out, 8, u64::from(self.keys_only));
        pb::put_uint(out, 9, u64::from(self.count_only));
    }
}

/// A length-delimited field's size, nothing when empty (proto3 omits it).
fn bytes_len(field: u32, b: &[u8]) -> usize {
    if b.is_empty() {
        0
    } else {
        pb::len_field_len(field, b.len())
    }
}

fn put_len(key: &[u8], value: &[u8]) -> usize {
    bytes_len(1, key).saturating_add(bytes_len(2, value))
}

/// A message being written: its prefix is reserved at `begin` and filled
/// in at `finish`, when the length is known, so nested fields are written
/// once, in place.
struct Open<'b> {
    out: &'b mut BytesMut,
    start: usize,
}

impl<'b> Open<'b> {
    fn begin(out: &'b mut BytesMut) -> Open<'b> {
        let start = out.len();
        out.put_bytes(0, PREFIX);
        Open { out, start }
    }

    fn finish(self) -> Result<(), WireError> {
        let len = self
            .out
            .len()
            .saturating_sub(self.start.saturating_add(PREFIX));
        match u32::try_from(len) {
            Ok(len) => {
                let head = self.start.saturating_add(1)..self.start.saturating_add(PREFIX);
                if let Some(p) = self.out.get_mut(head) {
                    p.copy_from_slice(&len.to_be_bytes());
                }
                Ok(())
            }
            Err(_) => {
                self.out.truncate(self.start);
                Err(WireError::Unframeable)
            }
        }
    }
}

/// Append a `RangeRequest`.
pub fn encode_range(out: &mut BytesMut, range: &Range<'_>) -> Result<(), WireError> {
    let m = Open::begin(out);
    range.put_body(m.out);
    m.finish()
}

/// Append a `PutRequest`.
pub fn encode_put(out: &mut BytesMut, key: &[u8], value: &[u8]) -> Result<(), WireError> {
    let m = Open::begin(out);
    pb::put_bytes(m.out, 1, key);
    pb::put_bytes(m.out, 2, value);
    m.finish()
}

/// Append a `DeleteRangeRequest` of `[key, range_end)` (an empty end:
/// the one key).
pub fn encode_delete_range(
    out: &mut BytesMut,
    key: &[u8],
    range_end: &[u8],
) -> Result<(), WireError> {
    let m = Open::begin(out);
    pb::put_bytes(m.out, 1, key);
    pb::put_bytes(m.out, 2, range_end);
    m.finish()
}

/// Append an empty request (`StatusRequest`, `MemberListRequest`).
pub fn encode_empty(out: &mut BytesMut) {
    out.put_bytes(0, PREFIX);
}

/// A `TxnRequest` being written: its operations go into the success
/// branch, one by one, with no compare (so they always run, atomically, as
/// one revision). Dropped without [`Txn::finish`], it leaves a message
/// whose length says 0: finish it or truncate the buffer.
pub struct Txn<'b> {
    m: Open<'b>,
    ops: usize,
}

impl<'b> Txn<'b> {
    /// Start a transaction at the end of `out`.
    pub fn begin(out: &'b mut BytesMut) -> Txn<'b> {
        Txn {
            m: Open::begin(out),
            ops: 0,
        }
    }

    /// Add a `RequestOp` holding a `RangeRequest`.
    pub fn range(&mut self, range: &Range<'_>) {
        let inner = range.body_len();
        let op = pb::len_field_len(1, inner);
        pb::put_message_head(self.m.out, 2, op);
        pb::put_message_head(self.m.out, 1, inner);
        range.put_body(self.m.out);
        self.ops = self.ops.saturating_add(1);
    }

    /// Add a `RequestOp` holding a `PutRequest`.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        let inner = put_len(key, value);
        let op = pb::len_field_len(2, inner);
        pb::put_message_head(self.m.out, 2, op);
        pb::put_message_head(self.m.out, 2, inner);
        pb::put_bytes(self.m.out, 1, key);
        pb::put_bytes(self.m.out, 2, value);
        self.ops = self.ops.saturating_add(1);
    }

    /// Operations added so far (etcd refuses more than its
    /// `--max-txn-ops`, 128 by default).
    pub fn ops(&self) -> usize {
        self.ops
    }

    /// Write the length.
    pub fn finish(self) -> Result<(), WireError> {
        self.m.finish()
    }
}

/// The end of the range of every key that starts with `prefix`: the
/// prefix with its last byte below 0xff incremented and what follows
/// dropped; `[0]` (every key from there on) when there is none.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last.saturating_add(1));
            return end;
        }
    }
    vec![0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::etcd::frame::{frame_len, message};
    use crate::etcd::pb::{Fields, Value};

    fn fields(m: &[u8]) -> Vec<(u32, Value<'_>)> {
        Fields::new(m).collect::<Result<_, _>>().unwrap()
    }

    #[test]
    fn a_range_has_its_fields_and_defaults_are_left_out() {
        let mut out = BytesMut::new();
        encode_range(&mut out, &Range::span(b"a", b"b", 1000)).unwrap();
        assert_eq!(frame_len(&out), Ok(Some(out.len())));
        assert_eq!(
            fields(message(&out)),
            [
                (1, Value::Bytes(b"a")),
                (2, Value::Bytes(b"b")),
                (3, Value::Varint(1000))
            ]
        );
        let mut out = BytesMut::new();
        let count = Range {
            count_only: true,
            serializable: true,
            keys_only: true,
            ..Range::key(b"k")
        };
        encode_range(&mut out, &count).unwrap();
        assert_eq!(
            fields(message(&out)),
            [
                (1, Value::Bytes(b"k")),
                (7, Value::Varint(1)),
                (8, Value::Varint(1)),
                (9, Value::Varint(1))
            ]
        );
    }

    #[test]
    fn a_txn_nests_its_ops_in_the_success_branch() {
        let mut out = BytesMut::from(&b"before"[..]);
        let mut txn = Txn::begin(&mut out);
        txn.range(&Range::key(b"r"));
        txn.put(b"k", b"v");
        txn.put(b"e", b"");
        assert_eq!(txn.ops(), 3);
        txn.finish().unwrap();
        let frame = out.get(6..).unwrap();
        assert_eq!(frame_len(frame), Ok(Some(frame.len())));
        let ops = fields(message(frame));
        assert_eq!(ops.len(), 3);
        assert!(ops.iter().all(|(f, _)| *f == 2));
        let inner = |i: usize| match ops.get(i) {
            Some((_, Value::Bytes(b))) => fields(b),
            other => panic!("{other:?}"),
        };
        let [(1, Value::Bytes(range))] = inner(0)[..] else {
            panic!()
        };
        assert_eq!(fields(range), [(1, Value::Bytes(b"r"))]);
        let [(2, Value::Bytes(put))] = inner(1)[..] else {
            panic!()
        };
        assert_eq!(
            fields(put),
            [(1, Value::Bytes(b"k")), (2, Value::Bytes(b"v"))]
        );
        let [(2, Value::Bytes(put))] = inner(2)[..] else {
            panic!()
        };
        assert_eq!(fields(put), [(1, Value::Bytes(b"e"))]);
    }

    #[test]
    fn puts_and_empty_requests_are_framed() {
        let mut out = BytesMut::new();
        encode_put(&mut out, b"k", b"v").unwrap();
        assert_eq!(&out[..], b"\0\0\0\0\x06\x0a\x01k\x12\x01v");
        let mut out = BytesMut::new();
        encode_empty(&mut out);
        assert_eq!(&out[..], b"\0\0\0\0\0");
    }

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end(b"ab"), b"ac");
        assert_eq!(prefix_end(b"a\xff"), b"b");
        assert_eq!(prefix_end(b"\xff\xff"), b"\0");
        assert_eq!(prefix_end(b""), b"\0");
    }
}
