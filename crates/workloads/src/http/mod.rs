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
//! from the index; `check` reads every path written back afterwards and
//! removes them unless `--keep`.

mod check;
pub mod driver;
pub mod load;
pub mod response;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use loadrig_metrics::Snapshot;
use loadrig_spec::{HttpSpec, RunSpec};

use crate::stream::ByteStream;
use crate::{Bench, Results, TargetError, TargetInfo, Verdict};
use load::{kind_name, Load, DOMAINS};

pub use driver::HttpDriver;

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
    /// Whether this connection's TLS handshake resumed an earlier session
    /// (false over plain TCP).
    fn resumed(&self) -> bool {
        false
    }
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

/// The http workload on one backend.
pub struct HttpBench<B> {
    pub backend: B,
    pub load: Arc<Load>,
    /// The run's `--timeout`, for the check of each server afterwards.
    pub timeout: Duration,
}

impl<B: HttpBackend> HttpBench<B> {
    pub fn new(backend: B, own: &HttpSpec, run: &RunSpec) -> Self {
        let authorities: Vec<String> = (0..backend.servers())
            .map(|s| backend.authority(s))
            .collect();
        let load = Load::new(own.clone(), run.seed, backend.path(), &authorities);
        HttpBench {
            load: Arc::new(load),
            backend,
            timeout: Duration::from_secs_f64(run.timeout_secs),
        }
    }
}

impl<B: HttpBackend> Bench for HttpBench<B> {
    type Driver = HttpDriver<B::Conn>;
    type Target = B;

    fn target(&self) -> &B {
        &self.backend
    }

    fn kinds(&self) -> Vec<&'static str> {
        vec![kind_name(&self.load.spec.method)]
    }

    fn domains(&self) -> Vec<String> {
        DOMAINS.iter().map(|d| d.to_string()).collect()
    }

    async fn prepare(&mut self) -> Result<(), TargetError> {
        // Nothing to create: PUTs make their directory (nginx's
        // create_full_put_path); a server not there fails the connect.
        Ok(())
    }

    async fn baseline(&mut self) -> Result<serde_json::Value, TargetError> {
        Ok(serde_json::Value::Null)
    }

    async fn connect(&self, _worker: u32) -> Result<Self::Driver, TargetError> {
        let conn = self.backend.connect().await?;
        Ok(HttpDriver::new(conn, self.load.clone()))
    }

    async fn verify(
        &mut self,
        _baseline: &serde_json::Value,
        counted: &Snapshot,
    ) -> Result<Verdict, TargetError> {
        check::verify(&self.backend, &self.load, self.timeout, counted).await
    }

    async fn results(&mut self, counted: &Snapshot) -> Result<Results, TargetError> {
        Ok(check::results(counted))
    }

    async fn finish(&mut self, keep: bool) -> Result<(), TargetError> {
        if keep || !self.load.put {
            return Ok(());
        }
        check::clean(&self.backend, &self.load.dir).await
    }
}
