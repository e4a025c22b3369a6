//! Protocol buffers' wire format, the part these messages use: varints
//! (wire type 0), length-delimited fields (2), and skipping of 64- and
//! 32-bit fields (1, 5) that a newer server may add.

use bytes::BufMut;

use crate::etcd::WireError;

/// Wire type of varints.
pub const VARINT: u8 = 0;
/// Wire type of fixed 64-bit values.
pub const FIXED64: u8 = 1;
/// Wire type of length-delimited values (bytes, strings, messages).
pub const LEN: u8 = 2;
/// Wire type of fixed 32-bit values.
pub const FIXED32: u8 = 5;

/// Bytes a varint of `v` takes.
#[inline]
pub fn varint_len(v: u64) -> usize {
    // 1 byte per 7 bits, at least one.
    let bits = u64::BITS.saturating_sub((v | 1).leading_zeros()) as usize;
    bits.div_ceil(7)
}

/// Append `v` as a varint.
#[inline]
pub fn put_varint(out: &mut impl BufMut, mut v: u64) {
    while v >= 0x80 {
        out.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    out.put_u8(v as u8);
}

/// Bytes a field key takes.
#[inline]
pub fn key_len(field: u32) -> usize {
    varint_len(u64::from(field) << 3)
}

/// Append a field key.
#[inline]
pub fn put_key(out: &mut impl BufMut, field: u32, wire: u8) {
    put_varint(out, (u64::from(field) << 3) | u64::from(wire));
}

/// Bytes a length-delimited field of `len` bytes takes, key included.
#[inline]
pub fn len_field_len(field: u32, len: usize) -> usize {
    key_len(field)
        .saturating_add(varint_len(len as u64))
        .saturating_add(len)
}

/// Bytes a varint field takes, key included (0 when `v` is 0: proto3 does
/// not write defaults).
#[inline]
pub fn varint_field_len(field: u32, v: u64) -> usize {
    if v == 0 {
        0
    } else {
        key_len(field).saturating_add(varint_len(v))
    }
}

/// Append a length-delimited field (omitted when empty, as proto3 does).
#[inline]
pub fn put_bytes(out: &mut impl BufMut, field: u32, b: &[u8]) {
    if !b.is_empty() {
        put_key(out, field, LEN);
        put_varint(out, b.len() as u64);
        out.put_slice(b);
    }
}

/// Append the key and length of a nested message whose body follows.
#[inline]
pub fn put_message_head(out: &mut impl BufMut, field: u32, len: usize) {
    put_key(out, field, LEN);
    put_varint(out, len as u64);
}

/// Append a varint field (omitted when 0).
#[inline]
pub fn put_uint(out: &mut impl BufMut, field: u32, v: u64) {
    if v != 0 {
        put_key(out, field, VARINT);
        put_varint(out, v);
    }
}

/// Read a varint from the front of `buf`: the value and the bytes it took.
#[inline]
pub fn get_varint(buf: &[u8]) -> Result<(u64, usize), WireError> {
    let mut v: u64 = 0;
    let mut shift: u32 = 0;
    for (i, &b) in buf.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f).checked_shl(shift).unwrap_or(0);
        shift = shift.saturating_add(7);
        if b < 0x80 {
            return Ok((v, i.saturating_add(1)));
        }
    }
    if buf.len() >= 10 {
        Err(WireError::BadVarint)
    } else {
        Err(WireError::Truncated)
    }
}

/// One field's value as the wire carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 2.
    Bytes(&'a [u8]),
    /// Wire types 1 and 5, kept only to be skipped.
    Fixed(u64),
}

/// The fields of one message, in wire order.
#[derive(Debug, Clone)]
pub struct Fields<'a> {
    buf: &'a [u8],
}

impl<'a> Fields<'a> {
    /// Read the fields of `message`.
    pub fn new(message: &'a [u8]) -> Fields<'a> {
        Fields { buf: message }
    }

    fn next_field(&mut self) -> Result<(u32, Value<'a>), WireError> {
        let (key, n) = get_varint(self.buf)?;
        let rest = self.buf.get(n..).ok_or(WireError::Truncated)?;
        let field = u32::try_from(key >> 3).map_err(|_| WireError::BadVarint)?;
        let (value, rest) = match (key & 7) as u8 {
            VARINT => {
                let (v, n) = get_varint(rest)?;
                (Value::Varint(v), rest.get(n..).ok_or(WireError::Truncated)?)
            }
            LEN => {
                let (len, n) = get_varint(rest)?;
                let rest = rest.get(n..).ok_or(WireError::Truncated)?;
                let len = usize::try_from(len).map_err(|_| WireError::Truncated)?;
                if rest.len() < len {
                    return Err(WireError::Truncated);
                }
                let (b, rest) = rest.split_at(len);
                (Value::Bytes(b), rest)
            }
            FIXED64 => {
                let b: [u8; 8] = rest
                    .get(..8)
                    .and_then(|b| b.try_into().ok())
                    .ok_or(WireError::Truncated)?;
                (
                    Value::Fixed(u64::from_le_bytes(b)),
                    rest.get(8..).ok_or(WireError::Truncated)?,
                )
            }
            FIXED32 => {
                let b: [u8; 4] = rest
                    .get(..4)
                    .and_then(|b| b.try_into().ok())
                    .ok_or(WireError::Truncated)?;
                (
                    Value::Fixed(u64::from(u32::from_le_bytes(b))),
                    rest.get(4..).ok_or(WireError::Truncated)?,
                )
            }
            w => return Err(WireError::BadWireType(w)),
        };
        self.buf = rest;
        Ok((field, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>), WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() {
            return None;
        }
        let r = self.next_field();
        if r.is_err() {
            // One error ends the message: the rest cannot be delimited.
            self.buf = &[];
        }
        Some(r)
    }
}

impl Value<'_> {
    /// The varint, or a typed error naming the field.
    pub fn varint(self, message: &'static str, field: u32) -> Result<u64, WireError> {
        match self {
            Value::Varint(v) => Ok(v),
            _ => Err(WireError::WrongType { message, field }),
        }
    }
}

impl<'a> Value<'a> {
    /// The bytes, or a typed error naming the field.
    pub fn bytes(self, message: &'static str, field: u32) -> Result<&'a [u8], WireError> {
        match self {
            Value::Bytes(b) => Ok(b),
            _ => Err(WireError::WrongType { message, field }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_have_their_length() {
        for v in [
            0,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v), "{v}");
            assert_eq!(get_varint(&out), Ok((v, out.len())));
            for cut in 0..out.len() {
                assert_eq!(
                    get_varint(out.get(..cut).unwrap_or_default()),
                    Err(WireError::Truncated)
                );
            }
        }
        assert_eq!(get_varint(&[0xff; 11]), Err(WireError::BadVarint));
    }

    #[test]
    fn fields_are_read_and_unknown_ones_skipped() {
        let mut out = Vec::new();
        put_uint(&mut out, 1, 300);
        put_key(&mut out, 9, FIXED64);
        out.extend_from_slice(&7u64.to_le_bytes());
        put_key(&mut out, 10, FIXED32);
        out.extend_from_slice(&8u32.to_le_bytes());
        put_bytes(&mut out, 2, b"abc");
        let fields: Vec<_> = Fields::new(&out).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            fields,
            [
                (1, Value::Varint(300)),
                (9, Value::Fixed(7)),
                (10, Value::Fixed(8)),
                (2, Value::Bytes(b"abc"))
            ]
        );
        // A group (wire type 3) is refused, and ends the iteration.
        let mut f = Fields::new(&[0x0b, 0x00]);
        assert_eq!(f.next(), Some(Err(WireError::BadWireType(3))));
        assert_eq!(f.next(), None);
    }
}
