//! `--stages 30s:1000,2m:5000,30s:0`: the open loop's rate as a schedule
//! (docs/guides/stages.md). Parsed and validated here, with no I/O; the
//! engine turns it into intended start times ([`Stages::count_at`] is the
//! cumulative count it inverts).
//!
//! A stage `TIME:RATE` ramps linearly from the rate the previous stage
//! ended at (the first from `--rate`, or 0, as k6's ramping-arrival-rate
//! starts from `startRate`) to `RATE` over `TIME`; `TIME:=RATE` holds
//! `RATE` from the stage's start to its end (a step). The run lasts the
//! sum of the stages.

use serde::{Deserialize, Serialize};

use crate::bounds::MAX_RATE;
use crate::SpecError;

/// One stage: `secs` long, ending at `target` operations a second.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    pub secs: f64,
    pub target: f64,
    /// A step: `target` from the stage's start, not a ramp to it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hold: bool,
}

/// The schedule: the rate before the first stage, then the stages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stages {
    pub from: f64,
    pub stages: Vec<Stage>,
}

/// The longest schedule: a week.
const MAX_SECS: f64 = 7.0 * 24.0 * 3600.0;

impl Stages {
    /// `30s:1000,2m:5000,30s:0` (ramps) or `30s:=1000` (a step); times
    /// take a unit (ms, s, m, h), rates may be written `5k`.
    pub fn parse(s: &str, from: f64) -> Result<Stages, SpecError> {
        let stages = s
            .split(',')
            .map(|part| parse_stage(part.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        let st = Stages { from, stages };
        st.validate()?;
        Ok(st)
    }

    pub fn validate(&self) -> Result<(), SpecError> {
        let bad = |m: String| SpecError::new("--stages", m);
        if self.stages.is_empty() {
            return Err(bad("no stages".into()));
        }
        for st in &self.stages {
            if !(st.secs > 0.0 && st.secs <= MAX_SECS) {
                return Err(bad(format!(
                    "a stage lasts more than 0 s, up to a week, not {} s",
                    st.secs
                )));
            }
            if !(0.0..=MAX_RATE).contains(&st.target) {
                return Err(bad(format!(
                    "a rate is from 0 to {MAX_RATE:e} a second, not {}",
                    st.target
                )));
            }
        }
        if self.total() < 1.0 {
            return Err(bad("the stages issue no operation (every rate is 0)".into()));
        }
        Ok(())
    }

    /// Seconds the stages last in all: the run's length.
    pub fn secs(&self) -> f64 {
        self.stages.iter().map(|s| s.secs).sum()
    }

    /// Each stage as (start, end, rate at start, rate at end), seconds
    /// from the start of the measured load.
    pub fn segments(&self) -> impl Iterator<Item = (f64, f64, f64, f64)> + '_ {
        let mut t = 0.0;
        let mut rate = self.from;
        self.stages.iter().map(move |st| {
            let r0 = if st.hold { st.target } else { rate };
            let seg = (t, t + st.secs, r0, st.target);
            t += st.secs;
            rate = st.target;
            seg
        })
    }

    /// Operations due in the first `t` seconds: the integral of the rate.
    pub fn count_at(&self, t: f64) -> f64 {
        self.segments()
            .map(|(a, b, r0, r1)| {
                let tau = (t.min(b) - a).max(0.0);
                r0 * tau + (r1 - r0) * tau * tau / (2.0 * (b - a))
            })
            .sum()
    }

    /// Operations due over the whole schedule.
    pub fn total(&self) -> f64 {
        self.count_at(self.secs())
    }

    /// The mean rate over the schedule (what the run offers in all).
    pub fn mean_rate(&self) -> f64 {
        self.total() / self.secs()
    }
}

fn parse_stage(s: &str) -> Result<Stage, SpecError> {
    let bad = |why: &str| {
        SpecError::new(
            "--stages",
            format!(
                "'{s}': {why} (e.g. 30s:1000 ramps to 1000/s over 30 s, 30s:=1000 holds 1000/s)"
            ),
        )
    };
    let (time, rate) = s.split_once(':').ok_or_else(|| bad("expected TIME:RATE"))?;
    let (hold, rate) = match rate.trim().strip_prefix('=') {
        Some(r) => (true, r),
        None => (false, rate),
    };
    let secs =
        stage_secs(time.trim()).ok_or_else(|| bad("the time needs a unit: ms, s, m or h"))?;
    if secs <= 0.0 {
        return Err(bad("a stage lasts more than 0 s"));
    }
    let target =
        rate_of(rate.trim()).ok_or_else(|| bad("the rate is a number of operations a second"))?;
    if target < 0.0 {
        return Err(bad("a rate is not negative"));
    }
    Ok(Stage { secs, target, hold })
}

/// `30s`, `2m`, `500ms`, `1.5h`: a unit is required, so `30:1000` is not
/// read as thirty of something unsaid.
fn stage_secs(s: &str) -> Option<f64> {
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num.trim().parse().ok()?;
    let scale = match unit {
        "ms" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return None,
    };
    v.is_finite().then_some(v * scale)
}

/// `5000`, `5k`, `1.5M`.
fn rate_of(s: &str) -> Option<f64> {
    let (num, scale) = match s.char_indices().last() {
        Some((i, 'k' | 'K')) => (&s[..i], 1e3),
        Some((i, 'M')) => (&s[..i], 1e6),
        _ => (s, 1.0),
    };
    let v: f64 = num.trim().parse().ok()?;
    v.is_finite().then_some(v * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramps_and_steps_parse() {
        let s = Stages::parse("30s:1000, 2m:5k,500ms:=0", 10.0).unwrap();
        assert_eq!(s.stages.len(), 3);
        assert_eq!(
            s.stages[1],
            Stage {
                secs: 120.0,
                target: 5000.0,
                hold: false
            }
        );
        assert!(s.stages[2].hold);
        assert_eq!(s.secs(), 150.5);
        let back: Stages = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn bad_stages_name_the_flag() {
        for bad in [
            "0s:100", "-1s:100", "30:100", "30s", "30s:-5", "30s:x", "", "1s:0", "10x:5",
        ] {
            let e = Stages::parse(bad, 0.0).unwrap_err();
            assert_eq!(e.flag, "--stages", "{bad}");
        }
    }

    #[test]
    fn the_count_is_the_integral_of_the_rate() {
        // 1000 -> 5000 over 4 s: 12,000 operations, 1,500 in the first second.
        let s = Stages::parse("4s:5000", 1000.0).unwrap();
        assert!((s.total() - 12_000.0).abs() < 1e-6);
        assert!((s.count_at(1.0) - 1_500.0).abs() < 1e-6);
        assert!((s.count_at(99.0) - 12_000.0).abs() < 1e-6);
        // A step holds its rate from the start.
        let s = Stages::parse("1s:100,1s:=300", 0.0).unwrap();
        assert!((s.count_at(1.0) - 50.0).abs() < 1e-9);
        assert!((s.count_at(1.5) - 200.0).abs() < 1e-9);
        assert_eq!(s.mean_rate(), 175.0);
    }
}
