//! NATS core's client protocol over a [`ByteStream`]: what a pub/sub link
//! says once the target has dialed and shaken hands (`INFO`, `CONNECT`,
//! `PING`/`PONG`).
//!
//! Publishes are pipelined into the write buffer and confirmed by nothing
//! (core NATS keeps no messages). A subscription is confirmed by a `PING`
//! answered after the `SUB`; messages that come meanwhile stay in the read
//! buffer for [`PubSubConn::next`]. The server's `PING`s are answered with
//! a `PONG` queued inside `next`.

use std::time::Duration;

use bytes::Buf;
use loadrig_engine::CountsBytes;
use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_wire::mq::nats::{self, ServerOp};

use super::confirm::RoundTrips;
use super::{Confirm, Incoming, PubSubConn};
use crate::stream::{await_in_place, ByteStream, Scan};

/// How long a subscription's confirmation may take.
const SUBSCRIBE_TIMEOUT: Duration = Duration::from_secs(10);

const PROTOCOL: OpError = OpError::new(ErrorKind::Protocol);

/// A publish or subscription the codec refused: a subject that is empty or
/// holds whitespace, a payload over the protocol's bound.
const REFUSED: OpError = OpError {
    kind: ErrorKind::Protocol,
    class: "subject or payload refused by the codec",
};

/// The static class of an `-ERR`, from its message: the server's words,
/// lower case, for the error counts.
pub fn error_class(message: &[u8]) -> &'static str {
    const KNOWN: &[(&[u8], &str)] = &[
        (
            b"slow consumer",
            "slow consumer: the server dropped messages this connection did not read in time",
        ),
        (b"maximum payload", "maximum payload violation"),
        (b"permissions violation", "permissions violation"),
        (b"authorization violation", "authorization violation"),
        (b"authentication timeout", "authentication timeout"),
        (b"stale connection", "stale connection"),
        (b"maximum connections", "maximum connections exceeded"),
        (b"maximum subscriptions", "maximum subscriptions exceeded"),
        (b"invalid subject", "invalid subject"),
        (b"unknown protocol", "unknown protocol operation"),
        (b"parser error", "parser error"),
    ];
    KNOWN
        .iter()
        .find(|(needle, _)| {
            message
                .windows(needle.len())
                .any(|w| w.eq_ignore_ascii_case(needle))
        })
        .map_or("other", |(_, class)| class)
}

/// One client's link to a NATS server.
pub struct NatsLink<S> {
    stream: S,
    /// Subjects subscribed; the sid of `subs[i]` is `i + 1`.
    subs: Vec<Vec<u8>>,
    /// `PING`s sent whose `PONG` has not been read: a subscription is
    /// confirmed when none is owed (a `PONG` left by a dropped `subscribe`
    /// is counted, not taken for the next one's).
    pongs_owed: usize,
    /// A publish the codec refused, reported by the next `next`.
    refused: Option<OpError>,
    /// Publishes confirmed by `PONG`, when asked (`confirm.rs`).
    trips: Option<RoundTrips>,
}

impl<S: ByteStream> NatsLink<S> {
    /// A link on a stream that has shaken hands.
    pub fn new(stream: S) -> Self {
        NatsLink {
            stream,
            subs: Vec::new(),
            pongs_owed: 0,
            refused: None,
            trips: None,
        }
    }

    /// With round trips, the `PING` the publishes since the last one wait
    /// for.
    fn ping_if_due(&mut self) {
        if let Some(t) = self.trips.as_mut().filter(|t| t.ping_due()) {
            nats::encode_ping(self.stream.out());
            t.pinged();
        }
    }

    /// Send a `PING` and wait until every `PING` owed is answered, leaving
    /// messages in the read buffer.
    async fn confirm(&mut self) -> Result<(), OpError> {
        nats::encode_ping(self.stream.out());
        self.pongs_owed += 1;
        tokio::time::timeout(SUBSCRIBE_TIMEOUT, self.await_pongs())
            .await
            .unwrap_or(Err(OpError::new(ErrorKind::Timeout)))
    }

    /// Cancel safe: what it takes out of the read buffer it has handled.
    async fn await_pongs(&mut self) -> Result<(), OpError> {
        let owed = &mut self.pongs_owed;
        await_in_place(&mut self.stream, |rest| {
            let Some((op, n)) = nats::parse_server_op(rest).map_err(|_| PROTOCOL)? else {
                return Ok(None);
            };
            let what = match op {
                ServerOp::Pong => {
                    *owed = owed.saturating_sub(1);
                    match *owed {
                        0 => Scan::Take(()),
                        _ => Scan::Drop,
                    }
                }
                ServerOp::Err(why) => Scan::Fail(OpError::server(error_class(why))),
                ServerOp::Msg(_) | ServerOp::Ping | ServerOp::Info(_) | ServerOp::Ok => Scan::Keep,
            };
            Ok(Some((n, what)))
        })
        .await
    }
}

impl<S: ByteStream> PubSubConn for NatsLink<S> {
    async fn subscribe(&mut self, subject: &[u8]) -> Result<(), OpError> {
        let sid = self.subs.len() as u64 + 1;
        nats::encode_sub(self.stream.out(), subject, None, sid).map_err(|_| REFUSED)?;
        self.subs.push(subject.to_vec());
        self.confirm().await
    }

    #[inline]
    fn publish(
        &mut self,
        subject: &[u8],
        reply: Option<&[u8]>,
        payload: &[u8],
        tag: Tag,
    ) -> Confirm {
        if nats::encode_pub(self.stream.out(), subject, reply, payload).is_err() {
            self.refused = Some(REFUSED);
        } else if let Some(t) = &mut self.trips {
            t.publish(tag);
        }
        match self.trips {
            Some(_) => Confirm::Acked,
            None => Confirm::Written,
        }
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
            let input = self.stream.input();
            let (op, n) = match nats::parse_server_op(input) {
                Ok(Some(x)) => x,
                Ok(None) => return None,
                Err(_) => return Some(Err(PROTOCOL)),
            };
            match op {
                ServerOp::Msg(m) => {
                    let out = f(Incoming::Message {
                        subject: m.subject,
                        reply: m.reply_to,
                        payload: m.payload,
                    });
                    self.stream.input().advance(n);
                    return Some(Ok(out));
                }
                ServerOp::Err(why) => {
                    let class = error_class(why);
                    self.stream.input().advance(n);
                    return Some(Err(OpError::server(class)));
                }
                ServerOp::Ping => {
                    self.stream.input().advance(n);
                    nats::encode_pong(self.stream.out());
                }
                // Answers come in order: a subscription's first (they are
                // made before any publish), then the publishes' pings.
                ServerOp::Pong => {
                    self.stream.input().advance(n);
                    if self.pongs_owed > 0 {
                        self.pongs_owed -= 1;
                    } else if let Some(t) = &mut self.trips {
                        t.answered();
                    }
                }
                ServerOp::Ok | ServerOp::Info(_) => self.stream.input().advance(n),
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
        self.stream.fill().await
    }

    /// The server's `PING`s answered (it closes a client after two
    /// unanswered ones, about six minutes with its defaults), its `INFO`
    /// and `+OK` read; anything else is the load's and ends the serving
    /// where it lies.
    async fn idle(&mut self) -> Result<(), OpError> {
        loop {
            loop {
                let (op, n) = match nats::parse_server_op(self.stream.input()) {
                    Ok(Some((op, n))) => (op, n),
                    Ok(None) => break,
                    Err(_) => return Err(PROTOCOL),
                };
                let pong = match op {
                    ServerOp::Ping => true,
                    ServerOp::Ok | ServerOp::Info(_) => false,
                    ServerOp::Err(why) => {
                        let class = error_class(why);
                        self.stream.input().advance(n);
                        return Err(OpError::server(class));
                    }
                    ServerOp::Msg(_) | ServerOp::Pong => return Ok(()),
                };
                self.stream.input().advance(n);
                if pong {
                    nats::encode_pong(self.stream.out());
                }
            }
            // Writes the `PONG`s first.
            self.stream.fill().await?;
        }
    }

    /// A fresh connection, to the same server first, then the others, with
    /// every subscription made again (and confirmed).
    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.pongs_owed = 0;
        self.refused = None;
        if let Some(t) = &mut self.trips {
            t.clear();
        }
        self.stream.reconnect().await?;
        if self.subs.is_empty() {
            return Ok(());
        }
        for (sid, subject) in self.subs.iter().enumerate() {
            // Each was encoded once already, so none is refused now.
            let _ = nats::encode_sub(self.stream.out(), subject, None, sid as u64 + 1);
        }
        self.confirm().await
    }

    fn confirm_by_round_trip(&mut self) {
        self.trips.get_or_insert_with(RoundTrips::default);
    }

    /// Core NATS has no goodbye; what is queued goes out if the socket
    /// takes it now.
    async fn close(&mut self) {
        let _ = tokio::time::timeout(Duration::ZERO, self.stream.flush()).await;
    }
}

impl<S: ByteStream> CountsBytes for NatsLink<S> {
    fn take_bytes(&mut self) -> (u64, u64) {
        self.stream.take_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_errors_have_plain_classes() {
        assert!(error_class(b"Slow Consumer Detected").starts_with("slow consumer: "));
        assert_eq!(
            error_class(b"Permissions Violation for Publish to foo"),
            "permissions violation"
        );
        assert_eq!(
            error_class(b"Authorization Violation"),
            "authorization violation"
        );
        assert_eq!(error_class(b""), "other");
    }
}
