//! Owns message framing: the 4-byte big-endian length prefix and the
//! protocol-version byte that precede every message in both directions.
//!
//! A *frame* in this crate is the whole message as it sits on the socket:
//! `[i32 length][u8 version][body…]`, where `length` counts the version byte
//! and the body but not itself.

use bytes::{BufMut, BytesMut};

use crate::volt::WireError;

/// Largest frame this codec accepts or produces, prefix included.
///
/// A sanity bound (50 MiB), not a documented protocol constant: a prefix
/// beyond it on input means a corrupt or hostile stream, and refusing it
/// keeps a bad length from making the caller buffer gigabytes.
pub const MAX_FRAME_LEN: usize = 50 * 1024 * 1024;

/// Size of the length prefix.
pub const LEN_PREFIX: usize = 4;

/// Reports whether `buf` starts with a whole frame, without parsing it.
///
/// Returns `Ok(Some(n))` when the first `n` bytes of `buf` form one complete
/// frame (`n` includes the 4-byte prefix), `Ok(None)` when more bytes are
/// needed, and an error only when the prefix itself is impossible (shorter
/// than the version byte, negative, or over [`MAX_FRAME_LEN`]). It is O(1)
/// and reads at most four bytes, so it can run on every socket read.
pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, WireError> {
    let Some((prefix, _)) = buf.split_first_chunk::<LEN_PREFIX>() else {
        return Ok(None);
    };
    let declared = i32::from_be_bytes(*prefix);
    if declared < 1 {
        // Even an empty message carries its version byte.
        return Err(WireError::BadLength {
            what: "frame length",
            value: i64::from(declared),
        });
    }
    let total = usize::try_from(declared)
        .ok()
        .and_then(|d| d.checked_add(LEN_PREFIX))
        .filter(|t| *t <= MAX_FRAME_LEN)
        .ok_or(WireError::TooLarge {
            what: "frame",
            len: usize::try_from(declared).unwrap_or(usize::MAX),
            max: MAX_FRAME_LEN,
        })?;
    Ok((buf.len() >= total).then_some(total))
}

/// Checks that `frame` is exactly one whole frame and splits it into its
/// version byte and body. Decoders start here so that a caller passing a
/// short or over-long slice gets an error instead of a misparse.
pub(crate) fn split_frame(frame: &[u8]) -> Result<(u8, &[u8]), WireError> {
    match frame_len(frame)? {
        None => Err(WireError::Truncated {
            what: "frame",
            needed: expected_total(frame),
            available: frame.len(),
        }),
        Some(n) if n != frame.len() => Err(WireError::TrailingBytes(frame.len().saturating_sub(n))),
        Some(_) => match frame.get(LEN_PREFIX..) {
            Some([version, body @ ..]) => Ok((*version, body)),
            _ => Err(WireError::Truncated {
                what: "version byte",
                needed: 1,
                available: 0,
            }),
        },
    }
}

fn expected_total(frame: &[u8]) -> usize {
    frame
        .split_first_chunk::<LEN_PREFIX>()
        .and_then(|(p, _)| usize::try_from(i32::from_be_bytes(*p)).ok())
        .map_or(LEN_PREFIX, |n| n.saturating_add(LEN_PREFIX))
}

/// Writes one frame into a caller's buffer: the length is back-filled when
/// the body is done, so the body is encoded straight into place.
///
/// If encoding fails the buffer is truncated back to where the frame began,
/// so a failed encode never leaves half a message queued for the socket.
pub(crate) fn write_frame<F>(buf: &mut BytesMut, version: u8, body: F) -> Result<(), WireError>
where
    F: FnOnce(&mut BytesMut) -> Result<(), WireError>,
{
    let start = buf.len();
    buf.put_i32(0);
    buf.put_u8(version);
    let result = body(buf).and_then(|()| {
        let total = buf.len().saturating_sub(start);
        if total > MAX_FRAME_LEN {
            return Err(WireError::TooLarge {
                what: "frame",
                len: total,
                max: MAX_FRAME_LEN,
            });
        }
        // MAX_FRAME_LEN < i32::MAX, so this conversion cannot fail here.
        let declared =
            i32::try_from(total.saturating_sub(LEN_PREFIX)).map_err(|_| WireError::TooLarge {
                what: "frame",
                len: total,
                max: MAX_FRAME_LEN,
            })?;
        let end = start.saturating_add(LEN_PREFIX);
        if let Some(slot) = buf.get_mut(start..end) {
            slot.copy_from_slice(&declared.to_be_bytes());
        }
        Ok(())
    });
    if result.is_err() {
        buf.truncate(start);
    }
    result
}

/// Writes an `i32` length prefix and the bytes (the protocol's string and
/// varbinary encoding).
pub(crate) fn put_bytes(
    buf: &mut BytesMut,
    bytes: &[u8],
    what: &'static str,
) -> Result<(), WireError> {
    let len = i32::try_from(bytes.len()).map_err(|_| WireError::TooLarge {
        what,
        len: bytes.len(),
        max: i32::MAX as usize,
    })?;
    buf.put_i32(len);
    buf.put_slice(bytes);
    Ok(())
}

/// Converts an element count to the protocol's `i16` count field.
pub(crate) fn short_count(n: usize, what: &'static str) -> Result<i16, WireError> {
    i16::try_from(n).map_err(|_| WireError::TooLarge {
        what,
        len: n,
        max: i16::MAX as usize,
    })
}
