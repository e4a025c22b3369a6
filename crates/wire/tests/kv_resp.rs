//! RESP2 bytes written by hand from the protocol specification's examples:
//! commands encoded exactly, every reply type parsed back, every prefix of a
//! reply incomplete, malformed replies and hostile lengths refused.

mod common;

use bytes::{Bytes, BytesMut};
use common::assert_frame;
use loadrig_wire::kv::resp::{
    self, encode_cmd1, encode_cmd2, encode_cmd3, encode_cmd4, encode_cmd5, encode_command,
    parse_reply, reply_len, Kind, Reply, RespError, MAX_ARRAY_LEN, MAX_BULK_LEN, MAX_DEPTH,
    MAX_LINE_LEN,
};

fn encoded(f: impl FnOnce(&mut BytesMut)) -> Vec<u8> {
    let mut b = BytesMut::new();
    f(&mut b);
    b.to_vec()
}

fn parse(input: &[u8]) -> Reply<'_> {
    let (r, n) = parse_reply(input).expect("valid").expect("whole reply");
    assert_eq!(n, input.len());
    assert_eq!(reply_len(input), Ok(Some(n)));
    r
}

// ---- commands ----

#[test]
fn command_is_an_array_of_bulk_strings() {
    // The specification's example: LLEN mylist.
    let want = b"*2\r\n$4\r\nLLEN\r\n$6\r\nmylist\r\n";
    assert_eq!(encoded(|b| encode_command(b, &[b"LLEN", b"mylist"])), want);
    assert_eq!(encoded(|b| encode_cmd2(b, b"LLEN", b"mylist")), want);
    assert_eq!(encoded(|b| encode_cmd2(b, b"LLEN", "mylist")), want);
}

#[test]
fn fast_paths_match_the_slice_encoder() {
    let key: &[u8] = b"key:000042";
    let value = vec![b'x'; 100];
    let set = encoded(|b| encode_command(b, &[b"SET", key, &value]));
    assert_eq!(encoded(|b| encode_cmd3(b, b"SET", key, &value)), set);
    assert_eq!(
        encoded(|b| encode_cmd3(b, b"SET", key, &Bytes::from(value.clone()))),
        set
    );
    assert_eq!(
        encoded(|b| encode_cmd1(b, b"PING")),
        b"*1\r\n$4\r\nPING\r\n"
    );
    assert_eq!(
        encoded(|b| encode_cmd4(b, b"SETEX", b"k", 10u32, b"v")),
        b"*4\r\n$5\r\nSETEX\r\n$1\r\nk\r\n$2\r\n10\r\n$1\r\nv\r\n"
    );
    assert_eq!(
        encoded(|b| encode_cmd5(b, b"SET", b"k", b"v", b"EX", 3600u64)),
        b"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nEX\r\n$4\r\n3600\r\n"
    );
}

#[test]
fn integer_arguments_are_decimal_bulk_strings() {
    let cases: [(Vec<u8>, &[u8]); 8] = [
        (encoded(|b| encode_cmd2(b, b"X", 0i64)), b"$1\r\n0\r\n"),
        (encoded(|b| encode_cmd2(b, b"X", -5i64)), b"$2\r\n-5\r\n"),
        (
            encoded(|b| encode_cmd2(b, b"X", i64::MIN)),
            b"$20\r\n-9223372036854775808\r\n",
        ),
        (
            encoded(|b| encode_cmd2(b, b"X", i64::MAX)),
            b"$19\r\n9223372036854775807\r\n",
        ),
        (
            encoded(|b| encode_cmd2(b, b"X", u64::MAX)),
            b"$20\r\n18446744073709551615\r\n",
        ),
        (encoded(|b| encode_cmd2(b, b"X", -1i32)), b"$2\r\n-1\r\n"),
        (
            encoded(|b| encode_cmd2(b, b"X", 4_000_000_000u32)),
            b"$10\r\n4000000000\r\n",
        ),
        (encoded(|b| encode_cmd2(b, b"X", 12usize)), b"$2\r\n12\r\n"),
    ];
    for (got, arg) in cases {
        let want = [&b"*2\r\n$1\r\nX\r\n"[..], arg].concat();
        assert_eq!(got, want, "{}", String::from_utf8_lossy(arg));
    }
}

#[test]
fn lengths_across_digit_boundaries_match_a_naive_encoder() {
    // The encoders compute each command's exact size up front; check it
    // where the length's digit count changes.
    let naive = |parts: &[&[u8]]| {
        let mut v = format!("*{}\r\n", parts.len()).into_bytes();
        for p in parts {
            v.extend_from_slice(format!("${}\r\n", p.len()).as_bytes());
            v.extend_from_slice(p);
            v.extend_from_slice(b"\r\n");
        }
        v
    };
    for len in [0, 1, 9, 10, 11, 99, 100, 999, 1000, 65_536, 1_000_000] {
        let value = vec![b'v'; len];
        let want = naive(&[b"SET", b"k", &value]);
        assert_eq!(encoded(|b| encode_cmd3(b, b"SET", b"k", &value)), want);
        assert_eq!(
            encoded(|b| encode_command(b, &[b"SET", b"k", &value])),
            want
        );
    }
    let many: Vec<&[u8]> = vec![b"x"; 12];
    assert_eq!(encoded(|b| encode_command(b, &many)), naive(&many));
    assert_eq!(encoded(|b| encode_command(b, &[])), b"*0\r\n");
}

#[test]
fn arguments_are_binary_safe_and_may_be_empty() {
    let got = encoded(|b| encode_command(b, &[b"SET", b"", b"a\r\nb\0"]));
    assert_eq!(got, b"*3\r\n$3\r\nSET\r\n$0\r\n\r\n$5\r\na\r\nb\0\r\n");
    let Reply::Array(Some(a)) = parse(&got) else {
        panic!("not an array")
    };
    let parts: Vec<_> = a.iter().map(|r| r.as_bytes().unwrap()).collect();
    assert_eq!(parts, [&b"SET"[..], b"", b"a\r\nb\0"]);
}

#[test]
fn encoders_append_after_what_is_queued() {
    let mut b = BytesMut::from(&b"queued"[..]);
    encode_cmd2(&mut b, b"GET", b"k");
    encode_command(&mut b, &[b"GET", b"k"]);
    assert_eq!(
        &b[..],
        b"queued*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
    );
}

// ---- replies ----

#[test]
fn simple_strings_and_errors() {
    let r = parse(b"+OK\r\n");
    assert_eq!(r, Reply::Simple(b"OK"));
    assert_eq!((r.kind(), r.is_error()), (Kind::Simple, false));
    let r = parse(b"-ERR unknown command 'foobar'\r\n");
    assert_eq!(r, Reply::Error(b"ERR unknown command 'foobar'"));
    assert_eq!((r.kind(), r.is_error()), (Kind::Error, true));
    assert_eq!(r.as_bytes(), Some(&b"ERR unknown command 'foobar'"[..]));
    assert_eq!(
        parse(b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        Reply::Error(b"WRONGTYPE Operation against a key holding the wrong kind of value")
    );
    assert_eq!(parse(b"+\r\n"), Reply::Simple(b""));
}

#[test]
fn integers() {
    for (wire, n) in [
        (&b":0\r\n"[..], 0i64),
        (b":1000\r\n", 1000),
        (b":-52\r\n", -52),
        (b":+7\r\n", 7),
        (b":9223372036854775807\r\n", i64::MAX),
        (b":-9223372036854775808\r\n", i64::MIN),
    ] {
        let r = parse(wire);
        assert_eq!(r, Reply::Integer(n));
        assert_eq!((r.kind(), r.as_integer()), (Kind::Integer, Some(n)));
    }
}

#[test]
fn bulk_strings() {
    assert_eq!(parse(b"$6\r\nfoobar\r\n"), Reply::Bulk(Some(b"foobar")));
    assert_eq!(parse(b"$0\r\n\r\n"), Reply::Bulk(Some(b"")));
    // Null bulk string: GET of a missing key.
    let r = parse(b"$-1\r\n");
    assert_eq!(
        (r, r.kind(), r.as_bytes()),
        (Reply::Bulk(None), Kind::Bulk, None)
    );
    // Binary safe: the length, not a CRLF, ends the payload.
    assert_eq!(parse(b"$4\r\na\r\nb\r\n"), Reply::Bulk(Some(b"a\r\nb")));
}

#[test]
fn arrays_flat_nested_null_and_empty() {
    let Reply::Array(Some(a)) = parse(b"*2\r\n$3\r\nfoo\r\n$3\r\nbar\r\n") else {
        panic!()
    };
    assert_eq!(a.len(), 2);
    assert_eq!(a.as_bytes(), b"$3\r\nfoo\r\n$3\r\nbar\r\n");
    assert_eq!(
        a.iter().collect::<Vec<_>>(),
        [Reply::Bulk(Some(b"foo")), Reply::Bulk(Some(b"bar"))]
    );

    let Reply::Array(Some(a)) = parse(b"*5\r\n:1\r\n:2\r\n:3\r\n:4\r\n$6\r\nfoobar\r\n") else {
        panic!()
    };
    assert_eq!(a.iter().len(), 5);
    assert_eq!(a.iter().last(), Some(Reply::Bulk(Some(b"foobar"))));

    // Nested: [[1, 2, 3], [Foo, error Bar]].
    let nested = b"*2\r\n*3\r\n:1\r\n:2\r\n:3\r\n*2\r\n+Foo\r\n-Bar\r\n";
    let Reply::Array(Some(outer)) = parse(nested) else {
        panic!()
    };
    let inner: Vec<Vec<Reply>> = outer
        .iter()
        .map(|r| match r {
            Reply::Array(Some(a)) => a.iter().collect(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        inner,
        [
            vec![Reply::Integer(1), Reply::Integer(2), Reply::Integer(3)],
            vec![Reply::Simple(b"Foo"), Reply::Error(b"Bar")],
        ]
    );

    // A null element inside an array.
    let Reply::Array(Some(a)) = parse(b"*3\r\n$3\r\nfoo\r\n$-1\r\n$3\r\nbar\r\n") else {
        panic!()
    };
    assert_eq!(a.iter().nth(1), Some(Reply::Bulk(None)));

    let r = parse(b"*0\r\n");
    let Reply::Array(Some(a)) = r else { panic!() };
    assert!(a.is_empty() && a.iter().next().is_none());
    assert_eq!(parse(b"*-1\r\n"), Reply::Array(None));
    assert_eq!(r.kind(), Kind::Array);
}

/// Every reply fixture in this file, for the prefix and fuzz checks.
pub const FIXTURES: &[&[u8]] = &[
    b"+OK\r\n",
    b"-ERR unknown command 'foobar'\r\n",
    b":0\r\n",
    b":-9223372036854775808\r\n",
    b"$6\r\nfoobar\r\n",
    b"$0\r\n\r\n",
    b"$-1\r\n",
    b"$4\r\na\r\nb\r\n",
    b"*0\r\n",
    b"*-1\r\n",
    b"*2\r\n$3\r\nfoo\r\n$3\r\nbar\r\n",
    b"*2\r\n*3\r\n:1\r\n:2\r\n:3\r\n*2\r\n+Foo\r\n-Bar\r\n",
    b"*3\r\n$3\r\nfoo\r\n$-1\r\n$3\r\nbar\r\n",
    b"*1\r\n*1\r\n*0\r\n",
];

#[test]
fn every_prefix_of_a_reply_is_incomplete() {
    for f in FIXTURES {
        assert_frame(f, len_of!(parse_reply));
        assert_frame(f, reply_len);
    }
    // Commands are arrays of bulk strings too.
    let cmd = encoded(|b| encode_cmd3(b, b"SET", b"k", b"v\r\n"));
    assert_frame(&cmd, len_of!(parse_reply));
}

#[test]
fn pipelined_replies_parse_one_after_another() {
    let stream = FIXTURES.concat();
    let mut rest = &stream[..];
    for f in FIXTURES {
        let (_, n) = parse_reply(rest).unwrap().unwrap();
        assert_eq!(&rest[..n], *f);
        rest = &rest[n..];
    }
    assert!(rest.is_empty());
    assert_eq!(parse_reply(rest), Ok(None));
}

// ---- malformed and hostile input ----

fn err(input: &[u8]) -> RespError {
    match parse_reply(input) {
        Err(e) => {
            assert_eq!(reply_len(input), Err(e));
            e
        }
        other => panic!("{:?} parsed as {other:?}", String::from_utf8_lossy(input)),
    }
}

#[test]
fn resp3_and_unknown_type_bytes_are_refused_at_once() {
    for wire in [
        &b"_\r\n"[..],                                       // RESP3 null
        b",1.5\r\n",                                         // double
        b"#t\r\n",                                           // boolean
        b"%1\r\n",                                           // map
        b"~1\r\n",                                           // set
        b">2\r\n",                                           // push
        b"(3492890328409238509324850943850943825024385\r\n", // big number
        b"=15\r\ntxt:Some string\r\n",                       // verbatim string
        b"!21\r\nSYNTAX invalid syntax\r\n",                 // blob error
        b"x",
        b"\r\n",
        b" +OK\r\n",
    ] {
        assert_eq!(err(wire), RespError::UnknownType(wire[0]));
        assert_eq!(err(&wire[..1]), RespError::UnknownType(wire[0]));
    }
    // Inside an array, after a valid element.
    assert_eq!(err(b"*2\r\n:1\r\n_\r\n"), RespError::UnknownType(b'_'));
}

#[test]
fn malformed_numbers() {
    for wire in [
        &b":\r\n"[..],
        b":-\r\n",
        b":12a\r\n",
        b": 1\r\n",
        b":9223372036854775808\r\n",
        b":-9223372036854775809\r\n",
        b":000000000000000000001\r\n", // 21 digits
        b"$\r\n",
        b"$abc\r\n",
        b"$-2\r\n",
        b"$-0\r\n",
        b"$-1x\r\n",
        b"$-11\r\n",
        b"$+3\r\nabc\r\n",
        b"$3 \r\nabc\r\n",
        b"*-5\r\n",
        b"*1a\r\n",
        b"$99999999999999999999\r\n", // 20 digits, over usize on no target
    ] {
        let e = err(wire);
        assert!(
            matches!(e, RespError::BadNumber(_) | RespError::TooLarge { .. }),
            "{:?}: {e:?}",
            String::from_utf8_lossy(wire)
        );
    }
}

#[test]
fn malformed_line_endings() {
    for wire in [
        &b"+OK\rX"[..],
        b"+OK\n",
        b"-ERR\n\r\n",
        b":1\r\r",
        b"$3\r\nfooXY",
        b"$3\r\nfoo\rX",
        b"$3\r\nfoo\n\r",
        b"*1\r\n+a\rb\r\n",
    ] {
        assert!(
            matches!(err(wire), RespError::BadLineEnd(_)),
            "{:?}",
            String::from_utf8_lossy(wire)
        );
    }
}

#[test]
fn bulk_length_limit() {
    let at_limit = format!("${MAX_BULK_LEN}\r\n");
    assert_eq!(parse_reply(at_limit.as_bytes()), Ok(None));
    let over = format!("${}\r\n", MAX_BULK_LEN + 1);
    assert_eq!(
        err(over.as_bytes()),
        RespError::TooLarge {
            what: "bulk string",
            len: MAX_BULK_LEN + 1,
            max: MAX_BULK_LEN
        }
    );
}

#[test]
fn array_count_limit() {
    let at_limit = format!("*{MAX_ARRAY_LEN}\r\n");
    assert_eq!(parse_reply(at_limit.as_bytes()), Ok(None));
    let over = format!("*{}\r\n", MAX_ARRAY_LEN + 1);
    assert!(matches!(err(over.as_bytes()), RespError::TooLarge { .. }));
    // Also when nested.
    let nested = format!("*1\r\n*{}\r\n", MAX_ARRAY_LEN + 1);
    assert!(matches!(err(nested.as_bytes()), RespError::TooLarge { .. }));
}

#[test]
fn nesting_depth_limit() {
    let nest = |depth: usize| {
        let mut v = b"*1\r\n".repeat(depth);
        v.extend_from_slice(b":1\r\n");
        v
    };
    let ok = nest(MAX_DEPTH);
    assert_eq!(reply_len(&ok), Ok(Some(ok.len())));
    // Walk down the iterator to the integer at the bottom.
    let mut r = parse(&ok);
    for _ in 0..MAX_DEPTH {
        let Reply::Array(Some(a)) = r else { panic!() };
        r = a.iter().next().unwrap();
    }
    assert_eq!(r, Reply::Integer(1));
    // One level deeper is refused, as soon as its header is read.
    let deep = nest(MAX_DEPTH + 1);
    assert_eq!(err(&deep), RespError::TooDeep(MAX_DEPTH));
    assert_eq!(
        err(&deep[..(MAX_DEPTH + 1) * 4]),
        RespError::TooDeep(MAX_DEPTH)
    );
    // Depth is about nesting, not about how many arrays there are.
    let mut wide = format!("*{}\r\n", 2 * MAX_DEPTH).into_bytes();
    for _ in 0..2 * MAX_DEPTH {
        wide.extend_from_slice(b"*1\r\n*0\r\n");
    }
    assert_eq!(reply_len(&wide), Ok(Some(wide.len())));
}

#[test]
fn line_length_limit() {
    let mut line = b"+".to_vec();
    line.extend(std::iter::repeat_n(b'a', MAX_LINE_LEN));
    assert_eq!(parse_reply(&line), Ok(None));
    let mut whole = line.clone();
    whole.extend_from_slice(b"\r\n");
    assert_eq!(reply_len(&whole), Ok(Some(whole.len())));
    line.push(b'a');
    assert!(matches!(err(&line), RespError::TooLarge { .. }));
}

#[test]
fn errors_say_what_is_wrong() {
    assert_eq!(
        RespError::UnknownType(b'_').to_string(),
        "unknown RESP type byte 0x5f"
    );
    assert_eq!(
        err(b"$-2\r\n").to_string(),
        "malformed number in bulk length"
    );
    assert_eq!(resp::MAX_BULK_LEN, 512 * 1024 * 1024);
}
