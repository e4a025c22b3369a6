//! Owns decimal numbers on the text protocol's wire: formatted on the
//! stack (no `String`, no allocation) and parsed with overflow checks.

pub(crate) use loadrig_wirestep::{parse_u64, Decimal};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_edges() {
        for (n, want) in [
            (0u64, "0"),
            (7, "7"),
            (10, "10"),
            (99, "99"),
            (1234567890, "1234567890"),
            (u64::MAX, "18446744073709551615"),
        ] {
            assert_eq!(Decimal::new(n).as_bytes(), want.as_bytes());
            assert_eq!(parse_u64(want.as_bytes()), Some(n));
        }
    }

    #[test]
    fn parse_edges() {
        assert_eq!(parse_u64(b"007"), Some(7));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"000000000000000000001"), None);
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_u64(b"1 "), None);
    }
}
