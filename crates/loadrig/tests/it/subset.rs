//! The redis workload on a server that implements a subset of Redis
//! (`common::subset`: no SELECT, MGET, INFO, CONFIG or SCAN): the load
//! runs, what could not be read is said before it, verification reads key
//! by key where MGET is refused and says "not verified" only when it can
//! read nothing, and the report is written every time.

use std::net::TcpStream;
use std::sync::atomic::Ordering;

use crate::common::{assert_all_ok, assert_verified, loadrig, run_reported, subset, verdict};

/// Run `args` after `run redis --target URL` against a fresh subset server;
/// also the keys it holds afterwards.
fn on_subset(args: &[&str]) -> (crate::common::Run, loadrig_report::Report, usize) {
    let (port, stop, keys) = subset::start();
    let url = format!("redis://127.0.0.1:{port}");
    let mut all = vec!["run", "redis", "--target", &url];
    all.extend_from_slice(args);
    let (r, report) = run_reported(&all);
    stop.store(true, Ordering::Relaxed);
    let _ = TcpStream::connect(("127.0.0.1", port));
    let left = keys.lock().unwrap().len();
    (r, report, left)
}

/// No --dbnum: no SELECT. SET and GET run, MGET is refused so the key is
/// read by GET, INFO and CONFIG refused are said before the load and kept
/// in the report, and the run's one key is deleted by name afterwards.
#[test]
fn set_get_verified_key_by_key() {
    let (r, report, left) = on_subset(&["--tests", "set,get", "-n", "1000", "-c", "5"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_all_ok(&r, &report, 2000);
    assert_verified(&r, &report);
    let v = verdict(&report);
    assert!(v.summary.contains("MGET refused"), "{}", r.dump());
    assert_eq!(v.checks.len(), 3, "{v:?}");
    assert!(
        r.stdout.contains(
            "not read from the server: the version (INFO refused: ERR unknown command 'INFO')"
        ),
        "{}",
        r.dump()
    );
    let unread = &report.environment.unread;
    assert_eq!(unread.len(), 2, "{unread:?}");
    assert!(unread[1].contains("CONFIG GET refused"), "{unread:?}");
    assert_eq!(left, 0, "the run's key was not deleted");
}

/// INCR's counter read back by GET: the sum equals the INCRs acknowledged.
#[test]
fn incr_verified_by_get() {
    let (r, report, left) = on_subset(&["--tests", "incr", "-n", "777", "-c", "7"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_all_ok(&r, &report, 777);
    assert_verified(&r, &report);
    let v = verdict(&report);
    let sum = v.checks.iter().find(|c| c.name.starts_with("counter:*"));
    assert_eq!(
        sum.map(|c| (c.expected, c.actual)),
        Some((777, 777)),
        "{v:?}"
    );
    assert_eq!(left, 0);
}

/// Random counters in a run by time: their sum is read from the keys SCAN
/// finds, and SCAN is refused, so nothing can be read. The verdict says
/// so, neither passed nor failed, exit 0, the report written; the keys
/// stay. (Random SET keys are known from the indices the run issued and
/// read by GET: verified, below.)
#[test]
fn nothing_readable_is_not_verified_not_failed() {
    let (r, report, left) = on_subset(&[
        "--tests",
        "incr",
        "-r",
        "1000",
        "--duration",
        "0.5",
        "-c",
        "2",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        report.measured.ok > 0 && report.measured.errors == 0,
        "{}",
        r.dump()
    );
    let v = verdict(&report);
    assert_eq!(v.passed, None, "{v:?}");
    assert_eq!(v.summary, "not verified: the server lacks SCAN");
    assert!(
        r.stdout
            .contains("verify ... not verified: the server lacks SCAN"),
        "{}",
        r.dump()
    );
    assert!(!r.stdout.contains("FAILED"), "{}", r.dump());
    assert!(left > 0, "keys vanished without SCAN");
    let (r, report, _) = on_subset(&[
        "--tests",
        "set",
        "-r",
        "1000",
        "--duration",
        "0.5",
        "-c",
        "2",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let v = verdict(&report);
    assert_eq!(v.passed, Some(true), "{v:?}");
    assert!(
        v.summary
            .ends_with("all there (read by GET: MGET refused))"),
        "{v:?}"
    );
}

/// memtier's mix: the keys SET read back by GET.
#[test]
fn memtier_mix_verified_key_by_key() {
    let (r, report, _) = on_subset(&[
        "--ratio",
        "1:4",
        "--key-maximum",
        "300",
        "-n",
        "2000",
        "-c",
        "4",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_all_ok(&r, &report, 2000);
    assert_verified(&r, &report);
    let v = verdict(&report);
    assert!(
        v.checks.iter().any(|c| c.name == "keys SET and missing"),
        "{v:?}"
    );
}

/// A database asked for explicitly on a server without SELECT: exit 3,
/// one line saying so, before any load.
#[test]
fn an_explicit_dbnum_is_selected_or_refused() {
    let (port, stop, _) = subset::start();
    let url = format!("redis://127.0.0.1:{port}");
    let r = loadrig(&[
        "run", "redis", "--target", &url, "--dbnum", "3", "--tests", "get", "-n", "10",
    ]);
    stop.store(true, Ordering::Relaxed);
    let _ = TcpStream::connect(("127.0.0.1", port));
    assert_eq!(r.code, 3, "{}", r.dump());
    assert!(
        r.stderr
            .contains("SELECT refused: ERR unknown command 'SELECT'"),
        "{}",
        r.dump()
    );
}
