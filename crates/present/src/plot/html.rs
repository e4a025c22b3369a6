//! One self-contained HTML page: `loadrig report R.json... -o FILE.html`,
//! `--html FILE` on `run` and `sweep`, and `plot -o FILE.html`. Everything
//! is inline (the charts as SVG elements, the CSS in a `<style>`), there is
//! no script at all and nothing is fetched, so the file opens the same
//! offline, from an e-mail or a CI artifact, years later. Per report: the
//! header (target, server version, durability, the spec), the results per
//! kind, the workload's own results, the verification verdict; then the
//! charts.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use loadrig_report::Report;

use super::svg::{escape, Chart};
use super::Input;

const STYLE: &str = "body{font-family:sans-serif;margin:24px;color:#222;background:#fff;max-width:1000px}\
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:32px}\
table{border-collapse:collapse;margin:8px 0;font-size:13px}\
td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}\
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}\
.kv td{text-align:left}.pass{color:#070;font-weight:bold}.fail{color:#b00;font-weight:bold}\
.chart{margin:16px 0}pre{background:#f7f7f7;padding:8px;font-size:12px;overflow-x:auto}";

fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        escape(title),
        escape(title)
    )
}

const FOOT: &str = "</body></html>\n";

fn charts_html(out: &mut String, charts: &[Chart]) {
    for c in charts {
        let _ = writeln!(out, "<div class=\"chart\">{}</div>", c.svg());
    }
}

/// A page of charts (`plot -o FILE.html`), with the files they came from.
pub fn charts_page(inputs: &[Input], charts: &[Chart]) -> String {
    let mut o = head("loadrig plot");
    o.push_str("<p>From: ");
    let names: Vec<String> = inputs.iter().map(|i| escape(i.name())).collect();
    o.push_str(&names.join(", "));
    o.push_str("</p>\n");
    charts_html(&mut o, charts);
    o.push_str(FOOT);
    o
}

fn ms(us: f64) -> String {
    format!("{:.3}", us / 1e3)
}

/// Where latency rose, beside what changed most on the server in that
/// lap (docs/explanations/resources.md section 4).
fn rises_table(o: &mut String, r: &Report) {
    let rises = super::resources::rises(r);
    if rises.is_empty() {
        return;
    }
    o.push_str("<p>Where latency rose (a lap's p99 at least twice the median lap's), with the server series that changed most from the lap before:</p>");
    o.push_str("<table><tr><th>at (s)</th><th>p99 (ms)</th><th>usual p99 (ms)</th><th>server series</th><th>lap before</th><th>this lap</th></tr>");
    for x in rises {
        let (name, before, now) = match &x.changed {
            Some((n, b, v)) => (n.as_str(), format!("{b}"), format!("{v}")),
            None => ("-", "-".into(), "-".into()),
        };
        let _ = write!(
            o,
            "<tr><td>{:.2}</td><td>{:.3}</td><td>{:.3}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            x.at,
            x.p99_ms,
            x.usual_ms,
            escape(name),
            escape(&before),
            escape(&now)
        );
    }
    o.push_str("</table>\n");
}

/// The header table's rows: what ran, against what, from where, and its
/// totals.
fn header_rows(r: &Report) -> Vec<(&'static str, String)> {
    let e = &r.environment;
    let started = r.started_unix_ms / 1000;
    vec![
        ("workload", r.spec.workload.name().to_string()),
        ("target", e.target.clone()),
        (
            "server version",
            e.server_version.clone().unwrap_or_else(|| "-".into()),
        ),
        (
            "durability",
            e.durability.clone().unwrap_or_else(|| "-".into()),
        ),
        (
            "client",
            format!("{} ({} cores, {})", e.host, e.cores, e.os),
        ),
        ("loadrig", r.loadrig_version.clone()),
        ("started", format!("{started} (UNIX seconds)")),
        (
            "measured",
            format!(
                "{:.3} s, {} operations, {} ok, {} errors{}",
                r.measured.elapsed_secs,
                r.measured.ops,
                r.measured.ok,
                r.measured.errors,
                if r.interrupted { ", interrupted" } else { "" }
            ),
        ),
        (
            "throughput",
            format!("{:.1} successful operations/s", r.measured.throughput),
        ),
        (
            "client cost",
            format!(
                "{:.2} µs CPU per operation, {:.0} % of one core",
                r.client.cpu_us_per_op, r.client.cpu_percent
            ),
        ),
        ("exit code", r.exit_code.to_string()),
    ]
}

/// The verification's verdict, and its checks as a table when it has any.
fn verification(o: &mut String, r: &Report) {
    let verdict = r.verification.as_ref().and_then(|v| v.verdict.as_ref());
    let Some(v) = verdict else {
        o.push_str(
            "<p>Verification: not run (<code>--no-verify</code>, or a shard's own report)</p>\n",
        );
        return;
    };
    let (class, word) = match v.passed {
        Some(true) => ("pass", "passed"),
        Some(false) => ("fail", "FAILED"),
        None => ("", "nothing to check"),
    };
    let _ = write!(
        o,
        "<p>Verification: <span class=\"{class}\">{word}</span>: {}</p>",
        escape(&v.summary)
    );
    if !v.checks.is_empty() {
        o.push_str(
            "<table><tr><th>check</th><th>expected</th><th>actual</th><th>in doubt</th></tr>",
        );
        for c in &v.checks {
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&c.name),
                c.expected,
                c.actual,
                c.in_doubt
            );
        }
        o.push_str("</table>\n");
    }
}

/// The validity verdict: the summary's line, then each check with its
/// figure and threshold (docs/explanations/validity.md).
fn validity(o: &mut String, r: &Report) {
    let v = r.validity_or_judge();
    let (class, word) = match v.valid {
        true => ("pass", "valid"),
        false => ("fail", "INVALID"),
    };
    let _ = write!(
        o,
        "<p>Measurement: <span class=\"{class}\">{word}</span> <small>({})</small></p>",
        escape(&v.line())
    );
    o.push_str(
        "<table><tr><th>check</th><th>ok</th><th>figure</th><th>threshold</th><th>detail</th></tr>",
    );
    for c in &v.checks {
        let _ = write!(
            o,
            "<tr><td>{}</td><td class=\"{}\">{}</td><td>{:.4} {unit}</td><td>{:.4} {unit}</td><td>{}</td></tr>",
            escape(&c.name),
            if c.ok { "pass" } else { "fail" },
            if c.ok { "ok" } else { "FAILED" },
            c.figure,
            c.threshold,
            escape(&c.detail),
            unit = escape(&c.unit),
        );
    }
    o.push_str("</table>\n");
}

/// The results table: a row per kind, counts, rate and latencies.
fn kinds_table(o: &mut String, r: &Report) {
    o.push_str("<table><tr><th>kind</th><th>count</th><th>ok</th><th>errors</th><th>ops/s</th><th>mean ms</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th><th>p99.9 ms</th><th>max ms</th></tr>");
    for k in &r.measured.kinds {
        let secs = k.secs(r.measured.elapsed_secs);
        let errors: u64 = k.errors.iter().map(|e| e.1).sum();
        let l = &k.latency;
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{errors}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&k.name),
            k.count,
            k.ok,
            if secs > 0.0 { k.ok as f64 / secs } else { 0.0 },
            ms(l.mean_us),
            ms(l.p50_us),
            ms(l.p90_us),
            ms(l.p99_us),
            ms(l.p99_9_us),
            ms(l.max_us)
        );
    }
    o.push_str("</table>\n");
}

/// The workload's own results (its lines, table and footer) as one
/// preformatted block, when it has any.
fn workload_results(o: &mut String, r: &Report) {
    let res = &r.results;
    if res.lines.is_empty() && res.rows.is_empty() && res.footer.is_empty() {
        return;
    }
    let mut text = res.lines.join("\n");
    if !res.header.is_empty() {
        let _ = write!(text, "\n{}", res.header.join("  "));
    }
    for row in &res.rows {
        let _ = write!(text, "\n{}", row.join("  "));
    }
    for f in &res.footer {
        let _ = write!(text, "\n{f}");
    }
    let _ = writeln!(o, "<pre>{}</pre>", escape(text.trim_start()));
}

/// One report's section: its header, where latency rose, the
/// verification's verdict, the measurement's, the results, and the run
/// spec folded away.
fn report_section(o: &mut String, name: &str, r: &Report) {
    let _ = writeln!(o, "<h2>{}</h2>", escape(name));
    o.push_str("<table class=\"kv\">");
    for (k, v) in header_rows(r) {
        let _ = write!(o, "<tr><th>{k}</th><td>{}</td></tr>", escape(&v));
    }
    o.push_str("</table>\n");
    rises_table(o, r);
    verification(o, r);
    validity(o, r);
    kinds_table(o, r);
    workload_results(o, r);
    let spec = serde_json::to_string_pretty(&r.spec).unwrap_or_default();
    let _ = writeln!(
        o,
        "<details><summary>run spec</summary><pre>{}</pre></details>",
        escape(&spec)
    );
}

/// The page of `loadrig report` and `--html`: each report's section, then
/// the charts of all of them together.
pub fn report_page(reports: &[(String, &Report)]) -> anyhow::Result<String> {
    let title = match reports {
        [(_, r)] => format!(
            "loadrig {} against {}",
            r.spec.workload.name(),
            r.environment.target
        ),
        _ => format!("loadrig: {} reports", reports.len()),
    };
    let mut o = head(&title);
    for (name, r) in reports {
        report_section(&mut o, name, r);
    }
    let inputs: Vec<Input> = reports
        .iter()
        .map(|(n, r)| Input::Report(n.clone(), Box::new((*r).clone())))
        .collect();
    let charts = super::charts(&inputs)?;
    o.push_str("<h2>Charts</h2>\n");
    charts_html(&mut o, &charts);
    o.push_str(FOOT);
    Ok(o)
}

/// `loadrig report REPORT... -o FILE.html`: the reports as one page.
pub fn report_command(paths: &[std::path::PathBuf], out: &Path) -> anyhow::Result<i32> {
    let reports = paths
        .iter()
        .map(|p| Report::read(p).map(|rep| (super::stem(p), rep)))
        .collect::<Result<Vec<_>, _>>()?;
    let refs: Vec<(String, &Report)> = reports.iter().map(|(n, r)| (n.clone(), r)).collect();
    write_reports(out, &refs)?;
    crate::say!("wrote {}", out.display());
    Ok(loadrig_report::exit::OK)
}

/// Write [`report_page`] to `path`.
pub fn write_reports(path: &Path, reports: &[(String, &Report)]) -> anyhow::Result<()> {
    let page = report_page(reports)?;
    std::fs::write(path, page).with_context(|| format!("writing {}", path.display()))
}

/// A sweep's page (`sweep --html`): its table and its charts.
pub fn sweep_page(table: &crate::table::Table, charts: &[Chart]) -> String {
    let mut o = head(&format!("loadrig sweep over {}", table.param));
    let _ = writeln!(o, "<pre>{}</pre>", escape(&table.lines().join("\n")));
    charts_html(&mut o, charts);
    o.push_str(FOOT);
    o
}

/// A capacity search's page (`loadrig capacity`): the answer, the probes'
/// table, the curve with its knee and the probes' charts.
pub fn capacity_page(answer: &str, table: &crate::table::Table, charts: &[Chart]) -> String {
    let mut o = head("loadrig capacity");
    let _ = writeln!(o, "<p class=\"answer\"><b>{}</b></p>", escape(answer));
    let _ = writeln!(o, "<pre>{}</pre>", escape(&table.lines().join("\n")));
    charts_html(&mut o, charts);
    o.push_str(FOOT);
    o
}
