//! The redis workload's driver: one per connection, sending one test's
//! command (a template copy, placeholders drawn per operation from seed
//! and index) or memtier's SET:GET mix.

use std::future::Future;
use std::sync::Arc;

use loadrig_engine::rng::{mix64, Rng};
use loadrig_engine::{Driver, Event, Tag};
use loadrig_metrics::OpError;
use loadrig_spec::RedisTest;

use super::command::{self, classify, Template};
use super::mix::Mix;
use super::RespConn;
use crate::stream::{self, ByteStream, StreamDriver};

/// The seed of test `test`'s operations: each test draws its own keys, as
/// redis-benchmark's tests do, so a GET does not read exactly the keys
/// the SET with the same index wrote.
pub fn test_seed(seed: u64, test: RedisTest) -> u64 {
    let i = RedisTest::ALL.iter().position(|t| *t == test).unwrap_or(0) as u64;
    mix64(seed ^ mix64(0x7265_6469_7300 + i))
}

/// What a connection sends.
pub(super) enum Mode {
    /// One redis-benchmark test (or one's own command): a template.
    Test {
        test: RedisTest,
        kind: usize,
        template: Arc<Template>,
        data: Arc<[u8]>,
        keyspace: Option<u64>,
        seed: u64,
    },
    /// memtier's SET:GET mix; the kind of each tag in flight, and a key
    /// buffer reused for every command.
    Mix {
        mix: Arc<Mix>,
        kinds: Vec<u8>,
        key: Vec<u8>,
    },
}

impl Mode {
    /// memtier's mix, nothing in flight yet.
    pub(super) fn mix(mix: Arc<Mix>) -> Mode {
        let key = Vec::with_capacity(mix.spec.key_prefix.len() + 20);
        Mode::Mix {
            mix,
            kinds: Vec::new(),
            key,
        }
    }
}

/// One engine connection running one test, or the mix.
pub struct RedisDriver<S> {
    conn: RespConn<S>,
    mode: Mode,
}

impl<S> RedisDriver<S> {
    pub(super) fn new(conn: RespConn<S>, mode: Mode) -> Self {
        RedisDriver { conn, mode }
    }
}

impl<S: ByteStream> StreamDriver for RedisDriver<S> {
    type Stream = S;

    #[inline]
    fn stream(&mut self) -> &mut S {
        self.conn.stream()
    }
}

impl<S: ByteStream> Driver for RedisDriver<S> {
    fn kind_of(&self, index: u64) -> usize {
        match &self.mode {
            Mode::Test { kind, .. } => *kind,
            Mode::Mix { mix, .. } => mix.kind(index),
        }
    }

    #[inline]
    fn send(&mut self, index: u64, tag: Tag) -> usize {
        let kind = match &mut self.mode {
            Mode::Test {
                kind,
                template,
                keyspace,
                seed,
                ..
            } => {
                // On a cluster, a tag of this connection's master's slots,
                // chosen by the first key's number: the same number gets
                // the same tag from every connection on that master (a
                // GET finds what a SET there wrote); without -r, one tag
                // per master.
                let key_tag = if template.tag.is_empty() {
                    None
                } else {
                    let first = keyspace.map_or(0, |n| Rng::for_op(*seed, index).below(n));
                    self.conn.stream().key_tag(first)
                };
                let out = self.conn.out();
                match *keyspace {
                    None => template.write(out, key_tag),
                    Some(n) => {
                        let mut rng = Rng::for_op(*seed, index);
                        template.write_drawn(out, key_tag, || rng.below(n));
                    }
                }
                *kind
            }
            Mode::Mix { mix, kinds, key } => {
                let kind = mix.write(index, self.conn.out(), key);
                let t = tag as usize;
                if t >= kinds.len() {
                    kinds.resize(t + 1, 0);
                }
                kinds[t] = kind as u8;
                kind
            }
        };
        self.conn.queued(tag);
        kind
    }

    async fn recv(&mut self) -> Event {
        stream::recv(self).await
    }

    #[inline]
    fn try_recv(&mut self) -> Option<Event> {
        let reply = match &self.mode {
            Mode::Test { test, data, .. } => self
                .conn
                .next(|tag, reply| (tag, classify(*test, reply, data)))?,
            Mode::Mix { mix, kinds, .. } => self.conn.next(|tag, reply| {
                let kind = kinds.get(tag as usize).copied().unwrap_or(0);
                (tag, mix.classify(usize::from(kind), reply))
            })?,
        };
        match reply {
            Ok((tag, result)) => Some(Event::Done { tag, result }),
            Err(e) => Some(Event::Broken(e)),
        }
    }

    fn idle(&mut self) -> impl Future<Output = Result<(), OpError>> + Send {
        crate::stream::idle(self.stream())
    }

    fn reconnect(&mut self) -> impl Future<Output = Result<(), OpError>> + Send {
        self.conn.reconnect()
    }

    fn take_bytes(&mut self) -> (u64, u64) {
        self.conn.take_bytes()
    }

    fn take_counts(&mut self, domains: &mut [u64]) {
        let [moved, ask] = self.conn.stream().take_redirects();
        for (d, n) in [(command::MOVED, moved), (command::ASK, ask)] {
            if let Some(c) = domains.get_mut(usize::from(d)) {
                *c += n;
            }
        }
    }
}
