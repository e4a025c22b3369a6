//! What the memcache workload checks after a run, and how it cleans up.
//!
//! memcached counts sets and get hits and misses (key by key) itself: the
//! changes of `cmd_set`, `get_hits` and `get_misses` over the run, summed
//! over the servers, must be what the client counted, up to the requests
//! in doubt (sent, and the connection failed before the answer). This
//! holds when the run is the only client of those servers; memcached has
//! no per-key-prefix counters to tell another client's traffic apart.
//! Then a sample of the keys the run stored is read back (after the
//! counters, which the reads would move): each one present must hold its
//! value exactly; absent ones must be explained by evictions (or by sets
//! that failed). Which keys were stored is recomputed from the indices
//! the run issued, in every mode (by count or by time, with warm-up, over
//! processes); only a report without them has its sample drawn from the
//! whole windows, judging just the values present.
//!
//! Clean-up deletes every key the run may have written, on every server.
//! `flush_all` is not used: the servers may hold other data.

use std::collections::HashMap;
use std::time::Duration;

use bytes::Buf;
use loadrig_metrics::{ErrorKind, Snapshot, Span};
use loadrig_report::fmt::group;
use loadrig_spec::Stop;
use loadrig_wire::kv::memcache::text::{self, Response};
use loadrig_wire::kv::memcache::McError;
use serde::{Deserialize, Serialize};

use super::load::{Load, GET, GET_HITS, GET_MISSES, SET};
use super::MemcacheBackend;
use crate::stream::ByteStream;
use crate::{Check, Results, TargetError, Verdict};

/// How long one cold-path exchange may take.
const COLD_TIMEOUT: Duration = Duration::from_secs(120);
/// Most keys read back.
const SAMPLE: u64 = 10_000;
/// Keys per read-back get.
const BATCH: usize = 100;
/// Deletes sent before waiting for the server to catch up.
const DELETES: usize = 10_000;

/// memcached's counters, summed over the servers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    pub cmd_set: u64,
    pub get_hits: u64,
    pub get_misses: u64,
    pub evictions: u64,
}

fn failed(label: &str, what: &str, why: impl std::fmt::Display) -> TargetError {
    TargetError::Prepare {
        target: label.to_string(),
        reason: format!("{what}: {why}"),
    }
}

/// Write what `c` holds and read until `parse` takes a whole answer.
async fn exchange<C: ByteStream, R>(
    c: &mut C,
    label: &str,
    what: &str,
    mut parse: impl FnMut(&[u8]) -> Result<Option<(R, usize)>, McError>,
) -> Result<R, TargetError> {
    let work = async {
        loop {
            match parse(c.input()) {
                Ok(Some((r, n))) => {
                    c.input().advance(n);
                    return Ok(r);
                }
                Ok(None) => c.fill().await.map_err(|e| match e.kind {
                    ErrorKind::Io => "the server closed the connection".to_string(),
                    k => format!("{} error", k.name()),
                })?,
                Err(e) => return Err(format!("not a memcached answer ({e})")),
            }
        }
    };
    match tokio::time::timeout(COLD_TIMEOUT, work).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(why)) => Err(failed(label, what, why)),
        Err(_) => Err(failed(
            label,
            what,
            format!("no answer in {} s", COLD_TIMEOUT.as_secs()),
        )),
    }
}

/// The counters of every server, summed.
pub(super) async fn stats<B: MemcacheBackend>(backend: &B) -> Result<Stats, TargetError> {
    let label = backend.label();
    let mut sum = Stats::default();
    for s in 0..backend.servers() {
        let mut c = backend.connect_to(s).await?;
        text::encode_stats(c.out());
        let one = exchange(&mut c, &label, "stats", |buf| {
            Ok(text::parse_stats(buf)?.map(|(st, n)| {
                let v = |name: &[u8]| st.number(name).unwrap_or(0);
                let one = Stats {
                    cmd_set: v(b"cmd_set"),
                    get_hits: v(b"get_hits"),
                    get_misses: v(b"get_misses"),
                    evictions: v(b"evictions"),
                };
                (one, n)
            }))
        })
        .await?;
        sum.cmd_set += one.cmd_set;
        sum.get_hits += one.get_hits;
        sum.get_misses += one.get_misses;
        sum.evictions += one.evictions;
    }
    Ok(sum)
}

/// Slots of window `w` a run by count over the whole index space would
/// store: `Some(n)` means slots `0..n`; `None`, any slot (clean-up's
/// superset).
fn planned(load: &Load, stop: Stop, whole: bool, w: u64) -> Option<u64> {
    match stop {
        Stop::Count(n) if whole => Some(load.sets_before(load.ops_in(w, n)).min(load.spec.window)),
        _ => None,
    }
}

/// A run of slots of one window: `len` slots from `from`, wrapping at the
/// window's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slots {
    window: u64,
    from: u64,
    len: u64,
}

/// The slots the run stored, recomputed from the spans of indices it
/// issued (every mode: by count or by time, warm-up, every process):
/// index `i` is operation `i / W` of window `i mod W`, and a window's
/// sets fill its slots in order, wrapping. `None` when the counts carry
/// no spans (an old report) or the spans are not strided by the windows.
fn stored(load: &Load, spans: &[Span], ok: u64) -> Option<Vec<Slots>> {
    if spans.is_empty() && ok > 0 {
        return None;
    }
    let size = load.spec.window.max(1);
    let mut runs = Vec::new();
    for s in spans {
        if s.stride != load.windows {
            return None;
        }
        let j = s.first / load.windows;
        let from = load.sets_before(j);
        let sets = load
            .sets_before(j.saturating_add(s.count))
            .saturating_sub(from);
        if sets > 0 {
            runs.push(Slots {
                window: s.first % load.windows,
                from: from % size,
                len: sets.min(size),
            });
        }
    }
    Some(runs)
}

/// Every slot of every window, as runs.
fn all_slots(load: &Load) -> Vec<Slots> {
    (0..load.windows)
        .map(|window| Slots {
            window,
            from: 0,
            len: load.spec.window,
        })
        .collect()
}

/// Up to about [`SAMPLE`] distinct (window, slot) pairs spread evenly over
/// `runs`.
fn sample(load: &Load, runs: &[Slots]) -> Vec<(u64, u64)> {
    let size = load.spec.window.max(1);
    let total: u64 = runs.iter().map(|r| r.len).fold(0, u64::saturating_add);
    let step = total.div_ceil(SAMPLE).max(1);
    let mut out = Vec::new();
    let mut pos = 0u64;
    for r in runs {
        let mut k = (step - pos % step) % step;
        while k < r.len {
            out.push((r.window, (r.from + k) % size));
            k += step;
        }
        pos += r.len;
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The (window, slot) of each item a read-back found on server `s`, and
/// whether it held exactly its value.
async fn read_back<B: MemcacheBackend>(
    backend: &B,
    load: &Load,
    s: usize,
    keys: &[(u64, u64)],
) -> Result<Vec<((u64, u64), bool)>, TargetError> {
    let label = backend.label();
    let mut c = backend.connect_to(s).await?;
    let mut found = Vec::new();
    let mut buf = load.key_buffer().repeat(BATCH);
    let ks = load.spec.key_size;
    for batch in keys.chunks(BATCH) {
        for (key, &(w, slot)) in buf.chunks_exact_mut(ks).zip(batch) {
            load.key(w, slot, key);
        }
        let refs: Vec<&[u8]> = buf.chunks_exact(ks).take(batch.len()).collect();
        text::encode_get_multi(c.out(), &refs).map_err(|e| failed(&label, "get", e))?;
        let items = exchange(&mut c, &label, "get", |b| {
            Ok(text::parse_response(b)?.map(|(r, n)| {
                let items = match r {
                    Response::Values(v) => v
                        .iter()
                        .map(|item| {
                            load.parse_key(item.key)
                                .map(|ws| (ws, item.value == load.value(ws.0, ws.1)))
                        })
                        .collect(),
                    _ => vec![None],
                };
                (items, n)
            }))
        })
        .await?;
        for item in items {
            found.push(item.ok_or_else(|| failed(&label, "get", "an answer that is not ours"))?);
        }
    }
    Ok(found)
}

pub(super) async fn verify<B: MemcacheBackend>(
    backend: &B,
    load: &Load,
    before: &Stats,
    counted: &Snapshot,
) -> Result<Verdict, TargetError> {
    let after = stats(backend).await?;
    let kind = |k: usize| counted.kinds.get(k);
    let ok = |k: usize| kind(k).map_or(0, |k| k.ok) as i64;
    let errors = |k: usize, kinds: &[ErrorKind]| {
        kind(k).map_or(0, |s| kinds.iter().map(|e| s.errors.get(*e)).sum::<u64>()) as i64
    };
    // A set the server refused (out of memory, too large) may have
    // dropped the old value or not: in doubt too.
    let set_doubt = counted.in_doubt_of(SET) as i64 + errors(SET, &[ErrorKind::Server]);
    let set_failed = kind(SET).map_or(0, |k| k.count() - k.ok) as i64;
    let get_doubt = counted.in_doubt_of(GET) as i64 * i64::from(load.spec.multiget);
    let d = |i: usize| counted.domains.get(i).copied().unwrap_or(0) as i64;
    let delta = |a: u64, b: u64| a as i64 - b as i64;
    let mut checks = vec![
        Check::new(
            "gets that read a value this run does not write",
            0,
            errors(GET, &[ErrorKind::Verification]),
        ),
        Check::new(
            "cmd_set change = sets acknowledged",
            ok(SET),
            delta(after.cmd_set, before.cmd_set),
        )
        .in_doubt(set_doubt),
        Check::new(
            "get_hits change = keys found",
            d(GET_HITS),
            delta(after.get_hits, before.get_hits),
        )
        .in_doubt(get_doubt),
        Check::new(
            "get_misses change = keys not found",
            d(GET_MISSES),
            delta(after.get_misses, before.get_misses),
        )
        .in_doubt(get_doubt),
    ];
    let evicted = delta(after.evictions, before.evictions).max(0);
    let runs = stored(load, &counted.spans, ok(SET) as u64);
    let exact = runs.is_some();
    let keys = sample(load, runs.as_deref().unwrap_or(&all_slots(load)));
    let index: HashMap<(u64, u64), usize> = keys.iter().enumerate().map(|(i, k)| (*k, i)).collect();
    let mut present = vec![false; keys.len()];
    let mut bad = 0i64;
    for s in 0..backend.servers() {
        for (ws, right) in read_back(backend, load, s, &keys).await? {
            if let Some(&i) = index.get(&ws) {
                present[i] = true;
            }
            bad += i64::from(!right);
        }
    }
    let there = present.iter().filter(|p| **p).count() as i64;
    checks.push(Check::new("keys read back holding another value", 0, bad));
    let mut said = vec![format!(
        "memcached counted {} sets, {} hits, {} misses",
        group(after.cmd_set.saturating_sub(before.cmd_set)),
        group(after.get_hits.saturating_sub(before.get_hits)),
        group(after.get_misses.saturating_sub(before.get_misses)),
    )];
    if exact {
        let absent = keys.len() as i64 - there;
        checks.push(
            Check::new("keys stored and absent (beyond evictions)", 0, absent)
                .in_doubt(evicted + set_failed),
        );
        said.push(format!(
            "{} of {} keys sampled there with their values ({} evictions)",
            group(there as u64),
            group(keys.len() as u64),
            group(evicted as u64)
        ));
    } else {
        said.push(format!(
            "{} keys found of {} sampled, all with their values (which keys were stored is \
             not known: a report without the indices issued)",
            group(there as u64),
            group(keys.len() as u64)
        ));
    }
    Ok(Verdict::from_checks(checks, said.join("; ")))
}

/// Hits, misses and the miss ratio, key by key, as memaslap reports them.
pub(super) fn results(counted: &Snapshot) -> Results {
    let d = |i: usize| counted.domains.get(i).copied().unwrap_or(0);
    let (hits, misses) = (d(GET_HITS), d(GET_MISSES));
    let ratio = if hits + misses == 0 {
        0.0
    } else {
        100.0 * misses as f64 / (hits + misses) as f64
    };
    Results {
        lines: vec![format!(
            "get: {} hits, {} misses, miss ratio {ratio:.2}%",
            group(hits),
            group(misses)
        )],
        ..Results::default()
    }
}

/// Delete every key the run may have written, on every server.
pub(super) async fn clean<B: MemcacheBackend>(
    backend: &B,
    load: &Load,
    stop: Stop,
    whole: bool,
) -> Result<(), TargetError> {
    let label = backend.label();
    let mut key = load.key_buffer();
    for s in 0..backend.servers() {
        let mut c = backend.connect_to(s).await?;
        let mut queued = 0;
        for w in 0..load.windows {
            // Every key planned: a superset of what an interrupted run stored.
            let n = planned(load, stop, whole, w).unwrap_or(load.spec.window);
            for slot in 0..n {
                load.key(w, slot, &mut key);
                text::encode_delete(c.out(), &key, true)
                    .map_err(|e| failed(&label, "delete", e))?;
                queued += 1;
                if queued == DELETES {
                    sync(&mut c, &label).await?;
                    queued = 0;
                }
            }
        }
        sync(&mut c, &label).await?;
    }
    Ok(())
}

/// Wait until the server has read everything sent (a `version` round trip
/// behind the `noreply` deletes).
async fn sync<C: ByteStream>(c: &mut C, label: &str) -> Result<(), TargetError> {
    text::encode_version(c.out());
    exchange(c, label, "delete", |b| {
        Ok(text::parse_version(b)?.map(|(_, n)| ((), n)))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadrig_spec::MemcacheSpec;

    #[test]
    fn samples_spread_over_the_windows_and_stored_slots_add_up() {
        let spec = MemcacheSpec {
            binary: false,
            sets: 1,
            gets: 9,
            key_size: 16,
            value_min: 1,
            value_max: 1,
            window: 1000,
            multiget: 1,
            verify_gets: 1.0,
        };
        let load = Load::new(spec, 4, 1);
        // 100,000 operations over 4 windows: 2,500 sets each, the window
        // of 1,000 wrapped.
        assert_eq!(planned(&load, Stop::Count(100_000), true, 3), Some(1000));
        assert_eq!(planned(&load, Stop::Count(400), true, 0), Some(10));
        assert_eq!(planned(&load, Stop::Count(400), false, 0), None);
        assert_eq!(planned(&load, Stop::Seconds(1.0), true, 0), None);
        // Worker 1 issued 95 operations (10 sets), worker 3 none: window 1
        // holds slots 0..10, the others nothing.
        let span = |first: u64, count: u64| Span {
            phase: 0,
            first,
            stride: 4,
            count,
        };
        let runs = stored(&load, &[span(1, 95)], 10).unwrap();
        assert_eq!(
            runs,
            vec![Slots {
                window: 1,
                from: 0,
                len: 10
            }]
        );
        // A warm-up's span lands mid-window, wrapping: 2^62 + 2 is window
        // 2, operation 2^60 of it, whose sets start at slot 2^60/10 mod
        // 1,000 (= 6, wrapping after 994).
        let warm = stored(&load, &[span((1 << 62) + 2, 20_000)], 1).unwrap();
        assert_eq!(warm.len(), 1);
        assert_eq!((warm[0].window, warm[0].len), (2, 1000));
        assert_eq!(warm[0].from, load.sets_before((1u64 << 62) / 4) % 1000);
        // No spans: unknown, unless nothing was stored.
        assert_eq!(stored(&load, &[], 5), None);
        assert_eq!(stored(&load, &[], 0), Some(vec![]));
        // Spans strided otherwise than the windows: unknown.
        assert_eq!(
            stored(
                &load,
                &[Span {
                    stride: 3,
                    ..span(0, 9)
                }],
                1
            ),
            None
        );
        let s = sample(&load, &all_slots(&load));
        assert_eq!(s.len(), 4000);
        let one = Slots {
            window: 0,
            from: 0,
            len: 30_000,
        };
        let s = sample(&load, &[one]);
        // 30,000 slots of a 1,000-slot window: every third, wrapped, is
        // each slot once.
        assert_eq!(s.len(), 1000);
        assert_eq!(&s[..2], &[(0, 0), (0, 1)]);
        let wrapped = Slots {
            window: 3,
            from: 998,
            len: 4,
        };
        assert_eq!(
            sample(&load, &[wrapped]),
            vec![(3, 0), (3, 1), (3, 998), (3, 999)]
        );
    }
}
