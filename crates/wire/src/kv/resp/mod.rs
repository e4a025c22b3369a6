//! RESP2, the Redis protocol: commands out (arrays of bulk strings), replies
//! in (simple strings, errors, integers, bulk strings, arrays).
//!
//! Encoders append to a caller-owned [`BytesMut`](bytes::BytesMut) and
//! cannot fail: every byte string is representable as a bulk string.
//! [`parse_reply`] reads one reply from the front of a read buffer and
//! borrows from it; [`reply_len`] is the cheaper "is a whole reply here"
//! check. Neither allocates, neither recurses: nested arrays are walked with
//! a fixed stack of [`MAX_DEPTH`] counters.
//!
//! RESP3 types (`_`, `,`, `#`, `%`, `~`, `>`, ...) are refused with
//! [`RespError::UnknownType`]: a connection that never sends `HELLO 3` never
//! receives them.
//!
//! ```
//! use bytes::BytesMut;
//! use loadrig_wire::kv::resp::{self, Reply};
//!
//! let mut out = BytesMut::new();
//! resp::encode_cmd2(&mut out, b"GET", b"k1");
//! assert_eq!(&out[..], b"*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n");
//!
//! let input = b"$5\r\nhello\r\n+OK\r\n";
//! let (reply, used) = resp::parse_reply(input).unwrap().unwrap();
//! assert_eq!((reply, used), (Reply::Bulk(Some(b"hello")), 11));
//! assert_eq!(resp::parse_reply(&input[used..]).unwrap(), Some((Reply::Simple(b"OK"), 5)));
//! assert_eq!(resp::parse_reply(b"$5\r\nhel").unwrap(), None); // incomplete
//! ```

mod encode;
mod parse;
pub mod slot;

use thiserror::Error;

pub use encode::{
    encode_cmd1, encode_cmd2, encode_cmd3, encode_cmd4, encode_cmd5, encode_command, Arg,
};
pub use parse::{parse_reply, reply_len};

/// Largest bulk string accepted in a reply: Redis's default
/// `proto-max-bulk-len` (512 MiB). A longer declared length means a corrupt
/// stream (or a server configured beyond what a load generator should buffer).
pub const MAX_BULK_LEN: usize = 512 * 1024 * 1024;

/// Largest array count accepted in a reply (2^20). A sanity bound, not a
/// protocol constant: `LRANGE` or `KEYS` can legitimately return more, which
/// a load generator has no reason to ask for.
pub const MAX_ARRAY_LEN: usize = 1024 * 1024;

/// Deepest nesting of arrays accepted in a reply (the outermost array is
/// depth 1).
pub const MAX_DEPTH: usize = 64;

/// Longest simple-string or error line accepted, CRLF excluded (1 MiB).
/// Without a bound, a line that never ends would keep a reader buffering.
pub const MAX_LINE_LEN: usize = 1024 * 1024;

/// What can be wrong with reply bytes. An incomplete buffer is never an
/// error (the parsers return `Ok(None)`); after any error the connection's
/// byte stream is out of step and should be closed.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum RespError {
    /// The first byte of a value is not one of `+ - : $ *`.
    #[error("unknown RESP type byte 0x{0:02x}")]
    UnknownType(u8),
    /// An integer or a length is not a decimal number (or `-1` for a null
    /// bulk string or array), or overflows its type.
    #[error("malformed number in {0}")]
    BadNumber(&'static str),
    /// A CR not followed by LF, a bare LF, or a bulk string not followed by
    /// CRLF.
    #[error("malformed line ending in {0}")]
    BadLineEnd(&'static str),
    /// A length, count or line over this codec's sanity limits.
    #[error("{what} too large: {len} (max {max})")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// Its declared (or scanned) size.
        len: usize,
        /// The limit ([`MAX_BULK_LEN`], [`MAX_ARRAY_LEN`], [`MAX_LINE_LEN`]).
        max: usize,
    },
    /// Arrays nested deeper than [`MAX_DEPTH`].
    #[error("arrays nested deeper than {0}")]
    TooDeep(usize),
}

/// The five RESP2 reply types, for counting replies by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `+`
    Simple,
    /// `-`
    Error,
    /// `:`
    Integer,
    /// `$`
    Bulk,
    /// `*`
    Array,
}

/// One reply, borrowing from the read buffer it was parsed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply<'a> {
    /// `+OK\r\n`: the text between `+` and CRLF.
    Simple(&'a [u8]),
    /// `-ERR ...\r\n`: the text between `-` and CRLF, error code first.
    Error(&'a [u8]),
    /// `:42\r\n`
    Integer(i64),
    /// `$3\r\nabc\r\n`, or `None` for the null bulk string `$-1\r\n` (GET of
    /// a missing key).
    Bulk(Option<&'a [u8]>),
    /// `*2\r\n...`, or `None` for the null array `*-1\r\n`.
    Array(Option<Array<'a>>),
}

impl<'a> Reply<'a> {
    /// Which of the five types this is.
    pub fn kind(&self) -> Kind {
        match self {
            Reply::Simple(_) => Kind::Simple,
            Reply::Error(_) => Kind::Error,
            Reply::Integer(_) => Kind::Integer,
            Reply::Bulk(_) => Kind::Bulk,
            Reply::Array(_) => Kind::Array,
        }
    }

    /// True for an error reply (`-...`). Errors nested in an array (as
    /// `EXEC` can return) are not looked for.
    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }

    /// The bytes of a simple string, an error or a non-null bulk string.
    pub fn as_bytes(&self) -> Option<&'a [u8]> {
        match *self {
            Reply::Simple(b) | Reply::Error(b) | Reply::Bulk(Some(b)) => Some(b),
            _ => None,
        }
    }

    /// The value of an integer reply.
    pub fn as_integer(&self) -> Option<i64> {
        match *self {
            Reply::Integer(n) => Some(n),
            _ => None,
        }
    }
}

/// A non-null array reply: its element count and the bytes of its elements,
/// already checked to be `len()` whole, well-formed replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Array<'a> {
    len: usize,
    body: &'a [u8],
}

impl<'a> Array<'a> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for `*0\r\n`.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements' wire bytes, back to back.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.body
    }

    /// The elements in order; nested arrays come out as [`Reply::Array`]
    /// and are iterated the same way. Never allocates.
    pub fn iter(&self) -> Elements<'a> {
        Elements {
            rest: self.body,
            remaining: self.len,
        }
    }
}

impl<'a> IntoIterator for Array<'a> {
    type Item = Reply<'a>;
    type IntoIter = Elements<'a>;

    fn into_iter(self) -> Elements<'a> {
        self.iter()
    }
}

/// Iterator over an [`Array`]'s elements.
#[derive(Debug, Clone)]
pub struct Elements<'a> {
    rest: &'a [u8],
    remaining: usize,
}

impl<'a> Iterator for Elements<'a> {
    type Item = Reply<'a>;

    fn next(&mut self) -> Option<Reply<'a>> {
        if self.remaining == 0 {
            return None;
        }
        // The body was validated when the array was parsed, so this always
        // succeeds; should it not, the iterator ends rather than panics.
        match parse_reply(self.rest) {
            Ok(Some((reply, used))) => {
                self.rest = self.rest.get(used..).unwrap_or_default();
                self.remaining = self.remaining.saturating_sub(1);
                Some(reply)
            }
            _ => {
                self.remaining = 0;
                None
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Elements<'_> {}

impl std::iter::FusedIterator for Elements<'_> {}
