//! Commands out: `COM_STMT_PREPARE` (SQL text) and `COM_STMT_EXECUTE`
//! (a statement id and its parameters in binary). Each command is one
//! packet with sequence number 0; the encoders append to a caller-owned
//! buffer and cannot fail.
//!
//! Parameters are sent with their types on every call (the "send types"
//! byte is 1), so a connection keeps no per-statement bind state: integers
//! as `LONGLONG`, byte strings as `BLOB` with a length-encoded length.

use bytes::{BufMut, BytesMut};

use super::{begin_packet, end_packet, put_lenenc};

const COM_STMT_PREPARE: u8 = 0x16;
const COM_STMT_EXECUTE: u8 = 0x17;

/// Column and parameter types used by this client.
pub mod types {
    /// 8-byte integer.
    pub const LONGLONG: u8 = 0x08;
    /// Byte string with a length-encoded length.
    pub const BLOB: u8 = 0xFC;
}

/// MariaDB's statement id for "the statement prepared last on this
/// connection" (10.2 and later): an execute may follow its prepare without
/// waiting for the id.
pub const LAST_PREPARED: u32 = u32::MAX;

/// One parameter of an execute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param<'a> {
    /// A signed 64-bit integer.
    Int(i64),
    /// A byte string (`VARBINARY`, `BLOB`, text).
    Bytes(&'a [u8]),
}

/// Appends `COM_STMT_PREPARE` of `sql`.
pub fn prepare(out: &mut BytesMut, sql: &str) {
    let start = begin_packet(out);
    out.put_u8(COM_STMT_PREPARE);
    out.put_slice(sql.as_bytes());
    end_packet(out, start, 0);
}

/// Appends `COM_STMT_EXECUTE` of statement `id` with `params` (none NULL).
pub fn execute(out: &mut BytesMut, id: u32, params: &[Param<'_>]) {
    let start = begin_packet(out);
    out.put_u8(COM_STMT_EXECUTE);
    out.put_u32_le(id);
    out.put_u8(0); // no cursor
    out.put_u32_le(1); // iteration count
    if !params.is_empty() {
        out.put_bytes(0, params.len().div_ceil(8)); // no NULLs
        out.put_u8(1); // types follow
        for p in params {
            let t = match p {
                Param::Int(_) => types::LONGLONG,
                Param::Bytes(_) => types::BLOB,
            };
            out.put_slice(&[t, 0]);
        }
        for p in params {
            match p {
                Param::Int(n) => out.put_i64_le(*n),
                Param::Bytes(b) => {
                    put_lenenc(out, b.len() as u64);
                    out.put_slice(b);
                }
            }
        }
    }
    end_packet(out, start, 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_execute_is_laid_out_as_the_protocol_says() {
        let mut out = BytesMut::new();
        execute(&mut out, 3, &[Param::Int(-2), Param::Bytes(b"ab")]);
        let mut want = vec![0x17, 3, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 8, 0, 0xFC, 0];
        want.extend_from_slice(&(-2i64).to_le_bytes());
        want.extend_from_slice(b"\x02ab");
        assert_eq!(&out[4..], &want[..]);
        assert_eq!(&out[..4], &[want.len() as u8, 0, 0, 0]);
    }

    #[test]
    fn a_prepare_carries_the_sql() {
        let mut out = BytesMut::new();
        prepare(&mut out, "SELECT 1");
        assert_eq!(&out[..], b"\x09\x00\x00\x00\x16SELECT 1");
    }
}
