//! Buffers sized to their traffic (docs/explanations/client-cost.md): a connection's read
//! and write buffers start small, grow at once with a burst, and shrink
//! after it, so thousands of mostly idle connections hold little memory.

use bytes::BytesMut;

/// The read step a connection starts with, and the least a buffer shrinks
/// back to: a request or reply of a couple of hundred bytes fits in one
/// read. The write buffer starts empty and grows as requests are queued.
pub const SMALL: usize = 256;
/// Reads and flushes per look at whether the buffers are larger than the
/// traffic needs.
const WINDOW: u32 = 64;

/// Buffers sized to their traffic (docs/explanations/client-cost.md): the read step doubles
/// when a read fills all the room it was given, up to the target's chunk,
/// and halves after a window of reads that used less than a quarter of it;
/// a buffer found empty and more than four times larger than what the last
/// window needed is given back. So a burst grows them at once and an idle
/// connection holds about [`SMALL`] bytes each, not the chunk.
#[derive(Debug, Clone)]
pub(super) struct Fit {
    /// Largest read step (the target's chunk).
    chunk: usize,
    /// Room to offer the next read.
    step: usize,
    /// Reads in this window, and whether any of them was large.
    reads: u32,
    large_read: bool,
    /// Flushes in this window and the most queued at one.
    flushes: u32,
    most_queued: usize,
}

impl Fit {
    pub(super) fn new(chunk: usize) -> Fit {
        Fit {
            chunk: chunk.max(SMALL),
            step: SMALL,
            reads: 0,
            large_read: false,
            flushes: 0,
            most_queued: 0,
        }
    }

    /// Before a read: the room to reserve, after giving back a read buffer
    /// that is empty and much larger than the traffic.
    pub(super) fn before_read(&mut self, rbuf: &mut BytesMut) -> usize {
        if rbuf.is_empty() && rbuf.capacity() > 4 * self.step {
            *rbuf = BytesMut::new();
        }
        self.step
    }

    /// After a read of `n` bytes into `room`.
    pub(super) fn after_read(&mut self, n: usize, room: usize) {
        if n >= room {
            self.step = (self.step * 2).min(self.chunk);
            self.reads = 0;
            self.large_read = false;
            return;
        }
        self.large_read |= n * 4 >= self.step;
        self.reads += 1;
        if self.reads >= WINDOW {
            if !self.large_read {
                self.step = (self.step / 2).max(SMALL);
            }
            self.reads = 0;
            self.large_read = false;
        }
    }

    /// Before a flush of `queued` bytes.
    pub(super) fn before_flush(&mut self, queued: usize) {
        self.most_queued = self.most_queued.max(queued);
    }

    /// After a flush: give back a write buffer that is empty and much
    /// larger than the last window's largest flush.
    pub(super) fn after_flush(&mut self, wbuf: &mut BytesMut) {
        self.flushes += 1;
        if self.flushes < WINDOW {
            return;
        }
        let need = self.most_queued.max(SMALL);
        if wbuf.is_empty() && wbuf.capacity() > 4 * need {
            *wbuf = BytesMut::with_capacity(need);
        }
        self.flushes = 0;
        self.most_queued = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A burst grows the read step to the chunk at once; a window of small
    /// reads halves it, and the empty, oversized buffer is given back.
    #[test]
    fn buffers_follow_the_traffic() {
        let mut fit = Fit::new(16 * 1024);
        let mut rbuf = BytesMut::new();
        let mut room = fit.before_read(&mut rbuf);
        assert_eq!(room, SMALL);
        for _ in 0..8 {
            fit.after_read(room, room);
            room = fit.before_read(&mut rbuf);
        }
        assert_eq!(room, 16 * 1024);
        rbuf.reserve(room);
        for _ in 0..(8 * WINDOW) {
            fit.after_read(10, room);
            room = fit.before_read(&mut rbuf);
        }
        assert_eq!(room, SMALL);
        assert!(rbuf.capacity() < 16 * 1024, "given back");

        let mut wbuf = BytesMut::with_capacity(64 * 1024);
        for _ in 0..WINDOW {
            fit.before_flush(100);
            fit.after_flush(&mut wbuf);
        }
        assert!(wbuf.capacity() <= 4 * SMALL, "{}", wbuf.capacity());
        // A large flush in the window keeps the buffer.
        let mut wbuf = BytesMut::with_capacity(64 * 1024);
        fit.before_flush(40_000);
        for _ in 0..WINDOW {
            fit.after_flush(&mut wbuf);
        }
        assert_eq!(wbuf.capacity(), 64 * 1024);
    }
}
