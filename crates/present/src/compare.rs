//! `loadrig compare A.json B.json [--max-regression 10%]`: two reports
//! side by side, never a re-run. Rows: throughput, client CPU per
//! operation, errors, then per kind (matched by name) p50, p99, p99.9 and
//! max latency, each with B's difference from A in percent.
//!
//! Where both reports carry 95% intervals (docs/explanations/intervals.md)
//! a row says whether the difference is significant: `faster`, `slower`
//! or `no sig. diff.`, the difference set against the half-widths of both
//! intervals combined (sqrt(hA^2 + hB^2), the interval of a difference of
//! two independent estimates).
//!
//! The exit code is for CI (docs/guides/charts.md, section compare): 0 when B is within the
//! threshold of A, 1 on a regression, 4 when there is none but either
//! measurement was judged INVALID (compare is always `--strict`), 2 on bad
//! input (unreadable report, different workloads). A regression is any
//! of: throughput lower by more than the threshold; a kind's p99 higher
//! by more than it; errors per operation higher than A's. The other rows
//! are shown, not judged: the maximum is one sample, and the client's CPU
//! is loadrig's cost.

use std::path::Path;

use loadrig_report::confidence::Interval;
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
    /// Both figures' 95% intervals, where both reports have them, and
    /// whether more is better (throughput) or worse (latency).
    intervals: Option<(Interval, Interval, bool)>,
}

impl Row {
    fn of(name: String, (a, b): (f64, f64), decimals: usize, judge: Judge) -> Row {
        Row {
            name,
            a,
            b,
            decimals,
            judge,
            intervals: None,
        }
    }

    /// `faster`, `slower`, `no sig. diff.`, or nothing without intervals.
    fn significance(&self) -> &'static str {
        let Some((ia, ib, more_is_better)) = self.intervals else {
            return "";
        };
        let half = |i: Interval| (i.high - i.low) / 2.0;
        let reach = half(ia).hypot(half(ib));
        let d = ib.point - ia.point;
        if d.abs() <= reach {
            "no sig. diff."
        } else if (d > 0.0) == more_is_better {
            "faster"
        } else {
            "slower"
        }
    }
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

/// A kind's rows; `ia`, `ib` its percentiles' intervals in each report
/// (p50, p90, p99, p99.9), where they have them.
fn kind_rows(
    a: &KindReport,
    b: &KindReport,
    ia: [Option<Interval>; 4],
    ib: [Option<Interval>; 4],
) -> Vec<Row> {
    let ms = |us: f64| us / 1e3;
    let row = |what: &str, x: f64, y: f64, judge, at: Option<usize>| {
        let mut r = Row::of(format!("{} {what} (ms)", a.name), (ms(x), ms(y)), 3, judge);
        r.intervals = at.and_then(|k| {
            let to_ms = |i: Interval| Interval {
                point: ms(i.point),
                low: ms(i.low),
                high: ms(i.high),
            };
            Some((to_ms(ia[k]?), to_ms(ib[k]?), false))
        });
        r
    };
    vec![
        row(
            "p50",
            a.latency.p50_us,
            b.latency.p50_us,
            Judge::None,
            Some(0),
        ),
        row(
            "p99",
            a.latency.p99_us,
            b.latency.p99_us,
            Judge::Higher,
            Some(2),
        ),
        row(
            "p99.9",
            a.latency.p99_9_us,
            b.latency.p99_9_us,
            Judge::None,
            Some(3),
        ),
        row("max", a.latency.max_us, b.latency.max_us, Judge::None, None),
    ]
}

/// A report's intervals of the kind named `name`, in p50, p90, p99, p99.9
/// order; none where it has none.
fn kind_intervals(r: &Report, name: &str) -> [Option<Interval>; 4] {
    r.intervals
        .as_ref()
        .and_then(|i| i.kinds.iter().find(|k| k.name == name))
        .map_or([None; 4], |k| k.all())
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
    let throughput = |r: &Report| r.intervals.as_ref().and_then(|i| i.throughput);
    let mut rate = Row::of(
        "throughput (ok/s)".into(),
        (a.measured.throughput, b.measured.throughput),
        1,
        Judge::Lower,
    );
    rate.intervals = throughput(a).zip(throughput(b)).map(|(x, y)| (x, y, true));
    let counts = |r: &Report| (r.measured.ops as f64, r.measured.errors as f64);
    let (ca, cb) = (counts(a), counts(b));
    vec![
        rate,
        Row::of(
            "client CPU per op (us)".into(),
            (a.client.cpu_us_per_op, b.client.cpu_us_per_op),
            2,
            Judge::None,
        ),
        Row::of("operations".into(), (ca.0, cb.0), 0, Judge::None),
        Row::of("errors".into(), (ca.1, cb.1), 0, Judge::None),
    ]
}

/// The rows of the kinds both reports have (in A's order), and a line for
/// each kind only one of them has.
fn kinds_rows(a: &Report, b: &Report, names: (&str, &str)) -> (Vec<Row>, Vec<String>) {
    let mut rows = Vec::new();
    let mut only = Vec::new();
    for ka in &a.measured.kinds {
        match b.measured.kinds.iter().find(|kb| kb.name == ka.name) {
            Some(kb) => rows.extend(kind_rows(
                ka,
                kb,
                kind_intervals(a, &ka.name),
                kind_intervals(b, &ka.name),
            )),
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
    let sig = rows.iter().any(|r| r.intervals.is_some());
    let mut out = vec![format!(
        "{:<w$}  {:>wa$}  {:>wb$}  {:>9}{}",
        "",
        names.0,
        names.1,
        "B vs A",
        if sig { "  95% intervals" } else { "" }
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
        let verdict = match (sig, r.significance()) {
            (false, _) => String::new(),
            (true, "") => format!("  {:<13}", "-"),
            (true, v) => format!("  {v:<13}"),
        };
        let line = format!(
            "{:<w$}  {:>wa$.p$}  {:>wb$.p$}  {d:>9}{verdict}{mark}",
            r.name,
            r.a,
            r.b,
            p = r.decimals
        );
        out.push(line.trim_end().to_string());
    }
    (out, regressions)
}

/// The table's lines and what it found.
pub fn table(a: &Report, b: &Report, max: f64, names: (&str, &str)) -> (Vec<String>, Compared) {
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
    let mut outcome = match regressed {
        true => Compared::Regressed,
        false => Compared::Within,
    };
    for (name, r) in [names.0, names.1].iter().zip([a, b]) {
        let v = r.validity_or_judge();
        if !v.valid {
            out.push(format!("{name}: {}", v.line()));
            if !regressed {
                outcome = Compared::Invalid;
            }
        }
    }
    (out, outcome)
}

/// What a comparison found, for its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compared {
    /// B within the threshold of A, both measurements valid.
    Within,
    /// B worse than A beyond the threshold (whatever the measurements).
    Regressed,
    /// No regression, but a measurement was INVALID: nothing to conclude.
    Invalid,
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
    let (lines, found) = table(
        &a,
        &b,
        max,
        (&crate::plot::stem(a_path), &crate::plot::stem(b_path)),
    );
    for l in lines {
        println!("{l}");
    }
    Ok(match found {
        Compared::Within => exit::OK,
        Compared::Regressed => exit::CHECK_FAILED,
        Compared::Invalid => exit::INVALID,
    })
}
