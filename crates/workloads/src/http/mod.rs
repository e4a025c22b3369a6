//! The http workload: wrk's load on HTTP/1.1 servers. Each connection
//! keeps `--pipeline` requests in flight over keep-alive (wrk's
//! pipeline.lua), on one or several servers; every response is read off
//! the read buffer as it arrives ([`response`]), its status counted by
//! class, its body framed by length or chunks, consumed as it streams and,
//! for a `GET`, compared (by a hash) with the first body the run saw for
//! the URL.
//!
//! It speaks to an [`HttpBackend`]: servers reached over plain byte
//! streams. The workload encodes every request ([`load`]) and parses every
//! response ([`driver`]); the target only connects and moves bytes. A
//! `PUT` writes a body that is a function of (seed, index) to a path made
//! from the index; [`check`] reads every path written back afterwards and
//! removes them unless `--keep`.

mod check;
pub mod driver;
pub mod load;
pub mod response;

use std::future::Future;

use crate::stream::ByteStream;
use crate::{TargetError, TargetInfo};

pub use driver::{HttpBench, HttpDriver};

/// Something to do with any target that has this capability: the registry
/// calls it with the concrete backend (see [`crate::Capabilities`]).
pub trait Visit {
    type Output;
    fn visit<B: HttpBackend + 'static>(self, backend: B) -> Self::Output;
}

/// One connection: a byte stream that says which server it is on (the
/// `Host` header names it).
pub trait HttpConn: ByteStream {
    fn server(&self) -> usize;
}

/// The http capability: HTTP/1.1 servers serving one request target.
pub trait HttpBackend: TargetInfo {
    type Conn: HttpConn;

    /// How many servers the target names; connections are dealt over
    /// them round robin.
    fn servers(&self) -> usize;
    /// `host:port` of server `server`, for its `Host` header.
    fn authority(&self, server: usize) -> String;
    /// The request target of the URL: its path and query, from `/`.
    fn path(&self) -> &str;
    /// One engine connection, to the next server in turn.
    fn connect(&self) -> impl Future<Output = Result<Self::Conn, TargetError>>;
    /// A connection to server `server`, for the cold path (reading back,
    /// clean-up).
    fn connect_to(&self, server: usize) -> impl Future<Output = Result<Self::Conn, TargetError>>;
    /// The target for messages, e.g. `http://127.0.0.1:8088/`.
    fn label(&self) -> String;
}
