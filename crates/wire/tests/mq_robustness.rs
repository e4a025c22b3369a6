//! Hostile input: a deterministic fuzz loop that throws 100,000 random,
//! token-built and mutated buffers at every parser (NATS both ways, MQTT,
//! the remaining length, INFO's JSON scanner). Beyond "no
//! panic", each accepted frame is checked for consistency: its length fits
//! the buffer, the frame alone parses to the same thing, a strict prefix of
//! it is incomplete, lazy iterators yield the count they promise, and
//! encoding what was parsed gives it back (byte for byte for MQTT, whose
//! parser admits one encoding per packet).

// Helpers outside #[test] functions unwrap what a valid frame must give.
#![allow(clippy::unwrap_used)]

mod common;

use std::fmt::Debug;

use bytes::BytesMut;
use common::{hex, mutate, noise, Dict, XorShift};
use loadrig_wire::mq::mqtt::{self, Packet, Qos, QosPid};
use loadrig_wire::mq::nats::{self, ClientOp, Limits, ServerOp};

fn pid(n: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(n).unwrap()
}

fn seeds() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = [
        &b"INFO {\"server_id\":\"Zk0GQ3JBSrg3oyxCRRlE09\",\"version\":\"1.2.0\",\"proto\":1,\"max_payload\":1048576,\"client_id\":2392}\r\n"[..],
        b"MSG FOO.BAR 9 11\r\nHello World\r\n",
        b"MSG FOO.BAR 9 INBOX.34 11\r\nHello World\r\n",
        b"msg\tx  1 0\r\n\r\n",
        b"+OK\r\n",
        b"-ERR 'Stale Connection'\r\n",
        b"PING\r\n",
        b"PONG\r\n",
        b"CONNECT {\"verbose\":false,\"pedantic\":false,\"name\":\"\",\"lang\":\"go\",\"protocol\":1}\r\n",
        b"PUB FOO 11\r\nHello NATS!\r\n",
        b"PUB FRONT.DOOR INBOX.22 11\r\nKnock Knock\r\n",
        b"SUB BAR G1 44\r\n",
        b"UNSUB 1 5\r\n",
    ]
    .iter()
    .map(|s| s.to_vec())
    .collect();
    for h in [
        "10 15 00 04 4d 51 54 54 04 02 00 3c 00 09 6c 6f 61 64 72 69 67 2d 31",
        "20 02 00 00",
        "30 0a 00 03 61 2f 62 68 65 6c 6c 6f",
        "3b 0c 00 03 61 2f 62 00 0a 68 65 6c 6c 6f",
        "34 07 00 03 61 2f 62 12 34",
        "40 02 00 0a",
        "62 02 00 0a",
        "82 0e 00 01 00 03 61 2f 2b 01 00 03 62 2f 23 00",
        "90 04 00 01 01 80",
        "a2 0c 00 02 00 03 61 2f 2b 00 03 62 2f 23",
        "b0 02 00 02",
        "c0 00",
        "d0 00",
        "e0 00",
    ] {
        v.push(hex(h));
    }
    let mut b = BytesMut::new();
    let c = mqtt::Connect {
        client_id: "c",
        clean_session: true,
        keep_alive: 10,
        will: Some(mqtt::Will {
            topic: "w/t",
            message: b"bye",
            qos: Qos::AtLeastOnce,
            retain: true,
        }),
        username: Some("u"),
        password: Some(b"p"),
    };
    mqtt::encode_connect(&mut b, &c).unwrap();
    v.push(b.to_vec());
    // A message in a PUBLISH with a two-byte remaining length, and in a
    // MSG.
    let payload = BytesMut::from(&[b'x'; 150][..]);
    let mut b = BytesMut::new();
    let p = mqtt::Publish {
        topic: "bench/1",
        qos: QosPid::AtLeastOnce(pid(5)),
        retain: false,
        dup: false,
        payload: &payload,
    };
    mqtt::encode_publish(&mut b, &p).unwrap();
    v.push(b.to_vec());
    let mut b = BytesMut::new();
    nats::encode_msg(&mut b, b"bench.1", b"4", None, &payload).unwrap();
    v.push(b.to_vec());
    v
}

/// Pieces that make token-built noise reach past the first byte.
const TOKENS: &[&[u8]] = &[
    b"MSG ",
    b"PUB ",
    b"SUB ",
    b"UNSUB ",
    b"INFO ",
    b"CONNECT ",
    b"+OK",
    b"-ERR ",
    b"PING",
    b"PONG",
    b"HMSG ",
    b"\r\n",
    b"\r",
    b"\n",
    b" ",
    b"\t",
    b"'",
    b"0",
    b"1",
    b"5",
    b"11",
    b"foo",
    b"{\"max_payload\":",
    b"\"",
    b"{",
    b"}",
    b"\x30",
    b"\x32",
    b"\x82",
    b"\x10\x0d\x00\x04MQTT\x04",
    b"\x00",
    b"\x01",
    b"\x02",
    b"\x7f",
    b"\x80",
    b"\xff",
    b"LR\x01\x00",
];

const DICT: Dict = Dict {
    interesting: b"\r\n \t0159'\"{}+#/\x00\x01\x02\x03\x7f\x80\xc0\xff",
    tokens: TOKENS,
};

/// What every parser must satisfy on an accepted frame of `n` bytes.
fn check_frame<'a, T: Debug + PartialEq, E: Debug + PartialEq>(
    buf: &'a [u8],
    n: usize,
    whole: &T,
    rng: &mut XorShift,
    parse: impl Fn(&'a [u8]) -> Result<Option<(T, usize)>, E>,
) {
    assert!(n > 0 && n <= buf.len(), "frame length {n} of {}", buf.len());
    match parse(&buf[..n]) {
        Ok(Some((alone, m))) => {
            assert_eq!(m, n, "the frame alone");
            assert_eq!(&alone, whole, "the frame alone");
        }
        other => panic!("the frame alone: {other:?}"),
    }
    let cut = rng.below(n);
    assert!(
        matches!(parse(&buf[..cut]), Ok(None)),
        "prefix {cut} of a frame of {n}: {:?}",
        parse(&buf[..cut]).map(|o| o.map(|(_, m)| m))
    );
}

#[derive(Default, Debug)]
struct Accepted {
    server: usize,
    client: usize,
    mqtt: usize,
    errors: usize,
}

/// A re-encoded server op parses back to itself.
fn reencode_server(op: &ServerOp<'_>) {
    let mut b = BytesMut::new();
    match *op {
        ServerOp::Info(j) => nats::encode_info(&mut b, j.as_bytes()).unwrap(),
        ServerOp::Msg(m) => {
            nats::encode_msg(&mut b, m.subject, m.sid, m.reply_to, m.payload).unwrap()
        }
        ServerOp::Ok => nats::encode_ok(&mut b),
        ServerOp::Err(e) => nats::encode_err(&mut b, e).unwrap(),
        ServerOp::Ping => nats::encode_ping(&mut b),
        ServerOp::Pong => nats::encode_pong(&mut b),
    }
    let (again, n) = nats::parse_server_op(&b).unwrap().unwrap();
    assert_eq!((&again, n), (op, b.len()));
}

fn exercise_nats<'a>(buf: &'a [u8], rng: &mut XorShift, acc: &mut Accepted) {
    match nats::parse_server_op(buf) {
        Ok(Some((op, n))) => {
            acc.server += 1;
            if let ServerOp::Info(j) = op {
                let _ = (j.max_payload(), j.server_id(), j.version(), j.field("x"));
            }
            if let ServerOp::Msg(m) = op {
                assert!(m.payload.len() < n);
            }
            check_frame(buf, n, &op, rng, nats::parse_server_op);
            reencode_server(&op);
        }
        Ok(None) => {}
        Err(_) => acc.errors += 1,
    }
    match nats::parse_client_op(buf) {
        Ok(Some((op, n))) => {
            acc.client += 1;
            if let ClientOp::Connect(j) = op {
                let _ = (j.bool_field("verbose"), j.str_field("name"));
            }
            if let ClientOp::Pub(p) = op {
                let mut b = BytesMut::new();
                nats::encode_pub(&mut b, p.subject, p.reply_to, p.payload).unwrap();
                assert_eq!(nats::parse_client_op(&b).unwrap().unwrap(), (op, b.len()));
            }
            check_frame(buf, n, &op, rng, nats::parse_client_op);
        }
        Ok(None) => {}
        Err(_) => acc.errors += 1,
    }
    // Tight limits take the "too large" paths on ordinary input.
    let tight = Limits {
        max_control_line: 12,
        max_json_line: 40,
        max_payload: 6,
    };
    if let Ok(Some((op, n))) = nats::parse_server_op_with(buf, &tight) {
        check_frame(buf, n, &op, rng, |b: &'a [u8]| {
            nats::parse_server_op_with(b, &tight)
        });
    }
    if let Ok(Some((op, n))) = nats::parse_client_op_with(buf, &tight) {
        check_frame(buf, n, &op, rng, |b: &'a [u8]| {
            nats::parse_client_op_with(b, &tight)
        });
    }
}

/// Encodes a parsed packet again; MQTT's parser admits one encoding per
/// packet, so the bytes must be the same.
fn reencode_mqtt(p: &Packet<'_>) -> Vec<u8> {
    let mut b = BytesMut::new();
    match *p {
        Packet::Connect(c) => mqtt::encode_connect(&mut b, &c.connect()).unwrap(),
        Packet::ConnAck(a) => mqtt::encode_connack(&mut b, a).unwrap(),
        Packet::Publish(p) => mqtt::encode_publish(&mut b, &p).unwrap(),
        Packet::PubAck(id) => mqtt::encode_puback(&mut b, id),
        Packet::PubRec(id) => mqtt::encode_pubrec(&mut b, id),
        Packet::PubRel(id) => mqtt::encode_pubrel(&mut b, id),
        Packet::PubComp(id) => mqtt::encode_pubcomp(&mut b, id),
        Packet::Subscribe(s) => {
            let topics: Vec<_> = s.topics.collect();
            assert_eq!(topics.len(), s.topics.len(), "topics iterator count");
            mqtt::encode_subscribe(&mut b, s.pid, &topics).unwrap()
        }
        Packet::SubAck(a) => {
            let codes: Vec<_> = a.codes.collect();
            assert_eq!(codes.len(), a.codes.as_bytes().len());
            mqtt::encode_suback(&mut b, a.pid, &codes).unwrap()
        }
        Packet::Unsubscribe(u) => {
            let topics: Vec<_> = u.topics.collect();
            assert_eq!(topics.len(), u.topics.len(), "topics iterator count");
            mqtt::encode_unsubscribe(&mut b, u.pid, &topics).unwrap()
        }
        Packet::UnsubAck(id) => mqtt::encode_unsuback(&mut b, id),
        Packet::PingReq => mqtt::encode_pingreq(&mut b),
        Packet::PingResp => mqtt::encode_pingresp(&mut b),
        Packet::Disconnect => mqtt::encode_disconnect(&mut b),
    }
    b.to_vec()
}

fn exercise_mqtt(buf: &[u8], rng: &mut XorShift, acc: &mut Accepted) {
    let len = mqtt::packet_len(buf);
    match mqtt::parse_packet(buf) {
        Ok(Some((p, n))) => {
            acc.mqtt += 1;
            assert_eq!(len, Ok(Some(n)), "packet_len agrees");
            assert_eq!(reencode_mqtt(&p), &buf[..n], "{p:?}");
            check_frame(buf, n, &p, rng, mqtt::parse_packet);
        }
        Ok(None) => assert_eq!(len, Ok(None), "packet_len agrees on incomplete"),
        Err(e) => {
            acc.errors += 1;
            // A bad fixed header is packet_len's error too; a bad body is
            // a whole packet to packet_len.
            match len {
                Err(l) => assert_eq!(l, e),
                Ok(Some(n)) => assert!(n <= buf.len()),
                Ok(None) => panic!("packet_len incomplete where parse_packet says {e:?}"),
            }
        }
    }
    if let Some(rest) = buf.get(1..) {
        if let Ok(Some((v, n))) = mqtt::decode_remaining_len(rest) {
            assert!((1..=4).contains(&n) && v <= mqtt::MAX_REMAINING_LEN);
            let mut b = BytesMut::new();
            mqtt::encode_remaining_len(&mut b, v).unwrap();
            assert_eq!(&b[..], &rest[..n], "one encoding per value");
        }
    }
}

#[test]
fn fuzz_random_and_mutated_buffers() {
    let seeds = seeds();
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut acc = Accepted::default();
    for i in 0..100_000 {
        let buf = if i % 4 == 0 {
            noise(&mut rng, &DICT)
        } else {
            mutate(&mut rng, &seeds, &DICT)
        };
        exercise_nats(&buf, &mut rng, &mut acc);
        exercise_mqtt(&buf, &mut rng, &mut acc);
    }
    // Sanity: the mutator is neither so gentle that nothing fails nor so
    // destructive that nothing parses, for every parser.
    assert!(acc.server > 3_000, "{acc:?}");
    assert!(acc.client > 3_000, "{acc:?}");
    assert!(acc.mqtt > 3_000, "{acc:?}");
    assert!(acc.errors > 50_000, "{acc:?}");
}

#[test]
fn seeds_are_valid_frames() {
    for s in seeds() {
        let parsed = [
            matches!(nats::parse_server_op(&s), Ok(Some((_, n))) if n == s.len()),
            matches!(nats::parse_client_op(&s), Ok(Some((_, n))) if n == s.len()),
            matches!(mqtt::parse_packet(&s), Ok(Some((_, n))) if n == s.len()),
        ];
        assert!(
            parsed.iter().any(|p| *p),
            "{:?}",
            String::from_utf8_lossy(&s)
        );
    }
}
