//! Signals in every phase before and around the load (the load's own are
//! in `voter.rs`): the wait for a common start, preparing a dataset, and a
//! sweep's running point. Each stops within a second of the signal, with
//! exit 1, and leaves nothing running.

use std::time::{Duration, Instant};

use crate::common::{signal, Running};

/// The run's end after `sig`, and how long it took to come.
fn stop_after(run: Running, sig: &str, wait: Duration) -> (crate::common::Run, Duration) {
    std::thread::sleep(wait);
    signal(sig, run.id());
    let at = Instant::now();
    let r = run.finish();
    (r, at.elapsed())
}

/// A signal during `--start-delay` (how the Kubernetes shards start) ends
/// the run at once, with its report marked interrupted, not at the start.
#[test]
fn a_signal_during_the_start_wait_ends_the_run_at_once() {
    for (sig, extra) in [("-TERM", &[][..]), ("-INT", &["--processes", "2"])] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("r.json");
        let mut args = vec!["run", "voter", "--target", "null://", "-n", "1000"];
        args.extend(["--start-delay", "20", "--out", out.to_str().unwrap()]);
        args.extend(extra);
        let mut run = Running::start(&args);
        run.until(|l| l.starts_with("start at "));
        let (r, took) = stop_after(run, sig, Duration::from_millis(300));
        assert_eq!(r.code, 1, "{sig} {extra:?}: {}", r.dump());
        assert!(took < Duration::from_secs(3), "{sig} {extra:?}: {took:?}");
        let report = crate::common::report(&out);
        assert!(report.interrupted, "{sig} {extra:?}: {}", r.dump());
        assert_eq!(report.measured.ok, 0, "{sig} {extra:?}: {}", r.dump());
    }
}

/// A signal while kv loads its dataset ends the load there: one line,
/// exit 1, not the rest of ten million rows.
#[test]
fn a_signal_while_preparing_ends_the_run_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("kv.db").display());
    let run = Running::start(&[
        "run", "kv", "--target", &url, "--rows", "10000000", "-n", "100",
    ]);
    let (r, took) = stop_after(run, "-TERM", Duration::from_millis(1500));
    assert_eq!(r.code, 1, "{}", r.dump());
    assert!(took < Duration::from_secs(3), "{took:?}: {}", r.dump());
    assert!(
        r.stderr
            .contains("error: interrupted by a signal while preparing: nothing was run"),
        "{}",
        r.dump()
    );
}

/// SIGTERM and SIGHUP to a sweep stop its running point (which writes its
/// report) and write the table of the points done; nothing is left
/// loading the target.
#[test]
fn a_signal_to_a_sweep_stops_its_point_and_writes_the_table() {
    for sig in ["-TERM", "-HUP"] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("sw");
        let run = Running::start(&[
            "sweep",
            "--param",
            "clients=1,2,4",
            "-o",
            out.to_str().unwrap(),
            "--",
            "run",
            "hello",
            "--target",
            "null://?delay=1ms",
            "-d",
            "30",
        ]);
        let (r, took) = stop_after(run, sig, Duration::from_millis(1500));
        assert_eq!(r.code, 1, "{sig}: {}", r.dump());
        assert!(took < Duration::from_secs(5), "{sig}: {took:?}");
        assert!(out.join("sweep.csv").exists(), "{sig}: {}", r.dump());
        assert!(out.join("point-001-1.json").exists(), "{sig}: {}", r.dump());
        assert!(
            r.stderr.contains("interrupted: 1 of 3 points done"),
            "{sig}: {}",
            r.dump()
        );
        let left = std::process::Command::new("pgrep")
            .args(["-f", "null://\\?delay=1ms -d 30"])
            .output()
            .unwrap();
        assert!(left.stdout.is_empty(), "{sig}: a point is still running");
    }
}
