//! Owns the bytes a NATS client sends (and, for tests, what a server
//! sends): each encoder checks its arguments, then appends one whole
//! operation to the caller's buffer with one reservation. An encoder that
//! refuses its arguments leaves the buffer exactly as it was.
//!
//! Encoders hold to [`Limits::DEFAULT`](super::Limits::DEFAULT), so what
//! they write, [`parse_client_op`](super::parse_client_op) and
//! [`parse_server_op`](super::parse_server_op) read back.

use bytes::{BufMut, BytesMut};

use super::{NatsError, MAX_CONTROL_LINE, MAX_JSON_LINE, MAX_PAYLOAD};
use crate::step::Decimal;

/// Sum of lengths; saturates rather than wrapping (a saturated sum is over
/// every limit, so it is refused, never written).
#[inline]
fn sum(parts: &[usize]) -> usize {
    parts.iter().fold(0usize, |a, &b| a.saturating_add(b))
}

/// A subject, reply subject, queue group or sid: one field of a control
/// line, so non-empty and free of the separators.
#[inline]
fn check_token(t: &[u8], what: &'static str) -> Result<(), NatsError> {
    if t.is_empty() || t.iter().any(|&b| matches!(b, b' ' | b'\t' | b'\r' | b'\n')) {
        return Err(NatsError::BadToken(what));
    }
    Ok(())
}

#[inline]
fn check_len(len: usize, max: usize, what: &'static str) -> Result<(), NatsError> {
    if len > max {
        return Err(NatsError::TooLarge { what, len, max });
    }
    Ok(())
}

/// `<verb> <a> [<b>] <#bytes>\r\n<payload>\r\n`: PUB and MSG.
fn encode_payload_op(
    buf: &mut BytesMut,
    verb: &'static [u8],
    fields: [Option<&[u8]>; 3],
    payload: &[u8],
    what: &'static str,
) -> Result<(), NatsError> {
    check_len(payload.len(), MAX_PAYLOAD, "payload")?;
    let digits = Decimal::new(payload.len() as u64);
    let fields_len = fields
        .iter()
        .flatten()
        .fold(0usize, |a, f| a.saturating_add(f.len()).saturating_add(1));
    let line = sum(&[verb.len(), fields_len, 1, digits.as_bytes().len()]);
    check_len(line, MAX_CONTROL_LINE, what)?;
    buf.reserve(sum(&[line, 4, payload.len()]));
    // The control line is assembled on the stack and appended with one
    // copy (the hot path's PUB: a handful of small appends cost more than
    // the bytes); a line too long for it is appended piece by piece.
    let mut head = [0u8; 256];
    let mut at: usize = 0;
    let mut fits = true;
    let mut put = |bytes: &[u8]| {
        let end = at.saturating_add(bytes.len());
        match head.get_mut(at..end) {
            Some(dst) if fits => {
                dst.copy_from_slice(bytes);
                at = end;
            }
            _ => fits = false,
        }
    };
    put(verb);
    for f in fields.iter().flatten() {
        put(b" ");
        put(f);
    }
    put(b" ");
    put(digits.as_bytes());
    put(b"\r\n");
    if let Some(line) = head.get(..at).filter(|_| fits) {
        buf.put_slice(line);
    } else {
        buf.put_slice(verb);
        for f in fields.iter().flatten() {
            buf.put_u8(b' ');
            buf.put_slice(f);
        }
        buf.put_u8(b' ');
        buf.put_slice(digits.as_bytes());
        buf.put_slice(b"\r\n");
    }
    buf.put_slice(payload);
    buf.put_slice(b"\r\n");
    Ok(())
}

/// Appends `PUB <subject> [reply-to] <#bytes>\r\n<payload>\r\n`.
///
/// Refuses an empty subject or one holding whitespace, a payload over
/// [`MAX_PAYLOAD`] and a line over [`MAX_CONTROL_LINE`]. The server may
/// hold a lower `max_payload` (its `INFO` says); it answers a longer
/// payload with `-ERR 'Maximum Payload Violation'` and closes.
pub fn encode_pub(
    buf: &mut BytesMut,
    subject: &[u8],
    reply_to: Option<&[u8]>,
    payload: &[u8],
) -> Result<(), NatsError> {
    check_token(subject, "subject")?;
    if let Some(r) = reply_to {
        check_token(r, "reply subject")?;
    }
    encode_payload_op(
        buf,
        b"PUB",
        [Some(subject), reply_to, None],
        payload,
        "PUB line",
    )
}

/// Appends `SUB <subject> [queue group] <sid>\r\n`. The server echoes
/// `sid` in every `MSG` for this subscription.
pub fn encode_sub(
    buf: &mut BytesMut,
    subject: &[u8],
    queue_group: Option<&[u8]>,
    sid: u64,
) -> Result<(), NatsError> {
    check_token(subject, "subject")?;
    if let Some(q) = queue_group {
        check_token(q, "queue group")?;
    }
    let sid = Decimal::new(sid);
    let queue_len = queue_group.map_or(0, |q| q.len().saturating_add(1));
    let line = sum(&[4, subject.len(), queue_len, 1, sid.as_bytes().len()]);
    check_len(line, MAX_CONTROL_LINE, "SUB line")?;
    buf.reserve(line.saturating_add(2));
    buf.put_slice(b"SUB ");
    buf.put_slice(subject);
    if let Some(q) = queue_group {
        buf.put_u8(b' ');
        buf.put_slice(q);
    }
    buf.put_u8(b' ');
    buf.put_slice(sid.as_bytes());
    buf.put_slice(b"\r\n");
    Ok(())
}

/// Appends `UNSUB <sid> [max_msgs]\r\n`: unsubscribe now, or once
/// `max_msgs` messages in all have been delivered.
pub fn encode_unsub(buf: &mut BytesMut, sid: u64, max_msgs: Option<u64>) {
    buf.put_slice(b"UNSUB ");
    buf.put_slice(Decimal::new(sid).as_bytes());
    if let Some(max) = max_msgs {
        buf.put_u8(b' ');
        buf.put_slice(Decimal::new(max).as_bytes());
    }
    buf.put_slice(b"\r\n");
}

/// Appends `PING\r\n`. After `CONNECT`, a `PING` whose `PONG` comes back
/// tells that the server accepted the connection (an `-ERR` comes first
/// otherwise).
pub fn encode_ping(buf: &mut BytesMut) {
    buf.put_slice(b"PING\r\n");
}

/// Appends `PONG\r\n`, the answer to a server's `PING`.
pub fn encode_pong(buf: &mut BytesMut) {
    buf.put_slice(b"PONG\r\n");
}

/// How a client proves who it is, if the server asks (`auth_required` in
/// `INFO`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Auth<'a> {
    /// No credentials.
    #[default]
    None,
    /// `"user"` and `"pass"`.
    UserPass {
        /// The user name.
        user: &'a str,
        /// The password.
        pass: &'a str,
    },
    /// `"auth_token"`.
    Token(&'a str),
}

/// The options of a `CONNECT`. The JSON also always says
/// `"tls_required":false`, `"lang":"rust"`, this crate's version,
/// `"protocol":1` (the client handles `INFO` at any time), and
/// `"headers":false, "no_responders":false` (no `HMSG`, which this codec
/// does not parse; no-responder notices need headers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connect<'a> {
    /// The connection's name, shown in the server's monitoring.
    pub name: Option<&'a str>,
    /// Credentials.
    pub auth: Auth<'a>,
    /// Ask for `+OK` after every operation; off for a load generator.
    pub verbose: bool,
    /// Ask the server for strict checks (subjects); off by default.
    pub pedantic: bool,
    /// Deliver this connection's own messages to its own subscriptions
    /// (the server's default, true).
    pub echo: bool,
}

impl Default for Connect<'_> {
    fn default() -> Self {
        Self {
            name: None,
            auth: Auth::None,
            verbose: false,
            pedantic: false,
            echo: true,
        }
    }
}

/// Appends `s` as a JSON string, quoted and escaped.
fn put_json_str(buf: &mut BytesMut, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    buf.put_u8(b'"');
    for &b in s.as_bytes() {
        match b {
            b'"' => buf.put_slice(b"\\\""),
            b'\\' => buf.put_slice(b"\\\\"),
            0..=0x1f => {
                let hex = |n: u8| HEX.get(usize::from(n & 0xf)).copied().unwrap_or(b'0');
                buf.put_slice(b"\\u00");
                buf.put_u8(hex(b >> 4));
                buf.put_u8(hex(b));
            }
            _ => buf.put_u8(b),
        }
    }
    buf.put_u8(b'"');
}

fn put_json_bool(buf: &mut BytesMut, key: &[u8], v: bool) {
    buf.put_slice(key);
    buf.put_slice(if v { b"true" } else { b"false" });
}

/// Appends `CONNECT {json}\r\n`. Strings are JSON-escaped, so a password
/// may hold quotes. Refuses only a line over [`MAX_JSON_LINE`].
pub fn encode_connect(buf: &mut BytesMut, opts: &Connect<'_>) -> Result<(), NatsError> {
    let start = buf.len();
    buf.put_slice(b"CONNECT ");
    put_json_bool(buf, b"{\"verbose\":", opts.verbose);
    put_json_bool(buf, b",\"pedantic\":", opts.pedantic);
    buf.put_slice(b",\"tls_required\":false,\"lang\":\"rust\",\"version\":\"");
    buf.put_slice(env!("CARGO_PKG_VERSION").as_bytes());
    buf.put_slice(b"\",\"protocol\":1");
    put_json_bool(buf, b",\"echo\":", opts.echo);
    buf.put_slice(b",\"headers\":false,\"no_responders\":false");
    if let Some(name) = opts.name {
        buf.put_slice(b",\"name\":");
        put_json_str(buf, name);
    }
    match opts.auth {
        Auth::None => {}
        Auth::UserPass { user, pass } => {
            buf.put_slice(b",\"user\":");
            put_json_str(buf, user);
            buf.put_slice(b",\"pass\":");
            put_json_str(buf, pass);
        }
        Auth::Token(token) => {
            buf.put_slice(b",\"auth_token\":");
            put_json_str(buf, token);
        }
    }
    buf.put_u8(b'}');
    let line = buf.len().saturating_sub(start);
    if line > MAX_JSON_LINE {
        buf.truncate(start);
        return Err(NatsError::TooLarge {
            what: "CONNECT line",
            len: line,
            max: MAX_JSON_LINE,
        });
    }
    buf.put_slice(b"\r\n");
    Ok(())
}

/// Appends `INFO <json>\r\n` (a test server's greeting). `json` is written
/// as given; it must not hold CR or LF.
pub fn encode_info(buf: &mut BytesMut, json: &[u8]) -> Result<(), NatsError> {
    if json.is_empty() || json.iter().any(|&b| b == b'\r' || b == b'\n') {
        return Err(NatsError::BadToken("INFO JSON"));
    }
    check_len(json.len().saturating_add(5), MAX_JSON_LINE, "INFO line")?;
    buf.reserve(json.len().saturating_add(7));
    buf.put_slice(b"INFO ");
    buf.put_slice(json);
    buf.put_slice(b"\r\n");
    Ok(())
}

/// Appends `MSG <subject> <sid> [reply-to] <#bytes>\r\n<payload>\r\n` (a
/// test server's delivery), with the same checks as [`encode_pub`].
pub fn encode_msg(
    buf: &mut BytesMut,
    subject: &[u8],
    sid: &[u8],
    reply_to: Option<&[u8]>,
    payload: &[u8],
) -> Result<(), NatsError> {
    check_token(subject, "subject")?;
    check_token(sid, "sid")?;
    if let Some(r) = reply_to {
        check_token(r, "reply subject")?;
    }
    encode_payload_op(
        buf,
        b"MSG",
        [Some(subject), Some(sid), reply_to],
        payload,
        "MSG line",
    )
}

/// Appends `+OK\r\n`.
pub fn encode_ok(buf: &mut BytesMut) {
    buf.put_slice(b"+OK\r\n");
}

/// Appends `-ERR '<message>'\r\n`; the message must not hold CR or LF.
pub fn encode_err(buf: &mut BytesMut, message: &[u8]) -> Result<(), NatsError> {
    if message.iter().any(|&b| b == b'\r' || b == b'\n') {
        return Err(NatsError::BadToken("-ERR message"));
    }
    check_len(
        message.len().saturating_add(7),
        MAX_CONTROL_LINE,
        "-ERR line",
    )?;
    buf.put_slice(b"-ERR '");
    buf.put_slice(message);
    buf.put_slice(b"'\r\n");
    Ok(())
}
