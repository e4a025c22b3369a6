//! `loadrig completions SHELL` and `loadrig man`: made from the command
//! definition, so they name every subcommand and render as roff; and
//! docs/reference/cli.md, `loadrig man --markdown`'s output, kept current.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::loadrig;

const SUBCOMMANDS: [&str; 13] = [
    "run",
    "targets",
    "workloads",
    "verify",
    "merge",
    "compare",
    "plot",
    "report",
    "sweep",
    "capacity",
    "ab",
    "completions",
    "man",
];

#[test]
fn the_bash_completion_script_knows_the_subcommands_workloads_and_flags() {
    let r = loadrig(&["completions", "bash"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.starts_with("_loadrig() {"), "{}", r.dump());
    assert!(r.stdout.contains("complete -F _loadrig"), "{}", r.dump());
    for sub in SUBCOMMANDS {
        assert!(
            r.stdout.contains(&format!("loadrig,{sub})")),
            "{sub} missing"
        );
    }
    for flag in ["--cacert", "--insecure", "--json", "--target"] {
        assert!(r.stdout.contains(flag), "{flag} missing");
    }
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let r = loadrig(&["completions", shell]);
        assert_eq!(r.code, 0, "{shell}: {}", r.dump());
        assert!(
            r.stdout.contains("loadrig") && r.stdout.len() > 1000,
            "{shell}"
        );
    }
    let r = loadrig(&["completions", "tcsh"]);
    assert_eq!(r.code, 2, "{}", r.dump());
}

#[test]
fn the_manual_page_is_roff_that_man_renders() {
    let r = loadrig(&["man"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.contains(".TH loadrig 1"), "{}", r.dump());
    for sub in SUBCOMMANDS {
        assert!(
            r.stdout.contains(&format!("loadrig\\-{sub}(1)")),
            "{sub} missing"
        );
    }
    if which("man") {
        let dir = tempfile::tempdir().unwrap();
        let page = dir.path().join("loadrig.1");
        std::fs::write(&page, &r.stdout).unwrap();
        let out = Command::new("man")
            .args(["-l", page.to_str().unwrap()])
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .env("MANWIDTH", "80")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert!(
            text.contains("SUBCOMMANDS") && text.contains("SYNOPSIS"),
            "{text}"
        );
        assert!(!text.contains(".TH"), "roff left unrendered: {text}");
    }
}

#[test]
fn man_dir_writes_a_page_per_command_with_its_flags() {
    let dir = tempfile::tempdir().unwrap();
    let man1 = dir.path().join("man1");
    let r = loadrig(&["man", "--dir", man1.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let redis = std::fs::read_to_string(man1.join("loadrig-run-redis.1")).unwrap();
    assert!(redis.contains(".TH loadrig-run-redis 1"), "{redis}");
    assert!(redis.contains("\\-\\-cacert"), "{redis}");
    for sub in SUBCOMMANDS {
        assert!(man1.join(format!("loadrig-{sub}.1")).exists(), "{sub}");
    }
}

/// The command that regenerates docs/reference/cli.md, as the failure
/// message and the file itself give it.
const REGENERATE: &str = "cargo run -p loadrig -- man --markdown > docs/reference/cli.md";

#[test]
fn the_cli_reference_is_current() {
    let r = loadrig(&["man", "--markdown"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    for sub in SUBCOMMANDS {
        assert!(
            r.stdout.contains(&format!("\n## loadrig {sub}\n")),
            "{sub} missing"
        );
    }
    assert!(r.stdout.contains("--cacert <FILE>"), "{}", r.dump());
    assert!(r.stdout.contains(REGENERATE), "{}", r.dump());
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reference/cli.md");
    let kept = std::fs::read_to_string(&path).unwrap_or_default();
    if kept != r.stdout {
        let at = kept
            .lines()
            .zip(r.stdout.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| kept.lines().count().min(r.stdout.lines().count()));
        panic!(
            "docs/reference/cli.md is stale (first difference at line {}): regenerate it with\n  {REGENERATE}",
            at + 1
        );
    }
}

fn which(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
