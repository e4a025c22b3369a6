//! Owns what the parsers of both protocols share: their internal result (a
//! parse finishes, runs out of bytes, or meets bytes that cannot be valid),
//! the checked byte access built on it, and the scan for a text line's end.
//!
//! Keeping "incomplete" out of the public error types lets `?` carry both
//! outcomes through the parsers; [`finish`] turns `Incomplete` into the
//! public `Ok(None)`.

pub(crate) enum Halt<E> {
    /// More bytes are needed; what is there is a prefix of something valid.
    Incomplete,
    /// The bytes cannot be valid, whatever follows.
    Bad(E),
}

impl<E> From<E> for Halt<E> {
    fn from(e: E) -> Self {
        Halt::Bad(e)
    }
}

pub(crate) type Step<T, E> = Result<T, Halt<E>>;

/// Turns a parser's result into the public shape.
#[inline]
pub(crate) fn finish<T, E>(step: Step<T, E>) -> Result<Option<T>, E> {
    match step {
        Ok(v) => Ok(Some(v)),
        Err(Halt::Incomplete) => Ok(None),
        Err(Halt::Bad(e)) => Err(e),
    }
}

/// The byte at `pos`, or `Incomplete`.
#[inline]
pub(crate) fn byte<E>(buf: &[u8], pos: usize) -> Step<u8, E> {
    buf.get(pos).copied().ok_or(Halt::Incomplete)
}

/// The index of the first CR or LF in `rest`, looking at no more than
/// `max + 1` bytes (a line of `max` bytes and its CR).
///
/// Control lines are short (`MSG <subject> <sid> <len>`), where a
/// vectorised search spends more on setup than it saves; this tests eight
/// bytes a step with the "does this word hold a zero byte" trick, applied
/// to the word XORed with CR and with LF. The trick's lowest flagged byte
/// is exact (a false flag only appears above a true one), so the first
/// match is found, not just some match.
#[inline]
pub(crate) fn find_line_end(rest: &[u8], max: usize) -> Option<usize> {
    const LOWS: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const CRS: u64 = u64::from_ne_bytes([b'\r'; 8]);
    const LFS: u64 = u64::from_ne_bytes([b'\n'; 8]);
    let window = rest.get(..max.saturating_add(1)).unwrap_or(rest);
    let mut words = window.chunks_exact(8);
    let mut base = 0usize;
    for word in &mut words {
        let w = u64::from_le_bytes(<[u8; 8]>::try_from(word).unwrap_or_default());
        let (cr, lf) = (w ^ CRS, w ^ LFS);
        let flags = (cr.wrapping_sub(LOWS) & !cr | lf.wrapping_sub(LOWS) & !lf) & HIGHS;
        if flags != 0 {
            return Some(base.saturating_add((flags.trailing_zeros() / 8) as usize));
        }
        base = base.saturating_add(8);
    }
    words
        .remainder()
        .iter()
        .position(|&b| b == b'\r' || b == b'\n')
        .map(|i| base.saturating_add(i))
}

// Test code indexes its own fixtures; the library's lints guard wire input.
#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    use super::find_line_end;

    fn naive(rest: &[u8], max: usize) -> Option<usize> {
        rest.iter()
            .take(max + 1)
            .position(|&b| b == b'\r' || b == b'\n')
    }

    #[test]
    fn word_scan_agrees_with_a_byte_loop() {
        // CR and LF at every position among bytes chosen to trip the
        // trick: neighbours of 0x0a and 0x0d, 0x00, 0x80, 0xff.
        for len in 0..40 {
            for fill in [
                0x00u8, 0x01, 0x09, 0x0b, 0x0c, 0x0e, 0x80, 0x8a, 0x8d, 0xff, b'a',
            ] {
                let mut v = vec![fill; len];
                assert_eq!(find_line_end(&v, 100), naive(&v, 100));
                for at in 0..len {
                    for hit in [b'\r', b'\n'] {
                        v[at] = hit;
                        // A second, later match must not win.
                        if at + 3 < len {
                            v[at + 3] = b'\n';
                        }
                        for max in [0, 3, 7, 8, 9, 100] {
                            assert_eq!(find_line_end(&v, max), naive(&v, max), "{v:?} {max}");
                        }
                        v.fill(fill);
                    }
                }
            }
        }
    }
}
