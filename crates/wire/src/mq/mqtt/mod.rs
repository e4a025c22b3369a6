//! MQTT 3.1.1 (protocol level 4): every control packet, in both
//! directions, so that loadrig's client and a test's fake broker share one
//! codec.
//!
//! ```text
//! fixed header   byte 0      packet type (high nibble) | flags (low nibble)
//!                byte 1..=4  remaining length: 7 bits a byte, least
//!                            significant first, high bit = "more follows"
//! then           the variable header and payload, `remaining length` bytes
//! ```
//!
//! Integers are big-endian `u16`; strings are a `u16` length then UTF-8
//! (no U+0000); binary fields (will message, password) are a `u16` length
//! then bytes. A PUBLISH's payload is whatever follows its header, up to
//! the remaining length.
//!
//! Encoders append one packet to the caller's buffer; those that can fail
//! (a string over 65,535 bytes, a topic with a wildcard, a packet over the
//! protocol's 268,435,455 bytes) check everything first and leave the
//! buffer as it was. [`parse_packet`] reads one packet of any type from the
//! front of a buffer and borrows from it; [`packet_len`] is the cheaper
//! "is a whole packet here" check. Both say `Ok(None)` while the packet is
//! incomplete.
//!
//! What 3.1.1 requires of a packet's shape is checked on input too: fixed
//! flags (`0010` for PUBREL, SUBSCRIBE, UNSUBSCRIBE, else `0000` but for
//! PUBLISH), QoS 3, DUP on QoS 0, a zero packet identifier, reserved bits,
//! the minimal encoding of the remaining length, trailing bytes, empty
//! topic lists, malformed topic filters. A packet that fails is an error,
//! on which the spec says to close the connection.
//!
//! ```
//! use bytes::BytesMut;
//! use loadrig_wire::mq::mqtt::{self, Packet, Publish, QosPid};
//!
//! let mut out = BytesMut::new();
//! let publish = Publish { topic: "a/b", qos: QosPid::AtMostOnce, retain: false, dup: false, payload: b"hi" };
//! mqtt::encode_publish(&mut out, &publish).unwrap();
//! assert_eq!(&out[..], b"\x30\x07\x00\x03a/bhi");
//!
//! let (packet, used) = mqtt::parse_packet(&out).unwrap().unwrap();
//! assert_eq!((packet, used), (Packet::Publish(publish), 9));
//! assert_eq!(mqtt::parse_packet(&out[..8]).unwrap(), None); // incomplete
//! ```

mod encode;
mod parse;

use std::num::NonZeroU16;

use thiserror::Error;

pub use encode::{
    encode_connack, encode_connect, encode_disconnect, encode_pingreq, encode_pingresp,
    encode_puback, encode_pubcomp, encode_publish, encode_pubrec, encode_pubrel,
    encode_remaining_len, encode_suback, encode_subscribe, encode_unsuback, encode_unsubscribe,
};
pub use parse::{
    decode_remaining_len, packet_len, packet_len_with, parse_packet, parse_packet_with,
    ConnectView, SubAckCodes, SubscribeTopics, TopicEntry, Topics, UnsubscribeTopics,
};

/// The protocol level of MQTT 3.1.1 in CONNECT.
pub const PROTOCOL_LEVEL: u8 = 4;

/// The largest remaining length the four-byte encoding can hold
/// (256 MiB - 1): a protocol limit.
pub const MAX_REMAINING_LEN: usize = 268_435_455;

/// Largest remaining length a parser accepts by default: 64 MiB. A sanity
/// bound against corrupt lengths, not a protocol constant; brokers usually
/// hold a lower one (Mosquitto's `message_size_limit`, EMQX's
/// `max_packet_size`, 1 MiB by default).
pub const MAX_PACKET: usize = 64 * 1024 * 1024;

/// Longest string or binary field: its length is a `u16`.
pub const MAX_STRING_LEN: usize = u16::MAX as usize;

/// The sanity bound a parser applies before it trusts a length from the
/// wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest remaining length accepted (at most [`MAX_REMAINING_LEN`]
    /// can be encoded at all).
    pub max_remaining_len: usize,
}

impl Limits {
    /// [`MAX_PACKET`].
    pub const DEFAULT: Limits = Limits {
        max_remaining_len: MAX_PACKET,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What can be wrong with a packet to encode or bytes to parse. An
/// incomplete buffer is never an error (the parsers return `Ok(None)`);
/// after a parse error the byte stream is out of step, and 3.1.1 says to
/// close the connection.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum MqttError {
    /// Packet type 0 or 15, reserved in 3.1.1 (15 is MQTT 5's AUTH).
    #[error("reserved packet type {0}")]
    ReservedType(u8),
    /// Fixed-header flags that this packet type does not allow (including
    /// QoS 3, and DUP set on a QoS 0 PUBLISH).
    #[error("flags 0x{flags:x} not allowed for {packet:?}")]
    BadFlags {
        /// The packet type.
        packet: PacketType,
        /// The low nibble of byte 0.
        flags: u8,
    },
    /// A remaining length whose fourth byte still says "more follows", or
    /// that uses more bytes than its value needs.
    #[error("malformed remaining length")]
    BadRemainingLength,
    /// A length over a limit: the remaining length over [`Limits`] or
    /// [`MAX_REMAINING_LEN`], a string over [`MAX_STRING_LEN`].
    #[error("{what} too large: {len} (max {max})")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// Its size.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A CONNECT whose protocol name is not `MQTT` or whose level is not 4.
    #[error("unsupported protocol (level {level})")]
    UnsupportedProtocol {
        /// The protocol level byte.
        level: u8,
    },
    /// A packet's fields do not fit its remaining length (a string running
    /// past the end, bytes left over, a missing field), or reserved bits
    /// are set, or a value is out of its range.
    #[error("malformed {0}")]
    Malformed(&'static str),
    /// A string that is not UTF-8 or holds U+0000.
    #[error("string is not UTF-8 or holds U+0000")]
    BadUtf8,
    /// A packet identifier of 0, which 3.1.1 forbids.
    #[error("packet identifier 0")]
    ZeroPacketId,
    /// An empty topic, a topic name with a wildcard, or a topic filter
    /// whose `+` or `#` is not a whole level (`#` also only last).
    #[error("bad {0}")]
    BadTopic(&'static str),
    /// A SUBSCRIBE, SUBACK or UNSUBSCRIBE with no topics or codes.
    #[error("{0} with nothing in it")]
    Empty(&'static str),
}

/// The fourteen packet types of 3.1.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PacketType {
    /// 1, client to server.
    Connect,
    /// 2, server to client.
    ConnAck,
    /// 3, both ways.
    Publish,
    /// 4, both ways: QoS 1 acknowledgement.
    PubAck,
    /// 5, both ways: QoS 2, first answer.
    PubRec,
    /// 6, both ways: QoS 2, release.
    PubRel,
    /// 7, both ways: QoS 2, complete.
    PubComp,
    /// 8, client to server.
    Subscribe,
    /// 9, server to client.
    SubAck,
    /// 10, client to server.
    Unsubscribe,
    /// 11, server to client.
    UnsubAck,
    /// 12, client to server.
    PingReq,
    /// 13, server to client.
    PingResp,
    /// 14, client to server.
    Disconnect,
}

impl PacketType {
    /// The type's number (the high nibble of byte 0).
    pub fn code(self) -> u8 {
        match self {
            PacketType::Connect => 1,
            PacketType::ConnAck => 2,
            PacketType::Publish => 3,
            PacketType::PubAck => 4,
            PacketType::PubRec => 5,
            PacketType::PubRel => 6,
            PacketType::PubComp => 7,
            PacketType::Subscribe => 8,
            PacketType::SubAck => 9,
            PacketType::Unsubscribe => 10,
            PacketType::UnsubAck => 11,
            PacketType::PingReq => 12,
            PacketType::PingResp => 13,
            PacketType::Disconnect => 14,
        }
    }

    /// The type for a number; `None` for the reserved 0 and 15.
    pub fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            1 => PacketType::Connect,
            2 => PacketType::ConnAck,
            3 => PacketType::Publish,
            4 => PacketType::PubAck,
            5 => PacketType::PubRec,
            6 => PacketType::PubRel,
            7 => PacketType::PubComp,
            8 => PacketType::Subscribe,
            9 => PacketType::SubAck,
            10 => PacketType::Unsubscribe,
            11 => PacketType::UnsubAck,
            12 => PacketType::PingReq,
            13 => PacketType::PingResp,
            14 => PacketType::Disconnect,
            _ => return None,
        })
    }
}

/// A quality of service level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Qos {
    /// 0: fire and forget.
    AtMostOnce,
    /// 1: acknowledged by PUBACK, may be delivered twice.
    AtLeastOnce,
    /// 2: a four-packet exchange, delivered once.
    ExactlyOnce,
}

impl Qos {
    /// 0, 1 or 2.
    pub fn level(self) -> u8 {
        match self {
            Qos::AtMostOnce => 0,
            Qos::AtLeastOnce => 1,
            Qos::ExactlyOnce => 2,
        }
    }

    /// The level for 0, 1 or 2.
    pub fn from_level(level: u8) -> Option<Self> {
        match level {
            0 => Some(Qos::AtMostOnce),
            1 => Some(Qos::AtLeastOnce),
            2 => Some(Qos::ExactlyOnce),
            _ => None,
        }
    }
}

/// A PUBLISH's QoS with its packet identifier, which QoS 1 and 2 carry and
/// QoS 0 does not: one type, so the two cannot disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QosPid {
    /// QoS 0, no packet identifier.
    AtMostOnce,
    /// QoS 1 with its packet identifier, echoed by PUBACK.
    AtLeastOnce(NonZeroU16),
    /// QoS 2 with its packet identifier.
    ExactlyOnce(NonZeroU16),
}

impl QosPid {
    /// The QoS level.
    pub fn qos(self) -> Qos {
        match self {
            QosPid::AtMostOnce => Qos::AtMostOnce,
            QosPid::AtLeastOnce(_) => Qos::AtLeastOnce,
            QosPid::ExactlyOnce(_) => Qos::ExactlyOnce,
        }
    }

    /// The packet identifier, for QoS 1 and 2.
    pub fn pid(self) -> Option<NonZeroU16> {
        match self {
            QosPid::AtMostOnce => None,
            QosPid::AtLeastOnce(p) | QosPid::ExactlyOnce(p) => Some(p),
        }
    }
}

/// CONNECT: the first packet a client sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connect<'a> {
    /// The client identifier. Brokers must accept 1 to 23 bytes of
    /// `[0-9a-zA-Z]` and may accept more; an empty one asks the broker to
    /// assign one, and needs `clean_session`.
    pub client_id: &'a str,
    /// Start a new session, dropping any the broker holds for this id.
    pub clean_session: bool,
    /// Seconds the client promises not to stay silent longer than (it sends
    /// PINGREQ when idle); 0 turns keep-alive off.
    pub keep_alive: u16,
    /// A message the broker publishes if the client vanishes.
    pub will: Option<Will<'a>>,
    /// User name.
    pub username: Option<&'a str>,
    /// Password; 3.1.1 allows one only with a user name.
    pub password: Option<&'a [u8]>,
}

/// A CONNECT's will message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Will<'a> {
    /// Where the broker publishes it.
    pub topic: &'a str,
    /// Its payload.
    pub message: &'a [u8],
    /// Its QoS.
    pub qos: Qos,
    /// Whether the broker retains it.
    pub retain: bool,
}

/// A CONNACK's return code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConnectReturnCode {
    /// 0: connection accepted.
    Accepted,
    /// 1: the broker does not speak this protocol level.
    UnacceptableProtocolVersion,
    /// 2: the client identifier is not allowed.
    IdentifierRejected,
    /// 3: the MQTT service is unavailable.
    ServerUnavailable,
    /// 4: bad user name or password.
    BadUserNameOrPassword,
    /// 5: not authorized.
    NotAuthorized,
}

impl ConnectReturnCode {
    /// The code byte.
    pub fn code(self) -> u8 {
        match self {
            ConnectReturnCode::Accepted => 0,
            ConnectReturnCode::UnacceptableProtocolVersion => 1,
            ConnectReturnCode::IdentifierRejected => 2,
            ConnectReturnCode::ServerUnavailable => 3,
            ConnectReturnCode::BadUserNameOrPassword => 4,
            ConnectReturnCode::NotAuthorized => 5,
        }
    }

    /// The code for a byte; `None` for the reserved 6..=255.
    pub fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0 => ConnectReturnCode::Accepted,
            1 => ConnectReturnCode::UnacceptableProtocolVersion,
            2 => ConnectReturnCode::IdentifierRejected,
            3 => ConnectReturnCode::ServerUnavailable,
            4 => ConnectReturnCode::BadUserNameOrPassword,
            5 => ConnectReturnCode::NotAuthorized,
            _ => return None,
        })
    }
}

/// CONNACK: the broker's answer to CONNECT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnAck {
    /// The broker resumed a session it held for this client id (always
    /// false with a non-zero code).
    pub session_present: bool,
    /// Accepted, or why not.
    pub code: ConnectReturnCode,
}

/// PUBLISH, both ways.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Publish<'a> {
    /// The topic name: non-empty, no wildcards.
    pub topic: &'a str,
    /// QoS and, for QoS 1 and 2, the packet identifier.
    pub qos: QosPid,
    /// Ask the broker to keep it as the topic's retained message (or, from
    /// a broker, this is a retained message sent on subscribing).
    pub retain: bool,
    /// A redelivery of an earlier attempt (QoS 1 and 2 only).
    pub dup: bool,
    /// The application message.
    pub payload: &'a [u8],
}

/// A SUBACK's answer for one topic filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubAckCode {
    /// Subscribed, with this maximum QoS (which may be lower than asked).
    Granted(Qos),
    /// 0x80: refused.
    Failure,
}

impl SubAckCode {
    /// The code byte.
    pub fn code(self) -> u8 {
        match self {
            SubAckCode::Granted(q) => q.level(),
            SubAckCode::Failure => 0x80,
        }
    }

    /// The code for a byte; `None` for anything but 0, 1, 2 and 0x80.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0x80 => Some(SubAckCode::Failure),
            _ => Qos::from_level(code).map(SubAckCode::Granted),
        }
    }
}

/// SUBSCRIBE, as parsed: its topic filters, validated, iterated lazily.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subscribe<'a> {
    /// Echoed by the SUBACK.
    pub pid: NonZeroU16,
    /// One or more (filter, requested QoS).
    pub topics: SubscribeTopics<'a>,
}

/// SUBACK, as parsed: one code per filter of the SUBSCRIBE, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubAck<'a> {
    /// The SUBSCRIBE's packet identifier.
    pub pid: NonZeroU16,
    /// One or more codes.
    pub codes: SubAckCodes<'a>,
}

/// UNSUBSCRIBE, as parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unsubscribe<'a> {
    /// Echoed by the UNSUBACK.
    pub pid: NonZeroU16,
    /// One or more topic filters.
    pub topics: UnsubscribeTopics<'a>,
}

/// One packet, borrowing from the read buffer it was parsed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packet<'a> {
    /// CONNECT, its fields read on demand (see [`ConnectView`]).
    Connect(ConnectView<'a>),
    /// CONNACK
    ConnAck(ConnAck),
    /// PUBLISH
    Publish(Publish<'a>),
    /// PUBACK with the acknowledged packet identifier.
    PubAck(NonZeroU16),
    /// PUBREC
    PubRec(NonZeroU16),
    /// PUBREL
    PubRel(NonZeroU16),
    /// PUBCOMP
    PubComp(NonZeroU16),
    /// SUBSCRIBE
    Subscribe(Subscribe<'a>),
    /// SUBACK
    SubAck(SubAck<'a>),
    /// UNSUBSCRIBE
    Unsubscribe(Unsubscribe<'a>),
    /// UNSUBACK
    UnsubAck(NonZeroU16),
    /// PINGREQ
    PingReq,
    /// PINGRESP
    PingResp,
    /// DISCONNECT
    Disconnect,
}

impl Packet<'_> {
    /// Which type this is, for counting packets by type.
    pub fn packet_type(&self) -> PacketType {
        match self {
            Packet::Connect(_) => PacketType::Connect,
            Packet::ConnAck(_) => PacketType::ConnAck,
            Packet::Publish(_) => PacketType::Publish,
            Packet::PubAck(_) => PacketType::PubAck,
            Packet::PubRec(_) => PacketType::PubRec,
            Packet::PubRel(_) => PacketType::PubRel,
            Packet::PubComp(_) => PacketType::PubComp,
            Packet::Subscribe(_) => PacketType::Subscribe,
            Packet::SubAck(_) => PacketType::SubAck,
            Packet::Unsubscribe(_) => PacketType::Unsubscribe,
            Packet::UnsubAck(_) => PacketType::UnsubAck,
            Packet::PingReq => PacketType::PingReq,
            Packet::PingResp => PacketType::PingResp,
            Packet::Disconnect => PacketType::Disconnect,
        }
    }
}

/// The flags every packet type but PUBLISH must carry: `0010` for PUBREL,
/// SUBSCRIBE and UNSUBSCRIBE, `0000` for the rest; `None` for PUBLISH,
/// whose flags are DUP, QoS and RETAIN.
pub(crate) fn fixed_flags(t: PacketType) -> Option<u8> {
    match t {
        PacketType::Publish => None,
        PacketType::PubRel | PacketType::Subscribe | PacketType::Unsubscribe => Some(0b0010),
        _ => Some(0),
    }
}

/// Checks a topic name (PUBLISH, will): non-empty, no `+` or `#`.
pub(crate) fn check_topic_name(t: &str) -> Result<(), MqttError> {
    if t.is_empty() {
        return Err(MqttError::BadTopic("empty topic name"));
    }
    if t.bytes().any(|b| b == b'+' || b == b'#') {
        return Err(MqttError::BadTopic("topic name with a wildcard"));
    }
    Ok(())
}

/// Checks a topic filter: non-empty; `+` only as a whole level; `#` only as
/// a whole level and the last one.
pub(crate) fn check_topic_filter(f: &str) -> Result<(), MqttError> {
    if f.is_empty() {
        return Err(MqttError::BadTopic("empty topic filter"));
    }
    let mut levels = f.split('/').peekable();
    while let Some(level) = levels.next() {
        let last = levels.peek().is_none();
        match level {
            "+" => {}
            "#" if last => {}
            "#" => return Err(MqttError::BadTopic("topic filter with '#' before its end")),
            _ if level.bytes().any(|b| b == b'+' || b == b'#') => {
                return Err(MqttError::BadTopic(
                    "topic filter with a wildcard inside a level",
                ))
            }
            _ => {}
        }
    }
    Ok(())
}
