//! redis-benchmark's own output formats, for the redis workload: the `-q`
//! line each test ends with and the `--csv` table, byte for byte in their
//! layout (redis-benchmark 7.0's `printf` formats), figures from loadrig's
//! measurements.
//!
//! `rps` is the successful replies per second over the test's own time
//! (redis-benchmark counts error replies too; loadrig's rates count
//! completed operations only, and a test failing beyond the error gate
//! gets no line at all); latencies are loadrig's per-request latency
//! (completion minus intended start: in the closed loop, minus its send),
//! in milliseconds, from the test's HDR histogram.

use std::time::Duration;

use loadrig_metrics::KindStats;
use loadrig_report::{KindReport, Report};

/// redis-benchmark 7.0's CSV header, exactly.
pub const HEADER: &str = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"";

fn ms(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1e6
}

fn per_sec(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

/// `SET: 123456.79 requests per second, p50=0.231 msec`
pub fn quiet_line(title: &str, k: &KindStats, elapsed: Duration) -> String {
    format!(
        "{title}: {:.2} requests per second, p50={:.3} msec",
        per_sec(k.ok, elapsed.as_secs_f64()),
        ms(k.latency.percentile(50.0))
    )
}

/// The header, then one row per test, in run order; a test that failed
/// beyond the error gate has no row (its line on standard error says so).
pub fn csv_rows(r: &Report) -> Vec<String> {
    let mut out = vec![HEADER.to_string()];
    for k in &r.measured.kinds {
        let failed = k.count - k.ok.min(k.count);
        if super::beyond_gate(k.count, failed, r.spec.max_error_rate) {
            continue;
        }
        out.push(row(k, k.secs(r.measured.elapsed_secs)));
    }
    out
}

fn row(k: &KindReport, secs: f64) -> String {
    let rps = per_sec(k.ok, secs);
    // The summary has no p95; the histogram is exact.
    let p95 = k.latency.histogram().map_or(0.0, |h| {
        if h.is_empty() {
            0.0
        } else {
            ms(h.percentile(95.0))
        }
    });
    let l = &k.latency;
    format!(
        "\"{}\",\"{rps:.2}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{p95:.3}\",\"{:.3}\",\"{:.3}\"",
        k.name,
        l.mean_us / 1e3,
        l.min_us / 1e3,
        l.p50_us / 1e3,
        l.p99_us / 1e3,
        l.max_us / 1e3,
    )
}
