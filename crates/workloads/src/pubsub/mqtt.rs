//! MQTT 3.1.1 over a [`ByteStream`]: what a pub/sub link says once the
//! target has dialed and had its `CONNECT` accepted. Every publish and
//! subscription is at the link's QoS (0 or 1).
//!
//! Subjects are the workload's (`lr.1a2b.t.0`); topics are made of them by
//! turning `.` into `/` (and NATS's wildcards `*` and `>` into `+` and `#`
//! when subscribing). A received topic is turned back the same way (`/`
//! into `.`) in a scratch buffer the link keeps, so a workload sees the
//! subjects it published to, whatever the broker.
//!
//! At QoS 1 a publish's packet identifier is its tag + 1 (tags are below
//! [`MAX_DEPTH`]), so a `PUBACK` names its tag without a table; the
//! subscriptions take identifiers above that range. A QoS 1 message
//! received is acknowledged inside [`PubSubConn::next`]. [`KEEP_ALIVE`] is
//! what the target promises in `CONNECT`: [`PubSubConn::fill`] queues a
//! `PINGREQ` every half of it, so a subscriber that only listens is not
//! taken for dead. At QoS 0, when asked ([`PubSubConn::confirm_by_round_trip`]),
//! a publish is done at the `PINGRESP` of the `PINGREQ` written after it
//! (`confirm.rs`).

use std::num::NonZeroU16;
use std::pin::Pin;
use std::time::Duration;

use bytes::Buf;
use loadrig_engine::CountsBytes;
use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
pub use loadrig_wire::mq::mqtt::Qos;
use loadrig_wire::mq::mqtt::{self, Packet, Publish, QosPid, SubAckCode};
use tokio::time::{Instant, Sleep};

use super::confirm::RoundTrips;
use super::{Confirm, Incoming, PubSubConn};
use crate::stream::{await_in_place, ByteStream, Scan};

/// The most publishes one link keeps in flight: at QoS 1 each holds the
/// packet identifier tag + 1, so tags stay below the subscriptions'.
pub const MAX_DEPTH: usize = 60_000;

/// The first packet identifier of a subscription (up to 65,534).
const SUB_PID_BASE: u16 = 65_000;

/// Keep-alive, in seconds, for the target's `CONNECT`; a `PINGREQ` goes
/// every half of it. Ten minutes: a broker drops a client silent for 1.5
/// keep-alives, and a run waiting for `--start-at` neither reads nor
/// writes its connections (at 60 s, Mosquitto dropped them after a 100 s
/// lead).
pub const KEEP_ALIVE: u16 = 600;
const PING_EVERY: Duration = Duration::from_secs(KEEP_ALIVE as u64 / 2);

/// How long a subscription's SUBACK may take.
const SUBSCRIBE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long `close` waits for its DISCONNECT to be written.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

const PROTOCOL: OpError = OpError::new(ErrorKind::Protocol);

/// A publish or subscription the codec refused: a subject that is not
/// ASCII or makes no topic, a tag outside the packet identifiers, a
/// payload over the protocol's bound.
const REFUSED: OpError = OpError {
    kind: ErrorKind::Protocol,
    class: "subject, tag or payload refused by the codec",
};

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

/// A received topic name as a subject into `out` (`/` -> `.`): the
/// inverse of [`to_topic`].
#[inline]
fn to_subject(topic: &str, out: &mut Vec<u8>) {
    out.clear();
    out.extend(topic.bytes().map(|b| if b == b'/' { b'.' } else { b }));
}

/// A publish's packet identifier: its tag + 1.
#[inline]
fn pid_of(tag: Tag) -> Option<NonZeroU16> {
    let t = u16::try_from(tag)
        .ok()
        .filter(|&t| usize::from(t) < MAX_DEPTH)?;
    NonZeroU16::new(t + 1)
}

/// One client's link to an MQTT broker.
pub struct MqttLink<S> {
    stream: S,
    qos: Qos,
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
    /// QoS 0 confirmed by `PINGRESP`, when asked (`confirm.rs`).
    trips: Option<RoundTrips>,
}

impl<S: ByteStream> MqttLink<S> {
    /// A link on a stream whose `CONNECT` the broker accepted.
    pub fn new(stream: S, qos: Qos) -> Self {
        MqttLink {
            stream,
            qos,
            subs: Vec::new(),
            subscribes: 0,
            topic: String::new(),
            subject: Vec::new(),
            keepalive: Box::pin(tokio::time::sleep(PING_EVERY)),
            refused: None,
            trips: None,
        }
    }

    fn confirm(&self) -> Confirm {
        match (self.qos, &self.trips) {
            (Qos::AtMostOnce, None) => Confirm::Written,
            _ => Confirm::Acked,
        }
    }

    /// A `PINGREQ`; with round trips, covering the publishes before it.
    fn ping(&mut self) {
        mqtt::encode_pingreq(self.stream.out());
        if let Some(t) = &mut self.trips {
            t.pinged();
        }
    }

    /// With round trips, the `PINGREQ` the publishes since the last one
    /// wait for.
    fn ping_if_due(&mut self) {
        if self.trips.as_ref().is_some_and(RoundTrips::ping_due) {
            self.ping();
        }
    }

    /// Subscribe to `filter` and wait for its SUBACK.
    async fn subscribe_filter(&mut self, filter: &str) -> Result<(), OpError> {
        let pid = NonZeroU16::new(SUB_PID_BASE + self.subscribes % (u16::MAX - SUB_PID_BASE))
            .unwrap_or(NonZeroU16::MAX);
        self.subscribes = self.subscribes.wrapping_add(1);
        mqtt::encode_subscribe(self.stream.out(), pid, &[(filter, self.qos)])
            .map_err(|_| REFUSED)?;
        tokio::time::timeout(SUBSCRIBE_TIMEOUT, self.await_suback(pid))
            .await
            .unwrap_or(Err(OpError::new(ErrorKind::Timeout)))
    }

    /// Wait for the SUBACK of `pid`, leaving what comes before it in the
    /// read buffer. Cancel safe.
    async fn await_suback(&mut self, pid: NonZeroU16) -> Result<(), OpError> {
        await_in_place(&mut self.stream, |rest| {
            let Some((packet, n)) = mqtt::parse_packet(rest).map_err(|_| PROTOCOL)? else {
                return Ok(None);
            };
            let what = match packet {
                Packet::SubAck(ack) if ack.pid == pid => {
                    match ack.codes.into_iter().any(|c| c == SubAckCode::Failure) {
                        true => Scan::Fail(OpError::server("subscription refused")),
                        false => Scan::Take(()),
                    }
                }
                _ => Scan::Keep,
            };
            Ok(Some((n, what)))
        })
        .await
    }
}

impl<S: ByteStream> PubSubConn for MqttLink<S> {
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
                    self.stream.out(),
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
        } else if let Some(t) = &mut self.trips {
            t.publish(tag);
        }
        self.confirm()
    }

    #[inline]
    fn next<R>(&mut self, f: impl FnOnce(Incoming<'_>) -> R) -> Option<Result<R, OpError>> {
        if let Some(e) = self.refused.take() {
            return Some(Err(e));
        }
        loop {
            if let Some(tag) = self.trips.as_mut().and_then(RoundTrips::next_confirmed) {
                return Some(Ok(f(Incoming::Ack(tag))));
            }
            let (packet, n) = match mqtt::parse_packet(self.stream.input()) {
                Ok(Some(x)) => x,
                Ok(None) => return None,
                Err(_) => return Some(Err(PROTOCOL)),
            };
            match packet {
                Packet::Publish(p) => {
                    let owed = match p.qos {
                        QosPid::AtMostOnce => None,
                        QosPid::AtLeastOnce(pid) => Some(pid),
                        // Never asked for: every subscription is QoS 0 or 1.
                        QosPid::ExactlyOnce(_) => return Some(Err(PROTOCOL)),
                    };
                    to_subject(p.topic, &mut self.subject);
                    let out = f(Incoming::Message {
                        subject: &self.subject,
                        reply: None,
                        payload: p.payload,
                    });
                    self.stream.input().advance(n);
                    if let Some(pid) = owed {
                        mqtt::encode_puback(self.stream.out(), pid);
                    }
                    return Some(Ok(out));
                }
                Packet::PubAck(pid) => {
                    // A PUBACK for no tag: the stream is not ours.
                    let tag = pid.get() - 1;
                    if usize::from(tag) >= MAX_DEPTH {
                        return Some(Err(PROTOCOL));
                    }
                    let out = f(Incoming::Ack(Tag::from(tag)));
                    self.stream.input().advance(n);
                    return Some(Ok(out));
                }
                // With round trips, what the PINGREQ covered is confirmed,
                // handed out from the top of the loop.
                Packet::PingResp => {
                    self.stream.input().advance(n);
                    if let Some(t) = &mut self.trips {
                        t.answered();
                    }
                }
                // A SUBACK whose `subscribe` was dropped.
                Packet::SubAck(_) | Packet::UnsubAck(_) => self.stream.input().advance(n),
                _ => return Some(Err(PROTOCOL)),
            }
        }
    }

    fn unwritten(&self) -> usize {
        self.stream.unwritten()
    }

    async fn flush(&mut self) -> Result<(), OpError> {
        self.ping_if_due();
        self.stream.flush().await
    }

    async fn fill(&mut self) -> Result<(), OpError> {
        // Waiting to read: what is published by now is waited for too.
        self.ping_if_due();
        loop {
            tokio::select! {
                r = self.stream.fill() => return r,
                () = &mut self.keepalive => {
                    self.ping();
                    self.keepalive.as_mut().reset(Instant::now() + PING_EVERY);
                }
            }
        }
    }

    /// The keep-alive's `PINGREQ`s sent as during the load and their
    /// `PINGRESP`s read, so the broker keeps a client waiting longer than
    /// its keep-alive; anything else is the load's and ends the serving
    /// where it lies.
    async fn idle(&mut self) -> Result<(), OpError> {
        loop {
            match mqtt::parse_packet(self.stream.input()) {
                Ok(Some((Packet::PingResp, n))) => {
                    self.stream.input().advance(n);
                    if let Some(t) = &mut self.trips {
                        t.answered();
                    }
                    continue;
                }
                Ok(None) => {}
                _ => return Ok(()),
            }
            self.fill().await?;
        }
    }

    /// A fresh connection, to the same broker first, then the others, with
    /// every subscription made again (and acknowledged).
    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.refused = None;
        if let Some(t) = &mut self.trips {
            t.clear();
        }
        self.stream.reconnect().await?;
        self.keepalive.as_mut().reset(Instant::now() + PING_EVERY);
        for j in 0..self.subs.len() {
            let filter = self.subs.get(j).cloned().unwrap_or_default();
            self.subscribe_filter(&filter).await?;
        }
        Ok(())
    }

    /// QoS 0 only: at QoS 1 the broker's `PUBACK` confirms each publish.
    fn confirm_by_round_trip(&mut self) {
        if self.qos == Qos::AtMostOnce {
            self.trips.get_or_insert_with(RoundTrips::default);
        }
    }

    /// DISCONNECT, so the broker knows the client left on purpose.
    async fn close(&mut self) {
        mqtt::encode_disconnect(self.stream.out());
        let _ = tokio::time::timeout(CLOSE_TIMEOUT, self.stream.flush()).await;
    }
}

impl<S: ByteStream> CountsBytes for MqttLink<S> {
    fn take_bytes(&mut self) -> (u64, u64) {
        self.stream.take_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
