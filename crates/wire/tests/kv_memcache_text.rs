//! memcached text protocol bytes written by hand from protocol.txt: command
//! lines encoded exactly, every response kind parsed back, every prefix of a
//! response incomplete, bad keys and malformed responses refused.

mod common;

use bytes::BytesMut;
use common::assert_frame;
use loadrig_wire::kv::memcache::text::{
    encode_decr, encode_delete, encode_get, encode_get_multi, encode_gets, encode_gets_multi,
    encode_incr, encode_store, parse_response, Item, Response, StoreCmd, StoreOpts, MAX_LINE_LEN,
};
use loadrig_wire::kv::memcache::{text, McError, MAX_KEY_LEN, MAX_VALUE_LEN};

fn encoded(f: impl FnOnce(&mut BytesMut) -> Result<(), McError>) -> Vec<u8> {
    let mut b = BytesMut::new();
    f(&mut b).expect("encodes");
    b.to_vec()
}

fn parse(input: &[u8]) -> Response<'_> {
    let (r, n) = parse_response(input).expect("valid").expect("whole");
    assert_eq!(n, input.len(), "{:?}", String::from_utf8_lossy(input));
    r
}

fn items(input: &[u8]) -> Vec<Item<'_>> {
    match parse(input) {
        Response::Values(v) => {
            let all: Vec<_> = v.iter().collect();
            assert_eq!(all.len(), v.len());
            assert_eq!(v.first(), all.first().copied());
            all
        }
        other => panic!("not a retrieval response: {other:?}"),
    }
}

// ---- requests ----

#[test]
fn retrieval_commands() {
    // get <key>*\r\n and gets <key>*\r\n
    assert_eq!(encoded(|b| encode_get(b, b"foo")), b"get foo\r\n");
    assert_eq!(encoded(|b| encode_gets(b, b"foo")), b"gets foo\r\n");
    assert_eq!(
        encoded(|b| encode_get_multi(b, &[b"a", b"bb", b"key:3"])),
        b"get a bb key:3\r\n"
    );
    assert_eq!(
        encoded(|b| encode_gets_multi(b, &[b"a", b"b"])),
        b"gets a b\r\n"
    );
    assert_eq!(encoded(|b| encode_get_multi(b, &[b"one"])), b"get one\r\n");
}

#[test]
fn storage_commands() {
    // <command name> <key> <flags> <exptime> <bytes> [noreply]\r\n<data block>\r\n
    let plain = StoreOpts::default();
    assert_eq!(
        encoded(|b| encode_store(b, StoreCmd::Set, b"foo", b"bar", plain)),
        b"set foo 0 0 3\r\nbar\r\n"
    );
    let opts = StoreOpts {
        flags: 5,
        exptime: 3600,
        noreply: true,
    };
    assert_eq!(
        encoded(|b| encode_store(b, StoreCmd::Add, b"foo", b"bar", opts)),
        b"add foo 5 3600 3 noreply\r\nbar\r\n"
    );
    let opts = StoreOpts {
        flags: u32::MAX,
        exptime: 0,
        noreply: false,
    };
    assert_eq!(
        encoded(|b| encode_store(b, StoreCmd::Replace, b"k", b"", opts)),
        b"replace k 4294967295 0 0\r\n\r\n"
    );
    // The data block is sent by length; CRLF inside it is just data.
    assert_eq!(
        encoded(|b| encode_store(b, StoreCmd::Set, b"k", b"a\r\nb", plain)),
        b"set k 0 0 4\r\na\r\nb\r\n"
    );
}

#[test]
fn delete_incr_decr() {
    assert_eq!(
        encoded(|b| encode_delete(b, b"foo", false)),
        b"delete foo\r\n"
    );
    assert_eq!(
        encoded(|b| encode_delete(b, b"foo", true)),
        b"delete foo noreply\r\n"
    );
    assert_eq!(encoded(|b| encode_incr(b, b"n", 1, false)), b"incr n 1\r\n");
    assert_eq!(
        encoded(|b| encode_incr(b, b"n", u64::MAX, true)),
        b"incr n 18446744073709551615 noreply\r\n"
    );
    assert_eq!(encoded(|b| encode_decr(b, b"n", 2, false)), b"decr n 2\r\n");
}

#[test]
fn longest_command_lines_are_whole() {
    // Lines are assembled in a fixed stack buffer; its size must hold the
    // worst case of every command.
    let key = vec![b'k'; MAX_KEY_LEN];
    let k = String::from_utf8(key.clone()).unwrap();
    let opts = StoreOpts {
        flags: u32::MAX,
        exptime: u32::MAX,
        noreply: true,
    };
    let value = vec![b'v'; 1_000_000];
    let got = encoded(|b| encode_store(b, StoreCmd::Replace, &key, &value, opts));
    let head = format!("replace {k} 4294967295 4294967295 1000000 noreply\r\n");
    assert_eq!(got, [head.as_bytes(), &value, b"\r\n"].concat());
    assert_eq!(
        encoded(|b| encode_incr(b, &key, u64::MAX, true)),
        format!("incr {k} 18446744073709551615 noreply\r\n").as_bytes()
    );
    assert_eq!(
        encoded(|b| encode_delete(b, &key, true)),
        format!("delete {k} noreply\r\n").as_bytes()
    );
    assert_eq!(
        encoded(|b| encode_gets(b, &key)),
        format!("gets {k}\r\n").as_bytes()
    );
    let many: Vec<&[u8]> = vec![&key; 100];
    let want = format!("get{}\r\n", format!(" {k}").repeat(100));
    assert_eq!(encoded(|b| encode_get_multi(b, &many)), want.as_bytes());
}

#[test]
fn keys_are_checked_and_a_refused_request_writes_nothing() {
    let long = vec![b'k'; MAX_KEY_LEN];
    assert!(encoded(|b| encode_get(b, &long)).ends_with(b"k\r\n"));
    let too_long = vec![b'k'; MAX_KEY_LEN + 1];
    // UTF-8 is not whitespace or control; memcached takes it.
    assert!(encode_get(&mut BytesMut::new(), "clé".as_bytes()).is_ok());

    let mut b = BytesMut::from(&b"queued"[..]);
    let cases: [(&[u8], McError); 8] = [
        (b"", McError::KeyLength(0)),
        (&too_long, McError::KeyLength(MAX_KEY_LEN + 1)),
        (b"a b", McError::KeyByte(b' ')),
        (b"a\r\nget b", McError::KeyByte(b'\r')),
        (b"a\n", McError::KeyByte(b'\n')),
        (b"\ta", McError::KeyByte(b'\t')),
        (b"a\0", McError::KeyByte(0)),
        (b"a\x7f", McError::KeyByte(0x7f)),
    ];
    for (key, want) in cases {
        assert_eq!(encode_get(&mut b, key), Err(want));
        assert_eq!(encode_gets(&mut b, key), Err(want));
        assert_eq!(encode_get_multi(&mut b, &[b"ok", key]), Err(want));
        let opts = StoreOpts::default();
        assert_eq!(
            encode_store(&mut b, StoreCmd::Set, key, b"v", opts),
            Err(want)
        );
        assert_eq!(encode_delete(&mut b, key, false), Err(want));
        assert_eq!(encode_incr(&mut b, key, 1, false), Err(want));
        assert_eq!(encode_decr(&mut b, key, 1, true), Err(want));
    }
    assert_eq!(encode_get_multi(&mut b, &[]), Err(McError::NoKeys));
    assert_eq!(&b[..], b"queued");
}

// ---- responses ----

#[test]
fn status_lines() {
    for (wire, want) in [
        (&b"STORED\r\n"[..], Response::Stored),
        (b"NOT_STORED\r\n", Response::NotStored),
        (b"EXISTS\r\n", Response::Exists),
        (b"NOT_FOUND\r\n", Response::NotFound),
        (b"DELETED\r\n", Response::Deleted),
    ] {
        let r = parse(wire);
        assert_eq!(r, want);
        assert!(!r.is_error());
    }
}

#[test]
fn error_lines() {
    for (wire, want) in [
        (&b"ERROR\r\n"[..], Response::Error),
        (
            b"CLIENT_ERROR bad data chunk\r\n",
            Response::ClientError(b"bad data chunk"),
        ),
        (
            b"SERVER_ERROR out of memory storing object\r\n",
            Response::ServerError(b"out of memory storing object"),
        ),
        (b"CLIENT_ERROR\r\n", Response::ClientError(b"")),
        (b"SERVER_ERROR \r\n", Response::ServerError(b"")),
    ] {
        let r = parse(wire);
        assert_eq!(r, want);
        assert!(r.is_error());
    }
}

#[test]
fn incr_decr_numbers() {
    assert_eq!(parse(b"42\r\n"), Response::Number(42));
    assert_eq!(parse(b"0\r\n"), Response::Number(0));
    assert_eq!(
        parse(b"18446744073709551615\r\n"),
        Response::Number(u64::MAX)
    );
    // "The number MAY be space-padded at the end" after a decr shortens it.
    assert_eq!(parse(b"9  \r\n"), Response::Number(9));
}

#[test]
fn get_hit_miss_and_gets() {
    // A miss is a bare END.
    let Response::Values(v) = parse(b"END\r\n") else {
        panic!()
    };
    assert!(v.is_empty() && v.first().is_none());

    // VALUE <key> <flags> <bytes> [<cas unique>]\r\n<data block>\r\n ... END\r\n
    assert_eq!(
        items(b"VALUE foo 0 3\r\nbar\r\nEND\r\n"),
        [Item {
            key: b"foo",
            flags: 0,
            value: b"bar",
            cas: None
        }]
    );
    assert_eq!(
        items(b"VALUE foo 5 3 12345\r\nbar\r\nEND\r\n"),
        [Item {
            key: b"foo",
            flags: 5,
            value: b"bar",
            cas: Some(12345)
        }]
    );
}

#[test]
fn multi_get_returns_every_item_in_order() {
    let wire = b"VALUE a 0 1\r\n1\r\n\
                 VALUE c 4294967295 0 18446744073709551615\r\n\r\n\
                 VALUE key:3 7 2\r\nxy\r\n\
                 END\r\n";
    let got = items(wire);
    assert_eq!(got.len(), 3);
    assert_eq!(
        got[1],
        Item {
            key: b"c",
            flags: u32::MAX,
            value: b"",
            cas: Some(u64::MAX)
        }
    );
    assert_eq!(
        got.iter().map(|i| i.key).collect::<Vec<_>>(),
        [&b"a"[..], b"c", b"key:3"]
    );
}

#[test]
fn data_blocks_are_read_by_length_not_by_scanning() {
    // A value holding "\r\nEND\r\n" does not end the response early.
    assert_eq!(
        items(b"VALUE k 0 7\r\n\r\nEND\r\n\r\nEND\r\n")[0].value,
        b"\r\nEND\r\n"
    );
}

/// Every response fixture in this file, for the prefix check.
const FIXTURES: &[&[u8]] = &[
    b"STORED\r\n",
    b"NOT_STORED\r\n",
    b"EXISTS\r\n",
    b"NOT_FOUND\r\n",
    b"DELETED\r\n",
    b"ERROR\r\n",
    b"CLIENT_ERROR bad data chunk\r\n",
    b"SERVER_ERROR out of memory storing object\r\n",
    b"42\r\n",
    b"9  \r\n",
    b"END\r\n",
    b"VALUE foo 0 3\r\nbar\r\nEND\r\n",
    b"VALUE foo 5 3 12345\r\nbar\r\nEND\r\n",
    b"VALUE a 0 1\r\n1\r\nVALUE c 4294967295 0 18446744073709551615\r\n\r\nEND\r\n",
    b"VALUE k 0 7\r\n\r\nEND\r\n\r\nEND\r\n",
];

#[test]
fn every_prefix_of_a_response_is_incomplete() {
    for f in FIXTURES {
        assert_frame(f, len_of!(parse_response));
    }
}

#[test]
fn pipelined_responses_parse_one_after_another() {
    let stream = FIXTURES.concat();
    let mut rest = &stream[..];
    for f in FIXTURES {
        let (_, n) = parse_response(rest).unwrap().unwrap();
        assert_eq!(&rest[..n], *f);
        rest = &rest[n..];
    }
    assert_eq!(parse_response(rest), Ok(None));
}

// ---- malformed and hostile input ----

fn err(input: &[u8]) -> McError {
    match parse_response(input) {
        Err(e) => e,
        other => panic!("{:?} parsed as {other:?}", String::from_utf8_lossy(input)),
    }
}

#[test]
fn unknown_lines() {
    for wire in [
        &b"HELLO\r\n"[..],
        b"stored\r\n",
        b"STORED \r\n",
        b"ERRORS\r\n",
        b"CLIENT_ERRORx\r\n",
        b" 12\r\n",
        b"\r\n",
        b"VALUE\r\n",
    ] {
        assert_eq!(
            err(wire),
            McError::UnknownResponse,
            "{:?}",
            String::from_utf8_lossy(wire)
        );
    }
}

#[test]
fn malformed_numbers_and_value_lines() {
    for wire in [
        &b"12a\r\n"[..],
        b"18446744073709551616\r\n",
        b"1 2\r\n",
        b"VALUE foo\r\n",
        b"VALUE foo 0\r\n",
        b"VALUE foo x 3\r\n",
        b"VALUE foo 0 3 1 2\r\n",
        b"VALUE foo 4294967296 1\r\n",
        b"VALUE foo 0 -1\r\n",
        b"VALUE foo 0 3 abc\r\n",
        b"VALUE a 0 1\r\nx\r\nSTORED\r\n",
        b"VALUE a 0 1\r\nx\r\nENDX\r\n",
        b"VALUE a 0 1\r\nx\r\nEND \r\n",
    ] {
        assert!(
            matches!(err(wire), McError::Malformed(_)),
            "{:?}: {:?}",
            String::from_utf8_lossy(wire),
            parse_response(wire)
        );
    }
}

#[test]
fn malformed_line_endings() {
    for wire in [
        &b"STORED\n"[..],
        b"STORED\rX",
        b"VALUE a 0 1\r\nxy\r\nEND\r\n",
        b"VALUE a 0 1\r\nx\rEND\r\n",
        b"VALUE a 0 1\r\nx\r\nEND\n",
    ] {
        assert!(
            matches!(err(wire), McError::BadLineEnd(_)),
            "{:?}: {:?}",
            String::from_utf8_lossy(wire),
            parse_response(wire)
        );
    }
}

#[test]
fn value_length_limit() {
    let at_limit = format!("VALUE a 0 {MAX_VALUE_LEN}\r\n");
    assert_eq!(parse_response(at_limit.as_bytes()), Ok(None));
    let over = format!("VALUE a 0 {}\r\n", MAX_VALUE_LEN + 1);
    assert!(matches!(
        err(over.as_bytes()),
        McError::TooLarge { what: "value", .. }
    ));
}

#[test]
fn line_length_limit() {
    let mut line = vec![b'S'; MAX_LINE_LEN];
    assert_eq!(parse_response(&line), Ok(None));
    line.push(b'S');
    assert!(matches!(err(&line), McError::TooLarge { .. }));
    // Also for a line inside a retrieval response.
    let mut block = b"VALUE a 0 1\r\nx\r\n".to_vec();
    block.extend(std::iter::repeat_n(b'V', MAX_LINE_LEN + 1));
    assert!(matches!(err(&block), McError::TooLarge { .. }));
}

#[test]
fn stats_parse_whole_or_not_at_all() {
    let mut buf = BytesMut::new();
    text::encode_stats(&mut buf);
    text::encode_version(&mut buf);
    assert_eq!(&buf[..], b"stats\r\nversion\r\n");
    let answer: &[u8] =
        b"STAT pid 7\r\nSTAT version 1.6.18\r\nSTAT rusage_user 0.1 2\r\nSTAT cmd_set 12\r\nEND\r\nEXTRA";
    let end = answer.len() - 5;
    for cut in 0..end {
        assert_eq!(text::parse_stats(&answer[..cut]), Ok(None), "cut at {cut}");
    }
    let (stats, n) = text::parse_stats(answer).unwrap().unwrap();
    assert_eq!(n, end);
    assert_eq!(stats.number(b"cmd_set"), Some(12));
    assert_eq!(stats.number(b"version"), None);
    assert_eq!(stats.number(b"missing"), None);
    let all: Vec<(&[u8], &[u8])> = stats.iter().collect();
    assert_eq!(all.len(), 4);
    assert_eq!(all[2], (&b"rusage_user"[..], &b"0.1 2"[..]));
    assert!(text::parse_stats(b"ERROR\r\n").is_err());
    assert!(text::parse_stats(b"STAT x\r\nEND\r\n").is_err());
    let (empty, n) = text::parse_stats(b"END\r\n").unwrap().unwrap();
    assert_eq!((empty.iter().count(), n), (0, 5));
}

#[test]
fn version_lines() {
    assert_eq!(
        text::parse_version(b"VERSION 1.6.18\r\n"),
        Ok(Some((&b"1.6.18"[..], 16)))
    );
    assert_eq!(text::parse_version(b"VERSION 1.6"), Ok(None));
    assert!(text::parse_version(b"ERROR\r\n").is_err());
}
