//! The real binary against a reference server with known delays
//! (`common::delayed`): the latency, service time and send lag loadrig
//! reports are checked against values computed from the delays the test
//! injected, closed and open loop. A figure is right when it is within 1%
//! of the injected value (an HDR bucket is 0.1% at most, so 1% is the
//! bound); the delays are 200 ms and more so that loopback and a busy
//! machine's scheduling (up to half a millisecond seen with the suite's
//! tests in parallel on two shared cores) fit inside. The bounds above the
//! delay widen by what the server itself says it answered late (its
//! sleeping threads wake late on shared cores) by at most [`MAX_LATE`],
//! and a measurement that misses is taken again, up to three times
//! ([`measure`]): a stall of the whole machine seldom strikes three runs
//! in a row, a fault in loadrig's measuring always does. Every miss is written to
//! `target/timing-misses.txt`, which `scripts/test` prints at its end, so
//! a retry that passed still leaves its trace. The tests take one lock,
//! so they do not load the machine for each other.

use std::time::Duration;

use serde_json::Value;

use crate::common::delayed::{DelayServer, Delays};
use crate::common::{hold, json, loadrig, need_server};

/// Run the redis workload's GET test against `port`, return the report.
fn run(port: u16, extra: &[&str]) -> Value {
    let target = format!("redis://127.0.0.1:{port}");
    report_of(&["redis", "--target", &target, "--tests", "get"], extra)
}

/// `loadrig run` with `workload` (its name and target) and `extra`, one
/// lap for the whole run: its report, which must count no error.
fn report_of(workload: &[&str], extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut args = vec!["run"];
    args.extend_from_slice(workload);
    args.extend(["--interval", "1h", "--out", out.to_str().unwrap()]);
    args.extend_from_slice(extra);
    let r = loadrig(&args);
    assert_eq!(r.code, 0, "{}", r.dump());
    let report = json(&out);
    let m = &report["measured"];
    assert_eq!(m["errors"], 0, "{}", r.dump());
    assert!(m["ok"].as_u64().unwrap() > 0, "{}", r.dump());
    report
}

/// One of these tests at a time.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn kind(report: &Value) -> &Value {
    &report["measured"]["kinds"][0]
}

fn us(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

/// A check's verdict: what missed, if anything.
pub(crate) type Check = Result<(), String>;

/// `got` within 1% of `want` (both in microseconds), plus what the server
/// itself says it answered late (`late`).
fn near(what: &str, got: f64, want: Duration, late: Duration) -> Check {
    within(what, got, want, 0.01, late)
}

/// The most the server's own lateness may widen a bound: past it, the
/// machine was too busy for the figure to mean anything, and the attempt
/// misses. 10 ms is 5% of the 200 ms delays: a quiet machine's server is
/// under half a millisecond late; one shared with a build, 4 to 7 ms.
const MAX_LATE: Duration = Duration::from_millis(10);

/// `got` within `share` of `want` (both in microseconds), plus `late`
/// above it: the server's own lateness, which loadrig rightly measures.
fn within(what: &str, got: f64, want: Duration, share: f64, late: Duration) -> Check {
    let late = capped(late)?;
    let (want, late) = (want.as_secs_f64() * 1e6, late.as_secs_f64() * 1e6);
    if got >= want * (1.0 - share) && got <= want * (1.0 + share) + late {
        Ok(())
    } else {
        Err(format!(
            "{what}: {got} us, injected {want} us ({}% is {} us; the server was up to {late} us late)",
            share * 100.0,
            want * share
        ))
    }
}

/// The tail: the server's own threads, woken together on two cores, answer
/// up to about 1.2% late (202.4 ms for 200 ms seen alone), so 2%.
const TAIL: f64 = 0.02;

/// The maximum is one sample, so one late wake-up decides it: CI's shared
/// two cores once showed 204.1 ms for 200 ms (2.04%) in the open loop.
/// 5% still catches a lost timer tick or a request counted twice.
const MAX_TAIL: f64 = 0.05;

/// The maximum: never below the injected delay (nothing answers faster
/// than the server), and within [`MAX_TAIL`] (and the server's own
/// lateness) above it.
fn near_max(what: &str, got: f64, want: Duration, late: Duration) -> Check {
    let late = capped(late)?;
    let (want, late) = (want.as_secs_f64() * 1e6, late.as_secs_f64() * 1e6);
    if got >= want * 0.999 && got <= want * (1.0 + MAX_TAIL) + late {
        Ok(())
    } else {
        Err(format!(
            "{what}: {got} us, injected {want} us (the server was up to {late} us late)"
        ))
    }
}

/// The server's lateness, if it is within [`MAX_LATE`].
fn capped(late: Duration) -> Result<Duration, String> {
    if late <= MAX_LATE {
        Ok(late)
    } else {
        Err(format!(
            "the server itself answered {late:?} late, past the {MAX_LATE:?} a bound may widen"
        ))
    }
}

/// A timing measurement, taken up to three times while it misses. Two
/// cores shared with everything else can stall the client for tens of
/// milliseconds now and then (CI once showed an open-loop p99 of 216.7 ms
/// for 200 ms; a VoltDB node rejoining after the cluster test missed a
/// send lag's p99 twice in a row); such a stall seldom strikes three runs
/// in a row, while a fault in what loadrig measures (a timer's
/// resolution, latency not taken from the intended start) misses every
/// time, so it still fails the test. A fault that struck only half the
/// runs would pass seven times in eight: each miss is appended to
/// `target/timing-misses.txt`, which `scripts/test` prints, so a retry
/// that passed is seen.
pub(crate) fn measure(what: &str, mut attempt: impl FnMut() -> Check) {
    let mut missed = Vec::new();
    while missed.len() < 3 {
        match attempt() {
            Ok(()) => return,
            Err(e) => {
                eprintln!("{what}: missed ({e})");
                note_miss(what, &e);
                missed.push(e);
            }
        }
    }
    panic!("{what}: missed three times: {}", missed.join("; then "));
}

/// Append a miss to `target/timing-misses.txt` (the workspace's target
/// folder), for `scripts/test` to print.
fn note_miss(what: &str, why: &str) {
    use std::io::Write;
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/timing-misses.txt");
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(f, "{what}: {why}");
    }
}

/// Latency and service time of kind `k` where the delays put them: the
/// median within 1% of `median`, p99 within [`TAIL`] of `tail` and the
/// maximum at `tail` (each allowing the server's own lateness `late`).
fn both_at(k: &Value, median: Duration, tail: Duration, late: Duration) -> Check {
    ["latency", "service"].into_iter().try_for_each(|m| {
        near(&format!("{m} p50"), us(&k[m]["p50_us"]), median, late)?;
        within(&format!("{m} p99"), us(&k[m]["p99_us"]), tail, TAIL, late)?;
        near_max(&format!("{m} max"), us(&k[m]["max_us"]), tail, late)
    })
}

#[test]
#[ignore = "timing: scripts/test runs these alone, after the suite"]
fn a_fixed_delay_is_measured_closed_and_open_loop() {
    let _one = one_at_a_time();
    let d = Duration::from_millis(200);
    for extra in [
        &["-n", "200", "-c", "20"][..],
        &["-n", "200", "-c", "20", "--rate", "80"][..],
    ] {
        measure(&format!("{extra:?}"), || {
            let server = DelayServer::start(Delays::Fixed(d));
            let r = run(server.port, extra);
            assert_eq!(server.data_commands(), 200);
            both_at(kind(&r), d, d, server.late())
        });
    }
}

#[test]
#[ignore = "timing: scripts/test runs these alone, after the suite"]
fn a_bimodal_delay_shows_both_modes_where_they_fall() {
    let _one = one_at_a_time();
    let (fast, slow) = (Duration::from_millis(200), Duration::from_secs(1));
    measure("bimodal", || {
        let server = DelayServer::start(Delays::Bimodal {
            fast,
            slow,
            every: 10,
        });
        // 200 requests, 20 slow: p50 is fast, p99 and max are slow.
        let r = run(server.port, &["-n", "200", "-c", "20"]);
        assert_eq!(server.data_commands(), 200);
        both_at(kind(&r), fast, slow, server.late())
    });
}

#[test]
#[ignore = "timing: scripts/test runs these alone, after the suite"]
fn an_open_loop_stall_shows_in_latency_not_in_service_time() {
    let _one = one_at_a_time();
    let base = Duration::from_millis(1);
    let stall = Duration::from_millis(500);
    measure("stall", || {
        let server = DelayServer::start(Delays::Stall {
            base,
            after: Duration::from_secs(1),
            stall,
        });
        // One connection at 200/s: during the stall the schedule goes on,
        // so about 100 operations start late and wait (latency), while
        // each one's own service time stays 1 ms; only the stalled one
        // took 501 ms.
        let r = run(server.port, &["-n", "800", "-c", "1", "--rate", "200"]);
        let (k, late) = (kind(&r), server.late());
        near_max(
            "latency max",
            us(&k["latency"]["max_us"]),
            base + stall,
            late,
        )?;
        near_max(
            "service max",
            us(&k["service"]["max_us"]),
            base + stall,
            late,
        )?;
        let (lat99, svc99) = (us(&k["latency"]["p99_us"]), us(&k["service"]["p99_us"]));
        // The stall must show in latency; in service time, 1 ms each and
        // a busy machine's scheduling on top.
        if lat99 <= 200_000.0 {
            return Err(format!("latency p99 {lat99} us: the stall is not in it"));
        }
        if svc99 >= 20_000.0 {
            return Err(format!(
                "service p99 {svc99} us: the stall leaked into service time"
            ));
        }
        Ok(())
    });
}

/// The flags that make the generator punctual: SCHED_FIFO, the CPUs kept
/// out of their halting idle state, and the last 50 us before each
/// intended start spun (docs/explanations/measurement.md section 2).
const PUNCTUAL: [&str; 4] = ["--realtime", "--awake", "--spin", "50us"];

/// The bound on the send lag at 10,000/s: p99 under 100 us (and
/// the median under 50 us). With `--spin 30us` but not `--awake`, the
/// runs here gave 60 to 115 us at p99: a halted virtual CPU first waits
/// for the host to run it again. With all three, 7 to 66 us, and now and
/// then a run of 0.5 ms when the host takes the machine's cores.
const LAG_P50_US: f64 = 50.0;
const LAG_P99_US: f64 = 100.0;

/// The generator alone (the null target completes in process) at
/// 10,000/s: operations leave within the bound of their intended
/// starts. A timer of a millisecond's resolution, or a lag not taken from
/// the intended start, misses it by a factor of ten.
#[test]
#[ignore = "timing: scripts/test runs these alone, after the suite"]
fn the_open_loop_sends_on_time_at_ten_thousand_a_second() {
    let _one = one_at_a_time();
    measure("send lag at 10,000/s", || {
        let mut args = vec!["--rate", "10000", "-c", "16", "--duration", "5"];
        args.extend(PUNCTUAL);
        let report = report_of(&["voter", "--target", "null://"], &args);
        assert_eq!(report["spec"]["realtime"], true);
        assert_eq!(report["spec"]["awake"], true);
        lag_within(&report, 50_000, LAG_P50_US, LAG_P99_US)
    });
}

/// The same over sockets, to the reference server: its 16 threads and
/// the client's two share the machine's two cores, and each reply wakes
/// a client thread that may be due to send.
#[test]
#[ignore = "timing: scripts/test runs these alone, after the suite"]
fn the_open_loop_sends_on_time_to_a_server() {
    let _one = one_at_a_time();
    measure("send lag at 10,000/s to a server", || {
        let server = DelayServer::start(Delays::Fixed(Duration::ZERO));
        let mut args = vec!["--rate", "10000", "-c", "16", "--duration", "5"];
        args.extend(PUNCTUAL);
        let r = run(server.port, &args);
        lag_within(&r, 50_000, LAG_P50_US, LAG_P99_US)
    });
}

/// The flags are what the run did: the header says so, the report's spec
/// keeps them, and every operation's send lag is recorded. (This suite
/// runs as root; elsewhere `--realtime` is refused with exit 2.)
#[test]
fn punctual_runs_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut args = vec![
        "run",
        "voter",
        "-t",
        "null://",
        "--rate",
        "2000",
        "-n",
        "400",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(PUNCTUAL);
    let r = loadrig(&args);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        r.stdout
            .contains("open loop 2,000/s regular (SCHED_FIFO, CPUs awake, spin 50.0us)"),
        "{}",
        r.dump()
    );
    let report = json(&out);
    assert_eq!(report["spec"]["realtime"], true);
    assert_eq!(report["spec"]["awake"], true);
    let spin = report["spec"]["spin_secs"].as_f64().unwrap();
    assert!((spin - 50e-6).abs() < 1e-12, "{spin}");
    assert_eq!(kind(&report)["send_lag"]["count"], 400);
}

/// The send lag of the run's one kind: at least `count` recorded, the
/// median under `p50` us and p99 under `p99` us.
fn lag_within(report: &Value, count: u64, p50: f64, p99: f64) -> Check {
    let lag = &kind(report)["send_lag"];
    assert!(
        lag["count"].as_u64().unwrap() >= count - count / 50,
        "{lag}"
    );
    let (m, t) = (us(&lag["p50_us"]), us(&lag["p99_us"]));
    if m >= p50 || t >= p99 {
        return Err(format!("send lag p50 {m} us, p99 {t} us"));
    }
    Ok(())
}

/// An idle real Redis at 2,000/s: latency minus service time at the
/// median is what the generator adds (its send lag): under 100 us, where
/// tokio's timer alone would add up to a millisecond.
#[test]
#[ignore = "timing: scripts/test runs these alone, after the suite"]
fn an_idle_redis_in_the_open_loop_adds_little_to_latency() {
    let _one = one_at_a_time();
    need_server("redis", 6379);
    let _h = hold("redis");
    measure("idle redis", || {
        let r = run(
            6379,
            &[
                "--rate",
                "2000",
                "-c",
                "4",
                "--duration",
                "3",
                "--no-verify",
            ],
        );
        let k = kind(&r);
        assert!(k["send_lag"]["count"].as_u64().unwrap() > 0);
        let gap = us(&k["latency"]["p50_us"]) - us(&k["service"]["p50_us"]);
        if gap >= 100.0 {
            return Err(format!("latency p50 - service p50 = {gap} us"));
        }
        Ok(())
    });
}
