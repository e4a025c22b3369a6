//! Owns command encoding: a RESP2 array of bulk strings,
//! `*<n>\r\n` then `$<len>\r\n<bytes>\r\n` per argument, written straight
//! into the caller's buffer. A command's exact size is computed first, so
//! the buffer grows once and every piece is written in place.
//!
//! [`encode_command`] takes a slice of byte strings; `encode_cmd1` ..
//! `encode_cmd5` take the command name and up to four [`Arg`]s by value, so
//! a hot loop neither builds a slice nor formats integers into a `String`.

use bytes::BytesMut;

use crate::kv::num::{append_exact, decimal_len, Scratch, MAX_DIGITS};

/// One command argument, written as a bulk string. Byte strings are written
/// as they are; integers in decimal (Redis parses `INCRBY k 5` or
/// `EXPIRE k 10` from that), formatted on the stack.
pub trait Arg {
    /// Calls `f` with the argument's bytes.
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R;
}

impl Arg for &[u8] {
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(self)
    }
}

impl<const N: usize> Arg for &[u8; N] {
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(self.as_slice())
    }
}

impl Arg for &str {
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(self.as_bytes())
    }
}

impl Arg for &Vec<u8> {
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(self)
    }
}

impl Arg for &bytes::Bytes {
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(self)
    }
}

impl Arg for u64 {
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        let mut s = Scratch::<MAX_DIGITS>::new();
        f(s.push_u64(*self).as_bytes())
    }
}

impl Arg for i64 {
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        let mut s = Scratch::<{ MAX_DIGITS + 1 }>::new();
        if *self < 0 {
            s.push(b"-");
        }
        f(s.push_u64(self.unsigned_abs()).as_bytes())
    }
}

macro_rules! int_arg {
    ($($t:ty => $wide:ty),*) => {$(
        impl Arg for $t {
            fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
                <$wide>::from(*self).with_bytes(f)
            }
        }
    )*};
}

int_arg!(u32 => u64, i32 => i64, u16 => u64, u8 => u64);

impl Arg for usize {
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        (*self as u64).with_bytes(f)
    }
}

/// Bytes of `parts` as a RESP array of bulk strings.
#[inline]
fn command_len(parts: &[&[u8]]) -> usize {
    // "*" n CRLF, then per part "$" len CRLF payload CRLF.
    parts.iter().fold(
        3usize.saturating_add(decimal_len(parts.len() as u64)),
        |acc, p| {
            acc.saturating_add(5)
                .saturating_add(decimal_len(p.len() as u64))
                .saturating_add(p.len())
        },
    )
}

/// Appends `parts` as one command, growing `buf` once.
#[inline]
fn write_command(buf: &mut BytesMut, parts: &[&[u8]]) {
    append_exact(buf, command_len(parts), |c| {
        c.put(b"*").put_len(parts.len()).put(b"\r\n");
        for p in parts {
            c.put(b"$")
                .put_len(p.len())
                .put(b"\r\n")
                .put(p)
                .put(b"\r\n");
        }
    });
}

/// Appends one command given as its parts, the command name first, e.g.
/// `&[b"SET", key, value]`.
///
/// An empty slice writes `*0\r\n`, which is valid RESP but no command; the
/// server ignores it.
pub fn encode_command(buf: &mut BytesMut, parts: &[&[u8]]) {
    write_command(buf, parts);
}

/// Gathers the bytes of every argument (integers formatted on the stack),
/// then writes the command once.
macro_rules! with_bytes_of {
    ($buf:ident, [$($done:ident),*]) => {
        write_command($buf, &[$($done),*])
    };
    ($buf:ident, [$($done:ident),*] $arg:ident $($rest:ident)*) => {
        $arg.with_bytes(|$arg| with_bytes_of!($buf, [$($done,)* $arg] $($rest)*))
    };
}

macro_rules! encode_cmd_n {
    ($(#[$doc:meta])* $name:ident, $($arg:ident: $ty:ident),*) => {
        $(#[$doc])*
        pub fn $name<$($ty: Arg),*>(buf: &mut BytesMut, cmd: &[u8], $($arg: $ty),*) {
            with_bytes_of!(buf, [cmd] $($arg)*)
        }
    };
}

encode_cmd_n!(
    /// Appends a command of one part, e.g. `encode_cmd1(buf, b"PING")`.
    encode_cmd1,
);
encode_cmd_n!(
    /// Appends a command of two parts, e.g. `encode_cmd2(buf, b"GET", key)`.
    encode_cmd2, a1: A1
);
encode_cmd_n!(
    /// Appends a command of three parts, e.g.
    /// `encode_cmd3(buf, b"SET", key, value)` or
    /// `encode_cmd3(buf, b"INCRBY", key, 5i64)`.
    encode_cmd3, a1: A1, a2: A2
);
encode_cmd_n!(
    /// Appends a command of four parts, e.g.
    /// `encode_cmd4(buf, b"SETEX", key, 10u32, value)`.
    encode_cmd4, a1: A1, a2: A2, a3: A3
);
encode_cmd_n!(
    /// Appends a command of five parts, e.g.
    /// `encode_cmd5(buf, b"SET", key, value, b"EX", 10u32)`.
    encode_cmd5, a1: A1, a2: A2, a3: A3, a4: A4
);
