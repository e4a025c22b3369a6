//! One pub/sub client as an engine driver: a publisher, a requester, a
//! subscriber (which answers requests) or a chat member (which does both
//! on one connection).
//!
//! Sending: every message is the run's payload with this client's stamp
//! written over its first 24 bytes: its number, its own next sequence
//! number (0, 1, 2, ... in send order, so gaps and repeats show), and the
//! operation's intended start in ns since the Unix epoch, so the receiver
//! measures latency from when the message was meant to leave (corrected
//! for coordinated omission in the open loop). A fire-and-forget publish
//! completes when its bytes are written; an acknowledged one when the
//! broker's ack comes back; a request when its first answer does.
//!
//! Receiving: each message is an [`Event::Delivered`] whose latency is
//! the receiving read's wall clock minus the stamp's time (one clock read
//! per read, as the engine times replies), and whose domain says whether
//! it was new, a duplicate or out of order for its publisher. The
//! driver's [`ClientTally`] goes to the run's [`Tallies`] when it is
//! dropped.
//!
//! A client reads its socket whenever it waits, sends outstanding or not:
//! after writing its publishes it takes what has already arrived, without
//! waiting, so a delivery's latency is the broker's and the network's, not
//! a backlog of the client's own making. A slow reader is something a user
//! asks for ([`Client::listener_delay`], Chut's listener delay).

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::stamp::{Stamp, FILL};
use loadrig_engine::rng::Rng;
use loadrig_engine::{Driver, Event, Instant, Tag, Timer};
use loadrig_metrics::OpError;

use super::tally::{ClientTally, Tallies};
use super::{Confirm, Incoming, PubSubConn};

/// The operation kinds: what a client issues (index 0) and what it
/// receives (index 1).
pub const SEND: usize = 0;
pub const DELIVER: usize = 1;

/// Domain counters of a delivery.
pub const RECEIVED: u16 = 0;
pub const DUPLICATED: u16 = 1;
pub const OUT_OF_ORDER: u16 = 2;
pub const DOMAINS: [&str; 3] = ["received", "duplicated", "out_of_order"];

/// Flushes a sending client makes before it lets the other clients run.
const FLUSHES_PER_TURN: u32 = 8;

/// A tag that is no operation's (a subscriber's answer to a request).
const NO_TAG: Tag = Tag::MAX;

/// What a client does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientRole {
    /// Publishes to the run's subject.
    Publisher,
    /// Publishes requests with a reply subject of its own and waits for
    /// the first answer (NATS request-reply).
    Requester,
    /// Receives the run's subject; answers requests.
    Subscriber,
    /// Receives its inbox and sends to a random other member of its group
    /// (`first .. first + size` are the group's client numbers).
    Member { first: u32, size: u32 },
}

/// What every client of a run shares: the subjects, the payload, the
/// clock, and where accounts go.
#[derive(Debug)]
pub struct Client {
    /// Subject prefix of this run: `lr.<run id>`, or `--subject`.
    pub prefix: String,
    /// The subject a pubsub run's publishers send to: `<prefix>.t`, or
    /// `--subject`.
    topic: String,
    /// Every publisher on the subject is in this process, so a subscriber
    /// can tell when it has them all (see [`ClientDriver::caught_up`]);
    /// not so in a process of a run in several (`--processes`).
    pub alone: bool,
    pub size: usize,
    pub seed: u64,
    pub tallies: Arc<Tallies>,
    /// A receiver's pause after each delivery before it reads the next
    /// (Chut's listener delay; zero: it reads as fast as it can).
    pub listener_delay: Duration,
    /// Messages the publishers sent (written or acknowledged), added by
    /// each when it has sent all it will: a subscriber that has received
    /// as many new ones has nothing left to wait for in the drain.
    published: AtomicU64,
    /// A wall-clock reading and the monotonic instant it was taken at:
    /// intended starts become Unix times without reading the wall clock
    /// per message.
    origin: (Instant, u64),
}

impl Client {
    pub fn new(prefix: String, size: usize, seed: u64) -> Client {
        Client {
            topic: format!("{prefix}.t"),
            alone: true,
            prefix,
            size,
            seed,
            tallies: Arc::default(),
            listener_delay: Duration::ZERO,
            published: AtomicU64::new(0),
            origin: (Instant::now(), unix_now()),
        }
    }

    /// Publish to `subject` itself, with replies under it (`--subject`).
    pub fn on_subject(mut self, subject: &str) -> Client {
        subject.clone_into(&mut self.prefix);
        subject.clone_into(&mut self.topic);
        self
    }

    /// The subject every publisher of a pubsub run sends to.
    pub fn topic(&self) -> Vec<u8> {
        self.topic.as_bytes().to_vec()
    }

    /// Client `n`'s inbox (chat) or reply prefix (requests).
    pub fn inbox(&self, n: u32) -> Vec<u8> {
        format!("{}.c.{n}", self.prefix).into_bytes()
    }

    /// `at` in ns since the Unix epoch.
    #[inline]
    fn unix_ns(&self, at: Instant) -> u64 {
        let (base, base_ns) = self.origin;
        if at >= base {
            base_ns.saturating_add((at - base).as_nanos() as u64)
        } else {
            base_ns.saturating_sub((base - at).as_nanos() as u64)
        }
    }
}

/// The wall clock in ns since the Unix epoch.
#[inline]
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// One client's connection, driven by the engine.
pub struct ClientDriver<C> {
    conn: C,
    client: Arc<Client>,
    role: ClientRole,
    /// The subject sends go to (publisher, requester); the inbox or reply
    /// prefix otherwise.
    subject: Vec<u8>,
    /// Scratch: a chat destination, or a request's reply subject.
    dest: Vec<u8>,
    /// Requester: `<inbox>.`, the start of every reply subject.
    reply_prefix: Vec<u8>,
    /// The message, stamp rewritten per send.
    payload: Vec<u8>,
    /// A request to answer: its reply subject and payload.
    answer_to: Vec<u8>,
    answer: Vec<u8>,
    /// Fire-and-forget publishes waiting for their bytes to be written.
    written: Vec<Tag>,
    /// Written, not yet reported done.
    ready: VecDeque<Tag>,
    /// Publishes waiting for the broker's ack.
    acking: usize,
    seq: u64,
    /// Requester: the sequence number each tag's request carries
    /// (`u64::MAX`: answered). Chat member: the position each tag's
    /// message went to.
    per_tag: Vec<u64>,
    /// Highest sequence number seen per publisher.
    seen: Vec<(u32, u64)>,
    /// Wall clock of the latest read or flush, ns since the Unix epoch.
    read_ns: u64,
    /// With a listener delay: no delivery is read before this instant.
    listening_from: Option<Instant>,
    timer: Timer,
    /// Flushes of written sends, for yielding every [`FLUSHES_PER_TURN`].
    flushes: u32,
    tally: ClientTally,
}

impl<C: PubSubConn> ClientDriver<C> {
    /// A client numbered `n` (its stamp's publisher id) on `conn`, which
    /// the caller has already subscribed as the role needs.
    pub fn new(conn: C, client: Arc<Client>, role: ClientRole, n: u32) -> Self {
        let subject = match role {
            ClientRole::Publisher | ClientRole::Requester | ClientRole::Subscriber => {
                client.topic()
            }
            ClientRole::Member { .. } => client.inbox(n),
        };
        let mut payload = vec![FILL; client.size];
        let _ = Stamp {
            publisher: n,
            seq: 0,
            sent_unix_ns: 0,
        }
        .write_to(&mut payload);
        let to = match role {
            ClientRole::Member { size, .. } => vec![0; size as usize],
            _ => Vec::new(),
        };
        let tally = ClientTally {
            client: n,
            sends: role != ClientRole::Subscriber,
            receives: matches!(role, ClientRole::Subscriber | ClientRole::Member { .. }),
            to,
            ..ClientTally::default()
        };
        let reply_prefix = [client.inbox(n).as_slice(), b"."].concat();
        ClientDriver {
            conn,
            client,
            role,
            subject,
            dest: Vec::with_capacity(64),
            reply_prefix,
            payload,
            answer_to: Vec::new(),
            answer: Vec::new(),
            written: Vec::new(),
            ready: VecDeque::new(),
            acking: 0,
            seq: 0,
            per_tag: Vec::new(),
            seen: Vec::new(),
            read_ns: unix_now(),
            listening_from: None,
            timer: Timer::new(),
            flushes: 0,
            tally,
        }
    }

    fn set_tag(&mut self, tag: Tag, v: u64) {
        let t = tag as usize;
        if t >= self.per_tag.len() {
            self.per_tag.resize(t + 1, u64::MAX);
        }
        self.per_tag[t] = v;
    }

    /// A send under `tag` is done: count it (and, in a chat, whom it went to).
    fn sent(&mut self, tag: Tag) {
        self.tally.sent_at(self.read_ns);
        if let ClientRole::Member { .. } = self.role {
            let pos = self.per_tag.get(tag as usize).copied().unwrap_or(u64::MAX);
            if let Some(n) = self.tally.to.get_mut(pos as usize) {
                *n += 1;
            }
        }
    }

    /// Answer the request just received, if there is one.
    fn answer(&mut self) {
        if self.answer_to.is_empty() {
            return;
        }
        let _ = self
            .conn
            .publish(&self.answer_to, None, &self.answer, NO_TAG);
        self.answer_to.clear();
    }

    /// Read what has already arrived, without waiting, until a read would
    /// wait: receiving goes first, so a client that sends as fast as it
    /// can still keeps its inbox empty (reading less each turn let the
    /// broker's queue to it grow, and delivery latency with it). Cancel
    /// safe, as `fill` is.
    async fn read_arrived(&mut self) -> Result<(), OpError> {
        /// A bound, so one turn cannot read forever from a flood.
        const READS: usize = 256;
        if self.listening_from.is_some() {
            return Ok(());
        }
        for _ in 0..READS {
            let fill = self.conn.fill();
            let mut fill = std::pin::pin!(fill);
            let polled =
                std::future::poll_fn(|cx| std::task::Poll::Ready(fill.as_mut().poll(cx))).await;
            match polled {
                std::task::Poll::Ready(Ok(())) => self.read_ns = unix_now(),
                std::task::Poll::Ready(Err(e)) => return Err(e),
                std::task::Poll::Pending => break,
            }
        }
        Ok(())
    }

    /// The connection failed: what was in flight may or may not have
    /// reached the broker.
    fn broken(&mut self, e: OpError) -> Event {
        let pending = self.written.len() + self.ready.len() + self.acking;
        self.tally.in_doubt += pending as u64;
        if self.role == ClientRole::Requester {
            self.tally.in_doubt += self.per_tag.iter().filter(|&&s| s != u64::MAX).count() as u64;
            self.per_tag.fill(u64::MAX);
        }
        self.written.clear();
        self.ready.clear();
        self.acking = 0;
        self.answer_to.clear();
        Event::Broken(e)
    }
}

/// What one incoming item turned out to be.
enum Got {
    Done(Tag),
    Delivered(Duration, u16),
    /// Nothing for the engine (a stale answer, a foreign payload).
    Skip,
}

impl<C: PubSubConn> Driver for ClientDriver<C> {
    fn kind_of(&self, _index: u64) -> usize {
        SEND
    }

    fn send(&mut self, index: u64, tag: Tag) -> usize {
        self.send_at(index, tag, Instant::now())
    }

    #[inline]
    fn send_at(&mut self, index: u64, tag: Tag, intended: Instant) -> usize {
        let stamp = Stamp {
            publisher: self.tally.client,
            seq: self.seq,
            sent_unix_ns: self.client.unix_ns(intended),
        };
        self.seq += 1;
        let _ = stamp.write_to(&mut self.payload);
        let confirm = match self.role {
            ClientRole::Publisher | ClientRole::Subscriber => {
                self.conn.publish(&self.subject, None, &self.payload, tag)
            }
            ClientRole::Requester => {
                // The reply subject names the tag: `<inbox>.<tag>`.
                self.dest.clear();
                self.dest.extend_from_slice(&self.reply_prefix);
                crate::push_decimal(&mut self.dest, u64::from(tag));
                self.set_tag(tag, stamp.seq);
                let _ = self
                    .conn
                    .publish(&self.subject, Some(&self.dest), &self.payload, tag);
                return SEND;
            }
            ClientRole::Member { first, size } => {
                // A random other member of the group.
                let me = self.tally.client - first;
                let mut pos =
                    Rng::for_op(self.client.seed, index).below(u64::from(size - 1)) as u32;
                if pos >= me {
                    pos += 1;
                }
                self.set_tag(tag, u64::from(pos));
                self.dest.clear();
                self.dest.extend_from_slice(self.client.prefix.as_bytes());
                self.dest.extend_from_slice(b".c.");
                crate::push_decimal(&mut self.dest, u64::from(first + pos));
                self.conn.publish(&self.dest, None, &self.payload, tag)
            }
        };
        match confirm {
            Confirm::Written => self.written.push(tag),
            Confirm::Acked => self.acking += 1,
        }
        SEND
    }

    async fn recv(&mut self) -> Event {
        loop {
            if let Some(ev) = self.try_recv() {
                return ev;
            }
            if !self.written.is_empty() {
                if let Err(e) = self.conn.flush().await {
                    return self.broken(e);
                }
                self.read_ns = unix_now();
                self.ready.extend(self.written.drain(..));
                // Sends done; the inbox is read too before they are
                // reported, or a client that always has a send
                // outstanding would never read.
                if let Err(e) = self.read_arrived().await {
                    return self.broken(e);
                }
                // A client that always has a send to make would otherwise
                // run for the engine's whole yield budget while the other
                // clients' inboxes wait for their turn: let them read.
                self.flushes = self.flushes.wrapping_add(1);
                if self.flushes.is_multiple_of(FLUSHES_PER_TURN) {
                    tokio::task::yield_now().await;
                }
                continue;
            }
            if let Some(from) = self.listening_from {
                // A slow reader by request: nothing is read until then
                // (acks wait too; they share the socket).
                self.timer.sleep_until(from).await;
                self.listening_from = None;
                continue;
            }
            match self.conn.fill().await {
                Ok(()) => self.read_ns = unix_now(),
                Err(e) => return self.broken(e),
            }
        }
    }

    #[inline]
    fn try_recv(&mut self) -> Option<Event> {
        if let Some(tag) = self.ready.pop_front() {
            self.sent(tag);
            return Some(Event::Done {
                tag,
                result: Ok(None),
            });
        }
        if self.listening_from.is_some() {
            return None;
        }
        loop {
            let now = self.read_ns;
            let role = self.role;
            let Self {
                conn,
                per_tag,
                seen,
                answer_to,
                answer,
                tally,
                ..
            } = self;
            let got = conn.next(|inc| match inc {
                Incoming::Ack(tag) => Got::Done(tag),
                Incoming::Message {
                    subject,
                    reply,
                    payload,
                } => {
                    let Ok(stamp) = Stamp::decode(payload) else {
                        tally.foreign += 1;
                        return Got::Skip;
                    };
                    if role == ClientRole::Requester {
                        // An answer: the tag is the subject's last word; a
                        // second answer to the same request is stale.
                        let tag = subject.rsplit(|&b| b == b'.').next().and_then(parse_tag);
                        return match tag {
                            Some(t) if per_tag.get(t as usize) == Some(&stamp.seq) => {
                                per_tag[t as usize] = u64::MAX;
                                Got::Done(t)
                            }
                            _ => Got::Skip,
                        };
                    }
                    if let Some(r) = reply {
                        answer_to.clear();
                        answer_to.extend_from_slice(r);
                        answer.clear();
                        answer.extend_from_slice(payload);
                    }
                    tally.received_at(now);
                    let latency = Duration::from_nanos(stamp.latency_ns(now).unwrap_or(0));
                    Got::Delivered(latency, order(seen, tally, stamp.publisher, stamp.seq))
                }
            })?;
            match got {
                Err(e) => return Some(self.broken(e)),
                Ok(Got::Done(tag)) => {
                    if tag == NO_TAG {
                        continue;
                    }
                    if self.role != ClientRole::Requester {
                        self.acking = self.acking.saturating_sub(1);
                    }
                    self.sent(tag);
                    return Some(Event::Done {
                        tag,
                        result: Ok(None),
                    });
                }
                Ok(Got::Delivered(latency, domain)) => {
                    self.answer();
                    let delay = self.client.listener_delay;
                    if !delay.is_zero() {
                        self.listening_from = Some(Instant::now() + delay);
                    }
                    return Some(Event::Delivered {
                        kind: DELIVER,
                        latency,
                        domain: Some(domain),
                    });
                }
                Ok(Got::Skip) => continue,
            }
        }
    }

    fn listens(&self) -> bool {
        !matches!(self.role, ClientRole::Publisher)
    }

    fn issued_all(&mut self) {
        if self.role == ClientRole::Publisher {
            self.client
                .published
                .fetch_add(self.tally.sent, Ordering::Release);
        }
    }

    /// A subscriber of a fan-out has every message once it has received
    /// as many new ones as the publishers sent (the engine asks only when
    /// they are all done). Chat members wait out the drain: what each
    /// expects is spread over the group's tallies. So do the subscribers
    /// of a run in several processes: the other processes' publishers
    /// count elsewhere.
    fn caught_up(&self) -> bool {
        self.role == ClientRole::Subscriber
            && self.client.alone
            && self.tally.received >= self.client.published.load(Ordering::Acquire)
    }

    fn idle(&mut self) -> impl Future<Output = Result<(), OpError>> + Send {
        self.conn.idle()
    }

    fn reconnect(&mut self) -> impl Future<Output = Result<(), OpError>> + Send {
        self.conn.reconnect()
    }

    fn take_bytes(&mut self) -> (u64, u64) {
        self.conn.take_bytes()
    }
}

impl<C> Drop for ClientDriver<C> {
    fn drop(&mut self) {
        self.client.tallies.put(std::mem::take(&mut self.tally));
    }
}

/// A message from `publisher` numbered `seq`: new, repeated or late.
/// "Late" is counted once per break in the order: a message numbered below
/// the one before it is out of order, and the order then goes on from it,
/// so one stray number (a corrupted stamp, a reordered message) counts
/// once, not against every message after it.
#[inline]
fn order(seen: &mut Vec<(u32, u64)>, t: &mut ClientTally, publisher: u32, seq: u64) -> u16 {
    match seen.iter_mut().find(|s| s.0 == publisher) {
        None => {
            seen.push((publisher, seq));
            t.received += 1;
            RECEIVED
        }
        Some(s) if seq > s.1 => {
            s.1 = seq;
            t.received += 1;
            RECEIVED
        }
        Some(s) if seq == s.1 => {
            t.duplicated += 1;
            DUPLICATED
        }
        Some(s) => {
            s.1 = seq;
            t.out_of_order += 1;
            t.received += 1;
            OUT_OF_ORDER
        }
    }
}

/// `b"123"` -> 123, if it is a tag.
fn parse_tag(s: &[u8]) -> Option<Tag> {
    if s.is_empty() || s.len() > 10 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u64::from(b - b'0');
    }
    Tag::try_from(v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_stray_number_breaks_the_order_once() {
        let (mut seen, mut t) = (Vec::new(), ClientTally::default());
        for seq in [0, 1, 2, u64::MAX / 2, 3, 4, 5, 5, 7, 6] {
            order(&mut seen, &mut t, 9, seq);
        }
        assert_eq!((t.received, t.duplicated, t.out_of_order), (9, 1, 2));
    }
}
