//! Load that changes over time (docs/guides/stages.md), from the real
//! binary: a ramp's writes verify; bad stages are one line and exit 2; a
//! threshold broken for `--abort-after` stops the run. Timed, alone after
//! the suite: a ramp's laps each carry the ramp's mean over the lap at a
//! steady run's send lag, and steps hold their rates.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use loadrig_report::Report;

use crate::common::delayed::{DelayServer, Delays};
use crate::common::{assert_all_ok, assert_verified, loadrig, redis_db, run_reported, Run};

/// `kv write1` on the shared Redis (its own database), open loop, with `extra`.
fn kv_write(db: &str, extra: &[&str]) -> (Run, Report) {
    let mut args = vec![
        "run",
        "kv",
        "-t",
        "redis://127.0.0.1:6379",
        "--test",
        "write1",
        "--rows",
        "1000",
        "--dataset",
        db,
        "-c",
        "16",
        "--max-error-rate",
        "0",
    ];
    args.extend(extra);
    run_reported(&args)
}

/// The timing tests run one at a time: a lap's count is of completions,
/// so a neighbour's load moving latency across a lap boundary moves
/// operations between laps.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

fn send_lag_p99_us(report: &Report) -> f64 {
    report.measured.kinds[0].send_lag.p99_us
}

/// 1,000/s to 5,000/s over 4 s: 12,000 writes, all acknowledged and
/// verified; the spec keeps the stages and the summary has the stage's
/// line. How closely the laps follow the ramp is a timing test (below).
#[test]
fn a_ramps_writes_verify_and_its_stage_has_its_line() {
    let db = redis_db();
    let dataset = format!("it_stages_{}", db.n);
    let (r, report) = kv_write(&dataset, &["--rate", "1000", "--stages", "4s:5000"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_all_ok(&r, &report, 12_000);
    assert_verified(&r, &report);
    let st = report
        .spec
        .load
        .stages
        .as_ref()
        .expect("the stages in the spec");
    assert_eq!((st.from, st.stages.len()), (1_000.0, 1));
    assert!(
        r.stdout
            .contains("  stage 1  0s-4s  1,000 -> 5,000/s  achieved "),
        "{}",
        r.dump()
    );
}

/// The same ramp, timed: each 1 s lap within 2% of the ramp's mean over
/// it (1,500, 2,500, 3,500, 4,500/s), the stage achieving 3,0xx/s, and
/// the send lag no worse than a steady run's at the ramp's peak. A lap
/// counts completions, so a stall of the machine moves operations across
/// a lap's boundary: taken alone with the release binary, up to three
/// times (`crate::reference::measure`).
#[test]
#[ignore = "timing: scripts/test runs these alone, after the suite"]
fn a_ramps_laps_follow_it_at_a_steady_runs_send_lag() {
    let db = redis_db();
    let dataset = format!("it_stages_{}", db.n);
    crate::reference::measure("a ramp's laps", || {
        let (steady_run, steady) = kv_write(&dataset, &["--rate", "5000", "-d", "2s"]);
        if steady_run.code != 0 {
            return Err(format!("the steady run: {}", steady_run.dump()));
        }
        let (r, report) = kv_write(&dataset, &["--rate", "1000", "--stages", "4s:5000"]);
        if r.code != 0 {
            return Err(format!("the ramp: {}", r.dump()));
        }
        let laps: Vec<_> = report.laps.iter().filter(|l| !l.warmup).collect();
        if laps.len() < 4 {
            return Err(format!("{} laps", laps.len()));
        }
        for (k, lap) in laps.iter().take(4).enumerate() {
            let want = 1_500.0 + 1_000.0 * k as f64;
            let got = lap.ok as f64 / lap.length_secs;
            if (got / want - 1.0).abs() > 0.02 {
                return Err(format!("lap {k}: {got:.0}/s, the ramp's mean {want}/s"));
            }
        }
        let (ramp_lag, steady_lag) = (send_lag_p99_us(&report), send_lag_p99_us(&steady));
        if ramp_lag > 2.0 * steady_lag + 2_000.0 {
            return Err(format!(
                "send lag p99 {ramp_lag} us on the ramp, {steady_lag} us steady"
            ));
        }
        match r.stdout.contains("1,000 -> 5,000/s  achieved 3,0") {
            true => Ok(()),
            false => Err(format!("the stage's line: {}", r.stdout)),
        }
    });
}

/// A step and a ramp down: the stages' lines each hold their own laps
/// and their rates, to 2% (timed: alone, up to three times).
#[test]
#[ignore = "timing: scripts/test runs these alone, after the suite"]
fn steps_hold_their_rate_and_each_stage_has_its_line() {
    crate::reference::measure("a step's rate", || {
        let (r, report) = run_reported(&[
            "run",
            "hello",
            "-c",
            "8",
            "--stages",
            "2s:=400,1s:=1000,2s:0",
        ]);
        if r.code != 0 {
            return Err(r.dump());
        }
        // 800 + 1,000 + 1,000 (1,000 down to 0 over 2 s).
        assert_all_ok(&r, &report, 2_800);
        let lines: Vec<&str> = r
            .stdout
            .lines()
            .filter(|l| l.starts_with("  stage "))
            .collect();
        assert_eq!(lines.len(), 3, "{}", r.dump());
        for (line, (asked, rate)) in lines.iter().zip([
            ("0s-2s  400/s hold", 400.0),
            ("2s-3s  1,000/s hold", 1_000.0),
            ("3s-5s  1,000 -> 0/s", 500.0),
        ]) {
            assert!(line.contains(asked), "{line}\n{}", r.dump());
            let achieved: f64 = line
                .split("achieved ")
                .nth(1)
                .and_then(|a| a.split("/s").next())
                .map(|a| a.replace(',', ""))
                .and_then(|a| a.parse().ok())
                .unwrap_or_else(|| panic!("{line}"));
            if (achieved / rate - 1.0).abs() > 0.02 {
                return Err(line.to_string());
            }
        }
        Ok(())
    });
}

/// Zero length, negative, no unit, nothing to issue, with -n: one line, exit 2.
#[test]
fn bad_stages_are_one_line_and_exit_2() {
    for bad in [
        &["--stages", "0s:100"][..],
        &["--stages", "-1s:100"],
        &["--stages", "30:100"],
        &["--stages", "1s:-5"],
        &["--stages", "1s:0"],
        &["--stages", "1s:100", "-n", "5"],
    ] {
        let mut args = vec!["run", "hello"];
        args.extend(bad);
        let r = loadrig(&args);
        assert_eq!(r.code, 2, "{bad:?}: {}", r.dump());
        assert_eq!(r.stderr.trim().lines().count(), 1, "{bad:?}: {}", r.dump());
        assert!(r.stderr.contains("--stages"), "{bad:?}: {}", r.dump());
    }
}

/// The reference server's delay jumps from 1 ms to 50 ms 2 s in; with
/// `--threshold 'p50<20ms' --abort-after 2s` and 0.5 s laps the run stops
/// within the window plus one lap of the jump, writes its report saying
/// why and when, and exits 1 as a broken threshold does.
#[test]
fn a_sustained_breach_stops_the_run_early() {
    let _alone = one_at_a_time();
    let server = DelayServer::start(Delays::Jump {
        base: Duration::from_millis(1),
        after: Duration::from_secs(2),
        to: Duration::from_millis(50),
    });
    let target = format!("redis://127.0.0.1:{}", server.port);
    let (r, report) = run_reported(&[
        "run",
        "redis",
        "--target",
        &target,
        "--tests",
        "get",
        "-c",
        "8",
        "--rate",
        "400",
        "--duration",
        "20s",
        "--interval",
        "0.5s",
        "--threshold",
        "p50<20ms",
        "--abort-after",
        "2s",
    ]);
    assert_eq!(r.code, 1, "{}", r.dump());
    let stopped = report
        .stopped_early
        .as_ref()
        .unwrap_or_else(|| panic!("no stop recorded\n{}", r.dump()));
    assert_eq!(stopped.threshold, "p50<20ms");
    // The jump is 2 s after the first command, a hair after the load's start.
    let (jump, window, lap) = (2.0, 2.0, 0.5);
    assert!(
        stopped.broken_since_secs >= jump - lap && stopped.broken_since_secs <= jump + lap,
        "{stopped:?}\n{}",
        r.dump()
    );
    assert!(
        stopped.stopped_at_secs <= jump + window + lap + 0.05,
        "{stopped:?}\n{}",
        r.dump()
    );
    assert!(
        report.measured.elapsed_secs <= jump + window + lap + 0.5,
        "{}",
        r.dump()
    );
    assert!(r.stdout.contains("stopped early at "), "{}", r.dump());
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(
        all.contains("check failed: stopped early at ")
            && all.contains("threshold p50<20ms broken in every lap since"),
        "{}",
        r.dump()
    );
}

/// Without a threshold to watch, `--abort-after` is one line, exit 2.
#[test]
fn abort_after_needs_a_threshold() {
    let r = loadrig(&["run", "hello", "--abort-after", "2s"]);
    assert_eq!(r.code, 2, "{}", r.dump());
    assert!(
        r.stderr.contains("--abort-after: needs a --threshold"),
        "{}",
        r.dump()
    );
}
