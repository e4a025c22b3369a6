//! PostgreSQL's frontend/backend protocol, version 3 (docs/guides/postgres.md):
//! the frames a client writes (startup, password and SASL answers, the
//! extended query protocol's Parse, Bind, Execute and Sync) and the
//! backend frames it reads, split off the front of a read buffer and
//! looked into where they lie.
//!
//! Every backend frame is a type byte and a four-byte length that counts
//! itself but not the type byte. [`frame`] refuses a type byte no backend
//! sends (so garbage is found at its first byte) and a length outside
//! 4..=`max` before the body arrives, so a hostile server cannot make the
//! client wait for, or buffer, more than `max` bytes.
//!
//! Parameters and results go in binary: a Bind carries one format code
//! (binary) for all its parameters and one for all its result columns.

use bytes::{BufMut, BytesMut};

mod backend;
pub use backend::{auth, error_field, frame, sasl_mechanisms, Auth, DataRow, Frame};

/// Backend message types this client reads (the type byte of a frame).
pub mod tag {
    /// Authentication request or result.
    pub const AUTH: u8 = b'R';
    /// The secret key for cancel requests.
    pub const BACKEND_KEY: u8 = b'K';
    /// A Bind was done.
    pub const BIND_COMPLETE: u8 = b'2';
    /// A Close was done.
    pub const CLOSE_COMPLETE: u8 = b'3';
    /// An Execute finished: the command tag.
    pub const COMMAND_COMPLETE: u8 = b'C';
    /// Part of a COPY (never asked for here).
    pub const COPY_DATA: u8 = b'd';
    /// One row of results.
    pub const DATA_ROW: u8 = b'D';
    /// The query string was empty.
    pub const EMPTY_QUERY: u8 = b'I';
    /// A statement failed (or the session is ending).
    pub const ERROR: u8 = b'E';
    /// Describe of something that returns no rows.
    pub const NO_DATA: u8 = b'n';
    /// A warning or note; asynchronous, skipped.
    pub const NOTICE: u8 = b'N';
    /// A LISTEN's notification; asynchronous, skipped.
    pub const NOTIFICATION: u8 = b'A';
    /// Describe of a statement's parameter types.
    pub const PARAMETER_DESCRIPTION: u8 = b't';
    /// A run-time setting's value; asynchronous, skipped.
    pub const PARAMETER_STATUS: u8 = b'S';
    /// A Parse was done.
    pub const PARSE_COMPLETE: u8 = b'1';
    /// Execute stopped at its row limit.
    pub const PORTAL_SUSPENDED: u8 = b's';
    /// The server is ready for a new query: the answer to a Sync.
    pub const READY: u8 = b'Z';
    /// Describe of the result columns.
    pub const ROW_DESCRIPTION: u8 = b'T';
}

/// The longest backend frame a client here accepts by default: far above
/// what the hot path's one-row answers need, far below what would hurt.
pub const MAX_FRAME: usize = 16 << 20;

/// Type OID of `bytea`, the element type of the arrays sent here.
pub const BYTEA: u32 = 17;

/// Protocol version 3.0, in a StartupMessage.
const VERSION_3: u32 = 196_608;
/// The request code of an SSLRequest.
const SSL_REQUEST: u32 = 80_877_103;

/// Backend bytes that cannot be the protocol.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// A type byte no backend sends.
    #[error("unknown message type 0x{0:02x}")]
    UnknownType(u8),
    /// A frame length below its own four bytes or above the limit.
    #[error("message length {0} out of bounds")]
    BadLength(u64),
    /// A message whose body does not hold what its type says.
    #[error("malformed '{}' message", char::from(*.0))]
    Malformed(u8),
}

/// Writes a frame: `ty` (0: none, as in the startup), a length slot, and
/// `body`'s bytes; the length is patched in after.
#[inline]
fn framed(buf: &mut BytesMut, ty: u8, body: impl FnOnce(&mut BytesMut)) {
    if ty != 0 {
        buf.put_u8(ty);
    }
    let start = buf.len();
    buf.put_u32(0);
    body(buf);
    patch_len(buf, start);
}

/// Writes at `start` the length of what follows from `start` on.
#[inline]
fn patch_len(buf: &mut BytesMut, start: usize) {
    let len = u32::try_from(buf.len().saturating_sub(start)).unwrap_or(u32::MAX);
    if let Some(slot) = buf.get_mut(start..start.saturating_add(4)) {
        slot.copy_from_slice(&len.to_be_bytes());
    }
}

/// A C string: the bytes and a NUL.
#[inline]
fn put_cstr(buf: &mut BytesMut, s: &[u8]) {
    buf.put_slice(s);
    buf.put_u8(0);
}

/// A length-prefixed value: an `i32` length and the bytes.
#[inline]
fn put_len_bytes(buf: &mut BytesMut, v: &[u8]) {
    buf.put_i32(i32::try_from(v.len()).unwrap_or(i32::MAX));
    buf.put_slice(v);
}

/// The StartupMessage: protocol 3.0 and the `(name, value)` parameters
/// (`user` is required; `database`, `application_name`...).
pub fn startup(buf: &mut BytesMut, params: &[(&str, &str)]) {
    framed(buf, 0, |b| {
        b.put_u32(VERSION_3);
        for (k, v) in params {
            put_cstr(b, k.as_bytes());
            put_cstr(b, v.as_bytes());
        }
        b.put_u8(0);
    });
}

/// The SSLRequest: the server answers one byte, `S` (go on with TLS) or `N`.
pub fn ssl_request(buf: &mut BytesMut) {
    buf.put_u32(8);
    buf.put_u32(SSL_REQUEST);
}

/// A PasswordMessage: the cleartext password or an md5 hash, NUL-ended.
pub fn password(buf: &mut BytesMut, password: &[u8]) {
    framed(buf, b'p', |b| put_cstr(b, password));
}

/// A SASLInitialResponse: the mechanism chosen and its first message.
pub fn sasl_initial(buf: &mut BytesMut, mechanism: &str, data: &[u8]) {
    framed(buf, b'p', |b| {
        put_cstr(b, mechanism.as_bytes());
        put_len_bytes(b, data);
    });
}

/// A SASLResponse: the next message of the mechanism.
pub fn sasl_response(buf: &mut BytesMut, data: &[u8]) {
    framed(buf, b'p', |b| b.put_slice(data));
}

/// A Parse of `sql` as the named statement `name`, parameter types left
/// to the server (it infers them from the statement: casts, functions'
/// signatures).
pub fn parse(buf: &mut BytesMut, name: &str, sql: &str) {
    framed(buf, b'P', |b| {
        put_cstr(b, name.as_bytes());
        put_cstr(b, sql.as_bytes());
        b.put_u16(0);
    });
}

/// A Bind of the unnamed portal to the named `statement`, its parameters
/// and results in binary. `params` writes exactly `count` parameters with
/// the `param_*` functions.
#[inline]
pub fn bind(buf: &mut BytesMut, statement: &str, count: u16, params: impl FnOnce(&mut BytesMut)) {
    framed(buf, b'B', |b| {
        b.put_u8(0);
        put_cstr(b, statement.as_bytes());
        // One format code for all parameters: binary.
        b.put_u16(1);
        b.put_u16(1);
        b.put_u16(count);
        params(b);
        // One format code for all result columns: binary.
        b.put_u16(1);
        b.put_u16(1);
    });
}

/// A `bigint` parameter.
#[inline]
pub fn param_i64(buf: &mut BytesMut, v: i64) {
    buf.put_i32(8);
    buf.put_i64(v);
}

/// An `integer` parameter.
#[inline]
pub fn param_i32(buf: &mut BytesMut, v: i32) {
    buf.put_i32(4);
    buf.put_i32(v);
}

/// A `bytea` (or text, in binary: its UTF-8 bytes) parameter.
#[inline]
pub fn param_bytes(buf: &mut BytesMut, v: &[u8]) {
    put_len_bytes(buf, v);
}

/// A one-dimensional `bytea[]` parameter, no NULLs, lower bound 1.
#[inline]
pub fn param_bytea_array<'a>(buf: &mut BytesMut, items: impl ExactSizeIterator<Item = &'a [u8]>) {
    let start = buf.len();
    buf.put_u32(0);
    let n = items.len();
    // Dimensions (none for an empty array), has-NULLs, element type.
    buf.put_i32(i32::from(n > 0));
    buf.put_i32(0);
    buf.put_u32(BYTEA);
    if n > 0 {
        buf.put_i32(i32::try_from(n).unwrap_or(i32::MAX));
        buf.put_i32(1);
    }
    for item in items {
        put_len_bytes(buf, item);
    }
    // The parameter's length leaves out its own four bytes.
    let len = u32::try_from(buf.len().saturating_sub(start).saturating_sub(4)).unwrap_or(0);
    if let Some(slot) = buf.get_mut(start..start.saturating_add(4)) {
        slot.copy_from_slice(&len.to_be_bytes());
    }
}

/// An Execute of the unnamed portal, all rows.
#[inline]
pub fn execute(buf: &mut BytesMut) {
    buf.put_slice(&[b'E', 0, 0, 0, 9, 0, 0, 0, 0, 0]);
}

/// A Sync: ends the implicit transaction; the server answers ReadyForQuery,
/// after an error too, so an error fails only the calls before this Sync.
#[inline]
pub fn sync(buf: &mut BytesMut) {
    buf.put_slice(&[b'S', 0, 0, 0, 4]);
}

/// A Terminate: the session ends.
pub fn terminate(buf: &mut BytesMut) {
    buf.put_slice(&[b'X', 0, 0, 0, 4]);
}

/// A whole number in binary (`smallint`, `integer` or `bigint`, by its
/// width), or none for any other width.
#[inline]
pub fn int(cell: &[u8]) -> Option<i64> {
    Some(match cell.len() {
        2 => i64::from(i16::from_be_bytes(cell.try_into().ok()?)),
        4 => i64::from(i32::from_be_bytes(cell.try_into().ok()?)),
        8 => i64::from_be_bytes(cell.try_into().ok()?),
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
