//! `--until 'p99 ±2%'`: a duration run goes on until the 95% interval of
//! a figure is at most this wide, relative to the figure, and ends at
//! `--duration` if it never gets there (docs/explanations/intervals.md). Parsed and
//! validated here, with no I/O; the session watches the laps for it.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::SpecError;

/// The figures an interval is kept for, as the summary names them.
pub const FIGURES: [&str; 5] = ["throughput", "p50", "p90", "p99", "p99.9"];

/// How narrow an interval the run waits for.
#[derive(Debug, Clone, PartialEq)]
pub struct Until {
    /// One of [`FIGURES`]; a percentile holds for every kind that ran.
    pub figure: &'static str,
    /// Half the interval's width over the figure: 0.02 for `±2%`.
    pub within: f64,
}

impl Until {
    /// `p99 ±2%`, `throughput +-1%` (`±` or `+-`; spaces optional).
    pub fn parse(s: &str) -> Result<Until, SpecError> {
        let bad = |why: &str| {
            SpecError::new(
                "--until",
                format!(
                    "{s:?}: {why} (e.g. 'p99 ±2%'; figures: {})",
                    FIGURES.join(", ")
                ),
            )
        };
        let (name, width) = s
            .split_once('±')
            .or_else(|| s.split_once("+-"))
            .ok_or_else(|| bad("no ± width"))?;
        let name = name.trim();
        let figure = FIGURES
            .iter()
            .find(|f| **f == name)
            .ok_or_else(|| bad("not a figure with an interval"))?;
        let pct: f64 = width
            .trim()
            .strip_suffix('%')
            .ok_or_else(|| bad("the width is a percentage"))?
            .trim()
            .parse()
            .map_err(|_| bad("the width is a number of percent"))?;
        if !(pct > 0.0 && pct < 100.0) {
            return Err(bad("the width is between 0% and 100%"));
        }
        Ok(Until {
            figure,
            within: pct / 100.0,
        })
    }
}

impl fmt::Display for Until {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ±{}%", self.figure, self.within * 100.0)
    }
}

/// Kept as written (`"p99 ±2%"`) in the spec.
impl Serialize for Until {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Until {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Until::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn until_parses_as_written_and_reads_back() {
        let u = Until::parse("p99 ±2%").unwrap();
        assert_eq!((u.figure, u.within), ("p99", 0.02));
        assert_eq!(Until::parse("p99.9+-0.5 %").unwrap().within, 0.005);
        assert_eq!(Until::parse("throughput ±1%").unwrap().figure, "throughput");
        let back: Until = serde_json::from_str(&serde_json::to_string(&u).unwrap()).unwrap();
        assert_eq!(back, u);
        for bad in ["p99", "p95 ±2%", "p99 ±2", "p99 ±0%", "p99 ±x%", "max ±1%"] {
            assert!(Until::parse(bad).is_err(), "{bad}");
        }
    }
}
