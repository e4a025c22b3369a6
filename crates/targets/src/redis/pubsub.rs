//! Redis pub/sub over RESP2. A RESP2 connection that subscribed can do
//! nothing but (un)subscribe, so one [`RedisPubSubConn`] holds two links to
//! the same server: one for `PUBLISH`, whose integer replies (how many
//! subscribers got it) come back in order and acknowledge the oldest tag,
//! and one in subscribe mode, whose pushes are the messages. The second is
//! opened on the first `subscribe`, so a pure publisher holds one link.
//!
//! `fill` waits on whichever link becomes readable; both links' `fill`s
//! are cancel safe, so the race between them is too. `next` drains the
//! publish link's replies first, then the messages.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Buf;
use loadrig_engine::Tag;
use loadrig_kvwire::resp::{self, Reply};
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_workloads::pubsub::{Confirm, Incoming, PubSubBackend, PubSubConn};
use loadrig_workloads::redis::command::error_class;
use loadrig_workloads::TargetError;

use super::{Link, RedisTarget};
use crate::url::TargetUrl;

const PROTOCOL: OpError = OpError {
    kind: ErrorKind::Protocol,
    class: "",
};

/// How long a subscription's confirmation may take.
const SUBSCRIBE_TIMEOUT: Duration = Duration::from_secs(10);

const DELIVERY: &str = "at most once: Redis pub/sub keeps no messages";

impl PubSubBackend for RedisTarget {
    type Conn = RedisPubSubConn;

    /// Redis does not name clients: `client` is unused.
    async fn connect(&self, _client: u64) -> Result<RedisPubSubConn, TargetError> {
        let server = self.next.fetch_add(1, Ordering::Relaxed) % self.at.servers.len();
        let publisher = Link::open(&self.at, server, 0)
            .await
            .map_err(|e| self.unreachable(e))?;
        Ok(RedisPubSubConn {
            at: self.at.clone(),
            server,
            publisher,
            subscriber: None,
            tags: VecDeque::with_capacity(64),
            channels: Vec::new(),
            stray: false,
        })
    }

    fn label(&self) -> String {
        "Redis pub/sub".to_string()
    }

    fn delivery(&self) -> Option<String> {
        Some(DELIVERY.to_string())
    }
}

/// One client's pair of links.
pub struct RedisPubSubConn {
    at: Arc<TargetUrl>,
    server: usize,
    publisher: Link,
    /// In subscribe mode; opened by the first `subscribe`.
    subscriber: Option<Link>,
    /// Tags of the publishes in flight, oldest first.
    tags: VecDeque<Tag>,
    /// Channels subscribed; made again on reconnect.
    channels: Vec<Vec<u8>>,
    /// Bytes came on the publish link that no publish asked for.
    stray: bool,
}

/// What a push on the subscribe link is.
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

fn op_error(e: io::Error) -> OpError {
    match e.kind() {
        io::ErrorKind::InvalidData => PROTOCOL,
        _ => OpError::new(ErrorKind::Io),
    }
}

/// Wait for the confirmation of `SUBSCRIBE channel` on `link`, leaving the
/// messages before it in the read buffer. Cancel safe.
async fn await_subscribed(link: &mut Link, channel: &[u8]) -> Result<(), OpError> {
    loop {
        let mut pos = 0;
        loop {
            let rest = link.sock.rbuf.get(pos..).unwrap_or_default();
            let Some((reply, n)) = resp::parse_reply(rest).map_err(|_| PROTOCOL)? else {
                break;
            };
            match push(reply) {
                Push::Subscribed(c) if c == channel => {
                    link.sock.cut(pos, n);
                    return Ok(());
                }
                Push::Error(class) => {
                    link.sock.cut(pos, n);
                    return Err(OpError::server(class));
                }
                _ => pos += n,
            }
        }
        link.sock.fill().await.map_err(op_error)?;
    }
}

/// Subscribe `link` to `channels` and wait for every confirmation.
async fn subscribe_all(link: &mut Link, channels: &[Vec<u8>]) -> Result<(), OpError> {
    for c in channels {
        resp::encode_cmd2(&mut link.sock.wbuf, b"SUBSCRIBE", c);
    }
    let confirmed = async {
        for c in channels {
            await_subscribed(link, c).await?;
        }
        Ok(())
    };
    tokio::time::timeout(SUBSCRIBE_TIMEOUT, confirmed)
        .await
        .unwrap_or(Err(OpError::new(ErrorKind::Timeout)))
}

impl PubSubConn for RedisPubSubConn {
    async fn subscribe(&mut self, subject: &[u8]) -> Result<(), OpError> {
        let link = match &mut self.subscriber {
            Some(link) => link,
            None => {
                let link = Link::open(&self.at, self.server, 0)
                    .await
                    .map_err(|_| OpError::new(ErrorKind::Connect))?;
                self.subscriber.insert(link)
            }
        };
        let channel = subject.to_vec();
        subscribe_all(link, std::slice::from_ref(&channel)).await?;
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
        // With nothing in flight every byte read is a reply to nothing
        // (this publish would take it for its own).
        if self.tags.is_empty() && !self.publisher.sock.rbuf.is_empty() {
            self.stray = true;
        }
        resp::encode_cmd3(&mut self.publisher.sock.wbuf, b"PUBLISH", subject, payload);
        self.tags.push_back(tag);
        Confirm::Acked
    }

    #[inline]
    fn next<R>(&mut self, f: impl FnOnce(Incoming<'_>) -> R) -> Option<Result<R, OpError>> {
        if self.stray {
            return Some(Err(PROTOCOL));
        }
        match resp::parse_reply(&self.publisher.sock.rbuf) {
            Ok(None) => {}
            Err(_) => return Some(Err(PROTOCOL)),
            Ok(Some((reply, n))) => {
                let Some(tag) = self.tags.pop_front() else {
                    return Some(Err(PROTOCOL));
                };
                let out = match reply {
                    Reply::Integer(_) => Ok(f(Incoming::Ack(tag))),
                    Reply::Error(msg) => Err(OpError::server(error_class(msg))),
                    _ => Err(PROTOCOL),
                };
                self.publisher.sock.rbuf.advance(n);
                return Some(out);
            }
        }
        let sub = self.subscriber.as_mut()?;
        loop {
            let (reply, n) = match resp::parse_reply(&sub.sock.rbuf) {
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
                    sub.sock.rbuf.advance(n);
                    return Some(Ok(out));
                }
                Push::Error(class) => {
                    sub.sock.rbuf.advance(n);
                    return Some(Err(OpError::server(class)));
                }
                // A confirmation whose `subscribe` was dropped.
                Push::Subscribed(_) | Push::Other => sub.sock.rbuf.advance(n),
            }
        }
    }

    fn unwritten(&self) -> usize {
        self.publisher.sock.wbuf.len() + self.subscriber.as_ref().map_or(0, |s| s.sock.wbuf.len())
    }

    async fn flush(&mut self) -> Result<(), OpError> {
        self.publisher.sock.flush_all().await.map_err(op_error)?;
        if let Some(sub) = &mut self.subscriber {
            sub.sock.flush_all().await.map_err(op_error)?;
        }
        Ok(())
    }

    async fn fill(&mut self) -> Result<(), OpError> {
        let r = match &mut self.subscriber {
            None => self.publisher.sock.fill().await,
            Some(sub) => tokio::select! {
                r = self.publisher.sock.fill() => r,
                r = sub.sock.fill() => r,
            },
        };
        r.map_err(op_error)
    }

    /// Fresh links, to the same server first, then the others, with every
    /// subscription made again (and confirmed).
    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.tags.clear();
        self.stray = false;
        let n = self.at.servers.len();
        for k in 0..n {
            let i = (self.server + k) % n;
            let Ok(publisher) = Link::open(&self.at, i, 0).await else {
                continue;
            };
            let subscriber = if self.channels.is_empty() {
                None
            } else {
                let Ok(mut link) = Link::open(&self.at, i, 0).await else {
                    continue;
                };
                if subscribe_all(&mut link, &self.channels).await.is_err() {
                    continue;
                }
                Some(link)
            };
            self.publisher = publisher;
            self.subscriber = subscriber;
            self.server = i;
            return Ok(());
        }
        Err(OpError::new(ErrorKind::Connect))
    }

    fn take_bytes(&mut self) -> (u64, u64) {
        let (mut sent, mut received) = self.publisher.sock.take_bytes();
        if let Some(sub) = &mut self.subscriber {
            let (s, r) = sub.sock.take_bytes();
            sent += s;
            received += r;
        }
        (sent, received)
    }

    /// Redis needs no goodbye; what is queued goes out if the socket takes
    /// it now.
    async fn close(&mut self) {
        let _ = self.publisher.sock.flush();
    }
}
