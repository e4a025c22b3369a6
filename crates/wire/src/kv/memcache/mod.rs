//! memcached's two protocols: [`text`] (protocol.txt: command lines and
//! data blocks) and [`binary`] (the 24-byte header protocol), sharing one
//! error type and the item limits.
//!
//! As with RESP, an incomplete buffer is `Ok(None)`, never an error; an
//! error means the connection's byte stream is out of step.

pub mod binary;
pub mod text;

use thiserror::Error;

/// Longest key memcached accepts (protocol.txt, "Keys").
pub const MAX_KEY_LEN: usize = 250;

/// Largest value accepted in a response (1 GiB): memcached's largest
/// configurable item size (`-I 1024m`); the default is 1 MiB. A sanity bound
/// against corrupt lengths, not a protocol constant.
pub const MAX_VALUE_LEN: usize = 1024 * 1024 * 1024;

/// What can be wrong with a memcached request to encode or response bytes
/// to parse.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum McError {
    /// A text-protocol key that is empty or longer than [`MAX_KEY_LEN`].
    #[error("key length {0} is outside 1..={MAX_KEY_LEN}")]
    KeyLength(usize),
    /// A text-protocol key containing whitespace or a control character,
    /// which would break the command line apart.
    #[error("key contains byte 0x{0:02x} (whitespace or control character)")]
    KeyByte(u8),
    /// A multi-key get with no keys.
    #[error("a get needs at least one key")]
    NoKeys,
    /// A text response line that is none of the responses this codec knows.
    #[error("unknown response line")]
    UnknownResponse,
    /// A text response line of a known kind whose fields do not parse (a
    /// `VALUE` line, a number), or a line other than `VALUE`/`END` inside a
    /// retrieval response.
    #[error("malformed {0}")]
    Malformed(&'static str),
    /// A CR not followed by LF, a bare LF, or a data block not followed by
    /// CRLF.
    #[error("malformed line ending in {0}")]
    BadLineEnd(&'static str),
    /// A length over a limit: a line, a value or a body on input; a key,
    /// extras or body that a binary header field cannot hold on output.
    #[error("{what} too large: {len} (max {max})")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// Its size.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A binary packet whose first byte is not the expected magic (0x80 for
    /// requests, 0x81 for responses).
    #[error("bad magic byte 0x{0:02x}")]
    BadMagic(u8),
    /// A binary header whose extras and key lengths add up to more than its
    /// total body length.
    #[error("extras ({extras}) and key ({key}) longer than body ({body})")]
    BadLength {
        /// Extras length from the header.
        extras: usize,
        /// Key length from the header.
        key: usize,
        /// Total body length from the header.
        body: usize,
    },
}
