//! Owns the bytes every encoder writes and every text parser reads:
//! decimal integers (formatted without allocating, parsed with overflow
//! checks), and the in-place writer encoders use to append a request with
//! one growth of the buffer.

use bytes::{BufMut, BytesMut};

pub(crate) use crate::step::{decimal_len, parse_u64, write_decimal, MAX_DIGITS};

/// A short run of bytes assembled on the stack and appended to a buffer
/// with one copy: a memcached command line or binary header is many tiny
/// pieces, and appending each one to a `BytesMut` separately costs an
/// out-of-line call (and a `memcpy`) apiece. Also the stack home of an
/// integer argument's digits.
///
/// Invariant: `len <= N`. Callers size `N` for their worst case; a push
/// that would not fit is dropped rather than panicking, and the tests pin
/// the worst cases.
pub(crate) struct Scratch<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> Scratch<N> {
    #[inline]
    pub(crate) fn new() -> Self {
        Self {
            bytes: [0; N],
            len: 0,
        }
    }

    /// Appends `b`; with a literal argument the copy compiles to a few
    /// moves.
    #[inline]
    pub(crate) fn push(&mut self, b: &[u8]) -> &mut Self {
        let end = self.len.saturating_add(b.len());
        if let Some(dst) = self.bytes.get_mut(self.len..end) {
            dst.copy_from_slice(b);
            self.len = end;
        }
        self
    }

    /// Appends `n` in decimal.
    #[inline]
    pub(crate) fn push_u64(&mut self, n: u64) -> &mut Self {
        let end = self.len.saturating_add(decimal_len(n));
        if let Some(dst) = self.bytes.get_mut(self.len..end) {
            write_decimal(dst, n);
            self.len = end;
        }
        self
    }

    /// Appends a length in decimal.
    #[inline]
    pub(crate) fn push_len(&mut self, n: usize) -> &mut Self {
        // usize is at most 64 bits on every target Rust supports.
        self.push_u64(n as u64)
    }

    #[inline]
    pub(crate) fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..self.len).unwrap_or_default()
    }

    /// Appends what was assembled to `buf`.
    #[inline]
    pub(crate) fn put_into(&self, buf: &mut BytesMut) {
        buf.put_slice(self.as_bytes());
    }
}

/// Grows `buf` by exactly `len` bytes once and lets `fill` write them in
/// place: one capacity check and no per-piece call, where appending piece
/// by piece costs a call (and a `memcpy`) for every `$`, length and CRLF.
///
/// `len` must be what `fill` writes; should it write less, the buffer is cut
/// back to what was written, so a miscount can corrupt a request (the
/// tests compare every encoder's bytes) but never leaves zeros or panics.
#[inline]
pub(crate) fn append_exact(buf: &mut BytesMut, len: usize, fill: impl FnOnce(&mut Cursor<'_>)) {
    let start = buf.len();
    let end = start.saturating_add(len);
    buf.resize(end, 0);
    let written = match buf.get_mut(start..end) {
        Some(dst) => {
            let mut c = Cursor { dst, pos: 0 };
            fill(&mut c);
            c.pos
        }
        None => 0,
    };
    buf.truncate(start.saturating_add(written));
}

/// A forward writer over a slice reserved by [`append_exact`].
///
/// Invariant: `pos <= dst.len()`; a write that does not fit is dropped.
pub(crate) struct Cursor<'a> {
    dst: &'a mut [u8],
    pos: usize,
}

impl Cursor<'_> {
    #[inline]
    pub(crate) fn put(&mut self, b: &[u8]) -> &mut Self {
        let end = self.pos.saturating_add(b.len());
        if let Some(d) = self.dst.get_mut(self.pos..end) {
            d.copy_from_slice(b);
            self.pos = end;
        }
        self
    }

    #[inline]
    pub(crate) fn put_u64(&mut self, n: u64) -> &mut Self {
        let end = self.pos.saturating_add(decimal_len(n));
        if let Some(d) = self.dst.get_mut(self.pos..end) {
            write_decimal(d, n);
            self.pos = end;
        }
        self
    }

    #[inline]
    pub(crate) fn put_len(&mut self, n: usize) -> &mut Self {
        self.put_u64(n as u64)
    }
}

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
            let mut s = Scratch::<MAX_DIGITS>::new();
            s.push_u64(n);
            assert_eq!(s.as_bytes(), want.as_bytes());
        }
    }

    #[test]
    fn scratch_assembles_and_appends() {
        let mut s = Scratch::<8>::new();
        s.push(b"$").push_len(42).push(b"\r\n");
        let mut b = BytesMut::from(&b"x"[..]);
        s.put_into(&mut b);
        assert_eq!(&b[..], b"x$42\r\n");
        // A push that does not fit is dropped, never a panic.
        s.push(b"toolong");
        s.push_u64(u64::MAX);
        assert_eq!(s.as_bytes(), b"$42\r\n");
    }

    #[test]
    fn append_exact_writes_in_place_and_cuts_back_a_short_fill() {
        let mut b = BytesMut::from(&b"x"[..]);
        append_exact(&mut b, 6, |c| {
            c.put(b"$").put_len(42).put(b"\r\n").put_u64(7);
        });
        assert_eq!(&b[..], b"x$42\r\n7");
        // Under-filled: cut back to what was written.
        append_exact(&mut b, 10, |c| {
            c.put(b"ab");
        });
        assert_eq!(&b[..], b"x$42\r\n7ab");
        // Over-filled: the write that does not fit is dropped.
        append_exact(&mut b, 3, |c| {
            c.put(b"cd").put(b"ef");
        });
        assert_eq!(&b[..], b"x$42\r\n7abcd");
        assert_eq!(decimal_len(0), 1);
        assert_eq!(decimal_len(9), 1);
        assert_eq!(decimal_len(10), 2);
        assert_eq!(decimal_len(u64::MAX), 20);
    }
}
