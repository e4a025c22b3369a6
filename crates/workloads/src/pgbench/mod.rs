//! pgbench: its builtin scripts and its script language, run as written,
//! each transaction one engine operation, and afterwards the TPC-B
//! invariant checked on the server, which pgbench itself never does.
//!
//! This module owns the *pgbench capability* ([`PgbenchBackend`],
//! [`PgbenchConn`]): make pgbench's four tables (`-i`), run one SQL
//! command with its variables in the query mode asked (`-M`), and read
//! the sums the check needs. The language is in `expr` and `funcs`
//! (expressions), `script` (commands) and `builtin` (the three builtins);
//! a transaction's interpreter and the driver in `run`.
//!
//! Kinds are the scripts, so the per-kind table is pgbench's per-script
//! report. Domains are, per command of every script in order, the
//! microseconds it took and its count: `-r`'s per-statement latencies,
//! added across workers and processes like every count.

pub mod builtin;
pub mod expr;
mod funcs;
mod run;
pub mod script;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use loadrig_engine::rng::Rng;
use loadrig_engine::CountsBytes;
use loadrig_metrics::{OpError, Snapshot};
use loadrig_spec::{PgbenchSpec, QueryMode, RunSpec, Stop};
use serde::{Deserialize, Serialize};

use crate::{Bench, Check, Results, TargetError, TargetInfo, Verdict};
use expr::Value;
use script::{Script, ScriptError, Sql};

pub use run::PgbenchDriver;

/// The sums the TPC-B check compares, as the server holds them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sums {
    pub branches: i64,
    pub tellers: i64,
    pub accounts: i64,
    pub history: i64,
    pub history_rows: i64,
}

/// The pgbench capability.
pub trait PgbenchBackend: TargetInfo {
    type Conn: PgbenchConn;

    /// `-i`: pgbench's steps (`d` drop, `t` tables, `g`/`G` data, `v`
    /// vacuum, `p` primary keys, `f` foreign keys), each with its time.
    fn init(
        &self,
        spec: &PgbenchSpec,
    ) -> impl Future<Output = Result<Vec<(char, Duration)>, TargetError>>;
    /// Rows of pgbench_branches (the scale); `None` when there is no table.
    fn scale(&self) -> impl Future<Output = Result<Option<i64>, TargetError>>;
    /// pgbench's vacuum before a run: branches and tellers vacuumed,
    /// history truncated.
    fn vacuum(&self) -> impl Future<Output = Result<(), TargetError>>;
    /// The sums; `None` when the tables are not there.
    fn sums(&self) -> impl Future<Output = Result<Option<Sums>, TargetError>>;
    fn connect(&self, mode: QueryMode) -> impl Future<Output = Result<Self::Conn, TargetError>>;
    /// Drop the four tables (`loadrig teardown pgbench`).
    fn drop_tables(&self) -> impl Future<Output = Result<(), TargetError>>;
}

/// One row as `\gset` reads it: (column, value).
pub type Row = Vec<(String, Value)>;

/// One connection that runs SQL commands.
pub trait PgbenchConn: CountsBytes + Send + 'static {
    /// Run `sql` with `values` for its parameters; `key` names it for
    /// the prepared mode (one per command of every script). The rows
    /// only when `rows` (a `\gset` or `\aset` follows). An error of the
    /// server is [`OpError::server`]; a broken connection `Io`.
    fn exec(
        &mut self,
        key: usize,
        sql: &Sql,
        values: &[Value],
        rows: bool,
    ) -> impl Future<Output = Result<Vec<Row>, OpError>> + Send;
    /// Roll back what an error left open; failures are the next call's.
    fn rollback(&mut self) -> impl Future<Output = ()> + Send;
    fn reconnect(&mut self) -> impl Future<Output = Result<(), OpError>> + Send;
}

/// One script, parsed, with where its commands' counts begin.
pub struct Compiled1 {
    pub name: String,
    pub builtin: Option<String>,
    pub script: Script,
    pub weight: u32,
    /// Its first command's prepared-statement key (command `k`'s is
    /// `keys + k`).
    keys: usize,
    /// Where this script's per-command counts begin in the domains.
    timing_at: usize,
    timing_len: usize,
}

/// The scripts of a run and what every transaction starts from.
pub struct Compiled {
    pub scripts: Vec<Compiled1>,
    total_weight: u64,
    /// `-D` and `scale`, `random_seed`.
    base: HashMap<String, Value>,
    fresh: bool,
}

impl Compiled {
    /// Parse every script of `spec` (a mistake names file:line).
    pub fn new(spec: &PgbenchSpec, seed: u64, fresh: bool) -> Result<Compiled, ScriptError> {
        let defined: Vec<&str> = spec.defines.iter().map(|(n, _)| n.as_str()).collect();
        let mut scripts = Vec::new();
        let (mut key, mut at) = (0, 0);
        for s in &spec.scripts {
            let script = Script::parse(&s.name, &s.text, &defined)?;
            let n = script.lines.len();
            let timing_len = 2 * script.lines.len();
            scripts.push(Compiled1 {
                name: s.name.clone(),
                builtin: s.builtin.clone(),
                keys: key,
                script,
                weight: s.weight,
                timing_at: at,
                timing_len,
            });
            key += n;
            at += timing_len;
        }
        let mut base: HashMap<String, Value> = spec
            .defines
            .iter()
            .map(|(n, v)| (n.clone(), Value::Text(v.clone())))
            .collect();
        base.insert("random_seed".into(), Value::Int(seed as i64));
        base.entry("scale".into())
            .or_insert(Value::Int(i64::from(spec.scale)));
        Ok(Compiled {
            total_weight: scripts.iter().map(|s| u64::from(s.weight)).sum(),
            scripts,
            base,
            fresh,
        })
    }

    /// The script a transaction runs: its first draw, by weight.
    fn pick(&self, rng: &mut Rng) -> usize {
        if self.scripts.len() == 1 {
            return 0;
        }
        let mut w = rng.below(self.total_weight.max(1));
        for (i, s) in self.scripts.iter().enumerate() {
            if w < u64::from(s.weight) {
                return i;
            }
            w -= u64::from(s.weight);
        }
        0
    }

    fn timing_len(&self) -> usize {
        self.scripts.iter().map(|s| s.timing_len).sum()
    }

    /// The domains' names: per command, its microseconds and its count.
    pub fn domains(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (i, s) in self.scripts.iter().enumerate() {
            for l in &s.script.lines {
                out.push(format!("script {} line {} us", i + 1, l.line));
                out.push(format!("script {} line {} count", i + 1, l.line));
            }
        }
        out
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Baseline {
    sums: Option<Sums>,
}

/// Something to do with any target that has this capability.
pub trait Visit {
    type Output;
    fn visit<B: PgbenchBackend + 'static>(self, backend: B) -> Self::Output;
}

/// pgbench on one backend.
pub struct PgbenchBench<B> {
    backend: B,
    spec: PgbenchSpec,
    run: RunSpec,
    plan: Option<Arc<Compiled>>,
    /// The first connection's start and the last one's end.
    connecting: Mutex<Option<(Instant, Instant)>>,
    scale: i64,
    /// The scripts' names as kinds, made once.
    kinds: Vec<&'static str>,
}

impl<B: PgbenchBackend> PgbenchBench<B> {
    pub fn new(backend: B, own: &PgbenchSpec, run: &RunSpec) -> Self {
        PgbenchBench {
            backend,
            spec: own.clone(),
            run: run.clone(),
            plan: None,
            connecting: Mutex::new(None),
            scale: i64::from(own.scale),
            // Leaked once per run (a handful of short names): kinds are
            // `&'static str` for the engine's tables.
            kinds: own
                .scripts
                .iter()
                .map(|s| &*Box::leak(s.builtin.clone().unwrap_or(s.name.clone()).into_boxed_str()))
                .collect(),
        }
    }

    fn plan(&mut self) -> Result<Arc<Compiled>, TargetError> {
        if let Some(p) = &self.plan {
            return Ok(p.clone());
        }
        let mut spec = self.spec.clone();
        spec.scale = u32::try_from(self.scale).unwrap_or(spec.scale);
        let fresh = self.spec.reconnect;
        let p = Arc::new(
            Compiled::new(&spec, self.run.seed, fresh)
                .map_err(|e| TargetError::Unsupported(e.to_string()))?,
        );
        self.plan = Some(p.clone());
        Ok(p)
    }

    /// Whether every script is a builtin (the history rows are then known).
    fn all_builtin(&self) -> bool {
        self.spec.scripts.iter().all(|s| s.builtin.is_some())
    }

    /// Whether some script updates `table`, and none is simple-update
    /// (which moves accounts and history only).
    fn updates(&self, table: &str) -> bool {
        let needle = format!("update {table} ");
        let simple = self
            .spec
            .scripts
            .iter()
            .any(|s| s.builtin.as_deref() == Some("simple-update"));
        (table == "pgbench_accounts" || !simple)
            && self
                .spec
                .scripts
                .iter()
                .any(|s| s.text.to_ascii_lowercase().contains(&needle))
    }
}

impl<B: PgbenchBackend> Bench for PgbenchBench<B> {
    type Driver = PgbenchDriver<B::Conn>;
    type Target = B;

    fn target(&self) -> &B {
        &self.backend
    }

    fn kinds(&self) -> Vec<&'static str> {
        self.kinds.clone()
    }

    fn domains(&self) -> Vec<String> {
        Compiled::new(&self.spec, 0, false).map_or_else(|_| Vec::new(), |c| c.domains())
    }

    async fn prepare(&mut self) -> Result<(), TargetError> {
        if self.spec.init {
            self.backend.init(&self.spec).await?;
        }
        if self.spec.scripts.is_empty() {
            return Ok(());
        }
        if let Some(scale) = self.backend.scale().await? {
            self.scale = scale;
        } else if self.spec.scripts.iter().any(|s| s.builtin.is_some()) {
            return Err(TargetError::Unsupported(
                "pgbench_branches does not exist: run `loadrig pgbench -i` first".into(),
            ));
        }
        if !self.spec.no_vacuum && self.backend.sums().await?.is_some() {
            self.backend.vacuum().await?;
        }
        self.plan()?;
        Ok(())
    }

    async fn baseline(&mut self) -> Result<serde_json::Value, TargetError> {
        let sums = self.backend.sums().await?;
        Ok(serde_json::to_value(Baseline { sums }).unwrap_or_default())
    }

    async fn connect(&self, worker: u32) -> Result<Self::Driver, TargetError> {
        let plan = match &self.plan {
            Some(p) => p.clone(),
            None => Arc::new(
                Compiled::new(&self.spec, self.run.seed, self.spec.reconnect)
                    .map_err(|e| TargetError::Unsupported(e.to_string()))?,
            ),
        };
        let start = Instant::now();
        let conn = self.backend.connect(self.spec.mode).await?;
        if let Ok(mut c) = self.connecting.lock() {
            let (first, _) = c.unwrap_or((start, start));
            *c = Some((first.min(start), Instant::now()));
        }
        Ok(PgbenchDriver::new(conn, plan, self.run.seed, worker))
    }

    async fn verify(
        &mut self,
        baseline: &serde_json::Value,
        counted: &Snapshot,
    ) -> Result<Verdict, TargetError> {
        let before: Baseline = serde_json::from_value(baseline.clone()).unwrap_or_default();
        let (Some(b), Some(a)) = (before.sums, self.backend.sums().await?) else {
            return Ok(Verdict::skipped("no pgbench tables"));
        };
        Ok(self.check(b, a, counted))
    }

    async fn results(&mut self, _counted: &Snapshot) -> Result<Results, TargetError> {
        Ok(Results {
            lines: self.header(),
            ..Results::default()
        })
    }

    async fn finish(&mut self, _keep: bool) -> Result<(), TargetError> {
        // pgbench's tables are the user's, made by `-i`: a run keeps them.
        Ok(())
    }

    async fn teardown(&mut self) -> Result<(), TargetError> {
        self.backend.drop_tables().await
    }
}

impl<B: PgbenchBackend> PgbenchBench<B> {
    /// The TPC-B invariant over what the run changed: each balance moved
    /// by the history's deltas, and (builtins) one history row per
    /// committed transaction, those in doubt either way.
    fn check(&self, b: Sums, a: Sums, counted: &Snapshot) -> Verdict {
        let delta = a.history - b.history;
        let mut checks = Vec::new();
        for (table, before, after) in [
            ("pgbench_accounts", b.accounts, a.accounts),
            ("pgbench_tellers", b.tellers, a.tellers),
            ("pgbench_branches", b.branches, a.branches),
        ] {
            if self.updates(table) {
                checks.push(Check::new(
                    format!("{table}'s balances moved by sum(pgbench_history.delta)"),
                    delta,
                    after - before,
                ));
            }
        }
        if self.all_builtin() {
            let (mut rows, mut doubt) = (0u64, 0u64);
            for (k, s) in self.spec.scripts.iter().enumerate() {
                let per = builtin::history_rows(s.builtin.as_deref().unwrap_or(""));
                rows += per * counted.kinds.get(k).map_or(0, |k| k.ok);
                doubt += per * counted.in_doubt_of(k);
            }
            checks.push(
                Check::new(
                    "history rows added = transactions committed",
                    rows as i64,
                    a.history_rows - b.history_rows,
                )
                .in_doubt(doubt as i64),
            );
        }
        Verdict::from_checks(
            checks,
            format!(
                "balances moved by the history's {delta:+}, +{} history rows",
                a.history_rows - b.history_rows
            ),
        )
    }

    /// pgbench's lines before its numbers (transaction type to duration),
    /// and the initial connection time.
    fn header(&self) -> Vec<String> {
        let kind = match self.spec.scripts.as_slice() {
            [one] => one.name.clone(),
            _ => "multiple scripts".to_string(),
        };
        let mut out = vec![
            format!("transaction type: {kind}"),
            format!("scaling factor: {}", self.scale),
            format!("query mode: {}", self.spec.mode.word()),
            format!("number of clients: {}", self.run.load.clients),
            format!("number of threads: {}", self.run.threads),
            "maximum number of tries: 1".to_string(),
        ];
        match self.run.load.stop {
            Stop::Seconds(s) => out.push(format!("duration: {} s", s.round() as u64)),
            Stop::Count(n) => out.push(format!(
                "number of transactions per client: {}",
                n / u64::from(self.run.load.clients.max(1))
            )),
        }
        if let Ok(Some((first, last))) = self.connecting.lock().map(|c| *c) {
            out.push(format!(
                "initial connection time = {:.3} ms",
                (last - first).as_secs_f64() * 1e3
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use loadrig_spec::ScriptSpec;

    use super::*;

    fn spec(scripts: &[(&str, u32)]) -> PgbenchSpec {
        PgbenchSpec {
            scripts: scripts
                .iter()
                .map(|(n, w)| {
                    let (short, name, text) = builtin::find(n).unwrap();
                    ScriptSpec {
                        name: name.into(),
                        builtin: Some(short.into()),
                        text: text.into(),
                        weight: *w,
                    }
                })
                .collect(),
            ..PgbenchSpec::default()
        }
    }

    #[test]
    fn scripts_are_picked_by_weight() {
        let c =
            Compiled::new(&spec(&[("select-only", 1), ("simple-update", 3)]), 1, false).unwrap();
        let n = (0..40_000)
            .filter(|&i| c.pick(&mut Rng::for_op(9, i)) == 1)
            .count();
        // 30,000 expected; 4 sigma of 86.6.
        assert!((29_653..=30_347).contains(&n), "{n}");
        assert_eq!(c.domains().len(), 2 * (2 + 9));
        assert_eq!(c.scripts[1].timing_at, 4);
    }
}
