use super::*;

const PLAIN: &[u8] = b"HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 5\r\n\r\nhello";
const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
    3;ext=1\r\nhel\r\n2\r\nlo\r\n0\r\nX-T: 1\r\n\r\n";
const HINTED: &[u8] = b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n\
    HTTP/1.1 100 Continue\r\n\r\n\
    HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

/// Read `whole` fed in the pieces `cuts` makes of it: what came back at
/// each piece, and what the buffer held at the end.
fn fed(r: &mut Reader, whole: &[u8], cuts: &[usize]) -> (Vec<Option<Response>>, BytesMut) {
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    let mut at = 0;
    for &to in cuts.iter().chain([&whole.len()]) {
        buf.extend_from_slice(&whole[at..to]);
        at = to;
        got.push(r.read(&mut buf).unwrap());
    }
    (got, buf)
}

fn hello() -> Option<(u64, u64)> {
    Some(fingerprint(b"hello"))
}

#[test]
fn every_cut_is_incomplete_until_the_end_and_the_whole_reads() {
    for whole in [PLAIN, CHUNKED, HINTED] {
        for cut in 0..whole.len() {
            let mut r = Reader::new(false, true);
            let (got, buf) = fed(&mut r, whole, &[cut]);
            assert_eq!(got[0], None, "{cut}");
            let last = got[1].expect("whole");
            assert_eq!(
                (last.status, last.keep_alive, last.print),
                (200, true, hello())
            );
            assert!(buf.is_empty(), "{cut}: all of it consumed");
        }
        // Byte by byte: a response is only ever whole at its last byte.
        let mut r = Reader::new(false, true);
        let cuts: Vec<usize> = (1..whole.len()).collect();
        let (got, _) = fed(&mut r, whole, &cuts);
        assert!(got[..got.len() - 1].iter().all(Option::is_none));
        assert_eq!(
            got.last().copied().flatten().map(|g| g.print),
            Some(hello())
        );
    }
}

#[test]
fn pipelined_responses_come_one_at_a_time_and_leave_the_rest() {
    let mut buf = BytesMut::new();
    for part in [PLAIN, CHUNKED, HINTED, b"HTTP/1.1 204 No"] {
        buf.extend_from_slice(part);
    }
    let mut r = Reader::new(false, true);
    for _ in 0..3 {
        assert_eq!(r.read(&mut buf).unwrap().map(|g| g.print), Some(hello()));
    }
    assert_eq!(r.read(&mut buf), Ok(None));
    assert_eq!(&buf[..], b"HTTP/1.1 204 No");
}

#[test]
fn bodies_are_dropped_as_they_come() {
    let mut r = Reader::new(false, true);
    let mut buf = BytesMut::from(&b"HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\n"[..]);
    let piece = [7u8; 16 * 1024];
    let mut whole = Hasher::default();
    let mut left = 10_000_000usize;
    while left > piece.len() {
        buf.extend_from_slice(&piece);
        whole.write(&piece);
        left -= piece.len();
        assert_eq!(r.read(&mut buf), Ok(None));
        assert!(buf.is_empty(), "nothing of the body is held");
    }
    buf.extend_from_slice(&piece[..left]);
    whole.write(&piece[..left]);
    let got = r.read(&mut buf).unwrap().unwrap();
    assert_eq!(got.print, Some(whole.finish()));

    // The same for chunks: the line of the next chunk is all that waits.
    let mut buf = BytesMut::from(&b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"[..]);
    let mut r = Reader::new(false, false);
    for _ in 0..100 {
        buf.extend_from_slice(b"4000\r\n");
        buf.extend_from_slice(&piece);
        buf.extend_from_slice(b"\r\n");
        assert_eq!(r.read(&mut buf), Ok(None));
        assert!(buf.is_empty(), "nothing of the chunk is held");
    }
    buf.extend_from_slice(b"0");
    assert_eq!(r.read(&mut buf), Ok(None));
    assert_eq!(&buf[..], b"0", "a chunk-size line, not yet whole");
    buf.extend_from_slice(b"\r\n\r\n");
    let got = r.read(&mut buf).unwrap().unwrap();
    assert_eq!(
        (got.status, got.print),
        (200, None),
        "not hashed when not asked"
    );
}

#[test]
fn bodiless_responses_and_closing_ones() {
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n";
    let mut buf = BytesMut::from(&head[..]);
    let got = Reader::new(true, true).read(&mut buf).unwrap().unwrap();
    assert_eq!((got.print, buf.len()), (Some(fingerprint(b"")), 0));
    let one = |bytes: &[u8]| {
        let mut buf = BytesMut::from(bytes);
        Reader::new(false, false).read(&mut buf).unwrap().unwrap()
    };
    assert_eq!(one(b"HTTP/1.1 304 Not Modified\r\n\r\n").status, 304);
    assert!(!one(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").keep_alive);
    let kept = b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n";
    assert!(one(kept).keep_alive);
    let close = b"HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
    let got = one(close);
    assert_eq!((got.status, got.keep_alive), (404, false));
    // 101 is not interim here: it is the answer, bodiless.
    assert_eq!(one(b"HTTP/1.1 101 Switching\r\n\r\n").status, 101);
}

#[test]
fn garbage_is_bad_not_incomplete() {
    let long_line = format!(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;{}",
        "x".repeat(MAX_CHUNK_LINE + 1)
    );
    let long_head = format!("HTTP/1.1 200 OK\r\nX-A: {}", "a".repeat(MAX_HEAD));
    let long_trailer = format!(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: {}",
        "t".repeat(MAX_HEAD)
    );
    let whole_long_head = format!("HTTP/1.1 200 OK\r\nX-A: {}\r\n\r\n", "a".repeat(MAX_HEAD));
    let cases: [(&[u8], Bad); 13] = [
        (b"+PONG\r\n", Bad::Head),
        (b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", Bad::Length),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            Bad::Length,
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            Bad::Length,
        ),
        (b"HTTP/1.1 200 OK\r\n\r\n", Bad::NoLength),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            Bad::Chunk,
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
            Bad::Chunk,
        ),
        // 2^60: more hex digits than any real chunk has.
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n",
            Bad::Chunk,
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n",
            Bad::Chunk,
        ),
        (long_line.as_bytes(), Bad::Chunk),
        (long_head.as_bytes(), Bad::LongHead),
        (whole_long_head.as_bytes(), Bad::LongHead),
        (long_trailer.as_bytes(), Bad::Chunk),
    ];
    for (bytes, why) in cases {
        let mut buf = BytesMut::from(bytes);
        let got = Reader::new(false, true).read(&mut buf);
        let shown = String::from_utf8_lossy(&bytes[..bytes.len().min(80)]);
        assert_eq!(got, Err(why), "{shown}");
    }
}

#[test]
fn the_longest_chunk_size_is_streamed_not_held() {
    let mut buf = BytesMut::from(
        &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffff\r\n"[..],
    );
    let mut r = Reader::new(false, true);
    for _ in 0..64 {
        buf.extend_from_slice(&[0u8; 4096]);
        assert_eq!(r.read(&mut buf), Ok(None));
        assert!(buf.is_empty());
    }
    assert_eq!(r.state, State::Data(0xfff_ffff_ffff_ffff - 64 * 4096));
    r.reset();
    buf.extend_from_slice(PLAIN);
    assert_eq!(r.read(&mut buf).unwrap().map(|g| g.print), Some(hello()));
}

#[test]
fn the_hash_ignores_how_bytes_are_cut() {
    let data: Vec<u8> = (0..100u8).collect();
    let whole = fingerprint(&data);
    for cut in [1, 3, 7, 8, 9, 50] {
        let mut h = Hasher::default();
        for piece in data.chunks(cut) {
            h.write(piece);
        }
        assert_eq!(h.finish(), whole, "{cut}");
    }
    assert_ne!(fingerprint(&data[..99]), whole);
}

/// Random bytes, and valid responses with bytes flipped, fed in random
/// pieces: every read ends in a response, a wait or `Bad`, never a panic,
/// and the buffer never holds more than a head and a piece.
#[test]
fn no_input_makes_it_panic_or_hold_more_than_a_head() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let fixtures = [PLAIN, CHUNKED, HINTED];
    for round in 0..20_000 {
        let mut bytes: Vec<u8> = if round % 2 == 0 {
            let f = fixtures[(next() % 3) as usize];
            let mut v = f.repeat(1 + (next() % 3) as usize);
            for _ in 0..(next() % 4) {
                let i = (next() as usize) % v.len();
                v[i] = next() as u8;
            }
            v
        } else {
            (0..(next() % 300)).map(|_| next() as u8).collect()
        };
        if round % 5 == 0 {
            bytes.splice(0..0, b"HTTP/1.1 200 OK\r\n".iter().copied());
        }
        let mut r = Reader::new(next() % 2 == 0, true);
        let mut buf = BytesMut::new();
        let mut at = 0;
        while at < bytes.len() {
            let to = (at + 1 + (next() as usize) % 40).min(bytes.len());
            buf.extend_from_slice(&bytes[at..to]);
            at = to;
            loop {
                match r.read(&mut buf) {
                    Ok(Some(_)) => continue,
                    Ok(None) => break,
                    Err(_) => {
                        buf.clear();
                        r.reset();
                        break;
                    }
                }
            }
            assert!(buf.len() <= MAX_HEAD + 40);
        }
    }
}
