//! A pure, synchronous codec for the message brokers loadrig drives in its
//! `pubsub` and `chat` workloads: the NATS client protocol and MQTT 3.1.1,
//! plus the stamp loadrig puts in every message it publishes (NATS comes
//! first; MQTT and the stamp follow). No sockets,
//! no async runtime, just bytes in and bytes out, on the hot path of a
//! load generator. (Redis pub/sub needs no codec of its own: `PUBLISH`
//! and `SUBSCRIBE` are RESP commands and messages RESP arrays, which
//! `loadrig-kvwire` already speaks.)
//!
//! Layers, as in mini-redis, one module per protocol:
//!
//! - **frames** ([`nats`]): encoders append one operation to a
//!   caller-owned [`bytes::BytesMut`] (the connection's write buffer),
//!   numbers formatted on the stack, the buffer reserved once. Parsers look
//!   at the front of a read buffer and say `Ok(None)` while a whole frame
//!   is not there yet (never an error), or return the frame and how many
//!   bytes it took, so the caller can `advance` past it and parse the next
//!   one. Frames borrow from the read buffer: a message's subject and
//!   payload are slices, not copies.
//!
//! The protocol is covered in both directions (a client's and a server's
//! side), so tests can play a fake server against loadrig's drivers
//! without one running.
//!
//! Parsers never panic and never allocate on any input: every length from
//! the wire is checked against the bytes present and against a sanity
//! bound (the module's `Limits`) before it is used, so a hostile or
//! corrupt stream can neither make a reader buffer without bound nor wait
//! forever for a line's end. Encoders that can fail (a subject with a
//! space) leave the buffer exactly as it was.
#![forbid(unsafe_code)]
#![deny(
    missing_docs,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

pub mod nats;
mod num;
mod step;
