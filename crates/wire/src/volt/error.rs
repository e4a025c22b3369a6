//! Owns the crate's single error type, shared by every encoder and decoder.
//!
//! An incomplete *buffer* is never an error (see [`crate::volt::frame_len`], which
//! returns `Ok(None)`); these errors mean the bytes of a whole frame are
//! malformed, or that a value cannot be represented on the wire.

use thiserror::Error;

/// Everything that can go wrong while encoding or decoding wire bytes.
///
/// Decoders return the first problem they meet and never panic; after any
/// error the connection's byte stream should be considered unusable.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    /// A field claimed more bytes than the frame (or the enclosing
    /// length-prefixed region) still holds.
    #[error("truncated {what}: needed {needed} bytes, {available} available")]
    Truncated {
        /// Which field was being read.
        what: &'static str,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes that were left.
        available: usize,
    },
    /// A length or count from the wire is negative or contradicts the
    /// lengths around it.
    #[error("bad length for {what}: {value}")]
    BadLength {
        /// Which field carried the length.
        what: &'static str,
        /// The offending value as read.
        value: i64,
    },
    /// A type byte that this codec does not know (or does not allow here).
    #[error("unknown or unsupported type byte {0}")]
    UnknownType(i8),
    /// A string field is not valid UTF-8.
    #[error("string is not valid UTF-8")]
    BadUtf8,
    /// A frame or value is larger than the protocol (or this codec's sanity
    /// limit, [`crate::volt::MAX_FRAME_LEN`]) allows.
    #[error("{what} too large: {len} (max {max})")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// Its size.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The frame carries a protocol version this codec does not speak.
    #[error("unsupported protocol version {0}")]
    UnsupportedVersion(u8),
    /// A value does not fit the column type it is being written as.
    #[error("value does not match column type {0:?}")]
    TypeMismatch(crate::volt::VoltType),
    /// Bytes were left over after a complete message was decoded, which means
    /// the message layout was not what this codec expects.
    #[error("{0} trailing bytes after message")]
    TrailingBytes(usize),
}
