//! scripts/services, driven as CI drives it: a stopped server is started
//! again, and a second `up` changes nothing. On a memcached of the test's
//! own (its own port and state folder, `LOADRIG_MEMCACHED_PORT` and
//! `LOADRIG_STATE_DIR`): the shared one, which other tests and other
//! people use at the same time, is never stopped.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{free_port, Run};

/// scripts/services for a memcached on `port` with its state in `state`.
fn services(port: u16, state: &Path, args: &[&str]) -> Run {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/services");
    Command::new(script)
        .args(args)
        .env("LOADRIG_MEMCACHED_PORT", port.to_string())
        .env("LOADRIG_STATE_DIR", state)
        .output()
        .expect("scripts/services runs")
        .into()
}

fn listening(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// The pid listening on `port`, as `ss` shows it (empty when none).
fn listener(port: u16) -> String {
    let out = Command::new("ss")
        .args(["-ltnpH", &format!("sport = :{port}")])
        .output()
        .expect("ss runs");
    let text = String::from_utf8_lossy(&out.stdout);
    text.split("pid=")
        .nth(1)
        .map(|s| s.chars().take_while(char::is_ascii_digit).collect())
        .unwrap_or_default()
}

/// Stops the test's memcached however the test ends.
struct Down<'a>(u16, &'a Path);

impl Drop for Down<'_> {
    fn drop(&mut self) {
        let _ = services(self.0, self.1, &["down", "memcached"]);
    }
}

#[test]
fn a_stopped_server_is_started_and_a_second_up_changes_nothing() {
    let state = tempfile::tempdir().unwrap();
    // A port nothing listened on a moment ago; another process may take
    // it first, and then `up` sees a port that answers otherwise: try again.
    let mut tries = Vec::new();
    let (port, up) = loop {
        let port = free_port();
        let up = services(port, state.path(), &["up", "memcached"]);
        if up.code == 0 {
            break (port, up);
        }
        tries.push(up.dump());
        assert!(
            tries.len() < 5,
            "no memcached of the test's own came up:\n{tries:#?}"
        );
    };
    let _down = Down(port, state.path());
    assert!(
        up.stdout.contains(&format!("127.0.0.1:{port}")),
        "{}",
        up.dump()
    );
    let pid = listener(port);
    assert!(!pid.is_empty(), "nothing listens on {port}");

    // Stop it behind the script's back: that process only, by its pid.
    let killed = Command::new("kill").arg(&pid).status().expect("kill runs");
    assert!(killed.success(), "memcached {pid} was not running");
    let t = Instant::now();
    while listening(port) {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "memcached did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = services(port, state.path(), &["status", "memcached"]);
    assert_ne!(status.code, 0, "{}", status.dump());
    assert!(status.stdout.contains("down"), "{}", status.dump());

    let again = services(port, state.path(), &["up", "memcached"]);
    assert_eq!(again.code, 0, "{}", again.dump());
    assert!(
        again.stdout.contains(&format!("127.0.0.1:{port}")) && again.stdout.contains(" up"),
        "{}",
        again.dump()
    );
    assert!(listening(port));

    // Idempotent: run twice more, same answer, nothing restarted.
    let before = listener(port);
    assert_ne!(before, pid, "a new process");
    let first = services(port, state.path(), &["up", "memcached"]);
    let second = services(port, state.path(), &["up", "memcached"]);
    assert_eq!(
        (first.code, second.code),
        (0, 0),
        "{}\n{}",
        first.dump(),
        second.dump()
    );
    assert_eq!(first.stdout, second.stdout);
    assert_eq!(
        listener(port),
        before,
        "a server that answers is left alone"
    );
}
