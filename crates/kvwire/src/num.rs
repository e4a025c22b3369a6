//! Owns decimal integers, the one number format both text protocols use:
//! writing them into a buffer without allocating, and reading them back with
//! overflow checks.

use bytes::{BufMut, BytesMut};

/// Most digits a `u64` (or the magnitude of an `i64`) has in base 10.
pub(crate) const MAX_DIGITS: usize = 20;

/// A number's decimal digits, formatted on the stack.
///
/// Invariant: `start <= MAX_DIGITS` and `digits[start..]` is the number's
/// shortest decimal form (at least one digit).
pub(crate) struct Decimal {
    digits: [u8; MAX_DIGITS],
    start: usize,
}

impl Decimal {
    pub(crate) fn new(mut n: u64) -> Self {
        let mut digits = [b'0'; MAX_DIGITS];
        let mut start = MAX_DIGITS;
        // Walk from the right; u64::MAX has exactly MAX_DIGITS digits, so
        // `start` never underflows and every `get_mut` hits.
        while let Some(slot) = start.checked_sub(1).and_then(|i| digits.get_mut(i)) {
            *slot = b'0'.wrapping_add((n % 10) as u8);
            start = start.saturating_sub(1);
            n /= 10;
            if n == 0 {
                break;
            }
        }
        Self { digits, start }
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        self.digits.get(self.start..).unwrap_or(b"0")
    }
}

/// Appends `n` in decimal.
pub(crate) fn put_u64(buf: &mut BytesMut, n: u64) {
    buf.put_slice(Decimal::new(n).as_bytes());
}

/// Appends a length (a `usize`) in decimal.
pub(crate) fn put_len(buf: &mut BytesMut, n: usize) {
    // usize is at most 64 bits on every target Rust supports.
    put_u64(buf, n as u64);
}

/// Parses a whole slice of ASCII digits (no sign, no spaces) as a `u64`.
/// `None` for an empty slice, a non-digit, more than [`MAX_DIGITS`] digits,
/// or overflow.
pub(crate) fn parse_u64(s: &[u8]) -> Option<u64> {
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
    use super::*;

    #[test]
    fn decimal_edges() {
        for (n, s) in [
            (0u64, "0"),
            (7, "7"),
            (10, "10"),
            (1234567890, "1234567890"),
            (u64::MAX, "18446744073709551615"),
        ] {
            assert_eq!(Decimal::new(n).as_bytes(), s.as_bytes());
        }
        let mut b = BytesMut::new();
        put_u64(&mut b, 42);
        put_len(&mut b, 7);
        assert_eq!(&b[..], b"427");
    }

    #[test]
    fn parse_edges() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"007"), Some(7));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"000000000000000000001"), None); // 21 digits
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_u64(b"1 "), None);
    }
}
