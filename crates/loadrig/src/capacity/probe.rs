//! One probe: the run at one rate, as a child `loadrig run` (the sweep's
//! child, [`crate::sweep::run_child`]), and its judgement from its report
//! alone: every SLO met (as `--threshold` judges it), the achieved rate
//! within [`ACHIEVED`] of the offered one, verification not failed, the
//! measurement not judged INVALID, and the run's own exit code 0.

use std::ffi::OsString;
use std::path::Path;

use anyhow::Context;
use loadrig_report::fmt::group;
use loadrig_report::Report;
use loadrig_spec::{Cmp, Threshold};
use serde_json::Value;

use crate::signals::Watch;
use crate::sweep::{child_args_with, failed_status, run_child};

/// The least share of the offered rate a passing probe completes (Lancet's
/// 10%): below it the target did not carry the rate, whatever its latency.
pub const ACHIEVED: f64 = 0.9;

/// What a probe showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail,
    /// Interrupted (Ctrl-C): neither a pass nor a fail.
    Unknown,
}

/// One probe, judged.
#[derive(Debug, Clone)]
pub struct Probe {
    pub rate: f64,
    /// Its files in the folder: `STEM.json`, `STEM.log`.
    pub stem: String,
    pub outcome: Outcome,
    /// Why it failed, one phrase each (empty when it passed).
    pub reasons: Vec<String>,
    pub report: Option<Report>,
    /// `report.validity.valid`; `None`: the report does not judge it.
    pub valid: Option<bool>,
    /// The verification verdict; `None`: nothing to check.
    pub verified: Option<bool>,
    /// Per SLO, log(measured / limit) for an upper bound (its inverse for
    /// a lower one): below 0 it holds. `None` where it cannot be told.
    pub excess: Vec<Option<f64>>,
    /// The run's exit code (`None`: killed by a signal).
    pub code: Option<i32>,
}

/// Run probe `i` at `rate`: `run` plus the rate, the durations, the seed
/// and its report in `dir`.
pub fn run(
    signals: &Watch,
    dir: &Path,
    run: &[OsString],
    fixed: &[(&str, String)],
    rate: f64,
    i: usize,
) -> anyhow::Result<Probe> {
    let stem = format!("probe-{:02}-{rate}", i + 1);
    let report_path = dir.join(format!("{stem}.json"));
    let log_path = dir.join(format!("{stem}.log"));
    let rate_text = rate.to_string();
    let mut extra: Vec<(&str, &str)> = vec![("rate", &rate_text)];
    extra.extend(fixed.iter().map(|(n, v)| (*n, v.as_str())));
    let cmd = child_args_with(run, &extra, &report_path);
    let code = run_child(signals, cmd, &report_path, &log_path)?;
    let mut probe = Probe {
        rate,
        stem,
        outcome: Outcome::Pass,
        reasons: Vec::new(),
        report: None,
        valid: None,
        verified: None,
        excess: Vec::new(),
        code,
    };
    if !report_path.exists() {
        probe.reasons.push(failed_status(code, &log_path));
        return Ok(probe);
    }
    let report = Report::read(&report_path)
        .with_context(|| format!("reading probe {}", report_path.display()))?;
    let text = std::fs::read(&report_path)
        .with_context(|| format!("reading probe {}", report_path.display()))?;
    let json: Value = serde_json::from_slice(&text)
        .with_context(|| format!("reading probe {}", report_path.display()))?;
    probe.valid = validity(&json);
    probe.reasons.extend(invalid_reason(&json));
    probe.judge(report);
    Ok(probe)
}

/// `report.validity.valid`, written by runs that judge their own
/// measurement; absent in others (not judged).
pub fn validity(json: &Value) -> Option<bool> {
    json.get("validity")?.get("valid")?.as_bool()
}

/// Why a report judged its measurement INVALID: the names of its failed
/// checks where they can be read (`checks[].name` with `passed` or
/// `ok` false), else the bare verdict. `None`: not INVALID.
pub fn invalid_reason(json: &Value) -> Option<String> {
    if validity(json) != Some(false) {
        return None;
    }
    let failed: Vec<&str> = json["validity"]["checks"]
        .as_array()
        .map(|checks| {
            checks
                .iter()
                .filter(|c| c["passed"] == false || c["ok"] == false)
                .filter_map(|c| c["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    Some(match failed.is_empty() {
        true => "measurement INVALID".to_string(),
        false => format!("measurement INVALID ({})", failed.join(", ")),
    })
}

impl Probe {
    /// Judge the probe's report by the rules of the module but the SLOs
    /// ([`Probe::judge_slos`], next).
    fn judge(&mut self, report: Report) {
        if report.interrupted {
            self.outcome = Outcome::Unknown;
        }
        self.verified = report
            .verification
            .as_ref()
            .and_then(|v| v.verdict.as_ref())
            .and_then(|v| v.passed);
        if self.verified == Some(false) {
            let summary = report
                .verification
                .as_ref()
                .and_then(|v| v.verdict.as_ref())
                .map_or(String::new(), |v| v.summary.clone());
            self.reasons
                .push(format!("verification failed ({summary})"));
        }
        let m = &report.measured;
        let achieved = if m.elapsed_secs > 0.0 {
            (m.ok + m.errors) as f64 / m.elapsed_secs
        } else {
            0.0
        };
        if achieved < ACHIEVED * self.rate {
            self.reasons.push(format!(
                "achieved {}/s of {}/s offered",
                group(achieved.round() as u64),
                group(self.rate.round() as u64)
            ));
        }
        self.report = Some(report);
        self.code_reason();
    }

    /// The run's own exit code, when nothing else explains it.
    fn code_reason(&mut self) {
        if self.code != Some(0) && self.reasons.is_empty() && self.outcome != Outcome::Unknown {
            let code = self.code.map_or("by signal".to_string(), |c| c.to_string());
            self.reasons
                .push(format!("the run exited {code} (see {}.log)", self.stem));
        }
    }

    /// Judge each SLO; then the outcome from every reason found.
    pub fn judge_slos(&mut self, slos: &[Threshold]) {
        if let Some(r) = &self.report {
            let mut reasons = Vec::new();
            for t in slos {
                let j = r.judge(t);
                self.excess.push(j.actual.and_then(|a| excess(t, a)));
                if !j.passed {
                    reasons.push(j.line.trim_start_matches("threshold ").to_string());
                }
            }
            // The SLOs first: they are what the user asked about.
            reasons.append(&mut self.reasons);
            self.reasons = reasons;
        }
        if self.outcome != Outcome::Unknown && !self.reasons.is_empty() {
            self.outcome = Outcome::Fail;
        }
    }
}

/// log(actual / limit) for `<`, log(limit / actual) for `>`: below 0 the
/// SLO holds, and the figure is how far, on the scale latency grows on.
fn excess(t: &Threshold, actual: f64) -> Option<f64> {
    if actual <= 0.0 || t.value <= 0.0 {
        return None;
    }
    Some(match t.cmp {
        Cmp::Lt | Cmp::Le => (actual / t.value).ln(),
        Cmp::Gt | Cmp::Ge => (t.value / actual).ln(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity_is_read_when_present_and_unjudged_when_absent() {
        let v: Value = serde_json::json!({"validity": {"valid": false, "checks": []}});
        assert_eq!(validity(&v), Some(false));
        assert_eq!(
            validity(&serde_json::json!({"validity": {"valid": true}})),
            Some(true)
        );
        assert_eq!(validity(&serde_json::json!({"measured": {}})), None);
        let checks = serde_json::json!({"validity": {"valid": false, "checks": [
            {"name": "punctuality", "passed": false},
            {"name": "headroom", "passed": true}
        ]}});
        assert_eq!(
            invalid_reason(&checks).as_deref(),
            Some("measurement INVALID (punctuality)")
        );
        assert_eq!(invalid_reason(&serde_json::json!({})), None);
    }

    #[test]
    fn excess_is_below_zero_where_the_slo_holds() {
        let lt = Threshold::parse("p99<5ms").unwrap();
        assert!(excess(&lt, 0.004).unwrap() < 0.0);
        assert!(excess(&lt, 0.006).unwrap() > 0.0);
        let gt = Threshold::parse("throughput>100").unwrap();
        assert!(excess(&gt, 200.0).unwrap() < 0.0);
        assert_eq!(excess(&lt, 0.0), None);
    }
}
