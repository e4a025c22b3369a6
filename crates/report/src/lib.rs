//! The report: one JSON document per run (schema [`SCHEMA`], documented in
//! docs/report.md). It carries the resolved run spec, the environment, the
//! laps, per-kind HDR histograms in HdrHistogram's compressed V2 form,
//! the client's CPU and memory, domain counts and the verification verdict.
//! Summary figures in it are derived for convenience; the histograms are
//! the truth, and anything that reads reports recomputes from them.

pub mod fmt;
mod hlog;
mod merge;
mod schema;

use std::io::Write;
use std::path::Path;

pub use hlog::interval_log;
pub use schema::decode_hdr;
pub use schema::{
    ClientUsage, Environment, HistSummary, KindReport, LapReport, Measured, ProcessRecord, Report,
    RunRecord, Verification, SCHEMA,
};

/// A report could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a loadrig report: {reason}")]
    Format { path: String, reason: String },
    /// Reports that cannot be joined (different workloads, bad histograms).
    #[error("cannot merge: {0}")]
    Merge(String),
}

impl Report {
    /// Write atomically: a temporary file beside the target, then a rename,
    /// so a reader never sees half a report.
    pub fn write(&self, path: &Path) -> Result<(), ReportError> {
        let io = |source| ReportError::Io {
            path: path.display().to_string(),
            source,
        };
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let body = serde_json::to_vec_pretty(self).map_err(|e| io(std::io::Error::other(e)))?;
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(&body)
            .and_then(|()| f.write_all(b"\n"))
            .map_err(io)?;
        f.sync_all().map_err(io)?;
        drop(f);
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io(e)
        })
    }

    pub fn read(path: &Path) -> Result<Report, ReportError> {
        let p = path.display().to_string();
        let body = std::fs::read(path).map_err(|source| ReportError::Io {
            path: p.clone(),
            source,
        })?;
        let report: Report = serde_json::from_slice(&body).map_err(|e| ReportError::Format {
            path: p.clone(),
            reason: e.to_string(),
        })?;
        if report.schema != SCHEMA {
            return Err(ReportError::Format {
                path: p,
                reason: format!("schema '{}', this loadrig reads '{SCHEMA}'", report.schema),
            });
        }
        Ok(report)
    }
}
