//! Metric export while a run goes (docs/guides/export.md): each lap the
//! [`ExportSink`] takes the measured totals so far into a [`Frame`] of
//! plain numbers and hands it on, without waiting, to what exports it:
//! the `/metrics` server of `--metrics-listen` (`serve.rs`, which renders
//! `openmetrics.rs`'s text on each scrape) and the pushers of `--out
//! NAME=URL` (`push.rs`). The engine's thread only builds the frame;
//! rendering, sockets and waits are on the exporters' own threads.

pub mod buckets;
pub mod influx;
pub mod openmetrics;
pub mod push;
pub mod remote_write;
pub mod serve;

use std::sync::Arc;
use std::time::Duration;

use loadrig_metrics::{ErrorKind, LapView};
use loadrig_report::Report;
use loadrig_spec::RunSpec;

use crate::session::Sink;
use buckets::Buckets;

/// What a run exports, made before anything connects.
pub struct Plan {
    pub labels: Labels,
    /// `--metrics-listen`, listening already.
    pub server: Option<serve::Server>,
    /// `--out NAME=URL`.
    pub pushes: Vec<push::Endpoint>,
}

/// The labels every exported series carries: which run, which
/// workload, which target (masked: no password leaves the process),
/// which shard.
#[derive(Debug, Clone, PartialEq)]
pub struct Labels {
    pub run: String,
    pub workload: String,
    pub target: String,
    /// `index/count`, `0/1` for a whole run.
    pub shard: String,
}

impl Labels {
    pub fn of(spec: &RunSpec, run: &str) -> Labels {
        let shard = spec.load.shard;
        Labels {
            run: run.to_string(),
            workload: spec.workload.name().to_string(),
            target: spec.masked().target,
            shard: format!("{}/{}", shard.index, shard.count),
        }
    }

    /// The pairs, in the order they are written.
    pub fn pairs(&self) -> [(&'static str, &str); 4] {
        [
            ("run", &self.run),
            ("workload", &self.workload),
            ("target", &self.target),
            ("shard", &self.shard),
        ]
    }
}

/// A run id for a run that was given none: the launch time in seconds
/// and the process id, unique on a host.
pub fn default_run_id() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{secs}-{}", std::process::id())
}

/// One kind's measured totals so far.
#[derive(Debug, Clone, PartialEq)]
pub struct KindFrame {
    pub name: &'static str,
    /// Operations that succeeded, deliveries not included (the report's
    /// `ok` less its deliveries).
    pub ok: u64,
    pub delivered: u64,
    /// Failed operations by error kind and class (class empty but for
    /// server errors), only those that happened.
    pub errors: Vec<(&'static str, &'static str, u64)>,
    pub latency: Buckets,
    pub service: Buckets,
    /// HDR's p50, p90, p99 and p99.9 of the latency so far, in µs: what
    /// the report will say (InfluxDB has no histograms to take them from).
    pub percentiles_us: [f64; 4],
}

/// What one lap tells the exporters: the measured totals so far (so a
/// lost frame loses nothing but its time), and the gauges at its end.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// Wall clock at the end of the lap, ms since the epoch.
    pub unix_ms: i64,
    pub kinds: Vec<KindFrame>,
    pub in_flight: u64,
    pub clients: u64,
    pub connections: u64,
    /// The client's CPU since the load began, user and system, seconds.
    pub cpu_user: f64,
    pub cpu_system: f64,
    pub rss_bytes: u64,
}

impl Frame {
    /// The frame of `lap`, kinds named by `names`, CPU so far `cpu`.
    pub fn of(lap: &LapView<'_>, names: &[&'static str], clients: u64, cpu: (f64, f64)) -> Frame {
        let kinds = lap
            .total
            .kinds
            .iter()
            .enumerate()
            .map(|(i, k)| KindFrame {
                name: names.get(i).copied().unwrap_or("other"),
                ok: k.ok_ops(),
                delivered: k.delivered,
                errors: errors_of(&k.errors),
                latency: Buckets::of(&k.latency),
                service: Buckets::of(&k.service),
                percentiles_us: [50.0, 90.0, 99.0, 99.9]
                    .map(|p| k.latency.percentile(p).as_nanos() as f64 / 1e3),
            })
            .collect();
        Frame {
            unix_ms: now_ms(),
            kinds,
            in_flight: lap.pending,
            clients,
            connections: lap.client.connections,
            cpu_user: cpu.0,
            cpu_system: cpu.1,
            rss_bytes: lap.client.rss_bytes,
        }
    }
}

/// `phase`'s kinds added into `before`.
fn fold(before: &mut Vec<KindFrame>, mut phase: Vec<KindFrame>) {
    for (k, b) in phase.iter_mut().zip(before.iter()) {
        k.add(b);
    }
    *before = phase;
}

fn errors_of(e: &loadrig_metrics::ErrorCounts) -> Vec<(&'static str, &'static str, u64)> {
    let mut out: Vec<_> = ErrorKind::ALL
        .iter()
        .filter(|k| **k != ErrorKind::Server)
        .map(|k| (k.name(), "", e.get(*k)))
        .filter(|(_, _, n)| *n > 0)
        .collect();
    out.extend(e.server_classes.iter().map(|(c, n)| ("server", *c, *n)));
    out
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Where frames go: each takes them without blocking the caller.
pub trait Exporter {
    /// The latest frame; never waits on a socket.
    fn publish(&mut self, frame: Arc<Frame>);
    /// The run is over: a line to show after the summary, if any. May
    /// wait, bounded, for the last frame to leave.
    fn finish(&mut self) -> Option<String> {
        None
    }
}

impl KindFrame {
    /// `earlier`'s counts added to this one's: an earlier phase's totals
    /// (redis-benchmark's tests run one after the other, each phase's
    /// totals from zero). Percentiles do not add: a kind runs in one
    /// phase, so those of the side that has counts are kept.
    fn add(&mut self, earlier: &KindFrame) {
        if self.latency.total() == 0 {
            self.percentiles_us = earlier.percentiles_us;
        }
        self.ok += earlier.ok;
        self.delivered += earlier.delivered;
        for &(e, c, n) in &earlier.errors {
            match self.errors.iter_mut().find(|x| x.0 == e && x.1 == c) {
                Some(x) => x.2 += n,
                None => self.errors.push((e, c, n)),
            }
        }
        self.latency.add(&earlier.latency);
        self.service.add(&earlier.service);
    }
}

/// The sink that feeds the exporters once per lap.
pub struct ExportSink {
    /// The totals of the phases before this one, per kind.
    before: Vec<KindFrame>,
    /// This phase's last frame's kinds, and its measured time.
    last: Option<(Vec<KindFrame>, Duration)>,
    names: Vec<&'static str>,
    clients: u64,
    cpu: Duration,
    cpu_system: Duration,
    exporters: Vec<Box<dyn Exporter>>,
}

impl ExportSink {
    pub fn new(names: Vec<&'static str>, clients: u64, exporters: Vec<Box<dyn Exporter>>) -> Self {
        ExportSink {
            before: Vec::new(),
            last: None,
            names,
            clients,
            cpu: Duration::ZERO,
            cpu_system: Duration::ZERO,
            exporters,
        }
    }
}

impl Sink for ExportSink {
    fn lap(&mut self, lap: &LapView<'_>) {
        self.cpu += lap.client.cpu_user;
        self.cpu_system += lap.client.cpu_system;
        let cpu = (self.cpu.as_secs_f64(), self.cpu_system.as_secs_f64());
        let mut frame = Frame::of(lap, &self.names, self.clients, cpu);
        // The measured time going back: a new phase, its totals from zero.
        if let Some((kinds, measured)) = self.last.take() {
            if lap.measured < measured {
                fold(&mut self.before, kinds);
            }
        }
        self.last = Some((frame.kinds.clone(), lap.measured));
        for (k, b) in frame.kinds.iter_mut().zip(&self.before) {
            k.add(b);
        }
        let frame = Arc::new(frame);
        for e in &mut self.exporters {
            e.publish(frame.clone());
        }
    }

    fn end(&mut self, _report: &mut Report) -> Option<String> {
        let lines: Vec<String> = self
            .exporters
            .iter_mut()
            .filter_map(|e| e.finish())
            .collect();
        (!lines.is_empty()).then(|| lines.join("\n"))
    }
}
