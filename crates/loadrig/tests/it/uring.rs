//! `--io uring` (docs/explanations/io-uring.md): each hand-written socket target run
//! through the engine threads' io_uring rings on the real servers,
//! verified; the system calls it makes counted with strace, against the
//! same run on epoll; links cut under it; a paced load on it.

use crate::common::{
    assert_all_ok, assert_verified, count_syscalls, hold, need_server, run_reported, Run,
};

/// `run WORKLOAD ARGS --io uring --threads 2`, its report checked to say
/// so: every operation of `n` ok and the verification held.
fn verified_over_uring(args: &[&str], n: u64) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend(["--io", "uring", "--threads", "2", "-q"]);
    let (r, report) = run_reported(&all);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(report.spec.io_uring, "the report does not say io_uring");
    assert!(
        r.stderr.contains(", direct, io_uring, ") || r.stdout.contains(", direct, io_uring, "),
        "the header does not say io_uring:\n{}",
        r.dump()
    );
    assert_all_ok(&r, &report, n);
    assert_verified(&r, &report);
}

#[test]
fn redis_over_uring_verifies() {
    let db = crate::common::redis_db();
    need_server("redis", 6379);
    verified_over_uring(
        &[
            "redis",
            "--target",
            "redis://127.0.0.1:6379",
            "--tests",
            "get,set",
            "-n",
            "20000",
            "-c",
            "20",
            "-P",
            "4",
            "--dbnum",
            db.arg,
        ],
        40_000,
    );
}

#[test]
fn memcached_text_and_binary_over_uring_verify() {
    let _counters = hold("memcached");
    need_server("memcached", 11211);
    verified_over_uring(&["memcache", "-n", "20000", "-c", "20"], 20_000);
    verified_over_uring(&["memcache", "-n", "20000", "-c", "20", "--binary"], 20_000);
}

#[test]
fn http_over_four_ports_on_uring_verifies() {
    need_server("nginx", 8088);
    verified_over_uring(
        &[
            "http",
            "-n",
            "20000",
            "-c",
            "16",
            "http://127.0.0.1:8088,8089,8090,8091/",
        ],
        20_000,
    );
}

#[test]
fn sql_clients_over_uring_verify() {
    // The Voter's tables are shared, and other tests kill the sessions.
    let _postgres = hold("postgres");
    let _mariadb = hold("mariadb");
    need_server("postgres", 5432);
    need_server("mariadb", 3306);
    for url in [
        "postgres://bench:bench@127.0.0.1/bench",
        "mysql://bench:bench@127.0.0.1/bench",
    ] {
        verified_over_uring(&["voter", "--target", url, "-n", "5000", "-c", "10"], 5_000);
        verified_over_uring(
            &[
                "kv",
                "--target",
                url,
                "--rows",
                "10000",
                "--dataset",
                "it_uring",
                "-n",
                "5000",
                "-c",
                "10",
            ],
            5_000,
        );
    }
}

#[test]
fn voltdb_over_uring_verifies() {
    // The other VoltDB tests change its catalog.
    let _catalog = hold("voltdb");
    need_server("voltdb", 21212);
    verified_over_uring(
        &[
            "voter",
            "--target",
            "voltdb://127.0.0.1:21212",
            "-n",
            "5000",
            "-c",
            "10",
        ],
        5_000,
    );
}

/// Publishers and subscribers on the ring: every message delivered to
/// every subscriber (the verification), nothing failed.
#[test]
fn pubsub_and_chat_over_uring_verify() {
    let _brokers = hold("brokers");
    need_server("nats", 4222);
    need_server("mosquitto", 1883);
    for target in ["nats://127.0.0.1:4222", "mqtt://127.0.0.1:1883"] {
        verified_over_uring(
            &[
                "pubsub", "--target", target, "--pubs", "2", "--subs", "2", "-n", "20000",
            ],
            20_000,
        );
        verified_over_uring(
            &[
                "chat", "--target", target, "-G", "5", "--cpg", "4", "-n", "2000",
            ],
            2_000,
        );
    }
}

/// A paced load on the ring (`--spin`: the thread never sleeps, so what
/// the sockets queued goes out between its polls): every operation done.
#[test]
fn a_paced_load_with_spin_runs_over_uring() {
    let db = crate::common::redis_db();
    need_server("redis", 6379);
    verified_over_uring(
        &[
            "redis",
            "--target",
            "redis://127.0.0.1:6379",
            "--tests",
            "get",
            "-n",
            "4000",
            "--rate",
            "4000",
            "--spin",
            "30us",
            "-c",
            "8",
            "--dbnum",
            db.arg,
        ],
        4_000,
    );
}

/// Run `loadrig ARGS` under strace: its sends and receives, and its
/// io_uring_enter calls, over every thread.
fn syscalls(args: &[&str]) -> (Run, u64, u64) {
    let (r, calls) = count_syscalls(args, &["sendto", "recvfrom", "io_uring_enter"]);
    (r, calls[0] + calls[1], calls[2])
}

/// The same 20,000 GETs on epoll make a send and a receive each; on the
/// ring, no send or receive of their own and fewer system calls in all.
/// So the run above really went through the ring.
#[test]
fn uring_makes_no_send_or_receive_per_request() {
    let db = crate::common::redis_db();
    need_server("redis", 6379);
    let n = 20_000;
    let args = |io: &'static str| {
        [
            "run", "redis", "--tests", "get", "-n", "20000", "-c", "20", "--dbnum", db.arg, "-q",
            "--io", io,
        ]
    };
    let (r, socket, entered) = syscalls(&args("epoll"));
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        socket >= 2 * n,
        "epoll: {socket} sends and receives for {n} GETs"
    );
    assert_eq!(entered, 0, "epoll entered io_uring");
    let (r, socket, entered) = syscalls(&args("uring"));
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        socket < n / 20,
        "uring: {socket} sends and receives for {n} GETs"
    );
    // How many completions one enter carries depends on the machine's
    // load: about 1,800 enters for the 20,000 GETs alone, 13,011 once in
    // the parallel suite. Fewer than one per GET (epoll: two) holds either
    // way, and fails if the ring took a call per request.
    assert!(
        entered > 0 && entered < n,
        "uring: {entered} io_uring_enter calls for {n} GETs"
    );
}
