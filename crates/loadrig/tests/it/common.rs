//! Running the binary and checking what it printed.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
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

/// One relayed connection: both sockets, and the bytes the server sent.
struct Link {
    client: TcpStream,
    server: TcpStream,
    down: Arc<AtomicU64>,
}

/// A TCP relay in front of a local server that can cut the links it
/// carries (all, or only those the server sent much to: subscribers).
pub struct Relay {
    pub port: u16,
    links: Arc<Mutex<Vec<Link>>>,
    stop: Arc<AtomicBool>,
    /// New links are refused (closed at once) until then.
    closed_until: Arc<Mutex<Option<std::time::Instant>>>,
}

impl Relay {
    /// Relay a fresh local port to `127.0.0.1:upstream`.
    pub fn start(upstream: u16) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let links = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let closed_until = Arc::new(Mutex::new(None));
        let (l, s, shut) = (links.clone(), stop.clone(), closed_until.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if s.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(client) = client else { continue };
                let refused = *shut.lock().unwrap();
                if refused.is_some_and(|t| std::time::Instant::now() < t) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    continue;
                };
                let down = Arc::new(AtomicU64::new(0));
                l.lock().unwrap().push(Link {
                    client: client.try_clone().unwrap(),
                    server: server.try_clone().unwrap(),
                    down: down.clone(),
                });
                pump(
                    client.try_clone().unwrap(),
                    server.try_clone().unwrap(),
                    None,
                );
                pump(server, client, Some(down));
            }
        });
        Relay {
            port,
            links,
            stop,
            closed_until,
        }
    }

    /// Refuse new links for `d` from now (those that come are closed).
    pub fn refuse_for(&self, d: Duration) {
        *self.closed_until.lock().unwrap() = Some(std::time::Instant::now() + d);
    }

    /// Close every link now; new ones are still relayed.
    pub fn cut(&self) {
        self.cut_where(|_| true);
    }

    /// Close the one link the server sent the most to (a subscriber,
    /// not a publisher); returns the bytes it had carried.
    pub fn cut_busiest(&self) -> u64 {
        let most = {
            let links = self.links.lock().unwrap();
            links
                .iter()
                .map(|l| l.down.load(Ordering::Relaxed))
                .max()
                .unwrap_or(0)
        };
        self.cut_where(|down| down == most);
        most
    }

    fn cut_where(&self, cut: impl Fn(u64) -> bool) -> usize {
        let mut links = self.links.lock().unwrap();
        let before = links.len();
        links.retain(|l| {
            if cut(l.down.load(Ordering::Relaxed)) {
                let _ = l.client.shutdown(Shutdown::Both);
                let _ = l.server.shutdown(Shutdown::Both);
                false
            } else {
                true
            }
        });
        before - links.len()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.cut();
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream, count: Option<Arc<AtomicU64>>) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 64 * 1024];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 || to.write_all(&buf[..n]).is_err() {
                break;
            }
            if let Some(c) = &count {
                c.fetch_add(n as u64, Ordering::Relaxed);
            }
        }
        let _ = to.shutdown(Shutdown::Both);
    });
}

/// A port nothing listens on now, for a server a test starts itself.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server a test started itself (a second redis-server or memcached),
/// on `port`: killed and reaped when dropped, with the scratch directory
/// it may have used.
pub struct OwnServer {
    pub port: u16,
    child: std::process::Child,
    _dir: Option<tempfile::TempDir>,
}

impl OwnServer {
    /// Start `cmd` (told to listen on `port`) and wait until it accepts.
    pub fn spawn(
        mut cmd: Command,
        port: u16,
        dir: Option<tempfile::TempDir>,
        installs: &str,
    ) -> OwnServer {
        let name = cmd.get_program().to_string_lossy().into_owned();
        let child = cmd
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{name} runs ({installs} installs it): {e}"));
        // Owned from here: dropping it kills and reaps the server.
        let own = OwnServer {
            port,
            child,
            _dir: dir,
        };
        for _ in 0..100 {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return own;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("{name} on {port} did not come up");
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A RESP server whose answers take the delays a test chose.
pub mod delayed;
