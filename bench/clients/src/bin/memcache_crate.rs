//! memaslap's default load (`memaslap -c 50 -T 1 -x N`: 64-byte keys,
//! 1024-byte values, 9 gets to 1 set, text protocol, one request in flight
//! per concurrency), written with async-memcached (Shopify's tokio client):
//! a tokio current-thread runtime (memaslap -T 1 is one event loop), one
//! `async_memcached::Client` (one TCP connection) per client, each a spawned
//! task calling `AsciiProtocol::get` / `set` and waiting for the reply.
//!
//! Like memaslap, a client only gets keys it has set: its first operation
//! and then every tenth is a `set` of its next key (a window of 1,000 keys
//! a client, `lrclients:`-prefixed and padded to the key size), the others
//! `get` a key it set before, chosen at random, so every get should hit. The
//! time runs from the moment every client is connected to the last reply;
//! the line printed is `ops=N seconds=S ops_per_sec=R gets=G sets=S misses=M`.
//!
//! usage: memcache_crate [-c 50] [-n 200000] [-k 64] [-v 1024] [-p 11211]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use async_memcached::{AsciiProtocol, Client};

const WINDOW: usize = 1000;
const SET_EVERY: usize = 10;

fn num(s: &str) -> usize {
    s.parse().unwrap_or_else(|_| die(&format!("not a number: {s}")))
}

fn die(msg: &str) -> ! {
    eprintln!("memcache_crate: {msg}");
    std::process::exit(2)
}

#[derive(Default)]
struct Counts {
    gets: usize,
    sets: usize,
    misses: usize,
}

async fn client_loop(
    mut mc: Client,
    keys: Vec<Vec<u8>>,
    value: Arc<Vec<u8>>,
    left: Arc<AtomicUsize>,
    seed: u64,
) -> Result<Counts, async_memcached::Error> {
    let mut c = Counts::default();
    let mut rng = seed | 1;
    let mut i = 0usize;
    while left
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |l| l.checked_sub(1))
        .is_ok()
    {
        if i % SET_EVERY == 0 {
            mc.set(&keys[c.sets % WINDOW], value.as_slice(), None, None).await?;
            c.sets += 1;
        } else {
            // xorshift64: a key this client has set
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let key = &keys[rng as usize % c.sets.min(WINDOW)];
            match mc.get(key).await? {
                Some(v) if v.data.as_ref().map(Vec::len) == Some(value.len()) => {}
                _ => c.misses += 1,
            }
            c.gets += 1;
        }
        i += 1;
    }
    Ok(c)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (mut clients, mut requests, mut key_size, mut value_size, mut port) =
        (50, 200_000, 64, 1024, 11211);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = num(&it.next().unwrap_or_else(|| die(&format!("{flag} wants a value"))));
        match flag.as_str() {
            "-c" => clients = v,
            "-n" => requests = v,
            "-k" => key_size = v,
            "-v" => value_size = v,
            "-p" => port = v,
            _ => die(&format!("unknown flag {flag}")),
        }
    }
    let mut conns = Vec::with_capacity(clients);
    for _ in 0..clients {
        conns.push(
            Client::new(format!("tcp://127.0.0.1:{port}"))
                .await
                .unwrap_or_else(|e| die(&format!("connect: {e}"))),
        );
    }
    let value = Arc::new(vec![b'v'; value_size]);
    let left = Arc::new(AtomicUsize::new(requests));

    // The harness's key tables, made before any request, as memaslap's are.
    let tables: Vec<Vec<Vec<u8>>> = (0..clients)
        .map(|id| {
            (0..WINDOW)
                .map(|slot| {
                    let mut k = format!("lrclients:{id:03}:{slot:06}:").into_bytes();
                    k.resize(key_size.max(k.len()), b'k');
                    k
                })
                .collect()
        })
        .collect();

    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for ((id, mc), keys) in conns.into_iter().enumerate().zip(tables) {
        let seed = 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(id as u64 + 1);
        tasks.spawn(client_loop(mc, keys, value.clone(), left.clone(), seed));
    }
    let mut total = Counts::default();
    while let Some(r) = tasks.join_next().await {
        let c = r
            .unwrap_or_else(|e| die(&format!("task: {e}")))
            .unwrap_or_else(|e| die(&format!("memcached: {e}")));
        total.gets += c.gets;
        total.sets += c.sets;
        total.misses += c.misses;
    }
    let secs = start.elapsed().as_secs_f64();
    let ops = total.gets + total.sets;
    println!(
        "ops={ops} seconds={secs:.6} ops_per_sec={:.1} gets={} sets={} misses={}",
        ops as f64 / secs,
        total.gets,
        total.sets,
        total.misses
    );
}
