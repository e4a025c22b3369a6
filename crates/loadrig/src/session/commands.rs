//! The commands that are one phase of a run each (docs/explanations/measurement.md section
//! 6): `loadrig prepare` makes the schema and data and records the
//! baseline; `loadrig teardown` drops what prepare made; `loadrig verify
//! REPORT` checks a kept database against the counts a report recorded.
//! Between prepare and teardown every host runs its shard with
//! `--no-prepare`, and `loadrig merge --prepared` joins the shards'
//! reports with the baseline for one `loadrig verify`. No signal is
//! caught here: one ends the process as it comes.

use std::path::Path;
use std::time::SystemTime;

use anyhow::Context;
use loadrig_report::{Prepared, Report, PREPARED_SCHEMA};
use loadrig_spec::RunSpec;
use loadrig_workloads::{Bench, TargetInfo};

use super::{Options, Session};
use crate::exit;
use crate::signals::Watch;
use crate::start;

/// Connect, prepare, record the baseline and write it to `out` (`-`:
/// one line on standard output, the rest on standard error).
pub async fn prepare_only<B: Bench>(
    bench: B,
    spec: &RunSpec,
    out: Option<&Path>,
    quiet: bool,
) -> anyhow::Result<i32> {
    let opts = Options {
        quiet,
        out: out.map(Path::to_path_buf),
        ..Options::default()
    };
    let mut s = Session::open(bench, spec, &opts, Watch::default());
    let before = s.prepare().await?;
    s.console.line("done");
    let record = Prepared {
        schema: PREPARED_SCHEMA.to_string(),
        spec: spec.masked(),
        server_version: before.server_version,
        prepared_unix_ms: start::unix_ms(SystemTime::now()),
        baseline: before.baseline,
    };
    match out {
        Some(path) => {
            record
                .write(path)
                .with_context(|| "writing the prepare record")?;
            if path != Path::new("-") {
                s.console.line(&format!(
                    "prepared; the baseline is in {} (give it to `loadrig merge --prepared`)",
                    path.display()
                ));
            }
        }
        None => s
            .console
            .line("prepared (no --out: the baseline is not kept, so nothing can be verified)"),
    }
    Ok(exit::OK)
}

/// Drop what `prepare` made (`--keep` aside: a teardown is asked for).
pub async fn teardown_only<B: Bench>(bench: B, spec: &RunSpec, quiet: bool) -> anyhow::Result<i32> {
    let opts = Options {
        quiet,
        ..Options::default()
    };
    let mut s = Session::open(bench, spec, &opts, Watch::default());
    s.console.phase("teardown");
    s.deadlines.cold("clean-up", s.bench.teardown()).await?;
    s.console.line("done");
    Ok(exit::OK)
}

/// `loadrig verify REPORT`: the verify phase alone, against the counts
/// the report recorded, without re-running anything.
pub async fn verify_report<B: Bench>(mut bench: B, report: &Report) -> anyhow::Result<i32> {
    let Some(verification) = &report.verification else {
        anyhow::bail!(loadrig_spec::SpecError::new(
            "REPORT",
            match report.spec.prepare {
                true => "this run recorded no baseline (it ran with --no-verify?)",
                false => "the shards of --no-prepare record no baseline: merge them with --prepared FILE (from `loadrig prepare --out FILE`)",
            }
        ));
    };
    // Shards of `--no-prepare` drop nothing: the data stays until
    // `loadrig teardown`.
    if !report.spec.keep && report.spec.prepare && !bench.target().keeps_data() {
        anyhow::bail!(loadrig_spec::SpecError::new(
            "REPORT",
            "this run removed its data when it ended (it ran without --keep): nothing is left to verify"
        ));
    }
    // The run's own accounts of what it wrote, where it kept them (a
    // merged report of shards: each shard's).
    let shares: Vec<_> = report
        .share
        .iter()
        .chain(&report.shares)
        .cloned()
        .map(Some)
        .collect();
    if !shares.is_empty() {
        bench
            .gather(shares)
            .context("reading the report's account of the run's writes")?;
    }
    let mut counted = report.warmup.snapshot().map_err(anyhow::Error::msg)?;
    counted.merge(&report.measured.snapshot().map_err(anyhow::Error::msg)?);
    loadrig_present::say_part!("verify ... ");
    let d = super::Deadlines::of(&report.spec);
    let verdict = d
        .cold("verify", bench.verify(&verification.baseline, &counted))
        .await?;
    loadrig_present::say!("{}", verdict.summary);
    Ok(match verdict.passed {
        Some(false) => exit::CHECK_FAILED,
        _ => exit::OK,
    })
}
