//! Owns the login handshake: the client's first message and the server's
//! reply.
//!
//! Request, protocol version 1: `[len][1][scheme 1 = SHA-256]["database"]
//! [username][32-byte SHA-256 of password]`. Version 0 (older servers) has
//! no scheme byte and a 20-byte SHA-1. Strings are `i32`-length-prefixed;
//! the hash is raw, with no length. Response: `[len][version][result code]`
//! and, on success, `[host id i32][connection id i64][cluster start
//! timestamp i64][leader IPv4 i32][build string]`.

use bytes::{BufMut, BytesMut};
use sha1::Sha1;
use sha2::{Digest, Sha256};

use crate::volt::frame::{put_bytes, split_frame, write_frame};
use crate::volt::reader::Reader;
use crate::volt::WireError;

/// Service name for ordinary client connections.
pub const SERVICE_DATABASE: &str = "database";

/// Hash-scheme byte for SHA-256 in a version-1 login.
const SCHEME_SHA256: u8 = 1;

/// A password digest; its length depends on the protocol version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PasswordHash {
    /// 20-byte SHA-1, protocol version 0.
    Sha1([u8; 20]),
    /// 32-byte SHA-256, protocol version 1.
    Sha256([u8; 32]),
}

impl AsRef<[u8]> for PasswordHash {
    fn as_ref(&self) -> &[u8] {
        match self {
            Self::Sha1(h) => h,
            Self::Sha256(h) => h,
        }
    }
}

/// Hashes `password`'s UTF-8 bytes the way protocol `version` expects:
/// SHA-1 for version 0, SHA-256 for version 1.
pub fn hash_password(password: &str, version: u8) -> Result<PasswordHash, WireError> {
    match version {
        0 => Ok(PasswordHash::Sha1(Sha1::digest(password.as_bytes()).into())),
        1 => Ok(PasswordHash::Sha256(
            Sha256::digest(password.as_bytes()).into(),
        )),
        other => Err(WireError::UnsupportedVersion(other)),
    }
}

/// Appends a login frame for the `"database"` service.
///
/// `version` must be 0 or 1; anything else is `UnsupportedVersion` and
/// leaves `buf` untouched.
pub fn encode_login(
    buf: &mut BytesMut,
    user: &str,
    password: &str,
    version: u8,
) -> Result<(), WireError> {
    let hash = hash_password(password, version)?;
    write_frame(buf, version, |buf| {
        if version == 1 {
            buf.put_u8(SCHEME_SHA256);
        }
        put_bytes(buf, SERVICE_DATABASE.as_bytes(), "service name")?;
        put_bytes(buf, user.as_bytes(), "username")?;
        buf.put_slice(hash.as_ref());
        Ok(())
    })
}

/// The server's answer to a login.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginResponse {
    /// Authenticated; the connection is ready for invocations.
    Accepted(LoginInfo),
    /// Refused; the server then closes the connection.
    Rejected(AuthFailure),
}

/// Connection facts the server reports on a successful login.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginInfo {
    /// Protocol version byte of the response frame.
    pub version: u8,
    /// Id of the host this connection landed on.
    pub host_id: i32,
    /// Server-assigned connection id.
    pub connection_id: i64,
    /// Cluster start time, milliseconds since the Unix epoch.
    pub cluster_start_ms: i64,
    /// Leader's IPv4 address as a big-endian integer.
    pub leader_ipv4: i32,
    /// Server build string (version and build id).
    pub build: String,
}

impl LoginInfo {
    /// The leader address as an [`std::net::Ipv4Addr`].
    pub fn leader_addr(&self) -> std::net::Ipv4Addr {
        std::net::Ipv4Addr::from(self.leader_ipv4.to_be_bytes())
    }
}

/// Why a login was refused, from the result code byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthFailure {
    /// Code -1: bad user name or password.
    AuthenticationFailed,
    /// Code 1: the server has too many connections.
    TooManyConnections,
    /// Code 2: the server timed out waiting for the login.
    Timeout,
    /// Code 3: the server could not parse the login.
    FormatError,
    /// Code 4: the node is rejoining and cannot authenticate yet.
    Rejoining,
    /// Code 5: the requested service (export) is disabled.
    ServiceDisabled,
    /// Any other non-zero code.
    Other(i8),
}

impl AuthFailure {
    fn from_code(code: i8) -> Self {
        match code {
            -1 => Self::AuthenticationFailed,
            1 => Self::TooManyConnections,
            2 => Self::Timeout,
            3 => Self::FormatError,
            4 => Self::Rejoining,
            5 => Self::ServiceDisabled,
            other => Self::Other(other),
        }
    }

    /// The code byte as sent.
    pub fn code(self) -> i8 {
        match self {
            Self::AuthenticationFailed => -1,
            Self::TooManyConnections => 1,
            Self::Timeout => 2,
            Self::FormatError => 3,
            Self::Rejoining => 4,
            Self::ServiceDisabled => 5,
            Self::Other(c) => c,
        }
    }
}

/// Decodes one whole login-response frame (as delimited by
/// [`crate::volt::frame_len`]). A rejection is `Ok(Rejected(..))`, not an error:
/// the bytes were well formed.
pub fn decode_login_response(frame: &[u8]) -> Result<LoginResponse, WireError> {
    let (version, body) = split_frame(frame)?;
    let mut r = Reader::new(body);
    let code = r.i8("auth result")?;
    if code != 0 {
        // The server may or may not send the remaining fields on failure;
        // nothing in them matters, so they are not parsed.
        return Ok(LoginResponse::Rejected(AuthFailure::from_code(code)));
    }
    let info = LoginInfo {
        version,
        host_id: r.i32("host id")?,
        connection_id: r.i64("connection id")?,
        cluster_start_ms: r.i64("cluster start timestamp")?,
        leader_ipv4: r.i32("leader address")?,
        build: r.string("build string")?,
    };
    r.finish()?;
    Ok(LoginResponse::Accepted(info))
}

/// Appends a login-response frame (for fake servers and tests).
pub fn encode_login_response(
    buf: &mut BytesMut,
    response: &LoginResponse,
) -> Result<(), WireError> {
    match response {
        LoginResponse::Rejected(f) => write_frame(buf, 1, |buf| {
            buf.put_i8(f.code());
            Ok(())
        }),
        LoginResponse::Accepted(i) => write_frame(buf, i.version, |buf| {
            buf.put_i8(0);
            buf.put_i32(i.host_id);
            buf.put_i64(i.connection_id);
            buf.put_i64(i.cluster_start_ms);
            buf.put_i32(i.leader_ipv4);
            put_bytes(buf, i.build.as_bytes(), "build string")
        }),
    }
}
