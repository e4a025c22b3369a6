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
