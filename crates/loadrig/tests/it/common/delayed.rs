//! A reference server with known delays: just enough RESP for the redis
//! workload (`SELECT`, `INFO`, `CONFIG`, `PING`, `GET`, `SET`, ...), and
//! each data command (`GET`, `SET`) answered after a delay the test
//! chose, so the latency and service time loadrig reports can be checked
//! against values computed from the delays themselves. Admin commands
//! are answered at once and are not counted.
//!
//! One thread per connection; a connection answers in order (RESP is
//! FIFO), each reply at `max(arrival + delay, previous reply)`. With
//! [`Delays::Queue`] every connection's data commands wait in one queue
//! before one worker instead: an M/D/1 queue under Poisson arrivals. The server
//! keeps how late its own replies left (a sleeping thread on shared cores
//! wakes late), so a test can tell its lateness from the client's.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// How long each data command takes.
#[derive(Debug, Clone, Copy)]
pub enum Delays {
    Fixed(Duration),
    /// Every `every`-th data command (counted across connections) is
    /// `slow`, the others `fast`.
    Bimodal {
        fast: Duration,
        slow: Duration,
        every: u64,
    },
    /// `base` plus an exponential draw of mean `mean`: data command `n`
    /// (counted across connections) draws from `seed` and `n` alone, so
    /// each seed is an independent sample of a known distribution, whose
    /// quantile `q` is `base + mean * ln(1 / (1 - q))`.
    Exponential {
        base: Duration,
        mean: Duration,
        seed: u64,
    },
    /// `base` each; the first data command arriving `after` the first one
    /// takes `stall` more, once.
    Stall {
        base: Duration,
        after: Duration,
        stall: Duration,
    },
    /// `base`, plus `per_sec` for every second since the first data
    /// command: a server that slows down steadily during the run.
    Growing {
        base: Duration,
        per_sec: Duration,
    },
    /// `base` each, and `to` each for data commands arriving `after` the
    /// first one: a server whose delay jumps mid-run and stays up.
    Jump {
        base: Duration,
        after: Duration,
        to: Duration,
    },
    /// One worker serving every connection's data commands in the order
    /// they arrived, each in exactly this long: a command arriving at `t`
    /// is answered at `max(t, previous answer) + service`. The queue is
    /// kept as times, not as a sleeping worker, so the server's own
    /// late wake-ups delay a reply but never the ones behind it.
    Queue(Duration),
}

struct Shared {
    delays: Delays,
    /// Data commands seen so far.
    count: AtomicU64,
    first: Mutex<Option<Instant>>,
    stalled: AtomicBool,
    stop: AtomicBool,
    /// The latest any data reply left after it was due, in nanoseconds.
    late_ns: AtomicU64,
    /// [`Delays::Queue`]: when the worker is next free.
    free: Mutex<Option<Instant>>,
}

impl Shared {
    /// [`Delays::Queue`]: when the data command arriving at `at` is due to
    /// be answered (any other: after its delay).
    fn due(&self, at: Instant) -> Instant {
        if let Delays::Queue(service) = self.delays {
            self.count.fetch_add(1, Ordering::SeqCst);
            let mut free = self.free.lock().unwrap();
            let done = free.map_or(at, |f| f.max(at)) + service;
            *free = Some(done);
            return done;
        }
        at + self.delay(at)
    }

    /// A data reply due at `due` left at `left`: keep the latest lateness.
    fn note_late(&self, due: Instant, left: Instant) {
        let late = left.saturating_duration_since(due).as_nanos();
        self.late_ns
            .fetch_max(u64::try_from(late).unwrap_or(u64::MAX), Ordering::SeqCst);
    }

    /// The delay of the data command arriving at `at`.
    fn delay(&self, at: Instant) -> Duration {
        let n = self.count.fetch_add(1, Ordering::SeqCst);
        match self.delays {
            Delays::Fixed(d) | Delays::Queue(d) => d,
            Delays::Bimodal { fast, slow, every } => {
                if n % every == every - 1 {
                    slow
                } else {
                    fast
                }
            }
            Delays::Growing { base, per_sec } => {
                let first = *self.first.lock().unwrap().get_or_insert(at);
                base + per_sec.mul_f64(at.duration_since(first).as_secs_f64())
            }
            Delays::Jump { base, after, to } => {
                let first = *self.first.lock().unwrap().get_or_insert(at);
                if at >= first + after {
                    to
                } else {
                    base
                }
            }
            Delays::Exponential { base, mean, seed } => {
                base + mean.mul_f64(-(1.0 - uniform(seed, n)).ln())
            }
            Delays::Stall { base, after, stall } => {
                let first = *self.first.lock().unwrap().get_or_insert(at);
                if at >= first + after && !self.stalled.swap(true, Ordering::SeqCst) {
                    base + stall
                } else {
                    base
                }
            }
        }
    }
}

/// A uniform draw in [0, 1) from `seed` and `n` (splitmix64).
fn uniform(seed: u64, n: u64) -> f64 {
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(n.wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// The server; stops (no new connections) when dropped.
pub struct DelayServer {
    pub port: u16,
    shared: Arc<Shared>,
}

impl DelayServer {
    pub fn start(delays: Delays) -> DelayServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared {
            delays,
            count: AtomicU64::new(0),
            first: Mutex::new(None),
            stalled: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            late_ns: AtomicU64::new(0),
            free: Mutex::new(None),
        });
        let s = shared.clone();
        thread::spawn(move || {
            for conn in listener.incoming() {
                if s.stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let s = s.clone();
                thread::spawn(move || match s.delays {
                    Delays::Queue(_) => serve_queued(conn, &s),
                    _ => serve(conn, &s),
                });
            }
        });
        DelayServer { port, shared }
    }

    /// Data commands answered (or being answered) so far.
    pub fn data_commands(&self) -> u64 {
        self.shared.count.load(Ordering::SeqCst)
    }

    /// The latest any data reply left after it was due (the server's own
    /// scheduling, not the client's).
    pub fn late(&self) -> Duration {
        Duration::from_nanos(self.shared.late_ns.load(Ordering::SeqCst))
    }
}

impl Drop for DelayServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(conn: TcpStream, s: &Shared) {
    let _ = conn.set_nodelay(true);
    let Ok(mut out) = conn.try_clone() else {
        return;
    };
    let mut r = BufReader::new(conn);
    let mut last_reply = Instant::now();
    while let Some(cmd) = read_command(&mut r) {
        let arrived = Instant::now();
        let (reply, data) = reply_to(&cmd);
        let mut due = None;
        if data {
            let delay = s.delay(arrived);
            if !delay.is_zero() {
                let at = (arrived + delay).max(last_reply);
                wait_until(at);
                due = Some(at);
            }
        }
        if out.write_all(reply).is_err() {
            return;
        }
        last_reply = Instant::now();
        if let Some(due) = due {
            s.note_late(due, last_reply);
        }
    }
}

/// [`Delays::Queue`]'s connection: a command enters the one queue when it
/// is read, while the replies before it are still due (a pipelining
/// client's commands queue at once, as they would at a real server), and
/// a writer sends each reply, in order, when it is due.
fn serve_queued(conn: TcpStream, s: &Shared) {
    let _ = conn.set_nodelay(true);
    let Ok(mut out) = conn.try_clone() else {
        return;
    };
    let (tx, rx) = std::sync::mpsc::channel::<(&'static [u8], Option<Instant>)>();
    thread::scope(|scope| {
        scope.spawn(move || {
            for (reply, due) in rx {
                if let Some(due) = due {
                    wait_until(due);
                }
                if out.write_all(reply).is_err() {
                    return;
                }
                if let Some(due) = due {
                    s.note_late(due, Instant::now());
                }
            }
        });
        let mut r = BufReader::new(conn);
        while let Some(cmd) = read_command(&mut r) {
            let arrived = Instant::now();
            let (reply, data) = reply_to(&cmd);
            let due = data.then(|| s.due(arrived));
            if tx.send((reply, due)).is_err() {
                break;
            }
        }
        drop(tx);
    });
}

/// The reply to `cmd`, and whether it is a data command (delayed and
/// counted).
fn reply_to(cmd: &[Vec<u8>]) -> (&'static [u8], bool) {
    let verb = cmd
        .first()
        .map(|v| v.to_ascii_uppercase())
        .unwrap_or_default();
    let reply: &[u8] = match verb.as_slice() {
        b"GET" => b"$-1\r\n",
        b"SET" => b"+OK\r\n",
        b"PING" => b"+PONG\r\n",
        b"INFO" => INFO,
        b"SCAN" => b"*2\r\n$1\r\n0\r\n*0\r\n",
        b"DEL" | b"EXISTS" | b"DBSIZE" => b":0\r\n",
        b"CONFIG" => b"-ERR CONFIG is not served here\r\n",
        _ => b"+OK\r\n",
    };
    (reply, matches!(verb.as_slice(), b"GET" | b"SET"))
}

/// `INFO server`'s answer: a bulk string of 43 bytes.
const INFO: &[u8] = b"$43\r\n# Server\r\nredis_version:7.0.0-delayserver\r\n\r\n";

/// Sleep until `due`. No spinning: requests of a closed loop fall due
/// together, and a thread per connection spinning at once would take the
/// cores the client needs; a sleep's wake-up is tens of microseconds late.
fn wait_until(due: Instant) {
    let now = Instant::now();
    if due > now {
        thread::sleep(due - now);
    }
}

/// One command: a RESP array of bulk strings, or an inline line.
pub(crate) fn read_command(r: &mut impl BufRead) -> Option<Vec<Vec<u8>>> {
    let line = read_line(r)?;
    if let Some(n) = line.strip_prefix(b"*") {
        let n: usize = std::str::from_utf8(n).ok()?.parse().ok()?;
        let mut parts = Vec::with_capacity(n);
        for _ in 0..n {
            let head = read_line(r)?;
            let len: usize = std::str::from_utf8(head.strip_prefix(b"$")?)
                .ok()?
                .parse()
                .ok()?;
            let mut buf = vec![0; len + 2];
            r.read_exact(&mut buf).ok()?;
            buf.truncate(len);
            parts.push(buf);
        }
        Some(parts)
    } else {
        Some(
            line.split(|&b| b == b' ')
                .filter(|w| !w.is_empty())
                .map(<[u8]>::to_vec)
                .collect(),
        )
    }
}

/// A line without its `\r\n`; `None` at the end of the stream.
fn read_line(r: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut line = Vec::new();
    if r.read_until(b'\n', &mut line).ok()? == 0 {
        return None;
    }
    while line.last().is_some_and(|&b| b == b'\n' || b == b'\r') {
        line.pop();
    }
    Some(line)
}
