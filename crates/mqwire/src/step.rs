//! Owns what the parsers of both protocols share: their internal result (a
//! parse finishes, runs out of bytes, or meets bytes that cannot be valid)
//! and the checked byte access built on it.
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
