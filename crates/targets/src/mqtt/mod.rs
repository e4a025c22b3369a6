//! MQTT 3.1.1 (Mosquitto, EMQX, ...) hand written on `loadrig-mqwire` and
//! the shared buffered [`Socket`]: one connection per client, dealt over
//! the servers of the URL round robin, every publish and subscription at
//! the URL's QoS (0 or 1).
//!
//! Subjects are the workload's (`lr.1a2b.t.0`); topics are made of them by
//! turning `.` into `/` (and NATS's wildcards `*` and `>` into `+` and `#`
//! when subscribing). A received topic is turned back the same way (`/`
//! into `.`) in a scratch buffer the connection keeps, so a workload sees
//! the subjects it published to, whatever the broker.
//!
//! At QoS 1 a publish's packet identifier is its tag + 1 (tags are below
//! [`MAX_DEPTH`]), so a `PUBACK` names its tag without a table; the
//! subscriptions take identifiers above that range. A QoS 1 message
//! received is acknowledged inside [`PubSubConn::next`]. Keep-alive is
//! 60 s: [`PubSubConn::fill`] queues a `PINGREQ` every 30 s, so a
//! subscriber that only listens is not taken for dead.

use std::io;
use std::num::NonZeroU16;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Buf;
use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_mqwire::mqtt::{self, ConnectReturnCode, Packet, Publish, Qos, QosPid, SubAckCode};
use loadrig_spec::SpecError;
use loadrig_workloads::pubsub::{Confirm, Incoming, PubSubBackend, PubSubConn};
use loadrig_workloads::{TargetError, TargetInfo};
use tokio::time::{Instant, Sleep};

use crate::socket::{said, Socket};
use crate::url::TargetUrl;

const DEFAULT_PORT: u16 = 1883;

const EXPECTED: &str = "mqtt://[USER[:PASSWORD]@]HOST[:PORT][,PORT|,HOST[:PORT]...][?qos=0|1]";

/// The most publishes one connection keeps in flight: at QoS 1 each holds
/// the packet identifier tag + 1, so tags stay below the subscriptions'.
const MAX_DEPTH: usize = 60_000;

/// The first packet identifier of a subscription (up to 65,534).
const SUB_PID_BASE: u16 = 65_000;

/// Keep-alive promised in CONNECT; a `PINGREQ` goes every half of it.
const KEEP_ALIVE: u16 = 60;
const PING_EVERY: Duration = Duration::from_secs(KEEP_ALIVE as u64 / 2);

/// How long connecting (up to CONNACK) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a subscription's SUBACK may take.
const SUBSCRIBE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long asking the broker's version may take: a broker with no `$SYS`
/// topics never answers.
const ASIDE_TIMEOUT: Duration = Duration::from_secs(2);

/// How long `close` waits for its DISCONNECT to be written.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

/// Where Mosquitto keeps its version, retained.
const VERSION_TOPIC: &str = "$SYS/broker/version";

/// Read buffer growth step.
const READ_CHUNK: usize = 64 * 1024;

const PROTOCOL: OpError = OpError::new(ErrorKind::Protocol);

/// A publish or subscription the codec refused: a subject that is not
/// ASCII or makes no topic, a tag outside the packet identifiers, a
/// payload over the protocol's bound.
const REFUSED: OpError = OpError {
    kind: ErrorKind::Protocol,
    class: "subject, tag or payload refused by the codec",
};

/// Parse what follows `mqtt://`: the servers and the QoS (`?qos=0|1`).
pub(crate) fn parse_url(rest: &str) -> Result<(TargetUrl, Qos), SpecError> {
    let (url, options) = TargetUrl::parse("mqtt", rest, DEFAULT_PORT, EXPECTED, false)?;
    url.no_path("no path is taken")?;
    let bad = |why: String| {
        SpecError::new(
            "--target",
            format!("{why} in '{}' (expected {EXPECTED})", url.label()),
        )
    };
    if url.user.is_none() && url.password.is_some() {
        return Err(bad(
            "MQTT 3.1.1 takes a password only with a user name".to_string()
        ));
    }
    let mut qos = Qos::AtMostOnce;
    for (k, v) in crate::query_pairs(options.unwrap_or_default()) {
        match (k, v) {
            ("qos", "0") => qos = Qos::AtMostOnce,
            ("qos", "1") => qos = Qos::AtLeastOnce,
            ("qos", other) => return Err(bad(format!("qos '{other}' is not 0 or 1"))),
            (other, _) => return Err(bad(format!("unknown option '{other}'"))),
        }
    }
    Ok((url, qos))
}

/// One or more MQTT brokers. Cheap: it connects per use.
pub struct MqttTarget {
    at: Arc<TargetUrl>,
    qos: Qos,
    /// The server the next connection goes to (round robin).
    next: AtomicUsize,
    /// Asked once: `None` when the broker did not say.
    version: OnceLock<Option<String>>,
}

impl MqttTarget {
    pub(crate) fn new(at: TargetUrl, qos: Qos) -> MqttTarget {
        MqttTarget {
            at: Arc::new(at),
            qos,
            next: AtomicUsize::new(0),
            version: OnceLock::new(),
        }
    }

    /// The first broker's `$SYS/broker/version` (retained by Mosquitto),
    /// from a connection of its own.
    async fn ask_version(&self) -> Option<String> {
        let id = format!("loadrig-{}-version", std::process::id());
        let mut sock = open(&self.at, 0, &id).await.ok()?;
        let pid = NonZeroU16::MIN;
        mqtt::encode_subscribe(&mut sock.wbuf, pid, &[(VERSION_TOPIC, Qos::AtMostOnce)]).ok()?;
        let version = loop {
            match mqtt::parse_packet(&sock.rbuf).ok()? {
                Some((Packet::Publish(p), _)) if p.topic == VERSION_TOPIC => {
                    break String::from_utf8_lossy(p.payload).into_owned();
                }
                Some((_, n)) => sock.rbuf.advance(n),
                None => sock.fill().await.ok()?,
            }
        };
        mqtt::encode_disconnect(&mut sock.wbuf);
        let _ = sock.flush();
        Some(version)
    }
}

impl TargetInfo for MqttTarget {
    async fn server_version(&self) -> Option<String> {
        if self.version.get().is_none() {
            let v = tokio::time::timeout(ASIDE_TIMEOUT, self.ask_version())
                .await
                .ok()
                .flatten();
            let _ = self.version.set(v);
        }
        self.version.get().cloned().flatten()
    }

    fn durability(&self) -> Option<String> {
        Some(match self.qos {
            Qos::AtMostOnce => "at most once: QoS 0, the broker acknowledges nothing".to_string(),
            _ => "at least once: the broker acknowledges each publish; duplicates possible"
                .to_string(),
        })
    }

    fn max_depth(&self) -> usize {
        MAX_DEPTH
    }
}

impl PubSubBackend for MqttTarget {
    type Conn = MqttConn;

    /// The client id is `loadrig-<pid>-<client>`, so clients of several
    /// processes do not take each other's sessions.
    async fn connect(&self, client: u64) -> Result<MqttConn, TargetError> {
        let server = self.next.fetch_add(1, Ordering::Relaxed) % self.at.servers.len();
        let client_id = format!("loadrig-{}-{client}", std::process::id());
        let sock =
            open(&self.at, server, &client_id)
                .await
                .map_err(|e| TargetError::Unreachable {
                    target: self.at.label(),
                    reason: e.to_string(),
                })?;
        Ok(MqttConn {
            at: self.at.clone(),
            qos: self.qos,
            server,
            client_id,
            sock,
            subs: Vec::new(),
            subscribes: 0,
            topic: String::new(),
            subject: Vec::new(),
            keepalive: Box::pin(tokio::time::sleep(PING_EVERY)),
            refused: None,
        })
    }

    fn label(&self) -> String {
        format!("MQTT QoS {}", self.qos.level())
    }

    /// Mosquitto does not publish its settings (nor, in 2.0, a count of
    /// what it dropped) under `$SYS`, so the limit is stated, not read.
    fn queue_limit(&self) -> Option<String> {
        Some(
            "the broker dropped them: Mosquitto queues at most max_queued_messages per client \
             (1,000 by default; scripts/services sets 10,000) and drops the rest when \
             publishers outrun its delivery; the deliver row's latency is that queue"
                .to_string(),
        )
    }
}

/// Why a connection could not be opened.
#[derive(Debug, thiserror::Error)]
enum LinkError {
    #[error("{server}: {}", said(source, "MQTT"))]
    Io {
        server: String,
        #[source]
        source: io::Error,
    },
    #[error("{server}: the broker refused the connection: {why}")]
    Refused { server: String, why: &'static str },
}

/// A refused CONNACK's return code, in words.
fn refusal(code: ConnectReturnCode) -> &'static str {
    match code {
        ConnectReturnCode::Accepted => "accepted",
        ConnectReturnCode::UnacceptableProtocolVersion => {
            "it does not speak MQTT 3.1.1 (return code 1)"
        }
        ConnectReturnCode::IdentifierRejected => "client identifier rejected (return code 2)",
        ConnectReturnCode::ServerUnavailable => "the MQTT service is unavailable (return code 3)",
        ConnectReturnCode::BadUserNameOrPassword => "bad user name or password (return code 4)",
        ConnectReturnCode::NotAuthorized => "not authorized (return code 5)",
    }
}

/// Connect to server `i` as `client_id` (clean session) and wait for the
/// CONNACK.
async fn open(at: &TargetUrl, i: usize, client_id: &str) -> Result<Socket, LinkError> {
    let (host, port, name) = at.server(i);
    let io = |source| LinkError::Io {
        server: name.clone(),
        source,
    };
    let mut sock = Socket::connect(&host, port, CONNECT_TIMEOUT, READ_CHUNK)
        .await
        .map_err(io)?;
    let connect = mqtt::Connect {
        client_id,
        clean_session: true,
        keep_alive: KEEP_ALIVE,
        will: None,
        username: at.user.as_deref(),
        password: at.password.as_deref().map(str::as_bytes),
    };
    mqtt::encode_connect(&mut sock.wbuf, &connect)
        .map_err(|e| io(io::Error::new(io::ErrorKind::InvalidInput, e)))?;
    let connack = async {
        loop {
            match mqtt::parse_packet(&sock.rbuf) {
                Ok(Some((Packet::ConnAck(ack), n))) => {
                    sock.rbuf.advance(n);
                    return Ok(ack.code);
                }
                Ok(Some((p, _))) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("{:?} before CONNACK", p.packet_type()),
                    ))
                }
                Ok(None) => sock.fill().await?,
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            }
        }
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, connack).await {
        Err(_) => Err(io(io::Error::new(io::ErrorKind::TimedOut, "timed out"))),
        Ok(Err(e)) => Err(io(e)),
        Ok(Ok(ConnectReturnCode::Accepted)) => Ok(sock),
        Ok(Ok(code)) => Err(LinkError::Refused {
            server: name,
            why: refusal(code),
        }),
    }
}

/// `subject` as a topic name into `topic` (`.` -> `/`); false if it is not
/// ASCII.
#[inline]
fn to_topic(subject: &[u8], topic: &mut String) -> bool {
    subject_to_mqtt(subject, false, topic)
}

/// `subject` as a topic filter: `.` -> `/`, `*` -> `+`, `>` -> `#`.
fn to_filter(subject: &[u8]) -> Option<String> {
    let mut f = String::with_capacity(subject.len());
    subject_to_mqtt(subject, true, &mut f).then_some(f)
}

/// The one mapping of a subject to MQTT's form, into `out`: levels split
/// by `/` instead of `.`, and in a filter NATS's wildcards as MQTT's.
/// False if the subject is not ASCII.
#[inline]
fn subject_to_mqtt(subject: &[u8], filter: bool, out: &mut String) -> bool {
    out.clear();
    for &b in subject {
        out.push(match b {
            b'.' => '/',
            b'*' if filter => '+',
            b'>' if filter => '#',
            b if b.is_ascii() => char::from(b),
            _ => return false,
        });
    }
    true
}

/// A publish's packet identifier: its tag + 1.
#[inline]
fn pid_of(tag: Tag) -> Option<NonZeroU16> {
    let t = u16::try_from(tag)
        .ok()
        .filter(|&t| usize::from(t) < MAX_DEPTH)?;
    NonZeroU16::new(t + 1)
}

fn op_error(e: io::Error) -> OpError {
    match e.kind() {
        io::ErrorKind::InvalidData => PROTOCOL,
        _ => OpError::new(ErrorKind::Io),
    }
}

/// One client's connection.
pub struct MqttConn {
    at: Arc<TargetUrl>,
    qos: Qos,
    server: usize,
    client_id: String,
    sock: Socket,
    /// Topic filters subscribed; made again on reconnect.
    subs: Vec<String>,
    /// Subscriptions sent: picks the next one's packet identifier.
    subscribes: u16,
    /// Scratch for the topic of a publish (no allocation once grown).
    topic: String,
    /// Scratch for the subject of a received message.
    subject: Vec<u8>,
    /// When the next `PINGREQ` is due.
    keepalive: Pin<Box<Sleep>>,
    /// A publish the codec refused, reported by the next `next`.
    refused: Option<OpError>,
}

impl MqttConn {
    fn confirm(&self) -> Confirm {
        match self.qos {
            Qos::AtMostOnce => Confirm::Written,
            _ => Confirm::Acked,
        }
    }

    /// Subscribe to `filter` and wait for its SUBACK.
    async fn subscribe_filter(&mut self, filter: &str) -> Result<(), OpError> {
        let pid = NonZeroU16::new(SUB_PID_BASE + self.subscribes % (u16::MAX - SUB_PID_BASE))
            .unwrap_or(NonZeroU16::MAX);
        self.subscribes = self.subscribes.wrapping_add(1);
        mqtt::encode_subscribe(&mut self.sock.wbuf, pid, &[(filter, self.qos)])
            .map_err(|_| REFUSED)?;
        tokio::time::timeout(SUBSCRIBE_TIMEOUT, self.await_suback(pid))
            .await
            .unwrap_or(Err(OpError::new(ErrorKind::Timeout)))
    }

    /// Wait for the SUBACK of `pid`, leaving what comes before it in the
    /// read buffer. Cancel safe.
    async fn await_suback(&mut self, pid: NonZeroU16) -> Result<(), OpError> {
        loop {
            let mut pos = 0;
            loop {
                let rest = self.sock.rbuf.get(pos..).unwrap_or_default();
                let Some((packet, n)) = mqtt::parse_packet(rest).map_err(|_| PROTOCOL)? else {
                    break;
                };
                match packet {
                    Packet::SubAck(ack) if ack.pid == pid => {
                        let refused = ack.codes.into_iter().any(|c| c == SubAckCode::Failure);
                        self.sock.cut(pos, n);
                        return match refused {
                            true => Err(OpError::server("subscription refused")),
                            false => Ok(()),
                        };
                    }
                    _ => pos += n,
                }
            }
            self.fill().await?;
        }
    }
}

impl PubSubConn for MqttConn {
    async fn subscribe(&mut self, subject: &[u8]) -> Result<(), OpError> {
        let filter = to_filter(subject).ok_or(REFUSED)?;
        self.subscribe_filter(&filter).await?;
        self.subs.push(filter);
        Ok(())
    }

    #[inline]
    fn publish(
        &mut self,
        subject: &[u8],
        _reply: Option<&[u8]>,
        payload: &[u8],
        tag: Tag,
    ) -> Confirm {
        let qos = match self.qos {
            Qos::AtMostOnce => Some(QosPid::AtMostOnce),
            _ => pid_of(tag).map(QosPid::AtLeastOnce),
        };
        let written = qos.is_some_and(|qos| {
            to_topic(subject, &mut self.topic)
                && mqtt::encode_publish(
                    &mut self.sock.wbuf,
                    &Publish {
                        topic: &self.topic,
                        qos,
                        retain: false,
                        dup: false,
                        payload,
                    },
                )
                .is_ok()
        });
        if !written {
            self.refused = Some(REFUSED);
        }
        self.confirm()
    }

    #[inline]
    fn next<R>(&mut self, f: impl FnOnce(Incoming<'_>) -> R) -> Option<Result<R, OpError>> {
        if let Some(e) = self.refused.take() {
            return Some(Err(e));
        }
        loop {
            let (packet, n) = match mqtt::parse_packet(&self.sock.rbuf) {
                Ok(Some(x)) => x,
                Ok(None) => return None,
                Err(_) => return Some(Err(PROTOCOL)),
            };
            match packet {
                Packet::Publish(p) => {
                    match p.qos {
                        QosPid::AtMostOnce => {}
                        QosPid::AtLeastOnce(pid) => mqtt::encode_puback(&mut self.sock.wbuf, pid),
                        // Never asked for: every subscription is QoS 0 or 1.
                        QosPid::ExactlyOnce(_) => return Some(Err(PROTOCOL)),
                    }
                    self.subject.clear();
                    self.subject
                        .extend(p.topic.bytes().map(|b| if b == b'/' { b'.' } else { b }));
                    let out = f(Incoming::Message {
                        subject: &self.subject,
                        reply: None,
                        payload: p.payload,
                    });
                    self.sock.rbuf.advance(n);
                    return Some(Ok(out));
                }
                Packet::PubAck(pid) => {
                    // A PUBACK for no tag: the stream is not ours.
                    let tag = pid.get() - 1;
                    if usize::from(tag) >= MAX_DEPTH {
                        return Some(Err(PROTOCOL));
                    }
                    let out = f(Incoming::Ack(Tag::from(tag)));
                    self.sock.rbuf.advance(n);
                    return Some(Ok(out));
                }
                // A SUBACK whose `subscribe` was dropped, keep-alive answers.
                Packet::SubAck(_) | Packet::UnsubAck(_) | Packet::PingResp => {}
                _ => return Some(Err(PROTOCOL)),
            }
            self.sock.rbuf.advance(n);
        }
    }

    fn unwritten(&self) -> usize {
        self.sock.wbuf.len()
    }

    async fn flush(&mut self) -> Result<(), OpError> {
        self.sock.flush_all().await.map_err(op_error)
    }

    async fn fill(&mut self) -> Result<(), OpError> {
        loop {
            tokio::select! {
                r = self.sock.fill() => return r.map_err(op_error),
                () = &mut self.keepalive => {
                    mqtt::encode_pingreq(&mut self.sock.wbuf);
                    self.keepalive.as_mut().reset(Instant::now() + PING_EVERY);
                }
            }
        }
    }

    /// A fresh connection, to the same broker first, then the others, with
    /// every subscription made again (and acknowledged).
    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.refused = None;
        let n = self.at.servers.len();
        for k in 0..n {
            let i = (self.server + k) % n;
            let Ok(sock) = open(&self.at, i, &self.client_id).await else {
                continue;
            };
            self.sock = sock;
            self.server = i;
            self.keepalive.as_mut().reset(Instant::now() + PING_EVERY);
            for j in 0..self.subs.len() {
                let filter = self.subs.get(j).cloned().unwrap_or_default();
                self.subscribe_filter(&filter).await?;
            }
            return Ok(());
        }
        Err(OpError::new(ErrorKind::Connect))
    }

    fn take_bytes(&mut self) -> (u64, u64) {
        self.sock.take_bytes()
    }

    /// DISCONNECT, so the broker knows the client left on purpose.
    async fn close(&mut self) {
        mqtt::encode_disconnect(&mut self.sock.wbuf);
        let _ = tokio::time::timeout(CLOSE_TIMEOUT, self.sock.flush_all()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_mqtt_urls() {
        let (u, q) = parse_url("127.0.0.1").unwrap();
        assert_eq!(u.servers, [("127.0.0.1".to_string(), 1883)]);
        assert_eq!(q, Qos::AtMostOnce);
        let (u, q) = parse_url("bob:s3cret@h1,h2:1884,1885?qos=1").unwrap();
        assert_eq!(q, Qos::AtLeastOnce);
        assert_eq!(u.servers.len(), 3);
        assert_eq!(u.label(), "mqtt://bob:***@h1:1883,h2:1884,h2:1885");
        let (u, q) = parse_url("bob@h/?qos=0").unwrap();
        assert_eq!(
            (u.user.as_deref(), u.password.as_deref(), q),
            (Some("bob"), None, Qos::AtMostOnce)
        );
        for bad in [
            "",
            "h?qos=2",
            "h?qos=",
            "bob:secret@h?retain=1",
            ":secret@h",
            "h:0",
        ] {
            let e = parse_url(bad).unwrap_err();
            assert_eq!(e.flag, "--target", "{bad}");
            assert!(!e.to_string().contains("secret"), "{e}");
        }
    }

    #[test]
    fn subjects_map_to_topics_and_tags_to_packet_ids() {
        let mut t = String::new();
        assert!(to_topic(b"lr.1a2b.t.0", &mut t));
        assert_eq!(t, "lr/1a2b/t/0");
        assert!(!to_topic("lr.é".as_bytes(), &mut t));
        assert_eq!(to_filter(b"lr.*.t.>").as_deref(), Some("lr/+/t/#"));
        assert_eq!(pid_of(0).map(NonZeroU16::get), Some(1));
        assert_eq!(pid_of(59_999).map(NonZeroU16::get), Some(60_000));
        assert_eq!(pid_of(60_000), None);
        assert_eq!(pid_of(u32::MAX), None);
        assert!(usize::from(SUB_PID_BASE) > MAX_DEPTH);
    }
}
