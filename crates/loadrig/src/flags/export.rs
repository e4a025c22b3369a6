//! The flags of metric export while a run goes (docs/guides/export.md):
//! the `/metrics` endpoint a Prometheus scrapes, and the run's label.

use std::path::PathBuf;

use clap::Args;
use loadrig_spec::SpecError;

use super::seconds;
use crate::export::push::Endpoint;

/// One `--out`: the report file, or an endpoint to push to.
#[derive(Debug, Clone, PartialEq)]
pub enum OutArg {
    Report(PathBuf),
    Push(Endpoint),
}

/// `--out`'s word: `influxdb=URL` and `prometheus=URL` push, anything
/// else is the report's file.
pub(super) fn out_arg(s: &str) -> Result<OutArg, String> {
    match Endpoint::parse(s) {
        Some(Ok(e)) => Ok(OutArg::Push(e)),
        Some(Err(e)) => Err(e),
        None => Ok(OutArg::Report(PathBuf::from(s))),
    }
}

impl super::RunArgs {
    /// The report's file of `--out`, if one; two are a usage error.
    pub fn report_out(&self) -> Result<Option<&PathBuf>, SpecError> {
        let mut files = self.out.iter().filter_map(|o| match o {
            OutArg::Report(p) => Some(p),
            OutArg::Push(_) => None,
        });
        let first = files.next();
        match files.next() {
            Some(_) => Err(SpecError::new(
                "--out",
                "one report file; the others push (influxdb=URL, prometheus=URL)",
            )),
            None => Ok(first),
        }
    }

    /// The endpoints `--out` pushes to.
    pub fn pushes(&self) -> impl Iterator<Item = &Endpoint> {
        self.out.iter().filter_map(|o| match o {
            OutArg::Push(e) => Some(e),
            OutArg::Report(_) => None,
        })
    }
}

#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Metric export")]
pub struct ExportArgs {
    /// Serve the run's metrics as OpenMetrics text on http://ADDR/metrics while it goes (e.g. 127.0.0.1:9464)
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// After the run, keep serving /metrics until the last values are scraped, this long at most
    #[arg(long, value_name = "TIME", value_parser = seconds, default_value = "0", requires = "metrics_listen")]
    pub metrics_linger: f64,
    /// The `run` label of every exported series (default: the launch time in seconds and the process id)
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        export: ExportArgs,
    }

    #[test]
    fn out_is_a_file_or_an_endpoint() {
        assert_eq!(out_arg("r.json"), Ok(OutArg::Report("r.json".into())));
        assert!(matches!(
            out_arg("influxdb=http://h:8086/write?db=x"),
            Ok(OutArg::Push(_))
        ));
        assert!(out_arg("prometheus=ftp://h").is_err());
    }

    #[test]
    fn the_linger_needs_a_listen_address() {
        assert!(T::try_parse_from(["t", "--metrics-linger", "5s"]).is_err());
        let t = T::try_parse_from(["t", "--metrics-listen", ":9464", "--metrics-linger", "5s"])
            .expect("parsed");
        assert_eq!(t.export.metrics_linger, 5.0);
    }
}
