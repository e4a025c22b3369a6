//! The contract between the engine and a target's connection.

use std::future::Future;
use std::time::Duration;

use loadrig_metrics::OpError;
use tokio::time::Instant;

/// Identifies an operation in flight on one driver: `0..depth`.
pub type Tag = u32;

/// What a driver reports back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The operation sent under `tag` finished; `Ok` carries an optional
    /// domain counter to bump (the workload's own outcome, e.g. "accepted
    /// for contestant 3").
    Done {
        tag: Tag,
        result: Result<Option<u16>, OpError>,
    },
    /// The connection failed: every operation in flight on it is lost and
    /// the engine will call [`Driver::reconnect`].
    Broken(OpError),
    /// Something arrived that no operation of this driver asked for (a
    /// message to a subscriber), `latency` after it was meant to leave its
    /// sender; recorded as one completed operation of `kind`.
    Delivered {
        kind: usize,
        latency: Duration,
        domain: Option<u16>,
    },
}

/// A connection that counts the bytes it moves: the one `take_bytes` of
/// every capability's connection (the workloads' `VoterConn`, `HelloConn`,
/// `KvConn` and `PubSubConn` have it as a supertrait), so a connection type
/// that serves several capabilities counts its bytes in one place, and a
/// driver hands its connection's count on as [`Driver::take_bytes`].
pub trait CountsBytes {
    /// Bytes (sent, received) since the last call; `(0, 0)` where they
    /// are not known (an embedded database, no target at all).
    fn take_bytes(&mut self) -> (u64, u64);
}

/// One connection to a target, speaking one workload. The engine owns one
/// driver per worker and is generic over it, so the hot path is statically
/// dispatched.
///
/// A driver may keep up to its depth of operations in flight (pipelining);
/// call-style drivers keep one.
pub trait Driver: Send + 'static {
    /// The kind of operation `index` (an index into the workload's kinds).
    /// Pure: the same index always has the same kind.
    fn kind_of(&self, index: u64) -> usize;

    /// Queue operation `index` under `tag` and return its kind. Must not
    /// block: sending may be buffered until the next [`Driver::recv`].
    /// The operation is a pure function of the run's seed and `index`.
    fn send(&mut self, index: u64, tag: Tag) -> usize;

    /// [`Driver::send`], told when the operation was meant to start (the
    /// open loop's intended time; in the closed loop, now). Drivers whose
    /// messages carry their send time (pub/sub) stamp this one, so the
    /// receiver measures latency from the intended start too.
    #[inline]
    fn send_at(&mut self, index: u64, tag: Tag, intended: Instant) -> usize {
        let _ = intended;
        self.send(index, tag)
    }

    /// Whether this driver receives what nobody asked for (a subscriber,
    /// a chat client): the engine then keeps calling [`Driver::recv`] with
    /// nothing in flight, and after its own operations, until every
    /// issuing driver is done and the drain period has passed.
    fn listens(&self) -> bool {
        false
    }

    /// Called once when this driver's worker has issued and settled all
    /// it will, before the run learns that it is done, so what it reports
    /// here is seen by every listener whose drain that starts. The default
    /// reports nothing.
    fn issued_all(&mut self) {}

    /// A listener in its drain: whether it has received everything it can
    /// expect, so the drain ends now instead of at its ceiling. The
    /// default waits out the drain.
    fn caught_up(&self) -> bool {
        false
    }

    /// Flush what was queued and wait for the next event. Only called
    /// while operations are in flight. Must be cancel safe: the engine
    /// drops this future to serve a timer, and calls again.
    fn recv(&mut self) -> impl Future<Output = Event> + Send;

    /// An event that is already here (a reply an earlier read brought in
    /// with the one `recv` returned), without I/O and without waiting;
    /// `None` when there is none. The engine drains these after each
    /// `recv` and gives them that event's completion time: they arrived
    /// together. The default has none, so every event goes through `recv`.
    fn try_recv(&mut self) -> Option<Event> {
        None
    }

    /// Before the load (a wait for a common start), with nothing in
    /// flight: serve the connection, answering what the server sends to
    /// keep it (a NATS `PING`). `Err`: the server closed it, or sent what
    /// no request asked for; the caller re-opens it ([`Driver::reconnect`])
    /// and serves it again. `Ok`: nothing more to serve, the rest is left
    /// to the load (bytes that belong to it stay in the read buffer).
    /// Cancel safe: dropped when the load begins. The default serves
    /// nothing.
    fn idle(&mut self) -> impl Future<Output = Result<(), OpError>> + Send {
        async { Ok(()) }
    }

    /// Re-establish the connection after [`Event::Broken`] or a timeout.
    fn reconnect(&mut self) -> impl Future<Output = Result<(), OpError>> + Send;

    /// Bytes sent and received since the last call (its connection's
    /// [`CountsBytes`], where it has one).
    fn take_bytes(&mut self) -> (u64, u64) {
        (0, 0)
    }

    /// Domain counts the driver tallied itself since the last call, added
    /// into `domains` (indexed as [`Event::Done`] names them) and reset:
    /// for outcomes that come several to an operation (a multiget's hits
    /// and misses, key by key). The engine collects them with the byte
    /// counts, at lap ends and when the warm-up ends, so they fall in the
    /// phase in which they were read. The default tallies nothing.
    fn take_counts(&mut self, _domains: &mut [u64]) {}
}
