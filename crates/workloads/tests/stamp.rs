//! The stamp's layout byte for byte, messages of the requested size, and
//! payloads that are not (or not wholly) loadrig's refused.

use bytes::BytesMut;
use loadrig_workloads::pubsub::stamp::{
    encode_message, Stamp, StampError, FILL, MAGIC, STAMP_LEN, VERSION,
};

const STAMP: Stamp = Stamp {
    publisher: 0x0102_0304,
    seq: 0x1112_1314_1516_1718,
    sent_unix_ns: 1_700_000_000_123_456_789,
};

fn layout() -> Vec<u8> {
    [
        &[0x4c, 0x52][..],                                 // magic 'LR'
        &[0x01],                                           // version 1
        &[0x00],                                           // flags
        &[0x01, 0x02, 0x03, 0x04],                         // publisher id
        &[0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18], // sequence
        &[0x17, 0x97, 0x9c, 0xfe, 0x3d, 0x85, 0xcd, 0x15], // 1,700,000,000,123,456,789 ns since the epoch
    ]
    .concat()
}

#[test]
fn layout_is_as_documented() {
    assert_eq!(STAMP_LEN, 24);
    assert_eq!(MAGIC, *b"LR");
    assert_eq!(VERSION, 1);
    assert_eq!(STAMP.to_bytes().to_vec(), layout());
    assert_eq!(Stamp::decode(&layout()), Ok(STAMP));
}

#[test]
fn messages_have_the_requested_size() {
    for size in [STAMP_LEN, STAMP_LEN + 1, 100, 4096, 1 << 20] {
        let mut b = BytesMut::from(&b"prefix"[..]);
        encode_message(&mut b, &STAMP, size).unwrap();
        assert_eq!(b.len(), 6 + size);
        let msg = &b[6..];
        assert_eq!(&msg[..STAMP_LEN], layout());
        assert!(msg[STAMP_LEN..].iter().all(|&x| x == FILL));
        assert_eq!(Stamp::decode(msg), Ok(STAMP));
    }
    let mut b = BytesMut::from(&b"prefix"[..]);
    assert_eq!(
        encode_message(&mut b, &STAMP, STAMP_LEN - 1),
        Err(StampError::TooShort { len: 23 })
    );
    assert_eq!(&b[..], b"prefix");
}

#[test]
fn write_to_replaces_only_the_stamp() {
    let mut msg = vec![b'z'; 64];
    STAMP.write_to(&mut msg).unwrap();
    assert_eq!(&msg[..STAMP_LEN], layout());
    assert!(msg[STAMP_LEN..].iter().all(|&x| x == b'z'));
    let next = Stamp { seq: 7, ..STAMP };
    next.write_to(&mut msg).unwrap();
    assert_eq!(Stamp::decode(&msg), Ok(next));
    assert_eq!(
        STAMP.write_to(&mut [0u8; 23]),
        Err(StampError::TooShort { len: 23 })
    );
}

#[test]
fn extremes_round_trip() {
    for s in [
        Stamp {
            publisher: 0,
            seq: 0,
            sent_unix_ns: 0,
        },
        Stamp {
            publisher: u32::MAX,
            seq: u64::MAX,
            sent_unix_ns: u64::MAX,
        },
    ] {
        assert_eq!(Stamp::decode(&s.to_bytes()), Ok(s));
    }
}

#[test]
fn foreign_and_short_payloads_are_refused() {
    let good = layout();
    for len in 0..STAMP_LEN {
        assert_eq!(
            Stamp::decode(&good[..len]),
            Err(StampError::TooShort { len })
        );
    }
    let mut bad = good.clone();
    bad[0] = b'l';
    assert_eq!(Stamp::decode(&bad), Err(StampError::BadMagic(*b"lR")));
    assert_eq!(
        Stamp::decode(b"Hello NATS! Hello NATS! Hello"),
        Err(StampError::BadMagic(*b"He"))
    );
    let mut v2 = good.clone();
    v2[2] = 2;
    assert_eq!(Stamp::decode(&v2), Err(StampError::UnsupportedVersion(2)));
    // Flags are reserved: ignored when read.
    let mut flagged = good;
    flagged[3] = 0xff;
    assert_eq!(Stamp::decode(&flagged), Ok(STAMP));
}

#[test]
fn latency_is_receive_minus_send_unless_the_clocks_disagree() {
    assert_eq!(STAMP.latency_ns(STAMP.sent_unix_ns + 1500), Some(1500));
    assert_eq!(STAMP.latency_ns(STAMP.sent_unix_ns), Some(0));
    assert_eq!(STAMP.latency_ns(STAMP.sent_unix_ns - 1), None);
}

/// Any bytes at all: decoding never panics, and what it accepts writes
/// back to the same 24 bytes (the flags byte aside, which is ignored).
#[test]
fn random_bytes_decode_or_are_refused() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut accepted = 0;
    for i in 0..20_000 {
        let len = i % 40;
        let mut buf: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        if i % 2 == 0 && len >= 3 {
            // Half with the magic and version in place, so decoding gets past them.
            buf[..3].copy_from_slice(&[0x4c, 0x52, 0x01]);
        }
        if let Ok(s) = Stamp::decode(&buf) {
            accepted += 1;
            let back = s.to_bytes();
            assert_eq!(back[..3], buf[..3]);
            assert_eq!(back[4..], buf[4..STAMP_LEN]);
        }
    }
    assert!(accepted > 1_000, "{accepted}");
}
