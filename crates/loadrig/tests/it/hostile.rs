//! Hostile servers, one per protocol and behaviour: a server that says
//! nothing, one that sends garbage, one that closes at once, one that
//! trickles bytes, one that sends a frame of its protocol claiming far
//! more bytes than follow. Whatever the server does, the run ends within a bound,
//! never panics, and exits 1 (measured, failed) or 3 (unreachable) with
//! one line saying why.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::common::{loadrig, own_server};

#[derive(Debug, Clone, Copy)]
enum Behaviour {
    /// Accepts and never writes.
    Silent,
    /// Answers every read with bytes no protocol here parses.
    Garbage,
    /// Accepts and closes at once.
    Close,
    /// Writes one byte every 100 ms.
    Trickle,
    /// Answers (or greets, where the server speaks first) with a frame of
    /// the target's protocol whose length field lies.
    Lying,
}

const BEHAVIOURS: [Behaviour; 5] = [
    Behaviour::Silent,
    Behaviour::Garbage,
    Behaviour::Close,
    Behaviour::Trickle,
    Behaviour::Lying,
];

/// A frame of each protocol claiming about 2 GiB or more, then two bytes.
fn lying(scheme: &str) -> &'static [u8] {
    match scheme {
        "redis" => b"$2147483647\r\nab",
        "memcache" => b"VALUE key 0 4294967295\r\nab",
        "nats" => b"MSG s 1 99999999999\r\nab",
        "mqtt" => b"\x20\xff\xff\xff\x7f\x00",
        "postgres" => b"R\x7f\xff\xff\xf0\x00\x00",
        "mysql" => b"\xff\xff\xff\x00\x0a\x00",
        "voltdb" => b"\x7f\xff\xff\xf0\x00",
        _ => b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999\r\n\r\nab",
    }
}

/// A scheme and the run that uses it.
const TARGETS: [(&str, &[&str]); 8] = [
    ("redis", &["run", "redis", "--tests", "get"]),
    ("memcache", &["run", "memcache"]),
    ("nats", &["run", "pubsub"]),
    ("mqtt", &["run", "pubsub"]),
    ("postgres", &["run", "voter"]),
    ("mysql", &["run", "voter"]),
    ("voltdb", &["run", "voter"]),
    ("http", &["run", "http"]),
];

/// The longest any run here may take: the connect deadline of the targets
/// (10 s) and a few `--timeout`s of 1 s, with room for a busy machine.
const BOUND: Duration = Duration::from_secs(45);

/// The protocols that open with an exchange: a silent server is
/// unreachable after two `--timeout`s of 1 s (docs/reference/limits.md), with room
/// for a busy machine, not after the old fixed 10 s.
const HANDSHAKES: [&str; 5] = ["postgres", "mysql", "voltdb", "nats", "mqtt"];
const SILENT: Duration = Duration::from_secs(8);

struct Hostile {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Hostile {
    fn start(b: Behaviour, scheme: &'static str) -> Hostile {
        let (port, stop) = own_server(move |c, stop| serve(c, b, scheme, stop));
        Hostile { port, stop }
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(mut c: TcpStream, b: Behaviour, scheme: &str, stop: &AtomicBool) {
    let _ = c.set_read_timeout(Some(Duration::from_millis(100)));
    // NATS and MySQL speak first.
    if matches!(b, Behaviour::Lying) && ["nats", "mysql"].contains(&scheme) {
        let _ = c.write_all(lying(scheme));
    }
    let mut buf = [0u8; 4096];
    let mut n: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        match b {
            Behaviour::Close => return,
            Behaviour::Silent => {
                if matches!(c.read(&mut buf), Ok(0)) {
                    return;
                }
            }
            Behaviour::Garbage => {
                match c.read(&mut buf) {
                    Ok(0) => return,
                    Ok(_) => {}
                    Err(_) => continue,
                }
                if c.write_all(b"\xff\x00?garbage\r\n\x81\x7f*-1\r\n$99999999999\r\n")
                    .is_err()
                {
                    return;
                }
            }
            Behaviour::Lying => {
                match c.read(&mut buf) {
                    Ok(0) => return,
                    Ok(_) => {}
                    Err(_) => continue,
                }
                if c.write_all(lying(scheme)).is_err() {
                    return;
                }
            }
            Behaviour::Trickle => {
                let _ = c.read(&mut buf);
                n += 1;
                if c.write_all(&[b"ab\r\n"[(n % 4) as usize]]).is_err() {
                    return;
                }
            }
        }
    }
}

#[test]
fn hostile_servers_end_in_bounded_time_with_one_line() {
    let mut cases = Vec::new();
    for (scheme, run) in TARGETS {
        for b in BEHAVIOURS {
            cases.push(thread::spawn(move || {
                let server = Hostile::start(b, scheme);
                let target = match scheme {
                    "postgres" | "mysql" => {
                        format!("{scheme}://u:p@127.0.0.1:{}/db", server.port)
                    }
                    _ => format!("{scheme}://127.0.0.1:{}", server.port),
                };
                let mut args: Vec<&str> = run.to_vec();
                args.extend(["--target", &target, "-n", "10", "--timeout", "1"]);
                let t = Instant::now();
                let r = loadrig(&args);
                (scheme, b, t.elapsed(), r)
            }));
        }
    }
    let mut bad = Vec::new();
    for case in cases {
        let (scheme, b, took, r) = case.join().unwrap();
        let what = format!("{scheme} {b:?}");
        let errors: Vec<&str> = r
            .stderr
            .lines()
            .filter(|l| l.starts_with("error"))
            .collect();
        if r.stderr.contains("panicked") || ![1, 3].contains(&r.code) {
            bad.push(format!("{what}: exit {}: {}", r.code, r.dump()));
        } else if took > BOUND {
            bad.push(format!("{what}: took {took:?}: {}", r.dump()));
        } else if matches!(b, Behaviour::Silent) && HANDSHAKES.contains(&scheme) && took > SILENT {
            // Its version unasked and its handshake each get --timeout.
            bad.push(format!(
                "{what}: silent for {took:?}, past {SILENT:?}: {}",
                r.dump()
            ));
        } else if r.code == 3 && errors.len() != 1 {
            bad.push(format!("{what}: not one error line: {}", r.dump()));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n\n"));
}

/// A server of `proto` that answers each request with a reply claiming
/// `claim` bytes and then sends them (64 KiB at a time, made on the fly):
/// a legitimate reply, only too large.
fn huge_reply(head: &'static [u8]) -> (u16, Arc<AtomicBool>) {
    own_server(move |mut c, stop| {
        let mut buf = [0u8; 4096];
        // What a run asks before its load is answered as a server would.
        let head = loop {
            let n = match c.read(&mut buf) {
                Ok(n) if n > 0 => n,
                _ => return,
            };
            let said: &[u8] = match &buf[..n] {
                b if b.starts_with(b"stats") => b"STAT cmd_set 0\r\nEND\r\n",
                b if b.starts_with(b"version") => b"VERSION 1.6.21\r\n",
                b if b.windows(4).any(|w| w == b"PING") => b"+PONG\r\n",
                _ => break head,
            };
            if c.write_all(said).is_err() {
                return;
            }
        };
        if c.write_all(head).is_err() {
            return;
        }
        let chunk = vec![b'x'; 64 << 10];
        // 256 MiB at most, then close: the client gives up long before.
        for _ in 0..4096 {
            if stop.load(Ordering::Relaxed) || c.write_all(&chunk).is_err() {
                return;
            }
        }
    })
}

/// A Redis bulk string of 512 MiB and a memcached value of 1 GiB, each
/// sent whole: every one breaks its connection as a counted protocol error
/// once it passes `--max-reply` (here 4 MiB; a connection's buffer holds
/// at most about twice that), and four connections' memory stays far
/// below what the replies claim.
#[test]
fn replies_past_max_reply_are_counted_errors_in_bounded_memory() {
    let cases: [(&str, &[u8], &[&str]); 2] = [
        (
            "redis",
            b"$536870000\r\n",
            &["run", "redis", "--tests", "get"],
        ),
        (
            "memcache",
            b"VALUE lrk 0 1073741824\r\n",
            &["run", "memcache", "--ratio", "0:1"],
        ),
    ];
    for (scheme, head, args) in cases {
        let (port, stop) = huge_reply(head);
        let url = format!("{scheme}://127.0.0.1:{port}");
        let mut all = args.to_vec();
        all.extend([
            "--target",
            &url,
            "-n",
            "8",
            "-c",
            "4",
            "--max-error-rate",
            "1",
        ]);
        all.extend(["--no-verify", "--server-stats", "off", "--max-reply", "4m"]);
        let (r, report) = crate::common::run_reported(&all);
        stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", port));
        let protocol: u64 = report
            .measured
            .kinds
            .iter()
            .flat_map(|k| &k.errors)
            .filter(|(e, _)| e == "protocol")
            .map(|(_, n)| n)
            .sum();
        assert_eq!(protocol, 8, "{scheme}: {}", r.dump());
        let rss = report.client.max_rss_bytes;
        assert!(
            rss < 100 << 20,
            "{scheme}: peak memory {rss} bytes\n{}",
            r.dump()
        );
    }
}
