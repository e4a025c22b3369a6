//! `--json`: the run's summary as one JSON object on standard output, for
//! scripts and CI (as oha's and k6's JSON summaries are used), read from
//! the report alone. The shape is `loadrig.summary/1`, documented in
//! docs/reference/json.md and held by a golden test; the full record stays the
//! report (`--out`).

use loadrig_report::{HistSummary, KindReport, Report};
use serde_json::{json, Map, Value};

/// The summary's schema name; a change of shape changes it.
pub const SCHEMA: &str = "loadrig.summary/1";

/// The summary of `report`; `failed` are the checks that failed, each in
/// the words the run printed.
pub fn summary(report: &Report, failed: &[String]) -> Value {
    let m = &report.measured;
    let error_rate = if m.ops == 0 {
        0.0
    } else {
        m.errors as f64 / m.ops as f64
    };
    let verification = report
        .verification
        .as_ref()
        .and_then(|v| v.verdict.as_ref())
        .map_or("skipped", |v| match v.passed {
            Some(true) => "passed",
            Some(false) => "failed",
            None => "nothing to check",
        });
    let validity = report.validity_or_judge();
    json!({
        "schema": SCHEMA,
        "workload": report.spec.workload.name(),
        "target": report.spec.target,
        "seed": report.spec.seed,
        "elapsed_secs": m.elapsed_secs,
        "ops": m.ops,
        "ok": m.ok,
        "errors": m.errors,
        "error_rate": error_rate,
        "throughput": m.throughput,
        "delivered": m.delivered,
        "kinds": m.kinds.iter().map(kind).collect::<Vec<_>>(),
        "intervals": super::intervals::json(report),
        "client": {
            "cpu_percent": report.client.cpu_percent,
            "cpu_us_per_op": report.client.cpu_us_per_op,
            "max_rss_bytes": report.client.max_rss_bytes,
        },
        "verification": verification,
        "measurement": validity.line(),
        "validity": validity,
        "interrupted": report.interrupted,
        "failed_checks": failed,
        "exit_code": report.exit_code,
    })
}

fn kind(k: &KindReport) -> Value {
    let counts = |pairs: &[(String, u64)]| -> Map<String, Value> {
        pairs
            .iter()
            .map(|(name, n)| (name.clone(), json!(n)))
            .collect()
    };
    json!({
        "name": k.name,
        "count": k.count,
        "ok": k.ok,
        "errors": counts(&k.errors),
        "server_errors": counts(&k.server_errors),
        "latency_us": latency(&k.latency),
    })
}

fn latency(h: &HistSummary) -> Value {
    json!({
        "min": h.min_us,
        "mean": h.mean_us,
        "p50": h.p50_us,
        "p90": h.p90_us,
        "p99": h.p99_us,
        "p99.9": h.p99_9_us,
        "max": h.max_us,
    })
}
