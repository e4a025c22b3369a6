//! The real binary against etcd: each of the guide's five tests verifies
//! on the one member (:2379) and on the three-member cluster
//! (:23791-23793), both started by `scripts/services up etcd
//! etcd-cluster`; and a member of a cluster of the test's own, killed in
//! the middle of a run: the run goes on on the other members, the
//! transactions lost with it are counted (in doubt), and the data still
//! verifies; `--bind` deals the etcd client's connections over the
//! source addresses, as it does the other targets'.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{
    assert_all_ok, assert_some_failed, assert_verified, free_port, need_server, run_reported,
    Running,
};

const TESTS: [&str; 5] = ["write1", "write10", "read10", "mix", "range"];

/// Each test on `url`, `n` transactions, over one dataset of 20,000 rows
/// (loaded by the first, reused by the others): all ok, verified.
fn every_test(url: &str, dataset: &str, n: u64) {
    let n_arg = n.to_string();
    for test in TESTS {
        let (r, report) = run_reported(&[
            "run",
            "kv",
            "--target",
            url,
            "--test",
            test,
            "--rows",
            "20000",
            "-n",
            &n_arg,
            "--clients",
            "50",
            "--dataset",
            dataset,
            "--max-error-rate",
            "0",
        ]);
        assert_eq!(r.code, 0, "{test}\n{}", r.dump());
        assert_all_ok(&r, &report, n);
        assert_verified(&r, &report);
        assert!(
            r.stdout.contains("durability: each commit is fsynced"),
            "{}",
            r.dump()
        );
        assert!(
            r.stdout
                .contains(&format!("test: {test} of FoundationDB's")),
            "{}",
            r.dump()
        );
    }
}

/// `--bind 127.0.0.2,127.0.0.3` with two connections to etcd: one leaves
/// from each address, as the kernel's socket table shows while the run
/// goes on (the gRPC client dials through the same path as the
/// hand-written sockets). Fails if the client connected from the address
/// the kernel picks (127.0.0.1).
#[test]
fn bind_deals_etcd_connections_over_source_addresses() {
    need_server("etcd", 2379);
    let mut run = Running::start(&[
        "run",
        "kv",
        "--target",
        "etcd://127.0.0.1:2379",
        "--test",
        "write1",
        "--rows",
        "2000",
        "--connections",
        "2",
        "--clients",
        "4",
        "-d",
        "30",
        "--rate",
        "100",
        "--bind",
        "127.0.0.2,127.0.0.3",
    ]);
    run.until_first_lap();
    let from = established_to(2379);
    let _ = Command::new("kill")
        .args(["-INT", &run.id().to_string()])
        .status();
    let r = run.finish();
    let count = |ip: &str| from.iter().filter(|a| a.as_str() == ip).count();
    assert!(
        count("127.0.0.2") >= 1 && count("127.0.0.3") >= 1,
        "sources of the connections to :2379: {from:?}\n{}",
        r.dump()
    );
}

/// The local IPv4 addresses of this host's established TCP connections to
/// `port` on 127.0.0.1 (`/proc/net/tcp`: addresses in hex, little-endian
/// per word on this machine's byte order; state 01 is established).
fn established_to(port: u16) -> Vec<String> {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    let addr = |hex: &str| {
        let (ip, port) = hex.split_once(':')?;
        let ip = u32::from_str_radix(ip, 16).ok()?;
        let port = u16::from_str_radix(port, 16).ok()?;
        Some((std::net::Ipv4Addr::from(u32::from_be(ip.to_le())), port))
    };
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (local, remote, state) = (addr(f.get(1)?)?, addr(f.get(2)?)?, *f.get(3)?);
            (state == "01" && remote == (std::net::Ipv4Addr::LOCALHOST, port))
                .then(|| local.0.to_string())
        })
        .collect()
}

#[test]
fn every_test_verifies_on_one_member() {
    need_server("etcd", 2379);
    every_test(
        "etcd://127.0.0.1:2379",
        &format!("it{}_one", std::process::id()),
        1000,
    );
}

#[test]
fn every_test_verifies_on_the_three_member_cluster() {
    for port in [23791, 23792, 23793] {
        need_server("etcd-cluster", port);
    }
    every_test(
        "etcd://127.0.0.1:23791,23792,23793",
        &format!("it{}_three", std::process::id()),
        1000,
    );
}

/// A three-member cluster of the test's own, in a scratch directory:
/// every member killed and reaped when dropped.
struct Cluster {
    members: Vec<std::process::Child>,
    clients: Vec<u16>,
    _dir: tempfile::TempDir,
}

impl Cluster {
    fn start() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let clients: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let peers: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let initial: Vec<String> = peers
            .iter()
            .enumerate()
            .map(|(i, p)| format!("m{i}=http://127.0.0.1:{p}"))
            .collect();
        let initial = initial.join(",");
        let members = (0..3)
            .map(|i| {
                let url = |p: u16| format!("http://127.0.0.1:{p}");
                Command::new("etcd")
                    .args(["--name", &format!("m{i}")])
                    .arg("--data-dir")
                    .arg(dir.path().join(format!("m{i}")))
                    .args(["--listen-client-urls", &url(clients[i])])
                    .args(["--advertise-client-urls", &url(clients[i])])
                    .args(["--listen-peer-urls", &url(peers[i])])
                    .args(["--initial-advertise-peer-urls", &url(peers[i])])
                    .args(["--initial-cluster", &initial])
                    .args(["--initial-cluster-token", "loadrig-it"])
                    .args(["--backend-batch-limit", "1000"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap_or_else(|e| {
                        panic!("etcd runs (`scripts/services up etcd` installs it): {e}")
                    })
            })
            .collect();
        let c = Cluster {
            members,
            clients,
            _dir: dir,
        };
        c.wait_for_a_leader();
        c
    }

    fn endpoints(&self) -> String {
        let all: Vec<String> = self
            .clients
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        all.join(",")
    }

    /// Until a write through every member commits (a leader elected, all
    /// three in it), or fail.
    fn wait_for_a_leader(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let ok = self.clients.iter().all(|p| {
                Command::new("etcdctl")
                    .env("ETCDCTL_API", "3")
                    .args(["--endpoints", &format!("127.0.0.1:{p}")])
                    .args(["--command-timeout", "2s", "put", "lr-ready", "1"])
                    .output()
                    .is_ok_and(|o| o.status.success())
            });
            if ok {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!(
            "the test's own etcd cluster (data in {}) did not elect a leader in 60 s",
            self._dir.path().display()
        );
    }

    /// The index of the member that leads now, or fail.
    fn leader(&self) -> usize {
        for (i, p) in self.clients.iter().enumerate() {
            let out = Command::new("etcdctl")
                .env("ETCDCTL_API", "3")
                .args(["--endpoints", &format!("127.0.0.1:{p}")])
                .args(["--command-timeout", "2s", "endpoint", "status"])
                .output()
                .expect("etcdctl runs");
            // ENDPOINT, ID, VERSION, DB SIZE, IS LEADER, ...
            let line = String::from_utf8_lossy(&out.stdout);
            if line.split(", ").nth(4) == Some("true") {
                return i;
            }
        }
        panic!("no member of the test's own cluster says it leads");
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for m in &mut self.members {
            let _ = m.kill();
            let _ = m.wait();
        }
    }
}

fn unix_ms() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map_or(0, |d| d.as_millis() as u64)
}

/// The leader is killed, the worst case: its calls in flight fail at
/// once as `io`, and the writes the two others had forwarded to it are
/// answered by etcd itself when its request timeout (5 s + two election
/// timeouts: 7 s here) runs out, also as `io`. Nothing waits for
/// `--timeout` (30 s here): the run ends with time to spare.
#[test]
fn a_member_killed_mid_run_costs_transactions_in_doubt_not_the_verification() {
    let mut cluster = Cluster::start();
    let url = format!("etcd://{}", cluster.endpoints());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let started = Instant::now();
    // 30 clients over the default one connection per member: the killed
    // member's connection has transactions in flight.
    let mut run = Running::start(&[
        "run",
        "kv",
        "--target",
        &url,
        "--test",
        "write10",
        "--rows",
        "5000",
        "--clients",
        "30",
        "-d",
        "5s",
        "--timeout",
        "30s",
        // A member's share in flight fails (about 1%): counted, in doubt,
        // and not what this test judges (the default gate is 1%).
        "--max-error-rate",
        "0.2",
        "--out",
        out.to_str().unwrap(),
    ]);
    run.until_first_lap();
    let leader = cluster.leader();
    let killed = &mut cluster.members[leader];
    killed.kill().unwrap();
    let killed_at = unix_ms();
    killed.wait().unwrap();
    let r = run.finish();
    let took = started.elapsed();
    let report = crate::common::report(&out);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_some_failed(&r, &report, 100);
    let m = &report.measured;
    let errors = |kinds: &[&str]| -> u64 {
        m.kinds
            .iter()
            .flat_map(|k| &k.errors)
            .filter(|(e, _)| kinds.contains(&e.as_str()))
            .map(|(_, n)| n)
            .sum()
    };
    assert!(errors(&["io"]) > 0, "no transaction in doubt\n{}", r.dump());
    assert_eq!(
        errors(&["timeout"]),
        0,
        "a call waited for --timeout\n{}",
        r.dump()
    );
    // 5 s of load, etcd's 7 s for the writes stranded on the others, the
    // start and the verification: far from the 30 s of --timeout.
    assert!(
        took < Duration::from_secs(25),
        "took {took:?}\n{}",
        r.dump()
    );
    // The killed member's calls fail when its socket closes: the first lap
    // with errors ends at most a lap (1 s) after the kill, with room.
    let first = report.laps.iter().find(|l| l.errors > 0);
    let first_ms = first.map_or(u64::MAX, |l| l.unix_ms);
    assert!(
        first_ms <= killed_at + 2_000,
        "the first errors came {} ms after the kill\n{}",
        first_ms.saturating_sub(killed_at),
        r.dump()
    );
    assert_verified(&r, &report);
    assert!(
        r.stdout.contains("in-doubt"),
        "the verification names what was in doubt\n{}",
        r.dump()
    );
}
