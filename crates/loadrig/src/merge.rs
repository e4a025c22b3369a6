//! `loadrig merge REPORT... [-o OUT]`: the reports of one run's processes
//! or hosts joined into one, without re-running anything: histograms add,
//! counts sum, laps align by wall clock, percentiles are recomputed
//! (`Report::merge`). Reports of different runs (another spec or seed)
//! are refused unless `--force`; reports whose measured phases did not
//! overlap in time merge with a warning. It prints what a run prints after its load: each
//! report's overall line, then the merged latency table and overall line.

use std::path::Path;

use anyhow::Context;
use loadrig_report::Report;

use crate::exit;
use crate::print::{header, overall, summary};

pub fn run(paths: &[impl AsRef<Path>], out: Option<&Path>, force: bool) -> anyhow::Result<i32> {
    let reports = paths
        .iter()
        .map(|p| Report::read(p.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    if !force {
        Report::check_one_run(&reports)?;
    }
    let merged = Report::merge(&reports)?;
    for w in Report::overlap_warnings(&reports) {
        eprintln!("warning: {w}");
    }
    crate::say!("{}", header(&merged.spec));
    for (path, r) in paths.iter().zip(&reports) {
        let shard = r.spec.load.shard;
        crate::say!(
            "{} (shard {}/{}, {}): {}",
            path.as_ref().display(),
            shard.index,
            shard.count,
            r.environment.host,
            overall(r)
        );
    }
    for l in summary(&merged)? {
        crate::say!("{l}");
    }
    if let Some(path) = out {
        merged
            .write(path)
            .with_context(|| "writing the merged report")?;
    }
    Ok(exit::OK)
}
