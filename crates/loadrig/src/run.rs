//! One run, start to end, for any (workload, target): connect, prepare,
//! record the baseline, wait for the start, drive the engine, verify
//! against the server, print the results, write the report, and choose
//! the exit code. A child of `--processes` only connects, runs and writes
//! its report; the parent ([`crate::multi`]) does the rest once.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use loadrig_engine::{EngineConfig, Outcome};
use loadrig_metrics::{ProcessUsage, Snapshot};
use loadrig_report::{Environment, Report, RunRecord, Verification};
use loadrig_spec::{Dispatch, RunSpec, SpecError, WorkloadSpec};
use loadrig_workloads::{group, Bench, Results, TargetInfo};

use crate::exit;
use crate::print::{csv, redis, Printer};
use crate::start::{self, StartRule};

/// Output choices and the process's part, none of them in the run spec.
pub struct Options {
    pub quiet: bool,
    pub csv: bool,
    pub out: Option<PathBuf>,
    /// When the load begins; `None`: as soon as the connections are open.
    pub start: Option<StartRule>,
    pub role: Role,
}

/// This process's part in the run.
#[derive(Debug, Clone, PartialEq)]
pub enum Role {
    /// The whole run in this process.
    Single,
    /// The parent of `--processes`: it prepares, starts the children with
    /// these arguments (plus each one's shard, start and report file),
    /// merges, verifies and tears down.
    Parent { child_args: Vec<OsString> },
    /// One of the parent's children: connect, run, write the report.
    Child,
}

pub async fn drive<B: Bench>(bench: B, spec: &RunSpec, opts: &Options) -> anyhow::Result<i32> {
    check_depth(&bench, spec)?;
    match &opts.role {
        Role::Parent { child_args } => crate::multi::parent(bench, spec, opts, child_args).await,
        Role::Single | Role::Child => single(bench, spec, opts).await,
    }
}

/// What was there before the load.
pub struct Prepared {
    pub server_version: Option<String>,
    pub baseline: serde_json::Value,
}

/// Connect, prepare and record the baseline (recorded even with
/// --no-verify, so `loadrig verify REPORT` can check later).
pub async fn prepare<B: Bench>(bench: &mut B, p: &mut Printer) -> anyhow::Result<Prepared> {
    p.phase("connect");
    let server_version = bench.target().server_version().await;
    p.phase("prepare");
    bench.prepare().await?;
    let baseline = bench.baseline().await?;
    Ok(Prepared {
        server_version,
        baseline,
    })
}

/// Set when Ctrl-C is pressed.
pub fn ctrl_c_flag() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let on_signal = stop.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_signal.store(true, Ordering::Relaxed);
        }
    });
    stop
}

async fn single<B: Bench>(mut bench: B, spec: &RunSpec, opts: &Options) -> anyhow::Result<i32> {
    let child = opts.role == Role::Child;
    let kinds = bench.kinds();
    let domains = bench.domains();
    let mut p = Printer::new(spec, opts.quiet, opts.csv);
    p.header(spec);

    let prepared = if child {
        p.phase("connect");
        Prepared {
            server_version: bench.target().server_version().await,
            baseline: serde_json::Value::Null,
        }
    } else {
        prepare(&mut bench, &mut p).await?
    };
    let cfg = EngineConfig {
        load: spec.load.clone(),
        seed: spec.seed,
        warmup: Duration::from_secs_f64(spec.warmup_secs),
        interval: Duration::from_secs_f64(spec.interval_secs),
        timeout: Duration::from_secs_f64(spec.timeout_secs),
        kinds: kinds.len(),
        domains: domains.len(),
        listeners: bench.listeners(),
        drain: bench.drain(),
    };
    // One phase running every kind, or (redis-benchmark's tests) one per
    // kind, one after the other, each over fresh connections.
    let phases: Vec<Option<usize>> = if bench.sequential() {
        (0..kinds.len()).map(Some).collect()
    } else {
        vec![None]
    };
    let stop = ctrl_c_flag();
    let mut begin: Option<start::Begin> = None;
    let mut total: Option<Outcome> = None;
    let mut kind_elapsed: Vec<Option<Duration>> = Vec::new();
    let mut db_cpu_before = None;
    let mut usage_before = None;
    for phase in phases {
        if let Some(k) = phase {
            bench.enter(k);
        }
        let conns = spec.load.connections as usize + cfg.listeners;
        let mut drivers = Vec::with_capacity(conns);
        for _ in 0..conns {
            drivers.push(bench.connect().await?);
        }
        let at = match &begin {
            Some(_) => start::now(),
            None => {
                let b = match opts.start {
                    Some(rule) => {
                        let now = SystemTime::now();
                        let at = rule.resolve(now);
                        p.end_phases();
                        p.line(&start_line(at, now));
                        start::wait_for(at, &stop).await
                    }
                    None => start::now(),
                };
                p.phase("run");
                p.end_phases();
                db_cpu_before = bench.target().embedded_cpu().await;
                usage_before = Some(ProcessUsage::now());
                *begin.insert(b)
            }
        };
        let first = begin.as_ref().map_or(at.at, |b| b.at);
        let outcome =
            loadrig_engine::run(&cfg, drivers, at.at, stop.clone(), |lap| p.lap(lap)).await;
        p.end_laps();
        if let Some(k) = phase {
            kind_elapsed.resize(kinds.len(), None);
            kind_elapsed[k] = Some(outcome.elapsed);
            p.test_line(kinds[k], &outcome.measured, k, outcome.elapsed);
        }
        let interrupted = outcome.interrupted;
        match &mut total {
            None => total = Some(outcome),
            Some(t) => append(t, outcome, at.at.saturating_duration_since(first)),
        }
        if interrupted {
            break;
        }
    }
    let (Some(outcome), Some(begin), Some(usage_before)) = (total, begin, usage_before) else {
        anyhow::bail!("nothing to run");
    };
    let mut usage = ProcessUsage::now().since(&usage_before);
    // With an embedded database its thread's CPU is the server's, not the
    // client's: take it out, and say so.
    let db_cpu = match (db_cpu_before, bench.target().embedded_cpu().await) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    if let Some(db) = db_cpu {
        usage.cpu = usage.cpu.saturating_sub(db);
    }

    p.phase("cool down");
    let report = Report::build(RunRecord {
        spec,
        environment: environment(spec, prepared.server_version, &bench),
        started_unix_ms: begin.unix_ms,
        kinds: &kinds,
        domains: &domains,
        outcome: &outcome,
        kind_elapsed: &kind_elapsed,
        usage,
        verification: None,
        results: Results::default(),
        exit_code: exit::OK,
    });
    let mut counted = outcome.warmup.clone();
    counted.merge(&outcome.measured);
    let after = db_cpu.map(|db| {
        format!(
            "embedded database: {:.3}s cpu on its own thread (not counted as client cpu)",
            db.as_secs_f64()
        )
    });
    let end = End {
        report,
        measured: outcome.measured,
        counted,
        baseline: (!child).then_some(prepared.baseline),
        failed: Vec::new(),
        after_summary: after.into_iter().collect(),
    };
    conclude(&mut bench, spec, opts, &mut p, end).await
}

/// Add the outcome of a later phase that started `offset` after the
/// first: counts and histograms add, laps follow on (their times shifted
/// to count from the first phase's start), measured times add up.
fn append(total: &mut Outcome, next: Outcome, offset: Duration) {
    total.warmup.merge(&next.warmup);
    total.measured.merge(&next.measured);
    total.laps.extend(next.laps.into_iter().map(|mut l| {
        l.elapsed += offset;
        l
    }));
    total.elapsed += next.elapsed;
    total.interrupted |= next.interrupted;
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
    }
}

/// A run's measurements, ready to be checked and shown.
pub struct End {
    /// Verification, results and exit code still to fill in.
    pub report: Report,
    pub measured: Snapshot,
    /// Warm-up and measured together: what the server should hold.
    pub counted: Snapshot,
    /// `None`: a child, which neither verifies nor tears down.
    pub baseline: Option<serde_json::Value>,
    /// Why the run failed already (children that failed), if it did.
    pub failed: Vec<String>,
    /// Lines after the overall line.
    pub after_summary: Vec<String>,
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
    let End {
        mut report,
        measured,
        counted,
        baseline,
        failed,
        after_summary,
    } = end;
    let mut reasons = failed;
    if let Some(baseline) = &baseline {
        let verdict = if spec.verify {
            p.phase("verify");
            let v = bench.verify(baseline, &counted).await?;
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
            p.line("verify ... skipped (--no-verify; check later with `loadrig verify REPORT`)");
            None
        };
        if verdict.as_ref().and_then(|v| v.passed) == Some(false) {
            reasons.push("verification failed".to_string());
        }
        report.results = bench.results(&counted).await?;
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
                "error rate {:.4} above --max-error-rate {max}",
                rate
            ));
        }
    }
    if report.interrupted {
        reasons.push("interrupted".to_string());
    }
    if !reasons.is_empty() {
        report.exit_code = report.exit_code.max(exit::CHECK_FAILED);
    }
    let kinds: Vec<&str> = report
        .measured
        .kinds
        .iter()
        .map(|k| k.name.as_str())
        .collect();
    p.summary(&report, &measured, &kinds);
    if let WorkloadSpec::Memcache(_) = spec.workload {
        p.line(&crate::print::net_rate(&report.measured));
    }
    for l in &after_summary {
        p.line(l);
    }
    if opts.csv {
        let rows = match spec.workload {
            WorkloadSpec::Redis(_) => redis::csv_rows(&report),
            _ => csv::rows(&report),
        };
        for row in rows {
            println!("{row}");
        }
    }
    if let Some(path) = &opts.out {
        report.write(path).with_context(|| "writing the report")?;
    }
    if baseline.is_some() {
        bench.finish(spec.keep).await?;
    }
    for r in reasons {
        p.line(&format!("check failed: {r}"));
    }
    Ok(report.exit_code)
}

/// The requests one connection must carry must fit what the target allows.
fn check_depth<B: Bench>(bench: &B, spec: &RunSpec) -> Result<(), SpecError> {
    let load = &spec.load;
    let per_conn = load.clients.div_ceil(load.connections) as usize;
    let (depth, flag) = match load.dispatch {
        Dispatch::Direct => (per_conn * load.pipeline as usize, "--pipeline"),
        Dispatch::Managed { slots, .. } => (slots as usize, "--slots"),
    };
    let max = bench.target().max_depth();
    if depth > max {
        return Err(SpecError::new(
            flag,
            format!(
                "{depth} requests in flight per connection, but this target allows at most {max}"
            ),
        ));
    }
    Ok(())
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "unknown".to_string())
}
