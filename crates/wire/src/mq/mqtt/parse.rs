//! Owns reading MQTT 3.1.1 packets from the front of a read buffer: the
//! fixed header first (type, flags and remaining length are checked as
//! soon as their bytes are there, so garbage is refused before its body
//! arrives), then, once the whole packet is there, its body.
//!
//! Inside a complete packet, running out of bytes is an error, not
//! `Incomplete`: the remaining length said where the packet ends.

use std::marker::PhantomData;
use std::num::NonZeroU16;

use super::{
    check_topic_filter, check_topic_name, fixed_flags, ConnAck, Connect, ConnectReturnCode, Limits,
    MqttError, Packet, PacketType, Publish, Qos, QosPid, SubAck, SubAckCode, Subscribe,
    Unsubscribe, Will, MAX_REMAINING_LEN,
};
use crate::mq::step::{byte, finish, Halt};

type Step<T> = crate::mq::step::Step<T, MqttError>;

/// Decodes a remaining length from the front of `buf` (the bytes after a
/// packet's first byte): `Ok(Some((value, bytes used)))`, `Ok(None)` while
/// fewer than four bytes are there and all say "more follows", an error
/// when the fourth still does, or when the value uses more bytes than it
/// needs (`80 00` for 0).
#[inline]
pub fn decode_remaining_len(buf: &[u8]) -> Result<Option<(usize, usize)>, MqttError> {
    finish(remaining_len(buf))
}

#[inline]
fn remaining_len(buf: &[u8]) -> Step<(usize, usize)> {
    let mut value = 0usize;
    for (i, shift) in [0u32, 7, 14, 21].into_iter().enumerate() {
        let b = byte(buf, i)?;
        // Four digits of seven bits: the value stays below 2^28.
        value |= usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            if i > 0 && b == 0 {
                return Err(MqttError::BadRemainingLength.into());
            }
            return Ok((value, i.saturating_add(1)));
        }
    }
    Err(MqttError::BadRemainingLength.into())
}

/// The fixed header's verdict: the type, the flags nibble, where the body
/// starts and where the packet ends.
struct Fixed {
    packet: PacketType,
    flags: u8,
    body: usize,
    end: usize,
}

/// Checks the fixed header at the front of `buf` as far as its bytes go.
#[inline]
fn fixed_header(buf: &[u8], limits: &Limits) -> Step<Fixed> {
    let b0 = byte(buf, 0)?;
    let packet = PacketType::from_code(b0 >> 4).ok_or(MqttError::ReservedType(b0 >> 4))?;
    let flags = b0 & 0x0f;
    let flags_ok = match fixed_flags(packet) {
        Some(f) => flags == f,
        // PUBLISH: QoS 3 is forbidden, and so is DUP on QoS 0.
        None => {
            let qos = (flags >> 1) & 0b11;
            qos != 3 && !(qos == 0 && flags & 0b1000 != 0)
        }
    };
    if !flags_ok {
        return Err(MqttError::BadFlags { packet, flags }.into());
    }
    let (remaining, n) = remaining_len(buf.get(1..).unwrap_or_default())?;
    let max = limits.max_remaining_len.min(MAX_REMAINING_LEN);
    if remaining > max {
        return Err(MqttError::TooLarge {
            what: "packet",
            len: remaining,
            max,
        }
        .into());
    }
    let body = n.saturating_add(1);
    Ok(Fixed {
        packet,
        flags,
        body,
        end: body.saturating_add(remaining),
    })
}

/// The length of the whole packet at the front of `buf`, with
/// [`Limits::DEFAULT`], from its fixed header only: `Ok(Some(n))` once all
/// `n` bytes are there, `Ok(None)` before. Errors exactly when the fixed
/// header is bad; a body can still fail [`parse_packet`].
#[inline]
pub fn packet_len(buf: &[u8]) -> Result<Option<usize>, MqttError> {
    packet_len_with(buf, &Limits::DEFAULT)
}

/// [`packet_len`] with other limits.
#[inline]
pub fn packet_len_with(buf: &[u8], limits: &Limits) -> Result<Option<usize>, MqttError> {
    finish(fixed_header(buf, limits).and_then(|f| {
        if buf.len() < f.end {
            Err(Halt::Incomplete)
        } else {
            Ok(f.end)
        }
    }))
}

/// Parses the packet at the front of `buf`, of any type, with
/// [`Limits::DEFAULT`].
///
/// Returns `Ok(Some((packet, n)))` when the first `n` bytes are one whole
/// packet, `Ok(None)` when more bytes are needed, and an error when the
/// bytes cannot be a 3.1.1 packet. The packet borrows from `buf`.
#[inline]
pub fn parse_packet(buf: &[u8]) -> Result<Option<(Packet<'_>, usize)>, MqttError> {
    parse_packet_with(buf, &Limits::DEFAULT)
}

/// [`parse_packet`] with other limits.
#[inline]
pub fn parse_packet_with<'a>(
    buf: &'a [u8],
    limits: &Limits,
) -> Result<Option<(Packet<'a>, usize)>, MqttError> {
    finish(packet(buf, limits))
}

#[inline]
fn packet<'a>(buf: &'a [u8], limits: &Limits) -> Step<(Packet<'a>, usize)> {
    let f = fixed_header(buf, limits)?;
    let body = buf.get(f.body..f.end).ok_or(Halt::Incomplete)?;
    let mut r = Reader { b: body };
    let p = match f.packet {
        PacketType::Publish => Packet::Publish(publish(&mut r, f.flags)?),
        PacketType::PubAck => Packet::PubAck(pid_only(&mut r)?),
        PacketType::Connect => {
            let body = r.b;
            connect(&mut r)?;
            Packet::Connect(ConnectView { body })
        }
        PacketType::ConnAck => Packet::ConnAck(connack(&mut r)?),
        PacketType::PubRec => Packet::PubRec(pid_only(&mut r)?),
        PacketType::PubRel => Packet::PubRel(pid_only(&mut r)?),
        PacketType::PubComp => Packet::PubComp(pid_only(&mut r)?),
        PacketType::Subscribe => Packet::Subscribe(subscribe(&mut r)?),
        PacketType::SubAck => Packet::SubAck(suback(&mut r)?),
        PacketType::Unsubscribe => Packet::Unsubscribe(unsubscribe(&mut r)?),
        PacketType::UnsubAck => Packet::UnsubAck(pid_only(&mut r)?),
        PacketType::PingReq => Packet::PingReq,
        PacketType::PingResp => Packet::PingResp,
        PacketType::Disconnect => Packet::Disconnect,
    };
    if !r.b.is_empty() {
        return Err(MqttError::Malformed("packet: bytes after its last field").into());
    }
    Ok((p, f.end))
}

/// Reads fields from a whole packet body; running out is malformed.
struct Reader<'a> {
    b: &'a [u8],
}

const SHORT: MqttError = MqttError::Malformed("packet: a field runs past its end");

impl<'a> Reader<'a> {
    #[inline]
    fn take(&mut self, n: usize) -> Result<&'a [u8], MqttError> {
        let (head, rest) = self.b.split_at_checked(n).ok_or(SHORT)?;
        self.b = rest;
        Ok(head)
    }

    #[inline]
    fn u8(&mut self) -> Result<u8, MqttError> {
        let (&b, rest) = self.b.split_first().ok_or(SHORT)?;
        self.b = rest;
        Ok(b)
    }

    #[inline]
    fn u16(&mut self) -> Result<u16, MqttError> {
        match *self.take(2)? {
            [hi, lo] => Ok(u16::from_be_bytes([hi, lo])),
            _ => Err(SHORT),
        }
    }

    #[inline]
    fn pid(&mut self) -> Result<NonZeroU16, MqttError> {
        NonZeroU16::new(self.u16()?).ok_or(MqttError::ZeroPacketId)
    }

    /// A binary field: `u16` length, bytes.
    #[inline]
    fn bin(&mut self) -> Result<&'a [u8], MqttError> {
        let n = self.u16()?;
        self.take(usize::from(n))
    }

    /// A string field: UTF-8 without U+0000.
    #[inline]
    fn str(&mut self) -> Result<&'a str, MqttError> {
        Reader { b: self.bin()? }.as_str()
    }

    /// All that is left, as a string: UTF-8 without U+0000.
    #[inline]
    fn as_str(&self) -> Result<&'a str, MqttError> {
        if self.b.contains(&0) {
            return Err(MqttError::BadUtf8);
        }
        std::str::from_utf8(self.b).map_err(|_| MqttError::BadUtf8)
    }

    #[inline]
    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.b)
    }
}

#[inline]
fn publish<'a>(r: &mut Reader<'a>, flags: u8) -> Result<Publish<'a>, MqttError> {
    // The hot path: one pass over the topic for NUL and wildcards, where
    // `str` and `check_topic_name` would take two.
    let raw = r.bin()?;
    if raw.is_empty() || raw.iter().any(|&b| b == 0 || b == b'+' || b == b'#') {
        let topic = Reader { b: raw }.as_str()?;
        check_topic_name(topic)?;
    }
    let topic = std::str::from_utf8(raw).map_err(|_| MqttError::BadUtf8)?;
    let qos = match (flags >> 1) & 0b11 {
        0 => QosPid::AtMostOnce,
        1 => QosPid::AtLeastOnce(r.pid()?),
        // The fixed header let no other value through.
        _ => QosPid::ExactlyOnce(r.pid()?),
    };
    Ok(Publish {
        topic,
        qos,
        retain: flags & 1 != 0,
        dup: flags & 0b1000 != 0,
        payload: r.rest(),
    })
}

fn pid_only(r: &mut Reader<'_>) -> Result<NonZeroU16, MqttError> {
    r.pid()
}

fn connect<'a>(r: &mut Reader<'a>) -> Result<Connect<'a>, MqttError> {
    let name = r.bin()?;
    let level = r.u8()?;
    if name != b"MQTT" || level != super::PROTOCOL_LEVEL {
        return Err(MqttError::UnsupportedProtocol { level });
    }
    let flags = r.u8()?;
    if flags & 1 != 0 {
        return Err(MqttError::Malformed("CONNECT: reserved flag set"));
    }
    let keep_alive = r.u16()?;
    let client_id = r.str()?;
    let will_qos = (flags >> 3) & 0b11;
    let will_retain = flags & 0b0010_0000 != 0;
    let will = if flags & 0b100 != 0 {
        let qos = Qos::from_level(will_qos).ok_or(MqttError::Malformed("CONNECT: will QoS 3"))?;
        let topic = r.str()?;
        check_topic_name(topic)?;
        Some(Will {
            topic,
            message: r.bin()?,
            qos,
            retain: will_retain,
        })
    } else if will_qos != 0 || will_retain {
        return Err(MqttError::Malformed(
            "CONNECT: will QoS or retain without a will",
        ));
    } else {
        None
    };
    let has_user = flags & 0b1000_0000 != 0;
    let has_pass = flags & 0b0100_0000 != 0;
    if has_pass && !has_user {
        return Err(MqttError::Malformed("CONNECT: password without user name"));
    }
    let username = if has_user { Some(r.str()?) } else { None };
    let password = if has_pass { Some(r.bin()?) } else { None };
    Ok(Connect {
        client_id,
        clean_session: flags & 0b10 != 0,
        keep_alive,
        will,
        username,
        password,
    })
}

fn connack(r: &mut Reader<'_>) -> Result<ConnAck, MqttError> {
    let ack_flags = r.u8()?;
    if ack_flags & !1 != 0 {
        return Err(MqttError::Malformed("CONNACK: reserved flags set"));
    }
    let code = ConnectReturnCode::from_code(r.u8()?)
        .ok_or(MqttError::Malformed("CONNACK: reserved return code"))?;
    let session_present = ack_flags == 1;
    if session_present && code != ConnectReturnCode::Accepted {
        return Err(MqttError::Malformed(
            "CONNACK: session present with a refusal",
        ));
    }
    Ok(ConnAck {
        session_present,
        code,
    })
}

fn subscribe<'a>(r: &mut Reader<'a>) -> Result<Subscribe<'a>, MqttError> {
    let pid = r.pid()?;
    let topics = Topics::check(r.rest(), "SUBSCRIBE")?;
    Ok(Subscribe { pid, topics })
}

fn suback<'a>(r: &mut Reader<'a>) -> Result<SubAck<'a>, MqttError> {
    let pid = r.pid()?;
    let codes = r.rest();
    if codes.is_empty() {
        return Err(MqttError::Empty("SUBACK"));
    }
    if codes.iter().any(|&c| SubAckCode::from_code(c).is_none()) {
        return Err(MqttError::Malformed("SUBACK: reserved return code"));
    }
    Ok(SubAck {
        pid,
        codes: SubAckCodes { rest: codes },
    })
}

fn unsubscribe<'a>(r: &mut Reader<'a>) -> Result<Unsubscribe<'a>, MqttError> {
    let pid = r.pid()?;
    let topics = Topics::check(r.rest(), "UNSUBSCRIBE")?;
    Ok(Unsubscribe { pid, topics })
}

/// A parsed CONNECT: its body, checked when it was parsed, read into a
/// [`Connect`] on demand.
///
/// Kept as a slice because a [`Connect`] is twice the size of any other
/// packet, and [`Packet`] is as large as its largest variant: every
/// PUBLISH and PUBACK would pay to move those bytes, for a packet a broker
/// sees once per connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectView<'a> {
    body: &'a [u8],
}

impl<'a> ConnectView<'a> {
    /// The CONNECT's fields.
    pub fn connect(&self) -> Connect<'a> {
        // Checked at parse time, so this succeeds; should it not, an
        // empty CONNECT comes back rather than a panic.
        connect(&mut Reader { b: self.body }).unwrap_or(Connect {
            client_id: "",
            clean_session: true,
            keep_alive: 0,
            will: None,
            username: None,
            password: None,
        })
    }
}

/// One entry of a SUBSCRIBE's or UNSUBSCRIBE's topic list: a topic
/// filter, with the requested QoS in a SUBSCRIBE.
pub trait TopicEntry<'a>: Sized {
    /// Reads one entry off the front of `rest` and checks it.
    fn read(rest: &mut &'a [u8]) -> Result<Self, MqttError>;
}

/// A SUBSCRIBE's entry: (topic filter, requested QoS).
impl<'a> TopicEntry<'a> for (&'a str, Qos) {
    fn read(rest: &mut &'a [u8]) -> Result<Self, MqttError> {
        let mut r = Reader { b: rest };
        let filter = r.str()?;
        check_topic_filter(filter)?;
        let q = r.u8()?;
        let qos =
            Qos::from_level(q).ok_or(MqttError::Malformed("SUBSCRIBE: requested QoS byte"))?;
        *rest = r.b;
        Ok((filter, qos))
    }
}

/// An UNSUBSCRIBE's entry: a topic filter.
impl<'a> TopicEntry<'a> for &'a str {
    fn read(rest: &mut &'a [u8]) -> Result<Self, MqttError> {
        let mut r = Reader { b: rest };
        let filter = r.str()?;
        check_topic_filter(filter)?;
        *rest = r.b;
        Ok(filter)
    }
}

/// The topic list of a parsed SUBSCRIBE or UNSUBSCRIBE, checked when the
/// packet was parsed and read again lazily: the one iterator over MQTT
/// topic lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Topics<'a, T> {
    rest: &'a [u8],
    len: usize,
    entry: PhantomData<T>,
}

/// The (topic filter, requested QoS) pairs of a parsed SUBSCRIBE.
pub type SubscribeTopics<'a> = Topics<'a, (&'a str, Qos)>;

/// The topic filters of a parsed UNSUBSCRIBE.
pub type UnsubscribeTopics<'a> = Topics<'a, &'a str>;

impl<'a, T: TopicEntry<'a>> Topics<'a, T> {
    /// Every entry of `body` checked, at least one (`packet` names the
    /// packet in the error when there is none).
    fn check(body: &'a [u8], packet: &'static str) -> Result<Self, MqttError> {
        let mut rest = body;
        let mut len = 0usize;
        while !rest.is_empty() {
            T::read(&mut rest)?;
            len = len.saturating_add(1);
        }
        if len == 0 {
            return Err(MqttError::Empty(packet));
        }
        Ok(Topics {
            rest: body,
            len,
            entry: PhantomData,
        })
    }
}

impl<'a, T: TopicEntry<'a>> Iterator for Topics<'a, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        // Checked at parse time; a failure ends the iteration rather than
        // panicking.
        match T::read(&mut self.rest) {
            Ok(t) => {
                self.len = self.len.saturating_sub(1);
                Some(t)
            }
            Err(_) => {
                self.len = 0;
                None
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len, Some(self.len))
    }
}

impl<'a, T: TopicEntry<'a>> ExactSizeIterator for Topics<'a, T> {}

impl<'a, T: TopicEntry<'a>> std::iter::FusedIterator for Topics<'a, T> {}

/// The return codes of a parsed SUBACK, one per filter subscribed, checked
/// when it was parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubAckCodes<'a> {
    rest: &'a [u8],
}

impl SubAckCodes<'_> {
    /// The code bytes as received.
    pub fn as_bytes(&self) -> &[u8] {
        self.rest
    }
}

impl Iterator for SubAckCodes<'_> {
    type Item = SubAckCode;

    fn next(&mut self) -> Option<SubAckCode> {
        let (&c, rest) = self.rest.split_first()?;
        self.rest = rest;
        // Checked at parse time; an unknown byte would read as a failure.
        Some(SubAckCode::from_code(c).unwrap_or(SubAckCode::Failure))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.rest.len(), Some(self.rest.len()))
    }
}

impl ExactSizeIterator for SubAckCodes<'_> {}

impl std::iter::FusedIterator for SubAckCodes<'_> {}
