//! `loadrig verify REPORT`: check a kept database against the counts a
//! report recorded, without re-running anything.

use loadrig_report::Report;
use loadrig_workloads::{Bench, TargetInfo};

use crate::exit;

pub async fn check<B: Bench>(mut bench: B, report: &Report) -> anyhow::Result<i32> {
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
    let mut counted = report.warmup.snapshot().map_err(anyhow::Error::msg)?;
    counted.merge(&report.measured.snapshot().map_err(anyhow::Error::msg)?);
    loadrig_present::say_part!("verify ... ");
    let d = crate::run::Deadlines::of(&report.spec);
    let verdict = d
        .cold("verify", bench.verify(&verification.baseline, &counted))
        .await?;
    loadrig_present::say!("{}", verdict.summary);
    Ok(match verdict.passed {
        Some(false) => exit::CHECK_FAILED,
        _ => exit::OK,
    })
}
