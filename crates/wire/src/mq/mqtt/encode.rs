//! Owns the bytes of every MQTT 3.1.1 packet: each encoder checks its
//! fields, computes the remaining length, reserves the whole packet once
//! and appends it. An encoder that refuses its fields leaves the buffer
//! exactly as it was.

use std::num::NonZeroU16;

use bytes::{BufMut, BytesMut};

use super::{
    check_topic_filter, check_topic_name, fixed_flags, ConnAck, Connect, ConnectReturnCode,
    MqttError, PacketType, Publish, Qos, SubAckCode, MAX_REMAINING_LEN, MAX_STRING_LEN,
};

/// Sum of lengths; saturates rather than wrapping (a saturated sum is over
/// [`MAX_REMAINING_LEN`], so it is refused, never written).
#[inline]
fn sum(parts: &[usize]) -> usize {
    parts.iter().fold(0usize, |a, &b| a.saturating_add(b))
}

/// Byte 0 of a packet whose flags are fixed.
#[inline]
fn first_byte(t: PacketType) -> u8 {
    (t.code() << 4) | fixed_flags(t).unwrap_or(0)
}

/// A fixed header assembled on the stack: byte 0, then the remaining
/// length in one to four bytes.
struct Header {
    bytes: [u8; 5],
    len: usize,
}

impl Header {
    #[inline]
    fn new(b0: u8, remaining: usize) -> Result<Self, MqttError> {
        if remaining > MAX_REMAINING_LEN {
            return Err(MqttError::TooLarge {
                what: "packet",
                len: remaining,
                max: MAX_REMAINING_LEN,
            });
        }
        let mut bytes = [b0, 0, 0, 0, 0];
        let mut len = 1usize;
        let mut x = remaining;
        for slot in bytes.iter_mut().skip(1) {
            // x < 2^28 here, so the cast keeps every bit that is left.
            let mut digit = (x % 128) as u8;
            x /= 128;
            if x > 0 {
                digit |= 0x80;
            }
            *slot = digit;
            len = len.saturating_add(1);
            if x == 0 {
                break;
            }
        }
        Ok(Self { bytes, len })
    }

    #[inline]
    fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..self.len).unwrap_or_default()
    }

    /// Reserves room for the header and `remaining` more bytes, and writes
    /// the header.
    #[inline]
    fn put(&self, buf: &mut BytesMut, remaining: usize) {
        buf.reserve(self.len.saturating_add(remaining));
        buf.put_slice(self.as_bytes());
    }
}

/// Appends a remaining length (one to four bytes, least significant seven
/// bits first). Refuses a length over [`MAX_REMAINING_LEN`].
pub fn encode_remaining_len(buf: &mut BytesMut, len: usize) -> Result<(), MqttError> {
    let h = Header::new(0, len)?;
    buf.put_slice(h.as_bytes().get(1..).unwrap_or_default());
    Ok(())
}

/// A string field: at most [`MAX_STRING_LEN`] bytes and no U+0000 (the
/// `&str` already guarantees UTF-8).
#[inline]
fn check_str(s: &str, what: &'static str) -> Result<(), MqttError> {
    check_bin(s.as_bytes(), what)?;
    if s.as_bytes().contains(&0) {
        return Err(MqttError::BadUtf8);
    }
    Ok(())
}

#[inline]
fn check_bin(b: &[u8], what: &'static str) -> Result<(), MqttError> {
    if b.len() > MAX_STRING_LEN {
        return Err(MqttError::TooLarge {
            what,
            len: b.len(),
            max: MAX_STRING_LEN,
        });
    }
    Ok(())
}

/// A checked string or binary field: its `u16` length, then its bytes.
#[inline]
fn put_field(buf: &mut BytesMut, b: &[u8]) {
    buf.put_u16(u16::try_from(b.len()).unwrap_or(u16::MAX));
    buf.put_slice(b);
}

/// Appends CONNECT (protocol `MQTT`, level 4). Refuses strings over
/// 65,535 bytes or holding U+0000, a will topic with a wildcard, and a
/// password without a user name (3.1.1 allows none).
pub fn encode_connect(buf: &mut BytesMut, c: &Connect<'_>) -> Result<(), MqttError> {
    check_str(c.client_id, "client identifier")?;
    let mut flags = 0u8;
    let mut remaining = sum(&[10, 2, c.client_id.len()]);
    if let Some(w) = &c.will {
        check_topic_name(w.topic)?;
        check_str(w.topic, "will topic")?;
        check_bin(w.message, "will message")?;
        flags |= 0b0000_0100 | (w.qos.level() << 3) | (u8::from(w.retain) << 5);
        remaining = sum(&[remaining, 4, w.topic.len(), w.message.len()]);
    }
    if let Some(u) = c.username {
        check_str(u, "user name")?;
        flags |= 0b1000_0000;
        remaining = sum(&[remaining, 2, u.len()]);
    }
    if let Some(p) = c.password {
        if c.username.is_none() {
            return Err(MqttError::Malformed("CONNECT: password without user name"));
        }
        check_bin(p, "password")?;
        flags |= 0b0100_0000;
        remaining = sum(&[remaining, 2, p.len()]);
    }
    if c.clean_session {
        flags |= 0b0000_0010;
    }
    let h = Header::new(first_byte(PacketType::Connect), remaining)?;
    h.put(buf, remaining);
    buf.put_slice(b"\x00\x04MQTT");
    buf.put_u8(super::PROTOCOL_LEVEL);
    buf.put_u8(flags);
    buf.put_u16(c.keep_alive);
    put_field(buf, c.client_id.as_bytes());
    if let Some(w) = &c.will {
        put_field(buf, w.topic.as_bytes());
        put_field(buf, w.message);
    }
    if let Some(u) = c.username {
        put_field(buf, u.as_bytes());
    }
    if let Some(p) = c.password {
        put_field(buf, p);
    }
    Ok(())
}

/// Appends CONNACK. Refuses `session_present` with a refusal code, which
/// 3.1.1 forbids.
pub fn encode_connack(buf: &mut BytesMut, ack: ConnAck) -> Result<(), MqttError> {
    if ack.session_present && ack.code != ConnectReturnCode::Accepted {
        return Err(MqttError::Malformed(
            "CONNACK: session present with a refusal",
        ));
    }
    buf.put_slice(&[
        first_byte(PacketType::ConnAck),
        2,
        u8::from(ack.session_present),
        ack.code.code(),
    ]);
    Ok(())
}

/// Appends PUBLISH. Refuses an empty topic or one with a wildcard, a topic
/// over 65,535 bytes or holding U+0000, DUP on QoS 0, and a packet over
/// [`MAX_REMAINING_LEN`].
#[inline]
pub fn encode_publish(buf: &mut BytesMut, p: &Publish<'_>) -> Result<(), MqttError> {
    check_topic_name(p.topic)?;
    check_str(p.topic, "topic name")?;
    let qos = p.qos.qos();
    let flags = (u8::from(p.dup) << 3) | (qos.level() << 1) | u8::from(p.retain);
    if p.dup && qos == Qos::AtMostOnce {
        return Err(MqttError::BadFlags {
            packet: PacketType::Publish,
            flags,
        });
    }
    let pid = p.qos.pid();
    let pid_len = if pid.is_some() { 2 } else { 0 };
    let remaining = sum(&[2, p.topic.len(), pid_len, p.payload.len()]);
    let h = Header::new((PacketType::Publish.code() << 4) | flags, remaining)?;
    h.put(buf, remaining);
    put_field(buf, p.topic.as_bytes());
    if let Some(pid) = pid {
        buf.put_u16(pid.get());
    }
    buf.put_slice(p.payload);
    Ok(())
}

/// A packet that is its packet identifier and nothing else.
#[inline]
fn encode_pid_only(buf: &mut BytesMut, t: PacketType, pid: NonZeroU16) {
    let [hi, lo] = pid.get().to_be_bytes();
    buf.put_slice(&[first_byte(t), 2, hi, lo]);
}

/// Appends PUBACK, the answer to a QoS 1 PUBLISH.
#[inline]
pub fn encode_puback(buf: &mut BytesMut, pid: NonZeroU16) {
    encode_pid_only(buf, PacketType::PubAck, pid);
}

/// Appends PUBREC, the first answer to a QoS 2 PUBLISH.
pub fn encode_pubrec(buf: &mut BytesMut, pid: NonZeroU16) {
    encode_pid_only(buf, PacketType::PubRec, pid);
}

/// Appends PUBREL (flags `0010`), the answer to PUBREC.
pub fn encode_pubrel(buf: &mut BytesMut, pid: NonZeroU16) {
    encode_pid_only(buf, PacketType::PubRel, pid);
}

/// Appends PUBCOMP, the answer to PUBREL.
pub fn encode_pubcomp(buf: &mut BytesMut, pid: NonZeroU16) {
    encode_pid_only(buf, PacketType::PubComp, pid);
}

/// Appends UNSUBACK.
pub fn encode_unsuback(buf: &mut BytesMut, pid: NonZeroU16) {
    encode_pid_only(buf, PacketType::UnsubAck, pid);
}

/// Appends SUBSCRIBE (flags `0010`) for one or more (filter, maximum QoS).
/// Refuses an empty list and malformed filters.
pub fn encode_subscribe(
    buf: &mut BytesMut,
    pid: NonZeroU16,
    topics: &[(&str, Qos)],
) -> Result<(), MqttError> {
    if topics.is_empty() {
        return Err(MqttError::Empty("SUBSCRIBE"));
    }
    let mut remaining = 2usize;
    for (f, _) in topics {
        check_topic_filter(f)?;
        check_str(f, "topic filter")?;
        remaining = sum(&[remaining, 3, f.len()]);
    }
    let h = Header::new(first_byte(PacketType::Subscribe), remaining)?;
    h.put(buf, remaining);
    buf.put_u16(pid.get());
    for (f, q) in topics {
        put_field(buf, f.as_bytes());
        buf.put_u8(q.level());
    }
    Ok(())
}

/// Appends SUBACK with one code per filter of the SUBSCRIBE. Refuses an
/// empty list.
pub fn encode_suback(
    buf: &mut BytesMut,
    pid: NonZeroU16,
    codes: &[SubAckCode],
) -> Result<(), MqttError> {
    if codes.is_empty() {
        return Err(MqttError::Empty("SUBACK"));
    }
    let remaining = codes.len().saturating_add(2);
    let h = Header::new(first_byte(PacketType::SubAck), remaining)?;
    h.put(buf, remaining);
    buf.put_u16(pid.get());
    for c in codes {
        buf.put_u8(c.code());
    }
    Ok(())
}

/// Appends UNSUBSCRIBE (flags `0010`) for one or more filters. Refuses an
/// empty list and malformed filters.
pub fn encode_unsubscribe(
    buf: &mut BytesMut,
    pid: NonZeroU16,
    topics: &[&str],
) -> Result<(), MqttError> {
    if topics.is_empty() {
        return Err(MqttError::Empty("UNSUBSCRIBE"));
    }
    let mut remaining = 2usize;
    for f in topics {
        check_topic_filter(f)?;
        check_str(f, "topic filter")?;
        remaining = sum(&[remaining, 2, f.len()]);
    }
    let h = Header::new(first_byte(PacketType::Unsubscribe), remaining)?;
    h.put(buf, remaining);
    buf.put_u16(pid.get());
    for f in topics {
        put_field(buf, f.as_bytes());
    }
    Ok(())
}

/// Appends PINGREQ, which a client sends when it has been silent for its
/// keep-alive.
pub fn encode_pingreq(buf: &mut BytesMut) {
    buf.put_slice(&[first_byte(PacketType::PingReq), 0]);
}

/// Appends PINGRESP.
pub fn encode_pingresp(buf: &mut BytesMut) {
    buf.put_slice(&[first_byte(PacketType::PingResp), 0]);
}

/// Appends DISCONNECT: a clean goodbye (the broker discards the will).
pub fn encode_disconnect(buf: &mut BytesMut) {
    buf.put_slice(&[first_byte(PacketType::Disconnect), 0]);
}
