//! The resources over time (docs/explanations/resources.md section 4): the client's
//! and the server's CPU, memory, bytes and connections per lap, drawn
//! under the throughput and latency charts on the same time axis (seconds
//! since the measured phase began). A chart is drawn only when some
//! report's laps hold what it shows.

use loadrig_report::{ClientLapReport, LapReport, Report};

use super::svg::{Chart, Line, LineChart, XAxis};

const MIB: f64 = 1024.0 * 1024.0;

/// Server memory series, as each target names its own.
const SERVER_MEMORY: [&str; 4] = [
    "redis.used_memory",
    "memcached.bytes",
    "nats.mem",
    "process.rss_bytes",
];

/// Server connection series.
const SERVER_CONNECTIONS: [&str; 5] = [
    "redis.connected_clients",
    "memcached.curr_connections",
    "nats.connections",
    "postgres.backends",
    "mariadb.threads_connected",
];

/// One value per lap, over the time axis; laps without it are skipped.
fn series(r: &Report, value: impl Fn(&LapReport) -> Option<f64>) -> Vec<(f64, f64)> {
    let base = r.spec.warmup_secs;
    r.laps
        .iter()
        .filter(|l| !l.warmup && l.length_secs > 0.0)
        .filter_map(|l| Some((l.elapsed_secs - base, value(l)?)))
        .collect()
}

/// A lap's value per second of the lap.
fn per_sec(l: &LapReport, v: f64) -> f64 {
    v / l.length_secs
}

/// A figure of the client's lap report, as a lap's value.
fn client(f: fn(&ClientLapReport) -> f64) -> impl Fn(&LapReport) -> Option<f64> {
    move |l: &LapReport| l.client.as_ref().map(f)
}

/// Add a line to `to`, unless it has no point.
fn push(to: &mut Vec<Line>, name: String, points: Vec<(f64, f64)>, dashed: bool) {
    if !points.is_empty() {
        to.push(Line {
            name,
            points,
            dashed,
        });
    }
}

/// The lines of the four resource charts, gathered report by report: the
/// client's solid, the server's dashed.
#[derive(Default)]
struct ResourceLines {
    cpu: Vec<Line>,
    mem: Vec<Line>,
    bytes: Vec<Line>,
    conns: Vec<Line>,
}

impl ResourceLines {
    /// CPU: the client's, and the server process's when it is local.
    fn add_cpu(&mut self, r: &Report, label: &dyn Fn(&str) -> String) {
        push(
            &mut self.cpu,
            label("client"),
            series(r, |l| {
                let c = l.client.as_ref()?;
                Some(100.0 * per_sec(l, c.cpu_user_secs + c.cpu_system_secs))
            }),
            false,
        );
        push(
            &mut self.cpu,
            label("server process"),
            series(r, |l| {
                Some(100.0 * per_sec(l, *l.server.get("process.cpu_secs")?))
            }),
            true,
        );
    }

    /// Memory: the client's resident set, and each server memory series.
    fn add_memory(&mut self, r: &Report, label: &dyn Fn(&str) -> String) {
        push(
            &mut self.mem,
            label("client rss"),
            series(r, client(|c| c.rss_bytes as f64 / MIB)),
            false,
        );
        for name in SERVER_MEMORY {
            push(
                &mut self.mem,
                label(name),
                series(r, |l| Some(l.server.get(name)? / MIB)),
                true,
            );
        }
    }

    /// The client's bytes per second, out and in.
    fn add_bytes(&mut self, r: &Report, label: &dyn Fn(&str) -> String) {
        push(
            &mut self.bytes,
            label("client out"),
            series(r, |l| {
                Some(per_sec(l, l.client.as_ref()?.bytes_out as f64) / MIB)
            }),
            false,
        );
        push(
            &mut self.bytes,
            label("client in"),
            series(r, |l| {
                Some(per_sec(l, l.client.as_ref()?.bytes_in as f64) / MIB)
            }),
            true,
        );
    }

    /// Connections: the client's, and each server connection series.
    fn add_connections(&mut self, r: &Report, label: &dyn Fn(&str) -> String) {
        push(
            &mut self.conns,
            label("client"),
            series(r, client(|c| c.connections as f64)),
            false,
        );
        for name in SERVER_CONNECTIONS {
            push(
                &mut self.conns,
                label(name),
                series(r, |l| l.server.get(name).copied()),
                true,
            );
        }
    }
}

/// The resource charts that have a line: CPU, memory, client bytes and
/// connections over `time`.
pub fn charts(reports: &[(&str, &Report)], time: &str) -> Vec<Chart> {
    let many = reports.len() > 1;
    let mut lines = ResourceLines::default();
    for (file, r) in reports {
        let label = |what: &str| super::line_name(many, file, what);
        lines.add_cpu(r, &label);
        lines.add_memory(r, &label);
        lines.add_bytes(r, &label);
        lines.add_connections(r, &label);
    }
    let chart = |title: &str, y: &str, lines: Vec<Line>| {
        (!lines.is_empty()).then(|| {
            Chart::Line(LineChart {
                title: title.into(),
                x_label: time.to_string(),
                y_label: y.into(),
                x_axis: XAxis::Linear,
                lines,
                failed: Vec::new(),
            })
        })
    };
    let ResourceLines {
        cpu,
        mem,
        bytes,
        conns,
    } = lines;
    [
        chart("CPU over time (per lap)", "% of one core", cpu),
        chart("Memory over time (per lap)", "MiB", mem),
        chart("Client bytes over time (per lap)", "MiB/s", bytes),
        chart("Connections over time (per lap)", "connections", conns),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// A lap whose p99 latency rose well above the run's usual, and the
/// server series that changed most, relative to the lap before.
#[derive(Debug, Clone, PartialEq)]
pub struct Rise {
    /// Seconds since the measured phase began, at the lap's end.
    pub at: f64,
    pub p99_ms: f64,
    /// The median of the laps' p99.
    pub usual_ms: f64,
    /// The server series that changed most: name, before, in this lap.
    pub changed: Option<(String, f64, f64)>,
}

/// A lap counts as a rise when its p99 is at least this many times the
/// median lap's.
const RISE: f64 = 2.0;
/// The most rises listed, the highest first.
const MOST: usize = 5;

/// Where latency rose (a lap's p99 at least twice the median lap's), the
/// highest first, each beside the server series with the largest
/// relative change from the lap before.
pub fn rises(r: &Report) -> Vec<Rise> {
    rises_in(&r.laps, r.spec.warmup_secs)
}

/// [`rises`] over `laps`, times counted from `base` seconds.
fn rises_in(laps: &[LapReport], base: f64) -> Vec<Rise> {
    let laps: Vec<&LapReport> = laps.iter().filter(|l| !l.warmup).collect();
    let p99: Vec<Option<f64>> = laps
        .iter()
        .map(|l| {
            let h = loadrig_report::decode_hdr(&l.latency_hdr).ok()?;
            (!h.is_empty()).then(|| h.percentile(99.0).as_nanos() as f64 / 1e6)
        })
        .collect();
    let mut sorted: Vec<f64> = p99.iter().flatten().copied().collect();
    if sorted.len() < 3 {
        return Vec::new();
    }
    sorted.sort_by(f64::total_cmp);
    let usual = sorted[sorted.len() / 2];
    let mut out: Vec<Rise> = laps
        .iter()
        .zip(&p99)
        .enumerate()
        .filter_map(|(i, (l, p))| {
            let p = (*p)?;
            (p >= RISE * usual && usual > 0.0).then(|| Rise {
                at: l.elapsed_secs - base,
                p99_ms: p,
                usual_ms: usual,
                changed: i.checked_sub(1).and_then(|j| largest_change(laps[j], l)),
            })
        })
        .collect();
    out.sort_by(|a, b| b.p99_ms.total_cmp(&a.p99_ms));
    out.truncate(MOST);
    out
}

/// The server series of `now` whose value moved most from `before`,
/// relative to the larger of the two (so a series from 0 counts as 100 %).
fn largest_change(before: &LapReport, now: &LapReport) -> Option<(String, f64, f64)> {
    now.server
        .iter()
        .filter_map(|(name, v)| {
            let b = *before.server.get(name)?;
            let scale = b.abs().max(v.abs());
            (scale > 0.0 && b != *v).then(|| ((v - b).abs() / scale, name, b, *v))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, name, b, v)| (name.clone(), b, v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lap(t: f64, lat_us: u64, server: &[(&str, f64)]) -> LapReport {
        let mut h = loadrig_metrics::Histo::new();
        for _ in 0..100 {
            h.record(std::time::Duration::from_micros(lat_us));
        }
        let mut l = LapReport::of(&loadrig_metrics::Lap {
            elapsed: std::time::Duration::from_secs_f64(t),
            length: std::time::Duration::from_secs(1),
            unix_ms: (t * 1e3) as u64,
            warmup: false,
            ok: 100,
            errors: 0,
            delivered: 0,
            pending: 0,
            latency: h.encode(),
            kinds: Vec::new(),
            client: loadrig_metrics::ClientLap::default(),
        });
        l.server = server.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        l
    }

    #[test]
    fn a_rise_is_named_with_the_series_that_moved_most() {
        let steady = [("redis.used_memory", 100.0), ("redis.evicted_keys", 0.0)];
        let laps = vec![
            lap(1.0, 100, &steady),
            lap(2.0, 110, &steady),
            lap(3.0, 100, &steady),
            lap(
                4.0,
                900,
                &[("redis.used_memory", 110.0), ("redis.evicted_keys", 50.0)],
            ),
            lap(5.0, 100, &steady),
        ];
        let got = rises_in(&laps, 0.0);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].at, 4.0);
        assert_eq!(
            got[0].changed,
            Some(("redis.evicted_keys".into(), 0.0, 50.0))
        );
    }

    #[test]
    fn a_steady_run_has_no_rise() {
        let laps: Vec<LapReport> = (1..10).map(|i| lap(i as f64, 100 + i, &[])).collect();
        assert!(rises_in(&laps, 0.0).is_empty());
    }
}
