//! `--dashboard` in a real terminal: the binary runs in a detached tmux
//! session of fixed size against the real Redis (6379, a database of each
//! test's own), the screen is captured during the run and its panels
//! read; `q` ends the run as SIGINT does (report written, exit 1); with
//! `--processes 4` the parent shows the sum of its children's laps. Not a
//! terminal: the lap lines, and one line on standard error saying so.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{loadrig, redis_db, report, BIN};

/// A tmux server of the test's own (its own socket), one session of
/// 120x40 running the binary; killed when dropped.
struct Tmux {
    socket: String,
    exit: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmux {
    /// `loadrig ARGS` in a terminal; its exit code goes to a file.
    fn start(name: &str, args: &[&str]) -> Tmux {
        let dir = tempfile::tempdir().unwrap();
        let exit = dir.path().join("exit");
        let script = dir.path().join("run.sh");
        let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
        std::fs::write(
            &script,
            format!(
                "'{BIN}' {} ; echo $? > '{}'; sleep 120\n",
                quoted.join(" "),
                exit.display()
            ),
        )
        .unwrap();
        let socket = format!("loadrig-it-{name}-{}", std::process::id());
        let t = Tmux {
            socket,
            exit,
            _dir: dir,
        };
        let sh = format!("sh {}", script.display());
        t.tmux(&[
            "new-session",
            "-d",
            "-s",
            "it",
            "-x",
            "120",
            "-y",
            "40",
            &sh,
        ]);
        t
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux runs (apt-get install tmux)");
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen as it is now; `all`: the scrollback too.
    fn screen(&self, all: bool) -> String {
        match all {
            true => self.tmux(&["capture-pane", "-p", "-S", "-", "-t", "it"]),
            false => self.tmux(&["capture-pane", "-p", "-t", "it"]),
        }
    }

    /// The screen once `seen` holds of it, within a minute.
    fn until(&self, seen: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            let s = self.screen(false);
            if seen(&s) {
                return s;
            }
            assert!(Instant::now() < end, "never seen on the screen:\n{s}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The binary's exit code, once it exited (within a minute).
    fn exit_code(&self) -> i32 {
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(code) = std::fs::read_to_string(&self.exit) {
                if let Ok(code) = code.trim().parse() {
                    return code;
                }
            }
            assert!(
                Instant::now() < end,
                "the run never ended:\n{}",
                self.screen(true)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// The number after `label` on the screen (thousands separated by commas).
fn figure(screen: &str, label: &str) -> Option<u64> {
    let at = screen.rfind(label)? + label.len();
    let digits: String = screen[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn args<'a>(db: &'a str, out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "run",
        "redis",
        "-t",
        "redis://127.0.0.1:6379",
        "--dbnum",
        db,
        "--tests",
        "get",
        "-c",
        "4",
        "--dashboard",
        "-o",
    ];
    a.push(out.to_str().unwrap());
    a.extend(extra);
    a
}

const PANELS: [&str; 8] = [
    "progress: redis on redis://127.0.0.1:6379",
    "throughput ",
    "latency p50 ",
    "latency p99 ",
    "latency histogram, ",
    "errors ",
    "client",
    "server",
];

/// The panels during the run, with figures; `q` stops it as SIGINT does:
/// exit 1, the report written and marked interrupted; the last frame
/// holds the verdict and its histogram every operation the report counts.
#[test]
fn the_dashboard_shows_the_run_and_q_stops_it_with_its_report() {
    let db = redis_db();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let t = Tmux::start("one", &args(db.arg, &out, &["-d", "60"]));
    // The client's and the server's figures come with the first laps, a
    // frame or two after the first throughput on a busy machine.
    let s = t.until(|s| {
        figure(s, "throughput ").is_some_and(|n| n > 0)
            && s.contains("in flight: ")
            && s.contains("redis.connected_clients: ")
    });
    for p in PANELS {
        assert!(s.contains(p), "no {p:?} panel:\n{s}");
    }
    assert!(s.contains("s of 60 s, "), "no time left:\n{s}");
    assert!(s.contains("in flight: "), "{s}");
    assert!(
        s.contains("redis.connected_clients: "),
        "no server series:\n{s}"
    );
    t.tmux(&["send-keys", "-t", "it", "q"]);
    assert_eq!(t.exit_code(), 1, "{}", t.screen(true));
    let r = report(&out);
    assert!(r.interrupted);
    let all = t.screen(true);
    assert!(all.contains("measurement: "), "no verdict:\n{all}");
    assert!(all.contains("check failed: interrupted"), "{all}");
    let shown = figure(&all, "latency histogram, ").unwrap();
    assert!(r.measured.ok > 0);
    assert_eq!(shown, r.measured.ok, "{all}");
}

/// With `--processes 4` the parent's dashboard sums its children's laps:
/// its histogram's count is the merged report's, every process's
/// operations in it.
#[test]
fn with_four_processes_the_dashboard_shows_their_total() {
    let db = redis_db();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let t = Tmux::start(
        "four",
        &args(db.arg, &out, &["-d", "4", "--processes", "4"]),
    );
    let s = t.until(|s| figure(s, "throughput ").is_some_and(|n| n > 0));
    assert!(s.contains("4 processes summed"), "{s}");
    for p in PANELS {
        assert!(s.contains(p), "no {p:?} panel:\n{s}");
    }
    assert_eq!(t.exit_code(), 0, "{}", t.screen(true));
    let r = report(&out);
    let all = t.screen(true);
    let shown = figure(&all, "latency histogram, ").unwrap();
    let each: Vec<u64> = (0..4)
        .map(|k| report(&dir.path().join(format!("r.p{k}.json"))).measured.ok)
        .collect();
    assert!(each.iter().all(|&n| n > 0), "{each:?}");
    assert_eq!(shown, r.measured.ok, "{all}");
    assert_eq!(shown, each.iter().sum::<u64>(), "{all}");
}

/// Standard output not a terminal: the lap lines, and one line saying so.
#[test]
fn not_a_terminal_the_dashboard_falls_back_to_lap_lines() {
    let db = redis_db();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let r = loadrig(&args(db.arg, &out, &["-d", "2"]));
    assert_eq!(r.code, 0, "{}", r.dump());
    let said = "--dashboard: standard output is not a terminal; lap lines instead";
    assert_eq!(r.stderr.matches(said).count(), 1, "{}", r.dump());
    assert!(
        r.stdout.contains(" lap ") || r.stderr.contains(" lap "),
        "{}",
        r.dump()
    );
    assert!(
        r.stdout
            .lines()
            .chain(r.stderr.lines())
            .any(|l| l.trim_start().starts_with("at 1.")),
        "{}",
        r.dump()
    );
}
