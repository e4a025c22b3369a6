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

use loadrig_metrics::ErrorKind;

use crate::common::{
    assert_all_ok, assert_some_failed, assert_verified, hold, json, loadrig, need_server, report,
    run_reported, Relay, Running,
};
use crate::expect::{hello_inserts, votes, Votes};

const URL: &str = "voltdb://127.0.0.1:21212";

/// SQL through VoltDB's sqlcmd (scripts/voltdb/sqlcmd) on the single node.
fn try_sqlcmd(sql: &str) -> Result<String, String> {
    try_sqlcmd_on(21212, sql)
}

/// SQL through sqlcmd on the VoltDB whose client port is `port`: whether
/// it succeeded, and its output (standard error when it failed).
pub(crate) fn try_sqlcmd_on(port: u16, sql: &str) -> Result<String, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/voltdb/sqlcmd");
    let mut child = Command::new(script)
        .arg(format!("--port={port}"))
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

/// What a run of an earlier test (or a bench) may have left: the Voter's
/// and Hello's schemas. A leftover Voter schema would be reused with its
/// votes, and every count below would be off by them.
fn clear_leftovers() {
    clear_leftovers_on(21212);
}

/// [`clear_leftovers`] on the VoltDB whose client port is `port`.
pub(crate) fn clear_leftovers_on(port: u16) {
    let sql = "DROP PROCEDURE Results IF EXISTS;
        DROP PROCEDURE Vote IF EXISTS;
        DROP PROCEDURE Initialize IF EXISTS;
        DROP VIEW v_votes_by_phone_number IF EXISTS;
        DROP VIEW v_votes_by_contestant_number_state IF EXISTS;
        DROP TABLE votes IF EXISTS;
        DROP TABLE contestants IF EXISTS;
        DROP TABLE area_code_state IF EXISTS;
        DROP PROCEDURE Insert IF EXISTS;
        DROP PROCEDURE Select IF EXISTS;
        DROP TABLE helloworld IF EXISTS;";
    try_sqlcmd_on(port, sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// A Voter run of `n` votes: every call succeeded, the server verified,
/// and the outcome totals are the generator's.
fn all_voted(r: &crate::common::Run, rep: &loadrig_report::Report, n: u64) {
    assert_all_ok(r, rep, n);
    assert_verified(r, rep);
    assert_eq!(Votes::counted(rep), votes(&rep.spec, n), "{}", r.dump());
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
    all_voted(&r, &report(&out), 20_000);
    let most: i64 = sqlcmd("SELECT MAX(num_votes) FROM v_votes_by_phone_number;")
        .parse()
        .unwrap();
    assert!((1..=2).contains(&most), "a phone holds {most} votes");
    let report = json(&out);
    let env = &report["environment"];
    // Whichever version is installed, the server's own.
    let version = env["server_version"].as_str().unwrap_or_default();
    let number = version.strip_prefix("VoltDB ").unwrap_or_default();
    assert!(number.starts_with(|c: char| c.is_ascii_digit()), "{env}");
    // The votes are the server's: per-contestant totals from sqlcmd equal
    // the client's accepted counts.
    let rows = sqlcmd("SELECT COUNT(*) FROM votes;");
    let accepted: i64 = report["verification"]["verdict"]["checks"][0]["expected"]
        .as_i64()
        .unwrap();
    assert_eq!(rows.parse::<i64>().unwrap(), accepted, "{report}");
    // Without --keep the run removes what it made, procedures and classes
    // too. Its 100 votes come on top of the kept ones: counts not checked.
    let (r, rep) = run_reported(&["run", "voter", "--target", URL, "-n", "100"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_all_ok(&r, &rep, 100);
    let gone = try_sqlcmd("SELECT COUNT(*) FROM votes;");
    assert!(
        gone.as_ref().is_err_and(|e| e.contains("object not found")),
        "{gone:?}"
    );
}

fn hello_verifies() {
    let (r, rep) = run_reported(&[
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
    assert_all_ok(&r, &rep, 5000);
    assert_verified(&r, &rep);
    let inserts = hello_inserts(&rep.spec, 5000);
    assert_eq!(crate::common::domain(&rep, "inserted"), inserts);
}

/// Two host names for the one server: connections are dealt over both.
fn several_hosts() {
    let (r, rep) = run_reported(&[
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
    all_voted(&r, &rep, 5000);
}

/// Every link cut mid-run: the calls in flight count as errors and as
/// votes in doubt, the connection comes back, the run ends with a report
/// and the server's counts still agree.
fn survives_cut_links() {
    let relay = Relay::start(21212);
    let url = format!("voltdb://127.0.0.1:{}", relay.port);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cut.json");
    let mut run = Running::start(&[
        "run",
        "voter",
        "--target",
        &url,
        "--clients",
        "64",
        "--duration",
        "4",
        "--interval",
        "0.5",
        // The cut links' calls fail: counted and in doubt, not judged by
        // the failure gate here.
        "--max-error-rate",
        "0.2",
        "--out",
        out.to_str().unwrap(),
    ]);
    // Prepare compiles the procedures; cut when the first lap shows the
    // load running, with calls in flight on the links.
    run.until_first_lap();
    assert!(relay.cut() >= 1, "no link to cut");
    let r = run.finish();
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.contains("verify ... ok ("), "{}", r.dump());
    let rep = report(&out);
    assert_some_failed(&r, &rep, 100);
    assert!(rep.measured.reconnects >= 1, "no reconnect: {}", r.dump());
    // The calls the cut caught were sent and not answered: I/O errors,
    // and the verification allowed for exactly them as in doubt.
    assert_lost_in_doubt(&r, &rep);
}

/// Calls were lost in flight (errors of the kinds that leave a write in
/// doubt: io, timeout, protocol), and the Voter's verdict allowed for
/// exactly them as votes in doubt.
pub(crate) fn assert_lost_in_doubt(r: &crate::common::Run, rep: &loadrig_report::Report) {
    let in_doubt = |kind: &str| {
        ErrorKind::ALL
            .iter()
            .any(|e| e.in_doubt() && e.name() == kind)
    };
    let lost: u64 = rep
        .measured
        .kinds
        .iter()
        .flat_map(|k| &k.errors)
        .filter(|(kind, _)| in_doubt(kind.as_str()))
        .map(|(_, n)| n)
        .sum();
    assert!(lost >= 1, "no call in flight failed: {}", r.dump());
    let verdict = rep
        .verification
        .as_ref()
        .and_then(|v| v.verdict.as_ref())
        .expect("verified");
    assert_eq!(verdict.checks[0].in_doubt, lost as i64, "{verdict:?}");
    assert!(
        r.stdout.contains(" in doubt after lost connections"),
        "{}",
        r.dump()
    );
}

/// The Erlvolt bench's four setups, each verified by the server.
fn presets() {
    for (preset, shape) in [
        ("vsd", "preset VSD"),
        ("vsm", "preset VSM"),
        ("vbm", "preset VBM"),
        ("vbd", "preset VBD"),
    ] {
        let (r, rep) = run_reported(&[
            "run", "voter", "--preset", preset, "--target", URL, "-n", "20000", "-q",
        ]);
        assert_eq!(r.code, 0, "{preset}: {}", r.dump());
        assert!(r.stdout.contains(shape), "{preset}: {}", r.dump());
        // The Erlvolt bench's closing lines, the new votes counted by the server.
        let label = preset.to_uppercase();
        assert!(
            r.stdout.contains(&format!("Client '{label}' overall: "))
                && r.stdout.contains(", database: +"),
            "{preset}: {}",
            r.dump()
        );
        assert!(
            r.stdout.contains("verify ... ok ("),
            "{preset}: {}",
            r.dump()
        );
        all_voted(&r, &rep, 20_000);
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
    all_voted(&r, &report(&out), 30_000);
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
    clear_leftovers();
    voter_with_200_clients();
    hello_verifies();
    several_hosts();
    survives_cut_links();
    presets();
    three_processes();
    nothing_listening();
}
