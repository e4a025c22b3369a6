//! One masking rule for every secret, wherever a value can surface: a
//! header that carries a credential (`-H 'Authorization: ...'`) and a
//! password in a URL a sweep varies show nowhere (output, report, HTML,
//! the sweep's table, CSV and page, error messages), and reach the
//! processes that need them by environment, never on a command line
//! (`ps` shows those to every user). A URL's password in a plain run is
//! `redis::a_password_shows_nowhere_not_even_to_ps`.

use std::time::{Duration, Instant};

use crate::common::{loadrig, Running};
use crate::redis::own_redis_with;

const SECRET: &str = "Zq7s3cretTok";

/// The command lines of `parent`'s children, read while they run, once
/// exec'd: between fork and exec a child's line is still its parent's,
/// so a line equal to the parent's is not yet the child's own.
fn children_lines(parent: u32, want: usize) -> Vec<String> {
    let t = Instant::now();
    let line = |pid: u32| {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .ok()
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
    };
    let own = line(parent).unwrap_or_default();
    let mut lines = Vec::new();
    while lines.len() < want && t.elapsed() < Duration::from_secs(20) {
        lines = crate::voter::children_of(parent)
            .into_iter()
            .filter_map(line)
            .filter(|l| l.contains(" run ") && *l != own)
            .collect();
        std::thread::sleep(Duration::from_millis(20));
    }
    lines
}

/// Every file below `dir` holding `SECRET`, by name.
fn holding_secret(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            std::fs::read(e.path()).is_ok_and(|b| String::from_utf8_lossy(&b).contains(SECRET))
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn a_credential_header_shows_nowhere_and_children_get_it_by_environment() {
    crate::common::need_server("nginx", 8088);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let html = dir.path().join("r.html");
    let header = format!("Authorization: Bearer {SECRET}");
    let mut run = Running::start(&[
        "run",
        "http",
        "-H",
        &header,
        "-H",
        "X-Api-Key: also-secret",
        "--processes",
        "2",
        "-d",
        "2",
        "--out",
        out.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
        "http://127.0.0.1:8088/",
    ]);
    run.until(|l| l.starts_with("start at "));
    let lines = children_lines(run.id(), 2);
    let r = run.finish();
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_eq!(lines.len(), 2, "the children's command lines: {lines:?}");
    for l in &lines {
        assert!(
            !l.contains(SECRET) && !l.contains("also-secret"),
            "a child: {l}"
        );
    }
    assert!(
        !r.stdout.contains(SECRET) && !r.stderr.contains(SECRET),
        "{}",
        r.dump()
    );
    assert_eq!(holding_secret(dir.path()), Vec::<String>::new());
    let report = std::fs::read_to_string(&out).unwrap();
    assert!(report.contains("Authorization: ***"), "{report}");
    assert!(report.contains("X-Api-Key: ***"), "{report}");
    // The children sent the header: they had it from the environment.
    assert!(
        crate::common::json(&out)["measured"]["ok"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn a_sweep_over_a_password_shows_it_nowhere() {
    let own = own_redis_with(&["--requirepass", SECRET]);
    let dir = tempfile::tempdir().unwrap();
    let sweep = dir.path().join("sw");
    let url = format!("redis://:{SECRET}@127.0.0.1:{}", own.port);
    let run = Running::start(&[
        "sweep",
        "--param",
        &format!("target={url},{url}"),
        "-o",
        sweep.to_str().unwrap(),
        "--html",
        dir.path().join("sw.html").to_str().unwrap(),
        "--",
        "run",
        "redis",
        "--tests",
        "set",
        "-d",
        "1",
    ]);
    let lines = children_lines(run.id(), 1);
    let r = run.finish();
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_eq!(lines.len(), 1, "the point's command line: {lines:?}");
    assert!(!lines[0].contains(SECRET), "a point: {}", lines[0]);
    assert!(
        !r.stdout.contains(SECRET) && !r.stderr.contains(SECRET),
        "{}",
        r.dump()
    );
    assert!(r.stderr.contains(":***@127.0.0.1"), "{}", r.dump());
    assert_eq!(holding_secret(&sweep), Vec::<String>::new());
    assert_eq!(holding_secret(dir.path()), Vec::<String>::new());
}

/// Refused input is said in one line, the secret in it masked.
#[test]
fn errors_mask_what_they_echo() {
    for args in [
        &[
            "run",
            "voter",
            "--target",
            "foo://u:Zq7s3cretTok@h/?token=Zq7s3cretTok",
        ][..],
        &["run", "http", "-H", "Authorization Zq7s3cretTok"],
        &["run", "http", "-H", "Proxy Authorization: Zq7s3cretTok"],
    ] {
        let r = loadrig(args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.dump());
        assert!(!r.stderr.contains(SECRET), "{args:?}: {}", r.dump());
    }
}
