//! FoundationDB's key-value tests (its benchmarking guide: write1,
//! write10, read10, mix, range) over any ordered, transactional store.
//!
//! This module owns the kv *capability*: what a target must do to run
//! them. One engine operation is one transaction ([`Txn`]): point reads,
//! at most one range read and writes, committed together; the connection
//! answers once per transaction with what it read ([`TxnDone`]). The cold
//! path (load, marker, count, read back) is on the same types, so a target
//! implements two traits: [`KvBackend`] and [`KvConn`].
//!
//! Keys are [`KEY_LEN`] bytes, ordered by their bytes (the workload makes
//! them so that byte order is row order); values are opaque bytes. A
//! target stores them as they are, in one keyspace named by the dataset
//! ([`KvBackend::use_dataset`]): a table, a key prefix, a directory.
//!
//! It also owns the [`KvBench`] over any backend: the load phase (batched,
//! parallel, reused when the marker matches), the results and the loaded
//! values put back afterwards; the driver is in `driver`, the check
//! after the run and the drivers' ledger in `verify`.

pub mod data;
mod driver;
mod ledger;
mod verify;

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use loadrig_engine::CountsBytes;
use loadrig_engine::Tag;
use loadrig_metrics::{OpError, Snapshot};
use loadrig_report::fmt::group;
use loadrig_spec::{KvSpec, RunSpec};

use crate::{Bench, Reply, Results, TargetError, TargetInfo, Verdict};
use data::{key_of, Generator, Origin};
use driver::MISSING;
use verify::{Ledger, BATCH};

pub use driver::{KvDriver, DOMAINS};

/// Every key is this long (the guide's 16 bytes).
pub const KEY_LEN: usize = 16;

/// One key, as stored.
pub type Key = [u8; KEY_LEN];

/// Rows to write: keys with their values, in order, in two flat buffers
/// so a driver reuses them from one transaction to the next without
/// allocating. The same key may appear twice; the later write wins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rows {
    keys: Vec<Key>,
    data: Vec<u8>,
    /// `ends[i]`: where value `i` ends in `data` (it starts where `i - 1`
    /// ends).
    ends: Vec<usize>,
}

impl Rows {
    pub fn clear(&mut self) {
        self.keys.clear();
        self.data.clear();
        self.ends.clear();
    }

    pub fn push(&mut self, key: Key, value: &[u8]) {
        self.keys.push(key);
        self.data.extend_from_slice(value);
        self.ends.push(self.data.len());
    }

    /// Add a row whose value `fill` appends to the buffer it is given
    /// (no copy through a temporary).
    pub fn push_with(&mut self, key: Key, fill: impl FnOnce(&mut Vec<u8>)) {
        self.keys.push(key);
        fill(&mut self.data);
        self.ends.push(self.data.len());
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn keys(&self) -> &[Key] {
        &self.keys
    }

    /// Row `i`: its key and value.
    pub fn get(&self, i: usize) -> Option<(&Key, &[u8])> {
        let start = if i == 0 { 0 } else { *self.ends.get(i - 1)? };
        Some((self.keys.get(i)?, self.data.get(start..*self.ends.get(i)?)?))
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&Key, &[u8])> + '_ {
        (0..self.len()).map(|i| {
            let start = if i == 0 { 0 } else { self.ends[i - 1] };
            (&self.keys[i], &self.data[start..self.ends[i]])
        })
    }
}

/// A range read: the keys `>= start` and `< end`, in key order, at most
/// `limit` of them (FoundationDB's `getRange(begin, end, limit)`, etcd's
/// `Range` with `range_end` and `limit`, SQL's `ORDER BY k LIMIT n`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeRead {
    pub start: Key,
    pub end: Key,
    pub limit: u32,
}

/// One transaction as the driver hands it to [`KvConn::submit`]: its
/// point reads, its range read and its writes, done atomically, committed
/// once. A transaction without writes needs no commit (the guide's read10
/// and range): a target may run it as a read-only snapshot. The order
/// inside is the target's: reads see the data as of the transaction's
/// start or later, never another transaction's partial writes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Txn {
    pub reads: Vec<Key>,
    pub range: Option<RangeRead>,
    pub writes: Rows,
}

impl Txn {
    pub fn clear(&mut self) {
        self.reads.clear();
        self.range = None;
        self.writes.clear();
    }

    /// Whether the transaction writes nothing (needs no commit).
    pub fn read_only(&self) -> bool {
        self.writes.is_empty()
    }
}

/// What a committed transaction read. Keys that do not exist are not
/// errors (the driver counts them); values are not handed back on the hot
/// path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxnDone {
    /// Point reads that found their key.
    pub found: u32,
    /// Rows the range read returned.
    pub ranged: u32,
}

/// The kv capability: what a target must do to run the kv workload.
///
/// Cold-path methods take `&self` and may be called while connections
/// exist; none is called while a run's transactions are in flight.
pub trait KvBackend: TargetInfo {
    type Conn: KvConn;

    /// Name the keyspace every later call uses (validated by the spec:
    /// 1 to 32 of `[a-z0-9_]`). Called once, first, before `prepare`.
    fn use_dataset(&mut self, name: &str);

    /// How a transaction travels on this target and how ranges are served,
    /// for the report, e.g. "one round trip per transaction: a PL/pgSQL
    /// function" or "MULTI/EXEC; ranges from a sorted-set index".
    fn transactions(&self) -> String;

    /// Create the schema (table, procedures) if missing; keeps any data.
    fn prepare(&self) -> impl Future<Output = Result<(), TargetError>>;

    /// Connections the load phase may use at once (1 where the target has
    /// one writer anyway).
    fn load_connections(&self) -> usize {
        4
    }

    /// The marker stored with the dataset (set by [`KvBackend::set_marker`]),
    /// or `None` when there is none (never loaded, or cleared).
    fn marker(&self) -> impl Future<Output = Result<Option<String>, TargetError>>;

    /// Store `marker` beside the dataset, durably, replacing any other.
    /// It is not a row: [`KvBackend::count`] does not count it and no
    /// range read of the rows returns it (rows' keys start with `k`; keep
    /// the marker outside that keyspace or in a table of its own).
    fn set_marker(&self, marker: &str) -> impl Future<Output = Result<(), TargetError>>;

    /// Remove every row of the dataset and its marker.
    fn clear(&self) -> impl Future<Output = Result<(), TargetError>>;

    /// Rows in the dataset (not the marker).
    fn count(&self) -> impl Future<Output = Result<u64, TargetError>>;

    /// Remove the schema and data (unless kept); a target whose data is
    /// the user's file may do nothing.
    fn teardown(&self) -> impl Future<Output = Result<(), TargetError>>;

    fn connect(&self) -> impl Future<Output = Result<Self::Conn, TargetError>>;
}

/// One connection: transactions on the hot path (possibly many in flight),
/// bulk writes and read back on the cold path.
pub trait KvConn: CountsBytes + Send + 'static {
    /// Queue a transaction under `tag`; must not block. The connection
    /// copies what it needs: the driver reuses `txn` for the next one.
    fn submit(&mut self, txn: &Txn, tag: Tag);

    /// The next answer. Cancel safe. A transaction that failed is
    /// `Done` with its error (a conflict, a server error, a timeout); a
    /// connection that failed is `Broken`.
    fn recv(&mut self) -> impl Future<Output = Reply<TxnDone>> + Send;

    fn reconnect(&mut self) -> impl Future<Output = Result<(), OpError>> + Send;

    /// Cold path: write `rows` (insert or overwrite) and commit, in as few
    /// round trips as the target allows (a batch of up to a few thousand
    /// rows; a target with a smaller limit per transaction, such as etcd's
    /// 128 operations, splits it: atomicity across the batch is not
    /// needed). Used by the load phase, several connections at once, and to
    /// put loaded values back after a run.
    fn put_rows(&mut self, rows: &Rows) -> impl Future<Output = Result<(), TargetError>> + Send;

    /// Cold path: the values of `keys`, in the same order (`None`: no
    /// such key). Up to a few thousand keys per call.
    fn get_rows(
        &mut self,
        keys: &[Key],
    ) -> impl Future<Output = Result<Vec<Option<Vec<u8>>>, TargetError>> + Send;
}

/// Something to do with any target that has this capability: the registry
/// calls it with the concrete backend, so what it builds is monomorphised
/// per target (see [`crate::Capabilities`]).
pub trait Visit {
    type Output;
    fn visit<B: KvBackend + 'static>(self, backend: B) -> Self::Output;
}

/// Something to do with any target that has the kv capability.
pub struct KvBench<B> {
    pub backend: B,
    pub spec: KvSpec,
    pub seed: u64,
    gen: Arc<Generator>,
    ledger: Arc<Ledger>,
    /// What the load phase did, for the results.
    load: Option<String>,
}

impl<B: KvBackend> KvBench<B> {
    pub fn new(mut backend: B, own: &KvSpec, run: &RunSpec) -> Self {
        backend.use_dataset(&own.dataset);
        KvBench {
            backend,
            spec: own.clone(),
            seed: run.seed,
            gen: Arc::new(Generator::new(own, run.seed)),
            ledger: Arc::new(Ledger::default()),
            load: None,
        }
    }

    /// What identifies the loaded data: a dataset with this marker holds
    /// exactly the rows the load phase writes, and nothing else.
    fn marker(&self, state: &str) -> String {
        format!(
            "loadrig kv 1: rows={} values={}..{} seed={} {state}",
            self.spec.rows, self.spec.value_min, self.spec.value_max, self.seed
        )
    }

    /// Load every row, `load_connections` batches at a time.
    async fn load(&self) -> Result<Duration, TargetError> {
        let conns = self.backend.load_connections().max(1);
        let batches = self.spec.rows.div_ceil(BATCH);
        let conns = conns
            .min(usize::try_from(batches).unwrap_or(usize::MAX))
            .max(1);
        let done = Arc::new(AtomicU64::new(0));
        let started = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for c in 0..conns {
            let mut conn = self.backend.connect().await?;
            let (gen, done, rows) = (self.gen.clone(), done.clone(), self.spec.rows);
            tasks.spawn(async move {
                let mut batch = Rows::default();
                let mut b = c as u64;
                while b < batches {
                    batch.clear();
                    for row in b * BATCH..((b + 1) * BATCH).min(rows) {
                        batch.push_with(key_of(row), |v| gen.values.write(Origin::Loaded, row, v));
                    }
                    conn.put_rows(&batch).await?;
                    done.fetch_add(batch.len() as u64, Ordering::Relaxed);
                    b += conns as u64;
                }
                Ok::<(), TargetError>(())
            });
        }
        let mut tick = tokio::time::interval(Duration::from_secs(2));
        tick.tick().await;
        loop {
            tokio::select! {
                joined = tasks.join_next() => match joined {
                    None => break,
                    Some(Ok(r)) => r?,
                    Some(Err(e)) => return Err(self.failed(format!("a load task failed: {e}"))),
                },
                _ = tick.tick() => {
                    // Progress goes to standard error, beside the phase
                    // line: a long load must not look like a hang.
                    let n = done.load(Ordering::Relaxed);
                    let secs = started.elapsed().as_secs_f64();
                    eprintln!(
                        "  load: {} of {} rows ({:.0}%), {} rows/s",
                        group(n),
                        group(self.spec.rows),
                        n as f64 * 100.0 / self.spec.rows as f64,
                        group((n as f64 / secs) as u64)
                    );
                }
            }
        }
        Ok(started.elapsed())
    }

    fn failed(&self, reason: String) -> TargetError {
        TargetError::Prepare {
            target: format!("kv dataset {}", self.spec.dataset),
            reason,
        }
    }
}

impl<B: KvBackend> Bench for KvBench<B> {
    type Driver = KvDriver<B::Conn>;
    type Target = B;

    fn target(&self) -> &B {
        &self.backend
    }

    fn kinds(&self) -> Vec<&'static str> {
        // The guide's test by its name; a shape of one's own is "txn" (the
        // results say what it is).
        vec![self.spec.test.map_or("txn", |t| t.name())]
    }

    fn domains(&self) -> Vec<String> {
        DOMAINS.iter().map(|d| (*d).to_string()).collect()
    }

    async fn prepare(&mut self) -> Result<(), TargetError> {
        self.backend.prepare().await?;
        let clean = self.marker("clean");
        let found = self.backend.marker().await?;
        if self.spec.reload || found.as_deref() != Some(clean.as_str()) {
            self.backend.clear().await?;
            let took = self.load().await?;
            let secs = took.as_secs_f64().max(1e-9);
            self.load = Some(format!(
                "load: {} rows in {:.2} s = {} rows/s ({} at once, batches of {})",
                group(self.spec.rows),
                secs,
                group((self.spec.rows as f64 / secs) as u64),
                self.backend.load_connections().max(1),
                group(BATCH)
            ));
        } else {
            self.load = Some(format!(
                "load: reused dataset {} (its marker: {clean})",
                self.spec.dataset
            ));
        }
        // Until the run's writes are put back, the data is not the loaded
        // data: a run that dies here leaves a dataset the next one reloads.
        self.backend.set_marker(&self.marker("dirty")).await
    }

    async fn baseline(&mut self) -> Result<serde_json::Value, TargetError> {
        let rows = self.backend.count().await?;
        Ok(serde_json::json!({ "rows": rows }))
    }

    async fn connect(&self, _worker: u32) -> Result<Self::Driver, TargetError> {
        self.ledger.drove();
        let conn = self.backend.connect().await?;
        Ok(KvDriver::new(conn, self.gen.clone(), self.ledger.clone()))
    }

    async fn verify(
        &mut self,
        _baseline: &serde_json::Value,
        counted: &Snapshot,
    ) -> Result<Verdict, TargetError> {
        // Keys the drivers read that were not there.
        let missing = counted.domains.get(MISSING).copied().unwrap_or(0);
        verify::verdict(&self.backend, &self.spec, &self.gen, &self.ledger, missing).await
    }

    /// Which write transactions this process's drivers saw acknowledged,
    /// fail or left in doubt: the parent verifies every process's.
    fn share(&self) -> Option<Box<serde_json::value::RawValue>> {
        self.ledger.share()
    }

    fn gather(
        &mut self,
        shares: Vec<Option<Box<serde_json::value::RawValue>>>,
    ) -> Result<(), serde_json::Error> {
        self.ledger.gather(shares)
    }

    async fn results(&mut self, _counted: &Snapshot) -> Result<Results, TargetError> {
        let s = &self.spec;
        let test = match s.test {
            Some(t) => format!(
                "test: {} of FoundationDB's benchmarking guide ({}); the guide's figure: {}",
                t.name(),
                shape(s),
                t.guide()
            ),
            None => format!("test: none of the guide's; a transaction is {}", shape(s)),
        };
        let mut lines = vec![
            test,
            format!(
                "data: {} rows, 16-byte keys, values {} to {} bytes uniform, keys chosen {}; dataset {}",
                group(s.rows),
                s.value_min,
                s.value_max,
                s.keys.name(),
                s.dataset
            ),
        ];
        lines.extend(self.load.clone());
        lines.push(format!("transactions: {}", self.backend.transactions()));
        // A server's setting is known only once connected, after the
        // header: the guide's point is durable commits, so say it here too.
        if let Some(d) = self.backend.durability() {
            lines.push(format!("commits: {d}"));
        }
        Ok(Results {
            lines,
            ..Results::default()
        })
    }

    async fn finish(&mut self, keep: bool) -> Result<(), TargetError> {
        if keep {
            return Ok(());
        }
        // Put back the loaded value of every row the run wrote (or may
        // have), so the next run reuses the data instead of loading it.
        let Some(rows) = self.ledger.rows_touched(&self.gen) else {
            return Ok(());
        };
        verify::put_back(&self.backend, &self.gen, &rows).await?;
        self.backend.set_marker(&self.marker("clean")).await
    }

    /// The dataset a run keeps for the next one is dropped here.
    async fn teardown(&mut self) -> Result<(), TargetError> {
        self.backend.teardown().await
    }
}

/// A transaction's shape in words.
fn shape(s: &KvSpec) -> String {
    let mut parts = Vec::new();
    let keys = |n: u32| {
        if n == 1 {
            "1 random key".to_string()
        } else {
            format!("{n} random keys")
        }
    };
    if s.reads > 0 {
        parts.push(format!("read {}", keys(s.reads)));
    }
    if s.ranges > 0 {
        parts.push(format!(
            "read {} consecutive keys from a random start",
            group(u64::from(s.range_length))
        ));
    }
    if s.writes > 0 {
        parts.push(format!("write {}, commit", keys(s.writes)));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_keep_their_values_apart() {
        let mut r = Rows::default();
        r.push([b'a'; KEY_LEN], b"one");
        r.push_with([b'b'; KEY_LEN], |v| v.extend_from_slice(b""));
        r.push([b'c'; KEY_LEN], b"three");
        assert_eq!(r.len(), 3);
        assert_eq!(r.get(0), Some((&[b'a'; KEY_LEN], &b"one"[..])));
        assert_eq!(r.get(1), Some((&[b'b'; KEY_LEN], &b""[..])));
        assert_eq!(r.get(2), Some((&[b'c'; KEY_LEN], &b"three"[..])));
        assert_eq!(r.get(3), None);
        let all: Vec<_> = r.iter().map(|(_, v)| v.len()).collect();
        assert_eq!(all, [3, 0, 5]);
        r.clear();
        assert!(r.is_empty());
    }
}
