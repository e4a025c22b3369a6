//! The NATS client protocol: text control lines, some followed by a
//! payload whose length the line gives.
//!
//! ```text
//! client -> server   CONNECT {json}            PUB <subject> [reply-to] <#bytes>  + payload
//!                    SUB <subject> [queue] <sid>   UNSUB <sid> [max_msgs]   PING   PONG
//! server -> client   INFO {json}               MSG <subject> <sid> [reply-to] <#bytes>  + payload
//!                    +OK   -ERR '<message>'    PING   PONG
//! ```
//!
//! Every line ends with CRLF, and so does every payload. Fields are
//! separated by one or more spaces or tabs; verbs are case-insensitive
//! (`sub foo 1` is `SUB foo 1`); subjects are case-sensitive.
//!
//! The client's side is what loadrig sends and reads: encoders for the
//! client's operations ([`encode_connect`], [`encode_pub`], [`encode_sub`],
//! [`encode_unsub`], [`encode_ping`], [`encode_pong`]) and
//! [`parse_server_op`] for what a server sends. The server's side
//! ([`encode_info`], [`encode_msg`], [`encode_ok`], [`encode_err`] and
//! [`parse_client_op`]) exists so that tests can play a server without
//! one.
//!
//! Headers (`HPUB`/`HMSG`) are not supported: [`encode_connect`] always
//! says `"headers":false`, so a server never sends `HMSG`; should one
//! arrive, the parser says [`NatsError::Unsupported`].
//!
//! ```
//! use bytes::BytesMut;
//! use loadrig_wire::mq::nats::{self, ServerOp};
//!
//! let mut out = BytesMut::new();
//! nats::encode_pub(&mut out, b"FOO", None, b"Hello NATS!").unwrap();
//! assert_eq!(&out[..], b"PUB FOO 11\r\nHello NATS!\r\n");
//!
//! let input = b"MSG FOO.BAR 9 11\r\nHello World\r\nPING\r\n";
//! let (op, used) = nats::parse_server_op(input).unwrap().unwrap();
//! let ServerOp::Msg(msg) = op else { unreachable!() };
//! assert_eq!((msg.subject, msg.sid, msg.payload), (&b"FOO.BAR"[..], &b"9"[..], &b"Hello World"[..]));
//! assert_eq!(nats::parse_server_op(&input[used..]).unwrap(), Some((ServerOp::Ping, 6)));
//! assert_eq!(nats::parse_server_op(b"MSG FOO.BAR 9 11\r\nHello").unwrap(), None);
//! ```

mod encode;
mod json;
mod parse;

use thiserror::Error;

pub use encode::{
    encode_connect, encode_err, encode_info, encode_msg, encode_ok, encode_ping, encode_pong,
    encode_pub, encode_sub, encode_unsub, Auth, Connect,
};
pub use json::Json;
pub use parse::{parse_client_op, parse_client_op_with, parse_server_op, parse_server_op_with};

/// Longest control line accepted (CRLF excluded) for every operation but
/// the two that carry JSON: 4 KiB, nats-server's default
/// `max_control_line`. A `MSG` line is its subject, sid, reply subject and
/// length; a longer one means a corrupt stream.
pub const MAX_CONTROL_LINE: usize = 4 * 1024;

/// Longest `INFO` or `CONNECT` line accepted (CRLF excluded): 64 KiB. These
/// carry JSON that grows with the cluster (`connect_urls`) or the
/// credentials (a JWT), so they get more room than other lines.
pub const MAX_JSON_LINE: usize = 64 * 1024;

/// Largest payload accepted: 64 MiB, the most nats-server lets
/// `max_payload` be set to (its default is 1 MiB, announced in `INFO`).
pub const MAX_PAYLOAD: usize = 64 * 1024 * 1024;

/// The sanity bounds a parser applies before it trusts a length from the
/// wire, so that a corrupt stream can neither make a reader buffer without
/// bound nor wait forever for a line's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest control line, CRLF excluded, except `INFO`/`CONNECT`.
    pub max_control_line: usize,
    /// Longest `INFO` or `CONNECT` line, CRLF excluded.
    pub max_json_line: usize,
    /// Largest payload of a `MSG` or `PUB`.
    pub max_payload: usize,
}

impl Limits {
    /// [`MAX_CONTROL_LINE`], [`MAX_JSON_LINE`], [`MAX_PAYLOAD`]: what the
    /// encoders also hold to, so whatever they write parses.
    pub const DEFAULT: Limits = Limits {
        max_control_line: MAX_CONTROL_LINE,
        max_json_line: MAX_JSON_LINE,
        max_payload: MAX_PAYLOAD,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What can be wrong with an operation to encode or bytes to parse. An
/// incomplete buffer is never an error (the parsers return `Ok(None)`);
/// after a parse error the connection's byte stream is out of step and
/// should be closed.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum NatsError {
    /// The line starts with no verb this side of the protocol sends (a
    /// server's verb where a client's is expected counts as unknown).
    #[error("unknown protocol operation")]
    UnknownOp,
    /// A verb this codec knows but does not implement (`HPUB`, `HMSG`).
    #[error("unsupported protocol operation {0}")]
    Unsupported(&'static str),
    /// A known operation whose arguments do not parse: a wrong number of
    /// fields, a length that is not a number, arguments where none belong.
    #[error("malformed {0}")]
    Malformed(&'static str),
    /// A CR not followed by LF, a bare LF, or a payload not followed by
    /// CRLF.
    #[error("malformed line ending in {0}")]
    BadLineEnd(&'static str),
    /// A line or payload over a [`Limits`] bound.
    #[error("{what} too large: {len} (max {max})")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// Its (declared or scanned) size.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A subject, reply subject, queue group or sid to encode that is empty
    /// or holds a space, tab, CR or LF (which would split the line into
    /// other fields); or an `-ERR` message or `INFO` JSON holding CR or LF.
    #[error("bad {0}: empty or containing whitespace")]
    BadToken(&'static str),
}

/// One operation a server sends, borrowing from the read buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerOp<'a> {
    /// `INFO {json}`: sent first on every connection, and again at any
    /// time (cluster changes, lame duck mode).
    Info(Json<'a>),
    /// `MSG …`: a message for one of this connection's subscriptions.
    Msg(Msg<'a>),
    /// `+OK`: acknowledges an operation, in verbose mode only.
    Ok,
    /// `-ERR '<message>'`: the message without its quotes. Most errors are
    /// followed by the server closing the connection; permission and
    /// subject errors are not.
    Err(&'a [u8]),
    /// `PING`: answer with `PONG` or be disconnected as stale.
    Ping,
    /// `PONG`: the answer to a `PING` (the handshake's round trip).
    Pong,
}

/// `MSG <subject> <sid> [reply-to] <#bytes>\r\n<payload>\r\n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Msg<'a> {
    /// The subject it was published to (not the subscription's wildcard).
    pub subject: &'a [u8],
    /// The subscription id the client gave in `SUB`.
    pub sid: &'a [u8],
    /// The publisher's reply subject, if it gave one.
    pub reply_to: Option<&'a [u8]>,
    /// The payload, without its CRLF.
    pub payload: &'a [u8],
}

impl Msg<'_> {
    /// The sid as a number: this codec's [`encode_sub`] writes numeric
    /// sids, though the protocol allows any token.
    pub fn sid_u64(&self) -> Option<u64> {
        crate::step::parse_u64(self.sid)
    }
}

/// One operation a client sends, borrowing from the read buffer: what a
/// test server parses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientOp<'a> {
    /// `CONNECT {json}`
    Connect(Json<'a>),
    /// `PUB …`
    Pub(Pub<'a>),
    /// `SUB …`
    Sub(Sub<'a>),
    /// `UNSUB …`
    Unsub(Unsub<'a>),
    /// `PING`
    Ping,
    /// `PONG`
    Pong,
}

/// `PUB <subject> [reply-to] <#bytes>\r\n<payload>\r\n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pub<'a> {
    /// Where to publish.
    pub subject: &'a [u8],
    /// Where subscribers may reply.
    pub reply_to: Option<&'a [u8]>,
    /// The payload, without its CRLF.
    pub payload: &'a [u8],
}

/// `SUB <subject> [queue group] <sid>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sub<'a> {
    /// The subject, possibly with wildcards (`*`, `>`).
    pub subject: &'a [u8],
    /// The queue group: each message goes to one member only.
    pub queue_group: Option<&'a [u8]>,
    /// The client's id for this subscription, echoed in every `MSG`.
    pub sid: &'a [u8],
}

/// `UNSUB <sid> [max_msgs]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unsub<'a> {
    /// The subscription.
    pub sid: &'a [u8],
    /// Unsubscribe after this many messages in all, rather than now.
    pub max_msgs: Option<u64>,
}
