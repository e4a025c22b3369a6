//! gRPC's message framing and status codes, as carried over HTTP/2: each
//! message in a DATA stream is a 1-byte compressed flag and a 4-byte
//! big-endian length, then the protobuf bytes; a call ends with trailers
//! whose `grpc-status` is a decimal code (0 = OK) and whose
//! `grpc-message` is percent-encoded text.

use bytes::BufMut;

use crate::etcd::WireError;

/// Bytes of the prefix before each message.
pub const PREFIX: usize = 5;

/// The longest message accepted: far above a Range of 1,000 keys of 100
/// bytes, well below what would let a corrupt length buffer without bound.
pub const MAX_MESSAGE: usize = 64 << 20;

/// Whether a whole message is at the front of `buf`: `Ok(Some(n))` with
/// its length, prefix included, `Ok(None)` when more bytes are needed.
pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, WireError> {
    let Some(&[flag, a, b, c, d]) = buf.first_chunk::<PREFIX>() else {
        return Ok(None);
    };
    if flag != 0 {
        return Err(WireError::Compressed(flag));
    }
    let len = u32::from_be_bytes([a, b, c, d]) as usize;
    if len > MAX_MESSAGE {
        return Err(WireError::TooLong(len as u64));
    }
    let whole = PREFIX.saturating_add(len);
    Ok((buf.len() >= whole).then_some(whole))
}

/// The message inside a whole frame as [`frame_len`] delimited it.
pub fn message(frame: &[u8]) -> &[u8] {
    frame.get(PREFIX..).unwrap_or_default()
}

/// Append an uncompressed frame around `message`.
pub fn put_frame(out: &mut impl BufMut, message: &[u8]) -> Result<(), WireError> {
    let len = u32::try_from(message.len()).map_err(|_| WireError::Unframeable)?;
    out.put_u8(0);
    out.put_u32(len);
    out.put_slice(message);
    Ok(())
}

/// A gRPC status code (`grpc-status`), as etcd uses them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Code {
    /// 0.
    Ok,
    /// 1: the call was cancelled.
    Cancelled,
    /// 2.
    Unknown,
    /// 3: a bad request (too many operations in a transaction, a key
    /// given twice in one).
    InvalidArgument,
    /// 4: the member's own deadline passed.
    DeadlineExceeded,
    /// 8: a request or response over the member's size limits.
    ResourceExhausted,
    /// 9: e.g. a compacted revision.
    FailedPrecondition,
    /// 13.
    Internal,
    /// 14: no leader, the member is stopping, a leader change lost the
    /// request: it may or may not have been applied.
    Unavailable,
    /// 16.
    Unauthenticated,
    /// Any other code, by number.
    Other(u32),
}

impl Code {
    /// Parse a `grpc-status` value.
    pub fn parse(s: &[u8]) -> Option<Code> {
        let n: u32 = std::str::from_utf8(s).ok()?.trim().parse().ok()?;
        Some(match n {
            0 => Code::Ok,
            1 => Code::Cancelled,
            2 => Code::Unknown,
            3 => Code::InvalidArgument,
            4 => Code::DeadlineExceeded,
            8 => Code::ResourceExhausted,
            9 => Code::FailedPrecondition,
            13 => Code::Internal,
            14 => Code::Unavailable,
            16 => Code::Unauthenticated,
            n => Code::Other(n),
        })
    }
}

/// Undo `grpc-message`'s percent-encoding, lossily: for people to read.
pub fn decode_message(s: &[u8]) -> String {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while let Some(&b) = s.get(i) {
        let hex = s
            .get(i.saturating_add(1)..i.saturating_add(3))
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b, hex) {
            (b'%', Some(v)) => {
                out.push(v);
                i = i.saturating_add(3);
            }
            _ => {
                out.push(b);
                i = i.saturating_add(1);
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_delimited_and_every_prefix_is_incomplete() {
        let mut out = Vec::new();
        put_frame(&mut out, b"hello").unwrap();
        assert_eq!(out, b"\0\0\0\0\x05hello");
        assert_eq!(frame_len(&out), Ok(Some(10)));
        assert_eq!(message(&out), b"hello");
        for cut in 0..out.len() {
            assert_eq!(frame_len(out.get(..cut).unwrap_or_default()), Ok(None));
        }
        assert_eq!(frame_len(b"\x01\0\0\0\x01x"), Err(WireError::Compressed(1)));
        assert_eq!(
            frame_len(b"\0\xff\xff\xff\xff"),
            Err(WireError::TooLong(u64::from(u32::MAX)))
        );
    }

    #[test]
    fn statuses_and_messages_are_read() {
        assert_eq!(Code::parse(b"0"), Some(Code::Ok));
        assert_eq!(Code::parse(b"14"), Some(Code::Unavailable));
        assert_eq!(Code::parse(b"99"), Some(Code::Other(99)));
        assert_eq!(Code::parse(b"x"), None);
        assert_eq!(
            decode_message(b"etcdserver: too many operations in txn request%25"),
            "etcdserver: too many operations in txn request%"
        );
        assert_eq!(decode_message(b"bad %zz"), "bad %zz");
    }
}
