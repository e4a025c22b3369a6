//! `--processes K`: the load and its measurement by K local processes
//! (the Erlvolt multi-VM bench), docs/explanations/measurement.md section 6. The parent,
//! having prepared and recorded the baseline once, picks one wall-clock
//! start and starts K copies of this binary, each the shard k/K of the
//! run with `--child`; each connects, waits for the start, runs and
//! writes its report. The parent gathers their shares of the
//! verification and merges their reports (`Report::merge`: histograms
//! add, counts sum, laps align by wall clock); the session goes on from
//! verify with the merged report. With `--dashboard` each child also
//! sends its laps on its standard output, summed into the parent's.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use loadrig_dashboard::{Dashboard, Sum};
use loadrig_present::print::{overall, Printer};
use loadrig_report::Report;
use loadrig_workloads::Bench;

use super::dashboard;
use super::measure::{environment, End};
use super::prepare::Before;
use super::Session;
use crate::exit;
use crate::start::{self, start_line, waited_line, StartRule};

/// How the parent of `--processes` starts each child, less what it adds per
/// child (`--shard`, `--start-at`, `--out`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChildLine {
    /// `run WORKLOAD` and every flag the user gave, as given, except the
    /// parent's own and those in `env`.
    pub args: Vec<OsString>,
    /// Flags passed as environment variables (secrets).
    pub env: Vec<(&'static str, OsString)>,
}

/// The start when neither `--start-at` nor `--start-delay` is given.
const DEFAULT_START: StartRule = StartRule::Delay(1.0);

/// How one child ended.
pub struct Finished {
    /// Its exit code; `None` when a signal ended it.
    code: Option<i32>,
    stderr: String,
    report: Option<Report>,
    /// Why there is no report, when there is none.
    missing: Option<String>,
}

/// The children, ended, the start they were given (unix ms), and the
/// dashboard their laps were summed on, still showing.
pub struct Children {
    finished: Vec<Finished>,
    at: u64,
    board: Option<Arc<Dashboard>>,
}

/// What the parent gathered from its children.
pub enum Gathered {
    /// Their reports, merged.
    Merged(Box<End>),
    /// No child left a report: why, and the exit code.
    Nothing { failed: Vec<String>, code: i32 },
}

impl<B: Bench> Session<'_, B> {
    /// Start the K children on one start, and wait for them all.
    pub(super) async fn processes(
        &mut self,
        child: &ChildLine,
        cpus: Option<&[usize]>,
    ) -> anyhow::Result<Children> {
        let k = self.spec.processes;
        let now = SystemTime::now();
        let at = self.opts.start.unwrap_or(DEFAULT_START).resolve(now);
        self.console.end_phases();
        self.console.line(&start_line(at, now));
        let dir = ReportDir::new(self.opts.out.as_deref())?;
        // Said before the dashboard takes the terminal.
        self.console.phase(&format!("run {k} processes"));
        self.console.end_phases();
        let board = dashboard::open(self.spec, self.opts, k);
        if board.is_some() {
            self.console.hold();
        }
        let sum = Arc::new(Mutex::new(Sum::new(k)));
        let mut running = Vec::with_capacity(k as usize);
        let mut followers = Vec::new();
        for i in 0..k {
            let path = dir.child(i);
            let cpu = cpus.and_then(|c| c.get(i as usize)).copied();
            let mut process = match spawn(child, i, k, at, cpu, &path, board.is_some()) {
                Ok(p) => p,
                Err(e) => {
                    board.inspect(|d| d.finish(None));
                    self.console.release();
                    return Err(e);
                }
            };
            // Its laps onto the dashboard, read off the runtime.
            if let (Some(d), Some(out)) = (&board, process.stdout.take()) {
                let (d, sum) = (d.clone(), sum.clone());
                followers.push(std::thread::spawn(move || {
                    dashboard::follow(out, &sum, &d);
                }));
            }
            let pid = process.id();
            // Every signal stops the children too (they are also told by
            // the kernel if this process dies: signals::die_with_parent).
            self.signals.adopt(pid);
            let watch = self.signals.clone();
            // Reading both pipes to the end while it runs, off the
            // runtime; once reaped, its id may be another process's: no
            // more signals.
            running.push((
                path,
                tokio::task::spawn_blocking(move || {
                    let out = process.wait_with_output();
                    watch.release(pid);
                    out
                }),
            ));
        }
        let mut finished = Vec::with_capacity(running.len());
        for (path, handle) in running {
            let output = match handle.await {
                Ok(Ok(o)) => Ok(o),
                Ok(Err(e)) => Err(e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            finished.push(finish(output, &path));
        }
        for f in followers {
            let _ = f.join();
        }
        dir.clean();
        Ok(Children {
            finished,
            at,
            board,
        })
    }

    /// The children's shares of the verification, and their reports
    /// merged into the run's.
    pub(super) fn gather(
        &mut self,
        children: Children,
        before: Before,
    ) -> anyhow::Result<Gathered> {
        let Children {
            mut finished,
            at,
            board,
        } = children;
        if let Some(d) = board {
            d.finish(verdict(&finished));
            self.console.release();
        }
        let (failed, children_code) = report_children(&mut self.console, &finished, at);
        // Taken by process, before the reports are: a child without one
        // leaves a gap, so the others keep their numbers.
        let shares = finished
            .iter_mut()
            .map(|f| f.report.as_mut().and_then(|r| r.share.take()))
            .collect();
        self.bench
            .gather(shares)
            .context("reading the processes' shares of the verification")?;
        let reports: Vec<Report> = finished.into_iter().filter_map(|f| f.report).collect();
        // Merged before the phase line: the wait's line (the children's
        // re-openings, summed by the merge) comes before it.
        let merged = (!reports.is_empty())
            .then(|| Report::merge(&reports))
            .transpose()?;
        if let Some(m) = merged.as_ref().map(|m| &m.measured) {
            if let Some(line) = waited_line(m.reopened_waiting, m.reopen_failed_waiting) {
                self.console.line(&line);
            }
        }
        self.console.phase("cool down");
        let Some(mut merged) = merged else {
            return Ok(Gathered::Nothing {
                failed,
                code: children_code,
            });
        };
        merged.spec = self.spec.masked();
        merged.environment = environment(self.spec, before.server_version, &self.bench, self.opts);
        merged.exit_code = children_code;
        if self.stop.load(Ordering::Relaxed) {
            merged.interrupted = true;
        }
        let bad = |e| anyhow::anyhow!("merged report: {e}");
        let measured = merged.measured.snapshot().map_err(bad)?;
        let mut counted = merged.warmup.snapshot().map_err(bad)?;
        counted.merge(&measured);
        Ok(Gathered::Merged(Box::new(End {
            report: merged,
            counted,
            baseline: Some(before.baseline),
            failed,
            after_summary: Vec::new(),
        })))
    }

    /// No child left a report: nothing to verify or show; what the run
    /// made is dropped all the same.
    pub(super) async fn nothing_gathered(
        &mut self,
        failed: Vec<String>,
        code: i32,
    ) -> anyhow::Result<i32> {
        self.console.line("");
        self.console
            .line("no process left a report: nothing to merge");
        self.deadlines
            .cold("clean-up", self.bench.finish(self.spec.keep))
            .await?;
        self.failed_lines(&failed);
        Ok(code.max(exit::CHECK_FAILED))
    }
}

/// The validity verdict of the children's reports merged, for the
/// dashboard's last frame (the run's own is judged after verification).
fn verdict(finished: &[Finished]) -> Option<String> {
    let reports: Vec<Report> = finished.iter().filter_map(|f| f.report.clone()).collect();
    let merged = (!reports.is_empty()).then(|| Report::merge(&reports).ok())??;
    Some(merged.validity().line())
}

/// Start child `i` of `k`: the user's flags as given, then its shard,
/// the start, its report file and its CPU; with `feed`, its laps on its
/// standard output for the dashboard.
fn spawn(
    child: &ChildLine,
    i: u32,
    k: u32,
    at: u64,
    cpu: Option<usize>,
    path: &Path,
    feed: bool,
) -> anyhow::Result<std::process::Child> {
    let mut cmd = Command::new(std::env::current_exe().context("finding this executable")?);
    cmd.args(&child.args)
        .envs(child.env.iter().map(|(k, v)| (k, v)))
        .arg(format!("--shard={i}/{k}"))
        .arg(format!("--start-at={}", start::unix_text(at)))
        .arg("-q")
        .arg("--child")
        .arg(with_value("--out=", path))
        .args(cpu.map(|c| format!("--cpus={c}")))
        .args(feed.then_some("--lap-feed"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // A group of its own: a Ctrl-C at the terminal reaches the
        // parent alone, which passes it on once (twice would be "now").
        .process_group(0);
    cmd.spawn().with_context(|| format!("starting process {i}"))
}

/// Read what a child left behind.
fn finish(output: Result<Output, String>, path: &Path) -> Finished {
    let (code, stderr) = match output {
        Ok(o) => (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        ),
        Err(e) => (None, e),
    };
    let (report, missing) = if path.exists() {
        match Report::read(path) {
            Ok(r) => (Some(r), None),
            Err(e) => (None, Some(e.to_string())),
        }
    } else {
        (None, Some("no report".to_string()))
    };
    Finished {
        code,
        stderr,
        report,
        missing,
    }
}

/// One line per process (its overall line, or why it has none), its
/// standard error when it failed; the reasons the run failed and the
/// exit code the children call for (3 when one could not reach the target).
fn report_children(p: &mut Printer, finished: &[Finished], at_ms: u64) -> (Vec<String>, i32) {
    let mut reasons = Vec::new();
    let mut code = exit::OK;
    for (i, f) in finished.iter().enumerate() {
        match (&f.report, &f.missing) {
            (Some(r), _) => {
                let on = r
                    .environment
                    .cpu
                    .map_or(String::new(), |c| format!(" on CPU {c}"));
                p.line(&format!("process {i}{on}: {}", overall(r)));
                // On time, a child's start is the start asked for, exactly.
                if r.started_unix_ms > at_ms {
                    p.line(&format!(
                        "process {i}: started {:.3}s late (it connected after the start; \
                         give a longer --start-delay)",
                        (r.started_unix_ms - at_ms) as f64 / 1e3
                    ));
                }
            }
            (None, why) => {
                let why = why.as_deref().unwrap_or("no report");
                let line = format!("process {i}: {why}: its share is missing");
                p.line(&line);
                reasons.push(line);
                code = code.max(exit::CHECK_FAILED);
            }
        }
        match f.code {
            Some(0) => {}
            other => {
                for l in f.stderr.lines() {
                    p.line(&format!("[p{i}] {l}"));
                }
                let how = other.map_or("was killed by a signal".to_string(), |c| {
                    format!("exited with code {c}")
                });
                reasons.push(format!("process {i} {how}"));
                code = if other == Some(exit::TARGET) || code == exit::TARGET {
                    exit::TARGET
                } else {
                    exit::CHECK_FAILED
                };
            }
        }
    }
    (reasons, code)
}

/// `--out=PATH` as one word, without assuming the path is UTF-8.
fn with_value(flag: &str, path: &Path) -> OsString {
    let mut w = OsString::from(flag);
    w.push(path.as_os_str());
    w
}

/// Where the children write their reports: beside `--out` as
/// `<stem>.p<k>.json`, kept; or in a private temporary folder, removed.
struct ReportDir {
    dir: PathBuf,
    stem: String,
    temporary: bool,
}

impl ReportDir {
    fn new(out: Option<&Path>) -> anyhow::Result<ReportDir> {
        if let Some(out) = out {
            let dir = out
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_path_buf();
            let stem = out
                .file_stem()
                .map_or("report".into(), |s| s.to_string_lossy().into_owned());
            return Ok(ReportDir {
                dir,
                stem,
                temporary: false,
            });
        }
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!("loadrig-{}-{nanos:09}", std::process::id()));
        std::fs::create_dir(&dir)
            .with_context(|| format!("making a folder for the reports: {}", dir.display()))?;
        Ok(ReportDir {
            dir,
            stem: "report".into(),
            temporary: true,
        })
    }

    fn child(&self, k: u32) -> PathBuf {
        let path = self.dir.join(format!("{}.p{k}.json", self.stem));
        // A report left by an earlier run must not pass for this one's.
        let _ = std::fs::remove_file(&path);
        path
    }

    fn clean(&self) {
        if self.temporary {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
