//! The laps of a report as an HdrHistogram interval log (`.hlog`), the
//! text format HdrHistogram's `HistogramLogProcessor`, HdrHistogram.js's
//! log reader, hdrh's `HistogramLogReader` and HdrHistogram Visualizer
//! read: header comments, a legend, then one line per lap with its start
//! (seconds since the base time), its length, its largest value (in ms:
//! values are ns and the reference writer divides by 1e6) and its
//! histogram in the compressed V2 form.

use std::fmt::Write as _;

use crate::schema::{b64, decode_hdr};
use crate::Report;

/// The log format version HdrHistogram's Java writer states.
const FORMAT_VERSION: &str = "1.3";

/// The interval log of `report`'s measured laps (warm-up laps are left
/// out, as the report's measured figures leave them out). The base time
/// is the start of the measured phase, so the first lap starts near 0.
pub fn interval_log(report: &Report) -> Result<String, String> {
    let base_ms = report.measure_start_unix_ms();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "#[Histogram log format version {FORMAT_VERSION}]\n\
         #[loadrig {} {} against {}]\n\
         #[StartTime: {:.3} (seconds since epoch)]\n\
         #[BaseTime: {:.3} (seconds since epoch)]\n\
         \"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"",
        report.loadrig_version,
        report.spec.workload.name(),
        report.environment.target,
        report.started_unix_ms as f64 / 1e3,
        base_ms / 1e3,
    );
    for lap in report.laps.iter().filter(|l| !l.warmup) {
        let h = decode_hdr(&lap.latency_hdr)?;
        // A lap's `unix_ms` is its end: its start is that less its length.
        let start = (lap.unix_ms as f64 - lap.length_secs * 1e3 - base_ms).max(0.0) / 1e3;
        let _ = writeln!(
            out,
            "{start:.3},{:.3},{:.3},{}",
            lap.length_secs,
            h.max().as_nanos() as f64 / 1e6,
            // Re-encoded: laps of older reports hold the plain V2 payload.
            b64(&h.encode()),
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use loadrig_metrics::Snapshot;

    use super::*;
    use crate::merge::tests::{lap, report};

    #[test]
    fn the_interval_log_has_a_line_per_measured_lap() {
        let laps = vec![
            lap(1_001_000, 1_000, 10, 100),
            lap(1_002_000, 1_000, 20, 300),
        ];
        let r = report(
            0,
            Snapshot::new(2, 3),
            1_000_000,
            Duration::from_secs(2),
            laps,
        );
        let log = interval_log(&r).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines[0], "#[Histogram log format version 1.3]");
        assert!(lines[2].starts_with("#[StartTime: 1000.000 (seconds since epoch)]"));
        assert!(lines[3].starts_with("#[BaseTime: 1000.000 (seconds since epoch)]"));
        assert_eq!(
            lines[4],
            "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
        );
        assert_eq!(lines.len(), 7);
        // Start after the base, length, max in ms, the compressed form.
        let f: Vec<&str> = lines[6].split(',').collect();
        assert_eq!(&f[..2], ["1.000", "1.000"]);
        assert_eq!(f[2], "0.300");
        assert!(f[3].starts_with("HISTF"));
        let h = crate::decode_hdr(f[3]).unwrap();
        assert_eq!(h.len(), 20);
    }
}
