//! The report's shape. Changing a field's meaning means a new [`SCHEMA`].

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use loadrig_metrics::{
    ClientLap, ErrorKind, Histo, KindStats, Lap, Outcome, Results, Snapshot, Span, Usage, Verdict,
};
use loadrig_spec::{RunSpec, Shard};
use serde::{Deserialize, Serialize};

use crate::confidence::Intervals;

/// The schema name and version this code writes and reads.
pub const SCHEMA: &str = "loadrig.report/1";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    pub loadrig_version: String,
    pub spec: RunSpec,
    pub environment: Environment,
    /// Wall clock when the load started, ms since the epoch.
    pub started_unix_ms: u64,
    pub interrupted: bool,
    pub measured: Measured,
    /// Counts of the warm-up (its writes are in the verification).
    pub warmup: Measured,
    pub client: ClientUsage,
    pub laps: Vec<LapReport>,
    pub verification: Option<Verification>,
    pub results: Results,
    /// The exit code the run ended with, and why.
    pub exit_code: i32,
    /// The processes (or hosts) of a merged run, one each, as their own
    /// reports said; empty for a single process.
    #[serde(default)]
    pub processes: Vec<ProcessRecord>,
    /// The server's statistics beside the load (`laps[].server`); absent
    /// with `--server-stats off`, for targets that offer none, and in
    /// reports written before they were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_stats: Option<ServerStatsReport>,
    /// A `--processes` child's part of what verification needs beyond
    /// its counts (chat: its clients' tallies; kv: its ledger), for the
    /// parent, and a `--keep` run's, for `loadrig verify REPORT`; a shard's, for the
    /// merge of its run; absent elsewhere. A merged report carries its
    /// parts' in `shares`. Kept as JSON text,
    /// not a tree of values: the parent of 100,000 chat clients reads it
    /// straight into the workload's own accounts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<Box<serde_json::value::RawValue>>,
    /// The shares of the reports `loadrig merge` joined (each part's
    /// `share`, and the shares a merged part carried), so that `loadrig
    /// verify MERGED` checks every acknowledged write of every shard, not a
    /// sample; empty elsewhere (a `--processes` parent reads its children's
    /// shares before it merges their reports).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shares: Vec<Box<serde_json::value::RawValue>>,
    /// The verdict on the measurement itself (crate::validity), judged
    /// when the run ends and again by `merge`; absent in reports written
    /// before it was kept (`Report::validity_or_judge` judges those).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<crate::Validity>,
    /// 95% confidence intervals on the throughput and each kind's
    /// percentiles, from the measured laps (docs/explanations/intervals.md); computed
    /// again from the merged laps by `merge`. Absent in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervals: Option<Intervals>,
    /// `--abort-after`: the run stopped early, a threshold broken in every
    /// lap for the window. Absent when it ran to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_early: Option<StoppedEarly>,
}

/// Why and when a run stopped before its end (`--abort-after`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoppedEarly {
    /// The threshold as written (`p99<5ms`).
    pub threshold: String,
    /// Measured seconds at the start of the first lap of the unbroken
    /// run of breaches, and at the end of the lap that completed the window.
    pub broken_since_secs: f64,
    pub stopped_at_secs: f64,
    pub window_secs: f64,
}

impl StoppedEarly {
    /// `stopped early at 6s: threshold p99<5ms broken in every lap since 3s (--abort-after 3s)`
    pub fn line(&self) -> String {
        format!(
            "stopped early at {}s: threshold {} broken in every lap since {}s (--abort-after {}s)",
            round3(self.stopped_at_secs),
            self.threshold,
            round3(self.broken_since_secs),
            round3(self.window_secs)
        )
    }
}

fn round3(s: f64) -> f64 {
    (s * 1e3).round() / 1e3
}

/// One process of a merged run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProcessRecord {
    pub shard: Shard,
    pub host: String,
    /// Wall clock when its load started, ms since the epoch.
    pub started_unix_ms: u64,
    /// Wall clock of its last completion, ms since the epoch.
    pub ended_unix_ms: u64,
    pub ops: u64,
    pub ok: u64,
    pub errors: u64,
    /// Its successful operations per second over its own measured time.
    pub throughput: f64,
    pub cpu_secs: f64,
    /// Its own peak memory (the merged `client.max_rss_bytes` is the sum).
    pub max_rss_bytes: u64,
    pub interrupted: bool,
    pub exit_code: i32,
    /// The CPU it was pinned to (`--pin`, `--cpus`), if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<usize>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Environment {
    pub host: String,
    pub cores: usize,
    pub os: String,
    /// The target as given (password masked).
    pub target: String,
    /// As the server reports it.
    pub server_version: Option<String>,
    /// What the target promises about durability.
    pub durability: Option<String>,
    /// What the target could not read about its server, each with why
    /// (INFO or CONFIG GET refused); absent in older reports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unread: Vec<String>,
    /// The CPU this process was pinned to (`--pin`, `--cpus`), if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<usize>,
    /// The local addresses its connections left from (`--bind`, as it
    /// takes them: `127.0.0.2-127.0.0.9`); absent without `--bind`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
}

/// Everything measured in one phase.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Measured {
    pub elapsed_secs: f64,
    /// Successful operations per second (deliveries are not operations:
    /// docs/explanations/rates.md).
    pub throughput: f64,
    pub ops: u64,
    pub ok: u64,
    pub errors: u64,
    /// Messages received by listeners (pub/sub, chat), over the same time.
    #[serde(default)]
    pub delivered: u64,
    #[serde(default)]
    pub delivery_rate: f64,
    pub kinds: Vec<KindReport>,
    /// Workload counters by name (voter: accepted.N, invalid, over_limit).
    pub domains: Vec<(String, u64)>,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub reconnects: u64,
    pub connect_failures: u64,
    /// Connections that gave up on a target gone for longer than
    /// `--timeout`, before the run's end (absent: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub gave_up: u64,
    /// Connections their server closed while the run waited for its start
    /// (`--start-at`), opened again before the load, and re-openings that
    /// failed (absent when none; set on the measured phase only).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reopened_waiting: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reopen_failed_waiting: u64,
    /// The operation indices each worker issued, `[phase, first, stride,
    /// count]` (loadrig_metrics::Span): what verification recomputes the
    /// writes from. Absent from reports written before they were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<Span>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KindReport {
    pub name: String,
    /// Everything recorded under the kind: operations, or for a kind of
    /// deliveries, messages received.
    pub count: u64,
    pub ok: u64,
    /// Of `ok`, deliveries (all of them for a kind of deliveries, else 0).
    #[serde(default)]
    pub delivered: u64,
    /// Errors by kind name (only kinds that occurred).
    pub errors: Vec<(String, u64)>,
    /// Server errors by class.
    pub server_errors: Vec<(String, u64)>,
    /// Completion minus intended start.
    pub latency: HistSummary,
    /// Completion minus actual send.
    pub service: HistSummary,
    /// Actual send minus intended start (open loop and bursts; empty in
    /// the closed loop, where it is 0 by construction). Absent from
    /// reports written before it was recorded: read as empty.
    #[serde(default = "HistSummary::empty")]
    pub send_lag: HistSummary,
    /// The kind's own measured time, when the kinds ran one after the
    /// other (the redis workload's tests); its rate is `ok` over this, not
    /// over the run's `elapsed_secs`. Absent when the kinds ran together.
    /// A merged report keeps the longest of its processes'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_secs: Option<f64>,
}

/// Percentiles in microseconds, and the histogram itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HistSummary {
    pub count: u64,
    pub min_us: f64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p99_9_us: f64,
    pub max_us: f64,
    /// HdrHistogram's compressed V2 form (V2 + DEFLATE), base64 ("HISTF..."),
    /// values in nanoseconds. Older reports hold the plain V2 payload; both read.
    pub hdr: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientUsage {
    pub cpu_secs: f64,
    pub user_secs: f64,
    pub system_secs: f64,
    /// Of one core, over the measured time.
    pub cpu_percent: f64,
    /// Client CPU per operation (measured operations), microseconds.
    pub cpu_us_per_op: f64,
    pub max_rss_bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LapReport {
    pub elapsed_secs: f64,
    pub length_secs: f64,
    pub unix_ms: u64,
    pub warmup: bool,
    pub ok: u64,
    pub errors: u64,
    /// Messages received by listeners in the lap (not operations).
    #[serde(default)]
    pub delivered: u64,
    pub pending: u64,
    /// Latency of all kinds in the lap: HdrHistogram's compressed V2 form, base64.
    pub latency_hdr: String,
    /// Latency of each kind in the lap, in the same form, when the run has
    /// more than one kind (with one, `latency_hdr` is it): what the kinds'
    /// intervals are computed from. Absent in older reports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds_hdr: Vec<String>,
    /// The client's resources in the lap; absent in reports written before
    /// they were kept (docs/explanations/resources.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientLapReport>,
    /// The server's own statistics sampled at the end of the lap, by
    /// name (`redis.used_memory`, `process.cpu_secs`): levels as read,
    /// counts as their change since the previous sample. Empty without
    /// `--server-stats` or a sample for this lap.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub server: BTreeMap<String, f64>,
}

/// How the server's statistics were sampled: from what, how often, and
/// what failed (a failure is recorded, never fatal).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerStatsReport {
    pub sources: Vec<String>,
    /// Samples asked for, one per source per lap.
    pub samples: u64,
    pub failures: u64,
    pub last_error: Option<String>,
}

/// The client's CPU, memory, bytes and connections in one lap. Every
/// field adds up across the processes of a merged run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientLapReport {
    /// CPU used in the lap, seconds.
    pub cpu_user_secs: f64,
    pub cpu_system_secs: f64,
    /// Resident memory at the end of the lap.
    pub rss_bytes: u64,
    /// Bytes written and read by the connections in the lap (targets whose
    /// client counts them: the hand-written byte streams; 0 for the rest).
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// Connections up at the end of the lap.
    pub connections: u64,
    /// Connections re-established in the lap.
    pub reconnects: u64,
}

impl ClientLapReport {
    pub fn of(c: &ClientLap) -> ClientLapReport {
        ClientLapReport {
            cpu_user_secs: c.cpu_user.as_secs_f64(),
            cpu_system_secs: c.cpu_system.as_secs_f64(),
            rss_bytes: c.rss_bytes,
            bytes_out: c.bytes_sent,
            bytes_in: c.bytes_received,
            connections: c.connections,
            reconnects: c.reconnects,
        }
    }

    /// Both processes' resources in the same lap: everything adds.
    /// Counts saturate: a report read from a file may hold any number.
    pub fn add(&mut self, o: &ClientLapReport) {
        self.cpu_user_secs += o.cpu_user_secs;
        self.cpu_system_secs += o.cpu_system_secs;
        self.rss_bytes = self.rss_bytes.saturating_add(o.rss_bytes);
        self.bytes_out = self.bytes_out.saturating_add(o.bytes_out);
        self.bytes_in = self.bytes_in.saturating_add(o.bytes_in);
        self.connections = self.connections.saturating_add(o.connections);
        self.reconnects = self.reconnects.saturating_add(o.reconnects);
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verification {
    /// What the server held before the run, as the workload recorded it.
    pub baseline: serde_json::Value,
    pub verdict: Option<Verdict>,
}

fn us(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1e3
}

pub(crate) fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A base64 HdrHistogram V2 blob (compressed or plain) back to a histogram.
pub fn decode_hdr(text: &str) -> Result<Histo, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| e.to_string())?;
    Histo::decode(&bytes).map_err(|e| e.to_string())
}

impl HistSummary {
    pub fn of(h: &Histo) -> HistSummary {
        HistSummary {
            count: h.len(),
            min_us: us(h.min()),
            mean_us: us(h.mean()),
            p50_us: us(h.percentile(50.0)),
            p90_us: us(h.percentile(90.0)),
            p99_us: us(h.percentile(99.0)),
            p99_9_us: us(h.percentile(99.9)),
            max_us: us(h.max()),
            hdr: b64(&h.encode()),
        }
    }

    /// The summary of no values.
    pub fn empty() -> HistSummary {
        HistSummary::of(&Histo::new())
    }

    /// The histogram back, exactly as recorded.
    pub fn histogram(&self) -> Result<Histo, String> {
        decode_hdr(&self.hdr)
    }
}

impl Measured {
    pub fn of(s: &Snapshot, kinds: &[&str], domains: &[String], elapsed: Duration) -> Measured {
        let secs = elapsed.as_secs_f64();
        let per_sec = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        Measured {
            elapsed_secs: secs,
            throughput: per_sec(s.ok_ops()),
            ops: s.ops(),
            ok: s.ok_ops(),
            errors: s.errors(),
            delivered: s.deliveries(),
            delivery_rate: per_sec(s.deliveries()),
            kinds: s
                .kinds
                .iter()
                .enumerate()
                .map(|(i, k)| KindReport::of(kinds.get(i).copied().unwrap_or("?"), k))
                .collect(),
            domains: domains
                .iter()
                .cloned()
                .zip(s.domains.iter().copied())
                .collect(),
            bytes_sent: s.bytes_sent,
            bytes_received: s.bytes_received,
            reconnects: s.reconnects,
            connect_failures: s.connect_failures,
            gave_up: s.gave_up,
            reopened_waiting: 0,
            reopen_failed_waiting: 0,
            spans: s.spans.clone(),
        }
    }

    /// The snapshot back (histograms exact; server error classes by name
    /// are not restored, their total is).
    pub fn snapshot(&self) -> Result<Snapshot, String> {
        let mut s = Snapshot::new(self.kinds.len(), self.domains.len());
        for (k, r) in s.kinds.iter_mut().zip(&self.kinds) {
            k.latency = r.latency.histogram()?;
            k.service = r.service.histogram()?;
            k.send_lag = r.send_lag.histogram()?;
            k.ok = r.ok;
            k.delivered = r.delivered;
            for (name, n) in &r.errors {
                if let Some(kind) = ErrorKind::ALL.iter().find(|e| e.name() == name) {
                    k.errors.by_kind[kind.index()] += n;
                }
            }
        }
        for (d, (_, n)) in s.domains.iter_mut().zip(&self.domains) {
            *d = *n;
        }
        s.bytes_sent = self.bytes_sent;
        s.bytes_received = self.bytes_received;
        s.reconnects = self.reconnects;
        s.connect_failures = self.connect_failures;
        s.gave_up = self.gave_up;
        s.spans.clone_from(&self.spans);
        Ok(s)
    }
}

impl KindReport {
    fn of(name: &str, k: &KindStats) -> KindReport {
        KindReport {
            name: name.to_string(),
            count: k.count(),
            ok: k.ok,
            delivered: k.delivered,
            errors: ErrorKind::ALL
                .iter()
                .filter(|e| k.errors.get(**e) > 0)
                .map(|e| (e.name().to_string(), k.errors.get(*e)))
                .collect(),
            server_errors: k
                .errors
                .server_classes
                .iter()
                .map(|(c, n)| (c.to_string(), *n))
                .collect(),
            latency: HistSummary::of(&k.latency),
            service: HistSummary::of(&k.service),
            send_lag: HistSummary::of(&k.send_lag),
            elapsed_secs: None,
        }
    }

    /// The measured time its rate is over: its own, or the run's.
    pub fn secs(&self, run_secs: f64) -> f64 {
        self.elapsed_secs.unwrap_or(run_secs)
    }
}

impl ClientUsage {
    pub fn of(u: &Usage, ops: u64, elapsed: Duration) -> ClientUsage {
        let cpu = u.cpu.as_secs_f64();
        ClientUsage {
            cpu_secs: cpu,
            user_secs: u.user.as_secs_f64(),
            system_secs: u.system.as_secs_f64(),
            cpu_percent: if elapsed.is_zero() {
                0.0
            } else {
                100.0 * cpu / elapsed.as_secs_f64()
            },
            cpu_us_per_op: if ops == 0 {
                0.0
            } else {
                cpu * 1e6 / ops as f64
            },
            max_rss_bytes: u.max_rss_bytes,
        }
    }
}

impl LapReport {
    pub fn of(l: &Lap) -> LapReport {
        LapReport {
            elapsed_secs: l.elapsed.as_secs_f64(),
            length_secs: l.length.as_secs_f64(),
            unix_ms: l.unix_ms,
            warmup: l.warmup,
            ok: l.ok,
            errors: l.errors,
            delivered: l.delivered,
            pending: l.pending,
            latency_hdr: b64(&l.latency),
            kinds_hdr: l.kinds.iter().map(|k| b64(k)).collect(),
            client: Some(ClientLapReport::of(&l.client)),
            server: BTreeMap::new(),
        }
    }
}

/// The parts of a finished run the report is built from.
pub struct RunRecord<'a> {
    pub spec: &'a RunSpec,
    pub environment: Environment,
    pub started_unix_ms: u64,
    pub kinds: &'a [&'static str],
    pub domains: &'a [String],
    pub outcome: &'a Outcome,
    /// Per kind, its own measured time when the kinds ran one after the
    /// other; empty when they ran together.
    pub kind_elapsed: &'a [Option<Duration>],
    pub usage: Usage,
    pub verification: Option<Verification>,
    pub results: Results,
    pub exit_code: i32,
}

impl Report {
    pub fn build(r: RunRecord<'_>) -> Report {
        let o = r.outcome;
        let mut measured = Measured::of(&o.measured, r.kinds, r.domains, o.elapsed);
        for (k, e) in measured.kinds.iter_mut().zip(r.kind_elapsed) {
            k.elapsed_secs = e.map(|d| d.as_secs_f64());
        }
        let laps: Vec<LapReport> = o.laps.iter().map(LapReport::of).collect();
        // The laps were encoded from histograms a moment ago: they decode.
        let intervals = Intervals::of(&laps, &measured).ok();
        Report {
            schema: SCHEMA.to_string(),
            loadrig_version: env!("CARGO_PKG_VERSION").to_string(),
            spec: r.spec.masked(),
            environment: r.environment,
            started_unix_ms: r.started_unix_ms,
            interrupted: o.interrupted,
            measured,
            warmup: Measured::of(
                &o.warmup,
                r.kinds,
                r.domains,
                Duration::from_secs_f64(r.spec.warmup_secs),
            ),
            // The CPU sample spans warm-up and measured load alike, so it
            // is divided by the operations and the time of both.
            client: ClientUsage::of(
                &r.usage,
                o.warmup.ops() + o.measured.ops(),
                o.elapsed + Duration::from_secs_f64(r.spec.warmup_secs),
            ),
            laps,
            verification: r.verification,
            results: r.results,
            exit_code: r.exit_code,
            processes: Vec::new(),
            server_stats: None,
            share: None,
            shares: Vec::new(),
            validity: None,
            intervals,
            stopped_early: None,
        }
    }

    /// Wall clock of the end of the measured phase (its last completion),
    /// ms since the epoch, fractional.
    pub fn ended_unix_ms(&self) -> f64 {
        self.measure_start_unix_ms() + self.measured.elapsed_secs * 1e3
    }

    /// Wall clock when the measured phase began (after the warm-up).
    pub fn measure_start_unix_ms(&self) -> f64 {
        self.started_unix_ms as f64 + self.spec.warmup_secs * 1e3
    }

    /// This report as one process of a merged run.
    pub fn process_record(&self) -> ProcessRecord {
        ProcessRecord {
            shard: self.spec.load.shard,
            host: self.environment.host.clone(),
            started_unix_ms: self.started_unix_ms,
            ended_unix_ms: self.ended_unix_ms().round() as u64,
            ops: self.measured.ops,
            ok: self.measured.ok,
            errors: self.measured.errors,
            throughput: self.measured.throughput,
            cpu_secs: self.client.cpu_secs,
            max_rss_bytes: self.client.max_rss_bytes,
            interrupted: self.interrupted,
            exit_code: self.exit_code,
            cpu: self.environment.cpu,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadrig_metrics::OpError;

    #[test]
    fn a_report_read_back_gives_the_same_percentiles() {
        let mut s = Snapshot::new(2, 1);
        let mut x: u64 = 1;
        for i in 0..20_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let lat = Duration::from_nanos((x >> 40) + 150);
            if i % 50 == 0 {
                s.failed(
                    (i % 2) as usize,
                    OpError::server("40001"),
                    Some((lat, lat / 3)),
                );
            } else {
                s.ok((i % 2) as usize, lat, lat / 3, Some(0));
            }
        }
        let kinds = ["a", "b"];
        let domains = ["d".to_string()];
        let m = Measured::of(&s, &kinds, &domains, Duration::from_secs(2));
        let text = serde_json::to_string(&m).unwrap();
        let back: Measured = serde_json::from_str(&text).unwrap();
        let snap = back.snapshot().unwrap();
        assert_eq!(snap.ops(), s.ops());
        assert_eq!(snap.domains, s.domains);
        for (a, b) in snap.kinds.iter().zip(&s.kinds) {
            assert_eq!(a.ok, b.ok);
            assert_eq!(a.errors.total(), b.errors.total());
            for p in [0.0, 50.0, 90.0, 99.0, 99.9, 100.0] {
                assert_eq!(a.latency.percentile(p), b.latency.percentile(p), "p{p}");
                assert_eq!(a.service.percentile(p), b.service.percentile(p), "p{p}");
            }
        }
    }
}
