//! The Erlvolt bench's own lines, printed when a run has a `--preset` (one
//! of its setups), so a run compares with that bench's published runs line
//! by line: its parameter line under loadrig's header, its lap line in
//! place of loadrig's, its `overall` line and its closing line after the
//! summary, and over several processes its `Total transactions per
//! second` line. Layouts follow bench.erl's and erlvolt_profiler.erl's
//! `io:format` strings (widths, thousands separators, units); the figures
//! are loadrig's measurements. What differs: docs/reference/workloads.md, section
//! "The Erlvolt bench's lines".

use loadrig_metrics::LapView;
use loadrig_report::fmt::group;
use loadrig_report::Report;
use loadrig_spec::{Dispatch, Pacing, Preset, RunSpec, Stop};

/// `Client 'VSD', voter, 100,000 calls, steady, 200 workers, delay n/a,
/// direct, queue n/a, slots n/a, limit n/a, verbose, 1 stats/sec`, or
/// nothing without a preset. Erlvolt counts a burst and its limit over
/// all workers; loadrig per client, so both are multiplied back.
pub fn client_line(spec: &RunSpec, quiet: bool) -> Option<String> {
    let preset = spec.preset?;
    let load = &spec.load;
    let calls = match load.stop {
        Stop::Count(n) => format!("{} calls", group(n)),
        Stop::Seconds(s) => format!("{}s of calls", loadrig_report::fmt::secs(s)),
    };
    let na = || "n/a".to_string();
    let all = |n: u32| u64::from(n) * u64::from(load.clients);
    let (rhythm, size, delay, limit) = match load.pacing {
        Pacing::Burst {
            size,
            delay_ms,
            limit,
        } => (
            "bursts",
            format!("{} bursts", group(all(size))),
            format!("{delay_ms}ms"),
            group(all(limit)),
        ),
        Pacing::Steady => (
            "steady",
            format!("{} workers", group(u64::from(load.clients))),
            na(),
            na(),
        ),
        Pacing::Rate { rate, .. } => ("rate", format!("{}/s", group(rate as u64)), na(), na()),
    };
    let (mode, queue, slots) = match load.dispatch {
        Dispatch::Direct => ("direct", na(), na()),
        Dispatch::Managed { queue, slots } => {
            ("managed", group(u64::from(queue)), group(u64::from(slots)))
        }
    };
    let verbosity = if quiet { "nonverbose" } else { "verbose" };
    let per_sec = match spec.interval_secs > 0.0 {
        true => loadrig_report::fmt::sig3(1.0 / spec.interval_secs),
        false => na(),
    };
    Some(format!(
        "Client '{}', {}, {calls}, {rhythm}, {size}, delay {delay}, {mode}, queue {queue}, \
         slots {slots}, limit {limit}, {verbosity}, {per_sec} stats/sec",
        preset.label(),
        spec.workload.name(),
    ))
}

/// `Client   VSD: at  1.000sec: lap   19,339 T/sec,  total   19,368 T/sec,
/// success:  19,368, fails: 0, pending:     111, avglat:  0.290ms, maxlat:    3ms`:
/// the lap's rate, the total so far, successes and failures so far, the
/// operations in flight, the lap's mean and maximum latency.
pub fn lap_line(preset: Preset, l: &LapView<'_>) -> String {
    let lat = l.lap.latency_all();
    let (avg, max) = match lat.is_empty() {
        true => ("n/a".to_string(), 0),
        false => (
            format!("{:6.3}ms", lat.mean().as_secs_f64() * 1e3),
            lat.max().as_millis(),
        ),
    };
    let rate = |n: u64, d: std::time::Duration| match d.as_secs_f64() > 0.0 {
        true => (n as f64 / d.as_secs_f64()) as u64,
        false => 0,
    };
    format!(
        "Client {:>5}: at {:6.3}sec: lap {:>8} T/sec,  total {:>8} T/sec, success: {:>7}, fails: {}, \
         pending: {:>7}, avglat: {avg}, maxlat: {max:>4}ms",
        preset.label(),
        l.elapsed.as_secs_f64(),
        group(rate(l.lap.ok_ops(), l.length)),
        group(rate(l.total.ok_ops(), l.active)),
        group(l.total.ok_ops()),
        group(l.total.errors()),
        group(l.pending),
    )
}

/// After the summary: `Client 'VSD' overall: ...`, then `loadrig 0.1.0,
/// bench started ..., ended ...[, database: +N new votes]`; over several
/// processes also `Total transactions per second: N T/sec`, the run's
/// throughput again (not Erlvolt's sum of each VM's own rate).
pub fn closing(r: &Report) -> Vec<String> {
    let Some(preset) = r.spec.preset else {
        return Vec::new();
    };
    let m = &r.measured;
    let secs = m.elapsed_secs;
    let calls = m.ok + m.errors;
    // Erlvolt's rate: successful calls over the whole time.
    let rate = if secs > 0.0 {
        (m.ok as f64 / secs) as u64
    } else {
        0
    };
    let fails = if calls > 0 {
        100.0 * m.errors as f64 / calls as f64
    } else {
        0.0
    };
    let ended = r
        .laps
        .last()
        .map_or(r.started_unix_ms + (secs * 1e3) as u64, |l| l.unix_ms);
    let votes = r
        .verification
        .as_ref()
        .and_then(|v| v.verdict.as_ref())
        .and_then(|v| v.checks.iter().find(|c| c.name.starts_with("rows added")))
        .map_or(String::new(), |c| {
            format!(", database: +{} new votes", group(c.actual.max(0) as u64))
        });
    let mut lines = vec![
        format!(
            "Client '{}' overall: {} T/sec throughput, {fails:.2}% fails, total transactions: {}, \
             fails: {}, total time: {secs:.3}sec",
            preset.label(),
            group(rate),
            group(calls),
            group(m.errors),
        ),
        format!(
            "loadrig {}, bench started {}, ended {}{votes}",
            r.loadrig_version,
            utc(r.started_unix_ms),
            utc(ended)
        ),
    ];
    // The Erlvolt batch sums its VMs' own rates; each process's rate is
    // over its own time, so that sum is not the run's throughput
    // (docs/explanations/rates.md): the line says the one figure above.
    if r.processes.len() > 1 {
        lines.push(format!(
            "Total transactions per second: {} T/sec",
            group(rate)
        ));
    }
    lines
}

/// `2013-02-06 18:56:20` (UTC) from UNIX milliseconds.
fn utc(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::utc;

    #[test]
    fn unix_times_are_civil_utc() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(1_360_176_980_000), "2013-02-06 18:56:20");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00");
    }
}
