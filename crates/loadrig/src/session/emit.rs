//! Emit: what a run leaves, all from its report: the summary and the
//! lines after it, CSV rows, the JSON summary, the report file, the HDR
//! interval log, the HTML page.

use anyhow::Context;
use loadrig_present::print::{csv, json, redis};
use loadrig_spec::CsvDialect;
use loadrig_workloads::Bench;

use super::verify::Verified;
use super::Session;

impl<B: Bench> Session<'_, B> {
    pub(super) fn emit(&mut self, checked: &Verified) -> anyhow::Result<()> {
        let (report, opts) = (&checked.report, self.opts);
        self.console.summary(report)?;
        for l in &checked.after_summary {
            self.console.line(l);
        }
        if opts.csv {
            let rows = match self.spec.workload.output().csv {
                CsvDialect::RedisBenchmark => redis::csv_rows(report),
                CsvDialect::Loadrig => csv::rows(report),
            };
            for row in rows {
                loadrig_present::say!("{row}");
            }
        }
        if opts.json {
            let failed: Vec<String> = checked
                .reasons
                .iter()
                .map(|r| format!("check failed: {r}"))
                .collect();
            loadrig_present::say!("{}", json::summary(report, &failed));
        }
        if let Some(path) = &opts.out {
            report.write(path).with_context(|| "writing the report")?;
        }
        if let Some(path) = &opts.hdr_log {
            let log = loadrig_report::interval_log(report).map_err(anyhow::Error::msg)?;
            std::fs::write(path, log)
                .with_context(|| format!("writing the interval log {}", path.display()))?;
        }
        if let Some(path) = &opts.html {
            let name = opts
                .out
                .as_deref()
                .map_or_else(|| "this run".to_string(), loadrig_present::plot::stem);
            loadrig_present::plot::html::write_reports(path, &[(name, report)])?;
        }
        Ok(())
    }
}
