//! Connecting: the server's v10 greeting, the client's login
//! (`HandshakeResponse41`), `mysql_native_password`'s scramble, and what
//! the server answers to a login (OK, ERR, or a switch to another plugin).
//!
//! `mysql_native_password` proves the password without sending it:
//! `SHA1(password) XOR SHA1(scramble ++ SHA1(SHA1(password)))`, with the
//! 20-byte scramble the server sent; an empty password sends nothing.

use bytes::{BufMut, BytesMut};
use sha1::{Digest, Sha1};

use super::response::{parse_err, ServerError};
use super::{begin_packet, caps, end_packet, Fields, MyError};

/// The one authentication plugin this client speaks.
pub const NATIVE_PASSWORD: &str = "mysql_native_password";

/// utf8mb4_general_ci: text parameters and names travel as UTF-8.
const CHARSET: u8 = 45;

/// What the server's greeting says that the login needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Greeting {
    /// "10.11.6-MariaDB-0+deb12u1" and the like.
    pub version: String,
    /// The server's capability flags (lower and upper halves).
    pub caps: u32,
    /// The 20-byte scramble (both parts, the trailing NUL dropped).
    pub scramble: Vec<u8>,
    /// The plugin the server expects first ("" when it names none).
    pub plugin: String,
}

/// Reads the greeting (the first packet's payload).
pub fn parse_greeting(payload: &[u8]) -> Result<Greeting, MyError> {
    let mut f = Fields::new(payload, "greeting");
    if payload.first() == Some(&0xFF) {
        // A server that refuses at once (too many connections, host blocked).
        return Err(MyError::Malformed(
            "greeting: the server refused the connection",
        ));
    }
    if f.u8()? != 10 {
        return Err(MyError::NotV10);
    }
    let version = String::from_utf8_lossy(f.cstr()?).into_owned();
    let _connection_id = f.u32()?;
    let mut scramble = f.take(8)?.to_vec();
    f.take(1)?;
    let low = f.u16()?;
    let (caps, data_len) = if f.rest().is_empty() {
        (u32::from(low), 0)
    } else {
        let _charset = f.u8()?;
        let _status = f.u16()?;
        let high = f.u16()?;
        let data_len = f.u8()?;
        f.take(10)?;
        (u32::from(high).rotate_left(16) | u32::from(low), data_len)
    };
    if caps & caps::SECURE_CONNECTION != 0 {
        // The rest of the scramble: 12 bytes and a NUL (at least 13).
        let n = usize::from(data_len).saturating_sub(8).max(13);
        let part = f.take(n.min(f.rest().len()))?;
        let part = part.strip_suffix(&[0]).unwrap_or(part);
        scramble.extend_from_slice(part);
    }
    let plugin = if caps & caps::PLUGIN_AUTH != 0 && !f.rest().is_empty() {
        let rest = f.rest();
        let name = rest.strip_suffix(&[0]).unwrap_or(rest);
        String::from_utf8_lossy(name).into_owned()
    } else {
        String::new()
    };
    Ok(Greeting {
        version,
        caps,
        scramble,
        plugin,
    })
}

/// The capabilities to ask for: what this client wants and the server has;
/// an error names one this client needs and the server lacks.
pub fn agree(server: u32) -> Result<u32, MyError> {
    let missing = caps::NEEDED & !server;
    if missing != 0 {
        return Err(MyError::Capability(missing));
    }
    Ok(caps::WANTED & server)
}

/// `mysql_native_password`'s answer to `scramble` (empty for an empty password).
pub fn native_password(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let once: [u8; 20] = Sha1::digest(password).into();
    let twice: [u8; 20] = Sha1::digest(once).into();
    let mut h = Sha1::new();
    h.update(scramble);
    h.update(twice);
    let salted: [u8; 20] = h.finalize().into();
    once.iter().zip(salted).map(|(a, b)| a ^ b).collect()
}

/// Who logs in, to which database, with which plugin's answer.
pub struct Login<'a> {
    /// The agreed capabilities ([`agree`]).
    pub caps: u32,
    /// The user name.
    pub user: &'a str,
    /// The plugin's answer to the scramble ([`native_password`]).
    pub auth: &'a [u8],
    /// The database to use (sent when `caps` has `CONNECT_WITH_DB`).
    pub database: &'a str,
}

/// Appends the login packet (sequence number 1).
pub fn encode_login(out: &mut BytesMut, login: &Login<'_>) {
    let start = begin_packet(out);
    out.put_u32_le(login.caps);
    out.put_u32_le(super::MAX_PAYLOAD as u32);
    out.put_u8(CHARSET);
    out.put_bytes(0, 23);
    out.put_slice(login.user.as_bytes());
    out.put_u8(0);
    // The scramble's answer is 20 bytes (or none): its length fits a byte.
    let auth = login
        .auth
        .get(..login.auth.len().min(255))
        .unwrap_or_default();
    out.put_u8(auth.len() as u8);
    out.put_slice(auth);
    if login.caps & caps::CONNECT_WITH_DB != 0 {
        out.put_slice(login.database.as_bytes());
        out.put_u8(0);
    }
    if login.caps & caps::PLUGIN_AUTH != 0 {
        out.put_slice(NATIVE_PASSWORD.as_bytes());
        out.put_u8(0);
    }
    end_packet(out, start, 1);
}

/// Appends an answer to an auth switch (its raw bytes, sequence `seq`).
pub fn encode_auth_data(out: &mut BytesMut, auth: &[u8], seq: u8) {
    let start = begin_packet(out);
    out.put_slice(auth);
    end_packet(out, start, seq);
}

/// The server's answer to a login.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthReply {
    /// Logged in.
    Ok,
    /// Refused (wrong password, unknown database, ...).
    Err(ServerError),
    /// Answer again with `plugin` to the new scramble `data`.
    Switch {
        /// The plugin's name.
        plugin: String,
        /// The new scramble (trailing NUL dropped).
        data: Vec<u8>,
    },
}

/// Reads the server's answer to a login or to an auth switch answer.
pub fn parse_auth_reply(payload: &[u8]) -> Result<AuthReply, MyError> {
    match payload.first() {
        Some(0x00) => Ok(AuthReply::Ok),
        Some(0xFF) => Ok(AuthReply::Err(parse_err(payload)?)),
        Some(0xFE) => {
            let mut f = Fields::new(payload.get(1..).unwrap_or_default(), "auth switch");
            let plugin = String::from_utf8_lossy(f.cstr()?).into_owned();
            let data = f.rest();
            let data = data.strip_suffix(&[0]).unwrap_or(data).to_vec();
            Ok(AuthReply::Switch { plugin, data })
        }
        // 0x01: more data for a plugin this client never chose.
        _ => Err(MyError::Malformed("answer to a login")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A MariaDB 10.11 greeting as the protocol lays it out.
    pub(crate) fn greeting_bytes() -> Vec<u8> {
        let mut g = vec![10];
        g.extend_from_slice(b"10.11.6-MariaDB\0");
        g.extend_from_slice(&7u32.to_le_bytes());
        g.extend_from_slice(b"abcdefgh\0");
        let all = caps::WANTED | 0x0100_0000;
        g.extend_from_slice(&(all as u16).to_le_bytes());
        g.push(45);
        g.extend_from_slice(&2u16.to_le_bytes());
        g.extend_from_slice(&((all >> 16) as u16).to_le_bytes());
        g.push(21);
        g.extend_from_slice(&[0; 10]);
        g.extend_from_slice(b"ijklmnopqrst\0");
        g.extend_from_slice(b"mysql_native_password\0");
        g
    }

    #[test]
    fn a_greeting_gives_the_scramble_and_plugin() {
        let g = parse_greeting(&greeting_bytes()).unwrap();
        assert_eq!(g.version, "10.11.6-MariaDB");
        assert_eq!(g.scramble, b"abcdefghijklmnopqrst");
        assert_eq!(g.plugin, NATIVE_PASSWORD);
        assert_eq!(agree(g.caps).unwrap(), caps::WANTED);
        let bytes = greeting_bytes();
        for cut in 0..bytes.len() - 1 {
            let _ = parse_greeting(&bytes[..cut]); // never a panic
        }
        assert_eq!(
            agree(caps::PROTOCOL_41),
            Err(MyError::Capability(caps::NEEDED & !caps::PROTOCOL_41))
        );
    }

    #[test]
    fn native_password_matches_its_definition() {
        // SHA1("bench") XOR SHA1(scramble ++ SHA1(SHA1("bench"))), by hand.
        let scramble = b"abcdefghijklmnopqrst";
        let once: [u8; 20] = Sha1::digest(b"bench").into();
        let twice: [u8; 20] = Sha1::digest(once).into();
        let salted: [u8; 20] = Sha1::digest([&scramble[..], &twice[..]].concat()).into();
        let want: Vec<u8> = (0..20).map(|i| once[i] ^ salted[i]).collect();
        assert_eq!(native_password(b"bench", scramble), want);
        assert!(native_password(b"", scramble).is_empty());
    }

    #[test]
    fn auth_replies_are_told_apart() {
        assert_eq!(
            parse_auth_reply(&[0, 0, 0, 2, 0, 0, 0]).unwrap(),
            AuthReply::Ok
        );
        let switch =
            parse_auth_reply(b"\xfemysql_native_password\0ABCDEFGHIJKLMNOPQRST\0").unwrap();
        assert_eq!(
            switch,
            AuthReply::Switch {
                plugin: NATIVE_PASSWORD.to_string(),
                data: b"ABCDEFGHIJKLMNOPQRST".to_vec()
            }
        );
        let err = parse_auth_reply(b"\xff\x15\x04#28000Access denied").unwrap();
        assert!(matches!(err, AuthReply::Err(e) if e.code == 1045 && e.state == *b"28000"));
        assert!(parse_auth_reply(b"\x01").is_err());
    }
}
