//! The Voter end to end on embedded SQLite and on the null target.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use loadrig_report::fmt::dur;
use loadrig_report::Report;

use crate::common::{
    assert_all_ok, assert_verified, domain, json, loadrig, run_reported, Run, Running,
};
use crate::expect::{hello_inserts, votes, Phones, Votes};

/// The table row for `kind` and `measure`: its cells after the names.
fn table_row<'a>(stdout: &'a str, kind: &str, measure: &str) -> Vec<&'a str> {
    let mut current = "";
    for line in stdout.lines() {
        let cells: Vec<&str> = line.split_whitespace().collect();
        match cells.as_slice() {
            [k, m, rest @ ..] if *m == "latency" || *m == "service" => {
                current = k;
                if *k == kind && *m == measure {
                    return rest.to_vec();
                }
            }
            [m, rest @ ..]
                if (*m == "service" || *m == "latency") && current == kind && *m == measure =>
            {
                return rest.to_vec();
            }
            _ => {}
        }
    }
    panic!("no {kind}/{measure} row in:\n{stdout}");
}

fn db_count(db: &Path, sql: &str) -> i64 {
    let c = rusqlite::Connection::open(db).expect("open the database");
    c.query_row(sql, [], |r| r.get(0)).expect("count")
}

#[test]
fn voter_on_sqlite_verifies_and_its_report_reproduces_the_printed_percentiles() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("voter.db");
    let out = dir.path().join("r.json");
    let url = format!("sqlite://{}", db.display());
    let r = loadrig(&[
        "run",
        "voter",
        "-n",
        "20000",
        "--clients",
        "32",
        "--target",
        &url,
        "--out",
        out.to_str().unwrap(),
        "--interval",
        "0.2",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.contains("\n  at "), "no lap lines:\n{}", r.dump());
    assert!(r.stdout.contains("verify ... ok ("), "{}", r.dump());
    assert!(r.stdout.contains("winner: "), "{}", r.dump());

    let report = Report::read(&out).expect("the report reads back");
    assert_all_ok(&r, &report, 20_000);
    assert_verified(&r, &report);
    // Exactly the generator's 1% of votes for nobody, and the limit's share.
    let counted = Votes::counted(&report);
    assert_eq!(counted, votes(&report.spec, 20_000), "{}", r.dump());
    assert!(counted.invalid > 0, "{counted:?}");
    let kind = &report.measured.kinds[0];
    for (measure, summary) in [("latency", &kind.latency), ("service", &kind.service)] {
        let h = summary.histogram().expect("histogram decodes");
        assert_eq!(h.len(), 20_000);
        let row = table_row(&r.stdout, "vote", measure);
        // count ok errors rate/s min avg p50 p90 p99 p99.9 max
        let printed = [row[4], row[6], row[7], row[8], row[9], row[10]];
        let from_report = [
            dur(h.min()),
            dur(h.percentile(50.0)),
            dur(h.percentile(90.0)),
            dur(h.percentile(99.0)),
            dur(h.percentile(99.9)),
            dur(h.max()),
        ];
        assert_eq!(
            printed.to_vec(),
            from_report.iter().map(String::as_str).collect::<Vec<_>>(),
            "{measure}"
        );
    }

    // The tallies agree with the database, contestant by contestant.
    let accepted: u64 = report
        .measured
        .domains
        .iter()
        .filter(|(n, _)| n.starts_with("accepted."))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(db_count(&db, "SELECT COUNT(*) FROM votes") as u64, accepted);
    for (name, n) in &report.measured.domains {
        if let Some(c) = name.strip_prefix("accepted.") {
            let sql = format!("SELECT COUNT(*) FROM votes WHERE contestant_number = {c}");
            assert_eq!(db_count(&db, &sql) as u64, *n, "contestant {c}");
        }
    }
}

#[test]
fn a_row_deleted_behind_the_clients_back_fails_verify_with_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let (db, out, r) = kept_unverified(dir.path(), "5000");
    assert!(r.stdout.contains("verify ... skipped"), "{}", r.dump());

    let ok = loadrig(&["verify", out.to_str().unwrap()]);
    assert_eq!(ok.code, 0, "untouched database must verify:\n{}", ok.dump());
    assert!(ok.stdout.contains("verify ... ok"), "{}", ok.dump());

    let c = rusqlite::Connection::open(&db).unwrap();
    let deleted = c
        .execute(
            "DELETE FROM votes WHERE rowid = (SELECT MIN(rowid) FROM votes)",
            [],
        )
        .unwrap();
    assert_eq!(deleted, 1);
    drop(c);

    let bad = loadrig(&["verify", out.to_str().unwrap()]);
    assert_eq!(bad.code, 1, "{}", bad.dump());
    assert!(
        bad.stdout
            .contains("FAILED (rows added = votes accepted: expected"),
        "{}",
        bad.dump()
    );
}

/// A voter run of `n` on a SQLite file in `dir`, kept and not verified:
/// the database, the report, and the run.
fn kept_unverified(dir: &Path, n: &str) -> (std::path::PathBuf, std::path::PathBuf, Run) {
    let db = dir.join("voter.db");
    let out = dir.join("r.json");
    let url = format!("sqlite://{}", db.display());
    let r = loadrig(&[
        "run",
        "voter",
        "-n",
        n,
        "--target",
        &url,
        "--no-verify",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    (db, out, r)
}

/// Votes moved from one contestant to another keep the row count: only
/// the per-contestant check sees them.
#[test]
fn votes_moved_between_contestants_fail_verify() {
    let dir = tempfile::tempdir().unwrap();
    let (db, out, _) = kept_unverified(dir.path(), "3000");
    let ok = loadrig(&["verify", out.to_str().unwrap()]);
    assert_eq!(ok.code, 0, "untouched database must verify:\n{}", ok.dump());

    let c = rusqlite::Connection::open(&db).unwrap();
    let moved = c
        .execute(
            "UPDATE votes SET contestant_number = 7 - contestant_number
             WHERE rowid IN (SELECT rowid FROM votes WHERE contestant_number <> 7 - contestant_number LIMIT 5)",
            [],
        )
        .unwrap();
    assert_eq!(moved, 5);
    drop(c);

    let bad = loadrig(&["verify", out.to_str().unwrap()]);
    assert_eq!(bad.code, 1, "{}", bad.dump());
    assert!(
        bad.stdout.contains("FAILED (votes for ")
            && !bad.stdout.contains("rows added = votes accepted: expected"),
        "{}",
        bad.dump()
    );
}

#[test]
fn a_second_run_on_the_same_database_verifies_against_its_own_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("v.db").display());
    // The second run's phones already hold the first run's votes.
    let mut held = Phones::default();
    for seed in ["1", "2"] {
        let (r, report) = run_reported(&[
            "run",
            "voter",
            "-n",
            "3000",
            "--target",
            &url,
            "--seed",
            seed,
            "--max-votes",
            "1",
        ]);
        assert_eq!(r.code, 0, "{}", r.dump());
        assert!(r.stdout.contains("verify ... ok"), "{}", r.dump());
        assert_all_ok(&r, &report, 3000);
        assert_verified(&r, &report);
        let want = held.vote(&report.spec, 3000);
        assert_eq!(Votes::counted(&report), want, "seed {seed}: {}", r.dump());
    }
}

#[test]
fn erlvolt_generator_has_no_invalid_votes() {
    let (r, report) = run_reported(&["run", "voter", "-n", "3000", "--generator", "erlvolt"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        r.stdout.contains("rejected invalid contestant 0,"),
        "{}",
        r.dump()
    );
    // Every vote succeeded and was accepted: no invalid ones, and a limit
    // (20,000 a phone) that 3,000 votes cannot reach.
    assert_all_ok(&r, &report, 3000);
    let all = Votes {
        accepted: 3000,
        invalid: 0,
        over_limit: 0,
    };
    assert_eq!(votes(&report.spec, 3000), all);
    assert_eq!(Votes::counted(&report), all, "{}", r.dump());
}

#[test]
fn hello_on_sqlite_inserts_and_selects_and_verifies() {
    let (r, report) = run_reported(&["run", "hello", "-n", "5000", "--insert-ratio", "0.3"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.contains("verify ... ok ("), "{}", r.dump());
    assert!(r.stdout.contains("every select matched"), "{}", r.dump());
    assert_all_ok(&r, &report, 5000);
    assert_verified(&r, &report);
    let inserts = hello_inserts(&report.spec, 5000);
    assert_eq!(domain(&report, "inserted"), inserts, "{}", r.dump());
    assert!(inserts > 0 && inserts < 5000, "{inserts}");
}

#[test]
fn open_loop_achieves_the_rate() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let r = loadrig(&[
        "run",
        "voter",
        "--target",
        "null",
        "--rate",
        "2000",
        "--duration",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let j = json(&out);
    // The schedule: exactly rate x duration operations were issued.
    assert_eq!(j["measured"]["ops"], 4000, "{}", r.dump());
    // The elapsed time runs to the last completion, which a machine busy
    // with other tests (VoltDB among them) may delay by tens of ms.
    let tput = j["measured"]["throughput"].as_f64().unwrap();
    assert!((tput - 2000.0).abs() / 2000.0 < 0.05, "throughput {tput}");
}

#[test]
fn bursts_and_managed_mode_run_end_to_end() {
    let r = loadrig(&[
        "run",
        "voter",
        "--target",
        "null://?delay=1ms",
        "--burst",
        "10",
        "--limit",
        "5",
        "-n",
        "1000",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.contains("bursts of 10"), "{}", r.dump());
    let r = loadrig(&[
        "run",
        "voter",
        "--target",
        "null://?delay=1ms",
        "--clients",
        "1",
        "--queue",
        "4",
        "--slots",
        "1",
        "--rate",
        "20000",
        "-n",
        "2000",
        // A full queue is what this run shows: its failures pass the gate.
        "--max-error-rate",
        "1",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        r.stdout.contains("errors: vote: queue_full "),
        "{}",
        r.dump()
    );
}

/// The database file removed while the run writes to it: the open
/// connection still reads the removed file, so its counts agree; the run
/// fails all the same, naming what happened, in every mode.
#[test]
fn a_database_removed_mid_run_fails_verification() {
    for stop in [&["--duration", "2"][..], &["-n", "150000"]] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("v.db");
        let url = format!("sqlite://{}", db.display());
        let mut args = vec!["run", "voter", "--target", &url, "--interval", "0.2"];
        args.extend(stop);
        let mut run = Running::start(&args);
        run.until_first_lap();
        for f in ["v.db", "v.db-wal", "v.db-shm"] {
            let _ = std::fs::remove_file(dir.path().join(f));
        }
        let r = run.finish();
        assert_eq!(r.code, 1, "{stop:?}: {}", r.dump());
        assert!(
            r.stdout.contains(&format!(
                "verify ... FAILED (the database file {} was removed during the run)",
                db.display()
            )),
            "{stop:?}: {}",
            r.dump()
        );
    }
}

/// SIGINT (Ctrl-C), SIGTERM and SIGHUP each stop the load; the report
/// is still written, marked interrupted, and the exit code is 1.
#[test]
fn every_stopping_signal_still_writes_the_report() {
    for sig in ["-INT", "-TERM", "-HUP"] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("r.json");
        let mut run = Running::start(&[
            "run",
            "voter",
            "--target",
            "null://?delay=1ms",
            "--duration",
            "60",
            "--interval",
            "0.2",
            "--out",
            out.to_str().unwrap(),
        ]);
        // Interrupt once the load runs: at its first lap line, not after a
        // guessed sleep.
        run.until_first_lap();
        kill(sig, run.id());
        let r = run.finish();
        assert_eq!(r.code, 1, "{sig}: {}", r.dump());
        assert!(r.stdout.contains("INTERRUPTED"), "{sig}: {}", r.dump());
        let j = json(&out);
        assert_eq!(j["interrupted"], true, "{sig}");
        assert!(j["measured"]["ops"].as_u64().unwrap() > 100, "{sig}");
    }
}

/// A run whose two calls in flight each take 30 s (the timeout is 60 s),
/// once its load runs.
fn stuck_run(extra: &[&str]) -> Running {
    let mut args = vec![
        "run",
        "voter",
        "--target",
        "null://?delay=30s",
        "-n",
        "4",
        "-c",
        "2",
        "--timeout",
        "60",
        "--interval",
        "0.2",
    ];
    args.extend_from_slice(extra);
    let mut run = Running::start(&args);
    run.until_first_lap();
    run
}

/// A run stuck on its operations in flight ends at once on a second
/// signal, with 128 + its number.
#[test]
fn a_second_signal_ends_the_run_at_once() {
    let run = stuck_run(&[]);
    kill("-TERM", run.id());
    // The first is being handled (the load stops, the calls in flight
    // are waited for) before the second comes.
    std::thread::sleep(Duration::from_millis(300));
    kill("-TERM", run.id());
    let t = Instant::now();
    let r = run.finish();
    assert_eq!(r.code, 128 + 15, "{}", r.dump());
    assert!(t.elapsed() < Duration::from_secs(10), "{}", r.dump());
}

/// One signal ends a run stuck on operations in flight (each takes 30 s,
/// the timeout is 60 s) after a short grace: they fail as timeouts, in
/// doubt, and the report is written.
#[test]
fn a_stop_gives_what_is_in_flight_a_short_grace() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let run = stuck_run(&["--out", out.to_str().unwrap()]);
    let t = Instant::now();
    kill("-TERM", run.id());
    let r = run.finish();
    // 0.5 s to see the flag, 1 s of grace, the report: far below the 30 s
    // the calls would take, with room for a busy machine.
    assert!(t.elapsed() < Duration::from_secs(15), "{}", r.dump());
    assert_eq!(r.code, 1, "{}", r.dump());
    let j = json(&out);
    assert_eq!(j["interrupted"], true);
    let kind = &j["measured"]["kinds"][0];
    assert_eq!(kind["count"], 2, "{kind}");
    assert_eq!(kind["ok"], 0, "{kind}");
}

/// SIGTERM to the parent of --processes reaches every child: each stops
/// and reports, the parent merges what they measured, and no child is
/// left running.
#[test]
fn a_signal_to_the_parent_stops_every_child() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut run = Running::start(&[
        "run",
        "voter",
        "--target",
        "null://?delay=1ms",
        "--duration",
        "60",
        "--processes",
        "2",
        "--start-delay",
        "0.5",
        "--out",
        out.to_str().unwrap(),
    ]);
    run.until(|l| l.starts_with("start at "));
    let parent = run.id();
    let t = Instant::now();
    while children_of(parent).len() < 2 {
        assert!(t.elapsed() < Duration::from_secs(20), "no children started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The children start their load at the common start, within a second.
    std::thread::sleep(Duration::from_secs(2));
    let children = children_of(parent);
    assert_eq!(children.len(), 2, "children of {parent}: {children:?}");
    kill("-TERM", parent);
    let r = run.finish();
    assert_eq!(r.code, 1, "{}", r.dump());
    for c in children {
        assert!(
            !std::path::Path::new(&format!("/proc/{c}")).exists(),
            "child {c} still running: {}",
            r.dump()
        );
    }
    let j = json(&out);
    assert_eq!(j["interrupted"], true);
    assert!(j["measured"]["ops"].as_u64().unwrap() > 100);
}

fn kill(sig: &str, pid: u32) {
    let status = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {sig} {pid}");
}

/// The process ids whose parent is `pid`.
pub(crate) fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: the comm may hold spaces, so after ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|s| s.parse::<u32>().ok());
        if ppid == Some(pid) {
            out.push(p);
        }
    }
    out
}

/// `--threshold` for CI: met, the run exits 0 and says so; one not met
/// (no call of a 1 ms target answers in under half a millisecond) exits 1.
#[test]
fn thresholds_gate_the_exit_code() {
    let base = ["run", "voter", "-t", "null://?delay=1ms", "-n", "2000"];
    let mut met = base.to_vec();
    met.extend(["--threshold", "p50>1ms", "--threshold", "error_rate<0.01"]);
    let r = loadrig(&met);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.contains("threshold p50>1ms: "), "{}", r.dump());
    assert!(
        r.stdout.contains("threshold error_rate<0.01: 0% ok"),
        "{}",
        r.dump()
    );
    let mut unmet = base.to_vec();
    unmet.extend(["--threshold", "vote:p50<0.5ms"]);
    let r = loadrig(&unmet);
    assert_eq!(r.code, 1, "{}", r.dump());
    assert!(
        r.stdout.contains("threshold vote:p50<0.5ms: "),
        "{}",
        r.dump()
    );
    assert!(r.stdout.contains("FAILED"), "{}", r.dump());
    assert!(
        r.stdout
            .contains("check failed: threshold vote:p50<0.5ms not met"),
        "{}",
        r.dump()
    );
    // Any percentile is taken (p98), but a time needs its unit.
    let bad = loadrig(&["run", "voter", "--threshold", "p98<1"]);
    assert_eq!(bad.code, 2, "{}", bad.dump());
    assert!(bad.stderr.contains("p98<1ms"), "{}", bad.dump());
    let mut p98 = base.to_vec();
    p98.extend(["--threshold", "p98>1ms", "--threshold", "p(99.99)<10s"]);
    let r = loadrig(&p98);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        r.stdout.contains("threshold p(99.99)<10s: "),
        "{}",
        r.dump()
    );
}
