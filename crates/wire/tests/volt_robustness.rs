//! Hostile input: bad prefixes, and a deterministic fuzz loop that throws
//! random and mutated buffers at every decoder. Reaching the end without a
//! panic is the assertion.

// Helpers outside #[test] functions unwrap what a valid frame must give.
#![allow(clippy::unwrap_used)]

mod common;

use bytes::BytesMut;
use common::{cat, framed, hex, lp};
use loadrig_wire::volt::{
    decode_invocation, decode_login_response, decode_response, encode_invocation, encode_response,
    frame_len, peek_client_handle, peek_header, Column, Response, Status, Value, VoltTable,
    VoltType, WireError, MAX_FRAME_LEN,
};

#[test]
fn frame_len_prefix_rules() {
    assert_eq!(frame_len(&[]).unwrap(), None);
    assert_eq!(frame_len(&[0, 0, 0]).unwrap(), None);
    assert!(matches!(
        frame_len(&[0, 0, 0, 0]),
        Err(WireError::BadLength { .. })
    ));
    assert!(matches!(
        frame_len(&[0xff, 0xff, 0xff, 0xff]),
        Err(WireError::BadLength { .. })
    ));
    assert!(matches!(
        frame_len(&[0x7f, 0xff, 0xff, 0xff]),
        Err(WireError::TooLarge { .. })
    ));
    let max_ok = i32::try_from(MAX_FRAME_LEN - 4).unwrap().to_be_bytes();
    assert_eq!(frame_len(&max_ok).unwrap(), None);
    let too_big = i32::try_from(MAX_FRAME_LEN - 3).unwrap().to_be_bytes();
    assert!(matches!(
        frame_len(&too_big),
        Err(WireError::TooLarge { .. })
    ));
    assert_eq!(frame_len(&[0, 0, 0, 1, 0, 9, 9]).unwrap(), Some(5));
}

#[test]
fn decoders_reject_wrong_slices() {
    let f = framed(&[0, 1, 2]);
    let mut longer = f.clone();
    longer.push(0);
    assert_eq!(decode_response(&longer), Err(WireError::TrailingBytes(1)));
    assert!(peek_client_handle(&f).is_err());
}

#[test]
fn hostile_counts_do_not_allocate_or_panic() {
    // Table count 0x7fff and row count 0x7fffffff with nothing behind them.
    let body = cat(&[&hex(
        "00 00 00 00 00 00 00 00 01 00 01 80 00 00 00 00 7f ff",
    )]);
    assert!(matches!(
        decode_response(&framed(&body)),
        Err(WireError::Truncated { .. })
    ));
    let table = hex("00 00 00 0c 00 00 00 03 80 00 00 7f ff ff ff");
    let body = cat(&[
        &hex("00 00 00 00 00 00 00 00 01 00 01 80 00 00 00 00 00 01"),
        &table,
    ]);
    assert!(matches!(
        decode_response(&framed(&body)),
        Err(WireError::Truncated { .. })
    ));
    // Negative string length other than -1.
    let body = cat(&[&hex("00"), &hex("ff ff ff fe")]);
    assert!(matches!(
        decode_invocation(&framed(&body)),
        Err(WireError::BadLength { .. })
    ));
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn seeds() -> Vec<Vec<u8>> {
    let cols = vec![
        Column {
            name: "A".into(),
            ty: VoltType::BigInt,
        },
        Column {
            name: "B".into(),
            ty: VoltType::String,
        },
        Column {
            name: "C".into(),
            ty: VoltType::Float,
        },
        Column {
            name: "D".into(),
            ty: VoltType::Decimal,
        },
    ];
    let rows = vec![
        vec![
            Value::BigInt(1),
            Value::String("x".into()),
            Value::Float(1.0),
            Value::Decimal(5),
        ],
        vec![Value::Null, Value::Null, Value::Null, Value::Null],
    ];
    let table = VoltTable::new(cols, rows).unwrap();
    let mut resp = BytesMut::new();
    encode_response(
        &mut resp,
        &Response {
            client_handle: 3,
            status: Status::UserAbort,
            status_string: Some("why".into()),
            app_status: 1,
            app_status_string: Some("app".into()),
            cluster_round_trip_ms: 2,
            exception: None,
            tables: vec![table.clone(), table],
        },
    )
    .unwrap();
    let mut inv = BytesMut::new();
    let params = [
        Value::Integer(1),
        Value::StringArray(vec!["s".into()]),
        Value::BigIntArray(vec![1, 2]),
        Value::VarBinary(bytes::Bytes::from_static(b"vb")),
    ];
    encode_invocation(&mut inv, "Proc", 1, &params).unwrap();
    let login = framed(&cat(&[&hex("00 00 00 00 00 01"), &[0; 20], &lp("build")]));
    vec![resp.to_vec(), inv.to_vec(), login]
}

/// Makes the length prefix honest again, so mutations reach the decoders'
/// inner layers instead of all failing at the frame check.
fn fix_prefix(buf: &mut [u8]) {
    if buf.len() >= 5 {
        let n = i32::try_from(buf.len() - 4).unwrap().to_be_bytes();
        buf[..4].copy_from_slice(&n);
    }
}

fn exercise(buf: &[u8]) {
    let _ = frame_len(buf);
    let _ = decode_response(buf);
    let _ = loadrig_wire::volt::decode_scalar_i64(buf);
    let _ = decode_login_response(buf);
    let _ = decode_invocation(buf);
    let _ = peek_header(buf);
    let _ = peek_client_handle(buf);
    if let Ok(Some(n)) = frame_len(buf) {
        let _ = decode_response(&buf[..n]);
    }
}

#[test]
fn fuzz_random_and_mutated_buffers() {
    const INTERESTING: [u8; 8] = [0x00, 0x01, 0x7f, 0x80, 0xff, 0xfe, 0x09, 0x06];
    let seeds = seeds();
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut accepted = 0usize;
    for i in 0..100_000 {
        let mut buf = if i % 4 == 0 {
            // Pure noise, biased towards short buffers.
            let cap = if rng.below(8) == 0 { 512 } else { 40 };
            let len = rng.below(cap);
            (0..len).map(|_| rng.next() as u8).collect::<Vec<_>>()
        } else {
            let mut b = seeds[rng.below(seeds.len())].clone();
            for _ in 0..=rng.below(4) {
                match rng.below(5) {
                    0 if !b.is_empty() => {
                        let at = rng.below(b.len());
                        b[at] = rng.next() as u8;
                    }
                    1 if !b.is_empty() => {
                        let at = rng.below(b.len());
                        b[at] = INTERESTING[rng.below(INTERESTING.len())];
                    }
                    2 => b.truncate(rng.below(b.len() + 1)),
                    3 => {
                        let at = rng.below(b.len() + 1);
                        b.insert(at, rng.next() as u8);
                    }
                    _ if !b.is_empty() => {
                        let at = rng.below(b.len());
                        b.remove(at);
                    }
                    _ => {}
                }
            }
            if rng.below(4) != 0 {
                fix_prefix(&mut b);
            }
            b
        };
        exercise(&buf);
        if decode_response(&buf).is_ok() {
            accepted += 1;
        }
        buf.clear();
    }
    // Sanity: the mutator is not so destructive that nothing ever parses.
    assert!(accepted > 0);
}
