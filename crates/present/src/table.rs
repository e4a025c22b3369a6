//! A sweep's result: one row per point, as CSV (written by `sweep`, read
//! back by `plot`), as a table on the terminal, and as the two-column
//! `N rate` files the Rai DS guide's gnuplot scripts read. docs/guides/sweep.md
//! documents the columns.

use std::fmt::Write as _;
use std::path::Path;

use loadrig_metrics::Histo;
use loadrig_report::Report;

/// The CSV's header, exactly (golden file: sweep-csv.txt).
pub const HEADER: &str = "param,value,x,status,throughput,avg_ms,p50_ms,p99_ms,p99_9_ms,max_ms,ops,errors,elapsed_secs,report,cpu_us_per_op,peak_mib";

/// The columns the header ends with since the client's CPU and memory
/// were added: a CSV from before, without them, still reads, those two
/// figures unknown.
const CLIENT_COLUMNS: &str = ",cpu_us_per_op,peak_mib";

/// What one point measured (absent when the run left no report).
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// Successful operations per second.
    pub throughput: f64,
    pub avg_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p99_9_ms: f64,
    pub max_ms: f64,
    pub ops: u64,
    pub errors: u64,
    pub elapsed_secs: f64,
    /// The client's CPU per operation over the load (the report's).
    pub cpu_us_per_op: f64,
    /// The client's peak resident memory, MiB.
    pub peak_mib: f64,
}

impl Figures {
    /// From a report: latency of every kind added into one histogram.
    pub fn of(r: &Report) -> Result<Figures, String> {
        let mut all = Histo::new();
        for k in &r.measured.kinds {
            all.add(&k.latency.histogram()?);
        }
        let ms = |d: std::time::Duration| d.as_nanos() as f64 / 1e6;
        Ok(Figures {
            throughput: r.measured.throughput,
            avg_ms: ms(all.mean()),
            p50_ms: ms(all.percentile(50.0)),
            p99_ms: ms(all.percentile(99.0)),
            p99_9_ms: ms(all.percentile(99.9)),
            max_ms: ms(all.max()),
            ops: r.measured.ops,
            errors: r.measured.errors,
            elapsed_secs: r.measured.elapsed_secs,
            cpu_us_per_op: r.client.cpu_us_per_op,
            peak_mib: r.client.max_rss_bytes as f64 / (1024.0 * 1024.0),
        })
    }
}

/// One point of the sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The value as given (a number, a URL).
    pub value: String,
    /// Where it goes on the x axis: the number, or for a target URL the
    /// number of servers in it.
    pub x: f64,
    /// `ok`, `exit N` (the run's exit code), `interrupted`, or
    /// `failed: why` when there is no report.
    pub status: String,
    pub figures: Option<Figures>,
    /// The point's report, relative to the CSV's folder.
    pub report: String,
}

impl Point {
    pub fn ok(&self) -> bool {
        self.status == "ok"
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// The parameter swept (`pipeline`, `clients`, `target` ...).
    pub param: String,
    pub points: Vec<Point>,
}

/// A CSV field, quoted when it must be.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One CSV line split into fields (double-quoted fields, "" inside).
pub fn split_csv(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

impl Table {
    pub fn csv(&self) -> String {
        let mut o = format!("{HEADER}\n");
        for p in &self.points {
            let (figs, client) = match &p.figures {
                Some(f) => (
                    format!(
                        "{:.2},{:.3},{:.3},{:.3},{:.3},{:.3},{},{},{:.3}",
                        f.throughput,
                        f.avg_ms,
                        f.p50_ms,
                        f.p99_ms,
                        f.p99_9_ms,
                        f.max_ms,
                        f.ops,
                        f.errors,
                        f.elapsed_secs
                    ),
                    format!("{:.3},{:.1}", f.cpu_us_per_op, f.peak_mib),
                ),
                None => (",,,,,,,,".to_string(), ",".to_string()),
            };
            let _ = writeln!(
                o,
                "{},{},{},{},{figs},{},{client}",
                field(&self.param),
                field(&p.value),
                p.x,
                field(&p.status),
                field(&p.report)
            );
        }
        o
    }

    /// Read a sweep CSV back; `None` when `text` is not one.
    pub fn parse(text: &str) -> Option<Result<Table, String>> {
        let mut lines = text.lines();
        let width = match lines.next()?.trim() {
            HEADER => 16,
            h if HEADER.strip_suffix(CLIENT_COLUMNS) == Some(h) => 14,
            _ => return None,
        };
        let mut param = String::new();
        let mut points = Vec::new();
        for (i, line) in lines.enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let f = split_csv(line);
            if f.len() != width {
                return Some(Err(format!(
                    "line {}: {} fields, a sweep row has {width}",
                    i + 2,
                    f.len()
                )));
            }
            // Past the row's width (an older CSV's client columns): no number.
            let num = |j: usize| -> Result<f64, String> {
                let v = f.get(j).map_or("", String::as_str);
                v.parse::<f64>()
                    .map_err(|_| format!("line {}: '{v}' is not a number", i + 2))
            };
            let figures = if f[4].is_empty() {
                None
            } else {
                Some(Figures {
                    throughput: match num(4) {
                        Ok(v) => v,
                        Err(e) => return Some(Err(e)),
                    },
                    avg_ms: num(5).unwrap_or(f64::NAN),
                    p50_ms: num(6).unwrap_or(f64::NAN),
                    p99_ms: num(7).unwrap_or(f64::NAN),
                    p99_9_ms: num(8).unwrap_or(f64::NAN),
                    max_ms: num(9).unwrap_or(f64::NAN),
                    ops: f[10].parse().unwrap_or(0),
                    errors: f[11].parse().unwrap_or(0),
                    elapsed_secs: num(12).unwrap_or(f64::NAN),
                    cpu_us_per_op: num(14).unwrap_or(f64::NAN),
                    peak_mib: num(15).unwrap_or(f64::NAN),
                })
            };
            param.clone_from(&f[0]);
            points.push(Point {
                value: f[1].clone(),
                x: match num(2) {
                    Ok(v) => v,
                    Err(e) => return Some(Err(e)),
                },
                status: f[3].clone(),
                figures,
                report: f[13].clone(),
            });
        }
        Some(Ok(Table { param, points }))
    }

    /// The table on the terminal, one line per point.
    pub fn lines(&self) -> Vec<String> {
        let w = self
            .points
            .iter()
            .map(|p| p.value.len())
            .chain([self.param.len()])
            .max()
            .unwrap_or(5);
        let mut out = vec![format!(
            "{:<w$} {:>12} {:>9} {:>9} {:>9} {:>9} {:>8}  status",
            self.param, "ops/s", "avg ms", "p50 ms", "p99 ms", "max ms", "errors"
        )];
        for p in &self.points {
            out.push(match &p.figures {
                Some(f) => format!(
                    "{:<w$} {:>12.1} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>8}  {}",
                    p.value,
                    f.throughput,
                    f.avg_ms,
                    f.p50_ms,
                    f.p99_ms,
                    f.max_ms,
                    f.errors,
                    p.status
                ),
                None => format!(
                    "{:<w$} {:>12} {:>9} {:>9} {:>9} {:>9} {:>8}  {}",
                    p.value, "-", "-", "-", "-", "-", "-", p.status
                ),
            });
        }
        out
    }

    /// gnuplot's two-column files, as the guide's scripts read them (`N
    /// rate` per line): `STEM.rate`, and the latencies in ms
    /// `STEM.avg`, `STEM.p50`, `STEM.p99`. Failed points are left out
    /// (gnuplot would draw a zero).
    pub fn gnuplot(&self, dir: &Path, stem: &str) -> std::io::Result<Vec<String>> {
        std::fs::create_dir_all(dir)?;
        type Pick = fn(&Figures) -> f64;
        let cols: [(&str, Pick); 4] = [
            ("rate", |f| f.throughput),
            ("avg", |f| f.avg_ms),
            ("p50", |f| f.p50_ms),
            ("p99", |f| f.p99_ms),
        ];
        let mut written = Vec::new();
        for (ext, pick) in cols {
            let mut text = String::new();
            for p in &self.points {
                if let Some(f) = p.figures.as_ref().filter(|_| p.ok()) {
                    let _ = writeln!(text, "{} {:.3}", p.x, pick(f));
                }
            }
            let path = dir.join(format!("{stem}.{ext}"));
            std::fs::write(&path, text)?;
            written.push(path.display().to_string());
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        Table {
            param: "target".into(),
            points: vec![
                Point {
                    value: "redis://127.0.0.1:6379,6380".into(),
                    x: 2.0,
                    status: "ok".into(),
                    figures: Some(Figures {
                        throughput: 1234.5,
                        avg_ms: 0.5,
                        p50_ms: 0.4,
                        p99_ms: 1.5,
                        p99_9_ms: 2.0,
                        max_ms: 3.0,
                        ops: 1000,
                        errors: 0,
                        elapsed_secs: 0.81,
                        cpu_us_per_op: 6.25,
                        peak_mib: 13.5,
                    }),
                    report: "point-01.json".into(),
                },
                Point {
                    value: "x\"y".into(),
                    x: 3.0,
                    status: "failed: exit 3".into(),
                    figures: None,
                    report: String::new(),
                },
            ],
        }
    }

    #[test]
    fn csv_reads_back_as_written() {
        let t = table();
        let text = t.csv();
        assert!(text.contains("\"redis://127.0.0.1:6379,6380\""));
        let back = Table::parse(&text).unwrap().unwrap();
        assert_eq!(back, t);
        assert!(Table::parse("\"test\",\"rps\"\n").is_none());
    }

    #[test]
    fn a_csv_without_the_client_columns_still_reads() {
        let old = HEADER.strip_suffix(CLIENT_COLUMNS).unwrap();
        let text = format!("{old}\nc,50,50,ok,1000.00,0.5,0.4,1.5,2.0,3.0,100,0,0.1,p.json\n");
        let t = Table::parse(&text).unwrap().unwrap();
        let f = t.points[0].figures.as_ref().unwrap();
        assert_eq!(
            (f.throughput, t.points[0].report.as_str()),
            (1000.0, "p.json")
        );
        assert!(f.cpu_us_per_op.is_nan() && f.peak_mib.is_nan());
        let wide = format!("{HEADER}\nc,50,50,ok,1000.00,0.5,0.4,1.5,2.0,3.0,100,0,0.1,p.json\n");
        assert!(
            Table::parse(&wide).unwrap().is_err(),
            "a 14-field row under the 16-column header"
        );
    }

    #[test]
    fn gnuplot_files_leave_failed_points_out() {
        let dir = tempfile::tempdir().unwrap();
        table().gnuplot(dir.path(), "s").unwrap();
        let rate = std::fs::read_to_string(dir.path().join("s.rate")).unwrap();
        assert_eq!(rate, "2 1234.500\n");
    }
}
