//! Owns what the parsers share: their internal result (a parse either
//! finishes, runs out of bytes (`Incomplete`, which callers see as
//! `Ok(None)`), or meets bytes that cannot be valid (`Bad`); keeping
//! "incomplete" out of the error types lets `?` carry both through the
//! parsers), and the scan for a line's end.

pub(crate) enum Halt<E> {
    Incomplete,
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

/// The index of the first CR or LF in `rest`, looking at no more than
/// `max + 1` bytes (a line of `max` bytes and its CR): the one scan every
/// text line goes through.
///
/// Lines here are short (`+OK`, `STORED`, a `VALUE` header), where a
/// vectorised search spends more on setup than on searching; this looks at
/// eight bytes per step with the classic "has a zero byte" word trick,
/// applied to the word XORed with CR and with LF. The trick's lowest set bit
/// is exact (false positives only appear above a true match), so the first
/// match is found, not just some match.
#[inline]
pub(crate) fn find_line_end(rest: &[u8], max: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    const CRS: u64 = 0x0d0d_0d0d_0d0d_0d0d;
    const LFS: u64 = 0x0a0a_0a0a_0a0a_0a0a;
    let window = rest.get(..max.saturating_add(1)).unwrap_or(rest);
    let mut chunks = window.chunks_exact(8);
    let mut base = 0usize;
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(<[u8; 8]>::try_from(chunk).unwrap_or_default());
        let (cr, lf) = (word ^ CRS, word ^ LFS);
        let hits = ((cr.wrapping_sub(ONES) & !cr) | (lf.wrapping_sub(ONES) & !lf)) & HIGHS;
        if hits != 0 {
            return Some(base.saturating_add((hits.trailing_zeros() / 8) as usize));
        }
        base = base.saturating_add(8);
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == b'\r' || b == b'\n')
        .map(|i| base.saturating_add(i))
}

/// The byte at `pos`, or `Incomplete`.
#[inline]
pub(crate) fn byte<E>(buf: &[u8], pos: usize) -> Step<u8, E> {
    buf.get(pos).copied().ok_or(Halt::Incomplete)
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
        // Every position of CR and LF among bytes chosen to trip the trick:
        // neighbours of 0x0a and 0x0d, 0x00, 0x80, 0xff, and carries.
        let fill = [
            0x00u8, 0x01, 0x09, 0x0b, 0x0c, 0x0e, 0x80, 0x8a, 0x8d, 0xff, b'a',
        ];
        for len in 0..40 {
            for &f in &fill {
                let mut v = vec![f; len];
                assert_eq!(find_line_end(&v, 100), naive(&v, 100), "{v:?}");
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
                        v.fill(f);
                    }
                }
            }
        }
    }
}
