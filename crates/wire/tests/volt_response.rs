//! Response and VoltTable bytes derived by hand, plus cell round trips for
//! every column type.

mod common;

use bytes::{Bytes, BytesMut};
use common::{cat, framed, hex, lp};
use loadrig_wire::volt::{
    decode_response, decode_scalar_i64, encode_response, frame_len, peek_client_handle,
    peek_header, Column, Response, ResponseHeader, Status, Value, VoltTable, VoltType, WireError,
};

/// Success response: one table, columns (ID BIGINT, NAME STRING), rows
/// (1, "a") and (NULL, "bc").
fn success_frame() -> Vec<u8> {
    hex("00 00 00 54             # frame length 84
         00                      # version
         00 00 00 00 00 00 00 2a # client handle 42
         00                      # fields present: none
         01                      # status SUCCESS
         80                      # app status: unset (-128)
         00 00 00 05             # cluster round trip 5 ms
         00 01                   # one table
         00 00 00 3e             # table length 62
         00 00 00 13             # metadata length 19
         80                      # table status
         00 02                   # two columns
         06 09                   # BIGINT, STRING
         00 00 00 02 49 44       # \"ID\"
         00 00 00 04 4e 41 4d 45 # \"NAME\"
         00 00 00 02             # two rows
         00 00 00 0d | 00 00 00 00 00 00 00 01 | 00 00 00 01 61
         00 00 00 0e | 80 00 00 00 00 00 00 00 | 00 00 00 02 62 63")
}

#[test]
fn decode_success_with_two_by_two_table() {
    let frame = success_frame();
    assert_eq!(frame_len(&frame).unwrap(), Some(frame.len()));
    let r = decode_response(&frame).unwrap();
    assert_eq!(r.client_handle, 42);
    assert_eq!(r.status, Status::Success);
    assert_eq!(r.status_string, None);
    assert_eq!(r.app_status, -128);
    assert_eq!(r.cluster_round_trip_ms, 5);
    assert_eq!(r.tables.len(), 1);
    let t = &r.tables[0];
    assert_eq!(t.status(), -128);
    assert_eq!(
        t.columns(),
        &[
            Column {
                name: "ID".into(),
                ty: VoltType::BigInt
            },
            Column {
                name: "NAME".into(),
                ty: VoltType::String
            },
        ]
    );
    assert_eq!(t.row_count(), 2);
    assert_eq!(t.get_i64(0, 0), Some(1));
    assert_eq!(t.get_str(0, 1), Some("a"));
    assert_eq!(t.get(1, 0), Some(&Value::Null));
    assert_eq!(t.get_i64(1, 0), None);
    assert_eq!(t.get_str(1, 1), Some("bc"));
    assert_eq!(t.get(2, 0), None);
    assert_eq!(t.column_index("NAME"), Some(1));
    assert_eq!(t.as_scalar_i64(), Some(1));

    assert_eq!(peek_client_handle(&frame).unwrap(), 42);
    assert_eq!(
        peek_header(&frame).unwrap(),
        ResponseHeader {
            client_handle: 42,
            status: Status::Success,
            app_status: -128,
            cluster_round_trip_ms: 5
        }
    );

    // Our encoder writes the same bytes back.
    let mut again = BytesMut::new();
    encode_response(&mut again, &r).unwrap();
    assert_eq!(&again[..], &frame[..]);
}

#[test]
fn decode_error_response_with_status_string() {
    let body = cat(&[
        &hex("00 ff ff ff ff ff ff ff fe"), // version, handle -2
        &hex("20"),                         // fields: status string (bit 5)
        &hex("fe"),                         // GRACEFUL_FAILURE
        &lp("constraint violated"),
        &hex("80 00 00 00 00 00 00"), // app status, round trip 0, no tables
    ]);
    let frame = framed(&body);
    let r = decode_response(&frame).unwrap();
    assert_eq!(r.client_handle, -2);
    assert_eq!(r.status, Status::GracefulFailure);
    assert!(!r.status.is_success());
    assert_eq!(r.status_string.as_deref(), Some("constraint violated"));
    assert_eq!(r.app_status_string, None);
    assert!(r.tables.is_empty());
    let h = peek_header(&frame).unwrap();
    assert_eq!(
        (h.status, h.cluster_round_trip_ms),
        (Status::GracefulFailure, 0)
    );
}

#[test]
fn optional_fields_app_status_exception_and_hashes() {
    let body = cat(&[
        &hex("00 00 00 00 00 00 00 00 07"),
        &hex("f0"), // bits 7, 6, 5, 4
        &hex("fd"), // UNEXPECTED_FAILURE
        &lp("boom"),
        &hex("03"),
        &lp("app says"),
        &hex("00 00 00 09"),
        &hex("00 00 00 03 01 02 03"), // opaque exception, 3 bytes
        &hex("00 02 00 00 00 01 00 00 00 02"), // two hashes
        &hex("00 00"),
    ]);
    let r = decode_response(&framed(&body)).unwrap();
    assert_eq!(r.status, Status::UnexpectedFailure);
    assert_eq!(r.status_string.as_deref(), Some("boom"));
    assert_eq!(r.app_status, 3);
    assert_eq!(r.app_status_string.as_deref(), Some("app says"));
    assert_eq!(r.cluster_round_trip_ms, 9);
    assert_eq!(r.exception, Some(Bytes::from_static(&[1, 2, 3])));
}

#[test]
fn status_codes_map_both_ways() {
    for code in i8::MIN..=i8::MAX {
        assert_eq!(Status::from_code(code).code(), code);
    }
    assert_eq!(Status::from_code(-9), Status::OperationalFailure);
    assert_eq!(Status::from_code(-42), Status::Other(-42));
}

#[test]
fn every_column_type_round_trips_with_nulls() {
    let columns: Vec<Column> = [
        VoltType::TinyInt,
        VoltType::SmallInt,
        VoltType::Integer,
        VoltType::BigInt,
        VoltType::Float,
        VoltType::String,
        VoltType::VarBinary,
        VoltType::Timestamp,
        VoltType::Decimal,
    ]
    .iter()
    .enumerate()
    .map(|(i, ty)| Column {
        name: format!("C{i}"),
        ty: *ty,
    })
    .collect();
    let full = vec![
        Value::TinyInt(-7),
        Value::SmallInt(300),
        Value::Integer(-70_000),
        Value::BigInt(1 << 40),
        Value::Float(-2.5e-3),
        Value::String("ü".into()),
        Value::VarBinary(Bytes::from_static(&[0, 255])),
        Value::Timestamp(1_600_000_000_000_000),
        Value::Decimal(-123_456_789_000_000),
    ];
    let nulls = vec![Value::Null; columns.len()];
    let table = VoltTable::new(columns, vec![full, nulls]).unwrap();
    let resp = Response {
        client_handle: 1,
        status: Status::Success,
        status_string: None,
        app_status: -128,
        app_status_string: None,
        cluster_round_trip_ms: 0,
        exception: None,
        tables: vec![table.clone(), table],
    };
    let mut buf = BytesMut::new();
    encode_response(&mut buf, &resp).unwrap();
    assert_eq!(decode_response(&buf).unwrap(), resp);
}

#[test]
fn table_rejects_mismatched_cells() {
    let cols = vec![Column {
        name: "X".into(),
        ty: VoltType::Integer,
    }];
    assert_eq!(
        VoltTable::new(cols.clone(), vec![vec![Value::BigInt(1)]]),
        Err(WireError::TypeMismatch(VoltType::Integer))
    );
    assert!(VoltTable::new(cols, vec![vec![]]).is_err());
}

#[test]
fn hand_table_errors_are_typed() {
    // Unknown column type 0x7f inside an otherwise well-formed table.
    let mut frame = success_frame();
    let at = frame.iter().position(|b| *b == 0x09).unwrap();
    frame[at] = 0x7f;
    assert_eq!(decode_response(&frame), Err(WireError::UnknownType(0x7f)));
    // Bad UTF-8 in a string cell.
    let mut frame = success_frame();
    let last = frame.len() - 1;
    frame[last] = 0xff;
    assert_eq!(decode_response(&frame), Err(WireError::BadUtf8));
}

#[test]
fn response_truncated_everywhere() {
    let frame = success_frame();
    for n in 0..frame.len() {
        assert_eq!(frame_len(&frame[..n]).unwrap(), None);
        assert!(decode_response(&frame[..n]).is_err());
        assert!(peek_header(&frame[..n]).is_err());
    }
    // A frame whose prefix is honest but whose table lies about its length.
    let mut short = success_frame();
    short[4 + 1 + 8 + 1 + 1 + 1 + 4 + 2 + 3] = 0x50; // table length 0x50 > what is left
    assert!(matches!(
        decode_response(&short),
        Err(WireError::Truncated { .. })
    ));
}

#[test]
fn scalar_path_reads_the_first_integer_cell() {
    let frame = success_frame();
    let (h, v) = decode_scalar_i64(&frame).unwrap();
    assert_eq!(
        (h.client_handle, h.status, v),
        (42, Status::Success, Some(1))
    );
    for n in 0..frame.len() {
        assert!(decode_scalar_i64(&frame[..n]).is_err());
    }
    // What a Java procedure returning `long` sends: one row, one BIGINT.
    let one = VoltTable::new(
        vec![Column {
            name: String::new(),
            ty: VoltType::BigInt,
        }],
        vec![vec![Value::BigInt(2)]],
    )
    .unwrap();
    let mut buf = BytesMut::new();
    let mut r = decode_response(&frame).unwrap();
    r.tables = vec![one];
    r.client_handle = 7;
    encode_response(&mut buf, &r).unwrap();
    let (h, v) = decode_scalar_i64(&buf).unwrap();
    assert_eq!((h.client_handle, v), (7, Some(2)));
    // No table, or a string column: no number, no error.
    r.tables.clear();
    buf.clear();
    encode_response(&mut buf, &r).unwrap();
    assert_eq!(decode_scalar_i64(&buf).unwrap().1, None);
}
