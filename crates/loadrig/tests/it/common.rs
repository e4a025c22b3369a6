//! Running the binary and checking what it printed.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

pub const BIN: &str = env!("CARGO_BIN_EXE_loadrig");

/// The binary's result, with its output as text.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Panic with everything printed, for a readable failure.
    pub fn dump(&self) -> String {
        format!(
            "exit {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

impl From<Output> for Run {
    fn from(o: Output) -> Self {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

pub fn loadrig(args: &[&str]) -> Run {
    Command::new(BIN)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("the loadrig binary runs")
        .into()
}

/// Runs on one server share the `bench` database's tables, and a run's
/// teardown drops them: a test that runs on a server holds its lock.
pub fn hold(server: &str) -> MutexGuard<'static, ()> {
    static POSTGRES: Mutex<()> = Mutex::new(());
    static MARIADB: Mutex<()> = Mutex::new(());
    static MEMCACHED: Mutex<()> = Mutex::new(());
    static OTHER: Mutex<()> = Mutex::new(());
    let lock = match server {
        "postgres" => &POSTGRES,
        "mariadb" => &MARIADB,
        // Runs compare memcached's global counters with their own.
        "memcached" => &MEMCACHED,
        _ => &OTHER,
    };
    // A test that failed holding it leaves nothing behind to protect.
    lock.lock().unwrap_or_else(|e| e.into_inner())
}

/// Fail (never skip) when a server the test needs is not listening.
pub fn need_server(name: &str, port: u16) {
    let addr = format!("127.0.0.1:{port}");
    let up = addr
        .parse()
        .ok()
        .and_then(|a| TcpStream::connect_timeout(&a, Duration::from_secs(2)).ok())
        .is_some();
    assert!(
        up,
        "{name} is not listening on {addr}: start it with `scripts/services up {name}` (the README's test command does)"
    );
}

/// A report file read as JSON.
pub fn json(path: &Path) -> serde_json::Value {
    let body = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&body).expect("the report is JSON")
}
