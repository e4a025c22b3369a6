//! One run in this process, from connect to exit code (also a child of
//! `--processes`: connect, run, write the report). Sequential workloads
//! (redis-benchmark's tests) run one engine phase per kind.

use std::time::{Duration, SystemTime};

use loadrig_engine::{EngineConfig, Outcome, Threads};
use loadrig_metrics::ProcessUsage;
use loadrig_report::{Report, RunRecord};
use loadrig_spec::RunSpec;
use loadrig_workloads::{Bench, Results, TargetInfo};

use crate::exit;
use crate::print::Printer;
use crate::start;

use super::deadline::Deadlines;
use super::sampler::Sampler;
use super::{Options, Role};

use super::conclude::{conclude, environment, prepare, start_line, waited_line, End, Prepared};

pub(super) async fn single<B: Bench>(
    mut bench: B,
    spec: &RunSpec,
    opts: &Options,
) -> anyhow::Result<i32> {
    // From here on a signal stops the run and still gets its report.
    let stop = crate::signals::watch().stop;
    let d = Deadlines::of(spec);
    // A shard of `--no-prepare` neither prepares nor verifies nor drops.
    let child = opts.role == Role::Child || !spec.prepare;
    let kinds = bench.kinds();
    let domains = bench.domains();
    let mut p =
        Printer::new(spec, opts.quiet, opts.data_on_stdout()).with_resources(opts.resources);
    p.header(spec, bench.target().durability().as_deref());

    let prepared = if child {
        p.phase("connect");
        Prepared {
            server_version: d.ask(bench.target().server_version()).await,
            baseline: serde_json::Value::Null,
        }
    } else {
        prepare(&mut bench, &mut p, &d, &stop).await?
    };
    let mut cfg = EngineConfig {
        load: spec.load.clone(),
        seed: spec.seed,
        warmup: Duration::from_secs_f64(spec.warmup_secs),
        interval: Duration::from_secs_f64(spec.interval_secs),
        timeout: Duration::from_secs_f64(spec.timeout_secs),
        kinds: kinds.len(),
        domains: domains.len(),
        listeners: bench.listeners(),
        drain: bench.drain(),
        spin: Duration::from_secs_f64(spec.spin_secs),
        phase: 0,
    };
    // One phase running every kind, or (redis-benchmark's tests) one per
    // kind, one after the other, each over fresh connections.
    let phases: Vec<Option<usize>> = if bench.sequential() {
        (0..kinds.len()).map(Some).collect()
    } else {
        vec![None]
    };
    // The engine's threads, started once and reused by every phase:
    // connection k is opened on the thread that will drive it.
    // --realtime: the threads started here inherit SCHED_FIFO from this
    // one, which gives it up again until its load begins.
    let threads = {
        let _fifo = realtime(spec)?;
        Threads::new(spec.threads, opts.hooks)?
    };
    // A descriptor per connection: thousands need more than a shell's
    // soft limit. Failing to raise it is not an error of its own; a
    // connection that finds no descriptor is reported as it happens.
    let _ = loadrig_metrics::raise_open_files();
    let mut begin: Option<start::Begin> = None;
    let mut waited = loadrig_engine::Waited::default();
    let mut total: Option<Outcome> = None;
    let mut kind_elapsed: Vec<Option<Duration>> = Vec::new();
    let mut db_cpu_before = Vec::new();
    let mut usage_before = None;
    // The server's statistics, sampled beside the load from its start.
    let mut sampler = None;
    // A later phase that cannot connect ends the run with what was
    // measured, and says why.
    let mut failed = Vec::new();
    let mut code = exit::OK;
    for phase in phases {
        if let Some(k) = phase {
            bench.enter(k);
            cfg.phase = u32::try_from(k).unwrap_or(u32::MAX);
        }
        let conns = spec.load.connections as usize + cfg.listeners;
        let mut drivers = Vec::with_capacity(conns);
        let mut lost = None;
        for worker in 0..conns {
            let id = u32::try_from(worker).unwrap_or(u32::MAX);
            match d
                .connect("a connection", threads.homed(worker, bench.connect(id)))
                .await
            {
                Ok(d) => drivers.push(d),
                // Before any load, nothing was measured: the error is the
                // run's. After a phase ran, its measurements are kept.
                Err(e) if total.is_none() => return Err(e.into()),
                Err(e) => {
                    lost = Some(anyhow::Error::from(e));
                    break;
                }
            }
        }
        if let Some(e) = lost {
            let test = phase.and_then(|k| kinds.get(k)).copied().unwrap_or("next");
            failed.push(format!(
                "the {test} test could not connect: {}",
                crate::one_line(&e)
            ));
            code = code.max(exit::code_of(&e));
            break;
        }
        let at = match &begin {
            Some(_) => start::now(),
            None => {
                if opts.server_stats {
                    sampler = Sampler::start(bench.target().server_stats(), cfg.interval).await;
                }
                let b = match opts.start {
                    Some(rule) => {
                        let now = SystemTime::now();
                        let at = rule.resolve(now);
                        p.end_phases();
                        p.line(&start_line(at, now));
                        // The connections are served meanwhile: a server
                        // that closes idle clients does not leave the
                        // load broken ones.
                        let wait = start::wait_for(at, &stop);
                        let (b, w) =
                            loadrig_engine::serve_until(&threads, &mut drivers, wait).await;
                        if let Some(line) = waited_line(w.reopened, w.failed) {
                            p.line(&line);
                        }
                        waited = w;
                        b
                    }
                    None => start::now(),
                };
                p.phase("run");
                p.end_phases();
                db_cpu_before = bench.target().embedded_cpu().await;
                usage_before = Some(ProcessUsage::now());
                if let Some(s) = &mut sampler {
                    s.begin(b.at.into_std());
                }
                *begin.insert(b)
            }
        };
        let first = begin.as_ref().map_or(at.at, |b| b.at);
        let fifo = realtime(spec)?;
        let awake = spec.awake.then(loadrig_engine::Awake::enter).transpose()?;
        let outcome = loadrig_engine::run_on(&cfg, &threads, drivers, at.at, stop.clone(), |lap| {
            p.lap(lap)
        })
        .await;
        drop((fifo, awake));
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
    let samples = sampler.map(Sampler::finish);
    let (Some(outcome), Some(begin), Some(usage_before)) = (total, begin, usage_before) else {
        anyhow::bail!("nothing to run");
    };
    let mut usage = ProcessUsage::now().since(&usage_before);
    // With an embedded database its threads' CPU is the server's, not the
    // client's: take it out, and say so.
    let db_cpu: Vec<(&str, Duration)> = bench
        .target()
        .embedded_cpu()
        .await
        .into_iter()
        .zip(db_cpu_before)
        .map(|((name, after), (_, before))| (name, after.saturating_sub(before)))
        .collect();
    let db_total: Duration = db_cpu.iter().map(|(_, cpu)| *cpu).sum();
    usage.cpu = usage.cpu.saturating_sub(db_total);

    p.phase("cool down");
    let mut report = Report::build(RunRecord {
        spec,
        environment: environment(spec, prepared.server_version, &bench, opts),
        started_unix_ms: begin.unix_ms,
        kinds: &kinds,
        domains: &domains,
        outcome: &outcome,
        kind_elapsed: &kind_elapsed,
        usage,
        verification: None,
        results: Results::default(),
        exit_code: code,
    });
    report.measured.reopened_waiting = waited.reopened;
    report.measured.reopen_failed_waiting = waited.failed;
    if child {
        // What the parent needs to verify this process's part (the
        // drivers, gone with the run, have left their accounts).
        report.share = bench.share();
    }
    let sampled = samples.and_then(|s| {
        let line = s.failure_line();
        s.attach(&mut report);
        line
    });
    let mut counted = outcome.warmup.clone();
    counted.merge(&outcome.measured);
    let after = (!db_cpu.is_empty()).then(|| {
        let each: Vec<String> = db_cpu
            .iter()
            .map(|(name, cpu)| format!("{name} {:.3}s", cpu.as_secs_f64()))
            .collect();
        format!(
            "embedded database: {:.3}s cpu on its own threads ({}), not counted as client cpu",
            db_total.as_secs_f64(),
            each.join(", ")
        )
    });
    let end = End {
        report,
        counted,
        baseline: (!child).then_some(prepared.baseline),
        failed,
        after_summary: after.into_iter().chain(sampled).collect(),
        stop,
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

/// With `--realtime`, the calling thread under SCHED_FIFO until the guard
/// is dropped (checked before anything connected: `main`).
fn realtime(spec: &RunSpec) -> std::io::Result<Option<loadrig_engine::Fifo>> {
    spec.realtime.then(loadrig_engine::Fifo::enter).transpose()
}
