//! `loadrig merge REPORT... [-o OUT]`: the reports of one run's processes
//! or hosts joined into one, without re-running anything: histograms add,
//! counts sum, laps align by wall clock, percentiles are recomputed
//! (`Report::merge`). Reports of different runs (another spec or seed)
//! are refused unless `--force`; reports whose measured phases did not
//! overlap in time merge with a warning. `-` reads reports from standard
//! input, one per line (`kubectl logs -l job-name=X | loadrig merge -`:
//! lines that are not JSON objects, a pod's human text, are skipped).
//! `--prepared FILE` adds the baseline `loadrig prepare` recorded, so the
//! merged report of `--no-prepare` shards can be verified once. It prints
//! what a run prints after its load: each report's overall line, then the
//! merged latency table and overall line.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use anyhow::Context;
use loadrig_report::{Prepared, Report, MAX_REPORT_BYTES};

use crate::print::{header, overall, summary};
use loadrig_report::exit;

/// What `loadrig merge` was asked.
pub struct MergeArgs<'a> {
    /// The reports; `-` reads standard input, one report per line.
    pub reports: &'a [PathBuf],
    /// `loadrig prepare`'s record, whose baseline the merged report takes.
    pub prepared: Option<&'a Path>,
    pub out: Option<&'a Path>,
    /// Merge reports of different runs all the same.
    pub force: bool,
}

pub fn run(m: &MergeArgs) -> anyhow::Result<i32> {
    let mut named: Vec<(String, Report)> = Vec::new();
    for path in m.reports {
        if path == Path::new("-") {
            named.extend(from_stream(std::io::stdin().lock(), "standard input")?);
        } else {
            named.push((path.display().to_string(), Report::read(path)?));
        }
    }
    if named.is_empty() {
        anyhow::bail!(loadrig_spec::SpecError::new(
            "REPORT",
            "standard input held no report (one JSON report per line)"
        ));
    }
    let reports: Vec<Report> = named.iter().map(|(_, r)| r.clone()).collect();
    if !m.force {
        Report::check_one_run(&reports)?;
    }
    let mut merged = Report::merge(&reports)?;
    if let Some(path) = m.prepared {
        Prepared::read(path)?.attach(&mut merged)?;
    }
    for w in Report::overlap_warnings(&reports) {
        eprintln!("warning: {w}");
    }
    crate::say!("{}", header(&merged.spec));
    for (name, r) in &named {
        let shard = r.spec.load.shard;
        crate::say!(
            "{name} (shard {}/{}, {}): {}",
            shard.index,
            shard.count,
            r.environment.host,
            overall(r)
        );
    }
    for l in summary(&merged)? {
        crate::say!("{l}");
    }
    if let Some(path) = m.out {
        merged
            .write(path)
            .with_context(|| "writing the merged report")?;
    }
    Ok(exit::OK)
}

/// The reports in a stream, one per line, each named `NAME:LINE`. Blank
/// lines and lines that do not open a JSON object are skipped; a line
/// that does and is not a report is an error.
fn from_stream(mut input: impl BufRead, name: &str) -> anyhow::Result<Vec<(String, Report)>> {
    let mut found = Vec::new();
    let mut line = Vec::new();
    for n in 1.. {
        line.clear();
        // At most one byte past a report's cap: a longer line is refused.
        let read = (&mut input)
            .take(MAX_REPORT_BYTES + 1)
            .read_until(b'\n', &mut line)
            .with_context(|| format!("reading {name}"))?;
        if read == 0 {
            break;
        }
        let here = format!("{name}:{n}");
        if line.len() as u64 > MAX_REPORT_BYTES {
            anyhow::bail!("{here}: longer than the largest report");
        }
        if line.trim_ascii_start().first() != Some(&b'{') {
            continue;
        }
        found.push((here.clone(), Report::parse(line.trim_ascii(), &here)?));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_skips_text_and_names_a_bad_report_by_its_line() {
        let text = b"connect ... prepare ... done\n\n  \nstart at 2026\n";
        assert!(from_stream(&text[..], "in").unwrap().is_empty());
        let bad = b"hello\n{\"schema\": 1}\n";
        let e = from_stream(&bad[..], "in").unwrap_err().to_string();
        assert!(e.starts_with("in:2: not a loadrig report"), "{e}");
    }
}
