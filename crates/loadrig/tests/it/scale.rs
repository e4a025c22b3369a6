//! Many connections at a small cost each (issue #21, docs/explanations/client-cost.md): a
//! scaled-down run of 2,000 connections against the real Redis, every
//! request answered, verified, and the client's peak memory under a bound
//! taken from measurement. The full sizes are in bench/scale. Connections
//! from several source addresses (`--bind`), seen by the server; pub/sub
//! over the NATS cluster (`scripts/services up nats-cluster`), every
//! message delivered across the routes.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;

use crate::common::{
    assert_all_ok, assert_verified, json, loadrig, need_server, run_reported, Running,
};
use crate::redis::own_redis;

/// Peak resident memory allowed for 2,000 Redis connections: measured at
/// about 20 MiB (some 10 MiB of binary and runtime, then about 5 KiB a
/// connection; docs/explanations/client-cost.md), against 266 MiB when each connection kept
/// its own histograms and 16 KiB buffers. Twice the measurement, so a
/// noisy machine does not fail it and a return to per-connection
/// histograms (over 100 KiB each) does.
const PEAK_BOUND: u64 = 40 << 20;

#[test]
fn two_thousand_redis_connections_all_ok_in_little_memory() {
    let db = crate::common::redis_db();
    need_server("redis", 6379);
    let (r, report) = run_reported(&[
        "run",
        "redis",
        "--target",
        "redis://127.0.0.1:6379",
        "--dbnum",
        db.arg,
        "--tests",
        "set,get",
        "-c",
        "2000",
        "-n",
        "40000",
        "-q",
        "--max-error-rate",
        "0",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_all_ok(&r, &report, 80_000);
    assert_verified(&r, &report);
    let peak = report.client.max_rss_bytes;
    assert!(
        peak > 0 && peak < PEAK_BOUND,
        "peak memory {} MiB, bound {} MiB\n{}",
        peak >> 20,
        PEAK_BOUND >> 20,
        r.dump()
    );
}

/// `--bind 127.0.0.2,127.0.0.3`: the connections are dealt over both
/// source addresses, as the server sees them (`CLIENT LIST`'s `addr=`),
/// half each, and the report records them as `--bind` takes them. A
/// redis-server of the test's own: the shared one runs in protected mode,
/// which refuses loopback sources other than 127.0.0.1.
#[test]
fn bind_deals_connections_over_source_addresses() {
    let server = own_redis();
    let url = format!("redis://127.0.0.1:{}", server.port);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bind.json");
    let mut run = Running::start(&[
        "run",
        "redis",
        "--out",
        out.to_str().unwrap(),
        "--target",
        &url,
        "--bind",
        "127.0.0.2,127.0.0.3",
        "--tests",
        "get",
        "-c",
        "6",
        "-d",
        "30",
        "--rate",
        "200",
    ]);
    run.until_first_lap();
    let addrs = client_addrs(server.port);
    // Ending the run early is a signal away; the server is killed anyway.
    let _ = std::process::Command::new("kill")
        .args(["-INT", &run.id().to_string()])
        .status();
    let r = run.finish();
    let from = |ip: &str| addrs.iter().filter(|a| a.starts_with(ip)).count();
    let (two, three) = (from("127.0.0.2:"), from("127.0.0.3:"));
    // The six clients, three from each address, and the connection that
    // samples the server's INFO (from either: it is dealt one too).
    assert!(
        two + three == addrs.len() && (6..=7).contains(&addrs.len()) && two >= 3 && three >= 3,
        "{addrs:?}\n{}",
        r.dump()
    );
    let report = crate::common::json(&out);
    assert_eq!(
        report["environment"]["sources"],
        serde_json::json!(["127.0.0.2-127.0.0.3"]),
        "{}",
        r.dump()
    );
}

/// The `addr=` of every client of the Redis on `port` but this one.
fn client_addrs(port: u16) -> Vec<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("own redis answers");
    s.write_all(b"CLIENT LIST\r\n").unwrap();
    let mut r = BufReader::new(s);
    let mut head = String::new();
    r.read_line(&mut head).unwrap();
    let len: usize = head
        .trim_start_matches('$')
        .trim()
        .parse()
        .expect("a bulk string");
    let mut body = vec![0; len + 2];
    std::io::Read::read_exact(&mut r, &mut body).unwrap();
    String::from_utf8_lossy(&body)
        .lines()
        .filter(|l| !l.contains("cmd=client"))
        .filter_map(|l| l.split(' ').find_map(|f| f.strip_prefix("addr=")))
        .map(str::to_string)
        .collect()
}

/// The NATS cluster's nodes (scripts/services: node i's clients on
/// 4230 + i, its monitoring on 8230 + i).
const NATS_NODES: [u16; 3] = [1, 2, 3];

/// Messages the routes of the cluster's nodes sent, summed (`/routez`).
fn route_msgs() -> u64 {
    NATS_NODES
        .iter()
        .map(|i| {
            let url = format!("http://127.0.0.1:{}/routez", 8230 + i);
            let out = std::process::Command::new("curl")
                .args(["-fsS", "-m", "5", &url])
                .output()
                .expect("curl runs");
            let v: serde_json::Value =
                serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{url}: {e}"));
            let routes = v["routes"].as_array().cloned().unwrap_or_default();
            // More when bench/scale grew the cluster.
            assert!(routes.len() >= NATS_NODES.len() - 1, "{url}: {v}");
            routes
                .iter()
                .map(|r| r["out_msgs"].as_u64().unwrap_or(0))
                .sum::<u64>()
        })
        .sum()
}

/// Three publishers and three subscribers dealt over the three nodes of
/// the NATS cluster (one of each per node): every message reaches every
/// subscriber, so each crosses the routes to the two nodes it was not
/// published on, and the routes' counters say so.
#[test]
fn nats_cluster_delivers_every_message_across_routes() {
    for &i in &NATS_NODES {
        need_server("nats-cluster", 4230 + i);
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cluster.json");
    let before = route_msgs();
    let r = loadrig(&[
        "run",
        "pubsub",
        "--target",
        "nats://127.0.0.1:4231,4232,4233?monitor=8231",
        "--bind",
        "127.0.0.2,127.0.0.3",
        "--pubs",
        "3",
        "--subs",
        "3",
        "-n",
        "9000",
        "--value-size",
        "64",
        "--drain",
        "30s",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    let crossed = route_msgs() - before;
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        r.stdout
            .contains("verify ... ok (9,000 messages to each of 3 subscribers"),
        "{}",
        r.dump()
    );
    let report = json(&out);
    let deliver = report["measured"]["kinds"]
        .as_array()
        .and_then(|k| k.iter().find(|k| k["name"] == "deliver"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(deliver["ok"].as_u64(), Some(27_000), "{deliver}");
    // Each of the 9,000 messages goes to the two other nodes (more if
    // another run used the cluster meanwhile).
    assert!(crossed >= 18_000, "routes carried {crossed}: {}", r.dump());
}
