//! The kv workload on any [`KvBackend`]: the driver (one transaction per
//! operation), the ledger of which transactions were acknowledged or left
//! in doubt, the load phase (batched, parallel, reused when the marker
//! matches) and the bench around them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use loadrig_engine::{Driver, Event, Tag};
use loadrig_metrics::{OpError, Snapshot};
use loadrig_spec::{KvSpec, RunSpec};

use super::data::{key_of, Generator, Origin};
use super::verify::{self, Ledger};
use super::{KvBackend, KvConn, Rows, Txn};
use crate::{group, Bench, Reply, Results, TargetError, Verdict};

/// Rows one `put_rows` carries in the load phase and when values are put
/// back.
pub(super) const BATCH: u64 = 1_000;

/// Domain counters, as [`Driver::take_counts`] fills them.
/// `keys_read`: point reads that found their key; `range_keys`: rows
/// range reads returned; `keys_written`: writes of acknowledged
/// transactions; `keys_missing`: point reads or range rows that were not
/// there (every row is loaded, so any is a fault).
pub const DOMAINS: [&str; 4] = ["keys_read", "range_keys", "keys_written", "keys_missing"];
const READ: usize = 0;
const RANGED: usize = 1;
const WRITTEN: usize = 2;
pub(super) const MISSING: usize = 3;

/// No operation in flight under a tag.
const IDLE: u64 = u64::MAX;

/// The engine's driver for the kv workload over any [`KvConn`].
pub struct KvDriver<C> {
    conn: C,
    gen: Arc<Generator>,
    txn: Txn,
    /// The operation index in flight under each tag ([`IDLE`]: none).
    in_flight: Vec<u64>,
    /// Keys read, written, missing since the last `take_counts`.
    counts: [u64; 4],
    /// Write transactions acknowledged and in doubt, handed to `ledger`
    /// when the driver is dropped (nothing shared on the hot path).
    acked: Vec<u64>,
    doubt: Vec<u64>,
    failed: Vec<u64>,
    ledger: Arc<Ledger>,
}

impl<C> KvDriver<C> {
    /// Every transaction in flight may or may not have committed.
    fn all_in_doubt(&mut self) {
        let writes = self.gen.writes() > 0;
        for i in &mut self.in_flight {
            if *i != IDLE && writes {
                self.doubt.push(*i);
            }
            *i = IDLE;
        }
    }
}

impl<C> Drop for KvDriver<C> {
    fn drop(&mut self) {
        self.all_in_doubt();
        self.ledger.put(
            std::mem::take(&mut self.acked),
            std::mem::take(&mut self.doubt),
            std::mem::take(&mut self.failed),
        );
    }
}

impl<C: KvConn> Driver for KvDriver<C> {
    fn kind_of(&self, _index: u64) -> usize {
        0
    }

    #[inline]
    fn send(&mut self, index: u64, tag: Tag) -> usize {
        self.gen.fill(index, &mut self.txn);
        let t = tag as usize;
        if t >= self.in_flight.len() {
            self.in_flight.resize(t + 1, IDLE);
        }
        self.in_flight[t] = index;
        self.conn.submit(&self.txn, tag);
        0
    }

    async fn recv(&mut self) -> Event {
        match self.conn.recv().await {
            Reply::Broken(e) => {
                self.all_in_doubt();
                Event::Broken(e)
            }
            Reply::Done { tag, result } => {
                let index = self
                    .in_flight
                    .get_mut(tag as usize)
                    .map_or(IDLE, |i| std::mem::replace(i, IDLE));
                let writes = self.gen.writes();
                match result {
                    Ok(done) => {
                        let reads = u64::from(self.gen.reads());
                        let found = u64::from(done.found);
                        self.counts[READ] += found;
                        self.counts[RANGED] += u64::from(done.ranged);
                        self.counts[MISSING] += reads.saturating_sub(found)
                            + self.gen.range_rows().saturating_sub(u64::from(done.ranged));
                        if writes > 0 && index != IDLE {
                            self.counts[WRITTEN] += u64::from(writes);
                            self.acked.push(index);
                        }
                    }
                    Err(e) => {
                        if writes > 0 && index != IDLE {
                            if e.kind.in_doubt() {
                                self.doubt.push(index);
                            } else {
                                self.failed.push(index);
                            }
                        }
                    }
                }
                Event::Done {
                    tag,
                    result: result.map(|_| None),
                }
            }
        }
    }

    fn reconnect(&mut self) -> impl std::future::Future<Output = Result<(), OpError>> + Send {
        // A timeout leads here without a reply: what was in flight may
        // have committed.
        self.all_in_doubt();
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
        Ok(KvDriver {
            conn: self.backend.connect().await?,
            gen: self.gen.clone(),
            txn: Txn::default(),
            in_flight: Vec::new(),
            counts: [0; 4],
            acked: Vec::new(),
            doubt: Vec::new(),
            failed: Vec::new(),
            ledger: self.ledger.clone(),
        })
    }

    async fn verify(
        &mut self,
        _baseline: &serde_json::Value,
        counted: &Snapshot,
    ) -> Result<Verdict, TargetError> {
        verify::verdict(&self.backend, &self.spec, &self.gen, &self.ledger, counted).await
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
