//! HTTP/1.x responses read off the front of a read buffer as their bytes
//! arrive, without I/O: the head by `httparse` once it is whole, then the
//! body framed here by `Content-Length` or chunked transfer coding and
//! consumed piece by piece, hashed as it goes and dropped from the buffer.
//! So a connection holds about one read of a body however large it is, not
//! the whole of it (issue #40: a 1 GiB body held 1 GiB per connection).
//!
//! What has been read of a response lives in a [`Reader`], one per
//! connection, kept by its owner across fills: nothing of it is held by a
//! future, so a receive dropped between two fills loses nothing. An
//! incomplete response is `Ok(None)` (wait for more bytes); bytes that
//! cannot be a response are [`Bad`].
//!
//! Every input is bounded: a head over [`MAX_HEAD`] with no end yet, a
//! chunk-size line over [`MAX_CHUNK_LINE`], a chunk size of 2^60 or more
//! and trailers over [`MAX_HEAD`] are [`Bad`], not waited for. Interim
//! responses (1xx but 101) are skipped: the real one follows.
//!
//! A response with neither length nor chunking is delimited by the
//! server closing the connection (RFC 9112 section 6.3): a pipelined
//! client cannot tell such a body from a lost connection, so it is
//! refused as [`Bad::NoLength`] (wrk reads it to the close).

// Bytes from the network must not make this panic: the lints the wire
// crate holds its codecs to, for this module.
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]
#![cfg_attr(
    test,
    allow(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::arithmetic_side_effects
    )
)]

use bytes::{Buf, BytesMut};

/// Headers a response may carry; nginx sends well under ten.
const MAX_HEADERS: usize = 64;

/// Longest head accepted (status line and headers), and longest trailer
/// section: nginx's own default for a request head is 1 KiB, growing to
/// 8 KiB buffers (`large_client_header_buffers`); 64 KiB leaves room for
/// any real server and bounds what a connection holds before a body.
pub const MAX_HEAD: usize = 64 * 1024;

/// Longest chunk-size line accepted (hex digits and extensions).
pub const MAX_CHUNK_LINE: usize = 1024;

/// Most hex digits of a chunk size: below 2^60, so every sum of sizes
/// and lengths fits a u64 with room to spare; no real chunk is that long.
const MAX_SIZE_DIGITS: usize = 15;

/// Why bytes are not a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Bad {
    #[error("not an HTTP/1.x response head")]
    Head,
    #[error("a response head over {MAX_HEAD} bytes")]
    LongHead,
    #[error("a bad Content-Length")]
    Length,
    #[error("a bad chunk")]
    Chunk,
    #[error("a body delimited only by the connection's close")]
    NoLength,
}

/// A whole response, read and dropped from the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// Whether the connection stays open after it (HTTP/1.1 unless
    /// `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`).
    pub keep_alive: bool,
    /// The body's [`fingerprint`], for a `200` when the reader hashes them.
    pub print: Option<(u64, u64)>,
}

/// Where a reader is in the response at the front of the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for a whole head (interim ones skipped).
    Head,
    /// This many bytes of a plain body still to come (0: it is whole).
    Plain(u64),
    /// A chunk-size line.
    Size,
    /// This many bytes of a chunk's data still to come.
    Data(u64),
    /// The line end closing a chunk's data.
    DataEnd,
    /// Trailer lines after the last chunk, this many bytes of them so far,
    /// until an empty line.
    Trailer(usize),
}

/// What has been read of the response at the front of a connection's read
/// buffer. Invariant: the bytes it consumed are gone from the buffer and
/// accounted for in its state; a new connection needs [`Reader::reset`].
#[derive(Debug)]
pub struct Reader {
    /// The request was `HEAD`: no body follows whatever the headers say.
    head_only: bool,
    /// Hash the bodies of `200` responses ([`Response::print`]).
    hashed: bool,
    state: State,
    status: u16,
    keep_alive: bool,
    hash: Option<Hasher>,
}

impl Reader {
    pub fn new(head_only: bool, hashed: bool) -> Reader {
        Reader {
            head_only,
            hashed,
            state: State::Head,
            status: 0,
            keep_alive: false,
            hash: None,
        }
    }

    /// Forget a response half read: its connection is gone.
    pub fn reset(&mut self) {
        self.state = State::Head;
        self.hash = None;
    }

    /// Consume what `buf` holds of the response at its front: the response
    /// once it is whole (what follows it stays in `buf`), `Ok(None)` when
    /// more bytes are needed. After `Err` the stream is out of step: the
    /// connection must go, and the reader be [`reset`](Reader::reset).
    pub fn read(&mut self, buf: &mut BytesMut) -> Result<Option<Response>, Bad> {
        loop {
            self.state = match self.state {
                State::Head => match self.head(buf)? {
                    Some(next) => next,
                    None => return Ok(None),
                },
                State::Plain(0) => return Ok(Some(self.finish())),
                State::Plain(left) => match self.take(buf, left) {
                    0 => return Ok(None),
                    n => State::Plain(left.saturating_sub(n)),
                },
                State::Size => match size_line(buf)? {
                    None => return Ok(None),
                    Some(0) => State::Trailer(0),
                    Some(size) => State::Data(size),
                },
                State::Data(0) => State::DataEnd,
                State::Data(left) => match self.take(buf, left) {
                    0 => return Ok(None),
                    n => State::Data(left.saturating_sub(n)),
                },
                State::DataEnd => match buf.get(..2) {
                    None => return Ok(None),
                    Some(b"\r\n") => {
                        buf.advance(2);
                        State::Size
                    }
                    Some(_) => return Err(Bad::Chunk),
                },
                State::Trailer(seen) => match trailer_line(buf, seen)? {
                    None => return Ok(None),
                    Some(None) => State::Plain(0),
                    Some(Some(n)) => State::Trailer(seen.saturating_add(n)),
                },
            };
        }
    }

    /// Skip interim heads and take the real one: the state its body starts
    /// in, `None` until a head is whole.
    fn head(&mut self, buf: &mut BytesMut) -> Result<Option<State>, Bad> {
        loop {
            let Some(h) = parse_head(buf)? else {
                return Ok(None);
            };
            buf.advance(h.len);
            // 1xx (100 Continue, 103 Early Hints) come before the response
            // and answer nothing; 101 would switch protocols, which no
            // request here asks for: it is taken as the (failed) response.
            if (100..200).contains(&h.status) && h.status != 101 {
                continue;
            }
            self.status = h.status;
            self.keep_alive = h.keep_alive;
            self.hash = (self.hashed && h.status == 200).then(Hasher::default);
            let bodiless = self.head_only || h.status < 200 || h.status == 204 || h.status == 304;
            return Ok(Some(if bodiless {
                State::Plain(0)
            } else if h.chunked {
                State::Size
            } else if let Some(n) = h.length {
                State::Plain(n)
            } else {
                return Err(Bad::NoLength);
            }));
        }
    }

    /// Take up to `left` bytes of body from the front of `buf`, hashing
    /// them if asked: how many it took.
    fn take(&mut self, buf: &mut BytesMut, left: u64) -> u64 {
        let n = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        if let (Some(h), Some(piece)) = (&mut self.hash, buf.get(..n)) {
            h.write(piece);
        }
        buf.advance(n);
        n as u64
    }

    fn finish(&mut self) -> Response {
        self.state = State::Head;
        Response {
            status: self.status,
            keep_alive: self.keep_alive,
            print: self.hash.take().map(Hasher::finish),
        }
    }
}

/// A whole head at the front of a buffer.
struct Head {
    /// Bytes it takes, up to and including the empty line.
    len: usize,
    status: u16,
    keep_alive: bool,
    length: Option<u64>,
    chunked: bool,
}

/// The head at the front of `buf`, if it is all there.
fn parse_head(buf: &[u8]) -> Result<Option<Head>, Bad> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut r = httparse::Response::new(&mut headers);
    let len = match r.parse(buf) {
        Ok(httparse::Status::Complete(n)) if n <= MAX_HEAD => n,
        Ok(httparse::Status::Complete(_)) => return Err(Bad::LongHead),
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => return Err(Bad::LongHead),
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(Bad::Head),
    };
    let status = r.code.ok_or(Bad::Head)?;
    let mut keep_alive = r.version == Some(1);
    let mut length: Option<u64> = None;
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
    Ok(Some(Head {
        len,
        status,
        keep_alive,
        length,
        chunked,
    }))
}

/// The last of a comma-separated list of codings.
fn last_token(v: &[u8]) -> &[u8] {
    v.rsplit(|&b| b == b',').next().unwrap_or(v).trim_ascii()
}

fn decimal(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    if v.is_empty() || v.len() > 18 {
        return None;
    }
    v.iter().try_fold(0u64, |n, &d| {
        let d = char::from(d).to_digit(10)?;
        n.checked_mul(10)?.checked_add(u64::from(d))
    })
}

/// Where the line at the front of `buf` ends (the index of its `\n`),
/// looking no further than `max` bytes: `Ok(None)` while it may still
/// end, `Err` once it is longer.
fn line_end(buf: &[u8], max: usize) -> Result<Option<usize>, Bad> {
    let window = buf.get(..max.saturating_add(1)).unwrap_or(buf);
    match window.iter().position(|&b| b == b'\n') {
        Some(eol) => Ok(Some(eol)),
        None if buf.len() > max => Err(Bad::Chunk),
        None => Ok(None),
    }
}

/// The line before `eol`, which must end in `\r\n`.
fn crlf_line(buf: &[u8], eol: usize) -> Result<&[u8], Bad> {
    buf.get(..eol)
        .and_then(|l| l.strip_suffix(b"\r"))
        .ok_or(Bad::Chunk)
}

/// The chunk-size line at the front of `buf`, taken from it: the chunk's
/// size, once the line is whole.
fn size_line(buf: &mut BytesMut) -> Result<Option<u64>, Bad> {
    let Some(eol) = line_end(buf, MAX_CHUNK_LINE)? else {
        return Ok(None);
    };
    let line = crlf_line(buf, eol)?;
    let hex = line
        .split(|&b| b == b';')
        .next()
        .unwrap_or(line)
        .trim_ascii();
    if hex.is_empty() || hex.len() > MAX_SIZE_DIGITS {
        return Err(Bad::Chunk);
    }
    let size = hex.iter().try_fold(0u64, |n, &d| {
        let d = char::from(d).to_digit(16)?;
        n.checked_mul(16)?.checked_add(u64::from(d))
    });
    let size = size.ok_or(Bad::Chunk)?;
    buf.advance(eol.saturating_add(1));
    Ok(Some(size))
}

/// One trailer line at the front of `buf`, taken from it, `seen` bytes of
/// trailers before it: `Some(None)` for the empty line that ends the
/// body, `Some(Some(n))` for a field of `n` bytes.
fn trailer_line(buf: &mut BytesMut, seen: usize) -> Result<Option<Option<usize>>, Bad> {
    let Some(eol) = line_end(buf, MAX_HEAD.saturating_sub(seen))? else {
        return Ok(None);
    };
    let empty = crlf_line(buf, eol)?.is_empty();
    let n = eol.saturating_add(1);
    buf.advance(n);
    Ok(Some((!empty).then_some(n)))
}

/// A body's length and a 64-bit hash of its bytes, to tell one body from
/// another (not a defence against anyone choosing them). A [`Reader`]
/// computes the same over a body however it was cut into reads or chunks.
pub fn fingerprint(body: &[u8]) -> (u64, u64) {
    let mut h = Hasher::default();
    h.write(body);
    h.finish()
}

/// FxHash's step over 8-byte words, with the bytes of a word that span
/// two pieces carried over.
#[derive(Debug, Default)]
pub struct Hasher {
    h: u64,
    len: u64,
    carry: [u8; 8],
    /// Bytes of `carry` in use: below 8 between writes.
    held: usize,
}

const K: u64 = 0x517c_c1b7_2722_0a95;

impl Hasher {
    #[inline]
    fn word(&mut self, w: u64) {
        self.h = (self.h.rotate_left(5) ^ w).wrapping_mul(K);
    }

    pub fn write(&mut self, mut b: &[u8]) {
        self.len = self.len.wrapping_add(b.len() as u64);
        if self.held > 0 {
            let (head, rest) = b.split_at(b.len().min(8usize.saturating_sub(self.held)));
            for (slot, &x) in self.carry.iter_mut().skip(self.held).zip(head) {
                *slot = x;
            }
            self.held = self.held.saturating_add(head.len());
            b = rest;
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
        for (slot, &x) in self.carry.iter_mut().zip(tail) {
            *slot = x;
        }
        self.held = tail.len();
    }

    /// (length, hash).
    pub fn finish(mut self) -> (u64, u64) {
        if self.held > 0 {
            let mut a = [0u8; 8];
            for (slot, &x) in a.iter_mut().zip(self.carry.iter().take(self.held)) {
                *slot = x;
            }
            self.word(u64::from_le_bytes(a) ^ 0x80);
        }
        self.word(self.len);
        (self.len, self.h)
    }
}

#[cfg(test)]
mod tests;
