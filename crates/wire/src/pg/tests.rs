use super::*;

/// A backend frame: type, length, body.
fn backend(t: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![t];
    v.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    v.extend_from_slice(body);
    v
}

fn row(cells: &[Option<&[u8]>]) -> Vec<u8> {
    let mut b = (cells.len() as u16).to_be_bytes().to_vec();
    for c in cells {
        match c {
            Some(c) => {
                b.extend_from_slice(&(c.len() as i32).to_be_bytes());
                b.extend_from_slice(c);
            }
            None => b.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    b
}

#[test]
fn every_prefix_of_a_frame_is_incomplete() {
    let body = row(&[Some(&7i64.to_be_bytes()), None]);
    let whole = backend(tag::DATA_ROW, &body);
    for n in 0..whole.len() {
        assert_eq!(frame(&whole[..n], MAX_FRAME), Ok(None), "{n}");
    }
    let mut more = whole.clone();
    more.extend_from_slice(&backend(tag::READY, b"I"));
    let f = frame(&more, MAX_FRAME).unwrap().unwrap();
    assert_eq!(
        (f.tag, f.body, f.len),
        (tag::DATA_ROW, &body[..], whole.len())
    );
    let r = DataRow::new(f.body).unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!(r.get(0).unwrap().and_then(int), Some(7));
    assert_eq!(r.get(1), Ok(None));
    assert!(r.get(2).is_err());
}

#[test]
fn garbage_and_bad_lengths_are_refused_before_the_body() {
    assert_eq!(frame(b"\xff", MAX_FRAME), Err(PgError::UnknownType(0xff)));
    assert_eq!(
        frame(b"*-1\r\n", MAX_FRAME),
        Err(PgError::UnknownType(b'*'))
    );
    assert_eq!(frame(b"Z\0\0\0\x03", MAX_FRAME), Err(PgError::BadLength(3)));
    assert_eq!(
        frame(b"D\x7f\xff\xff\xff", 1024),
        Err(PgError::BadLength(0x7fff_ffff))
    );
    assert_eq!(
        frame(b"D\xff\xff\xff\xff", MAX_FRAME),
        Err(PgError::BadLength(u64::from(u32::MAX)))
    );
    // The limit itself is allowed.
    assert_eq!(frame(b"D\0\0\x04\x04", 1024), Ok(None));
}

#[test]
fn rows_that_end_inside_a_cell_are_malformed() {
    let body = row(&[Some(b"abcdef")]);
    for n in 0..body.len() {
        let r = DataRow::new(&body[..n]);
        if let Ok(r) = r {
            assert!(r.get(0).is_err(), "{n}");
        }
    }
    assert_eq!(
        DataRow::new(&body).unwrap().get(0),
        Ok(Some(&b"abcdef"[..]))
    );
}

#[test]
fn authentication_requests() {
    assert_eq!(auth(&[0, 0, 0, 0]), Ok(Auth::Ok));
    assert_eq!(auth(&[0, 0, 0, 3]), Ok(Auth::Cleartext));
    assert_eq!(auth(&[0, 0, 0, 5, 1, 2, 3, 4]), Ok(Auth::Md5([1, 2, 3, 4])));
    assert!(auth(&[0, 0, 0, 5, 1, 2]).is_err());
    assert!(auth(&[0, 0]).is_err());
    let list = b"\0\0\0\x0aSCRAM-SHA-256-PLUS\0SCRAM-SHA-256\0\0";
    let Ok(Auth::Sasl(l)) = auth(list) else {
        panic!("not SASL")
    };
    let names: Vec<&[u8]> = sasl_mechanisms(l).collect();
    assert_eq!(names, [&b"SCRAM-SHA-256-PLUS"[..], b"SCRAM-SHA-256"]);
    assert_eq!(auth(b"\0\0\0\x0bxyz"), Ok(Auth::SaslContinue(b"xyz")));
    assert_eq!(auth(b"\0\0\0\x0cv=1"), Ok(Auth::SaslFinal(b"v=1")));
    assert_eq!(auth(&[0, 0, 0, 7]), Ok(Auth::Other(7)));
}

#[test]
fn error_fields_are_found_by_code() {
    let body = b"SERROR\0VERROR\0C40001\0Mcould not serialize\0\0";
    assert_eq!(error_field(body, b'C'), Some(&b"40001"[..]));
    assert_eq!(error_field(body, b'M'), Some(&b"could not serialize"[..]));
    assert_eq!(error_field(body, b'D'), None);
    // Cut anywhere, never a panic.
    for n in 0..body.len() {
        let _ = error_field(&body[..n], b'M');
    }
}

#[test]
fn a_call_is_bind_execute_sync() {
    let mut b = BytesMut::new();
    bind(&mut b, "s0", 3, |b| {
        param_i64(b, 5_551_234);
        param_i32(b, 2);
        param_bytea_array(b, [&b"ab"[..], b"c"].into_iter());
    });
    execute(&mut b);
    sync(&mut b);
    let mut want = vec![b'B'];
    let mut body = vec![0];
    body.extend_from_slice(b"s0\0");
    body.extend_from_slice(&[0, 1, 0, 1, 0, 3]);
    body.extend_from_slice(&8i32.to_be_bytes());
    body.extend_from_slice(&5_551_234i64.to_be_bytes());
    body.extend_from_slice(&4i32.to_be_bytes());
    body.extend_from_slice(&2i32.to_be_bytes());
    let mut array = Vec::new();
    for v in [1i32, 0, 17, 2, 1, 2] {
        array.extend_from_slice(&v.to_be_bytes());
    }
    array.extend_from_slice(b"ab");
    array.extend_from_slice(&1i32.to_be_bytes());
    array.extend_from_slice(b"c");
    body.extend_from_slice(&(array.len() as i32).to_be_bytes());
    body.extend_from_slice(&array);
    body.extend_from_slice(&[0, 1, 0, 1]);
    want.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    want.extend_from_slice(&body);
    want.extend_from_slice(b"E\0\0\0\x09\0\0\0\0\0S\0\0\0\x04");
    assert_eq!(&b[..], &want[..]);
}

#[test]
fn an_empty_array_has_no_dimensions() {
    let mut b = BytesMut::new();
    param_bytea_array(&mut b, std::iter::empty());
    let mut want = 12i32.to_be_bytes().to_vec();
    for v in [0i32, 0, 17] {
        want.extend_from_slice(&v.to_be_bytes());
    }
    assert_eq!(&b[..], &want[..]);
}

#[test]
fn startup_and_login_frames() {
    let mut b = BytesMut::new();
    startup(&mut b, &[("user", "u"), ("database", "d")]);
    assert_eq!(&b[..], b"\0\0\0\x1b\0\x03\0\0user\0u\0database\0d\0\0");
    let mut b = BytesMut::new();
    ssl_request(&mut b);
    password(&mut b, b"pw");
    sasl_initial(&mut b, "M", b"xy");
    sasl_response(&mut b, b"z");
    parse(&mut b, "s1", "SELECT 1");
    terminate(&mut b);
    let want: &[u8] = b"\0\0\0\x08\x04\xd2\x16\x2f\
        p\0\0\0\x07pw\0\
        p\0\0\0\x0cM\0\0\0\0\x02xy\
        p\0\0\0\x05z\
        P\0\0\0\x12s1\0SELECT 1\0\0\0\
        X\0\0\0\x04";
    assert_eq!(&b[..], want);
}

/// Random bytes (a fixed xorshift) never make the reader panic, and each
/// frame it returns lies inside the buffer.
#[test]
fn fuzzed_input_never_panics() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let tags = b"RKD2CEZNSs1nTtAI3dx\xff";
    for _ in 0..20_000 {
        let len = (next() % 24) as usize;
        let mut buf: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if let Some(b) = buf.first_mut() {
            *b = tags[(next() % tags.len() as u64) as usize];
        }
        if buf.len() > 4 && next() % 2 == 0 {
            buf[1..5].copy_from_slice(&((next() % 24) as u32).to_be_bytes());
        }
        if let Ok(Some(f)) = frame(&buf, 64) {
            assert!(f.len <= buf.len());
            let _ = auth(f.body);
            let _ = error_field(f.body, b'C');
            if let Ok(r) = DataRow::new(f.body) {
                for i in 0..4 {
                    let _ = r.get(i);
                }
            }
        }
    }
}
