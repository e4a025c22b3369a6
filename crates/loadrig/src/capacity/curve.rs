//! What a capacity search shows: the answer line and its exit code, the
//! probes as a sweep table (its CSV, so `plot` reads it back), and the
//! latency against throughput curve with the knee marked (the Rai DS
//! guide's graph), as SVG and on an HTML page; the sweep's own charts of
//! the probes follow it.

use std::path::Path;

use anyhow::Context;
use loadrig_present::plot::svg::{self, Chart, Line, LineChart, XAxis};
use loadrig_present::table::{Figures, Point, Table};
use loadrig_report::fmt::group;
use loadrig_spec::Threshold;

use super::probe::{Outcome, Probe};
use super::search::{round, Search};
use crate::exit;

/// The search's result, as printed, and the exit code it ends with.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub line: String,
    pub code: i32,
    /// The rate the knee is drawn at.
    pub knee: Option<f64>,
}

fn rate(r: f64) -> String {
    if r >= 10.0 {
        format!("{}/s", group(r.round() as u64))
    } else {
        format!("{r}/s")
    }
}

impl Answer {
    pub fn of(
        search: &Search,
        probes: &[Probe],
        slos: &[Threshold],
        max: f64,
        interrupted: bool,
    ) -> Answer {
        let at = slos
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" and ");
        let find = |r: f64| probes.iter().find(|p| p.rate == r);
        match (search.pass, search.fail) {
            (None, None) => Answer {
                line: "capacity unknown: interrupted before any probe ended".into(),
                code: exit::CHECK_FAILED,
                knee: None,
            },
            (None, Some(f)) => Answer {
                line: format!(
                    "no capacity at {at}: even {} fails ({})",
                    rate(f),
                    find(f).map_or(String::new(), |p| p.reasons.join("; "))
                ),
                code: exit::CHECK_FAILED,
                knee: None,
            },
            (Some(p), fail) => {
                let pass = find(p);
                let how = pass.map_or(String::new(), qualities);
                let (line, knee) = match fail {
                    Some(f) if !interrupted => {
                        let est = estimate(pass, find(f)).unwrap_or(p);
                        let line = format!(
                            "capacity {} ({} to {}) at {at}{how}",
                            rate(est),
                            group(p.round() as u64),
                            rate(f)
                        );
                        (line, est)
                    }
                    Some(f) => (
                        format!(
                            "interrupted: capacity at least {}, below {} at {at}{how}",
                            rate(p),
                            rate(f)
                        ),
                        p,
                    ),
                    None if interrupted => (
                        format!("interrupted: capacity at least {} at {at}{how}", rate(p)),
                        p,
                    ),
                    None => (
                        format!(
                            "capacity at least {} at {at}{how} (no probe failed up to --max {})",
                            rate(p),
                            rate(max)
                        ),
                        p,
                    ),
                };
                let code = if interrupted {
                    exit::CHECK_FAILED
                } else {
                    exit::OK
                };
                Answer {
                    line,
                    code,
                    knee: Some(knee),
                }
            }
        }
    }
}

/// `, measurement valid, verified`: what the passing probe's report says.
fn qualities(p: &Probe) -> String {
    let valid = match p.valid {
        Some(true) => "measurement valid",
        Some(false) => "measurement INVALID",
        None => "measurement not judged",
    };
    let verified = match p.verified {
        Some(true) => "verified",
        Some(false) => "verification FAILED",
        None => "nothing to verify",
    };
    format!(", {valid}, {verified}")
}

/// Where the worst SLO's excess crosses 0 between the last passing and
/// the first failing probe, by linear interpolation of log(measured /
/// limit) against the rate; `None` (the answer is then the passing rate)
/// when the failing probe failed for more than its SLOs, or a figure is
/// missing. Inside the interval, and never stated as measured: the
/// interval's ends are.
fn estimate(pass: Option<&Probe>, fail: Option<&Probe>) -> Option<f64> {
    let (p, f) = (pass?, fail?);
    let slo_only = f.reasons.len()
        == f.excess
            .iter()
            .filter(|e| e.is_some_and(|e| e >= 0.0))
            .count();
    if !slo_only || f.excess.is_empty() {
        return None;
    }
    let worst = |x: &Probe| -> Option<f64> {
        x.excess
            .iter()
            .map(|e| e.ok_or(()))
            .collect::<Result<Vec<f64>, ()>>()
            .ok()
            .map(|v| v.into_iter().fold(f64::NEG_INFINITY, f64::max))
    };
    let (ep, ef) = (worst(p)?, worst(f)?);
    if !(ep < 0.0 && ef > 0.0) {
        return None;
    }
    Some(round(p.rate + (f.rate - p.rate) * (-ep) / (ef - ep)))
}

/// One probe's line while the search runs.
pub fn probe_line(p: &Probe) -> String {
    let figures = p.report.as_ref().and_then(|r| Figures::of(r).ok());
    let shown = figures.map_or(String::new(), |f| {
        format!(
            "{:.1} ops/s, p50 {:.3} ms, p99 {:.3} ms: ",
            f.throughput, f.p50_ms, f.p99_ms
        )
    });
    match p.outcome {
        Outcome::Pass => format!("{shown}pass"),
        Outcome::Unknown => format!("{shown}interrupted"),
        Outcome::Fail => format!("{shown}FAIL: {}", p.reasons.join("; ")),
    }
}

/// The probes as a sweep over `rate`, in the order of the rates.
fn table(probes: &[Probe]) -> Table {
    let mut points: Vec<Point> = probes
        .iter()
        .map(|p| Point {
            value: p.rate.to_string(),
            x: p.rate,
            status: match p.outcome {
                Outcome::Pass => "ok".into(),
                Outcome::Unknown => "interrupted".into(),
                Outcome::Fail => format!("failed: {}", p.reasons.join("; ")),
            },
            figures: p.report.as_ref().and_then(|r| Figures::of(r).ok()),
            report: format!("{}.json", p.stem),
        })
        .collect();
    points.sort_by(|a, b| a.x.total_cmp(&b.x));
    Table {
        param: "rate".into(),
        points,
    }
}

/// Print the table and the answer; write the CSV, the SVG and the page.
pub fn finish(
    dir: &Path,
    answer: &Answer,
    probes: &[Probe],
    slos: &[Threshold],
) -> anyhow::Result<()> {
    let table = table(probes);
    for l in table.lines() {
        println!("{l}");
    }
    let mut charts = vec![knee_chart(&table, answer.knee, slos)];
    charts.extend(loadrig_present::plot::sweep_charts(&[("capacity", &table)]));
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
    };
    write("capacity.csv", table.csv())?;
    write("capacity.svg", svg::stack(&charts))?;
    write(
        "capacity.html",
        loadrig_present::plot::html::capacity_page(&answer.line, &table, &charts),
    )?;
    println!(
        "wrote capacity.csv, capacity.svg and capacity.html in {}",
        dir.display()
    );
    println!("{}", answer.line);
    Ok(())
}

/// Latency against achieved throughput, every probe with figures in the
/// order of its rate (the failing ones show the knee), the latency SLOs
/// as flat dashed lines, the knee as an upright one. Latencies above
/// four times the highest SLO are drawn at that height (said in the
/// title), or the curve's flat part would be a line on the floor.
fn knee_chart(table: &Table, knee: Option<f64>, slos: &[Threshold]) -> Chart {
    let limits: Vec<&Threshold> = slos.iter().filter(|t| t.metric.is_time()).collect();
    let ceiling = limits
        .iter()
        .map(|t| t.value * 1e3 * 4.0)
        .fold(0.0, f64::max);
    let clip = |y: f64| if ceiling > 0.0 { y.min(ceiling) } else { y };
    let with: Vec<&Figures> = table
        .points
        .iter()
        .filter_map(|p| p.figures.as_ref())
        .collect();
    type Pick = fn(&Figures) -> f64;
    let picks: [(&str, Pick); 3] = [
        ("p99", |f| f.p99_ms),
        ("p99.9", |f| f.p99_9_ms),
        ("p50", |f| f.p50_ms),
    ];
    let mut lines: Vec<Line> = picks
        .iter()
        .map(|(name, pick)| Line {
            name: name.to_string(),
            points: with.iter().map(|f| (f.throughput, clip(pick(f)))).collect(),
            dashed: *name == "p50",
        })
        .collect();
    let xs = with.iter().map(|f| f.throughput);
    let (x0, x1) = xs.fold((f64::INFINITY, 0f64), |(a, b), x| (a.min(x), b.max(x)));
    for t in &limits {
        lines.push(Line {
            name: format!("SLO {t}"),
            points: vec![(x0, t.value * 1e3), (x1, t.value * 1e3)],
            dashed: true,
        });
    }
    if let Some(k) = knee {
        let top = lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .fold(0.0, f64::max);
        lines.push(Line {
            name: format!("knee: capacity {}", rate(k)),
            points: vec![(k, 0.0), (k, top)],
            dashed: true,
        });
    }
    let title = match ceiling > 0.0 {
        true => format!(
            "Latency against throughput (above {} ms drawn at it)",
            svg::short(ceiling)
        ),
        false => "Latency against throughput".to_string(),
    };
    Chart::Line(LineChart {
        title,
        x_label: "throughput achieved (operations/s)".into(),
        y_label: "latency (ms)".into(),
        x_axis: XAxis::Linear,
        lines,
        failed: Vec::new(),
    })
}
