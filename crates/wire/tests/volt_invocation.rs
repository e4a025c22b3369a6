//! Invocation bytes derived by hand, and parameter round trips through the
//! test-side decoder.

mod common;

use bytes::{Bytes, BytesMut};
use common::{cat, framed, hex, lp};
use loadrig_wire::volt::{
    decode_invocation, encode_invocation, encode_invocation_with, frame_len, Invocation, Value,
    WireError,
};

#[test]
fn invocation_with_every_param_type_bytes() {
    let params = [
        Value::Null,
        Value::TinyInt(-2),
        Value::SmallInt(0x0102),
        Value::Integer(-1),
        Value::BigInt(5_551_234_567),
        Value::Float(1.5),
        Value::String("hi".into()),
        Value::VarBinary(Bytes::from_static(&[0xde, 0xad])),
        Value::Timestamp(1_000_000),
        Value::Decimal(1_500_000_000_000), // 1.5 at scale 12
        Value::BigIntArray(vec![1, -1]),
        Value::IntegerArray(vec![7]),
        Value::StringArray(vec!["a".into(), "".into()]),
    ];
    let mut buf = BytesMut::new();
    encode_invocation(&mut buf, "Proc", 0x0102_0304_0506_0708, &params).unwrap();

    let body = cat(&[
        &hex("00"),                                                 // invocation version 0
        &lp("Proc"),                                                // procedure name
        &hex("01 02 03 04 05 06 07 08"),                            // client handle
        &hex("00 0d"),                                              // 13 parameters
        &hex("01"),                                                 // NULL: type byte only
        &hex("03 fe"),                                              // TINYINT -2
        &hex("04 01 02"),                                           // SMALLINT 0x0102
        &hex("05 ff ff ff ff"),                                     // INTEGER -1
        &hex("06 00 00 00 01 4a e1 1e 07"), // BIGINT 5551234567 = 0x1_4ae1_1e07
        &hex("08 3f f8 00 00 00 00 00 00"), // FLOAT 1.5
        &hex("09 00 00 00 02 68 69"),       // STRING "hi"
        &hex("19 00 00 00 02 de ad"),       // VARBINARY (25)
        &hex("0b 00 00 00 00 00 0f 42 40"), // TIMESTAMP 1e6 us
        &hex("16 00 00 00 00 00 00 00 00 00 00 01 5d 3e f7 98 00"), // DECIMAL (22)
        &hex("9d 06 00 02 00 00 00 00 00 00 00 01 ff ff ff ff ff ff ff ff"), // ARRAY(-99) of BIGINT
        &hex("9d 05 00 01 00 00 00 07"),    // ARRAY of INTEGER
        &hex("9d 09 00 02 00 00 00 01 61 00 00 00 00"), // ARRAY of STRING
    ]);
    assert_eq!(&buf[..], &framed(&body)[..]);
    assert_eq!(frame_len(&buf).unwrap(), Some(buf.len()));

    let back = decode_invocation(&buf).unwrap();
    assert_eq!(
        back,
        Invocation {
            procedure: "Proc".into(),
            client_handle: 0x0102_0304_0506_0708,
            params: params.to_vec(),
        }
    );
}

#[test]
fn fast_path_matches_value_path() {
    let (phone, contestant, max) = (5_551_234_567i64, 3i32, 2i64);
    let mut fast = BytesMut::new();
    encode_invocation_with(&mut fast, "Vote", 42, (&phone, &contestant, &max)).unwrap();
    let mut slow = BytesMut::new();
    let vals = [
        Value::BigInt(phone),
        Value::Integer(contestant),
        Value::BigInt(max),
    ];
    encode_invocation(&mut slow, "Vote", 42, &vals).unwrap();
    assert_eq!(fast, slow);

    let mut mixed = BytesMut::new();
    let ids: &[i64] = &[1, 2];
    let names: &[&str] = &["x"];
    let blob: &[u8] = b"\x00\x01";
    encode_invocation_with(
        &mut mixed,
        "P",
        1,
        (
            1i8,
            2i16,
            "s",
            String::from("t"),
            ids,
            names,
            blob,
            None::<i64>,
            0.25f64,
        ),
    )
    .unwrap();
    let got = decode_invocation(&mixed).unwrap().params;
    assert_eq!(
        got,
        vec![
            Value::TinyInt(1),
            Value::SmallInt(2),
            Value::String("s".into()),
            Value::String("t".into()),
            Value::BigIntArray(vec![1, 2]),
            Value::StringArray(vec!["x".into()]),
            Value::VarBinary(Bytes::from_static(b"\x00\x01")),
            Value::Null,
            Value::Float(0.25),
        ]
    );
}

#[test]
fn no_params_and_appending_frames() {
    let mut buf = BytesMut::new();
    encode_invocation_with(&mut buf, "@Ping", -1, ()).unwrap();
    let first = buf.len();
    encode_invocation_with(&mut buf, "@Ping", -2, ()).unwrap();
    assert_eq!(frame_len(&buf).unwrap(), Some(first));
    let second = buf.split_off(first);
    assert_eq!(decode_invocation(&buf).unwrap().client_handle, -1);
    assert_eq!(decode_invocation(&second).unwrap().client_handle, -2);
    assert_eq!(
        &buf[..],
        &framed(&cat(&[&[0], &lp("@Ping"), &(-1i64).to_be_bytes(), &[0, 0]]))[..]
    );
}

#[test]
fn param_round_trip_extremes() {
    let cases = vec![
        Value::TinyInt(i8::MAX),
        Value::TinyInt(i8::MIN + 1),
        Value::SmallInt(i16::MIN + 1),
        Value::Integer(i32::MAX),
        Value::BigInt(i64::MAX),
        Value::Float(-0.0),
        Value::Float(f64::MAX),
        Value::String(String::new()),
        Value::String("héllo ☃".into()),
        Value::VarBinary(Bytes::new()),
        Value::Timestamp(-1),
        Value::Decimal(i128::MAX),
        Value::Decimal(-1),
        Value::BigIntArray(vec![]),
        Value::IntegerArray(vec![i32::MIN + 1, 0]),
        Value::StringArray(vec![]),
    ];
    for v in cases {
        let mut buf = BytesMut::new();
        encode_invocation(&mut buf, "p", 0, std::slice::from_ref(&v)).unwrap();
        assert_eq!(decode_invocation(&buf).unwrap().params, vec![v]);
    }
}

#[test]
fn sentinel_params_decode_as_null() {
    // The minimum of each integer type is the protocol's NULL for it.
    for v in [
        Value::TinyInt(i8::MIN),
        Value::SmallInt(i16::MIN),
        Value::Integer(i32::MIN),
        Value::BigInt(i64::MIN),
        Value::Timestamp(i64::MIN),
        Value::Decimal(i128::MIN),
    ] {
        let mut buf = BytesMut::new();
        encode_invocation(&mut buf, "p", 0, &[v]).unwrap();
        assert_eq!(decode_invocation(&buf).unwrap().params, vec![Value::Null]);
    }
}

#[test]
fn oversized_array_is_rejected_and_buffer_restored() {
    let mut buf = BytesMut::from(&b"keep"[..]);
    let big = Value::BigIntArray(vec![0; 40_000]);
    let err = encode_invocation(&mut buf, "p", 0, &[big]).unwrap_err();
    assert!(matches!(err, WireError::TooLarge { .. }), "{err:?}");
    assert_eq!(&buf[..], b"keep");
}

#[test]
fn invocation_truncated_everywhere() {
    let mut buf = BytesMut::new();
    encode_invocation_with(
        &mut buf,
        "Vote",
        9,
        (1i64, "abc", Value::StringArray(vec!["q".into()])),
    )
    .unwrap();
    for n in 0..buf.len() {
        assert_eq!(frame_len(&buf[..n]).unwrap(), None);
        assert!(decode_invocation(&buf[..n]).is_err());
    }
}
