//! The stamp: a fixed 24-byte header loadrig puts at the front of every
//! message it publishes, whatever the broker, so that a subscriber can
//! tell who sent it, which one it is, and when it left.
//!
//! ```text
//! offset  size  field
//!  0      2     magic, "LR" (0x4c 0x52)
//!  2      1     version, 1
//!  3      1     flags, 0 (reserved: written as 0, ignored when read)
//!  4      4     publisher id (u32, big-endian)
//!  8      8     sequence number (u64, big-endian), per publisher
//! 16      8     send time, ns since the Unix epoch (u64, big-endian)
//! 24      ...   filler up to the requested message size
//! ```
//!
//! Big-endian, as on most wires, so a hex dump of a capture reads the
//! numbers left to right.
//!
//! **Why the Unix epoch and not the run's start.** Publishers and
//! subscribers may be different processes (`--processes`) or hosts; a
//! time since the Unix epoch means the same to all of them with no
//! agreement beyond synchronised clocks, which cross-host latency needs
//! anyway. A publisher should not read the wall clock per message (a clock
//! step would show up as latency); it reads it once at start and adds the
//! monotonic time elapsed since. A u64 of nanoseconds lasts until 2554.
//!
//! The (publisher, sequence) pair identifies a message: a subscriber finds
//! loss (gaps), duplicates (a sequence seen twice) and reordering (a
//! sequence below the highest seen) per publisher. Sequences are the
//! publisher's to number; counting from 0 is the convention.
//!
//! The filler carries no meaning and is not checked: [`encode_message`]
//! writes [`FILL`] bytes; a publisher that reuses one message buffer may
//! overwrite only the stamp with [`Stamp::write_to`].

use bytes::{BufMut, BytesMut};
use thiserror::Error;

/// Size of the stamp, and so the smallest message loadrig can publish.
pub const STAMP_LEN: usize = 24;

/// The first two bytes of every stamp.
pub const MAGIC: [u8; 2] = *b"LR";

/// The layout version this module writes and reads.
pub const VERSION: u8 = 1;

/// The byte after the stamp, repeated up to the message size.
pub const FILL: u8 = b'.';

/// What can be wrong with a stamp to write or a payload to read one from.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum StampError {
    /// A payload (or a requested message size) shorter than [`STAMP_LEN`].
    #[error("{len} bytes is shorter than a stamp ({STAMP_LEN})")]
    TooShort {
        /// The payload's length.
        len: usize,
    },
    /// A payload that does not start with [`MAGIC`]: not loadrig's.
    #[error("not a loadrig stamp (magic {0:02x?})")]
    BadMagic([u8; 2]),
    /// A stamp of a layout version this build does not read.
    #[error("stamp version {0} (this build reads {VERSION})")]
    UnsupportedVersion(u8),
}

/// The fields of a stamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stamp {
    /// Which publisher sent it, unique across the run's processes.
    pub publisher: u32,
    /// Its number in that publisher's sequence.
    pub seq: u64,
    /// When it was sent: nanoseconds since the Unix epoch, by the
    /// publisher's clock.
    pub sent_unix_ns: u64,
}

impl Stamp {
    /// The stamp's 24 bytes.
    #[inline]
    pub fn to_bytes(&self) -> [u8; STAMP_LEN] {
        let mut out = [0u8; STAMP_LEN];
        let [m0, m1] = MAGIC;
        let [p0, p1, p2, p3] = self.publisher.to_be_bytes();
        let [s0, s1, s2, s3, s4, s5, s6, s7] = self.seq.to_be_bytes();
        let [t0, t1, t2, t3, t4, t5, t6, t7] = self.sent_unix_ns.to_be_bytes();
        out.copy_from_slice(&[
            m0, m1, VERSION, 0, p0, p1, p2, p3, s0, s1, s2, s3, s4, s5, s6, s7, t0, t1, t2, t3, t4,
            t5, t6, t7,
        ]);
        out
    }

    /// Overwrites the first [`STAMP_LEN`] bytes of `payload` with the
    /// stamp, leaving the rest alone.
    #[inline]
    pub fn write_to(&self, payload: &mut [u8]) -> Result<(), StampError> {
        let len = payload.len();
        let head = payload
            .get_mut(..STAMP_LEN)
            .ok_or(StampError::TooShort { len })?;
        head.copy_from_slice(&self.to_bytes());
        Ok(())
    }

    /// Reads the stamp at the front of a received payload (anything after
    /// it is filler and ignored).
    #[inline]
    pub fn decode(payload: &[u8]) -> Result<Stamp, StampError> {
        let head: &[u8; STAMP_LEN] = payload
            .first_chunk()
            .ok_or(StampError::TooShort { len: payload.len() })?;
        let [m0, m1, version, _flags, p0, p1, p2, p3, s0, s1, s2, s3, s4, s5, s6, s7, t0, t1, t2, t3, t4, t5, t6, t7] =
            *head;
        if [m0, m1] != MAGIC {
            return Err(StampError::BadMagic([m0, m1]));
        }
        if version != VERSION {
            return Err(StampError::UnsupportedVersion(version));
        }
        Ok(Stamp {
            publisher: u32::from_be_bytes([p0, p1, p2, p3]),
            seq: u64::from_be_bytes([s0, s1, s2, s3, s4, s5, s6, s7]),
            sent_unix_ns: u64::from_be_bytes([t0, t1, t2, t3, t4, t5, t6, t7]),
        })
    }

    /// Nanoseconds from sending to `received_unix_ns`; `None` if the
    /// receiver's clock reads earlier than the sender's did (clocks out of
    /// step), which a caller should count rather than record.
    #[inline]
    pub fn latency_ns(&self, received_unix_ns: u64) -> Option<u64> {
        received_unix_ns.checked_sub(self.sent_unix_ns)
    }
}

/// Appends a message of exactly `size` bytes: the stamp, then [`FILL`].
/// Refuses a size below [`STAMP_LEN`], leaving `buf` as it was.
#[inline]
pub fn encode_message(buf: &mut BytesMut, stamp: &Stamp, size: usize) -> Result<(), StampError> {
    if size < STAMP_LEN {
        return Err(StampError::TooShort { len: size });
    }
    buf.reserve(size);
    buf.put_slice(&stamp.to_bytes());
    buf.put_bytes(FILL, size.saturating_sub(STAMP_LEN));
    Ok(())
}
