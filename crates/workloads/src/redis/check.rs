//! What the redis workload checks after a run, and how it cleans up.
//!
//! Each test touches one structure family in the workload's database:
//! `key:*` strings (SET, MSET), `counter:*` (INCR), `mylist` (LPUSH,
//! RPUSH, LPOP, RPOP, the LRANGE prefill), `myset` (SADD, SPOP), `myhash`
//! (HSET), `myzset` (ZADD, ZPOPMIN), `mystream` (XADD). The baseline
//! records the size of every family the run touches; verification asks
//! the servers again and compares the change with what the client
//! counted from the replies (SADD's 1 or 0, a pop's value or nil, ...).
//! A command whose connection failed before its reply is in doubt, and
//! widens the check by one. Nothing is created at prepare; `finish`
//! removes the families the run touched.

use loadrig_metrics::{ErrorKind, Snapshot};
use loadrig_spec::{RedisSpec, RedisTest};
use serde::{Deserialize, Serialize};

use super::command::{self, put_digits};
use super::driver::test_seed;
use super::read::{self, scan, Lacks, Reader};
use super::{RedisBackend, RespAdmin, Value};
use crate::{Check, Results, TargetError, Verdict};
use loadrig_engine::{rng::Rng, WARMUP_INDEX_BASE};
use loadrig_report::fmt::{group, group_i};

/// Where a test's writes (or pops) land.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Strings,
    Counters,
    List,
    Set,
    Hash,
    Zset,
    Stream,
}

fn family(test: RedisTest) -> Option<Family> {
    match test {
        RedisTest::Set | RedisTest::Mset => Some(Family::Strings),
        RedisTest::Incr => Some(Family::Counters),
        RedisTest::Lpush
        | RedisTest::Rpush
        | RedisTest::Lpop
        | RedisTest::Rpop
        | RedisTest::LrangePrefill => Some(Family::List),
        RedisTest::Sadd | RedisTest::Spop => Some(Family::Set),
        RedisTest::Hset => Some(Family::Hash),
        RedisTest::Zadd | RedisTest::Zpopmin => Some(Family::Zset),
        RedisTest::Xadd => Some(Family::Stream),
        _ => None,
    }
}

fn touches(spec: &RedisSpec, f: Family) -> bool {
    spec.tests.iter().any(|t| family(*t) == Some(f))
}

/// The sizes of the families a run touches, summed over the servers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Sum of the `counter:*` values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counters: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mylist: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub myset: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub myhash: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub myzset: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mystream: Option<i64>,
    /// What could not be read, by family (the command the server refused).
    #[serde(default, skip_serializing_if = "Lacks::is_empty")]
    pub lacks: Lacks,
}

/// Where the keys of `prefix` (`key:`, `counter:`) are: the one
/// `__rand_int__` key without `-r`; with it, the 12-digit names, found by
/// SCAN with a pattern that matches nothing else (so that a run in a
/// database shared with other data reads and deletes only its own keys).
/// Tagged keys (on a cluster) are found by SCAN either way, the pattern
/// taking any three-byte tag: `key:{???}:...`.
fn drawn(spec: &RedisSpec, prefix: &str) -> Result<Vec<u8>, Vec<u8>> {
    let tag = if spec.tagged { "{???}:" } else { "" };
    match spec.keyspace {
        None if !spec.tagged => Ok(format!("{prefix}{}", "__rand_int__").into_bytes()),
        None => Err(format!("{prefix}{tag}__rand_int__").into_bytes()),
        Some(_) => Err(format!("{prefix}{tag}{}", "[0-9]".repeat(12)).into_bytes()),
    }
}

/// The keys of `prefix` present now; `None` when the server refuses SCAN.
async fn present<A: RespAdmin>(
    r: &mut Reader<A>,
    spec: &RedisSpec,
    prefix: &str,
) -> Result<Option<Vec<Vec<u8>>>, TargetError> {
    Ok(match drawn(spec, prefix) {
        Ok(key) => Some(vec![key]),
        Err(pattern) => scan(&mut r.a, &pattern)
            .await?
            .map(|k| k.into_iter().collect()),
    })
}

/// The sizes of the families `spec`'s tests touch, now; what the servers
/// refused to tell is in `lacks` (and its field stays `None`).
pub(super) async fn measure<B: RedisBackend>(
    backend: &B,
    spec: &RedisSpec,
) -> Result<Counts, TargetError> {
    let mut c = Counts::default();
    let sized: [(Family, &str, &str); 5] = [
        (Family::List, "LLEN", "mylist"),
        (Family::Set, "SCARD", "myset"),
        (Family::Hash, "HLEN", "myhash"),
        (Family::Zset, "ZCARD", "myzset"),
        (Family::Stream, "XLEN", "mystream"),
    ];
    let sized_touched = sized.iter().any(|(f, _, _)| touches(spec, *f));
    if !sized_touched && !touches(spec, Family::Counters) {
        return Ok(c);
    }
    let mut lacks = Lacks::new();
    let mut counters = Some(0i64);
    let mut sizes = [Some(0i64); 5];
    for s in 0..backend.servers() {
        let mut r = Reader::new(backend.admin(s, spec.db()).await?);
        if touches(spec, Family::Counters) {
            let values = match present(&mut r, spec, "counter:").await? {
                Some(keys) => r.values(&keys).await?,
                None => Err("SCAN"),
            };
            match values {
                Ok(v) => {
                    let sum: i64 = v
                        .into_iter()
                        .flatten()
                        .filter_map(|v| Value::Bulk(Some(v)).integer())
                        .sum();
                    counters = counters.map(|c| c + sum);
                }
                Err(verb) => {
                    lacks.insert("counter:*".into(), verb.into());
                    counters = None;
                }
            }
        }
        for (i, (f, verb, key)) in sized.iter().enumerate() {
            if !touches(spec, *f) {
                continue;
            }
            match r.size(verb, key).await? {
                Some(n) => sizes[i] = sizes[i].map(|s| s + n),
                None => {
                    lacks.insert(key.to_string(), verb.to_string());
                    sizes[i] = None;
                }
            }
        }
    }
    let touched = |f: Family, v: Option<i64>| if touches(spec, f) { v } else { None };
    c.counters = touched(Family::Counters, counters);
    c.mylist = touched(Family::List, sizes[0]);
    c.myset = touched(Family::Set, sizes[1]);
    c.myhash = touched(Family::Hash, sizes[2]);
    c.myzset = touched(Family::Zset, sizes[3]);
    c.mystream = touched(Family::Stream, sizes[4]);
    c.lacks = lacks;
    Ok(c)
}

/// What the client counted, per test.
struct Tally<'a> {
    spec: &'a RedisSpec,
    s: &'a Snapshot,
}

impl Tally<'_> {
    fn kind(&self, t: RedisTest) -> Option<&loadrig_metrics::KindStats> {
        let i = self.spec.tests.iter().position(|x| *x == t)?;
        self.s.kinds.get(i)
    }

    /// The engine phase that ran test `t`: the tests run one after the
    /// other, each its own phase numbered by its place.
    fn phase(&self, t: RedisTest) -> Option<u32> {
        let i = self.spec.tests.iter().position(|x| *x == t)?;
        u32::try_from(i).ok()
    }

    fn ok(&self, t: RedisTest) -> i64 {
        self.kind(t).map_or(0, |k| k.ok as i64)
    }

    /// Sent, and the connection failed (or the reply was unreadable)
    /// before it was known whether it ran.
    fn doubt(&self, t: RedisTest) -> i64 {
        self.spec
            .tests
            .iter()
            .position(|x| *x == t)
            .map_or(0, |i| self.s.in_doubt_of(i) as i64)
    }

    fn domain(&self, d: u16) -> i64 {
        self.s.domains.get(usize::from(d)).copied().unwrap_or(0) as i64
    }
}

/// What the check reads of the run it checks.
pub(super) struct Checked<'a, B> {
    pub backend: &'a B,
    pub spec: &'a RedisSpec,
    pub seed: u64,
    /// The engine's connections: operation `i` is worker `i mod
    /// connections`'s (the engine strides the indices so).
    pub connections: u64,
    /// The value every write sent (redis-benchmark's bytes).
    pub data: &'a [u8],
}

/// Largest number of keys drawn for the exact check of `key:*`.
const MAX_EXACT_DRAWS: u64 = 2_000_000;

pub(super) async fn verify<B: RedisBackend>(
    run: &Checked<'_, B>,
    before: &Counts,
    counted: &Snapshot,
) -> Result<Verdict, TargetError> {
    let spec = run.spec;
    let t = Tally { spec, s: counted };
    let after = measure(run.backend, spec).await?;
    // A family the server would not size before or after is not checked.
    let mut lacks = before.lacks.clone();
    lacks.extend(after.lacks.clone());
    let mut checks = Vec::new();
    let mut said = Vec::new();
    let delta = |a: Option<i64>, b: Option<i64>| a.unwrap_or(0) - b.unwrap_or(0);
    use RedisTest as T;
    if touches(spec, Family::Counters) && !lacks.contains_key("counter:*") {
        let d = delta(after.counters, before.counters);
        checks.push(
            Check::new(
                "counter:* sum change = INCRs acknowledged",
                t.ok(T::Incr),
                d,
            )
            .in_doubt(t.doubt(T::Incr)),
        );
        said.push(format!("counters +{}", group_i(d)));
    }
    let mut sized = |f: Family,
                     name: &str,
                     adds: &[(T, i64)],
                     removes: &[(T, i64)],
                     a: Option<i64>,
                     b: Option<i64>| {
        if !touches(spec, f) || lacks.contains_key(name) {
            return;
        }
        let added: i64 = adds.iter().map(|x| x.1).sum();
        let removed: i64 = removes.iter().map(|x| x.1).sum();
        let add_doubt: i64 = adds.iter().map(|x| t.doubt(x.0)).sum();
        let rem_doubt: i64 = removes.iter().map(|x| t.doubt(x.0)).sum();
        let d = delta(a, b);
        checks.push(
            Check::new(
                format!("{name} size change = added - removed"),
                added - removed - rem_doubt,
                d,
            )
            .in_doubt(add_doubt + rem_doubt),
        );
        said.push(format!(
            "{name} {}{}",
            if d >= 0 { "+" } else { "" },
            group_i(d)
        ));
    };
    sized(
        Family::List,
        "mylist",
        &[
            (T::Lpush, t.ok(T::Lpush)),
            (T::Rpush, t.ok(T::Rpush)),
            (T::LrangePrefill, t.ok(T::LrangePrefill)),
        ],
        &[
            (T::Lpop, t.domain(command::LPOP_HITS)),
            (T::Rpop, t.domain(command::RPOP_HITS)),
        ],
        after.mylist,
        before.mylist,
    );
    sized(
        Family::Set,
        "myset",
        &[(T::Sadd, t.domain(command::SADD_ADDED))],
        &[(T::Spop, t.domain(command::SPOP_HITS))],
        after.myset,
        before.myset,
    );
    sized(
        Family::Hash,
        "myhash",
        &[(T::Hset, t.domain(command::HSET_ADDED))],
        &[],
        after.myhash,
        before.myhash,
    );
    sized(
        Family::Zset,
        "myzset",
        &[(T::Zadd, t.domain(command::ZADD_ADDED))],
        &[(T::Zpopmin, t.domain(command::ZPOPMIN_HITS))],
        after.myzset,
        before.myzset,
    );
    sized(
        Family::Stream,
        "mystream",
        &[(T::Xadd, t.ok(T::Xadd))],
        &[],
        after.mystream,
        before.mystream,
    );
    if touches(spec, Family::Strings) {
        strings(run, &t, &mut checks, &mut said, &mut lacks).await?;
    }
    let reads = [T::Get, T::Lpop, T::Rpop];
    if spec.tests.iter().any(|x| reads.contains(x)) {
        let wrong: i64 = reads
            .iter()
            .filter_map(|r| t.kind(*r))
            .map(|k| k.errors.get(ErrorKind::Verification) as i64)
            .sum();
        checks.push(Check::new(
            "GET/LPOP/RPOP replies with a value this workload does not write",
            0,
            wrong,
        ));
        said.push("every value read was the data written".to_string());
    }
    if checks.is_empty() && !lacks.is_empty() {
        // Nothing could be read: neither passed nor failed (exit 0).
        return Ok(Verdict {
            passed: None,
            summary: read::not_verified(&lacks),
            checks,
        });
    }
    if !lacks.is_empty() {
        said.push(read::unchecked(&lacks));
    }
    if checks.is_empty() {
        return Ok(Verdict::skipped(if spec.tests.contains(&T::Command) {
            "a command of your own: nothing known to check"
        } else {
            "these tests write nothing"
        }));
    }
    Ok(Verdict::from_checks(checks, said.join(", ")))
}

/// `key:*` after SET/MSET. Without `-r` every write goes to
/// `key:__rand_int__`: it must hold the data. With `-r` the keys are
/// known from the indices the run issued, in every mode (each key a pure
/// function of seed and index, [`exact_writes`]): every one must be there,
/// holding the data, except that a write that failed may have left its
/// key out (a server killed and restarted loses far more). Counts that
/// carry no spans (an old report) have only the keys found checked.
async fn strings<B: RedisBackend>(
    run: &Checked<'_, B>,
    t: &Tally<'_>,
    checks: &mut Vec<Check>,
    said: &mut Vec<String>,
    lacks: &mut Lacks,
) -> Result<(), TargetError> {
    use RedisTest as T;
    let spec = run.spec;
    let writes = t.ok(T::Set) + t.ok(T::Mset);
    if writes == 0 {
        return Ok(());
    }
    // Keys a failed write may have left out.
    let mut unsure = 0i64;
    let keys: Vec<Vec<u8>> = match (drawn(spec, "key:"), spec.keyspace) {
        (Ok(key), _) => vec![key],
        (Err(pattern), Some(r)) => match exact_writes(run, t, r) {
            Some((written, failed)) if spec.tagged => {
                let w = Written {
                    pairs: &written,
                    failed,
                };
                return tagged(run, t, w, &pattern, checks, said, lacks).await;
            }
            Some((written, failed)) => {
                unsure = failed;
                numbers(&written)
                    .into_iter()
                    .map(|n| {
                        let mut k = b"key:000000000000".to_vec();
                        put_digits(&mut k[4..], n);
                        k
                    })
                    .collect()
            }
            None => return found_keys(run, writes, t, checks, said, lacks).await,
        },
        (Err(_), None) if spec.tagged => {
            return found_keys(run, writes, t, checks, said, lacks).await
        }
        (Err(_), None) => return Ok(()),
    };
    let data: &[u8] = run.data;
    // A key may be on any of the servers; it must be on one, and hold the
    // data wherever it is.
    let mut found = vec![false; keys.len()];
    let mut wrong = 0i64;
    let mut by_key = false;
    for s in 0..run.backend.servers() {
        let mut r = Reader::new(run.backend.admin(s, spec.db()).await?);
        let read = r
            .each(&keys, |i, v| {
                if let Some(v) = v {
                    found[i] = true;
                    wrong += i64::from(v != data);
                }
            })
            .await?;
        if let Err(verb) = read {
            lacks.insert("key:*".into(), verb.into());
            return Ok(());
        }
        by_key |= r.by_key;
    }
    let missing = found.iter().filter(|f| !**f).count() as i64;
    let how = if by_key {
        " (read by GET: MGET refused)"
    } else {
        ""
    };
    written_checks(checks, said, keys.len(), (missing, unsure), wrong, how);
    Ok(())
}

/// One key a run by count wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Write {
    /// The engine connection that wrote it (on a cluster its master is
    /// `worker mod masters`).
    worker: u64,
    /// The draw that chose its command's cluster tag.
    tag: u64,
    /// Its number.
    number: u64,
}

/// What a run by count wrote, as [`exact_writes`] works it out.
struct Written<'a> {
    pairs: &'a [Write],
    /// Writes that failed: each may have left its key out.
    failed: i64,
}

/// The verdict's checks and line for keys whose names were known:
/// `missing` of `written`, of which `unsure` a failed write may explain.
fn written_checks(
    checks: &mut Vec<Check>,
    said: &mut Vec<String>,
    written: usize,
    (missing, unsure): (i64, i64),
    wrong: i64,
    how: &str,
) {
    checks.push(Check::new("keys written (SET/MSET) and missing", 0, missing).in_doubt(unsure));
    checks.push(Check::new("keys written holding other data", 0, wrong));
    let there = if missing == 0 {
        "all there".to_string()
    } else {
        format!(
            "{} missing (failed writes may explain {})",
            group(missing as u64),
            group(unsure as u64)
        )
    };
    said.push(format!(
        "{} key:* written, {there}{how}",
        group(written as u64)
    ));
}

/// `key:{tag}:...` (on a cluster, docs/guides/redis-cluster.md) after a run
/// whose writes are known. An engine connection tags a command's keys
/// with a tag of its master's slots, chosen by the command's first draw;
/// operation `i` is connection `i mod connections`'s and its master that
/// mod the masters: so each write has one name, known from the slot map,
/// and those are read (MGET, one per slot, pipelined per master). Every
/// number written must be found under one of its names, every name there
/// holding the data. A number found under none (its key lost, or
/// tagged from a map that has changed since: a reshard) is looked for
/// under any tag by SCAN over every master; so is every number when the
/// run followed redirects (the map moved while it ran, so connections may
/// have tagged from different maps). The keyspace is walked only then.
async fn tagged<B: RedisBackend>(
    run: &Checked<'_, B>,
    t: &Tally<'_>,
    Written {
        pairs: written,
        failed,
    }: Written<'_>,
    pattern: &[u8],
    checks: &mut Vec<Check>,
    said: &mut Vec<String>,
    lacks: &mut Lacks,
) -> Result<(), TargetError> {
    let data: &[u8] = run.data;
    let mut r = Reader::new(run.backend.admin(0, run.spec.db()).await?);
    let tags = r.a.master_tags();
    let moved = t.domain(command::MOVED) + t.domain(command::ASK) > 0;
    let numbers = numbers(written);
    // Found under some name: `found[i]` for `numbers[i]`.
    let mut found = vec![false; numbers.len()];
    let mut wrong = 0i64;
    if !moved {
        let names = candidates(written, &tags);
        let see = tally(&names, &numbers, &mut found, &mut wrong, data);
        if let Err(verb) = r.each(&names, see).await? {
            lacks.insert("key:*".into(), verb.into());
            return Ok(());
        }
    }
    let unfound: Vec<u64> = numbers
        .iter()
        .zip(&found)
        .filter(|(_, f)| !**f)
        .map(|(n, _)| *n)
        .collect();
    if !unfound.is_empty() {
        let Some(names) = scan(&mut r.a, pattern).await? else {
            lacks.insert("key:*".into(), "SCAN".into());
            return Ok(());
        };
        let names: Vec<Vec<u8>> = names
            .into_iter()
            .filter(|k| number_of(k).is_some_and(|n| unfound.binary_search(&n).is_ok()))
            .collect();
        let see = tally(&names, &numbers, &mut found, &mut wrong, data);
        if let Err(verb) = r.each(&names, see).await? {
            lacks.insert("key:*".into(), verb.into());
            return Ok(());
        }
    }
    let missing = found.iter().filter(|f| !**f).count() as i64;
    let how = match (unfound.is_empty(), r.by_key) {
        (true, false) => String::new(),
        (true, true) => " (read by GET: MGET refused)".into(),
        (false, by_key) => format!(
            " ({} looked for by SCAN{})",
            group(unfound.len() as u64),
            if by_key {
                ", read by GET: MGET refused"
            } else {
                ""
            }
        ),
    };
    written_checks(checks, said, numbers.len(), (missing, failed), wrong, &how);
    Ok(())
}

/// What reading `names` finds, noted as it is read: the number of each
/// name there marked in `found` (by its place in `numbers`), and a value
/// other than `data` counted in `wrong`.
fn tally<'a>(
    names: &'a [Vec<u8>],
    numbers: &'a [u64],
    found: &'a mut [bool],
    wrong: &'a mut i64,
    data: &'a [u8],
) -> impl FnMut(usize, Option<&[u8]>) + 'a {
    move |i, v| {
        let (Some(v), Some(n)) = (v, names.get(i).and_then(|k| number_of(k))) else {
            return;
        };
        if let Ok(k) = numbers.binary_search(&n) {
            found[k] = true;
        }
        *wrong += i64::from(v != data);
    }
}

/// Each write's name, `key:{tag}:NNNNNNNNNNNN` with the tag its
/// worker's master (`worker mod masters`, as the cluster target deals
/// them) chose for its draw; in slot order, so that a batch of MGETs
/// spans few slots.
fn candidates(written: &[Write], tags: &[Vec<[u8; 3]>]) -> Vec<Vec<u8>> {
    let mut named: Vec<(usize, usize, u64)> = Vec::with_capacity(written.len());
    for w in written {
        let Some(m) = w.worker.checked_rem(tags.len() as u64) else {
            continue;
        };
        let m = m as usize;
        let Some(i) = tags
            .get(m)
            .and_then(|mine| w.tag.checked_rem(mine.len() as u64))
        else {
            continue;
        };
        named.push((m, i as usize, w.number));
    }
    named.sort_unstable();
    named.dedup();
    named
        .into_iter()
        .filter_map(|(m, i, n)| {
            let tag = tags.get(m)?.get(i)?;
            let mut k = b"key:{???}:000000000000".to_vec();
            k[5..8].copy_from_slice(tag);
            put_digits(&mut k[10..], n);
            Some(k)
        })
        .collect()
}

/// `key:*` when which keys were written is not known (a report written
/// before the spans were kept): the ones present are found by SCAN. At
/// least one must be there when any write was acknowledged (a server that
/// keeps nothing fails), no more than the writes issued, and every one must
/// hold the data.
async fn found_keys<B: RedisBackend>(
    run: &Checked<'_, B>,
    writes: i64,
    t: &Tally<'_>,
    checks: &mut Vec<Check>,
    said: &mut Vec<String>,
    lacks: &mut Lacks,
) -> Result<(), TargetError> {
    use RedisTest as T;
    let spec = run.spec;
    let data: &[u8] = run.data;
    let mut present_n = 0i64;
    let mut wrong = 0i64;
    for s in 0..run.backend.servers() {
        let mut r = Reader::new(run.backend.admin(s, spec.db()).await?);
        let values = match present(&mut r, spec, "key:").await? {
            Some(keys) => r.values(&keys).await?,
            None => Err("SCAN"),
        };
        let values = match values {
            Ok(v) => v,
            Err(verb) => {
                lacks.insert("key:*".into(), verb.into());
                return Ok(());
            }
        };
        present_n += values.len() as i64;
        wrong += values
            .iter()
            .filter(|v| v.as_deref().is_some_and(|v| v != data))
            .count() as i64;
    }
    // MSET writes ten keys a call.
    let issued = writes + t.doubt(T::Set) + 10 * t.doubt(T::Mset);
    checks.push(Check::new(
        "key:* present after acknowledged SET/MSET (at least one)",
        1,
        present_n.min(1),
    ));
    checks.push(Check::new(
        "key:* present beyond the keys the writes could make",
        0,
        (present_n - issued.max(t.ok(T::Set) + 10 * t.ok(T::Mset))).max(0),
    ));
    checks.push(Check::new("keys written holding other data", 0, wrong));
    said.push(format!(
        "{} key:* found (which ones were written is not known: a report without the indices issued), all holding the data",
        group(present_n as u64)
    ));
    Ok(())
}

/// The number in a key's last twelve bytes (`key:...000000000042`).
fn number_of(key: &[u8]) -> Option<u64> {
    let digits = key.get(key.len().checked_sub(command::RAND_DIGITS)?..)?;
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// Every key SET and MSET wrote, recomputed from the indices the run
/// issued (the counted snapshot's spans: every mode, by count or by time,
/// warm-up and every process included), as (the worker that issued it,
/// the draw that chose its command's cluster tag, its number): the tag is
/// drawn from the command's first key, so MSET's ten keys share their
/// first's; an index's worker is its position in the stride modulo the
/// connections. In the order drawn, a key drawn twice listed twice. Past
/// [`MAX_EXACT_DRAWS`] an even sample of the indices (every `step`-th of
/// each worker's). With how many writes failed (in doubt, refused,
/// dropped: each may have left its key out). `None` when the counts
/// carry no spans (a report written before they were kept).
fn exact_writes<B: RedisBackend>(
    run: &Checked<'_, B>,
    t: &Tally<'_>,
    r: u64,
) -> Option<(Vec<Write>, i64)> {
    let mut draws = 0u64;
    let mut failed = 0u64;
    let mut runs = Vec::new();
    for (test, per) in [(RedisTest::Set, 1u64), (RedisTest::Mset, 10)] {
        let (Some(k), Some(phase)) = (t.kind(test), t.phase(test)) else {
            continue;
        };
        let issued = loadrig_metrics::issued(&t.s.spans, phase);
        if issued == 0 && k.ok > 0 {
            return None;
        }
        failed = failed.saturating_add(k.count().saturating_sub(k.ok).saturating_mul(per));
        draws = draws.saturating_add(issued.saturating_mul(per));
        runs.push((test, per, phase));
    }
    let step = draws.div_ceil(MAX_EXACT_DRAWS).max(1);
    let mut written = Vec::with_capacity(usize::try_from(draws / step).unwrap_or(0));
    for (test, per, phase) in runs {
        let seed = test_seed(run.seed, test);
        for span in t.s.spans.iter().filter(|s| s.phase == phase) {
            for k in (0..span.count).step_by(usize::try_from(step).unwrap_or(usize::MAX)) {
                let i = span.index(k);
                let mut rng = Rng::for_op(seed, i);
                let mut first = None;
                let worker = (i & (WARMUP_INDEX_BASE - 1))
                    .checked_rem(run.connections)
                    .unwrap_or(0);
                for _ in 0..per {
                    let d = rng.below(r);
                    let tag = *first.get_or_insert(d);
                    written.push(Write {
                        worker,
                        tag,
                        number: d % 1_000_000_000_000,
                    });
                }
            }
        }
    }
    Some((written, i64::try_from(failed).unwrap_or(i64::MAX)))
}

/// The numbers of `written`, each once, in order.
fn numbers(written: &[Write]) -> Vec<u64> {
    let mut n: Vec<u64> = written.iter().map(|w| w.number).collect();
    n.sort_unstable();
    n.dedup();
    n
}

/// Hits, misses and additions, per test that has them.
pub(super) fn results(spec: &RedisSpec, counted: &Snapshot) -> Results {
    let t = Tally { spec, s: counted };
    let mut lines = Vec::new();
    let pair = |test: RedisTest, a: u16, b: u16, an: &str, bn: &str, lines: &mut Vec<String>| {
        if spec.tests.contains(&test) {
            lines.push(format!(
                "{}: {} {an}, {} {bn}",
                test.title(),
                group(t.domain(a) as u64),
                group(t.domain(b) as u64)
            ));
        }
    };
    use command as c;
    pair(
        RedisTest::Get,
        c::GET_HITS,
        c::GET_MISSES,
        "hits",
        "misses",
        &mut lines,
    );
    pair(
        RedisTest::Lpop,
        c::LPOP_HITS,
        c::LPOP_MISSES,
        "hits",
        "misses",
        &mut lines,
    );
    pair(
        RedisTest::Rpop,
        c::RPOP_HITS,
        c::RPOP_MISSES,
        "hits",
        "misses",
        &mut lines,
    );
    pair(
        RedisTest::Spop,
        c::SPOP_HITS,
        c::SPOP_MISSES,
        "hits",
        "misses",
        &mut lines,
    );
    pair(
        RedisTest::Zpopmin,
        c::ZPOPMIN_HITS,
        c::ZPOPMIN_MISSES,
        "hits",
        "misses",
        &mut lines,
    );
    for (test, d) in [
        (RedisTest::Sadd, c::SADD_ADDED),
        (RedisTest::Hset, c::HSET_ADDED),
        (RedisTest::Zadd, c::ZADD_ADDED),
    ] {
        if spec.tests.contains(&test) {
            let added = t.domain(d);
            lines.push(format!(
                "{}: {} new, {} already there",
                test.title(),
                group(added as u64),
                group((t.ok(test) - added).max(0) as u64)
            ));
        }
    }
    lines.extend(redirects(counted));
    Results {
        lines,
        ..Results::default()
    }
}

/// `cluster redirects: 12 MOVED, 3 ASK`, when a cluster connection
/// followed any.
pub(super) fn redirects(counted: &Snapshot) -> Option<String> {
    let d = |i: u16| counted.domains.get(usize::from(i)).copied().unwrap_or(0);
    let (moved, ask) = (d(command::MOVED), d(command::ASK));
    (moved + ask > 0).then(|| {
        format!(
            "cluster redirects followed: {} MOVED, {} ASK",
            group(moved),
            group(ask)
        )
    })
}

/// Remove what the run touched: its `key:` and `counter:` names (the one
/// `__rand_int__` key, or the 12-digit ones by SCAN), the fixed structures
/// by name. Nothing else matches, so this is safe in a database shared
/// with other data. A server that refuses SCAN or DEL keeps those keys.
pub(super) async fn clean<B: RedisBackend>(
    backend: &B,
    spec: &RedisSpec,
) -> Result<(), TargetError> {
    for s in 0..backend.servers() {
        let mut r = Reader::new(backend.admin(s, spec.db()).await?);
        let mut doomed: Vec<Vec<u8>> = Vec::new();
        for (f, prefix) in [(Family::Strings, "key:"), (Family::Counters, "counter:")] {
            if touches(spec, f) {
                doomed.extend(present(&mut r, spec, prefix).await?.unwrap_or_default());
            }
        }
        for (f, key) in [
            (Family::List, "mylist"),
            (Family::Set, "myset"),
            (Family::Hash, "myhash"),
            (Family::Zset, "myzset"),
            (Family::Stream, "mystream"),
        ] {
            if touches(spec, f) {
                doomed.push(key.as_bytes().to_vec());
            }
        }
        r.delete(&doomed).await?;
    }
    Ok(())
}
