//! `loadrig sweep --param NAME=VALUES [-o DIR] -- run WORKLOAD ARGS...`:
//! one run per value of one parameter, each a child process of this same
//! binary given the workload's arguments plus `--NAME=VALUE` (or the
//! value as `--target`), so every point is a normal run with a normal
//! report and the session knows nothing of sweeps. Every point's report
//! and output stay in DIR; the result is a table on the terminal,
//! DIR/sweep.csv, DIR/sweep.svg (throughput and latency against the
//! parameter), and on request an HTML page and gnuplot's files.
//! A point that fails is a row marked failed, not a gap; Ctrl-C reaches
//! the running child too (it writes its report, marked interrupted), and
//! the sweep stops there and writes what is done. docs/guides/sweep.md.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::Context;
use loadrig_report::Report;
use loadrig_spec::secret::mask_text;

use crate::exit;
use crate::flags::SweepArgs;
use crate::signals::Watch;
use loadrig_present::plot::svg::{self, Chart};
use loadrig_present::plot::InputError;
use loadrig_present::table::{Figures, Point, Table};

/// The parameter and its values, from `NAME=VALUES`.
pub fn parse_param(text: &str) -> Result<(String, Vec<String>), String> {
    let (name, values) = text.split_once('=').ok_or_else(|| {
        format!("--param '{text}': NAME=VALUES, e.g. pipeline=1,2,4 or clients=1..8")
    })?;
    let name = name.trim().trim_start_matches("--").to_string();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!("--param '{text}': '{name}' is not a flag name"));
    }
    let values = values.trim();
    let list: Vec<String> = if values.contains(';') {
        values
            .split(';')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(String::from)
            .collect()
    } else if let Some((a, rest)) = values.split_once("..") {
        let (b, step) = rest.split_once(':').unwrap_or((rest, "1"));
        let num = |s: &str| {
            s.trim()
                .parse::<u64>()
                .map_err(|_| format!("--param '{text}': '{s}' is not a whole number"))
        };
        let (a, b, step) = (num(a)?, num(b)?, num(step)?);
        if step == 0 || a > b {
            return Err(format!(
                "--param '{text}': a range A..B[:STEP] with A <= B and STEP > 0"
            ));
        }
        let mut v: Vec<String> = (a..=b)
            .step_by(step as usize)
            .map(|x| x.to_string())
            .collect();
        // The end of the range is always a point.
        if v.last() != Some(&b.to_string()) {
            v.push(b.to_string());
        }
        v
    } else {
        values
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(String::from)
            .collect()
    };
    if list.is_empty() {
        return Err(format!("--param '{text}': no values"));
    }
    if list.len() > 10_000 {
        return Err(format!(
            "--param '{text}': {} points, more than 10,000",
            list.len()
        ));
    }
    Ok((name, list))
}

/// Where a value goes on the x axis: the number itself; for a target
/// URL the number of servers in it (`redis://h:6379,6380` is 2); else
/// its position, from 1.
pub fn x_of(name: &str, value: &str, index: usize) -> f64 {
    if let Ok(v) = value.parse::<f64>() {
        return v;
    }
    if name == "target" {
        let rest = value.split_once("://").map_or(value, |(_, r)| r);
        let authority = rest.split(['/', '?']).next().unwrap_or("");
        let hosts = authority.rsplit('@').next().unwrap_or("");
        return (hosts.matches(',').count() + 1) as f64;
    }
    (index + 1) as f64
}

/// A point's command line and environment.
pub struct PointCommand {
    pub args: Vec<OsString>,
    /// The target and the headers, which may carry a password or a token:
    /// given to the point by environment ([`crate::flags::BY_ENV`]), never
    /// on its command line, where `ps` shows them to every user.
    pub env: Vec<(&'static str, OsString)>,
}

/// The point's command: the run's arguments with the swept flag added
/// before a `--` the run may hold (a redis command of one's own), and its
/// report; `--target`, `-t`, a URL given as a word (http's) and `-H`
/// moved to the environment, the swept value too when it is one of them.
pub fn child_args(run: &[OsString], name: &str, value: &str, out: &Path) -> PointCommand {
    child_args_with(run, &[(name, value)], out)
}

/// [`child_args`] with any number of flags added (none: the run as
/// given, with its report), each placed as the swept one is.
pub fn child_args_with(run: &[OsString], extra: &[(&str, &str)], out: &Path) -> PointCommand {
    let mut args: Vec<OsString> = run.to_vec();
    if args.first().is_none_or(|a| a != "run") {
        args.insert(0, "run".into());
    }
    let at = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let tail = args.split_off(at);
    let flags = value_flags(&args);
    let (mut args, mut target, mut headers) = secrets_apart(args, &flags);
    for &(name, value) in extra {
        match name {
            "target" | "t" => target = Some(value.into()),
            "header" | "H" => headers.push(value.into()),
            _ => {
                // A one-letter name is a short flag (`-P`, `-c`, `-n`).
                let dashes = if name.len() == 1 { "-" } else { "--" };
                args.push(format!("{dashes}{name}={value}").into());
            }
        }
    }
    let mut out_flag = OsString::from("--out=");
    out_flag.push(out);
    args.push(out_flag);
    args.extend(tail);
    let mut env = Vec::new();
    if let Some(t) = target {
        env.push((crate::flags::TARGET_ENV, t));
    }
    if !headers.is_empty() {
        env.push((crate::flags::HEADERS_ENV, headers.join(OsStr::new("\n"))));
    }
    PointCommand { args, env }
}

/// The flags of `loadrig run WORKLOAD` (`args[1]`) that take a value,
/// as written (`--name`, `-x`): the word after one is its value, never
/// the target, whatever it holds (a `--cacert` path, a scrape URL).
fn value_flags(args: &[OsString]) -> Vec<String> {
    use clap::CommandFactory;
    let cmd = crate::flags::Cli::command();
    let workload = args.get(1).map(|w| w.to_string_lossy().into_owned());
    let Some(run) = cmd.find_subcommand("run") else {
        return Vec::new();
    };
    let Some(w) = workload.and_then(|w| run.find_subcommand(&w)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for arg in w.get_arguments() {
        if !arg.get_action().takes_values() {
            continue;
        }
        out.extend(arg.get_long().map(|l| format!("--{l}")));
        out.extend(arg.get_short().map(|c| format!("-{c}")));
    }
    out
}

/// `args` without the target and the headers, and those apart. A word
/// holding `://` is the target (http's URL) only where it is not the
/// value of a flag in `value_flags`.
fn secrets_apart(
    args: Vec<OsString>,
    value_flags: &[String],
) -> (Vec<OsString>, Option<OsString>, Vec<OsString>) {
    let (mut kept, mut target, mut headers) = (Vec::new(), None, Vec::new());
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let s = a.to_string_lossy();
        let inline = |long: &str, short: &str| {
            s.strip_prefix(long)
                .or_else(|| s.strip_prefix(short).filter(|r| !r.is_empty()))
                .map(|v| OsString::from(v.strip_prefix('=').unwrap_or(v)))
        };
        if s == "--target" || s == "-t" {
            target = it.next();
        } else if s == "--header" || s == "-H" {
            headers.extend(it.next());
        } else if let Some(v) = inline("--target=", "-t") {
            target = Some(v);
        } else if let Some(v) = inline("--header=", "-H") {
            headers.push(v);
        } else if value_flags.iter().any(|f| *f == s) {
            kept.push(a);
            kept.extend(it.next());
        } else if !s.starts_with('-') && s.contains("://") {
            target = Some(a);
        } else {
            kept.push(a);
        }
    }
    (kept, target, headers)
}

/// A file name for a point: its number, and its value when that is short
/// and plain.
fn point_stem(i: usize, value: &str) -> String {
    let plain = value.len() <= 24
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
    if plain {
        format!("point-{:03}-{value}", i + 1)
    } else {
        format!("point-{:03}", i + 1)
    }
}

fn secs(s: f64) -> String {
    if s >= 90.0 {
        format!("{}m{:02}s", (s / 60.0) as u64, (s % 60.0) as u64)
    } else {
        format!("{s:.1}s")
    }
}

/// SIGINT, SIGTERM and SIGHUP stop the sweep as they stop a run
/// ([`crate::signals`]): the first is passed on to the point running,
/// which ends its run with a report, and the sweep writes the table of
/// the points done; a second kills the point and ends the sweep at once.
/// The watch runs on a thread of its own, the sweep being synchronous.
pub(crate) fn watch_signals() -> anyhow::Result<Watch> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        rt.block_on(async {
            let _ = tx.send(crate::signals::watch());
            std::future::pending::<()>().await;
        });
    });
    rx.recv()
        .map_err(|_| anyhow::anyhow!("could not watch for signals"))
}

pub fn run(args: &SweepArgs) -> anyhow::Result<i32> {
    let (name, values) = parse_param(&args.param).map_err(|reason| InputError {
        path: "--param".into(),
        reason,
    })?;
    let dir = &args.dir;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let signals = watch_signals()?;
    let stop = signals.stop.clone();
    let mut table = Table {
        param: name.clone(),
        points: Vec::new(),
    };
    let began = Instant::now();
    let n = values.len();
    for (i, value) in values.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let done = began.elapsed().as_secs_f64();
        let left = match i {
            0 => "time left unknown".to_string(),
            _ => format!("about {} left", secs(done / i as f64 * (n - i) as f64)),
        };
        eprintln!(
            "[{}/{n}] {name}={} ... ({} so far, {left})",
            i + 1,
            mask_text(value),
            secs(done)
        );
        let (point, log_path) = run_point(args, &signals, &name, value, i)?;
        match &point.figures {
            Some(f) if point.ok() => eprintln!(
                "      {:.1} ops/s, p50 {:.3} ms, p99 {:.3} ms",
                f.throughput, f.p50_ms, f.p99_ms
            ),
            _ => eprintln!("      {} (see {})", point.status, log_path.display()),
        }
        table.points.push(point);
    }
    let interrupted = stop.load(Ordering::Relaxed);
    finish(args, &table)?;
    if interrupted {
        eprintln!(
            "interrupted: {} of {n} points done, kept in {}",
            table.points.len(),
            dir.display()
        );
    }
    let all_ok = !interrupted && table.points.len() == n && table.points.iter().all(Point::ok);
    Ok(if all_ok { exit::OK } else { exit::CHECK_FAILED })
}

/// Point `i`, `name=value`: a run of its own, as a child process of this
/// binary, in its own process group (a terminal's Ctrl-C reaches it
/// once, passed on by the sweep, as every other signal is). Its row of
/// the table, and the file that holds its output.
fn run_point(
    args: &SweepArgs,
    signals: &Watch,
    name: &str,
    value: &str,
    i: usize,
) -> anyhow::Result<(Point, PathBuf)> {
    let stem = point_stem(i, value);
    let report_path = args.dir.join(format!("{stem}.json"));
    let log_path = args.dir.join(format!("{stem}.log"));
    let cmd = child_args(&args.run, name, value, &report_path);
    let code = run_child(signals, cmd, &report_path, &log_path)?;
    let mut point = Point {
        value: mask_text(value),
        x: x_of(name, value, i),
        status: String::new(),
        figures: None,
        report: String::new(),
    };
    match report_path.exists().then(|| Report::read(&report_path)) {
        Some(Ok(r)) => {
            point.status = match (r.interrupted, code) {
                (true, _) => "interrupted".to_string(),
                (false, Some(0)) => "ok".to_string(),
                (false, c) => format!("exit {}", c.unwrap_or(-1)),
            };
            point.figures = Figures::of(&r).ok();
            point.report = format!("{stem}.json");
        }
        None | Some(Err(_)) => point.status = failed_status(code, &log_path),
    }
    Ok((point, log_path))
}

/// Run `cmd` (a `run` line of this binary) as a child, in its own
/// process group (a terminal's Ctrl-C reaches it once, passed on by the
/// parent, as every other signal is), its output to `log_path`, after
/// removing a stale `report_path`. Its exit code; `None`: killed by a
/// signal.
pub(crate) fn run_child(
    signals: &Watch,
    cmd: PointCommand,
    report_path: &Path,
    log_path: &Path,
) -> anyhow::Result<Option<i32>> {
    let me = std::env::current_exe().context("finding this binary to run the points")?;
    let _ = std::fs::remove_file(report_path);
    let log = File::create(log_path).with_context(|| format!("creating {}", log_path.display()))?;
    let err_log = log.try_clone()?;
    let mut child = Command::new(&me)
        .args(&cmd.args)
        .envs(cmd.env)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err_log)
        .process_group(0)
        .spawn()
        .with_context(|| format!("starting {}", me.display()))?;
    signals.adopt(child.id());
    let status = child.wait();
    signals.release(child.id());
    Ok(status
        .with_context(|| format!("waiting for {}", me.display()))?
        .code())
}

/// A point that left no report: how it exited, and its output's last line.
pub(crate) fn failed_status(code: Option<i32>, log_path: &Path) -> String {
    let last = std::fs::read_to_string(log_path)
        .ok()
        .and_then(|t| {
            t.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(String::from)
        })
        .unwrap_or_default();
    format!(
        "failed: exit {}{}",
        code.map_or("by signal".to_string(), |c| c.to_string()),
        match last.is_empty() {
            true => String::new(),
            false => format!(": {last}"),
        }
    )
}

/// The table, the CSV, the charts, the page and gnuplot's files.
fn finish(args: &SweepArgs, table: &Table) -> anyhow::Result<()> {
    let dir = &args.dir;
    for l in table.lines() {
        println!("{l}");
    }
    let csv = dir.join("sweep.csv");
    std::fs::write(&csv, table.csv()).with_context(|| format!("writing {}", csv.display()))?;
    let charts: Vec<Chart> = loadrig_present::plot::sweep_charts(&[("sweep", table)]);
    let svg_path = dir.join("sweep.svg");
    std::fs::write(&svg_path, svg::stack(&charts))
        .with_context(|| format!("writing {}", svg_path.display()))?;
    println!("wrote {} and {}", csv.display(), svg_path.display());
    if let Some(html) = &args.html {
        let page = loadrig_present::plot::html::sweep_page(table, &charts);
        std::fs::write(html, page).with_context(|| format!("writing {}", html.display()))?;
        println!("wrote {}", html.display());
    }
    if let Some(g) = &args.gnuplot {
        for f in table.gnuplot(g, &table.param)? {
            println!("wrote {f}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_as_lists_ranges_and_urls() {
        assert_eq!(parse_param("pipeline=1,2,4").unwrap().1, ["1", "2", "4"]);
        assert_eq!(parse_param("clients=1..4").unwrap().1, ["1", "2", "3", "4"]);
        assert_eq!(
            parse_param("pipeline=1..200:50").unwrap().1,
            ["1", "51", "101", "151", "200"]
        );
        let (n, v) = parse_param("target=redis://h:6379;redis://h:6379,6380").unwrap();
        assert_eq!(n, "target");
        assert_eq!(v, ["redis://h:6379", "redis://h:6379,6380"]);
        assert_eq!(x_of(&n, &v[1], 1), 2.0);
        assert_eq!(x_of("pipeline", "16", 3), 16.0);
        assert!(parse_param("pipeline").is_err());
        assert!(parse_param("pipeline=5..1").is_err());
        assert!(parse_param("x y=1").is_err());
    }

    /// What may hold a password or a token reaches the point by
    /// environment, never on its command line.
    #[test]
    fn the_target_and_the_headers_go_by_environment() {
        let words = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        let run = words(&[
            "http",
            "-H",
            "Authorization: Bearer t",
            "--header=X-Api-Key: k",
            "-c",
            "2",
            "https://u:pw@h/",
        ]);
        let cmd = child_args(&run, "c", "4", Path::new("p.json"));
        assert_eq!(
            cmd.args,
            words(&["run", "http", "-c", "2", "-c=4", "--out=p.json"])
        );
        assert_eq!(
            cmd.env,
            [
                (crate::flags::TARGET_ENV, OsString::from("https://u:pw@h/")),
                (
                    crate::flags::HEADERS_ENV,
                    OsString::from("Authorization: Bearer t\nX-Api-Key: k")
                ),
            ]
        );
        let swept = child_args(
            &words(&["redis", "-t", "redis://a"]),
            "target",
            "redis://:pw@b",
            Path::new("p.json"),
        );
        assert_eq!(swept.args, words(&["run", "redis", "--out=p.json"]));
        assert_eq!(
            swept.env,
            [(crate::flags::TARGET_ENV, OsString::from("redis://:pw@b"))]
        );
    }

    /// A flag's value is never taken for the target, even with a `://`.
    #[test]
    fn a_flags_value_is_not_the_target() {
        let words = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        let run = words(&["http", "--html", "x://page.html", "-c", "2", "http://h/"]);
        let cmd = child_args(&run, "c", "4", Path::new("p.json"));
        assert_eq!(
            cmd.args,
            words(&[
                "run",
                "http",
                "--html",
                "x://page.html",
                "-c",
                "2",
                "-c=4",
                "--out=p.json"
            ])
        );
        assert_eq!(
            cmd.env,
            [(crate::flags::TARGET_ENV, OsString::from("http://h/"))]
        );
    }

    #[test]
    fn the_swept_flag_goes_before_a_command_of_ones_own() {
        let run: Vec<OsString> = ["redis", "-n", "10", "--", "SET", "k", "v"]
            .iter()
            .map(OsString::from)
            .collect();
        let args = child_args(&run, "pipeline", "4", Path::new("d/p.json"));
        assert!(args.env.is_empty());
        let words: Vec<String> = args
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            words,
            [
                "run",
                "redis",
                "-n",
                "10",
                "--pipeline=4",
                "--out=d/p.json",
                "--",
                "SET",
                "k",
                "v"
            ]
        );
    }
}
