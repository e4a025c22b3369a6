//! Responses, read where they lie: each `decode` walks its message's
//! fields once (so a malformed message is an error there), keeps the
//! scalar fields and borrows the rest, and repeated messages are iterated
//! lazily. Field numbers from etcd's `rpc.proto` and `kv.proto`:
//!
//! | message | fields read |
//! |---|---|
//! | `ResponseHeader` | cluster_id 1, member_id 2, revision 3, raft_term 4 |
//! | `KeyValue` | key 1, create_revision 2, mod_revision 3, version 4, value 5, lease 6 |
//! | `RangeResponse` | header 1, kvs 2, more 3, count 4 |
//! | `PutResponse` | header 1 |
//! | `DeleteRangeResponse` | header 1, deleted 2 |
//! | `TxnResponse` | header 1, succeeded 2, responses 3 |
//! | `ResponseOp` | response_range 1, response_put 2, response_delete_range 3, response_txn 4 |
//! | `StatusResponse` | header 1, version 2, dbSize 3, leader 4, raftIndex 5, raftTerm 6 |
//! | `MemberListResponse` | header 1, members 2 |
//! | `Member` | ID 1, name 2, peerURLs 3, clientURLs 4, isLearner 5 |
//!
//! Fields not listed are skipped, whatever their number.

use crate::etcd::pb::{Fields, Value};
use crate::etcd::WireError;

/// The fields of `message` with the given number, as bytes.
fn repeated<'a>(
    message: &'a [u8],
    name: &'static str,
    number: u32,
) -> impl Iterator<Item = Result<&'a [u8], WireError>> + 'a {
    Fields::new(message).filter_map(move |f| match f {
        Ok((n, v)) if n == number => Some(v.bytes(name, n)),
        Ok(_) => None,
        Err(e) => Some(Err(e)),
    })
}

fn text<'a>(b: &'a [u8], name: &'static str) -> Result<&'a str, WireError> {
    std::str::from_utf8(b).map_err(|_| WireError::BadUtf8(name))
}

/// Which member answered, at which revision and term.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResponseHeader {
    /// The cluster's id.
    pub cluster_id: u64,
    /// The answering member's id.
    pub member_id: u64,
    /// The store's revision when the request was applied.
    pub revision: i64,
    /// The Raft term.
    pub raft_term: u64,
}

impl ResponseHeader {
    /// Read a `ResponseHeader`.
    pub fn decode(m: &[u8]) -> Result<ResponseHeader, WireError> {
        const M: &str = "ResponseHeader";
        let mut h = ResponseHeader::default();
        for f in Fields::new(m) {
            match f? {
                (1, v) => h.cluster_id = v.varint(M, 1)?,
                (2, v) => h.member_id = v.varint(M, 2)?,
                (3, v) => h.revision = v.varint(M, 3)? as i64,
                (4, v) => h.raft_term = v.varint(M, 4)?,
                _ => {}
            }
        }
        Ok(h)
    }
}

fn header(v: Value<'_>, message: &'static str) -> Result<ResponseHeader, WireError> {
    ResponseHeader::decode(v.bytes(message, 1)?)
}

/// A key and its value, borrowed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyValue<'a> {
    /// The key.
    pub key: &'a [u8],
    /// The revision of the key's last creation.
    pub create_revision: i64,
    /// The revision of its last change.
    pub mod_revision: i64,
    /// Changes since its creation (1 after the first put).
    pub version: i64,
    /// The value (empty when keys only were asked for).
    pub value: &'a [u8],
    /// Its lease, 0 for none.
    pub lease: i64,
}

impl<'a> KeyValue<'a> {
    /// Read a `KeyValue`.
    pub fn decode(m: &'a [u8]) -> Result<KeyValue<'a>, WireError> {
        const M: &str = "KeyValue";
        let mut kv = KeyValue::default();
        for f in Fields::new(m) {
            match f? {
                (1, v) => kv.key = v.bytes(M, 1)?,
                (2, v) => kv.create_revision = v.varint(M, 2)? as i64,
                (3, v) => kv.mod_revision = v.varint(M, 3)? as i64,
                (4, v) => kv.version = v.varint(M, 4)? as i64,
                (5, v) => kv.value = v.bytes(M, 5)?,
                (6, v) => kv.lease = v.varint(M, 6)? as i64,
                _ => {}
            }
        }
        Ok(kv)
    }
}

/// A `RangeResponse`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RangeResponse<'a> {
    /// The header.
    pub header: ResponseHeader,
    /// Whether the limit cut the range short.
    pub more: bool,
    /// Keys in the range, whatever the limit (0 unless count was asked
    /// for or keys came back: etcd sets it on every range).
    pub count: i64,
    /// How many `KeyValue`s came back.
    pub returned: usize,
    message: &'a [u8],
}

impl<'a> RangeResponse<'a> {
    /// Read a `RangeResponse`.
    pub fn decode(m: &'a [u8]) -> Result<RangeResponse<'a>, WireError> {
        const M: &str = "RangeResponse";
        let mut r = RangeResponse {
            message: m,
            ..RangeResponse::default()
        };
        for f in Fields::new(m) {
            match f? {
                (1, v) => r.header = header(v, M)?,
                (2, v) => {
                    v.bytes(M, 2)?;
                    r.returned = r.returned.saturating_add(1);
                }
                (3, v) => r.more = v.varint(M, 3)? != 0,
                (4, v) => r.count = v.varint(M, 4)? as i64,
                _ => {}
            }
        }
        Ok(r)
    }

    /// The key-values, in key order.
    pub fn kvs(&self) -> impl Iterator<Item = Result<KeyValue<'a>, WireError>> + 'a {
        repeated(self.message, "RangeResponse", 2).map(|b| KeyValue::decode(b?))
    }
}

/// A `PutResponse`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PutResponse {
    /// The header (its revision is the put's).
    pub header: ResponseHeader,
}

impl PutResponse {
    /// Read a `PutResponse`.
    pub fn decode(m: &[u8]) -> Result<PutResponse, WireError> {
        let mut r = PutResponse::default();
        for f in Fields::new(m) {
            if let (1, v) = f? {
                r.header = header(v, "PutResponse")?;
            }
        }
        Ok(r)
    }
}

/// A `DeleteRangeResponse`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeleteRangeResponse {
    /// The header.
    pub header: ResponseHeader,
    /// Keys deleted.
    pub deleted: i64,
}

impl DeleteRangeResponse {
    /// Read a `DeleteRangeResponse`.
    pub fn decode(m: &[u8]) -> Result<DeleteRangeResponse, WireError> {
        const M: &str = "DeleteRangeResponse";
        let mut r = DeleteRangeResponse::default();
        for f in Fields::new(m) {
            match f? {
                (1, v) => r.header = header(v, M)?,
                (2, v) => r.deleted = v.varint(M, 2)? as i64,
                _ => {}
            }
        }
        Ok(r)
    }
}

/// One operation's response inside a transaction's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseOp<'a> {
    /// A range's.
    Range(RangeResponse<'a>),
    /// A put's.
    Put(PutResponse),
    /// A delete's or a nested transaction's (not sent by loadrig), or an
    /// empty one.
    Other,
}

impl<'a> ResponseOp<'a> {
    /// Read a `ResponseOp`.
    pub fn decode(m: &'a [u8]) -> Result<ResponseOp<'a>, WireError> {
        const M: &str = "ResponseOp";
        let mut op = ResponseOp::Other;
        for f in Fields::new(m) {
            match f? {
                (1, v) => op = ResponseOp::Range(RangeResponse::decode(v.bytes(M, 1)?)?),
                (2, v) => op = ResponseOp::Put(PutResponse::decode(v.bytes(M, 2)?)?),
                (n @ (3 | 4), v) => {
                    v.bytes(M, n)?;
                    op = ResponseOp::Other;
                }
                _ => {}
            }
        }
        Ok(op)
    }
}

/// A `TxnResponse`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxnResponse<'a> {
    /// The header (its revision is the transaction's, when it wrote).
    pub header: ResponseHeader,
    /// Whether the compare held (always, with none).
    pub succeeded: bool,
    /// How many responses came back (one per operation of the branch
    /// that ran).
    pub returned: usize,
    message: &'a [u8],
}

impl<'a> TxnResponse<'a> {
    /// Read a `TxnResponse`; each of its responses is checked too.
    pub fn decode(m: &'a [u8]) -> Result<TxnResponse<'a>, WireError> {
        const M: &str = "TxnResponse";
        let mut r = TxnResponse {
            message: m,
            ..TxnResponse::default()
        };
        for f in Fields::new(m) {
            match f? {
                (1, v) => r.header = header(v, M)?,
                (2, v) => r.succeeded = v.varint(M, 2)? != 0,
                (3, v) => {
                    ResponseOp::decode(v.bytes(M, 3)?)?;
                    r.returned = r.returned.saturating_add(1);
                }
                _ => {}
            }
        }
        Ok(r)
    }

    /// The responses, in the order of the operations.
    pub fn responses(&self) -> impl Iterator<Item = Result<ResponseOp<'a>, WireError>> + 'a {
        repeated(self.message, "TxnResponse", 3).map(|b| ResponseOp::decode(b?))
    }
}

/// A `StatusResponse` (`Maintenance.Status`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatusResponse<'a> {
    /// The header (`member_id` is the answering member).
    pub header: ResponseHeader,
    /// The member's etcd version.
    pub version: &'a str,
    /// The backend database's size in bytes.
    pub db_size: i64,
    /// The leader's member id.
    pub leader: u64,
    /// The member's Raft index.
    pub raft_index: u64,
    /// The member's Raft term.
    pub raft_term: u64,
}

impl<'a> StatusResponse<'a> {
    /// Read a `StatusResponse`.
    pub fn decode(m: &'a [u8]) -> Result<StatusResponse<'a>, WireError> {
        const M: &str = "StatusResponse";
        let mut s = StatusResponse::default();
        for f in Fields::new(m) {
            match f? {
                (1, v) => s.header = header(v, M)?,
                (2, v) => s.version = text(v.bytes(M, 2)?, "StatusResponse.version")?,
                (3, v) => s.db_size = v.varint(M, 3)? as i64,
                (4, v) => s.leader = v.varint(M, 4)?,
                (5, v) => s.raft_index = v.varint(M, 5)?,
                (6, v) => s.raft_term = v.varint(M, 6)?,
                _ => {}
            }
        }
        Ok(s)
    }
}

/// A cluster member, from `MemberListResponse`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Member<'a> {
    /// Its id.
    pub id: u64,
    /// Its name (empty until it has started).
    pub name: &'a str,
    /// Whether it is a learner (not voting).
    pub is_learner: bool,
    message: &'a [u8],
}

impl<'a> Member<'a> {
    /// Read a `Member`.
    pub fn decode(m: &'a [u8]) -> Result<Member<'a>, WireError> {
        const M: &str = "Member";
        let mut member = Member {
            message: m,
            ..Member::default()
        };
        for f in Fields::new(m) {
            match f? {
                (1, v) => member.id = v.varint(M, 1)?,
                (2, v) => member.name = text(v.bytes(M, 2)?, "Member.name")?,
                (4, v) => {
                    text(v.bytes(M, 4)?, "Member.clientURLs")?;
                }
                (5, v) => member.is_learner = v.varint(M, 5)? != 0,
                _ => {}
            }
        }
        Ok(member)
    }

    /// Its client URLs (`http://127.0.0.1:2379`).
    pub fn client_urls(&self) -> impl Iterator<Item = &'a str> + 'a {
        // Checked as UTF-8 by `decode`.
        repeated(self.message, "Member", 4)
            .filter_map(|b| b.ok().and_then(|b| std::str::from_utf8(b).ok()))
    }
}

/// A `MemberListResponse`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemberList<'a> {
    /// The header.
    pub header: ResponseHeader,
    /// How many members.
    pub len: usize,
    message: &'a [u8],
}

impl<'a> MemberList<'a> {
    /// Read a `MemberListResponse`.
    pub fn decode(m: &'a [u8]) -> Result<MemberList<'a>, WireError> {
        const M: &str = "MemberListResponse";
        let mut list = MemberList {
            message: m,
            ..MemberList::default()
        };
        for f in Fields::new(m) {
            match f? {
                (1, v) => list.header = header(v, M)?,
                (2, v) => {
                    Member::decode(v.bytes(M, 2)?)?;
                    list.len = list.len.saturating_add(1);
                }
                _ => {}
            }
        }
        Ok(list)
    }

    /// The members.
    pub fn members(&self) -> impl Iterator<Item = Member<'a>> + 'a {
        // Each was checked by `decode`.
        repeated(self.message, "MemberListResponse", 2)
            .filter_map(|b| b.ok().and_then(|b| Member::decode(b).ok()))
    }
}
