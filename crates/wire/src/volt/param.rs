//! Owns how procedure parameters are written: the [`Param`] trait for one
//! value (type byte then payload) and [`ParamSet`] for a whole parameter
//! list (`i16` count then each parameter).
//!
//! The traits exist so the hot path can encode a tuple of plain Rust values
//! straight into the output buffer, with no intermediate `Vec<Value>`.

use bytes::{BufMut, BytesMut};

use crate::volt::frame::{put_bytes, short_count};
use crate::volt::{Value, VoltType, WireError};

/// A value that can be sent as one procedure parameter.
///
/// Invariant for implementors: write exactly one type byte followed by that
/// type's payload, or return an error (the caller rolls the buffer back).
pub trait Param {
    /// Appends this parameter (type byte and payload) to `buf`.
    fn encode_param(&self, buf: &mut BytesMut) -> Result<(), WireError>;
}

/// A whole parameter list.
pub trait ParamSet {
    /// Number of parameters that [`ParamSet::encode_each`] writes.
    fn param_count(&self) -> usize;
    /// Appends every parameter, in order, without the count.
    fn encode_each(&self, buf: &mut BytesMut) -> Result<(), WireError>;
}

fn tag(buf: &mut BytesMut, ty: VoltType) {
    buf.put_i8(ty.code());
}

macro_rules! fixed_param {
    ($t:ty, $ty:ident, $put:ident) => {
        impl Param for $t {
            fn encode_param(&self, buf: &mut BytesMut) -> Result<(), WireError> {
                tag(buf, VoltType::$ty);
                buf.$put(*self);
                Ok(())
            }
        }
    };
}

fixed_param!(i8, TinyInt, put_i8);
fixed_param!(i16, SmallInt, put_i16);
fixed_param!(i32, Integer, put_i32);
fixed_param!(i64, BigInt, put_i64);
fixed_param!(f64, Float, put_f64);

impl Param for str {
    fn encode_param(&self, buf: &mut BytesMut) -> Result<(), WireError> {
        tag(buf, VoltType::String);
        put_bytes(buf, self.as_bytes(), "string parameter")
    }
}

impl Param for String {
    fn encode_param(&self, buf: &mut BytesMut) -> Result<(), WireError> {
        self.as_str().encode_param(buf)
    }
}

/// Byte slices are VARBINARY, as in the Java client.
impl Param for [u8] {
    fn encode_param(&self, buf: &mut BytesMut) -> Result<(), WireError> {
        tag(buf, VoltType::VarBinary);
        put_bytes(buf, self, "varbinary parameter")
    }
}

fn array_header(buf: &mut BytesMut, elem: VoltType, n: usize) -> Result<(), WireError> {
    let count = short_count(n, "array parameter")?;
    tag(buf, VoltType::Array);
    tag(buf, elem);
    buf.put_i16(count);
    Ok(())
}

impl Param for [i64] {
    fn encode_param(&self, buf: &mut BytesMut) -> Result<(), WireError> {
        array_header(buf, VoltType::BigInt, self.len())?;
        self.iter().for_each(|v| buf.put_i64(*v));
        Ok(())
    }
}

impl Param for [i32] {
    fn encode_param(&self, buf: &mut BytesMut) -> Result<(), WireError> {
        array_header(buf, VoltType::Integer, self.len())?;
        self.iter().for_each(|v| buf.put_i32(*v));
        Ok(())
    }
}

fn string_array<S: AsRef<str>>(buf: &mut BytesMut, items: &[S]) -> Result<(), WireError> {
    array_header(buf, VoltType::String, items.len())?;
    items
        .iter()
        .try_for_each(|s| put_bytes(buf, s.as_ref().as_bytes(), "string array element"))
}

impl Param for [&str] {
    fn encode_param(&self, buf: &mut BytesMut) -> Result<(), WireError> {
        string_array(buf, self)
    }
}

impl Param for [String] {
    fn encode_param(&self, buf: &mut BytesMut) -> Result<(), WireError> {
        string_array(buf, self)
    }
}

/// `None` is sent as the untyped NULL parameter.
impl<T: Param> Param for Option<T> {
    fn encode_param(&self, buf: &mut BytesMut) -> Result<(), WireError> {
        match self {
            Some(v) => v.encode_param(buf),
            None => {
                tag(buf, VoltType::Null);
                Ok(())
            }
        }
    }
}

impl<T: Param + ?Sized> Param for &T {
    fn encode_param(&self, buf: &mut BytesMut) -> Result<(), WireError> {
        (**self).encode_param(buf)
    }
}

impl Param for Value {
    fn encode_param(&self, buf: &mut BytesMut) -> Result<(), WireError> {
        match self {
            Value::Null => {
                tag(buf, VoltType::Null);
                Ok(())
            }
            Value::TinyInt(v) => v.encode_param(buf),
            Value::SmallInt(v) => v.encode_param(buf),
            Value::Integer(v) => v.encode_param(buf),
            Value::BigInt(v) => v.encode_param(buf),
            Value::Float(v) => v.encode_param(buf),
            Value::String(v) => v.encode_param(buf),
            Value::VarBinary(v) => v.as_ref().encode_param(buf),
            Value::Timestamp(v) => {
                tag(buf, VoltType::Timestamp);
                buf.put_i64(*v);
                Ok(())
            }
            Value::Decimal(v) => {
                tag(buf, VoltType::Decimal);
                buf.put_i128(*v);
                Ok(())
            }
            Value::BigIntArray(v) => v.as_slice().encode_param(buf),
            Value::IntegerArray(v) => v.as_slice().encode_param(buf),
            Value::StringArray(v) => v.as_slice().encode_param(buf),
        }
    }
}

impl<T: Param> ParamSet for [T] {
    fn param_count(&self) -> usize {
        self.len()
    }
    fn encode_each(&self, buf: &mut BytesMut) -> Result<(), WireError> {
        self.iter().try_for_each(|p| p.encode_param(buf))
    }
}

impl<T: Param, const N: usize> ParamSet for [T; N] {
    fn param_count(&self) -> usize {
        N
    }
    fn encode_each(&self, buf: &mut BytesMut) -> Result<(), WireError> {
        self.as_slice().encode_each(buf)
    }
}

impl<T: Param> ParamSet for Vec<T> {
    fn param_count(&self) -> usize {
        self.len()
    }
    fn encode_each(&self, buf: &mut BytesMut) -> Result<(), WireError> {
        self.as_slice().encode_each(buf)
    }
}

impl<S: ParamSet + ?Sized> ParamSet for &S {
    fn param_count(&self) -> usize {
        (**self).param_count()
    }
    fn encode_each(&self, buf: &mut BytesMut) -> Result<(), WireError> {
        (**self).encode_each(buf)
    }
}

impl ParamSet for () {
    fn param_count(&self) -> usize {
        0
    }
    fn encode_each(&self, _buf: &mut BytesMut) -> Result<(), WireError> {
        Ok(())
    }
}

macro_rules! tuple_param_set {
    ($n:expr; $($name:ident),+) => {
        impl<$($name: Param),+> ParamSet for ($($name,)+) {
            fn param_count(&self) -> usize {
                $n
            }
            #[allow(non_snake_case)]
            fn encode_each(&self, buf: &mut BytesMut) -> Result<(), WireError> {
                let ($($name,)+) = self;
                $($name.encode_param(buf)?;)+
                Ok(())
            }
        }
    };
}

tuple_param_set!(1; A);
tuple_param_set!(2; A, B);
tuple_param_set!(3; A, B, C);
tuple_param_set!(4; A, B, C, D);
tuple_param_set!(5; A, B, C, D, E);
tuple_param_set!(6; A, B, C, D, E, F);
tuple_param_set!(7; A, B, C, D, E, F, G);
tuple_param_set!(8; A, B, C, D, E, F, G, H);
tuple_param_set!(9; A, B, C, D, E, F, G, H, I);
tuple_param_set!(10; A, B, C, D, E, F, G, H, I, J);
tuple_param_set!(11; A, B, C, D, E, F, G, H, I, J, K);
tuple_param_set!(12; A, B, C, D, E, F, G, H, I, J, K, L);
