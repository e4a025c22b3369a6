//! memtier_benchmark's closing table (`ALL STATS`) for the redis workload's
//! memtier load (`--ratio`), in memtier's layout: a row for SETs, GETs
//! (with hits and misses per second; with `--command`, a row per command
//! named by its first word), WAITs (never issued here) and the
//! totals; latencies in milliseconds from loadrig's histograms. Bytes are
//! counted per run, not per command, so only the totals row has KB/sec.

use loadrig_metrics::Histo;
use loadrig_report::{Measured, Report};
use loadrig_spec::WorkloadSpec;

const RULE: usize = 124;

/// Whether the run prints memtier's table (a memtier load, `--ratio`).
pub fn styled(r: &Report) -> bool {
    matches!(&r.spec.workload, WorkloadSpec::Redis(s) if s.mix.is_some())
}

/// A latency in microseconds as memtier's column: milliseconds, five
/// decimals.
fn ms(us: f64) -> String {
    format!("{:16.5}", us / 1e3)
}

/// An empty cell `w` wide.
fn dashes(w: usize) -> String {
    format!("{:>w$}", "---")
}

/// What the table's rows share: the measured phase, its length, and the
/// GETs' hits and misses (from the domain counters).
struct Run<'a> {
    m: &'a Measured,
    hits: u64,
    misses: u64,
}

impl Run<'_> {
    /// `n` per second of the measured time.
    fn per_sec(&self, n: u64) -> f64 {
        let secs = self.m.elapsed_secs;
        if secs > 0.0 {
            n as f64 / secs
        } else {
            0.0
        }
    }

    /// A command's row: Sets (`SET`) or Gets (`GET`, with hits and misses
    /// per second); dashes where it has no latency.
    fn kind_row(&self, row: &str, kind: &str) -> String {
        let k = self.m.kinds.iter().find(|k| k.name == kind);
        let (ops, lat) = match k {
            Some(k) => (k.ok, Some(&k.latency)),
            None => (0, None),
        };
        let get = kind == "GET"
            || kind
                .get(..4)
                .is_some_and(|w| w.eq_ignore_ascii_case("GET "));
        let (hit, miss) = match get {
            true => (
                format!("{:13.2}", self.per_sec(self.hits)),
                format!("{:13.2}", self.per_sec(self.misses)),
            ),
            _ => (dashes(13), dashes(13)),
        };
        let lat = match lat.filter(|l| l.count > 0) {
            Some(l) => format!(
                "{}{}{}{}",
                ms(l.mean_us),
                ms(l.p50_us),
                ms(l.p99_us),
                ms(l.p99_9_us)
            ),
            None => dashes(16).repeat(4),
        };
        format!(
            "{row:<6}{:14.2}{hit}{miss}{lat}{}",
            self.per_sec(ops),
            dashes(13)
        )
    }

    /// The totals row: every operation, every kind's latency added, and
    /// the bytes both ways in KB per second.
    fn totals_row(&self, all: &Histo) -> String {
        let lat = match all.is_empty() {
            true => dashes(16).repeat(4),
            false => {
                let at = |p: f64| ms(all.percentile(p).as_nanos() as f64 / 1e3);
                format!(
                    "{}{}{}{}",
                    ms(all.mean().as_nanos() as f64 / 1e3),
                    at(50.0),
                    at(99.0),
                    at(99.9)
                )
            }
        };
        let m = self.m;
        format!(
            "{:<6}{:14.2}{:13.2}{:13.2}{lat}{:13.2}",
            "Totals",
            self.per_sec(m.ok),
            self.per_sec(self.hits),
            self.per_sec(self.misses),
            self.per_sec(m.bytes_sent + m.bytes_received) / 1024.0,
        )
    }
}

/// The table's title and column heads, between rules.
fn heads() -> Vec<String> {
    vec![
        "ALL STATS".to_string(),
        "=".repeat(RULE),
        format!(
            "{:<6}{:>14}{:>13}{:>13}{:>16}{:>16}{:>16}{:>16}{:>13}",
            "Type",
            "Ops/sec",
            "Hits/sec",
            "Misses/sec",
            "Avg. Latency",
            "p50 Latency",
            "p99 Latency",
            "p99.9 Latency",
            "KB/sec"
        ),
        "-".repeat(RULE),
    ]
}

/// The table, or nothing when the run is not memtier's load.
pub fn all_stats(r: &Report) -> anyhow::Result<Vec<String>> {
    let WorkloadSpec::Redis(spec) = &r.spec.workload else {
        return Ok(Vec::new());
    };
    if spec.mix.is_none() {
        return Ok(Vec::new());
    }
    let m = &r.measured;
    let domain = |name: &str| {
        m.domains
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, v)| *v)
    };
    let run = Run {
        m,
        hits: domain("get.hits"),
        misses: domain("get.misses"),
    };
    let snapshot = m
        .snapshot()
        .map_err(|e| anyhow::anyhow!("the report's histograms: {e}"))?;
    let mut lines = heads();
    match spec.mix.as_ref().map(|m| &m.commands[..]) {
        // memtier's --command rows: each named by the command's first word.
        Some(commands) if !commands.is_empty() => {
            for c in commands {
                let name = c.args.first().map_or("", String::as_str);
                lines.push(run.kind_row(name, &c.title()));
            }
        }
        _ => {
            for (row, kind) in [("Sets", "SET"), ("Gets", "GET")] {
                lines.push(run.kind_row(row, kind));
            }
        }
    }
    lines.push(format!(
        "{:<6}{:14.2}{}{}{}",
        "Waits",
        0.0,
        dashes(13).repeat(2),
        dashes(16).repeat(4),
        dashes(13)
    ));
    lines.push(run.totals_row(&snapshot.latency_all()));
    Ok(lines)
}
