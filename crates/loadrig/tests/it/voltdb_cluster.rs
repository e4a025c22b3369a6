//! The Voter on VoltDB's own three-node cluster (started by
//! `scripts/services up voltdb-cluster`: clients on 21231-21233, k-factor
//! 1), one node killed with SIGKILL in the middle of a run: the run goes
//! on on the two survivors, the calls the dead node took with it are
//! counted as errors and as votes in doubt, and the server's counts still
//! agree. The killed node is then started again by the same script; it
//! rejoins, and a second run finds the cluster whole.
//!
//! The test kills and restarts a node of the shared cluster: it holds the
//! cluster's lock (the same one as the single node's, so the two VoltDB
//! loads do not share the two cores either).

use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::common::{
    assert_all_ok, assert_some_failed, assert_verified, hold, need_server, report, run_reported,
    Run, Running,
};
use crate::voltdb::{assert_lost_in_doubt, clear_leftovers_on};

const PORTS: [u16; 3] = [21231, 21232, 21233];
const URL: &str = "voltdb://127.0.0.1:21231,21232,21233";
/// The node killed: not the first, whose connection the server statistics
/// and the first admin calls would use, so that what is tested is the
/// engine's and the verification's failover, not a lucky pick.
const VICTIM: u16 = 21232;

/// `scripts/services ARGS voltdb-cluster`.
fn services(cmd: &str) -> Run {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/services");
    Command::new(script)
        .args([cmd, "voltdb-cluster"])
        .output()
        .expect("scripts/services runs")
        .into()
}

/// The pid listening on `port`, as `ss` shows it.
fn listener(port: u16) -> Option<u32> {
    let out = Command::new("ss")
        .args(["-ltnpH", &format!("sport = :{port}")])
        .output()
        .expect("ss runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let digits: String = text
        .split("pid=")
        .nth(1)?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The whole cluster answers: a node a failed earlier run left dead
/// rejoins first.
fn whole() {
    let up = services("up");
    assert_eq!(up.code, 0, "the cluster is not whole:\n{}", up.dump());
    assert!(up.stdout.contains(" x3 k=1 "), "{}", up.dump());
}

#[test]
fn voltdb_cluster_node_killed_mid_run_then_rejoined() {
    need_server("voltdb-cluster", PORTS[0]);
    let _cluster = hold("voltdb");
    whole();
    clear_leftovers_on(PORTS[0]);

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("kill.json");
    let mut run = Running::start(&[
        "run",
        "voter",
        "--target",
        URL,
        "--clients",
        "48",
        "--duration",
        "8",
        "--interval",
        "0.5",
        // The dead node's calls fail: counted and in doubt, not judged by
        // the failure gate here.
        "--max-error-rate",
        "0.2",
        "--out",
        out.to_str().unwrap(),
    ]);
    // Prepare compiles and loads the procedures; kill once the first lap
    // shows the load running on all three nodes.
    run.until_first_lap();
    let pid = listener(VICTIM).expect("a VoltDB node listens on 21232");
    let killed = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success(), "VoltDB node {pid} was not running");
    let killed_ms = now_ms();
    let r = run.finish();
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        r.stdout.contains("48 clients over 3 connections"),
        "{}",
        r.dump()
    );
    assert!(r.stdout.contains("verify ... ok ("), "{}", r.dump());

    let rep = report(&out);
    assert_some_failed(&r, &rep, 100);
    assert_verified(&r, &rep);
    // The link to the dead node came back on a survivor.
    assert!(rep.measured.reconnects >= 1, "no reconnect: {}", r.dump());
    // The run went on on the survivors: votes were acknowledged in the
    // laps that began after the kill.
    let after: u64 = rep
        .laps
        .iter()
        .filter(|l| l.unix_ms >= killed_ms + (l.length_secs * 1000.0) as u64)
        .map(|l| l.ok)
        .sum();
    assert!(after >= 100, "{after} votes after the kill: {}", r.dump());
    // The calls the node took with it (on its own link, and those the
    // survivors had sent to its partitions: RESPONSE_UNKNOWN) are the votes
    // the verification allowed for, and nothing else.
    assert_lost_in_doubt(&r, &rep);

    // The killed node started again on its root: it rejoins, and the
    // next run is dealt over all three nodes, every vote acknowledged.
    assert!(listener(VICTIM).is_none(), "21232 still listens");
    whole();
    let (r, rep) = run_reported(&[
        "run",
        "voter",
        "--target",
        URL,
        "--clients",
        "30",
        "-n",
        "3000",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        r.stdout.contains("30 clients over 3 connections"),
        "{}",
        r.dump()
    );
    assert_all_ok(&r, &rep, 3000);
    assert_verified(&r, &rep);
}
