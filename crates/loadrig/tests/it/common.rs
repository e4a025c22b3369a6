//! Running the binary and checking what it printed and what its report
//! (`--out`) says it did.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use loadrig_report::{Measured, Report};

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

/// The binary running in the background, its output read as it comes,
/// so that a test acts on an event the run shows (its first lap line)
/// rather than after a guessed sleep.
pub struct Running {
    child: std::process::Child,
    stdout: BufReader<std::process::ChildStdout>,
    printed: String,
}

impl Running {
    pub fn start(args: &[&str]) -> Running {
        let mut child = Command::new(BIN)
            .args(args)
            .env("NO_COLOR", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the loadrig binary runs");
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Running {
            child,
            stdout,
            printed: String::new(),
        }
    }

    /// Read the output until a line satisfies `seen`; the run ending
    /// first fails the test.
    pub fn until(&mut self, seen: impl Fn(&str) -> bool) {
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).unwrap();
            if n == 0 {
                let rest = self.finish_reading();
                panic!("the run ended before the line awaited:\n{}", rest.dump());
            }
            self.printed.push_str(&line);
            if seen(&line) {
                return;
            }
        }
    }

    /// Until the first lap line (`  at 1.0s  lap ...`): the load runs.
    pub fn until_first_lap(&mut self) {
        self.until(|l| l.starts_with("  at "));
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    fn finish_reading(&mut self) -> Run {
        let mut rest = String::new();
        let _ = self.stdout.read_to_string(&mut rest);
        self.printed.push_str(&rest);
        let mut stderr = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut stderr);
        }
        let status = self.child.wait().expect("the run is reaped");
        Run {
            code: status.code().unwrap_or(-1),
            stdout: std::mem::take(&mut self.printed),
            stderr,
        }
    }

    /// Wait for the end: everything it printed and its exit code.
    pub fn finish(mut self) -> Run {
        self.finish_reading()
    }
}

/// Runs on one server share the `bench` database's tables, and a run's
/// teardown drops them: a test that runs on a server holds its lock.
pub fn hold(server: &str) -> MutexGuard<'static, ()> {
    static POSTGRES: Mutex<()> = Mutex::new(());
    static MARIADB: Mutex<()> = Mutex::new(());
    static MEMCACHED: Mutex<()> = Mutex::new(());
    static REDIS_CLUSTER: Mutex<()> = Mutex::new(());
    static REDIS_DB0: Mutex<()> = Mutex::new(());
    static BROKERS: Mutex<()> = Mutex::new(());
    static OTHER: Mutex<()> = Mutex::new(());
    let lock = match server {
        "postgres" => &POSTGRES,
        "mariadb" => &MARIADB,
        // Runs compare memcached's global counters with their own.
        "memcached" => &MEMCACHED,
        // A cluster has one database: runs there share the key names.
        "redis-cluster" => &REDIS_CLUSTER,
        // Runs in Redis's default database (the peers' lines name none):
        // each verifies the keys it wrote there.
        "redis-db0" => &REDIS_DB0,
        // Chat's stress mode floods the brokers (NATS, Mosquitto, Redis
        // pub/sub) as fast as they take it; a broker that busy delayed
        // another test's deliveries by a second (NATS's /varz did not
        // answer in 2 s), past its drain: the pub/sub tests that count
        // every message take turns.
        "brokers" => &BROKERS,
        _ => &OTHER,
    };
    // A test that failed holding it leaves nothing behind to protect.
    lock.lock().unwrap_or_else(|e| e.into_inner())
}

/// `kill SIG PID` (`-INT`, `-KILL`, `-STOP`, ...).
pub fn signal(sig: &str, pid: u32) {
    let status = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill {sig} {pid}");
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

/// A report file read as the binary wrote it.
pub fn report(path: &Path) -> Report {
    Report::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Run `loadrig ARGS` under `strace -c -f`: the run, and how many calls
/// of each of `names` it made, threads included.
pub fn count_syscalls(args: &[&str], names: &[&str]) -> (Run, Vec<u64>) {
    let dir = tempfile::tempdir().unwrap();
    let counts = dir.path().join("strace.txt");
    let out = Command::new("strace")
        .args(["-c", "-f", "-e"])
        .arg(format!("trace={}", names.join(",")))
        .arg("-o")
        .arg(&counts)
        .arg(BIN)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("strace runs (`scripts/services up` installs it; scripts/test does)");
    let r = Run::from(out);
    let table = std::fs::read_to_string(&counts)
        .unwrap_or_else(|e| panic!("no strace summary ({e}):\n{}", r.dump()));
    // "% time  seconds  usecs/call  calls  [errors]  syscall"
    let calls = names
        .iter()
        .map(|name| {
            table
                .lines()
                .filter_map(|l| {
                    let cells: Vec<&str> = l.split_whitespace().collect();
                    (cells.last() == Some(name)).then(|| cells.get(3)?.parse::<u64>().ok())?
                })
                .sum()
        })
        .collect();
    (r, calls)
}

/// Run the binary with `--out` into a scratch file: the run and its
/// report. A run that wrote none fails the test.
pub fn run_reported(args: &[&str]) -> (Run, Report) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut all = args.to_vec();
    all.extend(["--out", out.to_str().unwrap()]);
    let r = loadrig(&all);
    assert!(out.exists(), "no report written:\n{}", r.dump());
    let report = report(&out);
    (r, report)
}

/// The measured phase's failures by operation kind and error kind, for a
/// failure message.
fn failures(m: &Measured) -> String {
    let kinds: Vec<String> = m
        .kinds
        .iter()
        .filter(|k| !k.errors.is_empty())
        .map(|k| format!("{}: {:?} {:?}", k.name, k.errors, k.server_errors))
        .collect();
    format!(
        "ops {}, ok {}, errors {} [{}]",
        m.ops,
        m.ok,
        m.errors,
        kinds.join("; ")
    )
}

/// Every one of `n` operations succeeded: no error of any kind and
/// `ok == n`. What a test of a working feature must rest on: a run whose
/// every operation failed has nothing acknowledged to verify, so it still
/// prints `verify ... ok` and exits 0.
pub fn assert_all_ok(r: &Run, report: &Report, n: u64) {
    let m = &report.measured;
    assert!(
        m.errors == 0 && m.ok == n && m.ops == n,
        "expected {n} operations, all ok; {}\n{}",
        failures(m),
        r.dump()
    );
}

/// A run meant to meet failures (links cut, sessions killed): some
/// errors were counted, and at least `floor` operations still succeeded.
pub fn assert_some_failed(r: &Run, report: &Report, floor: u64) {
    let m = &report.measured;
    assert!(
        m.errors > 0 && m.ok >= floor && m.ok + m.errors == m.ops,
        "expected errors and at least {floor} ok; {}\n{}",
        failures(m),
        r.dump()
    );
}

/// The verification held (not skipped, not failed).
pub fn assert_verified(r: &Run, report: &Report) {
    let verdict = report
        .verification
        .as_ref()
        .and_then(|v| v.verdict.as_ref());
    assert_eq!(
        verdict.and_then(|v| v.passed),
        Some(true),
        "{verdict:?}\n{}",
        r.dump()
    );
}

/// The report's verdict; a report without one fails the test.
pub fn verdict(report: &Report) -> loadrig_metrics::Verdict {
    report
        .verification
        .as_ref()
        .and_then(|v| v.verdict.clone())
        .expect("the report holds a verdict")
}

/// The check of the verdict named `name`, as (expected, actual).
pub fn check_of(report: &Report, name: &str) -> Option<(i64, i64)> {
    verdict(report)
        .checks
        .iter()
        .find(|c| c.name == name)
        .map(|c| (c.expected, c.actual))
}

/// A workload counter of the measured phase; absent fails the test.
pub fn domain(report: &Report, name: &str) -> u64 {
    report
        .measured
        .domains
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no domain {name}: {:?}", report.measured.domains))
}

/// One relayed connection: both sockets, and the bytes the server sent.
struct Link {
    client: TcpStream,
    server: TcpStream,
    down: Arc<AtomicU64>,
}

impl Link {
    /// Shut both sides: the client and the server each see the link end.
    fn close(&self) {
        let _ = self.client.shutdown(Shutdown::Both);
        let _ = self.server.shutdown(Shutdown::Both);
    }
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

    /// Close every link now (returns how many); new ones are still relayed.
    pub fn cut(&self) -> usize {
        let mut links = self.links.lock().unwrap();
        links.drain(..).map(|l| l.close()).count()
    }

    /// Wait until one link has carried `bytes` from the server (a
    /// subscriber is receiving): the load runs. Fails after `limit`.
    pub fn until_one_carried(&self, bytes: u64, limit: Duration) {
        let t = std::time::Instant::now();
        loop {
            let most = self.most_carried();
            if most >= bytes {
                return;
            }
            assert!(
                t.elapsed() < limit,
                "no link carried {bytes} bytes in {limit:?} (the most: {most})"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Close the one link the server sent the most to (a subscriber,
    /// not a publisher); returns the bytes it had carried. Chosen and cut
    /// under one lock: a link still receiving has carried more by the
    /// time a second look is taken, and a cut chosen by its count then
    /// cut nothing.
    pub fn cut_busiest(&self) -> u64 {
        let mut links = self.links.lock().unwrap();
        let busiest = links
            .iter()
            .enumerate()
            .max_by_key(|(_, l)| l.down.load(Ordering::Relaxed))
            .map(|(i, _)| i);
        let Some(i) = busiest else {
            return 0;
        };
        let l = links.remove(i);
        l.close();
        l.down.load(Ordering::Relaxed)
    }

    /// The most bytes any one link has carried from the server.
    fn most_carried(&self) -> u64 {
        let links = self.links.lock().unwrap();
        links
            .iter()
            .map(|l| l.down.load(Ordering::Relaxed))
            .max()
            .unwrap_or(0)
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

/// A port nothing listened on a moment ago. Another process may take it
/// before the caller uses it, so every caller checks and tries again
/// ([`OwnServer::start`], [`with_refused_port`]).
/// A server of a test's own on a free port: every connection is handed
/// to `serve` on a thread of its own, with the stop flag. Setting the flag
/// (then connecting once, to wake the accept) stops it taking new
/// connections, and tells the ones being served to end.
pub fn own_server(
    serve: impl Fn(TcpStream, &AtomicBool) + Send + Sync + 'static,
) -> (u16, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let done = Arc::new(AtomicBool::new(false));
    let stop = done.clone();
    let serve = Arc::new(serve);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let Ok(conn) = conn else { continue };
            let (serve, stop) = (serve.clone(), stop.clone());
            std::thread::spawn(move || serve(conn, &stop));
        }
    });
    (port, done)
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `run` given a port nothing listens on, and that port; if it did not
/// end as `refused` says and the port answers now (taken meanwhile),
/// again on another.
pub fn with_refused_port(run: impl Fn(u16) -> Run, refused: impl Fn(&Run) -> bool) -> (u16, Run) {
    for _ in 0..5 {
        let port = free_port();
        let r = run(port);
        if refused(&r) || TcpStream::connect(("127.0.0.1", port)).is_err() {
            return (port, r);
        }
    }
    panic!("every free port was taken before it could be used");
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
    /// Start the server `cmd(port)` makes on a free port and wait until
    /// it accepts; if it exited instead (the port was taken between
    /// choosing and binding it), again on another port.
    pub fn start(
        cmd: impl Fn(u16) -> Command,
        dir: Option<tempfile::TempDir>,
        installs: &str,
    ) -> OwnServer {
        let mut dir = dir;
        for _ in 0..5 {
            let port = free_port();
            let mut cmd = cmd(port);
            let name = cmd.get_program().to_string_lossy().into_owned();
            let child = cmd
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("{name} runs ({installs} installs it): {e}"));
            // Owned from here: dropping it kills and reaps the server.
            let mut own = OwnServer {
                port,
                child,
                _dir: dir.take(),
            };
            if own.came_up() {
                return own;
            }
            dir = own._dir.take();
        }
        panic!("no server of the test's own came up on a free port");
    }

    /// Its process id (to stop or kill it behind the run's back).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Accepting on its port while still running (a port that answers
    /// while the server has exited is someone else's).
    fn came_up(&mut self) -> bool {
        for _ in 0..100 {
            let exited = self.child.try_wait().ok().flatten().is_some();
            if exited {
                return false;
            }
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return self.child.try_wait().ok().flatten().is_none();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
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

/// A Redis-compatible server that refuses SELECT, MGET, INFO, SCAN, ...
pub mod subset;

/// A proxy that renames the key of every n-th write: lost writes whose
/// counts add up.
pub mod lossy;

/// A Redis database of the test's own on the shared server (6379): a
/// number no other test of this run was given (the tests are one
/// process), emptied when handed out, so no two tests share keys.
/// `scripts/services` starts that Redis with 64 databases; 0 is the
/// peers' (their command lines name none: `hold("redis-db0")`).
pub struct RedisDb {
    pub n: u32,
    /// The number as `--dbnum` takes it.
    pub arg: &'static str,
}

pub fn redis_db() -> RedisDb {
    use std::io::{BufRead, BufReader, Write};
    static NEXT: AtomicU64 = AtomicU64::new(16);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    assert!(
        n < 64,
        "more tests than Redis databases: raise `--databases` in scripts/services"
    );
    need_server("redis", 6379);
    let mut s = TcpStream::connect(("127.0.0.1", 6379)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let db = n.to_string();
    write!(
        s,
        "*2\r\n$6\r\nSELECT\r\n${}\r\n{db}\r\n*1\r\n$7\r\nFLUSHDB\r\n",
        db.len()
    )
    .unwrap();
    let mut r = BufReader::new(s);
    for _ in 0..2 {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        assert_eq!(
            line, "+OK\r\n",
            "Redis database {db}: the shared Redis has fewer than 64 databases? \
             (scripts/services up redis starts it with 64)"
        );
    }
    RedisDb {
        n: n as u32,
        arg: Box::leak(db.into_boxed_str()),
    }
}
