//! The phases of a many-host run (docs/explanations/measurement.md section 6): `loadrig
//! prepare` once, shards with `--no-prepare` (from `--shard i/N` or
//! `--shards N` and `$JOB_COMPLETION_INDEX`), their reports merged from a
//! stream (`merge -`) with the prepare record, verified once, torn down.
//! On one SQLite file, so it needs no server; tests/it/netns.rs runs the
//! same sequence across network namespaces.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use loadrig_report::Report;

use crate::common::{loadrig, report, Run, BIN};

/// `loadrig ARGS` with `input` on its standard input.
pub fn with_input(args: &[&str], input: &str) -> Run {
    let mut child = Command::new(BIN)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the loadrig binary runs");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    child.wait_with_output().unwrap().into()
}

/// The shards' output as `kubectl logs` would show it (each one's text,
/// then its report line) through `loadrig merge - --prepared PREP -o
/// MERGED`: the shards' reports and the merge's run, which succeeded.
pub fn merge_logs(shards: &[Run], prep: &Path, merged: &Path) -> (Vec<Report>, Run) {
    let mut logs = String::new();
    let mut reports = Vec::new();
    for r in shards {
        assert_eq!(r.code, 0, "{}", r.dump());
        reports.push(Report::parse(r.stdout.as_bytes(), "shard").unwrap());
        logs.push_str(&r.stderr);
        logs.push_str(&r.stdout);
    }
    let (prep, merged) = (prep.to_str().unwrap(), merged.to_str().unwrap());
    let m = with_input(&["merge", "-", "--prepared", prep, "-o", merged], &logs);
    assert_eq!(m.code, 0, "{}", m.dump());
    (reports, m)
}

/// A start this many seconds from now, as `--start-at` takes it.
pub fn start_in(secs: u64) -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + secs
}

/// The sum of the shards' measured operations equals the merged report's,
/// each started at `start` exactly, all within 10 ms of each other.
pub fn assert_sum_and_common_start(merged: &Report, shards: &[Report], start_ms: u64) {
    let sum = |f: fn(&Report) -> u64| shards.iter().map(f).sum::<u64>();
    assert_eq!(
        merged.measured.ops,
        sum(|r| r.measured.ops),
        "merged = the shards' sum"
    );
    assert_eq!(
        merged.measured.ok,
        sum(|r| r.measured.ok),
        "merged = the shards' sum"
    );
    assert_eq!(merged.measured.errors, 0);
    assert_eq!(merged.processes.len(), shards.len(), "one record per shard");
    let starts: Vec<u64> = merged.processes.iter().map(|p| p.started_unix_ms).collect();
    let (lo, hi) = (starts.iter().min().unwrap(), starts.iter().max().unwrap());
    assert!(
        hi - lo <= 10,
        "shards began {} ms apart: {starts:?}",
        hi - lo
    );
    assert_eq!(*lo, start_ms, "no shard began late: {starts:?}");
    let mut indexes: Vec<u32> = merged.processes.iter().map(|p| p.shard.index).collect();
    indexes.sort_unstable();
    assert_eq!(indexes, (0..shards.len() as u32).collect::<Vec<_>>());
}

/// prepare -> 3 shards (`--no-prepare`, one `--start-at`, reports on
/// standard output) -> `merge - --prepared` -> verify -> teardown, on one
/// SQLite file: the votes the shards counted are the rows the file holds.
#[test]
fn prepare_shards_merge_verify_teardown_on_one_database_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("v.db").display());
    let prep = dir.path().join("prep.json");
    let merged_path = dir.path().join("merged.json");
    let common = ["voter", "-n", "3000", "-c", "4", "--target", &db];
    let mut args = vec!["prepare"];
    args.extend(common);
    args.extend(["--out", prep.to_str().unwrap()]);
    let r = loadrig(&args);
    assert_eq!(r.code, 0, "{}", r.dump());

    let start = start_in(3);
    let at = start.to_string();
    let shards: Vec<_> = (0..3)
        .map(|i| {
            let shard = format!("{i}/3");
            let mut args = vec!["run"];
            args.extend(common);
            args.extend(["--no-prepare", "--shard", &shard, "--start-at", &at]);
            args.extend(["--out", "-", "-q"]);
            let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            std::thread::spawn(move || {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                loadrig(&args)
            })
        })
        .collect();
    let runs: Vec<Run> = shards.into_iter().map(|h| h.join().unwrap()).collect();
    for r in &runs {
        assert!(
            !r.stderr.is_empty(),
            "the human text goes to standard error"
        );
        assert_eq!(
            r.stdout.lines().count(),
            1,
            "one report line:\n{}",
            r.dump()
        );
        assert!(!r.stderr.contains("verify ..."), "a shard verifies nothing");
    }
    let (reports, m) = merge_logs(&runs, &prep, &merged_path);
    for r in &reports {
        assert!(r.verification.is_none(), "a shard records no baseline");
        assert!(!r.spec.prepare);
    }
    assert_eq!(
        m.stdout.matches("standard input:").count(),
        3,
        "{}",
        m.dump()
    );
    let merged = report(&merged_path);
    assert_sum_and_common_start(&merged, &reports, start * 1000);
    assert_eq!(merged.measured.ops, 3000);

    let v = loadrig(&["verify", merged_path.to_str().unwrap()]);
    assert_eq!(v.code, 0, "{}", v.dump());
    assert!(v.stdout.contains("verify ... ok"), "{}", v.dump());
    assert!(v.stdout.contains("accepted = +"), "{}", v.dump());

    let mut args = vec!["teardown"];
    args.extend(common);
    let t = loadrig(&args);
    // (A named SQLite file is the user's and stays; tests/it/netns.rs
    // checks that teardown removes a server's data.)
    assert_eq!(t.code, 0, "{}", t.dump());
    assert!(t.stdout.contains("teardown ... done"), "{}", t.dump());
}

/// A merged report of shards without the prepare record cannot be
/// verified, and says what to do.
#[test]
fn unprepared_shards_are_verified_only_with_the_prepare_record() {
    let dir = tempfile::tempdir().unwrap();
    let shard = dir.path().join("s.json");
    let r = loadrig(&[
        "run",
        "voter",
        "-t",
        "null://",
        "-n",
        "100",
        "--shard",
        "0/2",
        "--no-prepare",
        "-o",
        shard.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let v = loadrig(&["verify", shard.to_str().unwrap()]);
    assert_eq!(v.code, 2, "{}", v.dump());
    assert!(v.stderr.contains("--prepared"), "{}", v.dump());
    let prep = dir.path().join("p.json");
    let p = loadrig(&[
        "prepare",
        "voter",
        "-t",
        "null://",
        "--seed",
        "7",
        "-o",
        prep.to_str().unwrap(),
    ]);
    assert_eq!(p.code, 0, "{}", p.dump());
    let m = loadrig(&[
        "merge",
        shard.to_str().unwrap(),
        "--prepared",
        prep.to_str().unwrap(),
    ]);
    assert_eq!(m.code, 2, "another seed: another run\n{}", m.dump());
    assert!(m.stderr.contains("seed 7"), "{}", m.dump());
}

/// `--shards N` takes the index from `$JOB_COMPLETION_INDEX`, as a pod of
/// a Kubernetes Indexed Job has it; without it, or out of range, the run
/// is refused naming the flag.
#[test]
fn shards_reads_the_index_from_job_completion_index() {
    let run = |index: Option<&str>| -> Run {
        let mut cmd = Command::new(BIN);
        cmd.args([
            "run", "voter", "-t", "null://", "-n", "300", "-c", "1", "--shards", "3", "--out", "-",
            "-q",
        ])
        .env_remove("JOB_COMPLETION_INDEX");
        if let Some(i) = index {
            cmd.env("JOB_COMPLETION_INDEX", i);
        }
        cmd.output().unwrap().into()
    };
    let r = run(Some("2"));
    assert_eq!(r.code, 0, "{}", r.dump());
    let rep = Report::parse(r.stdout.as_bytes(), "stdout").unwrap();
    assert_eq!(
        (rep.spec.load.shard.index, rep.spec.load.shard.count),
        (2, 3)
    );
    assert_eq!(rep.measured.ops, 100, "a third of -n 300");
    for (index, says) in [(None, "JOB_COMPLETION_INDEX"), (Some("3"), "'3'")] {
        let r = run(index);
        assert_eq!(r.code, 2, "{}", r.dump());
        assert!(
            r.stderr.starts_with("error: --shards:") && r.stderr.contains(says),
            "{}",
            r.dump()
        );
    }
}
