//! Bad input: exit 2 and one line that names the flag.

use crate::common::loadrig;

fn one_line_naming(args: &[&str], needle: &str) {
    let r = loadrig(args);
    assert_eq!(r.code, 2, "{}", r.dump());
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line:\n{}", r.dump());
    assert!(
        lines[0].contains(needle),
        "'{needle}' not named:\n{}",
        r.dump()
    );
    assert!(r.stdout.is_empty(), "{}", r.dump());
}

#[test]
fn unknown_workload() {
    one_line_naming(&["run", "nosuch"], "nosuch");
}

#[test]
fn unknown_target_scheme() {
    one_line_naming(
        &["run", "voter", "--target", "ftp://127.0.0.1/x"],
        "--target",
    );
}

#[test]
fn malformed_target_option() {
    one_line_naming(
        &["run", "voter", "--target", "null://?delay=soon"],
        "--target",
    );
}

#[test]
fn rate_zero() {
    one_line_naming(
        &["run", "voter", "--target", "null", "--rate", "0"],
        "--rate",
    );
}

#[test]
fn conflicting_flags() {
    one_line_naming(&["run", "voter", "--rate", "10", "--burst", "3"], "--burst");
    one_line_naming(
        &["run", "voter", "-n", "10", "--duration", "1"],
        "--duration",
    );
}

#[test]
fn out_of_range_values() {
    one_line_naming(&["run", "voter", "--contestants", "13"], "--contestants");
    one_line_naming(&["run", "voter", "--clients", "0"], "--clients");
    one_line_naming(&["run", "hello", "--insert-ratio", "2"], "--insert-ratio");
    one_line_naming(&["run", "voter", "--shard", "3/3"], "--shard");
    one_line_naming(&["run", "redis", "--io", "kqueue"], "--io");
}

#[test]
fn pipeline_deeper_than_the_target_allows() {
    // Managed mode with more slots than SQLite's batch is refused up front.
    one_line_naming(&["run", "voter", "--slots", "100000"], "--slots");
}

#[test]
fn unreachable_sqlite_path_exits_3() {
    let r = loadrig(&[
        "run",
        "voter",
        "-n",
        "10",
        "--target",
        "sqlite:///nonexistent/dir/x.db",
    ]);
    assert_eq!(r.code, 3, "{}", r.dump());
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.dump());
    assert!(
        r.stderr
            .contains("cannot reach sqlite:///nonexistent/dir/x.db"),
        "{}",
        r.dump()
    );
}

#[test]
fn help_and_version_exit_0() {
    assert_eq!(loadrig(&["--version"]).code, 0);
    let r = loadrig(&["run", "voter", "--help"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("--max-votes"));
}

/// Values past their bound (docs/reference/limits.md) are refused before anything
/// runs, naming the flag: no overflow, no allocation of the machine.
#[test]
fn values_past_their_bounds() {
    for (args, flag) in [
        (&["--duration", "99999999999"][..], "--duration"),
        (&["--rate", "0.0000001"], "--rate"),
        (&["--interval", "0.00001"], "--interval"),
        (&["--clients", "4294967295"], "--clients"),
        (&["--pipeline", "100000"], "--pipeline"),
        (&["--queue", "100000000", "--slots", "2"], "--queue"),
        (&["--threads", "100000"], "--threads"),
        (&["--start-at", "99999999999999"], "--start-at"),
        (&["-c", "900000", "-t", "null://"], "--clients"),
    ] {
        let mut all = vec!["run", "voter"];
        all.extend_from_slice(args);
        one_line_naming(&all, flag);
    }
}

/// Where the report goes is checked before the run: a folder, a folder
/// that does not exist; `-` is standard output (the rest on standard
/// error), and taken by --csv.
#[test]
fn out_is_checked_first_and_dash_is_stdout() {
    one_line_naming(&["run", "voter", "-n", "10", "--out", "/tmp"], "--out");
    one_line_naming(
        &[
            "run",
            "voter",
            "-n",
            "10",
            "--out",
            "/nonexistent/dir/r.json",
        ],
        "--out",
    );
    one_line_naming(
        &["run", "voter", "-n", "10", "--out", "-", "--csv"],
        "--out",
    );
    let r = loadrig(&["run", "voter", "-t", "null://", "-n", "300", "--out", "-"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let report: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON alone on stdout");
    assert_eq!(report["measured"]["ok"], 300);
    assert!(r.stderr.contains("overall:"), "{}", r.dump());
}

/// A FIFO named by --out is written in place, and stays a FIFO.
#[test]
fn out_to_a_fifo_is_written_in_place() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let r = loadrig(&[
        "run",
        "voter",
        "-t",
        "null://",
        "-n",
        "200",
        "--out",
        fifo.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let body = reader.join().unwrap();
    let report: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(report["measured"]["ok"], 200);
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
}

/// A reader that goes away early is not an error: `loadrig targets |
/// head -1` ends quietly.
#[test]
fn a_closed_pipe_ends_quietly() {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_loadrig"));
    let mut child = cmd
        .arg("targets")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Close the reading end at once.
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status.code(), Some(0), "{err}");
}

/// `loadrig` alone shows the help (on standard error: exit 2); a mistyped
/// flag keeps clap's tip.
#[test]
fn no_arguments_show_the_help_and_typos_get_a_tip() {
    let r = loadrig(&[]);
    assert_eq!(r.code, 2, "{}", r.dump());
    assert!(
        r.stderr.contains("Usage: loadrig <COMMAND>"),
        "{}",
        r.dump()
    );
    let r = loadrig(&["run", "voter", "--client", "3"]);
    assert_eq!(r.code, 2, "{}", r.dump());
    assert!(
        r.stderr.contains("a similar argument exists: '--clients'"),
        "{}",
        r.dump()
    );
}

/// `--realtime` and `--spin` make intended starts punctual; the closed
/// loop has none, so both are refused there, and `--spin` has a ceiling.
#[test]
fn punctuality_needs_a_paced_load() {
    for (args, flag) in [
        (&["--realtime"][..], "--realtime"),
        (&["--spin", "30us"], "--spin"),
        (&["--rate", "100", "--spin", "2ms"], "--spin"),
        (&["--rate", "100", "--spin", "soon"], "--spin"),
    ] {
        let mut all = vec!["run", "voter", "-t", "null://"];
        all.extend_from_slice(args);
        one_line_naming(&all, flag);
    }
}
