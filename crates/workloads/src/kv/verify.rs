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
//! - a row holding the value of an acknowledged write answered before
//!   another acknowledged write of that row was sent: the later write
//!   was lost (an overwrite dropped). Writes that overlapped in time may
//!   have committed in either order, and an in-doubt write may have
//!   landed at any time: either may be the last.

use std::collections::HashMap;
use std::sync::Arc;

use loadrig_engine::rng::Rng;
use loadrig_report::fmt::group;
use loadrig_spec::KvSpec;

use super::data::{key_of, Generator, Origin};
pub use super::ledger::Ledger;
use super::ledger::{Acked, SLACK_US};
use super::{Key, KvBackend, KvConn, Rows};
use crate::{Check, TargetError, Verdict};

/// Rows one `put_rows` carries in the load phase and when values are put
/// back.
pub(super) const BATCH: u64 = 1_000;

/// Rows nobody wrote that are read back too (their loaded value must be
/// there), and all a check without a ledger reads.
const SAMPLE: u64 = 1_000;

impl Ledger {
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

/// What the run's write transactions did to one row.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Touch {
    /// An acknowledged transaction wrote it: its loaded value must be gone.
    acked: bool,
    /// The latest an acknowledged write of it was sent (µs since the
    /// ledger's epoch): a value answered well before is stale.
    last_sent: u64,
}

/// Each row a write transaction aimed at, and what acknowledged ones did
/// to it.
fn touched(gen: &Generator, acked: &[Acked], doubt: &[u64], failed: &[u64]) -> HashMap<u64, Touch> {
    let mut map: HashMap<u64, Touch> = HashMap::new();
    let mut rows = Vec::new();
    for a in acked {
        gen.written_rows(a.index, &mut rows);
        for &r in &rows {
            let t = map.entry(r).or_default();
            t.acked = true;
            t.last_sent = t.last_sent.max(a.times.sent);
        }
    }
    for &i in doubt.iter().chain(failed) {
        gen.written_rows(i, &mut rows);
        for &r in &rows {
            map.entry(r).or_default();
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
    /// Rows holding an acknowledged write answered before another
    /// acknowledged write of the row was sent.
    stale: u64,
    /// Values from a transaction not acknowledged nor in doubt, or one
    /// that did not write that row.
    foreign: u64,
    /// Bytes no writer of this run would have written there.
    corrupt: u64,
    /// Rows not there at all.
    absent: u64,
}

/// The acknowledged and in-doubt transactions, sorted, for [`tally`].
type Sets<'a> = (&'a [Acked], &'a [u64]);

/// The checks on values read back. Without a ledger (`sets` is `None`)
/// only the form is checked: the writer a value names wrote that row.
fn tally(
    gen: &Generator,
    rows: &[u64],
    values: &[Option<Vec<u8>>],
    touched: &HashMap<u64, Touch>,
    sets: Option<Sets<'_>>,
) -> Tally {
    let mut t = Tally::default();
    let (mut scratch, mut written) = (Vec::new(), Vec::new());
    for (&row, value) in rows.iter().zip(values) {
        t.read += 1;
        let Some(value) = value else {
            t.absent += 1;
            continue;
        };
        let touch = touched.get(&row).copied().unwrap_or_default();
        match gen.values.origin(row, value, &mut scratch) {
            None => t.corrupt += 1,
            Some(Origin::Loaded) => t.lost += u64::from(touch.acked),
            Some(Origin::Written(i)) => {
                gen.written_rows(i, &mut written);
                let (known, stale) = match sets {
                    None => (true, false),
                    Some((a, d)) => match a.binary_search_by_key(&i, |a| a.index) {
                        Ok(k) => (
                            true,
                            a[k].times.answered.saturating_add(SLACK_US) < touch.last_sent,
                        ),
                        Err(_) => (d.binary_search(&i).is_ok(), false),
                    },
                };
                if !known || !written.contains(&row) {
                    t.foreign += 1;
                } else if stale {
                    t.stale += 1;
                }
            }
        }
    }
    t
}

/// `n` rows in `0..rows` not in `skip`, from the seed, sorted, distinct.
fn sample(seed: u64, rows: u64, n: u64, skip: &HashMap<u64, Touch>) -> Vec<u64> {
    let mut rng = Rng::stream(seed, 0x6b76_7665_7269_6679);
    let mut out = std::collections::HashSet::new();
    let want = n.min(rows.saturating_sub(skip.len() as u64));
    let mut tries = 0;
    while (out.len() as u64) < want && tries < want * 20 {
        tries += 1;
        let r = rng.below(rows);
        if !skip.contains_key(&r) {
            out.insert(r);
        }
    }
    out.into_iter().collect_sorted()
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
            "acknowledged overwrites missing (the row holds an earlier write's value)",
            0,
            t.stale as i64,
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

    use loadrig_spec::KvTest;

    use super::super::ledger::Times;

    /// Transactions 0..40 acknowledged one after another (each sent 1 ms
    /// after the previous one, answered 0.3 ms later), 40..45 in doubt,
    /// 45..50 failed, over `rows` rows.
    fn setup(rows: u64) -> (Generator, Vec<Acked>, Vec<u64>) {
        let mut spec = KvSpec::test(KvTest::Write10);
        spec.rows = rows;
        let acked = (0..40)
            .map(|i| Acked {
                index: i,
                times: Times {
                    sent: i * 1_000,
                    answered: i * 1_000 + 300,
                },
            })
            .collect();
        (Generator::new(&spec, 3), acked, (40..45).collect())
    }

    fn indices(a: &[Acked]) -> Vec<u64> {
        a.iter().map(|a| a.index).collect()
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

    fn check(gen: &Generator, a: &[Acked], d: &[u64], held: &HashMap<u64, Vec<u8>>) -> Tally {
        let rows_loaded = 10_000;
        let failed: Vec<u64> = (45..50).collect();
        let touched = touched(gen, a, d, &failed);
        let mut rows: Vec<u64> = touched.keys().copied().collect_sorted();
        rows.extend(sample(9, rows_loaded, 100, &touched));
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

    fn clean(t: &Tally) -> bool {
        t.lost + t.stale + t.foreign + t.corrupt + t.absent == 0
    }

    #[test]
    fn in_doubt_writes_may_or_may_not_land() {
        let (gen, a, d) = setup(10_000);
        let all: Vec<u64> = (0..45).collect();
        assert!(clean(&check(&gen, &a, &d, &store(&gen, &indices(&a)))));
        assert!(clean(&check(&gen, &a, &d, &store(&gen, &all))));
        // In doubt, last of all: it may have landed after everything.
        let mut late = vec![42];
        late.extend(indices(&a));
        late.push(42);
        assert!(clean(&check(&gen, &a, &d, &store(&gen, &late))));
    }

    #[test]
    fn a_lost_acknowledged_write_fails() {
        let (gen, a, d) = setup(10_000);
        let t = check(&gen, &a, &d, &store(&gen, &indices(&a)[..39]));
        assert!(t.lost > 0, "{t:?}");
    }

    #[test]
    fn a_dropped_overwrite_fails_unless_the_writes_overlapped() {
        // 50 rows, 400 writes: every row written many times.
        let (gen, mut a, d) = setup(50);
        let all = indices(&a);
        assert!(clean(&check(&gen, &a, &d, &store(&gen, &all))));
        let dropped: Vec<u64> = all.iter().copied().filter(|&i| i != 38).collect();
        let t = check(&gen, &a, &d, &store(&gen, &dropped));
        assert!(t.stale > 0 && t.lost + t.foreign == 0, "{t:?}");
        // Reversed order is wrong for writes one after another...
        let reversed: Vec<u64> = all.iter().rev().copied().collect();
        assert!(check(&gen, &a, &d, &store(&gen, &reversed)).stale > 0);
        // ... and right for writes all in flight at once.
        for x in &mut a {
            x.times = Times {
                sent: 0,
                answered: 100_000,
            };
        }
        assert!(clean(&check(&gen, &a, &d, &store(&gen, &reversed))));
    }

    #[test]
    fn rows_gone_are_counted_and_every_row_read() {
        let (gen, a, d) = setup(10_000);
        // The rows the acknowledged transactions wrote, each holding its
        // last writer's value, two of them gone.
        let touched = touched(&gen, &a, &[], &[]);
        let held = store(&gen, &indices(&a));
        let rows: Vec<u64> = touched.keys().copied().collect_sorted();
        let mut values: Vec<Option<Vec<u8>>> = rows.iter().map(|r| held.get(r).cloned()).collect();
        values[0] = None;
        values[1] = None;
        let t = tally(&gen, &rows, &values, &touched, Some((&a, &d)));
        assert_eq!((t.read, t.absent), (rows.len() as u64, 2), "{t:?}");
    }

    /// Stale only when the value's writer was answered more than
    /// [`SLACK_US`] before the row's last acknowledged write was sent.
    #[test]
    fn a_write_within_the_slack_of_the_last_may_be_last() {
        let (gen, a, d) = setup(10_000);
        let w = a[3];
        let mut rows = Vec::new();
        gen.written_rows(w.index, &mut rows);
        let row = rows[0];
        let mut value = Vec::new();
        gen.values.write(Origin::Written(w.index), row, &mut value);
        let stale = |last_sent: u64| {
            let touch = Touch {
                acked: true,
                last_sent,
            };
            let touched = HashMap::from([(row, touch)]);
            let t = tally(
                &gen,
                &[row],
                &[Some(value.clone())],
                &touched,
                Some((&a, &d)),
            );
            t.stale
        };
        let edge = w.times.answered + SLACK_US;
        assert_eq!(stale(edge), 0);
        assert_eq!(stale(edge + 1), 1);
    }

    /// The untouched rows read back: as many as asked where there are, none
    /// skipped, sorted, distinct, the same for the same seed.
    #[test]
    fn the_sample_avoids_the_touched_rows() {
        let skip: HashMap<u64, Touch> = (0..500).map(|r| (r, Touch::default())).collect();
        let s = sample(7, 1_000, 100, &skip);
        assert_eq!(s.len(), 100);
        assert!(s.iter().all(|r| (500..1_000).contains(r)), "{s:?}");
        assert!(s.windows(2).all(|w| w[0] < w[1]), "{s:?}");
        assert_eq!(s, sample(7, 1_000, 100, &skip));
        // Fewer rows left than asked: every one of them.
        let few: HashMap<u64, Touch> = (0..5).map(|r| (r, Touch::default())).collect();
        assert_eq!(sample(7, 10, 100, &few), vec![5, 6, 7, 8, 9]);
    }

    #[test]
    fn a_failed_transactions_write_or_a_torn_value_fails() {
        let (gen, a, d) = setup(10_000);
        let mut landed = indices(&a);
        landed.push(47);
        let t = check(&gen, &a, &d, &store(&gen, &landed));
        assert!(t.foreign > 0, "{t:?}");
        let mut held = store(&gen, &indices(&a));
        if let Some(v) = held.values_mut().next() {
            v.pop();
        }
        assert_eq!(check(&gen, &a, &d, &held).corrupt, 1);
    }
}
