//! One run, start to end, for any (workload, target): connect, prepare,
//! record the baseline, drive the engine, verify against the server,
//! print the results, write the report, and choose the exit code.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use loadrig_engine::EngineConfig;
use loadrig_metrics::ProcessUsage;
use loadrig_report::{Environment, Report, RunRecord, Verification};
use loadrig_spec::{Dispatch, RunSpec, SpecError};
use loadrig_workloads::{Bench, TargetInfo};

use crate::exit;
use crate::print::{csv, Printer};

/// Output choices that are not part of the run spec.
pub struct Options {
    pub quiet: bool,
    pub csv: bool,
    pub out: Option<PathBuf>,
}

pub async fn drive<B: Bench>(mut bench: B, spec: &RunSpec, opts: &Options) -> anyhow::Result<i32> {
    check_depth(&bench, spec)?;
    let kinds = bench.kinds();
    let domains = bench.domains();
    let mut p = Printer::new(spec, opts.quiet, opts.csv);
    p.header(spec);

    p.phase("connect");
    let server_version = bench.target().server_version().await;
    p.phase("prepare");
    bench.prepare().await?;
    // Recorded even with --no-verify, so `loadrig verify REPORT` can check later.
    let baseline = bench.baseline().await?;
    let mut drivers = Vec::with_capacity(spec.load.connections as usize);
    for _ in 0..spec.load.connections {
        drivers.push(bench.connect().await?);
    }
    p.phase("run");
    p.end_phases();

    let stop = Arc::new(AtomicBool::new(false));
    let on_signal = stop.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_signal.store(true, Ordering::Relaxed);
        }
    });

    let cfg = EngineConfig {
        load: spec.load.clone(),
        seed: spec.seed,
        warmup: Duration::from_secs_f64(spec.warmup_secs),
        interval: Duration::from_secs_f64(spec.interval_secs),
        timeout: Duration::from_secs_f64(spec.timeout_secs),
        kinds: kinds.len(),
        domains: domains.len(),
    };
    let started_unix_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let db_cpu_before = bench.target().embedded_cpu().await;
    let usage_before = ProcessUsage::now();
    let start = tokio::time::Instant::now() + Duration::from_millis(5);
    let outcome = loadrig_engine::run(&cfg, drivers, start, stop, |lap| p.lap(lap)).await;
    let mut usage = ProcessUsage::now().since(&usage_before);
    p.end_laps();
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
    let mut counted = outcome.warmup.clone();
    counted.merge(&outcome.measured);
    let verdict = if spec.verify {
        p.phase("verify");
        let v = bench.verify(&baseline, &counted).await?;
        p.line(&v.summary);
        Some(v)
    } else {
        p.line("verify ... skipped (--no-verify; check later with `loadrig verify REPORT`)");
        None
    };
    let results = bench.results(&counted).await?;
    p.results(&results);

    let mut code = exit::OK;
    let mut reasons = Vec::new();
    if verdict.as_ref().and_then(|v| v.passed) == Some(false) {
        code = exit::CHECK_FAILED;
        reasons.push("verification failed".to_string());
    }
    let ops = outcome.measured.ops();
    if let Some(max) = spec.max_error_rate {
        let rate = if ops == 0 {
            0.0
        } else {
            outcome.measured.errors() as f64 / ops as f64
        };
        if rate > max {
            code = exit::CHECK_FAILED;
            reasons.push(format!(
                "error rate {:.4} above --max-error-rate {max}",
                rate
            ));
        }
    }
    if outcome.interrupted {
        code = exit::CHECK_FAILED;
        reasons.push("interrupted".to_string());
    }

    let report = Report::build(RunRecord {
        spec,
        environment: Environment {
            host: hostname(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            os: std::env::consts::OS.to_string(),
            target: spec.target.clone(),
            server_version,
            durability: bench.target().durability(),
        },
        started_unix_ms,
        kinds: &kinds,
        domains: &domains,
        outcome: &outcome,
        usage,
        verification: Some(Verification {
            baseline: baseline.clone(),
            verdict: verdict.clone(),
        }),
        results,
        exit_code: code,
    });
    p.summary(&report, &outcome.measured, &kinds);
    if let Some(db) = db_cpu {
        p.line(&format!(
            "embedded database: {:.3}s cpu on its own thread (not counted as client cpu)",
            db.as_secs_f64()
        ));
    }
    if opts.csv {
        for row in csv::rows(&report) {
            println!("{row}");
        }
    }
    if let Some(path) = &opts.out {
        report.write(path).with_context(|| "writing the report")?;
    }
    bench.finish(spec.keep).await?;
    for r in reasons {
        p.line(&format!("check failed: {r}"));
    }
    Ok(code)
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
