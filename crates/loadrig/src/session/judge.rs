//! Judge: every reason the run failed beside its verification (the error
//! gate, each threshold, a signal, a target lost), and the exit code they
//! call for; and the validity verdict on the measurement itself
//! (`loadrig_report::validity`), stored in the report, which fails the
//! run only under `--strict` (exit 4, when nothing else failed).

use loadrig_workloads::Bench;

use super::verify::Verified;
use super::{Role, Session};
use crate::exit;

impl<B: Bench> Session<'_, B> {
    pub(super) fn judge(&mut self, checked: &mut Verified) {
        let report = &checked.report;
        let reasons = &mut checked.reasons;
        let m = &report.measured;
        if let Some(max) = self.spec.max_error_rate {
            let rate = match m.ops {
                0 => 0.0,
                ops => m.errors as f64 / ops as f64,
            };
            if rate > max {
                reasons.push(format!(
                    "{:.2}% of the operations failed, more than --max-error-rate {max} allows",
                    rate * 100.0
                ));
            }
        }
        for t in &self.spec.thresholds {
            let j = report.judge(t);
            self.console.line(&j.line);
            if !j.passed {
                reasons.push(format!("threshold {t} not met"));
            }
        }
        if let Some(stopped) = &report.stopped_early {
            reasons.push(stopped.line());
        }
        if report.interrupted {
            reasons.push("interrupted".to_string());
        }
        let lost = report.measured.gave_up + report.warmup.gave_up;
        if lost > 0 {
            reasons.push(format!(
                "the target was lost: {lost} connection(s) gave up after --timeout without it, before the run's end"
            ));
        }
        if !reasons.is_empty() {
            checked.report.exit_code = checked.report.exit_code.max(exit::CHECK_FAILED);
        }
        self.judge_validity(checked);
    }

    /// The verdict on the measurement, into the report. Under `--strict`
    /// an INVALID one is a reason, and exit 4 when nothing else failed; a
    /// `--processes` child leaves that to its parent, which judges the
    /// merged run.
    fn judge_validity(&mut self, checked: &mut Verified) {
        let validity = checked.report.validity();
        let invalid = !validity.valid;
        let line = validity.line();
        checked.report.validity = Some(validity);
        if !invalid || !self.opts.strict || matches!(self.opts.role, Role::Child) {
            return;
        }
        checked.reasons.push(format!(
            "--strict: {}",
            line.trim_start_matches("measurement: ")
        ));
        if checked.report.exit_code == exit::OK {
            checked.report.exit_code = exit::INVALID;
        }
    }
}
