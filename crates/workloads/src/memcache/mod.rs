//! The memcache workload: memaslap's load on memcached. Gets and sets in
//! a fixed proportion over a window of keys per client, keys and values of
//! the sizes asked for, gets of one key or several (multiget), over the
//! text or the binary protocol.
//!
//! It speaks to a [`MemcacheBackend`]: servers reached over plain byte
//! streams (a `crate::stream::ByteStream`). The workload encodes every request and parses
//! every response itself with `loadrig_wire::kv` ([`driver`]), reading each
//! response where it lies in the connection's read buffer; the target
//! only connects and moves bytes. What an operation does is a pure
//! function of (seed, index) ([`load`]), and a value is a function of its
//! key, so any value read can be checked without remembering what was
//! written. After the run [`check`] compares memcached's own counters and
//! a sample of the keys written with what the client counted.

mod check;
pub mod driver;
pub mod load;

use std::future::Future;

use crate::stream::ByteStream;
use crate::{TargetError, TargetInfo};

pub use driver::{MemcacheBench, MemcacheDriver};
/// Something to do with any target that has this capability: the registry
/// calls it with the concrete backend, so what it builds is monomorphised
/// per target (see [`crate::Capabilities`]).
pub trait Visit {
    type Output;
    fn visit<B: MemcacheBackend + 'static>(self, backend: B) -> Self::Output;
}

/// The memcache capability: memcached servers, text and binary protocols
/// on the same port (memcached tells them apart by the first byte).
pub trait MemcacheBackend: TargetInfo {
    type Conn: ByteStream;

    /// How many servers the target names; engine connections are dealt
    /// over them round robin, and checks add up what each one says.
    fn servers(&self) -> usize;
    /// One engine connection, to the next server in turn.
    fn connect(&self) -> impl Future<Output = Result<Self::Conn, TargetError>>;
    /// A connection to server `server`, for the cold path (statistics,
    /// reading keys back, clean-up).
    fn connect_to(&self, server: usize) -> impl Future<Output = Result<Self::Conn, TargetError>>;
    /// The target for messages, e.g. `memcache://127.0.0.1:11211`.
    fn label(&self) -> String;
}
