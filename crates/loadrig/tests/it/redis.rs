//! The redis workload on the real Redis (started by `scripts/services up
//! redis` on 6379): every redis-benchmark test name, the CSV against
//! redis-benchmark's own header, pipelining, error replies counted by
//! class, a value changed behind the client's back, and servers that
//! answer garbage.
//!
//! Each test uses its own logical database (`--dbnum`), so they run in
//! parallel without touching each other's keys.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use loadrig_engine::rng::mix64;
use loadrig_spec::{RedisSpec, WorkloadSpec};
use loadrig_workloads::redis::mix::Mix;

use crate::common::{json, loadrig, need_server, own_server, with_refused_port, OwnServer, Run};

const URL: &str = "redis://127.0.0.1:6379";

/// Run commands on the real server's database `db`, one reply line each
/// (enough for the simple replies the tests need).
fn redis(db: u32, commands: &[&[&str]]) -> Vec<String> {
    need_server("redis", 6379);
    redis_on(6379, db, commands)
}

/// [`redis`] on the server at `port`.
fn redis_on(port: u16, db: u32, commands: &[&[&str]]) -> Vec<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let select = db.to_string();
    let first = ["SELECT", select.as_str()];
    let mut all: Vec<&[&str]> = vec![&first];
    all.extend_from_slice(commands);
    let mut out = Vec::new();
    for c in &all {
        out.extend_from_slice(format!("*{}\r\n", c.len()).as_bytes());
        for part in c.iter() {
            out.extend_from_slice(format!("${}\r\n{part}\r\n", part.len()).as_bytes());
        }
    }
    s.write_all(&out).unwrap();
    let mut r = BufReader::new(s);
    let mut replies = Vec::new();
    for _ in &all {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        if let Some(n) = line
            .strip_prefix('$')
            .and_then(|n| n.trim().parse::<usize>().ok())
        {
            let mut body = vec![0u8; n + 2];
            r.read_exact(&mut body).unwrap();
            line = String::from_utf8_lossy(&body[..n]).into_owned();
        }
        replies.push(line.trim_end().to_string());
    }
    replies.remove(0);
    replies
}

/// `loadrig run redis` on the real server's database `db` (its
/// `--dbnum`), with `args` after.
fn run_redis(db: &str, args: &[&str]) -> Run {
    let mut all = vec!["run", "redis", "--target", URL, "--dbnum", db];
    all.extend_from_slice(args);
    loadrig(&all)
}

fn flush(db: u32) {
    assert_eq!(redis(db, &[&["FLUSHDB"]]), ["+OK"]);
}

/// Every name `-t` takes, alone, with the titles redis-benchmark prints
/// for it, in its order.
#[test]
fn every_redis_benchmark_test_runs() {
    let db = crate::common::redis_db();
    need_server("redis", 6379);
    flush(db.n);
    let cases: &[(&str, &[&str])] = &[
        ("ping_inline", &["PING_INLINE"]),
        ("ping_mbulk", &["PING_MBULK"]),
        ("ping", &["PING_INLINE", "PING_MBULK"]),
        ("set", &["SET"]),
        ("get", &["GET"]),
        ("incr", &["INCR"]),
        ("lpush", &["LPUSH"]),
        ("rpush", &["RPUSH"]),
        ("lpop", &["LPOP"]),
        ("rpop", &["RPOP"]),
        ("sadd", &["SADD"]),
        ("hset", &["HSET"]),
        ("spop", &["SPOP"]),
        ("zadd", &["ZADD"]),
        ("zpopmin", &["ZPOPMIN"]),
        (
            "lrange_100",
            &[
                "LPUSH (needed to benchmark LRANGE)",
                "LRANGE_100 (first 100 elements)",
            ],
        ),
        (
            "lrange_300",
            &[
                "LPUSH (needed to benchmark LRANGE)",
                "LRANGE_300 (first 300 elements)",
            ],
        ),
        (
            "lrange_500",
            &[
                "LPUSH (needed to benchmark LRANGE)",
                "LRANGE_500 (first 450 elements)",
            ],
        ),
        (
            "lrange_600",
            &[
                "LPUSH (needed to benchmark LRANGE)",
                "LRANGE_600 (first 600 elements)",
            ],
        ),
        (
            "LRANGE",
            &[
                "LPUSH (needed to benchmark LRANGE)",
                "LRANGE_100 (first 100 elements)",
                "LRANGE_300 (first 300 elements)",
                "LRANGE_500 (first 450 elements)",
                "LRANGE_600 (first 600 elements)",
            ],
        ),
        ("mset", &["MSET (10 keys)"]),
        ("xadd", &["XADD"]),
    ];
    for (name, titles) in cases {
        let r = run_redis(db.arg, &["--tests", name, "-n", "700", "-c", "7", "-q"]);
        assert_eq!(r.code, 0, "-t {name}: {}", r.dump());
        let lines: Vec<&str> = r
            .stdout
            .lines()
            .filter(|l| l.contains(" requests per second, p50="))
            .collect();
        assert_eq!(lines.len(), titles.len(), "-t {name}: {}", r.dump());
        for (l, t) in lines.iter().zip(titles.iter()) {
            assert!(l.starts_with(&format!("{t}: ")), "-t {name}: {l}");
        }
        // As redis-benchmark -q: those lines alone on standard output.
        assert_eq!(
            r.stdout.lines().count(),
            titles.len(),
            "-t {name}: {}",
            r.dump()
        );
        assert!(r.stderr.contains("verify ... "), "-t {name}: {}", r.dump());
        assert!(!r.stderr.contains("FAILED"), "-t {name}: {}", r.dump());
    }
    // Every test in one run, with random keys: one report, one kind per
    // test with its own time, verified against the server, then cleaned up.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("all.json");
    let r = run_redis(
        db.arg,
        &[
            "-n",
            "3000",
            "-r",
            "500",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stderr.contains("verify ... ok ("), "{}", r.dump());
    assert!(
        r.stderr.contains("key:* written, all there"),
        "{}",
        r.dump()
    );
    let report = json(&out);
    let kinds = report["measured"]["kinds"].as_array().unwrap();
    assert_eq!(kinds.len(), 21);
    for k in kinds {
        assert_eq!(k["ok"], 3000, "{k}");
        assert!(k["elapsed_secs"].as_f64().unwrap() > 0.0, "{k}");
    }
    assert_eq!(report["spec"]["workload"]["name"], "redis");
    assert_eq!(report["spec"]["load"]["clients"], 50);
    assert!(report["environment"]["server_version"]
        .as_str()
        .unwrap()
        .starts_with("Redis "));
    assert_eq!(
        redis(db.n, &[&["DBSIZE"]]),
        [":0"],
        "cleaned up after the run"
    );
}

/// `--csv`: exactly redis-benchmark's header (asked of redis-benchmark
/// itself), then one row per test of eight quoted fields.
#[test]
fn csv_is_redis_benchmarks() {
    let db = crate::common::redis_db();
    need_server("redis", 6379);
    flush(db.n);
    let theirs = Command::new("redis-benchmark")
        .args(["-t", "get", "-n", "1000", "--csv", "--dbnum", db.arg])
        .output()
        .expect("redis-benchmark runs (scripts/services up redis installs redis-tools)");
    let theirs = String::from_utf8_lossy(&theirs.stdout);
    let header = theirs.lines().next().unwrap();
    let r = run_redis(
        db.arg,
        &["--tests", "set,get,lrange_100", "-n", "2000", "--csv"],
    );
    assert_eq!(r.code, 0, "{}", r.dump());
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines[0], header, "{}", r.dump());
    assert_eq!(lines.len(), 5, "{}", r.dump());
    let titles: Vec<String> = lines[1..]
        .iter()
        .map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            assert_eq!(fields.len(), 8, "{l}");
            assert!(
                fields
                    .iter()
                    .all(|f| f.starts_with('"') && f.ends_with('"')),
                "{l}"
            );
            for f in &fields[1..] {
                let v: f64 = f
                    .trim_matches('"')
                    .parse()
                    .unwrap_or_else(|_| panic!("{l}"));
                assert!(v >= 0.0, "{l}");
            }
            let rps: f64 = fields[1].trim_matches('"').parse().unwrap();
            assert!(rps > 0.0, "{l}");
            fields[0].trim_matches('"').to_string()
        })
        .collect();
    assert_eq!(
        titles,
        [
            "SET",
            "GET",
            "LPUSH (needed to benchmark LRANGE)",
            "LRANGE_100 (first 100 elements)"
        ]
    );
    // The human output went to standard error.
    assert!(r.stderr.contains("SET: "), "{}", r.dump());
    flush(db.n);
}

/// `-P 16`: sixteen requests in flight per client, each answered in order
/// and verified.
#[test]
fn pipelined_sixteen_deep() {
    let db = crate::common::redis_db();
    need_server("redis", 6379);
    flush(db.n);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p16.json");
    let r = run_redis(
        db.arg,
        &[
            "--tests",
            "set,get,incr,lpush,lpop",
            "-P",
            "16",
            "-n",
            "50000",
            "-r",
            "1000",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.contains("pipeline 16"), "{}", r.dump());
    assert!(r.stdout.contains("verify ... ok ("), "{}", r.dump());
    assert!(
        r.stdout.contains("GET: 50,000 hits, 0 misses"),
        "{}",
        r.dump()
    );
    let report = json(&out);
    assert_eq!(report["spec"]["load"]["pipeline"], 16);
    assert_eq!(report["measured"]["ok"], 250_000);
    assert_eq!(report["measured"]["errors"], 0);
    assert_eq!(redis(db.n, &[&["DBSIZE"]]), [":0"]);
}

/// An error reply is a server error counted by its class; a value
/// changed behind the client's back fails verification.
#[test]
fn error_replies_and_changed_values() {
    let db = crate::common::redis_db();
    need_server("redis", 6379);
    flush(db.n);
    // GET on a list: WRONGTYPE for every request.
    redis(db.n, &[&["RPUSH", "key:__rand_int__", "a"]]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("wrongtype.json");
    let args = [
        "run",
        "redis",
        "--target",
        URL,
        "--dbnum",
        db.arg,
        "--tests",
        "get",
        "-n",
        "500",
        "-c",
        "5",
        "--out",
        out.to_str().unwrap(),
        // Counted, not a failed run: the default gate is 1%.
        "--max-error-rate",
        "1",
    ];
    let r = loadrig(&args);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        r.stdout.contains("errors: GET: server WRONGTYPE 500"),
        "{}",
        r.dump()
    );
    let report = json(&out);
    let get = &report["measured"]["kinds"][0];
    assert_eq!(
        get["server_errors"],
        serde_json::json!([["WRONGTYPE", 500]])
    );
    assert_eq!(get["ok"], 0);
    // Every request failed: the default gate fails the run, and says so.
    let gated = loadrig(&args[..args.len() - 2]);
    assert_eq!(gated.code, 1, "{}", gated.dump());
    assert!(
        gated.stdout.contains("100.00% of the operations failed"),
        "{}",
        gated.dump()
    );

    // A value that is not the one loadrig writes: every GET reads it.
    redis(
        db.n,
        &[
            &["DEL", "key:__rand_int__"],
            &["SET", "key:__rand_int__", "changed"],
        ],
    );
    let r = run_redis(db.arg, &["--tests", "get", "-n", "300", "-c", "3"]);
    assert_eq!(r.code, 1, "{}", r.dump());
    assert!(r.stdout.contains("verify ... FAILED ("), "{}", r.dump());
    assert!(r.stdout.contains("verification 300"), "{}", r.dump());
    // After a SET of this run's data, the same GETs pass.
    let r = run_redis(db.arg, &["--tests", "set,get", "-n", "300", "-c", "3"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.contains("GET: 300 hits, 0 misses"), "{}", r.dump());
    flush(db.n);
}

/// A fake server that answers every read with `garbage`.
fn garbage_server(garbage: &'static [u8]) -> (u16, Arc<AtomicBool>) {
    own_server(move |mut conn, _| {
        let mut buf = [0u8; 4096];
        while let Ok(n) = conn.read(&mut buf) {
            if n == 0 || conn.write_all(garbage).is_err() {
                return;
            }
        }
    })
}

/// Bytes that are not RESP, an absurd length, a bad element in an array:
/// each a protocol error on every request it hits, the connection
/// re-opened, the run finished, no panic. (An extra well-formed reply is
/// caught only when it arrives while nothing is in flight: RESP has no
/// request ids, so a FIFO client cannot tell it from the next answer.)
#[test]
fn garbage_from_the_server_is_a_protocol_error() {
    for garbage in [
        &b"?this is not RESP\r\n"[..],
        &b"$99999999999999\r\n"[..],
        &b"*2\r\n:1\r\n\x00\x01\xff\r\n"[..],
    ] {
        let (port, done) = garbage_server(garbage);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("garbage.json");
        let r = loadrig(&[
            "run",
            "redis",
            "--target",
            &format!("redis://127.0.0.1:{port}"),
            "--dbnum",
            "0",
            "--tests",
            "ping",
            "-n",
            "300",
            "-c",
            "1",
            "--timeout",
            "5",
            "--out",
            out.to_str().unwrap(),
        ]);
        done.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", port));
        let what = String::from_utf8_lossy(garbage);
        assert!(!r.stderr.contains("panicked"), "{what}: {}", r.dump());
        // Measured and reported; every operation failed, so the default
        // failure gate makes it exit 1.
        assert_eq!(r.code, 1, "{what}: {}", r.dump());
        assert!(
            r.stdout.contains("of the operations failed"),
            "{what}: {}",
            r.dump()
        );
        let report = json(&out);
        let protocol: u64 = report["measured"]["kinds"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|k| k["errors"].as_array().unwrap().clone())
            .filter(|e| e[0] == "protocol")
            .map(|e| e[1].as_u64().unwrap())
            .sum();
        assert!(protocol > 0, "{what}: {}", r.dump());
        assert_eq!(report["measured"]["ops"], 600, "{what}: {}", r.dump());
        assert!(
            report["measured"]["reconnects"].as_u64().unwrap() > 0,
            "{what}: {}",
            r.dump()
        );
    }
}

/// Nothing listening: exit 3 and one line naming the server.
#[test]
fn no_server_is_exit_3() {
    let (port, r) = with_refused_port(
        |port| {
            loadrig(&[
                "run",
                "redis",
                "--target",
                &format!("redis://127.0.0.1:{port}"),
                "-n",
                "10",
            ])
        },
        |r| r.code == 3,
    );
    assert_eq!(r.code, 3, "{}", r.dump());
    assert!(
        r.stderr
            .contains(&format!("127.0.0.1:{port}: connection refused")),
        "{}",
        r.dump()
    );
}

/// A second redis-server of the test's own, on a free port, keeping
/// nothing on disk.
pub(crate) fn own_redis() -> OwnServer {
    own_redis_with(&[])
}

/// [`own_redis`] with more arguments for redis-server.
pub(crate) fn own_redis_with(extra: &[&str]) -> OwnServer {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let cmd = |port: u16| {
        let mut cmd = Command::new("redis-server");
        // Protected mode off: loopback sources other than 127.0.0.1
        // (`loadrig --bind 127.0.0.2`) are refused otherwise.
        cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            // As many databases as the shared server (common::redis_db).
            .args(["--databases", "64"])
            .arg("--dir")
            .arg(&path)
            .args(extra);
        cmd
    };
    OwnServer::start(cmd, Some(dir), "scripts/services up redis")
}

/// A password shows nowhere: not in what the run prints, not in its
/// report, not on the command line of its `--processes` children (which
/// `ps` shows every user), read from /proc while they run.
#[test]
fn a_password_shows_nowhere_not_even_to_ps() {
    const SECRET: &str = "Zq7s3cretPw";
    let own = own_redis_with(&["--requirepass", SECRET]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let url = format!("redis://:{SECRET}@127.0.0.1:{}", own.port);
    let mut run = crate::common::Running::start(&[
        "run",
        "redis",
        "--tests",
        "set",
        "-d",
        "3",
        "--processes",
        "2",
        "--target",
        &url,
        "--out",
        out.to_str().unwrap(),
    ]);
    run.until(|l| l.starts_with("start at "));
    let parent = run.id();
    let t = std::time::Instant::now();
    let mut lines = Vec::new();
    while lines.len() < 2 && t.elapsed() < Duration::from_secs(20) {
        lines = crate::voter::children_of(parent)
            .into_iter()
            .filter_map(|c| std::fs::read(format!("/proc/{c}/cmdline")).ok())
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .collect();
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = run.finish();
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_eq!(lines.len(), 2, "the children's command lines: {lines:?}");
    for l in &lines {
        assert!(!l.contains(SECRET), "a child's command line: {l}");
    }
    assert!(!r.stdout.contains(SECRET), "{}", r.dump());
    assert!(!r.stderr.contains(SECRET), "{}", r.dump());
    assert!(r.stdout.contains(":***@127.0.0.1"), "{}", r.dump());
    let report = std::fs::read_to_string(&out).unwrap();
    assert!(!report.contains(SECRET), "the report holds the password");
    assert!(json(&out)["measured"]["ok"].as_u64().unwrap() > 0);
}

/// A Redis killed (-9, nothing persisted) and started again on its port
/// in the middle of a run by count: the keys written before the kill are
/// gone, far more than the writes that failed, and the verification says
/// so (exit 1), where it used to check only that some key was there.
#[test]
fn a_redis_killed_and_restarted_mid_run_fails_verification() {
    let own = own_redis();
    let port = own.port.to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut run = crate::common::Running::start(&[
        "run",
        "redis",
        "--tests",
        "set",
        "-r",
        "1000000",
        "-n",
        "20000",
        "--rate",
        "5000",
        "--timeout",
        "2",
        "--interval",
        "0.5",
        "--target",
        &format!("redis://127.0.0.1:{port}"),
        "--out",
        out.to_str().unwrap(),
    ]);
    run.until_first_lap();
    crate::common::signal("-KILL", own.pid());
    std::thread::sleep(Duration::from_millis(500));
    // Again on the same port, empty.
    let mut again = Command::new("redis-server")
        .args([
            "--port",
            &port,
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .arg("--dir")
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let r = run.finish();
    let _ = again.kill();
    let _ = again.wait();
    drop(own);
    assert_eq!(r.code, 1, "{}", r.dump());
    let report = crate::common::report(&out);
    let (expected, actual) =
        crate::common::check_of(&report, "keys written (SET/MSET) and missing").unwrap();
    assert_eq!(expected, 0);
    let failed = (report.measured.ops - report.measured.ok) as i64;
    assert!(
        actual > failed,
        "missing {actual}, failed {failed}\n{}",
        r.dump()
    );
    assert!(
        r.stdout
            .contains("(keys written (SET/MSET) and missing: expected 0 to "),
        "{}",
        r.dump()
    );
}

/// A run by time whose Redis is killed (no restart) after its first lap:
/// its connections give up after `--timeout`, the run ends early with
/// next to no error counted, and still it does not pass: the report
/// records the connections that gave up, and the run fails.
#[test]
fn a_run_by_time_that_lost_its_target_fails() {
    let own = own_redis();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut run = crate::common::Running::start(&[
        "run",
        "redis",
        "--tests",
        "get",
        "-d",
        "30",
        "--timeout",
        "1",
        "--interval",
        "0.5",
        "--target",
        &format!("redis://127.0.0.1:{}", own.port),
        "--out",
        out.to_str().unwrap(),
    ]);
    run.until_first_lap();
    crate::common::signal("-KILL", own.pid());
    let r = run.finish();
    assert!([1, 3].contains(&r.code), "{}", r.dump());
    let j = json(&out);
    assert!(
        j["measured"]["gave_up"].as_u64().unwrap_or(0) > 0,
        "{}",
        r.dump()
    );
    if r.code == 1 {
        assert!(
            r.stdout.contains("check failed: the target was lost: "),
            "{}",
            r.dump()
        );
    }
}

/// A signal after the load, while the verification waits on a server
/// that stopped answering (SIGSTOP; the verification's own deadline is
/// 12 x 20 s): the verification ends at once, not done, and the report
/// is still written, marked interrupted (exit 1). The server is stopped
/// when the load's last line is read; the verification of about 180,000
/// keys takes some 300 ms, so it is still reading then (with 2,000 keys
/// it took 2 ms, and on a busy machine it sometimes ended first).
#[test]
fn a_signal_during_a_stuck_verification_ends_it_with_the_report() {
    let own = own_redis();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut run = crate::common::Running::start(&[
        "run",
        "redis",
        "--tests",
        "set",
        "-r",
        "1000000",
        "-n",
        "200000",
        "--timeout",
        "20",
        "--target",
        &format!("redis://127.0.0.1:{}", own.port),
        "--out",
        out.to_str().unwrap(),
    ]);
    // redis-benchmark's line for the test: the load is over.
    run.until(|l| l.starts_with("SET: "));
    crate::common::signal("-STOP", own.pid());
    std::thread::sleep(Duration::from_millis(300));
    let t = std::time::Instant::now();
    crate::common::signal("-INT", run.id());
    let r = run.finish();
    crate::common::signal("-CONT", own.pid());
    assert!(t.elapsed() < Duration::from_secs(10), "{}", r.dump());
    assert_eq!(r.code, 1, "{}", r.dump());
    assert!(
        r.stdout.contains("not done (interrupted by a signal)"),
        "{}",
        r.dump()
    );
    let j = json(&out);
    assert_eq!(j["interrupted"], true);
    assert_eq!(j["measured"]["ok"], 200_000);
}

/// Two servers in one URL (`redis://127.0.0.1:6379,PORT`): connections
/// dealt over both, every check summed over both.
#[test]
fn several_ports_in_one_run() {
    let db = crate::common::redis_db();
    need_server("redis", 6379);
    let other = own_redis();
    flush(db.n);
    let url = format!("{URL},{}", other.port);
    let r = loadrig(&[
        "run",
        "redis",
        "--target",
        &url,
        "--dbnum",
        db.arg,
        "--tests",
        "set,get,incr,lpush,sadd,xadd",
        "-n",
        "4000",
        "-c",
        "10",
        "-r",
        "300",
        "--keep",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        r.stdout
            .contains(&format!("redis on redis://127.0.0.1:6379,{}", other.port)),
        "{}",
        r.dump()
    );
    assert!(r.stdout.contains("verify ... ok ("), "{}", r.dump());
    assert!(r.stdout.contains("mylist +4,000"), "{}", r.dump());
    assert!(r.stdout.contains("mystream +4,000"), "{}", r.dump());
    // Both servers took writes: five of the ten connections each.
    let there: i64 = redis_on(other.port, db.n, &[&["LLEN", "mylist"]])[0][1..]
        .parse()
        .unwrap();
    let here: i64 = redis(db.n, &[&["LLEN", "mylist"]])[0][1..].parse().unwrap();
    assert_eq!(here + there, 4000);
    assert!(here > 0 && there > 0, "{here} + {there}");
    // Without --keep the run removes what it touched on both.
    let r = loadrig(&[
        "run", "redis", "--target", &url, "--dbnum", db.arg, "--tests", "lpush", "-n", "10",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_eq!(redis(db.n, &[&["EXISTS", "mylist"]]), [":0"]);
    flush(db.n);
}

/// A command of one's own after `--`: `__rand_int__` drawn with `-r`,
/// `__data__` the value, titled by its command line; not with `-t`.
#[test]
fn a_command_of_ones_own() {
    let db = crate::common::redis_db();
    need_server("redis", 6379);
    flush(db.n);
    let r = run_redis(
        db.arg,
        &[
            "-n",
            "2000",
            "-r",
            "100",
            "--csv",
            "--",
            "SET",
            "key:__rand_int__",
            "__data__",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.dump());
    let rows: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(rows.len(), 2, "{}", r.dump());
    assert!(
        rows[1].starts_with("\"SET key:__rand_int__ __data__\",\""),
        "{}",
        r.dump()
    );
    assert!(
        r.stderr
            .contains("verify ... skipped (a command of your own"),
        "{}",
        r.dump()
    );
    let keys: u64 = redis(db.n, &[&["DBSIZE"]])[0][1..].parse().unwrap();
    assert!((1..=100).contains(&keys), "{keys} keys");
    assert_eq!(redis(db.n, &[&["GET", "key:000000000042"]]), ["VXK"]);

    let r = run_redis(db.arg, &["-n", "777", "-c", "7", "--", "INCR", "ctr"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_eq!(redis(db.n, &[&["GET", "ctr"]]), ["777"]);

    let r = loadrig(&["run", "redis", "--tests", "set", "--", "GET", "x"]);
    assert_eq!(r.code, 2, "{}", r.dump());
    flush(db.n);
}

/// memtier's load (`--ratio`): SETs and GETs in one run, key patterns,
/// value sizes from a range and a weighted list, hits and misses counted,
/// every key SET found afterwards, a value changed behind the client's
/// back caught, and the keys removed.
#[test]
fn memtier_mix() {
    let db = crate::common::redis_db();
    need_server("redis", 6379);
    flush(db.n);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mix.json");
    let r = run_redis(
        db.arg,
        &[
            "--ratio",
            "1:10",
            "-n",
            "22000",
            "--key-maximum",
            "999",
            "--data-size-range",
            "4-40",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.contains("verify ... ok ("), "{}", r.dump());
    assert!(r.stdout.contains("keys SET, all there"), "{}", r.dump());
    let report = json(&out);
    let kinds = report["measured"]["kinds"].as_array().unwrap();
    assert_eq!(
        (kinds[0]["name"].clone(), kinds[0]["ok"].clone()),
        ("SET".into(), 2000.into())
    );
    assert_eq!(
        (kinds[1]["name"].clone(), kinds[1]["ok"].clone()),
        ("GET".into(), 20000.into())
    );
    let domains: std::collections::HashMap<String, u64> = report["measured"]["domains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d[0].as_str().unwrap().to_string(), d[1].as_u64().unwrap()))
        .collect();
    assert_eq!(domains["get.hits"] + domains["get.misses"], 20000);
    assert!(
        domains["get.hits"] > 0 && domains["get.misses"] > 0,
        "{domains:?}"
    );
    assert_eq!(
        redis(db.n, &[&["DBSIZE"]]),
        [":0"],
        "the memtier- keys are removed"
    );

    // Zipf keys, sizes from a weighted list, pipelined; kept.
    let r = run_redis(
        db.arg,
        &[
            "--ratio",
            "1:1",
            "--key-pattern",
            "Z:Z",
            "--key-prefix",
            "mt:",
            "--key-maximum",
            "5",
            "--data-size-list",
            "8:1,100:3",
            "-P",
            "8",
            "-n",
            "4000",
            "--keep",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.contains("6 keys SET, all there"), "{}", r.dump());
    assert_eq!(redis(db.n, &[&["DBSIZE"]]), [":6"]);
    // One of them changed behind the client's back: GETs catch it.
    redis(db.n, &[&["SET", "mt:0", "changed"]]);
    let mixed = dir.path().join("changed.json");
    let r = run_redis(
        db.arg,
        &[
            "--ratio",
            "0:1",
            "--key-prefix",
            "mt:",
            "--key-maximum",
            "5",
            "--data-size-list",
            "8:1,100:3",
            "-n",
            "600",
            "--out",
            mixed.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 1, "{}", r.dump());
    // Only the GETs of mt:0 (one key in six) read the changed value.
    let wrong: u64 = r
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("errors: GET: verification "))
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("{}", r.dump()));
    // Which GETs read mt:0 is a pure function of the seed: the mix's own
    // draw, seeded as the workload seeds it, says exactly how many.
    let spec = crate::common::report(&mixed).spec;
    let WorkloadSpec::Redis(RedisSpec { mix: Some(m), .. }) = spec.workload else {
        panic!("not a memtier mix: {:?}", spec.workload);
    };
    let key_min = m.key_min;
    let mix = Mix::new(m, mix64(spec.seed ^ 0x006d_6978));
    let reads_of_mt0 = (0..600).filter(|&i| mix.draw(i).1 == key_min).count() as u64;
    assert!(reads_of_mt0 > 0);
    assert_eq!(wrong, reads_of_mt0, "{}", r.dump());
    assert!(r.stdout.contains("verify ... FAILED ("), "{}", r.dump());
    assert_eq!(redis(db.n, &[&["DBSIZE"]]), [":0"]);

    let r = loadrig(&["run", "redis", "--key-pattern", "Z"]);
    assert_eq!(r.code, 2, "{}", r.dump());
}

/// memtier's `--command`s (its own command line): each in its ratio and
/// key pattern, titled by its words; the SETs' keys all found afterwards
/// holding the run's values, GETs checked; a command of another shape
/// (INCR) counted, its total on the server; an error reply counted by
/// class; and a value changed behind the client's back caught.
#[test]
fn memtier_commands() {
    let db = crate::common::redis_db();
    let dbnum = db.n.to_string();
    let memtier = |extra: &[&str]| {
        let mut all = vec![
            "memtier_benchmark",
            "-s",
            "127.0.0.1",
            "-p",
            "6379",
            "--select-db",
            dbnum.as_str(),
            "-t",
            "1",
            "-c",
            "4",
            "--key-prefix=mc:",
            "--key-minimum=1",
            "--key-maximum=100",
        ];
        all.extend_from_slice(extra);
        loadrig(&all)
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("commands.json");
    let out_arg = format!("--out={}", out.display());
    // 100 SETs walk the 100 keys (S); 300 GETs, 100 INCRs by connection (P).
    let r = run_redis(
        db.arg,
        &[
            "--clients",
            "4",
            "--requests",
            "500",
            "--key-prefix",
            "mc:",
            "--key-minimum",
            "1",
            "--key-maximum",
            "100",
            "--value-size",
            "20",
            "--command",
            "SET __key__ __data__",
            "--command",
            "GET __key__",
            "--command",
            "INCR n:__key__",
            "--command-ratio",
            "1",
            "--command-ratio",
            "3",
            "--command-ratio",
            "1",
            "--command-key-pattern",
            "S",
            "--command-key-pattern",
            "R",
            "--command-key-pattern",
            "P",
            "--keep",
            &out_arg,
        ],
    );
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.contains("100 keys SET, all there"), "{}", r.dump());
    let report = json(&out);
    let kinds: Vec<(String, u64)> = report["measured"]["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["name"].as_str().unwrap().to_string(),
                k["ok"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("SET __key__ __data__".to_string(), 100),
            ("GET __key__".to_string(), 300),
            ("INCR n:__key__".to_string(), 100)
        ]
    );
    assert_eq!(redis(db.n, &[&["DBSIZE"]]), [":200"], "{}", r.dump());
    assert_eq!(redis(db.n, &[&["STRLEN", "mc:57"]]), [":20"]);
    // The INCRs: each connection walks its own 25 keys, once each.
    let counts: Vec<String> = (1..=100)
        .map(|k| redis(db.n, &[&["GET", &format!("n:mc:{k}")]]).remove(0))
        .collect();
    assert!(counts.iter().all(|c| c == "1"), "{counts:?}");

    // memtier's own line, on the keys kept: a value changed behind the
    // client's back is caught by GETs walking every key in turn (each
    // key read 4 times by 400 GETs).
    redis(db.n, &[&["SET", "mc:7", "changed"]]);
    let r = memtier(&[
        "-n",
        "100",
        "--command=GET __key__",
        "--command-key-pattern=S",
    ]);
    assert_eq!(r.code, 1, "{}", r.dump());
    assert!(
        r.stdout.contains("errors: GET __key__: verification 4"),
        "{}",
        r.dump()
    );
    // A command the server refuses (LPUSH on a string) is counted by its
    // class, and memtier's table has its row.
    let names: Vec<String> = (1..=100).map(|k| format!("mc:{k}")).collect();
    let sets: Vec<[&str; 3]> = names.iter().map(|k| ["SET", k.as_str(), "s"]).collect();
    let sets: Vec<&[&str]> = sets.iter().map(|c| &c[..]).collect();
    redis(db.n, &sets);
    let r = memtier(&["-n", "10", "--command=LPUSH __key__ __data__"]);
    assert!(
        r.stdout
            .contains("errors: LPUSH __key__ __data__: server WRONGTYPE"),
        "{}",
        r.dump()
    );
    assert!(
        r.stdout.lines().any(|l| l.starts_with("LPUSH ")),
        "{}",
        r.dump()
    );
    flush(db.n);
}

/// A server that acknowledges every SET and keeps none of the keys (a
/// proxy that stores each under another name). In a run by time with
/// random keys too, the keys written are known from the indices the run
/// issued, and verification finds every one of them missing.
#[test]
fn a_server_that_keeps_nothing_fails_a_run_by_time() {
    use crate::common::lossy::{Harm, Lossy, Proto};
    let server = own_redis();
    let proxy = Lossy::start(server.port, Proto::Resp, 1, Harm::Key);
    let target = format!("redis://127.0.0.1:{}", proxy.port);
    let r = loadrig(&[
        "run",
        "redis",
        "--target",
        &target,
        "--dbnum",
        "0",
        "--tests",
        "set",
        "-r",
        "1000",
        "--duration",
        "0.5",
        "-c",
        "2",
    ]);
    assert_eq!(r.code, 1, "{}", r.dump());
    assert!(r.stdout.contains("verify ... FAILED"), "{}", r.dump());
    assert!(
        r.stdout
            .contains("keys written (SET/MSET) and missing: expected 0"),
        "{}",
        r.dump()
    );
    let lost = proxy.lost.load(std::sync::atomic::Ordering::Relaxed);
    assert!(lost > 0, "no SET reached the server");
}

/// The load ran, then the target failed the verification (a server that
/// answers MGET with +OK): the run still writes its report, with the
/// target's exit code and what failed.
#[test]
fn a_failed_verification_keeps_the_report() {
    use crate::common::delayed::{DelayServer, Delays};
    let server = DelayServer::start(Delays::Fixed(Duration::ZERO));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.json");
    let target = format!("redis://127.0.0.1:{}", server.port);
    let r = loadrig(&[
        "run",
        "redis",
        "--target",
        &target,
        "--dbnum",
        "0",
        "--tests",
        "set",
        "-n",
        "300",
        "-c",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 3, "{}", r.dump());
    assert!(
        r.stdout
            .contains("verify ... not done (the target failed: "),
        "{}",
        r.dump()
    );
    assert!(
        r.stdout.contains("check failed: could not verify: "),
        "{}",
        r.dump()
    );
    let report = json(&out);
    assert_eq!(report["exit_code"], 3);
    assert_eq!(report["measured"]["ok"], 300);
}

/// --no-verify without --keep: the hint says the data is going, and a
/// later `loadrig verify` says there is nothing left (exit 2), never a
/// false FAILED.
#[test]
fn verify_later_needs_the_data_kept() {
    let db = crate::common::redis_db();
    need_server("redis", 6379);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let r = run_redis(
        db.arg,
        &[
            "--tests",
            "set",
            "-n",
            "200",
            "--no-verify",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.contains("the data is removed now"), "{}", r.dump());
    let v = loadrig(&["verify", out.to_str().unwrap()]);
    assert_eq!(v.code, 2, "{}", v.dump());
    assert!(v.stderr.contains("without --keep"), "{}", v.dump());
}
