//! The pub/sub targets against the real brokers on loopback (NATS :4222,
//! Mosquitto :1883, Redis :6379; `scripts/services up nats mosquitto
//! redis` starts them): two subscribers and one publisher, 1,000 messages
//! each received in order, every acknowledgement counted; NATS
//! request-reply; garbage servers, refusals and nothing listening.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use loadrig_engine::CountsBytes;
use loadrig_targets::{ClientSettings, Opened, Target};
use loadrig_workloads::pubsub::{Confirm, Incoming, PubSubBackend, PubSubConn};
use loadrig_workloads::{TargetError, TargetInfo};

const MESSAGES: usize = 1_000;
const SIZE: usize = 64;
const DEADLINE: Duration = Duration::from_secs(30);

/// A subject no parallel run uses.
fn subject(what: &str) -> Vec<u8> {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("lr.{}.{what}.{n}", std::process::id()).into_bytes()
}

/// Connect, or fail naming the script that starts the broker. Client
/// numbers are unique in the process (tests run in parallel, and MQTT
/// takes a session from whoever holds its client id): `_client` only
/// names the role.
async fn connect<B: PubSubBackend>(b: &B, _client: u64, service: &str) -> B::Conn {
    static CLIENT: AtomicU64 = AtomicU64::new(0);
    match b.connect(CLIENT.fetch_add(1, Ordering::Relaxed)).await {
        Ok(c) => c,
        Err(e) => panic!("{e}\nstart the broker: scripts/services up {service}"),
    }
}

/// Read until `n` messages came; returns their sequence numbers in order.
async fn receive<C: PubSubConn>(c: &mut C, want: &[u8], n: usize) -> Vec<u64> {
    let mut seqs = Vec::with_capacity(n);
    while seqs.len() < n {
        match c.next(|i| match i {
            Incoming::Message {
                subject, payload, ..
            } => {
                assert_eq!(subject, want);
                assert_eq!(payload.len(), SIZE);
                let seq: [u8; 8] = payload[..8].try_into().unwrap();
                Some(u64::from_be_bytes(seq))
            }
            Incoming::Ack(tag) => panic!("a subscriber got an ack for {tag}"),
        }) {
            Some(Ok(Some(seq))) => seqs.push(seq),
            Some(Ok(None)) => {}
            Some(Err(e)) => panic!("subscriber: {e}"),
            None => c.fill().await.unwrap(),
        }
    }
    seqs
}

/// Publish `MESSAGES` under tags 0.., then read until every ack came.
async fn publish<C: PubSubConn>(c: &mut C, subject: &[u8]) -> (Confirm, Vec<u32>) {
    let mut confirm = Confirm::Written;
    let mut payload = [0x2au8; SIZE];
    for seq in 0..MESSAGES {
        payload[..8].copy_from_slice(&(seq as u64).to_be_bytes());
        confirm = c.publish(subject, None, &payload, seq as u32);
    }
    assert!(c.unwritten() >= MESSAGES * SIZE);
    c.flush().await.unwrap();
    assert_eq!(c.unwritten(), 0);
    let mut acks = Vec::new();
    if confirm == Confirm::Acked {
        while acks.len() < MESSAGES {
            match c.next(|i| match i {
                Incoming::Ack(tag) => tag,
                Incoming::Message { .. } => panic!("the publisher got a message"),
            }) {
                Some(Ok(tag)) => acks.push(tag),
                Some(Err(e)) => panic!("publisher: {e}"),
                None => c.fill().await.unwrap(),
            }
        }
    }
    (confirm, acks)
}

/// Two subscribers, one publisher, 1,000 messages of 64 bytes: each
/// subscriber gets them all in order; every publish is acknowledged once,
/// in order, where the target acknowledges.
async fn one_to_two<B: PubSubBackend>(b: &B, service: &str, expect: Confirm) {
    let subject = subject("fanout");
    let mut subs = [connect(b, 1, service).await, connect(b, 2, service).await];
    for s in &mut subs {
        s.subscribe(&subject).await.unwrap();
    }
    let mut publisher = connect(b, 3, service).await;
    let [s1, s2] = &mut subs;
    let run = async {
        tokio::join!(
            publish(&mut publisher, &subject),
            receive(s1, &subject, MESSAGES),
            receive(s2, &subject, MESSAGES),
        )
    };
    let ((confirm, acks), got1, got2) = tokio::time::timeout(DEADLINE, run)
        .await
        .expect("1,000 messages in 30 s");
    let all: Vec<u64> = (0..MESSAGES as u64).collect();
    assert_eq!(got1, all);
    assert_eq!(got2, all);
    assert_eq!(confirm, expect);
    match expect {
        Confirm::Acked => assert_eq!(acks, (0..MESSAGES as u32).collect::<Vec<_>>()),
        Confirm::Written => assert!(acks.is_empty()),
    }
    // Nothing more: no duplicate, no stray ack.
    for s in subs.iter_mut().chain([&mut publisher]) {
        assert!(s.next(|_| ()).is_none());
        let (sent, received) = s.take_bytes();
        assert!(sent > 0 && received > 0);
        s.close().await;
    }
}

fn open(url: &str) -> Opened {
    Target::open(Some(url), &ClientSettings::default())
        .unwrap_or_else(|e| panic!("{url}: {e}"))
        .into_opened()
}

#[tokio::test]
async fn nats_delivers_all_in_order() {
    let Opened::Nats(t) = open("nats://127.0.0.1:4222") else {
        panic!("not NATS")
    };
    one_to_two(&t, "nats", Confirm::Written).await;
    assert_eq!(t.label(), "NATS");
    assert!(t.request_reply());
    let v = t.server_version().await.unwrap();
    assert!(v.starts_with("nats-server "), "{v}");
    assert!(t.delivery().unwrap().starts_with("at most once"));
}

#[tokio::test]
async fn mqtt_qos0_delivers_all_in_order() {
    let Opened::Mqtt(t) = open("mqtt://127.0.0.1:1883") else {
        panic!("not MQTT")
    };
    one_to_two(&t, "mosquitto", Confirm::Written).await;
    assert_eq!(t.label(), "MQTT QoS 0");
    assert!(!t.request_reply());
    assert!(t.delivery().unwrap().starts_with("at most once"));
}

#[tokio::test]
async fn mqtt_qos1_delivers_all_in_order_and_acks_each() {
    let Opened::Mqtt(t) = open("mqtt://127.0.0.1:1883?qos=1") else {
        panic!("not MQTT")
    };
    one_to_two(&t, "mosquitto", Confirm::Acked).await;
    assert_eq!(t.label(), "MQTT QoS 1");
    assert!(t.delivery().unwrap().starts_with("at least once"));
    let v = t.server_version().await.unwrap();
    assert!(v.contains("mosquitto"), "{v}");
}

#[tokio::test]
async fn redis_delivers_all_in_order_and_acks_each() {
    let Opened::Redis(t) = open("redis://127.0.0.1:6379") else {
        panic!("not Redis")
    };
    one_to_two(&t, "redis", Confirm::Acked).await;
    assert_eq!(t.label(), "Redis pub/sub");
    assert_eq!(
        t.delivery().as_deref(),
        Some("at most once: Redis pub/sub keeps no messages")
    );
}

#[tokio::test]
async fn nats_request_reply() {
    let Opened::Nats(t) = open("nats://127.0.0.1:4222") else {
        panic!("not NATS")
    };
    let (service, inbox) = (subject("service"), subject("inbox"));
    let mut responder = connect(&t, 1, "nats").await;
    responder.subscribe(&service).await.unwrap();
    let mut requester = connect(&t, 2, "nats").await;
    requester.subscribe(&inbox).await.unwrap();
    let exchange = async {
        requester.publish(&service, Some(&inbox), b"ping 7", 0);
        requester.flush().await.unwrap();
        // The responder echoes to the reply subject.
        let (reply, payload) = loop {
            match responder.next(|i| match i {
                Incoming::Message { reply, payload, .. } => {
                    (reply.map(<[u8]>::to_vec), payload.to_vec())
                }
                Incoming::Ack(_) => panic!("an ack on NATS"),
            }) {
                Some(r) => break r.unwrap(),
                None => responder.fill().await.unwrap(),
            }
        };
        assert_eq!(reply.as_deref(), Some(&inbox[..]));
        let reply = reply.unwrap();
        responder.publish(&reply, None, &payload, 0);
        responder.flush().await.unwrap();
        loop {
            match requester.next(|i| match i {
                Incoming::Message {
                    subject, payload, ..
                } => (subject.to_vec(), payload.to_vec()),
                Incoming::Ack(_) => panic!("an ack on NATS"),
            }) {
                Some(r) => break r.unwrap(),
                None => requester.fill().await.unwrap(),
            }
        }
    };
    let (subject, payload) = tokio::time::timeout(DEADLINE, exchange).await.unwrap();
    assert_eq!((subject, payload), (inbox, b"ping 7".to_vec()));
}

/// A reconnect makes the subscriptions again.
#[tokio::test]
async fn subscriptions_survive_a_reconnect() {
    for (url, service) in [
        ("nats://127.0.0.1:4222", "nats"),
        ("mqtt://127.0.0.1:1883?qos=1", "mosquitto"),
        ("redis://127.0.0.1:6379", "redis"),
    ] {
        let subject = subject("again");
        macro_rules! check {
            ($t:expr) => {{
                let mut sub = connect($t, 1, service).await;
                sub.subscribe(&subject).await.unwrap();
                sub.reconnect().await.unwrap();
                let mut publisher = connect($t, 2, service).await;
                publisher.publish(&subject, None, &[7u8; SIZE], 0);
                publisher.flush().await.unwrap();
                let got = tokio::time::timeout(DEADLINE, receive(&mut sub, &subject, 1))
                    .await
                    .unwrap_or_else(|_| panic!("{url}: nothing after a reconnect"));
                assert_eq!(got, [u64::from_be_bytes([7; 8])], "{url}");
            }};
        }
        match open(url) {
            Opened::Nats(t) => check!(&t),
            Opened::Mqtt(t) => check!(&t),
            Opened::Redis(t) => check!(&t),
            _ => unreachable!(),
        }
    }
}

/// A server that writes `junk` to whoever connects, reads what comes,
/// and keeps the connection open a while.
fn garbage_server(junk: &'static [u8]) -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().take(2) {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let _ = s.write_all(junk);
                let mut buf = [0u8; 4096];
                let _ = s.set_read_timeout(Some(Duration::from_secs(3)));
                while matches!(s.read(&mut buf), Ok(n) if n > 0) {
                    let _ = s.write_all(junk);
                }
            });
        }
    });
    port
}

fn unreachable_says(e: TargetError, port: u16) {
    match e {
        TargetError::Unreachable { target, reason } => {
            assert!(target.contains(&port.to_string()), "{target}");
            assert!(!reason.is_empty() && !reason.contains('\n'), "{reason}");
        }
        other => panic!("not Unreachable: {other}"),
    }
}

#[tokio::test]
async fn garbage_servers_are_errors_not_panics() {
    const JUNK: &[u8] = b"\xff\x00HTTP/1.1 400 Bad Request\r\n\r\n\x13\x37garbage";
    let port = garbage_server(JUNK);
    let Opened::Nats(t) = open(&format!("nats://127.0.0.1:{port}")) else {
        panic!()
    };
    let e = t.connect(0).await.err().expect("junk is not NATS");
    unreachable_says(e, port);

    let port = garbage_server(JUNK);
    let Opened::Mqtt(t) = open(&format!("mqtt://127.0.0.1:{port}?qos=1")) else {
        panic!()
    };
    let e = t.connect(0).await.err().expect("junk is not MQTT");
    unreachable_says(e, port);

    // Redis says nothing until asked: the junk is the answer to PUBLISH.
    let port = garbage_server(JUNK);
    let Opened::Redis(t) = open(&format!("redis://127.0.0.1:{port}")) else {
        panic!()
    };
    let mut c = PubSubBackend::connect(&t, 0).await.unwrap();
    c.publish(b"lr.x", None, b"hello", 0);
    let broken = tokio::time::timeout(DEADLINE, async {
        loop {
            match c.next(|_| ()) {
                Some(Err(e)) => break e,
                Some(Ok(())) => panic!("junk taken for an ack"),
                None => {
                    if let Err(e) = c.fill().await {
                        break e;
                    }
                }
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(broken.kind, loadrig_metrics::ErrorKind::Protocol);
}

/// A real NATS handshake, then junk: `next` says protocol error.
#[tokio::test]
async fn nats_junk_after_the_handshake_breaks_the_stream() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.write_all(b"INFO {\"version\":\"9.9.9\",\"max_payload\":1048576}\r\n")
            .unwrap();
        let mut buf = [0u8; 4096];
        let _ = s.read(&mut buf); // CONNECT and PING
        s.write_all(b"PONG\r\nPING\r\nMSG a.b 1 3\r\nhey\r\nBOGUS\r\n")
            .unwrap();
        std::thread::sleep(Duration::from_secs(2));
    });
    let Opened::Nats(t) = open(&format!("nats://127.0.0.1:{port}")) else {
        panic!()
    };
    let mut c = t.connect(0).await.unwrap();
    assert_eq!(
        t.server_version().await.as_deref(),
        Some("nats-server 9.9.9")
    );
    let mut got = Vec::new();
    let broken = loop {
        match c.next(|i| match i {
            Incoming::Message { payload, .. } => payload.to_vec(),
            Incoming::Ack(_) => panic!(),
        }) {
            Some(Ok(m)) => got.push(m),
            Some(Err(e)) => break e,
            None => c.fill().await.unwrap(),
        }
    };
    assert_eq!(got, [b"hey".to_vec()]);
    assert_eq!(broken.kind, loadrig_metrics::ErrorKind::Protocol);
    // The server's PING was answered.
    assert_eq!(c.unwritten(), b"PONG\r\n".len());
}

#[tokio::test]
async fn nothing_listening_is_unreachable() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    for scheme in ["nats", "mqtt", "redis"] {
        let url = format!("{scheme}://127.0.0.1:{port}");
        let e = match open(&url) {
            Opened::Nats(t) => t.connect(0).await.err(),
            Opened::Mqtt(t) => t.connect(0).await.err(),
            Opened::Redis(t) => PubSubBackend::connect(&t, 0).await.err(),
            _ => unreachable!(),
        };
        let e = e.unwrap_or_else(|| panic!("{url} connected"));
        assert!(e.to_string().contains("connection refused"), "{e}");
        unreachable_says(e, port);
    }
}

/// A one-connection server: writes `greeting`, then `answer` after the
/// first read, then keeps the connection open a while.
fn scripted(greeting: &'static [u8], answer: &'static [u8]) -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.write_all(greeting).unwrap();
        let mut buf = [0u8; 4096];
        let _ = s.read(&mut buf);
        s.write_all(answer).unwrap();
        std::thread::sleep(Duration::from_secs(2));
    });
    port
}

#[tokio::test]
async fn refusals_are_unreachable_in_words() {
    let port = scripted(
        b"INFO {\"version\":\"2.9.10\",\"auth_required\":true}\r\n",
        b"-ERR 'Authorization Violation'\r\n",
    );
    let Opened::Nats(t) = open(&format!("nats://bob:secret@127.0.0.1:{port}")) else {
        panic!()
    };
    let e = t.connect(0).await.err().unwrap().to_string();
    assert!(
        e.contains("refused the connection: Authorization Violation"),
        "{e}"
    );
    assert!(!e.contains("secret"), "{e}");

    // CONNACK, return code 5.
    let port = scripted(b"", b"\x20\x02\x00\x05");
    let Opened::Mqtt(t) = open(&format!("mqtt://bob:secret@127.0.0.1:{port}")) else {
        panic!()
    };
    let e = t.connect(0).await.err().unwrap().to_string();
    assert!(
        e.contains("refused the connection: not authorized (return code 5)"),
        "{e}"
    );
    assert!(!e.contains("secret"), "{e}");
}

/// A NATS `-ERR` after the handshake is a server error with a plain class.
#[tokio::test]
async fn a_nats_slow_consumer_is_said_plainly() {
    let port = scripted(
        b"INFO {\"version\":\"2.9.10\"}\r\n",
        b"PONG\r\n-ERR 'Slow Consumer'\r\n",
    );
    let Opened::Nats(t) = open(&format!("nats://127.0.0.1:{port}")) else {
        panic!()
    };
    let mut c = t.connect(0).await.unwrap();
    let e = loop {
        match c.next(|_| ()) {
            Some(r) => break r.unwrap_err(),
            None => c.fill().await.unwrap(),
        }
    };
    assert_eq!(e.kind, loadrig_metrics::ErrorKind::Server);
    assert!(e.class.starts_with("slow consumer: "), "{}", e.class);
}
