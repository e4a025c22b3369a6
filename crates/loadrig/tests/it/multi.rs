//! Many processes and a common start (`--processes`, `--start-delay`,
//! `--start-at`), and the Erlvolt presets. The PostgreSQL case needs the
//! server that `scripts/services up postgres` starts; it fails, never
//! skips, when it is not there.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use loadrig_report::Report;

use crate::common::{assert_all_ok, assert_verified, hold, json, loadrig, need_server, Run};
use crate::expect::{votes, Votes};

const POSTGRES: &str = "postgres://bench:bench@127.0.0.1/bench";

/// The start the run printed (`start at ... (unix N)`), in ms.
fn printed_start(r: &Run) -> u64 {
    let line = r
        .stdout
        .lines()
        .find(|l| l.starts_with("start at "))
        .unwrap_or_else(|| panic!("no start line:\n{}", r.dump()));
    let unix = line
        .split("(unix ")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .unwrap_or_else(|| panic!("no unix time in '{line}'"));
    let secs: f64 = unix.parse().unwrap();
    (secs * 1e3).round() as u64
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn read(path: &Path) -> Report {
    Report::read(path).unwrap_or_else(|e| panic!("{e}"))
}

/// The children's reports beside `out` (`r.json` -> `r.p0.json`, ...).
fn children(out: &Path, k: usize) -> Vec<Report> {
    let dir = out.parent().unwrap();
    let stem = out.file_stem().unwrap().to_str().unwrap();
    (0..k)
        .map(|i| read(&dir.join(format!("{stem}.p{i}.json"))))
        .collect()
}

/// Three processes on PostgreSQL begin in the same second, at the start
/// the parent printed; the merged report is their sum and verifies.
#[test]
fn three_processes_on_postgres_begin_together_and_merge() {
    need_server("postgres", 5432);
    let _one_at_a_time = hold("postgres");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    // Few clients per process: a debug build spends ~80 ms of CPU on each
    // SCRAM login, and every child must be connected within the 4 s (on
    // a machine busy with other builds, 2 s was sometimes too short).
    let r = loadrig(&[
        "run",
        "voter",
        "--target",
        POSTGRES,
        "--processes",
        "3",
        "--start-delay",
        "4",
        "-n",
        "3000",
        "--clients",
        "4",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.contains("verify ... ok ("), "{}", r.dump());
    assert!(
        r.stdout.contains("overall (total of 3 processes): "),
        "{}",
        r.dump()
    );
    assert!(!r.stdout.contains("s late"), "{}", r.dump());
    let start = printed_start(&r);
    assert_eq!(start % 4_000, 0, "a multiple of 4 s: {start}");

    let kids = children(&out, 3);
    for (i, c) in kids.iter().enumerate() {
        assert_eq!(c.started_unix_ms, start, "process {i}:\n{}", r.dump());
        assert_eq!(c.spec.load.shard.index, i as u32);
        assert_eq!(c.spec.load.shard.count, 3);
        assert!(c.verification.is_none(), "a child does not verify");
        assert!(r.stdout.contains(&format!("process {i}: overall: ")));
    }
    let seconds: Vec<u64> = kids.iter().map(|c| c.started_unix_ms / 1000).collect();
    assert!(seconds.iter().all(|s| *s == seconds[0]), "{seconds:?}");

    let merged = read(&out);
    // Every vote of the three succeeded, and the outcome is the generator's.
    assert_all_ok(&r, &merged, 3000);
    assert_verified(&r, &merged);
    assert_eq!(Votes::counted(&merged), votes(&merged.spec, 3000));
    let sum: u64 = kids.iter().map(|c| c.measured.ops).sum();
    assert_eq!(merged.measured.ops, sum);
    assert_eq!(merged.measured.ops, 3000);
    let ok: u64 = kids.iter().map(|c| c.measured.ok).sum();
    assert_eq!(merged.measured.ok, ok);
    let kind = &merged.measured.kinds[0];
    assert_eq!(kind.latency.histogram().unwrap().len(), 3000);
    let verdict = merged
        .verification
        .as_ref()
        .and_then(|v| v.verdict.as_ref())
        .expect("the parent verifies");
    assert_eq!(verdict.passed, Some(true), "{}", r.dump());
    assert_eq!(merged.processes.len(), 3);
    assert!(merged.processes.iter().all(|p| p.started_unix_ms == start));
    let peak: u64 = merged.processes.iter().map(|p| p.max_rss_bytes).sum();
    assert_eq!(merged.client.max_rss_bytes, peak);
    assert_eq!(merged.spec.processes, 3);
    assert_eq!(merged.spec.load.shard.count, 1);
    assert_eq!(merged.exit_code, 0);
}

/// On the null target, without --out: the children's reports go to a
/// temporary folder, and the merged counts are still the sum.
#[test]
fn processes_on_null_merge_without_out() {
    let r = loadrig(&[
        "run",
        "hello",
        "--target",
        "null://",
        "--processes",
        "2",
        "-n",
        "4000",
        "--csv",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    // The default start: the next whole second after now + 1.
    assert!(r.stderr.contains("start at "), "{}", r.dump());
    assert!(r.stderr.contains("process 1: overall: "), "{}", r.dump());
    let counts: Vec<&str> = r
        .stdout
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(2).unwrap())
        .collect();
    // select latency and service; no inserts (--insert-ratio 0).
    assert_eq!(counts, ["4000", "4000", "0", "0"], "{}", r.dump());
}

#[test]
fn processes_and_shard_conflict() {
    let r = loadrig(&[
        "run",
        "voter",
        "--target",
        "null://",
        "--processes",
        "2",
        "--shard",
        "0/2",
    ]);
    assert_eq!(r.code, 2, "{}", r.dump());
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.dump());
    assert!(r.stderr.contains("--processes"), "{}", r.dump());
    assert!(r.stdout.is_empty(), "{}", r.dump());
}

#[test]
fn processes_need_a_database_they_share() {
    let r = loadrig(&["run", "voter", "--processes", "2"]);
    assert_eq!(r.code, 2, "{}", r.dump());
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.dump());
    assert!(r.stderr.contains("--processes"), "{}", r.dump());
}

#[test]
fn start_at_and_start_delay_conflict() {
    let r = loadrig(&[
        "run",
        "voter",
        "--target",
        "null://",
        "--start-at",
        "1795000000",
        "--start-delay",
        "2",
    ]);
    assert_eq!(r.code, 2, "{}", r.dump());
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.dump());
    assert!(r.stderr.contains("--start-delay"), "{}", r.dump());
}

/// A start that has passed begins at once, and says how late it is.
#[test]
fn start_at_in_the_past_begins_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let past = now_ms() / 1000 - 30;
    let before = now_ms();
    let t = Instant::now();
    let r = loadrig(&[
        "run",
        "voter",
        "--target",
        "null://",
        "-n",
        "2000",
        "--start-at",
        &past.to_string(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    assert_eq!(printed_start(&r), past * 1000);
    assert!(r.stdout.contains("s late, starting now"), "{}", r.dump());
    let started = read(&out).started_unix_ms;
    assert!(started >= before, "{started} < {before}");
}

/// A start a little ahead is waited for, and is the report's start.
#[test]
fn start_at_in_the_future_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let at = now_ms() + 1_500;
    let at_text = format!("{}.{:03}", at / 1000, at % 1000);
    let r = loadrig(&[
        "run",
        "hello",
        "--target",
        "null://",
        "-n",
        "500",
        "--start-at",
        &at_text,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_eq!(printed_start(&r), at);
    assert!(!r.stdout.contains("s late"), "{}", r.dump());
    assert_eq!(read(&out).started_unix_ms, at);
}

/// `--start-at` this many ms from now, as the flag takes it.
fn start_in(ms: u64) -> String {
    let at = now_ms() + ms;
    format!("{}.{:03}", at / 1000, at % 1000)
}

/// While a run waits for its start, a connection its server closes is
/// opened again: once the run has connected and said when it starts, 3 s
/// away, every client of a Redis of the test's own is killed (`CLIENT
/// KILL TYPE normal`). The load then meets no closed connection: every
/// operation succeeds and none reconnects. Without the wait watching the
/// connections, each of the 4 failed its first operation and reconnected,
/// and the first sample of the server's statistics failed.
#[test]
fn a_connection_closed_while_waiting_for_the_start_is_opened_again() {
    let own = crate::redis::own_redis();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let target = format!("redis://127.0.0.1:{}", own.port);
    let mut run = crate::common::Running::start(&[
        "run",
        "redis",
        "--target",
        &target,
        "--tests",
        "set",
        "-n",
        "4000",
        "-c",
        "4",
        "--start-at",
        &start_in(3_000),
        "--out",
        out.to_str().unwrap(),
    ]);
    run.until(|l| l.starts_with("start at "));
    let killed = std::process::Command::new("redis-cli")
        .args([
            "-p",
            &own.port.to_string(),
            "CLIENT",
            "KILL",
            "TYPE",
            "normal",
        ])
        .output()
        .expect("redis-cli runs");
    // The run's 4 and its statistics' own.
    assert_eq!(String::from_utf8_lossy(&killed.stdout).trim(), "5");
    let r = run.finish();
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        r.stdout.contains(
            "\nwhile waiting for the start: 4 connections closed by the server were opened again\n"
        ),
        "{}",
        r.dump()
    );
    let report = read(&out);
    assert_all_ok(&r, &report, 4000);
    assert_eq!(report.measured.reconnects, 0, "{}", r.dump());
    assert_verified(&r, &report);
    // The server's statistics were read on a connection killed too: the
    // sample after it was taken again on a new one.
    let stats = report.server_stats.as_ref().expect("server stats");
    assert_eq!(stats.failures, 0, "{stats:?}\n{}", r.dump());
}

/// While a run waits for its start, the server's pings are answered: a
/// nats-server of the test's own pings every second and closes a client
/// whose ping is still unanswered at the next tick (`ping_max: 1`), and
/// the start is 4 s away. Nothing is
/// closed, so nothing is re-opened, and every message is delivered.
/// Before, both clients were closed and the publisher's first batch was
/// lost.
#[test]
fn a_server_pinging_while_waiting_for_the_start_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("nats.conf");
    std::fs::write(&conf, "ping_interval: \"1s\"\nping_max: 1\n").unwrap();
    let own = crate::common::OwnServer::start(
        |port| {
            let mut cmd = std::process::Command::new("nats-server");
            cmd.args(["-a", "127.0.0.1", "-p", &port.to_string(), "-c"])
                .arg(&conf);
            cmd
        },
        None,
        "scripts/services up nats",
    );
    let out = dir.path().join("r.json");
    let target = format!("nats://127.0.0.1:{}", own.port);
    let r = loadrig(&[
        "run",
        "pubsub",
        "--target",
        &target,
        "-d",
        "1",
        "--start-at",
        &start_in(4_000),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        !r.stdout.contains("while waiting for the start"),
        "{}",
        r.dump()
    );
    let report = read(&out);
    let m = &report.measured;
    assert!(
        m.ok > 0 && m.errors == 0 && m.reconnects == 0,
        "{}",
        r.dump()
    );
    assert!(m.delivered > 0, "{}", r.dump());
    assert_verified(&r, &report);
}

/// What a preset run recorded: (clients, pacing, dispatch, preset, stop).
fn preset_spec(workload: &str, extra: &[&str]) -> (Run, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut args = vec![
        "run",
        workload,
        "--target",
        "null://",
        "-n",
        "2000",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let r = loadrig(&args);
    assert_eq!(r.code, 0, "{}", r.dump());
    let spec = json(&out)["spec"].clone();
    (r, spec)
}

#[test]
fn presets_set_erlvolts_setups() {
    use serde_json::json;
    let cases = [
        (
            "vsd",
            200,
            json!({"model": "steady"}),
            json!({"mode": "direct"}),
        ),
        (
            "vsm",
            200,
            json!({"model": "steady"}),
            json!({"mode": "managed", "queue": 100000, "slots": 200}),
        ),
        (
            "vbm",
            100,
            json!({"model": "burst", "size": 1, "delay_ms": 1.0, "limit": 1}),
            json!({"mode": "managed", "queue": 10000, "slots": 100}),
        ),
        (
            "vbd",
            100,
            json!({"model": "burst", "size": 1, "delay_ms": 5.0, "limit": 1}),
            json!({"mode": "direct"}),
        ),
    ];
    for (name, clients, pacing, dispatch) in cases {
        let (r, spec) = preset_spec("voter", &["--preset", name]);
        assert_eq!(spec["preset"], name, "{}", r.dump());
        assert_eq!(spec["load"]["clients"], clients, "{name}");
        assert_eq!(spec["load"]["pacing"], pacing, "{name}");
        assert_eq!(spec["load"]["dispatch"], dispatch, "{name}");
        assert_eq!(spec["workload"]["generator"], "erlvolt", "{name}");
        assert_eq!(spec["workload"]["max_votes"], 20000, "{name}");
        // -n given explicitly wins over the preset's 100,000.
        assert_eq!(spec["load"]["stop"]["count"], 2000, "{name}");
        let label = format!("preset {} (Erlvolt: voter, ", name.to_uppercase());
        assert!(r.stdout.contains(&label), "{}", r.dump());
    }
    let (r, spec) = preset_spec("hello", &["--preset", "hsd"]);
    assert_eq!(spec["preset"], "hsd");
    assert_eq!(spec["load"]["clients"], 200);
    assert!(
        r.stdout.contains(
            "200 clients, 2,000 ops, seed 42  preset HSD (Erlvolt: hello, steady, direct)"
        ),
        "{}",
        r.dump()
    );
}

#[test]
fn flags_given_win_over_the_preset() {
    let (r, spec) = preset_spec("voter", &["--clients", "7", "--preset", "vsd"]);
    assert_eq!(spec["load"]["clients"], 7);
    // The header says what runs: 7 clients, and nowhere the preset's 200.
    let header = r
        .stdout
        .lines()
        .find(|l| l.starts_with("loadrig "))
        .unwrap_or("");
    assert!(
        header.contains(" 7 clients") && !header.contains("200"),
        "{}",
        r.dump()
    );
    let (_, spec) = preset_spec(
        "voter",
        &["--preset", "vbm", "--burst-delay", "3", "--slots", "9"],
    );
    assert_eq!(spec["load"]["pacing"]["delay_ms"], 3.0);
    assert_eq!(spec["load"]["pacing"]["size"], 1);
    assert_eq!(spec["load"]["dispatch"]["slots"], 9);
    assert_eq!(spec["load"]["dispatch"]["queue"], 10000);
    let (_, spec) = preset_spec("voter", &["--preset", "vbd", "--generator", "voltdb"]);
    assert_eq!(spec["workload"]["generator"], "voltdb");
    assert_eq!(spec["workload"]["max_votes"], 2);
    let (_, spec) = preset_spec("voter", &["--preset", "vbd", "--rate", "5000"]);
    assert_eq!(spec["load"]["pacing"]["model"], "rate");
}

#[test]
fn a_voter_preset_is_not_hellos() {
    let r = loadrig(&["run", "hello", "--target", "null://", "--preset", "vsd"]);
    assert_eq!(r.code, 2, "{}", r.dump());
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.dump());
    assert!(r.stderr.contains("--preset"), "{}", r.dump());
}

/// What a run of two processes prints, numbers masked; the counts the
/// mask hides asserted beside.
#[test]
fn processes_text_output() {
    let (r, report) = crate::common::run_reported(&[
        "run",
        "voter",
        "--target",
        "null",
        "-n",
        "1000",
        "--interval",
        "1h",
        "--seed",
        "7",
        "--processes",
        "2",
        "--preset",
        "vsd",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    // The Erlvolt mix votes for nobody never, and the null target keeps
    // no limit: all 1,000 accepted, over both processes.
    crate::golden::votes_add_up(&r, &report, 1000);
    let all = Votes {
        accepted: 1000,
        invalid: 0,
        over_limit: 0,
    };
    assert_eq!(Votes::counted(&report), all, "{}", r.dump());
    one_throughput(&r.stdout);
    crate::golden::golden("voter-null-processes.txt", &crate::golden::mask(&r.stdout));
}

/// The run's throughput, said three ways (loadrig's overall line and the
/// Erlvolt bench's two), is one figure: not a sum of each process's rate.
fn one_throughput(out: &str) {
    let after = |prefix: &str, end: &str| -> String {
        let line = out.lines().find(|l| l.starts_with(prefix)).unwrap_or("");
        let rest = line.strip_prefix(prefix).unwrap_or("");
        rest.split(end).next().unwrap_or("").trim().to_string()
    };
    let overall = after("overall (total of 2 processes): ", "/s");
    let client = after("Client 'VSD' overall: ", " T/sec");
    let total = after("Total transactions per second: ", " T/sec");
    assert!(!overall.is_empty(), "{out}");
    assert_eq!((&client, &total), (&overall, &overall), "{out}");
}

/// Two shards run apart, then `loadrig merge`: the counts sum, the
/// histograms add, and a file that is not a report is named in one line.
#[test]
fn merge_joins_shards_run_apart() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    for i in 0..2 {
        let r = loadrig(&[
            "run",
            "voter",
            "--target",
            "null://",
            "-n",
            "3000",
            "-q",
            "--shard",
            &format!("{i}/2"),
            "--out",
            &path(&format!("s{i}.json")),
        ]);
        assert_eq!(r.code, 0, "{}", r.dump());
    }
    let r = loadrig(&[
        "merge",
        &path("s0.json"),
        &path("s1.json"),
        "-o",
        &path("m.json"),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        r.stdout.contains("overall (total of 2 processes): "),
        "{}",
        r.dump()
    );
    let parts = [
        read(Path::new(&path("s0.json"))),
        read(Path::new(&path("s1.json"))),
    ];
    let merged = read(Path::new(&path("m.json")));
    assert_eq!(merged.measured.ops, 3000);
    assert_eq!(merged.spec.load.shard.count, 1);
    let mut all = parts[0].measured.kinds[0].latency.histogram().unwrap();
    all.add(&parts[1].measured.kinds[0].latency.histogram().unwrap());
    let got = merged.measured.kinds[0].latency.histogram().unwrap();
    for p in [50.0, 90.0, 99.0, 99.9, 100.0] {
        assert_eq!(got.percentile(p), all.percentile(p), "p{p}");
    }

    std::fs::write(path("junk.json"), "{}").unwrap();
    let r = loadrig(&["merge", &path("s0.json"), &path("junk.json")]);
    assert_eq!(r.code, 2, "{}", r.dump());
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.dump());
    assert!(r.stderr.contains("junk.json"), "{}", r.dump());
}

/// `--pin`: process k of `--processes 2` runs on the k-th CPU this process
/// may use, each its own, and the merged report records each one's CPU;
/// `--cpus` pins a single run where it says. Too few CPUs is refused.
#[test]
fn pinned_processes_record_their_cpus() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let r = loadrig(&[
        "run",
        "voter",
        "-t",
        "null://",
        "-n",
        "2000",
        "--processes",
        "2",
        "--pin",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let merged = read(&out);
    let cpus: Vec<Option<usize>> = merged.processes.iter().map(|p| p.cpu).collect();
    assert_eq!(cpus.len(), 2, "{cpus:?}");
    assert!(cpus.iter().all(Option::is_some), "{cpus:?}");
    assert_ne!(cpus[0], cpus[1], "a CPU each: {cpus:?}");
    for (i, c) in cpus.iter().enumerate() {
        let line = format!("process {i} on CPU {}: ", c.unwrap());
        assert!(r.stdout.contains(&line), "{line}\n{}", r.dump());
    }
    assert_eq!(merged.measured.ops, 2000);

    let one = dir.path().join("one.json");
    let cpu = cpus[1].unwrap().to_string();
    let r = loadrig(&[
        "run",
        "voter",
        "-t",
        "null://",
        "-n",
        "200",
        "--cpus",
        &cpu,
        "-o",
        one.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_eq!(read(&one).environment.cpu, cpus[1]);

    let r = loadrig(&[
        "run",
        "voter",
        "-t",
        "null://",
        "--processes",
        "256",
        "--pin",
    ]);
    assert_eq!(r.code, 2, "{}", r.dump());
    assert!(
        r.stderr
            .starts_with("error: --pin: 256 processes need a CPU each"),
        "{}",
        r.dump()
    );
}
