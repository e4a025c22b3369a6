//! One HTTP/1.x response at the front of a read buffer, without I/O: the
//! status line and headers by `httparse`, the body framed here by
//! `Content-Length` or chunked transfer coding. An incomplete response is
//! `Ok(None)` (wait for more bytes), never an error; bytes that cannot be
//! a response are [`Bad`].
//!
//! A response with neither length nor chunking is delimited by the
//! server closing the connection (RFC 9112 section 6.3): a pipelined
//! client cannot tell such a body from a lost connection, so it is
//! refused as [`Bad::NoLength`] (wrk reads it to the close).

use std::ops::Range;

/// Headers a response may carry; nginx sends well under ten.
const MAX_HEADERS: usize = 64;

/// Longest chunk-size line accepted (hex digits and extensions).
const MAX_CHUNK_LINE: usize = 1024;

/// Why bytes are not a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Bad {
    #[error("not an HTTP/1.x response head")]
    Head,
    #[error("a bad Content-Length")]
    Length,
    #[error("a bad chunk")]
    Chunk,
    #[error("a body delimited only by the connection's close")]
    NoLength,
}

/// How the body lies in the buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// These bytes, as they are.
    Plain(Range<usize>),
    /// These bytes hold chunks (sizes, data, ends of line) up to and
    /// including the last chunk; [`chunks`] yields the data.
    Chunked(Range<usize>),
}

/// A whole response at the front of the buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// Whether the connection stays open after it (HTTP/1.1 unless
    /// `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`).
    pub keep_alive: bool,
    pub body: Body,
    /// Bytes the whole response takes, head and body.
    pub len: usize,
}

/// The response at the front of `buf`, if it is all there. `head_only`:
/// the request was `HEAD`, so no body follows whatever the headers say.
pub fn parse(buf: &[u8], head_only: bool) -> Result<Option<Response>, Bad> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut r = httparse::Response::new(&mut headers);
    let head = match r.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(Bad::Head),
    };
    let status = r.code.ok_or(Bad::Head)?;
    let mut keep_alive = r.version == Some(1);
    let mut length: Option<usize> = None;
    let mut chunked = false;
    for h in r.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let n = decimal(h.value).ok_or(Bad::Length)?;
            if length.is_some_and(|l| l != n) {
                return Err(Bad::Length);
            }
            length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = last_token(h.value).eq_ignore_ascii_case(b"chunked");
        } else if h.name.eq_ignore_ascii_case("connection") {
            for t in h.value.split(|&b| b == b',') {
                let t = t.trim_ascii();
                if t.eq_ignore_ascii_case(b"close") {
                    keep_alive = false;
                } else if t.eq_ignore_ascii_case(b"keep-alive") {
                    keep_alive = true;
                }
            }
        }
    }
    let bodiless = head_only || status < 200 || status == 204 || status == 304;
    let (body, len) = if bodiless {
        (Body::Plain(head..head), head)
    } else if chunked {
        match chunked_end(buf, head)? {
            Some(end) => (Body::Chunked(head..end), end),
            None => return Ok(None),
        }
    } else if let Some(n) = length {
        let end = head.checked_add(n).ok_or(Bad::Length)?;
        if buf.len() < end {
            return Ok(None);
        }
        (Body::Plain(head..end), end)
    } else {
        return Err(Bad::NoLength);
    };
    Ok(Some(Response {
        status,
        keep_alive,
        body,
        len,
    }))
}

/// The last of a comma-separated list of codings.
fn last_token(v: &[u8]) -> &[u8] {
    v.rsplit(|&b| b == b',').next().unwrap_or(v).trim_ascii()
}

fn decimal(v: &[u8]) -> Option<usize> {
    let v = v.trim_ascii();
    if v.is_empty() || v.len() > 18 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(
        v.iter()
            .fold(0usize, |n, &d| n * 10 + usize::from(d - b'0')),
    )
}

/// One chunk at `at`: its data's range and where the next one starts;
/// `Ok(None)` when not all there. The last chunk (size 0) has empty data
/// and ends after its trailers.
fn chunk(buf: &[u8], at: usize) -> Result<Option<(Range<usize>, usize)>, Bad> {
    let rest = buf.get(at..).unwrap_or_default();
    let Some(eol) = rest.iter().position(|&b| b == b'\n') else {
        return if rest.len() > MAX_CHUNK_LINE {
            Err(Bad::Chunk)
        } else {
            Ok(None)
        };
    };
    let line = rest[..eol].strip_suffix(b"\r").ok_or(Bad::Chunk)?;
    let hex = line
        .split(|&b| b == b';')
        .next()
        .unwrap_or(line)
        .trim_ascii();
    if hex.is_empty() || hex.len() > 15 {
        return Err(Bad::Chunk);
    }
    let mut size = 0usize;
    for &d in hex {
        let v = (d as char).to_digit(16).ok_or(Bad::Chunk)?;
        size = size * 16 + v as usize;
    }
    let data = at + eol + 1;
    if size == 0 {
        // Trailer fields, then an empty line.
        let mut pos = data;
        loop {
            let rest = buf.get(pos..).unwrap_or_default();
            let Some(eol) = rest.iter().position(|&b| b == b'\n') else {
                return Ok(None);
            };
            let line = rest[..eol].strip_suffix(b"\r").ok_or(Bad::Chunk)?;
            pos += eol + 1;
            if line.is_empty() {
                return Ok(Some((data..data, pos)));
            }
        }
    }
    let end = data.checked_add(size).ok_or(Bad::Chunk)?;
    match buf.get(end..end + 2) {
        None => Ok(None),
        Some(b"\r\n") => Ok(Some((data..end, end + 2))),
        Some(_) => Err(Bad::Chunk),
    }
}

/// Where the chunked body starting at `at` ends, if it is all there.
fn chunked_end(buf: &[u8], mut at: usize) -> Result<Option<usize>, Bad> {
    loop {
        match chunk(buf, at)? {
            None => return Ok(None),
            Some((data, next)) => {
                at = next;
                if data.is_empty() {
                    return Ok(Some(at));
                }
            }
        }
    }
}

/// The data of a body, piece by piece (one piece for a plain body).
pub fn pieces<'a>(buf: &'a [u8], body: &Body) -> impl Iterator<Item = &'a [u8]> + 'a {
    let (plain, mut at, end) = match body {
        Body::Plain(r) => (Some(&buf[r.clone()]), 0, 0),
        Body::Chunked(r) => (None, r.start, r.end),
    };
    plain.into_iter().chain(std::iter::from_fn(move || {
        while at < end {
            // Framed by `parse` already: every chunk is whole.
            let (data, next) = chunk(buf, at).ok().flatten()?;
            at = next;
            if !data.is_empty() {
                return Some(&buf[data]);
            }
        }
        None
    }))
}

/// A body's length and a 64-bit hash of its bytes, to tell one body from
/// another (not a defence against anyone choosing them). The hash does not
/// depend on how the body was cut into chunks.
pub fn fingerprint(buf: &[u8], body: &Body) -> (u64, u64) {
    let mut h = Hasher::default();
    for p in pieces(buf, body) {
        h.write(p);
    }
    h.finish()
}

/// FxHash's step over 8-byte words, with the bytes of a word that span
/// two pieces carried over.
#[derive(Default)]
pub struct Hasher {
    h: u64,
    len: u64,
    carry: [u8; 8],
    held: usize,
}

const K: u64 = 0x517c_c1b7_2722_0a95;

impl Hasher {
    #[inline]
    fn word(&mut self, w: u64) {
        self.h = (self.h.rotate_left(5) ^ w).wrapping_mul(K);
    }

    pub fn write(&mut self, mut b: &[u8]) {
        self.len += b.len() as u64;
        if self.held > 0 {
            let take = (8 - self.held).min(b.len());
            self.carry[self.held..self.held + take].copy_from_slice(&b[..take]);
            self.held += take;
            b = &b[take..];
            if self.held < 8 {
                return;
            }
            self.word(u64::from_le_bytes(self.carry));
            self.held = 0;
        }
        let mut words = b.chunks_exact(8);
        for w in &mut words {
            let mut a = [0u8; 8];
            a.copy_from_slice(w);
            self.word(u64::from_le_bytes(a));
        }
        let tail = words.remainder();
        self.carry[..tail.len()].copy_from_slice(tail);
        self.held = tail.len();
    }

    /// (length, hash).
    pub fn finish(mut self) -> (u64, u64) {
        if self.held > 0 {
            let mut a = [0u8; 8];
            a[..self.held].copy_from_slice(&self.carry[..self.held]);
            self.word(u64::from_le_bytes(a) ^ 0x80);
        }
        self.word(self.len);
        (self.len, self.h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: &[u8] = b"HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 5\r\n\r\nhello";
    const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
        3;ext=1\r\nhel\r\n2\r\nlo\r\n0\r\nX-T: 1\r\n\r\n";

    fn body(buf: &[u8], r: &Response) -> Vec<u8> {
        pieces(buf, &r.body).flatten().copied().collect()
    }

    #[test]
    fn every_prefix_is_incomplete_and_the_whole_parses() {
        for (whole, keep) in [(PLAIN, true), (CHUNKED, true)] {
            for n in 0..whole.len() {
                assert_eq!(parse(&whole[..n], false), Ok(None), "{n}");
            }
            let mut two = whole.to_vec();
            two.extend_from_slice(b"HTTP/1.1 204 No");
            let r = parse(&two, false).unwrap().unwrap();
            assert_eq!((r.status, r.keep_alive, r.len), (200, keep, whole.len()));
            assert_eq!(body(&two, &r), b"hello");
            assert_eq!(
                fingerprint(&two, &r.body),
                fingerprint(PLAIN, &parse(PLAIN, false).unwrap().unwrap().body)
            );
        }
    }

    #[test]
    fn bodiless_responses_and_closing_ones() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n";
        let r = parse(head, true).unwrap().unwrap();
        assert_eq!((r.len, body(head, &r).len()), (head.len(), 0));
        let r = parse(b"HTTP/1.1 304 Not Modified\r\n\r\n", false)
            .unwrap()
            .unwrap();
        assert_eq!(r.status, 304);
        let old = b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n";
        assert!(!parse(old, false).unwrap().unwrap().keep_alive);
        let kept = b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n";
        assert!(parse(kept, false).unwrap().unwrap().keep_alive);
        let close = b"HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        let r = parse(close, false).unwrap().unwrap();
        assert_eq!((r.status, r.keep_alive), (404, false));
    }

    #[test]
    fn garbage_is_bad_not_incomplete() {
        let cases: [(&[u8], Bad); 6] = [
            (b"+PONG\r\n", Bad::Head),
            (b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", Bad::Length),
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
        ];
        for (buf, why) in cases {
            assert_eq!(
                parse(buf, false),
                Err(why),
                "{}",
                String::from_utf8_lossy(buf)
            );
        }
    }

    #[test]
    fn the_hash_ignores_how_bytes_are_cut() {
        let data: Vec<u8> = (0..100u8).collect();
        let mut whole = Hasher::default();
        whole.write(&data);
        let whole = whole.finish();
        for cut in [1, 3, 7, 8, 9, 50] {
            let mut h = Hasher::default();
            for piece in data.chunks(cut) {
                h.write(piece);
            }
            assert_eq!(h.finish(), whole, "{cut}");
        }
        let mut other = Hasher::default();
        other.write(&data[..99]);
        assert_ne!(other.finish(), whole);
    }
}
