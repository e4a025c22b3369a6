//! Embedded SQLite's promises, checked from outside: the run says where
//! the database lives (directory, filesystem type) next to its sync mode,
//! and the sync mode is what the disk sees (fsyncs counted with strace).

use std::path::Path;
use std::process::Command;

use crate::common::{count_syscalls, json, loadrig, Run};

/// The filesystem type of the mount holding `dir`, as findmnt(8) says it.
fn findmnt(dir: &Path) -> String {
    let out = Command::new("findmnt")
        .args(["-n", "-o", "FSTYPE", "-T"])
        .arg(dir)
        .output()
        .expect("findmnt runs (util-linux)");
    assert!(out.status.success(), "findmnt -T {}", dir.display());
    // Mounts stacked on one point come one a line; the last is on top.
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().last().unwrap_or_default().trim().to_string()
}

/// The `durability: ...` line a run printed under its header.
fn durability_line(r: &Run) -> &str {
    let mut lines = r.stdout.lines();
    let header = lines.next().unwrap_or_default();
    assert!(header.starts_with("loadrig "), "{}", r.dump());
    lines
        .next()
        .and_then(|l| l.strip_prefix("durability: "))
        .unwrap_or_else(|| panic!("no durability line under the header:\n{}", r.dump()))
}

/// Run the Voter on `db`; the printed durability and the report's.
fn run_on(target: &str, dir: &Path) -> (Run, String) {
    let out = dir.join("r.json");
    let r = loadrig(&[
        "run",
        "voter",
        "-n",
        "500",
        "--target",
        target,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let report = json(&out)["environment"]["durability"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (r, report)
}

#[test]
fn the_header_and_the_report_name_the_directory_and_its_filesystem() {
    // The system's temporary directory (where the default database goes:
    // a disk or tmpfs, machine by machine) and /dev/shm (tmpfs).
    for parent in [std::env::temp_dir(), "/dev/shm".into()] {
        let dir = tempfile::tempdir_in(&parent).unwrap();
        let db = dir.path().join("v.db");
        let (r, report) = run_on(&format!("sqlite://{}", db.display()), dir.path());
        let real = dir.path().canonicalize().unwrap();
        let place = format!("database in {} ({})", real.display(), findmnt(&real));
        let printed = durability_line(&r);
        assert!(
            printed.starts_with("journal_mode=WAL, synchronous=NORMAL"),
            "{printed}"
        );
        assert!(printed.ends_with(&place), "{printed}\nexpected: {place}");
        assert_eq!(report, printed, "the report says what the header said");
    }
    // No --target: a fresh database in a folder of the temporary directory.
    let dir = tempfile::tempdir().unwrap();
    let (r, report) = run_on("sqlite://", dir.path());
    let tmp = std::env::temp_dir().canonicalize().unwrap();
    let printed = durability_line(&r);
    let (_, place) = printed.split_once("; database in ").expect(printed);
    assert!(
        place.starts_with(&format!("{}/loadrig-", tmp.display())),
        "{printed}"
    );
    assert!(
        place.ends_with(&format!(" ({})", findmnt(&tmp))),
        "{printed}"
    );
    assert_eq!(report, printed);
}

/// Run `loadrig ARGS` under strace; its result and how many fsync and
/// fdatasync calls it made, threads included.
fn count_fsyncs(args: &[&str]) -> (Run, u64) {
    let (r, calls) = count_syscalls(args, &["fsync", "fdatasync"]);
    (r, calls.iter().sum())
}

/// With one client and one call in flight, the database thread commits
/// every vote alone: as many commits as votes.
fn one_at_a_time(target: &str, votes: &str) -> Vec<String> {
    [
        "run",
        "voter",
        "--clients",
        "1",
        "-n",
        votes,
        "--target",
        target,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn a_kept_database_with_sync_full_fsyncs_every_commit() {
    let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let target = format!("sqlite://{}?sync=full", dir.path().join("v.db").display());
    let args = one_at_a_time(&target, "300");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (r, fsyncs) = count_fsyncs(&args);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.contains("verify ... ok ("), "{}", r.dump());
    assert!(
        durability_line(&r).contains("synchronous=FULL"),
        "{}",
        r.dump()
    );
    assert!(
        fsyncs >= 300,
        "{fsyncs} fsyncs for 300 commits:\n{}",
        r.dump()
    );
}

#[test]
fn the_default_sync_does_not_fsync_every_commit() {
    let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let target = format!("sqlite://{}", dir.path().join("v.db").display());
    let args = one_at_a_time(&target, "2000");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (r, fsyncs) = count_fsyncs(&args);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.contains("verify ... ok ("), "{}", r.dump());
    assert!(
        durability_line(&r).contains("synchronous=NORMAL"),
        "{}",
        r.dump()
    );
    // Checkpoints sync (twice each, at most every 100 ms), commits do not.
    assert!(
        fsyncs < 200,
        "{fsyncs} fsyncs for 2,000 commits:\n{}",
        r.dump()
    );
}
