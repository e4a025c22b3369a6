//! TLS on the four protocols that speak it, against the real servers that
//! `scripts/services up postgres-tls redis-tls nats-tls mosquitto-tls`
//! starts with its test CA (docs/guides/tls.md): a run trusting that CA succeeds
//! and verifies; a run trusting another CA is refused at connect (exit 3,
//! one error line naming the unknown issuer); `--insecure` accepts.

use std::path::PathBuf;

use crate::common::{assert_all_ok, assert_verified, hold, loadrig, need_server, run_reported};

/// A certificate file `scripts/services` made (ca.pem, other-ca.pem).
fn cert(file: &str) -> String {
    let state = std::env::var("LOADRIG_STATE_DIR").unwrap_or_else(|_| "/var/lib/loadrig".into());
    let path = PathBuf::from(state).join("tls").join(file);
    assert!(
        path.exists(),
        "{} is missing: make it with `scripts/services up redis-tls` (the README's test command does)",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

/// Each TLS server: its name in scripts/services, its port, and the run
/// (workload and target) that goes over TLS.
const CASES: [(&str, u16, &[&str]); 5] = [
    (
        "postgres-tls",
        5432,
        &[
            "run",
            "voter",
            "-t",
            "postgres://bench:bench@127.0.0.1/bench?sslmode=verify-full",
        ],
    ),
    (
        "redis-tls",
        6380,
        &[
            "run",
            "redis",
            "--tests",
            "set,get",
            "--target",
            "rediss://127.0.0.1:6380",
        ],
    ),
    (
        "nats-tls",
        4443,
        &["run", "pubsub", "-t", "tls://127.0.0.1:4443"],
    ),
    (
        "mosquitto-tls",
        8883,
        &["run", "pubsub", "-t", "mqtts://127.0.0.1:8883?qos=1"],
    ),
    // A plain nats:// URL to a server whose INFO says tls_required.
    (
        "nats-tls",
        4443,
        &["run", "pubsub", "-t", "nats://127.0.0.1:4443"],
    ),
];

const N: u64 = 2_000;

/// Each case run with `trust` (its TLS flags) succeeds: exit 0, every one
/// of its operations ok, and its verification passed where there is one
/// (the redis workload has none).
fn every_case_succeeds(trust: &[&str]) {
    for (name, port, run) in CASES {
        need_server(name, port);
        let _lock = hold(if name == "postgres-tls" {
            "postgres"
        } else {
            name
        });
        let mut args = run.to_vec();
        args.extend(["-n", "2000", "-q"]);
        args.extend(trust);
        let (r, report) = run_reported(&args);
        assert_eq!(r.code, 0, "{name}: {}", r.dump());
        // The redis workload runs N of each of its two tests.
        let n = if name == "redis-tls" { 2 * N } else { N };
        assert_all_ok(&r, &report, n);
        if name != "redis-tls" {
            assert_verified(&r, &report);
        }
    }
}

#[test]
fn a_run_over_tls_with_the_test_ca_succeeds_and_verifies() {
    every_case_succeeds(&["--cacert", &cert("ca.pem")]);
}

#[test]
fn a_server_certificate_from_another_ca_is_refused_at_connect() {
    let other = cert("other-ca.pem");
    for (name, port, run) in CASES {
        need_server(name, port);
        let mut args = run.to_vec();
        args.extend(["-n", "200", "-q", "--cacert", &other]);
        let r = loadrig(&args);
        assert_eq!(r.code, 3, "{name}: {}", r.dump());
        let errors: Vec<&str> = r
            .stderr
            .lines()
            .filter_map(|l| l.split_once("error: ").map(|(_, e)| e))
            .collect();
        assert_eq!(errors.len(), 1, "{name}: one error line\n{}", r.dump());
        assert!(
            errors[0].starts_with("cannot reach ")
                && errors[0].contains("TLS: invalid peer certificate: UnknownIssuer")
                && errors[0].ends_with("--cacert FILE trusts its CA, --insecure skips the check)"),
            "{name}: {}",
            r.dump()
        );
    }
}

#[test]
fn insecure_accepts_a_certificate_it_cannot_check() {
    // --cacert names a CA that did not sign the servers' certificates:
    // --insecure wins.
    every_case_succeeds(&["--cacert", &cert("other-ca.pem"), "--insecure"]);
}

#[test]
fn without_cacert_the_web_roots_do_not_trust_the_test_ca() {
    need_server("redis-tls", 6380);
    let r = loadrig(&[
        "run",
        "redis",
        "--tests",
        "get",
        "--target",
        "rediss://127.0.0.1:6380",
        "-n",
        "100",
        "-q",
    ]);
    assert_eq!(r.code, 3, "{}", r.dump());
    assert!(
        r.stderr
            .contains("TLS: invalid peer certificate: UnknownIssuer")
            && r.stderr.contains("--cacert FILE")
            && r.stderr.contains("--insecure"),
        "{}",
        r.dump()
    );
}

#[test]
fn a_cacert_file_that_is_missing_or_holds_no_certificate_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "no certificate here\n").unwrap();
    for file in [dir.path().join("missing.pem"), empty] {
        let r = loadrig(&[
            "run",
            "redis",
            "--target",
            "rediss://127.0.0.1:6380",
            "--cacert",
            file.to_str().unwrap(),
        ]);
        assert_eq!(r.code, 2, "{}", r.dump());
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.dump());
        assert!(r.stderr.starts_with("error: --cacert: "), "{}", r.dump());
    }
}

#[test]
fn a_bad_sslmode_is_a_usage_error_and_nats_tls_needs_a_server_that_offers_it() {
    let r = loadrig(&[
        "run",
        "voter",
        "-t",
        "postgres://bench:bench@127.0.0.1/bench?sslmode=allow",
    ]);
    assert_eq!(r.code, 2, "{}", r.dump());
    assert!(r.stderr.contains("sslmode 'allow' is not"), "{}", r.dump());
    need_server("nats", 4222);
    let r = loadrig(&[
        "run",
        "pubsub",
        "-t",
        "tls://127.0.0.1:4222",
        "-n",
        "10",
        "-q",
    ]);
    assert_eq!(r.code, 3, "{}", r.dump());
    assert!(
        r.stderr.contains("the server offers no TLS"),
        "{}",
        r.dump()
    );
}

#[test]
fn verify_takes_the_same_tls_flags_as_run() {
    need_server("postgres-tls", 5432);
    let _lock = hold("postgres");
    let ca = cert("ca.pem");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let url = "postgres://bench:bench@127.0.0.1/bench?sslmode=verify-full";
    let r = loadrig(&[
        "run",
        "voter",
        "-t",
        url,
        "-n",
        "1000",
        "-q",
        "--cacert",
        &ca,
        "--no-verify",
        "--keep",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let out = out.to_str().unwrap();
    // The report's target URL says sslmode; the trust is the command's.
    let refused = loadrig(&["verify", out, "-t", url]);
    assert_eq!(refused.code, 3, "{}", refused.dump());
    assert!(
        refused.stderr.contains("TLS: invalid peer certificate"),
        "{}",
        refused.dump()
    );
    let ok = loadrig(&["verify", out, "-t", url, "--cacert", &ca]);
    assert_eq!(ok.code, 0, "{}", ok.dump());
    assert!(ok.stdout.contains("verify ... ok"), "{}", ok.dump());
    // A run without --keep drops the tables the kept run left.
    let r = loadrig(&["run", "voter", "-t", url, "-n", "10", "-q", "--cacert", &ca]);
    assert_eq!(r.code, 0, "{}", r.dump());
}
