//! The summary's intervals (docs/explanations/intervals.md): one line for the
//! throughput, one per kind with each percentile and its 95% interval
//! (`p99 1.75ms ±4.0%`), and with `--until` whether the run got there.
//! Lines of their own under the table, not columns in it: a `±4.0%`
//! beside each of four percentiles would take the table past 150
//! characters, and the table's columns are what scripts read.

use loadrig_report::confidence::{plus_minus, Interval, Intervals, MIN_LAPS, PERCENTILES};
use loadrig_report::fmt::{dur, group, seconds};
use loadrig_report::Report;
use loadrig_spec::Until;
use serde_json::{json, Value};

/// The interval lines of `report`; none for a report written before
/// intervals were kept.
pub fn lines(report: &Report) -> Vec<String> {
    let Some(iv) = &report.intervals else {
        return Vec::new();
    };
    let mut out = vec![throughput_line(iv)];
    if iv.throughput.is_some() {
        let name_w = iv.kinds.iter().map(|k| k.name.len()).max().unwrap_or(4);
        for k in iv.kinds.iter().filter(|k| k.laps > 0) {
            let cells: Vec<String> = PERCENTILES
                .iter()
                .zip(k.all())
                .map(|((name, _), i)| match i {
                    Some(i) => format!("{name} {}", with_width(&i, |v| dur(seconds(v / 1e6)))),
                    None => format!("{name} (no interval)"),
                })
                .collect();
            out.push(format!("  {:<name_w$}  {}", k.name, cells.join("  ")));
        }
    }
    out.extend(report.spec.until.as_ref().map(|u| until_line(u, iv)));
    out
}

/// `95% intervals over 15 laps: throughput 10,012/s ±0.8%`, or why none.
fn throughput_line(iv: &Intervals) -> String {
    match iv.throughput {
        Some(t) => format!(
            "95% intervals over {} laps: throughput {}",
            iv.laps,
            with_width(&t, |v| format!("{}/s", group(v.max(0.0) as u64)))
        ),
        None => format!(
            "95% intervals: none ({} measured {}, at least {MIN_LAPS} needed: a longer run or a shorter --interval)",
            iv.laps,
            if iv.laps == 1 { "lap" } else { "laps" }
        ),
    }
}

/// The figure and its relative half-width.
fn with_width(i: &Interval, show: impl Fn(f64) -> String) -> String {
    match i.relative() {
        Some(r) => format!("{} {}", show(i.point), plus_minus(r)),
        None => show(i.point),
    }
}

/// Whether the run got the interval `--until` asked for.
pub fn reached(u: &Until, iv: &Intervals) -> (bool, Option<f64>) {
    let widest = iv.widest(u.figure);
    (widest.is_some_and(|w| w <= u.within), widest)
}

/// `until p99 ±2%: reached (p99 ±1.8%)`, or `not reached by the end`.
fn until_line(u: &Until, iv: &Intervals) -> String {
    let (ok, widest) = reached(u, iv);
    let now = widest.map_or_else(
        || "no interval yet".to_string(),
        |w| format!("{} {}", u.figure, plus_minus(w)),
    );
    if ok {
        format!("until {u}: reached ({now})")
    } else {
        format!("until {u}: NOT reached by the end of --duration ({now})")
    }
}

/// The intervals for the JSON summary: `{laps, throughput, kinds: {name:
/// {p50: {point, low, high}, ...}}, until}`; `null` without them.
pub fn json(report: &Report) -> Value {
    let Some(iv) = &report.intervals else {
        return Value::Null;
    };
    let kinds: serde_json::Map<String, Value> = iv
        .kinds
        .iter()
        .map(|k| {
            let ps: serde_json::Map<String, Value> = PERCENTILES
                .iter()
                .zip(k.all())
                .map(|((name, _), i)| (name.to_string(), json!(i)))
                .collect();
            (k.name.clone(), json!({ "laps": k.laps, "latency_us": ps }))
        })
        .collect();
    let until = report.spec.until.as_ref().map(|u| {
        let (ok, widest) = reached(u, iv);
        json!({ "target": u.to_string(), "reached": ok, "widest": widest })
    });
    json!({
        "confidence": 0.95,
        "laps": iv.laps,
        "throughput": iv.throughput,
        "kinds": kinds,
        "until": until,
    })
}
