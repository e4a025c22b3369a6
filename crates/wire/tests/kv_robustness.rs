//! Hostile input: a deterministic fuzz loop that throws 100,000 random,
//! token-built and mutated buffers at every parser. Beyond "no panic", each
//! accepted frame is checked for consistency: its length fits the buffer,
//! the frame alone parses to the same length, a strict prefix of it is
//! incomplete, and its lazy iterators yield exactly the count they promise.

mod common;

use bytes::BytesMut;
use common::{hex, mutate, noise, Dict, XorShift};
use loadrig_wire::kv::memcache::{binary, text};
use loadrig_wire::kv::resp::{self, Reply};

fn seeds() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = [
        &b"+OK\r\n"[..],
        b"-ERR unknown command 'foobar'\r\n",
        b":-42\r\n",
        b"$6\r\nfoobar\r\n",
        b"$-1\r\n",
        b"*-1\r\n",
        b"*3\r\n$3\r\nfoo\r\n$-1\r\n:7\r\n",
        b"*2\r\n*3\r\n:1\r\n:2\r\n:3\r\n*2\r\n+Foo\r\n-Bar\r\n",
        b"*1\r\n*1\r\n*1\r\n*0\r\n",
        b"STORED\r\n",
        b"NOT_FOUND\r\n",
        b"CLIENT_ERROR bad data chunk\r\n",
        b"42  \r\n",
        b"END\r\n",
        b"VALUE foo 5 3 12345\r\nbar\r\nEND\r\n",
        b"VALUE a 0 1\r\n1\r\nVALUE c 4294967295 0\r\n\r\nEND\r\n",
    ]
    .iter()
    .map(|s| s.to_vec())
    .collect();
    let mut cmd = BytesMut::new();
    resp::encode_cmd5(&mut cmd, b"SET", b"key", b"a\r\nb", b"EX", -10i64);
    v.push(cmd.to_vec());
    v.push(hex(
        "81 0c 00 05 04 00 00 00 00 00 00 0e 00 00 00 02
         00 00 00 00 00 00 00 01 de ad be ef 48 65 6c 6c 6f 57 6f 72 6c 64",
    ));
    v.push(hex("81 00 00 00 00 00 00 01 00 00 00 09 00 00 00 00
         00 00 00 00 00 00 00 00 4e 6f 74 20 66 6f 75 6e 64"));
    let mut req = BytesMut::new();
    let opts = binary::SetOpts {
        flags: 1,
        exptime: 2,
        cas: 3,
        quiet: true,
    };
    binary::encode_set(&mut req, b"k", b"value", opts, 9).expect("encodes");
    binary::encode_noop(&mut req, 10);
    v.push(req.to_vec());
    v
}

/// Pieces that make token-built noise reach past the first byte.
const TOKENS: &[&[u8]] = &[
    b"*",
    b"$",
    b":",
    b"+",
    b"-",
    b"\r\n",
    b"\r",
    b"\n",
    b"0",
    b"1",
    b"2",
    b"9",
    b"-1",
    b"3",
    b"VALUE ",
    b"END\r\n",
    b" ",
    b"k",
    b"STORED",
    b"CLIENT_ERROR ",
    b"\x81",
    b"\x80",
    b"\x00",
    b"\xff",
];

const DICT: Dict = Dict {
    interesting: b"\r\n$*:+-0919 \x00\x80\x81\xff",
    tokens: TOKENS,
};

/// Walks a reply completely, nested arrays included; returns how many
/// values it holds.
fn walk(r: Reply<'_>) -> usize {
    match r {
        Reply::Array(Some(a)) => {
            let elems: Vec<_> = a.iter().collect();
            assert_eq!(elems.len(), a.len(), "array iterator count");
            1 + elems.into_iter().map(walk).sum::<usize>()
        }
        _ => 1,
    }
}

/// Checks what every parser must satisfy on an accepted frame of `n` bytes.
fn check_frame<E: std::fmt::Debug + PartialEq>(
    buf: &[u8],
    n: usize,
    rng: &mut XorShift,
    len_of: impl Fn(&[u8]) -> Result<Option<usize>, E>,
) {
    assert!(n > 0 && n <= buf.len(), "frame length {n} of {}", buf.len());
    assert_eq!(len_of(&buf[..n]), Ok(Some(n)), "the frame alone");
    let cut = rng.below(n);
    assert_eq!(
        len_of(&buf[..cut]),
        Ok(None),
        "prefix {cut} of a frame of {n}"
    );
}

#[derive(Default)]
struct Accepted {
    resp: usize,
    text: usize,
    binary: usize,
    errors: usize,
}

fn exercise(buf: &[u8], rng: &mut XorShift, acc: &mut Accepted) {
    let resp_len = |b: &[u8]| resp::parse_reply(b).map(|o| o.map(|(_, n)| n));
    match resp::parse_reply(buf) {
        Ok(Some((r, n))) => {
            acc.resp += 1;
            walk(r);
            assert_eq!(resp::reply_len(buf), Ok(Some(n)));
            check_frame(buf, n, rng, resp_len);
        }
        Ok(None) => assert_eq!(resp::reply_len(buf), Ok(None)),
        Err(e) => {
            acc.errors += 1;
            assert_eq!(resp::reply_len(buf), Err(e));
        }
    }

    let text_len = |b: &[u8]| text::parse_response(b).map(|o| o.map(|(_, n)| n));
    match text::parse_response(buf) {
        Ok(Some((r, n))) => {
            acc.text += 1;
            if let text::Response::Values(v) = r {
                let items: Vec<_> = v.iter().collect();
                assert_eq!(items.len(), v.len(), "items iterator count");
            }
            check_frame(buf, n, rng, text_len);
        }
        Ok(None) => {}
        Err(_) => acc.errors += 1,
    }

    let bin_len = |b: &[u8]| binary::parse_response(b).map(|o| o.map(|(_, n)| n));
    match binary::parse_response(buf) {
        Ok(Some((r, n))) => {
            acc.binary += 1;
            let body = r.extras.len() + r.key.len() + r.value.len();
            assert_eq!(binary::HEADER_LEN + body, n);
            check_frame(buf, n, rng, bin_len);
        }
        Ok(None) => {}
        Err(_) => acc.errors += 1,
    }
    let req_len = |b: &[u8]| binary::parse_request(b).map(|o| o.map(|(_, n)| n));
    if let Ok(Some((_, n))) = binary::parse_request(buf) {
        acc.binary += 1;
        check_frame(buf, n, rng, req_len);
    }
}

#[test]
fn fuzz_random_and_mutated_buffers() {
    let seeds = seeds();
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut acc = Accepted::default();
    for i in 0..100_000 {
        let buf = if i % 4 == 0 {
            noise(&mut rng, &DICT)
        } else {
            mutate(&mut rng, &seeds, &DICT)
        };
        exercise(&buf, &mut rng, &mut acc);
    }
    // Sanity: the mutator is neither so gentle that nothing fails nor so
    // destructive that nothing parses, for every protocol.
    assert!(acc.resp > 1_000, "resp accepted {}", acc.resp);
    assert!(acc.text > 1_000, "text accepted {}", acc.text);
    assert!(acc.binary > 1_000, "binary accepted {}", acc.binary);
    assert!(acc.errors > 10_000, "errors {}", acc.errors);
}

#[test]
fn seeds_are_valid_frames() {
    let seeds = seeds();
    let mut ok = 0;
    for s in &seeds {
        let parsed = [
            matches!(resp::reply_len(s), Ok(Some(n)) if n == s.len()),
            matches!(text::parse_response(s), Ok(Some((_, n))) if n == s.len()),
            matches!(binary::parse_response(s), Ok(Some((_, n))) if n == s.len()),
            matches!(binary::parse_request(s), Ok(Some(_))),
        ];
        assert!(
            parsed.iter().any(|p| *p),
            "{:?}",
            String::from_utf8_lossy(s)
        );
        ok += 1;
    }
    assert_eq!(ok, seeds.len());
}
