//! The one contract of a pipelined byte-stream client (Redis, memcached,
//! HTTP/1.1): the target owns the socket and moves bytes, the
//! workload encodes requests into [`ByteStream::out`], parses responses
//! where they lie at the front of [`ByteStream::input`], and keeps the
//! requests in flight in a [`Fifo`] (these protocols answer in order).
//! [`recv`] is the one receive loop every such driver uses.

use std::collections::VecDeque;
use std::future::Future;

use bytes::BytesMut;
use loadrig_engine::{Driver, Event};
use loadrig_metrics::OpError;

/// One byte stream to a server. Both buffers belong to the stream, so a
/// dropped [`fill`](ByteStream::fill) loses nothing.
pub trait ByteStream: Send + 'static {
    /// The write buffer: append whole requests.
    fn out(&mut self) -> &mut BytesMut;
    /// The read buffer: bytes received and not yet consumed; the caller
    /// removes what it parsed.
    fn input(&mut self) -> &mut BytesMut;
    /// Write what is queued and wait until more bytes arrived. Cancel
    /// safe. Bytes the server sends that cannot be its protocol are a
    /// protocol error, a failed link an I/O error.
    fn fill(&mut self) -> impl Future<Output = Result<(), OpError>> + Send;
    /// A fresh connection to the same server (else the next one), with
    /// empty buffers.
    fn reconnect(&mut self) -> impl Future<Output = Result<(), OpError>> + Send;
    /// Bytes sent and received since the last call (replaced sockets'
    /// included).
    fn take_bytes(&mut self) -> (u64, u64);
}

/// Requests in flight on a protocol that answers in order, oldest first,
/// and whether the stream is out of step (bytes came that no request
/// asked for: every later answer would go to the wrong request).
#[derive(Debug)]
pub struct Fifo<T> {
    items: VecDeque<T>,
    stray: bool,
}

impl<T> Fifo<T> {
    pub fn with_capacity(n: usize) -> Self {
        Fifo {
            items: VecDeque::with_capacity(n),
            stray: false,
        }
    }

    /// `item` was just written. With nothing in flight, a byte already
    /// read answers nothing (the new request would take it for its own):
    /// the stream is out of step.
    #[inline]
    pub fn push(&mut self, item: T, input: &[u8]) {
        if self.items.is_empty() && !input.is_empty() {
            self.stray = true;
        }
        self.items.push_back(item);
    }

    #[inline]
    pub fn front(&self) -> Option<&T> {
        self.items.front()
    }

    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        self.items.pop_front()
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
        self.items.clear();
        self.stray = false;
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_byte_with_nothing_in_flight_puts_the_stream_out_of_step() {
        let mut f = Fifo::with_capacity(4);
        f.push(1, b"");
        f.push(2, b"+OK\r\n");
        assert!(!f.stray(), "bytes with a request in flight are its answer");
        assert_eq!((f.pop(), f.pop(), f.pop()), (Some(1), Some(2), None));
        f.push(3, b"+OK\r\n");
        assert!(f.stray(), "bytes before any request answer nothing");
        f.clear();
        assert!(!f.stray() && f.is_empty());
    }
}
