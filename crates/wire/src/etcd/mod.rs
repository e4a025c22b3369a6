//! A pure, synchronous codec for the part of etcd's v3 gRPC API that
//! loadrig speaks: no sockets, no HTTP/2, no async runtime, no protoc.
//! Bytes in, bytes out; the HTTP/2 transport is the target's
//! (`crates/targets/src/etcd`).
//!
//! Layers:
//!
//! - [`pb`]: protocol buffers' wire format, only as much as these messages
//!   need: varints, length-delimited fields, a field reader that skips what
//!   it does not know (a newer server's fields are not an error).
//! - [`frame`]: gRPC's 5-byte message prefix (compressed flag, big-endian
//!   length) and the `grpc-status` codes of a call's trailers.
//! - [`request`]: encoders of `RangeRequest`, `PutRequest`,
//!   `DeleteRangeRequest`, `TxnRequest`
//!   (its `RequestOp`s written one by one, so a transaction of any shape is
//!   built without allocating), `StatusRequest`, `MemberListRequest`, each
//!   as one whole gRPC message appended to a caller-owned buffer.
//! - [`response`]: views of `ResponseHeader`, `RangeResponse` (its
//!   `KeyValue`s iterated lazily, borrowed from the buffer), `PutResponse`,
//!   `DeleteRangeResponse`,
//!   `TxnResponse` (its `ResponseOp`s iterated lazily), `StatusResponse`,
//!   `MemberListResponse`.
//!
//! The field numbers are those of etcd's `api/etcdserverpb/rpc.proto` and
//! `api/mvccpb/kv.proto`; docs/guides/etcd.md lists them. Decoders never panic on
//! any input: every length is checked against the bytes that remain
//! before it is used.
//!
//! ```
//! use bytes::BytesMut;
//! use loadrig_wire::etcd::{frame, request};
//!
//! let mut out = BytesMut::new();
//! let mut txn = request::Txn::begin(&mut out);
//! txn.range(&request::Range::key(b"k1"));
//! txn.put(b"k2", b"v");
//! txn.finish().unwrap();
//! let len = frame::frame_len(&out).unwrap().unwrap();
//! assert_eq!(len, out.len());
//! ```
mod error;
pub mod frame;
pub mod pb;
pub mod request;
pub mod response;

pub use error::WireError;

/// The gRPC paths of the methods loadrig calls.
pub mod path {
    /// `KV.Range`.
    pub const RANGE: &str = "/etcdserverpb.KV/Range";
    /// `KV.Put`.
    pub const PUT: &str = "/etcdserverpb.KV/Put";
    /// `KV.DeleteRange`.
    pub const DELETE_RANGE: &str = "/etcdserverpb.KV/DeleteRange";
    /// `KV.Txn`.
    pub const TXN: &str = "/etcdserverpb.KV/Txn";
    /// `Maintenance.Status`.
    pub const STATUS: &str = "/etcdserverpb.Maintenance/Status";
    /// `Cluster.MemberList`.
    pub const MEMBER_LIST: &str = "/etcdserverpb.Cluster/MemberList";
}
