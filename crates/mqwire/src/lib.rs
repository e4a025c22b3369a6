//! A pure, synchronous codec for the message brokers loadrig drives in its
//! `pubsub` and `chat` workloads: the NATS client protocol and MQTT 3.1.1,
//! plus the stamp loadrig puts in every message it publishes. No sockets,
//! no async runtime, just bytes in and bytes out, on the hot path of a
//! load generator. (Redis pub/sub needs no codec of its own: `PUBLISH`
//! and `SUBSCRIBE` are RESP commands and messages RESP arrays, which
//! `loadrig-kvwire` already speaks.)
//!
//! The layers, from the socket inwards:
//!
//! - **frames** ([`nats`], [`mqtt`]): encoders append one operation or
//!   packet to a caller-owned [`bytes::BytesMut`] (the connection's write
//!   buffer), numbers formatted on the stack, the buffer reserved once.
//!   Parsers look at the front of a read buffer and say `Ok(None)` while a
//!   whole frame is not there yet (never an error), or return the frame
//!   and how many bytes it took, so the caller can `advance` past it and
//!   parse the next one. Frames borrow from the read buffer: a message's
//!   subject or topic and payload are slices, not copies.
//! - **messages** ([`stamp`]): a published payload starts with a 24-byte
//!   stamp (publisher, sequence, send time) followed by filler up to the
//!   message size. The broker never looks inside; the subscriber decodes
//!   the stamp from the payload slice the frame parser returned, and
//!   measures end-to-end latency, loss, duplicates and reordering from it.
//!
//! Both protocols are covered in both directions (a client's and a
//! server's side), so tests can play a fake broker against loadrig's
//! drivers without one running.
//!
//! Parsers never panic and never allocate on any input: every length from
//! the wire is checked against the bytes present and against a sanity
//! bound (each module's `Limits`) before it is used, so a hostile or
//! corrupt stream can neither make a reader buffer without bound nor wait
//! forever for a line's end. Encoders that can fail (a subject with a
//! space, a topic with a wildcard, a string too long for its length field)
//! leave the buffer exactly as it was.
//!
//! ```
//! use bytes::{Buf, BytesMut};
//! use loadrig_mqwire::{mqtt, nats, stamp::{self, Stamp}};
//!
//! // A publisher: stamp, filler, frame.
//! let sent = Stamp { publisher: 7, seq: 42, sent_unix_ns: 1_700_000_000_000_000_000 };
//! let mut payload = BytesMut::new();
//! stamp::encode_message(&mut payload, &sent, 64).unwrap();
//! let mut wire = BytesMut::new();
//! nats::encode_pub(&mut wire, b"bench.0", None, &payload).unwrap();
//!
//! // A subscriber reads the MSG the server made of it.
//! let mut input = BytesMut::new();
//! nats::encode_msg(&mut input, b"bench.0", b"1", None, &payload).unwrap();
//! let (op, used) = nats::parse_server_op(&input).unwrap().unwrap();
//! let nats::ServerOp::Msg(msg) = op else { unreachable!() };
//! assert_eq!(Stamp::decode(msg.payload), Ok(sent));
//! input.advance(used);
//!
//! // The same payload over MQTT, QoS 0.
//! let publish = mqtt::Publish {
//!     topic: "bench/0",
//!     qos: mqtt::QosPid::AtMostOnce,
//!     retain: false,
//!     dup: false,
//!     payload: &payload,
//! };
//! mqtt::encode_publish(&mut wire, &publish).unwrap();
//! ```
#![forbid(unsafe_code)]
#![deny(
    missing_docs,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

pub mod mqtt;
pub mod nats;
mod num;
pub mod stamp;
use loadrig_wirestep as step;
