//! The http workload's flags: wrk's and wrk2's.

use std::path::PathBuf;

use clap::Args;
use loadrig_spec::{HttpSpec, SpecError, WorkloadSpec};

use super::{Defaults, RunArgs};

pub(super) const HTTP_HELP: &str =
    "As wrk (and wrk2 with --rate), with loadrig's flags: -t is --target and --threads is long \
here as in every workload (`loadrig wrk ...` takes wrk's own). The URL may name several ports \
(http://127.0.0.1:8088,8089/index.html). What a run does: docs/guides/http.md.";

/// Seconds a run lasts without -n or -d, as wrk.
pub const HTTP_SECONDS: f64 = 10.0;

/// wrk's --timeout.
pub(super) const HTTP_TIMEOUT: &str = "2";

/// wrk's: 10 connections, 2 threads, 10 seconds.
pub(super) const HTTP_DEFAULTS: Defaults = Defaults {
    clients: 10,
    threads: Some(2),
    target: "http://127.0.0.1:8088/",
    duration: Some(HTTP_SECONDS),
};

#[derive(Debug, Args)]
#[command(next_help_heading = "HTTP workload")]
pub struct HttpArgs {
    /// The URL, as wrk takes it (the same as --target)
    #[arg(value_name = "URL")]
    pub url: Option<String>,
    /// The request method
    #[arg(long, short = 'm', value_name = "METHOD", default_value = "GET")]
    pub method: String,
    /// A header to send, NAME: VALUE (repeatable)
    #[arg(
        long,
        short = 'H',
        value_name = "HEADER",
        env = super::HEADERS_ENV,
        hide_env_values = true,
        value_delimiter = '\n'
    )]
    pub header: Vec<String>,
    /// The body of every request
    #[arg(long, value_name = "TEXT", conflicts_with = "body_file")]
    pub body: Option<String>,
    /// The body of every request, read from this file (UTF-8 text)
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,
    /// Bytes of each PUT's generated body (without --body or --body-file)
    #[arg(
        long = "value-size",
        alias = "put-size",
        value_name = "BYTES",
        default_value_t = 256
    )]
    pub put_size: usize,
    /// Print wrk's latency distribution and wrk2's detailed percentile spectrum
    #[arg(long, short = 'L')]
    pub latency: bool,
}

impl HttpArgs {
    /// The URL given once, as `--target` or as the last word; `-t2` from
    /// wrk's spelling (before -t was --target everywhere) named as such.
    pub(super) fn url_given_once(&self, run: &RunArgs) -> Result<(), SpecError> {
        let (Some(_), Some(t)) = (&self.url, &run.target) else {
            return Ok(());
        };
        let why = match t.parse::<u32>() {
            Ok(_) => format!(
                "'{t}' is not a URL: -t is --target in every workload; wrk's -t \
                 (threads) is --threads (or `loadrig wrk -t{t} ...`)"
            ),
            Err(_) => "give the URL once (as --target or as the last word)".to_string(),
        };
        Err(SpecError::new("--target", why))
    }

    pub fn spec(&self) -> Result<WorkloadSpec, SpecError> {
        let headers = self
            .header
            .iter()
            .map(|h| HttpSpec::header(h))
            .collect::<Result<Vec<_>, _>>()?;
        let body = match (&self.body, &self.body_file) {
            (Some(b), _) => Some(b.clone()),
            (None, Some(path)) => Some(std::fs::read_to_string(path).map_err(|e| {
                SpecError::new(
                    "--body-file",
                    format!("cannot read {}: {e}", path.display()),
                )
            })?),
            (None, None) => None,
        };
        Ok(WorkloadSpec::Http(HttpSpec {
            method: self.method.clone(),
            headers,
            body,
            put_size: self.put_size,
            latency: self.latency,
        }))
    }
}
