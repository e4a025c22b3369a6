//! Resources over time (docs/explanations/resources.md): the client's CPU, memory,
//! bytes and connections kept per lap in the report and shown with
//! `--resources`; the server's own statistics per lap, each target's
//! checked against the server's own client (redis-cli, memcstat, psql,
//! mysql, curl on NATS's monitoring port and etcd's `/metrics`,
//! mosquitto_sub on `$SYS`, curl on VoltDB's JSON interface) over the
//! same run; a sampler that fails.

use std::process::Command;

use loadrig_report::Report;

use crate::common::{free_port, loadrig, need_server, report};

/// Every lap of a Redis run keeps the client's resources: its bytes add
/// up to the run's own byte counts (one count per socket read and write,
/// taken per thread at the lap), every lap while the load runs has all
/// its connections up, CPU and memory were read, and the lap lines carry
/// the columns only when asked.
#[test]
fn client_resources_are_kept_per_lap() {
    let db = crate::common::redis_db();
    need_server("redis", 6379);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let r = loadrig(&[
        "run",
        "redis",
        "--target",
        "redis://127.0.0.1:6379",
        "--dbnum",
        db.arg,
        "--tests",
        "set",
        "-n",
        "40000",
        "-c",
        "8",
        "--interval",
        "0.1",
        "--resources",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    // The lap lines (`  at 0.100s lap ...`).
    let lines: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("at "))
        .collect();
    assert!(!lines.is_empty(), "{}", r.dump());
    for l in &lines {
        assert!(
            l.contains("  cpu usr ") && l.contains(" rss ") && l.contains(" conns "),
            "{l}"
        );
    }
    let rep = report(&out);
    let client: Vec<_> = rep.laps.iter().map(|l| l.client.expect("kept")).collect();
    let out_bytes: u64 = client.iter().map(|c| c.bytes_out).sum();
    let in_bytes: u64 = client.iter().map(|c| c.bytes_in).sum();
    let m = &rep.measured;
    // The laps also hold the login and the prepare's few bytes.
    assert!(
        out_bytes >= m.bytes_sent && out_bytes < m.bytes_sent + 4096,
        "{out_bytes} vs {}",
        m.bytes_sent
    );
    assert!(in_bytes >= m.bytes_received && in_bytes < m.bytes_received + 4096);
    // Every lap saw the 8 up, the last too (a finished worker counts
    // its link as it left it).
    assert!(client.iter().all(|c| c.connections == 8), "{client:?}");
    assert!(client
        .iter()
        .all(|c| c.rss_bytes > 1 << 20 && c.reconnects == 0));
    let cpu: f64 = client
        .iter()
        .map(|c| c.cpu_user_secs + c.cpu_system_secs)
        .sum();
    assert!(
        cpu > 0.0 && cpu <= rep.client.cpu_secs + 0.05,
        "{cpu} vs {}",
        rep.client.cpu_secs
    );

    // Without the flag the lines are as they were.
    let plain = loadrig(&[
        "run",
        "redis",
        "--target",
        "redis://127.0.0.1:6379",
        "--dbnum",
        db.arg,
        "--tests",
        "set",
        "-n",
        "2000",
        "-c",
        "2",
    ]);
    assert_eq!(plain.code, 0, "{}", plain.dump());
    assert!(!plain.stdout.contains("cpu usr"), "{}", plain.dump());
}

/// A command's standard output, trimmed; a command that fails fails the test.
fn shell(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .env("PGPASSWORD", "bench")
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A server series over the run's laps: its sum, and the laps that had it.
fn series(rep: &Report, name: &str) -> (f64, usize) {
    let mut sum = 0.0;
    let mut n = 0;
    for l in &rep.laps {
        if let Some(v) = l.server.get(name) {
            sum += v;
            n += 1;
        }
    }
    (sum, n)
}

/// The largest value a level series had in any lap.
fn peak(rep: &Report, name: &str) -> f64 {
    rep.laps
        .iter()
        .filter_map(|l| l.server.get(name))
        .fold(0.0, |a, b| a.max(*b))
}

/// A run's report with the sampler's account checked: every sample of
/// every source answered, most laps have the server's series.
fn sampled(args: &[&str], sources: usize) -> Report {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut all = args.to_vec();
    all.extend(["--interval", "0.25", "-q", "--out", out.to_str().unwrap()]);
    let r = loadrig(&all);
    assert_eq!(r.code, 0, "{}", r.dump());
    let rep = report(&out);
    let s = rep.server_stats.clone().expect("sampled");
    assert_eq!(s.sources.len(), sources, "{s:?}");
    assert_eq!((s.failures, s.last_error.as_deref()), (0, None), "{s:?}");
    assert!(rep.laps.len() >= 3, "{} laps", rep.laps.len());
    // The first sample opens the connections (PostgreSQL's login can
    // take a second on a busy machine), so early laps may have none.
    let with = rep.laps.iter().filter(|l| !l.server.is_empty()).count();
    assert!(
        with * 2 >= rep.laps.len(),
        "{with} of {} laps sampled",
        rep.laps.len()
    );
    rep
}

/// The counter `name` of `redis-cli INFO`.
fn redis_info(name: &str) -> f64 {
    let info = shell("redis-cli", &["-h", "127.0.0.1", "-p", "6379", "INFO"]);
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in INFO"))
}

/// Redis: the commands INFO counted per lap are at least the run's own
/// and at most what `redis-cli INFO` saw over the run (other tests share
/// the server); the memory and the process's memory are Redis's (other
/// tests' data included).
#[test]
fn redis_series_match_redis_cli() {
    let db = crate::common::redis_db();
    need_server("redis", 6379);
    let before = redis_info("total_commands_processed");
    let used_before = redis_info("used_memory");
    let rep = sampled(
        &[
            "run",
            "redis",
            "--target",
            "redis://127.0.0.1:6379",
            "--dbnum",
            db.arg,
            "--tests",
            "set",
            // About 2.5 s: at least 3 laps of 0.25 s on a quiet machine.
            "-n",
            "180000",
            "-c",
            "8",
        ],
        2,
    );
    let after = redis_info("total_commands_processed");
    let (commands, laps) = series(&rep, "redis.commands");
    assert!(laps >= 2);
    assert!(
        commands >= 60_000.0 * 0.95 && commands <= after - before,
        "{commands} of {}",
        after - before
    );
    assert!(
        peak(&rep, "redis.connected_clients") >= 9.0,
        "8 clients and the sampler"
    );
    // Redis's memory, as INFO says it: the series' peak is at least what
    // it held before or after the run (within 4x) and at most INFO's own
    // peak. Not against one reading after the run: another test may fill
    // the shared server during this one and flush it before the reading
    // (81 MB in the series against 4.8 MB after, once).
    let used = used_before.min(redis_info("used_memory"));
    let top = redis_info("used_memory_peak");
    let kept = peak(&rep, "redis.used_memory");
    assert!(
        kept > used / 4.0 && kept <= top,
        "{kept} against {used} before or after, {top} at INFO's peak"
    );
    // The process's resident memory at its peak in the run: more than
    // half what it holds after, and at most the peak the kernel kept for
    // it (VmHWM; another test's large values may have raised and freed it
    // meanwhile).
    let rss = redis_info("used_memory_rss");
    let proc_rss = peak(&rep, "process.rss_bytes");
    let pid = redis_info("process_id");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let hwm_kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in the server's /proc status");
    assert!(
        proc_rss > rss / 2.0 && proc_rss <= hwm_kib * 1024.0 + 4096.0 * 1024.0,
        "{proc_rss} vs {rss} now, {hwm_kib} kB at the process's peak"
    );
    assert!(series(&rep, "process.cpu_secs").0 > 0.0);
}

/// memcached: gets and sets per lap against `memcstat`'s counts over the run.
#[test]
fn memcached_series_match_memcstat() {
    need_server("memcached", 11211);
    let _one_at_a_time = crate::common::hold("memcached");
    let stat = |name: &str| -> f64 {
        let s = shell("memcstat", &["--servers=127.0.0.1:11211"]);
        s.lines()
            .find_map(|l| l.trim().strip_prefix(&format!("{name}: ")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in memcstat:\n{s}"))
    };
    let before = stat("cmd_get") + stat("cmd_set");
    let rep = sampled(
        &[
            "run",
            "memcache",
            "--target",
            "memcache://127.0.0.1:11211",
            // About 2.4 s: at least 3 laps of 0.25 s on a quiet machine.
            "-n",
            "120000",
            "-c",
            "8",
        ],
        2,
    );
    let after = stat("cmd_get") + stat("cmd_set");
    let ops = series(&rep, "memcached.cmd_get").0 + series(&rep, "memcached.cmd_set").0;
    assert!(
        ops >= 40_000.0 * 0.95 && ops <= after - before,
        "{ops} of {}",
        after - before
    );
    assert!(peak(&rep, "memcached.curr_connections") >= 9.0);
    assert!(peak(&rep, "process.rss_bytes") > 1e6);
}

/// PostgreSQL: commits per lap against `psql`'s `pg_stat_database` over
/// the run. PostgreSQL publishes a backend's counts about once a second,
/// so the laps hold at least half the run's own.
#[test]
fn postgres_series_match_psql() {
    need_server("postgres", 5432);
    let _one_at_a_time = crate::common::hold("postgres");
    let commits = || -> f64 {
        let q = "SELECT xact_commit FROM pg_stat_database WHERE datname = 'bench'";
        shell(
            "psql",
            &["-h", "127.0.0.1", "-U", "bench", "-d", "bench", "-tAc", q],
        )
        .parse()
        .unwrap()
    };
    let before = commits();
    let rep = sampled(
        &[
            "run",
            "hello",
            "--target",
            "postgres://bench:bench@127.0.0.1:5432/bench",
            "-d",
            "3",
            "-c",
            "8",
        ],
        2,
    );
    // Counts published after the run's last sample.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let after = commits();
    let (laps, _) = series(&rep, "postgres.xact_commit");
    let ok = rep.measured.ok as f64;
    assert!(
        laps >= ok * 0.5 && laps <= after - before,
        "{laps}: ok {ok}, psql {}",
        after - before
    );
    assert!(peak(&rep, "postgres.backends") >= 9.0);
    assert!(peak(&rep, "process.rss_bytes") > 1e6);
}

/// MariaDB: statements per lap against `mysql`'s SHOW GLOBAL STATUS.
#[test]
fn mariadb_series_match_mysql() {
    need_server("mariadb", 3306);
    let _one_at_a_time = crate::common::hold("mariadb");
    let questions = || -> f64 {
        let s = shell(
            "mysql",
            &[
                "-h",
                "127.0.0.1",
                "-ubench",
                "-pbench",
                "-N",
                "-e",
                "SHOW GLOBAL STATUS LIKE 'Questions'",
            ],
        );
        s.split_whitespace()
            .nth(1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{s}"))
    };
    let before = questions();
    let rep = sampled(
        &[
            "run",
            "hello",
            "--target",
            "mysql://bench:bench@127.0.0.1:3306/bench",
            "-d",
            "3",
            "-c",
            "8",
        ],
        2,
    );
    // A connection's counts join the server's global ones when its thread
    // has finished closing, a moment after loadrig exits: read after it.
    std::thread::sleep(std::time::Duration::from_secs(1));
    let after = questions();
    let (laps, _) = series(&rep, "mariadb.questions");
    let ok = rep.measured.ok as f64;
    assert!(
        // The last few calls may fall after the last sample.
        laps >= ok * 0.95 && laps <= after - before,
        "{laps}: ok {ok}, mysql {}",
        after - before
    );
    assert!(peak(&rep, "mariadb.threads_connected") >= 9.0);
}

/// `/varz`'s `in_msgs`, as curl reads it.
fn nats_in_msgs() -> f64 {
    let body = shell("curl", &["-s", "-m", "5", "http://127.0.0.1:8222/varz"]);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["in_msgs"].as_f64().unwrap()
}

/// NATS: messages in per lap against `/varz` read with curl over the run.
#[test]
fn nats_series_match_varz() {
    need_server("nats", 4222);
    let before = nats_in_msgs();
    let rep = sampled(
        &[
            "run",
            "pubsub",
            "--target",
            "nats://127.0.0.1:4222",
            "--pubs",
            "2",
            "--subs",
            "2",
            "-n",
            "40000",
            "--size",
            "64",
            // 2 s of load, so several laps are sampled while all four
            // connections are up.
            "--rate",
            "20000",
        ],
        2,
    );
    let after = nats_in_msgs();
    let (laps, _) = series(&rep, "nats.in_msgs");
    assert!(
        laps >= 40_000.0 * 0.9 && laps <= after - before,
        "{laps} of {}",
        after - before
    );
    assert!(peak(&rep, "nats.connections") >= 4.0);
    assert!(peak(&rep, "nats.mem") > 1e6);
}

/// An unlabelled sample of etcd's `/metrics`, as curl reads it.
fn etcd_metric(name: &str) -> f64 {
    let body = shell("curl", &["-s", "-m", "5", "http://127.0.0.1:2379/metrics"]);
    body.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics"))
}

/// etcd: the puts `/metrics` counted per lap are at least the run's own
/// write transactions and at most what curl saw over the run; the
/// member's own resident memory is its process's, read from /proc.
#[test]
fn etcd_series_match_metrics() {
    // At least 3 laps of 0.25 s: etcd committed 3,000 in under 0.5 s
    // (2 laps) on a quiet machine, and 8,000 in 0.8 s.
    const N: u64 = 20_000;
    need_server("etcd", 2379);
    let before = etcd_metric("etcd_mvcc_put_total");
    let rep = sampled(
        &[
            "run",
            "kv",
            "--target",
            "etcd://127.0.0.1:2379",
            "--test",
            "write1",
            "--rows",
            "2000",
            "-n",
            &N.to_string(),
            "--clients",
            "16",
            "--dataset",
            &format!("stats{}", std::process::id()),
        ],
        2,
    );
    let after = etcd_metric("etcd_mvcc_put_total");
    let (puts, laps) = series(&rep, "etcd.puts");
    assert!(laps >= 2);
    assert!(
        puts >= N as f64 * 0.9 && puts <= after - before,
        "{puts} of {}",
        after - before
    );
    let (committed, _) = series(&rep, "etcd.proposals_committed");
    assert!(committed >= N as f64 * 0.9, "{committed}");
    assert_eq!(peak(&rep, "etcd.has_leader"), 1.0);
    assert!(series(&rep, "etcd.grpc_received_bytes").0 > N as f64 * 16.0);
    let rss = peak(&rep, "etcd.rss_bytes");
    let proc_rss = peak(&rep, "process.rss_bytes");
    assert!(
        proc_rss > rss / 2.0 && proc_rss < rss * 2.0,
        "{proc_rss} vs {rss}"
    );
    let size = etcd_metric("etcd_mvcc_db_total_size_in_bytes");
    let kept = peak(&rep, "etcd.db_size_bytes");
    assert!(kept > size / 2.0 && kept <= size, "{kept} vs {size}");
}

/// A `$SYS/broker/` topic's next value, as mosquitto_sub reads it (it may
/// wait for Mosquitto's next `sys_interval`, 10 s).
fn mosquitto_sys(topic: &str) -> f64 {
    let t = format!("$SYS/broker/{topic}");
    let v = shell(
        "mosquitto_sub",
        &[
            "-h",
            "127.0.0.1",
            "-p",
            "1883",
            "-C",
            "1",
            "-W",
            "15",
            "-t",
            &t,
        ],
    );
    v.parse().unwrap_or_else(|_| panic!("{t}: {v}"))
}

/// Mosquitto: publishes received per lap from `$SYS`, which Mosquitto
/// updates every 10 s. Over 22 s of load two updates land inside it, 10 s
/// apart, so the laps hold at least the publishes between them, about
/// 45% of the run's: at least a fifth is asked (12 s of load, with one
/// update inside, gave 2,044 of 24,000 on a busy machine). At most what
/// mosquitto_sub saw from before the run to after it; the clients
/// connected at an update are the run's four and the sampler's.
#[test]
fn mosquitto_series_match_sys() {
    need_server("mosquitto", 1883);
    // A broker that has received nothing since it started has no
    // `publish/messages/received` to show yet: give it one message.
    shell(
        "mosquitto_pub",
        &[
            "-h",
            "127.0.0.1",
            "-p",
            "1883",
            "-t",
            "loadrig/test/sys",
            "-m",
            "1",
        ],
    );
    let before = mosquitto_sys("publish/messages/received");
    let rep = sampled(
        &[
            "run",
            "pubsub",
            "--target",
            "mqtt://127.0.0.1:1883",
            "--pubs",
            "2",
            "--subs",
            "2",
            "-d",
            "22",
            "--rate",
            "2000",
            "--size",
            "64",
        ],
        2,
    );
    let after = mosquitto_sys("publish/messages/received");
    let (laps, _) = series(&rep, "mosquitto.publish_received");
    let sent = rep.measured.ok as f64;
    assert!(
        laps >= sent * 0.2 && laps <= after - before,
        "{laps}: sent {sent}, mosquitto_sub {}",
        after - before
    );
    assert!(peak(&rep, "mosquitto.clients_connected") >= 5.0);
    assert!(peak(&rep, "mosquitto.subscriptions") >= 2.0);
}

/// VoltDB's resident memory in bytes, as its JSON interface (port 8080)
/// answers `@Statistics MEMORY 0` to curl (kilobytes, summed over hosts).
fn voltdb_rss() -> f64 {
    let url =
        "http://127.0.0.1:8080/api/1.0/?Procedure=@Statistics&Parameters=%5B%22MEMORY%22,0%5D";
    let body = shell("curl", &["-s", "-m", "5", url]);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let t = &v["results"][0];
    let names = t["schema"].as_array().expect("a schema");
    let c = names.iter().position(|n| n["name"] == "RSS").expect("RSS");
    let rows = t["data"].as_array().expect("rows");
    rows.iter().filter_map(|r| r[c].as_f64()).sum::<f64>() * 1024.0
}

/// VoltDB: the procedures' invocations per lap (PROCEDUREPROFILE) are
/// the run's calls (the hello run's teardown drops its procedures, and
/// their rows with them, so nothing outside the run can count them
/// after it); its resident memory is what the JSON interface answers
/// curl and what /proc says of its process.
#[test]
fn voltdb_series_match_statistics() {
    need_server("voltdb", 21212);
    let _one_at_a_time = crate::common::hold("voltdb");
    let rep = sampled(
        &[
            "run",
            "hello",
            "--target",
            "voltdb://127.0.0.1:21212",
            "--clients",
            "16",
            // About 2 s: 40,000 took two laps of 0.25 s and failed.
            "-n",
            "120000",
        ],
        2,
    );
    let (calls, laps) = series(&rep, "voltdb.invocations");
    assert!(laps >= 2);
    let ok = rep.measured.ok as f64;
    assert!(calls >= ok * 0.9 && calls <= ok * 1.1, "{calls}: ok {ok}");
    let rss = voltdb_rss();
    let kept = peak(&rep, "voltdb.rss_bytes");
    assert!(kept > rss / 2.0 && kept < rss * 2.0, "{kept} vs {rss}");
    let proc_rss = peak(&rep, "process.rss_bytes");
    assert!(
        proc_rss > kept / 2.0 && proc_rss < kept * 2.0,
        "{proc_rss} vs {kept}"
    );
    assert!(peak(&rep, "voltdb.java_used_bytes") > 1e6);
}

/// A source that cannot be sampled (a monitoring port nobody listens on)
/// is counted with its error, the run still passes, and the other source
/// is still sampled; `--server-stats off` samples nothing.
#[test]
fn a_failing_sampler_is_recorded_not_fatal() {
    need_server("nats", 4222);
    let port = free_port();
    let target = format!("nats://127.0.0.1:4222?monitor={port}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let r = loadrig(&[
        "run",
        "pubsub",
        "--target",
        &target,
        "--pubs",
        "1",
        "--subs",
        "1",
        "-n",
        "5000",
        // Paced over 2.5 s, so laps close while it runs (the drain ends
        // as soon as everything has arrived).
        "--rate",
        "2000",
        "--interval",
        "0.1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        r.stdout.contains("server stats: ") && r.stdout.contains("samples failed"),
        "{}",
        r.dump()
    );
    let rep = report(&out);
    assert_eq!(rep.measured.ok, 5000);
    let s = rep.server_stats.clone().expect("sampled");
    assert!(s.failures >= 1 && s.failures * 2 == s.samples, "{s:?}");
    assert!(
        s.last_error
            .as_deref()
            .is_some_and(|e| e.contains(&port.to_string())),
        "{s:?}"
    );
    assert!(rep
        .laps
        .iter()
        .any(|l| l.server.contains_key("process.rss_bytes")));
    assert!(rep
        .laps
        .iter()
        .all(|l| !l.server.contains_key("nats.in_msgs")));

    let off = dir.path().join("off.json");
    let r = loadrig(&[
        "run",
        "pubsub",
        "--target",
        &target,
        "--pubs",
        "1",
        "--subs",
        "1",
        "-n",
        "2000",
        "--server-stats",
        "off",
        "--out",
        off.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let rep = report(&off);
    assert!(rep.server_stats.is_none() && rep.laps.iter().all(|l| l.server.is_empty()));
}

/// A long run's report stays bounded: 12 s of 5 ms laps (up to 2,400
/// laps, as many as 40 minutes of one-second laps) keep the last 600 as
/// they were and merge the older ones 60 to one, losing no operation and
/// no time. A busy machine closes fewer laps (a late tick is skipped, and
/// the lap after it is longer), but far more than 600.
#[test]
fn a_long_run_keeps_a_bounded_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let r = loadrig(&[
        "run",
        "hello",
        "--target",
        "null://",
        "-d",
        "12",
        "-c",
        "2",
        "--threads",
        "1",
        "--interval",
        "0.005",
        "-q",
        "--server-stats",
        "off",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let rep = report(&out);
    let n = rep.laps.len();
    // 2,400 laps would be 600 recent and 30 merged (and a short last lap).
    assert!(n > 600 && n <= 600 + 30 + 1, "{n} laps");
    // The first lap is a merged one: 60 laps of at least 5 ms each.
    assert!(
        rep.laps[0].length_secs >= 0.295,
        "{}",
        rep.laps[0].length_secs
    );
    let ok: u64 = rep.laps.iter().map(|l| l.ok).sum();
    assert_eq!(ok, rep.measured.ok);
    let secs: f64 = rep.laps.iter().map(|l| l.length_secs).sum();
    assert!(
        (secs - rep.measured.elapsed_secs).abs() < 0.1,
        "{secs} vs {}",
        rep.measured.elapsed_secs
    );
    assert!(rep.laps.windows(2).all(|w| w[0].unix_ms <= w[1].unix_ms));
}

/// `plot` and `report` draw the client's and the server's resources
/// under throughput and latency, on the same time axis.
#[test]
fn plot_and_report_draw_resources_over_time() {
    let db = crate::common::redis_db();
    need_server("redis", 6379);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let r = loadrig(&[
        "run",
        "redis",
        "--target",
        "redis://127.0.0.1:6379",
        "--dbnum",
        db.arg,
        "--tests",
        "get",
        "-n",
        "30000",
        "-c",
        "4",
        "--interval",
        "0.2",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let svg = dir.path().join("p.svg");
    let p = loadrig(&["plot", out.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    assert_eq!(p.code, 0, "{}", p.dump());
    let text = std::fs::read_to_string(&svg).unwrap();
    let order: Vec<usize> = [
        "Throughput over time",
        "Latency over time",
        "CPU over time",
        "Memory over time",
        "Client bytes over time",
        "Connections over time",
        "Latency by percentile",
    ]
    .iter()
    .map(|t| text.find(t).unwrap_or_else(|| panic!("no chart {t}")))
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    for line in [
        "client rss",
        "redis.used_memory",
        "process.rss_bytes",
        "server process",
        "redis.connected_clients",
    ] {
        assert!(text.contains(line), "no line {line}");
    }
    let html = dir.path().join("r.html");
    let h = loadrig(&[
        "report",
        out.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert_eq!(h.code, 0, "{}", h.dump());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("CPU over time") && page.contains("Connections over time"));
}
