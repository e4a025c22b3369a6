//! Responses built field by field, as etcd would send them, read back;
//! every cut of them and random bytes read without a panic.

use loadrig_wire::etcd::pb::{put_bytes, put_message_head, put_uint};
use loadrig_wire::etcd::response::{
    KeyValue, MemberList, RangeResponse, ResponseHeader, ResponseOp, StatusResponse, TxnResponse,
};
use loadrig_wire::etcd::WireError;

fn header() -> Vec<u8> {
    let mut h = Vec::new();
    put_uint(&mut h, 1, 11);
    put_uint(&mut h, 2, 22);
    put_uint(&mut h, 3, 33);
    put_uint(&mut h, 4, 4);
    h
}

fn kv(key: &[u8], value: &[u8], rev: u64) -> Vec<u8> {
    let mut m = Vec::new();
    put_bytes(&mut m, 1, key);
    put_uint(&mut m, 2, rev);
    put_uint(&mut m, 3, rev);
    put_uint(&mut m, 4, 1);
    put_bytes(&mut m, 5, value);
    m
}

fn range(kvs: &[Vec<u8>], more: bool, count: u64) -> Vec<u8> {
    let mut m = Vec::new();
    put_bytes(&mut m, 1, &header());
    for kv in kvs {
        put_bytes(&mut m, 2, kv);
    }
    put_uint(&mut m, 3, u64::from(more));
    put_uint(&mut m, 4, count);
    // A field this codec does not know: skipped.
    put_bytes(&mut m, 99, b"future");
    m
}

fn txn() -> Vec<u8> {
    let r = range(&[kv(b"a", b"1", 5), kv(b"b", b"2", 6)], true, 7);
    let mut op_range = Vec::new();
    put_bytes(&mut op_range, 1, &r);
    let mut put = Vec::new();
    put_bytes(&mut put, 1, &header());
    let mut op_put = Vec::new();
    put_message_head(&mut op_put, 2, put.len());
    op_put.extend_from_slice(&put);
    let mut m = Vec::new();
    put_bytes(&mut m, 1, &header());
    put_uint(&mut m, 2, 1);
    put_bytes(&mut m, 3, &op_range);
    put_bytes(&mut m, 3, &op_put);
    m
}

#[test]
fn a_range_response_is_read_with_its_key_values() {
    let m = range(&[kv(b"a", b"1", 5), kv(b"b", b"", 6)], true, 9);
    let r = RangeResponse::decode(&m).unwrap();
    assert_eq!(
        r.header,
        ResponseHeader {
            cluster_id: 11,
            member_id: 22,
            revision: 33,
            raft_term: 4
        }
    );
    assert!(r.more);
    assert_eq!((r.count, r.returned), (9, 2));
    let kvs: Vec<KeyValue<'_>> = r.kvs().collect::<Result<_, _>>().unwrap();
    assert_eq!(kvs.len(), 2);
    assert_eq!(
        (kvs[0].key, kvs[0].value, kvs[0].mod_revision),
        (&b"a"[..], &b"1"[..], 5)
    );
    assert_eq!(
        (kvs[1].key, kvs[1].value, kvs[1].version),
        (&b"b"[..], &b""[..], 1)
    );
}

#[test]
fn a_txn_response_is_read_with_its_responses_in_order() {
    let m = txn();
    let t = TxnResponse::decode(&m).unwrap();
    assert!(t.succeeded);
    assert_eq!(t.returned, 2);
    assert_eq!(t.header.revision, 33);
    let ops: Vec<_> = t.responses().collect::<Result<_, _>>().unwrap();
    let ResponseOp::Range(r) = ops[0] else {
        panic!("{:?}", ops[0])
    };
    assert_eq!(r.returned, 2);
    assert_eq!(r.kvs().nth(1).unwrap().unwrap().value, b"2");
    assert!(matches!(ops[1], ResponseOp::Put(p) if p.header.member_id == 22));
}

#[test]
fn status_and_member_list_are_read() {
    let mut m = Vec::new();
    put_bytes(&mut m, 1, &header());
    put_bytes(&mut m, 2, b"3.4.23");
    put_uint(&mut m, 3, 20480);
    put_uint(&mut m, 4, 22);
    put_uint(&mut m, 5, 100);
    put_uint(&mut m, 6, 4);
    let s = StatusResponse::decode(&m).unwrap();
    assert_eq!(
        (s.version, s.db_size, s.leader, s.raft_index),
        ("3.4.23", 20480, 22, 100)
    );

    let member = |id: u64, name: &str, url: &str| {
        let mut m = Vec::new();
        put_uint(&mut m, 1, id);
        put_bytes(&mut m, 2, name.as_bytes());
        put_bytes(&mut m, 3, b"http://127.0.0.1:2380");
        put_bytes(&mut m, 4, url.as_bytes());
        m
    };
    let mut m = Vec::new();
    put_bytes(&mut m, 1, &header());
    put_bytes(&mut m, 2, &member(1, "m1", "http://127.0.0.1:23791"));
    put_bytes(&mut m, 2, &member(2, "m2", "http://127.0.0.1:23792"));
    let list = MemberList::decode(&m).unwrap();
    assert_eq!(list.len, 2);
    let names: Vec<_> = list.members().map(|m| m.name).collect();
    assert_eq!(names, ["m1", "m2"]);
    let urls: Vec<_> = list.members().flat_map(|m| m.client_urls()).collect();
    assert_eq!(urls, ["http://127.0.0.1:23791", "http://127.0.0.1:23792"]);
}

#[test]
fn a_wrong_wire_type_is_named() {
    let mut m = Vec::new();
    put_uint(&mut m, 1, 5); // header as a varint
    assert_eq!(
        RangeResponse::decode(&m),
        Err(WireError::WrongType {
            message: "RangeResponse",
            field: 1
        })
    );
}

/// Every decoder on every cut of every message, and on random bytes:
/// an answer or an error, never a panic.
#[test]
fn cuts_and_noise_never_panic() {
    let messages = [txn(), range(&[kv(b"k", b"v", 1)], false, 1)];
    let all = |b: &[u8]| {
        let _ = TxnResponse::decode(b).map(|t| t.responses().count());
        let _ = RangeResponse::decode(b).map(|r| r.kvs().count());
        let _ = StatusResponse::decode(b);
        let _ = MemberList::decode(b).map(|l| l.members().count());
    };
    for m in &messages {
        for cut in 0..m.len() {
            all(&m[..cut]);
        }
    }
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..20_000 {
        let mut b = Vec::new();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        for i in 0..(x % 48) {
            b.push((x >> (i % 8 * 8)) as u8 ^ i as u8);
        }
        all(&b);
        // And the same bytes behind a real message's start.
        let mut m = txn();
        let at = (x as usize) % m.len();
        m.truncate(at);
        m.extend_from_slice(&b);
        all(&m);
    }
}
