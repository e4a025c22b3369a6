//! The flags of metric export while a run goes (docs/guides/export.md):
//! the `/metrics` endpoint a Prometheus scrapes, and the run's label.

use clap::Args;

use super::seconds;

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
    fn the_linger_needs_a_listen_address() {
        assert!(T::try_parse_from(["t", "--metrics-linger", "5s"]).is_err());
        let t = T::try_parse_from(["t", "--metrics-listen", ":9464", "--metrics-linger", "5s"])
            .expect("parsed");
        assert_eq!(t.export.metrics_linger, 5.0);
    }
}
