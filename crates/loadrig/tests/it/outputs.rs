//! Outputs that cannot be written are failures, not results: standard
//! output on a full disk is exit 2 with one line, for `--json`, `--csv`,
//! `--out -` and redis-benchmark's `-q` alike; one file named for two
//! outputs, or a report that is the SQLite database the run writes to, is
//! refused before anything runs; `verify` opens what exists and creates
//! nothing.

use std::process::{Command, Stdio};

use crate::common::{loadrig, BIN};

/// `loadrig ARGS > /dev/full`: the exit code and standard error.
fn to_full_disk(args: &[&str]) -> (i32, String) {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let out = Command::new(BIN)
        .args(args)
        .stdout(Stdio::from(full))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn standard_output_on_a_full_disk_is_exit_2() {
    let run = ["run", "voter", "--target", "null://", "-n", "200"];
    for extra in [&["--json"][..], &["--csv"], &["--out", "-"], &["-q"]] {
        let mut args = run.to_vec();
        args.extend(extra);
        let (code, err) = to_full_disk(&args);
        assert_eq!(code, 2, "{extra:?}: {err}");
        let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
        assert_eq!(errors.len(), 1, "{extra:?}: {err}");
        assert!(
            errors[0].contains("No space left on device"),
            "{extra:?}: {err}"
        );
    }
    // A reader that goes away is no failure (`loadrig targets | head -1`).
    let mut child = Command::new(BIN)
        .arg("targets")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

#[test]
fn one_file_named_twice_or_the_database_itself_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v.db");
    let url = format!("sqlite://{}", db.display());
    let r = dir.path().join("r.json");
    let r = r.to_str().unwrap();
    let same = format!("{}/./r.json", dir.path().display());
    for (args, flag) in [
        (
            vec!["--target", &url, "--out", db.to_str().unwrap()],
            "--out",
        ),
        (
            vec!["--target", "null://", "--out", r, "--html", &same],
            "--html",
        ),
        (
            vec!["--target", "null://", "--out", r, "--hdr-log", r],
            "--hdr-log",
        ),
    ] {
        let mut all = vec!["run", "voter", "-n", "100"];
        all.extend(&args);
        let run = loadrig(&all);
        assert_eq!(run.code, 2, "{args:?}: {}", run.dump());
        assert!(
            run.stderr.starts_with(&format!("error: {flag}: ")),
            "{}",
            run.dump()
        );
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.dump());
        assert!(!run.stdout.contains("run ..."), "{}", run.dump());
    }
    assert!(!db.exists(), "the database was made before the refusal");
}

#[test]
fn verify_creates_no_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v.db");
    let out = dir.path().join("r.json");
    let url = format!("sqlite://{}", db.display());
    let r = loadrig(&[
        "run",
        "voter",
        "-n",
        "300",
        "--target",
        &url,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    for f in ["v.db", "v.db-wal", "v.db-shm"] {
        let _ = std::fs::remove_file(dir.path().join(f));
    }
    let v = loadrig(&["verify", out.to_str().unwrap()]);
    assert_eq!(v.code, 2, "{}", v.dump());
    assert!(v.stderr.contains("no SQLite database at"), "{}", v.dump());
    assert!(!db.exists(), "verify made the database it was to check");
}
