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
    /// A latency percentile (completion minus intended start), or its
    /// mean or maximum: the value is a time.
    P50,
    P90,
    P99,
    P999,
    Max,
    Avg,
    /// Successful operations per second.
    Throughput,
    /// Failed (or dropped) operations over all, 0 to 1.
    ErrorRate,
}

impl Metric {
    const NAMES: [(&'static str, Metric); 8] = [
        ("p50", Metric::P50),
        ("p90", Metric::P90),
        ("p99.9", Metric::P999),
        ("p99", Metric::P99),
        ("max", Metric::Max),
        ("avg", Metric::Avg),
        ("throughput", Metric::Throughput),
        ("error_rate", Metric::ErrorRate),
    ];

    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, m)| *m == self)
            .map_or("?", |(n, _)| n)
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
                format!("'{s}': {why} (e.g. p99<5ms, vote:p99.9<20ms, error_rate<0.01, throughput>10000)"),
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
        let metric = Metric::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, m)| *m)
            .ok_or_else(|| bad("unknown metric"))?;
        let value = if metric.is_time() {
            time(value).ok_or_else(|| bad("not a time"))?
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

/// `5ms`, `250us`, `1.5s`, `2m`; a bare number is milliseconds.
fn time(s: &str) -> Option<f64> {
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok().filter(|v: &f64| v.is_finite())?;
    let scale = match unit {
        "" | "ms" => 1e-3,
        "us" => 1e-6,
        "ns" => 1e-9,
        "s" => 1.0,
        "m" => 60.0,
        _ => return None,
    };
    Some(v * scale)
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl TryFrom<String> for Threshold {
    type Error = SpecError;
    fn try_from(s: String) -> Result<Self, SpecError> {
        Threshold::parse(&s)
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
            (None, Metric::P99, Cmp::Lt)
        );
        assert!((t.value - 0.005).abs() < 1e-12);
        let t = Threshold::parse("vote: p99.9 <= 20ms").unwrap();
        assert_eq!(t.kind.as_deref(), Some("vote"));
        assert_eq!((t.metric, t.cmp), (Metric::P999, Cmp::Le));
        assert_eq!(t.to_string(), "vote:p99.9<=20ms");
        let t = Threshold::parse("throughput>10000").unwrap();
        assert_eq!((t.metric, t.value), (Metric::Throughput, 10000.0));
        let t = Threshold::parse("error_rate<0.01").unwrap();
        assert_eq!(t.metric, Metric::ErrorRate);
        for bad in ["p99", "p98<5ms", "p99<fast", "throughput>-1", "<5"] {
            let e = Threshold::parse(bad).unwrap_err();
            assert_eq!(e.flag, "--threshold", "{bad}");
        }
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
