//! The record `loadrig prepare` leaves for a many-host run: what the
//! target held once the schema and data were made, before any shard ran
//! (the baseline), with the spec it was made for. `loadrig merge
//! --prepared FILE` puts the baseline into the merged report, which
//! `loadrig verify` then checks once (docs/explanations/measurement.md section 6).

use std::path::Path;

use loadrig_spec::RunSpec;
use serde::{Deserialize, Serialize};

use crate::{read_capped, write_json, Report, ReportError, Verification};

/// The schema name of a prepare record.
pub const PREPARED_SCHEMA: &str = "loadrig.prepared/1";

/// What `loadrig prepare` recorded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Prepared {
    pub schema: String,
    /// The spec of `loadrig prepare`'s own command line (shard and
    /// `--no-prepare` aside, the shards' spec).
    pub spec: RunSpec,
    pub server_version: Option<String>,
    /// When the baseline was taken, ms since the epoch.
    pub prepared_unix_ms: u64,
    /// What the target held (the workload's own form).
    pub baseline: serde_json::Value,
}

impl Prepared {
    /// Written as a report is (`-`: one line on standard output).
    pub fn write(&self, path: &Path) -> Result<(), ReportError> {
        write_json(self, path)
    }

    pub fn read(path: &Path) -> Result<Prepared, ReportError> {
        let body = read_capped(path)?;
        let p = path.display().to_string();
        let bad = |reason: String| ReportError::Format {
            path: p.clone(),
            reason,
        };
        let prepared: Prepared = serde_json::from_slice(&body).map_err(|e| {
            bad(format!(
                "not a record of `loadrig prepare` ({PREPARED_SCHEMA}): {e}"
            ))
        })?;
        if prepared.schema != PREPARED_SCHEMA {
            return Err(bad(format!(
                "schema '{}', this loadrig reads '{PREPARED_SCHEMA}'",
                prepared.schema
            )));
        }
        Ok(prepared)
    }

    /// Give a merged report this baseline, if it was prepared for the same
    /// workload, target and seed (the rest of the spec, such as the shard,
    /// clients or duration, may differ).
    pub fn attach(&self, report: &mut Report) -> Result<(), ReportError> {
        let key = |s: &RunSpec| {
            (
                serde_json::to_value(&s.workload).unwrap_or_default(),
                s.target.clone(),
                s.seed,
            )
        };
        if key(&self.spec) != key(&report.spec) {
            return Err(ReportError::Merge(format!(
                "the prepare record was made for another run (workload, target or seed differ: \
                 {} on {} seed {}, the reports {} on {} seed {})",
                self.spec.workload.name(),
                self.spec.target,
                self.spec.seed,
                report.spec.workload.name(),
                report.spec.target,
                report.spec.seed
            )));
        }
        report.verification = Some(Verification {
            baseline: self.baseline.clone(),
            verdict: None,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::tests::report;

    #[test]
    fn a_prepare_record_gives_its_baseline_to_reports_of_the_same_run_only() {
        let mut merged = report(
            0,
            loadrig_metrics::Snapshot::new(2, 3),
            0,
            std::time::Duration::from_secs(1),
            Vec::new(),
        );
        let mut prepared = Prepared {
            schema: PREPARED_SCHEMA.to_string(),
            spec: merged.spec.clone(),
            server_version: None,
            prepared_unix_ms: 1,
            baseline: serde_json::json!({"votes": 5}),
        };
        prepared.spec.load.clients += 1;
        prepared.attach(&mut merged).unwrap();
        let v = merged.verification.as_ref().unwrap();
        assert_eq!(v.baseline["votes"], 5);
        assert!(v.verdict.is_none());
        prepared.spec.seed += 1;
        let e = prepared.attach(&mut merged).unwrap_err().to_string();
        assert!(e.contains("seed 43"), "{e}");
    }
}
