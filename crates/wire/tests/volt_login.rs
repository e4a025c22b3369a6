//! Login request and response bytes, derived by hand from the protocol
//! description (length prefix, version byte, "database", user, raw hash).

mod common;

use bytes::BytesMut;
use common::{cat, framed, hex, lp};
use loadrig_wire::volt::{
    decode_login_response, encode_login, encode_login_response, frame_len, hash_password,
    AuthFailure, LoginInfo, LoginResponse, PasswordHash, WireError,
};

// Computed independently at authoring time:
//   printf password | sha256sum ; printf '' | sha256sum ; printf password | sha1sum
const SHA256_PASSWORD: &str = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8";
const SHA256_EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const SHA1_PASSWORD: &str = "5baa61e4c9b93f3f0682250b6cf8331b7ee68fd8";

#[test]
fn hashes_match_coreutils() {
    assert_eq!(
        hash_password("password", 1).unwrap(),
        PasswordHash::Sha256(hex(SHA256_PASSWORD).try_into().unwrap())
    );
    assert_eq!(
        hash_password("", 1).unwrap().as_ref(),
        hex(SHA256_EMPTY).as_slice()
    );
    assert_eq!(
        hash_password("password", 0).unwrap(),
        PasswordHash::Sha1(hex(SHA1_PASSWORD).try_into().unwrap())
    );
    assert_eq!(hash_password("x", 2), Err(WireError::UnsupportedVersion(2)));
}

#[test]
fn login_v1_admin_password_bytes() {
    let mut buf = BytesMut::new();
    encode_login(&mut buf, "admin", "password", 1).unwrap();
    let expected = hex(&format!(
        "00 00 00 37                      # length 55 = 1+1+12+9+32
         01                               # protocol version 1
         01                               # hash scheme: SHA-256
         00 00 00 08 64 61 74 61 62 61 73 65  # \"database\"
         00 00 00 05 61 64 6d 69 6e       # \"admin\"
         {SHA256_PASSWORD}"
    ));
    assert_eq!(&buf[..], &expected[..]);
    assert_eq!(frame_len(&buf).unwrap(), Some(buf.len()));
}

#[test]
fn login_v1_empty_password_bytes() {
    let mut buf = BytesMut::new();
    encode_login(&mut buf, "admin", "", 1).unwrap();
    let expected = framed(&cat(&[
        &[1, 1],
        &lp("database"),
        &lp("admin"),
        &hex(SHA256_EMPTY),
    ]));
    assert_eq!(&buf[..], &expected[..]);
}

#[test]
fn login_v0_uses_sha1_and_no_scheme_byte() {
    let mut buf = BytesMut::new();
    encode_login(&mut buf, "admin", "password", 0).unwrap();
    let expected = framed(&cat(&[
        &[0],
        &lp("database"),
        &lp("admin"),
        &hex(SHA1_PASSWORD),
    ]));
    assert_eq!(&buf[..], &expected[..]);
    assert_eq!(expected.len(), 4 + 1 + 12 + 9 + 20);
}

#[test]
fn bad_version_leaves_buffer_untouched() {
    let mut buf = BytesMut::from(&b"xyz"[..]);
    assert!(encode_login(&mut buf, "a", "b", 9).is_err());
    assert_eq!(&buf[..], b"xyz");
}

fn accepted_frame() -> Vec<u8> {
    hex("00 00 00 2c          # length 44 = 1+1+4+8+8+4+4+14
         00                   # version
         00                   # auth result: success
         00 00 00 02          # host id 2
         00 00 00 00 00 00 01 00  # connection id 256
         00 00 01 70 00 00 00 00  # cluster start (ms)
         7f 00 00 01          # leader 127.0.0.1
         00 00 00 0e 76 6f 6c 74 64 62 2d 39 2e 33 2e 32 2d 78  # \"voltdb-9.3.2-x\"")
}

#[test]
fn decode_accepted_login() {
    let frame = accepted_frame();
    assert_eq!(frame_len(&frame).unwrap(), Some(frame.len()));
    let LoginResponse::Accepted(info) = decode_login_response(&frame).unwrap() else {
        panic!("expected accepted");
    };
    assert_eq!(
        info,
        LoginInfo {
            version: 0,
            host_id: 2,
            connection_id: 256,
            cluster_start_ms: 0x0170_0000_0000,
            leader_ipv4: 0x7f00_0001,
            build: "voltdb-9.3.2-x".into(),
        }
    );
    assert_eq!(info.leader_addr(), std::net::Ipv4Addr::LOCALHOST);
    let mut again = BytesMut::new();
    encode_login_response(&mut again, &LoginResponse::Accepted(info)).unwrap();
    assert_eq!(&again[..], &frame[..]);
}

#[test]
fn decode_rejected_login() {
    let frame = hex("00 00 00 02 00 ff");
    assert_eq!(
        decode_login_response(&frame).unwrap(),
        LoginResponse::Rejected(AuthFailure::AuthenticationFailed)
    );
    let frame = hex("00 00 00 02 00 01");
    assert_eq!(
        decode_login_response(&frame).unwrap(),
        LoginResponse::Rejected(AuthFailure::TooManyConnections)
    );
}

#[test]
fn login_response_truncated_everywhere() {
    let frame = accepted_frame();
    for n in 0..frame.len() {
        assert_eq!(frame_len(&frame[..n]).unwrap(), None, "prefix {n}");
        assert!(decode_login_response(&frame[..n]).is_err(), "prefix {n}");
    }
}
