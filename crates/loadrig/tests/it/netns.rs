//! Simulated hosts, for real: network namespaces joined by veth pairs to
//! a bridge (`scripts/hosts`), each with its own address. A Redis started
//! inside the server namespace listens on that namespace's address only;
//! three client namespaces each run one shard of one run with one
//! `--start-at`; their reports (read from the shards' standard output, as
//! `kubectl logs` would hand them over) are merged with the prepare record
//! and verified once, and teardown removes the data. Needs root and
//! iproute2's `ip` (and redis-server, redis-cli): where namespaces cannot
//! be made the test fails, naming what is missing.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{report, Run, BIN};
use crate::phases::{assert_sum_and_common_start, merge_logs, start_in};

const PORT: &str = "6390";

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/hosts")
}

/// Fail (never skip) naming what this machine lacks for namespaces.
fn need_namespaces() {
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(str::to_string))
        })
        .unwrap_or_default();
    assert_eq!(
        uid, "0",
        "the namespace test needs root to make network namespaces (ip netns add); \
         it runs as effective uid {uid}"
    );
    for (tool, package) in [
        ("ip", "iproute2"),
        ("redis-server", "redis-server"),
        ("redis-cli", "redis-tools"),
    ] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            found,
            "the namespace test needs {tool} (apt-get install {package}; scripts/services up redis installs it)"
        );
    }
}

/// The namespaces `PREFIX0..PREFIX3` and what runs in them, removed when
/// dropped, also when the test fails.
struct Hosts {
    prefix: String,
    server: Option<Child>,
}

impl Hosts {
    fn up(n: u32) -> Hosts {
        // Unique per test process: a failed run's leftovers or another
        // checkout's test do not collide.
        let prefix = format!("lrn{}", std::process::id() % 1_000_000);
        let hosts = Hosts {
            prefix,
            server: None,
        };
        let out = Command::new(script())
            .args(["up", &n.to_string(), &hosts.prefix])
            .output()
            .expect("scripts/hosts runs");
        assert!(
            out.status.success(),
            "scripts/hosts up {n} {} failed: {}",
            hosts.prefix,
            String::from_utf8_lossy(&out.stderr)
        );
        hosts
    }

    fn ns(&self, k: u32) -> String {
        format!("{}{k}", self.prefix)
    }

    /// `COMMAND...` in namespace k.
    fn exec(&self, k: u32, command: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.ns(k)]).args(command);
        cmd.env("NO_COLOR", "1");
        cmd
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        if let Some(mut s) = self.server.take() {
            let _ = s.kill();
            let _ = s.wait();
        }
        let _ = Command::new(script()).args(["down", &self.prefix]).status();
    }
}

/// The address of host k (scripts/hosts: 10.77.0.(k+1)).
fn addr(k: u32) -> String {
    format!("10.77.0.{}", k + 1)
}

/// redis-cli from host k on the workload's database (the server's
/// default: the workload sends SELECT only with `--dbnum`).
fn redis_cli(hosts: &Hosts, k: u32, args: &[&str]) -> String {
    let mut all = vec!["redis-cli", "-h", "", "-p", PORT];
    let a = addr(0);
    all[2] = &a;
    all.extend_from_slice(args);
    let out = hosts.exec(k, &all).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn three_client_hosts_run_one_sharded_run_against_a_server_host() {
    need_namespaces();
    let mut hosts = Hosts::up(4);
    let server_addr = addr(0);
    hosts.server = Some(
        hosts
            .exec(
                0,
                &[
                    "redis-server",
                    "--bind",
                    &server_addr,
                    "--port",
                    PORT,
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--protected-mode",
                    "no",
                ],
            )
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts in the server namespace"),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while redis_cli(&hosts, 1, &["ping"]) != "PONG" {
        assert!(
            Instant::now() < deadline,
            "redis-server in {} did not answer on {server_addr}:{PORT} from {}",
            hosts.ns(0),
            hosts.ns(1)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let url = format!("redis://{server_addr}:{PORT}");
    let dir = tempfile::tempdir().unwrap();
    let prep = dir.path().join("prep.json");
    let merged_path = dir.path().join("merged.json");
    let work = [
        "redis",
        "--tests",
        "incr,lpush",
        "-n",
        "6000",
        "-c",
        "4",
        "--target",
        &url,
    ];
    let loadrig_in = |k: u32, args: &[&str]| -> Run {
        let mut all = vec![BIN];
        all.extend_from_slice(args);
        hosts.exec(k, &all).output().unwrap().into()
    };

    let mut args = vec!["prepare"];
    args.extend(work);
    args.extend(["--out", prep.to_str().unwrap()]);
    let r = loadrig_in(1, &args);
    assert_eq!(r.code, 0, "{}", r.dump());

    let start = start_in(3);
    let at = start.to_string();
    let shards: Vec<Child> = (1..=3)
        .map(|k| {
            let shard = format!("{}/3", k - 1);
            let mut all = vec![BIN, "run"];
            all.extend(work);
            all.extend(["--shard", &shard, "--no-prepare", "--start-at", &at]);
            all.extend(["--out", "-", "-q"]);
            hosts
                .exec(k, &all)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let runs: Vec<Run> = shards
        .into_iter()
        .map(|c| c.wait_with_output().unwrap().into())
        .collect();
    let (reports, _) = merge_logs(&runs, &prep, &merged_path);
    let merged = report(&merged_path);
    assert_sum_and_common_start(&merged, &reports, start * 1000);
    assert_eq!(merged.measured.ok, 12_000, "6,000 INCR + 6,000 LPUSH");
    assert_eq!(redis_cli(&hosts, 2, &["llen", "mylist"]), "6000");

    let v = loadrig_in(2, &["verify", merged_path.to_str().unwrap()]);
    assert_eq!(v.code, 0, "{}", v.dump());
    assert!(
        v.stdout
            .contains("verify ... ok (counters +6,000, mylist +6,000)"),
        "{}",
        v.dump()
    );

    let mut args = vec!["teardown"];
    args.extend(work);
    let t = loadrig_in(3, &args);
    assert_eq!(t.code, 0, "{}", t.dump());
    assert_eq!(
        redis_cli(&hosts, 3, &["dbsize"]),
        "0",
        "teardown removed the keys"
    );
}
