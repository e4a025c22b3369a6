//! The report: one JSON document per run (schema [`SCHEMA`], documented in
//! docs/reference/report.md). It carries the resolved run spec, the environment, the
//! laps, per-kind HDR histograms in HdrHistogram's compressed V2 form,
//! the client's CPU and memory, domain counts, the verification verdict
//! and the verdict on the measurement itself (`validity`).
//! Summary figures in it are derived for convenience; the histograms are
//! the truth, and anything that reads reports recomputes from them.

pub mod confidence;
pub mod exit;
pub mod fmt;
mod hlog;
mod judge;
mod merge;
mod prepared;
mod schema;
pub mod stages;
pub mod validity;

use std::io::{Read, Write};
use std::path::Path;

pub use hlog::interval_log;
pub use judge::{holds_in_lap, Judged};
pub use prepared::{Prepared, PREPARED_SCHEMA};
pub use schema::decode_hdr;
pub use schema::{
    ClientLapReport, ClientUsage, Environment, HistSummary, KindReport, LapReport, Measured,
    ProcessRecord, Report, RunRecord, ServerStatsReport, StoppedEarly, Verification, SCHEMA,
};
pub use validity::{Validity, ValidityCheck};

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

/// The largest report read: a run of days with a lap a second and every
/// histogram is a few hundred MiB at most.
pub const MAX_REPORT_BYTES: u64 = 512 << 20;

impl Report {
    /// Write atomically: a temporary file beside the target, then a rename,
    /// so a reader never sees half a report.
    ///
    /// `-` is standard output, where the report is one line (`loadrig merge
    /// -` reads a stream of them). A path that names something other than a
    /// regular file (a device, a FIFO) is written in place: replacing it
    /// with a file would break it (`/dev/stdout` is a link every program
    /// shares).
    pub fn write(&self, path: &Path) -> Result<(), ReportError> {
        write_json(self, path)
    }

    pub fn read(path: &Path) -> Result<Report, ReportError> {
        // At most one byte past the cap: a larger file (or /dev/zero) is
        // refused, not read into memory whole.
        let body = read_capped(path)?;
        Report::parse(&body, &path.display().to_string())
    }

    /// A report from its JSON text; `name` says where it came from.
    pub fn parse(body: &[u8], name: &str) -> Result<Report, ReportError> {
        let p = name.to_string();
        let report: Report = serde_json::from_slice(body).map_err(|e| ReportError::Format {
            path: p.clone(),
            reason: e.to_string(),
        })?;
        if report.schema != SCHEMA {
            return Err(ReportError::Format {
                path: p,
                reason: format!("schema '{}', this loadrig reads '{SCHEMA}'", report.schema),
            });
        }
        // The run spec within bounds, as a command line's must be: what
        // reads the report (verify, plot, merge) sizes its work by it.
        report.spec.validate().map_err(|e| ReportError::Format {
            path: p,
            reason: format!("its run spec: {e}"),
        })?;
        Ok(report)
    }
}

/// Write `value` as JSON to `path` as [`Report::write`] says: atomically to
/// a file, in place to a device, on one line to standard output (`-`).
fn write_json<T: serde::Serialize>(value: &T, path: &Path) -> Result<(), ReportError> {
    let io = |source| ReportError::Io {
        path: path.display().to_string(),
        source,
    };
    let stdout = path == Path::new("-");
    let body = match stdout {
        true => serde_json::to_vec(value),
        false => serde_json::to_vec_pretty(value),
    }
    .map_err(|e| io(std::io::Error::other(e)))?;
    let write = |mut w: Box<dyn Write>| {
        w.write_all(&body)
            .and_then(|()| w.write_all(b"\n"))
            .and_then(|()| w.flush())
    };
    if stdout {
        return write(Box::new(std::io::stdout().lock())).map_err(io);
    }
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(io)?;
        return write(Box::new(f)).map_err(io);
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
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

/// At most [`MAX_REPORT_BYTES`] of the file at `path`.
fn read_capped(path: &Path) -> Result<Vec<u8>, ReportError> {
    let p = path.display().to_string();
    let mut body = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_REPORT_BYTES + 1).read_to_end(&mut body))
        .map_err(|source| ReportError::Io {
            path: p.clone(),
            source,
        })?;
    if body.len() as u64 > MAX_REPORT_BYTES {
        return Err(ReportError::Format {
            path: p,
            reason: format!(
                "larger than {} MiB, the most a report can be",
                MAX_REPORT_BYTES >> 20
            ),
        });
    }
    Ok(body)
}
