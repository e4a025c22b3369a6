//! Thresholds a run must meet, for CI (`--threshold p99<5ms`): a metric,
//! a comparison and a value, over the whole run or one kind of operation
//! (`vote:p99<5ms`). Parsed and validated here, with no I/O; judged
//! against the report once the run is over. The forms are listed in
//! docs/reference/limits.md.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::SpecError;

/// What a threshold looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// A latency percentile (completion minus intended start), in
    /// millionths: `p99.99` is 999_900, `p50` 500_000. Any percentile the
    /// report's histogram holds, so `p95` as well as the printed ones.
    Percentile(u32),
    /// The largest and the mean latency: the value is a time.
    Max,
    Avg,
    /// Successful operations per second.
    Throughput,
    /// Failed (or dropped) operations over all, 0 to 1.
    ErrorRate,
}

impl Metric {
    const NAMES: [(&'static str, Metric); 6] = [
        ("max", Metric::Max),
        ("avg", Metric::Avg),
        ("mean", Metric::Avg),
        ("med", Metric::Percentile(500_000)),
        ("throughput", Metric::Throughput),
        ("error_rate", Metric::ErrorRate),
    ];

    /// `p95`, `p99.99`, k6's `p(95)`, or a name (`max`, `avg`, k6's `med`).
    fn parse(name: &str) -> Option<Metric> {
        if let Some((_, m)) = Self::NAMES.iter().find(|(n, _)| *n == name) {
            return Some(*m);
        }
        let p = name.strip_prefix('p')?;
        let p = p
            .strip_prefix('(')
            .and_then(|p| p.strip_suffix(')'))
            .unwrap_or(p);
        if !p.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return None;
        }
        let p: f64 = p.parse().ok()?;
        let millionths = (p * 10_000.0).round();
        (p > 0.0 && millionths <= 1e6).then_some(Metric::Percentile(millionths as u32))
    }

    /// The percentile, 0 to 100 (`None` for the other metrics).
    pub fn percentile(self) -> Option<f64> {
        match self {
            Metric::Percentile(m) => Some(f64::from(m) / 10_000.0),
            _ => None,
        }
    }

    /// A time (seconds), not a count or a ratio.
    pub fn is_time(self) -> bool {
        !matches!(self, Metric::Throughput | Metric::ErrorRate)
    }
}

/// `<` or `>` (`<=` and `>=` too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    pub fn holds(self, actual: f64, limit: f64) -> bool {
        match self {
            Cmp::Lt => actual < limit,
            Cmp::Le => actual <= limit,
            Cmp::Gt => actual > limit,
            Cmp::Ge => actual >= limit,
        }
    }

    fn text(self) -> &'static str {
        match self {
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }
}

/// One threshold. Kept in the report as the text it was written as.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Threshold {
    /// One kind of operation (`vote`), or the whole run.
    pub kind: Option<String>,
    pub metric: Metric,
    pub cmp: Cmp,
    /// Seconds for a time, else the number as written.
    pub value: f64,
    text: String,
}

impl Threshold {
    pub fn parse(s: &str) -> Result<Threshold, SpecError> {
        let bad = |why: &str| {
            SpecError::new(
                "--threshold",
                format!("'{s}': {why} (e.g. p99<5ms, p(95)<200ms, vote:p99.9<20ms, error_rate<0.01, throughput>10000)"),
            )
        };
        let t: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        let at = t.find(['<', '>']).ok_or_else(|| bad("no < or >"))?;
        let (left, right) = t.split_at(at);
        let (cmp, value) = match right.as_bytes() {
            [b'<', b'=', ..] => (Cmp::Le, &right[2..]),
            [b'>', b'=', ..] => (Cmp::Ge, &right[2..]),
            [b'<', ..] => (Cmp::Lt, &right[1..]),
            _ => (Cmp::Gt, &right[1..]),
        };
        let (kind, name) = match left.rsplit_once(':') {
            Some((k, n)) if !k.is_empty() => (Some(k.to_string()), n),
            _ => (None, left),
        };
        let metric = Metric::parse(name).ok_or_else(|| bad("unknown metric"))?;
        let value = if metric.is_time() {
            match time(value) {
                Some(Some(v)) => v,
                // k6 reads a bare number as milliseconds, loadrig once did
                // too: a CI gate must not rest on a guess, so say the fix.
                Some(None) => {
                    return Err(bad(&format!(
                        "a time needs a unit: {left}{}{value}ms, {value}us or {value}s",
                        cmp.text()
                    )))
                }
                None => return Err(bad("not a time")),
            }
        } else {
            value
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| bad("not a number"))?
        };
        Ok(Threshold {
            kind,
            metric,
            cmp,
            value,
            text: t,
        })
    }
}

/// `5ms`, `250us`, `1.5s`, `2m` in seconds; `Some(None)` for a number
/// with no unit.
fn time(s: &str) -> Option<Option<f64>> {
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok().filter(|v: &f64| v.is_finite())?;
    let scale = match unit {
        "" => return Some(None),
        "ms" => 1e-3,
        "us" => 1e-6,
        "ns" => 1e-9,
        "s" => 1.0,
        "m" => 60.0,
        _ => return None,
    };
    Some(Some(v * scale))
}

/// A threshold read back from a report: reports written before a time
/// needed a unit hold bare numbers, which meant milliseconds.
fn kept(s: &str) -> Result<Threshold, SpecError> {
    Threshold::parse(s).or_else(|e| {
        let with_unit = format!("{s}ms");
        match Threshold::parse(&with_unit) {
            Ok(t) if t.metric.is_time() => Ok(Threshold {
                text: s.to_string(),
                ..t
            }),
            _ => Err(e),
        }
    })
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl TryFrom<String> for Threshold {
    type Error = SpecError;
    fn try_from(s: String) -> Result<Self, SpecError> {
        kept(&s)
    }
}

impl From<Threshold> for String {
    fn from(t: Threshold) -> String {
        t.text
    }
}

impl fmt::Display for Cmp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_parse_as_written() {
        let t = Threshold::parse("p99<5ms").unwrap();
        assert_eq!(
            (t.kind.as_deref(), t.metric, t.cmp),
            (None, Metric::Percentile(990_000), Cmp::Lt)
        );
        assert!((t.value - 0.005).abs() < 1e-12);
        let t = Threshold::parse("vote: p99.9 <= 20ms").unwrap();
        assert_eq!(t.kind.as_deref(), Some("vote"));
        assert_eq!((t.metric, t.cmp), (Metric::Percentile(999_000), Cmp::Le));
        assert_eq!(t.to_string(), "vote:p99.9<=20ms");
        let t = Threshold::parse("throughput>10000").unwrap();
        assert_eq!((t.metric, t.value), (Metric::Throughput, 10000.0));
        let t = Threshold::parse("error_rate<0.01").unwrap();
        assert_eq!(t.metric, Metric::ErrorRate);
        for bad in [
            "p99",
            "p0<5ms",
            "p101<5ms",
            "p99<fast",
            "throughput>-1",
            "<5",
            "p(9x)<1s",
        ] {
            let e = Threshold::parse(bad).unwrap_err();
            assert_eq!(e.flag, "--threshold", "{bad}");
        }
    }

    #[test]
    fn any_percentile_in_either_form() {
        for (text, m) in [
            ("p95<200ms", 950_000),
            ("p(95)<200ms", 950_000),
            ("p99.99<1s", 999_900),
            ("p(99.9)<1s", 999_000),
            ("med<1s", 500_000),
            ("p100<1s", 1_000_000),
        ] {
            let t = Threshold::parse(text).unwrap();
            assert_eq!(t.metric, Metric::Percentile(m), "{text}");
        }
        assert_eq!(Metric::Percentile(999_900).percentile(), Some(99.99));
    }

    #[test]
    fn a_time_without_a_unit_is_refused_with_the_fix() {
        let e = Threshold::parse("p(95)<200").unwrap_err();
        assert!(e.to_string().contains("p(95)<200ms"), "{e}");
        // A report written when a bare number meant milliseconds still reads.
        let t: Threshold = serde_json::from_str("\"p99<5\"").unwrap();
        assert!((t.value - 0.005).abs() < 1e-12);
        assert_eq!(t.to_string(), "p99<5");
        assert!(serde_json::from_str::<Threshold>("\"throughput>x\"").is_err());
    }

    #[test]
    fn comparisons_hold_or_not() {
        assert!(Cmp::Lt.holds(1.0, 2.0) && !Cmp::Lt.holds(2.0, 2.0));
        assert!(Cmp::Ge.holds(2.0, 2.0) && !Cmp::Gt.holds(2.0, 2.0));
    }

    #[test]
    fn a_threshold_is_kept_as_its_text() {
        let t = Threshold::parse("vote:p99<5ms").unwrap();
        let j = serde_json::to_string(&t).unwrap();
        assert_eq!(j, "\"vote:p99<5ms\"");
        let back: Threshold = serde_json::from_str(&j).unwrap();
        assert_eq!(back, t);
    }
}
