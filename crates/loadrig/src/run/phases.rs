//! The parts of a many-host run done once, apart from the shards' load
//! (docs/engine.md section 6): `loadrig prepare` makes the schema and data
//! and records the baseline; `loadrig teardown` drops what prepare made.
//! Between them every host runs its shard with `--no-prepare`, which
//! creates and drops nothing, and `loadrig merge --prepared` joins the
//! shards' reports with the baseline for one `loadrig verify`.

use std::path::Path;
use std::time::SystemTime;

use anyhow::Context;
use loadrig_report::{Prepared, PREPARED_SCHEMA};
use loadrig_spec::RunSpec;
use loadrig_workloads::{Bench, TargetInfo};

use super::conclude;
use super::deadline::Deadlines;
use crate::exit;
use crate::start;
use loadrig_present::print::Printer;

/// Connect, prepare, record the baseline and write it to `out` (`-`:
/// one line on standard output, the rest on standard error).
pub async fn prepare<B: Bench>(
    mut bench: B,
    spec: &RunSpec,
    out: Option<&Path>,
    quiet: bool,
) -> anyhow::Result<i32> {
    let mut p = Printer::new(spec, quiet, out == Some(Path::new("-")));
    p.header(spec, bench.target().durability().as_deref());
    let d = Deadlines::of(spec);
    // No signal is caught here: one ends the process as it comes.
    let never = std::sync::atomic::AtomicBool::new(false);
    let prepared = conclude::prepare(&mut bench, &mut p, &d, &never).await?;
    p.line("done");
    let record = Prepared {
        schema: PREPARED_SCHEMA.to_string(),
        spec: spec.masked(),
        server_version: prepared.server_version,
        prepared_unix_ms: start::unix_ms(SystemTime::now()),
        baseline: prepared.baseline,
    };
    match out {
        Some(path) => {
            record
                .write(path)
                .with_context(|| "writing the prepare record")?;
            if path != Path::new("-") {
                p.line(&format!(
                    "prepared; the baseline is in {} (give it to `loadrig merge --prepared`)",
                    path.display()
                ));
            }
        }
        None => p.line("prepared (no --out: the baseline is not kept, so nothing can be verified)"),
    }
    Ok(exit::OK)
}

/// Drop what `prepare` made (`--keep` aside: a teardown is asked for).
pub async fn teardown<B: Bench>(mut bench: B, spec: &RunSpec, quiet: bool) -> anyhow::Result<i32> {
    let mut p = Printer::new(spec, quiet, false);
    p.header(spec, bench.target().durability().as_deref());
    let d = Deadlines::of(spec);
    p.phase("teardown");
    d.cold("clean-up", bench.teardown()).await?;
    p.line("done");
    Ok(exit::OK)
}
