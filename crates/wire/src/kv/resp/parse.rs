//! Owns reply parsing: one reply from the front of a buffer, borrowed, with
//! `Ok(None)` for "not all here yet".
//!
//! Every read goes through `byte`/`get`, so running off the end of the
//! buffer is "incomplete", never a panic; every length from the wire is
//! checked against the limits in [`super`] before it is used.

use super::{Array, Reply, RespError, MAX_ARRAY_LEN, MAX_BULK_LEN, MAX_DEPTH, MAX_LINE_LEN};
use crate::kv::num::MAX_DIGITS;
use crate::kv::step::{byte, find_line_end, finish, Halt};

type Step<T> = crate::kv::step::Step<T, RespError>;

/// Parses the reply at the front of `buf`.
///
/// Returns `Ok(Some((reply, n)))` when the first `n` bytes are one whole
/// reply (nested arrays included), `Ok(None)` when more bytes are needed,
/// and an error when the bytes cannot be the start of a valid reply. Bytes
/// after the reply (pipelined replies) are left alone.
///
/// Cost is linear in the reply's header lines; bulk payloads are skipped by
/// length, not scanned. A caller that gets `Ok(None)` parses again from the
/// start once more bytes arrived, so a huge array trickling in is rescanned;
/// replies a load generator asks for are small.
#[inline]
pub fn parse_reply(buf: &[u8]) -> Result<Option<(Reply<'_>, usize)>, RespError> {
    // Scalars (the replies to GET, SET, INCR) return straight from `head`;
    // only arrays take the walk, kept out of line with its stack of
    // counters.
    match head(buf, 0) {
        Ok((Head::Value(r), n)) => Ok(Some((r, n))),
        Ok((Head::Array(len), start)) => finish(array(buf, start, len)),
        Err(Halt::Incomplete) => Ok(None),
        Err(Halt::Bad(e)) => Err(e),
    }
}

/// Reports whether `buf` starts with a whole reply and how long it is, with
/// the same rules and answers as [`parse_reply`].
#[inline]
pub fn reply_len(buf: &[u8]) -> Result<Option<usize>, RespError> {
    parse_reply(buf).map(|o| o.map(|(_, n)| n))
}

/// A non-empty array whose `len` elements start at `start`.
#[inline(never)]
fn array(buf: &[u8], start: usize, len: usize) -> Step<(Reply<'_>, usize)> {
    let end = skip_elements(buf, start, len)?;
    let body = buf.get(start..end).ok_or(Halt::Incomplete)?;
    Ok((Reply::Array(Some(Array { len, body })), end))
}

/// A value's first line: either the whole value, or the count of a
/// non-empty array whose elements follow.
enum Head<'a> {
    Value(Reply<'a>),
    Array(usize),
}

/// Reads the value starting at `pos` up to its elements (for an array) or
/// its end (anything else); returns it with the position after it.
#[inline]
fn head(buf: &[u8], pos: usize) -> Step<(Head<'_>, usize)> {
    let ty = byte(buf, pos)?;
    let pos = pos.saturating_add(1);
    match ty {
        b'+' => line(buf, pos, "simple string").map(|(s, n)| (Head::Value(Reply::Simple(s)), n)),
        b'-' => line(buf, pos, "error").map(|(s, n)| (Head::Value(Reply::Error(s)), n)),
        b':' => integer(buf, pos).map(|(i, n)| (Head::Value(Reply::Integer(i)), n)),
        b'$' => {
            let (len, start) = length(buf, pos, "bulk length")?;
            let Some(len) = len else {
                return Ok((Head::Value(Reply::Bulk(None)), start));
            };
            if len > MAX_BULK_LEN {
                return Err(too_large("bulk string", len, MAX_BULK_LEN));
            }
            // len <= MAX_BULK_LEN, so these sums cannot overflow.
            let end = start.saturating_add(len);
            let after = crlf(buf, end, "bulk string")?;
            let data = buf.get(start..end).ok_or(Halt::Incomplete)?;
            Ok((Head::Value(Reply::Bulk(Some(data))), after))
        }
        b'*' => {
            let (count, next) = length(buf, pos, "array count")?;
            match count {
                None => Ok((Head::Value(Reply::Array(None)), next)),
                Some(0) => Ok((
                    Head::Value(Reply::Array(Some(Array { len: 0, body: &[] }))),
                    next,
                )),
                Some(n) if n > MAX_ARRAY_LEN => Err(too_large("array", n, MAX_ARRAY_LEN)),
                Some(n) => Ok((Head::Array(n), next)),
            }
        }
        other => Err(RespError::UnknownType(other).into()),
    }
}

/// Walks `count` elements starting at `pos`, nested arrays included,
/// without recursion; returns the position after the last one.
fn skip_elements(buf: &[u8], mut pos: usize, count: usize) -> Step<usize> {
    // pending[d] = elements still to read in the array open at depth d + 1.
    let mut pending = [0usize; MAX_DEPTH];
    let mut depth = 1usize;
    if let Some(top) = pending.first_mut() {
        *top = count;
    }
    while let Some(top) = depth.checked_sub(1).and_then(|d| pending.get_mut(d)) {
        if *top == 0 {
            depth = depth.saturating_sub(1);
            continue;
        }
        *top = top.saturating_sub(1);
        let (h, next) = head(buf, pos)?;
        pos = next;
        if let Head::Array(n) = h {
            let slot = pending
                .get_mut(depth)
                .ok_or(Halt::Bad(RespError::TooDeep(MAX_DEPTH)))?;
            *slot = n;
            depth = depth.saturating_add(1);
        }
    }
    Ok(pos)
}

fn too_large(what: &'static str, len: usize, max: usize) -> Halt<RespError> {
    Halt::Bad(RespError::TooLarge { what, len, max })
}

/// Expects CRLF at `pos`; returns the position after it.
#[inline]
fn crlf(buf: &[u8], pos: usize, what: &'static str) -> Step<usize> {
    match (buf.get(pos), buf.get(pos.saturating_add(1))) {
        (Some(b'\r'), Some(b'\n')) => Ok(pos.saturating_add(2)),
        (None, _) | (Some(b'\r'), None) => Err(Halt::Incomplete),
        _ => Err(RespError::BadLineEnd(what).into()),
    }
}

/// A simple-string or error line from `pos` to CRLF (neither CR nor LF
/// allowed inside); returns it with the position after the CRLF.
#[inline]
fn line<'a>(buf: &'a [u8], pos: usize, what: &'static str) -> Step<(&'a [u8], usize)> {
    let rest = buf.get(pos..).ok_or(Halt::Incomplete)?;
    match find_line_end(rest, MAX_LINE_LEN) {
        Some(n) => {
            let at = pos.saturating_add(n);
            let next = crlf(buf, at, what)?;
            Ok((rest.get(..n).ok_or(Halt::Incomplete)?, next))
        }
        None if rest.len() > MAX_LINE_LEN => Err(too_large(what, rest.len(), MAX_LINE_LEN)),
        None => Err(Halt::Incomplete),
    }
}

/// `[+|-]digits CRLF` as an `i64`.
#[inline]
fn integer(buf: &[u8], pos: usize) -> Step<(i64, usize)> {
    const WHAT: &str = "integer";
    let (negative, start) = match byte(buf, pos)? {
        b'-' => (true, pos.saturating_add(1)),
        b'+' => (false, pos.saturating_add(1)),
        _ => (false, pos),
    };
    let mut acc: i64 = 0;
    let mut i = start;
    loop {
        let b = byte(buf, i)?;
        if !b.is_ascii_digit() {
            break;
        }
        if i.saturating_sub(start) >= MAX_DIGITS {
            return Err(RespError::BadNumber(WHAT).into());
        }
        let d = i64::from(b.wrapping_sub(b'0'));
        // Accumulating negative numbers downwards reaches i64::MIN.
        acc = acc
            .checked_mul(10)
            .and_then(|a| {
                if negative {
                    a.checked_sub(d)
                } else {
                    a.checked_add(d)
                }
            })
            .ok_or(Halt::Bad(RespError::BadNumber(WHAT)))?;
        i = i.saturating_add(1);
    }
    if i == start || byte(buf, i)? != b'\r' {
        return Err(RespError::BadNumber(WHAT).into());
    }
    Ok((acc, crlf(buf, i, WHAT)?))
}

/// A bulk length or array count: `digits CRLF`, or `-1 CRLF` for null.
#[inline]
fn length(buf: &[u8], pos: usize, what: &'static str) -> Step<(Option<usize>, usize)> {
    if byte(buf, pos)? == b'-' {
        let one = pos.saturating_add(1);
        if byte(buf, one)? != b'1' {
            return Err(RespError::BadNumber(what).into());
        }
        let next = crlf(buf, one.saturating_add(1), what).map_err(|h| match h {
            Halt::Bad(_) => Halt::Bad(RespError::BadNumber(what)),
            h => h,
        })?;
        return Ok((None, next));
    }
    let mut acc: usize = 0;
    let mut i = pos;
    loop {
        let b = byte(buf, i)?;
        if !b.is_ascii_digit() {
            break;
        }
        if i.saturating_sub(pos) >= MAX_DIGITS {
            return Err(RespError::BadNumber(what).into());
        }
        acc = acc
            .checked_mul(10)
            .and_then(|a| a.checked_add(usize::from(b.wrapping_sub(b'0'))))
            .ok_or(Halt::Bad(RespError::BadNumber(what)))?;
        i = i.saturating_add(1);
    }
    if i == pos || byte(buf, i)? != b'\r' {
        return Err(RespError::BadNumber(what).into());
    }
    Ok((Some(acc), crlf(buf, i, what)?))
}
