//! `--csv`: the per-kind table as CSV, one row per kind and measure.
//! Columns (documented in docs/reference/csv.md): kind, measure, count, ok, errors,
//! rate_per_sec, min_us, avg_us, p50_us, p90_us, p99_us, p99_9_us, max_us.

use loadrig_report::{HistSummary, Report};

pub const HEADER: &str =
    "kind,measure,count,ok,errors,rate_per_sec,min_us,avg_us,p50_us,p90_us,p99_us,p99_9_us,max_us";

pub fn rows(r: &Report) -> Vec<String> {
    let mut out = vec![HEADER.to_string()];
    let secs = r.measured.elapsed_secs;
    for k in &r.measured.kinds {
        let errors: u64 = k.errors.iter().map(|(_, n)| n).sum();
        let rate = if secs > 0.0 { k.ok as f64 / secs } else { 0.0 };
        let lag = (k.send_lag.count > 0).then_some(("send_lag", &k.send_lag));
        let rows = [("latency", &k.latency), ("service", &k.service)]
            .into_iter()
            .chain(lag);
        for (measure, h) in rows {
            out.push(format!(
                "{},{measure},{},{},{errors},{rate:.1},{}",
                k.name,
                k.count,
                k.ok,
                cells(h)
            ));
        }
    }
    out
}

fn cells(h: &HistSummary) -> String {
    [
        h.min_us, h.mean_us, h.p50_us, h.p90_us, h.p99_us, h.p99_9_us, h.max_us,
    ]
    .iter()
    .map(|v| format!("{v:.1}"))
    .collect::<Vec<_>>()
    .join(",")
}
