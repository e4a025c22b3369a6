//! Owns the typed values: the wire type codes, the [`Value`] enum, the NULL
//! sentinels, and how a single value is laid out in a table cell.
//!
//! Table cells carry no type byte (the column says the type) and encode NULL
//! as an in-band sentinel: the minimum value of the integer types, a FLOAT at
//! or below -1.7e308, length -1 for STRING/VARBINARY, and `i128::MIN` for
//! DECIMAL.

use bytes::{BufMut, Bytes, BytesMut};

use crate::volt::frame::put_bytes;
use crate::volt::reader::{utf8, Reader};
use crate::volt::WireError;

/// FLOAT values at or below this are NULL on the wire.
pub const NULL_FLOAT: f64 = -1.7e308;

/// Number of fractional decimal digits in a DECIMAL (its scale).
pub const DECIMAL_SCALE: u32 = 12;

/// A wire type code. The discriminants are the protocol's type bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i8)]
pub enum VoltType {
    /// Parameter arrays: followed by an element type byte and an `i16` count.
    Array = -99,
    /// An untyped NULL parameter; never a column type.
    Null = 1,
    /// 1-byte signed integer.
    TinyInt = 3,
    /// 2-byte signed integer.
    SmallInt = 4,
    /// 4-byte signed integer.
    Integer = 5,
    /// 8-byte signed integer.
    BigInt = 6,
    /// 8-byte IEEE-754 double.
    Float = 8,
    /// `i32` length-prefixed UTF-8.
    String = 9,
    /// `i64` microseconds since the Unix epoch.
    Timestamp = 11,
    /// A nested VoltTable (parameters only; not decoded by this codec).
    Table = 21,
    /// 16-byte big-endian two's-complement integer, scale 12.
    Decimal = 22,
    /// `i32` length-prefixed bytes.
    VarBinary = 25,
}

impl VoltType {
    /// Maps a type byte to a type, or `UnknownType`.
    pub fn from_code(code: i8) -> Result<Self, WireError> {
        Ok(match code {
            -99 => Self::Array,
            1 => Self::Null,
            3 => Self::TinyInt,
            4 => Self::SmallInt,
            5 => Self::Integer,
            6 => Self::BigInt,
            8 => Self::Float,
            9 => Self::String,
            11 => Self::Timestamp,
            21 => Self::Table,
            22 => Self::Decimal,
            25 => Self::VarBinary,
            other => return Err(WireError::UnknownType(other)),
        })
    }

    /// The type byte written on the wire.
    pub fn code(self) -> i8 {
        self as i8
    }

    /// Whether a table column may have this type (and this codec can read it).
    pub fn is_column_type(self) -> bool {
        !matches!(self, Self::Array | Self::Null | Self::Table)
    }
}

/// One value, as a procedure parameter or a table cell.
///
/// Invariants: `Decimal` holds the unscaled integer (value × 10^12);
/// `Timestamp` holds microseconds since the Unix epoch. The NULL sentinels
/// are decoded to `Null`, so a cell never holds e.g. `BigInt(i64::MIN)`.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// TINYINT.
    TinyInt(i8),
    /// SMALLINT.
    SmallInt(i16),
    /// INTEGER.
    Integer(i32),
    /// BIGINT.
    BigInt(i64),
    /// FLOAT.
    Float(f64),
    /// VARCHAR.
    String(String),
    /// VARBINARY.
    VarBinary(Bytes),
    /// TIMESTAMP, microseconds since the Unix epoch.
    Timestamp(i64),
    /// DECIMAL, unscaled (value × 10^12).
    Decimal(i128),
    /// Array of BIGINT (parameters only).
    BigIntArray(Vec<i64>),
    /// Array of INTEGER (parameters only).
    IntegerArray(Vec<i32>),
    /// Array of STRING (parameters only).
    StringArray(Vec<String>),
}

impl Value {
    /// Widens any integer-like value (TINYINT..BIGINT, TIMESTAMP) to `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Self::TinyInt(v) => Some(i64::from(v)),
            Self::SmallInt(v) => Some(i64::from(v)),
            Self::Integer(v) => Some(i64::from(v)),
            Self::BigInt(v) | Self::Timestamp(v) => Some(v),
            _ => None,
        }
    }

    /// The FLOAT value, if this is one.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Self::Float(v) => Some(v),
            _ => None,
        }
    }

    /// The string, if this is a STRING.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::String(s) => Some(s),
            _ => None,
        }
    }

    /// Whether this is SQL NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Self::Null)
    }
}

/// Reads one table cell of type `ty`.
pub(crate) fn read_cell(r: &mut Reader<'_>, ty: VoltType) -> Result<Value, WireError> {
    const W: &str = "cell";
    Ok(match ty {
        VoltType::TinyInt => match r.i8(W)? {
            i8::MIN => Value::Null,
            v => Value::TinyInt(v),
        },
        VoltType::SmallInt => match r.i16(W)? {
            i16::MIN => Value::Null,
            v => Value::SmallInt(v),
        },
        VoltType::Integer => match r.i32(W)? {
            i32::MIN => Value::Null,
            v => Value::Integer(v),
        },
        VoltType::BigInt => match r.i64(W)? {
            i64::MIN => Value::Null,
            v => Value::BigInt(v),
        },
        VoltType::Timestamp => match r.i64(W)? {
            i64::MIN => Value::Null,
            v => Value::Timestamp(v),
        },
        VoltType::Float => match r.f64(W)? {
            v if v <= NULL_FLOAT => Value::Null,
            v => Value::Float(v),
        },
        VoltType::Decimal => match r.i128(W)? {
            i128::MIN => Value::Null,
            v => Value::Decimal(v),
        },
        VoltType::String => match r.nullable_bytes(W)? {
            None => Value::Null,
            Some(b) => Value::String(utf8(b)?),
        },
        VoltType::VarBinary => match r.nullable_bytes(W)? {
            None => Value::Null,
            Some(b) => Value::VarBinary(Bytes::copy_from_slice(b)),
        },
        other => return Err(WireError::UnknownType(other.code())),
    })
}

/// Writes one table cell of column type `ty`; `Null` becomes the type's
/// sentinel, and a value of another type is a `TypeMismatch`.
pub(crate) fn write_cell(buf: &mut BytesMut, ty: VoltType, v: &Value) -> Result<(), WireError> {
    match (ty, v) {
        (VoltType::TinyInt, Value::TinyInt(x)) => buf.put_i8(*x),
        (VoltType::TinyInt, Value::Null) => buf.put_i8(i8::MIN),
        (VoltType::SmallInt, Value::SmallInt(x)) => buf.put_i16(*x),
        (VoltType::SmallInt, Value::Null) => buf.put_i16(i16::MIN),
        (VoltType::Integer, Value::Integer(x)) => buf.put_i32(*x),
        (VoltType::Integer, Value::Null) => buf.put_i32(i32::MIN),
        (VoltType::BigInt, Value::BigInt(x)) | (VoltType::Timestamp, Value::Timestamp(x)) => {
            buf.put_i64(*x)
        }
        (VoltType::BigInt | VoltType::Timestamp, Value::Null) => buf.put_i64(i64::MIN),
        (VoltType::Float, Value::Float(x)) => buf.put_f64(*x),
        (VoltType::Float, Value::Null) => buf.put_f64(NULL_FLOAT),
        (VoltType::Decimal, Value::Decimal(x)) => buf.put_i128(*x),
        (VoltType::Decimal, Value::Null) => buf.put_i128(i128::MIN),
        (VoltType::String, Value::String(s)) => put_bytes(buf, s.as_bytes(), "string")?,
        (VoltType::VarBinary, Value::VarBinary(b)) => put_bytes(buf, b, "varbinary")?,
        (VoltType::String | VoltType::VarBinary, Value::Null) => buf.put_i32(-1),
        _ => return Err(WireError::TypeMismatch(ty)),
    }
    Ok(())
}
