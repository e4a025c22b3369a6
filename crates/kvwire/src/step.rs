//! Owns the parsers' internal result: a parse either finishes, runs out of
//! bytes (`Incomplete`, which callers see as `Ok(None)`), or meets bytes that
//! cannot be valid (`Bad`). Keeping "incomplete" out of the error types lets
//! `?` carry both through the parsers.

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
pub(crate) fn finish<T, E>(step: Step<T, E>) -> Result<Option<T>, E> {
    match step {
        Ok(v) => Ok(Some(v)),
        Err(Halt::Incomplete) => Ok(None),
        Err(Halt::Bad(e)) => Err(e),
    }
}

/// The byte at `pos`, or `Incomplete`.
pub(crate) fn byte<E>(buf: &[u8], pos: usize) -> Step<u8, E> {
    buf.get(pos).copied().ok_or(Halt::Incomplete)
}
