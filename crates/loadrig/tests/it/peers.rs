//! The peers' own command lines after `loadrig`: each command line of the
//! Rai DS guide's scripts (graph/start_wrk.sh, start_rb.sh, rb_slat.sh,
//! start_ms.sh and its ms.cfg) and of NATS's benchmarking tutorial
//! (nats-bench), word for word but with the counts and times scaled down
//! (each test says how), against the real servers; the output read as the
//! guide's scripts read it. Each peer's flag list is a golden file, and
//! flags not taken end the run at once, named, with exit 2.

use crate::common::{hold, loadrig, need_server, Run};
use crate::golden::golden;
use loadrig_report::fmt::group;

const PEERS: [&str; 6] = [
    "redis-benchmark",
    "memtier_benchmark",
    "memaslap",
    "nats-bench",
    "wrk",
    "pgbench",
];

#[test]
fn each_peers_flag_list_is_golden() {
    for peer in PEERS {
        let r = loadrig(&[peer, "--help"]);
        assert_eq!(r.code, 0, "{}", r.dump());
        golden(&format!("peers-{peer}-help.txt"), &r.stdout);
    }
}

#[test]
fn flags_not_taken_are_named_with_exit_2() {
    for (args, named) in [
        (&["redis-benchmark", "-I"][..], "redis-benchmark -I: "),
        (
            &["redis-benchmark", "-l", "-t", "get"][..],
            "redis-benchmark -l: ",
        ),
        (
            &["redis-benchmark", "--bogus"][..],
            "redis-benchmark --bogus: not a flag",
        ),
        (
            &["memtier_benchmark", "--cluster-mode"][..],
            "memtier_benchmark --cluster-mode: ",
        ),
        (
            &["memaslap", "-U", "-s", "127.0.0.1:11211"][..],
            "memaslap -U: ",
        ),
        (&["nats-bench", "-tls", "foo"][..], "nats-bench -tls: "),
        (
            &["wrk", "-s", "x.lua", "http://127.0.0.1:8088/"][..],
            "wrk -s: ",
        ),
        (&["wrk", "-t2"][..], "wrk URL: "),
        // A bad value is refused by the run line's checks, which say so.
        (
            &["redis-benchmark", "-c", "abc"][..],
            "redis-benchmark as `loadrig run redis --clients abc`: invalid value 'abc'",
        ),
    ] {
        let r = loadrig(args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.dump());
        assert!(r.stdout.is_empty(), "{args:?}: nothing ran: {}", r.dump());
        assert_eq!(r.stderr.lines().count(), 1, "{args:?}: {}", r.dump());
        assert!(
            r.stderr.starts_with(&format!("error: {named}")),
            "{args:?}: {}",
            r.dump()
        );
    }
}

/// The rows of redis-benchmark's CSV after its header, as (test, rps).
fn csv_rows(r: &Run) -> Vec<(String, f64)> {
    let mut lines = r.stdout.lines();
    assert_eq!(
        lines.next(),
        Some("\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\""),
        "{}",
        r.dump()
    );
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').map(|c| c.trim_matches('"')).collect();
            assert_eq!(f.len(), 8, "{l}");
            (f[0].to_string(), f[1].parse().unwrap())
        })
        .collect()
}

#[test]
fn redis_benchmark_lines_of_the_guide() {
    need_server("redis", 6379);
    let _db0 = hold("redis-db0");
    // The bar chart: `-n 100000` scaled to 5000 a test (the default tests).
    let r = loadrig(&[
        "redis-benchmark",
        "-h",
        "127.0.0.1",
        "-p",
        "6379",
        "-c",
        "50",
        "-P",
        "128",
        "-n",
        "5000",
        "--csv",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let rows = csv_rows(&r);
    // redis-benchmark's default tests, in its order, titled as it titles them.
    let names: Vec<&str> = rows.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        names,
        [
            "PING_INLINE",
            "PING_MBULK",
            "SET",
            "GET",
            "INCR",
            "LPUSH",
            "RPUSH",
            "LPOP",
            "RPOP",
            "SADD",
            "HSET",
            "SPOP",
            "ZADD",
            "ZPOPMIN",
            "LPUSH (needed to benchmark LRANGE)",
            "LRANGE_100 (first 100 elements)",
            "LRANGE_300 (first 300 elements)",
            "LRANGE_500 (first 450 elements)",
            "LRANGE_600 (first 600 elements)",
            "MSET (10 keys)",
            "XADD",
        ]
    );
    assert!(rows.iter().all(|(_, rps)| *rps > 0.0), "{rows:?}");

    // start_rb.sh's record first, verbatim; then its load, `-n 1000000000`
    // (stopped by a signal after 30 s in the guide) scaled to 20000.
    let r = loadrig(&[
        "redis-benchmark",
        "-h",
        "127.0.0.1",
        "-p",
        "6379",
        "-d",
        "128",
        "-n",
        "1",
        "-c",
        "1",
        "-t",
        "set",
        "--csv",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_eq!(csv_rows(&r).len(), 1);
    let r = loadrig(&[
        "redis-benchmark",
        "-h",
        "127.0.0.1",
        "-p",
        "6379",
        "-n",
        "20000",
        "-P",
        "128",
        "-c",
        "50",
        "-t",
        "get",
        "--csv",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let rows = csv_rows(&r);
    assert!(
        rows.len() == 1 && rows[0].0 == "GET" && rows[0].1 > 0.0,
        "{rows:?}"
    );
    assert!(r.stderr.contains("20,000 ops"), "{}", r.dump());

    // rb_slat.sh at pipeline 4: `-n $((4 * 100000))` scaled to 4 * 2000.
    let r = loadrig(&[
        "redis-benchmark",
        "-h",
        "127.0.0.1",
        "-p",
        "6379",
        "-n",
        "8000",
        "-P",
        "4",
        "-c",
        "1",
        "-t",
        "get",
        "--csv",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        r.stderr.contains("GET: 8,000 hits, 0 misses") || r.stderr.contains("8,000"),
        "{}",
        r.dump()
    );
    assert_eq!(csv_rows(&r).len(), 1);
}

#[test]
fn redis_benchmark_quiet_and_a_command() {
    need_server("redis", 6379);
    let _db0 = hold("redis-db0");
    let r = loadrig(&["redis-benchmark", "-t", "set,get", "-n", "3000", "-q"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    for t in ["SET: ", "GET: "] {
        assert!(
            r.stdout
                .lines()
                .any(|l| l.starts_with(t) && l.contains(" requests per second, p50=")),
            "{t}: {}",
            r.dump()
        );
    }
    // redis-benchmark -q's lines alone on standard output, loadrig's on standard error.
    assert_eq!(r.stdout.lines().count(), 2, "{}", r.dump());
    assert!(r.stderr.contains(" 6,000 ops"), "{}", r.dump());
    let r = loadrig(&[
        "redis-benchmark",
        "-n",
        "500",
        "-c",
        "5",
        "-q",
        "INCR",
        "peers:counter",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stderr.contains(" 500 ops"), "{}", r.dump());
}

#[test]
fn memtier_benchmark_multiplies_clients_and_requests() {
    need_server("redis", 6379);
    let _db0 = hold("redis-db0");
    // 2 clients per thread x 2 threads, 250 requests per client: 1,000.
    let r = loadrig(&[
        "memtier_benchmark",
        "-s",
        "127.0.0.1",
        "-p",
        "6379",
        "-c",
        "2",
        "-t",
        "2",
        "-n",
        "250",
        "--ratio=1:4",
        "-d",
        "64",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.contains("4 clients"), "{}", r.dump());
    let overall = r
        .stdout
        .lines()
        .find(|l| l.starts_with("overall:"))
        .unwrap();
    assert!(overall.contains(" 1,000 ops"), "{overall}");
    // memtier's closing table, in its layout; GETs are hits or misses.
    let table: Vec<&str> = r.stdout.lines().skip_while(|l| *l != "ALL STATS").collect();
    assert_eq!(table.len(), 8, "{}", r.dump());
    assert_eq!(
        table[2],
        "Type         Ops/sec     Hits/sec   Misses/sec    Avg. Latency     p50 Latency     \
         p99 Latency   p99.9 Latency       KB/sec"
    );
    let cells = |row: &str| -> Vec<String> {
        let line = table.iter().find(|l| l.starts_with(row)).unwrap();
        line.split_whitespace().map(str::to_string).collect()
    };
    let (gets, totals) = (cells("Gets"), cells("Totals"));
    let num = |s: &str| s.parse::<f64>().unwrap();
    assert!(num(&totals[1]) > 0.0, "{totals:?}");
    let get_rate = num(&gets[1]);
    assert!(
        (num(&gets[2]) + num(&gets[3]) - get_rate).abs() < 0.02,
        "{gets:?}"
    );
}

#[test]
fn memaslap_line_of_the_guide() {
    need_server("memcached", 11211);
    let _memcached = hold("memcached");
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("ms.cfg");
    // start_ms.sh's ms.cfg with its datasize 128.
    std::fs::write(
        &cfg,
        "# start_len end_len proportion (all 16 bytes)\nkey\n16 16 1\n\
         # start_len end_len proportion (all 64 bytes)\nvalue\n128 128 1\n\
         # cmd_type(0:set,1:get) cmd_proportion (90% read, 10% write)\ncmd\n0 0\n1 1\n",
    )
    .unwrap();
    // start_ms.sh's line, `-t 30s` scaled to 2s.
    let r = loadrig(&[
        "memaslap",
        "-s",
        "127.0.0.1:11211",
        "-d",
        "1",
        "-B",
        "-c",
        "50",
        "-o",
        "1",
        "-t",
        "2s",
        "-F",
        cfg.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stderr.contains("memaslap -o: "), "the note: {}", r.dump());
    // The guide's script: `grep TPS`, the seventh word.
    let tps = r.stdout.lines().find(|l| l.contains("TPS")).unwrap();
    let words: Vec<&str> = tps.split_whitespace().collect();
    let ops: u64 = words[4].parse().unwrap();
    let rate: f64 = words[6].parse().unwrap();
    assert!(ops > 0 && rate > 0.0, "{tps}");
    // Every operation a get (cmd 0 0, 1 1) of 16-byte keys, binary.
    assert!(
        r.stdout
            .contains(&format!("get: 0 hits, {} misses", group(ops))),
        "{}",
        r.dump()
    );
}

#[test]
fn nats_bench_line_of_the_tutorial() {
    let _brokers = hold("brokers");
    need_server("nats", 4222);
    // `nats-bench -np 1 -ns 1 -n 100000 -ms 16 foo`, -n scaled to 20000.
    let r = loadrig(&[
        "nats-bench",
        "-np",
        "1",
        "-ns",
        "1",
        "-n",
        "20000",
        "-ms",
        "16",
        "foo",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        r.stderr.contains("-ms 16: sent as 24 bytes"),
        "{}",
        r.dump()
    );
    assert!(r.stdout.contains("NATS Pub/Sub stats: "), "{}", r.dump());
    let sides: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("  [1] ") && l.ends_with("(20000 msgs)"))
        .collect();
    assert_eq!(
        sides.len(),
        2,
        "the publisher and the subscriber: {}",
        r.dump()
    );
}

#[test]
fn wrk_line_of_the_guide() {
    need_server("nginx", 8088);
    // start_wrk.sh's line, `-d60s` scaled to 2s.
    let r = loadrig(&[
        "wrk",
        "-t1",
        "-c50",
        "-d2s",
        "http://127.0.0.1:8088/index.html",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        r.stdout.contains(
            "Running 2s test @ http://127.0.0.1:8088/index.html\n  1 threads and 50 connections\n"
        ),
        "{}",
        r.dump()
    );
    // The guide's script: `grep Requests | cut -d ':' -f 2`.
    let line = r.stdout.lines().find(|l| l.contains("Requests")).unwrap();
    let rate: f64 = line.split(':').nth(1).unwrap().trim().parse().unwrap();
    assert!(rate > 0.0, "{line}");
}
