//! The memcache workload on the real memcached (started by `scripts/services
//! up memcached` on 11211): both protocols verified, multiget hits and
//! misses key by key, a value changed behind the client's back, servers
//! that answer garbage, and two servers in one URL (a second memcached
//! started by the test).
//!
//! Runs compare memcached's global counters with their own, so every test
//! that uses the server holds its lock.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use std::collections::HashSet;

use loadrig_spec::{MemcacheSpec, RunSpec, WorkloadSpec};
use loadrig_workloads::memcache::load::Load;

use crate::common::{
    hold, json, loadrig, need_server, own_server, with_refused_port, OwnServer, Run,
};

const URL: &str = "memcache://127.0.0.1:11211";

fn run(args: &[&str], out: &Path) -> Run {
    let mut all = vec!["run", "memcache", "-q", "--out", out.to_str().unwrap()];
    all.extend_from_slice(args);
    loadrig(&all)
}

/// `(count, ok)` of a kind in a report.
fn kind(report: &serde_json::Value, name: &str) -> (u64, u64) {
    let k = report["measured"]["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == name)
        .unwrap_or_else(|| panic!("no kind {name}"));
    (k["count"].as_u64().unwrap(), k["ok"].as_u64().unwrap())
}

fn domain(report: &serde_json::Value, name: &str) -> u64 {
    report["measured"]["domains"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d[0] == name)
        .and_then(|d| d[1].as_u64())
        .unwrap_or_else(|| panic!("no domain {name}"))
}

/// Errors of kind `error` over every operation kind.
fn errors(report: &serde_json::Value, error: &str) -> u64 {
    report["measured"]["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|k| k["errors"].as_array().unwrap().clone())
        .filter(|e| e[0] == error)
        .map(|e| e[1].as_u64().unwrap())
        .sum()
}

/// memcached's statistic `name` on the server at `port`.
fn stat(port: u16, name: &str) -> u64 {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"stats\r\n").unwrap();
    let mut r = BufReader::new(s);
    loop {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        assert!(line != "END\r\n" && !line.is_empty(), "no stat {name}");
        if let Some(v) = line.strip_prefix(&format!("STAT {name} ")) {
            return v.trim().parse().unwrap();
        }
    }
}

/// The key of `slot` in `window`, at 16 bytes (`--key-size 16`), as the
/// workload names it.
fn key16(window: u32, slot: u32) -> String {
    format!("lr{window:06x}{slot:08x}")
}

/// Delete the keys of `slots` in `windows` at the default key size (64
/// bytes: padded with `-`) on 11211, so a test starts from a known state
/// whatever earlier runs (a benchmark's, say) left there.
fn forget(windows: u32, slots: u32) {
    let mut s = TcpStream::connect(("127.0.0.1", 11211)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut out = Vec::new();
    for w in 0..windows {
        for slot in 0..slots {
            out.extend_from_slice(format!("delete {:-<64} noreply\r\n", key16(w, slot)).as_bytes());
        }
    }
    // Answered once every delete before it is done.
    out.extend_from_slice(b"version\r\n");
    s.write_all(&out).unwrap();
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).unwrap();
    assert!(line.starts_with("VERSION"), "{line}");
}

/// Overwrite `keys` with `value` (same length, other bytes) on 11211.
fn overwrite(s: &mut TcpStream, keys: &[String], value: &[u8]) {
    let mut out = Vec::new();
    for k in keys {
        out.extend_from_slice(format!("set {k} 0 0 {} noreply\r\n", value.len()).as_bytes());
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    s.write_all(&out).unwrap();
}

/// Text and binary: exit 0, verified, gets and sets add up to -n, every
/// get of a key the window wrote a hit.
#[test]
fn text_and_binary_run_and_verify() {
    need_server("memcached", 11211);
    let _g = hold("memcached");
    for proto in [&[][..], &["--binary"][..]] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("r.json");
        let mut args = vec!["--target", URL, "-n", "20000", "-c", "8", "-P", "4"];
        args.extend_from_slice(proto);
        let r = run(&args, &out);
        assert_eq!(r.code, 0, "{proto:?}: {}", r.dump());
        assert!(
            r.stdout
                .contains("verify ... ok (memcached counted 2,000 sets, 18,000 hits, 0 misses"),
            "{}",
            r.dump()
        );
        assert!(r.stdout.contains("net rate: "), "{}", r.dump());
        let report = json(&out);
        let (sets, gets) = (kind(&report, "set"), kind(&report, "get"));
        assert_eq!(sets.0 + gets.0, 20_000, "{}", r.dump());
        assert_eq!((sets.1, gets.1), (2_000, 18_000), "{}", r.dump());
        assert_eq!(domain(&report, "get_hits"), 18_000);
        assert_eq!(domain(&report, "get_misses"), 0);
        assert!(report["measured"]["bytes_received"].as_u64().unwrap() > 18_000 * 1024);
    }
}

/// A multiget counts each key: half the window written, then gets only
/// over the whole window, 5 keys each: hits and misses add up to 5 per
/// get, both occur, and memcached's counters agree (verified).
#[test]
fn multiget_counts_hits_and_misses_per_key() {
    need_server("memcached", 11211);
    let _g = hold("memcached");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    // 4 windows of 100 keys each written: 400 sets.
    let fill = [
        "--target", URL, "-c", "4", "--window", "200", "--ratio", "1:0", "-n", "400",
    ];
    for proto in [&[][..], &["--binary"][..]] {
        forget(4, 200);
        let mut args = fill.to_vec();
        args.push("--keep");
        assert_eq!(run(&args, &out).code, 0);
        let mut args = vec![
            "--target",
            URL,
            "-c",
            "4",
            "--window",
            "200",
            "--ratio",
            "0:1",
            "-n",
            "2000",
            "--multiget",
            "5",
        ];
        args.extend_from_slice(proto);
        let evictions = stat(11211, "evictions");
        let r = run(&args, &out);
        assert_eq!(r.code, 0, "{proto:?}: {}", r.dump());
        let report = json(&out);
        let (hits, misses) = (domain(&report, "get_hits"), domain(&report, "get_misses"));
        assert_eq!(hits + misses, 5 * 2000, "{}", r.dump());
        // Which keys the gets ask for is the load's own draw: exactly
        // that many hits, unless memcached evicted keys meanwhile
        // (another user's load on the shared server), then no more.
        let want = multiget_hits(&crate::common::report(&out).spec, 400, 2000);
        assert!(want > 2000 && want < 8000, "{want}");
        if stat(11211, "evictions") == evictions {
            assert_eq!(hits, want, "{}", r.dump());
        } else {
            assert!(hits <= want && hits > 0, "{hits} of {want}: {}", r.dump());
        }
        assert!(
            r.stdout.contains(&format!(
                "miss ratio {:.2}%",
                100.0 * misses as f64 / 10_000.0
            )),
            "{}",
            r.dump()
        );
        // The same sets again, this time deleted afterwards.
        assert_eq!(run(&fill, &out).code, 0);
    }
}

/// The hits of gets `0..gets` of the run `spec` describes, after sets
/// `0..sets` of the same load with the ratio 1:0 (the fill): every key a
/// get asks for that a set wrote.
fn multiget_hits(spec: &RunSpec, sets: u64, gets: u64) -> u64 {
    let WorkloadSpec::Memcache(m) = &spec.workload else {
        panic!("not a memcache run: {}", spec.workload.name());
    };
    let windows = u64::from(spec.load.connections);
    let fill = Load::new(
        MemcacheSpec {
            sets: 1,
            gets: 0,
            ..m.clone()
        },
        windows,
        spec.seed,
    );
    let written: HashSet<(u64, u64)> = (0..sets)
        .map(|i| fill.op(i))
        .map(|o| (o.window, o.slot))
        .collect();
    let load = Load::new(m.clone(), windows, spec.seed);
    (0..gets)
        .map(|i| load.op(i))
        .map(|o| {
            (0..m.multiget)
                .filter(|&k| written.contains(&(o.window, o.nth(k))))
                .count() as u64
        })
        .sum()
}

/// A test thread overwrites keys of window 0 with other bytes of the same
/// length while the run reads them: verification errors, exit 1. Then a
/// kept run's key overwritten afterwards is found by `loadrig verify`.
#[test]
fn a_value_changed_behind_the_clients_back_is_caught() {
    need_server("memcached", 11211);
    let _g = hold("memcached");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let keys: Vec<String> = (0..50).map(|s| key16(0, s)).collect();
    let bad = vec![b'#'; 100];
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, keys, bad) = (stop.clone(), keys.clone(), bad.clone());
        std::thread::spawn(move || {
            let mut s = TcpStream::connect(("127.0.0.1", 11211)).unwrap();
            while !stop.load(Ordering::Relaxed) {
                overwrite(&mut s, &keys, &bad);
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let args = [
        "--target",
        URL,
        "-c",
        "1",
        "--window",
        "50",
        "--key-size",
        "16",
        "--value-size",
        "100",
        "--verify-gets",
        "1",
        "-d",
        "2",
    ];
    let r = run(&args, &out);
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert_eq!(r.code, 1, "{}", r.dump());
    assert!(errors(&json(&out), "verification") > 0, "{}", r.dump());
    assert!(
        r.stdout
            .contains("gets that read a value this run does not write: expected 0"),
        "{}",
        r.dump()
    );

    // A run kept, then one of its keys changed: the read-back finds it.
    let kept = [
        "--target",
        URL,
        "-c",
        "1",
        "--window",
        "50",
        "--key-size",
        "16",
        "--value-size",
        "100",
        "-n",
        "1000",
    ];
    let mut args = kept.to_vec();
    args.push("--keep");
    let r = run(&args, &out);
    assert_eq!(r.code, 0, "{}", r.dump());
    let mut s = TcpStream::connect(("127.0.0.1", 11211)).unwrap();
    overwrite(&mut s, &keys[..1], &bad);
    s.write_all(b"version\r\n").unwrap();
    let mut line = [0u8; 64];
    let _ = s.read(&mut line);
    let v = loadrig(&["verify", out.to_str().unwrap()]);
    assert_eq!(v.code, 1, "{}", v.dump());
    assert!(
        v.stdout
            .contains("keys read back holding another value: expected 0, found 1"),
        "{}",
        v.dump()
    );
    // Clean up: the same run, not kept.
    assert_eq!(run(&kept, &out).code, 0);
}

/// A fake server: `stats` and `version` answered as memcached would,
/// everything else with `garbage`.
fn garbage_server(garbage: &'static [u8]) -> (u16, Arc<AtomicBool>) {
    own_server(move |mut conn, _| {
        let mut buf = [0u8; 4096];
        while let Ok(n) = conn.read(&mut buf) {
            let answer: &[u8] = match &buf[..n] {
                [] => return,
                b"stats\r\n" => b"STAT cmd_set 0\r\nEND\r\n",
                b"version\r\n" => b"VERSION fake\r\n",
                _ => garbage,
            };
            if conn.write_all(answer).is_err() {
                return;
            }
        }
    })
}

/// Garbage, a response nobody asked for, a binary packet of another
/// request: protocol errors counted, connections re-opened, a report,
/// never a panic.
#[test]
fn garbage_from_the_server_is_counted_not_a_panic() {
    for (garbage, proto) in [
        (&b"this is not memcached\r\n"[..], &[][..]),
        (&b"VALUE k 0 99999999999\r\n"[..], &[][..]),
        (&b"STORED\r\nSTORED\r\nSTORED\r\n"[..], &[][..]),
        (
            &b"\x81\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\x7f\x7f\x7f\0\0\0\0\0\0\0\0"[..],
            &["--binary"][..],
        ),
        (&b"\x80garbage"[..], &["--binary"][..]),
    ] {
        let (port, done) = garbage_server(garbage);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("garbage.json");
        let target = format!("memcache://127.0.0.1:{port}");
        // Nothing to verify or clean on a server that is not memcached.
        let mut args = vec![
            "--target",
            target.as_str(),
            "-n",
            "300",
            "-c",
            "2",
            "--timeout",
            "5",
            "--no-verify",
            "--keep",
        ];
        args.extend_from_slice(proto);
        let r = run(&args, &out);
        done.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", port));
        let what = String::from_utf8_lossy(garbage);
        assert!(!r.stderr.contains("panicked"), "{what}: {}", r.dump());
        // Reported; more than 1% failed, so the default gate exits 1.
        assert_eq!(r.code, 1, "{what}: {}", r.dump());
        assert!(
            r.stdout.contains("of the operations failed"),
            "{what}: {}",
            r.dump()
        );
        let report = json(&out);
        assert!(errors(&report, "protocol") > 0, "{what}: {}", r.dump());
        assert_eq!(report["measured"]["ops"], 300, "{what}: {}", r.dump());
        assert!(
            report["measured"]["reconnects"].as_u64().unwrap() > 0,
            "{what}: {}",
            r.dump()
        );
    }
}

/// Nothing listening: exit 3 and a line naming the server.
#[test]
fn no_server_is_exit_3() {
    let (port, r) = with_refused_port(
        |port| {
            let target = format!("memcache://127.0.0.1:{port}");
            loadrig(&["run", "memcache", "--target", &target, "-n", "10"])
        },
        |r| r.code == 3,
    );
    assert_eq!(r.code, 3, "{}", r.dump());
    assert!(
        r.stderr
            .contains(&format!("127.0.0.1:{port}: connection refused")),
        "{}",
        r.dump()
    );
}

/// A second memcached of the test's own, on a free port.
pub(crate) fn own_memcached() -> OwnServer {
    OwnServer::start(memcached_on, None, "scripts/services up memcached")
}

/// memcached told to listen on `port`.
fn memcached_on(port: u16) -> Command {
    let mut cmd = Command::new("memcached");
    cmd.args(["-p", &port.to_string(), "-l", "127.0.0.1", "-U", "0"]);
    // memcached refuses to run as root unless told which user to be.
    let root = std::env::var("USER").is_ok_and(|u| u == "root")
        || std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        });
    if root {
        cmd.args(["-u", "root"]);
    }
    cmd
}

/// Two servers in one URL: connections dealt over both, the counters
/// summed over both, each server taking its share of the sets.
#[test]
fn two_servers_in_one_url() {
    need_server("memcached", 11211);
    let _g = hold("memcached");
    let own = own_memcached();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let target = format!("{URL},{}", own.port);
    for proto in [&[][..], &["--binary", "--multiget", "3"][..]] {
        let before = stat(own.port, "cmd_set");
        let mut args = vec!["--target", target.as_str(), "-n", "8000", "-c", "4"];
        args.extend_from_slice(proto);
        let r = run(&args, &out);
        assert_eq!(r.code, 0, "{proto:?}: {}", r.dump());
        // Connections 1 and 3 went to the second server: half the sets.
        assert_eq!(stat(own.port, "cmd_set") - before, 400, "{}", r.dump());
        assert!(
            r.stdout.contains("memcached counted 800 sets"),
            "{}",
            r.dump()
        );
    }
}
