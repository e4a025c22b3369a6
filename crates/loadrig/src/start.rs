//! When the load begins: at once, or at one wall-clock instant shared by
//! every process and host of a run (`--start-at`, `--start-delay`,
//! docs/explanations/measurement.md section 6). The run connects and prepares first; the wall
//! clock is turned into a monotonic instant only at the last moment, so
//! waiting a long time does not drift. Also the lines that say when it
//! begins and what the wait did to the connections.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use loadrig_spec::bounds::{self, MAX_SECS};
use loadrig_spec::SpecError;
use tokio::time::Instant;

/// How the start time is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StartRule {
    /// At this UNIX time, in seconds.
    At(f64),
    /// At the next multiple of this many seconds after now + it.
    Delay(f64),
}

impl StartRule {
    /// A start further away than the longest time any flag takes
    /// ([`MAX_SECS`]) is a mistake, not a plan.
    pub fn check(self, now: SystemTime) -> Result<(), SpecError> {
        match self {
            StartRule::At(t) if t - unix_secs(now) > MAX_SECS => Err(SpecError::new(
                "--start-at",
                format!(
                    "is more than 30 days away ({})",
                    utc_text(self.resolve(now))
                ),
            )),
            StartRule::Delay(s) => bounds::seconds("--start-delay", s, false),
            StartRule::At(_) => Ok(()),
        }
    }

    /// The start, in milliseconds since the epoch, given the time now.
    pub fn resolve(self, now: SystemTime) -> u64 {
        let secs = match self {
            StartRule::At(t) => t,
            StartRule::Delay(s) => next_multiple(unix_secs(now), s),
        };
        (secs * 1e3).round().max(0.0) as u64
    }
}

/// Erlvolt's common start: the next multiple of `s` seconds at or after
/// `now + s`, i.e. `ceil((now + s) / s) * s`.
pub fn next_multiple(now: f64, s: f64) -> f64 {
    ((now + s) / s).ceil() * s
}

fn unix_secs(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

pub fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// `1795000000` or `1795000000.250`: exact to the millisecond, as
/// `--start-at` reads it back.
pub fn unix_text(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{}", ms / 1000)
    } else {
        format!("{}.{:03}", ms / 1000, ms % 1000)
    }
}

/// `2026-11-18 11:06:40 UTC`, with milliseconds when there are any.
pub fn utc_text(ms: u64) -> String {
    let secs = ms / 1000;
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let t = secs % 86_400;
    let frac = if ms.is_multiple_of(1000) {
        String::new()
    } else {
        format!(".{:03}", ms % 1000)
    };
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}{frac} UTC",
        t / 3600,
        t / 60 % 60,
        t % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The line a run prints before it waits: `start at ... UTC (unix ...)`.
pub fn line(ms: u64) -> String {
    format!("start at {} (unix {})", utc_text(ms), unix_text(ms))
}

/// When the engine starts, on both clocks.
#[derive(Debug, Clone, Copy)]
pub struct Begin {
    pub at: Instant,
    /// Wall clock of `at`, ms since the epoch (the report's `started_unix_ms`):
    /// the start asked for, or now when that has passed.
    pub unix_ms: u64,
}

/// Lead time of a start "now", so every worker is spawned before it.
const LEAD: Duration = Duration::from_millis(5);

/// Begin at once.
pub fn now() -> Begin {
    Begin {
        at: Instant::now() + LEAD,
        unix_ms: unix_ms(SystemTime::now() + LEAD),
    }
}

/// Wait for the wall-clock start `ms`, then give the engine the monotonic
/// instant it falls on. A start in the past begins at once. Ctrl-C (`stop`)
/// ends the wait early.
pub async fn wait_for(ms: u64, stop: &AtomicBool) -> Begin {
    let target = UNIX_EPOCH + Duration::from_millis(ms);
    // Sleep in short steps: the wall clock may be stepped meanwhile, and
    // Ctrl-C should not wait for the start.
    let step = Duration::from_millis(100);
    loop {
        let left = target
            .duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO);
        if stop.load(Ordering::Relaxed) {
            // Stopped while waiting: nothing is to start, so the run goes
            // on at once to its report (the engine sees the stop).
            return now();
        }
        if left <= step {
            break;
        }
        tokio::time::sleep((left - step).min(step)).await;
    }
    match target.duration_since(SystemTime::now()) {
        Ok(left) => Begin {
            at: Instant::now() + left,
            unix_ms: ms,
        },
        Err(_) => now(),
    }
}

/// `start at ...`, and how late it is if that time has passed.
pub fn start_line(at_ms: u64, now: SystemTime) -> String {
    let now_ms = unix_ms(now);
    if at_ms < now_ms {
        format!(
            "{}: {:.3}s late, starting now",
            line(at_ms),
            (now_ms - at_ms) as f64 / 1e3
        )
    } else {
        line(at_ms)
    }
}

/// What the wait for the start did to the connections, when it did
/// anything: `while waiting for the start: 3 connections closed by the
/// server were opened again`.
pub fn waited_line(reopened: u64, failed: u64) -> Option<String> {
    let count = |n: u64| match n {
        1 => "1 connection".to_owned(),
        n => format!("{n} connections"),
    };
    let verb = |n: u64| if n == 1 { "was" } else { "were" };
    let mut parts = Vec::new();
    if reopened > 0 {
        parts.push(format!(
            "{} closed by the server {} opened again",
            count(reopened),
            verb(reopened)
        ));
    }
    if failed > 0 {
        parts.push(format!(
            "{} could not be opened again (the load reconnects {})",
            count(failed),
            if failed == 1 { "it" } else { "them" }
        ));
    }
    (!parts.is_empty()).then(|| format!("while waiting for the start: {}", parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_past_30_days_is_refused() {
        let now = UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        assert!(StartRule::At(1_795_000_100.0).check(now).is_ok());
        assert!(StartRule::At(1.0).check(now).is_ok(), "the past: at once");
        let e = StartRule::At(1e300).check(now).unwrap_err();
        assert_eq!(e.flag, "--start-at");
        assert!(StartRule::Delay(1.8e19).check(now).is_err());
    }

    #[test]
    fn start_delay_is_the_next_multiple_after_now_plus_s() {
        assert_eq!(next_multiple(100.3, 2.0), 104.0);
        assert_eq!(next_multiple(100.0, 2.0), 102.0);
        assert_eq!(next_multiple(101.9, 2.0), 104.0);
        assert_eq!(next_multiple(1_795_000_000.2, 1.0), 1_795_000_002.0);
        assert_eq!(next_multiple(59.0, 10.0), 70.0);
        let now = UNIX_EPOCH + Duration::from_millis(1_795_000_003_700);
        assert_eq!(StartRule::Delay(5.0).resolve(now), 1_795_000_010_000);
        assert_eq!(StartRule::At(12.25).resolve(now), 12_250);
    }

    #[test]
    fn utc_dates_are_right() {
        assert_eq!(utc_text(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_text(1_795_000_000_000), "2026-11-18 11:06:40 UTC");
        assert_eq!(utc_text(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc_text(1_709_210_096_250), "2024-02-29 12:34:56.250 UTC");
        assert_eq!(utc_text(4_102_444_799_000), "2099-12-31 23:59:59 UTC");
        assert_eq!(unix_text(1_795_000_000_000), "1795000000");
        assert_eq!(unix_text(1_795_000_000_050), "1795000000.050");
    }

    #[tokio::test]
    async fn a_start_in_the_past_begins_at_once() {
        let stop = AtomicBool::new(false);
        let then = unix_ms(SystemTime::now()) - 3_000;
        let b = wait_for(then, &stop).await;
        assert!(b.unix_ms >= then + 3_000, "{} vs {then}", b.unix_ms);
        assert!(b.at <= Instant::now() + LEAD);
    }

    #[tokio::test]
    async fn a_start_in_the_future_is_waited_for() {
        let stop = AtomicBool::new(false);
        let ms = unix_ms(SystemTime::now()) + 300;
        let b = wait_for(ms, &stop).await;
        assert_eq!(b.unix_ms, ms);
        let wall = unix_ms(SystemTime::now() + b.at.saturating_duration_since(Instant::now()));
        assert!(wall.abs_diff(ms) <= 5, "{wall} vs {ms}");
    }
}
