//! What a rate counts: completed operations only, failures beside them and
//! never in them; warm-up apart from the measurement; and no line in a
//! peer's format (redis-benchmark's `-q` and CSV, wrk's `Requests/sec`)
//! carries a rate for operations that failed beyond the error gate. A
//! server that wants a login stops the run before the load, as
//! redis-benchmark does.

use crate::common::{loadrig, run_reported};
use crate::redis::{own_redis, own_redis_with};

/// A run whose every request fails: throughput 0 in the report and the
/// overall line, wrk's block without its rate lines, one line saying why.
#[test]
fn a_run_failing_every_operation_has_no_rate() {
    crate::common::need_server("nginx", 8088);
    let (r, report) = run_reported(&[
        "run",
        "http",
        "-n",
        "400",
        "-c",
        "2",
        "http://127.0.0.1:8088/no-such-file",
    ]);
    assert_eq!(r.code, 1, "{}", r.dump());
    let m = &report.measured;
    assert_eq!((m.ops, m.ok, m.errors), (400, 0, 400), "{}", r.dump());
    assert_eq!(m.throughput, 0.0, "{}", r.dump());
    assert!(
        r.stdout.contains("\noverall: 0/s  100.00% fails"),
        "{}",
        r.dump()
    );
    assert!(!r.stdout.contains("Requests/sec"), "{}", r.dump());
    assert!(!r.stdout.contains("Transfer/sec"), "{}", r.dump());
    assert!(
        r.stdout
            .contains("no rate in the peer's format: 100.00% of the operations failed"),
        "{}",
        r.dump()
    );
    // Let through by the gate, the failures still count in no rate.
    let (r, report) = run_reported(&[
        "run",
        "http",
        "-n",
        "50",
        "-c",
        "1",
        "--max-error-rate",
        "1",
        "http://127.0.0.1:8088/no-such-file",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_eq!(report.measured.throughput, 0.0);
    assert!(
        r.stdout.contains("\nRequests/sec:      0.00\n"),
        "{}",
        r.dump()
    );
}

/// A test of redis-benchmark's whose every request fails prints no `-q`
/// line and no CSV row; the others do, with rates of their successes.
#[test]
fn a_failing_redis_test_prints_no_rate_line() {
    let server = own_redis();
    let port = server.port.to_string();
    // INCR of a value that is not a number fails: SET, then INCR, with
    // `output` (-q or --csv).
    let poisoned = |output: &str| {
        let out = std::process::Command::new("redis-cli")
            .args(["-p", &port, "set", "counter:__rand_int__", "abc"])
            .output()
            .unwrap();
        assert!(out.status.success());
        loadrig(&[
            "redis-benchmark",
            "-p",
            &port,
            "-t",
            "set,incr",
            "-n",
            "500",
            output,
        ])
    };
    let q = poisoned("-q");
    assert_eq!(q.code, 1, "{}", q.dump());
    let lines: Vec<&str> = q.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{}", q.dump());
    assert!(lines[0].starts_with("SET: "), "{}", q.dump());
    assert!(
        q.stderr.contains(
            "INCR: 100.00% of 500 requests failed (ERR), more than --max-error-rate allows: no rate"
        ),
        "{}",
        q.dump()
    );
    let csv = poisoned("--csv");
    assert_eq!(csv.code, 1, "{}", csv.dump());
    let rows: Vec<&str> = csv.stdout.lines().collect();
    assert_eq!(rows.len(), 2, "{}", csv.dump());
    assert!(rows[1].starts_with("\"SET\","), "{}", csv.dump());
}

/// A server that wants a password, given none: one line, the target's
/// exit code (3), nothing on standard output, before any load.
#[test]
fn a_server_that_wants_a_login_stops_the_run_before_the_load() {
    let server = own_redis_with(&["--requirepass", "Zq7s3cret"]);
    let port = server.port.to_string();
    let r = loadrig(&[
        "redis-benchmark",
        "-p",
        &port,
        "-t",
        "set,get",
        "-n",
        "500",
        "-q",
    ]);
    assert_eq!(r.code, 3, "{}", r.dump());
    assert_eq!(r.stdout, "", "{}", r.dump());
    let errors: Vec<&str> = r.stderr.lines().filter(|l| l.contains("error: ")).collect();
    assert_eq!(errors.len(), 1, "{}", r.dump());
    assert!(errors[0].contains("NOAUTH"), "{}", r.dump());
    // Stopped at prepare: no load ran.
    assert!(r.stderr.contains("prepare ... error: "), "{}", r.dump());
    assert!(!r.stderr.contains(" run ..."), "{}", r.dump());
}

/// `-n` counts the measured operations; the warm-up's are reported apart
/// and are in neither the count nor the rate.
#[test]
fn warm_up_operations_are_not_measured() {
    let (r, report) = run_reported(&[
        "run", "voter", "--target", "null://", "-n", "2000", "--rate", "4000", "--warmup", "0.5",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let (w, m) = (&report.warmup, &report.measured);
    assert_eq!((m.ops, m.ok), (2000, 2000), "{}", r.dump());
    // Half a second at 4,000/s.
    assert!(
        (1500..=2500).contains(&w.ops),
        "warm-up {}: {}",
        w.ops,
        r.dump()
    );
    // 2,000 at 4,000/s take half a second: a rate that counted the
    // warm-up would be twice that.
    assert!(
        (3000.0..=4400.0).contains(&m.throughput),
        "throughput {}: {}",
        m.throughput,
        r.dump()
    );
    let spans: u64 = m.spans.iter().map(|s| s.count).sum();
    let warm: u64 = w.spans.iter().map(|s| s.count).sum();
    assert_eq!((spans, warm), (2000, w.ops), "{}", r.dump());
}
