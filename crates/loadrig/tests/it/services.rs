//! scripts/services, driven as CI drives it: a stopped server is started
//! again, and a second `up` changes nothing. Uses memcached, which no
//! other test talks to, so stopping it disturbs nothing running beside.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::Run;

fn services(args: &[&str]) -> Run {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/services");
    Command::new(script)
        .args(args)
        .output()
        .expect("scripts/services runs")
        .into()
}

fn listening(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
}

#[test]
fn a_stopped_server_is_started_and_a_second_up_changes_nothing() {
    let up = services(&["up", "memcached"]);
    assert_eq!(up.code, 0, "{}", up.dump());

    // Stop it behind the script's back.
    let killed = Command::new("pkill")
        .args(["-x", "memcached"])
        .status()
        .expect("pkill runs");
    assert!(killed.success(), "memcached was not running");
    let t = Instant::now();
    while listening(11211) {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "memcached did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = services(&["status", "memcached"]);
    assert_ne!(status.code, 0, "{}", status.dump());
    assert!(status.stdout.contains("down"), "{}", status.dump());

    let again = services(&["up", "memcached"]);
    assert_eq!(again.code, 0, "{}", again.dump());
    assert!(
        again.stdout.contains("127.0.0.1:11211") && again.stdout.contains(" up"),
        "{}",
        again.dump()
    );
    assert!(listening(11211));

    // Idempotent: run twice more, same answer, nothing restarted.
    let pid = || {
        Command::new("pgrep")
            .args(["-x", "memcached"])
            .output()
            .expect("pgrep runs")
            .stdout
    };
    let before = pid();
    let first = services(&["up", "memcached"]);
    let second = services(&["up", "memcached"]);
    assert_eq!(
        (first.code, second.code),
        (0, 0),
        "{}\n{}",
        first.dump(),
        second.dump()
    );
    assert_eq!(first.stdout, second.stdout);
    assert_eq!(pid(), before, "a server that answers is left alone");
}
