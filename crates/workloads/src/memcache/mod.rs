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
//! written. After the run `check` compares memcached's own counters and
//! a sample of the keys written with what the client counted.

mod check;
pub mod driver;
pub mod load;

use std::future::Future;
use std::sync::Arc;

use loadrig_metrics::Snapshot;
use loadrig_spec::{MemcacheSpec, RunSpec, Stop};

use crate::stream::ByteStream;
use crate::{Bench, Results, TargetError, TargetInfo, Verdict};
use load::{Load, DOMAINS, KINDS};

pub use driver::MemcacheDriver;

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

/// The memcache workload on one backend.
pub struct MemcacheBench<B> {
    pub backend: B,
    pub load: Arc<Load>,
    /// When the run stops, for knowing which keys it wrote.
    pub stop: Stop,
    /// Whether the run is the whole index space (not one `--shard` of it)
    /// with no warm-up, for the same.
    pub whole: bool,
}

impl<B: MemcacheBackend> MemcacheBench<B> {
    pub fn new(backend: B, own: &MemcacheSpec, run: &RunSpec) -> Self {
        // One window per connection over every process (see
        // [`super::load`]); which keys the sets wrote is known only for
        // the whole index space and no warm-up.
        let shards = run.load.shard.count.max(run.processes);
        let windows = u64::from(run.load.connections) * u64::from(shards);
        let whole = run.load.shard.count == 1 && run.warmup_secs == 0.0;
        MemcacheBench {
            backend,
            load: Arc::new(Load::new(own.clone(), windows, run.seed)),
            stop: run.load.stop,
            whole,
        }
    }
}

impl<B: MemcacheBackend> Bench for MemcacheBench<B> {
    type Driver = MemcacheDriver<B::Conn>;
    type Target = B;

    fn target(&self) -> &B {
        &self.backend
    }

    fn kinds(&self) -> Vec<&'static str> {
        KINDS.to_vec()
    }

    fn domains(&self) -> Vec<String> {
        DOMAINS.iter().map(|d| d.to_string()).collect()
    }

    async fn prepare(&mut self) -> Result<(), TargetError> {
        // Nothing to create; a server that is not there is found by the
        // baseline.
        Ok(())
    }

    async fn baseline(&mut self) -> Result<serde_json::Value, TargetError> {
        let s = check::stats(&self.backend).await?;
        Ok(serde_json::to_value(s).unwrap_or_default())
    }

    async fn connect(&self, _worker: u32) -> Result<Self::Driver, TargetError> {
        let conn = self.backend.connect().await?;
        Ok(MemcacheDriver::new(conn, self.load.clone()))
    }

    async fn verify(
        &mut self,
        baseline: &serde_json::Value,
        counted: &Snapshot,
    ) -> Result<Verdict, TargetError> {
        let before: check::Stats = serde_json::from_value(baseline.clone()).unwrap_or_default();
        check::verify(&self.backend, &self.load, &before, counted).await
    }

    async fn results(&mut self, counted: &Snapshot) -> Result<Results, TargetError> {
        Ok(check::results(counted))
    }

    async fn finish(&mut self, keep: bool) -> Result<(), TargetError> {
        if keep {
            return Ok(());
        }
        check::clean(&self.backend, &self.load, self.stop, self.whole).await
    }
}
