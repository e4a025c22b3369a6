//! After a kv run: does the target hold what it acknowledged?
//!
//! The drivers' ledger says which write transactions were acknowledged
//! (the parent of `--processes` gathers its children's: [`Ledger::gather`])
//! and which were left in doubt (failed by I/O, timeout or garbled answer,
//! or in flight when a connection was lost: each may or may not have
//! committed, [`loadrig_metrics::ErrorKind::in_doubt`]). Every row those
//! transactions wrote is read back, with a sample of rows nobody wrote,
//! and each value is traced to its writer (see [`super::data`]):
//!
//! - a row an acknowledged transaction wrote that still holds its loaded
//!   value lost that write: failure;
//! - a value written by a transaction that was neither acknowledged nor in
//!   doubt (it failed cleanly, or never wrote that row): failure;
//! - bytes no writer of this run would have put there, or a row gone:
//!   failure;
//! - the row count must be the rows loaded (transactions only update).
//!
//! Not checked: which of two acknowledged writes of one row came last
//! (the drivers do not record commit order).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use loadrig_engine::rng::Rng;
use loadrig_report::fmt::group;
use loadrig_spec::KvSpec;

use super::data::{key_of, Generator, Origin};
use super::{Key, KvBackend, KvConn, Rows};
use crate::{Check, TargetError, Verdict};

/// Rows one `put_rows` carries in the load phase and when values are put
/// back.
pub(super) const BATCH: u64 = 1_000;

/// Rows nobody wrote that are read back too (their loaded value must be
/// there), and all a check without a ledger reads.
const SAMPLE: u64 = 1_000;

/// The transactions this process's drivers wrote with, gathered as they
/// are dropped.
#[derive(Debug, Default)]
pub struct Ledger(Mutex<Inner>);

#[derive(Debug, Default)]
struct Inner {
    /// Whether drivers ran in this process, or the parent of `--processes`
    /// gathered its children's ledgers (not so in `loadrig verify`: no
    /// ledger there).
    drove: bool,
    acked: Vec<u64>,
    /// `acked` as each driver's runs, for a child's share: a driver's
    /// indices are one stride apart, so its acknowledged ones are a few
    /// runs broken only where a transaction failed.
    acked_runs: Vec<Run>,
    doubt: Vec<u64>,
    /// Failed cleanly (the target said no): must not have landed.
    failed: Vec<u64>,
}

/// Indices `first, first + step, ...`, `count` of them.
type Run = (u64, u64, u64);

/// What a `--processes` child hands its parent: its ledger, the
/// acknowledged transactions as runs.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Share {
    acked: Vec<Run>,
    doubt: Vec<u64>,
    failed: Vec<u64>,
}

/// `indices` (one driver's, sorted) as runs of one step.
fn runs(indices: &[u64]) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::new();
    for &i in indices {
        match out.last_mut() {
            Some((first, step, n)) if *n == 1 && i > *first => {
                *step = i - *first;
                *n = 2;
            }
            Some((first, step, n)) if first.checked_add(step.saturating_mul(*n)) == Some(i) => {
                *n += 1;
            }
            _ => out.push((i, 1, 1)),
        }
    }
    out
}

impl Ledger {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn drove(&self) {
        self.lock().drove = true;
    }

    pub fn put(&self, acked: Vec<u64>, doubt: Vec<u64>, failed: Vec<u64>) {
        let mut acked = acked;
        acked.sort_unstable();
        let mut l = self.lock();
        l.acked_runs.extend(runs(&acked));
        l.acked.extend(acked);
        l.doubt.extend(doubt);
        l.failed.extend(failed);
    }

    /// This process's ledger, for its `--processes` parent.
    pub fn share(&self) -> Option<Box<serde_json::value::RawValue>> {
        let l = self.lock();
        if !l.drove {
            return None;
        }
        let share = Share {
            acked: l.acked_runs.clone(),
            doubt: l.doubt.clone(),
            failed: l.failed.clone(),
        };
        serde_json::value::to_raw_value(&share).ok()
    }

    /// The parent of `--processes`: its children's ledgers, as one.
    /// A run past 2^32 indices is not one a child wrote: refused.
    pub fn gather(
        &self,
        shares: Vec<Option<Box<serde_json::value::RawValue>>>,
    ) -> Result<(), serde_json::Error> {
        use serde::de::Error;
        let mut l = self.lock();
        for share in shares.into_iter().flatten() {
            let s: Share = serde_json::from_str(share.get())?;
            for (first, step, n) in s.acked {
                if n > u64::from(u32::MAX) {
                    return Err(serde_json::Error::custom(
                        "a run of acknowledged transactions too long",
                    ));
                }
                l.acked
                    .extend((0..n).map(|k| first.saturating_add(k.saturating_mul(step))));
            }
            l.doubt.extend(s.doubt);
            l.failed.extend(s.failed);
            l.drove = true;
        }
        Ok(())
    }

    /// Acknowledged and in-doubt transactions, sorted, and the failed
    /// ones; `None` without a ledger.
    fn sorted(&self) -> Option<(Vec<u64>, Vec<u64>, Vec<u64>)> {
        let l = self.lock();
        if !l.drove {
            return None;
        }
        let (mut a, mut d) = (l.acked.clone(), l.doubt.clone());
        a.sort_unstable();
        d.sort_unstable();
        Some((a, d, l.failed.clone()))
    }

    /// Every row a write transaction of the run aimed at, sorted; `None`
    /// without a ledger.
    pub fn rows_touched(&self, gen: &Generator) -> Option<Vec<u64>> {
        let (acked, doubt, failed) = self.sorted()?;
        Some(
            touched(gen, &acked, &doubt, &failed)
                .into_keys()
                .collect_sorted(),
        )
    }
}

trait CollectSorted {
    fn collect_sorted(self) -> Vec<u64>;
}

impl<I: Iterator<Item = u64>> CollectSorted for I {
    fn collect_sorted(self) -> Vec<u64> {
        let mut v: Vec<u64> = self.collect();
        v.sort_unstable();
        v
    }
}

/// Each row a write transaction aimed at, and whether an acknowledged one
/// wrote it (then its loaded value must be gone).
fn touched(gen: &Generator, acked: &[u64], doubt: &[u64], failed: &[u64]) -> HashMap<u64, bool> {
    let mut map = HashMap::new();
    let mut rows = Vec::new();
    for &i in acked {
        gen.written_rows(i, &mut rows);
        for &r in &rows {
            map.insert(r, true);
        }
    }
    for &i in doubt.iter().chain(failed) {
        gen.written_rows(i, &mut rows);
        for &r in &rows {
            map.entry(r).or_insert(false);
        }
    }
    map
}

/// What the values read back came to.
#[derive(Debug, Default, PartialEq, Eq)]
struct Tally {
    read: u64,
    /// Rows an acknowledged write touched, holding the loaded value.
    lost: u64,
    /// Values from a transaction not acknowledged nor in doubt, or one
    /// that did not write that row.
    foreign: u64,
    /// Bytes no writer of this run would have written there.
    corrupt: u64,
    /// Rows not there at all.
    absent: u64,
}

/// The checks on values read back. Without a ledger (`sets` is `None`)
/// only the form is checked: the writer a value names wrote that row.
fn tally(
    gen: &Generator,
    rows: &[u64],
    values: &[Option<Vec<u8>>],
    touched: &HashMap<u64, bool>,
    sets: Option<(&[u64], &[u64])>,
) -> Tally {
    let mut t = Tally::default();
    let (mut scratch, mut written) = (Vec::new(), Vec::new());
    for (&row, value) in rows.iter().zip(values) {
        t.read += 1;
        let Some(value) = value else {
            t.absent += 1;
            continue;
        };
        match gen.values.origin(row, value, &mut scratch) {
            None => t.corrupt += 1,
            Some(Origin::Loaded) => {
                if touched.get(&row) == Some(&true) {
                    t.lost += 1;
                }
            }
            Some(Origin::Written(i)) => {
                gen.written_rows(i, &mut written);
                let known = sets.is_none_or(|(a, d)| {
                    a.binary_search(&i).is_ok() || d.binary_search(&i).is_ok()
                });
                if !known || !written.contains(&row) {
                    t.foreign += 1;
                }
            }
        }
    }
    t
}

/// `n` rows in `0..rows` not in `skip`, from the seed, sorted, distinct.
fn sample(seed: u64, rows: u64, n: u64, skip: &HashMap<u64, bool>) -> Vec<u64> {
    let mut rng = Rng::stream(seed, 0x6b76_7665_7269_6679);
    let mut out = Vec::new();
    let want = n.min(rows.saturating_sub(skip.len() as u64));
    let mut tries = 0;
    while (out.len() as u64) < want && tries < want * 20 {
        tries += 1;
        let r = rng.below(rows);
        if !skip.contains_key(&r) {
            out.push(r);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

pub(super) async fn verdict<B: KvBackend>(
    backend: &B,
    spec: &KvSpec,
    gen: &Generator,
    ledger: &Ledger,
    missing: u64,
) -> Result<Verdict, TargetError> {
    let count = backend.count().await?;
    let mut checks = vec![
        Check::new("rows = rows loaded", spec.rows as i64, count as i64),
        Check::new(
            "keys read during the run that were not there",
            0,
            missing as i64,
        ),
    ];
    let sets = ledger.sorted();
    let touched = match &sets {
        Some((a, d, f)) => touched(gen, a, d, f),
        None => HashMap::new(),
    };
    let mut rows: Vec<u64> = touched.keys().copied().collect_sorted();
    let untouched = sample(gen.seed(), spec.rows, SAMPLE, &touched);
    rows.extend(&untouched);
    let values = read_back(backend, &rows).await?;
    let t = tally(
        gen,
        &rows,
        &values,
        &touched,
        sets.as_ref().map(|(a, d, _)| (a.as_slice(), d.as_slice())),
    );
    checks.extend([
        Check::new(
            "acknowledged writes missing (the row holds its loaded value)",
            0,
            t.lost as i64,
        ),
        Check::new(
            "values written by no acknowledged or in-doubt transaction",
            0,
            t.foreign as i64,
        ),
        Check::new(
            "values that match no writer of the run",
            0,
            t.corrupt as i64,
        ),
        Check::new("rows gone", 0, t.absent as i64),
    ]);
    let summary = match &sets {
        Some((a, d, f)) => format!(
            "{} rows; {} read back: {} aimed at by {} acknowledged, {} in-doubt and {} failed write transactions, {} untouched",
            group(count),
            group(t.read),
            group(touched.len() as u64),
            group(a.len() as u64),
            group(d.len() as u64),
            group(f.len() as u64),
            group(untouched.len() as u64)
        ),
        None => format!(
            "{} rows; {} sampled, each value traced to a writer of that row; \
             which writes were acknowledged is known to the run's processes, not to a report",
            group(count),
            group(t.read)
        ),
    };
    Ok(Verdict::from_checks(checks, summary))
}

/// The values of `rows`, in order, over several connections at once.
async fn read_back<B: KvBackend>(
    backend: &B,
    rows: &[u64],
) -> Result<Vec<Option<Vec<u8>>>, TargetError> {
    let chunks: Vec<Vec<Key>> = rows
        .chunks(BATCH as usize)
        .map(|c| c.iter().map(|&r| key_of(r)).collect())
        .collect();
    let chunks = Arc::new(chunks);
    let conns = backend.load_connections().clamp(1, chunks.len().max(1));
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..conns {
        let mut conn = backend.connect().await?;
        let chunks = chunks.clone();
        tasks.spawn(async move {
            let mut got = Vec::new();
            for i in (c..chunks.len()).step_by(conns) {
                got.push((i, conn.get_rows(&chunks[i]).await?));
            }
            Ok::<_, TargetError>(got)
        });
    }
    let mut parts: Vec<Option<Vec<Option<Vec<u8>>>>> = vec![None; chunks.len()];
    while let Some(joined) = tasks.join_next().await {
        let got = joined.map_err(|e| TargetError::Prepare {
            target: "kv read back".to_string(),
            reason: e.to_string(),
        })??;
        for (i, values) in got {
            parts[i] = Some(values);
        }
    }
    let mut out = Vec::with_capacity(rows.len());
    for (part, keys) in parts.into_iter().zip(chunks.iter()) {
        let values = part.unwrap_or_default();
        if values.len() != keys.len() {
            return Err(TargetError::Prepare {
                target: "kv read back".to_string(),
                reason: format!(
                    "asked for {} keys, got {} answers",
                    keys.len(),
                    values.len()
                ),
            });
        }
        out.extend(values);
    }
    Ok(out)
}

/// Put the loaded values of `rows` back.
pub(super) async fn put_back<B: KvBackend>(
    backend: &B,
    gen: &Generator,
    rows: &[u64],
) -> Result<(), TargetError> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut conn = backend.connect().await?;
    let mut batch = Rows::default();
    for chunk in rows.chunks(BATCH as usize) {
        batch.clear();
        for &row in chunk {
            batch.push_with(key_of(row), |v| gen.values.write(Origin::Loaded, row, v));
        }
        conn.put_rows(&batch).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_childs_ledger_reaches_its_parent_whole() {
        assert_eq!(runs(&[1, 5, 9, 13, 30]), vec![(1, 4, 4), (30, 1, 1)]);
        assert_eq!(runs(&[]), vec![]);
        let child = Ledger::default();
        child.drove();
        // One driver of stride 4 (a failure at 8), another of stride 4.
        child.put(vec![12, 0, 16, 4], vec![20], vec![8]);
        child.put(vec![1, 5, 9], vec![], vec![]);
        let parent = Ledger::default();
        assert!(parent.sorted().is_none());
        parent.gather(vec![child.share(), None]).unwrap();
        let (acked, doubt, failed) = parent.sorted().unwrap();
        assert_eq!(acked, vec![0, 1, 4, 5, 9, 12, 16]);
        assert_eq!((doubt, failed), (vec![20], vec![8]));
        let bad = serde_json::value::to_raw_value(&Share {
            acked: vec![(0, 1, u64::MAX)],
            ..Share::default()
        })
        .unwrap();
        assert!(Ledger::default().gather(vec![Some(bad)]).is_err());
    }
    use loadrig_spec::KvTest;

    fn setup() -> (Generator, Vec<u64>, Vec<u64>) {
        // Transactions 0..40 acknowledged, 40..45 in doubt, 45..50 failed.
        let mut spec = KvSpec::test(KvTest::Write10);
        spec.rows = 10_000;
        (
            Generator::new(&spec, 3),
            (0..40).collect(),
            (40..45).collect(),
        )
    }

    /// What the store holds after the transactions `landed`, in order.
    fn store(gen: &Generator, landed: &[u64]) -> HashMap<u64, Vec<u8>> {
        let mut m = HashMap::new();
        let mut rows = Vec::new();
        for &i in landed {
            gen.written_rows(i, &mut rows);
            for &r in &rows {
                let mut v = Vec::new();
                gen.values.write(Origin::Written(i), r, &mut v);
                m.insert(r, v);
            }
        }
        m
    }

    fn check(gen: &Generator, a: &[u64], d: &[u64], held: &HashMap<u64, Vec<u8>>) -> Tally {
        let failed: Vec<u64> = (45..50).collect();
        let touched = touched(gen, a, d, &failed);
        let mut rows: Vec<u64> = touched.keys().copied().collect_sorted();
        rows.extend(sample(9, 10_000, 100, &touched));
        let values: Vec<Option<Vec<u8>>> = rows
            .iter()
            .map(|r| {
                Some(held.get(r).cloned().unwrap_or_else(|| {
                    let mut v = Vec::new();
                    gen.values.write(Origin::Loaded, *r, &mut v);
                    v
                }))
            })
            .collect();
        tally(gen, &rows, &values, &touched, Some((a, d)))
    }

    #[test]
    fn in_doubt_writes_may_or_may_not_land() {
        let (gen, a, d) = setup();
        let ok = |t: Tally| t.lost + t.foreign + t.corrupt + t.absent == 0;
        let all: Vec<u64> = (0..45).collect();
        assert!(ok(check(&gen, &a, &d, &store(&gen, &a))));
        assert!(ok(check(&gen, &a, &d, &store(&gen, &all))));
    }

    #[test]
    fn a_lost_acknowledged_write_fails() {
        let (gen, a, d) = setup();
        let t = check(&gen, &a, &d, &store(&gen, &a[..39]));
        assert!(t.lost > 0, "{t:?}");
    }

    #[test]
    fn a_failed_transactions_write_or_a_torn_value_fails() {
        let (gen, a, d) = setup();
        let mut landed = a.clone();
        landed.push(47);
        let t = check(&gen, &a, &d, &store(&gen, &landed));
        assert!(t.foreign > 0, "{t:?}");
        let mut held = store(&gen, &a);
        if let Some(v) = held.values_mut().next() {
            v.pop();
        }
        assert_eq!(check(&gen, &a, &d, &held).corrupt, 1);
    }
}
