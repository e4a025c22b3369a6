//! Owns command encoding: a RESP2 array of bulk strings,
//! `*<n>\r\n` then `$<len>\r\n<bytes>\r\n` per argument, written straight
//! into the caller's buffer.
//!
//! [`encode_command`] takes a slice of byte strings; `encode_cmd1` ..
//! `encode_cmd5` take the command name and up to four [`Arg`]s by value, so
//! a hot loop neither builds a slice nor formats integers into a `String`.

use bytes::{BufMut, BytesMut};

use crate::num::{put_len, Decimal, MAX_DIGITS};

/// Bytes of a bulk string's framing around the payload, at most:
/// `$`, up to 20 length digits, CRLF, and the closing CRLF.
const BULK_OVERHEAD: usize = 1 + MAX_DIGITS + 2 + 2;

/// One command argument, written as a bulk string. Byte strings are written
/// as they are; integers in decimal (Redis parses `INCRBY k 5` or
/// `EXPIRE k 10` from that), formatted on the stack.
pub trait Arg {
    /// Upper bound of the payload's length, to reserve space once.
    fn size_hint(&self) -> usize;
    /// Appends `$<len>\r\n<payload>\r\n`.
    fn put_bulk(self, buf: &mut BytesMut);
}

fn put_bulk_bytes(buf: &mut BytesMut, b: &[u8]) {
    buf.put_u8(b'$');
    put_len(buf, b.len());
    buf.put_slice(b"\r\n");
    buf.put_slice(b);
    buf.put_slice(b"\r\n");
}

impl Arg for &[u8] {
    fn size_hint(&self) -> usize {
        self.len()
    }
    fn put_bulk(self, buf: &mut BytesMut) {
        put_bulk_bytes(buf, self);
    }
}

impl<const N: usize> Arg for &[u8; N] {
    fn size_hint(&self) -> usize {
        N
    }
    fn put_bulk(self, buf: &mut BytesMut) {
        put_bulk_bytes(buf, self);
    }
}

impl Arg for &str {
    fn size_hint(&self) -> usize {
        self.len()
    }
    fn put_bulk(self, buf: &mut BytesMut) {
        put_bulk_bytes(buf, self.as_bytes());
    }
}

impl Arg for &Vec<u8> {
    fn size_hint(&self) -> usize {
        self.len()
    }
    fn put_bulk(self, buf: &mut BytesMut) {
        put_bulk_bytes(buf, self);
    }
}

impl Arg for &bytes::Bytes {
    fn size_hint(&self) -> usize {
        self.len()
    }
    fn put_bulk(self, buf: &mut BytesMut) {
        put_bulk_bytes(buf, self);
    }
}

impl Arg for u64 {
    fn size_hint(&self) -> usize {
        MAX_DIGITS
    }
    fn put_bulk(self, buf: &mut BytesMut) {
        put_bulk_bytes(buf, Decimal::new(self).as_bytes());
    }
}

impl Arg for i64 {
    fn size_hint(&self) -> usize {
        MAX_DIGITS.saturating_add(1)
    }
    fn put_bulk(self, buf: &mut BytesMut) {
        let digits = Decimal::new(self.unsigned_abs());
        let digits = digits.as_bytes();
        if self < 0 {
            buf.put_u8(b'$');
            put_len(buf, digits.len().saturating_add(1));
            buf.put_slice(b"\r\n-");
            buf.put_slice(digits);
            buf.put_slice(b"\r\n");
        } else {
            put_bulk_bytes(buf, digits);
        }
    }
}

macro_rules! int_arg {
    ($($t:ty => $wide:ty),*) => {$(
        impl Arg for $t {
            fn size_hint(&self) -> usize {
                <$wide as Arg>::size_hint(&<$wide>::from(*self))
            }
            fn put_bulk(self, buf: &mut BytesMut) {
                <$wide>::from(self).put_bulk(buf);
            }
        }
    )*};
}

int_arg!(u32 => u64, i32 => i64, u16 => u64, u8 => u64);

impl Arg for usize {
    fn size_hint(&self) -> usize {
        MAX_DIGITS
    }
    fn put_bulk(self, buf: &mut BytesMut) {
        (self as u64).put_bulk(buf);
    }
}

/// Appends one command given as its parts, the command name first, e.g.
/// `&[b"SET", key, value]`.
///
/// An empty slice writes `*0\r\n`, which is valid RESP but no command; the
/// server ignores it.
pub fn encode_command(buf: &mut BytesMut, parts: &[&[u8]]) {
    let payload = parts
        .iter()
        .fold(0usize, |acc, p| acc.saturating_add(p.len()));
    buf.reserve(
        payload
            .saturating_add(parts.len().saturating_mul(BULK_OVERHEAD))
            .saturating_add(BULK_OVERHEAD),
    );
    buf.put_u8(b'*');
    put_len(buf, parts.len());
    buf.put_slice(b"\r\n");
    for p in parts {
        put_bulk_bytes(buf, p);
    }
}

macro_rules! encode_cmd_n {
    ($(#[$doc:meta])* $name:ident, $header:literal, $($arg:ident: $ty:ident),*) => {
        $(#[$doc])*
        pub fn $name<$($ty: Arg),*>(buf: &mut BytesMut, cmd: &[u8], $($arg: $ty),*) {
            let payload = cmd.len()$(.saturating_add($arg.size_hint()))*;
            buf.reserve(payload.saturating_add(BULK_OVERHEAD.saturating_mul(6)));
            buf.put_slice($header);
            put_bulk_bytes(buf, cmd);
            $($arg.put_bulk(buf);)*
        }
    };
}

encode_cmd_n!(
    /// Appends a command of one part, e.g. `encode_cmd1(buf, b"PING")`.
    encode_cmd1, b"*1\r\n",
);
encode_cmd_n!(
    /// Appends a command of two parts, e.g. `encode_cmd2(buf, b"GET", key)`.
    encode_cmd2, b"*2\r\n", a1: A1
);
encode_cmd_n!(
    /// Appends a command of three parts, e.g.
    /// `encode_cmd3(buf, b"SET", key, value)` or
    /// `encode_cmd3(buf, b"INCRBY", key, 5i64)`.
    encode_cmd3, b"*3\r\n", a1: A1, a2: A2
);
encode_cmd_n!(
    /// Appends a command of four parts, e.g.
    /// `encode_cmd4(buf, b"SETEX", key, 10u32, value)`.
    encode_cmd4, b"*4\r\n", a1: A1, a2: A2, a3: A3
);
encode_cmd_n!(
    /// Appends a command of five parts, e.g.
    /// `encode_cmd5(buf, b"SET", key, value, b"EX", 10u32)`.
    encode_cmd5, b"*5\r\n", a1: A1, a2: A2, a3: A3, a4: A4
);
