//! The http workload's run: one driver per connection, copying each
//! request into the write buffer and reading each response off the front
//! of the read buffer as it arrives.
//!
//! A body is consumed as it comes ([`Reader`]): hashed and dropped from
//! the read buffer read by read, so a connection holds about one read of
//! it whatever its size. What was read of the response in progress lives
//! in the driver, not in `recv`'s future, so `recv` stays cancel safe.
//!
//! HTTP/1.1 answers in request order, so the driver keeps the requests in
//! flight in a FIFO. A status is counted by class; 2xx and 3xx complete
//! the request, 4xx and 5xx fail it as a server error of that class (wrk
//! counts them apart as "Non-2xx or 3xx responses"). Bytes that cannot be
//! a response put the stream out of step: the connection is broken, a
//! protocol error, and the engine reconnects.
//!
//! A response that says the server closes the connection (`Connection:
//! close`, or HTTP/1.0 without keep-alive) completes its request; the
//! driver then opens a new connection itself and sends again what was in
//! flight behind it, as wrk does (the server never read those), counting
//! it as `reopened`, not as an error.

use std::future::Future;
use std::sync::Arc;

use loadrig_engine::{Driver, Event, Tag};
use loadrig_metrics::{ErrorKind, OpError};

use super::load::{Load, DOMAINS, OTHER, REOPENED, RESUMED, S2XX};
use super::response::Reader;
use super::HttpConn;
use crate::stream::{InFlight, StreamDriver};

const PROTOCOL: OpError = OpError::new(ErrorKind::Protocol);
const WRONG: OpError = OpError::new(ErrorKind::Verification);

/// A request in flight: its tag, and its index to send it again on a new
/// connection.
#[derive(Debug, Clone, Copy)]
struct Pending {
    tag: Tag,
    index: u64,
}

/// One engine connection.
pub struct HttpDriver<C> {
    conn: C,
    load: Arc<Load>,
    pending: InFlight<Pending>,
    /// What has been read of the oldest request's response.
    reader: Reader,
    /// The server said it closes this connection after the response
    /// just taken: nothing more comes on it.
    closing: bool,
    counts: [u64; DOMAINS.len()],
}

impl<C: HttpConn> HttpDriver<C> {
    pub(super) fn new(conn: C, load: Arc<Load>) -> Self {
        HttpDriver {
            conn,
            reader: Reader::new(load.head_only, load.get),
            load,
            pending: InFlight::new(),
            closing: false,
            counts: [0; DOMAINS.len()],
        }
    }

    /// The response at the front of the read buffer, for the oldest
    /// request, once it is whole; what came of it so far is consumed.
    #[inline]
    fn answer(&mut self, p: Pending) -> Option<Event> {
        let load = &*self.load;
        let r = match self.reader.read(self.conn.input()) {
            Ok(Some(r)) => r,
            Ok(None) => return None,
            Err(_) => return Some(Event::Broken(PROTOCOL)),
        };
        let class = match r.status {
            200..=599 => usize::from(r.status / 100 - 2) + S2XX,
            _ => OTHER,
        };
        self.counts[class] += 1;
        let result = match r.status {
            // The reader hashes every 200 body of a GET.
            200 if load.get => match r.print {
                Some(print) if load.same_as_first(print) => Ok(None),
                _ => Err(WRONG),
            },
            200..=399 => Ok(None),
            // The status itself, so a run of 405s says 405, not 4xx.
            400..=599 => Err(OpError::server(status_name(r.status))),
            _ => Err(OpError::server("other status")),
        };
        self.pending.pop();
        if !r.keep_alive {
            self.closing = true;
        }
        Some(Event::Done { tag: p.tag, result })
    }

    /// A new connection in place of one the server closed, with what was
    /// in flight behind the last response sent again.
    async fn reopen(&mut self) -> Result<(), OpError> {
        self.conn.reconnect().await?;
        self.closing = false;
        self.reader.reset();
        self.counts[REOPENED] += 1;
        self.counts[RESUMED] += u64::from(self.conn.resumed());
        let server = self.conn.server();
        // Nothing of the old socket's buffers came along.
        let (load, out) = (&*self.load, self.conn.out());
        let mut again = InFlight::new();
        while let Some(p) = self.pending.pop() {
            load.write(out, server, p.index);
            again.push(p, &[]);
        }
        self.pending = again;
        Ok(())
    }
}

impl<C: HttpConn> StreamDriver for HttpDriver<C> {
    type Stream = C;

    #[inline]
    fn stream(&mut self) -> &mut C {
        &mut self.conn
    }
}

impl<C: HttpConn> Driver for HttpDriver<C> {
    #[inline]
    fn kind_of(&self, _index: u64) -> usize {
        0
    }

    #[inline]
    fn send(&mut self, index: u64, tag: Tag) -> usize {
        let server = self.conn.server();
        self.load.write(self.conn.out(), server, index);
        let input = self.conn.input();
        self.pending.push(Pending { tag, index }, input);
        0
    }

    async fn recv(&mut self) -> Event {
        loop {
            if let Some(ev) = self.try_recv() {
                return ev;
            }
            let step = if self.closing {
                // Cancel safe: the new socket replaces the old one and the
                // requests are written again with no await in between.
                self.reopen().await
            } else {
                self.conn.fill().await
            };
            if let Err(e) = step {
                return Event::Broken(e);
            }
        }
    }

    #[inline]
    fn try_recv(&mut self) -> Option<Event> {
        if self.pending.stray() {
            return Some(Event::Broken(PROTOCOL));
        }
        if self.closing {
            return None;
        }
        let Some(&p) = self.pending.front() else {
            // Bytes nobody asked for.
            return (!self.conn.input().is_empty()).then_some(Event::Broken(PROTOCOL));
        };
        self.answer(p)
    }

    fn idle(&mut self) -> impl Future<Output = Result<(), OpError>> + Send {
        crate::stream::idle(self.stream())
    }

    fn reconnect(&mut self) -> impl Future<Output = Result<(), OpError>> + Send {
        self.pending.clear();
        self.closing = false;
        // A response cut off with its connection is never finished.
        self.reader.reset();
        self.conn.reconnect()
    }

    fn take_bytes(&mut self) -> (u64, u64) {
        self.conn.take_bytes()
    }

    fn take_counts(&mut self, domains: &mut [u64]) {
        for (d, c) in domains.iter_mut().zip(&mut self.counts) {
            *d += std::mem::take(c);
        }
    }
}

/// `"405"` for 405: an error's class is a static string, so the
/// statuses that fail a request (400 to 599) are spelt out at compile time.
fn status_name(status: u16) -> &'static str {
    macro_rules! units {
        ($h:literal $t:literal; $($u:literal)*) => { [$(concat!($h, $t, $u)),*] };
    }
    macro_rules! hundred {
        ($h:literal) => {
            [
                units!($h 0; 0 1 2 3 4 5 6 7 8 9), units!($h 1; 0 1 2 3 4 5 6 7 8 9),
                units!($h 2; 0 1 2 3 4 5 6 7 8 9), units!($h 3; 0 1 2 3 4 5 6 7 8 9),
                units!($h 4; 0 1 2 3 4 5 6 7 8 9), units!($h 5; 0 1 2 3 4 5 6 7 8 9),
                units!($h 6; 0 1 2 3 4 5 6 7 8 9), units!($h 7; 0 1 2 3 4 5 6 7 8 9),
                units!($h 8; 0 1 2 3 4 5 6 7 8 9), units!($h 9; 0 1 2 3 4 5 6 7 8 9),
            ]
        };
    }
    const NAMES: [[[&str; 10]; 10]; 2] = [hundred!(4), hundred!(5)];
    let i = usize::from(status);
    match i {
        400..=599 => NAMES[i / 100 - 4][i / 10 % 10][i % 10],
        _ => "other status",
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    use bytes::BytesMut;
    use loadrig_spec::HttpSpec;

    use super::*;
    use crate::stream::ByteStream;

    /// A connection whose server sends the next of `arrivals` at every
    /// other poll of `fill`, the one before pending: a receive dropped
    /// there is cancelled between two fills.
    struct Halting {
        input: BytesMut,
        out: BytesMut,
        arrivals: VecDeque<Vec<u8>>,
        ready: bool,
    }

    impl ByteStream for Halting {
        fn out(&mut self) -> &mut BytesMut {
            &mut self.out
        }
        fn input(&mut self) -> &mut BytesMut {
            &mut self.input
        }
        fn fill(&mut self) -> impl Future<Output = Result<(), OpError>> + Send {
            std::future::poll_fn(move |cx| {
                self.ready = !self.ready;
                if self.ready {
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                let got = self.arrivals.pop_front();
                let bytes = got.ok_or(OpError::new(ErrorKind::Io))?;
                self.input.extend_from_slice(&bytes);
                Poll::Ready(Ok(()))
            })
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

    impl HttpConn for Halting {
        fn server(&self) -> usize {
            0
        }
    }

    #[test]
    fn each_failing_status_is_named() {
        assert_eq!(status_name(400), "400");
        assert_eq!(status_name(405), "405");
        assert_eq!(status_name(503), "503");
        assert_eq!(status_name(599), "599");
        assert_eq!(status_name(600), "other status");
    }

    /// Responses that come five bytes at a time, every receive dropped at
    /// its first wait: each is still read whole, once, and its body
    /// compared with the first (the third differs).
    #[test]
    fn responses_read_across_cancelled_receives_are_whole() {
        let spec = HttpSpec {
            method: "GET".into(),
            headers: Vec::new(),
            body: None,
            put_size: 0,
            latency: false,
        };
        let load = Arc::new(Load::new(spec, 1, "/", &["h:1".into()]));
        let mut bytes = Vec::new();
        for body in ["hello world", "hello world", "hello there"] {
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
            bytes.extend_from_slice(head.as_bytes());
            bytes.extend_from_slice(body.as_bytes());
        }
        let conn = Halting {
            input: BytesMut::new(),
            out: BytesMut::new(),
            arrivals: bytes.chunks(5).map(<[u8]>::to_vec).collect(),
            ready: false,
        };
        let mut d = HttpDriver::new(conn, load);
        for i in 0..3 {
            d.send(i, i as Tag);
        }
        let mut cx = Context::from_waker(Waker::noop());
        let mut events = Vec::new();
        for _ in 0..1000 {
            let polled = pin!(d.recv()).as_mut().poll(&mut cx);
            if let Poll::Ready(ev) = polled {
                events.push(ev);
                events.extend(std::iter::from_fn(|| d.try_recv()));
            }
            if events.len() >= 3 {
                break;
            }
        }
        let done = |tag, result| Event::Done { tag, result };
        assert_eq!(
            events,
            [done(0, Ok(None)), done(1, Ok(None)), done(2, Err(WRONG))]
        );
        assert!(d.conn.input.is_empty() && d.conn.arrivals.is_empty());
    }
}
