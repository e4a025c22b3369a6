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

    use std::time::Duration;

    use loadrig_metrics::{OpError, Snapshot};

    use crate::merge::tests::report;

    /// A report of 1,000 operations over 2 s: `vote` 600 at 1 ms (10 of
    /// them failed), `other` 400 at 10 ms.
    fn judged_report() -> Report {
        let mut s = Snapshot::new(2, 3);
        let ms = Duration::from_millis;
        for i in 0..600 {
            match i % 60 {
                0 => s.failed(0, OpError::server("40001"), Some((ms(1), ms(1)))),
                _ => s.ok(0, ms(1), ms(1), None),
            }
        }
        for _ in 0..400 {
            s.ok(1, ms(10), ms(5), None);
        }
        report(0, s, 1_000, Duration::from_secs(2), Vec::new())
    }

    fn judge(r: &Report, t: &str) -> Judged {
        r.judge(&Threshold::parse(t).unwrap())
    }

    fn near(got: Option<f64>, want: f64) -> bool {
        got.is_some_and(|g| (g - want).abs() <= want * 0.02)
    }

    #[test]
    fn a_latency_threshold_over_the_run_holds_for_the_worst_kind() {
        let r = judged_report();
        let all = judge(&r, "p99<5ms");
        assert!(!all.passed && near(all.actual, 0.010), "{all:?}");
        assert!(all.line.ends_with("FAILED"), "{}", all.line);
        assert!(
            all.line.starts_with("threshold p99<5ms: 10") && !all.line.contains("/s"),
            "a time is shown as one: {}",
            all.line
        );
        let vote = judge(&r, "vote:p99<5ms");
        assert!(vote.passed && near(vote.actual, 0.001), "{vote:?}");
        assert!(vote.line.ends_with(" ok"), "{}", vote.line);
        assert!(
            !judge(&r, "OTHER:p99<5ms").passed,
            "kinds match in any case"
        );
    }

    #[test]
    fn deliveries_are_judged_only_by_name() {
        let mut r = judged_report();
        // `other` delivered what it sent: deliveries, not operations.
        r.measured.kinds[1].delivered = r.measured.kinds[1].ok;
        let all = judge(&r, "p99<5ms");
        assert!(all.passed && near(all.actual, 0.001), "{all:?}");
        assert!(!judge(&r, "other:p99<5ms").passed);
        // A kind that completed nothing is an operation kind still.
        r.measured.kinds[1].ok = 0;
        r.measured.kinds[1].delivered = 0;
        assert!(!judge(&r, "p99<5ms").passed);
    }

    #[test]
    fn the_mean_and_the_max_are_each_their_own() {
        let r = judged_report();
        let k = &r.measured.kinds[0].latency;
        assert!(k.mean_us < k.max_us, "{k:?}");
        assert_eq!(judge(&r, "vote:avg<1s").actual, Some(k.mean_us / 1e6));
        assert_eq!(judge(&r, "vote:max<1s").actual, Some(k.max_us / 1e6));
    }

    #[test]
    fn error_rates_of_the_run_and_of_a_kind() {
        let r = judged_report();
        let all = judge(&r, "error_rate<0.005");
        assert!(!all.passed && near(all.actual, 0.01), "{all:?}");
        assert!(all.line.contains(": 1.00% FAILED"), "{}", all.line);
        let vote = judge(&r, "vote:error_rate<0.02");
        assert!(vote.passed && near(vote.actual, 10.0 / 600.0), "{vote:?}");
        let other = judge(&r, "other:error_rate<0.001");
        assert!(other.passed && other.actual == Some(0.0), "{other:?}");
    }

    #[test]
    fn throughputs_of_the_run_and_of_a_kind() {
        let r = judged_report();
        let all = judge(&r, "throughput>400");
        assert!(all.passed && near(all.actual, 990.0 / 2.0), "{all:?}");
        assert!(all.line.contains("/s"), "{}", all.line);
        let other = judge(&r, "other:throughput>250");
        assert!(!other.passed && near(other.actual, 200.0), "{other:?}");
        let mut r = r;
        r.measured.kinds[1].elapsed_secs = Some(1.0);
        assert!(near(judge(&r, "other:throughput>250").actual, 400.0));
        r.measured.kinds[1].elapsed_secs = Some(0.0);
        assert_eq!(judge(&r, "other:throughput>250").actual, Some(0.0));
    }

    #[test]
    fn a_kind_the_report_lacks_fails_and_says_so() {
        let j = judge(&judged_report(), "nope:p99<5ms");
        assert_eq!(j.actual, None);
        assert!(!j.passed);
        assert!(j.line.contains("no kind named 'nope'"), "{}", j.line);
    }

    #[test]
    fn ratios_of_nothing_are_zero() {
        assert_eq!(ratio(0, 0), 0.0);
        assert_eq!(ratio(1, 4), 0.25);
    }
}
