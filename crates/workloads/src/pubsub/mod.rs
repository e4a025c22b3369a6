//! The publish/subscribe capability, shared by the `pubsub` (nats-bench)
//! and `chat` (Chut) workloads: brokers that carry messages from
//! publishers to whoever subscribed, with no answer to the publisher
//! beyond an optional acknowledgement.
//!
//! A [`PubSubBackend`] opens [`PubSubConn`]s: a target dials and logs in,
//! and hands a [`ByteStream`](crate::stream::ByteStream) to the link of
//! its protocol, here ([`nats::NatsLink`], [`mqtt::MqttLink`],
//! [`resp::RespPubSub`]). A connection queues
//! publishes into its write buffer (never blocking), subscribes on the
//! cold path, and hands back what arrived — messages and
//! acknowledgements — where it lies in its read buffer. Protocol chatter
//! (NATS `PING`, MQTT `PUBACK` owed for a QoS 1 message received) is
//! answered inside the connection and never reaches the workload.
//!
//! Every message carries the 24-byte [`stamp`] (publisher, sequence,
//! intended send time), so a subscriber measures
//! end-to-end latency and counts losses, duplicates and reorders without
//! asking anyone.

pub mod chat;
mod client;
mod confirm;
pub mod fanout;
pub mod mqtt;
pub mod nats;
pub mod resp;
pub mod stamp;
mod tally;

use std::future::Future;

use loadrig_engine::CountsBytes;
use loadrig_engine::Tag;
use loadrig_metrics::OpError;

use crate::{TargetError, TargetInfo};

pub use chat::ChatBench;
pub use client::{Client, ClientDriver, ClientRole, DELIVER, DOMAINS, SEND};
pub use fanout::{fresh_subject, PubSubBench};
pub use tally::{ClientTally, Spread, Tallies};

/// How the broker confirms a publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirm {
    /// Fire and forget (NATS, MQTT QoS 0): the publish is done once its
    /// bytes are written to the socket.
    Written,
    /// An [`Incoming::Ack`] with the publish's tag will come (MQTT QoS 1's
    /// `PUBACK`, Redis's `PUBLISH` reply; NATS's `PONG` or MQTT's
    /// `PINGRESP` after it when confirmed by round trip).
    Acked,
}

/// What a connection read, borrowed from its read buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incoming<'a> {
    /// A message on a subject this connection subscribed to.
    Message {
        subject: &'a [u8],
        /// NATS request-reply: where an answer goes.
        reply: Option<&'a [u8]>,
        payload: &'a [u8],
    },
    /// The broker confirmed the publish queued under `tag`.
    Ack(Tag),
}
/// Something to do with any target that has this capability: the registry
/// calls it with the concrete backend, so what it builds is monomorphised
/// per target (see [`crate::Capabilities`]).
pub trait Visit {
    type Output;
    fn visit<B: PubSubBackend + 'static>(self, backend: B) -> Self::Output;
}

/// The pub/sub capability: a broker and how to reach it.
pub trait PubSubBackend: TargetInfo + Send + Sync + 'static {
    type Conn: PubSubConn;

    /// One client's connection (dealt round robin over the brokers the
    /// URL names), identified to the broker by `client` where the
    /// protocol names clients (MQTT's client id).
    fn connect(&self, client: u64) -> impl Future<Output = Result<Self::Conn, TargetError>> + Send;
    /// Whether a message may carry a reply subject (NATS request-reply).
    fn request_reply(&self) -> bool {
        false
    }
    /// The target's name for the pubsub report (`NATS`, `MQTT QoS 1`, ...).
    fn label(&self) -> String;
    /// What a published message is promised, for the pubsub report: by
    /// default [`TargetInfo::durability`]. A target whose durability
    /// speaks of something else says it here (Redis: its durability is
    /// its keys' persistence; its pub/sub keeps nothing).
    fn delivery(&self) -> Option<String> {
        self.durability()
    }
    /// Where the broker drops messages a subscriber has not taken yet,
    /// and the setting that says when, for the verify line of a run that
    /// lost messages. `None`: the broker has no such limit to name.
    fn queue_limit(&self) -> Option<String> {
        None
    }
}

/// One client's connection to the broker.
///
/// Subjects are byte strings of letters, digits and dots
/// (`lr.1a2b.t.0`); a target maps them to its own syntax if it must.
pub trait PubSubConn: CountsBytes + Send + 'static {
    /// Subscribe to `subject`; returns once the broker has the
    /// subscription (NATS: a `PING` answered after the `SUB`; MQTT:
    /// `SUBACK`; Redis: the `subscribe` reply), so a publish that follows
    /// reaches it. Cold path. Kept across [`reconnect`](PubSubConn::reconnect).
    fn subscribe(&mut self, subject: &[u8]) -> impl Future<Output = Result<(), OpError>> + Send;

    /// Queue a publish of `payload` to `subject` (with `reply`, NATS
    /// request-reply only) under `tag`. Never blocks: bytes go out on the
    /// next [`flush`](PubSubConn::flush) or [`fill`](PubSubConn::fill).
    fn publish(
        &mut self,
        subject: &[u8],
        reply: Option<&[u8]>,
        payload: &[u8],
        tag: Tag,
    ) -> Confirm;

    /// The next message or acknowledgement if it is whole in the read
    /// buffer: `f` sees it, then it leaves the buffer. `None`: nothing
    /// whole yet. `Some(Err)`: bytes that are not the protocol, or the
    /// broker's error; the stream is out of step and the caller
    /// reconnects.
    fn next<R>(&mut self, f: impl FnOnce(Incoming<'_>) -> R) -> Option<Result<R, OpError>>;

    /// Bytes queued and not yet written.
    fn unwritten(&self) -> usize;

    /// Write everything queued. Cancel safe.
    fn flush(&mut self) -> impl Future<Output = Result<(), OpError>> + Send;

    /// Write what is queued and wait until more bytes arrived. Cancel
    /// safe: bytes stay in the connection's buffers.
    fn fill(&mut self) -> impl Future<Output = Result<(), OpError>> + Send;

    /// Before the load: serve the link while the run waits for its start
    /// ([`Driver::idle`](loadrig_engine::Driver::idle)): `Err` when the
    /// broker closed it, `Ok` when what came is the load's.
    fn idle(&mut self) -> impl Future<Output = Result<(), OpError>> + Send;

    /// A fresh connection to the same broker (else the next), with its
    /// subscriptions made again; what was in flight is forgotten.
    fn reconnect(&mut self) -> impl Future<Output = Result<(), OpError>> + Send;

    /// Close the connection politely (NATS: nothing; MQTT: `DISCONNECT`).
    fn close(&mut self) -> impl Future<Output = ()> + Send;

    /// From now on a fire-and-forget publish is done when the broker
    /// answers the ping written after it, not when it is written
    /// (`confirm.rs`; chat's stress mode). A link whose broker
    /// acknowledges every publish has nothing to change.
    fn confirm_by_round_trip(&mut self) {}
}
