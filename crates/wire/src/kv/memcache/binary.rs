//! Owns memcached's binary protocol: a 24-byte big-endian header, then
//! extras, key and value, whose lengths the header gives.
//!
//! ```text
//! byte 0      magic (0x80 request, 0x81 response)
//!      1      opcode
//!      2..4   key length (u16)
//!      4      extras length (u8)
//!      5      data type (0x00, raw bytes)
//!      6..8   request: reserved (vbucket); response: status (u16)
//!      8..12  total body length = extras + key + value (u32)
//!     12..16  opaque, copied back into the response
//!     16..24  cas (u64)
//! ```
//!
//! Requests are encoded for Get, GetQ, GetK, GetKQ, Set, SetQ, Delete and
//! Noop (and any opcode through [`encode_request`]); a response is parsed
//! into its header fields and borrowed extras/key/value slices without
//! interpreting the body, so any opcode's response parses. Quiet opcodes get
//! no response on a miss (GetQ, GetKQ) or on success (SetQ), so a pipelined
//! client matches responses to requests by their opaque.

use bytes::{BufMut, BytesMut};

use super::{McError, MAX_VALUE_LEN};
use crate::kv::num::Scratch;
use crate::kv::step::{finish, Halt};

type Step<T> = crate::kv::step::Step<T, McError>;

/// Size of the fixed header.
pub const HEADER_LEN: usize = 24;

/// First byte of every request.
pub const REQUEST_MAGIC: u8 = 0x80;

/// First byte of every response.
pub const RESPONSE_MAGIC: u8 = 0x81;

/// Largest total body accepted in a packet: a value of
/// [`MAX_VALUE_LEN`] plus room for a key and extras.
pub const MAX_BODY_LEN: usize = MAX_VALUE_LEN + 1024;

/// The opcodes this codec has encoders for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Opcode {
    /// 0x00: get a value; a miss answers status `KEY_NOT_FOUND`.
    Get,
    /// 0x01: store a value (extras: flags, expiration).
    Set,
    /// 0x04: delete a key.
    Delete,
    /// 0x09: get, silent on a miss.
    GetQ,
    /// 0x0a: no operation; its response tells that every earlier quiet
    /// request has been answered.
    Noop,
    /// 0x0c: get, with the key in the response.
    GetK,
    /// 0x0d: GetK, silent on a miss.
    GetKQ,
    /// 0x11: set, silent on success.
    SetQ,
}

impl Opcode {
    /// The opcode byte.
    pub fn code(self) -> u8 {
        match self {
            Opcode::Get => 0x00,
            Opcode::Set => 0x01,
            Opcode::Delete => 0x04,
            Opcode::GetQ => 0x09,
            Opcode::Noop => 0x0a,
            Opcode::GetK => 0x0c,
            Opcode::GetKQ => 0x0d,
            Opcode::SetQ => 0x11,
        }
    }

    /// The opcode for a byte, if it is one this codec names.
    pub fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0x00 => Opcode::Get,
            0x01 => Opcode::Set,
            0x04 => Opcode::Delete,
            0x09 => Opcode::GetQ,
            0x0a => Opcode::Noop,
            0x0c => Opcode::GetK,
            0x0d => Opcode::GetKQ,
            0x11 => Opcode::SetQ,
            _ => return None,
        })
    }
}

/// A response's status field. A newtype, not an enum, because servers send
/// codes beyond the ones named here (authentication, vbuckets, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Status(pub u16);

impl Status {
    /// 0x0000
    pub const NO_ERROR: Status = Status(0x0000);
    /// 0x0001
    pub const KEY_NOT_FOUND: Status = Status(0x0001);
    /// 0x0002: add of a held key, or a cas mismatch.
    pub const KEY_EXISTS: Status = Status(0x0002);
    /// 0x0003
    pub const VALUE_TOO_LARGE: Status = Status(0x0003);
    /// 0x0004
    pub const INVALID_ARGUMENTS: Status = Status(0x0004);
    /// 0x0005
    pub const ITEM_NOT_STORED: Status = Status(0x0005);
    /// 0x0006: incr/decr on a non-numeric value.
    pub const NON_NUMERIC: Status = Status(0x0006);
    /// 0x0081
    pub const UNKNOWN_COMMAND: Status = Status(0x0081);
    /// 0x0082
    pub const OUT_OF_MEMORY: Status = Status(0x0082);

    /// True for [`Status::NO_ERROR`].
    pub fn is_ok(self) -> bool {
        self == Status::NO_ERROR
    }
}

/// A request packet, fields as on the wire; the body slices are borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Request<'a> {
    /// Opcode byte (see [`Opcode::code`]).
    pub opcode: u8,
    /// Reserved (vbucket id in later revisions); 0 for memcached.
    pub reserved: u16,
    /// Copied back into the response; a pipelining client's tag.
    pub opaque: u32,
    /// For Set: 0 stores unconditionally, non-zero only if the item's cas
    /// still matches.
    pub cas: u64,
    /// Command-specific extras (Set: flags and expiration, 8 bytes).
    pub extras: &'a [u8],
    /// The key.
    pub key: &'a [u8],
    /// The value.
    pub value: &'a [u8],
}

/// A response packet, fields as on the wire; the body slices borrow from
/// the read buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response<'a> {
    /// Opcode byte of the request answered.
    pub opcode: u8,
    /// Data type byte (0x00, raw bytes).
    pub data_type: u8,
    /// Outcome; on an error the value is a textual message.
    pub status: Status,
    /// The request's opaque.
    pub opaque: u32,
    /// The item's cas (Get hits, successful Set).
    pub cas: u64,
    /// Extras (Get hits: 4 bytes of flags).
    pub extras: &'a [u8],
    /// The key (GetK, GetKQ).
    pub key: &'a [u8],
    /// The value (Get hits), or an error message.
    pub value: &'a [u8],
}

impl Response<'_> {
    /// The flags of a Get hit: the extras when they are exactly 4 bytes.
    pub fn flags(&self) -> Option<u32> {
        <[u8; 4]>::try_from(self.extras)
            .ok()
            .map(u32::from_be_bytes)
    }
}

/// The four ways to get a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GetKind {
    /// Answer on hit and miss.
    Get,
    /// Answer on hit only.
    GetQ,
    /// Like `Get`, key echoed.
    GetK,
    /// Like `GetQ`, key echoed.
    GetKQ,
}

impl GetKind {
    /// The opcode this kind is sent with.
    pub fn opcode(self) -> Opcode {
        match self {
            GetKind::Get => Opcode::Get,
            GetKind::GetQ => Opcode::GetQ,
            GetKind::GetK => Opcode::GetK,
            GetKind::GetKQ => Opcode::GetKQ,
        }
    }
}

/// The fields of a Set besides key and value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SetOpts {
    /// Stored with the item, returned in a Get's extras.
    pub flags: u32,
    /// Expiration, as in the text protocol's exptime.
    pub exptime: u32,
    /// 0, or the cas the item must still have.
    pub cas: u64,
    /// Send SetQ: no response unless the set fails.
    pub quiet: bool,
}

/// Appends a get of `key` (no extras, no value).
pub fn encode_get(
    buf: &mut BytesMut,
    kind: GetKind,
    key: &[u8],
    opaque: u32,
) -> Result<(), McError> {
    encode_request(
        buf,
        &Request {
            opcode: kind.opcode().code(),
            opaque,
            key,
            ..Request::default()
        },
    )
}

/// Appends a Set (or SetQ): extras are flags then expiration.
pub fn encode_set(
    buf: &mut BytesMut,
    key: &[u8],
    value: &[u8],
    opts: SetOpts,
    opaque: u32,
) -> Result<(), McError> {
    let mut extras = [0u8; 8];
    let (flags, exptime) = extras.split_at_mut(4);
    flags.copy_from_slice(&opts.flags.to_be_bytes());
    exptime.copy_from_slice(&opts.exptime.to_be_bytes());
    let opcode = if opts.quiet {
        Opcode::SetQ
    } else {
        Opcode::Set
    };
    encode_request(
        buf,
        &Request {
            opcode: opcode.code(),
            opaque,
            cas: opts.cas,
            extras: &extras,
            key,
            value,
            ..Request::default()
        },
    )
}

/// Appends a Delete of `key`.
pub fn encode_delete(buf: &mut BytesMut, key: &[u8], opaque: u32) -> Result<(), McError> {
    encode_request(
        buf,
        &Request {
            opcode: Opcode::Delete.code(),
            opaque,
            key,
            ..Request::default()
        },
    )
}

/// Appends a Noop (header only).
pub fn encode_noop(buf: &mut BytesMut, opaque: u32) {
    // A header with an empty body always fits.
    put_header(
        buf,
        &Header {
            magic: REQUEST_MAGIC,
            opcode: Opcode::Noop.code(),
            key_len: 0,
            extras_len: 0,
            data_type: 0,
            status_or_reserved: 0,
            body_len: 0,
            opaque,
            cas: 0,
        },
    );
}

/// Appends any request packet. Fails, leaving `buf` as it was, when the key
/// is longer than 65535 bytes, the extras longer than 255, or the body
/// longer than `u32::MAX`; memcached's own limits (250-byte keys, item
/// size) are the server's to enforce.
pub fn encode_request(buf: &mut BytesMut, req: &Request<'_>) -> Result<(), McError> {
    let header = Header::for_body(
        REQUEST_MAGIC,
        req.opcode,
        req.reserved,
        req.opaque,
        req.cas,
        (req.extras, req.key, req.value),
    )?;
    put_packet(buf, &header, req.extras, req.key, req.value);
    Ok(())
}

/// Appends a response packet, for fake servers and tests; same limits as
/// [`encode_request`].
pub fn encode_response(buf: &mut BytesMut, resp: &Response<'_>) -> Result<(), McError> {
    let mut header = Header::for_body(
        RESPONSE_MAGIC,
        resp.opcode,
        resp.status.0,
        resp.opaque,
        resp.cas,
        (resp.extras, resp.key, resp.value),
    )?;
    header.data_type = resp.data_type;
    put_packet(buf, &header, resp.extras, resp.key, resp.value);
    Ok(())
}

/// Parses the response packet at the front of `buf`.
///
/// Returns `Ok(Some((response, n)))` when the first `n` bytes are one whole
/// packet, `Ok(None)` when more are needed, and an error as soon as the
/// first byte is not [`RESPONSE_MAGIC`] or the header's lengths are
/// impossible (extras plus key beyond the body, body over
/// [`MAX_BODY_LEN`]) — checked on the header alone, before the body
/// arrives.
pub fn parse_response(buf: &[u8]) -> Result<Option<(Response<'_>, usize)>, McError> {
    finish(packet(buf, RESPONSE_MAGIC).map(|(h, body, n)| {
        (
            Response {
                opcode: h.opcode,
                data_type: h.data_type,
                status: Status(h.status_or_reserved),
                opaque: h.opaque,
                cas: h.cas,
                extras: body.0,
                key: body.1,
                value: body.2,
            },
            n,
        )
    }))
}

/// Parses the request packet at the front of `buf` (for fake servers and
/// tests), with the same rules as [`parse_response`] but magic
/// [`REQUEST_MAGIC`].
pub fn parse_request(buf: &[u8]) -> Result<Option<(Request<'_>, usize)>, McError> {
    finish(packet(buf, REQUEST_MAGIC).map(|(h, body, n)| {
        (
            Request {
                opcode: h.opcode,
                reserved: h.status_or_reserved,
                opaque: h.opaque,
                cas: h.cas,
                extras: body.0,
                key: body.1,
                value: body.2,
            },
            n,
        )
    }))
}

/// The header's fields, lengths widened.
struct Header {
    magic: u8,
    opcode: u8,
    key_len: u16,
    extras_len: u8,
    data_type: u8,
    status_or_reserved: u16,
    body_len: u32,
    opaque: u32,
    cas: u64,
}

type Body<'a> = (&'a [u8], &'a [u8], &'a [u8]);

impl Header {
    /// A header for this body, or the field that cannot hold its length.
    fn for_body(
        magic: u8,
        opcode: u8,
        status_or_reserved: u16,
        opaque: u32,
        cas: u64,
        (extras, key, value): Body<'_>,
    ) -> Result<Self, McError> {
        let too_large = |what, len, max| McError::TooLarge { what, len, max };
        let key_len = u16::try_from(key.len())
            .map_err(|_| too_large("key", key.len(), usize::from(u16::MAX)))?;
        let extras_len = u8::try_from(extras.len())
            .map_err(|_| too_large("extras", extras.len(), usize::from(u8::MAX)))?;
        let total = extras
            .len()
            .saturating_add(key.len())
            .saturating_add(value.len());
        let body_len =
            u32::try_from(total).map_err(|_| too_large("body", total, u32::MAX as usize))?;
        Ok(Header {
            magic,
            opcode,
            key_len,
            extras_len,
            data_type: 0,
            status_or_reserved,
            body_len,
            opaque,
            cas,
        })
    }
}

fn put_header(buf: &mut BytesMut, h: &Header) {
    Scratch::<HEADER_LEN>::new()
        .push(&[h.magic, h.opcode])
        .push(&h.key_len.to_be_bytes())
        .push(&[h.extras_len, h.data_type])
        .push(&h.status_or_reserved.to_be_bytes())
        .push(&h.body_len.to_be_bytes())
        .push(&h.opaque.to_be_bytes())
        .push(&h.cas.to_be_bytes())
        .put_into(buf);
}

fn put_packet(buf: &mut BytesMut, h: &Header, extras: &[u8], key: &[u8], value: &[u8]) {
    put_header(buf, h);
    for part in [extras, key, value] {
        if !part.is_empty() {
            buf.put_slice(part);
        }
    }
}

/// Reads a header with `magic` and slices its body; returns the header,
/// (extras, key, value) and the packet's length.
fn packet(buf: &[u8], magic: u8) -> Step<(Header, Body<'_>, usize)> {
    match buf.first() {
        None => return Err(Halt::Incomplete),
        Some(&m) if m != magic => return Err(McError::BadMagic(m).into()),
        Some(_) => {}
    }
    let (raw, body) = buf
        .split_first_chunk::<HEADER_LEN>()
        .ok_or(Halt::Incomplete)?;
    let h = parse_header(raw);
    let body_len = h.body_len as usize;
    let extras_len = usize::from(h.extras_len);
    let key_len = usize::from(h.key_len);
    if body_len > MAX_BODY_LEN {
        return Err(McError::TooLarge {
            what: "body",
            len: body_len,
            max: MAX_BODY_LEN,
        }
        .into());
    }
    // Both at most 65535 + 255, so the sum cannot overflow.
    if extras_len.saturating_add(key_len) > body_len {
        return Err(McError::BadLength {
            extras: extras_len,
            key: key_len,
            body: body_len,
        }
        .into());
    }
    let body = body.get(..body_len).ok_or(Halt::Incomplete)?;
    let (extras, rest) = body.split_at_checked(extras_len).ok_or(Halt::Incomplete)?;
    let (key, value) = rest.split_at_checked(key_len).ok_or(Halt::Incomplete)?;
    Ok((h, (extras, key, value), HEADER_LEN.saturating_add(body_len)))
}

fn parse_header(raw: &[u8; HEADER_LEN]) -> Header {
    let [magic, opcode, k0, k1, extras_len, data_type, s0, s1, b0, b1, b2, b3, o0, o1, o2, o3, c0, c1, c2, c3, c4, c5, c6, c7] =
        *raw;
    Header {
        magic,
        opcode,
        key_len: u16::from_be_bytes([k0, k1]),
        extras_len,
        data_type,
        status_or_reserved: u16::from_be_bytes([s0, s1]),
        body_len: u32::from_be_bytes([b0, b1, b2, b3]),
        opaque: u32::from_be_bytes([o0, o1, o2, o3]),
        cas: u64::from_be_bytes([c0, c1, c2, c3, c4, c5, c6, c7]),
    }
}
