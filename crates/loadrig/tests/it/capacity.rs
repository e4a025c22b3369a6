//! `loadrig capacity` and `loadrig ab`, end to end with the real binary.
//! Capacity against a reference server whose capacity is known: one
//! worker with a fixed service time behind one queue (`Delays::Queue`),
//! loaded with Poisson arrivals, is an M/D/1 queue, whose waiting time
//! has a closed form (Crommelin 1932; [`md1_wait_cdf`]), so the highest
//! rate at which its p99 meets the SLO is computed, not guessed. Then the
//! real Redis (GET, verified), the search's edges (the lowest rate
//! failing, a run line that sets the rate), and A/B: identical command
//! lines, and a server 10% slower. The tests take one lock: each loads
//! the machine, and a search timed on a machine shared with another
//! search would find the machine's capacity, not the server's.

use std::path::Path;
use std::time::Duration;

use crate::common::delayed::{DelayServer, Delays};
use crate::common::{loadrig, redis_db, signal, Run, Running};

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// P(W <= t) for the waiting time W of an M/D/1 queue (arrival rate
/// `lam`, service time `d`, lam * d < 1), Crommelin's formula:
/// (1 - rho) * sum over k = 0..floor(t/d) of (lam (k d - t))^k / k! *
/// e^(lam (t - k d)). The sum alternates; for t/d up to about 20 it
/// stays well within f64.
fn md1_wait_cdf(t: f64, lam: f64, d: f64) -> f64 {
    let mut sum = 0.0;
    let mut k = 0u32;
    while f64::from(k) * d <= t {
        let kf = f64::from(k);
        let fact: f64 = (1..=k).map(f64::from).product();
        sum += (lam * (kf * d - t)).powi(k as i32) / fact * (lam * (t - kf * d)).exp();
        k += 1;
    }
    (1.0 - lam * d) * sum
}

/// The highest arrival rate at which the M/D/1 queue's p99 response time
/// (wait plus service) is at most `slo`: by bisection, P(W <= slo - d)
/// falling as the rate rises.
fn md1_capacity(slo: f64, d: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, 1.0 / d);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if md1_wait_cdf(slo - d, mid, d) >= 0.99 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

#[test]
fn the_md1_formula_gives_the_known_figures() {
    // No queue at all below one arrival per service time's worth: the
    // wait is 0 with probability 1 - rho.
    assert!((md1_wait_cdf(0.0, 500.0, 0.001) - 0.5).abs() < 1e-12);
    // Mean wait rho d / (2 (1 - rho)) (Pollaczek-Khinchine), against the
    // CDF integrated: at rho 0.5, d 1 ms, 0.5 ms.
    let (lam, d) = (500.0, 0.001);
    let step = 1e-6;
    let mean: f64 = (0..40_000)
        .map(|i| 1.0 - md1_wait_cdf(f64::from(i) * step, lam, d))
        .sum::<f64>()
        * step;
    assert!((mean - 0.0005).abs() < 0.00001, "{mean}");
    let cap = md1_capacity(0.010, 0.001);
    assert!((cap - 773.5).abs() < 1.0, "{cap}");
}

/// `capacity N/s (LO to HI/s) at ...` from the output: N, LO and HI.
fn answer(r: &Run) -> (f64, f64, f64) {
    let line = r
        .stdout
        .lines()
        .find(|l| l.starts_with("capacity "))
        .unwrap_or_else(|| panic!("no answer line:\n{}", r.dump()));
    let num = |s: &str| -> f64 {
        s.trim_end_matches("/s")
            .replace(',', "")
            .parse()
            .unwrap_or_else(|_| panic!("'{s}' in '{line}'"))
    };
    let words: Vec<&str> = line
        .split([' ', '(', ')'])
        .filter(|w| !w.is_empty())
        .collect();
    (num(words[1]), num(words[2]), num(words[4]))
}

/// The folder holds the probes' reports, one per CSV row, the curve
/// with its knee, and the page with the answer.
fn check_folder(dir: &Path, r: &Run) {
    let csv = std::fs::read_to_string(dir.join("capacity.csv")).unwrap();
    let rows = csv.lines().count() - 1;
    let reports = std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            let name = name.to_string_lossy();
            name.starts_with("probe-") && name.ends_with(".json")
        })
        .count();
    assert!(
        rows >= 2 && rows == reports,
        "{rows} rows, {reports} reports:\n{}",
        r.dump()
    );
    let svg = std::fs::read_to_string(dir.join("capacity.svg")).unwrap();
    assert!(svg.contains("Latency against throughput"), "{svg}");
    assert!(svg.contains("knee: capacity"), "no knee in the curve");
    let html = std::fs::read_to_string(dir.join("capacity.html")).unwrap();
    let line = r
        .stdout
        .lines()
        .find(|l| l.starts_with("capacity "))
        .unwrap();
    let escaped = line.replace('<', "&lt;").replace('>', "&gt;");
    assert!(
        html.contains(&escaped),
        "the page lacks the answer '{line}'"
    );
    assert!(html.contains("<svg"), "the page lacks the curve");
}

/// One search against an M/D/1 server of `service` per command: the
/// run, and the most the server's own replies left late.
fn md1_search(service: Duration, slo: &str, seed: &str, dir: &Path) -> (Run, Duration) {
    let server = DelayServer::start(Delays::Queue(service));
    let target = format!("redis://127.0.0.1:{}", server.port);
    let r = loadrig(&[
        "capacity",
        "--slo",
        slo,
        "--from",
        "200",
        "--resolution",
        "10%",
        "--probe-duration",
        "8s",
        "--warmup",
        "0.5s",
        "--seed",
        seed,
        "--dir",
        dir.to_str().unwrap(),
        "--",
        "run",
        "redis",
        "-t",
        &target,
        "--tests",
        "get",
        "--arrival",
        "poisson",
        // Eight connections, 32 commands in flight on each: a command
        // waiting for its connection would join the queue late, at its
        // back, and make a tail of its own (64 connections of one each
        // found 11% below the formula).
        "-c",
        "8",
        "-P",
        "32",
    ]);
    (r, server.late())
}

/// 2 ms of service and p99 under 20 ms: 386.7/s by the formula, at a
/// load of 0.77. Why these: the p99 of a few seconds of a queue near
/// saturation is itself noisy (its busy periods last long), so a probe
/// must hold many of them (8 s of about 3,000 commands); and the client's
/// own latency (a debug build on two busy shared cores adds 1.5 to 3 ms
/// at p99) counts against the SLO, so the SLO is ten service times long,
/// where 2 ms of it costs 2% of the rate. Simulating this search 40 times
/// (Lindley's recursion, the same probes and bisection) puts 38 within
/// 10% of the formula.
#[test]
#[ignore = "timing: scripts/test runs these alone, after the suite"]
fn capacity_finds_the_md1_queues_rate_within_a_tenth() {
    let _one = one_at_a_time();
    let service = Duration::from_millis(2);
    let want = md1_capacity(0.020, service.as_secs_f64());
    // A miss is tried again with another seed (the same seed would
    // repeat its arrivals), up to three times: a machine shared with
    // builds stalls the client or the server now and then (a 200/s probe
    // at a load of 0.4 once showed p99 57 ms with the formula's 6 ms),
    // while a fault in the search or the judging misses every time.
    let mut misses: Vec<String> = Vec::new();
    for seed in ["1", "2", "3"] {
        let dir = tempfile::tempdir().unwrap();
        let (r, late) = md1_search(service, "p99<20ms", seed, dir.path());
        if r.code != 0 {
            misses.push(format!(
                "seed {seed}: the server up to {late:?} late\n{}",
                r.dump()
            ));
            continue;
        }
        let (got, lo, hi) = answer(&r);
        assert!(lo <= got && got <= hi, "{}", r.dump());
        check_folder(dir.path(), &r);
        println!("M/D/1: capacity {got}/s ({lo} to {hi}), the formula {want:.1}/s");
        if (got - want).abs() <= 0.10 * want {
            return;
        }
        misses.push(format!(
            "seed {seed}: capacity {got}/s, M/D/1 says {want:.1}/s, the server up to {late:?} late:\n{}",
            r.dump()
        ));
    }
    panic!("three misses:\n{}", misses.join("\n"));
}

#[test]
fn capacity_of_redis_get_is_a_verified_figure_with_its_curve() {
    let _one = one_at_a_time();
    let db = redis_db();
    let dir = tempfile::tempdir().unwrap();
    let r = loadrig(&[
        "capacity",
        "--slo",
        "p99<20ms",
        "--slo",
        "error_rate<0.001",
        "--from",
        "500",
        "--resolution",
        "20%",
        "--probe-duration",
        "1s",
        "--warmup",
        "0.5s",
        "--dir",
        dir.path().to_str().unwrap(),
        "--",
        "run",
        "redis",
        "-t",
        "redis://127.0.0.1:6379",
        "--dbnum",
        db.arg,
        "--tests",
        "get",
        // 32 connections: at 500/s each sends every 64 ms, so a send 6 ms
        // late is still punctual (the verdict's 10%) on a machine busy
        // with the suite; with 8, 1.6 ms was too tight for it.
        "-c",
        "32",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let line = r
        .stdout
        .lines()
        .find(|l| l.starts_with("capacity "))
        .unwrap();
    assert!(line.ends_with(", verified"), "{line}");
    assert!(line.contains("at p99<20ms and error_rate<0.001"), "{line}");
    let (got, lo, hi) = answer(&r);
    assert!(
        lo >= 500.0 && lo <= got && got <= hi && hi / lo <= 1.2,
        "{}",
        r.dump()
    );
    check_folder(dir.path(), &r);
    // The page, in a real headless Chromium: the answer, the curve, no
    // console error.
    let (dom, log) = crate::plot::chromium(
        &dir.path().join("profile"),
        &["--dump-dom".to_string()],
        &dir.path().join("capacity.html"),
    );
    let shown = line.trim().replace('<', "&lt;");
    assert!(dom.contains(&shown), "{shown} not in the page:\n{dom}");
    assert!(dom.contains("<polyline"), "no curve in the page:\n{dom}");
    for bad in ["Uncaught", "ERROR:CONSOLE", ":CONSOLE("] {
        assert!(
            !log.contains(bad),
            "console error in chromium's log:\n{log}"
        );
    }
}

#[test]
fn the_lowest_rate_failing_and_a_run_line_setting_the_rate_are_told_apart() {
    let _one = one_at_a_time();
    // 1 ms per command: 2,000/s is twice what it can serve.
    let server = DelayServer::start(Delays::Queue(Duration::from_millis(1)));
    let target = format!("redis://127.0.0.1:{}", server.port);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let run = [
        "--", "run", "redis", "-t", &target, "--tests", "get", "-c", "16",
    ];
    let mut args = vec!["capacity", "--slo", "p99<10ms", "--from", "2000"];
    args.extend(["--probe-duration", "1s", "--warmup", "0s", "--dir", d]);
    args.extend(run);
    let r = loadrig(&args);
    assert_eq!(r.code, 1, "{}", r.dump());
    assert!(
        r.stdout
            .contains("no capacity at p99<10ms: even 2,000/s fails (p99<10ms"),
        "{}",
        r.dump()
    );
    let mut twice = vec!["capacity", "--slo", "p99<10ms", "--dir", d];
    twice.extend(run);
    twice.extend(["--rate", "10"]);
    let r = loadrig(&twice);
    assert_eq!(r.code, 2, "{}", r.dump());
    assert!(
        r.stderr.contains("the run line gives --rate"),
        "{}",
        r.dump()
    );
    let r = loadrig(&["capacity", "--slo", "p99<", "--", "run", "redis"]);
    assert_eq!(r.code, 2, "{}", r.dump());
}

/// Ctrl-C during the second probe: the first probe's report stays, the
/// table, curve and page are written from what is done, and the answer
/// says what is known, exit 1.
#[test]
fn ctrl_c_keeps_the_probes_done_and_says_what_they_show() {
    let _one = one_at_a_time();
    let server = DelayServer::start(Delays::Queue(Duration::from_millis(1)));
    let target = format!("redis://127.0.0.1:{}", server.port);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let run = Running::start(&[
        "capacity",
        // An SLO a busy machine meets: the test is about the signal.
        "--slo",
        "p99<1s",
        "--from",
        "100",
        "--probe-duration",
        "2s",
        "--warmup",
        "0s",
        "--dir",
        d,
        "--",
        "run",
        "redis",
        "-t",
        &target,
        "--tests",
        "get",
    ]);
    let first = dir.path().join("probe-01-100.json");
    let began = std::time::Instant::now();
    while !first.exists() {
        assert!(began.elapsed() < Duration::from_secs(30), "no first probe");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Into the second probe's load.
    std::thread::sleep(Duration::from_millis(1000));
    signal("-INT", run.id());
    let r = run.finish();
    assert_eq!(r.code, 1, "{}", r.dump());
    assert!(
        r.stdout
            .contains("interrupted: capacity at least 100/s at p99<1s"),
        "{}",
        r.dump()
    );
    assert!(r.stdout.contains("interrupted"), "{}", r.dump());
    assert!(first.exists() && dir.path().join("probe-02-200.json").exists());
    let csv = std::fs::read_to_string(dir.path().join("capacity.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
}

/// `loadrig ab` on the GET test of two servers, closed loop, one second
/// per run: 40 connections, so that a run holds the 1,000 samples its p99
/// needs to be a valid measurement.
fn ab(a: u16, b: u16, dir: &Path) -> Run {
    let line = |port: u16| {
        [
            "run".to_string(),
            "redis".into(),
            "-t".into(),
            format!("redis://127.0.0.1:{port}"),
            "--tests".into(),
            "get".into(),
            "-c".into(),
            "40".into(),
            "-d".into(),
            "1s".into(),
        ]
    };
    let mut args: Vec<String> = ["ab", "--rounds", "5", "--threshold", "5%", "--dir"]
        .map(String::from)
        .to_vec();
    args.push(dir.to_str().unwrap().into());
    args.push("--".into());
    args.extend(line(a));
    args.push("--".into());
    args.extend(line(b));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = loadrig(&args);
    // The figures, for `--nocapture`.
    for l in r.stdout.lines().filter(|l| l.starts_with("B/A")) {
        println!("{l}");
    }
    r
}

#[test]
fn ab_of_two_identical_lines_finds_no_regression() {
    let _one = one_at_a_time();
    let server = DelayServer::start(Delays::Fixed(Duration::from_millis(20)));
    let dir = tempfile::tempdir().unwrap();
    let r = ab(server.port, server.port, dir.path());
    assert!(r.code == 0 || r.code == 11, "{}", r.dump());
    assert!(
        r.stdout.contains("PASS") || r.stdout.contains("INCONCLUSIVE"),
        "{}",
        r.dump()
    );
    // Rounds alternate which line goes first, and every run is kept.
    assert!(r.stdout.contains("round 1 (A first)") && r.stdout.contains("round 2 (B first)"));
    assert!(dir.path().join("round-05-B.json").exists(), "{}", r.dump());
}

/// Caught by hand: `verdict` taking throughput as lower-is-better passed
/// this B (B/A 0.925, "PASS").
#[test]
#[ignore = "timing: scripts/test runs these alone, after the suite"]
fn ab_fails_a_server_a_tenth_slower() {
    let _one = one_at_a_time();
    // 20 ms against 22 ms: the client's own fraction of a millisecond per
    // operation dilutes the 10% less than it would at 5 ms (where B/A
    // came out 0.925, its interval's far end 6% worse, too near 5%).
    let a = DelayServer::start(Delays::Fixed(Duration::from_millis(20)));
    let b = DelayServer::start(Delays::Fixed(Duration::from_millis(22)));
    let dir = tempfile::tempdir().unwrap();
    let r = ab(a.port, b.port, dir.path());
    assert_eq!(r.code, 10, "{}", r.dump());
    assert!(
        r.stdout.contains("FAIL: B is worse than A by more than 5%"),
        "{}",
        r.dump()
    );
}
