//! Backend frames, read where they lie: [`frame`] splits one off the front
//! of the read buffer (incomplete is `Ok(None)`), and the functions here
//! look into the bodies the client needs (authentication requests, rows,
//! error fields) without copying them.

use super::{tag, PgError};

/// One backend message at the front of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The message type (see [`tag`]).
    pub tag: u8,
    /// What follows the length.
    pub body: &'a [u8],
    /// Bytes the whole frame takes in the buffer (type, length, body).
    pub len: usize,
}

/// Whether `t` is a type byte a backend sends.
#[inline]
fn known(t: u8) -> bool {
    matches!(
        t,
        tag::AUTH
            | tag::BACKEND_KEY
            | tag::BIND_COMPLETE
            | tag::CLOSE_COMPLETE
            | tag::COMMAND_COMPLETE
            | tag::COPY_DATA
            | tag::DATA_ROW
            | tag::EMPTY_QUERY
            | tag::ERROR
            | tag::NO_DATA
            | tag::NOTICE
            | tag::NOTIFICATION
            | tag::PARAMETER_DESCRIPTION
            | tag::PARAMETER_STATUS
            | tag::PARSE_COMPLETE
            | tag::PORTAL_SUSPENDED
            | tag::READY
            | tag::ROW_DESCRIPTION
    )
}

/// The frame at the front of `buf`: `Ok(None)` while it is incomplete; an
/// error as soon as the type byte or the length cannot be right (a length
/// below 4 or above `max`), before the body arrives.
#[inline]
pub fn frame(buf: &[u8], max: usize) -> Result<Option<Frame<'_>>, PgError> {
    let Some(&t) = buf.first() else {
        return Ok(None);
    };
    if !known(t) {
        return Err(PgError::UnknownType(t));
    }
    let Some(head) = buf.get(1..5) else {
        return Ok(None);
    };
    let mut len = [0u8; 4];
    len.copy_from_slice(head);
    let len = u32::from_be_bytes(len);
    let body_len = usize::try_from(len)
        .ok()
        .and_then(|l| l.checked_sub(4))
        .filter(|&l| l <= max)
        .ok_or(PgError::BadLength(u64::from(len)))?;
    let end = body_len.saturating_add(5);
    Ok(buf.get(5..end).map(|body| Frame {
        tag: t,
        body,
        len: end,
    }))
}

/// A big-endian `u32` at `at`.
#[inline]
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let mut v = [0u8; 4];
    v.copy_from_slice(b.get(at..at.checked_add(4)?)?);
    Some(u32::from_be_bytes(v))
}

/// An authentication request (the body of an [`tag::AUTH`] frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Auth<'a> {
    /// Logged in.
    Ok,
    /// Send the password in clear.
    Cleartext,
    /// Send md5(md5(password + user) + salt).
    Md5([u8; 4]),
    /// SASL: the mechanisms offered, NUL-ended names, an empty one last
    /// (see [`sasl_mechanisms`]).
    Sasl(&'a [u8]),
    /// The server's next SASL message.
    SaslContinue(&'a [u8]),
    /// The server's last SASL message.
    SaslFinal(&'a [u8]),
    /// A method this client does not speak (Kerberos, GSS, SSPI...).
    Other(u32),
}

/// The request in an [`tag::AUTH`] frame's body.
pub fn auth(body: &[u8]) -> Result<Auth<'_>, PgError> {
    let bad = PgError::Malformed(tag::AUTH);
    let code = u32_at(body, 0).ok_or(bad.clone())?;
    let rest = body.get(4..).unwrap_or_default();
    Ok(match code {
        0 => Auth::Ok,
        3 => Auth::Cleartext,
        5 => Auth::Md5(rest.try_into().map_err(|_| bad)?),
        10 => Auth::Sasl(rest),
        11 => Auth::SaslContinue(rest),
        12 => Auth::SaslFinal(rest),
        other => Auth::Other(other),
    })
}

/// The mechanism names of an [`Auth::Sasl`] list.
pub fn sasl_mechanisms(list: &[u8]) -> impl Iterator<Item = &[u8]> {
    list.split(|&b| b == 0).take_while(|m| !m.is_empty())
}

/// The value of field `code` (`C`: the SQLSTATE, `M`: the message, `S`:
/// the severity) of an ErrorResponse or NoticeResponse body.
pub fn error_field(body: &[u8], code: u8) -> Option<&[u8]> {
    let mut rest = body;
    loop {
        let (&field, after) = rest.split_first()?;
        if field == 0 {
            return None;
        }
        let end = after.iter().position(|&b| b == 0)?;
        let value = after.get(..end)?;
        if field == code {
            return Some(value);
        }
        rest = after.get(end.saturating_add(1)..)?;
    }
}

/// A DataRow's body: a column count and each column's length (-1: NULL)
/// and bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataRow<'a> {
    count: u16,
    cells: &'a [u8],
}

impl<'a> DataRow<'a> {
    /// The row in a [`tag::DATA_ROW`] frame's body.
    pub fn new(body: &'a [u8]) -> Result<DataRow<'a>, PgError> {
        let bad = PgError::Malformed(tag::DATA_ROW);
        let count = body.get(..2).ok_or(bad)?;
        Ok(DataRow {
            count: u16::from_be_bytes([
                count.first().copied().unwrap_or(0),
                count.get(1).copied().unwrap_or(0),
            ]),
            cells: body.get(2..).unwrap_or_default(),
        })
    }

    /// How many columns the row has.
    pub fn len(&self) -> usize {
        usize::from(self.count)
    }

    /// Whether the row has no columns.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Column `i`: `Ok(None)` for NULL, an error when there is no such
    /// column or the row ends inside it.
    pub fn get(&self, i: usize) -> Result<Option<&'a [u8]>, PgError> {
        let bad = PgError::Malformed(tag::DATA_ROW);
        if i >= self.len() {
            return Err(bad);
        }
        let mut at = 0usize;
        for k in 0..=i {
            let len = u32_at(self.cells, at).ok_or(bad.clone())?;
            at = at.saturating_add(4);
            if len == u32::MAX {
                if k == i {
                    return Ok(None);
                }
                continue;
            }
            let end = at.saturating_add(len as usize);
            let cell = self.cells.get(at..end).ok_or(bad.clone())?;
            if k == i {
                return Ok(Some(cell));
            }
            at = end;
        }
        Err(bad)
    }
}
