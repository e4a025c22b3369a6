//! The one contract of a pipelined byte-stream client (Redis, memcached,
//! HTTP/1.1, the pub/sub links of NATS, MQTT and Redis): the target owns
//! the socket, dials and logs in, and moves bytes; the
//! workload encodes requests into [`ByteStream::out`], parses responses
//! where they lie at the front of [`ByteStream::input`], and keeps the
//! requests in flight in an [`InFlight`] (these protocols answer in order).
//! [`recv`] is the one receive loop every such driver uses.

use std::collections::VecDeque;
use std::future::Future;

use bytes::{Buf, BytesMut};
use loadrig_engine::{Driver, Event};
use loadrig_metrics::{ErrorKind, OpError};

/// One byte stream to a server. Both buffers belong to the stream, so a
/// dropped [`fill`](ByteStream::fill) loses nothing.
pub trait ByteStream: Send + 'static {
    /// The write buffer: append whole requests.
    fn out(&mut self) -> &mut BytesMut;
    /// The read buffer: bytes received and not yet consumed; the caller
    /// removes what it parsed.
    fn input(&mut self) -> &mut BytesMut;
    /// One whole request was just appended to [`out`](ByteStream::out).
    /// A stream over one socket has nothing to do; a router in front of
    /// several (Redis Cluster) sends the request on by its key here, and
    /// keeps the answers in the order the requests came.
    #[inline]
    fn sent(&mut self) {}
    /// Write what is queued and wait until more bytes arrived. Cancel
    /// safe. Bytes the server sends that cannot be its protocol are a
    /// protocol error, a failed link an I/O error.
    fn fill(&mut self) -> impl Future<Output = Result<(), OpError>> + Send;
    /// Bytes queued in [`out`](ByteStream::out) and not yet written.
    fn unwritten(&self) -> usize;
    /// Write everything queued, waiting for the socket to take it. Cancel
    /// safe: what is not written yet stays in [`out`](ByteStream::out).
    fn flush(&mut self) -> impl Future<Output = Result<(), OpError>> + Send;
    /// A second connection to the server this one is on now (Redis
    /// pub/sub: a link in subscribe mode beside the publishing one).
    fn sibling(&self) -> impl Future<Output = Result<Self, OpError>> + Send
    where
        Self: Sized;
    /// A fresh connection to the same server (else the next one), with
    /// empty buffers.
    fn reconnect(&mut self) -> impl Future<Output = Result<(), OpError>> + Send;
    /// Bytes sent and received since the last call (replaced sockets'
    /// included).
    fn take_bytes(&mut self) -> (u64, u64);
    /// Redirects a router followed since the last call, `[MOVED, ASK]`
    /// (Redis Cluster); a stream over one socket follows none.
    #[inline]
    fn take_redirects(&mut self) -> [u64; 2] {
        [0, 0]
    }
    /// A hash tag for the keys of the next request, `draw` choosing among
    /// the stream's tags: on Redis Cluster, one of a slot the connection's
    /// master serves, so that all its requests go to that one socket; a
    /// stream over one server has none.
    #[inline]
    fn key_tag(&self, _draw: u64) -> Option<[u8; 3]> {
        None
    }
}

/// Requests in flight on a protocol that answers in order, oldest first,
/// and whether the stream is out of step (bytes came that no request
/// asked for: every later answer would go to the wrong request).
///
/// The oldest is kept inline, the rest in a queue beside it: a connection
/// with one request in flight (most of them, at `-P 1`) never reads the
/// queue's memory, which with thousands of connections would be one more
/// cache miss per answer (docs/explanations/client-cost.md).
#[derive(Debug)]
pub struct InFlight<T> {
    front: Option<T>,
    rest: VecDeque<T>,
    stray: bool,
}

impl<T> Default for InFlight<T> {
    fn default() -> Self {
        InFlight::new()
    }
}

impl<T> InFlight<T> {
    /// Nothing in flight; the queue grows when a second request is pushed.
    pub fn new() -> Self {
        InFlight {
            front: None,
            rest: VecDeque::new(),
            stray: false,
        }
    }

    /// `item` was just written. With nothing in flight, a byte already
    /// read answers nothing (the new request would take it for its own):
    /// the stream is out of step.
    #[inline]
    pub fn push(&mut self, item: T, input: &[u8]) {
        if self.front.is_none() {
            if !input.is_empty() {
                self.stray = true;
            }
            self.front = Some(item);
        } else {
            self.rest.push_back(item);
        }
    }

    #[inline]
    pub fn front(&self) -> Option<&T> {
        self.front.as_ref()
    }

    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        // The queue holds something only behind a front.
        let first = self.front.take();
        self.front = self.rest.pop_front();
        first
    }

    /// The stream is out of step (a request that could not be written
    /// whole, an answer to nothing).
    #[inline]
    pub fn mark_stray(&mut self) {
        self.stray = true;
    }

    #[inline]
    pub fn stray(&self) -> bool {
        self.stray
    }

    /// A fresh connection: nothing in flight, in step.
    pub fn clear(&mut self) {
        self.front = None;
        self.rest.clear();
        self.stray = false;
    }

    pub fn len(&self) -> usize {
        usize::from(self.front.is_some()) + self.rest.len()
    }

    pub fn is_empty(&self) -> bool {
        self.front.is_none()
    }
}

/// What a cold-path scan made of one whole frame at the front of what is
/// left to look at.
pub enum Scan<T> {
    /// Not the answer waited for: it stays in the read buffer, for the hot
    /// path (a message that came before a confirmation).
    Keep,
    /// Protocol chatter that answers nothing the hot path waits for: it
    /// leaves the read buffer.
    Drop,
    /// The answer: it leaves the read buffer and the wait ends.
    Take(T),
    /// The server's refusal: it leaves the read buffer and the wait ends
    /// with this error.
    Fail(OpError),
}

/// Wait for one answer on the cold path (a subscription confirmed), leaving
/// the frames before it in the read buffer. `scan` sees what follows the
/// frames kept so far and says how long the whole frame at its front is
/// and what it is; `Ok(None)`: no whole frame yet. Cancel safe: what it
/// takes out of the read buffer it has handled.
pub async fn await_in_place<S: ByteStream, T>(
    stream: &mut S,
    mut scan: impl FnMut(&[u8]) -> Result<Option<(usize, Scan<T>)>, OpError>,
) -> Result<T, OpError> {
    loop {
        let mut pos = 0;
        loop {
            let rest = stream.input().get(pos..).unwrap_or_default();
            let Some((n, what)) = scan(rest)? else {
                break;
            };
            match what {
                Scan::Keep => pos += n,
                Scan::Drop => cut(stream.input(), pos, n),
                Scan::Take(t) => {
                    cut(stream.input(), pos, n);
                    return Ok(t);
                }
                Scan::Fail(e) => {
                    cut(stream.input(), pos, n);
                    return Err(e);
                }
            }
        }
        stream.fill().await?;
    }
}

/// Remove `n` bytes at offset `at` of `buf`.
fn cut(buf: &mut BytesMut, at: usize, n: usize) {
    let len = buf.len();
    let end = at.saturating_add(n).min(len);
    if at == 0 {
        buf.advance(end);
    } else if at < end {
        buf.copy_within(end.., at);
        buf.truncate(len - (end - at));
    }
}

/// A driver over a [`ByteStream`].
pub trait StreamDriver: Driver {
    type Stream: ByteStream;
    fn stream(&mut self) -> &mut Self::Stream;
}

/// The one `recv` of a byte-stream driver: the next event already in the
/// read buffer (the driver's `try_recv`), else fill and look again. Cancel
/// safe, as `fill` is.
#[inline]
pub async fn recv<D: StreamDriver>(d: &mut D) -> Event {
    loop {
        if let Some(ev) = d.try_recv() {
            return ev;
        }
        if let Err(e) = d.stream().fill().await {
            return Event::Broken(e);
        }
    }
}

/// The one [`Driver::idle`] of a byte-stream driver whose server speaks
/// only when asked (Redis, memcached, HTTP/1.1): the wait before the load
/// watches the socket, so a connection the server closes is re-opened
/// before the load needs it. A byte that comes unasked would be taken for
/// the first request's answer: the stream is out of step, so it is
/// re-opened too. Cancel safe, as `fill` is.
pub async fn idle<S: ByteStream>(stream: &mut S) -> Result<(), OpError> {
    loop {
        if !stream.input().is_empty() {
            return Err(OpError::new(ErrorKind::Protocol));
        }
        stream.fill().await?;
    }
}

/// [`Driver::idle`] of a pub/sub link whose broker says nothing unasked
/// but messages: wait for a close (`Err`: re-open it) or for the first
/// bytes (`Ok`: they are the load's, and stay in the read buffer).
pub async fn watch<S: ByteStream>(stream: &mut S) -> Result<(), OpError> {
    if stream.input().is_empty() {
        stream.fill().await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream whose server sends one of `arrivals` at each `fill`, and
    /// has closed once they are all sent.
    struct Scripted {
        input: BytesMut,
        out: BytesMut,
        arrivals: VecDeque<&'static [u8]>,
    }

    fn scripted(input: &[u8], arrivals: &[&'static [u8]]) -> Scripted {
        Scripted {
            input: BytesMut::from(input),
            out: BytesMut::new(),
            arrivals: arrivals.iter().copied().collect(),
        }
    }

    impl ByteStream for Scripted {
        fn out(&mut self) -> &mut BytesMut {
            &mut self.out
        }
        fn input(&mut self) -> &mut BytesMut {
            &mut self.input
        }
        async fn fill(&mut self) -> Result<(), OpError> {
            let got = self.arrivals.pop_front();
            let bytes = got.ok_or(OpError::new(ErrorKind::Io))?;
            self.input.extend_from_slice(bytes);
            Ok(())
        }
        fn unwritten(&self) -> usize {
            self.out.len()
        }
        async fn flush(&mut self) -> Result<(), OpError> {
            Ok(())
        }
        async fn sibling(&self) -> Result<Self, OpError> {
            Err(OpError::new(ErrorKind::Io))
        }
        async fn reconnect(&mut self) -> Result<(), OpError> {
            Ok(())
        }
        fn take_bytes(&mut self) -> (u64, u64) {
            (0, 0)
        }
    }

    /// Before the load, a request-answer stream fails on a close (to be
    /// re-opened) and on any byte, one already read included; a pub/sub
    /// link ends its wait at the first bytes and leaves them in place.
    #[tokio::test]
    async fn the_wait_tells_a_close_from_unasked_bytes() {
        let kind = |r: Result<(), OpError>| r.err().map(|e| e.kind);
        let mut closed = scripted(b"", &[]);
        assert_eq!(kind(idle(&mut closed).await), Some(ErrorKind::Io));
        let mut stray = scripted(b"", &[b"+PONG\r\n"]);
        assert_eq!(kind(idle(&mut stray).await), Some(ErrorKind::Protocol));
        let mut early = scripted(b"-ERR\r\n", &[]);
        assert_eq!(kind(idle(&mut early).await), Some(ErrorKind::Protocol));

        let mut link = scripted(b"", &[b"MSG a 1 2\r\nhi\r\n"]);
        assert_eq!(kind(watch(&mut link).await), None);
        assert_eq!(&link.input[..], b"MSG a 1 2\r\nhi\r\n");
        let mut gone = scripted(b"", &[]);
        assert_eq!(kind(watch(&mut gone).await), Some(ErrorKind::Io));
        let mut waiting = scripted(b"MSG", &[]);
        assert_eq!(kind(watch(&mut waiting).await), None);
    }

    #[test]
    fn cut_takes_a_frame_from_among_the_others() {
        let mut b = BytesMut::from(&b"aaBBBcc"[..]);
        cut(&mut b, 2, 3);
        assert_eq!(&b[..], b"aacc");
        cut(&mut b, 0, 2);
        assert_eq!(&b[..], b"cc");
        cut(&mut b, 1, 9);
        assert_eq!(&b[..], b"c");
    }

    #[test]
    fn a_byte_with_nothing_in_flight_puts_the_stream_out_of_step() {
        let mut f = InFlight::new();
        f.push(1, b"");
        f.push(2, b"+OK\r\n");
        assert!(!f.stray(), "bytes with a request in flight are its answer");
        assert_eq!((f.pop(), f.pop(), f.pop()), (Some(1), Some(2), None));
        f.push(3, b"+OK\r\n");
        assert!(f.stray(), "bytes before any request answer nothing");
        f.clear();
        assert!(!f.stray() && f.is_empty());
    }

    #[test]
    fn requests_come_back_in_the_order_sent_across_the_inline_one() {
        let mut f = InFlight::new();
        for i in 1..=3 {
            f.push(i, b"");
        }
        assert_eq!((f.len(), f.front()), (3, Some(&1)));
        assert_eq!(f.pop(), Some(1));
        f.push(4, b"");
        let rest: Vec<u32> = std::iter::from_fn(|| f.pop()).collect();
        assert_eq!(rest, [2, 3, 4]);
        assert_eq!((f.is_empty(), f.len(), f.front()), (true, 0, None));
        f.push(5, b"");
        assert_eq!((f.len(), f.pop(), f.pop()), (1, Some(5), None));
    }
}
