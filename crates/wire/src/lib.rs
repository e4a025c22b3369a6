//! loadrig's codecs: pure and synchronous, no sockets, no async runtime,
//! just bytes in and bytes out, on the hot path of a load generator. One
//! module per family of protocols, and what they share:
//!
//! - [`volt`]: VoltDB's client wire protocol;
//! - [`kv`]: RESP2 (Redis) and memcached's text and binary protocols;
//! - [`mq`]: the NATS client protocol and MQTT 3.1.1;
//! - [`etcd`]: etcd v3's gRPC messages and gRPC's framing;
//! - [`my`]: the MySQL client/server protocol (MariaDB): login, prepared
//!   statements, binary result sets;
//! - [`pg`]: PostgreSQL's frontend/backend protocol v3;
//! - [`step`]: the parse step (done, incomplete, bad), the line-end scan,
//!   decimals read and written.
//!
//! Every codec keeps one promise, held by the lints below (the one place
//! they are written): no input from the wire makes it panic, index out of
//! bounds, overflow or allocate without bound.
#![forbid(unsafe_code)]
#![deny(
    missing_docs,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]
// Unit tests index their own fixtures and may panic: the lints above guard
// what comes from the wire, and the library built without `test` keeps them.
#![cfg_attr(
    test,
    allow(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::arithmetic_side_effects
    )
)]

pub mod etcd;
pub mod kv;
pub mod mq;
pub mod my;
pub mod pg;
pub mod step;
pub mod volt;
