//! Number formats, the one home: every printer, the workloads' results
//! and verdicts, and the tests use these.

use std::time::Duration;

/// Three significant digits, without trailing noise: 1.23, 12.3, 123.
pub fn sig3(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return "0".to_string();
    }
    let decimals = (2 - v.abs().log10().floor() as i32).clamp(0, 3) as usize;
    format!("{v:.decimals$}")
}

/// Seconds as a [`Duration`], whatever the number (one read from a report
/// may be anything): negative and NaN are zero, too large is the longest
/// duration there is. `Duration::from_secs_f64` panics on those.
pub fn seconds(s: f64) -> Duration {
    if s.is_nan() || s <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX)
}

/// A duration with a unit that suits it: 850ns, 12.3us, 1.25ms, 2.50s.
pub fn dur(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    if ns < 1e3 {
        format!("{ns:.0}ns")
    } else if ns < 1e6 {
        format!("{}us", sig3(ns / 1e3))
    } else if ns < 1e9 {
        format!("{}ms", sig3(ns / 1e6))
    } else {
        format!("{}s", sig3(ns / 1e9))
    }
}

/// Seconds as given: 10, 0.5, 2.25.
pub fn secs(s: f64) -> String {
    let t = format!("{s:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Operations per second over a span (0 for an empty span).
pub fn rate(ops: u64, over: Duration) -> f64 {
    let s = over.as_secs_f64();
    if s > 0.0 {
        ops as f64 / s
    } else {
        0.0
    }
}

pub fn bytes(b: u64) -> String {
    let mib = b as f64 / (1024.0 * 1024.0);
    if mib >= 1024.0 {
        format!("{} GiB", sig3(mib / 1024.0))
    } else {
        format!("{} MiB", sig3(mib))
    }
}

/// 1234567 -> "1,234,567": counts as people read them.
pub fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// [`group`] for signed counts.
pub fn group_i(n: i64) -> String {
    if n < 0 {
        format!("-{}", group(n.unsigned_abs()))
    } else {
        group(n as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1_000), "1,000");
        assert_eq!(group(1_234_567), "1,234,567");
        assert_eq!(group_i(-1_000), "-1,000");
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(dur(Duration::from_nanos(850)), "850ns");
        assert_eq!(dur(Duration::from_nanos(12_340)), "12.3us");
        assert_eq!(dur(Duration::from_micros(1_250)), "1.25ms");
        assert_eq!(dur(Duration::from_millis(2_500)), "2.50s");
        assert_eq!(dur(Duration::from_micros(290)), "290us");
    }

    #[test]
    fn secs_trim() {
        assert_eq!(secs(10.0), "10");
        assert_eq!(secs(0.5), "0.5");
    }
}
