//! Verify: check what the server holds against what the run counted,
//! then read the workload's results from it. A signal during either ends
//! the step (the server may not be answering); the report is still
//! written.

use loadrig_metrics::Verdict;
use loadrig_report::{fmt::group, Report, Verification};
use loadrig_workloads::{Bench, Check, TargetInfo};

use super::measure::End;
use super::{unless_stopped, Session};
use crate::exit;

/// A run's report after verification, and why it failed so far.
pub struct Verified {
    pub report: Report,
    /// Why the run failed; each a `check failed:` line at the end.
    pub reasons: Vec<String>,
    /// Lines after the overall line.
    pub after_summary: Vec<String>,
    /// This process prepared the run (and so drops what it made).
    pub prepared: bool,
    /// A signal ended the verification: nothing more is asked of the server.
    pub cut_short: bool,
}

impl<B: Bench> Session<'_, B> {
    pub(super) async fn verify(&mut self, end: End) -> Verified {
        let End {
            mut report,
            counted,
            baseline,
            failed,
            after_summary,
        } = end;
        let mut reasons = failed;
        let Some(baseline) = baseline else {
            self.console.end_phases();
            return Verified {
                report,
                reasons,
                after_summary,
                prepared: false,
                cut_short: false,
            };
        };
        let load_stopped = report.interrupted;
        let (verdict, cut_short) = match self.spec.verify {
            true => {
                let (v, cut) = self
                    .verdict(&baseline, &counted, &mut report, &mut reasons)
                    .await;
                (Some(v), cut)
            }
            false => {
                self.console.line(self.skipped());
                (None, false)
            }
        };
        if verdict.as_ref().and_then(|v| v.passed) == Some(false) {
            reasons.push("verification failed".to_string());
        }
        let d = &self.deadlines;
        let results = unless_stopped(
            load_stopped,
            &self.stop,
            d.cold("the results", self.bench.results(&counted)),
        );
        report.results = match if cut_short { None } else { results.await } {
            Some(Ok(r)) => r,
            None => Default::default(),
            Some(Err(e)) => {
                let e = anyhow::Error::from(e);
                report.exit_code = report.exit_code.max(exit::code_of(&e));
                let line = loadrig_present::one_line(&e);
                reasons.push(format!("no results: {line}"));
                Default::default()
            }
        };
        self.console.results(&report.results);
        report.verification = Some(Verification { baseline, verdict });
        Verified {
            report,
            reasons,
            after_summary,
            prepared: true,
            cut_short,
        }
    }

    /// The verdict of the server's data, shown, and whether a signal cut
    /// the verification short.
    async fn verdict(
        &mut self,
        baseline: &serde_json::Value,
        counted: &loadrig_metrics::Snapshot,
        report: &mut Report,
        reasons: &mut Vec<String>,
    ) -> (Verdict, bool) {
        self.console.phase("verify");
        let verifying = unless_stopped(
            report.interrupted,
            &self.stop,
            self.deadlines
                .cold("verify", self.bench.verify(baseline, counted)),
        );
        let mut cut = false;
        let v = match verifying.await {
            // Verified through a connection that still reads what the
            // path no longer names: the data is gone all the same.
            Some(Ok(mut v)) => {
                if let Some(why) = self.bench.target().lost() {
                    v.checks.push(Check::new(why.clone(), 0, 1));
                    v.passed = Some(false);
                    v.summary = format!("FAILED ({why})");
                }
                v
            }
            None => {
                report.interrupted = true;
                cut = true;
                not_done("interrupted by a signal".to_string())
            }
            // The load ran and was measured: its report is written all
            // the same, with the target's exit code and why.
            Some(Err(e)) => {
                let e = anyhow::Error::from(e);
                report.exit_code = report.exit_code.max(exit::code_of(&e));
                let line = loadrig_present::one_line(&e);
                reasons.push(format!("could not verify: {line}"));
                not_done(format!("the target failed: {line}"))
            }
        };
        self.console.line(&v.summary);
        // The warm-up's writes are on the server too: say how much of
        // what was verified it was, so the measured count beside it does
        // not read as a discrepancy (docs/explanations/rates.md).
        let (w, m) = (report.warmup.ops, report.measured.ops);
        if w > 0 {
            self.console.line(&format!(
                "verified against {} operations = {} warm-up + {} measured",
                group(w + m),
                group(w),
                group(m)
            ));
        }
        (v, cut)
    }

    fn skipped(&self) -> &'static str {
        match self.spec.keep || self.bench.target().keeps_data() {
            true => "verify ... skipped (--no-verify; the data is kept: check it with `loadrig verify REPORT`)",
            false => "verify ... skipped (--no-verify; the data is removed now: with --keep it stays for `loadrig verify REPORT`)",
        }
    }
}

fn not_done(why: String) -> Verdict {
    Verdict {
        passed: None,
        summary: format!("not done ({why})"),
        checks: Vec::new(),
    }
}
