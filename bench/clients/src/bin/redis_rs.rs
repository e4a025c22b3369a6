//! redis-benchmark's `-t get` / `-t set` load, written with redis-rs as its
//! documentation shows: a tokio current-thread runtime (redis-benchmark runs
//! one event loop), one `aio::MultiplexedConnection` per client (like
//! redis-benchmark's one socket per client) or, with `--conns 1`, one
//! multiplexed connection cloned into every client, the crate's default
//! configuration (its 500 ms response timeout included), the typed
//! `AsyncCommands::get`/`set` at `-P 1` and a `redis::pipe()` of P commands
//! at `-P P`, each client waiting for its reply before sending again.
//!
//! Every client (a spawned task) takes P requests from a shared count until `-n` have been
//! sent, as redis-benchmark does; the time runs from the moment every client
//! is connected to the last reply, and the line printed is
//! `ops=N seconds=S ops_per_sec=R misses=M`.
//!
//! usage: redis_rs -t get|set [-c 50] [-P 1] [-n 200000] [-d 3] [--dbnum 9]
//!        [-p 6379] [--conns N]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use redis::aio::MultiplexedConnection;
use redis::AsyncCommands;

/// The key redis-benchmark uses when it runs without -r.
const KEY: &str = "key:__rand_int__";

struct Args {
    test: String,
    clients: usize,
    pipeline: usize,
    requests: usize,
    data_size: usize,
    dbnum: u32,
    port: u16,
    conns: usize,
}

fn args() -> Args {
    let mut a = Args {
        test: String::new(),
        clients: 50,
        pipeline: 1,
        requests: 200_000,
        data_size: 3,
        dbnum: 9,
        port: 6379,
        conns: 0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| die(&format!("{flag} wants a value")));
        match flag.as_str() {
            "-t" => a.test = value().to_ascii_lowercase(),
            "-c" => a.clients = num(&value()),
            "-P" => a.pipeline = num(&value()),
            "-n" => a.requests = num(&value()),
            "-d" => a.data_size = num(&value()),
            "--dbnum" => a.dbnum = num(&value()) as u32,
            "-p" => a.port = num(&value()) as u16,
            "--conns" => a.conns = num(&value()),
            _ => die(&format!("unknown flag {flag}")),
        }
    }
    if a.test != "get" && a.test != "set" {
        die("-t get or -t set");
    }
    if a.conns == 0 || a.conns > a.clients {
        a.conns = a.clients;
    }
    a.pipeline = a.pipeline.max(1);
    a
}

fn num(s: &str) -> usize {
    s.parse().unwrap_or_else(|_| die(&format!("not a number: {s}")))
}

fn die(msg: &str) -> ! {
    eprintln!("redis_rs: {msg}");
    std::process::exit(2)
}

/// Takes up to `want` requests from the shared count; 0 when all are taken.
fn take(left: &AtomicUsize, want: usize) -> usize {
    let mut n = 0;
    let _ = left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |l| {
        n = l.min(want);
        Some(l - n)
    });
    n
}

async fn client_loop(
    mut con: MultiplexedConnection,
    get: bool,
    pipeline: usize,
    value: Arc<Vec<u8>>,
    left: Arc<AtomicUsize>,
) -> redis::RedisResult<(usize, usize)> {
    let (mut done, mut misses) = (0, 0);
    loop {
        let n = take(&left, pipeline);
        if n == 0 {
            return Ok((done, misses));
        }
        if pipeline == 1 {
            if get {
                let v: Option<Vec<u8>> = con.get(KEY).await?;
                misses += v.is_none() as usize;
            } else {
                let () = con.set(KEY, value.as_slice()).await?;
            }
        } else {
            let mut pipe = redis::pipe();
            for _ in 0..n {
                if get {
                    pipe.get(KEY);
                } else {
                    pipe.set(KEY, value.as_slice());
                }
            }
            if get {
                let vs: Vec<Option<Vec<u8>>> = pipe.query_async(&mut con).await?;
                misses += vs.iter().filter(|v| v.is_none()).count();
            } else {
                let () = pipe.query_async(&mut con).await?;
            }
        }
        done += n;
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let a = args();
    let client = redis::Client::open(format!("redis://127.0.0.1:{}/{}", a.port, a.dbnum))
        .unwrap_or_else(|e| die(&e.to_string()));
    let mut conns = Vec::with_capacity(a.conns);
    for _ in 0..a.conns {
        conns.push(
            client
                .get_multiplexed_async_connection()
                .await
                .unwrap_or_else(|e| die(&format!("connect: {e}"))),
        );
    }
    // The value redis-benchmark's -d writes is opaque; loadrig writes "VXK" for -d 3.
    let value: Arc<Vec<u8>> = Arc::new(b"VXK".iter().copied().cycle().take(a.data_size).collect());
    let left = Arc::new(AtomicUsize::new(a.requests));
    let get = a.test == "get";

    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..a.clients {
        let con = conns[i % a.conns].clone();
        tasks.spawn(client_loop(con, get, a.pipeline, value.clone(), left.clone()));
    }
    let (mut ops, mut misses) = (0, 0);
    while let Some(r) = tasks.join_next().await {
        let (d, m) = r
            .unwrap_or_else(|e| die(&format!("task: {e}")))
            .unwrap_or_else(|e| die(&format!("redis: {e}")));
        ops += d;
        misses += m;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "ops={ops} seconds={secs:.6} ops_per_sec={:.1} misses={misses}",
        ops as f64 / secs
    );
}
