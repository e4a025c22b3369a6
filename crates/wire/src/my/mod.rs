//! The MySQL client/server protocol as MariaDB speaks it, for the hot path
//! of a load generator: the v10 greeting and the login with
//! `mysql_native_password` ([`login`]), prepared statements
//! (`COM_STMT_PREPARE`, `COM_STMT_EXECUTE` with binary parameters:
//! [`command`]) and what comes back (OK, ERR, binary result sets, several of
//! them for a procedure's `CALL`: [`response`]).
//!
//! Every message is a packet: a 3-byte little-endian payload length, a
//! 1-byte sequence number, the payload. Payloads of 2^24 - 1 bytes or more
//! continue in a next packet; this client never asks for rows that large, so
//! such a packet is refused as [`MyError::TooLong`] rather than buffered
//! without bound. The client asks for neither `CLIENT_DEPRECATE_EOF` nor
//! metadata caching, so a result set always reads: column count, column
//! definitions, EOF, rows, EOF — and a binary row (first byte 0x00) never
//! looks like an EOF (0xFE) or an ERR (0xFF).
//!
//! ```
//! use bytes::BytesMut;
//! use loadrig_wire::my::{self, command::{self, Param}};
//!
//! let mut out = BytesMut::new();
//! command::execute(&mut out, 7, &[Param::Int(5)]);
//! let (packet, body) = my::packet(&out).unwrap().unwrap();
//! assert_eq!((packet.seq, packet.size), (0, out.len()));
//! assert_eq!(body.first(), Some(&0x17)); // COM_STMT_EXECUTE
//! assert_eq!(my::packet(&out[..6]).unwrap(), None); // incomplete
//! ```

pub mod command;
pub mod login;
pub mod response;

use bytes::{BufMut, BytesMut};
use thiserror::Error;

/// Capability flags this client may ask for (the server's greeting says
/// which it has; the login asks for the intersection).
pub mod caps {
    /// Also "CLIENT_MYSQL": a MySQL-style client, not a MariaDB-extended one.
    pub const LONG_PASSWORD: u32 = 1;
    /// The login names the database.
    pub const CONNECT_WITH_DB: u32 = 8;
    /// 4.1 protocol: OK/ERR with status flags and SQLSTATE.
    pub const PROTOCOL_41: u32 = 0x200;
    /// Status flags say whether a transaction is open.
    pub const TRANSACTIONS: u32 = 0x2000;
    /// The 20-byte scramble, the auth data with its length in front.
    pub const SECURE_CONNECTION: u32 = 0x8000;
    /// Several result sets per command (a procedure's CALL needs it).
    pub const MULTI_RESULTS: u32 = 0x2_0000;
    /// Several result sets from a prepared statement (a prepared CALL).
    pub const PS_MULTI_RESULTS: u32 = 0x4_0000;
    /// The greeting and login name the authentication plugin.
    pub const PLUGIN_AUTH: u32 = 0x8_0000;
    /// What this client needs; a server without them is refused.
    pub const NEEDED: u32 = PROTOCOL_41 | SECURE_CONNECTION | MULTI_RESULTS | PS_MULTI_RESULTS;
    /// What this client asks for when the server has it.
    pub const WANTED: u32 = LONG_PASSWORD | CONNECT_WITH_DB | TRANSACTIONS | PLUGIN_AUTH | NEEDED;
}

/// Server status flag: another result set follows this one (a CALL's
/// result sets are followed by the OK of the CALL itself).
pub const MORE_RESULTS_EXISTS: u16 = 0x0008;

/// The largest payload of one packet; one this long would continue in the
/// next packet, which this client refuses.
pub const MAX_PAYLOAD: usize = 0xFF_FFFF;

/// What can be wrong with bytes from a server. Incomplete input is never an
/// error (`Ok(None)`); after any error the connection's stream cannot be
/// trusted and is dropped.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MyError {
    /// A packet of 2^24 - 1 bytes or more (split packets are not read).
    #[error("a packet of 16 MiB or more")]
    TooLong,
    /// A payload shorter than its fields, or a field that cannot be.
    #[error("malformed {0}")]
    Malformed(&'static str),
    /// The greeting is not protocol version 10.
    #[error("not a MySQL protocol v10 greeting")]
    NotV10,
    /// The server lacks a capability this client needs.
    #[error("the server lacks capability {0:#x}")]
    Capability(u32),
    /// The server asks for an authentication plugin this client has not.
    #[error("authentication plugin {0} is not supported")]
    Plugin(String),
}

/// One packet at the front of a buffer: its sequence number and its size
/// with the 4-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet {
    /// The sequence number (0 for the first packet of a command).
    pub seq: u8,
    /// Header and payload: the bytes to consume.
    pub size: usize,
}

/// The packet at the front of `buf` and its payload, `None` while it is
/// incomplete.
pub fn packet(buf: &[u8]) -> Result<Option<(Packet, &[u8])>, MyError> {
    let Some(&[a, b, c, seq]) = buf.get(..4) else {
        return Ok(None);
    };
    let len = u32::from_le_bytes([a, b, c, 0]) as usize;
    if len >= MAX_PAYLOAD {
        return Err(MyError::TooLong);
    }
    let size = len.saturating_add(4);
    Ok(buf
        .get(4..size)
        .map(|payload| (Packet { seq, size }, payload)))
}

/// Starts a packet: a header to be patched by [`end_packet`]; returns where
/// it starts.
pub(crate) fn begin_packet(out: &mut BytesMut) -> usize {
    let start = out.len();
    out.put_u32(0);
    start
}

/// Writes the header of the packet begun at `start` (payload up to the end
/// of `out`), with sequence number `seq`.
pub(crate) fn end_packet(out: &mut BytesMut, start: usize, seq: u8) {
    let len = out.len().saturating_sub(start).saturating_sub(4);
    let len = u32::try_from(len.min(MAX_PAYLOAD)).unwrap_or(0);
    let [a, b, c, _] = len.to_le_bytes();
    if let Some(h) = out.get_mut(start..start.saturating_add(4)) {
        h.copy_from_slice(&[a, b, c, seq]);
    }
}

/// A length-encoded integer.
pub(crate) fn put_lenenc(out: &mut BytesMut, n: u64) {
    match n {
        0..=0xFA => out.put_u8(n as u8),
        0xFB..=0xFFFF => {
            out.put_u8(0xFC);
            out.put_u16_le(n as u16);
        }
        0x1_0000..=0xFF_FFFF => {
            out.put_u8(0xFD);
            let [a, b, c, ..] = n.to_le_bytes();
            out.put_slice(&[a, b, c]);
        }
        _ => {
            out.put_u8(0xFE);
            out.put_u64_le(n);
        }
    }
}

/// A bounds-checked reader over one payload.
pub(crate) struct Fields<'a> {
    rest: &'a [u8],
    what: &'static str,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(payload: &'a [u8], what: &'static str) -> Self {
        Fields {
            rest: payload,
            what,
        }
    }

    fn bad(&self) -> MyError {
        MyError::Malformed(self.what)
    }

    pub(crate) fn rest(&self) -> &'a [u8] {
        self.rest
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], MyError> {
        match (self.rest.get(..n), self.rest.get(n..)) {
            (Some(head), Some(tail)) => {
                self.rest = tail;
                Ok(head)
            }
            _ => Err(self.bad()),
        }
    }

    pub(crate) fn u8(&mut self) -> Result<u8, MyError> {
        Ok(self.take(1)?.first().copied().unwrap_or(0))
    }

    pub(crate) fn u16(&mut self) -> Result<u16, MyError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes(b.try_into().unwrap_or_default()))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, MyError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes(b.try_into().unwrap_or_default()))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, MyError> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().unwrap_or_default()))
    }

    /// A NUL-terminated string (the NUL consumed, not returned).
    pub(crate) fn cstr(&mut self) -> Result<&'a [u8], MyError> {
        let end = self
            .rest
            .iter()
            .position(|&b| b == 0)
            .ok_or(MyError::Malformed(self.what))?;
        let s = self.take(end)?;
        self.take(1)?;
        Ok(s)
    }

    /// A length-encoded integer; `None` for 0xFB (NULL in text rows).
    pub(crate) fn lenenc(&mut self) -> Result<Option<u64>, MyError> {
        Ok(Some(match self.u8()? {
            0xFB => return Ok(None),
            0xFC => u64::from(self.u16()?),
            0xFD => {
                let b = self.take(3)?;
                let mut le = [0u8; 8];
                le.iter_mut().zip(b).for_each(|(d, s)| *d = *s);
                u64::from_le_bytes(le)
            }
            0xFE => self.u64()?,
            0xFF => return Err(self.bad()),
            n => u64::from(n),
        }))
    }

    /// A length-encoded string.
    pub(crate) fn lenenc_bytes(&mut self) -> Result<&'a [u8], MyError> {
        let n = self.lenenc()?.ok_or(MyError::Malformed(self.what))?;
        let n = usize::try_from(n).map_err(|_| self.bad())?;
        self.take(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenenc_round_trips_at_each_width() {
        for n in [
            0u64,
            250,
            251,
            0xFFFF,
            0x1_0000,
            0xFF_FFFF,
            0x100_0000,
            u64::MAX,
        ] {
            let mut out = BytesMut::new();
            put_lenenc(&mut out, n);
            let mut f = Fields::new(&out, "test");
            assert_eq!(f.lenenc().unwrap(), Some(n));
            assert!(f.rest().is_empty());
            // Every proper prefix is too short, never a panic.
            for cut in 0..out.len() {
                assert!(Fields::new(&out[..cut], "test").lenenc().is_err());
            }
        }
    }

    #[test]
    fn packets_are_framed_and_bounded() {
        let mut out = BytesMut::new();
        let start = begin_packet(&mut out);
        out.put_slice(b"abc");
        end_packet(&mut out, start, 3);
        assert_eq!(&out[..], b"\x03\x00\x00\x03abc");
        for cut in 0..out.len() {
            assert_eq!(packet(&out[..cut]).unwrap(), None);
        }
        let (p, body) = packet(&out).unwrap().unwrap();
        assert_eq!((p, body), (Packet { seq: 3, size: 7 }, &b"abc"[..]));
        assert_eq!(packet(b"\xff\xff\xff\x00"), Err(MyError::TooLong));
    }
}
