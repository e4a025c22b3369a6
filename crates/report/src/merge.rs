//! Joining the reports of the processes (or hosts) of one run, without
//! re-running anything (docs/explanations/measurement.md sections 4 and 6): histograms add,
//! counts sum, laps align by wall clock, and every percentile is
//! recomputed from the merged histograms, never averaged. Pure: reports
//! in, report out.

use std::collections::BTreeMap;

use loadrig_metrics::{Histo, Results};
use loadrig_spec::Shard;

use crate::confidence::Intervals;
use crate::schema::{b64, decode_hdr};
use crate::{
    ClientUsage, HistSummary, KindReport, LapReport, Measured, Report, ReportError,
    ServerStatsReport, Verification, SCHEMA,
};

impl Report {
    /// One report for the run the `reports` are parts of.
    ///
    /// The measured time runs from the earliest start of a measured phase
    /// to the latest last completion; throughput is over it. Client CPU
    /// and peak memory are sums (each process's own stays in `processes`).
    /// Laps whose wall-clock spans fall in the same interval of the first
    /// report's `--interval`, counted from the earliest start, are added.
    /// The spec and environment are the first report's (the spec for the
    /// whole run when the reports are every shard of it). The baseline is
    /// kept when every report recorded the same one (shards that prepared
    /// before a common start), so `loadrig verify` can check the merged
    /// counts, and so are the parts' shares of the verification (`shares`:
    /// a kv shard's ledger); the verdict and the results are left to
    /// whoever can ask the target.
    pub fn merge(reports: &[Report]) -> Result<Report, ReportError> {
        let Some(first) = reports.first() else {
            return Err(ReportError::Merge("no reports".into()));
        };
        for (i, r) in reports.iter().enumerate() {
            check_same_run(first, r, i)?;
        }
        let measure_start = reports
            .iter()
            .map(Report::measure_start_unix_ms)
            .fold(f64::INFINITY, f64::min);
        let end = reports
            .iter()
            .map(Report::ended_unix_ms)
            .fold(f64::NEG_INFINITY, f64::max);
        let elapsed = ((end - measure_start) / 1e3).max(0.0);
        let measured = merge_measured(reports.iter().map(|r| &r.measured), elapsed)?;
        let warmup = merge_measured(reports.iter().map(|r| &r.warmup), first.spec.warmup_secs)?;

        let mut spec = first.spec.clone();
        if covers_every_shard(reports) {
            spec.load.shard = Shard::WHOLE;
        }
        let mut environment = first.environment.clone();
        let mut hosts: Vec<&str> = Vec::new();
        for r in reports {
            if !hosts.contains(&r.environment.host.as_str()) {
                hosts.push(&r.environment.host);
            }
        }
        environment.host = hosts.join(",");

        let cpu: f64 = reports.iter().map(|r| r.client.cpu_secs).sum();
        let client = ClientUsage {
            cpu_secs: cpu,
            user_secs: reports.iter().map(|r| r.client.user_secs).sum(),
            system_secs: reports.iter().map(|r| r.client.system_secs).sum(),
            cpu_percent: if elapsed > 0.0 {
                100.0 * cpu / elapsed
            } else {
                0.0
            },
            cpu_us_per_op: if measured.ops == 0 {
                0.0
            } else {
                cpu * 1e6 / measured.ops as f64
            },
            max_rss_bytes: reports
                .iter()
                .map(|r| r.client.max_rss_bytes)
                .fold(0, u64::saturating_add),
        };
        let started = reports
            .iter()
            .map(|r| r.started_unix_ms)
            .min()
            .unwrap_or(first.started_unix_ms);
        let laps = merge_laps(reports, started, first.spec.interval_secs)?;
        // From the merged laps and totals, never from the processes' own.
        let intervals = Intervals::of(&laps, &measured).map_err(ReportError::Merge)?;
        let processes = reports
            .iter()
            .flat_map(|r| {
                if r.processes.is_empty() {
                    vec![r.process_record()]
                } else {
                    r.processes.clone()
                }
            })
            .collect();
        let mut merged = Report {
            schema: SCHEMA.to_string(),
            loadrig_version: first.loadrig_version.clone(),
            spec,
            environment,
            started_unix_ms: started,
            interrupted: reports.iter().any(|r| r.interrupted),
            measured,
            warmup,
            client,
            laps,
            verification: common_baseline(reports),
            results: Results::default(),
            exit_code: reports.iter().map(|r| r.exit_code).max().unwrap_or(0),
            processes,
            server_stats: merge_server_stats(reports),
            share: None,
            shares: reports
                .iter()
                .flat_map(|r| r.share.iter().chain(&r.shares).cloned())
                .collect(),
            validity: None,
            intervals: Some(intervals),
            // The first process that stopped early says why.
            stopped_early: reports.iter().find_map(|r| r.stopped_early.clone()),
        };
        // Judged anew from the merged laps and histograms: the parts'
        // verdicts are not combined.
        merged.validity = Some(merged.validity());
        Ok(merged)
    }
}

/// The same workload with the same operation kinds, or it is not one run.
fn check_same_run(first: &Report, r: &Report, i: usize) -> Result<(), ReportError> {
    let (a, b) = (first.spec.workload.name(), r.spec.workload.name());
    if a != b {
        return Err(ReportError::Merge(format!(
            "report {} runs {b}, report 1 runs {a}",
            i + 1
        )));
    }
    let names = |m: &Measured| m.kinds.iter().map(|k| k.name.clone()).collect::<Vec<_>>();
    for (x, y) in [(&first.measured, &r.measured), (&first.warmup, &r.warmup)] {
        if names(x) != names(y) {
            return Err(ReportError::Merge(format!(
                "report {} has operation kinds {:?}, report 1 {:?}",
                i + 1,
                names(y),
                names(x)
            )));
        }
    }
    Ok(())
}

impl Report {
    /// Refuse reports of different runs: their specs, shard aside (the
    /// workload and its knobs, the load model, the seed, the target),
    /// must be equal. `loadrig merge --force` skips this.
    pub fn check_one_run(reports: &[Report]) -> Result<(), ReportError> {
        let Some(first) = reports.first() else {
            return Ok(());
        };
        let key = |r: &Report| {
            let mut spec = r.spec.clone();
            spec.load.shard = Shard::WHOLE;
            serde_json::to_value(&spec).unwrap_or_default()
        };
        let want = key(first);
        // One process's report given twice would count its operations
        // twice: a process is its host, its shard and its start.
        let who = |r: &Report| {
            (
                r.environment.host.clone(),
                r.spec.load.shard,
                r.started_unix_ms,
            )
        };
        for (j, r) in reports.iter().enumerate() {
            if let Some(i) = reports[..j].iter().position(|o| who(o) == who(r)) {
                return Err(ReportError::Merge(format!(
                    "report {} is report {} again (the same host, shard and start): a file given twice (--force merges them anyway)",
                    j + 1,
                    i + 1
                )));
            }
        }
        for (i, r) in reports.iter().enumerate().skip(1) {
            if r.spec.seed != first.spec.seed {
                return Err(ReportError::Merge(format!(
                    "report {} has seed {}, report 1 seed {}: different runs (--force merges them anyway)",
                    i + 1,
                    r.spec.seed,
                    first.spec.seed
                )));
            }
            let got = key(r);
            if got != want {
                let fields = differing_fields(&want, &got);
                return Err(ReportError::Merge(format!(
                    "report {} has another run spec than report 1 ({}): different runs (--force merges them anyway)",
                    i + 1,
                    fields.join(", ")
                )));
            }
        }
        Ok(())
    }

    /// Warnings when the reports' measured phases did not overlap in
    /// time: the merged rate is over the whole span, gaps included.
    pub fn overlap_warnings(reports: &[Report]) -> Vec<String> {
        if reports.len() < 2 {
            return Vec::new();
        }
        let starts: Vec<f64> = reports.iter().map(Report::measure_start_unix_ms).collect();
        let ends: Vec<f64> = reports.iter().map(Report::ended_unix_ms).collect();
        let first = starts.iter().copied().fold(f64::INFINITY, f64::min);
        let last_start = starts.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let first_end = ends.iter().copied().fold(f64::INFINITY, f64::min);
        let last = ends.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let span = (last - first) / 1e3;
        let common = ((first_end - last_start) / 1e3).max(0.0);
        // Shards begun together overlap for nearly all of the span; a
        // tenth off is more than any common start's scatter.
        if span > 0.0 && common < 0.9 * span {
            vec![format!(
                "the reports ran together for {common:.3} s of the merged {span:.3} s (their measured starts {:.3} s apart): the merged rate is over the whole span, gaps included",
                (last_start - first) / 1e3
            )]
        } else {
            Vec::new()
        }
    }
}

/// The top-level (and `load.`, `workload.`) fields where two specs differ.
fn differing_fields(a: &serde_json::Value, b: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    if let (Some(x), Some(y)) = (a.as_object(), b.as_object()) {
        for (k, v) in x {
            let w = y.get(k).unwrap_or(&serde_json::Value::Null);
            if v == w {
                continue;
            }
            match (v.as_object(), w.as_object()) {
                (Some(_), Some(_)) => {
                    for f in differing_fields(v, w) {
                        out.push(format!("{k}.{f}"));
                    }
                }
                _ => out.push(k.clone()),
            }
        }
    }
    if out.is_empty() {
        out.push("spec".into());
    }
    out
}

/// The baseline every report recorded, if they all recorded the same.
fn common_baseline(reports: &[Report]) -> Option<Verification> {
    let first = reports.first()?.verification.as_ref()?;
    reports
        .iter()
        .all(|r| {
            r.verification
                .as_ref()
                .is_some_and(|v| v.baseline == first.baseline)
        })
        .then(|| Verification {
            baseline: first.baseline.clone(),
            verdict: None,
        })
}

/// Shards 0..N of N, each once.
fn covers_every_shard(reports: &[Report]) -> bool {
    let n = reports.len();
    let mut seen = vec![false; n];
    for r in reports {
        let s = r.spec.load.shard;
        if s.count as usize != n || s.index as usize >= n || seen[s.index as usize] {
            return false;
        }
        seen[s.index as usize] = true;
    }
    true
}

fn merge_measured<'a>(
    parts: impl Iterator<Item = &'a Measured> + Clone,
    elapsed_secs: f64,
) -> Result<Measured, ReportError> {
    let mut kinds: Vec<KindReport> = Vec::new();
    let mut hists: Vec<[Histo; 3]> = Vec::new();
    let mut out = Measured {
        elapsed_secs,
        ..Measured::default()
    };
    for m in parts {
        for (i, k) in m.kinds.iter().enumerate() {
            if kinds.len() <= i {
                kinds.push(KindReport {
                    name: k.name.clone(),
                    count: 0,
                    ok: 0,
                    delivered: 0,
                    errors: Vec::new(),
                    server_errors: Vec::new(),
                    latency: HistSummary::of(&Histo::new()),
                    service: HistSummary::of(&Histo::new()),
                    send_lag: HistSummary::of(&Histo::new()),
                    elapsed_secs: None,
                });
                hists.push([Histo::new(), Histo::new(), Histo::new()]);
            }
            let (into, [lat, svc, lag]) = (&mut kinds[i], &mut hists[i]);
            add(&mut into.count, k.count)?;
            add(&mut into.ok, k.ok)?;
            add(&mut into.delivered, k.delivered)?;
            if let Some(e) = k.elapsed_secs {
                into.elapsed_secs = Some(into.elapsed_secs.map_or(e, |m| m.max(e)));
            }
            add_pairs(&mut into.errors, &k.errors)?;
            add_pairs(&mut into.server_errors, &k.server_errors)?;
            let bad = |e: String| ReportError::Merge(format!("{}: {e}", k.name));
            lat.add(&k.latency.histogram().map_err(bad)?);
            svc.add(&k.service.histogram().map_err(bad)?);
            lag.add(&k.send_lag.histogram().map_err(bad)?);
        }
        add(&mut out.ops, m.ops)?;
        add(&mut out.ok, m.ok)?;
        add(&mut out.errors, m.errors)?;
        add(&mut out.delivered, m.delivered)?;
        add_pairs(&mut out.domains, &m.domains)?;
        add(&mut out.bytes_sent, m.bytes_sent)?;
        add(&mut out.bytes_received, m.bytes_received)?;
        add(&mut out.reconnects, m.reconnects)?;
        add(&mut out.connect_failures, m.connect_failures)?;
        add(&mut out.gave_up, m.gave_up)?;
        add(&mut out.reopened_waiting, m.reopened_waiting)?;
        add(&mut out.reopen_failed_waiting, m.reopen_failed_waiting)?;
        out.spans.extend_from_slice(&m.spans);
    }
    for (k, [lat, svc, lag]) in kinds.iter_mut().zip(&hists) {
        k.latency = HistSummary::of(lat);
        k.service = HistSummary::of(svc);
        k.send_lag = HistSummary::of(lag);
    }
    out.kinds = kinds;
    let per_sec = |n: u64| {
        if elapsed_secs > 0.0 {
            n as f64 / elapsed_secs
        } else {
            0.0
        }
    };
    out.throughput = per_sec(out.ok);
    out.delivery_rate = per_sec(out.delivered);
    Ok(out)
}

/// Add a count of one report to the sum: counts past 2^64 cannot come
/// from one run (a report edited by hand or corrupted), so they are
/// refused rather than wrapped.
fn add(into: &mut u64, n: u64) -> Result<(), ReportError> {
    *into = into
        .checked_add(n)
        .ok_or_else(|| ReportError::Merge("the counts add up past 2^64: not one run".into()))?;
    Ok(())
}

/// Add named counts, keeping the order of first appearance.
fn add_pairs(into: &mut Vec<(String, u64)>, from: &[(String, u64)]) -> Result<(), ReportError> {
    for (name, n) in from {
        match into.iter_mut().find(|(m, _)| m == name) {
            Some((_, v)) => add(v, *n)?,
            None => into.push((name.clone(), *n)),
        }
    }
    Ok(())
}

/// Every process sampled the one server: the first sampler's sources,
/// with every process's samples and failures counted.
fn merge_server_stats(reports: &[Report]) -> Option<ServerStatsReport> {
    let mut all = reports.iter().filter_map(|r| r.server_stats.as_ref());
    let mut out = all.next()?.clone();
    for s in all {
        out.samples += s.samples;
        out.failures += s.failures;
        if s.last_error.is_some() {
            out.last_error.clone_from(&s.last_error);
        }
    }
    Some(out)
}

/// Laps by wall clock: a lap belongs to the interval (of `interval_secs`,
/// counted from `origin_ms`) that holds the middle of its span, so laps of
/// processes that began together land together although each closes a
/// little after its boundary, and a short last lap gets its own interval.
fn merge_laps(
    reports: &[Report],
    origin_ms: u64,
    interval_secs: f64,
) -> Result<Vec<LapReport>, ReportError> {
    let interval_ms = (interval_secs * 1e3).max(1.0);
    // Each slot keeps its histogram encoded, as the laps carry theirs: the
    // memory merging takes grows with the reports' bytes, not with the
    // laps times a decoded histogram's size.
    let mut slots: BTreeMap<i64, LapReport> = BTreeMap::new();
    for r in reports {
        for l in &r.laps {
            let middle = l.unix_ms as f64 - l.length_secs * 500.0;
            let slot = ((middle - origin_ms as f64) / interval_ms).floor() as i64;
            let bad = |e: String| ReportError::Merge(format!("lap at unix_ms {}: {e}", l.unix_ms));
            let h = decode_hdr(&l.latency_hdr).map_err(bad)?;
            match slots.get_mut(&slot) {
                Some(acc) => {
                    acc.elapsed_secs = acc.elapsed_secs.max(l.elapsed_secs);
                    acc.length_secs = acc.length_secs.max(l.length_secs);
                    acc.unix_ms = acc.unix_ms.max(l.unix_ms);
                    acc.warmup &= l.warmup;
                    add(&mut acc.ok, l.ok)?;
                    add(&mut acc.errors, l.errors)?;
                    add(&mut acc.delivered, l.delivered)?;
                    add(&mut acc.pending, l.pending)?;
                    // The processes sampled the same server: one sample
                    // of it, not their sum.
                    if acc.server.is_empty() {
                        acc.server.clone_from(&l.server);
                    }
                    acc.client = match (acc.client, l.client) {
                        (Some(mut a), Some(b)) => {
                            a.add(&b);
                            Some(a)
                        }
                        (a, b) => a.or(b),
                    };
                    let mut hist = decode_hdr(&acc.latency_hdr).map_err(bad)?;
                    hist.add(&h);
                    acc.latency_hdr = b64(&hist.encode());
                    add_kinds(&mut acc.kinds_hdr, &l.kinds_hdr).map_err(bad)?;
                }
                None => {
                    slots.insert(slot, l.clone());
                }
            }
        }
    }
    Ok(slots.into_values().collect())
}

/// Each kind's lap histogram of `from` added to the same kind's in `into`.
fn add_kinds(into: &mut Vec<String>, from: &[String]) -> Result<(), String> {
    if into.len() < from.len() {
        into.resize(from.len(), b64(&Histo::new().encode()));
    }
    for (a, b) in into.iter_mut().zip(from) {
        let mut h = decode_hdr(a)?;
        h.add(&decode_hdr(b)?);
        *a = b64(&h.encode());
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::Duration;

    use loadrig_metrics::{Lap, Outcome};
    use loadrig_metrics::{OpError, Snapshot, Usage};
    use loadrig_spec::{
        Dispatch, LoadSpec, Pacing, RunSpec, Stop, VoterGenerator, VoterSpec, WorkloadSpec,
    };

    use super::*;
    use crate::{Environment, RunRecord};

    const KINDS: [&str; 2] = ["vote", "other"];

    fn spec(shard: u32, of: u32) -> RunSpec {
        RunSpec {
            workload: WorkloadSpec::Voter(VoterSpec {
                contestants: 6,
                max_votes: 2,
                generator: VoterGenerator::Voltdb,
                phones: None,
            }),
            target: "null".into(),
            load: LoadSpec {
                clients: 4,
                connections: 4,
                pipeline: 1,
                pacing: Pacing::Steady,
                dispatch: Dispatch::Direct,
                stop: Stop::Count(1000),
                max_lag_secs: 10.0,
                shard: Shard {
                    index: shard,
                    count: of,
                },
                stages: None,
            },
            seed: 42,
            warmup_secs: 0.0,
            interval_secs: 1.0,
            threads: 2,
            timeout_secs: 10.0,
            max_error_rate: None,
            thresholds: Vec::new(),
            verify: true,
            keep: false,
            preset: None,
            processes: 1,
            prepare: true,
            realtime: false,
            spin_secs: 0.0,
            awake: false,
            io_uring: false,
            until: None,
            abort_after_secs: None,
        }
    }

    pub(crate) fn lap(unix_ms: u64, length_ms: u64, ok: u64, lat_us: u64) -> Lap {
        let mut h = Histo::new();
        for _ in 0..ok {
            h.record(Duration::from_micros(lat_us));
        }
        Lap {
            elapsed: Duration::from_millis(unix_ms % 100_000),
            length: Duration::from_millis(length_ms),
            unix_ms,
            warmup: false,
            ok,
            errors: 0,
            delivered: 0,
            pending: 1,
            latency: h.encode(),
            kinds: Vec::new(),
            client: loadrig_metrics::ClientLap {
                rss_bytes: 1 << 20,
                bytes_sent: ok * 10,
                bytes_received: ok * 20,
                connections: 2,
                ..Default::default()
            },
        }
    }

    pub(crate) fn report(
        shard: u32,
        snap: Snapshot,
        started: u64,
        elapsed: Duration,
        laps: Vec<Lap>,
    ) -> Report {
        let spec = spec(shard, 2);
        let outcome = Outcome {
            warmup: Snapshot::new(2, 3),
            measured: snap,
            elapsed,
            laps,
            interrupted: false,
        };
        Report::build(RunRecord {
            spec: &spec,
            environment: Environment {
                host: "h".into(),
                cores: 2,
                os: "linux".into(),
                target: "null".into(),
                server_version: None,
                durability: None,
                unread: Vec::new(),
                cpu: None,
                sources: Vec::new(),
            },
            started_unix_ms: started,
            kinds: &KINDS,
            domains: &["a".into(), "b".into(), "c".into()],
            outcome: &outcome,
            kind_elapsed: &[],
            usage: Usage {
                cpu: Duration::from_millis(300),
                user: Duration::from_millis(200),
                system: Duration::from_millis(100),
                max_rss_bytes: 10 << 20,
            },
            verification: None,
            results: Results::default(),
            exit_code: 0,
        })
    }

    /// Samples spread over two processes and all in one.
    fn samples() -> (Snapshot, Snapshot, Snapshot) {
        let (mut a, mut b, mut all) = (
            Snapshot::new(2, 3),
            Snapshot::new(2, 3),
            Snapshot::new(2, 3),
        );
        let mut x: u64 = 7;
        for i in 0..30_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // The two processes see different distributions, so an
            // average of their percentiles would be wrong.
            let scale = if i % 3 == 0 { 40 } else { 1 };
            let lat = Duration::from_nanos(((x >> 44) + 200) * scale);
            let kind = (i % 2) as usize;
            let one = if i % 3 == 0 { &mut a } else { &mut b };
            for s in [&mut *one, &mut all] {
                if i % 101 == 0 {
                    s.failed(kind, OpError::server("40001"), Some((lat, lat / 2)));
                } else {
                    s.ok(kind, lat, lat / 2, Some((i % 3) as u16));
                }
            }
        }
        (a, b, all)
    }

    #[test]
    fn merged_percentiles_are_those_of_one_histogram_of_every_sample() {
        let (a, b, all) = samples();
        let t0 = 1_795_000_000_000;
        let ra = report(0, a, t0, Duration::from_secs(2), vec![]);
        let rb = report(1, b, t0 + 3, Duration::from_millis(2500), vec![]);
        let m = Report::merge(&[ra.clone(), rb.clone()]).unwrap();
        let one = Measured::of(
            &all,
            &KINDS,
            &["a".into(), "b".into(), "c".into()],
            Duration::ZERO,
        );
        for (got, want) in m.measured.kinds.iter().zip(&one.kinds) {
            assert_eq!(got.count, want.count);
            assert_eq!(got.ok, want.ok);
            assert_eq!(got.errors, want.errors);
            assert_eq!(got.server_errors, want.server_errors);
            for (g, w) in [(&got.latency, &want.latency), (&got.service, &want.service)] {
                assert_eq!(g.count, w.count);
                assert_eq!(
                    (g.min_us, g.p50_us, g.p90_us, g.p99_us, g.p99_9_us, g.max_us),
                    (w.min_us, w.p50_us, w.p90_us, w.p99_us, w.p99_9_us, w.max_us)
                );
                let (gh, wh) = (g.histogram().unwrap(), w.histogram().unwrap());
                assert_eq!(gh.inner(), wh.inner());
            }
        }
        assert_eq!(m.measured.ops, ra.measured.ops + rb.measured.ops);
        assert_eq!(m.measured.ops, 30_000);
        assert_eq!(m.measured.errors, ra.measured.errors + rb.measured.errors);
        assert_eq!(m.measured.domains, one.domains);
        // From the earliest start to the latest end.
        assert!((m.measured.elapsed_secs - 2.503).abs() < 1e-9);
        assert!((m.measured.throughput - m.measured.ok as f64 / 2.503).abs() < 1e-6);
        assert!((m.client.cpu_secs - 0.6).abs() < 1e-9);
        assert_eq!(m.client.max_rss_bytes, 20 << 20);
        assert_eq!(m.spec.load.shard, Shard::WHOLE);
        assert_eq!(m.processes.len(), 2);
        assert_eq!(m.processes[1].started_unix_ms, t0 + 3);
        assert_eq!(m.processes[1].max_rss_bytes, 10 << 20);
        assert_eq!(m.started_unix_ms, t0);
    }

    #[test]
    fn laps_align_by_wall_clock() {
        // Not a whole second: slots count from the earliest start, not
        // from the epoch.
        let t0 = 1_795_000_000_400;
        // Each closes a little after its boundary; b ends with a short lap.
        let la = vec![
            lap(t0 + 1_021, 1_000, 10, 100),
            lap(t0 + 2_020, 1_000, 20, 200),
        ];
        let lb = vec![
            lap(t0 + 1_025, 1_000, 1, 900),
            lap(t0 + 2_030, 1_000, 2, 900),
            lap(t0 + 2_300, 280, 3, 900),
        ];
        let ra = report(0, Snapshot::new(2, 3), t0, Duration::from_secs(2), la);
        let rb = report(
            1,
            Snapshot::new(2, 3),
            t0 + 1,
            Duration::from_millis(2300),
            lb,
        );
        let m = Report::merge(&[ra, rb]).unwrap();
        let oks: Vec<u64> = m.laps.iter().map(|l| l.ok).collect();
        assert_eq!(oks, vec![11, 22, 3]);
        assert_eq!(m.laps[0].unix_ms, t0 + 1_025);
        assert_eq!(m.laps[1].pending, 2);
        let h = decode_hdr(&m.laps[1].latency_hdr).unwrap();
        assert_eq!(h.len(), 22);
        let mut one = Histo::new();
        one.record(Duration::from_micros(900));
        assert_eq!(h.max(), one.max());
        // The client's resources of the two processes' lap add up.
        let c = m.laps[1].client.expect("client resources kept");
        assert_eq!((c.bytes_out, c.bytes_in), (220, 440));
        assert_eq!((c.connections, c.rss_bytes), (4, 2 << 20));
        let c = m.laps[2].client.expect("the short lap's own");
        assert_eq!((c.bytes_out, c.connections), (30, 2));
    }

    /// Laps with each kind's histogram: 12 of them in each of two
    /// processes. Merged, each kind's lap histograms add, and the
    /// intervals are those of the merged laps and totals, computed again;
    /// a report without intervals or kind histograms (an older one) still
    /// reads and merges, its kinds without intervals.
    #[test]
    fn kind_laps_add_and_intervals_are_computed_again() {
        let t0 = 1_795_000_000_000;
        let laps = |lat: u64| -> Vec<Lap> {
            (0..12u64)
                .map(|i| {
                    let mut l = lap(t0 + 1_000 * (i + 1) + 20, 1_000, 10 + i, lat + i);
                    let (mut a, mut b) = (Histo::new(), Histo::new());
                    (0..10 + i).for_each(|_| a.record(Duration::from_micros(lat + i)));
                    b.record(Duration::from_micros(5 * lat));
                    l.kinds = vec![a.encode(), b.encode()];
                    l
                })
                .collect()
        };
        let snap = |lat: u64| {
            let mut s = Snapshot::new(2, 3);
            for i in 0..12u64 {
                (0..10 + i)
                    .for_each(|_| s.ok(0, Duration::from_micros(lat + i), Duration::ZERO, None));
                s.ok(1, Duration::from_micros(5 * lat), Duration::ZERO, None);
            }
            s
        };
        let ra = report(0, snap(100), t0, Duration::from_secs(12), laps(100));
        let rb = report(1, snap(300), t0, Duration::from_secs(12), laps(300));
        assert!(ra.intervals.as_ref().unwrap().kinds[0].p99_us.is_some());
        let m = Report::merge(&[ra.clone(), rb]).unwrap();
        let k1: u64 = m
            .laps
            .iter()
            .map(|l| decode_hdr(&l.kinds_hdr[1]).unwrap().len())
            .sum();
        assert_eq!(k1, 24, "one value of kind 1 per lap per process");
        let again = Intervals::of(&m.laps, &m.measured).unwrap();
        assert_eq!(m.intervals.as_ref(), Some(&again));
        assert_ne!(m.intervals, ra.intervals, "not the first process's");
        assert_eq!(again.laps, 12);

        let mut old = serde_json::to_value(&ra).unwrap();
        old.as_object_mut().unwrap().remove("intervals");
        for l in old["laps"].as_array_mut().unwrap() {
            l.as_object_mut().unwrap().remove("kinds_hdr");
        }
        let old: Report = serde_json::from_value(old).unwrap();
        assert_eq!(old.intervals, None);
        let m = Report::merge(&[old]).unwrap();
        let iv = m.intervals.unwrap();
        assert!(
            iv.throughput.is_some() && iv.kinds[0].p99_us.is_none(),
            "{iv:?}"
        );
    }

    /// A report written before laps kept the client's resources reads,
    /// and merges with one that has them.
    #[test]
    fn laps_without_client_resources_still_read_and_merge() {
        let t0 = 1_795_000_000_000;
        let ra = report(
            0,
            Snapshot::new(2, 3),
            t0,
            Duration::from_secs(1),
            vec![lap(t0 + 1_020, 1_000, 5, 100)],
        );
        let mut old = serde_json::to_value(&ra).unwrap();
        for l in old["laps"].as_array_mut().unwrap() {
            l.as_object_mut().unwrap().remove("client");
        }
        let old: Report = serde_json::from_value(old).unwrap();
        assert_eq!(old.laps[0].client, None);
        let m = Report::merge(&[old, ra]).unwrap();
        assert_eq!(m.laps[0].client.map(|c| c.bytes_out), Some(50));
    }

    #[test]
    fn a_baseline_all_share_is_kept() {
        let with = |n: i64| {
            let mut r = report(0, Snapshot::new(2, 3), 0, Duration::ZERO, vec![]);
            r.verification = Some(Verification {
                baseline: serde_json::json!({ "rows": n }),
                verdict: None,
            });
            r
        };
        let m = Report::merge(&[with(5), with(5)]).unwrap();
        let v = m.verification.expect("the shared baseline");
        assert_eq!(v.baseline["rows"], 5);
        assert!(v.verdict.is_none());
        assert!(Report::merge(&[with(5), with(6)])
            .unwrap()
            .verification
            .is_none());
        let none = report(1, Snapshot::new(2, 3), 0, Duration::ZERO, vec![]);
        assert!(Report::merge(&[with(5), none])
            .unwrap()
            .verification
            .is_none());
    }

    #[test]
    fn counts_past_two_to_the_64_are_refused_not_wrapped() {
        let (a, b, _) = samples();
        let t0 = 1_795_000_000_000;
        let ra = report(0, a, t0, Duration::from_secs(2), vec![]);
        let mut rb = report(1, b, t0, Duration::from_secs(2), vec![]);
        rb.measured.ok = u64::MAX;
        let e = Report::merge(&[ra, rb]).unwrap_err();
        assert!(e.to_string().contains("2^64"), "{e}");
    }

    #[test]
    fn different_workloads_do_not_merge() {
        let a = report(0, Snapshot::new(2, 3), 0, Duration::ZERO, vec![]);
        let mut b = a.clone();
        b.spec.workload = WorkloadSpec::Hello(loadrig_spec::HelloSpec { insert_ratio: 0.0 });
        assert!(matches!(Report::merge(&[a, b]), Err(ReportError::Merge(_))));
        assert!(Report::merge(&[]).is_err());
    }

    #[test]
    fn reports_of_different_runs_are_refused() {
        let a = report(
            0,
            Snapshot::new(2, 3),
            1_000_000,
            Duration::from_secs(2),
            Vec::new(),
        );
        let b = report(
            1,
            Snapshot::new(2, 3),
            1_000_000,
            Duration::from_secs(2),
            Vec::new(),
        );
        // Shards of one run: the shard is the one difference allowed.
        Report::check_one_run(&[a.clone(), b.clone()]).unwrap();
        // One process's report twice would count it twice.
        let e = Report::check_one_run(&[a.clone(), b.clone(), a.clone()]).unwrap_err();
        assert!(e.to_string().contains("report 3 is report 1 again"), "{e}");
        let mut seeded = b.clone();
        seeded.spec.seed = 7;
        let e = Report::check_one_run(&[a.clone(), seeded]).unwrap_err();
        assert!(e.to_string().contains("seed 7, report 1 seed 42"), "{e}");
        let mut more = b;
        more.spec.load.clients = 9;
        let e = Report::check_one_run(&[a, more]).unwrap_err();
        assert!(e.to_string().contains("(load.clients)"), "{e}");
    }

    /// Laps of 100 ms (`--interval 0.1`): one lap of a process's is
    /// late by most of its length and another, long, is early; each goes to
    /// the interval that holds its middle. A warm-up lap merged with a
    /// measured one is measured; kinds one process lacks are added.
    #[test]
    fn short_laps_go_where_their_middles_are() {
        let t0 = 1_795_000_000_000;
        let mut with_kinds = lap(t0 + 190, 100, 4, 100);
        let one = b64(&Histo::new().encode());
        let mut second = Histo::new();
        second.record(Duration::from_micros(100));
        with_kinds.kinds = vec![Histo::new().encode(), second.encode()];
        let la = vec![lap(t0 + 105, 100, 1, 100), with_kinds];
        let mut early = lap(t0 + 160, 190, 2, 100);
        early.warmup = true;
        let lb = vec![early, lap(t0 + 280, 100, 8, 100)];
        let mut ra = report(0, Snapshot::new(2, 3), t0, Duration::from_millis(200), la);
        ra.spec.interval_secs = 0.1;
        let rb = report(1, Snapshot::new(2, 3), t0, Duration::from_millis(300), lb);
        let m = Report::merge(&[ra, rb]).unwrap();
        // a: middles 55 and 140; b: middles 65 and 230.
        let oks: Vec<u64> = m.laps.iter().map(|l| l.ok).collect();
        assert_eq!(oks, vec![3, 4, 8]);
        assert!(!m.laps[0].warmup, "a measured lap in it: measured");
        assert_eq!(m.laps[1].kinds_hdr.len(), 2);
        assert_ne!(m.laps[1].kinds_hdr[1], one);
        let mut into = vec![one.clone()];
        add_kinds(&mut into, &m.laps[1].kinds_hdr).unwrap();
        assert_eq!(into.len(), 2, "the kinds the first lacked are added");
        assert_eq!(decode_hdr(&into[1]).unwrap().len(), 1);
    }

    #[test]
    fn the_merged_client_is_the_sum_of_the_processes() {
        let mut s = Snapshot::new(2, 3);
        for _ in 0..600 {
            s.ok(0, Duration::from_millis(1), Duration::from_millis(1), None);
        }
        let two = Duration::from_secs(2);
        let t0 = 1_795_000_000_000;
        let mut ra = report(0, s.clone(), t0, two, Vec::new());
        ra.environment.host = "a".into();
        let mut rb = report(1, s, t0, two, Vec::new());
        rb.environment.host = "b".into();
        let rc = report(1, Snapshot::new(2, 3), t0, two, Vec::new());
        let m = Report::merge(&[ra.clone(), rb.clone(), ra.clone()]).unwrap();
        assert_eq!(m.environment.host, "a,b");
        let c = &m.client;
        assert!((c.cpu_secs - 0.9).abs() < 1e-9, "{c:?}");
        assert!((c.cpu_percent - 45.0).abs() < 1e-6, "0.9 s over 2 s: {c:?}");
        assert!(
            (c.cpu_us_per_op - 500.0).abs() < 1e-6,
            "0.9 s over 1,800: {c:?}"
        );
        assert_eq!(c.max_rss_bytes, 30 << 20);
        // Nothing measured: no rate per operation, not a division by 0.
        let none = report(0, Snapshot::new(2, 3), t0, Duration::ZERO, Vec::new());
        let m = Report::merge(&[none, rc]).unwrap();
        assert_eq!(m.client.cpu_us_per_op, 0.0);
        assert!(m.client.cpu_percent > 0.0, "{:?}", m.client);
        let mut at_once = report(0, Snapshot::new(2, 3), t0, Duration::ZERO, Vec::new());
        at_once.measured.elapsed_secs = 0.0;
        let m = Report::merge(&[at_once]).unwrap();
        assert_eq!(m.client.cpu_percent, 0.0);
    }

    #[test]
    fn every_shard_once_is_the_whole_run() {
        let t0 = 1_795_000_000_000;
        let two = Duration::from_secs(2);
        let shard = |i| report(i, Snapshot::new(2, 3), t0, two, Vec::new());
        let whole = |rs: &[Report]| Report::merge(rs).unwrap().spec.load.shard == Shard::WHOLE;
        assert!(whole(&[shard(1), shard(0)]));
        assert!(!whole(&[shard(0), shard(0)]), "shard 0 twice");
        assert!(!whole(&[shard(0)]), "one of two");
        assert!(!whole(&[shard(0), shard(1), shard(1)]), "three of two");
    }

    #[test]
    fn server_samples_and_failures_add_and_the_last_error_is_kept() {
        let t0 = 1_795_000_000_000;
        let two = Duration::from_secs(2);
        let stats = |samples, failures, last: Option<&str>| ServerStatsReport {
            sources: vec!["INFO".into()],
            samples,
            failures,
            last_error: last.map(str::to_string),
        };
        let mut a = report(0, Snapshot::new(2, 3), t0, two, Vec::new());
        let mut b = report(1, Snapshot::new(2, 3), t0, two, Vec::new());
        assert!(Report::merge(&[a.clone(), b.clone()])
            .unwrap()
            .server_stats
            .is_none());
        a.server_stats = Some(stats(10, 1, Some("first")));
        b.server_stats = Some(stats(20, 2, Some("second")));
        let m = Report::merge(&[a, b]).unwrap().server_stats.unwrap();
        assert_eq!((m.samples, m.failures), (30, 3));
        assert_eq!(m.last_error.as_deref(), Some("second"));
    }

    #[test]
    fn overlap_is_judged_over_every_report() {
        let two = Duration::from_secs(2);
        let at = |start| report(0, Snapshot::new(2, 3), start, two, Vec::new());
        let t0 = 1_000_000;
        assert!(Report::overlap_warnings(&[at(t0), at(t0), at(t0)]).is_empty());
        // The third of three began when the others had ended.
        let w = Report::overlap_warnings(&[at(t0), at(t0), at(t0 + 2_000)]);
        assert_eq!(w.len(), 1, "{w:?}");
        // Ran together for 1.9 s of 2.1: more than nine tenths, no warning;
        // 1.8 of 2.2: less, warned.
        assert!(Report::overlap_warnings(&[at(t0), at(t0 + 100)]).is_empty());
        assert_eq!(Report::overlap_warnings(&[at(t0), at(t0 + 200)]).len(), 1);
        // Nothing measured, all at one instant: nothing to warn of.
        let zero = |start| report(0, Snapshot::new(2, 3), start, Duration::ZERO, Vec::new());
        assert!(Report::overlap_warnings(&[zero(t0), zero(t0)]).is_empty());
    }

    #[test]
    fn shards_that_did_not_overlap_are_warned_of() {
        let two = Duration::from_secs(2);
        let a = report(0, Snapshot::new(2, 3), 1_000_000, two, Vec::new());
        let together = report(1, Snapshot::new(2, 3), 1_000_050, two, Vec::new());
        assert!(Report::overlap_warnings(&[a.clone(), together]).is_empty());
        // Begun 3 s apart: no common time at all.
        let late = report(1, Snapshot::new(2, 3), 1_003_000, two, Vec::new());
        let w = Report::overlap_warnings(&[a, late]);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("0.000 s of the merged 5.000 s"), "{}", w[0]);
        assert!(w[0].contains("3.000 s apart"), "{}", w[0]);
    }
}
