//! pgbench's closing numbers, in its words and number formats (pgbench
//! 15's `printResults`), read from the report alone: transactions
//! processed and failed, transactions over `--latency-limit`, latency
//! average and stddev, tps, a section per script when there are several,
//! and `-r`'s per-command latencies from the workload's domain counts
//! (`script S line L us` and `... count`). The lines before them
//! (transaction type to duration) are the workload's results, printed at
//! the end of the run; loadrig's own table follows.

use loadrig_metrics::{Histo, KindStats, Snapshot};
use loadrig_report::Report;
use loadrig_spec::{Pacing, PgbenchSpec, Stop, WorkloadSpec};

/// Milliseconds of a histogram's mean and standard deviation.
fn mean_stddev(h: &Histo) -> (f64, f64) {
    if h.is_empty() {
        return (0.0, 0.0);
    }
    (h.mean().as_secs_f64() * 1e3, h.inner().stdev() / 1e6)
}

/// `failed` of `all` as pgbench writes it: `0 (0.000%)`.
fn share(failed: u64, all: u64) -> String {
    let p = if all == 0 {
        0.0
    } else {
        100.0 * failed as f64 / all as f64
    };
    format!("{failed} ({p:.3}%)")
}

/// The lines after the header, before loadrig's table.
pub fn lines(report: &Report, s: &Snapshot) -> Vec<String> {
    let WorkloadSpec::Pgbench(spec) = &report.spec.workload else {
        return Vec::new();
    };
    let m = &report.measured;
    let secs = m.elapsed_secs.max(1e-9);
    let ok: u64 = s.kinds.iter().map(|k| k.ok).sum();
    let failed: u64 = s.kinds.iter().map(|k| k.errors.total()).sum();
    let mut out = Vec::new();
    match report.spec.load.stop {
        Stop::Count(n) => out.push(format!(
            "number of transactions actually processed: {ok}/{n}"
        )),
        Stop::Seconds(_) => out.push(format!("number of transactions actually processed: {ok}")),
    }
    out.push(format!(
        "number of failed transactions: {}",
        share(failed, ok + failed)
    ));
    let all = s.latency_all();
    if let Some(limit) = spec.latency_limit_ms {
        let over = over_limit(&all, limit);
        out.push(format!(
            "number of transactions above the {limit:.1} ms latency limit: {over}/{} ({:.3}%)",
            ok,
            if ok == 0 {
                0.0
            } else {
                100.0 * over as f64 / ok as f64
            }
        ));
    }
    let (avg, sd) = mean_stddev(&all);
    out.push(format!("latency average = {avg:.3} ms"));
    // pgbench gives the spread where it measures each transaction (a
    // rate, a latency limit); its -P is loadrig's lap line.
    let open = matches!(report.spec.load.pacing, Pacing::Rate { .. });
    if open || spec.latency_limit_ms.is_some() {
        out.push(format!("latency stddev = {sd:.3} ms"));
    }
    out.push(format!(
        "tps = {:.6} (without initial connection time)",
        ok as f64 / secs
    ));
    let total_weight: u64 = spec.scripts.iter().map(|s| u64::from(s.weight)).sum();
    if spec.scripts.len() > 1 {
        for (i, (sc, k)) in spec.scripts.iter().zip(&s.kinds).enumerate() {
            out.extend(script_section(i, sc, k, total_weight, ok, secs));
            if spec.per_statement {
                out.push(" - statement latencies in milliseconds and failures:".into());
                out.extend(statements(spec, report, i));
            }
        }
    } else if spec.per_statement {
        out.push("statement latencies in milliseconds and failures:".into());
        out.extend(statements(spec, report, 0));
    }
    out
}

/// Transactions whose latency was over `limit` milliseconds.
fn over_limit(h: &Histo, limit: f64) -> u64 {
    if h.is_empty() {
        return 0;
    }
    let ns = (limit * 1e6) as u64;
    h.inner()
        .iter_recorded()
        .filter(|v| v.value_iterated_to() > ns)
        .map(|v| v.count_at_value())
        .sum()
}

fn script_section(
    i: usize,
    sc: &loadrig_spec::ScriptSpec,
    k: &KindStats,
    total_weight: u64,
    all_ok: u64,
    secs: f64,
) -> Vec<String> {
    let pct = |n: u64, of: u64| {
        if of == 0 {
            0.0
        } else {
            100.0 * n as f64 / of as f64
        }
    };
    let (avg, sd) = mean_stddev(&k.latency);
    vec![
        format!("SQL script {}: {}", i + 1, sc.name),
        format!(
            " - weight: {} (targets {:.1}% of total)",
            sc.weight,
            pct(u64::from(sc.weight), total_weight)
        ),
        format!(
            " - {} transactions ({:.1}% of total, tps = {:.6})",
            k.ok,
            pct(k.ok, all_ok),
            k.ok as f64 / secs
        ),
        format!(
            " - number of failed transactions: {}",
            share(k.errors.total(), k.ok + k.errors.total())
        ),
        format!(" - latency average = {avg:.3} ms"),
        format!(" - latency stddev = {sd:.3} ms"),
    ]
}

/// `-r`'s lines of script `i`: each command's average milliseconds, its
/// failures (not told apart per command here: 0) and its first line.
fn statements(spec: &PgbenchSpec, report: &Report, i: usize) -> Vec<String> {
    let text: Vec<&str> = spec.scripts[i].text.lines().collect();
    let prefix = format!("script {} line ", i + 1);
    let d = &report.measured.domains;
    let mut out = Vec::new();
    for (k, (name, us)) in d.iter().enumerate().step_by(2) {
        let Some(line) = name
            .strip_prefix(&prefix)
            .and_then(|r| r.strip_suffix(" us"))
            .and_then(|l| l.parse::<usize>().ok())
        else {
            continue;
        };
        let n = d.get(k + 1).map_or(0, |(_, c)| *c);
        let ms = if n == 0 {
            0.0
        } else {
            *us as f64 / n as f64 / 1e3
        };
        let cmd = text.get(line.saturating_sub(1)).map_or("", |l| l.trim());
        out.push(format!("   {ms:11.3}  {:10}  {cmd}", 0));
    }
    out
}
