//! A pure, synchronous codec for the message brokers loadrig drives in its
//! `pubsub` and `chat` workloads: the NATS client protocol and MQTT 3.1.1.
//! What loadrig puts inside a message (its stamp) is the workload's, not
//! the wire's (`loadrig_workloads::pubsub::stamp`). No sockets,
//! no async runtime, just bytes in and bytes out, on the hot path of a
//! load generator. (Redis pub/sub needs no codec of its own: `PUBLISH`
//! and `SUBSCRIBE` are RESP commands and messages RESP arrays, which
//! [`crate::kv`] already speaks.)
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
//! - **payloads** are opaque here: the broker never looks inside, and a
//!   parsed message's payload is a slice the workload reads its stamp from.
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
//! use loadrig_wire::mq::{mqtt, nats};
//!
//! // A publisher's frame around a payload.
//! let payload = [7u8; 64];
//! let mut wire = BytesMut::new();
//! nats::encode_pub(&mut wire, b"bench.0", None, &payload).unwrap();
//!
//! // A subscriber reads the MSG the server made of it.
//! let mut input = BytesMut::new();
//! nats::encode_msg(&mut input, b"bench.0", b"1", None, &payload).unwrap();
//! let (op, used) = nats::parse_server_op(&input).unwrap().unwrap();
//! let nats::ServerOp::Msg(msg) = op else { unreachable!() };
//! assert_eq!(msg.payload, &payload[..]);
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

pub mod mqtt;
pub mod nats;
use crate::step;
