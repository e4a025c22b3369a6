//! The redis workload on the real three-master Redis Cluster (started by
//! `scripts/services up redis-cluster` on 7001-7003): every
//! redis-benchmark test and memtier's mix routed by hash slot and
//! verified, `--cluster` as the peers spell it, and a reshard in the
//! middle of a run, whose redirects are followed and counted and whose
//! writes are all found afterwards: on a three-master cluster of the
//! test's own ([`own_cluster`]), so moving slots disturbs no other test.
//!
//! A cluster has database 0 only, so runs there share the key names (and
//! one's clean-up would take another's keys): each test on the shared
//! cluster holds it.

use std::process::Command;

use loadrig_spec::RedisTest;

use std::sync::MutexGuard;

use crate::common::{
    assert_all_ok, assert_verified, check_of, domain, hold, need_server, run_reported, verdict,
    Running,
};

const URL: &str = "redis+cluster://127.0.0.1:7001,7002,7003";

/// The cluster is there, and this test has it to itself.
fn need_cluster() -> MutexGuard<'static, ()> {
    need_server("redis-cluster", 7001);
    hold("redis-cluster")
}

/// `redis-cli` on node `port`, its output.
fn cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .expect("redis-cli runs");
    assert!(out.status.success(), "redis-cli {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Every redis-benchmark test, random keys over the whole keyspace (so
/// every master gets its share), each verified; nothing left afterwards.
#[test]
fn every_redis_benchmark_test_on_the_cluster() {
    let _cluster = need_cluster();
    let (r, report) = run_reported(&[
        "run", "redis", "--target", URL, "-n", "1000", "-r", "1000000", "-c", "10",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let tests = RedisTest::ALL.len() as u64;
    assert_eq!(report.measured.kinds.len() as u64, tests, "{}", r.dump());
    assert_all_ok(&r, &report, tests * 1000);
    assert_verified(&r, &report);
    let v = verdict(&report);
    // SET's and MSET's keys looked for one by one on their masters.
    assert_eq!(
        check_of(&report, "keys written (SET/MSET) and missing"),
        Some((0, 0)),
        "{v:?}"
    );
    assert!(v.summary.contains("key:* written, all there"), "{v:?}");
    assert!(v.summary.contains("counters +1,000"), "{v:?}");
}

/// `--cluster` as redis-benchmark spells it: the redis:// target is read
/// as a cluster's seed; SET and GET verified, GETs all hits.
#[test]
fn the_cluster_flag_as_the_peers_spell_it() {
    let _cluster = need_cluster();
    let (r, report) = run_reported(&[
        "run",
        "redis",
        "--cluster",
        "--target",
        "redis://127.0.0.1:7002",
        "--tests",
        "set,get",
        "-n",
        "2000",
        "-c",
        "8",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        r.stdout.contains("redis on redis+cluster://127.0.0.1:7002"),
        "{}",
        r.dump()
    );
    assert_all_ok(&r, &report, 4000);
    assert_verified(&r, &report);
    assert_eq!(domain(&report, "get.hits"), 2000);
}

/// `--no-cluster-tags`: the keys untagged, each to its own slot's master
/// (MSET split per slot); written and verified all the same.
#[test]
fn keys_without_the_cluster_tags() {
    let _cluster = need_cluster();
    let (r, report) = run_reported(&[
        "run",
        "redis",
        "--target",
        URL,
        "--no-cluster-tags",
        "--tests",
        "set,mset,incr",
        "-r",
        "1000000",
        "-n",
        "1000",
        "-c",
        "6",
        "-P",
        "16",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_all_ok(&r, &report, 3000);
    assert_verified(&r, &report);
    let v = verdict(&report);
    assert_eq!(
        check_of(&report, "keys written (SET/MSET) and missing"),
        Some((0, 0)),
        "{v:?}"
    );
    assert!(v.summary.contains("counters +1,000"), "{v:?}");
}

/// memtier's SET:GET mix over the cluster: the keys SET all found.
#[test]
fn memtier_mix_on_the_cluster() {
    let _cluster = need_cluster();
    let (r, report) = run_reported(&[
        "run",
        "redis",
        "--target",
        URL,
        "--ratio",
        "1:4",
        "--key-maximum",
        "50000",
        "-n",
        "10000",
        "-c",
        "8",
        "--key-prefix",
        "cluster-mix-",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_all_ok(&r, &report, 10_000);
    assert_verified(&r, &report);
    let v = verdict(&report);
    assert_eq!(
        check_of(&report, "keys SET and missing"),
        Some((0, 0)),
        "{v:?}"
    );
}

/// A three-master Redis Cluster of the test's own, on free ports
/// (each server's cluster bus on its port + 10000), its slots dealt by
/// `redis-cli --cluster create`: killed when dropped.
struct OwnCluster {
    servers: Vec<crate::common::OwnServer>,
}

impl OwnCluster {
    fn port(&self, i: usize) -> u16 {
        self.servers[i].port
    }
}

fn own_cluster() -> OwnCluster {
    let servers: Vec<_> = (0..3)
        .map(|_| {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().to_path_buf();
            let cmd = move |port: u16| {
                let mut cmd = Command::new("redis-server");
                cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                    .args([
                        "--cluster-enabled",
                        "yes",
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                    ])
                    .arg("--cluster-config-file")
                    .arg(path.join(format!("nodes-{port}.conf")))
                    .arg("--dir")
                    .arg(&path);
                cmd
            };
            crate::common::OwnServer::start(cmd, Some(dir), "scripts/services up redis")
        })
        .collect();
    let nodes: Vec<String> = servers
        .iter()
        .map(|s| format!("127.0.0.1:{}", s.port))
        .collect();
    let out = Command::new("redis-cli")
        .args(["--cluster", "create"])
        .args(&nodes)
        .args(["--cluster-replicas", "0", "--cluster-yes"])
        .output()
        .expect("redis-cli runs");
    assert!(out.status.success(), "cluster create: {out:?}");
    let cluster = OwnCluster { servers };
    // Every node agrees the slots are covered before the load starts.
    for _ in 0..200 {
        let ok =
            (0..3).all(|i| cli(cluster.port(i), &["cluster", "info"]).contains("cluster_state:ok"));
        if ok {
            return cluster;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("the test's own cluster never reached cluster_state:ok");
}

/// Slots move from one master to another while SETs run (redis-cli
/// --cluster reshard: MIGRATING/IMPORTING, MIGRATE, SETSLOT NODE) on a
/// cluster of the test's own: the run follows MOVED and ASK, counts them,
/// and every key it wrote is found.
#[test]
fn a_reshard_in_the_middle_of_a_run() {
    let cluster = own_cluster();
    let (p1, p2) = (cluster.port(0), cluster.port(1));
    let (a, b) = (cli(p1, &["cluster", "myid"]), cli(p2, &["cluster", "myid"]));
    let first = format!("127.0.0.1:{p1}");
    let reshard = |from: &str, to: &str| {
        let out = Command::new("redis-cli")
            .args(["--cluster", "reshard", &first, "--cluster-from", from])
            .args([
                "--cluster-to",
                to,
                "--cluster-slots",
                "300",
                "--cluster-yes",
            ])
            .output()
            .expect("redis-cli runs");
        assert!(out.status.success(), "reshard: {out:?}");
    };
    let url = format!("redis+cluster://127.0.0.1:{p1},{p2},{}", cluster.port(2));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut run = Running::start(&[
        "run",
        "redis",
        "--target",
        &url,
        "--tests",
        "set,incr",
        "-r",
        "1000000",
        "-n",
        "30000",
        "-c",
        "10",
        "--rate",
        "5000",
        // MIGRATE blocks a master while it moves a slot's keys: on a busy
        // machine an answer may wait longer than the default 10 s. What
        // this test judges is that nothing is lost, not how long it took.
        "--timeout",
        "120",
        "--interval",
        "0.5",
        "--out",
        out.to_str().unwrap(),
    ]);
    run.until_first_lap();
    reshard(&a, &b);
    let r = run.finish();
    let report = crate::common::report(&out);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_all_ok(&r, &report, 60_000);
    assert_verified(&r, &report);
    let redirects = domain(&report, "cluster.moved") + domain(&report, "cluster.ask");
    assert!(redirects > 0, "no redirect followed: {}", r.dump());
    assert!(
        r.stdout.contains("cluster redirects followed: "),
        "{}",
        r.dump()
    );
    let v = verdict(&report);
    assert_eq!(
        check_of(&report, "keys written (SET/MSET) and missing"),
        Some((0, 0)),
        "{v:?}"
    );
}

/// The tagged `key:{???}:*` names on each master, with its port.
fn tagged_keys() -> Vec<(u16, String)> {
    let mut keys = Vec::new();
    for port in [7001, 7002, 7003] {
        let found = cli(port, &["--scan", "--pattern", "key:{???}:*"]);
        keys.extend(found.lines().map(|k| (port, k.to_string())));
    }
    keys
}

/// `commands` (one a line) piped to `redis-cli` on node `port`.
fn pipe(port: u16, commands: &str) {
    use std::io::Write;
    let mut child = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("redis-cli runs");
    let mut stdin = child.stdin.take().expect("a pipe");
    stdin
        .write_all(commands.as_bytes())
        .expect("redis-cli reads");
    drop(stdin);
    assert!(child.wait().expect("redis-cli ends").success());
}

/// Delete `keys` on their masters.
fn delete(keys: &[(u16, String)]) {
    for port in [7001, 7002, 7003] {
        let dels: String = keys
            .iter()
            .filter(|k| k.0 == port)
            .map(|k| format!("DEL {}\n", k.1))
            .collect();
        pipe(port, &dels);
    }
}

/// A SET run on the cluster, slowed so that its first lap comes well
/// before its end; its report goes to `out`.
fn slow_sets(out: &std::path::Path) -> Running {
    let mut run = Running::start(&[
        "run",
        "redis",
        "--target",
        URL,
        "--tests",
        "set",
        "-r",
        "100000000",
        "-n",
        "12000",
        "-c",
        "4",
        "--rate",
        "4000",
        "--interval",
        "0.5",
        "--out",
        out.to_str().unwrap(),
    ]);
    run.until_first_lap();
    run
}

/// Writes lost behind loadrig's back: the keys its first lap SET are
/// deleted while it runs. Their names are not found, nor by the SCAN
/// that follows, so verification fails (exit 1) and counts them missing.
#[test]
fn keys_deleted_behind_a_cluster_run_fail_its_verification() {
    let _cluster = need_cluster();
    delete(&tagged_keys());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let run = slow_sets(&out);
    let lost = tagged_keys();
    delete(&lost);
    let r = run.finish();
    delete(&tagged_keys());
    assert!(!lost.is_empty(), "nothing written by the first lap");
    assert_eq!(r.code, 1, "{}", r.dump());
    assert!(r.stdout.contains("verify ... FAILED"), "{}", r.dump());
    let report = crate::common::report(&out);
    let (expected, missing) = check_of(&report, "keys written (SET/MSET) and missing")
        .unwrap_or_else(|| panic!("no check of the keys: {}", r.dump()));
    // Among 10^8 numbers, a later SET of a deleted key's number (which
    // would bring it back) is all but impossible.
    assert_eq!(expected, 0);
    assert!(
        missing > 0 && missing <= lost.len() as i64,
        "{missing} missing of {} deleted: {}",
        lost.len(),
        r.dump()
    );
}

/// A key found under none of its candidate names: one key the first lap
/// wrote is renamed behind loadrig's back to a tag no connection uses
/// (`{~~~}`, the same number and data). Verification looks for it by
/// SCAN, finds it, and passes.
#[test]
fn a_key_under_another_tag_is_found_by_scan() {
    let _cluster = need_cluster();
    delete(&tagged_keys());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let run = slow_sets(&out);
    let keys = tagged_keys();
    let (port, key) = keys.first().expect("a key written by the first lap");
    let number = key.rsplit(':').next().expect("key:{tag}:NUMBER");
    let value = cli(*port, &["GET", key]);
    let moved = format!("key:{{~~~}}:{number}");
    // -c: redis-cli follows MOVED to the new name's master.
    let out_set = Command::new("redis-cli")
        .args(["-c", "-h", "127.0.0.1", "-p", "7001", "SET", &moved, &value])
        .output()
        .expect("redis-cli runs");
    assert!(out_set.status.success(), "{out_set:?}");
    delete(&[(*port, key.clone())]);
    let r = run.finish();
    let leftover = Command::new("redis-cli")
        .args(["-c", "-h", "127.0.0.1", "-p", "7001", "DEL", &moved])
        .output()
        .expect("redis-cli runs");
    delete(&tagged_keys());
    assert!(leftover.status.success());
    assert_eq!(r.code, 0, "{}", r.dump());
    let report = crate::common::report(&out);
    assert_verified(&r, &report);
    assert_eq!(
        check_of(&report, "keys written (SET/MSET) and missing"),
        Some((0, 0)),
        "{}",
        r.dump()
    );
    let v = verdict(&report);
    assert!(v.summary.contains("(1 looked for by SCAN)"), "{v:?}");
}
