//! `loadrig plot FILES... -o OUT.svg|OUT.html|OUT.png`: charts from files
//! already written, never a re-run. It reads loadrig reports (JSON),
//! redis-benchmark's own `--csv` output, and `loadrig sweep`'s CSV, and
//! draws what fits each (docs/guides/charts.md): the laps' throughput and latency
//! over time and the latency percentile spectrum for reports, a bar chart
//! per test for redis-benchmark CSVs (and redis workload reports), a
//! sweep's curves against its parameter. Several files are several series,
//! named by their file stems. The charts themselves are `svg.rs`'s.

pub mod html;
mod resources;
pub mod svg;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
use loadrig_metrics::Histo;
use loadrig_report::{Report, MAX_REPORT_BYTES};
use loadrig_spec::CsvDialect;

use crate::print::redis;
use crate::table::{split_csv, Table};
use loadrig_report::exit;
use svg::{BarChart, Chart, Line, LineChart, XAxis};

/// One file read for plotting, named by its stem.
pub enum Input {
    Report(String, Box<Report>),
    /// redis-benchmark's `--csv`: (test, requests per second) rows.
    RedisCsv(String, Vec<(String, f64)>),
    Sweep(String, Table),
}

impl Input {
    pub fn name(&self) -> &str {
        match self {
            Input::Report(n, _) | Input::RedisCsv(n, _) | Input::Sweep(n, _) => n,
        }
    }
}

/// A bad input file: exit 2 (`exit::code_of`).
#[derive(Debug, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct InputError {
    pub path: String,
    pub reason: String,
}

pub fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Read one file, telling its kind by its content.
pub fn read(path: &Path) -> anyhow::Result<Input> {
    let bad = |reason: String| InputError {
        path: path.display().to_string(),
        reason,
    };
    // As a report is read: at most its cap (`/dev/zero` is refused, not
    // read for ever).
    let mut body = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_REPORT_BYTES + 1).read_to_end(&mut body))
        .map_err(|e| bad(e.to_string()))?;
    if body.len() as u64 > MAX_REPORT_BYTES {
        let most = MAX_REPORT_BYTES >> 20;
        return Err(bad(format!("larger than {most} MiB, the most a report can be")).into());
    }
    let text = String::from_utf8(body).map_err(|_| bad("not UTF-8 text".into()))?;
    let name = stem(path);
    let first = text.lines().next().unwrap_or("").trim();
    if text.trim_start().starts_with('{') {
        let report = Report::parse(text.as_bytes(), &path.display().to_string())?;
        histograms(&report).map_err(bad)?;
        return Ok(Input::Report(name, Box::new(report)));
    }
    if let Some(t) = Table::parse(&text) {
        return Ok(Input::Sweep(name, t.map_err(bad)?));
    }
    if first.starts_with("\"test\",\"rps\"") {
        return Ok(Input::RedisCsv(name, redis_rows(&text).map_err(bad)?));
    }
    Err(bad(
        "neither a loadrig report, a loadrig sweep CSV nor redis-benchmark --csv output".into(),
    )
    .into())
}

/// Every histogram of a report decodes: a bad one is the file's fault
/// (exit 2, named), found before any chart is drawn.
fn histograms(r: &Report) -> Result<(), String> {
    for k in r.measured.kinds.iter().chain(&r.warmup.kinds) {
        for (what, h) in [("latency", &k.latency), ("service", &k.service)] {
            h.histogram()
                .map_err(|e| format!("{} {what} histogram: {e}", k.name))?;
        }
    }
    for (i, l) in r.laps.iter().enumerate() {
        loadrig_report::decode_hdr(&l.latency_hdr)
            .map_err(|e| format!("lap {}'s histogram: {e}", i + 1))?;
    }
    Ok(())
}

/// The (test, rps) rows of redis-benchmark's CSV (header first).
fn redis_rows(text: &str) -> Result<Vec<(String, f64)>, String> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let f = split_csv(line.trim());
        let rps = f
            .get(1)
            .and_then(|v| v.parse::<f64>().ok())
            .ok_or_else(|| format!("line {}: no requests per second in '{line}'", i + 1))?;
        rows.push((f[0].clone(), rps));
    }
    if rows.is_empty() {
        return Err("redis-benchmark CSV without a row".into());
    }
    Ok(rows)
}

/// A report of the redis workload as redis-benchmark's CSV rows.
fn report_rows(r: &Report) -> Option<Vec<(String, f64)>> {
    if r.spec.workload.output().csv != CsvDialect::RedisBenchmark {
        return None;
    }
    redis_rows(&redis::csv_rows(r).join("\n")).ok()
}

/// Every kind's latency added into one histogram.
fn all_latency(r: &Report) -> anyhow::Result<Histo> {
    let mut all = Histo::new();
    for k in &r.measured.kinds {
        all.add(&k.latency.histogram().map_err(anyhow::Error::msg)?);
    }
    Ok(all)
}

/// The percentiles the spectrum is drawn through: 0 to 99.999 % in
/// steps of a tenth of a decade of 1 / (1 - p).
fn spectrum(h: &Histo) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let mut pts: Vec<(f64, f64)> = (0..=50)
        .map(|i| {
            let p = 100.0 * (1.0 - 10f64.powf(-f64::from(i) / 10.0));
            (p, h.percentile(p).as_nanos() as f64 / 1e6)
        })
        .collect();
    pts.push((100.0, h.max().as_nanos() as f64 / 1e6));
    pts
}

/// The charts that fit these inputs, in a fixed order: bars per test,
/// sweep curves, then the reports' time lines and spectrum.
pub fn charts(inputs: &[Input]) -> anyhow::Result<Vec<Chart>> {
    let mut out = Vec::new();
    // Bar chart per test: redis-benchmark CSVs and redis workload reports.
    let bars: Vec<(String, Vec<(String, f64)>)> = inputs
        .iter()
        .filter_map(|i| match i {
            Input::RedisCsv(n, rows) => Some((n.clone(), rows.clone())),
            Input::Report(n, r) => report_rows(r).map(|rows| (n.clone(), rows)),
            Input::Sweep(..) => None,
        })
        .collect();
    if !bars.is_empty() {
        let mut cats: Vec<String> = Vec::new();
        for (_, rows) in &bars {
            for (t, _) in rows {
                if !cats.contains(t) {
                    cats.push(t.clone());
                }
            }
        }
        let series = bars
            .iter()
            .map(|(n, rows)| {
                let vals = cats
                    .iter()
                    .map(|c| rows.iter().find(|(t, _)| t == c).map(|r| r.1))
                    .collect();
                (n.clone(), vals)
            })
            .collect();
        out.push(Chart::Bar(BarChart {
            title: "Requests per second by test".into(),
            x_label: "requests/s".into(),
            categories: cats,
            series,
        }));
    }
    // Sweep curves.
    let sweeps: Vec<(&str, &Table)> = inputs
        .iter()
        .filter_map(|i| match i {
            Input::Sweep(n, t) => Some((n.as_str(), t)),
            _ => None,
        })
        .collect();
    if !sweeps.is_empty() {
        out.extend(sweep_charts(&sweeps));
    }
    // Reports: laps over time, and the spectrum.
    let reports: Vec<(&str, &Report)> = inputs
        .iter()
        .filter_map(|i| match i {
            Input::Report(n, r) => Some((n.as_str(), r.as_ref())),
            _ => None,
        })
        .collect();
    if !reports.is_empty() {
        out.extend(report_charts(&reports)?);
    }
    Ok(out)
}

/// Log x when the values grow geometrically (1, 2, 4 ... 128), else linear.
fn x_axis_for(xs: &[f64]) -> XAxis {
    let (lo, hi) = xs
        .iter()
        .fold((f64::INFINITY, 0f64), |(a, b), &x| (a.min(x), b.max(x)));
    if lo > 0.0 && hi / lo >= 32.0 && xs.len() <= 16 {
        XAxis::Log
    } else {
        XAxis::Linear
    }
}

/// A line's name: `what`, after its file's name when several files are
/// drawn together.
fn line_name(many: bool, file: &str, what: &str) -> String {
    if many {
        format!("{file} {what}")
    } else {
        what.to_string()
    }
}

/// The x axis's label for a swept parameter.
fn sweep_x_label(param: &str) -> String {
    match param {
        "target" => "servers in the target URL".to_string(),
        "P" => "pipeline depth (-P)".to_string(),
        "c" => "clients (-c)".to_string(),
        "d" => "duration (-d)".to_string(),
        "value-size" | "data-size" => "value size in bytes".to_string(),
        other => other.to_string(),
    }
}

/// One figure of a sweep's row.
type Pick = fn(&crate::table::Figures) -> f64;

/// A sweep's points (x, figure) for the rows that succeeded. A figure a
/// row leaves empty (a peer's row without latencies, an older CSV without
/// the client's columns) is no point.
fn ok_points(t: &Table, pick: Pick) -> Vec<(f64, f64)> {
    t.points
        .iter()
        .filter(|p| p.ok())
        .filter_map(|p| p.figures.as_ref().map(|f| (p.x, pick(f))))
        .filter(|(_, y)| y.is_finite())
        .collect::<Vec<_>>()
}

/// What every chart of a set of sweeps shares: the sweeps, the x axis
/// (its label and scale) and the x values of the points that failed.
struct SweepAxes<'a> {
    sweeps: &'a [(&'a str, &'a Table)],
    many: bool,
    x_label: String,
    axis: XAxis,
    failed: Vec<f64>,
}

impl<'a> SweepAxes<'a> {
    /// The axes of `sweeps`, named by the first one's parameter.
    fn of(sweeps: &'a [(&'a str, &'a Table)]) -> SweepAxes<'a> {
        let param = sweeps.first().map_or("value", |s| s.1.param.as_str());
        let xs: Vec<f64> = sweeps
            .iter()
            .flat_map(|s| s.1.points.iter().map(|p| p.x))
            .collect();
        let failed: Vec<f64> = sweeps
            .iter()
            .flat_map(|s| s.1.points.iter().filter(|p| !p.ok()).map(|p| p.x))
            .collect();
        SweepAxes {
            sweeps,
            many: sweeps.len() > 1,
            x_label: sweep_x_label(param),
            axis: x_axis_for(&xs),
            failed,
        }
    }

    /// One figure, a line per sweep (named `single` when there is one).
    fn series(&self, pick: Pick, single: &str) -> Vec<Line> {
        self.sweeps
            .iter()
            .map(|(n, t)| Line {
                name: if self.many {
                    n.to_string()
                } else {
                    single.into()
                },
                points: ok_points(t, pick),
                dashed: false,
            })
            .collect()
    }

    /// Each sweep's p50, p99 and average lines, those without a point
    /// left out.
    fn latency_lines(&self) -> Vec<Line> {
        let mut lat = Vec::new();
        for (n, t) in self.sweeps {
            let figures: [(&str, Pick, bool); 3] = [
                ("p50", |f| f.p50_ms, false),
                ("p99", |f| f.p99_ms, false),
                ("average", |f| f.avg_ms, true),
            ];
            for (what, pick, dashed) in figures {
                lat.push(Line {
                    name: line_name(self.many, n, what),
                    points: ok_points(t, pick),
                    dashed,
                });
            }
        }
        lat.retain(|l| !l.points.is_empty());
        lat
    }

    /// `what` against the swept parameter, a chart of `lines`.
    fn chart(&self, what: &str, y_label: &str, lines: Vec<Line>) -> Chart {
        Chart::Line(LineChart {
            title: format!("{what} against {}", self.x_label),
            x_label: self.x_label.clone(),
            y_label: y_label.into(),
            x_axis: self.axis,
            lines,
            failed: self.failed.clone(),
        })
    }
}

/// A sweep's charts: throughput, then latency and the client's own cost
/// where the CSVs hold them.
pub fn sweep_charts(sweeps: &[(&str, &Table)]) -> Vec<Chart> {
    let axes = SweepAxes::of(sweeps);
    let rate = axes.series(|f| f.throughput, "ops/s");
    let mut charts = vec![axes.chart("Throughput", "operations/s", rate)];
    let latency = axes.latency_lines();
    if !latency.is_empty() {
        charts.push(axes.chart("Latency", "latency (ms)", latency));
    }
    // The client's own cost, when the CSVs hold it (a sweep before these
    // columns, or a peer's row without them, leaves them out).
    let client: [(&str, &str, Pick); 2] = [
        ("Client CPU per operation", "CPU (us/op)", |f| {
            f.cpu_us_per_op
        }),
        ("Client peak memory", "peak RSS (MiB)", |f| f.peak_mib),
    ];
    for (title, y_label, pick) in client {
        let mut lines = axes.series(pick, y_label);
        lines.retain(|l| !l.points.is_empty());
        if !lines.is_empty() {
            charts.push(axes.chart(title, y_label, lines));
        }
    }
    charts
}

/// A report's successful operations per second, per measured lap.
fn rate_line(name: &str, r: &Report) -> Line {
    let base = r.spec.warmup_secs;
    // A lap much shorter than the interval (the run's last, cut at
    // its end) holds a few operations over a few milliseconds: its
    // rate is noise, drawn as a spike. Its latencies are still drawn.
    let shortest = r.spec.interval_secs / 4.0;
    Line {
        name: name.to_string(),
        points: r
            .laps
            .iter()
            .filter(|l| !l.warmup)
            .filter(|l| l.length_secs > 0.0 && l.length_secs >= shortest)
            .map(|l| (l.elapsed_secs - base, l.ok as f64 / l.length_secs))
            .collect(),
        dashed: false,
    }
}

/// A report's p99 and p50 latency per measured lap, in that order.
fn lap_latency_lines(name: &str, r: &Report, many: bool) -> anyhow::Result<[Line; 2]> {
    let base = r.spec.warmup_secs;
    let mut p50 = Vec::new();
    let mut p99 = Vec::new();
    for l in r.laps.iter().filter(|l| !l.warmup) {
        let h = loadrig_report::decode_hdr(&l.latency_hdr).map_err(|e| InputError {
            path: name.to_string(),
            reason: format!("a lap's histogram: {e}"),
        })?;
        if !h.is_empty() {
            let t = l.elapsed_secs - base;
            p50.push((t, h.percentile(50.0).as_nanos() as f64 / 1e6));
            p99.push((t, h.percentile(99.0).as_nanos() as f64 / 1e6));
        }
    }
    Ok([
        Line {
            name: line_name(many, name, "p99"),
            points: p99,
            dashed: false,
        },
        Line {
            name: line_name(many, name, "p50"),
            points: p50,
            dashed: true,
        },
    ])
}

/// A report's latency spectrum: one file, a line per kind when there are
/// several; several files, a line per file, every kind added.
fn spectrum_lines(name: &str, r: &Report, many: bool) -> anyhow::Result<Vec<Line>> {
    if !many && r.measured.kinds.len() > 1 && r.measured.kinds.len() <= 7 {
        let mut lines = Vec::new();
        for k in &r.measured.kinds {
            let h = k.latency.histogram().map_err(anyhow::Error::msg)?;
            lines.push(Line {
                name: k.name.clone(),
                points: spectrum(&h),
                dashed: false,
            });
        }
        Ok(lines)
    } else {
        Ok(vec![Line {
            name: name.to_string(),
            points: spectrum(&all_latency(r)?),
            dashed: false,
        }])
    }
}

/// A line chart on a linear x axis, without failed points.
fn linear_chart(title: &str, x_label: String, y_label: &str, lines: Vec<Line>) -> Chart {
    Chart::Line(LineChart {
        title: title.into(),
        x_label,
        y_label: y_label.into(),
        x_axis: XAxis::Linear,
        lines,
        failed: Vec::new(),
    })
}

/// The reports' charts: throughput and latency over time, the resources
/// on the same time axis, then the latency spectrum.
pub fn report_charts(reports: &[(&str, &Report)]) -> anyhow::Result<Vec<Chart>> {
    let mut rate = Vec::new();
    let mut lat = Vec::new();
    let mut spec = Vec::new();
    let many = reports.len() > 1;
    for (name, r) in reports {
        rate.push(rate_line(name, r));
        lat.extend(lap_latency_lines(name, r, many)?);
        spec.extend(spectrum_lines(name, r, many)?);
    }
    let time = "seconds since the measured phase began".to_string();
    let resources = resources::charts(reports, &time);
    let mut charts = vec![
        linear_chart(
            "Throughput over time (per lap)",
            time.clone(),
            "successful operations/s",
            rate,
        ),
        linear_chart(
            "Latency over time (per lap, all kinds)",
            time,
            "latency (ms)",
            lat,
        ),
    ];
    // Client and server resources under latency and throughput, on the
    // same time axis; then the spectrum.
    charts.extend(resources);
    charts.push(Chart::Line(LineChart {
        title: "Latency by percentile".into(),
        x_label: "percentile".into(),
        y_label: "latency (ms)".into(),
        x_axis: XAxis::Percentile,
        lines: spec,
        failed: Vec::new(),
    }));
    Ok(charts)
}

/// The output's format, by its extension.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Format {
    Svg,
    Html,
    Png,
}

pub fn format_of(path: &Path) -> anyhow::Result<Format> {
    match path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .as_deref()
    {
        Some("svg") => Ok(Format::Svg),
        Some("html" | "htm") => Ok(Format::Html),
        Some("png") => Ok(Format::Png),
        _ => Err(InputError {
            path: path.display().to_string(),
            reason: "the output must end in .svg, .html or .png".into(),
        }
        .into()),
    }
}

/// `loadrig plot`.
pub fn run(files: &[PathBuf], out: &Path, gnuplot: Option<&Path>) -> anyhow::Result<i32> {
    let format = format_of(out)?;
    let inputs = files
        .iter()
        .map(|p| read(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let charts = charts(&inputs)?;
    if charts.is_empty() {
        bail!(InputError {
            path: files
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" "),
            reason: "nothing to plot".into()
        });
    }
    if let Some(dir) = gnuplot {
        for i in &inputs {
            if let Input::Sweep(n, t) = i {
                for f in t.gnuplot(dir, n)? {
                    println!("wrote {f}");
                }
            }
        }
    }
    write_charts(out, format, &inputs, &charts)?;
    println!(
        "wrote {} ({} chart{})",
        out.display(),
        charts.len(),
        if charts.len() == 1 { "" } else { "s" }
    );
    Ok(exit::OK)
}

fn write_charts(
    out: &Path,
    format: Format,
    inputs: &[Input],
    charts: &[Chart],
) -> anyhow::Result<()> {
    let write = |p: &Path, text: String| {
        std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))
    };
    match format {
        Format::Svg => write(out, svg::stack(charts)),
        Format::Html => write(out, html::charts_page(inputs, charts)),
        Format::Png => {
            let dir = tempfile_dir()?;
            let page = dir.join("plot.html");
            write(&page, html::charts_page(inputs, charts))?;
            let height = charts.iter().map(|c| svg_h(&c.svg()) + 60.0).sum::<f64>() + 120.0;
            let r = screenshot(&page, out, 1000, height.ceil() as u32);
            let _ = std::fs::remove_dir_all(&dir);
            r
        }
    }
}

fn svg_h(svg: &str) -> f64 {
    svg.split_once(r#"height=""#)
        .and_then(|(_, rest)| rest.split_once('"'))
        .and_then(|(h, _)| h.parse().ok())
        .unwrap_or(420.0)
}

fn tempfile_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("loadrig-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The flags Chromium needs to run headless on a machine without a
/// display or network: no sandbox (as root), no GPU, and none of its
/// background connections.
pub const CHROMIUM_FLAGS: [&str; 9] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
];

/// PNG through a headless Chromium's screenshot of the HTML page: no
/// image or font code in loadrig (ARCHITECTURE.md, "Charts").
fn screenshot(page: &Path, out: &Path, width: u32, height: u32) -> anyhow::Result<()> {
    let profile = page.with_file_name("profile");
    let out_abs = std::path::absolute(out)?;
    let status = Command::new("chromium")
        .args(CHROMIUM_FLAGS)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", out_abs.display()))
        .arg(format!("--window-size={width},{height}"))
        .arg(format!("file://{}", std::path::absolute(page)?.display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .context("PNG output runs chromium (apt-get install chromium), which did not start")?;
    if !status.success() || !out.exists() {
        bail!("chromium could not take the screenshot ({status})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{Figures, Point};

    fn titles(t: &Table) -> Vec<String> {
        sweep_charts(&[("s", t)])
            .iter()
            .filter_map(|c| match c {
                Chart::Line(l) => Some(l.title.clone()),
                Chart::Bar(_) => None,
            })
            .collect()
    }

    #[test]
    fn a_sweep_draws_only_the_figures_its_rows_hold() {
        let point = |x: f64, latency: f64, client: f64| Point {
            value: x.to_string(),
            x,
            status: "ok".into(),
            figures: Some(Figures {
                throughput: 1000.0 * x,
                avg_ms: latency,
                p50_ms: latency,
                p99_ms: latency,
                p99_9_ms: latency,
                max_ms: latency,
                ops: 10,
                errors: 0,
                elapsed_secs: 1.0,
                cpu_us_per_op: client,
                peak_mib: client,
            }),
            report: String::new(),
        };
        let all = Table {
            param: "clients".into(),
            points: vec![point(1.0, 0.5, 5.0), point(2.0, 0.6, 5.5)],
        };
        assert_eq!(
            titles(&all),
            [
                "Throughput against clients",
                "Latency against clients",
                "Client CPU per operation against clients",
                "Client peak memory against clients"
            ]
        );
        // A peer's rows: neither latencies nor the client's figures.
        let bare = Table {
            param: "clients".into(),
            points: vec![
                point(1.0, f64::NAN, f64::NAN),
                point(2.0, f64::NAN, f64::NAN),
            ],
        };
        assert_eq!(titles(&bare), ["Throughput against clients"]);
        // No empty figure becomes a point drawn at NaN.
        let svg: String = sweep_charts(&[("s", &bare)])
            .iter()
            .map(Chart::svg)
            .collect();
        assert!(!svg.contains("NaN"), "{svg}");
    }
}
