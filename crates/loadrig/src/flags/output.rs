//! Flags of the commands that read reports and never re-run (`plot`,
//! `report`, `compare`) and of `sweep`, which runs this binary once per
//! point with a workload's own flags.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct PlotArgs {
    /// loadrig reports (JSON), loadrig sweep CSVs, redis-benchmark --csv files; several files, several series
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Where to draw: .svg (the charts stacked), .html (one page) or .png (through headless chromium)
    #[arg(long, short = 'o', value_name = "OUT")]
    pub out: PathBuf,
    /// Also write gnuplot's two-column files (`N rate` ...) of each sweep CSV into this folder
    #[arg(long, value_name = "DIR")]
    pub gnuplot: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// loadrig reports (JSON)
    #[arg(required = true, value_name = "REPORT")]
    pub reports: Vec<PathBuf>,
    /// The HTML page to write (self-contained: no network, no script)
    #[arg(long, short = 'o', value_name = "FILE.html")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline report
    #[arg(value_name = "A.json")]
    pub baseline: PathBuf,
    /// The report compared with it
    #[arg(value_name = "B.json")]
    pub candidate: PathBuf,
    /// Exit 1 when B is worse than A by more than this: throughput lower, or a kind's p99 higher (e.g. 10%, 5, 2.5%)
    #[arg(long, value_name = "PERCENT", default_value = "10%", value_parser = percent)]
    pub max_regression: f64,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The parameter and its values: NAME=LIST (1,2,4), NAME=A..B (every integer), NAME=A..B:STEP; values holding commas (URLs) separated by ';'. NAME is a run flag: its long name (pipeline, clients, value-size, processes, rate ...), its letter (P, c, n) or `target`
    #[arg(long, value_name = "NAME=VALUES")]
    pub param: String,
    /// The folder every point's report, log, the CSV and the charts go to
    #[arg(long, short = 'o', value_name = "DIR", default_value = "sweep")]
    pub dir: PathBuf,
    /// Also write the sweep's page (table and charts) as one HTML file
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write gnuplot's two-column files (`N rate`, `N avg`, ...) into this folder
    #[arg(long, value_name = "DIR")]
    pub gnuplot: Option<PathBuf>,
    /// After `--`: the run, as `loadrig run` takes it (`run redis --tests get -n 100000`), without the swept flag
    #[arg(last = true, required = true, value_name = "RUN")]
    pub run: Vec<OsString>,
}

/// `10%`, `10` or `2.5 %` as a number of percent.
pub(super) fn percent(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a percentage (e.g. 10%)"))?;
    if !(0.0..=1000.0).contains(&v) {
        return Err(format!("'{s}': a percentage from 0 to 1000"));
    }
    Ok(v)
}
