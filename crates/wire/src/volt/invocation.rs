//! Owns the procedure-invocation request: client → server
//! `[len][version 0][name: i32-prefixed][client handle: i64][params]`,
//! and its decoder (for fake servers and tests).

use bytes::{BufMut, BytesMut};

use crate::volt::frame::{put_bytes, short_count, split_frame, write_frame};
use crate::volt::param::ParamSet;
use crate::volt::reader::Reader;
use crate::volt::types::read_cell;
use crate::volt::{Value, VoltType, WireError};

/// Version byte this codec writes on invocations: the original layout, with
/// no batch-timeout or other extension fields.
pub const INVOCATION_VERSION: u8 = 0;

/// Appends one invocation frame for `procedure` to `buf`.
///
/// On error (a string or array too long for its length field, or a frame
/// over [`crate::volt::MAX_FRAME_LEN`]) `buf` is left exactly as it was.
pub fn encode_invocation(
    buf: &mut BytesMut,
    procedure: &str,
    client_handle: i64,
    params: &[Value],
) -> Result<(), WireError> {
    encode_invocation_with(buf, procedure, client_handle, params)
}

/// Like [`encode_invocation`], but takes any [`ParamSet`] (a tuple of plain
/// values, a slice, …) and writes it directly into `buf`; this is the
/// allocation-free path for hot loops.
pub fn encode_invocation_with<P: ParamSet>(
    buf: &mut BytesMut,
    procedure: &str,
    client_handle: i64,
    params: P,
) -> Result<(), WireError> {
    write_frame(buf, INVOCATION_VERSION, |buf| {
        put_bytes(buf, procedure.as_bytes(), "procedure name")?;
        buf.put_i64(client_handle);
        buf.put_i16(short_count(params.param_count(), "parameter count")?);
        params.encode_each(buf)
    })
}

/// A decoded invocation request.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    /// Procedure name.
    pub procedure: String,
    /// Opaque handle the server echoes in the response.
    pub client_handle: i64,
    /// Parameters in order.
    pub params: Vec<Value>,
}

/// Decodes one whole invocation frame (as delimited by [`crate::volt::frame_len`]).
///
/// Only version 0 (the layout [`encode_invocation`] writes) is accepted.
pub fn decode_invocation(frame: &[u8]) -> Result<Invocation, WireError> {
    let (version, body) = split_frame(frame)?;
    if version != INVOCATION_VERSION {
        return Err(WireError::UnsupportedVersion(version));
    }
    let mut r = Reader::new(body);
    let procedure = r.string("procedure name")?;
    let client_handle = r.i64("client handle")?;
    let raw = r.i16("parameter count")?;
    // Every parameter has at least its type byte.
    let n = r.count(i64::from(raw), 1, "parameter count")?;
    let mut params = Vec::with_capacity(n);
    for _ in 0..n {
        params.push(read_param(&mut r)?);
    }
    r.finish()?;
    Ok(Invocation {
        procedure,
        client_handle,
        params,
    })
}

fn read_param(r: &mut Reader<'_>) -> Result<Value, WireError> {
    let ty = VoltType::from_code(r.i8("parameter type")?)?;
    match ty {
        VoltType::Null => Ok(Value::Null),
        VoltType::Array => read_array(r),
        // A parameter payload is laid out exactly like a cell of its type,
        // NULL sentinels included.
        t if t.is_column_type() => read_cell(r, t),
        other => Err(WireError::UnknownType(other.code())),
    }
}

fn read_array(r: &mut Reader<'_>) -> Result<Value, WireError> {
    let elem = VoltType::from_code(r.i8("array element type")?)?;
    let raw = i64::from(r.i16("array length")?);
    match elem {
        VoltType::BigInt => {
            let n = r.count(raw, 8, "array length")?;
            (0..n)
                .map(|_| r.i64("array element"))
                .collect::<Result<_, _>>()
                .map(Value::BigIntArray)
        }
        VoltType::Integer => {
            let n = r.count(raw, 4, "array length")?;
            (0..n)
                .map(|_| r.i32("array element"))
                .collect::<Result<_, _>>()
                .map(Value::IntegerArray)
        }
        VoltType::String => {
            let n = r.count(raw, 4, "array length")?;
            (0..n)
                .map(|_| r.string("array element"))
                .collect::<Result<_, _>>()
                .map(Value::StringArray)
        }
        other => Err(WireError::UnknownType(other.code())),
    }
}
