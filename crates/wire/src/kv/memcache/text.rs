//! Owns memcached's text protocol (protocol.txt): command lines out,
//! response lines and data blocks in.
//!
//! Requests: `get`/`gets` with one or many keys, `set`/`add`/`replace` with
//! flags, exptime and `noreply`, `delete`, `incr`/`decr`. Keys are checked
//! (1 to 250 bytes, no whitespace or control characters), because a space
//! in a key would silently turn into another command's arguments.
//!
//! Responses carry no tag, so [`parse_response`] recognises every response
//! by its first line, whatever command it answers: a `VALUE … END` block,
//! a status word, an error line, or a number (incr/decr).

use bytes::{BufMut, BytesMut};

use super::{McError, MAX_KEY_LEN, MAX_VALUE_LEN};
use crate::kv::num::{parse_u64, Scratch};
use crate::kv::step::{byte, find_line_end, finish, Halt};

type Step<T> = crate::kv::step::Step<T, McError>;

/// Longest response line accepted, CRLF excluded. A `VALUE` line is at most
/// about 320 bytes (a 250-byte key and three numbers); error messages are
/// short. A line that has not ended by then means a corrupt stream.
pub const MAX_LINE_LEN: usize = 8 * 1024;

/// Rejects keys memcached would reject or, worse, misparse.
fn check_key(key: &[u8]) -> Result<(), McError> {
    if key.is_empty() || key.len() > MAX_KEY_LEN {
        return Err(McError::KeyLength(key.len()));
    }
    match key.iter().find(|&&b| b <= b' ' || b == 0x7f) {
        Some(&b) => Err(McError::KeyByte(b)),
        None => Ok(()),
    }
}

/// Room for any single-key command line this module writes: the longest
/// (`replace`, a 250-byte key, flags and exptime of 10 digits, a length of
/// 20, spaces, ` noreply`, CRLF) is 311 bytes. Lines are assembled on the
/// stack and appended with one copy.
const LINE: usize = 320;

fn noreply_word(noreply: bool) -> &'static [u8] {
    if noreply {
        b" noreply"
    } else {
        b""
    }
}

/// Appends `get <key>\r\n`.
pub fn encode_get(buf: &mut BytesMut, key: &[u8]) -> Result<(), McError> {
    encode_retrieval(buf, b"get", &[key])
}

/// Appends `gets <key>\r\n` (the reply's items carry their cas unique).
pub fn encode_gets(buf: &mut BytesMut, key: &[u8]) -> Result<(), McError> {
    encode_retrieval(buf, b"gets", &[key])
}

/// Appends `get <key> <key> …\r\n`. The server answers with one `VALUE`
/// block per key it holds, in request order, then `END`.
pub fn encode_get_multi(buf: &mut BytesMut, keys: &[&[u8]]) -> Result<(), McError> {
    encode_retrieval(buf, b"get", keys)
}

/// Appends `gets <key> <key> …\r\n`.
pub fn encode_gets_multi(buf: &mut BytesMut, keys: &[&[u8]]) -> Result<(), McError> {
    encode_retrieval(buf, b"gets", keys)
}

fn encode_retrieval(buf: &mut BytesMut, cmd: &[u8], keys: &[&[u8]]) -> Result<(), McError> {
    // Check every key before writing anything, so a bad key leaves `buf`
    // as it was.
    for key in keys {
        check_key(key)?;
    }
    match keys {
        [] => Err(McError::NoKeys),
        [key] => {
            Scratch::<LINE>::new()
                .push(cmd)
                .push(b" ")
                .push(key)
                .push(b"\r\n")
                .put_into(buf);
            Ok(())
        }
        _ => {
            buf.put_slice(cmd);
            for key in keys {
                buf.put_u8(b' ');
                buf.put_slice(key);
            }
            buf.put_slice(b"\r\n");
            Ok(())
        }
    }
}

/// The three storage commands that differ only in their condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreCmd {
    /// Store unconditionally.
    Set,
    /// Store only if the key is not held (else `NOT_STORED`).
    Add,
    /// Store only if the key is held (else `NOT_STORED`).
    Replace,
}

impl StoreCmd {
    fn name(self) -> &'static [u8] {
        match self {
            StoreCmd::Set => b"set",
            StoreCmd::Add => b"add",
            StoreCmd::Replace => b"replace",
        }
    }
}

/// The fields of a storage command besides key and value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreOpts {
    /// Opaque to the server, returned by `get`; 32 bits since memcached
    /// 1.2.1 (protocol.txt suggests 16 for older servers).
    pub flags: u32,
    /// 0 never expires; up to 30 days a relative number of seconds, beyond
    /// that a Unix time.
    pub exptime: u32,
    /// Ask the server not to answer; then no response is to be parsed.
    pub noreply: bool,
}

/// Appends `<cmd> <key> <flags> <exptime> <bytes> [noreply]\r\n<value>\r\n`.
pub fn encode_store(
    buf: &mut BytesMut,
    cmd: StoreCmd,
    key: &[u8],
    value: &[u8],
    opts: StoreOpts,
) -> Result<(), McError> {
    check_key(key)?;
    Scratch::<LINE>::new()
        .push(cmd.name())
        .push(b" ")
        .push(key)
        .push(b" ")
        .push_u64(u64::from(opts.flags))
        .push(b" ")
        .push_u64(u64::from(opts.exptime))
        .push(b" ")
        .push_len(value.len())
        .push(noreply_word(opts.noreply))
        .push(b"\r\n")
        .put_into(buf);
    buf.put_slice(value);
    buf.put_slice(b"\r\n");
    Ok(())
}

/// Appends `delete <key> [noreply]\r\n` (answer: `DELETED` or `NOT_FOUND`).
pub fn encode_delete(buf: &mut BytesMut, key: &[u8], noreply: bool) -> Result<(), McError> {
    check_key(key)?;
    Scratch::<LINE>::new()
        .push(b"delete ")
        .push(key)
        .push(noreply_word(noreply))
        .push(b"\r\n")
        .put_into(buf);
    Ok(())
}

/// Appends `incr <key> <delta> [noreply]\r\n` (answer: the new value as a
/// number, or `NOT_FOUND`; the item must exist).
pub fn encode_incr(
    buf: &mut BytesMut,
    key: &[u8],
    delta: u64,
    noreply: bool,
) -> Result<(), McError> {
    encode_arith(buf, b"incr ", key, delta, noreply)
}

/// Appends `decr <key> <delta> [noreply]\r\n` (the server stops at 0).
pub fn encode_decr(
    buf: &mut BytesMut,
    key: &[u8],
    delta: u64,
    noreply: bool,
) -> Result<(), McError> {
    encode_arith(buf, b"decr ", key, delta, noreply)
}

fn encode_arith(
    buf: &mut BytesMut,
    cmd: &[u8],
    key: &[u8],
    delta: u64,
    noreply: bool,
) -> Result<(), McError> {
    check_key(key)?;
    Scratch::<LINE>::new()
        .push(cmd)
        .push(key)
        .push(b" ")
        .push_u64(delta)
        .push(noreply_word(noreply))
        .push(b"\r\n")
        .put_into(buf);
    Ok(())
}

/// One response, borrowing from the read buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Response<'a> {
    /// The answer to a get/gets: the items found (possibly none), then
    /// `END`.
    Values(Values<'a>),
    /// `STORED`
    Stored,
    /// `NOT_STORED`: an add's or replace's condition was not met.
    NotStored,
    /// `EXISTS`: a cas lost the race.
    Exists,
    /// `NOT_FOUND` (delete, incr/decr, cas of a missing key).
    NotFound,
    /// `DELETED`
    Deleted,
    /// The new value after incr/decr (the server may pad it with spaces,
    /// which are dropped).
    Number(u64),
    /// `ERROR`: the server did not know the command.
    Error,
    /// `CLIENT_ERROR <message>`
    ClientError(&'a [u8]),
    /// `SERVER_ERROR <message>` (after some of these the server closes the
    /// connection).
    ServerError(&'a [u8]),
}

impl Response<'_> {
    /// True for `ERROR`, `CLIENT_ERROR` and `SERVER_ERROR`; not for
    /// `NOT_FOUND` or `NOT_STORED`, which are answers, not failures.
    pub fn is_error(&self) -> bool {
        matches!(
            self,
            Response::Error | Response::ClientError(_) | Response::ServerError(_)
        )
    }
}

/// The items of a retrieval response, checked when parsed and iterated
/// lazily.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Values<'a> {
    len: usize,
    /// From the first `VALUE` line to just before `END\r\n`.
    body: &'a [u8],
    /// Kept from validation: a single-key get, the common case, needs no
    /// second parse.
    first: Option<Item<'a>>,
}

impl<'a> Values<'a> {
    /// Number of items (keys found).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a bare `END` (no key found).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The items in server order.
    pub fn iter(&self) -> Items<'a> {
        Items {
            rest: self.body,
            remaining: self.len,
        }
    }

    /// The first item, the whole answer to a single-key get.
    pub fn first(&self) -> Option<Item<'a>> {
        self.first
    }
}

impl<'a> IntoIterator for Values<'a> {
    type Item = Item<'a>;
    type IntoIter = Items<'a>;

    fn into_iter(self) -> Items<'a> {
        self.iter()
    }
}

/// One item of a retrieval response:
/// `VALUE <key> <flags> <bytes> [<cas unique>]\r\n<data block>\r\n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item<'a> {
    /// The key.
    pub key: &'a [u8],
    /// The flags given when it was stored.
    pub flags: u32,
    /// The data block, without its CRLF.
    pub value: &'a [u8],
    /// The cas unique, present in answers to `gets`.
    pub cas: Option<u64>,
}

/// Iterator over the [`Item`]s of [`Values`].
#[derive(Debug, Clone)]
pub struct Items<'a> {
    rest: &'a [u8],
    remaining: usize,
}

impl<'a> Iterator for Items<'a> {
    type Item = Item<'a>;

    fn next(&mut self) -> Option<Item<'a>> {
        if self.remaining == 0 {
            return None;
        }
        // Validated at parse time; a failure here ends the iteration rather
        // than panicking.
        match item(self.rest, 0) {
            Ok((item, next)) => {
                self.rest = self.rest.get(next..).unwrap_or_default();
                self.remaining = self.remaining.saturating_sub(1);
                Some(item)
            }
            _ => {
                self.remaining = 0;
                None
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Items<'_> {}

impl std::iter::FusedIterator for Items<'_> {}

/// Parses the response at the front of `buf`.
///
/// Returns `Ok(Some((response, n)))` when the first `n` bytes are one whole
/// response (for a retrieval, every item and the `END` line), `Ok(None)`
/// when more bytes are needed, and an error when the bytes cannot be a
/// response. Data blocks are skipped by their length, not scanned.
#[inline]
pub fn parse_response(buf: &[u8]) -> Result<Option<(Response<'_>, usize)>, McError> {
    finish(response(buf))
}

fn response(buf: &[u8]) -> Step<(Response<'_>, usize)> {
    if buf.starts_with(b"VALUE ") {
        return values(buf);
    }
    let (first, next) = line(buf, 0)?;
    let r = match first {
        b"END" => Response::Values(Values {
            len: 0,
            body: &[],
            first: None,
        }),
        b"STORED" => Response::Stored,
        b"NOT_STORED" => Response::NotStored,
        b"EXISTS" => Response::Exists,
        b"NOT_FOUND" => Response::NotFound,
        b"DELETED" => Response::Deleted,
        b"ERROR" => Response::Error,
        _ => {
            if let Some(msg) = message(first, b"CLIENT_ERROR") {
                Response::ClientError(msg)
            } else if let Some(msg) = message(first, b"SERVER_ERROR") {
                Response::ServerError(msg)
            } else if first.first().is_some_and(u8::is_ascii_digit) {
                Response::Number(number(first)?)
            } else {
                return Err(McError::UnknownResponse.into());
            }
        }
    };
    Ok((r, next))
}

/// `WORD` alone, or `WORD <message>`: the message (possibly empty).
fn message<'a>(line: &'a [u8], word: &[u8]) -> Option<&'a [u8]> {
    match line.strip_prefix(word)? {
        [] => Some(&[]),
        [b' ', msg @ ..] => Some(msg),
        _ => None,
    }
}

/// The incr/decr answer: digits, maybe padded with trailing spaces.
fn number(line: &[u8]) -> Step<u64> {
    let end = line
        .iter()
        .rposition(|&b| b != b' ')
        .map_or(0, |i| i.saturating_add(1));
    line.get(..end)
        .and_then(parse_u64)
        .ok_or(Halt::Bad(McError::Malformed("number")))
}

/// A whole retrieval response starting with a `VALUE` line at 0.
fn values(buf: &[u8]) -> Step<(Response<'_>, usize)> {
    let mut pos = 0;
    let mut len = 0usize;
    let mut first = None;
    loop {
        if line_is(buf, pos, b"END\r\n")? {
            let body = buf.get(..pos).ok_or(Halt::Incomplete)?;
            let end = pos.saturating_add(5);
            return Ok((Response::Values(Values { len, body, first }), end));
        }
        let (item, next) = item(buf, pos)?;
        first = first.or(Some(item));
        pos = next;
        len = len.saturating_add(1);
    }
}

/// Whether the line at `pos` is exactly `expected` (CRLF included);
/// incomplete only while what is there is still a prefix of it.
fn line_is(buf: &[u8], pos: usize, expected: &[u8]) -> Step<bool> {
    let rest = buf.get(pos..).unwrap_or_default();
    if rest.len() >= expected.len() {
        Ok(rest.starts_with(expected))
    } else if expected.starts_with(rest) {
        Err(Halt::Incomplete)
    } else {
        Ok(false)
    }
}

/// One `VALUE` line and its data block at `pos`; returns the item and the
/// position after the block's CRLF.
#[inline]
fn item(buf: &[u8], pos: usize) -> Step<(Item<'_>, usize)> {
    let (line, start) = line(buf, pos)?;
    let fields = line
        .strip_prefix(b"VALUE ")
        .ok_or(Halt::Bad(McError::Malformed("line in a VALUE block")))?;
    let bad = || Halt::Bad(McError::Malformed("VALUE line"));
    let (key, rest) = token(fields).ok_or_else(bad)?;
    let (flags, rest) = token(rest).ok_or_else(bad)?;
    let (bytes, rest) = token(rest).ok_or_else(bad)?;
    let cas = match token(rest) {
        None => None,
        Some((cas, rest)) if token(rest).is_none() => Some(parse_u64(cas).ok_or_else(bad)?),
        Some(_) => return Err(bad()),
    };
    let flags = parse_u64(flags)
        .and_then(|f| u32::try_from(f).ok())
        .ok_or_else(bad)?;
    let bytes = parse_u64(bytes).ok_or_else(bad)?;
    let bytes = usize::try_from(bytes)
        .ok()
        .filter(|&b| b <= MAX_VALUE_LEN)
        .ok_or(Halt::Bad(McError::TooLarge {
            what: "value",
            len: usize::try_from(bytes).unwrap_or(usize::MAX),
            max: MAX_VALUE_LEN,
        }))?;
    // bytes <= MAX_VALUE_LEN, far from overflowing a position.
    let end = start.saturating_add(bytes);
    let next = crlf(buf, end, "data block")?;
    let value = buf.get(start..end).ok_or(Halt::Incomplete)?;
    Ok((
        Item {
            key,
            flags,
            value,
            cas,
        },
        next,
    ))
}

/// The first space-separated token of `s` and what follows it; `None`
/// when only spaces are left.
#[inline]
fn token(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let start = s.iter().position(|&b| b != b' ')?;
    let s = s.get(start..)?;
    let end = s.iter().position(|&b| b == b' ').unwrap_or(s.len());
    s.split_at_checked(end)
}

/// Expects CRLF at `pos`; returns the position after it.
#[inline]
fn crlf(buf: &[u8], pos: usize, what: &'static str) -> Step<usize> {
    match (byte(buf, pos)?, byte(buf, pos.saturating_add(1))) {
        (b'\r', Ok(b'\n')) => Ok(pos.saturating_add(2)),
        (b'\r', Err(h)) => Err(h),
        _ => Err(McError::BadLineEnd(what).into()),
    }
}

/// The line at `pos` up to CRLF (neither CR nor LF inside); returns it with
/// the position after the CRLF.
#[inline]
fn line(buf: &[u8], pos: usize) -> Step<(&[u8], usize)> {
    let rest = buf.get(pos..).ok_or(Halt::Incomplete)?;
    match find_line_end(rest, MAX_LINE_LEN) {
        Some(n) => {
            let next = crlf(buf, pos.saturating_add(n), "response line")?;
            Ok((rest.get(..n).ok_or(Halt::Incomplete)?, next))
        }
        None if rest.len() > MAX_LINE_LEN => Err(McError::TooLarge {
            what: "response line",
            len: rest.len(),
            max: MAX_LINE_LEN,
        }
        .into()),
        None => Err(Halt::Incomplete),
    }
}

/// Appends `stats\r\n` (the general statistics).
pub fn encode_stats(buf: &mut BytesMut) {
    buf.put_slice(b"stats\r\n");
}

/// Appends `version\r\n`.
pub fn encode_version(buf: &mut BytesMut) {
    buf.put_slice(b"version\r\n");
}

/// The answer to `stats`: `STAT <name> <value>` lines, then `END`. Checked
/// when parsed; its lines are read again, lazily, by [`Stats::iter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats<'a> {
    /// From the first `STAT` line to just before `END\r\n`.
    body: &'a [u8],
}

impl<'a> Stats<'a> {
    /// `(name, value)` in server order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        self.body
            .split(|&b| b == b'\n')
            .filter_map(|l| stat(l.strip_suffix(b"\r").unwrap_or(l)))
    }

    /// The value of statistic `name`, as a number.
    pub fn number(&self, name: &[u8]) -> Option<u64> {
        self.iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| parse_u64(v))
    }
}

/// `STAT <name> <value>` -> `(name, value)`; the value may hold spaces.
fn stat(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let fields = line.strip_prefix(b"STAT ")?;
    let (name, rest) = token(fields)?;
    let value = rest.strip_prefix(b" ")?;
    Some((name, value))
}

/// Parses the answer to `stats` at the front of `buf`: `Ok(None)` until
/// the `END` line is there; an error for any line that is not a `STAT`
/// line (an error reply included).
pub fn parse_stats(buf: &[u8]) -> Result<Option<(Stats<'_>, usize)>, McError> {
    finish(stats(buf))
}

fn stats(buf: &[u8]) -> Step<(Stats<'_>, usize)> {
    let mut pos = 0;
    loop {
        let (l, next) = line(buf, pos)?;
        if l == b"END" {
            let body = buf.get(..pos).ok_or(Halt::Incomplete)?;
            return Ok((Stats { body }, next));
        }
        if stat(l).is_none() {
            return Err(McError::Malformed("STAT line").into());
        }
        pos = next;
    }
}

/// Parses the answer to `version` at the front of `buf`: the version
/// string after `VERSION `.
pub fn parse_version(buf: &[u8]) -> Result<Option<(&[u8], usize)>, McError> {
    finish(
        line(buf, 0).and_then(|(l, next)| match l.strip_prefix(b"VERSION ") {
            Some(v) => Ok((v, next)),
            None => Err(McError::UnknownResponse.into()),
        }),
    )
}
