//! A pure, synchronous codec for the message brokers loadrig drives in its
//! `pubsub` and `chat` workloads: the NATS client protocol and MQTT 3.1.1,
//! and (to come) the stamp loadrig puts in every message it publishes. No
//! sockets, no async runtime, just bytes in and bytes out, on the hot path
//! of a load generator. (Redis pub/sub needs no codec of its own: `PUBLISH`
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
//! use bytes::BytesMut;
//! use loadrig_mqwire::{mqtt, nats};
//!
//! // One payload, published over NATS and over MQTT at QoS 0.
//! let payload = b"hello";
//! let mut wire = BytesMut::new();
//! nats::encode_pub(&mut wire, b"bench.0", None, payload).unwrap();
//! let publish = mqtt::Publish {
//!     topic: "bench/0",
//!     qos: mqtt::QosPid::AtMostOnce,
//!     retain: false,
//!     dup: false,
//!     payload,
//! };
//! mqtt::encode_publish(&mut wire, &publish).unwrap();
//!
//! // A test's fake NATS server reads the first; the MQTT one the second.
//! let (op, used) = nats::parse_client_op(&wire).unwrap().unwrap();
//! assert!(matches!(op, nats::ClientOp::Pub(p) if p.payload == payload));
//! let (packet, _) = mqtt::parse_packet(&wire[used..]).unwrap().unwrap();
//! assert_eq!(packet, mqtt::Packet::Publish(publish));
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
mod step;
