//! A report against the thresholds of its spec (`--threshold`): each
//! judged from the report alone, so `loadrig run` and a later look at the
//! file agree.

use loadrig_spec::{Metric, Threshold};

use crate::fmt::{dur, group, sig3};
use crate::{HistSummary, KindReport, Report};

/// One threshold's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// What was measured, in the threshold's unit (seconds for a time);
    /// `None` when the report has no such kind.
    pub actual: Option<f64>,
    pub passed: bool,
    /// `p99<5ms: 4.21ms ok`, as printed.
    pub line: String,
}

impl Report {
    /// Judge `t`. Over the whole run a latency threshold holds for the
    /// worst of the kinds of operations (deliveries are not operations:
    /// name their kind to judge them).
    pub fn judge(&self, t: &Threshold) -> Judged {
        let m = &self.measured;
        let actual = match &t.kind {
            Some(name) => m
                .kinds
                .iter()
                .find(|k| k.name.eq_ignore_ascii_case(name))
                .map(|k| of_kind(k, t.metric, m.elapsed_secs)),
            None => Some(match t.metric {
                Metric::Throughput => m.throughput,
                Metric::ErrorRate => ratio(m.errors, m.ops),
                metric => m
                    .kinds
                    .iter()
                    .filter(|k| k.delivered < k.ok || k.ok == 0)
                    .map(|k| latency(&k.latency, metric))
                    .fold(0.0, f64::max),
            }),
        };
        let passed = actual.is_some_and(|a| t.cmp.holds(a, t.value));
        let shown = match actual {
            None => format!("no kind named '{}'", t.kind.as_deref().unwrap_or("")),
            Some(a) if t.metric.is_time() => dur(crate::fmt::seconds(a)),
            Some(a) if t.metric == Metric::ErrorRate => format!("{}%", sig3(a * 100.0)),
            Some(a) => format!("{}/s", group(a.round() as u64)),
        };
        let verdict = if passed { "ok" } else { "FAILED" };
        Judged {
            actual,
            passed,
            line: format!("threshold {t}: {shown} {verdict}"),
        }
    }
}

/// Whether `t` holds on one lap's own figures (`--abort-after`): `lap`
/// what completed in it over `secs`, `kinds` the kinds' names, `pending`
/// what was still in flight at its end. A lap in which nothing completed
/// while operations were pending breaks a latency threshold (the target
/// stalled); one with nothing at all holds it. A kind not in the run
/// holds (the judge at the end says so).
pub fn holds_in_lap(
    t: &Threshold,
    lap: &loadrig_metrics::Snapshot,
    kinds: &[&str],
    secs: f64,
    pending: u64,
) -> bool {
    let chosen: Vec<&loadrig_metrics::KindStats> = match &t.kind {
        Some(name) => match kinds.iter().position(|k| k.eq_ignore_ascii_case(name)) {
            Some(i) => lap.kinds.get(i).into_iter().collect(),
            None => return true,
        },
        None => lap.kinds.iter().collect(),
    };
    let ops: u64 = chosen.iter().map(|k| k.count() - k.delivered).sum();
    let ok: u64 = chosen.iter().map(|k| k.ok_ops()).sum();
    let actual = match t.metric {
        Metric::Throughput if secs > 0.0 => ok as f64 / secs,
        Metric::Throughput => return true,
        Metric::ErrorRate => ratio(ops - ok.min(ops), ops),
        metric => {
            let timed = chosen
                .iter()
                .filter(|k| !k.latency.is_empty() && (k.delivered < k.ok || k.ok == 0));
            let worst = timed
                .map(|k| match metric.percentile() {
                    Some(p) => k.latency.percentile(p),
                    None if metric == Metric::Max => k.latency.max(),
                    None => k.latency.mean(),
                })
                .max();
            match worst {
                Some(d) => d.as_secs_f64(),
                None if pending > 0 => f64::INFINITY,
                None => return true,
            }
        }
    };
    t.cmp.holds(actual, t.value)
}

fn of_kind(k: &KindReport, metric: Metric, elapsed: f64) -> f64 {
    match metric {
        Metric::Throughput => {
            let over = k.elapsed_secs.unwrap_or(elapsed);
            if over > 0.0 {
                k.ok as f64 / over
            } else {
                0.0
            }
        }
        Metric::ErrorRate => ratio(k.count.saturating_sub(k.ok), k.count),
        metric => latency(&k.latency, metric),
    }
}

/// A latency figure in seconds. A percentile the summary prints is read
/// from it; any other from the histogram the report keeps (the summary's
/// own figures came from that histogram, so both agree).
fn latency(h: &HistSummary, metric: Metric) -> f64 {
    let us = match metric.percentile() {
        Some(50.0) => h.p50_us,
        Some(90.0) => h.p90_us,
        Some(99.0) => h.p99_us,
        Some(99.9) => h.p99_9_us,
        Some(100.0) => h.max_us,
        // A histogram that does not decode judges as infinitely slow, so
        // a `<` threshold fails rather than passes on nothing.
        Some(p) => h
            .histogram()
            .map_or(f64::INFINITY, |h| h.percentile(p).as_secs_f64() * 1e6),
        None if metric == Metric::Max => h.max_us,
        None => h.mean_us,
    };
    us / 1e6
}

fn ratio(part: u64, all: u64) -> f64 {
    if all == 0 {
        0.0
    } else {
        part as f64 / all as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_percentile_is_read_from_the_histogram() {
        let mut h = loadrig_metrics::Histo::new();
        for ms in 1..=100 {
            h.record(std::time::Duration::from_millis(ms));
        }
        let s = HistSummary::of(&h);
        let p95 = latency(&s, Metric::Percentile(950_000));
        assert!((p95 - 0.095).abs() < 0.001, "{p95}");
        assert_eq!(latency(&s, Metric::Percentile(990_000)), s.p99_us / 1e6);
        assert_eq!(latency(&s, Metric::Max), s.max_us / 1e6);
    }

    #[test]
    fn ratios_of_nothing_are_zero() {
        assert_eq!(ratio(0, 0), 0.0);
        assert_eq!(ratio(1, 4), 0.25);
    }
}
