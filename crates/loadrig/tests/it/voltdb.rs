//! The Voter and Hello on the real VoltDB (started by `scripts/services up
//! voltdb`), through loadrig's native driver: 200 clients with the vote
//! limit checked by VoltDB's own sqlcmd, Hello, several hosts, a link cut
//! mid-run, the Erlvolt presets, three processes started in the same
//! second, and the line a user gets when nothing listens.
//!
//! Runs share the server's one schema (a run's teardown drops it), so
//! every case runs in one test, in turn.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{hold, json, loadrig, need_server, Relay};

const URL: &str = "voltdb://127.0.0.1:21212";

/// SQL through VoltDB's sqlcmd (scripts/voltdb/sqlcmd): whether it
/// succeeded, and its output (standard error when it failed).
fn try_sqlcmd(sql: &str) -> Result<String, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/voltdb/sqlcmd");
    let mut child = Command::new(script)
        .arg("--output-format=csv")
        .arg("--output-skip-metadata")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("scripts/voltdb/sqlcmd runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(sql.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    // CSV quotes every cell.
    Ok(String::from_utf8_lossy(&out.stdout)
        .replace('"', "")
        .trim()
        .to_string())
}

fn sqlcmd(sql: &str) -> String {
    try_sqlcmd(sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// 200 clients on one connection (VoltDB's default: one per host) and a
/// small phone space, so the limit is hit often; kept, then checked by sqlcmd.
fn voter_with_200_clients() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("voter.json");
    let r = loadrig(&[
        "run",
        "voter",
        "--target",
        URL,
        "--clients",
        "200",
        "--phones",
        "50",
        "--max-votes",
        "2",
        "-n",
        "20000",
        "--keep",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.contains("verify ... ok ("), "{}", r.dump());
    assert!(
        r.stdout.contains("200 clients over 1 connections"),
        "{}",
        r.dump()
    );
    let most: i64 = sqlcmd("SELECT MAX(num_votes) FROM v_votes_by_phone_number;")
        .parse()
        .unwrap();
    assert!((1..=2).contains(&most), "a phone holds {most} votes");
    let report = json(&out);
    let env = &report["environment"];
    assert!(
        env["server_version"]
            .as_str()
            .unwrap_or_default()
            .starts_with("VoltDB 9."),
        "{env}"
    );
    // The votes are the server's: per-contestant totals from sqlcmd equal
    // the client's accepted counts.
    let rows = sqlcmd("SELECT COUNT(*) FROM votes;");
    let accepted: i64 = report["verification"]["verdict"]["checks"][0]["expected"]
        .as_i64()
        .unwrap();
    assert_eq!(rows.parse::<i64>().unwrap(), accepted, "{report}");
    // Without --keep the run removes what it made, procedures and classes too.
    let r = loadrig(&["run", "voter", "--target", URL, "-n", "100"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let gone = try_sqlcmd("SELECT COUNT(*) FROM votes;");
    assert!(
        gone.as_ref().is_err_and(|e| e.contains("object not found")),
        "{gone:?}"
    );
}

fn hello_verifies() {
    let r = loadrig(&[
        "run",
        "hello",
        "--target",
        URL,
        "--clients",
        "16",
        "-n",
        "5000",
        "--insert-ratio",
        "0.2",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.contains("verify ... ok ("), "{}", r.dump());
}

/// Two host names for the one server: connections are dealt over both.
fn several_hosts() {
    let r = loadrig(&[
        "run",
        "voter",
        "--target",
        "voltdb://127.0.0.1:21212,localhost:21212",
        "--clients",
        "40",
        "-n",
        "5000",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        r.stdout.contains("40 clients over 2 connections"),
        "{}",
        r.dump()
    );
    assert!(r.stdout.contains("verify ... ok ("), "{}", r.dump());
}

/// Every link cut mid-run: the calls in flight count as errors (and as
/// votes in doubt), the connection comes back, the run ends with a report
/// and the server's counts still agree.
fn survives_cut_links() {
    let relay = Relay::start(21212);
    let url = format!("voltdb://127.0.0.1:{}", relay.port);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cut.json");
    let child = {
        let (url, out) = (url.clone(), out.clone());
        std::thread::spawn(move || {
            loadrig(&[
                "run",
                "voter",
                "--target",
                &url,
                "--clients",
                "64",
                "--duration",
                "8",
                "-q",
                "--out",
                out.to_str().unwrap(),
            ])
        })
    };
    // Prepare compiles the procedures: cut well after the load started.
    std::thread::sleep(Duration::from_secs(5));
    relay.cut();
    let r = child.join().unwrap();
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.contains("verify ... ok ("), "{}", r.dump());
    let report = json(&out);
    let reconnects = report["measured"]["reconnects"].as_u64().unwrap_or(0);
    assert!(reconnects >= 1, "no reconnect: {}", r.dump());
}

/// The Erlvolt bench's four setups, each verified by the server.
fn presets() {
    for (preset, shape) in [
        ("vsd", "preset VSD"),
        ("vsm", "preset VSM"),
        ("vbm", "preset VBM"),
        ("vbd", "preset VBD"),
    ] {
        let r = loadrig(&[
            "run", "voter", "--preset", preset, "--target", URL, "-n", "20000", "-q",
        ]);
        assert_eq!(r.code, 0, "{preset}: {}", r.dump());
        assert!(r.stdout.contains(shape), "{preset}: {}", r.dump());
        assert!(
            r.stdout.contains("verify ... ok ("),
            "{preset}: {}",
            r.dump()
        );
    }
}

/// Erlvolt's multi-VM batch: three processes begin in the same second;
/// the total is the sum of the three, and the server agrees.
fn three_processes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let r = loadrig(&[
        "run",
        "voter",
        "--preset",
        "vsd",
        "--target",
        URL,
        "--processes",
        "3",
        "--start-delay",
        "2",
        "-n",
        "30000",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.contains("verify ... ok ("), "{}", r.dump());
    assert!(!r.stdout.contains("s late"), "{}", r.dump());
    let kids: Vec<serde_json::Value> = (0..3)
        .map(|i| json(&dir.path().join(format!("r.p{i}.json"))))
        .collect();
    let starts: Vec<u64> = kids
        .iter()
        .map(|k| k["started_unix_ms"].as_u64().unwrap())
        .collect();
    assert!(
        starts.iter().all(|s| s / 1000 == starts[0] / 1000),
        "{starts:?}"
    );
    assert_eq!(starts[0] % 2000, 0, "a multiple of 2 s: {starts:?}");
    let ops = |r: &serde_json::Value| r["measured"]["ops"].as_u64().unwrap();
    let merged = json(&out);
    assert_eq!(ops(&merged), kids.iter().map(ops).sum::<u64>());
    assert_eq!(ops(&merged), 30000);
    for i in 0..3 {
        assert!(
            r.stdout.contains(&format!("process {i}: overall: ")),
            "{}",
            r.dump()
        );
    }
}

/// Nothing listening: exit 3 and one line.
fn nothing_listening() {
    let r = loadrig(&[
        "run",
        "voter",
        "--target",
        "voltdb://127.0.0.1:1",
        "-n",
        "10",
    ]);
    assert_eq!(r.code, 3, "{}", r.dump());
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.dump());
    assert!(r.stderr.contains("connection refused"), "{}", r.dump());
}

#[test]
fn voltdb_voter_hello_hosts_cut_links_presets_and_processes() {
    need_server("voltdb", 21212);
    let _one_at_a_time = hold("voltdb");
    voter_with_200_clients();
    hello_verifies();
    several_hosts();
    survives_cut_links();
    presets();
    three_processes();
    nothing_listening();
}
