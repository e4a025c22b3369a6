//! Redis pub/sub over RESP2 on [`ByteStream`]s. A RESP2 connection that
//! subscribed can do nothing but (un)subscribe, so one [`RespPubSub`]
//! holds two streams to the same server: one for `PUBLISH`, whose integer
//! replies (how many subscribers got it) come back in order and
//! acknowledge the oldest tag, and one in subscribe mode, whose pushes are
//! the messages. The second is opened (a [`ByteStream::sibling`]) on the
//! first `subscribe`, so a pure publisher holds one link.
//!
//! `fill` waits on whichever stream becomes readable; both streams'
//! `fill`s are cancel safe, so the race between them is too. `next`
//! drains the publish stream's replies first, then the messages.

use std::time::Duration;

use bytes::Buf;
use loadrig_engine::CountsBytes;
use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_wire::kv::resp::{self, Reply};

use super::{Confirm, Incoming, PubSubConn};
use crate::redis::command::error_class;
use crate::stream::{await_in_place, ByteStream, InFlight, Scan};

const PROTOCOL: OpError = OpError::new(ErrorKind::Protocol);

/// How long a subscription's confirmation may take.
const SUBSCRIBE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a push on the subscribe stream is.
enum Push<'a> {
    Message {
        channel: &'a [u8],
        payload: &'a [u8],
    },
    /// `subscribe` confirmation for a channel.
    Subscribed(&'a [u8]),
    Error(&'static str),
    /// Anything else in step with the protocol (`unsubscribe`, `pong`).
    Other,
}

fn push(reply: Reply<'_>) -> Push<'_> {
    let array = match reply {
        Reply::Array(Some(a)) => a,
        Reply::Error(msg) => return Push::Error(error_class(msg)),
        _ => return Push::Other,
    };
    let mut it = array.iter();
    match (it.next(), it.next(), it.next(), array.len()) {
        (
            Some(Reply::Bulk(Some(b"message"))),
            Some(Reply::Bulk(Some(channel))),
            Some(Reply::Bulk(Some(payload))),
            3,
        ) => Push::Message { channel, payload },
        (Some(Reply::Bulk(Some(b"subscribe"))), Some(Reply::Bulk(Some(channel))), _, 3) => {
            Push::Subscribed(channel)
        }
        _ => Push::Other,
    }
}

/// Subscribe `stream` to `channels` and wait for every confirmation,
/// leaving the messages before them in the read buffer.
async fn subscribe_all<S: ByteStream>(stream: &mut S, channels: &[Vec<u8>]) -> Result<(), OpError> {
    for c in channels {
        resp::encode_cmd2(stream.out(), b"SUBSCRIBE", c);
    }
    let confirmed = async {
        for c in channels {
            await_in_place(stream, |rest| {
                let Some((reply, n)) = resp::parse_reply(rest).map_err(|_| PROTOCOL)? else {
                    return Ok(None);
                };
                let what = match push(reply) {
                    Push::Subscribed(got) if got == c.as_slice() => Scan::Take(()),
                    Push::Error(class) => Scan::Fail(OpError::server(class)),
                    _ => Scan::Keep,
                };
                Ok(Some((n, what)))
            })
            .await?;
        }
        Ok(())
    };
    tokio::time::timeout(SUBSCRIBE_TIMEOUT, confirmed)
        .await
        .unwrap_or(Err(OpError::new(ErrorKind::Timeout)))
}

/// One client's pair of streams.
pub struct RespPubSub<S> {
    publisher: S,
    /// In subscribe mode; opened by the first `subscribe`.
    subscriber: Option<S>,
    /// Tags of the publishes in flight, oldest first.
    tags: InFlight<Tag>,
    /// Channels subscribed; made again on reconnect.
    channels: Vec<Vec<u8>>,
    /// Bytes of subscribe streams replaced since the last `take_bytes`.
    carried: (u64, u64),
}

impl<S: ByteStream> RespPubSub<S> {
    /// A client on its publishing stream.
    pub fn new(publisher: S) -> Self {
        RespPubSub {
            publisher,
            subscriber: None,
            tags: InFlight::new(),
            channels: Vec::new(),
            carried: (0, 0),
        }
    }
}

impl<S: ByteStream> PubSubConn for RespPubSub<S> {
    async fn subscribe(&mut self, subject: &[u8]) -> Result<(), OpError> {
        let stream = match &mut self.subscriber {
            Some(stream) => stream,
            None => {
                let stream = self.publisher.sibling().await?;
                self.subscriber.insert(stream)
            }
        };
        let channel = subject.to_vec();
        subscribe_all(stream, std::slice::from_ref(&channel)).await?;
        self.channels.push(channel);
        Ok(())
    }

    /// `reply` is ignored: Redis has no request-reply.
    #[inline]
    fn publish(
        &mut self,
        subject: &[u8],
        _reply: Option<&[u8]>,
        payload: &[u8],
        tag: Tag,
    ) -> Confirm {
        self.tags.push(tag, self.publisher.input());
        resp::encode_cmd3(self.publisher.out(), b"PUBLISH", subject, payload);
        Confirm::Acked
    }

    #[inline]
    fn next<R>(&mut self, f: impl FnOnce(Incoming<'_>) -> R) -> Option<Result<R, OpError>> {
        if self.tags.stray() {
            return Some(Err(PROTOCOL));
        }
        match resp::parse_reply(self.publisher.input()) {
            Ok(None) => {}
            Err(_) => return Some(Err(PROTOCOL)),
            Ok(Some((reply, n))) => {
                let Some(tag) = self.tags.pop() else {
                    return Some(Err(PROTOCOL));
                };
                let out = match reply {
                    Reply::Integer(_) => Ok(f(Incoming::Ack(tag))),
                    Reply::Error(msg) => Err(OpError::server(error_class(msg))),
                    _ => Err(PROTOCOL),
                };
                self.publisher.input().advance(n);
                return Some(out);
            }
        }
        let sub = self.subscriber.as_mut()?;
        loop {
            let (reply, n) = match resp::parse_reply(sub.input()) {
                Ok(Some(x)) => x,
                Ok(None) => return None,
                Err(_) => return Some(Err(PROTOCOL)),
            };
            match push(reply) {
                Push::Message { channel, payload } => {
                    let out = f(Incoming::Message {
                        subject: channel,
                        reply: None,
                        payload,
                    });
                    sub.input().advance(n);
                    return Some(Ok(out));
                }
                Push::Error(class) => {
                    sub.input().advance(n);
                    return Some(Err(OpError::server(class)));
                }
                // A confirmation whose `subscribe` was dropped.
                Push::Subscribed(_) | Push::Other => sub.input().advance(n),
            }
        }
    }

    fn unwritten(&self) -> usize {
        self.publisher.unwritten() + self.subscriber.as_ref().map_or(0, |s| s.unwritten())
    }

    async fn flush(&mut self) -> Result<(), OpError> {
        self.publisher.flush().await?;
        if let Some(sub) = &mut self.subscriber {
            sub.flush().await?;
        }
        Ok(())
    }

    async fn fill(&mut self) -> Result<(), OpError> {
        match &mut self.subscriber {
            None => self.publisher.fill().await,
            Some(sub) => tokio::select! {
                r = self.publisher.fill() => r,
                r = sub.fill() => r,
            },
        }
    }

    /// The publishing stream answers only what it is asked, the
    /// subscribing one sends messages.
    async fn idle(&mut self) -> Result<(), OpError> {
        match &mut self.subscriber {
            None => crate::stream::idle(&mut self.publisher).await,
            Some(sub) => tokio::select! {
                r = crate::stream::idle(&mut self.publisher) => r,
                r = crate::stream::watch(sub) => r,
            },
        }
    }

    /// A fresh publishing stream, to the same server first, then the
    /// others, and beside it a subscribing one with every subscription
    /// made again (and confirmed).
    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.tags.clear();
        self.publisher.reconnect().await?;
        // The old subscriber's bytes still count, in the next lap.
        let carried = self.subscriber.as_mut().map(|s| s.take_bytes());
        self.subscriber = None;
        if !self.channels.is_empty() {
            let mut sub = self.publisher.sibling().await?;
            subscribe_all(&mut sub, &self.channels).await?;
            self.subscriber = Some(sub);
        }
        if let Some(bytes) = carried {
            self.carried = (self.carried.0 + bytes.0, self.carried.1 + bytes.1);
        }
        Ok(())
    }

    /// Redis needs no goodbye; what is queued goes out if the socket takes
    /// it now.
    async fn close(&mut self) {
        let _ = tokio::time::timeout(Duration::ZERO, self.publisher.flush()).await;
    }
}

impl<S: ByteStream> CountsBytes for RespPubSub<S> {
    fn take_bytes(&mut self) -> (u64, u64) {
        let (mut sent, mut received) = self.publisher.take_bytes();
        let (s, r) = std::mem::take(&mut self.carried);
        sent += s;
        received += r;
        if let Some(sub) = &mut self.subscriber {
            let (s, r) = sub.take_bytes();
            sent += s;
            received += r;
        }
        (sent, received)
    }
}
