//! What loadrig's codecs ([`crate::kv`], [`crate::mq`])
//! share, written once: a parser's internal result (it finishes, runs out
//! of bytes, or meets bytes that cannot be valid), checked byte access, the
//! scan for a text line's end, and decimals, parsed and written (the one
//! decimal writer every encoder and key builder uses).
//!
//! Keeping "incomplete" out of the public error types lets `?` carry both
//! outcomes through the parsers; [`finish`] turns `Incomplete` into the
//! public `Ok(None)`.

/// Most digits a `u64` has in base 10.
pub const MAX_DIGITS: usize = 20;

/// Number of decimal digits of `n` (1 for 0).
#[inline]
pub fn decimal_len(mut n: u64) -> usize {
    let mut len: usize = 1;
    while n >= 10 {
        n /= 10;
        len = len.saturating_add(1);
    }
    len
}

/// Writes `n` in decimal into the whole of `dst`, right-aligned: with
/// `dst.len() == decimal_len(n)` that is exactly its digits (a longer `dst`
/// gets leading zeros, a shorter one the low digits).
#[inline]
pub fn write_decimal(dst: &mut [u8], mut n: u64) {
    for slot in dst.iter_mut().rev() {
        *slot = b'0'.wrapping_add((n % 10) as u8);
        n /= 10;
    }
}

/// A `u64` in decimal, held on the stack: no `String`, no allocation.
pub struct Decimal {
    digits: [u8; MAX_DIGITS],
    start: usize,
}

impl Decimal {
    /// `n`'s digits.
    #[inline]
    pub fn new(n: u64) -> Self {
        let mut digits = [b'0'; MAX_DIGITS];
        let start = MAX_DIGITS.saturating_sub(decimal_len(n));
        if let Some(dst) = digits.get_mut(start..) {
            write_decimal(dst, n);
        }
        Self { digits, start }
    }

    /// The digits, most significant first.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        self.digits.get(self.start..).unwrap_or_default()
    }
}

/// Why a parse stopped before a whole frame.
pub enum Halt<E> {
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

/// A parser's internal result.
pub type Step<T, E> = Result<T, Halt<E>>;

/// Turns a parser's result into the public shape.
#[inline]
pub fn finish<T, E>(step: Step<T, E>) -> Result<Option<T>, E> {
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
pub fn find_line_end(rest: &[u8], max: usize) -> Option<usize> {
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
pub fn byte<E>(buf: &[u8], pos: usize) -> Step<u8, E> {
    buf.get(pos).copied().ok_or(Halt::Incomplete)
}

/// Parses a whole slice of ASCII digits (no sign, no spaces) as a `u64`.
/// `None` for an empty slice, a non-digit, more than [`MAX_DIGITS`] digits,
/// or overflow.
#[inline]
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > MAX_DIGITS {
        return None;
    }
    s.iter().try_fold(0u64, |acc, &b| {
        if b.is_ascii_digit() {
            acc.checked_mul(10)?
                .checked_add(u64::from(b.wrapping_sub(b'0')))
        } else {
            None
        }
    })
}

#[cfg(test)]
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

#[cfg(test)]
mod number_tests {
    use super::*;

    #[test]
    fn parse_edges() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"007"), Some(7));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"000000000000000000001"), None);
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_u64(b"1 "), None);
    }
}
