//! Measure: what the load measured, as a report (its verification,
//! results and exit code still to come), with the client's own CPU less
//! an embedded database's, and what each sink kept.

use std::time::Duration;

use loadrig_metrics::{ProcessUsage, Snapshot};
use loadrig_report::{Environment, Report, RunRecord};
use loadrig_spec::RunSpec;
use loadrig_workloads::{Bench, Results, TargetInfo};

use super::load::Loaded;
use super::prepare::Before;
use super::{Options, Session};

/// A run's measurements, ready to be checked and shown.
pub struct End {
    /// Verification, results and exit code still to fill in.
    pub report: Report,
    /// Warm-up and measured together: what the server should hold.
    pub counted: Snapshot,
    /// `None`: a shard, which neither verifies nor tears down.
    pub baseline: Option<serde_json::Value>,
    /// Why the run failed already (a phase or a child that failed).
    pub failed: Vec<String>,
    /// Lines after the overall line.
    pub after_summary: Vec<String>,
}

impl<B: Bench> Session<'_, B> {
    pub(super) async fn measure(&mut self, loaded: Loaded, before: Before) -> End {
        let Loaded {
            outcome,
            begin,
            waited,
            kind_elapsed,
            usage_before,
            db_cpu_before,
            failed,
            code,
        } = loaded;
        let mut usage = ProcessUsage::now().since(&usage_before);
        // With an embedded database its threads' CPU is the server's, not
        // the client's: take it out, and say so.
        let db_cpu: Vec<(&str, Duration)> = self
            .bench
            .target()
            .embedded_cpu()
            .await
            .into_iter()
            .zip(db_cpu_before)
            .map(|((name, after), (_, before))| (name, after.saturating_sub(before)))
            .collect();
        let db_total: Duration = db_cpu.iter().map(|(_, cpu)| *cpu).sum();
        usage.cpu = usage.cpu.saturating_sub(db_total);

        self.console.phase("cool down");
        let kinds = self.bench.kinds();
        let domains = self.bench.domains();
        let mut report = Report::build(RunRecord {
            spec: self.spec,
            environment: environment(self.spec, before.server_version, &self.bench, self.opts),
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
        let mut after_summary: Vec<String> = embedded_line(&db_cpu, db_total).into_iter().collect();
        for s in &mut self.sinks {
            after_summary.extend(s.end(&mut report));
        }
        // The dashboard, if any, has given the terminal back.
        self.console.release();
        let mut counted = outcome.warmup;
        counted.merge(&outcome.measured);
        End {
            report,
            counted,
            baseline: Some(before.baseline),
            failed,
            after_summary,
        }
    }
}

/// Where the run ran: this host, the target and its facts, and from
/// `opts` the CPU this process pinned itself to and the `--bind` sources.
pub fn environment<B: Bench>(
    spec: &RunSpec,
    server_version: Option<String>,
    bench: &B,
    opts: &Options,
) -> Environment {
    Environment {
        host: hostname(),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        os: std::env::consts::OS.to_string(),
        target: spec.target.clone(),
        server_version,
        durability: bench.target().durability(),
        unread: bench.target().unread(),
        cpu: opts.cpu,
        sources: opts.sources.clone(),
    }
}

/// The embedded database's CPU on its own threads, when there is one.
fn embedded_line(db_cpu: &[(&str, Duration)], total: Duration) -> Option<String> {
    (!db_cpu.is_empty()).then(|| {
        let each: Vec<String> = db_cpu
            .iter()
            .map(|(name, cpu)| format!("{name} {:.3}s", cpu.as_secs_f64()))
            .collect();
        format!(
            "embedded database: {:.3}s cpu on its own threads ({}), not counted as client cpu",
            total.as_secs_f64(),
            each.join(", ")
        )
    })
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "unknown".to_string())
}
