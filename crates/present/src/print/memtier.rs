//! memtier_benchmark's closing table (`ALL STATS`) for the redis workload's
//! memtier load (`--ratio`), in memtier's layout: a row for SETs, GETs
//! (with hits and misses per second), WAITs (never issued here) and the
//! totals; latencies in milliseconds from loadrig's histograms. Bytes are
//! counted per run, not per command, so only the totals row has KB/sec.

use loadrig_report::Report;
use loadrig_spec::WorkloadSpec;

const RULE: usize = 124;

/// Whether the run prints memtier's table (a memtier load, `--ratio`).
pub fn styled(r: &Report) -> bool {
    matches!(&r.spec.workload, WorkloadSpec::Redis(s) if s.mix.is_some())
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
    let secs = m.elapsed_secs;
    let per_sec = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let domain = |name: &str| {
        m.domains
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, v)| *v)
    };
    let (hits, misses) = (domain("get.hits"), domain("get.misses"));
    let snapshot = m
        .snapshot()
        .map_err(|e| anyhow::anyhow!("the report's histograms: {e}"))?;
    let ms = |us: f64| format!("{:16.5}", us / 1e3);
    let dashes = |w: usize| format!("{:>w$}", "---");
    let mut lines = vec![
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
    ];
    for (row, kind) in [("Sets", "SET"), ("Gets", "GET")] {
        let k = m.kinds.iter().find(|k| k.name == kind);
        let (ops, lat) = match k {
            Some(k) => (k.ok, Some(&k.latency)),
            None => (0, None),
        };
        let (hit, miss) = match kind {
            "GET" => (
                format!("{:13.2}", per_sec(hits)),
                format!("{:13.2}", per_sec(misses)),
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
        lines.push(format!(
            "{row:<6}{:14.2}{hit}{miss}{lat}{}",
            per_sec(ops),
            dashes(13)
        ));
    }
    lines.push(format!(
        "{:<6}{:14.2}{}{}{}",
        "Waits",
        0.0,
        dashes(13).repeat(2),
        dashes(16).repeat(4),
        dashes(13)
    ));
    let all = snapshot.latency_all();
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
    lines.push(format!(
        "{:<6}{:14.2}{:13.2}{:13.2}{lat}{:13.2}",
        "Totals",
        per_sec(m.ok),
        per_sec(hits),
        per_sec(misses),
        per_sec(m.bytes_sent + m.bytes_received) / 1024.0,
    ));
    Ok(lines)
}
