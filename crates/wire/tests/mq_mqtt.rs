//! MQTT 3.1.1 packets written by hand in annotated hex from the OASIS
//! specification's packet layouts: every packet type encoded exactly and
//! parsed back, every prefix incomplete, the remaining length's table of
//! boundaries, and every rule of the spec this codec checks refused.

mod common;

use std::num::NonZeroU16;

use bytes::BytesMut;
use common::{assert_frame, hex};
use loadrig_wire::mq::mqtt::{
    self, decode_remaining_len, encode_remaining_len, packet_len, packet_len_with, parse_packet,
    parse_packet_with, ConnAck, Connect, ConnectReturnCode, Limits, MqttError, Packet, PacketType,
    Publish, Qos, QosPid, SubAckCode, Will, MAX_PACKET, MAX_REMAINING_LEN,
};

fn pid(n: u16) -> NonZeroU16 {
    NonZeroU16::new(n).expect("non-zero")
}

/// An encoder of a packet that is only its packet identifier.
type PidEncoder = fn(&mut BytesMut, NonZeroU16);

fn encoded(f: impl FnOnce(&mut BytesMut)) -> Vec<u8> {
    let mut b = BytesMut::new();
    f(&mut b);
    b.to_vec()
}

/// Parses a whole packet, checking every prefix and `packet_len`.
fn parse(input: &[u8]) -> Packet<'_> {
    assert_frame(input, len_of!(parse_packet));
    assert_frame(input, packet_len);
    let (p, n) = parse_packet(input).expect("valid").expect("whole");
    assert_eq!(n, input.len());
    p
}

fn parse_connect(input: &[u8]) -> Connect<'_> {
    match parse(input) {
        Packet::Connect(view) => view.connect(),
        other => panic!("not CONNECT: {other:?}"),
    }
}

fn err(input: &[u8]) -> MqttError {
    match parse_packet(input) {
        Err(e) => e,
        other => panic!("{input:02x?}: {other:?}"),
    }
}

// ---- the remaining length ----

#[test]
fn remaining_length_boundaries_from_the_spec_table() {
    for (value, bytes) in [
        (0, "00"),
        (64, "40"),
        (127, "7f"),
        (128, "80 01"),
        (321, "c1 02"),
        (16_383, "ff 7f"),
        (16_384, "80 80 01"),
        (2_097_151, "ff ff 7f"),
        (2_097_152, "80 80 80 01"),
        (268_435_455, "ff ff ff 7f"),
    ] {
        let want = hex(bytes);
        assert_eq!(
            encoded(|b| encode_remaining_len(b, value).unwrap()),
            want,
            "{value}"
        );
        assert_eq!(
            decode_remaining_len(&want),
            Ok(Some((value, want.len()))),
            "{value}"
        );
        for cut in 0..want.len() {
            assert_eq!(decode_remaining_len(&want[..cut]), Ok(None));
        }
    }
    assert_eq!(MAX_REMAINING_LEN, 268_435_455);
}

#[test]
fn remaining_length_of_five_bytes_or_padded_is_refused() {
    // The fourth byte still says "more follows": refused without waiting.
    assert_eq!(
        decode_remaining_len(&hex("ff ff ff ff")),
        Err(MqttError::BadRemainingLength)
    );
    assert_eq!(
        decode_remaining_len(&hex("80 80 80 80 01")),
        Err(MqttError::BadRemainingLength)
    );
    assert_eq!(
        err(&hex("30 ff ff ff ff 7f")),
        MqttError::BadRemainingLength
    );
    assert_eq!(err(&hex("30 80 80 80 80")), MqttError::BadRemainingLength);
    // More bytes than the value needs (0 as "80 00").
    for padded in ["80 00", "ff 00", "80 80 00", "80 80 80 00"] {
        assert_eq!(
            decode_remaining_len(&hex(padded)),
            Err(MqttError::BadRemainingLength),
            "{padded}"
        );
    }
    assert_eq!(err(&hex("c0 80 00")), MqttError::BadRemainingLength);
    let mut b = BytesMut::from(&b"x"[..]);
    assert_eq!(
        encode_remaining_len(&mut b, MAX_REMAINING_LEN + 1),
        Err(MqttError::TooLarge {
            what: "packet",
            len: MAX_REMAINING_LEN + 1,
            max: MAX_REMAINING_LEN
        })
    );
    assert_eq!(&b[..], b"x");
}

#[test]
fn remaining_length_over_the_limit_is_refused_before_the_body() {
    assert_eq!(
        err(&hex("30 ff ff ff 7f")),
        MqttError::TooLarge {
            what: "packet",
            len: MAX_REMAINING_LEN,
            max: MAX_PACKET
        }
    );
    let tight = Limits {
        max_remaining_len: 16,
    };
    assert_eq!(
        parse_packet_with(&hex("30 11"), &tight),
        Err(MqttError::TooLarge {
            what: "packet",
            len: 17,
            max: 16
        })
    );
    assert_eq!(
        packet_len_with(&hex("30 11"), &tight),
        parse_packet_with(&hex("30 11"), &tight).map(|_| None)
    );
    assert_eq!(parse_packet_with(&hex("30 10"), &tight), Ok(None));
}

// ---- every packet type, byte for byte ----

#[test]
fn connect_minimal() {
    let want = hex("10 15                 # CONNECT, remaining length 21
         00 04 4d 51 54 54     # protocol name 'MQTT'
         04                    # protocol level 4 (3.1.1)
         02                    # flags: clean session
         00 3c                 # keep alive 60 s
         00 09 6c 6f 61 64 72 69 67 2d 31   # client id 'loadrig-1'");
    let c = Connect {
        client_id: "loadrig-1",
        clean_session: true,
        keep_alive: 60,
        will: None,
        username: None,
        password: None,
    };
    assert_eq!(encoded(|b| mqtt::encode_connect(b, &c).unwrap()), want);
    assert_eq!(parse_connect(&want), c);
}

#[test]
fn connect_with_will_and_credentials() {
    let want = hex("10 1d                 # CONNECT, remaining length 29
         00 04 4d 51 54 54 | 04
         ee                    # user, password, will retain, will QoS 1, will, clean session
         00 0a                 # keep alive 10 s
         00 01 63              # client id 'c'
         00 03 77 2f 74        # will topic 'w/t'
         00 03 62 79 65        # will message 'bye'
         00 01 75              # user name 'u'
         00 01 70              # password 'p'");
    let c = Connect {
        client_id: "c",
        clean_session: true,
        keep_alive: 10,
        will: Some(Will {
            topic: "w/t",
            message: b"bye",
            qos: Qos::AtLeastOnce,
            retain: true,
        }),
        username: Some("u"),
        password: Some(b"p"),
    };
    assert_eq!(encoded(|b| mqtt::encode_connect(b, &c).unwrap()), want);
    assert_eq!(parse_connect(&want), c);

    // An empty client id, a user without a password, no clean session.
    let want = hex("10 11 | 00 04 4d 51 54 54 | 04 | 80 | 00 00 | 00 00 | 00 03 62 6f 62");
    let c = Connect {
        client_id: "",
        clean_session: false,
        keep_alive: 0,
        will: None,
        username: Some("bob"),
        password: None,
    };
    assert_eq!(encoded(|b| mqtt::encode_connect(b, &c).unwrap()), want);
    assert_eq!(parse_connect(&want), c);
}

#[test]
fn connack() {
    for (bytes, session_present, code) in [
        ("20 02 00 00", false, ConnectReturnCode::Accepted),
        ("20 02 01 00", true, ConnectReturnCode::Accepted),
        (
            "20 02 00 01",
            false,
            ConnectReturnCode::UnacceptableProtocolVersion,
        ),
        ("20 02 00 02", false, ConnectReturnCode::IdentifierRejected),
        ("20 02 00 03", false, ConnectReturnCode::ServerUnavailable),
        (
            "20 02 00 04",
            false,
            ConnectReturnCode::BadUserNameOrPassword,
        ),
        ("20 02 00 05", false, ConnectReturnCode::NotAuthorized),
    ] {
        let want = hex(bytes);
        let ack = ConnAck {
            session_present,
            code,
        };
        assert_eq!(encoded(|b| mqtt::encode_connack(b, ack).unwrap()), want);
        assert_eq!(parse(&want), Packet::ConnAck(ack));
    }
}

#[test]
fn publish_qos0() {
    let want = hex("30 0a                 # PUBLISH, QoS 0, remaining length 10
         00 03 61 2f 62        # topic 'a/b'
         68 65 6c 6c 6f        # payload 'hello' (no packet id at QoS 0)");
    let p = Publish {
        topic: "a/b",
        qos: QosPid::AtMostOnce,
        retain: false,
        dup: false,
        payload: b"hello",
    };
    assert_eq!(encoded(|b| mqtt::encode_publish(b, &p).unwrap()), want);
    assert_eq!(parse(&want), Packet::Publish(p));
}

#[test]
fn publish_qos1_with_dup_and_retain() {
    let want = hex(
        "3b 0c                 # PUBLISH, DUP, QoS 1, RETAIN; remaining length 12
         00 03 61 2f 62        # topic 'a/b'
         00 0a                 # packet id 10
         68 65 6c 6c 6f        # payload 'hello'",
    );
    let p = Publish {
        topic: "a/b",
        qos: QosPid::AtLeastOnce(pid(10)),
        retain: true,
        dup: true,
        payload: b"hello",
    };
    assert_eq!(encoded(|b| mqtt::encode_publish(b, &p).unwrap()), want);
    assert_eq!(parse(&want), Packet::Publish(p));
    // QoS 1 without DUP or RETAIN.
    let want = hex("32 0c | 00 03 61 2f 62 | ff ff | 68 65 6c 6c 6f");
    let p = Publish {
        qos: QosPid::AtLeastOnce(pid(u16::MAX)),
        retain: false,
        dup: false,
        ..p
    };
    assert_eq!(encoded(|b| mqtt::encode_publish(b, &p).unwrap()), want);
    assert_eq!(parse(&want), Packet::Publish(p));
}

#[test]
fn publish_qos2_and_an_empty_payload() {
    let want = hex("34 07 | 00 03 61 2f 62 | 12 34");
    let p = Publish {
        topic: "a/b",
        qos: QosPid::ExactlyOnce(pid(0x1234)),
        retain: false,
        dup: false,
        payload: b"",
    };
    assert_eq!(encoded(|b| mqtt::encode_publish(b, &p).unwrap()), want);
    assert_eq!(parse(&want), Packet::Publish(p));
}

#[test]
fn publish_with_a_two_byte_remaining_length() {
    let payload = vec![0xabu8; 200];
    let p = Publish {
        topic: "t",
        qos: QosPid::AtMostOnce,
        retain: false,
        dup: false,
        payload: &payload,
    };
    let b = encoded(|b| mqtt::encode_publish(b, &p).unwrap());
    // 2 + 1 + 200 = 203 = 0x4b + 1 * 128.
    assert_eq!(b[..6], hex("30 cb 01 | 00 01 74"));
    assert_eq!(b.len(), 3 + 203);
    assert_eq!(parse(&b), Packet::Publish(p));
}

#[test]
fn acknowledgements() {
    let id = pid(10);
    let cases: [(&str, PidEncoder, Packet<'static>); 5] = [
        ("40 02 00 0a", mqtt::encode_puback, Packet::PubAck(id)),
        ("50 02 00 0a", mqtt::encode_pubrec, Packet::PubRec(id)),
        ("62 02 00 0a", mqtt::encode_pubrel, Packet::PubRel(id)),
        ("70 02 00 0a", mqtt::encode_pubcomp, Packet::PubComp(id)),
        ("b0 02 00 0a", mqtt::encode_unsuback, Packet::UnsubAck(id)),
    ];
    for (bytes, enc, packet) in cases {
        let want = hex(bytes);
        assert_eq!(encoded(|b| enc(b, id)), want);
        assert_eq!(parse(&want), packet);
    }
}

#[test]
fn subscribe_suback_unsubscribe() {
    let want = hex(
        "82 0e                 # SUBSCRIBE (flags 0010), remaining length 14
         00 01                 # packet id 1
         00 03 61 2f 2b | 01   # 'a/+' at QoS 1
         00 03 62 2f 23 | 00   # 'b/#' at QoS 0",
    );
    let topics = [("a/+", Qos::AtLeastOnce), ("b/#", Qos::AtMostOnce)];
    assert_eq!(
        encoded(|b| mqtt::encode_subscribe(b, pid(1), &topics).unwrap()),
        want
    );
    let Packet::Subscribe(s) = parse(&want) else {
        panic!("not SUBSCRIBE")
    };
    assert_eq!(s.pid, pid(1));
    assert_eq!(s.topics.len(), 2);
    assert_eq!(s.topics.collect::<Vec<_>>(), topics);

    let want = hex("90 04 | 00 01 | 01 80   # SUBACK: QoS 1 granted, second refused");
    let codes = [SubAckCode::Granted(Qos::AtLeastOnce), SubAckCode::Failure];
    assert_eq!(
        encoded(|b| mqtt::encode_suback(b, pid(1), &codes).unwrap()),
        want
    );
    let Packet::SubAck(a) = parse(&want) else {
        panic!("not SUBACK")
    };
    assert_eq!(a.pid, pid(1));
    assert_eq!(a.codes.as_bytes(), [1, 0x80]);
    assert_eq!(a.codes.collect::<Vec<_>>(), codes);

    let want = hex(
        "a2 0c                 # UNSUBSCRIBE (flags 0010), remaining length 12
         00 02                 # packet id 2
         00 03 61 2f 2b        # 'a/+'
         00 03 62 2f 23        # 'b/#'",
    );
    let filters = ["a/+", "b/#"];
    assert_eq!(
        encoded(|b| mqtt::encode_unsubscribe(b, pid(2), &filters).unwrap()),
        want
    );
    let Packet::Unsubscribe(u) = parse(&want) else {
        panic!("not UNSUBSCRIBE")
    };
    assert_eq!(u.pid, pid(2));
    assert_eq!(u.topics.len(), 2);
    assert_eq!(u.topics.collect::<Vec<_>>(), filters);
}

#[test]
fn ping_and_disconnect() {
    assert_eq!(encoded(mqtt::encode_pingreq), hex("c0 00"));
    assert_eq!(encoded(mqtt::encode_pingresp), hex("d0 00"));
    assert_eq!(encoded(mqtt::encode_disconnect), hex("e0 00"));
    assert_eq!(parse(&hex("c0 00")), Packet::PingReq);
    assert_eq!(parse(&hex("d0 00")), Packet::PingResp);
    assert_eq!(parse(&hex("e0 00")), Packet::Disconnect);
}

#[test]
fn topic_filters_with_wildcards_in_whole_levels() {
    for ok in [
        "#",
        "+",
        "+/+",
        "/",
        "a/#",
        "+/b/#",
        "a//b",
        "sport/tennis/+",
        "$SYS/#",
        "/+",
    ] {
        let b = encoded(|b| mqtt::encode_subscribe(b, pid(3), &[(ok, Qos::AtMostOnce)]).unwrap());
        let Packet::Subscribe(s) = parse(&b) else {
            panic!("not SUBSCRIBE")
        };
        assert_eq!(s.topics.collect::<Vec<_>>(), [(ok, Qos::AtMostOnce)]);
    }
}

#[test]
fn a_fake_broker_conversation_round_trips() {
    // What a QoS 1 subscriber and publisher exchange with a broker, parsed
    // in one stream per direction, as a test's fake broker would.
    let payload = b"0123456789abcdef0123";
    let mut from_client = BytesMut::new();
    let connect = Connect {
        client_id: "pub-1",
        clean_session: true,
        keep_alive: 30,
        will: None,
        username: Some("bench"),
        password: Some(b"pw"),
    };
    mqtt::encode_connect(&mut from_client, &connect).unwrap();
    mqtt::encode_subscribe(&mut from_client, pid(1), &[("bench/#", Qos::AtLeastOnce)]).unwrap();
    let publish = Publish {
        topic: "bench/0",
        qos: QosPid::AtLeastOnce(pid(2)),
        retain: false,
        dup: false,
        payload,
    };
    mqtt::encode_publish(&mut from_client, &publish).unwrap();
    mqtt::encode_puback(&mut from_client, pid(77));
    mqtt::encode_unsubscribe(&mut from_client, pid(3), &["bench/#"]).unwrap();
    mqtt::encode_pingreq(&mut from_client);
    mqtt::encode_disconnect(&mut from_client);

    let mut from_broker = BytesMut::new();
    let ack = ConnAck {
        session_present: false,
        code: ConnectReturnCode::Accepted,
    };
    mqtt::encode_connack(&mut from_broker, ack).unwrap();
    mqtt::encode_suback(
        &mut from_broker,
        pid(1),
        &[SubAckCode::Granted(Qos::AtLeastOnce)],
    )
    .unwrap();
    mqtt::encode_puback(&mut from_broker, pid(2));
    let delivered = Publish {
        qos: QosPid::AtLeastOnce(pid(77)),
        ..publish
    };
    mqtt::encode_publish(&mut from_broker, &delivered).unwrap();
    mqtt::encode_unsuback(&mut from_broker, pid(3));
    mqtt::encode_pingresp(&mut from_broker);

    let types = |mut buf: &[u8]| {
        let mut out = Vec::new();
        while !buf.is_empty() {
            let (p, n) = parse_packet(buf).unwrap().unwrap();
            assert_eq!(packet_len(buf), Ok(Some(n)));
            assert_frame(&buf[..n], len_of!(parse_packet));
            match p {
                Packet::Connect(c) => assert_eq!(c.connect(), connect),
                Packet::Publish(p) if p.qos.pid() == Some(pid(2)) => assert_eq!(p, publish),
                Packet::Publish(p) => assert_eq!(p, delivered),
                Packet::ConnAck(a) => assert_eq!(a, ack),
                _ => {}
            }
            out.push(p.packet_type());
            buf = &buf[n..];
        }
        out
    };
    use PacketType as T;
    assert_eq!(
        types(&from_client),
        [
            T::Connect,
            T::Subscribe,
            T::Publish,
            T::PubAck,
            T::Unsubscribe,
            T::PingReq,
            T::Disconnect
        ]
    );
    assert_eq!(
        types(&from_broker),
        [
            T::ConnAck,
            T::SubAck,
            T::PubAck,
            T::Publish,
            T::UnsubAck,
            T::PingResp
        ]
    );
    for t in [
        T::Connect,
        T::ConnAck,
        T::Publish,
        T::PubAck,
        T::PingResp,
        T::Disconnect,
    ] {
        assert_eq!(PacketType::from_code(t.code()), Some(t));
    }
    assert_eq!(PacketType::from_code(0), None);
    assert_eq!(PacketType::from_code(15), None);
}

// ---- what the spec forbids ----

#[test]
fn reserved_types_and_wrong_flags_are_refused_at_the_first_byte() {
    assert_eq!(err(&hex("00")), MqttError::ReservedType(0));
    assert_eq!(err(&hex("f0 00")), MqttError::ReservedType(15));
    for (b0, packet) in [
        (0x11, PacketType::Connect),
        (0x28, PacketType::ConnAck),
        (0x41, PacketType::PubAck),
        (0x60, PacketType::PubRel),
        (0x80, PacketType::Subscribe),
        (0x83, PacketType::Subscribe),
        (0xa0, PacketType::Unsubscribe),
        (0xc1, PacketType::PingReq),
        (0xef, PacketType::Disconnect),
    ] {
        assert_eq!(
            err(&[b0]),
            MqttError::BadFlags {
                packet,
                flags: b0 & 0xf
            }
        );
    }
    // PUBLISH: QoS 3, and DUP at QoS 0.
    for b0 in [0x36u8, 0x37, 0x3e, 0x38, 0x39] {
        assert!(
            matches!(
                err(&[b0, 0x05, 0, 1, b'a', 0, 1]),
                MqttError::BadFlags {
                    packet: PacketType::Publish,
                    ..
                }
            ),
            "{b0:02x}"
        );
    }
}

#[test]
fn fields_that_do_not_fit_the_remaining_length_are_malformed() {
    for bytes in [
        "40 03 00 01 00",       // PUBACK with a byte too many
        "40 01 00",             // PUBACK with half a packet id
        "c0 01 00",             // PINGREQ with a body
        "30 02 00 05",          // topic longer than the packet
        "30 01 00",             // half a topic length
        "32 05 00 03 61 2f 62", // QoS 1 without its packet id
        "20 01 00",             // CONNACK too short
        "20 03 00 00 00",       // CONNACK too long
        "10 00",                // CONNECT with nothing in it
    ] {
        assert!(
            matches!(err(&hex(bytes)), MqttError::Malformed(_)),
            "{bytes}: {:?}",
            err(&hex(bytes))
        );
    }
}

#[test]
fn packet_ids_must_not_be_zero() {
    for bytes in [
        "40 02 00 00",
        "62 02 00 00",
        "b0 02 00 00",
        "32 07 00 03 61 2f 62 00 00",
        "82 06 00 00 00 01 61 00",
        "90 03 00 00 00",
    ] {
        assert_eq!(err(&hex(bytes)), MqttError::ZeroPacketId, "{bytes}");
    }
}

#[test]
fn strings_must_be_utf8_without_nul() {
    assert_eq!(err(&hex("30 03 00 01 ff")), MqttError::BadUtf8);
    assert_eq!(err(&hex("30 03 00 01 00")), MqttError::BadUtf8);
    assert_eq!(err(&hex("30 04 00 02 c3 28")), MqttError::BadUtf8);
    assert_eq!(err(&hex("a2 05 00 01 00 01 80")), MqttError::BadUtf8);
    // A multi-byte character is fine.
    let e_acute = hex("30 05 00 02 c3 a9 21");
    let Packet::Publish(p) = parse(&e_acute) else {
        panic!("not PUBLISH")
    };
    assert_eq!((p.topic, p.payload), ("é", &b"!"[..]));
}

#[test]
fn topics_are_checked() {
    assert!(matches!(err(&hex("30 02 00 00")), MqttError::BadTopic(_)));
    assert!(matches!(
        err(&hex("30 05 00 03 61 2f 23")),
        MqttError::BadTopic(_)
    ));
    assert!(matches!(
        err(&hex("30 05 00 03 61 2f 2b")),
        MqttError::BadTopic(_)
    ));
    for bad in ["a/b#", "#/a", "a+", "+a/b", "a/#/b", ""] {
        let mut b = vec![0x82, 0, 0, 1, 0, bad.len() as u8];
        b.extend_from_slice(bad.as_bytes());
        b.push(0);
        b[1] = (b.len() - 2) as u8;
        assert!(matches!(err(&b), MqttError::BadTopic(_)), "{bad:?}");
        b[0] = 0xa2;
        b.pop();
        b[1] = (b.len() - 2) as u8;
        assert!(matches!(err(&b), MqttError::BadTopic(_)), "{bad:?}");
    }
}

#[test]
fn subscriptions_and_their_answers_are_checked() {
    assert_eq!(err(&hex("82 02 00 01")), MqttError::Empty("SUBSCRIBE"));
    assert_eq!(err(&hex("a2 02 00 01")), MqttError::Empty("UNSUBSCRIBE"));
    assert_eq!(err(&hex("90 02 00 01")), MqttError::Empty("SUBACK"));
    // Requested QoS 3, and a reserved bit of the QoS byte.
    assert!(matches!(
        err(&hex("82 06 00 01 00 01 61 03")),
        MqttError::Malformed(_)
    ));
    assert!(matches!(
        err(&hex("82 06 00 01 00 01 61 04")),
        MqttError::Malformed(_)
    ));
    // A filter without its QoS byte.
    assert!(matches!(
        err(&hex("82 05 00 01 00 01 61")),
        MqttError::Malformed(_)
    ));
    // SUBACK codes other than 0, 1, 2, 0x80.
    for code in [3u8, 0x7f, 0x81, 0xff] {
        assert!(matches!(
            err(&[0x90, 3, 0, 1, code]),
            MqttError::Malformed(_)
        ));
    }
}

#[test]
fn connect_rules_are_checked() {
    // MQTT 3.1's 'MQIsdp' at level 3, and MQTT 5.
    assert_eq!(
        err(&hex(
            "10 0f | 00 06 4d 51 49 73 64 70 | 03 | 02 | 00 3c | 00 01 63"
        )),
        MqttError::UnsupportedProtocol { level: 3 }
    );
    assert_eq!(
        err(&hex(
            "10 0d | 00 04 4d 51 54 54 | 05 | 02 | 00 3c | 00 01 63"
        )),
        MqttError::UnsupportedProtocol { level: 5 }
    );
    let with_flags = |flags: u8| {
        let mut b = hex("10 0d | 00 04 4d 51 54 54 | 04 | 00 | 00 3c | 00 01 63");
        b[9] = flags;
        err(&b)
    };
    assert!(matches!(with_flags(0x03), MqttError::Malformed(_))); // reserved bit
    assert!(matches!(with_flags(0x42), MqttError::Malformed(_))); // password, no user
    assert!(matches!(with_flags(0x1e), MqttError::Malformed(_))); // will QoS 3
    assert!(matches!(with_flags(0x0a), MqttError::Malformed(_))); // will QoS, no will
    assert!(matches!(with_flags(0x22), MqttError::Malformed(_))); // will retain, no will
    assert!(matches!(with_flags(0x82), MqttError::Malformed(_))); // user flag, no user
                                                                  // CONNACK: reserved flags, reserved codes, session present on refusal.
    assert!(matches!(err(&hex("20 02 02 00")), MqttError::Malformed(_)));
    assert!(matches!(err(&hex("20 02 00 06")), MqttError::Malformed(_)));
    assert!(matches!(err(&hex("20 02 01 05")), MqttError::Malformed(_)));
}

#[test]
fn encoders_refuse_what_the_spec_forbids_and_leave_the_buffer_alone() {
    let mut b = BytesMut::from(&b"keep"[..]);
    let publish = |topic, qos, dup| Publish {
        topic,
        qos,
        retain: false,
        dup,
        payload: b"x",
    };
    let long = "t".repeat(65_536);
    let nul = "a\0b";
    for (p, want) in [
        (
            publish("", QosPid::AtMostOnce, false),
            MqttError::BadTopic("empty topic name"),
        ),
        (
            publish("a/#", QosPid::AtMostOnce, false),
            MqttError::BadTopic("topic name with a wildcard"),
        ),
        (
            publish("a/+/b", QosPid::AtMostOnce, false),
            MqttError::BadTopic("topic name with a wildcard"),
        ),
        (
            publish(&long, QosPid::AtMostOnce, false),
            MqttError::TooLarge {
                what: "topic name",
                len: 65_536,
                max: 65_535,
            },
        ),
        (publish(nul, QosPid::AtMostOnce, false), MqttError::BadUtf8),
        (
            publish("a", QosPid::AtMostOnce, true),
            MqttError::BadFlags {
                packet: PacketType::Publish,
                flags: 0b1000,
            },
        ),
    ] {
        assert_eq!(mqtt::encode_publish(&mut b, &p), Err(want));
    }
    // The longest topic a u16 holds is fine.
    let longest = "t".repeat(65_535);
    let mut ok = BytesMut::new();
    mqtt::encode_publish(&mut ok, &publish(&longest, QosPid::AtMostOnce, false)).unwrap();
    assert_eq!(
        parse(&ok),
        Packet::Publish(publish(&longest, QosPid::AtMostOnce, false))
    );

    let c = Connect {
        client_id: "c",
        clean_session: true,
        keep_alive: 0,
        will: None,
        username: None,
        password: Some(b"p"),
    };
    assert!(matches!(
        mqtt::encode_connect(&mut b, &c),
        Err(MqttError::Malformed(_))
    ));
    let c = Connect {
        password: None,
        client_id: nul,
        ..c
    };
    assert_eq!(mqtt::encode_connect(&mut b, &c), Err(MqttError::BadUtf8));
    let c = Connect {
        client_id: "c",
        will: Some(Will {
            topic: "w/#",
            message: b"",
            qos: Qos::AtMostOnce,
            retain: false,
        }),
        ..c
    };
    assert!(matches!(
        mqtt::encode_connect(&mut b, &c),
        Err(MqttError::BadTopic(_))
    ));
    assert_eq!(
        mqtt::encode_connack(
            &mut b,
            ConnAck {
                session_present: true,
                code: ConnectReturnCode::NotAuthorized
            }
        ),
        Err(MqttError::Malformed(
            "CONNACK: session present with a refusal"
        ))
    );
    assert_eq!(
        mqtt::encode_subscribe(&mut b, pid(1), &[]),
        Err(MqttError::Empty("SUBSCRIBE"))
    );
    assert!(matches!(
        mqtt::encode_subscribe(
            &mut b,
            pid(1),
            &[("ok", Qos::AtMostOnce), ("a#", Qos::AtMostOnce)]
        ),
        Err(MqttError::BadTopic(_))
    ));
    assert_eq!(
        mqtt::encode_unsubscribe(&mut b, pid(1), &[]),
        Err(MqttError::Empty("UNSUBSCRIBE"))
    );
    assert!(matches!(
        mqtt::encode_unsubscribe(&mut b, pid(1), &["#/"]),
        Err(MqttError::BadTopic(_))
    ));
    assert_eq!(
        mqtt::encode_suback(&mut b, pid(1), &[]),
        Err(MqttError::Empty("SUBACK"))
    );
    assert_eq!(&b[..], b"keep");
}
