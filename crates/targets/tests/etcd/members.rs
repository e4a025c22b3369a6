//! See `../etcd.rs`.

use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};

use loadrig_engine::CountsBytes;
use loadrig_targets::{ClientSettings, EtcdTarget, Opened, Target};
use loadrig_workloads::kv::{Key, KvBackend, KvConn, RangeRead, Rows, Txn, TxnDone};
use loadrig_workloads::{Reply, TargetError, TargetInfo};

const ONE: &str = "etcd://127.0.0.1:2379";
const CLUSTER: &str = "etcd://127.0.0.1:23791,23792,23793";

/// The target of `url` on a dataset no parallel test uses, emptied.
async fn open(url: &str, what: &str) -> EtcdTarget {
    static N: AtomicU32 = AtomicU32::new(0);
    let Opened::Etcd(mut t) = Target::open(Some(url), &ClientSettings::default())
        .unwrap()
        .into_opened()
    else {
        panic!("{url} is not etcd")
    };
    let n = N.fetch_add(1, Ordering::Relaxed);
    t.use_dataset(&format!("t{}_{what}_{n}", std::process::id()));
    if let Err(e) = t.prepare().await {
        panic!("{e}\nstart the members: scripts/services up etcd etcd-cluster");
    }
    t.clear().await.unwrap();
    t
}

fn key(i: u32) -> Key {
    let mut k = *b"k000000000000000";
    k[6..].copy_from_slice(format!("{i:010}").as_bytes());
    k
}

fn value(i: u32, gen: u32) -> Vec<u8> {
    format!("v{i}-{gen}-{}", "x".repeat((i % 50) as usize)).into_bytes()
}

fn rows(range: std::ops::Range<u32>, gen: u32) -> Rows {
    let mut r = Rows::default();
    for i in range {
        r.push(key(i), &value(i, gen));
    }
    r
}

async fn answer<C: KvConn>(c: &mut C) -> (u32, TxnDone) {
    match tokio::time::timeout(std::time::Duration::from_secs(30), c.recv())
        .await
        .unwrap()
    {
        Reply::Done { tag, result } => (tag, result.unwrap()),
        Reply::Broken(e) => panic!("broken: {e}"),
    }
}

#[tokio::test]
async fn one_member_loads_counts_reads_back_and_keeps_a_marker() {
    let t = open(ONE, "load").await;
    assert!(t.server_version().await.unwrap().starts_with("etcd 3."));
    let d = t.durability().unwrap();
    assert!(d.contains("fsynced") && d.contains("one member"), "{d}");
    assert!(t.transactions().contains("Txn"));
    assert_eq!(t.count().await.unwrap(), 0);
    assert_eq!(t.marker().await.unwrap(), None);

    let mut c = t.connect().await.unwrap();
    // 300 rows: three transactions of at most 128 puts in flight at once,
    // plus a key given again in the last (the later value must win,
    // whatever order etcd applies them in).
    let mut load = rows(0..300, 0);
    load.push(key(5), b"later");
    c.put_rows(&load).await.unwrap();
    assert_eq!(t.count().await.unwrap(), 300);
    let mut keys: Vec<Key> = (0..300).map(key).collect();
    keys.push(key(1_000_000));
    let got = c.get_rows(&keys).await.unwrap();
    assert_eq!(got.len(), 301);
    assert_eq!(got[5].as_deref(), Some(&b"later"[..]));
    assert_eq!(got[299].as_deref(), Some(&value(299, 0)[..]));
    assert_eq!(got[300], None);

    t.set_marker("rows=300 seed=1").await.unwrap();
    assert_eq!(
        t.marker().await.unwrap().as_deref(),
        Some("rows=300 seed=1")
    );
    // The marker is not a row.
    assert_eq!(t.count().await.unwrap(), 300);
    t.teardown().await.unwrap();
    assert_eq!(t.count().await.unwrap(), 0);
    assert_eq!(t.marker().await.unwrap(), None);
}

#[tokio::test]
async fn every_shape_pipelined_on_one_connection() {
    let t = open(ONE, "shapes").await;
    let mut c = t.connect().await.unwrap();
    c.put_rows(&rows(0..2000, 0)).await.unwrap();

    // Each shape the workload sends, 50 of each, all in flight at once.
    let mut txn = Txn::default();
    let mut want = Vec::new();
    for tag in 0..250u32 {
        txn.clear();
        let i = tag / 5;
        match tag % 5 {
            // read1: one Range.
            0 => txn.reads.push(key(i)),
            // write1: one Put.
            1 => txn.writes.push(key(i), &value(i, 1)),
            // read10: one Txn of ten Ranges, one of them missing.
            2 => {
                txn.reads.extend((0..9).map(|k| key(i * 10 + k)));
                txn.reads.push(key(9_999_999));
            }
            // mix with a key written twice: one Txn.
            3 => {
                txn.reads.extend((0..9).map(|k| key(1000 + k)));
                txn.writes.push(key(1500 + i), b"first");
                txn.writes.push(key(1500 + i), &value(1500 + i, 1));
            }
            // range of 100 from a start: one Range with a limit.
            _ => {
                txn.range = Some(RangeRead {
                    start: key(i * 10),
                    end: key(u32::MAX),
                    limit: 100,
                })
            }
        }
        c.submit(&txn, tag);
        want.push(match tag % 5 {
            0 => TxnDone {
                found: 1,
                ranged: 0,
            },
            2 => TxnDone {
                found: 9,
                ranged: 0,
            },
            3 => TxnDone {
                found: 9,
                ranged: 0,
            },
            4 => TxnDone {
                found: 0,
                ranged: 100,
            },
            _ => TxnDone::default(),
        });
    }
    let mut seen = vec![false; 250];
    for _ in 0..250 {
        let (tag, done) = answer(&mut c).await;
        assert!(!seen[tag as usize], "tag {tag} twice");
        seen[tag as usize] = true;
        assert_eq!(done, want[tag as usize], "tag {tag}");
    }
    let (sent, received) = c.take_bytes();
    assert!(sent > 0 && received > sent, "{sent} {received}");
    let back = c.get_rows(&[key(3), key(1503)]).await.unwrap();
    assert_eq!(back[0].as_deref(), Some(&value(3, 1)[..]));
    assert_eq!(back[1].as_deref(), Some(&value(1503, 1)[..]));
    t.teardown().await.unwrap();
}

#[tokio::test]
async fn the_cluster_replicates_and_connections_go_round_robin() {
    let t = open(CLUSTER, "cluster").await;
    let d = t.durability().unwrap();
    assert!(d.contains("3 members") && d.contains("majority (2)"), "{d}");
    // Three connections, one per member: what one writes, the others read.
    let mut conns = Vec::new();
    for _ in 0..3 {
        conns.push(t.connect().await.unwrap());
    }
    conns[0].put_rows(&rows(0..10, 7)).await.unwrap();
    for c in &mut conns[1..] {
        let got = c.get_rows(&[key(9)]).await.unwrap();
        assert_eq!(got[0].as_deref(), Some(&value(9, 7)[..]));
    }
    assert_eq!(t.count().await.unwrap(), 10);
    t.teardown().await.unwrap();
}

#[tokio::test]
async fn nothing_listening_and_garbage_are_errors_not_panics() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let Opened::Etcd(t) = Target::open(
        Some(&format!("etcd://127.0.0.1:{port}")),
        &ClientSettings::default(),
    )
    .unwrap()
    .into_opened() else {
        panic!()
    };
    assert!(matches!(
        t.connect().await,
        Err(TargetError::Unreachable { .. })
    ));
    assert_eq!(t.server_version().await, None);

    // A server that answers with bytes that are not HTTP/2.
    let garbage = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = garbage.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in garbage.incoming().take(4) {
            let mut s = s.unwrap();
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\nno");
        }
    });
    let Opened::Etcd(t) = Target::open(
        Some(&format!("etcd://127.0.0.1:{port}")),
        &ClientSettings::default(),
    )
    .unwrap()
    .into_opened() else {
        panic!()
    };
    match t.connect().await {
        Err(TargetError::Unreachable { reason, .. }) => assert!(!reason.is_empty()),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("garbage accepted as etcd"),
    }
}
