//! Each check on reports built for it: one that passes, one that fails,
//! one that cannot be judged.

use std::time::Duration;

use loadrig_metrics::{Lap, OpError, Snapshot};
use loadrig_spec::{Arrival, Pacing};

use super::*;
use crate::merge::tests::{lap, report};

/// `n` operations of kind 0 at `lat_us` each, `lag_us` of send lag.
fn snapshot(n: u64, lat_us: u64, lag_us: Option<u64>) -> Snapshot {
    let mut s = Snapshot::new(2, 3);
    for _ in 0..n {
        let lat = Duration::from_micros(lat_us);
        s.ok(0, lat, lat, Some(0));
        if let Some(lag) = lag_us {
            s.kinds[0].send_lag.record(Duration::from_micros(lag));
        }
    }
    s
}

/// Laps of one second, `ok` each, latencies from `lat_us(i)`, with the
/// client's CPU of `cpu_ms` each.
fn laps(n: usize, ok: u64, cpu_ms: u64, lat_us: impl Fn(usize) -> u64) -> Vec<Lap> {
    (0..n)
        .map(|i| {
            let mut l = lap(1_000 * (i as u64 + 1), 1_000, ok, lat_us(i));
            l.client.cpu_user = Duration::from_millis(cpu_ms);
            l
        })
        .collect()
}

/// A steady closed-loop report: 20 laps of 1,000 at 1 ms, light CPU.
fn steady() -> Report {
    let mut r = report(
        0,
        snapshot(20_000, 1_000, None),
        0,
        Duration::from_secs(20),
        laps(20, 1_000, 100, |_| 1_000),
    );
    r.spec.load.shard = Shard::WHOLE;
    r.client.cpu_secs = 2.0;
    r
}

fn named<'a>(v: &'a Validity, name: &str) -> Option<&'a ValidityCheck> {
    v.checks.iter().find(|c| c.name == name)
}

fn open_loop(r: &mut Report, rate: f64) {
    r.spec.load.pacing = Pacing::Rate {
        rate,
        arrival: Arrival::Regular,
    };
}

#[test]
fn a_steady_closed_loop_is_valid_and_punctuality_not_judged() {
    let v = steady().validity();
    assert!(v.valid, "{v:?}");
    assert_eq!(v.line(), "measurement: valid");
    assert!(named(&v, "punctuality").is_none());
    assert!(named(&v, "offered").is_none());
    for name in ["headroom", "shed", "stationarity", "samples", "target"] {
        assert!(named(&v, name).is_some_and(|c| c.ok), "{name}: {v:?}");
    }
    assert_eq!(v.warmup_suggested_secs, None);
}

#[test]
fn send_lag_past_a_tenth_of_the_inter_arrival_is_unpunctual() {
    // 1,000/s over 4 connections: 4 ms between one worker's starts.
    let mut r = steady();
    open_loop(&mut r, 1_000.0);
    r.measured = crate::Measured::of(
        &snapshot(20_000, 1_000, Some(300)),
        &["vote", "other"],
        &[],
        Duration::from_secs(20),
    );
    let c = named(&r.validity(), "punctuality").unwrap().clone();
    assert!(c.ok, "{c:?}");
    assert!((c.threshold - 0.4).abs() < 1e-9, "{c:?}");
    r.measured = crate::Measured::of(
        &snapshot(20_000, 1_000, Some(500)),
        &["vote", "other"],
        &[],
        Duration::from_secs(20),
    );
    let v = r.validity();
    let c = named(&v, "punctuality").unwrap();
    assert!(!c.ok && !v.valid, "{v:?}");
    assert!(
        v.line()
            .contains("punctuality: send-lag p99 500us > 10% of the 4.00ms"),
        "{}",
        v.line()
    );
}

#[test]
fn a_rate_not_reached_or_operations_dropped_fail() {
    let mut r = steady();
    open_loop(&mut r, 1_000.0);
    // 20,000 in 20 s: exactly the rate.
    assert!(named(&r.validity(), "offered").unwrap().ok);
    open_loop(&mut r, 1_200.0);
    let v = r.validity();
    let c = named(&v, "offered").unwrap();
    assert!(!c.ok && (c.figure - 1_000.0).abs() < 1e-6, "{c:?}");
    open_loop(&mut r, 1_000.0);
    let mut s = snapshot(20_000, 1_000, Some(10));
    s.dropped(0, 5_000);
    r.measured = crate::Measured::of(&s, &["vote", "other"], &[], Duration::from_secs(20));
    let v = r.validity();
    assert!(!named(&v, "shed").unwrap().ok, "{v:?}");
    // 25,000 issued, 5,000 never sent: 1,000/s sent, on the rate.
    assert!(named(&v, "offered").unwrap().ok, "{v:?}");
}

#[test]
fn a_shard_is_held_to_its_share_of_the_rate() {
    let mut r = steady();
    r.spec.load.shard = Shard { index: 0, count: 2 };
    open_loop(&mut r, 2_000.0);
    let v = r.validity();
    assert!(named(&v, "offered").unwrap().ok, "{v:?}");
}

#[test]
fn a_saturated_client_has_no_headroom() {
    let mut r = steady();
    // Two threads, 1.9 s of CPU a second: 95%.
    r.laps = laps(20, 1_000, 1_900, |_| 1_000)
        .iter()
        .map(crate::LapReport::of)
        .collect();
    r.client.cpu_secs = 38.0;
    let c = named(&r.validity(), "headroom").unwrap().clone();
    assert!(!c.ok && (c.figure - 95.0).abs() < 1e-6, "{c:?}");
    // An embedded database's threads took half of it: 47.5%.
    r.client.cpu_secs = 19.0;
    assert!(named(&r.validity(), "headroom").unwrap().ok);
    r.laps.clear();
    assert!(named(&r.validity(), "headroom").is_none());
}

#[test]
fn a_latency_that_grows_is_not_stationary() {
    let mut r = steady();
    r.laps = laps(20, 1_000, 100, |i| 1_000 + 100 * i as u64)
        .iter()
        .map(crate::LapReport::of)
        .collect();
    let v = r.validity();
    let c = named(&v, "stationarity").unwrap();
    assert!(!c.ok && c.figure > 50.0, "{c:?}");
    assert!(c.detail.contains("p50 rose"), "{c:?}");
}

#[test]
fn a_start_up_transient_past_the_warm_up_suggests_a_longer_one() {
    let mut r = steady();
    let mut l = laps(30, 1_000, 100, |i| if i < 5 { 5_000 } else { 1_000 });
    for x in l.iter_mut().take(2) {
        x.warmup = true;
    }
    r.laps = l.iter().map(crate::LapReport::of).collect();
    let v = r.validity();
    let c = named(&v, "stationarity").unwrap();
    assert!(!c.ok, "{c:?}");
    assert_eq!(v.warmup_suggested_secs, Some(5.0), "{v:?}");
    assert!(c.detail.contains("--warmup 5s"), "{c:?}");
}

#[test]
fn too_few_laps_are_not_judged_for_stationarity() {
    let mut r = steady();
    r.laps.truncate(MIN_LAPS - 1);
    assert!(named(&r.validity(), "stationarity").is_none());
}

#[test]
fn a_short_run_marks_its_p99_9_and_fails_below_its_p99() {
    let mut r = steady();
    r.measured = crate::Measured::of(
        &snapshot(5_000, 1_000, None),
        &["vote", "other"],
        &[],
        Duration::from_secs(20),
    );
    let v = r.validity();
    let c = named(&v, "samples").unwrap();
    assert!(c.ok, "{c:?}");
    assert!(
        c.detail
            .contains("p99.9 of vote has 5,000 samples, 10,000 needed"),
        "{c:?}"
    );
    r.spec.thresholds = vec![loadrig_spec::Threshold::parse("p99.9<5ms").unwrap()];
    assert!(!named(&r.validity(), "samples").unwrap().ok);
    r.spec.thresholds.clear();
    r.measured = crate::Measured::of(
        &snapshot(500, 1_000, None),
        &["vote", "other"],
        &[],
        Duration::from_secs(20),
    );
    assert!(!named(&r.validity(), "samples").unwrap().ok);
    assert_eq!(samples_needed(99.9), 10_000);
    assert_eq!(samples_needed(50.0), 20);
}

#[test]
fn a_restarted_or_lost_target_fails() {
    let mut r = steady();
    r.laps[3].server.insert("redis.uptime_secs".into(), 100.0);
    r.laps[4].server.insert("redis.uptime_secs".into(), 1.0);
    let c = named(&r.validity(), "target").unwrap().clone();
    assert!(!c.ok && c.figure == 1.0, "{c:?}");
    let mut r = steady();
    r.laps[4].server.insert(COUNTER_RESETS.into(), 2.0);
    r.measured.gave_up = 1;
    let c = named(&r.validity(), "target").unwrap().clone();
    assert_eq!(c.figure, 3.0, "{c:?}");
    let mut r = steady();
    r.measured.reconnects = 7;
    assert!(named(&r.validity(), "target").unwrap().ok);
}

#[test]
fn no_judgeable_check_is_not_valid() {
    let v = Validity {
        valid: false,
        checks: Vec::new(),
        warmup_suggested_secs: None,
    };
    assert_eq!(v.line(), "measurement: INVALID (nothing could be judged)");
}

#[test]
fn a_merge_judges_the_merged_report() {
    let mut s = snapshot(10_000, 1_000, None);
    s.failed(1, OpError::server("x"), None);
    let a = report(
        0,
        s,
        0,
        Duration::from_secs(10),
        laps(10, 1_000, 100, |_| 1_000),
    );
    let mut b = a.clone();
    b.spec.load.shard = Shard { index: 1, count: 2 };
    b.environment.host = "other".into();
    let m = Report::merge(&[a, b]).unwrap();
    assert_eq!(m.validity.as_ref(), Some(&m.validity()));
    let back: Report = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
    assert_eq!(back.validity, m.validity);
}

#[test]
fn an_old_report_without_a_verdict_still_reads() {
    let r = steady();
    let text = serde_json::to_string(&r).unwrap();
    assert!(!text.contains("\"validity\""));
    let back: Report = serde_json::from_str(&text).unwrap();
    assert_eq!(back.validity, None);
    assert!(back.validity_or_judge().valid);
}
