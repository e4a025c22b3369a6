//! Owns the invocation response: server → client
//! `[len][version][client handle i64][fields-present u8][status i8]
//! [status string?][app status i8][app status string?][cluster RTT i32]
//! [exception?][hashes?][table count i16][tables…]`.
//!
//! Bits of the fields-present byte say which optional fields follow:
//! bit 5 status string, bit 7 app status string, bit 6 serialised exception
//! (`i32` length + bytes, older servers), bit 4 determinism hashes (`i16`
//! count + `i32` each, newer servers).

use bytes::{BufMut, Bytes, BytesMut};

use crate::volt::frame::{put_bytes, short_count, split_frame, write_frame};
use crate::volt::reader::Reader;
use crate::volt::table::{read_table, write_table};
use crate::volt::types::read_cell;
use crate::volt::{VoltTable, VoltType, WireError};

const HAS_STATUS_STRING: u8 = 1 << 5;
const HAS_EXCEPTION: u8 = 1 << 6;
const HAS_APP_STATUS_STRING: u8 = 1 << 7;
const HAS_HASHES: u8 = 1 << 4;

/// App status servers send when the procedure did not set one.
pub const UNINITIALIZED_APP_STATUS: i8 = i8::MIN;

/// Outcome of an invocation, from the status byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// 1: committed.
    Success,
    /// -1: the procedure aborted itself and rolled back.
    UserAbort,
    /// -2: failed and rolled back cleanly (e.g. constraint violation).
    GracefulFailure,
    /// -3: unexpected server-side failure.
    UnexpectedFailure,
    /// -4: connection lost before the response (client-side status).
    ConnectionLost,
    /// -5: server not accepting work (e.g. paused, initialising).
    ServerUnavailable,
    /// -6: timed out (client-side status).
    ConnectionTimeout,
    /// -7: outcome unknown.
    ResponseUnknown,
    /// -8: transaction restarted.
    TxnRestart,
    /// -9: committed, but part of an operation did not succeed.
    OperationalFailure,
    /// Any other code.
    Other(i8),
}

impl Status {
    /// Maps a status byte.
    pub fn from_code(code: i8) -> Self {
        match code {
            1 => Self::Success,
            -1 => Self::UserAbort,
            -2 => Self::GracefulFailure,
            -3 => Self::UnexpectedFailure,
            -4 => Self::ConnectionLost,
            -5 => Self::ServerUnavailable,
            -6 => Self::ConnectionTimeout,
            -7 => Self::ResponseUnknown,
            -8 => Self::TxnRestart,
            -9 => Self::OperationalFailure,
            other => Self::Other(other),
        }
    }

    /// The status byte as sent.
    pub fn code(self) -> i8 {
        match self {
            Self::Success => 1,
            Self::UserAbort => -1,
            Self::GracefulFailure => -2,
            Self::UnexpectedFailure => -3,
            Self::ConnectionLost => -4,
            Self::ServerUnavailable => -5,
            Self::ConnectionTimeout => -6,
            Self::ResponseUnknown => -7,
            Self::TxnRestart => -8,
            Self::OperationalFailure => -9,
            Self::Other(c) => c,
        }
    }

    /// Whether the call succeeded.
    pub fn is_success(self) -> bool {
        self == Self::Success
    }
}

/// A fully decoded invocation response.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// Handle from the matching invocation.
    pub client_handle: i64,
    /// Outcome.
    pub status: Status,
    /// Server's explanation, usually present only on failure.
    pub status_string: Option<String>,
    /// Procedure-defined status ([`UNINITIALIZED_APP_STATUS`] if unset).
    pub app_status: i8,
    /// Procedure-defined status text.
    pub app_status_string: Option<String>,
    /// Time the cluster spent on the call, milliseconds.
    pub cluster_round_trip_ms: i32,
    /// Raw serialised Java exception, if an older server sent one; kept
    /// opaque because its layout is Java-specific.
    pub exception: Option<Bytes>,
    /// Result tables, one per SQL statement or returned table.
    pub tables: Vec<VoltTable>,
}

/// The fixed-size part of a response, read without allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHeader {
    /// Handle from the matching invocation.
    pub client_handle: i64,
    /// Outcome.
    pub status: Status,
    /// Procedure-defined status.
    pub app_status: i8,
    /// Time the cluster spent on the call, milliseconds.
    pub cluster_round_trip_ms: i32,
}

/// Reads only the client handle of a whole response frame: O(1), so a client
/// can route the frame to its pending call before (or instead of) decoding.
pub fn peek_client_handle(frame: &[u8]) -> Result<i64, WireError> {
    let (_, body) = split_frame(frame)?;
    Reader::new(body).i64("client handle")
}

/// Reads the handle, status, app status and round-trip time of a whole
/// response frame, skipping the optional strings without copying them.
pub fn peek_header(frame: &[u8]) -> Result<ResponseHeader, WireError> {
    let (_, body) = split_frame(frame)?;
    let mut r = Reader::new(body);
    let (header, ..) = read_header(&mut r, |r, what| r.bytes(what).map(|_| ()))?;
    Ok(header)
}

/// Decodes one whole response frame (as delimited by [`crate::volt::frame_len`]),
/// tables included. Leftover bytes after the last table are an error, since
/// they mean this codec misread the layout.
pub fn decode_response(frame: &[u8]) -> Result<Response, WireError> {
    let (_, body) = split_frame(frame)?;
    let mut r = Reader::new(body);
    let (h, fields, status_string, app_status_string) =
        read_header(&mut r, |r, what| r.string(what))?;
    let exception = if fields & HAS_EXCEPTION != 0 {
        Some(Bytes::copy_from_slice(r.bytes("exception")?))
    } else {
        None
    };
    if fields & HAS_HASHES != 0 {
        let raw = i64::from(r.i16("hash count")?);
        let n = r.count(raw, 4, "hash count")?;
        r.take(n.saturating_mul(4), "hashes")?;
    }
    let raw = i64::from(r.i16("table count")?);
    // A table is at least its 4-byte total length.
    let n = r.count(raw, 4, "table count")?;
    let mut tables = Vec::with_capacity(n);
    for _ in 0..n {
        tables.push(read_table(&mut r)?);
    }
    r.finish()?;
    Ok(Response {
        client_handle: h.client_handle,
        status: h.status,
        status_string,
        app_status: h.app_status,
        app_status_string,
        cluster_round_trip_ms: h.cluster_round_trip_ms,
        exception,
        tables,
    })
}

/// Reads the header and the first cell of the first table as an integer,
/// without allocating: the hot path of procedures that return one number
/// (a Java procedure's `long` comes back as a one-row, one-column table).
/// The cell is `None` when there is no table, no row, a NULL, or a column
/// that is not an integer type.
pub fn decode_scalar_i64(frame: &[u8]) -> Result<(ResponseHeader, Option<i64>), WireError> {
    let (_, body) = split_frame(frame)?;
    let mut r = Reader::new(body);
    let (h, fields, ..) = read_header(&mut r, |r, what| r.bytes(what).map(|_| ()))?;
    if fields & HAS_EXCEPTION != 0 {
        r.bytes("exception")?;
    }
    if fields & HAS_HASHES != 0 {
        let raw = i64::from(r.i16("hash count")?);
        let n = r.count(raw, 4, "hash count")?;
        r.take(n.saturating_mul(4), "hashes")?;
    }
    if r.i16("table count")? < 1 {
        return Ok((h, None));
    }
    Ok((h, first_cell_i64(&mut r)?))
}

/// The first cell of the table at `r`, when it is an integer.
fn first_cell_i64(r: &mut Reader<'_>) -> Result<Option<i64>, WireError> {
    let total = usize::try_from(r.i32("table length")?).map_err(|_| WireError::BadLength {
        what: "table length",
        value: -1,
    })?;
    let mut t = Reader::new(r.take(total, "table")?);
    let meta_len =
        usize::try_from(t.i32("table metadata length")?).map_err(|_| WireError::BadLength {
            what: "table metadata length",
            value: -1,
        })?;
    let mut meta = Reader::new(t.take(meta_len, "table metadata")?);
    meta.i8("table status")?;
    if meta.i16("column count")? < 1 {
        return Ok(None);
    }
    let ty = VoltType::from_code(meta.i8("column type")?)?;
    if t.i32("row count")? < 1 {
        return Ok(None);
    }
    t.i32("row length")?;
    match ty {
        VoltType::TinyInt | VoltType::SmallInt | VoltType::Integer | VoltType::BigInt => {
            Ok(read_cell(&mut t, ty)?.as_i64())
        }
        _ => Ok(None),
    }
}

/// Reads handle through round-trip time, also returning the fields-present
/// byte; `text` reads (or skips) each optional string, which is what lets
/// `peek_header` avoid allocating.
fn read_header<T>(
    r: &mut Reader<'_>,
    mut text: impl FnMut(&mut Reader<'_>, &'static str) -> Result<T, WireError>,
) -> Result<(ResponseHeader, u8, Option<T>, Option<T>), WireError> {
    let client_handle = r.i64("client handle")?;
    let fields = r.u8("fields present")?;
    let status = Status::from_code(r.i8("status")?);
    let status_string = if fields & HAS_STATUS_STRING != 0 {
        Some(text(r, "status string")?)
    } else {
        None
    };
    let app_status = r.i8("app status")?;
    let app_status_string = if fields & HAS_APP_STATUS_STRING != 0 {
        Some(text(r, "app status string")?)
    } else {
        None
    };
    let cluster_round_trip_ms = r.i32("cluster round trip")?;
    let header = ResponseHeader {
        client_handle,
        status,
        app_status,
        cluster_round_trip_ms,
    };
    Ok((header, fields, status_string, app_status_string))
}

/// Appends a response frame (for fake servers and tests), with protocol
/// version byte 0 as servers send.
pub fn encode_response(buf: &mut BytesMut, response: &Response) -> Result<(), WireError> {
    write_frame(buf, 0, |buf| {
        let mut fields = 0u8;
        if response.status_string.is_some() {
            fields |= HAS_STATUS_STRING;
        }
        if response.app_status_string.is_some() {
            fields |= HAS_APP_STATUS_STRING;
        }
        if response.exception.is_some() {
            fields |= HAS_EXCEPTION;
        }
        buf.put_i64(response.client_handle);
        buf.put_u8(fields);
        buf.put_i8(response.status.code());
        if let Some(s) = &response.status_string {
            put_bytes(buf, s.as_bytes(), "status string")?;
        }
        buf.put_i8(response.app_status);
        if let Some(s) = &response.app_status_string {
            put_bytes(buf, s.as_bytes(), "app status string")?;
        }
        buf.put_i32(response.cluster_round_trip_ms);
        if let Some(e) = &response.exception {
            put_bytes(buf, e, "exception")?;
        }
        buf.put_i16(short_count(response.tables.len(), "table count")?);
        response.tables.iter().try_for_each(|t| write_table(buf, t))
    })
}
