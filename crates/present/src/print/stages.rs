//! The summary's stage lines (docs/guides/stages.md): one per stage of a
//! `--stages` run, under the table, with what the schedule asked for and
//! what the stage's laps achieved.

use loadrig_report::fmt::{dur, group, seconds};
use loadrig_report::stages::{per_stage, StageFigures};
use loadrig_report::Report;

/// `stage 2  4s-6s  5,000/s hold  achieved 4,998/s  p50 210us  p99 1.10ms  errors 0`
pub fn lines(report: &Report) -> Vec<String> {
    let stages = per_stage(report);
    if stages.is_empty() {
        return Vec::new();
    }
    let mut out = vec![format!(
        "stages ({} laps counted where most of each falls):",
        stages.iter().map(|s| s.laps).sum::<usize>()
    )];
    out.extend(stages.iter().enumerate().map(|(i, s)| line(i + 1, s)));
    out
}

fn line(n: usize, s: &StageFigures) -> String {
    let asked = if s.from_rate == s.to_rate {
        format!("{}/s hold", group(s.to_rate.round() as u64))
    } else {
        format!(
            "{} -> {}/s",
            group(s.from_rate.round() as u64),
            group(s.to_rate.round() as u64)
        )
    };
    let lat = |us: f64| {
        if s.ok == 0 {
            "-".to_string()
        } else {
            dur(seconds(us / 1e6))
        }
    };
    format!(
        "  stage {n}  {}-{}  {asked}  achieved {}/s  p50 {}  p99 {}  errors {}  ({} laps)",
        trim(s.start_secs),
        trim(s.end_secs),
        group(s.achieved().round() as u64),
        lat(s.p50_us),
        lat(s.p99_us),
        group(s.errors),
        s.laps
    )
}

/// `4s`, `1.5s`: seconds without trailing zeros.
fn trim(secs: f64) -> String {
    format!("{}s", (secs * 1e3).round() / 1e3)
}
