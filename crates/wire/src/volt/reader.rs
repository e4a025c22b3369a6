//! Owns the bounds-checked cursor that every decoder reads through.
//!
//! All wire input passes through [`Reader`], so this is the one place that
//! has to get "never panic, never trust a length" right: every read checks
//! what is left first, and lengths from the wire are validated against the
//! remaining bytes before anything is allocated.

use crate::volt::WireError;

/// A forward-only cursor over a borrowed byte slice.
///
/// Invariant: `rest` is always a suffix of the original input; reads either
/// succeed and shrink it, or fail and leave it unchanged.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { rest: bytes }
    }

    /// Takes exactly `n` bytes.
    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], WireError> {
        match self.rest.split_at_checked(n) {
            Some((head, tail)) => {
                self.rest = tail;
                Ok(head)
            }
            None => Err(WireError::Truncated {
                what,
                needed: n,
                available: self.rest.len(),
            }),
        }
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], WireError> {
        match self.rest.split_first_chunk::<N>() {
            Some((head, tail)) => {
                self.rest = tail;
                Ok(*head)
            }
            None => Err(WireError::Truncated {
                what,
                needed: N,
                available: self.rest.len(),
            }),
        }
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, WireError> {
        self.array::<1>(what).map(|[b]| b)
    }

    pub(crate) fn i8(&mut self, what: &'static str) -> Result<i8, WireError> {
        self.array::<1>(what).map(i8::from_be_bytes)
    }

    pub(crate) fn i16(&mut self, what: &'static str) -> Result<i16, WireError> {
        self.array::<2>(what).map(i16::from_be_bytes)
    }

    pub(crate) fn i32(&mut self, what: &'static str) -> Result<i32, WireError> {
        self.array::<4>(what).map(i32::from_be_bytes)
    }

    pub(crate) fn i64(&mut self, what: &'static str) -> Result<i64, WireError> {
        self.array::<8>(what).map(i64::from_be_bytes)
    }

    pub(crate) fn i128(&mut self, what: &'static str) -> Result<i128, WireError> {
        self.array::<16>(what).map(i128::from_be_bytes)
    }

    pub(crate) fn f64(&mut self, what: &'static str) -> Result<f64, WireError> {
        self.array::<8>(what).map(f64::from_be_bytes)
    }

    /// Reads a non-negative count and bounds it by what is left, given that
    /// each element needs at least `min_elem` bytes; this is what keeps a
    /// hostile count from turning into a huge allocation.
    pub(crate) fn count(
        &mut self,
        raw: i64,
        min_elem: usize,
        what: &'static str,
    ) -> Result<usize, WireError> {
        let n = usize::try_from(raw).map_err(|_| WireError::BadLength { what, value: raw })?;
        let fits = n
            .checked_mul(min_elem)
            .is_some_and(|need| need <= self.rest.len());
        if fits {
            Ok(n)
        } else {
            Err(WireError::Truncated {
                what,
                needed: n.saturating_mul(min_elem),
                available: self.rest.len(),
            })
        }
    }

    /// Reads an `i32` length prefix followed by that many bytes; `-1` is the
    /// protocol's NULL marker and yields `None`.
    pub(crate) fn nullable_bytes(
        &mut self,
        what: &'static str,
    ) -> Result<Option<&'a [u8]>, WireError> {
        let len = self.i32(what)?;
        if len == -1 {
            return Ok(None);
        }
        let n = usize::try_from(len).map_err(|_| WireError::BadLength {
            what,
            value: i64::from(len),
        })?;
        self.take(n, what).map(Some)
    }

    /// Like [`Self::nullable_bytes`] but NULL is not allowed.
    pub(crate) fn bytes(&mut self, what: &'static str) -> Result<&'a [u8], WireError> {
        self.nullable_bytes(what)?
            .ok_or(WireError::BadLength { what, value: -1 })
    }

    pub(crate) fn string(&mut self, what: &'static str) -> Result<String, WireError> {
        utf8(self.bytes(what)?)
    }

    /// Fails unless every byte has been consumed.
    pub(crate) fn finish(&self) -> Result<(), WireError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(WireError::TrailingBytes(self.rest.len()))
        }
    }
}

pub(crate) fn utf8(b: &[u8]) -> Result<String, WireError> {
    std::str::from_utf8(b)
        .map(str::to_owned)
        .map_err(|_| WireError::BadUtf8)
}
