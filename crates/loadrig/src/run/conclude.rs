//! What a single run and the parent of `--processes` share: connect and
//! prepare before the load, and after it verify, show the results, pick
//! the exit code, print the summary, write the report, tear down.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use loadrig_metrics::{Snapshot, Verdict};
use loadrig_report::fmt::group;
use loadrig_report::{Environment, Report, Verification};
use loadrig_spec::{CsvDialect, RunSpec};
use loadrig_workloads::{Bench, TargetInfo};

use crate::exit;
use crate::print::{csv, redis, Printer};
use crate::start;

use super::deadline::Deadlines;
use super::Options;

/// What was there before the load.
pub struct Prepared {
    pub server_version: Option<String>,
    pub baseline: serde_json::Value,
}

/// Connect, prepare and record the baseline (recorded even with
/// --no-verify, so `loadrig verify REPORT` can check later).
/// A signal (`stop`) ends preparing at once: a load of ten million rows
/// is not waited for. Nothing was measured, so no report: exit 1.
pub async fn prepare<B: Bench>(
    bench: &mut B,
    p: &mut Printer,
    d: &Deadlines,
    stop: &AtomicBool,
) -> anyhow::Result<Prepared> {
    p.phase("connect");
    let server_version = d.ask(bench.target().server_version()).await;
    let unread = bench.target().unread();
    if !unread.is_empty() {
        p.line(&format!("not read from the server: {}", unread.join("; ")));
    }
    p.phase("prepare");
    let interrupted =
        || anyhow::anyhow!("interrupted by a signal while preparing: nothing was run");
    unless_stopped(false, stop, d.cold("prepare", bench.prepare()))
        .await
        .ok_or_else(interrupted)??;
    let baseline = unless_stopped(false, stop, d.cold("the baseline", bench.baseline()))
        .await
        .ok_or_else(interrupted)??;
    Ok(Prepared {
        server_version,
        baseline,
    })
}

/// `start at ...`, and how late it is if that time has passed.
pub fn start_line(at_ms: u64, now: SystemTime) -> String {
    let now_ms = start::unix_ms(now);
    if at_ms < now_ms {
        format!(
            "{}: {:.3}s late, starting now",
            start::line(at_ms),
            (now_ms - at_ms) as f64 / 1e3
        )
    } else {
        start::line(at_ms)
    }
}

/// What the wait for the start did to the connections, when it did
/// anything: `while waiting for the start: 3 connections closed by the
/// server were opened again`.
pub fn waited_line(reopened: u64, failed: u64) -> Option<String> {
    let count = |n: u64| match n {
        1 => "1 connection".to_owned(),
        n => format!("{n} connections"),
    };
    let verb = |n: u64| if n == 1 { "was" } else { "were" };
    let mut parts = Vec::new();
    if reopened > 0 {
        parts.push(format!(
            "{} closed by the server {} opened again",
            count(reopened),
            verb(reopened)
        ));
    }
    if failed > 0 {
        parts.push(format!(
            "{} could not be opened again (the load reconnects {})",
            count(failed),
            if failed == 1 { "it" } else { "them" }
        ));
    }
    (!parts.is_empty()).then(|| format!("while waiting for the start: {}", parts.join("; ")))
}

pub fn environment<B: Bench>(
    spec: &RunSpec,
    server_version: Option<String>,
    bench: &B,
) -> Environment {
    Environment {
        host: hostname(),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        os: std::env::consts::OS.to_string(),
        target: spec.target.clone(),
        server_version,
        durability: bench.target().durability(),
        unread: bench.target().unread(),
        cpu: crate::pin::pinned(),
        sources: loadrig_targets::bound_sources(),
    }
}

/// A run's measurements, ready to be checked and shown.
pub struct End {
    /// Verification, results and exit code still to fill in.
    pub report: Report,
    /// Warm-up and measured together: what the server should hold.
    pub counted: Snapshot,
    /// `None`: a child, which neither verifies nor tears down.
    pub baseline: Option<serde_json::Value>,
    /// Why the run failed already (children that failed), if it did.
    pub failed: Vec<String>,
    /// Lines after the overall line.
    pub after_summary: Vec<String>,
    /// Set by the first signal (`signals::Watch::stop`).
    pub stop: Arc<AtomicBool>,
}

/// `step`, unless a first signal came after the load: then `None` at
/// once. A run stopped during its load verifies what it issued (its
/// signal is behind it; a second one ends the process); a signal after
/// the load (a verification stuck on a server that stopped answering)
/// ends the step, and the report is still written.
async fn unless_stopped<T>(
    load_stopped: bool,
    stop: &AtomicBool,
    step: impl Future<Output = T>,
) -> Option<T> {
    if load_stopped {
        return Some(step.await);
    }
    let signalled = async {
        while !stop.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::select! {
        out = step => Some(out),
        () = signalled => None,
    }
}

/// Verify, show the results, pick the exit code, print the summary, write
/// the report, tear down.
pub async fn conclude<B: Bench>(
    bench: &mut B,
    spec: &RunSpec,
    opts: &Options,
    p: &mut Printer,
    end: End,
) -> anyhow::Result<i32> {
    let d = Deadlines::of(spec);
    let End {
        mut report,
        counted,
        baseline,
        failed,
        after_summary,
        stop,
    } = end;
    let mut reasons = failed;
    // A signal ended the verification: the server may not be answering,
    // so nothing more is asked of it.
    let mut cut_short = false;
    let load_stopped = report.interrupted;
    if let Some(baseline) = &baseline {
        let verdict = if spec.verify {
            p.phase("verify");
            let verifying = unless_stopped(
                load_stopped,
                &stop,
                d.cold("verify", bench.verify(baseline, &counted)),
            );
            let v = match verifying.await {
                // Verified through a connection that still reads what the
                // path no longer names: the data is gone all the same.
                Some(Ok(mut v)) => {
                    if let Some(why) = bench.target().lost() {
                        v.checks
                            .push(loadrig_workloads::Check::new(why.clone(), 0, 1));
                        v.passed = Some(false);
                        v.summary = format!("FAILED ({why})");
                    }
                    v
                }
                None => {
                    report.interrupted = true;
                    cut_short = true;
                    Verdict {
                        passed: None,
                        summary: "not done (interrupted by a signal)".to_string(),
                        checks: Vec::new(),
                    }
                }
                // The load ran and was measured: its report is written
                // all the same, with the target's exit code and why.
                Some(Err(e)) => {
                    let e = anyhow::Error::from(e);
                    report.exit_code = report.exit_code.max(exit::code_of(&e));
                    reasons.push(format!("could not verify: {}", crate::one_line(&e)));
                    Verdict {
                        passed: None,
                        summary: format!("not done (the target failed: {})", crate::one_line(&e)),
                        checks: Vec::new(),
                    }
                }
            };
            p.line(&v.summary);
            // The warm-up's writes are on the server too: say how much of
            // what was verified it was, so the measured count beside it
            // does not read as a discrepancy (docs/rates.md).
            let (w, m) = (report.warmup.ops, report.measured.ops);
            if w > 0 {
                p.line(&format!(
                    "verified against {} operations = {} warm-up + {} measured",
                    group(w + m),
                    group(w),
                    group(m)
                ));
            }
            Some(v)
        } else {
            p.line(if spec.keep || bench.target().keeps_data() {
                "verify ... skipped (--no-verify; the data is kept: check it with `loadrig verify REPORT`)"
            } else {
                "verify ... skipped (--no-verify; the data is removed now: with --keep it stays for `loadrig verify REPORT`)"
            });
            None
        };
        if verdict.as_ref().and_then(|v| v.passed) == Some(false) {
            reasons.push("verification failed".to_string());
        }
        let results = unless_stopped(
            load_stopped,
            &stop,
            d.cold("the results", bench.results(&counted)),
        );
        report.results = match if cut_short { None } else { results.await } {
            Some(Ok(r)) => r,
            None => Default::default(),
            Some(Err(e)) => {
                let e = anyhow::Error::from(e);
                report.exit_code = report.exit_code.max(exit::code_of(&e));
                reasons.push(format!("no results: {}", crate::one_line(&e)));
                Default::default()
            }
        };
        p.results(&report.results);
        report.verification = Some(Verification {
            baseline: baseline.clone(),
            verdict,
        });
    } else {
        p.end_phases();
    }
    let m = &report.measured;
    if let Some(max) = spec.max_error_rate {
        let rate = if m.ops == 0 {
            0.0
        } else {
            m.errors as f64 / m.ops as f64
        };
        if rate > max {
            reasons.push(format!(
                "{:.2}% of the operations failed, more than --max-error-rate {max} allows",
                rate * 100.0
            ));
        }
    }
    for t in &spec.thresholds {
        let j = report.judge(t);
        p.line(&j.line);
        if !j.passed {
            reasons.push(format!("threshold {t} not met"));
        }
    }
    if report.interrupted {
        reasons.push("interrupted".to_string());
    }
    let lost = report.measured.gave_up + report.warmup.gave_up;
    if lost > 0 {
        reasons.push(format!(
            "the target was lost: {lost} connection(s) gave up after --timeout without it, before the run's end"
        ));
    }
    if !reasons.is_empty() {
        report.exit_code = report.exit_code.max(exit::CHECK_FAILED);
    }
    p.summary(&report)?;
    for l in &after_summary {
        p.line(l);
    }
    if opts.csv {
        let rows = match spec.workload.output().csv {
            CsvDialect::RedisBenchmark => redis::csv_rows(&report),
            CsvDialect::Loadrig => csv::rows(&report),
        };
        for row in rows {
            crate::say!("{row}");
        }
    }
    if opts.json {
        let failed: Vec<String> = reasons
            .iter()
            .map(|r| format!("check failed: {r}"))
            .collect();
        crate::say!("{}", crate::print::json::summary(&report, &failed));
    }
    if let Some(path) = &opts.out {
        report.write(path).with_context(|| "writing the report")?;
    }
    if let Some(path) = &opts.hdr_log {
        let log = loadrig_report::interval_log(&report).map_err(anyhow::Error::msg)?;
        std::fs::write(path, log)
            .with_context(|| format!("writing the interval log {}", path.display()))?;
    }
    if let Some(path) = &opts.html {
        let name = opts
            .out
            .as_deref()
            .map_or_else(|| "this run".to_string(), crate::plot::stem);
        crate::plot::html::write_reports(path, &[(name, &report)])?;
    }
    if baseline.is_some() && cut_short {
        p.line("clean-up ... skipped (interrupted): what the run wrote stays on the target");
    } else if baseline.is_some() {
        d.cold("clean-up", bench.finish(spec.keep)).await?;
    }
    for r in reasons {
        p.line(&format!("check failed: {r}"));
    }
    Ok(report.exit_code)
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "unknown".to_string())
}
