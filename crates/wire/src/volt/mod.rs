//! A pure, synchronous codec for VoltDB's client wire protocol: no sockets,
//! no async runtime, just bytes in and bytes out.
//!
//! Layers, as in mini-redis: bytes ⇄ frame ([`frame_len`] says whether a
//! whole frame is buffered) ⇄ typed messages (logins, invocations,
//! responses with [`VoltTable`]s of [`Value`]s).
//!
//! Decoders take one *whole* frame, prefix included, exactly as
//! [`frame_len`] delimits it, and never panic on any input: every length and
//! count from the wire is checked against the bytes that remain before it is
//! used. Encoders append to a caller-owned [`bytes::BytesMut`] and leave it
//! untouched when they fail.
//!
//! ```
//! use bytes::BytesMut;
//! use loadrig_wire::volt as vw;
//!
//! let mut out = BytesMut::new();
//! vw::encode_invocation_with(&mut out, "Vote", 7, (&5551234567i64, &3i32, &2i64)).unwrap();
//! assert_eq!(vw::frame_len(&out).unwrap(), Some(out.len()));
//! let call = vw::decode_invocation(&out).unwrap();
//! assert_eq!(call.procedure, "Vote");
//! ```

mod error;
mod frame;
mod invocation;
mod login;
mod param;
mod reader;
mod response;
mod table;
mod types;

pub use error::WireError;
pub use frame::{frame_len, MAX_FRAME_LEN};
pub use invocation::{
    decode_invocation, encode_invocation, encode_invocation_with, Invocation, INVOCATION_VERSION,
};
pub use login::{
    decode_login_response, encode_login, encode_login_response, hash_password, AuthFailure,
    LoginInfo, LoginResponse, PasswordHash, SERVICE_DATABASE,
};
pub use param::{Param, ParamSet};
pub use response::{
    decode_response, decode_scalar_i64, encode_response, peek_client_handle, peek_header, Response,
    ResponseHeader, Status, UNINITIALIZED_APP_STATUS,
};
pub use table::{Column, VoltTable, DEFAULT_TABLE_STATUS};
pub use types::{Value, VoltType, DECIMAL_SCALE, NULL_FLOAT};

/// Protocol version this codec uses for logins by default (SHA-256 hashes).
pub const LOGIN_VERSION: u8 = 1;
