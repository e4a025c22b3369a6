//! Owns reading NATS operations from the front of a read buffer: the verb
//! first (so garbage is refused at its first bytes, not after a line's
//! worth), then the control line up to CRLF within the verb's limit, then
//! the arguments, then a payload skipped by its length, never scanned.
//!
//! Both directions share the machinery and differ only in the verbs they
//! accept.

use super::{ClientOp, Json, Limits, Msg, NatsError, Pub, ServerOp, Sub, Unsub};
use crate::mq::step::{byte, find_line_end, finish, Halt};
use crate::step::parse_u64;

type Step<T> = crate::mq::step::Step<T, NatsError>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    Info,
    Msg,
    Ok,
    Err,
    Ping,
    Pong,
    Connect,
    Pub,
    Sub,
    Unsub,
    Hmsg,
    Hpub,
}

/// What a server sends. `HMSG` is recognised only to be named in the
/// error.
const SERVER_VERBS: &[(&[u8], Verb)] = &[
    (b"MSG", Verb::Msg),
    (b"PING", Verb::Ping),
    (b"PONG", Verb::Pong),
    (b"+OK", Verb::Ok),
    (b"-ERR", Verb::Err),
    (b"INFO", Verb::Info),
    (b"HMSG", Verb::Hmsg),
];

/// What a client sends.
const CLIENT_VERBS: &[(&[u8], Verb)] = &[
    (b"PUB", Verb::Pub),
    (b"SUB", Verb::Sub),
    (b"UNSUB", Verb::Unsub),
    (b"PING", Verb::Ping),
    (b"PONG", Verb::Pong),
    (b"CONNECT", Verb::Connect),
    (b"HPUB", Verb::Hpub),
];

/// The longest verb, `CONNECT`.
const MAX_VERB: usize = 7;

/// Parses the server operation at the front of `buf`, with
/// [`Limits::DEFAULT`].
///
/// Returns `Ok(Some((op, n)))` when the first `n` bytes are one whole
/// operation (for `MSG`, its payload and CRLF too), `Ok(None)` when more
/// bytes are needed, and an error when the bytes cannot be one. The
/// operation borrows from `buf`.
#[inline]
pub fn parse_server_op(buf: &[u8]) -> Result<Option<(ServerOp<'_>, usize)>, NatsError> {
    parse_server_op_with(buf, &Limits::DEFAULT)
}

/// [`parse_server_op`] with other limits.
#[inline]
pub fn parse_server_op_with<'a>(
    buf: &'a [u8],
    limits: &Limits,
) -> Result<Option<(ServerOp<'a>, usize)>, NatsError> {
    finish(server_op(buf, limits))
}

/// Parses the client operation at the front of `buf` (what a test server
/// reads), with [`Limits::DEFAULT`]; results as [`parse_server_op`].
#[inline]
pub fn parse_client_op(buf: &[u8]) -> Result<Option<(ClientOp<'_>, usize)>, NatsError> {
    parse_client_op_with(buf, &Limits::DEFAULT)
}

/// [`parse_client_op`] with other limits.
#[inline]
pub fn parse_client_op_with<'a>(
    buf: &'a [u8],
    limits: &Limits,
) -> Result<Option<(ClientOp<'a>, usize)>, NatsError> {
    finish(client_op(buf, limits))
}

fn server_op<'a>(buf: &'a [u8], limits: &Limits) -> Step<(ServerOp<'a>, usize)> {
    let (verb, args_at) = verb(buf, SERVER_VERBS)?;
    let (args, next) = line(buf, args_at, line_limit(verb, limits))?;
    let op = match verb {
        Verb::Msg => {
            let bad = || Halt::Bad(NatsError::Malformed("MSG arguments"));
            let (subject, sid, reply_to, len) = match fields::<4>(args).ok_or_else(bad)? {
                (3, [s, i, n, _]) => (s, i, None, n),
                (4, [s, i, r, n]) => (s, i, Some(r), n),
                _ => return Err(bad()),
            };
            let (payload, end) = payload(buf, next, len, limits, "MSG")?;
            return Ok((
                ServerOp::Msg(Msg {
                    subject,
                    sid,
                    reply_to,
                    payload,
                }),
                end,
            ));
        }
        Verb::Ping => no_args(args, ServerOp::Ping, "PING")?,
        Verb::Pong => no_args(args, ServerOp::Pong, "PONG")?,
        Verb::Ok => no_args(args, ServerOp::Ok, "+OK")?,
        Verb::Err => ServerOp::Err(err_message(args)),
        Verb::Info => ServerOp::Info(json(args, "INFO")?),
        Verb::Hmsg => return Err(NatsError::Unsupported("HMSG").into()),
        _ => return Err(NatsError::UnknownOp.into()),
    };
    Ok((op, next))
}

fn client_op<'a>(buf: &'a [u8], limits: &Limits) -> Step<(ClientOp<'a>, usize)> {
    let (verb, args_at) = verb(buf, CLIENT_VERBS)?;
    let (args, next) = line(buf, args_at, line_limit(verb, limits))?;
    let op = match verb {
        Verb::Pub => {
            let bad = || Halt::Bad(NatsError::Malformed("PUB arguments"));
            let (subject, reply_to, len) = match fields::<3>(args).ok_or_else(bad)? {
                (2, [s, n, _]) => (s, None, n),
                (3, [s, r, n]) => (s, Some(r), n),
                _ => return Err(bad()),
            };
            let (payload, end) = payload(buf, next, len, limits, "PUB")?;
            return Ok((
                ClientOp::Pub(Pub {
                    subject,
                    reply_to,
                    payload,
                }),
                end,
            ));
        }
        Verb::Sub => {
            let bad = || Halt::Bad(NatsError::Malformed("SUB arguments"));
            let (subject, queue_group, sid) = match fields::<3>(args).ok_or_else(bad)? {
                (2, [s, i, _]) => (s, None, i),
                (3, [s, q, i]) => (s, Some(q), i),
                _ => return Err(bad()),
            };
            ClientOp::Sub(Sub {
                subject,
                queue_group,
                sid,
            })
        }
        Verb::Unsub => {
            let bad = || Halt::Bad(NatsError::Malformed("UNSUB arguments"));
            let (sid, max_msgs) = match fields::<2>(args).ok_or_else(bad)? {
                (1, [i, _]) => (i, None),
                (2, [i, m]) => (i, Some(parse_u64(m).ok_or_else(bad)?)),
                _ => return Err(bad()),
            };
            ClientOp::Unsub(Unsub { sid, max_msgs })
        }
        Verb::Ping => no_args(args, ClientOp::Ping, "PING")?,
        Verb::Pong => no_args(args, ClientOp::Pong, "PONG")?,
        Verb::Connect => ClientOp::Connect(json(args, "CONNECT")?),
        Verb::Hpub => return Err(NatsError::Unsupported("HPUB").into()),
        _ => return Err(NatsError::UnknownOp.into()),
    };
    Ok((op, next))
}

fn line_limit(verb: Verb, limits: &Limits) -> usize {
    match verb {
        Verb::Info | Verb::Connect => limits.max_json_line,
        _ => limits.max_control_line,
    }
}

#[inline]
fn is_space(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// The verb at the front of `buf` and where its arguments start (at the
/// separator after it, or at the line's end).
///
/// A verb is complete once a space, tab, CR or LF follows it; before that,
/// bytes that cannot begin any verb of `table` are refused at once and a
/// beginning of one is incomplete.
#[inline]
fn verb(buf: &[u8], table: &[(&[u8], Verb)]) -> Step<(Verb, usize)> {
    // The first entry is the verb of the hot path (MSG, PUB), as servers
    // and clients write it: upper case, one space.
    if let Some(&(name, v)) = table.first() {
        if buf.get(name.len()) == Some(&b' ') && buf.starts_with(name) {
            return Ok((v, name.len()));
        }
    }
    let window = buf.get(..MAX_VERB.saturating_add(1)).unwrap_or(buf);
    match window
        .iter()
        .position(|&b| is_space(b) || b == b'\r' || b == b'\n')
    {
        Some(end) => {
            let word = window.get(..end).unwrap_or_default();
            table
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(word))
                .map(|&(_, v)| (v, end))
                .ok_or(Halt::Bad(NatsError::UnknownOp))
        }
        None => {
            let begins = table.iter().any(|(name, _)| {
                name.get(..window.len())
                    .is_some_and(|p| p.eq_ignore_ascii_case(window))
            });
            if begins {
                Err(Halt::Incomplete)
            } else {
                Err(NatsError::UnknownOp.into())
            }
        }
    }
}

/// The rest of the control line from `at` (the arguments, CRLF excluded)
/// and the position after its CRLF. `max` bounds the whole line, verb
/// included.
#[inline]
fn line(buf: &[u8], at: usize, max: usize) -> Step<(&[u8], usize)> {
    let rest = buf.get(at..).unwrap_or_default();
    match max
        .checked_sub(at)
        .and_then(|room| find_line_end(rest, room))
    {
        Some(n) => {
            let cr = at.saturating_add(n);
            let next = crlf(buf, cr, "control line")?;
            Ok((buf.get(at..cr).unwrap_or_default(), next))
        }
        None if buf.len() > max => Err(NatsError::TooLarge {
            what: "control line",
            len: buf.len(),
            max,
        }
        .into()),
        None => Err(Halt::Incomplete),
    }
}

/// Expects CRLF at `pos`; returns the position after it.
#[inline]
fn crlf(buf: &[u8], pos: usize, what: &'static str) -> Step<usize> {
    match (byte(buf, pos)?, byte(buf, pos.saturating_add(1))) {
        (b'\r', Ok(b'\n')) => Ok(pos.saturating_add(2)),
        (b'\r', Err(h)) => Err(h),
        _ => Err(NatsError::BadLineEnd(what).into()),
    }
}

/// Splits arguments at runs of spaces and tabs into at most `N` fields;
/// returns how many there are, or `None` for more than `N`.
#[inline]
fn fields<const N: usize>(args: &[u8]) -> Option<(usize, [&[u8]; N])> {
    let mut out: [&[u8]; N] = [&[]; N];
    let mut n = 0usize;
    let mut start = None;
    for (i, &b) in args.iter().enumerate() {
        match (is_space(b), start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                *out.get_mut(n)? = args.get(s..i)?;
                n = n.saturating_add(1);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        *out.get_mut(n)? = args.get(s..)?;
        n = n.saturating_add(1);
    }
    Some((n, out))
}

/// Whitespace only is allowed after an operation without arguments.
fn no_args<T>(args: &[u8], op: T, what: &'static str) -> Step<T> {
    if args.iter().all(|&b| is_space(b)) {
        Ok(op)
    } else {
        Err(NatsError::Malformed(what).into())
    }
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&b| !is_space(b)).unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|&b| !is_space(b))
        .map_or(start, |i| i.saturating_add(1));
    s.get(start..end).unwrap_or_default()
}

/// `-ERR`'s message: trimmed, and without the single quotes servers put
/// around it.
fn err_message(args: &[u8]) -> &[u8] {
    let m = trim(args);
    match m {
        [b'\'', inner @ .., b'\''] => inner,
        _ => m,
    }
}

/// The JSON argument of `INFO`/`CONNECT`: anything non-empty; it is only
/// scanned when a field is asked for.
fn json<'a>(args: &'a [u8], what: &'static str) -> Step<Json<'a>> {
    match trim(args) {
        [] => Err(NatsError::Malformed(what).into()),
        j => Ok(Json::new(j)),
    }
}

/// The payload of `len` (decimal) bytes at `start`, then CRLF; returns it
/// and the position after the CRLF.
#[inline]
fn payload<'a>(
    buf: &'a [u8],
    start: usize,
    len: &[u8],
    limits: &Limits,
    what: &'static str,
) -> Step<(&'a [u8], usize)> {
    let n = parse_u64(len).ok_or(Halt::Bad(NatsError::Malformed("payload length")))?;
    let n = usize::try_from(n)
        .ok()
        .filter(|&n| n <= limits.max_payload)
        .ok_or(Halt::Bad(NatsError::TooLarge {
            what: "payload",
            len: usize::try_from(n).unwrap_or(usize::MAX),
            max: limits.max_payload,
        }))?;
    let end = start.saturating_add(n);
    let next = crlf(buf, end, what)?;
    Ok((buf.get(start..end).ok_or(Halt::Incomplete)?, next))
}
