//! `loadrig compare A.json B.json [--max-regression 10%]`: two reports
//! side by side, never a re-run. Rows: throughput, client CPU per
//! operation, errors, then per kind (matched by name) p50, p99, p99.9 and
//! max latency, each with B's difference from A in percent.
//!
//! The exit code is for CI (docs/guides/charts.md, section compare): 0 when B is within the
//! threshold of A, 1 on a regression, 2 on bad input (unreadable report,
//! different workloads). A regression is any of: throughput lower by more
//! than the threshold; a kind's p99 higher by more than it; errors per
//! operation higher than A's. The other rows are shown, not judged: the
//! maximum is one sample, and the client's CPU is loadrig's cost.

use std::path::Path;

use loadrig_report::{KindReport, Report};

use crate::plot::InputError;
use loadrig_report::exit;

/// Which way is worse for a row.
#[derive(Clone, Copy, PartialEq)]
enum Judge {
    /// Lower is worse (throughput), judged against the threshold.
    Lower,
    /// Higher is worse (p99), judged against the threshold.
    Higher,
    /// Shown only.
    None,
}

struct Row {
    name: String,
    a: f64,
    b: f64,
    decimals: usize,
    judge: Judge,
}

fn diff_percent(a: f64, b: f64) -> Option<f64> {
    (a != 0.0).then(|| (b - a) / a * 100.0)
}

impl Row {
    fn regressed(&self, max: f64) -> bool {
        match (self.judge, diff_percent(self.a, self.b)) {
            (Judge::Lower, Some(d)) => d < -max,
            (Judge::Higher, Some(d)) => d > max,
            // From nothing to something (a p99 where A had none) is not
            // judged: there is no ratio.
            _ => false,
        }
    }
}

fn kind_rows(a: &KindReport, b: &KindReport) -> Vec<Row> {
    let ms = |us: f64| us / 1e3;
    let row = |what: &str, x: f64, y: f64, judge| Row {
        name: format!("{} {what} (ms)", a.name),
        a: ms(x),
        b: ms(y),
        decimals: 3,
        judge,
    };
    vec![
        row("p50", a.latency.p50_us, b.latency.p50_us, Judge::None),
        row("p99", a.latency.p99_us, b.latency.p99_us, Judge::Higher),
        row("p99.9", a.latency.p99_9_us, b.latency.p99_9_us, Judge::None),
        row("max", a.latency.max_us, b.latency.max_us, Judge::None),
    ]
}

fn error_rate(r: &Report) -> f64 {
    if r.measured.ops == 0 {
        0.0
    } else {
        r.measured.errors as f64 / r.measured.ops as f64
    }
}

/// The rows every comparison has: throughput, client CPU, operations, errors.
fn run_rows(a: &Report, b: &Report) -> Vec<Row> {
    vec![
        Row {
            name: "throughput (ok/s)".into(),
            a: a.measured.throughput,
            b: b.measured.throughput,
            decimals: 1,
            judge: Judge::Lower,
        },
        Row {
            name: "client CPU per op (us)".into(),
            a: a.client.cpu_us_per_op,
            b: b.client.cpu_us_per_op,
            decimals: 2,
            judge: Judge::None,
        },
        Row {
            name: "operations".into(),
            a: a.measured.ops as f64,
            b: b.measured.ops as f64,
            decimals: 0,
            judge: Judge::None,
        },
        Row {
            name: "errors".into(),
            a: a.measured.errors as f64,
            b: b.measured.errors as f64,
            decimals: 0,
            judge: Judge::None,
        },
    ]
}

/// The rows of the kinds both reports have (in A's order), and a line for
/// each kind only one of them has.
fn kinds_rows(a: &Report, b: &Report, names: (&str, &str)) -> (Vec<Row>, Vec<String>) {
    let mut rows = Vec::new();
    let mut only = Vec::new();
    for ka in &a.measured.kinds {
        match b.measured.kinds.iter().find(|kb| kb.name == ka.name) {
            Some(kb) => rows.extend(kind_rows(ka, kb)),
            None => only.push(format!("kind {} only in {}", ka.name, names.0)),
        }
    }
    for kb in &b.measured.kinds {
        if !a.measured.kinds.iter().any(|ka| ka.name == kb.name) {
            only.push(format!("kind {} only in {}", kb.name, names.1));
        }
    }
    (rows, only)
}

/// The column heads and a line per row, and the rows that regressed
/// beyond `max` (each as its name and difference).
fn row_lines(rows: &[Row], max: f64, names: (&str, &str)) -> (Vec<String>, Vec<String>) {
    let w = rows.iter().map(|r| r.name.len()).max().unwrap_or(10);
    let (wa, wb) = (names.0.len().max(12), names.1.len().max(12));
    let mut out = vec![format!(
        "{:<w$}  {:>wa$}  {:>wb$}  {:>9}",
        "", names.0, names.1, "B vs A"
    )];
    let mut regressions = Vec::new();
    for r in rows {
        let d = diff_percent(r.a, r.b).map_or_else(|| "-".to_string(), |d| format!("{d:+.1}%"));
        let mark = if r.regressed(max) {
            regressions.push(format!("{} {d}", r.name));
            "  REGRESSION"
        } else {
            ""
        };
        out.push(format!(
            "{:<w$}  {:>wa$.p$}  {:>wb$.p$}  {d:>9}{mark}",
            r.name,
            r.a,
            r.b,
            p = r.decimals
        ));
    }
    (out, regressions)
}

/// The table's lines and whether B regressed.
pub fn table(a: &Report, b: &Report, max: f64, names: (&str, &str)) -> (Vec<String>, bool) {
    let mut rows = run_rows(a, b);
    let (kinds, only) = kinds_rows(a, b, names);
    rows.extend(kinds);
    let (mut out, mut regressions) = row_lines(&rows, max, names);
    out.extend(only);
    let (ea, eb) = (error_rate(a), error_rate(b));
    if eb > ea {
        regressions.push(format!(
            "errors per operation {:.4}% against {:.4}%",
            eb * 100.0,
            ea * 100.0
        ));
    }
    if a.spec.load != b.spec.load {
        out.push("note: the load models differ (clients, pipeline, rate or stop)".into());
    }
    let regressed = !regressions.is_empty();
    if regressed {
        out.push(format!(
            "regression beyond {max}%: {}",
            regressions.join("; ")
        ));
    } else {
        out.push(format!("no regression beyond {max}%"));
    }
    (out, regressed)
}

pub fn run(a_path: &Path, b_path: &Path, max: f64) -> anyhow::Result<i32> {
    let a = Report::read(a_path)?;
    let b = Report::read(b_path)?;
    if a.spec.workload.name() != b.spec.workload.name() {
        return Err(InputError {
            path: b_path.display().to_string(),
            reason: format!(
                "workload {}, {} ran {}: not comparable",
                b.spec.workload.name(),
                a_path.display(),
                a.spec.workload.name()
            ),
        }
        .into());
    }
    let (lines, regressed) = table(
        &a,
        &b,
        max,
        (&crate::plot::stem(a_path), &crate::plot::stem(b_path)),
    );
    for l in lines {
        println!("{l}");
    }
    Ok(if regressed {
        exit::CHECK_FAILED
    } else {
        exit::OK
    })
}
